r"""The least core (Yan & Procaccia, AAAI 2021): exact, and from sampled coalitions.

Yan and Procaccia, "If You Like Shapley Then You Will Love the Core" (AAAI
2021). With the game normalised so that the empty coalition is worth 0,
:math:`v(S) = U(S) - U(\emptyset)`, an allocation :math:`x \in \mathbb R^N`
of :math:`v(D)` is in the *core* when no coalition could do better on its own:
:math:`x(S) = \sum_{i \in S} x_i \ge v(S)` for every :math:`S`. The core may be
empty; the *least core* is the set of allocations that need the smallest
uniform subsidy :math:`e` for every coalition to accept them,

.. math::

    e^* = \min_{x,\, e}\; e \quad\text{s.t.}\quad \sum_{i \in D} x_i = v(D),\qquad
    x(S) + e \ge v(S)\quad \text{for every } \emptyset \ne S \subsetneq D,

a linear program. :math:`e^* \le 0` means the core is non-empty (every
coalition gets at least its worth, with :math:`-e^*` to spare);
:math:`e^* > 0` is what the most aggrieved coalition lacks. The least core is
a set; as pyDVL does, the values are its point of minimal Euclidean norm,

.. math::

    x^\star = \arg\min_x \|x\|_2^2 \quad\text{s.t.}\quad \sum_i x_i = v(D),\qquad
    x(S) \ge v(S) - e^* - \tau \quad \text{for every constraint } S,

a strictly convex quadratic program (one solution), which, as
:math:`\|x\|^2 = \|x - \bar x\|^2 + v(D)^2 / N` on the efficiency plane with
:math:`\bar x = v(D)/N \cdot \mathbf 1`, is the least-core allocation closest
to the equal split. Players that are symmetric in the game are symmetric in
both programs, so they get equal values; a null player need not get 0 (it may
be paid to keep a coalition content), unlike under the Shapley value. The
least core is not a semivalue: it is not linear in the game, and what it
certifies is *stability* (how much any coalition would gain by leaving), not
an average marginal contribution.

Departures and choices, each documented where it is made:

* the constraints are those of the non-empty proper coalitions (the classical
  strong epsilon-core of Maschler, Peleg and Shapley), so :math:`e^*` can be
  negative; pyDVL also constrains :math:`\emptyset` and :math:`D`, which
  bounds its subsidy below by :math:`\max(0, U(\emptyset))` (unless
  ``non_negative_subsidy`` is off there);
* the game is shifted by :math:`U(\emptyset)` (the cooperative-game
  convention :math:`v(\emptyset) = 0`, and the efficiency of the Shapley
  estimators here, :math:`\sum_i x_i = U(D) - U(\emptyset)`): without it
  the least core of ``U + c`` would not be that of ``U``;
* :math:`\tau` (``tolerance`` times the largest :math:`|v|`) keeps the
  quadratic program strictly feasible for a numerical solver, since
  :math:`e^*` is known only to the linear solver's accuracy;
* the Monte Carlo coalitions come in complementary pairs (below).
"""

from __future__ import annotations

import os
import time
from typing import Literal, cast

import numpy as np
from numpy.typing import NDArray

from ._ame import _chunk_size, _evaluate
from ._banzhaf import random_coalitions
from ._large_work import announce_large_work
from ._least_core_ipm import Rows, interior_point
from ._exact import _coalition_masks, check_enumeration, utility_table
from ._sampling._loop import open_checkpoint
from ._small_games import enumeration_affordable
from .._device import check_game_jobs
from .._validation import check_choice, check_float, check_game, check_int, check_progress, check_solver
from .._threads import pinned_threads
from ..games import GameLike, game_identity
from ..result import ValuationResult

__all__ = ["exact_least_core", "least_core", "least_core_coalitions"]

