"""Leverage SHAP: the leverage scores, the reweighted regression's exact solution, consistency.

Efficiency in every run, additive games and calibrated standard errors: test_kernel_regression.py, for both.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from games import AdditiveGame, AirportGame, CountingGame, RecordingGame, SizeAdditiveGame, random_unanimity_game
from test_kernel_shapley import all_proper_coalitions, kernel_probabilities

import shapley_research as sr
from shapley_research.estimators import sampling_forced, shapley_kernel_sizes
from shapley_research.estimators._kernel_regression import MAX_PLAYERS, constrained_regression
from shapley_research.estimators._leverage import leverage_sizes

GAME = random_unanimity_game(7, 6, 4, seed=3)
SIZED = SizeAdditiveGame(np.linspace(-1.0, 2.0, 10), np.sqrt(np.arange(11.0)) * 3.0)


def anchors(game) -> tuple[float, float]:
    u0, u_full = game.evaluate(np.array([np.zeros(game.n_players, bool), np.ones(game.n_players, bool)]))
    return float(u0), float(u_full)


def error(values, truth) -> float:
    return float(np.linalg.norm(values - truth) / np.linalg.norm(truth))


@pytest.mark.parametrize("n", [4, 7, 9])
def test_the_leverage_scores_of_the_projected_kernel_design_are_one_over_n_choose_size(n):
    """Musco & Witter's Lemma: rows sqrt(w(S)) z_S P, with P the projection off 1, have leverage ~ 1/C(N, |S|)."""
    masks = all_proper_coalitions(n).astype(float)
    projected = masks - masks.sum(axis=1, keepdims=True) / n  # z P, P = I - 11^T / N
    design = np.sqrt(kernel_probabilities(masks.astype(bool)))[:, None] * projected
    basis = np.linalg.svd(design, full_matrices=False)[0][:, :n - 1]  # rank N - 1: 1 spans the null space
    leverage = (basis * basis).sum(axis=1)
    expected = 1.0 / np.array([math.comb(n, int(s)) for s in masks.sum(axis=1)])
    np.testing.assert_allclose(leverage / leverage.sum(), expected / expected.sum(), rtol=1e-9)
    assert leverage.sum() == pytest.approx(n - 1)  # the rank of the projected design


@pytest.mark.parametrize("n", [2, 3, 10, 101])
def test_sizes_are_uniform_and_the_ratios_turn_them_into_the_kernel(n):
    probabilities, ratios = leverage_sizes(n)
    kernel, _ = shapley_kernel_sizes(n)
    np.testing.assert_allclose(probabilities, 1.0 / (n - 1))
    np.testing.assert_allclose(probabilities * ratios, kernel, rtol=1e-14)
    assert probabilities @ ratios == pytest.approx(1.0)
    sizes = np.arange(1, n)
    np.testing.assert_allclose(ratios * sizes * (n - sizes), ratios[0] * (n - 1))  # r_s ~ 1 / (s (N - s))


@pytest.mark.parametrize("game", [GAME, AirportGame([0.3, 1.0, 0.1, 0.7, 0.7, 0.45])], ids=["unanimity", "airport"])
def test_the_reweighted_regression_on_every_coalition_is_the_shapley_value(game):
    """Every coalition at its sampling probability q(S) times its ratio: the kernel's regression, exactly."""
    masks = all_proper_coalitions(game.n_players)
    n, sizes = game.n_players, masks.sum(axis=1)
    probabilities, ratios = leverage_sizes(n)
    q = probabilities[sizes - 1] / np.array([math.comb(n, int(s)) for s in sizes])
    weight = q * ratios[sizes - 1]
    u0, u_full = anchors(game)
    gram, moments = (masks.T * weight) @ masks, (masks.T * weight) @ (game.evaluate(masks) - u0)
    values, singular = constrained_regression(gram, moments, u_full - u0)
    assert not singular
    np.testing.assert_allclose(values, sr.exact_shapley(game).values, atol=1e-12)


@pytest.mark.parametrize("empty_utility", [None, 0.0])
def test_a_budget_covering_every_coalition_gives_the_exact_values(empty_utility):
    game = CountingGame(AirportGame([0.3, 1.0, 0.1, 0.7, 0.7, 0.45]))
    budget = 2**6 - (empty_utility is not None)
    result = sr.leverage_shapley(game, budget, seed=0, empty_utility=empty_utility)
    np.testing.assert_allclose(result.values, sr.exact_shapley(game.game).values, atol=1e-12)
    assert game.rows <= budget


def test_the_sampled_sizes_are_uniform_not_the_kernel():
    """The histogram of drawn sizes: every size about 1/(N-1) (the kernel puts 2 p_1 = 0.36 on sizes 1 and 9)."""
    game = RecordingGame(AdditiveGame(np.arange(10.0)))
    with sampling_forced():
        sr.leverage_shapley(game, 2 + 2 * 9_000, seed=2, paired=False, batch_size=18_000)
        leverage = np.concatenate(game.masks).sum(axis=1)
        game.masks.clear()
        sr.kernel_shapley(game, 2 + 2 * 9_000, seed=2, paired=False, batch_size=18_000)
        kernel = np.concatenate(game.masks).sum(axis=1)
    shares = [np.bincount(sizes[(sizes > 0) & (sizes < 10)], minlength=10)[1:] / 18_000 for sizes in (leverage, kernel)]
    np.testing.assert_allclose(shares[0], 1 / 9, atol=0.01)  # binomial sd 0.0023
    weights, _ = shapley_kernel_sizes(10)
    np.testing.assert_allclose(shares[1], weights, atol=0.01)
    assert shares[0][0] + shares[0][8] < 0.25 < 0.33 < shares[1][0] + shares[1][8]


