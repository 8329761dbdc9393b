"""Leave-one-out values U(D) - U(D - i): N + 1 evaluations, against a brute force."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import CLOSED_FORM_GAMES

from games import (VOTING_NULL_PLAYERS, AdditiveGame, CountingGame, GloveGame, TableGame, UnanimityGame,
                   WeightedVotingGame, VOTING_QUOTA, VOTING_WEIGHTS)
from shapley_research import as_game, leave_one_out


def brute_force_leave_one_out(game) -> np.ndarray:
    """``U(D) - U(D - i)``, one coalition at a time, through the game's scalar call on player indices."""
    everyone = list(range(game.n_players))
    full = game(everyone)
    return np.array([full - game([j for j in everyone if j != i]) for i in everyone])


@pytest.mark.parametrize("name", sorted(CLOSED_FORM_GAMES))
def test_values_equal_a_brute_force(name):
    game = CLOSED_FORM_GAMES[name]
    result = leave_one_out(game)
    np.testing.assert_allclose(result.values, brute_force_leave_one_out(game), rtol=0, atol=1e-12)
    assert result.method == "leave_one_out"
    assert result.info["full_utility"] == pytest.approx(game(list(range(game.n_players))))


def test_values_of_a_table_game_read_off_the_table():
    """Independent of any evaluation path: U(D) is the last entry, U(D - i) the entry with bit i cleared."""
    table = np.random.default_rng(4).normal(size=2**6)
    result = leave_one_out(TableGame(table))
    everyone = 2**6 - 1
    np.testing.assert_array_equal(result.values, [table[everyone] - table[everyone ^ (1 << i)] for i in range(6)])


def test_closed_forms():
    # unanimity: removing i destroys exactly the terms T that contain it
    game = UnanimityGame(5, [(0, 1), (1, 2, 3), (4,)], [2.0, 3.0, 0.5])
    np.testing.assert_allclose(leave_one_out(game).values, [2.0, 5.0, 3.0, 3.0, 0.5])
    # glove game with more right gloves: a left glove loses a pair, a right glove nothing
    np.testing.assert_array_equal(leave_one_out(GloveGame(2, 3)).values, [1, 1, 0, 0, 0])
    # additive: leave-one-out is the Shapley value, whatever U(empty)
    weights = np.array([0.5, -1.0, 2.0, 3.5])
    np.testing.assert_allclose(leave_one_out(AdditiveGame(weights, offset=7.0)).values, weights, atol=1e-12)


def test_null_players_get_zero():
    result = leave_one_out(WeightedVotingGame(VOTING_WEIGHTS, VOTING_QUOTA))
    assert np.all(result.values[list(VOTING_NULL_PLAYERS)] == 0.0)


def test_exactly_n_plus_one_evaluations_in_one_call():
    counting = CountingGame(AdditiveGame(np.arange(9.0)))
    result = leave_one_out(counting)
    assert result.n_evaluations == counting.rows == 9 + 1
    assert counting.calls == 1
    assert counting.full_rows == 1 and counting.empty_rows == 0
    assert (result.seed, result.n_samples, result.state) == (None, 0, None)
    np.testing.assert_array_equal(result.stderr, np.zeros(9))  # computed exactly: no sampling error


def test_chunks_change_calls_not_values():
    game = UnanimityGame(7, [(0, 1), (2, 3, 4), (5,), (1, 6)], [1.0, 2.0, 3.0, 4.0])
    counting = CountingGame(game)
    chunked = leave_one_out(counting, chunk_size=3)
    np.testing.assert_array_equal(chunked.values, leave_one_out(game).values)
    assert (counting.calls, counting.rows, chunked.n_evaluations) == (3, 8, 8)  # rows 0-2, 3-5, 6-7


def test_one_player_with_and_without_the_empty_utility():
    game = CountingGame(AdditiveGame([2.0], offset=0.5))
    assert leave_one_out(game).values.tolist() == [2.0]
    assert game.rows == 2
    given = leave_one_out(game, empty_utility=0.0)  # U(empty) given: only D is evaluated
    assert given.values.tolist() == [2.5] and given.n_evaluations == 1 and game.rows == 3
    assert given.info["empty_utility"] == 0.0


@pytest.mark.parametrize("kwargs, error, match", [
    ({"chunk_size": 0}, ValueError, "chunk_size must be >= 1"),
    ({"chunk_size": 2.5}, TypeError, "chunk_size must be an integer"),
    ({"chunk_size": True}, TypeError, "chunk_size must be an integer"),
    ({"empty_utility": "0"}, TypeError, "empty_utility must be a real number"),
    ({"empty_utility": np.nan}, ValueError, "empty_utility must be finite"),
])
def test_bad_options_are_refused_before_any_evaluation(kwargs, error, match):
    counting = CountingGame(AdditiveGame(np.ones(4)))
    with pytest.raises(error, match=match):
        leave_one_out(counting, **kwargs)
    assert counting.calls == 0


def test_bad_games():
    with pytest.raises(TypeError, match="wrap a utility function with as_game"):
        leave_one_out(lambda mask: 1.0)
    with pytest.raises(TypeError, match="game must be an object with n_players"):
        leave_one_out(np.ones(3))
    with pytest.raises(TypeError, match="positional argument"):
        leave_one_out(AdditiveGame(np.ones(3)), 100)  # options are keyword-only: no budget to pass
    bad = as_game(lambda masks: np.full(masks.shape[0], np.nan), 3, vectorized=True)
    with pytest.raises(ValueError, match="finite"):
        leave_one_out(bad)
