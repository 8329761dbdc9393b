"""Permutation sampling with rotated permutations (``rotations=m``): positions stratified."""

from __future__ import annotations

import numpy as np
import pytest

from games import CountingGame, SizeAdditiveGame, random_unanimity_game, relative_l2
from shapley_research import permutation_shapley

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off

N = 12


def size_game(weights_scale: float = 1.0) -> SizeAdditiveGame:
    """Additive part plus a steep symmetric size term: marginal contributions driven by position."""
    rng = np.random.default_rng(0)
    size_term = 5.0 * np.sqrt(np.arange(N + 1)) + np.arange(N + 1) ** 2 / N
    return SizeAdditiveGame(weights_scale * rng.normal(size=N), size_term)


@pytest.mark.parametrize("antithetic", [False, True])
def test_all_n_rotations_make_a_position_driven_game_exact(antithetic):
    """With m = N every player takes every position once per group, so the size term averages out exactly."""
    game = size_game()
    per_group = (2 if antithetic else 1) * N * N
    result = permutation_shapley(game, 1 + 3 * per_group, seed=1, rotations=N, antithetic=antithetic)
    np.testing.assert_allclose(result.values, game.shapley_values, atol=1e-12)
    np.testing.assert_allclose(result.stderr, 0.0, atol=1e-12)  # every group gives the exact values
    plain = permutation_shapley(game, 1 + 3 * per_group, seed=1, antithetic=antithetic)
    assert plain.stderr.max() > 1e-2  # the game has real sampling variance without rotations


def test_rotations_cut_the_variance_of_position_driven_contributions():
    game = size_game()
    budget = 1 + 40 * 6 * N
    plain = permutation_shapley(game, budget, seed=2)
    rotated = permutation_shapley(game, budget, seed=2, rotations=6)
    # positions 2 apart instead of independent: the standard error falls to about 0.60x (0.599-0.608 over
    # 5 seeds; a precision of a few percent at this budget)
    assert rotated.stderr.mean() < 0.75 * plain.stderr.mean()
    assert relative_l2(rotated.values, game.shapley_values) < relative_l2(plain.values, game.shapley_values)


@pytest.mark.parametrize("rotations, antithetic", [(3, False), (5, True)])
def test_rotated_permutations_stay_unbiased_on_a_non_symmetric_game(rotations, antithetic):
    """Unanimity terms: each rotation is a uniform permutation, so the estimate converges to the values."""
    game = random_unanimity_game(N, n_terms=8, max_size=4, seed=3)
    unit = (2 if antithetic else 1) * rotations * N
    small = permutation_shapley(game, 1 + 20 * unit, seed=4, rotations=rotations, antithetic=antithetic)
    large = permutation_shapley(game, 1 + 1280 * unit, seed=4, rotations=rotations, antithetic=antithetic)
    error_small = relative_l2(small.values, game.shapley_values)
    error_large = relative_l2(large.values, game.shapley_values)
    assert error_large < 0.03  # measured 0.001-0.018 over 8 seeds
    assert error_large < error_small / 2  # error ~ 1/sqrt(budget): 8x expected for 64x the budget
    sampled = large.stderr > 1e-9  # antithetic pairs make players of small unanimity terms exact
    assert np.abs(large.values - game.shapley_values)[~sampled].max(initial=0.0) < 1e-9
    z = (large.values - game.shapley_values)[sampled] / large.stderr[sampled]
    assert np.abs(z).max() < 4.5  # the standard error is honest (measured max |z| 0.5-2.3)


def test_efficiency_counts_and_info():
    game = CountingGame(random_unanimity_game(N, n_terms=6, max_size=3, seed=5))
    result = permutation_shapley(game, 1 + 7 * 2 * 3 * N + 5, seed=6, rotations=3, antithetic=True)
    total = game.evaluate(np.ones((1, N), bool))[0] - game.evaluate(np.zeros((1, N), bool))[0]
    assert abs(result.values.sum() - total) < 1e-10  # every rotated permutation is efficient
    assert result.n_evaluations == 1 + 7 * 2 * 3 * N  # 7 groups of 3 rotated antithetic pairs
    assert game.rows - 2 == result.n_evaluations  # what the game saw (less the 2 evaluations above)
    assert result.n_samples == 7 * 2 * 3
    assert result.info["rotations"] == 3


def test_one_rotation_is_plain_permutation_sampling():
    game = size_game()
    plain = permutation_shapley(game, 1 + 30 * N, seed=7)
    one = permutation_shapley(game, 1 + 30 * N, seed=7, rotations=1)
    np.testing.assert_array_equal(one.values, plain.values)
    assert "rotations" not in plain.info  # plain runs keep their fingerprint (checkpoints, merging)


@pytest.mark.parametrize("bad, error, match", [
    (0, ValueError, "rotations must be >= 1"),
    (N + 1, ValueError, "rotations must be between 1 and n_players"),
    (2.5, TypeError, "rotations must be an integer"),
    ("4", TypeError, "rotations must be an integer"),
    (True, TypeError, "rotations must be an integer"),
])
def test_bad_rotations(bad, error, match):
    with pytest.raises(error, match=match):
        permutation_shapley(size_game(), 10_000, seed=0, rotations=bad)


def test_budget_below_one_group_names_the_group():
    with pytest.raises(ValueError, match="group of 4 rotated permutations"):
        permutation_shapley(size_game(), 4 * N, seed=0, rotations=4)