#: Default ``tolerance``: the subsidy slack of the quadratic program, relative to the largest ``|v(S)|``.
DEFAULT_TOLERANCE = 1e-6
#: Largest game :func:`exact_least_core` enumerates by default (2^20 coalitions, as exact_shapley).
MAX_EXACT_PLAYERS = 20
#: How the programs are solved: the dense interior-point method, or HiGHS and cvxpy (a reference).
METHODS = ("ipm", "highs")


def least_core_coalitions(seed: int, n_pairs: int, n_players: int) -> NDArray[np.bool_]:
    r"""The ``2 n_pairs`` coalitions of a :func:`least_core` run with entropy ``seed``: complementary pairs.

    Row ``2k`` is a coalition drawn uniformly among all :math:`2^N` (each
    player in with probability 1/2, :func:`~shapley_research.estimators.random_coalitions`
    from the stream ``default_rng(SeedSequence(seed))``) and row ``2k + 1``
    is its complement.

    Returns
    -------
    numpy.ndarray of bool, shape (2 n_pairs, n_players)
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    drawn = random_coalitions(rng, n_pairs, n_players)
    masks = np.empty((2 * n_pairs, n_players), dtype=bool)
    masks[0::2], masks[1::2] = drawn, ~drawn
    return masks


def exact_least_core(game: GameLike, *, max_players: int = MAX_EXACT_PLAYERS, chunk_size: int = 2**16,
                     empty_utility: float | None = None, tolerance: float = DEFAULT_TOLERANCE,
                     method: Literal["ipm", "highs"] = "ipm", solver: str = "CLARABEL",
                     progress: bool | None = None) -> ValuationResult:
    r"""The least core's minimal-norm allocation, from all :math:`2^N` coalitions.

    Evaluates every coalition (in chunks, vectorised), then solves the linear
    program of the least core over its :math:`2^N - 2` constraints and the
    quadratic program of its point of minimal norm (module docstring;
    :func:`least_core` for how they are solved).

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    max_players : int, default 20
        Refuse games with more players: ``2^N`` evaluations and a linear
        program of ``2^N`` rows (at ``N = 20`` about a million rows and ten
        million nonzeros). Use :func:`least_core` on larger games.
    chunk_size : int, default 65536
        Coalitions evaluated per call to ``game.evaluate``.
    empty_utility : float, optional
        Use this value as ``U(empty)`` instead of evaluating it.
    tolerance : float, default 1e-6
        Subsidy slack :math:`\tau` of the quadratic program, relative to the
        largest :math:`|v(S)|`: the values satisfy every constraint with the
        subsidy :math:`e^* + \tau` (to the solver's accuracy).
    method : {"ipm", "highs"}, default "ipm"
        How the two programs are solved (:func:`least_core`).
    solver : str, default "CLARABEL"
        cvxpy solver of the quadratic program with ``method="highs"``.
    progress : bool, optional
        A progress bar over the utility evaluations (default: in terminals and
        notebooks, and in logs once the run has lasted 30 s; ``False``: none).

    Returns
    -------
    ValuationResult
        ``method="exact_least_core"``, ``n_evaluations = 2^N`` (``2^N - 1``
        with ``empty_utility``), standard errors of 0; ``info["subsidy"]``
        is :math:`e^*` in the game's units (:math:`\le 0`: the core is
        non-empty), with ``lp_status``, ``qp_status``, ``n_constraints``,
        ``tolerance``, ``qp_rounds``, ``qp_constraints`` and the anchors
        (:func:`least_core`).
    """
    start = time.perf_counter()
    n = check_game(game)
    chunk_size, empty_utility = check_enumeration(
        n, max_players, chunk_size, empty_utility, method="exact_least_core",
        alternative="Use least_core(game, budget, seed), which samples coalitions, or raise max_players "
                    "deliberately.")
    tolerance = check_float(tolerance, "tolerance", minimum=0.0, strict=True)
    method, solver = cast(Literal["ipm", "highs"], check_choice(method, "method", METHODS)), check_solver(solver)
    utilities, n_evaluations = utility_table(game, n, chunk_size, empty_utility, progress, "exact least core")
    proper = _coalition_masks(1, (1 << n) - 1, n)  # bit codes 1 .. 2^N - 2: the non-empty proper coalitions
    values, info = solve_least_core(proper, utilities[1:-1], float(utilities[-1]), float(utilities[0]),
                                    tolerance=tolerance, method=method, solver=solver)
    return ValuationResult(values=values, n_evaluations=n_evaluations, method="exact_least_core",
                           wall_time=time.perf_counter() - start, stderr=np.zeros(n), info=info)


def least_core(game: GameLike, budget: int, seed: int | np.random.SeedSequence | None = None, *,
               empty_utility: float | None = None, tolerance: float = DEFAULT_TOLERANCE,
               method: Literal["ipm", "highs"] = "ipm", solver: str = "CLARABEL", chunk_size: int | None = None,
               n_jobs: int | None = None, progress: bool | None = None,
               checkpoint: str | os.PathLike[str] | None = None,
               checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""The least core from sampled coalitions (Yan & Procaccia's Monte Carlo least core).

    Evaluates :math:`U(D)`, :math:`U(\emptyset)` and ``m`` coalitions, then
    solves the least core's programs (module docstring) with only the
    sampled coalitions' constraints. Yan and Procaccia (Theorem 2) show that
    with enough i.i.d. coalitions from a distribution :math:`\mathcal D`, the
    sampled least core is, with high probability, *probably approximately*
    in the least core: all but an :math:`\varepsilon` share (under
    :math:`\mathcal D`) of the coalitions accept it with the subsidy
    :math:`e`. Here :math:`\mathcal D` is uniform over all :math:`2^N`
    coalitions (each player in with probability 1/2, as pyDVL draws them), so
    the guarantee speaks of the share of *all* coalitions, as the exact least
    core weighs them alike; a size-uniform draw would weigh the few small and
    large coalitions more than they count there. Most uniform coalitions
    have about :math:`N/2` players, so for large ``N`` the small coalitions,
    whose constraints say most about single points, are seldom seen.

    *Complementary pairs.* The coalitions are drawn as pairs
    :math:`(S, D \setminus S)` (:func:`least_core_coalitions`; each member is
    still uniform, so the guarantee holds with pairs as the i.i.d. samples).
    One pair bounds the subsidy, :math:`2e \ge v(S) + v(D \setminus S) - v(D)`,
    whereas i.i.d. coalitions leave the linear program unbounded
    (:math:`e \to -\infty`) until some non-negative combination of them is
    constant, which small budgets often miss (pyDVL then fails). A drawn pair
    :math:`(\emptyset, D)` (probability :math:`2^{1-N}`) is evaluated but
    constrains nothing.

    *Solving.* ``method="ipm"`` (default) solves both programs by a dense
    primal-dual interior-point method (:mod:`._least_core_ipm`): the rows
    are coalition indicators, half full, on which sparse solvers only lose;
    each of its 20-40 steps costs one ``m x N^2`` Gram product and an
    ``N x N`` Cholesky factor, on one BLAS thread (the same bits anywhere).
    ``method="highs"`` is the reference: the linear program by HiGHS
    (``scipy.optimize.linprog``), the quadratic one by the cvxpy ``solver``
    with constraint generation (first the rows the linear program holds
    tight, then every row the last solution violates, until none is; each
    round relaxes the full program, so that end is its solution). HiGHS
    grows about as :math:`N^{3.5}` on these dense rows (40 s at
    ``N = 400``, ``m = 10 N``, against 2 s for both programs here). Each
    Newton direction is refined iteratively (near the solution the normal
    equations' condition passes :math:`10^{14}`) and the dual residual is
    measured relative to its terms (:mod:`._least_core_ipm`); before both,
    the method stalled on 6 to 22% of sampled airport, majority and
    weighted-voting games at ``tolerance`` 1e-5 to 1e-7. Where it still
    stalls or overflows, the run falls back to the reference and says so:
    ``info["method"] == "highs"`` and ``info["fallback"]`` holds the reason. The solve's cost grows as
    ``budget x N^2`` (about ``N^3`` at a budget of ``10 N``: 35 s at
    ``N = 1,000``, half an hour at 5,000); one expected to take over ten
    minutes or 4 GiB is announced by a ``UserWarning`` before any evaluation.

    *Sensitivity to* :math:`\tau`. With ``m`` of several ``N`` sampled rows
    the least core is close to a single point, and the point of minimal
    norm of its :math:`\tau`-relaxation moves with :math:`\tau` by far more
    than :math:`\tau` (at ``N = 200``, ``m = 10 N``, a concave game: about
    5% of the values from ``tolerance=1e-6`` to ``1e-7``). The ranking and
    the subsidy are stable; the values' small digits are a property of the
    selection rule, not of the solver. Exact least cores of small games
    are far less sensitive (the tests pin them to ``1e-5``).

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    budget : int
        Utility evaluations: ``U(D)`` and ``U(empty)`` (unless
        ``empty_utility`` is given), then two per pair; an odd remainder is
        left unspent (``info["unspent_evaluations"]``). At least one pair.
        A budget covering every coalition (``N <= 20``) gives
        :func:`exact_least_core`'s values instead (``info["stopped_by"] ==
        "enumeration"``). Yan and Procaccia's bound grows as
        :math:`O((N + \log(1/\delta)) / \varepsilon^2)` coalitions; a few
        ``N`` pairs is a usual start.
    seed : int or numpy.random.SeedSequence, optional
        Entropy of the coalitions; ``None`` draws one (kept on the result).
    empty_utility : float, optional
        Use this value as ``U(empty)`` instead of evaluating it.
    tolerance : float, default 1e-6
        Subsidy slack :math:`\tau` of the quadratic program, relative to the
        largest :math:`|v(S)|`: the values satisfy every sampled constraint
        with the subsidy :math:`e^* + \tau` (to the solver's accuracy, about
        ``1e-8`` relative; rows outside the final quadratic program to
        :math:`\tau / 100`).
    solver : str, default "CLARABEL"
        cvxpy solver of the quadratic program.
    chunk_size : int, optional
        Coalitions per call to ``game.evaluate``: by default up to 2**24 mask
        cells, 1,024 with a checkpoint, four calls per worker with ``n_jobs``.
        The values do not depend on it.
    n_jobs : int, optional
        Chunks evaluated in parallel through joblib (as
        :func:`~shapley_research.ame`); the coalitions are drawn first, so the
        values are the same bits for any ``n_jobs``. The solve is serial.
    progress : bool, optional
        A progress bar over the utility evaluations. It never changes a number.
    checkpoint, checkpoint_interval
        As in :func:`~shapley_research.ame`: the file holds the utilities
        evaluated so far (the anchors first); a resumed run gives exactly the
        values of an uninterrupted one. ``tolerance`` and ``solver`` may
        differ between the two calls; the game, ``budget`` and
        ``empty_utility`` may not.

    Returns
    -------
    ValuationResult
        ``method="least_core"``, the seed, no standard error, ``n_samples``
        the sampled coalitions; ``info``: ``subsidy`` (:math:`e^*` in the
        game's units), ``lp_status`` and ``qp_status`` (the solvers' words),
        ``n_constraints`` (the rows of the linear program),
        ``qp_constraints`` and ``qp_rounds`` (of the constraint generation),
        ``tolerance``, ``empty_utility``, ``full_utility``,
        ``resumed_samples`` and ``unspent_evaluations``.
    """
    start = time.perf_counter()
    n = check_game(game)
    if empty_utility is not None:
        empty_utility = check_float(empty_utility, "empty_utility")
    fixed = 1 + (empty_utility is None)
    budget = check_int(budget, "budget", minimum=0)
    if budget < fixed + 2 and not enumeration_affordable(n, budget, empty_utility):
        raise ValueError(f"budget={budget} does not pay for U(D){'' if empty_utility is not None else ', U(empty)'} "
                         f"and one complementary pair of coalitions: least_core needs at least {fixed + 2}.")
    tolerance = check_float(tolerance, "tolerance", minimum=0.0, strict=True)
    method, solver = cast(Literal["ipm", "highs"], check_choice(method, "method", METHODS)), check_solver(solver)
    n_jobs = check_game_jobs(game, n_jobs, "least_core")
    progress = check_progress(progress)
    n_pairs = (budget - fixed) // 2
    chunk = _chunk_size(chunk_size, fixed + 2 * n_pairs, n, checkpoint, n_jobs)
    if enumeration_affordable(n, budget, empty_utility):
        return _enumerated(game, budget, seed, empty_utility, tolerance, method, solver, progress, start)
    warn_if_the_solve_is_large(2 * n_pairs, n, method)
    entropy, store = open_checkpoint(checkpoint, seed, dim=fixed + 2 * n_pairs, interval=checkpoint_interval,
                                     fingerprint={"method": "least_core", "n_players": n, "budget": budget,
                                                  "empty_utility": empty_utility, "game": game_identity(game)})
    resumed = store.count if store is not None else 0
    masks = np.vstack([np.ones((1, n), dtype=bool), np.zeros((fixed - 1, n), dtype=bool),
                       least_core_coalitions(entropy, n_pairs, n)])
    utilities = _evaluate(game, masks, chunk, progress, store, n_jobs)
    empty = float(utilities[1]) if empty_utility is None else empty_utility
    sampled, sampled_utilities = masks[fixed:], utilities[fixed:]
    sizes = sampled.sum(axis=1)
    proper = (sizes > 0) & (sizes < n)
    values, info = solve_least_core(sampled[proper], sampled_utilities[proper], float(utilities[0]), empty,
                                    tolerance=tolerance, method=method, solver=solver)
    info.update(resumed_samples=max(0, resumed - fixed), unspent_evaluations=budget - fixed - 2 * n_pairs)
    return ValuationResult(values=values, n_evaluations=fixed + 2 * n_pairs, method="least_core", seed=entropy,
                           wall_time=time.perf_counter() - start, n_samples=2 * n_pairs, info=info)


