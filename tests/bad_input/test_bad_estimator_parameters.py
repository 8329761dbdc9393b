"""Every estimator's bad budgets and parameters, refused before the game is evaluated.

Part of the bad-input tables (tests/bad_input/_cases.py: what they check, the shared toys, the timeout).
"""

from __future__ import annotations

import numpy as np
import pytest

from shapley_research import (beta_shapley, compressive_shapley, exact_shapley, group_testing_shapley, kernel_shapley,
                              leverage_shapley, msr_banzhaf, owen_shapley, permutation_shapley,
                              stratified_svarm_shapley, unbiased_kernel_shapley, uniform_shapley)

from bad_input._cases import (additive, assert_raises, DuckGame, N, NO_HANG, row)

pytestmark = NO_HANG

# --------------------------------------------------------------------------------------------
# 2. Estimators x bad budgets and parameters (and nothing evaluated before the error)
# --------------------------------------------------------------------------------------------

SAMPLERS = {
    # name: (call(game, **kwargs), budget of one pass)
    "permutation": (lambda g, **kw: permutation_shapley(g, **{"budget": 40, "seed": 0, **kw}), N + 1),
    "permutation_antithetic": (lambda g, **kw: permutation_shapley(
        g, **{"budget": 40, "seed": 0, "antithetic": True, **kw}), 2 * N + 1),
    "permutation_rotations": (lambda g, **kw: permutation_shapley(
        g, **{"budget": 40, "seed": 0, "rotations": 3, **kw}), 3 * N + 1),
    "permutation_position_adjusted": (lambda g, **kw: permutation_shapley(
        g, **{"budget": 40, "seed": 0, "position_adjustment": True, **kw}), N + 1),
    "group_testing_improved": (lambda g, **kw: group_testing_shapley(g, **{"budget": 40, "seed": 0, **kw}), 3),
    "group_testing_paper": (lambda g, **kw: group_testing_shapley(
        g, **{"budget": 40, "seed": 0, "variant": "paper", **kw}), 3),
    "compressive": (lambda g, **kw: compressive_shapley(g, **{"budget": 40, "seed": 0, **kw}), N + 2),
    # N = 3: every stratum is exact, so one pass is the 2N + 2 exact evaluations
    "svarm": (lambda g, **kw: stratified_svarm_shapley(g, **{"budget": 40, "seed": 0, **kw}), 2 * N + 2),
    # U(empty) and U(D) anchor the truncation; a unit is charged N although prefix N - 1 (D) is never evaluated
    "permutation_truncated": (lambda g, **kw: permutation_shapley(
        g, **{"budget": 40, "seed": 0, "truncation": 0.2, **kw}), N + 2),
    # one coalition per unit, no anchors; two at least, so that a player can be sampled in and out
    "msr_banzhaf": (lambda g, **kw: msr_banzhaf(g, **{"budget": 40, "seed": 0, **kw}), 2),
    # U(empty), U(D) and one pair
    "kernel": (lambda g, **kw: unbiased_kernel_shapley(g, **{"budget": 40, "seed": 0, **kw}), 4),
    # one bin: a sweep of N + 1 evaluations, below the 2^N that buy the exact values
    "owen": (lambda g, **kw: owen_shapley(g, **{"budget": 40, "seed": 0, "n_bins": 1, **kw}), N + 1),
    "kernel_regression": (lambda g, **kw: kernel_shapley(g, **{"budget": 40, "seed": 0, **kw}), 4),
    "leverage": (lambda g, **kw: leverage_shapley(g, **{"budget": 40, "seed": 0, **kw}), 4),
    # Beta(16, 1) at N = 3: U(empty), U(D) and a unit of at most N evaluations (info["unit_evaluations"])
    "beta_shapley": (lambda g, **kw: beta_shapley(g, **{"budget": 40, "seed": 0, **kw}), N + 2),
    # Beta(1, 1), the Shapley value: every unit is one permutation, so no U(D)
    "beta_shapley_1_1": (lambda g, **kw: beta_shapley(g, **{"budget": 40, "seed": 0, "alpha": 1, "beta": 1, **kw}),
                         N + 1),
}


