"""exact_shapley against closed forms, and the reference values themselves."""

from __future__ import annotations

import math

import numpy as np
import pytest

from games import (VOTING_NULL_PLAYERS, AdditiveGame, AirportGame, CountingGame, GloveGame,
                   MajorityGame, SizeAdditiveGame, TableGame, brute_force_shapley,
                   random_unanimity_game, sparse_game)
from shapley_research import as_game, exact_shapley


def test_exact_matches_closed_form(closed_form_game):
    result = exact_shapley(closed_form_game)
    np.testing.assert_allclose(result.values, closed_form_game.shapley_values, rtol=0, atol=1e-10)
    assert result.method == "exact"
    assert result.n_evaluations == 2**closed_form_game.n_players
    assert result.n_samples == 0 and result.seed is None
    np.testing.assert_array_equal(result.stderr, np.zeros(closed_form_game.n_players))  # no sampling error


def test_exact_efficiency(closed_form_game):
    n = closed_form_game.n_players
    total = closed_form_game(np.ones(n, bool)) - closed_form_game(np.zeros(n, bool))
    assert exact_shapley(closed_form_game).values.sum() == pytest.approx(total, abs=1e-10)


# --- the reference values are right (so the comparisons above mean something) ---

SMALL_GAMES = {
    "additive_offset": AdditiveGame([0.5, -1.0, 2.0, 0.25, 1.0], offset=-3.0),
    "size_additive": SizeAdditiveGame([0.2, 0.9, 0.4, 0.0, 1.3, 0.7],
                                      np.sqrt(np.arange(7.0)) * 2.0),
    "unanimity": random_unanimity_game(7, 8, 4, seed=11),
    "airport_with_ties": AirportGame([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 3.0]),
    "glove_2_5": GloveGame(2, 5),
    "majority": MajorityGame(7, 4),
}


@pytest.mark.parametrize("name", sorted(SMALL_GAMES))
def test_closed_forms_agree_with_permutation_brute_force(name):
    """The closed forms in games.py, against the N!-order definition (independent code)."""
    game = SMALL_GAMES[name]
    n = game.n_players
    brute = brute_force_shapley(lambda s: game(np.isin(np.arange(n), list(s))), n)
    np.testing.assert_allclose(game.shapley_values, brute, rtol=0, atol=1e-10)


def test_glove_closed_form_known_cases():
    np.testing.assert_allclose(GloveGame(4, 4).shapley_values, 0.5, atol=1e-15)
    np.testing.assert_allclose(GloveGame(1, 2).shapley_values, [2 / 3, 1 / 6, 1 / 6], atol=1e-15)
    scarce = GloveGame(3, 6).shapley_values
    assert scarce[0] > 0.5 > scarce[-1]  # the scarce side is worth more
    assert scarce.sum() == pytest.approx(3.0)


def test_airport_closed_form_by_hand():
    # costs 1, 3: the 1-unit segment is shared by both, the next 2 units by the big plane.
    np.testing.assert_allclose(AirportGame([3.0, 1.0]).shapley_values, [2.5, 0.5])


# --- properties ---

def test_symmetric_players_get_equal_values():
    game = AirportGame([2.0, 5.0, 2.0, 7.0, 5.0])  # players 0,2 and 1,4 are symmetric
    values = exact_shapley(game).values
    assert values[0] == pytest.approx(values[2], abs=1e-12)
    assert values[1] == pytest.approx(values[4], abs=1e-12)
    np.testing.assert_allclose(exact_shapley(MajorityGame(10, 6)).values, 0.1, atol=1e-12)


def test_null_players_get_zero(voting_game, unanimity_game):
    np.testing.assert_allclose(exact_shapley(voting_game).values[list(VOTING_NULL_PLAYERS)], 0.0,
                               atol=1e-12)
    assert exact_shapley(unanimity_game).values[11] == pytest.approx(0.0, abs=1e-12)
    assert voting_game.shapley_values[:5].min() > 0  # the others are not null


def test_additive_game_values_are_weights_despite_offset():
    weights = np.array([1.0, -2.0, 0.5, 3.0])
    np.testing.assert_allclose(exact_shapley(AdditiveGame(weights, offset=10.0)).values, weights,
                               atol=1e-12)


def test_counts_every_coalition_once():
    counter = CountingGame(TableGame(np.random.default_rng(1).normal(size=2**6)))
    result = exact_shapley(counter, chunk_size=7)
    assert result.n_evaluations == counter.rows == 2**6
    assert counter.empty_rows == 1 and counter.full_rows == 1
    assert counter.calls == math.ceil(2**6 / 7)


