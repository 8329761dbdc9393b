"""as_game, Game.evaluate (masks) and Game.__call__ (coalitions) given bad input.

Part of the bad-input tables (tests/bad_input/_cases.py: what they check, the shared toys, the timeout).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from shapley_research import (as_game, KNNUtility, LogisticRegressionUtility, ModelUtility, RidgeUtility,
                              ThresholdKNNUtility)
from shapley_research.games import Game

from bad_input._cases import (additive, assert_raises, N, NO_HANG, row, X, XT, Y, YR, YT, YTR)

pytestmark = NO_HANG

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
    "ThresholdKNNUtility": lambda: ThresholdKNNUtility(X, Y, XT, YT, tau=1.0),
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