def _enumerated(game: GameLike, budget: int, seed: object, empty_utility: float | None, tolerance: float,
                method: Literal["ipm", "highs"], solver: str, progress: bool | None, start: float) -> ValuationResult:
    """:func:`least_core` where the budget covers every coalition: :func:`exact_least_core`'s values."""
    from .._validation import check_seed

    entropy = check_seed(seed)
    exact = exact_least_core(game, max_players=game.n_players, empty_utility=empty_utility, tolerance=tolerance,
                             method=method, solver=solver, progress=progress)
    info = {**exact.info, "stopped_by": "enumeration", "resumed_samples": 0,
            "unspent_evaluations": budget - exact.n_evaluations}
    return ValuationResult(values=exact.values, n_evaluations=exact.n_evaluations, method="least_core",
                           seed=entropy, wall_time=time.perf_counter() - start, stderr=np.zeros(game.n_players),
                           info=info)


#: The interior-point method's cost model, from N = 1,000 with 10 N rows (35 s, 0.4 GB on this project's 2-core
#: machine): about 30 steps of one ``m x N^2`` Gram product each, at some 2e10 multiply-adds a second.
IPM_STEPS, IPM_RATE = 30, 2e10


def warn_if_the_solve_is_large(n_rows: int, n_players: int, method: str) -> None:
    """A ``UserWarning`` before any evaluation where the dense interior-point solve will take long or much memory.

    The method holds the ``m x N`` rows as float64 and forms an ``N x N`` Gram matrix from all of them at each
    of its ~30 steps: ``O(m N^2)`` work a step, so ``m = 10 N`` coalitions cost about ``N^3``.
    """
    if method == "ipm":
        announce_large_work("least_core", f"{n_rows:,} sampled coalitions of {n_players:,} players",
                            IPM_STEPS * n_rows * n_players**2 / IPM_RATE, 8 * n_rows * n_players,
                            "the solve grows as budget x N^2: a smaller budget, or a Shapley estimator, costs far "
                            "less.", stacklevel=3)


