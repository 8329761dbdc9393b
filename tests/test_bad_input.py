"""Bad input across the public API, tried systematically (issue 6).

Every case is one row of a table: a public callable, one bad input, and what
must happen. Either a ``ValueError`` or ``TypeError`` whose message names the
argument (``pytest.raises(..., match=...)``), or, where the library documents a
convention for the input (one point or one class for KNN, ``K > N``), that
convention, asserted. A bad *parameter* must also fail before the game is
evaluated at all (checked with a counting game): validation is at the boundary.
A game that raises must see its own exception come out, never swallowed.

No case may hang: every test runs under a per-test timeout (pytest-timeout's
marker when the plugin is installed, else a ``SIGALRM`` fixture).

The corrupted-checkpoint case of the issue is covered with the checkpoints.
"""

from __future__ import annotations

import re
import signal

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from sklearn.linear_model import LogisticRegression, Ridge, RidgeClassifier
from sklearn.metrics import get_scorer
from sklearn.tree import DecisionTreeClassifier

from shapley_research import (KNNUtility, LogisticObjective, LogisticRegressionUtility, ModelUtility,
                              RidgeUtility, all_s_influence, as_game, beta_shapley, compressive_sample_size,
                              compressive_shapley, data_oob, exact_banzhaf, exact_beta_shapley, exact_shapley,
                              group_testing_q_tot,
                              group_testing_sample_size, group_testing_shapley, knn_shapley,
                              largest_s_influence, largest_s_influence_general, leave_one_out, msr_banzhaf,
                              neyman_allocation, owen_shapley,
                              permutation_sample_size, permutation_shapley, stability_bound,
                              stratified_svarm_shapley, unbiased_kernel_shapley, kernel_shapley,
                              uniform_division_guarantee, uniform_shapley)
from shapley_research import leverage_shapley
from shapley_research.datasets import (load_diabetes_split, load_iris_binary, load_iris_split,
                                       load_mnist_subset, pca_features)
from shapley_research.games import Game

# --------------------------------------------------------------------------------------------
# No case may hang
# --------------------------------------------------------------------------------------------

PER_TEST_SECONDS = 20

try:
    import pytest_timeout  # noqa: F401
except ImportError:  # pragma: no cover - the plugin is a test dependency
    if hasattr(signal, "SIGALRM"):
        @pytest.fixture(autouse=True)
        def _no_hang():
            def on_alarm(signum, frame):
                raise TimeoutError(f"a bad-input case ran over {PER_TEST_SECONDS} s: a hang?")

            previous = signal.signal(signal.SIGALRM, on_alarm)
            signal.alarm(PER_TEST_SECONDS)
            try:
                yield
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, previous)
else:
    pytestmark = pytest.mark.timeout(PER_TEST_SECONDS, method="signal")


def row(case_id: str, *values):
    return pytest.param(*values, id=case_id)


def assert_raises(call, error, match):
    assert issubclass(error, (ValueError, TypeError)), "bad input must raise ValueError or TypeError"
    with pytest.raises(error, match=match):
        call()


# --------------------------------------------------------------------------------------------
# Tiny data and games
# --------------------------------------------------------------------------------------------

_rng = np.random.default_rng(6)
X = _rng.normal(size=(6, 2))
Y = np.array([0, 1, 0, 1, 0, 1])
XT = _rng.normal(size=(4, 2))
YT = np.array([0, 1, 1, 0])
YR = _rng.normal(size=6)
YTR = _rng.normal(size=4)
N = 3  # players of the toy games
WEIGHTS = np.array([1.0, 2.0, 3.0])


def additive(masks):
    return np.asarray(masks, dtype=float) @ WEIGHTS[: np.shape(masks)[1]]


class DuckGame:
    """A game by duck typing (not a Game subclass): estimators must check its output themselves."""

    def __init__(self, n_players=N, output=additive):
        self.n_players, self.output, self.calls = n_players, output, 0

    def evaluate(self, masks):
        self.calls += 1
        return self.output(np.asarray(masks))


class PrefixGame(DuckGame):
    """Also offers the one-pass prefix path, with the given output."""

    def __init__(self, prefix_output):
        super().__init__()
        self.prefix_output = prefix_output

    def evaluate_prefixes(self, permutations):
        self.calls += 1
        return self.prefix_output(np.asarray(permutations))


class NoEvaluate:
    n_players = N


class NoPlayers:
    def evaluate(self, masks):
        return additive(masks)


class Boom(Exception):
    """Raised by the failing games: must come out of every estimator unchanged."""


def explode(*args):
    raise Boom("the game's own error")


# --------------------------------------------------------------------------------------------
# 1. Estimators x bad games
# --------------------------------------------------------------------------------------------

import shapley_research.estimators as sr_least_core  # noqa: E402  (least core: one small addition)

ESTIMATORS = {
    "exact": lambda g: exact_shapley(g),
    "uniform": lambda g: uniform_shapley(g),
    "permutation": lambda g: permutation_shapley(g, 40, 0),
    "permutation_antithetic": lambda g: permutation_shapley(g, 40, 0, antithetic=True),
    "group_testing_improved": lambda g: group_testing_shapley(g, 40, 0),
    "group_testing_paper": lambda g: group_testing_shapley(g, 40, 0, variant="paper"),
    "compressive": lambda g: compressive_shapley(g, 40, 0),
    "svarm": lambda g: stratified_svarm_shapley(g, 40, 0),
    "kernel": lambda g: unbiased_kernel_shapley(g, 40, 0),
    "owen": lambda g: owen_shapley(g, 40, 0),
    "kernel_regression": lambda g: kernel_shapley(g, 40, 0),
    "leverage": lambda g: leverage_shapley(g, 40, 0),
    "permutation_truncated": lambda g: permutation_shapley(g, 40, 0, truncation=0.2),
    "exact_banzhaf": lambda g: exact_banzhaf(g),
    "msr_banzhaf": lambda g: msr_banzhaf(g, 40, 0),
    "exact_beta_shapley": lambda g: exact_beta_shapley(g),
    "beta_shapley": lambda g: beta_shapley(g, 40, 0),
    "leave_one_out": lambda g: leave_one_out(g),
    "exact_least_core": lambda g: sr_least_core.exact_least_core(g),
    "least_core": lambda g: sr_least_core.least_core(g, 40, 0),  # N = 3: the budget enumerates
}
GROUP_TESTING = {"group_testing_improved", "group_testing_paper"}

MIN_PLAYERS = r"game.n_players must be >= \d"
BAD_GAMES = [
    # (id, game factory, error, match[, {estimator: why it still fails}])
    ("plain_function", lambda: additive, TypeError, r"game(\.n_players)? must"),
    ("n_players_missing", NoPlayers, TypeError, "game.n_players must be an integer"),
    ("n_players_zero", lambda: DuckGame(0), ValueError, MIN_PLAYERS),
    ("n_players_negative", lambda: DuckGame(-2), ValueError, MIN_PLAYERS),
    ("n_players_fraction", lambda: DuckGame(2.5), TypeError, "game.n_players must be an integer"),
    ("n_players_string", lambda: DuckGame("3"), TypeError, "game.n_players must be an integer"),
    ("n_players_bool", lambda: DuckGame(True), TypeError, "game.n_players must be an integer"),
    ("n_players_nan", lambda: DuckGame(np.nan), TypeError, "game.n_players must be an integer"),
    ("evaluate_missing", NoEvaluate, TypeError, "game.evaluate must be a method"),
    ("returns_nan", lambda: DuckGame(output=lambda m: np.full(len(m), np.nan)), ValueError, "non-finite"),
    ("returns_inf_on_grand_coalition",
     lambda: DuckGame(output=lambda m: np.where(m.all(axis=1), np.inf, additive(m))), ValueError, "non-finite"),
    ("returns_minus_inf_on_empty_coalition",
     lambda: DuckGame(output=lambda m: np.where(m.any(axis=1), additive(m), -np.inf)), ValueError, "non-finite"),
    ("returns_too_few", lambda: DuckGame(output=lambda m: additive(m)[:-1]), ValueError,
     "one utility per coalition"),
    ("returns_too_many", lambda: DuckGame(output=lambda m: np.r_[additive(m), 0.0]), ValueError,
     "one utility per coalition"),
    ("returns_2d", lambda: DuckGame(output=lambda m: np.c_[additive(m), additive(m)]), ValueError,
     "one utility per coalition"),
    ("returns_scalar", lambda: DuckGame(output=lambda m: 1.0), ValueError, "one utility per coalition"),
    ("returns_none", lambda: DuckGame(output=lambda m: None), ValueError, "one utility per coalition"),
    ("returns_dict", lambda: DuckGame(output=lambda m: {}), TypeError, "must return real numbers"),
    ("returns_strings", lambda: DuckGame(output=lambda m: ["1.0"] * len(m)), TypeError,
     "must return real numbers"),
    ("returns_complex", lambda: DuckGame(output=lambda m: additive(m) * (1 + 1j)), TypeError,
     "must return real numbers"),
]