def test_error_falls_with_the_budget_towards_the_exact_values():
    truth = SIZED.shapley_values
    errors = []
    with sampling_forced():
        for pairs in (100, 1_000, 10_000):
            errors.append(np.mean([error(sr.leverage_shapley(SIZED, 2 + 2 * pairs, seed).values, truth)
                                   for seed in range(5)]))
    assert errors[0] > 2 * errors[1] > 4 * errors[2]
    assert errors[2] < 0.01


def test_a_null_player_and_symmetric_players_are_right_in_expectation():
    game = random_unanimity_game(6, 1, 5, seed=0, null_players=(5,))  # one term over players 0-4: 5 is null
    exact = sr.exact_shapley(game).values
    assert exact[5] == 0 and np.ptp(exact[:5]) == 0
    with sampling_forced():
        runs = np.array([sr.leverage_shapley(game, 2 + 2 * 60, seed).values for seed in range(40)])
    np.testing.assert_allclose(runs.mean(axis=0), exact, atol=0.05)


def test_the_same_seed_gives_the_same_bits_and_groups_follow_the_batches():
    """(``n_jobs`` bit-identity: tests/estimators/test_parallel.py's list.)"""
    with sampling_forced():
        first, again = (sr.leverage_shapley(GAME, 2 + 2 * 500, seed=9, batch_size=150) for _ in range(2))
        other = sr.leverage_shapley(GAME, 2 + 2 * 500, seed=10, batch_size=150)
    assert np.array_equal(first.values, again.values) and np.array_equal(first.stderr, again.stderr)
    assert not np.array_equal(first.values, other.values)
    assert first.info["n_groups"] == 3 * 2 + 1  # three full batches of 2 groups of 75, then one of 50 units
    assert first.info["options"] == {"paired": True, "sampling": "with_replacement"}


def test_differs_from_kernel_shapley_on_the_same_seed():
    """Same machinery, other sizes: the same seed draws other coalitions (an additive game hides it: exact)."""
    with sampling_forced():
        leverage, kernel = (f(GAME, 2 + 2 * 200, seed=3) for f in (sr.leverage_shapley, sr.kernel_shapley))
    assert not np.array_equal(leverage.values, kernel.values)
    assert leverage.method == "leverage_shapley" and kernel.method == "kernel_shapley"


def test_merged_runs_are_the_regression_on_all_their_coalitions():
    with sampling_forced():
        first, second = (sr.leverage_shapley(GAME, 2 + 2 * 140, seed=seed) for seed in (1, 2))
        both = sr.merge_results(first, second)
    assert both.method == "leverage_shapley" and both.n_samples == 280 and both.info["n_groups"] == 4
    assert np.allclose(both.state.mean, (first.state.mean + second.state.mean) / 2, atol=1e-14)
    u0, u_full = anchors(GAME)
    assert both.values.sum() == pytest.approx(u_full - u0, abs=1e-12)
    with pytest.raises(ValueError):
        sr.merge_results(first, sr.kernel_shapley(GAME, 2 + 2 * 140, seed=3))


def test_too_many_players_are_refused_before_any_evaluation():
    game = CountingGame(AdditiveGame(np.ones(MAX_PLAYERS + 1)))
    with pytest.raises(ValueError, match="leverage_shapley regresses on an N x N matrix"):
        sr.leverage_shapley(game, 10**6, seed=0)
    assert game.rows == 0


def test_large_work_is_announced_before_any_evaluation():
    import warnings

    game = CountingGame(AdditiveGame(np.ones(MAX_PLAYERS)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(UserWarning, match=r"leverage_shapley.*10,000 players and 100,000 samples"):
            sr.leverage_shapley(game, 200_002, seed=0)
    assert game.rows == 0


@pytest.mark.parametrize("kwargs, error_type, message", [
    ({"paired": "yes"}, TypeError, "paired must be True or False"),
    ({"budget": 3}, ValueError, r"budget=3 is smaller than one coalition pair: it needs at least 4"),
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"budget": None, "batch_size": 13, "target_stderr": 0.1}, ValueError,
     r"batch_size=13 is too small for a precision target: leverage_shapley's"),
])
def test_bad_input_is_refused(kwargs, error_type, message):
    with pytest.raises(error_type, match=message):
        sr.leverage_shapley(GAME, **{"budget": 100, "seed": 0, **kwargs})


def test_a_one_player_game_without_a_budget_is_refused_clearly():
    with pytest.raises(ValueError, match="leverage_shapley samples coalitions of 1 to N-1 players"):
        sr.leverage_shapley(random_unanimity_game(1, 1, 1, seed=0), None, seed=0, target_stderr=0.1)