COMMON_PARAMETERS = [
    # (id, kwargs, error, match)
    ("budget_negative", {"budget": -1}, ValueError, "budget must be >= 0"),
    ("budget_zero", {"budget": 0}, ValueError, "budget=0 is smaller than one"),
    ("budget_fraction", {"budget": 10.5}, TypeError, "budget must be an integer"),
    ("budget_nan", {"budget": np.nan}, TypeError, "budget must be an integer"),
    ("budget_inf", {"budget": np.inf}, TypeError, "budget must be an integer"),
    ("budget_string", {"budget": "100"}, TypeError, "budget must be an integer"),
    ("budget_bool", {"budget": True}, TypeError, "budget must be an integer"),
    ("budget_list", {"budget": [100]}, TypeError, "budget must be an integer"),
    ("seed_negative", {"seed": -1}, ValueError, "seed must be >= 0"),
    ("seed_fraction", {"seed": 1.5}, TypeError, "seed must be an integer"),
    ("seed_string", {"seed": "7"}, TypeError, "seed must be an integer"),
    ("seed_nan", {"seed": np.nan}, TypeError, "seed must be an integer"),
    ("seed_bool", {"seed": True}, TypeError, "seed must be an integer"),
    ("seed_generator", {"seed": np.random.default_rng(0)}, TypeError,
     "seed must be an integer >= 0, a numpy SeedSequence or None, got a Generator"),
    ("progress_string", {"progress": "no"}, TypeError, "progress must be True, False or None"),
    ("progress_int", {"progress": 0}, TypeError, "progress must be True, False or None"),
    ("batch_size_zero", {"batch_size": 0}, ValueError, "batch_size must be >= 1"),
    ("batch_size_negative", {"batch_size": -4}, ValueError, "batch_size must be >= 1"),
    ("batch_size_fraction", {"batch_size": 1.5}, TypeError, "batch_size must be an integer"),
    ("batch_size_string", {"batch_size": "4"}, TypeError, "batch_size must be an integer"),
    ("batch_size_bool", {"batch_size": True}, TypeError, "batch_size must be an integer"),
    ("n_jobs_zero", {"n_jobs": 0}, ValueError, "n_jobs must be"),
    ("n_jobs_string", {"n_jobs": "two"}, TypeError, "n_jobs must be an integer"),
    ("n_jobs_fraction", {"n_jobs": 1.5}, TypeError, "n_jobs must be an integer"),
    ("n_jobs_bool", {"n_jobs": True}, TypeError, "n_jobs must be an integer"),
    ("empty_utility_nan", {"empty_utility": np.nan}, ValueError, "empty_utility must be finite"),
    ("empty_utility_inf", {"empty_utility": -np.inf}, ValueError, "empty_utility must be finite"),
    ("empty_utility_string", {"empty_utility": "0"}, TypeError, "empty_utility must be a real number"),
    ("target_stderr_zero", {"target_stderr": 0.0}, ValueError, "target_stderr must be > 0"),
    ("target_stderr_nan", {"target_stderr": np.nan}, ValueError, "target_stderr must be finite"),
    ("target_stderr_string", {"target_stderr": "0.1"}, TypeError, "target_stderr must be a real number"),
    ("budget_none_without_target", {"budget": None}, TypeError, "budget must be an integer"),
    ("target_rank_correlation_zero", {"target_rank_correlation": 0.0}, ValueError,
     r"target_rank_correlation must be in \(0, 1\]"),
    ("target_rank_correlation_above_one", {"target_rank_correlation": 1.5}, ValueError,
     r"target_rank_correlation must be in \(0, 1\]"),
    ("target_rank_correlation_nan", {"target_rank_correlation": np.nan}, ValueError,
     "target_rank_correlation must be finite"),
    ("target_rank_correlation_bool", {"target_rank_correlation": True}, TypeError,
     "target_rank_correlation must be a real number"),
    ("target_rank_correlation_string", {"target_rank_correlation": "0.9"}, TypeError,
     "target_rank_correlation must be a real number"),
]