# (estimator, case) pairs where the bad output is never asked for: nothing to reject
NEVER_EVALUATED = {("leave_one_out", "returns_minus_inf_on_empty_coalition")}  # U(D) and U(D - i) only


def _game_rows():
    for case_id, factory, error, match in BAD_GAMES:
        for name in ESTIMATORS:
            if (name, case_id) not in NEVER_EVALUATED:
                yield row(f"{name}-{case_id}", name, factory, error, match)


@pytest.mark.parametrize("estimator,factory,error,match", list(_game_rows()))
def test_estimator_rejects_bad_game(estimator, factory, error, match):
    assert_raises(lambda: ESTIMATORS[estimator](factory()), error, match)


@pytest.mark.parametrize("estimator,case_id", sorted(NEVER_EVALUATED))
def test_a_bad_output_never_asked_for_is_no_error(estimator, case_id):
    factory = next(f for c, f, *_ in BAD_GAMES if c == case_id)
    assert np.isfinite(ESTIMATORS[estimator](factory()).values).all()


PREFIX_OUTPUTS = [
    ("prefix_nan", lambda p: np.full(p.shape, np.nan), ValueError, "evaluate_prefixes returned non-finite"),
    ("prefix_wrong_shape", lambda p: np.zeros((p.shape[0], p.shape[1] + 1)), ValueError,
     "evaluate_prefixes must return one utility per coalition"),
    ("prefix_dict", lambda p: {}, TypeError, "evaluate_prefixes must return real numbers"),
    ("prefix_complex", lambda p: np.ones(p.shape, complex), TypeError, "evaluate_prefixes must return real"),
]


@pytest.mark.sampling  # the sampling path itself, on a small game
@pytest.mark.parametrize("estimator", ["permutation", "permutation_antithetic", "compressive"])
@pytest.mark.parametrize("output,error,match", [row(c[0], *c[1:]) for c in PREFIX_OUTPUTS])
def test_bad_prefix_path_output(estimator, output, error, match):
    assert_raises(lambda: ESTIMATORS[estimator](PrefixGame(output)), error, match)


@pytest.mark.sampling  # the sampling path itself, on a small game
@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
@pytest.mark.parametrize("where", ["evaluate", "evaluate_prefixes", "function_game"])
def test_game_that_raises_propagates(estimator, where):
    """The game's own exception comes out unchanged (never swallowed, never re-typed)."""
    if where == "evaluate":
        game = DuckGame(output=explode)
    elif where == "evaluate_prefixes":
        game = PrefixGame(explode)
    else:
        game = as_game(lambda mask: explode() if mask.any() else 0.0, N)
    if where == "evaluate_prefixes" and estimator not in {"permutation", "permutation_antithetic", "compressive"}:
        game = DuckGame(output=explode)  # these estimators never take the prefix path
    with pytest.raises(Boom, match="the game's own error"):
        ESTIMATORS[estimator](game)


@pytest.mark.sampling  # the sampling path itself, on a small game
@pytest.mark.parametrize("estimator", ["permutation", "group_testing_improved", "compressive"])
def test_game_that_raises_in_a_worker_propagates(estimator):
    from joblib import parallel_config

    run = {"permutation": lambda g: permutation_shapley(g, 40, 0, n_jobs=2, batch_size=2),
           "group_testing_improved": lambda g: group_testing_shapley(g, 40, 0, n_jobs=2, batch_size=2),
           "compressive": lambda g: compressive_shapley(g, 40, 0, n_jobs=2, batch_size=2)}[estimator]
    # the anchors (empty and grand coalition) are evaluated in this thread; every other coalition raises
    game = DuckGame(output=lambda m: explode() if ((m.sum(axis=1) > 0) & (m.sum(axis=1) < N)).any()
                    else additive(m))
    with parallel_config(backend="threading"), pytest.raises(Boom, match="the game's own error"):
        run(game)


@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
def test_one_player_game(estimator):
    """One player: the value is U({0}) - U(empty) (efficiency); group testing needs two players."""
    game = as_game(lambda m: 5.0 + 2.0 * m.sum(axis=1), 1, vectorized=True)
    run = {"permutation": lambda g: permutation_shapley(g, 2, 0),
           "permutation_antithetic": lambda g: permutation_shapley(g, 3, 0, antithetic=True),
           "compressive": lambda g: compressive_shapley(g, 3, 0)}.get(estimator, ESTIMATORS[estimator])
    if estimator in GROUP_TESTING:
        assert_raises(lambda: run(game), ValueError, "game.n_players must be >= 2")
    else:
        np.testing.assert_allclose(run(game).values, [2.0], atol=1e-6)


# DVRL learns selection probabilities, not a semivalue (no efficiency on one player): the bad games only.
# Its parameters are checked in tests/estimators/test_dvrl.py.
@pytest.mark.parametrize("factory,error,match", [row(case[0], *case[1:4]) for case in BAD_GAMES])
def test_dvrl_rejects_bad_game(factory, error, match):
    from shapley_research import dvrl

    assert_raises(lambda: dvrl(factory(), 64, 0, progress=False), error, match)  # 64 draws: empty and full too


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


# --------------------------------------------------------------------------------------------
# 3. as_game, Game.evaluate (masks) and Game.__call__ (coalitions)
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,kwargs,error,match", [
    row("fn_not_callable", (42, 3), {}, TypeError, "fn must be callable"),
    row("fn_none", (None, 3), {}, TypeError, "fn must be callable"),
    row("n_players_zero", (additive, 0), {}, ValueError, "n_players must be >= 1"),
    row("n_players_negative", (additive, -1), {}, ValueError, "n_players must be >= 1"),
    row("n_players_fraction", (additive, 2.5), {}, TypeError, "n_players must be an integer"),
    row("n_players_string", (additive, "3"), {}, TypeError, "n_players must be an integer"),
    row("n_players_none", (additive, None), {}, TypeError, "n_players must be an integer"),
    row("n_players_bool", (additive, True), {}, TypeError, "n_players must be an integer"),
    row("vectorized_string", (additive, 3), {"vectorized": "no"}, TypeError, "vectorized must be True or False"),
    row("vectorized_int", (additive, 3), {"vectorized": 1}, TypeError, "vectorized must be True or False"),
    row("vectorized_none", (additive, 3), {"vectorized": None}, TypeError, "vectorized must be True or False"),
])
def test_as_game_rejects(args, kwargs, error, match):
    assert_raises(lambda: as_game(*args, **kwargs), error, match)


GAME_FACTORIES = {
    "FunctionGame": lambda: as_game(additive, N, vectorized=True),
    "ModelUtility": lambda: ModelUtility(LogisticRegression(), X, Y, XT, YT),
    "LogisticRegressionUtility": lambda: LogisticRegressionUtility(X, Y, XT, YT),
    "RidgeUtility": lambda: RidgeUtility(X, YR, XT, YTR),
    "KNNUtility": lambda: KNNUtility(X, Y, XT, YT, k=2),
}


def _masks_rows():
    cases = [
        ("wrong_columns", lambda n: np.ones((2, n + 1), bool), ValueError, r"masks must have shape \(m, n_players\)"),
        ("one_dimensional", lambda n: np.ones(n, bool), ValueError, "masks must have shape"),
        ("three_dimensional", lambda n: np.ones((1, 2, n), bool), ValueError, "masks must have shape"),
        ("scalar", lambda n: True, ValueError, "masks must have shape"),
        ("none", lambda n: None, ValueError, "masks must have shape"),
        ("strings", lambda n: np.array([["a"] * n]), TypeError, "masks must be a boolean array"),
        ("objects", lambda n: np.array([[True] * n], dtype=object), TypeError, "masks must be a boolean array"),
        ("fractions", lambda n: np.full((1, n), 0.5), ValueError, "masks must contain only booleans"),
        ("twos", lambda n: np.full((1, n), 2), ValueError, "masks must contain only booleans"),
        ("nan", lambda n: np.full((1, n), np.nan), ValueError, "masks must contain only booleans"),
    ]
    for name in GAME_FACTORIES:
        for case_id, masks, error, match in cases:
            yield row(f"{name}-{case_id}", name, masks, error, match)


