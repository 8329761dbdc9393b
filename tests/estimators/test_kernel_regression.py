"""Classic KernelSHAP: the regression's exact solution, consistency, efficiency, calibrated standard errors.

The properties both regressions on the N x N matrix share word for word (efficiency in every run, additive
games exactly, calibrated standard errors, the singular-budget warning) run for ``leverage_shapley`` too.
"""

from __future__ import annotations

import numpy as np
import pytest
from games import AdditiveGame, AirportGame, CountingGame, SizeAdditiveGame, random_unanimity_game
from test_kernel_shapley import all_proper_coalitions, kernel_probabilities

import shapley_research as sr
from shapley_research.estimators import sampling_forced
from shapley_research.estimators._kernel_regression import MAX_PLAYERS, constrained_regression

GAME = random_unanimity_game(7, 6, 4, seed=3)
SIZED = SizeAdditiveGame(np.linspace(-1.0, 2.0, 10), np.sqrt(np.arange(11.0)) * 3.0)
REGRESSIONS = ["kernel_shapley", "leverage_shapley"]  # the two estimators on RegressionSpec


def anchors(game) -> tuple[float, float]:
    u0, u_full = game.evaluate(np.array([np.zeros(game.n_players, bool), np.ones(game.n_players, bool)]))
    return float(u0), float(u_full)


@pytest.mark.parametrize("game", [GAME, AirportGame([0.3, 1.0, 0.1, 0.7, 0.7, 0.45])], ids=["unanimity", "airport"])
def test_the_regression_on_every_coalition_with_its_kernel_weight_is_the_shapley_value(game):
    masks = all_proper_coalitions(game.n_players)
    p = kernel_probabilities(masks)
    u0, u_full = anchors(game)
    gram, moments = (masks.T * p) @ masks, (masks.T * p) @ (game.evaluate(masks) - u0)
    values, singular = constrained_regression(gram, moments, u_full - u0)
    assert not singular
    np.testing.assert_allclose(values, sr.exact_shapley(game).values, atol=1e-12)


def test_error_falls_with_the_budget():
    truth = SIZED.shapley_values
    errors = []
    with sampling_forced():
        for pairs in (100, 1_000, 10_000):
            runs = [sr.kernel_shapley(SIZED, 2 + 2 * pairs, seed) for seed in range(5)]
            errors.append(np.mean([sr_error(r.values, truth) for r in runs]))
    assert errors[0] > 2 * errors[1] > 4 * errors[2]
    assert errors[2] < 0.01


def sr_error(values, truth) -> float:
    return float(np.linalg.norm(values - truth) / np.linalg.norm(truth))


@pytest.mark.parametrize("method", REGRESSIONS)
@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("pairs", [3, 40, 400])  # 3: a singular matrix
def test_every_run_is_efficient(paired, pairs, method):
    u0, u_full = anchors(GAME)
    per = 2 if paired else 1
    for seed in range(5):
        with sampling_forced():
            result = getattr(sr, method)(GAME, 2 + per * pairs, seed, paired=paired)
        assert result.values.sum() == pytest.approx(u_full - u0, abs=1e-12)
        assert result.n_evaluations == 2 + per * pairs and result.info["unspent_evaluations"] == 0


@pytest.mark.parametrize("method", REGRESSIONS)
def test_an_additive_game_is_recovered_exactly_and_symmetric_players_tie(method):
    game = AdditiveGame([1.0, 2.0, 2.0, -0.5, 3.0, 2.0, 0.25, 1.0], offset=0.3)
    with sampling_forced():
        result = getattr(sr, method)(game, 2 + 2 * 60, seed=4)
    np.testing.assert_allclose(result.values, game.shapley_values, atol=1e-12)
    assert result.values[1] == pytest.approx(result.values[2], abs=1e-12) == pytest.approx(result.values[5])


def test_symmetric_players_get_the_same_value_in_expectation():
    game = random_unanimity_game(6, 1, 6, seed=0)  # one unanimity term over every player: all symmetric
    with sampling_forced():
        runs = np.array([sr.kernel_shapley(game, 2 + 2 * 60, seed).values for seed in range(40)])
    np.testing.assert_allclose(runs.mean(axis=0), sr.exact_shapley(game).values, atol=0.05)


@pytest.mark.parametrize("method", REGRESSIONS)
@pytest.mark.parametrize("paired", [True, False])
def test_standard_errors_are_calibrated_and_the_bias_is_small(paired, method):
    exact = sr.exact_shapley(GAME).values
    per = 2 if paired else 1
    with sampling_forced():  # 12 groups of 10 N units each
        runs = [getattr(sr, method)(GAME, 2 + per * 840, seed=seed, paired=paired) for seed in range(300)]
    assert {r.info["n_groups"] for r in runs} == {12}
    values = np.array([r.values for r in runs])
    assert np.all(np.abs(values.mean(axis=0) - exact) < 0.25 * values.std(axis=0))
    z = (values - exact) / np.array([r.stderr for r in runs])
    assert 0.85 < z.std() < 1.15


def test_beats_the_unbiased_variant_at_equal_budget():
    truth = SIZED.shapley_values
    with sampling_forced():
        classic = [sr_error(sr.kernel_shapley(SIZED, 2_002, s).values, truth) for s in range(10)]
        unbiased = [sr_error(sr.unbiased_kernel_shapley(SIZED, 2_002, s).values, truth) for s in range(10)]
    assert np.mean(classic) < np.mean(unbiased) / 2


