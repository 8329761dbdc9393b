"""The methods: the reference values, the randomised methods at a common budget and the largest-S scheme."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from ... import (ValuationResult, all_s_influence, exact_shapley, group_testing_shapley, largest_s_influence,
                 permutation_shapley)
from ..._validation import check_int
from .._common import progress
from .._parallel import check_n_jobs, parallel_map
from ._data import EXACT_MAX_PLAYERS, LN2

if TYPE_CHECKING:
    from collections.abc import Sequence
    from ...games import GameLike

    #: ``(X_train, y_train, X_test, y_test)`` as :func:`load_iris_pair` returns them
    IrisSplit: TypeAlias = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


# ------------------------------------------------------------------------------------- the methods

def reference_values(game: GameLike, method: str = "exact", n_permutations: int = 20000, seed: int = 0,
                     n_jobs: int = 1, table: np.ndarray | None = None) -> ValuationResult:
    """The precise reference: exact enumeration, or permutation sampling with many permutations.

    Parameters
    ----------
    game : GameLike
        The game (:func:`make_game`).
    method : {"exact", "permutation"}
        ``"exact"`` evaluates all :math:`2^N` coalitions (``stderr`` zero);
        ``"permutation"`` draws ``n_permutations`` permutations (the paper's
        protocol, for ``N`` too large to enumerate) and keeps their standard
        error.
    n_permutations, seed, n_jobs : int
        Of ``"permutation"``.
    table : numpy.ndarray, optional
        The game's ``(2^N,)`` utilities (:func:`utility_table`), which
        ``"exact"`` then reads instead of enumerating the coalitions again:
        the values are bit for bit those of
        :func:`~shapley_research.exact_shapley` (``n_evaluations`` counts the
        table's :math:`2^N`). ``"permutation"`` ignores it.

    Returns
    -------
    ValuationResult
    """
    if method == "exact":
        if table is None:
            result = exact_shapley(game, max_players=22)
        else:
            result = _exact_from_table(game, table)
        return result
    if method == "permutation":
        return permutation_shapley(game, n_permutations * game.n_players + 1, seed=seed, n_jobs=n_jobs,
                                   progress=False)
    raise ValueError(f"reference must be 'exact' or 'permutation', got {method!r}.")


def _exact_from_table(game: GameLike, table: np.ndarray) -> ValuationResult:
    """:func:`~shapley_research.exact_shapley`'s result, its values from the table of the game's utilities."""
    from ...estimators import shapley_from_table

    start = time.perf_counter()
    if _players(table) != game.n_players:
        raise ValueError(f"table holds the utilities of {_players(table)} players; the game has {game.n_players}.")
    return ValuationResult(values=shapley_from_table(table), n_evaluations=len(table), method="exact",
                           wall_time=time.perf_counter() - start, stderr=np.zeros(game.n_players),
                           info={"empty_utility": float(table[0]), "full_utility": float(table[-1])})


def leave_one_out_normalised(game: GameLike, empty_utility: float | None = None) -> ValuationResult:
    r"""The largest-S scheme with *exact* marginals: :math:`C_U\,[U(I) - U(I\setminus\{i\})]`.

    :math:`C_U` rescales the leave-one-out marginals to sum to
    :math:`U(I) - U(\emptyset)` (Theorem 6). It separates the error of the
    scheme (one subset per point) from the error of the influence
    approximation. ``N + 2`` evaluations.
    """
    start = time.perf_counter()
    n = game.n_players
    masks = np.ones((n + 2, n), dtype=bool)
    masks[np.arange(n), np.arange(n)] = False
    masks[n + 1] = False
    u = game.evaluate(masks)
    full, empty = u[n], (u[n + 1] if empty_utility is None else float(empty_utility))
    marginals = full - u[:n]
    c_u = (full - empty) / marginals.sum()
    return ValuationResult(values=c_u * marginals, n_evaluations=n + 2, method="leave_one_out_normalised",
                           wall_time=time.perf_counter() - start,
                           info={"marginal_estimates": marginals, "normalization_constant": c_u})


@dataclass
class MethodRun:
    """One method's result with the process CPU time it took (the machine is shared: wall time is inflated)."""

    key: str
    result: ValuationResult
    cpu_time: float
    repetition: int = 0
    seed: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def n_model_fits(self) -> int:
        """Models actually fitted (all-S, largest-S) or utility evaluations (the others)."""
        return int(self.result.n_evaluations)


def _timed(key, fn, repetition=0, seed=None) -> MethodRun:
    start = time.process_time()
    result = fn()
    return MethodRun(key, result, time.process_time() - start, repetition, seed)


def run_methods(game: GameLike, data: IrisSplit, *, C: float, budget: int, seed: int,
                repetition: int = 0,
                methods: Sequence[str] = ("permutation", "gt_paper", "gt_paper_wor", "gt_improved", "all_s"),
                n_jobs: int = 1) -> list[MethodRun]:
    """Run the randomised methods once with the same ``budget``, all from ``seed``.

    Parameters
    ----------
    game : ModelUtility
        From :func:`make_game` (permutation sampling and group testing).
    data : tuple
        ``(X_train, y_train, X_test, y_test)`` (the influence methods refit
        through :class:`~shapley_research.LogisticObjective`).
    C : float
        scikit-learn's ``C``, the same as the game's.
    budget : int
        Utility evaluations (permutation sampling, group testing) or sampled
        base coalitions, one fit each (all-S influence).
    seed : int
        Seed of every method of this repetition.
    methods : sequence of str
        Keys among ``permutation``, ``gt_paper`` (Algorithm 1 as published:
        independent tests, no centering), ``gt_paper_wor`` (Algorithm 1 on
        this package's tests drawn without replacement), ``gt_improved``
        (Wang & Jia's null player plus this package's linear centering, tests
        without replacement: the library's defaults), ``all_s_first_order``
        (all-S with the paper's influence function: base-set Hessian, the
        utility change linearised as Koh & Liang's influence on the loss),
        ``all_s_influence_evaluated`` (the paper's influence function, the
        utility evaluated at the updated parameters instead of linearised:
        with the same seed, the same base sets as ``all_s_first_order``, so
        the two differ by the linearisation alone), ``all_s`` (this
        package's update: one Newton step, the utility evaluated at the
        updated parameters).

    Returns
    -------
    list of MethodRun
    """
    calls = {
        "permutation": lambda: permutation_shapley(game, budget, seed=seed, n_jobs=n_jobs, progress=False),
        "gt_paper": lambda: group_testing_shapley(game, budget, seed=seed, variant="paper", centering="none",
                                                  sampling="independent", n_jobs=n_jobs, progress=False),
        "gt_paper_wor": lambda: group_testing_shapley(game, budget, seed=seed, variant="paper", centering="none",
                                                      sampling="without_replacement", n_jobs=n_jobs, progress=False),
        "gt_improved": lambda: group_testing_shapley(game, budget, seed=seed, variant="improved", centering="linear",
                                                     sampling="without_replacement", n_jobs=n_jobs, progress=False),
        "all_s": lambda: all_s_influence(*data, budget, seed=seed, C=C, progress=False),
        "all_s_first_order": lambda: all_s_influence(*data, budget, seed=seed, C=C, approximation="influence",
                                                     utility_change="linear", progress=False),
        "all_s_influence_evaluated": lambda: all_s_influence(*data, budget, seed=seed, C=C, approximation="influence",
                                                             utility_change="evaluate", progress=False),
    }
    unknown = set(methods) - set(calls)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; choose among {sorted(calls)}.")
    return [_timed(key, calls[key], repetition, seed) for key in methods]


def run_deterministic(game: GameLike, data: IrisSplit, *, C: float) -> list[MethodRun]:
    """Largest-S influence (the paper's formula, normalised by :math:`C_U`) and its exact-LOO counterpart."""
    # the influence module's U is unshifted: its U(empty) is -log 2 (only U(I) - U(empty) enters C_U)
    return [_timed("largest_s", lambda: largest_s_influence(*data, C=C, empty_utility=-LN2)),
            _timed("loo_exact", lambda: leave_one_out_normalised(game))]


def repetition_seeds(seed: int, n_repetitions: int) -> list[int]:
    """``n_repetitions`` distinct, reproducible seeds derived from ``seed``."""
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(n_repetitions)]