#: Rows added to the quadratic program are those violated by more than this share of ``tolerance``.
VIOLATION_SHARE = 0.01


def solve_least_core(masks: NDArray[np.bool_], utilities: NDArray[np.float64], full_utility: float,
                     empty_utility: float, *, tolerance: float = DEFAULT_TOLERANCE, method: str = "ipm",
                     solver: str = "CLARABEL") -> tuple[NDArray[np.float64], dict]:
    r"""The least core's minimal-norm allocation under the constraints of ``masks``, and what ``info`` reports.

    ``masks`` are non-empty proper coalitions (rows may repeat) with their
    ``utilities``; the game is normalised by ``empty_utility`` and solved in
    units of the largest :math:`|v|` (so ``tolerance`` is relative). The
    values are then shifted by a constant to make :math:`\sum_i x_i = v(D)`
    hold to rounding (the solver meets it to about ``1e-9``). Without any
    constraint (``N = 1``, or only :math:`(\emptyset, D)` pairs drawn) the
    subsidy is unbounded below: the values are the equal split and
    ``info["subsidy"]`` is ``-inf``.
    """
    n = masks.shape[1]
    total = full_utility - empty_utility
    bounds = np.asarray(utilities, dtype=float) - empty_utility
    scale = max(float(np.abs(bounds).max(initial=0.0)), abs(total)) or 1.0
    info: dict = {"n_constraints": int(masks.shape[0]), "tolerance": tolerance, "method": method,
                  "empty_utility": empty_utility, "full_utility": full_utility}
    if masks.shape[0] == 0:
        return np.full(n, total / n), {**info, "subsidy": -np.inf, "lp_status": "unconstrained",
                                       "qp_status": "unconstrained", "qp_constraints": 0, "qp_rounds": 0}
    with pinned_threads():  # one BLAS thread: the same bits anywhere, and no two pools contending for cores
        if method == "ipm":
            try:
                subsidy, x, statuses, generated = _by_interior_points(masks, bounds / scale, total / scale, tolerance)
            except (RuntimeError, FloatingPointError) as exc:  # stalled or overflowed: the reference solves it
                info.update(method="highs", fallback=f"ipm: {exc}")
                method = "highs"
        if method == "highs":
            subsidy, x, statuses, generated = _by_highs(masks, bounds / scale, total / scale, tolerance, solver)
    x += (total / scale - x.sum()) / n  # efficiency to rounding; the rows move by about 1e-10 at most
    return x * scale, {**info, "subsidy": subsidy * scale + 0.0, "lp_status": statuses[0],
                       "qp_status": statuses[1], **generated}


