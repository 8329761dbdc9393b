"""Unbiased KernelSHAP: the closed form of its regression, exact expectation, efficiency, unbiasedness."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from games import AirportGame, random_unanimity_game

import shapley_research as sr
from shapley_research.estimators import sampling_forced, shapley_kernel_sizes
from shapley_research.estimators._kernel_shapley import kernel_samples

GAME = random_unanimity_game(7, 6, 4, seed=3)


def all_proper_coalitions(n: int) -> np.ndarray:
    """Every coalition of 1 to N-1 players, one per row."""
    rows = []
    for size in range(1, n):
        for members in combinations(range(n), size):
            row = np.zeros(n, dtype=bool)
            row[list(members)] = True
            rows.append(row)
    return np.array(rows)


def kernel_probabilities(masks: np.ndarray) -> np.ndarray:
    """p(z) of the Shapley kernel: the size's weight shared evenly among the coalitions of that size."""
    n = masks.shape[1]
    weights, _ = shapley_kernel_sizes(n)
    sizes = masks.sum(axis=1)
    return weights[sizes - 1] / np.array([math.comb(n, int(s)) for s in sizes])


@pytest.mark.parametrize("n", [2, 3, 6, 9])
def test_d_is_the_diagonal_shift_of_the_exact_gram_matrix(n):
    masks = all_proper_coalitions(n)
    p = kernel_probabilities(masks)
    gram = (masks.T * p) @ masks  # E[z z^T]
    weights, d = shapley_kernel_sizes(n)
    assert weights.sum() == pytest.approx(1.0)
    off_diagonal = gram[~np.eye(n, dtype=bool)]
    np.testing.assert_allclose(np.diag(gram), 0.5)
    np.testing.assert_allclose(np.diag(gram) - (off_diagonal[0] if n > 1 else 0.0), d)
    np.testing.assert_allclose(off_diagonal, off_diagonal[0])


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("game", [GAME, AirportGame([0.3, 1.0, 0.1, 0.7, 0.7, 0.45])], ids=["unanimity", "airport"])
def test_expectation_over_the_kernel_is_the_exact_shapley_value(game, paired):
    n = game.n_players
    masks = all_proper_coalitions(n)
    u0, u_full = game.evaluate(np.array([np.zeros(n, bool), np.ones(n, bool)]))
    u = game.evaluate(masks)
    gains = (u - game.evaluate(~masks)) / 2.0 if paired else u - u0
    _, d = shapley_kernel_sizes(n)
    samples = kernel_samples(masks, masks.sum(axis=1), gains, d, u_full - u0)
    np.testing.assert_allclose(kernel_probabilities(masks) @ samples, sr.exact_shapley(game).values, atol=1e-12)
    np.testing.assert_allclose(samples.sum(axis=1), u_full - u0, atol=1e-12)  # efficient sample by sample


@pytest.mark.parametrize("paired", [True, False])
def test_values_are_efficient_and_deterministic(paired):
    result = sr.unbiased_kernel_shapley(GAME, 102, seed=7, paired=paired)
    u0, u_full = GAME.evaluate(np.array([np.zeros(7, bool), np.ones(7, bool)]))
    assert result.values.sum() == pytest.approx(u_full - u0, abs=1e-10)
    again = sr.unbiased_kernel_shapley(GAME, 102, seed=7, paired=paired)
    assert np.array_equal(result.values, again.values) and np.array_equal(result.stderr, again.stderr)
    per_pair = 2 if paired else 1
    assert result.n_evaluations == 2 + per_pair * result.n_samples == 102
    assert result.method == "unbiased_kernel_shapley" and result.info["paired"] is paired


def test_a_two_player_game_is_exact_from_one_pair():
    game = random_unanimity_game(2, 2, 2, seed=1)
    with sampling_forced():
        result = sr.unbiased_kernel_shapley(game, 4, seed=0)
    np.testing.assert_allclose(result.values, sr.exact_shapley(game).values, atol=1e-12)


@pytest.mark.parametrize("paired", [True, False])
def test_unbiased_and_its_standard_errors_are_calibrated(paired):
    exact = sr.exact_shapley(GAME).values
    with sampling_forced():
        runs = [sr.unbiased_kernel_shapley(GAME, 202, seed=seed, paired=paired) for seed in range(300)]
    values = np.array([r.values for r in runs])
    errors_of_mean = values.std(axis=0, ddof=1) / np.sqrt(len(runs))
    assert np.all(np.abs(values.mean(axis=0) - exact) < 4 * errors_of_mean)
    z = (values - exact) / np.array([r.stderr for r in runs])
    assert 0.85 < z.std() < 1.15  # the standard errors match the spread of the estimates


def test_seeds_merge_into_one_run_of_their_samples():
    first, second = (sr.unbiased_kernel_shapley(GAME, 102, seed=seed) for seed in (1, 2))
    merged = sr.merge_results(first, second)
    np.testing.assert_allclose(merged.values, (first.values + second.values) / 2, atol=1e-12)
    assert merged.n_samples == first.n_samples + second.n_samples


@pytest.mark.parametrize("paired, message", [
    ("yes", "paired must be True or False"),
])
def test_paired_must_be_a_bool(paired, message):
    with pytest.raises(TypeError, match=message):
        sr.unbiased_kernel_shapley(GAME, 100, seed=0, paired=paired)


def test_budget_below_the_anchors_and_one_pair_names_the_minimum():
    with pytest.raises(ValueError, match=r"budget=3 is smaller than one coalition pair: it needs at least 4"):
        sr.unbiased_kernel_shapley(GAME, 3, seed=0)


def test_a_one_player_game_without_a_budget_is_refused_clearly():
    with pytest.raises(ValueError, match="a 1-player game has none"):
        sr.unbiased_kernel_shapley(random_unanimity_game(1, 1, 1, seed=0), None, seed=0, target_stderr=0.1)


@pytest.mark.parametrize("n", [5, 300])
def test_batch_sums_give_the_moments_of_the_per_sample_vectors(n):
    from shapley_research.estimators._kernel_shapley import _KernelSums
    from shapley_research.estimators._sampling._loop import MeanState

    rng = np.random.default_rng(n)
    sizes = rng.integers(1, n, size=40)
    masks = np.array([rng.permutation(n) < s for s in sizes])
    gains = rng.normal(size=40)
    _, d = shapley_kernel_sizes(n)
    reference = MeanState(n)
    reference.add_batch(kernel_samples(masks, sizes, gains, d, 3.0))
    sums = _KernelSums(n, d)
    sums.add(masks[:15], sizes[:15], gains[:15])  # two chunks, as a batch is evaluated
    sums.add(masks[15:], sizes[15:], gains[15:])
    state = sums.state(3.0)
    assert state.count == 40
    np.testing.assert_allclose(state.mean, reference.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(state.m2, reference.m2, rtol=1e-10, atol=1e-10)