def _repetition_runs(game: GameLike, data: IrisSplit, C: float, budget: int, seed: int, repetition: int,
                     methods: Sequence[str]) -> list[MethodRun]:
    """One repetition of :func:`run_all` (a task of its workers: each times its own CPU)."""
    return run_methods(game, data, C=C, budget=budget, seed=seed, repetition=repetition, methods=methods)


def run_all(game: GameLike, data: IrisSplit, *, C: float, budget: int, seed: int, n_repetitions: int,
            n_repetitions_all_s: int | None = None, n_jobs: int = 1) -> list[MethodRun]:
    """Every method: the cheap randomised ones ``n_repetitions`` times, all-S in the first
    ``n_repetitions_all_s`` of them (default all; its fits cost ~100x more), with the paper's influence
    function (``all_s_first_order``), the same with the utility evaluated (``all_s_influence_evaluated``)
    and with this package's Newton update (``all_s``).

    ``n_jobs`` worker processes share the repetitions (-1: every core); each
    method runs on one process and times its own CPU, and the values do not
    depend on ``n_jobs``.
    """
    n_all_s = n_repetitions if n_repetitions_all_s is None else n_repetitions_all_s
    if not 1 <= n_all_s <= n_repetitions:
        raise ValueError(f"n_repetitions_all_s must be in 1..n_repetitions={n_repetitions}, got {n_all_s}.")
    n_jobs = check_n_jobs(n_jobs)
    runs = run_deterministic(game, data, C=C)
    seeds = repetition_seeds(seed, n_repetitions)
    tasks = []
    for repetition in range(n_repetitions):
        methods = (["permutation", "gt_paper", "gt_paper_wor", "gt_improved"]
                   + ["all_s_first_order", "all_s", "all_s_influence_evaluated"] * (repetition < n_all_s))
        tasks.append((game, data, C, budget, seeds[repetition], repetition, methods))
    for part in parallel_map(_repetition_runs, tasks, n_jobs=n_jobs, progress=progress, desc="repetitions"):
        runs += part
    return runs