@pytest.mark.parametrize("game,masks,error,match", list(_masks_rows()))
def test_evaluate_rejects_bad_masks(game, masks, error, match):
    game = GAME_FACTORIES[game]()
    assert_raises(lambda: game.evaluate(masks(game.n_players)), error, match)


@pytest.mark.parametrize("game", sorted(GAME_FACTORIES))
def test_evaluate_accepts_zero_one_and_no_rows(game):
    game = GAME_FACTORIES[game]()
    n = game.n_players
    np.testing.assert_array_equal(game.evaluate(np.eye(n, dtype=int)), game.evaluate(np.eye(n, dtype=bool)))
    assert game.evaluate(np.zeros((0, n), bool)).shape == (0,)


@pytest.mark.parametrize("coalition,error,match", [
    row("negative_index", [-1], ValueError, r"outside range\(3\)"),
    row("index_too_large", [3], ValueError, r"outside range\(3\)"),
    row("fractional_index", [0.5], TypeError, "coalition must be a boolean mask or integer player indices"),
    row("string_index", ["a"], TypeError, "coalition must be a boolean mask or integer player indices"),
    row("nan_index", [np.nan], TypeError, "coalition must be a boolean mask or integer player indices"),
    row("mask_too_short", [True, False], ValueError, "masks must have shape"),
    row("repeated_index", [2, 0, 2], ValueError, r"repeated player indices \(\[2\]\)"),
    row("zero_one_integers", np.array([1, 0, 1]), ValueError, r"a 0/1 integer array reads as indices here"),
])
def test_game_call_rejects_bad_coalition(coalition, error, match):
    game = as_game(additive, N, vectorized=True)
    assert_raises(lambda: game(coalition), error, match)


def test_game_call_conventions():
    game = as_game(additive, N, vectorized=True)
    assert game([]) == 0.0  # the empty coalition
    assert game([2, 0]) == 4.0  # indices
    assert game(np.array([1.0, 2.0])) == 5.0  # integral floats are indices
    assert game([True, False, True]) == 4.0  # a boolean mask


@pytest.mark.parametrize("fn,error,match", [
    row("returns_array", lambda m: np.array([1.0, 2.0]), TypeError, r"fn\(mask\) must return one real number"),
    row("returns_list", lambda m: [1.0, 2.0], TypeError, r"fn\(mask\) must return one real number"),
    row("returns_ragged", lambda m: [[1.0], [2.0, 3.0]], TypeError, r"fn\(mask\) must return one real number"),
    row("returns_string", lambda m: "1.0", TypeError, r"fn\(mask\) must return one real number"),
    row("returns_none", lambda m: None, TypeError, r"fn\(mask\) must return one real number"),
    row("returns_complex", lambda m: 1 + 1j, TypeError, r"fn\(mask\) must return one real number"),
    row("returns_nan", lambda m: np.nan, ValueError, "non-finite"),
    row("returns_inf", lambda m: np.inf if m.all() else 0.0, ValueError, "non-finite"),
])
def test_function_game_checks_each_output(fn, error, match):
    game = as_game(fn, N)
    assert_raises(lambda: game.evaluate(np.tri(N, dtype=bool)), error, match)


@pytest.mark.parametrize("fn", [
    pytest.param(lambda m: float(m.sum()), id="float"), pytest.param(lambda m: int(m.sum()), id="int"),
    pytest.param(lambda m: np.float32(m.sum()), id="numpy_float32"),
    pytest.param(lambda m: np.int64(m.sum()), id="numpy_int64"),
    pytest.param(lambda m: np.array(m.sum()), id="zero_dimensional_array"),
    pytest.param(lambda m: np.array([m.sum()]), id="one_element_array"),
])
def test_function_game_accepts_one_number_in_any_form(fn):
    np.testing.assert_array_equal(as_game(fn, N).evaluate(np.tri(N, dtype=bool)), [1.0, 2.0, 3.0])


class SubclassGame(Game):
    n_players = N

    def __init__(self, output):
        self.output = output

    def _evaluate(self, masks):
        return self.output(masks)


@pytest.mark.parametrize("output,error,match", [
    row("complex", lambda m: additive(m) + 0j, TypeError, "SubclassGame._evaluate must return real numbers"),
    row("strings", lambda m: np.array(["1"] * len(m)), TypeError, "SubclassGame._evaluate must return real"),
    row("ragged", lambda m: [[1.0], [1.0, 2.0]][: len(m)], TypeError, "SubclassGame._evaluate must return real"),
    row("nan", lambda m: np.full(len(m), np.nan), ValueError, "SubclassGame._evaluate returned non-finite"),
])
def test_game_subclass_output_names_the_game(output, error, match):
    assert_raises(lambda: SubclassGame(output).evaluate(np.tri(N, dtype=bool)[:2]), error, match)


# --------------------------------------------------------------------------------------------
# 4. Data x every data-taking callable
# --------------------------------------------------------------------------------------------

CLASSIFIERS = {
    "ModelUtility": lambda X, y, Xt, yt: ModelUtility(LogisticRegression(), X, y, Xt, yt),
    "LogisticRegressionUtility": lambda X, y, Xt, yt: LogisticRegressionUtility(X, y, Xt, yt),
    "KNNUtility": lambda X, y, Xt, yt: KNNUtility(X, y, Xt, yt, k=2),
    "knn_shapley": lambda X, y, Xt, yt: knn_shapley(X, y, Xt, yt, k=2),
    "LogisticObjective": lambda X, y, Xt, yt: LogisticObjective(X, y, Xt, yt),
    "largest_s_influence": lambda X, y, Xt, yt: largest_s_influence(X, y, Xt, yt),
    "all_s_influence": lambda X, y, Xt, yt: all_s_influence(X, y, Xt, yt, 40, 0),
}
REGRESSORS = {
    "ModelUtility[Ridge]": lambda X, y, Xt, yt: ModelUtility(Ridge(), X, y, Xt, yt, metric="neg_mse"),
    "RidgeUtility": lambda X, y, Xt, yt: RidgeUtility(X, y, Xt, yt),
}
FEATURES_ONLY = {"pca_features": lambda X, y, Xt, yt: pca_features(X, Xt, 1)}


def with_nan(A, value=np.nan):
    A = np.array(A, dtype=float)
    A[1, 0] = value
    return A


def object_array(values):
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


