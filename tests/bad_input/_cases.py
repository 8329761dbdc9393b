"""The shared rows and toys of the bad-input tests: tiny data, duck-typed games, games that raise."""

from __future__ import annotations

import numpy as np
import pytest


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


def with_nan(A, value=np.nan):
    A = np.array(A, dtype=float)
    A[1, 0] = value
    return A
