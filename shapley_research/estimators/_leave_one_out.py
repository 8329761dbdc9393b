"""Leave-one-out values: what the whole data set loses without each point."""

from __future__ import annotations

import time

import numpy as np

from ._exact import evaluate_in_chunks
from .._validation import check_float, check_game, check_int
from ..games import GameLike
from ..result import ValuationResult

__all__ = ["leave_one_out"]

#: Default cap on the cells of one mask matrix passed to ``game.evaluate`` (64 MiB of booleans).
MAX_MASK_CELLS = 2**26


def _leave_one_out_masks(start: int, stop: int, n: int) -> np.ndarray:
    """Rows ``start..stop-1`` of the ``N + 1`` coalitions: row ``i < N`` is ``D - {i}``, row ``N`` is ``D``."""
    masks = np.ones((stop - start, n), dtype=bool)
    left_out = np.arange(start, min(stop, n))  # the grand coalition (row N) rides along in the same call
    masks[left_out - start, left_out] = False
    return masks


def leave_one_out(game: GameLike, *, chunk_size: int | None = None,
                  empty_utility: float | None = None, progress: bool | None = None) -> ValuationResult:
    r"""Leave-one-out values :math:`\phi_i = U(D) - U(D \setminus \{i\})`.

    The marginal contribution of each player to the grand coalition only: the
    term of the Shapley sum with :math:`S = D \setminus \{i\}`, whose weight
    there is :math:`1/N`. It is cheap (``N + 1`` utility evaluations, one
    vectorised call) and deterministic, but it is not a semivalue estimate:
    it sees only what a point adds to all the others, so two points that
    duplicate each other both get about 0, and on a utility that has
    saturated at ``D`` (a learner that no longer improves with one more
    point) every value is close to 0 and the ranking is mostly noise. For an
    additive game :math:`U(S) = c + \sum_{i \in S} w_i` it equals the Shapley
    value :math:`w_i`; it also satisfies the null-player property (a player
    that never changes the utility gets 0), but not efficiency.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    chunk_size : int, optional
        Coalitions evaluated per call to ``game.evaluate``. By default all
        ``N + 1`` in one call while the mask matrix stays under
        :data:`MAX_MASK_CELLS` cells (``N <= 8191``), in calls of that size
        beyond; the values do not depend on it.
    empty_utility : float, optional
        Only used when ``N = 1``, where :math:`D \setminus \{i\}` is the empty
        coalition: use this value as ``U(empty)`` instead of evaluating it.
    progress : bool, optional
        A progress bar over the utility evaluations (default: in terminals and
        notebooks, and in logs once the run has lasted 30 s; ``False``: none).
        It never changes a number.

    Returns
    -------
    ValuationResult
        ``method="leave_one_out"``, ``n_evaluations = N + 1`` (``1`` when
        ``N = 1`` and ``empty_utility`` is given), no seed, no standard error,
        ``n_samples = 0``; ``info["full_utility"]`` is :math:`U(D)`.
    """
    start = time.perf_counter()
    n = check_game(game)
    if chunk_size is not None:
        chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    if empty_utility is not None:
        empty_utility = check_float(empty_utility, "empty_utility")
    rows = n + 1
    if chunk_size is None:
        chunk_size = max(1, MAX_MASK_CELLS // n)

    # with N = 1 and empty_utility given, the row D - {0} is the empty coalition and is not evaluated
    utilities, n_evaluations = evaluate_in_chunks(game, rows, chunk_size,
                                                  lambda lo, hi: _leave_one_out_masks(lo, hi, n), empty_utility,
                                                  progress, "leave-one-out")
    full = float(utilities[n])
    info = {"full_utility": full}
    if n == 1:
        info["empty_utility"] = float(utilities[0])
    return ValuationResult(values=full - utilities[:n], n_evaluations=n_evaluations, method="leave_one_out",
                           wall_time=time.perf_counter() - start, stderr=np.zeros(n), info=info)