# change(X, y, Xt, yt) -> the four arguments; applies to every callable that takes that argument
FEATURE_CASES = [
    ("X_train_empty", lambda X, y, Xt, yt: (X[:0], y[:0], Xt, yt), ValueError, "X_train is empty"),
    ("X_test_empty", lambda X, y, Xt, yt: (X, y, Xt[:0], yt[:0]), ValueError, "X_test is empty"),
    ("X_train_no_features", lambda X, y, Xt, yt: (X[:, :0], y, Xt, yt), ValueError, "X_train has no features"),
    ("X_train_1d", lambda X, y, Xt, yt: (X[:, 0], y, Xt, yt), ValueError, "X_train must be 2-D"),
    ("X_train_3d", lambda X, y, Xt, yt: (X[:, :, None], y, Xt, yt), ValueError, "X_train must be 2-D"),
    ("X_test_1d", lambda X, y, Xt, yt: (X, y, Xt[:, 0], yt), ValueError, "X_test must be 2-D"),
    ("X_train_nan", lambda X, y, Xt, yt: (with_nan(X), y, Xt, yt), ValueError, "X_train contains NaN or inf"),
    ("X_train_plus_inf", lambda X, y, Xt, yt: (with_nan(X, np.inf), y, Xt, yt), ValueError,
     "X_train contains NaN or infinite"),
    ("X_train_minus_inf", lambda X, y, Xt, yt: (with_nan(X, -np.inf), y, Xt, yt), ValueError,
     "X_train contains NaN or infinite"),
    ("X_test_nan", lambda X, y, Xt, yt: (X, y, with_nan(Xt), yt), ValueError, "X_test contains NaN or inf"),
    ("X_test_inf", lambda X, y, Xt, yt: (X, y, with_nan(Xt, np.inf), yt), ValueError, "X_test contains NaN"),
    ("X_test_other_columns", lambda X, y, Xt, yt: (X, y, Xt[:, :1], yt), ValueError,
     "X_train has 2 features but X_test has 1"),
    ("X_test_frame_columns_reordered",
     lambda X, y, Xt, yt: (pd.DataFrame(X, columns=["a", "b"]), y, pd.DataFrame(Xt, columns=["b", "a"]), yt),
     ValueError, re.escape("X_test must have the columns of X_train in the same order; got ['b', 'a']")),
    ("X_train_numeric_strings", lambda X, y, Xt, yt: (X.astype(str), y, Xt, yt), TypeError,
     "X_train must be a numeric array, got strings"),
    ("X_train_objects", lambda X, y, Xt, yt: (np.array([["a", None]] * len(X), dtype=object), y, Xt, yt),
     TypeError, "X_train must be a numeric array"),
    ("X_train_complex", lambda X, y, Xt, yt: (X + 1j, y, Xt, yt), TypeError, "X_train must be a real numeric"),
    ("X_test_complex", lambda X, y, Xt, yt: (X, y, Xt * (1 + 0j), yt), TypeError, "X_test must be a real numeric"),
    ("X_train_sparse", lambda X, y, Xt, yt: (scipy.sparse.csr_matrix(X), y, Xt, yt), TypeError,
     "X_train must be a dense array"),
    ("X_train_sparse_frame", lambda X, y, Xt, yt: (pd.DataFrame(X).astype(pd.SparseDtype(float, 0.0)), y, Xt, yt),
     TypeError, "X_train must be a dense array; DataFrames of sparse columns are not supported"),
    ("X_train_ragged", lambda X, y, Xt, yt: ([[1.0, 2.0], [3.0]] + X[2:].tolist(), y, Xt, yt), TypeError,
     "X_train must be a numeric array"),
]
TARGET_CASES = [
    ("y_train_too_short", lambda X, y, Xt, yt: (X, y[:-1], Xt, yt), ValueError, "y_train has 5"),
    ("y_test_too_long", lambda X, y, Xt, yt: (X, y, Xt, np.r_[yt, yt[:1]]), ValueError, "y_test has 5"),
    ("y_train_2_columns", lambda X, y, Xt, yt: (X, np.c_[y, y], Xt, yt), ValueError, "y_train must be 1-D"),
    ("y_train_scalar", lambda X, y, Xt, yt: (X, y[0], Xt, yt), ValueError, "y_train must be 1-D"),
    ("y_train_none", lambda X, y, Xt, yt: (X, None, Xt, yt), ValueError, "y_train must be 1-D"),
]
LABEL_CASES = [
    ("y_train_nan", lambda X, y, Xt, yt: (X, np.where(np.arange(6) == 1, np.nan, y), Xt, yt), ValueError,
     "y_train contains NaN or infinite labels"),
    ("y_test_inf", lambda X, y, Xt, yt: (X, y, Xt, np.where(np.arange(4) == 1, np.inf, yt)), ValueError,
     "y_test contains NaN or infinite labels"),
    ("y_train_object_nan", lambda X, y, Xt, yt: (X, object_array([np.nan, 1, 0, 1, 0, 1]), Xt, yt), ValueError,
     "y_train contains NaN or infinite labels"),
    ("y_train_complex", lambda X, y, Xt, yt: (X, y + 0j, Xt, yt), TypeError, "y_train must hold class labels"),
    ("y_strings_vs_numbers", lambda X, y, Xt, yt: (X, np.array(["a", "b"] * 3), Xt, yt), TypeError,
     "y_test holds numbers .* but y_train holds strings"),
    ("y_train_continuous", lambda X, y, Xt, yt: (X, y + 0.25, Xt, yt), ValueError,
     "y_train holds continuous values .* needs a regression utility"),
    ("y_test_no_label_in_common", lambda X, y, Xt, yt: (X, y, Xt, yt + 10), ValueError,
     "y_test shares no label with y_train"),
    ("y_test_other_spelling",
     lambda X, y, Xt, yt: (X, np.where(y == 0, "no", "yes"), Xt, np.where(yt == 0, "No", "Yes")),
     ValueError, "y_test shares no label with y_train"),
]
UNSORTABLE_LABELS = [  # labels must be sortable (classes are sorted) except for the KNN utility
    ("y_train_mixed_objects", lambda X, y, Xt, yt: (X, object_array([None, 1, "a", 1, 0, 1]), Xt, yt), TypeError,
     "y_train labels must be mutually comparable"),
]
REGRESSION_TARGET_CASES = [
    ("y_train_nan", lambda X, y, Xt, yt: (X, with_nan(np.c_[y])[:, 0], Xt, yt), ValueError,
     "y_train contains NaN or infinite"),
    ("y_test_inf", lambda X, y, Xt, yt: (X, y, Xt, np.r_[yt[:-1], np.inf]), ValueError, "y_test contains NaN"),
    ("y_train_strings", lambda X, y, Xt, yt: (X, y.astype(str), Xt, yt), TypeError,
     "y_train must be real numbers for a regression metric"),
    ("y_train_words", lambda X, y, Xt, yt: (X, object_array(["a"] * 6), Xt, yt), TypeError,
     "y_train must be numeric for a regression metric"),
    ("y_train_complex", lambda X, y, Xt, yt: (X, y + 1j, Xt, yt), TypeError, "y_train must be real numbers"),
]


def _feature_cases(name: str) -> list:
    """ModelUtility gives sparse features to the model as they are (tests/utilities: robustness)."""
    return [case for case in FEATURE_CASES
            if not (name.startswith("ModelUtility") and case[0] in ("X_train_sparse", "X_train_sparse_frame"))]


def _data_rows():
    for name in CLASSIFIERS:
        cases = _feature_cases(name) + TARGET_CASES + LABEL_CASES
        if name not in ("KNNUtility", "knn_shapley"):
            cases = cases + UNSORTABLE_LABELS
        for case_id, change, error, match in cases:
            yield row(f"{name}-{case_id}", CLASSIFIERS[name], (X, Y, XT, YT), change, error, match)
    for name in REGRESSORS:
        for case_id, change, error, match in _feature_cases(name) + TARGET_CASES + REGRESSION_TARGET_CASES:
            yield row(f"{name}-{case_id}", REGRESSORS[name], (X, YR, XT, YTR), change, error, match)
    for name in FEATURES_ONLY:
        for case_id, change, error, match in FEATURE_CASES:
            yield row(f"{name}-{case_id}", FEATURES_ONLY[name], (X, Y, XT, YT), change, error, match)


@pytest.mark.parametrize("build,data,change,error,match", list(_data_rows()))
def test_bad_data_is_rejected(build, data, change, error, match):
    assert_raises(lambda: build(*change(*data)), error, match)


# --- documented conventions instead of errors -----------------------------------------------

ONE_CLASS = np.zeros(6, dtype=int)


@pytest.mark.parametrize("build", [
    pytest.param(lambda y, **kw: ModelUtility(LogisticRegression(), X[:len(y)], y, XT, YT, **kw), id="ModelUtility"),
    pytest.param(lambda y, **kw: ModelUtility(LogisticRegression(), X[:len(y)], y, XT, YT, fast=False, **kw),
                 id="ModelUtility-per-clone"),
    pytest.param(lambda y, **kw: LogisticRegressionUtility(X[:len(y)], y, XT, YT, **kw),
                 id="LogisticRegressionUtility"),
    pytest.param(lambda y, **kw: data_oob(LogisticRegression(), X[:len(y)], y, n_estimators=3, seed=0),
                 id="data_oob"),
])
@pytest.mark.parametrize("y_train", [pytest.param(ONE_CLASS, id="one_class"), pytest.param(Y[:1], id="one_point")])
def test_a_classifier_refuses_labels_of_one_class(build, y_train):
    """A classifier needs two classes (issue 34): one class (also a single training point) is refused by name.

    Before, every coalition fell under the degenerate convention and every value was about 0 (``data_oob``: all
    1.0), silently; the influence functions refuse one class too (test_influence_needs_two_classes).
    """
    message = re.escape(f"y_train holds a single class ({y_train[0].item()!r}) in all its {len(y_train)} labels")
    assert_raises(lambda: build(y_train), ValueError, message)


def test_one_training_point_regression():
    ridge = RidgeUtility(X[:1], YR[:1], XT, YTR, alpha=1.0)
    reference = ModelUtility(Ridge(alpha=1.0), X[:1], YR[:1], XT, YTR, metric="neg_mse", fast=False)  # scikit-learn
    full = np.ones((1, 1), bool)
    np.testing.assert_allclose(ridge.evaluate(full), reference.evaluate(full), rtol=1e-10)
    # the empty set predicts 0 (module docstring), so U(empty) = -mean(y_test^2)
    np.testing.assert_allclose(ridge.evaluate(~full), -np.mean(YTR**2))