# ------------------------------------------------------------------------------------- (b) at Theorem 3's count

#: Key of group testing (Algorithm 1 as published) run at Theorem 3's count of tests.
THEOREM_KEY = "gt_paper_theorem3"


def utility_table(game: GameLike) -> np.ndarray:
    r"""Every coalition's utility, indexed by its bit code :math:`\sum_{i \in S} 2^i` (:math:`2^N` evaluations).

    Parameters
    ----------
    game : GameLike

    Returns
    -------
    numpy.ndarray
        ``(2^N,)`` utilities, as :func:`~shapley_research.exact_shapley` enumerates them.
    """
    from ...estimators import coalition_utilities

    return coalition_utilities(game, max_players=EXACT_MAX_PLAYERS, progress=False)


def _players(table: np.ndarray) -> int:
    """``N`` of a table of ``2^N`` utilities; ValueError otherwise."""
    table = np.asarray(table)
    n = int(np.log2(len(table))) if table.ndim == 1 and len(table) > 1 else 0
    if n < 2 or len(table) != 1 << n:
        raise ValueError(f"table must hold the 2^N utilities of a game of N >= 2 players, got shape {table.shape}.")
    return n


def table_game(table: np.ndarray) -> GameLike:
    """The game whose utilities are ``table`` (from :func:`utility_table`): a lookup per coalition.

    Parameters
    ----------
    table : numpy.ndarray
        ``(2^N,)`` utilities indexed by bit code.

    Returns
    -------
    GameLike
        A vectorised game of ``N`` players.
    """
    from ...games import as_game

    n = _players(table)
    powers = (1 << np.arange(n)).astype(np.int64)
    return as_game(lambda masks: table[masks.astype(np.int64) @ powers], n, vectorized=True)


def theorem3_tests(table: np.ndarray, epsilon: float, delta: float) -> int:
    """Theorem 3's count of tests for an ``(epsilon, delta)`` approximation, with the utility's range over ``table``.

    Parameters
    ----------
    table : numpy.ndarray
        ``(2^N,)`` utilities (:func:`utility_table`).
    epsilon, delta : float
        As :func:`~shapley_research.group_testing_sample_size`.

    Returns
    -------
    int
    """
    from ... import group_testing_sample_size

    n = _players(table)
    return group_testing_sample_size(epsilon, delta, n, float(np.ptp(table)), variant="paper")


