"""Exact Shapley values by enumerating all coalitions."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import comb

from ._sampling._loop import evaluate_coalitions
from ._sampling._progress import evaluation_bar
from .._validation import check_float, check_game, check_int, check_progress, check_utilities
from ..games import GameLike
from ..result import ValuationResult

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["exact_shapley", "coalition_utilities", "shapley_from_table"]


def _coalition_masks(start: int, stop: int, n: int) -> np.ndarray:
    """Boolean masks of the coalitions whose bit codes are ``start..stop-1``."""
    codes = np.arange(start, stop, dtype=np.int64)
    return ((codes[:, None] >> np.arange(n, dtype=np.int64)) & 1).astype(bool)


def check_enumeration(n: int, max_players, chunk_size, empty_utility, *, method: str,
                      alternative: str) -> tuple[int, float | None]:
    """Validate the options of an enumeration of all ``2^N`` coalitions; ``(chunk_size, empty_utility)``.

    Refuses games of more than ``max_players`` players, naming ``method`` and
    the ``alternative`` to use instead.
    """
    max_players = check_int(max_players, "max_players", minimum=1)
    chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    if n > max_players:
        raise ValueError(
            f"{method} enumerates 2^N coalitions; the game has N={n} > max_players={max_players} "
            f"(2^{n} = {2**n:.3g} evaluations). {alternative}"
        )
    if empty_utility is not None:
        empty_utility = check_float(empty_utility, "empty_utility")
    return chunk_size, empty_utility


def evaluate_in_chunks(game, n_rows: int, chunk_size: int, masks_of, empty_utility: float | None,
                       progress: bool | None = None, desc: str = "evaluations") -> tuple[np.ndarray, int]:
    """Utilities of a listed family of coalitions, ``chunk_size`` per call, and the evaluations made.

    ``masks_of(start, stop)`` builds the masks of rows ``start..stop-1``; the
    empty coalition is not evaluated when ``empty_utility`` is given. A
    progress bar (:func:`~._sampling._progress.evaluation_bar`, ``desc``)
    follows the rows.
    """
    utilities = np.empty(n_rows)
    n_evaluations = 0
    progress = check_progress(progress)
    with evaluation_bar(progress, n_rows, desc) as advance:
        for lo in range(0, n_rows, chunk_size):
            hi = min(lo + chunk_size, n_rows)
            masks = masks_of(lo, hi)
            if empty_utility is None:
                utilities[lo:hi], made = check_utilities(game.evaluate(masks), hi - lo), hi - lo
            else:
                utilities[lo:hi], made = evaluate_coalitions(game, masks, empty_utility)
            n_evaluations += made
            advance(hi - lo)
    return utilities, n_evaluations


def utility_table(game, n: int, chunk_size: int, empty_utility: float | None, progress: bool | None = None,
                  desc: str = "all coalitions") -> tuple[np.ndarray, int]:
    """Utilities of all ``2^N`` coalitions, indexed by bit code (bit ``i``: player ``i``), and the evaluations made.

    Evaluated ``chunk_size`` coalitions per call; ``U(empty)`` is not evaluated when ``empty_utility`` is given.
    """
    return evaluate_in_chunks(game, 1 << n, chunk_size, lambda lo, hi: _coalition_masks(lo, hi, n), empty_utility,
                              progress, desc)


def semivalues_from_table(utilities: np.ndarray, n: int, weights: np.ndarray) -> np.ndarray:
    """``sum over S not containing i of weights[|S|] (U(S + i) - U(S))`` from :func:`utility_table`'s table."""
    codes = np.arange(1 << n, dtype=np.int64)
    sizes = np.zeros(codes.size, dtype=np.int64)
    for i in range(n):
        sizes += (codes >> i) & 1
    values = np.empty(n)
    for i in range(n):
        without_i = codes[((codes >> i) & 1) == 0]
        values[i] = np.dot(weights[sizes[without_i]], utilities[without_i | (1 << i)] - utilities[without_i])
    return values