@pytest.mark.parametrize("y_train,k", [
    pytest.param(Y[:1], 1, id="one_point"), pytest.param(ONE_CLASS, 2, id="one_class"),
    pytest.param(Y, 50, id="k_above_n"),
])
def test_knn_conventions_agree_with_the_game(y_train, k):
    X_train = X[: len(y_train)]
    values = knn_shapley(X_train, y_train, XT, YT, k).values
    exact = exact_shapley(KNNUtility(X_train, y_train, XT, YT, k)).values
    np.testing.assert_allclose(values, exact, atol=1e-12)
    game = KNNUtility(X_train, y_train, XT, YT, k)
    full = game(np.ones(len(y_train), bool))
    np.testing.assert_allclose(values.sum(), full, atol=1e-12)  # efficiency, U(empty) = 0
    if len(np.unique(y_train)) == 1:
        np.testing.assert_allclose(values, values[0])  # one class: all points alike


def test_influence_needs_two_classes():
    for build in (CLASSIFIERS["LogisticObjective"], CLASSIFIERS["largest_s_influence"],
                  CLASSIFIERS["all_s_influence"]):
        message = "y_train must contain at least two classes"
        assert_raises(lambda build=build: build(X, ONE_CLASS, XT, YT), ValueError, message)
        assert_raises(lambda build=build: build(X[:1], Y[:1], XT, YT), ValueError, message)


def test_influence_with_one_point_per_class():
    """Removing either point leaves a class empty: both get U(I) - U_0 (degenerate convention)."""
    result = largest_s_influence(X[:2], Y[:2], XT, YT)
    total = result.info["full_utility"] - result.info["empty_utility"]
    np.testing.assert_allclose(result.values, [total / 2, total / 2])
    assert np.isfinite(all_s_influence(X[:2], Y[:2], XT, YT, 2, 0).values).all()


# --------------------------------------------------------------------------------------------
# 5. Parameters of the utilities, KNN and influence
# --------------------------------------------------------------------------------------------

class FitOnly:
    def fit(self, X, y):
        return self


def utility_row(case_id, kwargs, error, match, build="ModelUtility"):
    return row(f"{build}-{case_id}", build, kwargs, error, match)


BUILDERS = {
    "ModelUtility": lambda **kw: ModelUtility(**{"model": LogisticRegression(), "X_train": X, "y_train": Y,
                                                 "X_test": XT, "y_test": YT, **kw}),
    "LogisticRegressionUtility": lambda **kw: LogisticRegressionUtility(X, Y, XT, YT, **kw),
    "RidgeUtility": lambda **kw: RidgeUtility(X, YR, XT, YTR, **kw),
    "KNNUtility": lambda **kw: KNNUtility(X, Y, XT, YT, **{"k": 2, **kw}),
    "knn_shapley": lambda **kw: knn_shapley(X, Y, XT, YT, **{"k": 2, **kw}),
    "largest_s_influence": lambda **kw: largest_s_influence(X, Y, XT, YT, **kw),
    "all_s_influence": lambda **kw: all_s_influence(X, Y, XT, YT, **{"budget": 40, "seed": 0, **kw}),
}

PARAMETER_ROWS = [
    utility_row("model_none", {"model": None}, TypeError, "model must be an estimator"),
    utility_row("model_class", {"model": LogisticRegression}, TypeError, "model must be an estimator instance"),
    utility_row("model_without_predict", {"model": FitOnly()}, TypeError, "model must be an estimator"),
    utility_row("metric_unknown", {"metric": "f_one"}, ValueError, "metric must be one of"),
    utility_row("metric_number", {"metric": 3}, TypeError, "metric must be a string or a callable"),
    utility_row("metric_none", {"metric": None}, TypeError, "metric must be a string or a callable"),
    utility_row("metric_of_other_task", {"metric": "r2", "task": "classification"}, ValueError,
                "is a regression metric but task='classification'"),
    utility_row("log_loss_without_predict_proba", {"model": Ridge(), "metric": "neg_log_loss",
                                                   "task": "classification"}, TypeError,
                "needs a model with predict_proba"),
    utility_row("scorer_without_predict_proba", {"model": RidgeClassifier(), "metric": get_scorer("neg_log_loss")},
                TypeError, "needs a model with predict_proba; RidgeClassifier has none"),
    utility_row("task_unknown", {"task": "ranking"}, ValueError, "task must be one of"),
    utility_row("degenerate_unknown", {"degenerate": "ignore"}, ValueError, "degenerate must be one of"),
    utility_row("degenerate_list", {"degenerate": ["raise"]}, ValueError, "degenerate must be one of"),
    utility_row("default_utility_missing", {"degenerate": "default"}, ValueError, "needs a number as default_utility"),
    utility_row("default_utility_nan", {"degenerate": "default", "default_utility": np.nan}, ValueError,
                "default_utility must be finite"),
    utility_row("default_utility_string", {"degenerate": "default", "default_utility": "0"}, TypeError,
                "default_utility must be a real number"),
    utility_row("default_utility_unused", {"default_utility": 0.0}, ValueError, "only used with degenerate='default'"),
    utility_row("min_samples_zero", {"min_samples": 0}, ValueError, "min_samples must be >= 1"),
    utility_row("min_samples_fraction", {"min_samples": 1.5}, TypeError, "min_samples must be an integer"),
    utility_row("min_samples_above_n", {"min_samples": 10 ** 6}, ValueError,
                "min_samples=1000000 exceeds the .* training points"),
    utility_row("cache_string", {"cache": "yes"}, TypeError, "cache must be True or False"),
    utility_row("cache_int", {"cache": 1}, TypeError, "cache must be True or False"),
    utility_row("cache_size_zero", {"cache": True, "cache_size": 0}, ValueError, "cache_size must be >= 1"),
    utility_row("fast_string", {"fast": "yes"}, ValueError, "fast must be 'auto', True or False"),
    utility_row("fast_int", {"fast": 1}, ValueError, "fast must be 'auto', True or False"),
    utility_row("fast_none", {"fast": None}, ValueError, "fast must be 'auto', True or False"),
    utility_row("fast_true_unsupported", {"model": Ridge(positive=True), "metric": "r2", "fast": True}, ValueError,
                "fast=True but Ridge has no batched learner"),
    utility_row("warm_prefixes_int", {"warm_prefixes": 1}, TypeError, "warm_prefixes must be True or False"),
    utility_row("warm_prefixes_not_routed", {"warm_prefixes": True, "fast": False}, ValueError,
                "warm_prefixes=True needs a LogisticRegression routed"),
    utility_row("warm_prefixes_unsupported_model", {"model": DecisionTreeClassifier(), "warm_prefixes": True},
                ValueError, "warm_prefixes=True needs a LogisticRegression routed"),
    utility_row("blas_threads_zero", {"blas_threads": 0}, ValueError, "blas_threads must be >= 1"),
    utility_row("blas_threads_string", {"blas_threads": "1"}, TypeError, "blas_threads must be an integer"),
    # the batched learners
    *[utility_row(case_id, kwargs, error, match, "LogisticRegressionUtility") for case_id, kwargs, error, match in [
        ("C_zero", {"C": 0}, ValueError, "C must be > 0"),
        ("C_inf", {"C": np.inf}, ValueError, "C must be finite"),
        ("C_string", {"C": "1"}, TypeError, "C must be a real number"),
        ("tol_zero", {"tol": 0.0}, ValueError, "tol must be > 0"),
        ("max_iter_zero", {"max_iter": 0}, ValueError, "max_iter must be >= 1"),
        ("max_iter_fraction", {"max_iter": 2.5}, TypeError, "max_iter must be an integer"),
        ("solver_unknown", {"solver": "sag"}, ValueError, "solver must be one of"),
        ("newton_max_params_zero", {"newton_max_params": 0}, ValueError, "newton_max_params must be >= 1"),
        ("metric_regression", {"metric": "r2"}, ValueError, "needs a classification metric"),
        ("metric_callable", {"metric": lambda m, X, y: 0.0}, TypeError, "takes a metric name, not a callable"),
        ("fit_intercept_string", {"fit_intercept": "no"}, TypeError, "fit_intercept must be True or False"),
        ("warm_start_string", {"warm_start": "no"}, TypeError, "warm_start must be True or False"),
        ("prefix_refit_ratio_one", {"prefix_refit_ratio": 1.0}, ValueError, "prefix_refit_ratio must be > 1"),
        ("prefix_refit_ratio_nan", {"prefix_refit_ratio": np.nan}, ValueError, "prefix_refit_ratio must be finite"),
        ("prefix_steps_zero", {"prefix_steps": 0}, ValueError, "prefix_steps must be >= 1"),
        ("batch_size_zero", {"batch_size": 0}, ValueError, "batch_size must be >= 1"),
        ("batch_size_fraction", {"batch_size": 1.5}, TypeError, "batch_size must be an integer"),
        ("degenerate_unknown", {"degenerate": "skip"}, ValueError, "degenerate must be one of"),
        ("min_samples_zero", {"min_samples": 0}, ValueError, "min_samples must be >= 1"),
        ("min_samples_above_n", {"min_samples": 10 ** 6}, ValueError, "exceeds the .* training points"),
    ]],
    *[utility_row(case_id, kwargs, error, match, "RidgeUtility") for case_id, kwargs, error, match in [
        ("alpha_zero", {"alpha": 0.0}, ValueError, "alpha must be > 0"),
        ("alpha_negative", {"alpha": -1.0}, ValueError, "alpha must be > 0"),
        ("alpha_nan", {"alpha": np.nan}, ValueError, "alpha must be finite"),
        ("alpha_string", {"alpha": "1"}, TypeError, "alpha must be a real number"),
        ("alpha_bool", {"alpha": True}, TypeError, "alpha must be a real number"),
        ("metric_classification", {"metric": "accuracy"}, ValueError, "needs a regression metric"),
        ("refresh_every_zero", {"refresh_every": 0}, ValueError, "refresh_every must be >= 1"),
        ("fit_intercept_int", {"fit_intercept": 1}, TypeError, "fit_intercept must be True or False"),
        ("batch_size_zero", {"batch_size": 0}, ValueError, "batch_size must be >= 1"),
    ]],
    *[utility_row(case_id, kwargs, error, match, build) for build in ("KNNUtility", "knn_shapley")
      for case_id, kwargs, error, match in [
          ("k_zero", {"k": 0}, ValueError, "k must be >= 1"),
          ("k_negative", {"k": -1}, ValueError, "k must be >= 1"),
          ("k_fraction", {"k": 2.5}, TypeError, "k must be an integer"),
          ("k_string", {"k": "3"}, TypeError, "k must be an integer"),
          ("k_bool", {"k": True}, TypeError, "k must be an integer"),
          ("k_nan", {"k": np.nan}, TypeError, "k must be an integer"),
          ("k_none", {"k": None}, TypeError, "k must be an integer"),
      ]],
    utility_row("block_size_zero", {"block_size": 0}, ValueError, "block_size must be >= 1", "knn_shapley"),
    utility_row("block_size_fraction", {"block_size": 1.5}, TypeError, "block_size must be an integer", "knn_shapley"),
    *[utility_row(case_id, kwargs, error, match, build) for build in ("largest_s_influence", "all_s_influence")
      for case_id, kwargs, error, match in [
          ("C_zero", {"C": 0.0}, ValueError, "C must be > 0"),
          ("C_inf", {"C": np.inf}, ValueError, "C must be finite"),
          ("C_string", {"C": "1"}, TypeError, "C must be a real number"),
          ("fit_intercept_string", {"fit_intercept": "yes"}, TypeError, "fit_intercept must be True or False"),
          ("utility_unknown", {"utility": "r2"}, ValueError, "utility must be one of"),
          ("utility_list", {"utility": ["accuracy"]}, ValueError, "utility must be one of"),
          ("approximation_unknown", {"approximation": "exact"}, ValueError, "approximation must be one of"),
          ("utility_change_unknown", {"utility_change": "quadratic"}, ValueError, "utility_change must be one of"),
      ]],
    utility_row("normalize_string", {"normalize": "yes"}, TypeError, "normalize must be True or False",
                "largest_s_influence"),
    utility_row("empty_utility_nan", {"empty_utility": np.nan}, ValueError, "empty_utility must be finite",
                "largest_s_influence"),
    utility_row("empty_utility_string", {"empty_utility": "0"}, TypeError, "empty_utility must be a real number",
                "largest_s_influence"),
    *[utility_row(case_id, kwargs, error, match, "all_s_influence") for case_id, kwargs, error, match in [
        ("budget_negative", {"budget": -1}, ValueError, "budget must be >= 0"),
        ("budget_below_pilot", {"budget": 8}, ValueError, "budget=8 is too small: the pilot round alone needs 9"),
        ("budget_fraction", {"budget": 10.5}, TypeError, "budget must be an integer"),
        ("budget_nan", {"budget": np.nan}, TypeError, "budget must be an integer"),
        ("budget_string", {"budget": "40"}, TypeError, "budget must be an integer"),
        ("seed_negative", {"seed": -1}, ValueError, "seed must be >= 0"),
        ("seed_fraction", {"seed": 1.5}, TypeError, "seed must be an integer"),
        ("seed_string", {"seed": "0"}, TypeError, "seed must be an integer"),
        ("n_pilot_one", {"n_pilot": 1}, ValueError, "n_pilot must be >= 2"),
        ("n_pilot_fraction", {"n_pilot": 2.5}, TypeError, "n_pilot must be an integer"),
    ]],
]


