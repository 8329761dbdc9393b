"""A sampling budget that covers every coalition buys the exact values (issue: small games).

Peers return exact values at such budgets (shapiq's SVARM at 7 players and budget 300); so does every
sampling estimator here: it enumerates the 2^N coalitions once instead of sampling, and says so.
"""

import numpy as np
import pytest
from games import AirportGame, random_unanimity_game

import shapley_research as sr

pytestmark = pytest.mark.enumeration

GAME = random_unanimity_game(7, 6, 4, seed=11)
ESTIMATORS = {
    "permutation": (lambda g, b, **kw: sr.permutation_shapley(g, b, **kw), "permutation"),
    "antithetic_adjusted": (lambda g, b, **kw: sr.permutation_shapley(g, b, antithetic=True, position_adjustment=True,
                                                                       **kw), "permutation"),
    "group_testing": (lambda g, b, **kw: sr.group_testing_shapley(g, b, **kw), "group_testing[improved]"),
    "group_testing_paper": (lambda g, b, **kw: sr.group_testing_shapley(g, b, variant="paper", **kw),
                            "group_testing[paper]"),
    "compressive": (lambda g, b, **kw: sr.compressive_shapley(g, b, **kw), "compressive"),
    "svarm": (lambda g, b, **kw: sr.stratified_svarm_shapley(g, b, **kw), "stratified_svarm"),
    "svarm_neyman": (lambda g, b, **kw: sr.stratified_svarm_shapley(g, b, allocation="neyman", **kw),
                     "stratified_svarm"),
    "kernel": (lambda g, b, **kw: sr.unbiased_kernel_shapley(g, b, **kw), "unbiased_kernel_shapley"),
    "owen": (lambda g, b, **kw: sr.owen_shapley(g, b, **kw), "owen_shapley"),
    "kernel_regression": (lambda g, b, **kw: sr.kernel_shapley(g, b, **kw), "kernel_shapley"),
    "leverage": (lambda g, b, **kw: sr.leverage_shapley(g, b, **kw), "leverage_shapley"),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_a_budget_covering_every_coalition_returns_the_exact_values(name):
    run, method = ESTIMATORS[name]
    exact = sr.exact_shapley(GAME)
    result = run(GAME, 300, seed=4)  # 2^7 = 128 coalitions <= 300 evaluations
    np.testing.assert_allclose(result.values, exact.values, rtol=0, atol=1e-12)
    assert result.method == method and result.info["stopped_by"] == "enumeration"
    assert result.n_evaluations == 2**7 <= 300 and result.n_samples == 0
    np.testing.assert_array_equal(result.stderr, np.zeros(7))
    assert result.state is None
    with pytest.raises(ValueError, match=r"results\[0\] .*(carries no sample statistics \(it enumerated|"
                                         r"which cannot be merged)"):
        sr.merge_results(result, run(GAME, 300, seed=5))  # no samples to merge


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_just_below_the_enumeration_budget_it_samples(name):
    run, _ = ESTIMATORS[name]
    budget = 2**7 - 1
    try:
        result = run(GAME, budget, seed=4)
    except ValueError as err:  # a budget below one sampling unit of this estimator: still a sampling call
        assert "budget" in str(err)
        return
    assert result.info["stopped_by"] != "enumeration" and result.n_evaluations <= budget


def test_a_given_empty_utility_saves_one_evaluation():
    result = sr.permutation_shapley(GAME, 127, seed=0, empty_utility=0.0)  # 2^7 - 1: U(empty) is given
    assert result.info["stopped_by"] == "enumeration" and result.n_evaluations == 127
    np.testing.assert_allclose(result.values, sr.exact_shapley(GAME, empty_utility=0.0).values, atol=1e-12)


def test_bad_arguments_are_refused_before_enumerating():
    with pytest.raises(ValueError, match="batch_size"):
        sr.permutation_shapley(GAME, 10_000, seed=0, batch_size=0)
    with pytest.raises(TypeError, match="seed"):
        sr.group_testing_shapley(GAME, 10_000, seed=1.5)
    with pytest.raises(ValueError, match="variant"):
        sr.group_testing_shapley(GAME, 10_000, seed=0, variant="nope")


def test_no_checkpoint_is_written_and_targets_are_met(tmp_path):
    result = sr.group_testing_shapley(GAME, 10_000, seed=0, checkpoint=tmp_path / "gt.ckpt", target_stderr=1e-3)
    assert result.info["stopped_by"] == "enumeration" and not (tmp_path / "gt.ckpt").exists()


def test_the_airport_game_at_shapiqs_budget():
    """shapiq's SVARM is exact on 7 players at budget 300; so is ours, and every other sampler."""
    game = AirportGame([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0])
    exact = sr.exact_shapley(game).values
    for run, _ in ESTIMATORS.values():
        np.testing.assert_allclose(run(game, 300, seed=0).values, exact, atol=1e-12)


def test_results_do_not_depend_on_n_jobs():
    for run, _ in ESTIMATORS.values():
        np.testing.assert_array_equal(run(GAME, 300, seed=1, n_jobs=2).values, run(GAME, 300, seed=1).values)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("n_players", [1, 2, 3])
@pytest.mark.parametrize("empty_utility", [None, 0.5])
def test_the_smallest_games_enumerate_at_exactly_their_coalitions(name, n_players, empty_utility):
    """A budget of 2^N (2^N - 1 with U(empty) given) enumerates even where it is short of one sampling unit
    (the unbiased kernel's paired unit and SVARM's exact strata cost more than 2^N at N <= 2)."""
    if n_players == 1 and name.startswith("group_testing"):
        pytest.skip("group testing needs two players")
    run, _ = ESTIMATORS[name]
    game = random_unanimity_game(n_players, 3, n_players, seed=n_players)
    budget = 2**n_players - (empty_utility is not None)
    result = run(game, budget, seed=0, empty_utility=empty_utility)
    exact = sr.exact_shapley(game, empty_utility=empty_utility).values
    assert result.info["stopped_by"] == "enumeration" and result.n_evaluations == budget
    np.testing.assert_allclose(result.values, exact, rtol=0, atol=1e-12)
    try:  # one evaluation fewer samples, or is refused as short of one sampling unit
        assert run(game, budget - 1, seed=0, empty_utility=empty_utility).info["stopped_by"] != "enumeration"
    except ValueError as err:
        assert "budget" in str(err)