def test_chunk_size_does_not_change_values():
    game = TableGame(np.random.default_rng(2).normal(size=2**8))
    np.testing.assert_array_equal(exact_shapley(game).values, exact_shapley(game, chunk_size=3).values)


def test_empty_utility_override():
    game = AdditiveGame([1.0, 2.0, 3.0], offset=5.0)
    counter = CountingGame(game)
    result = exact_shapley(counter, empty_utility=0.0)
    assert counter.empty_rows == 0
    assert result.n_evaluations == counter.rows == 2**3 - 1
    # U(empty) = 0 instead of 5: the jump of 5 from the empty set is split equally
    np.testing.assert_allclose(result.values, [1 + 5 / 3, 2 + 5 / 3, 3 + 5 / 3], atol=1e-12)
    assert result.values.sum() == pytest.approx(game(np.ones(3, bool)) - 0.0)


def test_function_game_scalar_and_vectorized_agree():
    weights = np.array([0.3, 1.2, -0.7, 2.0, 0.1])

    def scalar(mask):
        return float(mask @ weights) ** 2

    a = exact_shapley(as_game(scalar, 5)).values
    b = exact_shapley(as_game(lambda m: (m @ weights) ** 2, 5, vectorized=True)).values
    np.testing.assert_allclose(a, b, atol=1e-12)
    brute = brute_force_shapley(lambda s: sum(weights[i] for i in s) ** 2, 5)
    np.testing.assert_allclose(a, brute, atol=1e-10)


def test_single_player():
    result = exact_shapley(AdditiveGame([4.0], offset=1.0))
    np.testing.assert_allclose(result.values, [4.0])
    assert result.n_evaluations == 2


def test_refuses_games_above_max_players():
    big = MajorityGame(21, 11)
    with pytest.raises(ValueError, match="max_players"):
        exact_shapley(big)
    with pytest.raises(ValueError, match=r"N=5 > max_players=4"):
        exact_shapley(MajorityGame(5, 3), max_players=4)
    # raising the limit deliberately is allowed
    np.testing.assert_allclose(exact_shapley(MajorityGame(5, 3), max_players=5).values, 0.2)



def test_shapley_from_table_is_exact_shapley_bit_for_bit():
    """The table's values are exact_shapley's: it enumerates the same table and calls the same function."""
    from shapley_research.estimators import coalition_utilities, shapley_from_table

    for game in (TableGame(np.random.default_rng(4).normal(size=2**9)), AirportGame([3.0, 1.0, 4.0, 1.0, 5.0]),
                 AdditiveGame([4.0], offset=1.0)):
        table = coalition_utilities(game, chunk_size=5)
        assert np.array_equal(shapley_from_table(table), exact_shapley(game).values)
        assert np.array_equal(shapley_from_table(list(table)), exact_shapley(game).values)
    for bad in (np.zeros(6), np.zeros(1), np.zeros((2, 4)), [0.0, np.nan]):
        with pytest.raises(ValueError, match="utilities|non-finite"):
            shapley_from_table(bad)
    with pytest.raises(TypeError, match="real numbers"):
        shapley_from_table(["a", "b"])


# --- the test games themselves ---

def test_prefix_fast_paths_agree_with_masks():
    from shapley_research.games import prefix_masks
    from shapley_research.estimators import random_permutations

    perms = random_permutations(np.random.default_rng(0), 20, 9)
    for game in (AirportGame(np.random.default_rng(1).uniform(0, 5, 9)),
                 SizeAdditiveGame(np.linspace(-1, 1, 9), np.sqrt(np.arange(10.0)))):
        np.testing.assert_allclose(game.evaluate_prefixes(perms).reshape(-1),
                                   game.evaluate(prefix_masks(perms)), atol=1e-12)


def test_sparse_game_is_monotone_and_exactly_sparse():
    game = sparse_game()
    values = game.shapley_values
    deviations = values - values.mean()
    assert np.count_nonzero(np.abs(deviations) > 1e-12) == 4
    np.testing.assert_array_equal(np.flatnonzero(np.abs(deviations) > 1e-12), np.sort(game.heavy))
    # monotone: adding any player never lowers the utility
    rng = np.random.default_rng(0)
    masks = rng.random((200, game.n_players)) < 0.5
    base = game.evaluate(masks)
    for i in range(game.n_players):
        grown = masks.copy()
        grown[:, i] = True
        assert (game.evaluate(grown) >= base).all()
    # and the closed form is right (on a size exact enumeration can afford)
    small = sparse_game(n_players=12, n_heavy=2)
    np.testing.assert_allclose(exact_shapley(small).values, small.shapley_values, atol=1e-10)