@pytest.mark.parametrize("build,kwargs,error,match", PARAMETER_ROWS)
def test_bad_parameter_is_rejected(build, kwargs, error, match):
    assert_raises(lambda: BUILDERS[build](**kwargs), error, match)


@pytest.mark.parametrize("scorer,error,match", [
    row("string", lambda model, X, y: "0.5", TypeError, "metric: the scorer must return one real number"),
    row("array", lambda model, X, y: np.ones(3), TypeError, "metric: the scorer must return one real number"),
    row("none", lambda model, X, y: None, TypeError, "metric: the scorer must return one real number"),
    row("nan", lambda model, X, y: np.nan, ValueError, "ModelUtility._evaluate returned non-finite"),
])
def test_model_utility_checks_the_scorer_output(scorer, error, match):
    game = ModelUtility(LogisticRegression(), X, Y, XT, YT, metric=scorer)
    assert_raises(lambda: game.evaluate(np.ones((1, 6), bool)), error, match)


def test_model_utility_refuses_a_scorer_of_probabilities_for_a_class_only_y_test_holds():
    from sklearn.metrics import get_scorer

    y_test = np.r_[YT[:-1], 2]  # class 2: in y_test, not in y_train
    assert_raises(lambda: ModelUtility(LogisticRegression(), X, Y, XT, y_test, metric=get_scorer("neg_log_loss")),
                  ValueError, r"^metric=make_scorer\(log_loss.*y_test holds class\(es\) 2 \(1 row\(s\)\)")
    ModelUtility(LogisticRegression(), X, Y, XT, y_test, metric=get_scorer("accuracy"))  # predict: no columns


def test_model_utility_fit_error_propagates_with_a_note():
    class Failing:
        def fit(self, X, y):
            raise Boom("fit failed")

        def predict(self, X):
            return np.zeros(len(X))

    game = ModelUtility(Failing(), X, Y, XT, YT)
    with pytest.raises(Boom, match="fit failed") as info:
        game.evaluate(np.ones((1, 6), bool))
    assert any("ModelUtility" in note and "6 points" in note for note in getattr(info.value, "__notes__", []))
    # degenerate coalitions never reach fit: no error
    assert game.evaluate(np.eye(6, dtype=bool)).shape == (6,)


def test_model_utility_scorer_error_propagates():
    game = ModelUtility(LogisticRegression(), X, Y, XT, YT, metric=lambda model, X, y: explode())
    with pytest.raises(Boom):
        game.evaluate(np.ones((1, 6), bool))


@pytest.mark.parametrize("call,error,match", [
    row("fit_subsets_wrong_columns", lambda g: g.fit_subsets(np.ones((1, 5), bool)), ValueError, "masks must have"),
    row("predict_proba_other_columns", lambda g: g.predict_proba(np.ones((1, 6), bool), XT[:, :1]), ValueError,
        "X has 1 features; the game was built with 2"),
    row("predict_proba_nan_X", lambda g: g.predict_proba(np.ones((1, 6), bool), with_nan(XT)), ValueError,
        "X contains NaN"),
    row("prefixes_not_permutations", lambda g: g.evaluate_prefixes(np.zeros((1, 6), int)), ValueError,
        "each row of permutations must be a permutation"),
    row("prefixes_wrong_shape", lambda g: g.evaluate_prefixes(np.arange(5)[None]), ValueError,
        "permutations must have shape"),
    row("prefixes_float", lambda g: g.evaluate_prefixes(np.arange(6.0)[None]), TypeError,
        "permutations must be integers"),
])
def test_logistic_learner_methods_reject_bad_input(call, error, match):
    assert_raises(lambda: call(LogisticRegressionUtility(X, Y, XT, YT)), error, match)


