"""Bad input across the public API, tried systematically (issue 6).

Every case is one row of a table: a public callable, one bad input, and what
must happen. Either a ``ValueError`` or ``TypeError`` whose message names the
argument (``pytest.raises(..., match=...)``), or, where the library documents a
convention for the input (one point or one class for KNN, ``K > N``), that
convention, asserted. A bad *parameter* must also fail before the game is
evaluated at all (checked with a counting game): validation is at the boundary.
A game that raises must see its own exception come out, never swallowed.
The tables are split by what they feed: games to the estimators
(``test_bad_games.py``), budgets and parameters to the estimators, masks and
coalitions to games, data to every data-taking callable, parameters to the
utilities, and the influence function, the Neyman allocation and the bounds;
their shared toys are here.

No case may hang: every module of the tables marks its tests with :data:`NO_HANG`,
pytest-timeout's per-test limit (the plugin is a test dependency).

The corrupted-checkpoint case of the issue is covered with the checkpoints.
"""

from __future__ import annotations

import numpy as np
import pytest

PER_TEST_SECONDS = 20
#: Every bad-input test's mark: a case that hangs fails after PER_TEST_SECONDS instead.
NO_HANG = pytest.mark.timeout(PER_TEST_SECONDS, method="signal")


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