def _by_interior_points(masks: np.ndarray, bounds: np.ndarray, total: float,
                        tolerance: float) -> tuple[float, np.ndarray, tuple[str, str], dict]:
    """Both programs by the dense interior-point method, floating-point overflow raised rather than carried."""
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        subsidy, x, statuses = _interior_points(masks, bounds, total, tolerance)
    return subsidy, x, statuses, {"qp_constraints": int(masks.shape[0]), "qp_rounds": 1}


def _by_highs(masks: np.ndarray, bounds: np.ndarray, total: float, tolerance: float,
              solver: str) -> tuple[float, np.ndarray, tuple[str, str], dict]:
    """The linear program by HiGHS, the quadratic one by cvxpy's ``solver`` with constraint generation."""
    from scipy import sparse

    rows = sparse.csr_matrix(masks, dtype=float)
    subsidy, tight, lp_status = _minimal_subsidy(rows, bounds, total)
    x, qp_status, active, rounds = _minimal_norm(rows, bounds - subsidy - tolerance, total, tight, solver,
                                                 VIOLATION_SHARE * tolerance)
    return subsidy, x, (lp_status, qp_status), {"qp_constraints": active, "qp_rounds": rounds}


def _interior_points(masks: np.ndarray, bounds: np.ndarray, total: float,
                     tolerance: float) -> tuple[float, np.ndarray, tuple[str, str]]:
    """Both programs by the dense interior-point method (:mod:`._least_core_ipm`), in scaled units."""
    n = masks.shape[1]
    dense = masks.astype(float)
    cost = np.zeros(n + 1)
    cost[-1] = 1.0
    z, _, lp_status = interior_point(Rows(dense, True), bounds, cost, np.zeros(n + 1), np.append(np.ones(n), 0.0),
                                     total, np.append(np.full(n, total / n), 0.0))
    subsidy = float(z[-1])
    x, _, qp_status = interior_point(Rows(dense, False), bounds - subsidy - tolerance, np.zeros(n), np.ones(n),
                                     np.ones(n), total, np.full(n, total / n))
    return subsidy, x, (lp_status, qp_status)