@pytest.mark.parametrize("call,error,match", [
    row("predict_other_columns", lambda g: g.predict(np.ones((1, 6), bool), XT[:, :1]), ValueError,
        "X has 1 features"),
    row("predict_bad_masks", lambda g: g.predict(np.full((1, 6), 0.5)), ValueError, "masks must contain only"),
    row("prefixes_repeated_player", lambda g: g.evaluate_prefixes([[0, 0, 1, 2, 3, 4]]), ValueError,
        "each row of permutations must be a permutation"),
])
def test_ridge_learner_methods_reject_bad_input(call, error, match):
    assert_raises(lambda: call(RidgeUtility(X, YR, XT, YTR)), error, match)


# --------------------------------------------------------------------------------------------
# 6. The general influence function and the Neyman allocation
# --------------------------------------------------------------------------------------------

G = np.ones((3, 2))
GRAD = np.ones(2)


@pytest.mark.parametrize("args,kwargs,error,match", [
    row("gradients_empty", (np.zeros((0, 2)), np.eye(2), GRAD), {}, ValueError, "per_sample_gradients must have shape"),
    row("gradients_1d", (np.ones(3), np.eye(2), GRAD), {}, ValueError, "per_sample_gradients must have shape"),
    row("gradients_nan", (with_nan(G), np.eye(2), GRAD), {}, ValueError, "per_sample_gradients contains NaN"),
    row("gradients_strings", (G.astype(str), np.eye(2), GRAD), {}, TypeError,
        "per_sample_gradients must be an array of real numbers"),
    row("gradients_complex", (G + 1j, np.eye(2), GRAD), {}, TypeError, "per_sample_gradients must be an array of real"),
    row("test_gradient_wrong_length", (G, np.eye(2), np.ones(3)), {}, ValueError, r"test_utility_gradient must have"),
    row("test_gradient_inf", (G, np.eye(2), [np.inf, 0.0]), {}, ValueError, "test_utility_gradient contains NaN"),
    row("test_gradient_strings", (G, np.eye(2), ["a", "b"]), {}, TypeError, "test_utility_gradient must be an array"),
    row("hessian_wrong_shape", (G, np.eye(3), GRAD), {}, ValueError, r"hessian must have shape \(2, 2\)"),
    row("hessian_nan", (G, with_nan(np.eye(2)), GRAD), {}, ValueError, "hessian contains NaN"),
    row("hessian_strings", (G, np.eye(2).astype(str), GRAD), {}, TypeError, "hessian must be an array of real"),
    row("hessian_solve_nan", (G, lambda b: b * np.nan, GRAD), {}, ValueError, r"hessian\(b\) must return a finite"),
    row("hessian_solve_wrong_length", (G, lambda b: np.ones(3), GRAD), {}, ValueError, r"hessian\(b\) must return"),
    row("hessian_solve_dict", (G, lambda b: {}, GRAD), {}, TypeError, r"hessian\(b\) must be an array of real"),
    row("normalize_string", (G, np.eye(2), GRAD), {"normalize": "yes"}, TypeError, "normalize must be True or False"),
    row("normalize_without_utilities", (G, np.eye(2), GRAD), {}, ValueError, "normalize=True needs full_utility"),
    row("full_utility_nan", (G, np.eye(2), GRAD), {"full_utility": np.nan, "empty_utility": 0.0}, ValueError,
        "full_utility must be finite"),
])
def test_largest_s_influence_general_rejects(args, kwargs, error, match):
    assert_raises(lambda: largest_s_influence_general(*args, **kwargs), error, match)


def test_largest_s_influence_general_hessian_error_propagates():
    with pytest.raises(Boom):
        largest_s_influence_general(G, explode, GRAD, normalize=False)


@pytest.mark.parametrize("args,kwargs,error,match", [
    row("std_empty", ([], 10), {}, ValueError, "std must be a non-empty array"),
    row("std_nan", ([np.nan, 1.0], 10), {}, ValueError, "std must be a non-empty array of finite"),
    row("std_negative", ([-1.0, 1.0], 10), {}, ValueError, "std must be a non-empty array of finite, non-negative"),
    row("std_strings", (["a", "b"], 10), {}, TypeError, "std must be an array of real numbers"),
    row("budget_negative", ([1.0, 1.0], -1), {}, ValueError, "budget must be >= 0"),
    row("budget_fraction", ([1.0, 1.0], 1.5), {}, TypeError, "budget must be an integer"),
    row("budget_below_lower", ([1.0, 1.0], 3), {"lower": [2, 2]}, ValueError,
        "budget=3 is smaller than the sum of the lower bounds"),
    row("coverage_zero", ([1.0, 1.0], 10), {"coverage": [0.0, 1.0]}, ValueError,
        "coverage must hold 2 finite, positive"),
    row("coverage_nan", ([1.0, 1.0], 10), {"coverage": [np.nan, 1.0]}, ValueError, "coverage must hold 2 finite"),
    row("coverage_wrong_length", ([1.0, 1.0], 10), {"coverage": [1.0]}, ValueError, "coverage must hold 2"),
    row("lower_fraction", ([1.0, 1.0], 10), {"lower": [0.5, 0]}, ValueError, "lower must hold whole numbers"),
    row("upper_nan", ([1.0, 1.0], 10), {"upper": [np.nan, 5]}, ValueError, "upper must hold whole numbers"),
    row("upper_below_lower", ([1.0, 1.0], 10), {"lower": [3, 0], "upper": [2, 9]}, ValueError,
        "lower and upper must be K integers with 0 <= lower <= upper"),
])
def test_neyman_allocation_rejects(args, kwargs, error, match):
    assert_raises(lambda: neyman_allocation(*args, **kwargs), error, match)


def test_neyman_allocation_conventions():
    np.testing.assert_array_equal(neyman_allocation([0.0, 0.0], 10), [5, 5])  # no variance: spread evenly
    np.testing.assert_array_equal(neyman_allocation([1.0, 1.0], 10, upper=[1, 2]), [1, 2])  # capped at upper
    np.testing.assert_array_equal(neyman_allocation([1.0, 3.0], 0), [0, 0])


# --------------------------------------------------------------------------------------------
# 7. Bounds
# --------------------------------------------------------------------------------------------

BOUND_FUNCTIONS = {
    "permutation_sample_size": (permutation_sample_size, {"epsilon": 0.1, "delta": 0.05, "n_players": 10}),
    "group_testing_sample_size[paper]": (group_testing_sample_size,
                                         {"epsilon": 0.1, "delta": 0.05, "n_players": 10}),
    "group_testing_sample_size[improved]": (group_testing_sample_size,
                                            {"epsilon": 0.1, "delta": 0.05, "n_players": 10, "variant": "improved"}),
    "compressive_sample_size": (compressive_sample_size,
                                {"epsilon": 0.1, "delta": 0.05, "n_players": 10, "sparsity": 2}),
}
BOUND_CASES = [
    ("epsilon_zero", {"epsilon": 0.0}, ValueError, "epsilon must be > 0"),
    ("epsilon_negative", {"epsilon": -0.1}, ValueError, "epsilon must be > 0"),
    ("epsilon_nan", {"epsilon": np.nan}, ValueError, "epsilon must be finite"),
    ("epsilon_inf", {"epsilon": np.inf}, ValueError, "epsilon must be finite"),
    ("epsilon_string", {"epsilon": "0.1"}, TypeError, "epsilon must be a real number"),
    ("epsilon_bool", {"epsilon": True}, TypeError, "epsilon must be a real number"),
    ("epsilon_underflows", {"epsilon": 1e-200}, ValueError, "epsilon=1e-200 is too small"),
    ("delta_zero", {"delta": 0.0}, ValueError, "delta must be > 0"),
    ("delta_above_one", {"delta": 1.5}, ValueError, "delta must be <= 1"),
    ("delta_nan", {"delta": np.nan}, ValueError, "delta must be finite"),
    ("delta_string", {"delta": "0.05"}, TypeError, "delta must be a real number"),
    ("n_players_zero", {"n_players": 0}, ValueError, "n_players must be >= "),
    ("n_players_fraction", {"n_players": 2.5}, TypeError, "n_players must be an integer"),
    ("n_players_none", {"n_players": None}, TypeError, "n_players must be an integer"),
    ("n_players_string", {"n_players": "10"}, TypeError, "n_players must be an integer"),
    ("utility_range_zero", {"utility_range": 0.0}, ValueError, "utility_range must be > 0"),
    ("utility_range_nan", {"utility_range": np.nan}, ValueError, "utility_range must be finite"),
    ("utility_range_overflows", {"utility_range": 1e200}, ValueError, "is too small for utility_range=1e"),
]
SPECIFIC_BOUND_CASES = {
    "group_testing_sample_size[paper]": [
        ("variant_unknown", {"variant": "foo"}, ValueError, "variant must be one of"),
        ("variant_list", {"variant": ["paper"]}, ValueError, "variant must be one of"),
        ("n_players_one", {"n_players": 1}, ValueError, "n_players must be >= 2"),
    ],
    "compressive_sample_size": [
        ("sparsity_zero", {"sparsity": 0}, ValueError, "sparsity must be >= 1"),
        ("sparsity_fraction", {"sparsity": 1.5}, TypeError, "sparsity must be an integer"),
        ("sparsity_above_n", {"sparsity": 11}, ValueError, "sparsity must be <= n_players"),
        ("constant_zero", {"constant": 0.0}, ValueError, "constant must be > 0"),
        ("constant_nan", {"constant": np.nan}, ValueError, "constant must be finite"),
    ],
}