SPECIFIC_PARAMETERS = {
    "permutation": [
        ("antithetic_string", {"antithetic": "no"}, TypeError, "antithetic must be True or False"),
        ("antithetic_int", {"antithetic": 1}, TypeError, "antithetic must be True or False"),
    ],
    "group_testing_improved": [
        ("variant_unknown", {"variant": "foo"}, ValueError, "variant must be one of"),
        ("variant_none", {"variant": None}, ValueError, "variant must be one of"),
        ("variant_list", {"variant": ["paper"]}, ValueError, "variant must be one of"),
        ("centering_unknown", {"centering": "quadratic"}, ValueError, "centering must be one of"),
        ("sampling_unknown", {"sampling": "with_replacement"}, ValueError, "sampling must be one of"),
        ("sampling_none", {"sampling": None}, ValueError, "sampling must be one of"),
    ],
    "group_testing_paper": [
        ("recovery_unknown", {"recovery": "lp"}, ValueError, "recovery must be one of"),
        ("epsilon_negative", {"epsilon": -1.0}, ValueError, "epsilon must be >= 0"),
        ("epsilon_nan", {"epsilon": np.nan}, ValueError, "epsilon must be finite"),
        ("epsilon_string", {"epsilon": "0.1"}, TypeError, "epsilon must be a real number"),
        ("solver_unknown", {"recovery": "cvxpy", "solver": "FOO"}, ValueError, "solver must be one of"),
    ],
    "compressive": [
        ("n_measurements_zero", {"n_measurements": 0}, ValueError, "n_measurements must be >= 1"),
        ("n_measurements_fraction", {"n_measurements": 2.5}, TypeError, "n_measurements must be an integer"),
        ("n_measurements_string", {"n_measurements": "2"}, TypeError, "n_measurements must be an integer"),
        ("epsilon_negative", {"epsilon": -1.0}, ValueError, "epsilon must be >= 0"),
        ("epsilon_inf", {"epsilon": np.inf}, ValueError, "epsilon must be finite"),
        ("solver_unknown", {"solver": "FOO"}, ValueError, "solver must be one of"),
        ("solver_not_a_string", {"solver": 3}, TypeError, "solver must be the name"),
        ("recovery_unknown", {"recovery": "lars"}, ValueError, "recovery must be one of"),
        ("recovery_not_a_string", {"recovery": 1}, ValueError, "recovery must be one of"),
    ],
    "permutation_truncated": [
        ("truncation_negative", {"truncation": -0.1}, ValueError, "truncation must be >= 0"),
        ("truncation_one", {"truncation": 1.0}, ValueError, r"truncation must be in \[0, 1\)"),
        ("truncation_above_one", {"truncation": 2}, ValueError, r"truncation must be in \[0, 1\)"),
        ("truncation_nan", {"truncation": np.nan}, ValueError, "truncation must be finite"),
        ("truncation_inf", {"truncation": np.inf}, ValueError, "truncation must be finite"),
        ("truncation_string", {"truncation": "0.2"}, TypeError, "truncation must be a real number"),
        ("truncation_bool", {"truncation": True}, TypeError, "truncation must be a real number"),
        ("truncation_list", {"truncation": [0.2]}, TypeError, "truncation must be a real number"),
    ],
    "owen": [
        ("n_bins_zero", {"n_bins": 0}, ValueError, "n_bins must be >= 1"),
        ("n_bins_string", {"n_bins": "4"}, TypeError, "n_bins must be an integer"),
        ("q_points_unknown", {"q_points": "grid"}, ValueError, "q_points must be one of"),
        ("antithetic_string", {"antithetic": "no"}, TypeError, "antithetic must be True or False"),
        ("antithetic_odd_bins", {"antithetic": True}, ValueError, "n_bins must be even"),
    ],
    "msr_banzhaf": [
        ("weight_zero", {"weight": 0.0}, ValueError, "weight must be > 0"),
        ("weight_one", {"weight": 1}, ValueError, "weight must be < 1"),
        ("weight_nan", {"weight": np.nan}, ValueError, "weight must be finite"),
        ("weight_string", {"weight": "0.7"}, TypeError, "weight must be a real number"),
    ],
    "beta_shapley": [
        ("alpha_zero", {"alpha": 0}, ValueError, "alpha must be > 0"),
        ("alpha_negative", {"alpha": -1.0}, ValueError, "alpha must be > 0"),
        ("alpha_nan", {"alpha": np.nan}, ValueError, "alpha must be finite"),
        ("alpha_inf", {"alpha": np.inf}, ValueError, "alpha must be finite"),
        ("alpha_string", {"alpha": "16"}, TypeError, "alpha must be a real number"),
        ("alpha_bool", {"alpha": True}, TypeError, "alpha must be a real number"),
        ("alpha_none", {"alpha": None}, TypeError, "alpha must be a real number"),
        ("beta_zero", {"beta": 0.0}, ValueError, "beta must be > 0"),
        ("beta_negative", {"beta": -2}, ValueError, "beta must be > 0"),
        ("beta_nan", {"beta": np.nan}, ValueError, "beta must be finite"),
        ("beta_inf", {"beta": np.inf}, ValueError, "beta must be finite"),
        ("beta_string", {"beta": "1"}, TypeError, "beta must be a real number"),
        ("beta_bool", {"beta": False}, TypeError, "beta must be a real number"),
        ("beta_list", {"beta": [1.0]}, TypeError, "beta must be a real number"),
    ],
}