def _minimal_subsidy(rows, bounds: np.ndarray, total: float) -> tuple[float, np.ndarray, str]:
    r""":math:`e^*` of the linear program over ``rows`` (HiGHS), the rows its solution holds tight, its status.

    The variables are :math:`(x, e)`; each row reads :math:`-x(S) - e \le -v(S)`.
    """
    from scipy import sparse
    from scipy.optimize import linprog

    m, n = rows.shape
    a_ub = sparse.hstack([-rows, -np.ones((m, 1))], format="csr")
    a_eq = np.append(np.ones(n), 0.0)[None, :]
    cost = np.zeros(n + 1)
    cost[-1] = 1.0
    result = linprog(cost, A_ub=a_ub, b_ub=-bounds, A_eq=a_eq, b_eq=[total], bounds=(None, None), method="highs")
    if result.status != 0:  # a pair bounds e, so neither unbounded nor infeasible is expected: a solver failure
        raise RuntimeError(f"least core: the linear program failed ({result.message}).")
    slack = np.asarray(result.slack)
    return float(result.x[-1]), slack <= max(1e-9, 1e-7 * float(np.abs(slack).max(initial=0.0))), "optimal"


def _minimal_norm(rows, relaxed: np.ndarray, total: float, start: np.ndarray, solver: str,
                  violation: float) -> tuple[np.ndarray, str, int, int]:
    r""":math:`\arg\min \|x\|^2` s.t. ``rows @ x >= relaxed`` and :math:`\sum x = ` ``total``, by constraint generation.

    Solves over the rows in ``start``, then adds every row the solution
    violates by more than ``violation`` and solves again, until none is
    (each round's program relaxes the full one, so a solution feasible for
    every row solves it; a row enters at most once, so it ends). Returns the
    solution, the solver's status, the rows of the last program and the rounds.
    """
    active = np.asarray(start, dtype=bool).copy()
    rounds = 0
    while True:
        rounds += 1
        x, status = _quadratic_program(rows[active], relaxed[active], total, rows.shape[1], solver)
        violated = (rows @ x < relaxed - violation) & ~active
        if not violated.any():
            return x, status, int(active.sum()), rounds
        active |= violated


def _quadratic_program(rows, bounds: np.ndarray, total: float, n: int, solver: str) -> tuple[np.ndarray, str]:
    """The minimal-norm point of ``rows @ x >= bounds``, ``sum(x) = total`` (cvxpy), and its status."""
    import cvxpy as cp

    x = cp.Variable(n)
    constraints = [cp.sum(x) == total]
    if rows.shape[0]:
        constraints.append(rows @ x >= bounds)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(x)), constraints)
    try:
        problem.solve(solver=solver)
    except cp.error.SolverError as exc:
        raise RuntimeError(f"solver {solver} failed on the least core's quadratic program: {exc}") from exc
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or x.value is None:
        raise RuntimeError(f"the least core's quadratic program is {problem.status} for solver {solver}; "
                           "try a larger tolerance or another solver.")
    return np.asarray(x.value, dtype=float), str(problem.status)