def _bound_rows():
    for name, (fn, good) in BOUND_FUNCTIONS.items():
        for case_id, change, error, match in BOUND_CASES + SPECIFIC_BOUND_CASES.get(name, []):
            yield row(f"{name}-{case_id}", fn, {**good, **change}, error, match)
    others = [
        ("group_testing_q_tot-n_players_one", group_testing_q_tot, {"n_players": 1}, ValueError,
         "n_players must be >= 2"),
        ("group_testing_q_tot-n_players_fraction", group_testing_q_tot, {"n_players": 2.5}, TypeError,
         "n_players must be an integer"),
        ("stability_bound-c_stab_negative", stability_bound, {"c_stab": -1.0, "n_players": 10}, ValueError,
         "c_stab must be >= 0"),
        ("stability_bound-c_stab_nan", stability_bound, {"c_stab": np.nan, "n_players": 10}, ValueError,
         "c_stab must be finite"),
        ("stability_bound-c_stab_string", stability_bound, {"c_stab": "1", "n_players": 10}, TypeError,
         "c_stab must be a real number"),
        ("stability_bound-n_players_one", stability_bound, {"c_stab": 1.0, "n_players": 1}, ValueError,
         "n_players must be >= 2"),
        ("uniform_division_guarantee-epsilon_zero", uniform_division_guarantee,
         {"c_stab": 1.0, "n_players": 10, "epsilon": 0.0}, ValueError, "epsilon must be > 0"),
        ("uniform_division_guarantee-n_players_one", uniform_division_guarantee,
         {"c_stab": 1.0, "n_players": 1, "epsilon": 0.1}, ValueError, "n_players must be >= 2"),
        ("uniform_division_guarantee-c_stab_negative", uniform_division_guarantee,
         {"c_stab": -1.0, "n_players": 10, "epsilon": 0.1}, ValueError, "c_stab must be >= 0"),
    ]
    for case_id, fn, kwargs, error, match in others:
        yield row(case_id, fn, kwargs, error, match)


@pytest.mark.parametrize("fn,kwargs,error,match", list(_bound_rows()))
def test_bound_rejects(fn, kwargs, error, match):
    assert_raises(lambda: fn(**kwargs), error, match)


@pytest.mark.parametrize("variant", ["paper", "improved"])
def test_group_testing_sample_size_at_tiny_epsilon_is_accurate(variant):
    """T ~ 1/epsilon^2 as epsilon -> 0: no cancellation garbage in h(u) (it was 1e-4 off here)."""
    coarse = group_testing_sample_size(1e-10, 0.05, 10, variant=variant)
    fine = group_testing_sample_size(1e-11, 0.05, 10, variant=variant)
    assert fine / coarse == pytest.approx(100.0, rel=1e-8)


# --------------------------------------------------------------------------------------------
# 8. Dataset helpers
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,kwargs,error,match", [
    row("iris-n_train_zero", load_iris_split, {"n_train": 0}, ValueError, "n_train must be >= 1"),
    row("iris-n_train_negative", load_iris_split, {"n_train": -5}, ValueError, "n_train must be >= 1"),
    row("iris-n_train_fraction", load_iris_split, {"n_train": 2.5}, TypeError, "n_train must be an integer"),
    row("iris-n_train_string", load_iris_split, {"n_train": "10"}, TypeError, "n_train must be an integer"),
    row("iris-n_train_all_no_test_left", load_iris_split, {"n_train": 150}, ValueError,
        "n_train=150 leaves no test samples"),
    row("iris-n_train_above_all", load_iris_split, {"n_train": 200}, ValueError, "n_train=200 leaves no test samples"),
    row("iris-sizes_above_all", load_iris_split, {"n_train": 100, "n_test": 51}, ValueError,
        "n_train \\+ n_test = 151 exceeds the 150 available"),
    row("iris-n_test_zero", load_iris_split, {"n_test": 0}, ValueError, "n_test must be >= 1"),
    row("iris-n_test_fraction", load_iris_split, {"n_test": 0.5}, TypeError, "n_test must be an integer"),
    row("iris-seed_negative", load_iris_split, {"seed": -1}, ValueError, "seed must be >= 0"),
    row("iris-seed_fraction", load_iris_split, {"seed": 1.5}, TypeError, "seed must be an integer"),
    row("iris-seed_none", load_iris_split, {"seed": None}, TypeError, "seed must be an integer"),
    row("iris_binary-sizes_above_all", load_iris_binary, {"n_train": 80, "n_test": 21}, ValueError,
        "exceeds the 100 available"),
    row("diabetes-n_train_all_no_test_left", load_diabetes_split, {"n_train": 442}, ValueError,
        "n_train=442 leaves no test samples"),
    row("mnist-n_train_zero", load_mnist_subset, {"n_train": 0}, ValueError, "n_train must be >= 1"),
    row("mnist-sizes_above_all", load_mnist_subset, {"n_train": 4000, "n_test": 1001}, ValueError,
        "exceeds the 5000 available"),
    row("mnist-seed_string", load_mnist_subset, {"seed": "0"}, TypeError, "seed must be an integer"),
    row("mnist-scale_string", load_mnist_subset, {"scale": "no"}, TypeError, "scale must be True or False"),
    row("pca-n_components_zero", pca_features, {"n_components": 0}, ValueError, "n_components must be >= 1"),
    row("pca-n_components_above_features", pca_features, {"n_components": 3}, ValueError,
        r"n_components=3 exceeds min\(n_samples, n_features\) = 2"),
    row("pca-n_components_string", pca_features, {"n_components": "1"}, TypeError, "n_components must be an integer"),
    row("pca-seed_negative", pca_features, {"seed": -1}, ValueError, "seed must be >= 0"),
    row("pca-seed_string", pca_features, {"seed": "a"}, TypeError, "seed must be an integer"),
])
def test_dataset_helper_rejects(fn, kwargs, error, match):
    if fn is pca_features:
        kwargs = {"X_train": X, "X_test": XT, "n_components": 1, **kwargs}
    assert_raises(lambda: fn(**kwargs), error, match)


def test_dataset_split_sizes_at_the_limit():
    X_train, y_train, X_test, y_test = load_iris_split(149)
    assert X_train.shape == (149, 4) and X_test.shape == (1, 4)
    assert len(y_train) == 149 and len(y_test) == 1


@pytest.mark.parametrize("kwargs,error,match", [
    row("values-2d", {"values": [[1.0, 2.0]]}, ValueError, "values must be 1-D"),
    row("stderr-length", {"values": [1.0, 2.0], "stderr": [1.0, 2.0, 3.0]}, ValueError,
        r"stderr must have the shape of values \(2,\)"),
])
def test_valuation_result_rejects_mismatched_arrays(kwargs, error, match):
    from shapley_research import ValuationResult

    assert_raises(lambda: ValuationResult(**{"n_evaluations": 0, "method": "mine", **kwargs}), error, match)


def test_unanimity_coefficients_name_the_non_finite_one():
    from shapley_research.games import UnanimitySumGame

    assert_raises(lambda: UnanimitySumGame(3, [[0], [1]], [1.0, np.nan]), ValueError,
                  r"coefficients must be finite, got \[nan\] at positions \[1\]")
    assert_raises(lambda: UnanimitySumGame(3, [[0]], [1.0, 2.0]), ValueError,
                  r"coefficients must be 1 numbers \(one per coalition\), got shape \(2,\)")