def _parameter_rows():
    for name, (_, one_pass) in SAMPLERS.items():
        cases = list(COMMON_PARAMETERS)
        if one_pass - 1 < 2**N:  # a budget covering every coalition enumerates the game instead (test_small_games)
            cases.append(("budget_below_one_pass", {"budget": one_pass - 1}, ValueError,
                          rf"budget={one_pass - 1} is smaller than one"))
        cases += SPECIFIC_PARAMETERS.get(name, [])
        for case_id, kwargs, error, match in cases:
            yield row(f"{name}-{case_id}", name, kwargs, error, match)


@pytest.mark.parametrize("sampler,kwargs,error,match", list(_parameter_rows()))
def test_sampler_rejects_bad_parameter_before_evaluating(sampler, kwargs, error, match):
    game = DuckGame()
    call, _ = SAMPLERS[sampler]
    assert_raises(lambda: call(game, **kwargs), error, match)
    assert game.calls == 0, "the parameter must be checked before the game is evaluated"


@pytest.mark.sampling  # the sampling path itself, on a small game
@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
@pytest.mark.filterwarnings("ignore:msr_banzhaf. .* players were sampled only in:UserWarning")
def test_budget_of_exactly_one_pass_works(sampler):
    call, one_pass = SAMPLERS[sampler]
    result = call(DuckGame(), budget=one_pass)
    assert result.n_samples >= (0 if sampler == "svarm" else 1)  # svarm: nothing left to sample at N = 3
    assert result.n_evaluations <= one_pass


@pytest.mark.parametrize("kwargs,error,match", [
    row("max_players_zero", {"max_players": 0}, ValueError, "max_players must be >= 1"),
    row("max_players_string", {"max_players": "20"}, TypeError, "max_players must be an integer"),
    row("max_players_below_n", {"max_players": 2}, ValueError, "max_players=2"),
    row("chunk_size_zero", {"chunk_size": 0}, ValueError, "chunk_size must be >= 1"),
    row("chunk_size_fraction", {"chunk_size": 1.5}, TypeError, "chunk_size must be an integer"),
    row("empty_utility_nan", {"empty_utility": np.nan}, ValueError, "empty_utility must be finite"),
    row("empty_utility_string", {"empty_utility": "0"}, TypeError, "empty_utility must be a real number"),
])
def test_exact_rejects_bad_parameter_before_evaluating(kwargs, error, match):
    game = DuckGame()
    assert_raises(lambda: exact_shapley(game, **kwargs), error, match)
    assert game.calls == 0


@pytest.mark.parametrize("empty_utility,error,match", [
    row("nan", np.nan, ValueError, "empty_utility must be finite"),
    row("string", "0", TypeError, "empty_utility must be a real number"),
])
def test_uniform_rejects_bad_empty_utility(empty_utility, error, match):
    assert_raises(lambda: uniform_shapley(DuckGame(), empty_utility=empty_utility), error, match)


def test_not_a_game_says_how_to_make_one():
    for estimator in (exact_shapley, uniform_shapley):
        assert_raises(lambda estimator=estimator: estimator(additive), TypeError,
                      r"game must be an object with n_players.*as_game")