def _theorem3_repetition(table: np.ndarray, tests: int, seed: int, repetition: int) -> MethodRun:
    """One repetition of :func:`theorem3_runs` (a task of its workers: the sampling is forced in the worker)."""
    from ...estimators import sampling_forced

    game = table_game(table)
    with sampling_forced():  # Theorem 3's count exceeds 2^N: sample as published, do not enumerate
        return _timed(THEOREM_KEY, lambda: group_testing_shapley(game, tests + 2, seed=seed, variant="paper",
                                                                  centering="none", sampling="independent",
                                                                  progress=False), repetition, seed)


def theorem3_runs(table: np.ndarray, *, epsilon: float, delta: float, seed: int, n_repetitions: int,
                  n_jobs: int = 1) -> list[MethodRun]:
    r"""(b) at its own guarantee: Algorithm 1 as published with Theorem 3's count of tests, ``n_repetitions`` times.

    The count :math:`T(\epsilon, \delta, N, r)` (:func:`theorem3_tests`; ``r``
    the utility's range over every coalition) exceeds the :math:`2^N`
    coalitions of a small game, so the tests are read from the table of all
    utilities (:func:`table_game`) and drawn as published, independently,
    with the small-game enumeration switched off. Seeds come from a stream
    of their own (``SeedSequence([seed, 3])``), apart from the common
    budget's repetitions.

    Parameters
    ----------
    table : numpy.ndarray
        ``(2^N,)`` utilities (:func:`utility_table`).
    epsilon, delta : float
        The approximation Theorem 3's count is for.
    seed : int
        The experiment's seed.
    n_repetitions : int
        Runs, at least 2 (an interval needs two).
    n_jobs : int
        Worker processes (-1: every core); the values do not depend on it.

    Returns
    -------
    list of MethodRun
        Key :data:`THEOREM_KEY`, one per repetition.
    """
    n_repetitions = check_int(n_repetitions, "n_repetitions", minimum=2)
    tests = theorem3_tests(table, epsilon, delta)
    seeds = [int(s) for s in np.random.SeedSequence([seed, 3]).generate_state(n_repetitions)]
    tasks = [(table, tests, seeds[r], r) for r in range(n_repetitions)]
    return parallel_map(_theorem3_repetition, tasks, n_jobs=check_n_jobs(n_jobs), progress=progress,
                        desc="Theorem 3's count")


def theorem3_summary(runs: Sequence[MethodRun], reference: ValuationResult, table: np.ndarray, *, epsilon: float,
                     delta: float, budget: int) -> dict:
    r"""What Theorem 3 promises and what its runs gave.

    Parameters
    ----------
    runs : sequence of MethodRun
        Runs of every method; those of :data:`THEOREM_KEY` are read.
    reference : ValuationResult
        The exact values.
    table : numpy.ndarray
        The utilities the runs read (:func:`utility_table`).
    epsilon, delta : float
        As :func:`theorem3_runs`.
    budget : int
        The common budget of the other methods.

    Returns
    -------
    dict
        ``tests``, ``n_coalitions`` (:math:`2^N`), ``epsilon``, ``delta``,
        ``utility_range``, ``times_common_budget``, ``n_repetitions``,
        ``within_epsilon`` (repetitions with :math:`\|\hat s - s\|_2 \le
        \epsilon`, the theorem's event, promised with probability
        :math:`\ge 1 - \delta`) and ``max_l2_error``.
    """
    errors = [float(np.linalg.norm(run.result.values - reference.values)) for run in runs if run.key == THEOREM_KEY]
    tests = theorem3_tests(table, epsilon, delta)
    return {"tests": tests, "n_coalitions": len(table), "epsilon": float(epsilon), "delta": float(delta),
            "utility_range": float(np.ptp(table)),
            "times_common_budget": tests / budget, "n_repetitions": len(errors),
            "within_epsilon": int(sum(e <= epsilon for e in errors)), "max_l2_error": max(errors, default=float("nan"))}