def exact_shapley(game: GameLike, *, max_players: int = 20, chunk_size: int = 2**16,
                  empty_utility: float | None = None, progress: bool | None = None) -> ValuationResult:
    r"""Exact Shapley values by evaluating all :math:`2^N` coalitions.

    .. math::

        s_i = \sum_{S \subseteq I \setminus \{i\}}
              \frac{|S|!\,(N - |S| - 1)!}{N!}\,\bigl[U(S \cup \{i\}) - U(S)\bigr]

    The utilities of all coalitions are evaluated in chunks (vectorised), then
    each value is a weighted sum over the pairs ``(S, S + i)``, indexed by the
    bit codes of the coalitions: ``O(N 2^N)`` arithmetic, ``2^N`` evaluations.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    max_players : int, default 20
        Refuse games with more players (``2^20`` evaluations is about the limit
        of an interactive call); raise it deliberately for bigger games.
    chunk_size : int, default 65536
        Coalitions evaluated per call to ``game.evaluate``.
    empty_utility : float, optional
        Use this value as ``U(empty)`` instead of evaluating the game on the
        empty coalition. Efficiency then reads ``sum(s) = U(D) - empty_utility``.
    progress : bool, optional
        A progress bar over the utility evaluations (default: in terminals and
        notebooks, and in logs once the run has lasted 30 s; ``False``: none).
        It never changes a number.

    Returns
    -------
    ValuationResult
        ``n_evaluations`` is ``2^N`` (``2^N - 1`` if ``empty_utility`` is given).
    """
    start = time.perf_counter()
    n = check_game(game)
    chunk_size, empty_utility = check_enumeration(
        n, max_players, chunk_size, empty_utility, method="exact_shapley",
        alternative="Use a sampling estimator such as permutation_shapley or group_testing_shapley, or raise "
                    "max_players deliberately.")
    utilities, n_evaluations = utility_table(game, n, chunk_size, empty_utility, progress, "exact Shapley")
    values = _shapley_values(utilities, n)  # the table is checked as it is enumerated
    return ValuationResult(values=values, n_evaluations=n_evaluations, method="exact",
                           wall_time=time.perf_counter() - start, stderr=np.zeros(len(values)),
                           info={"empty_utility": float(utilities[0]), "full_utility": float(utilities[-1])})


def coalition_utilities(game: GameLike, *, max_players: int = 20, chunk_size: int = 2**16,
                        progress: bool | None = None) -> np.ndarray:
    r"""Every coalition's utility, indexed by its bit code :math:`\sum_{i \in S} 2^i` (:math:`2^N` evaluations).

    The table :func:`exact_shapley` enumerates, for a study that reads a small
    game many times (a sampler run far past :math:`2^N` evaluations reads it
    instead of refitting, the same utilities bit for bit).

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    max_players, chunk_size, progress
        As :func:`exact_shapley`.

    Returns
    -------
    numpy.ndarray
        ``(2^N,)`` utilities; entry ``c`` is the coalition of the players whose bits are set in ``c``.
    """
    n = check_game(game)
    chunk_size, _ = check_enumeration(n, max_players, chunk_size, None, method="coalition_utilities",
                                      alternative="Raise max_players deliberately.")
    return utility_table(game, n, chunk_size, None, progress, "all coalitions")[0]


def shapley_from_table(utilities: ArrayLike) -> np.ndarray:
    r"""Exact Shapley values from the table of every coalition's utility (:func:`coalition_utilities`).

    The arithmetic of :func:`exact_shapley`, which calls it on the table it
    enumerates: a study that needs the table anyway (to read a small game
    many times) gets the exact values from it without a second enumeration,
    bit for bit those of :func:`exact_shapley`.

    Parameters
    ----------
    utilities : array-like
        ``(2^N,)`` finite utilities, :math:`N \ge 1`; entry ``c`` is the
        coalition of the players whose bits are set in ``c``.

    Returns
    -------
    numpy.ndarray
        ``(N,)`` Shapley values.

    Raises
    ------
    ValueError
        If the table is not 1-D of a power-of-two length of at least 2, or holds a non-finite utility.
    """
    table = np.asarray(utilities)
    n = int(table.size).bit_length() - 1 if table.ndim == 1 else 0
    if n < 1 or table.size != 1 << n:
        raise ValueError(f"utilities must be the 2^N utilities of a game of N >= 1 players, got shape {table.shape}.")
    return _shapley_values(check_utilities(table, 1 << n, source="the table"), n)


def _shapley_values(table: np.ndarray, n: int) -> np.ndarray:
    """The Shapley values of a checked ``(2^n,)`` table (:func:`shapley_from_table` without its checks)."""
    # weight of a coalition S not containing i: |S|! (N-|S|-1)! / N! = 1 / (N * C(N-1, |S|))
    return semivalues_from_table(table, n, 1.0 / (n * comb(n - 1, np.arange(n), exact=False)))