def test_a_singular_matrix_is_flagged_and_gives_no_standard_errors():
    with sampling_forced():
        result = sr.kernel_shapley(GAME, 2 + 2 * 2, seed=0)
    assert result.info["rank_deficient"] and result.info["n_groups"] == 0
    assert np.isnan(result.stderr).all() and np.isfinite(result.values).all()


def test_the_same_seed_gives_the_same_bits_and_groups_follow_the_batches():
    with sampling_forced():
        first, again = (sr.kernel_shapley(GAME, 2 + 2 * 500, seed=9, batch_size=150) for _ in range(2))
        other = sr.kernel_shapley(GAME, 2 + 2 * 500, seed=10, batch_size=150)
    assert np.array_equal(first.values, again.values) and np.array_equal(first.stderr, again.stderr)
    assert not np.array_equal(first.values, other.values)
    assert first.info["n_groups"] == 3 * 2 + 1  # three full batches of 2 groups of 75, then one of 50 units


def test_merged_runs_are_the_regression_on_all_their_coalitions():
    with sampling_forced():
        first, second = (sr.kernel_shapley(GAME, 2 + 2 * 140, seed=seed) for seed in (1, 2))
        both = sr.merge_results(first, second)
    assert both.n_samples == 280 and both.info["n_groups"] == 4
    state = first.state
    mean = (first.state.mean + second.state.mean) / 2
    assert np.allclose(both.state.mean, mean, atol=1e-14) and state is not both.state
    u0, u_full = anchors(GAME)
    assert both.values.sum() == pytest.approx(u_full - u0, abs=1e-12)


def test_too_many_players_are_refused_before_any_evaluation():
    game = CountingGame(AdditiveGame(np.ones(MAX_PLAYERS + 1)))
    with pytest.raises(ValueError, match="unbiased_kernel_shapley"):
        sr.kernel_shapley(game, 10**6, seed=0)
    assert game.rows == 0


def test_large_work_is_announced_before_any_evaluation():
    """10,000 players: the N x N state alone is some 4 GiB, and 100,000 pairs about ten minutes of products."""
    import warnings

    game = CountingGame(AdditiveGame(np.ones(MAX_PLAYERS)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(UserWarning, match=r"10,000 players and 100,000 samples make about .* minutes and 4.2 GiB"):
            sr.kernel_shapley(game, 200_002, seed=0)
        with pytest.raises(UserWarning, match=r"10,000 players make 4.2 GiB"):  # a target, no cap: memory only
            sr.kernel_shapley(game, None, seed=0, target_stderr=0.1)
        sr.kernel_shapley(AdditiveGame(np.ones(50)), 2_002, seed=0)  # a usual size: silent
    assert game.rows == 0


@pytest.mark.parametrize("method", REGRESSIONS)
def test_fewer_coalitions_than_players_warn_before_any_evaluation(method):
    """Fewer coalitions than players leave the N x N matrix singular whatever is drawn: said before evaluating."""
    import warnings

    game = CountingGame(AdditiveGame(np.linspace(0.0, 1.0, 50)))
    estimator = getattr(sr, method)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(UserWarning, match=r"budget=98 draws 48 coalition pairs for 50 players, so the N x N "
                                              r"matrix has rank 49 at most: it is singular"):
            estimator(game, 98, seed=0)  # each pair's z + (1 - z) is the same all-ones vector
        with pytest.raises(UserWarning, match=r"draws 49 coalitions for 50 players"):
            estimator(game, 51, seed=0, paired=False)
        assert game.rows == 0
        # at the bound, silent (the draws may still repeat a coalition: info["rank_deficient"] then says so)
        estimator(game, 100, seed=0)  # 49 pairs: rank 50 at most
        estimator(game, 52, seed=0, paired=False)  # 50 coalitions


@pytest.mark.parametrize("kwargs, error, message", [
    ({"paired": "yes"}, TypeError, "paired must be True or False"),
    ({"budget": 3}, ValueError, r"budget=3 is smaller than one coalition pair: it needs at least 4"),
    ({"batch_size": 0}, ValueError, "batch_size"),
])
def test_bad_input_is_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        sr.kernel_shapley(GAME, **{"budget": 100, "seed": 0, **kwargs})


def test_a_one_player_game_without_a_budget_is_refused_clearly():
    with pytest.raises(ValueError, match="a 1-player game has none"):
        sr.kernel_shapley(random_unanimity_game(1, 1, 1, seed=0), None, seed=0, target_stderr=0.1)


def test_a_target_with_batches_too_small_for_a_group_is_refused():
    with pytest.raises(ValueError, match=r"batch_size=13 is too small for a precision target.*14 units"):
        sr.kernel_shapley(GAME, None, seed=0, batch_size=13, target_rank_correlation=0.9)


def test_a_stderr_target_stops_once_two_groups_agree():
    with sampling_forced():
        result = sr.kernel_shapley(GAME, None, seed=1, batch_size=70, target_stderr=0.05)
    assert result.info["stopped_by"] == "target_stderr" and result.info["n_groups"] >= 2
    assert result.stderr.max() <= 0.05
