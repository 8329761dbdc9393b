r"""Compressive permutation sampling (paper Algorithm 2)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
from numpy.typing import NDArray

from ._l1_homotopy import HomotopyError, l1_homotopy
from ._sampling._driver import Run, Sampler, SamplingOptions, SamplingSpec, drive
from ._sampling._loop import Anchors, MeanState, aux_rng
from .._validation import check_choice, check_float, check_game, check_int, check_solver
from ._permutation import documents_sampling_options, marginal_contributions, random_permutations
from ..games import GameLike
from ..result import ValuationResult

__all__ = ["compressive_shapley", "bernoulli_matrix", "l1_recovery"]


def bernoulli_matrix(rng: np.random.Generator, n_measurements: int, n_players: int) -> NDArray[np.float64]:
    r"""Random float64 ``(M, N)`` matrix (``M = n_measurements``, ``N = n_players``) with entries
    :math:`\pm 1/\sqrt M` with equal probability."""
    signs = rng.integers(0, 2, size=(n_measurements, n_players), dtype=np.int8) * 2 - 1
    return signs / np.sqrt(n_measurements)


#: Relative size of a residual that rounding alone explains (to ``|y|``): the centre is then the answer.
ROUNDING_RESIDUAL = 1e-10


def l1_recovery(matrix: np.ndarray, measurements: np.ndarray, centre: np.ndarray, epsilon: float,
                solver: str = "CLARABEL", *,
                method: Literal["homotopy", "cvxpy"] = "homotopy") -> tuple[np.ndarray, str]:
    r"""Solve :math:`\min \|\Delta\|_1` s.t. :math:`\|A(c + \Delta) - y\|_2 \le \epsilon`; return ``c + Delta``.

    ``method="homotopy"`` follows the lasso path to the point whose residual
    is exactly ``epsilon`` (:func:`~shapley_research.estimators._l1_homotopy.l1_homotopy`:
    exact up to rounding, no solver tolerance, and certified by the lasso
    optimality conditions); ``"cvxpy"`` solves the second-order cone program
    with the cvxpy ``solver``. Returns the values and a status: ``"optimal"``
    for the homotopy, cvxpy's status otherwise. Where the homotopy cannot
    certify its answer (degenerate columns, as repeated columns of a tiny
    ``A``, make the solution non-unique) cvxpy solves the problem instead and
    the status says so. Where the centre's residual is within
    :data:`ROUNDING_RESIDUAL` of the measurements' norm (rounding alone
    explains it), the centre is the answer.
    """
    method = cast(Literal["homotopy", "cvxpy"], check_choice(method, "method", {"homotopy", "cvxpy"}))
    # A residual at the rounding of the measurements is no signal: where every player is worth the mean value
    # (U(S) = c |S|) the centre explains the measurements, they do not vary, epsilon is 0, and an exact fit
    # would chase rounding noise to the end of the path.
    predicted = matrix @ centre
    scale = max(float(np.linalg.norm(measurements)), float(np.linalg.norm(predicted)))
    if float(np.linalg.norm(measurements - predicted)) <= ROUNDING_RESIDUAL * scale:
        return centre.copy(), "optimal"
    if method == "homotopy":
        try:
            delta, _ = l1_homotopy(matrix, measurements - predicted, epsilon)
            return centre + delta, "optimal"
        except HomotopyError as exc:
            if exc.infeasible:
                raise RuntimeError(f"compressive recovery failed: {exc} Try a larger epsilon.") from exc
            values, status = l1_recovery(matrix, measurements, centre, epsilon, solver, method="cvxpy")
            return values, f"{status} (cvxpy {solver}: {exc})"
    import cvxpy as cp

    scale = max(float(np.abs(centre).max()), float(np.abs(measurements).max()), 1e-12)
    delta = cp.Variable(matrix.shape[1])
    residual = matrix @ (centre / scale + delta) - measurements / scale
    problem = cp.Problem(cp.Minimize(cp.norm1(delta)), [cp.norm2(residual) <= epsilon / scale])
    try:
        problem.solve(solver=solver)
    except cp.error.SolverError as exc:
        raise RuntimeError(f"solver {solver} failed on the compressive recovery problem: {exc}") from exc
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or delta.value is None:
        raise RuntimeError(
            f"compressive recovery is {problem.status} for solver {solver} (epsilon={epsilon:.3g}); "
            "try a larger epsilon or another solver."
        )
    return centre + np.asarray(delta.value) * scale, problem.status


MAX_MEASUREMENT_ENTRIES = 2**25  # M x N of the measurement matrix: 256 MiB of float64 (N = 8,192 at M = N / 2)


@documents_sampling_options
def compressive_shapley(game: GameLike, budget: int | None, seed: int | np.random.SeedSequence | None = None,
                        n_measurements: int | None = None, *, epsilon: float | None = None,
                        recovery: Literal["homotopy", "cvxpy"] = "homotopy", solver: str = "CLARABEL",
                        batch_size: int | None = None, n_jobs: int | None = None, progress: bool | None = None,
                        empty_utility: float | None = None, target_stderr: float | None = None,
                        target_rank_correlation: float | None = None, checkpoint: str | os.PathLike[str] | None = None,
                        checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""Shapley values by compressive permutation sampling (paper Algorithm 2).

    Draws a Bernoulli matrix :math:`A \in \{\pm 1/\sqrt M\}^{M \times N}` and
    ``T`` random permutations; with the marginal contributions
    :math:`\phi^t` of each permutation, the measurements are
    :math:`\bar y = \frac1T \sum_t A\phi^t`. Around the uniform split
    :math:`\bar s = (U(D) - U(\emptyset))/N \cdot \mathbf 1` it recovers

    .. math::

        \Delta s^* = \arg\min_{\Delta s} \|\Delta s\|_1 \quad \text{s.t.}\quad
        \|A(\bar s + \Delta s) - \bar y\|_2 \le \epsilon,
        \qquad \hat s = \bar s + \Delta s^*,

    which exploits approximate sparsity of ``s - s_bar`` (Theorem 4). The
    running statistics are ``O(N + M)``; the matrix ``A`` is ``O(MN)`` (8 bytes
    an entry), and the l1 recovery passes over it once per knot of its path
    (up to about ``2 min(M, N)`` knots) and keeps a ``min(M, N)`` square factor:
    inherently larger than the ``O(N)`` of the other sampling estimators, so
    ``M N`` is capped at :data:`MAX_MEASUREMENT_ENTRIES` (``N = 8,192`` at the
    default ``M``). Larger games need a smaller ``n_measurements`` or another
    estimator.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)`` (and optionally
        ``evaluate_prefixes``).
    budget : int or None
        Utility evaluations: ``U(D)`` and ``U(empty)`` once, then ``N`` per
        permutation. ``None`` (no cap) only with a ``target_stderr`` or
        ``target_rank_correlation``.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the permutations and of the matrix ``A``.
    n_measurements : int, optional
        ``M``, the rows of ``A``. Theorem 4 asks
        ``M >= C'(K log(N / 2K) + log(2 / delta))`` for ``K``-sparse values
        with an unknown constant; the default ``ceil(N / 2)`` is a middle
        ground (``M = N`` reduces to l1-shrunk permutation sampling).
    epsilon : float, optional
        Radius of the measurement constraint. The paper leaves it open; by
        default it is the estimated noise level of the measurements,
        :math:`\sqrt{\sum_m \widehat{\mathrm{Var}}(\bar y_m)}`, so the true
        values are feasible with good probability (0 with a single permutation).
    recovery : {"homotopy", "cvxpy"}, default "homotopy"
        How the l1 problem is solved. ``"homotopy"`` follows the lasso path
        :math:`\arg\min \frac12\|A(\bar s + \Delta) - \bar y\|_2^2 +
        \lambda\|\Delta\|_1` from :math:`\Delta = 0` down to the knot
        segment where the residual reaches :math:`\epsilon` (by Lagrange
        duality that point solves the problem above): exact up to rounding,
        about ``0.15 s`` for ``M x N = 500 x 1000`` on one core (the
        Bernoulli matrix is stored as int8 signs; the loop is compiled by
        numba: about 10 s once per machine, then loaded from numba's cache
        in well under a second).
        ``"cvxpy"`` states the second-order cone program in cvxpy, for
        verification or other solvers; on the same problem CLARABEL took 7-10 s
        and SCS about 3 s, agreeing with the homotopy to about ``1e-7`` and
        ``1e-5`` of the largest value (the solvers' tolerances). Either way the recovery is a
        fixed cost that grows with ``N`` and ``M``, not with the budget.
    solver : str, default "CLARABEL"
        cvxpy solver of the second-order cone program: for
        ``recovery="cvxpy"``, and for the homotopy where it cannot certify
        its answer (degenerate matrices, e.g. repeated columns when ``M`` is
        tiny; ``info["status"]`` then says so).
    batch_size, n_jobs, progress, empty_utility
        As in :func:`permutation_shapley`.
{sampling}
        Both targets apply to the permutation-sampling estimate of the values
        (``info["permutation_values"]`` and ``info["permutation_stderr"]``),
        which the loop accumulates anyway: the l1 recovery runs once, at the
        end, never per batch.

    Returns
    -------
    ValuationResult
        ``info["permutation_values"]`` holds the plain permutation-sampling
        estimate from the same permutations, for comparison at no extra cost.
    """
    n = check_game(game)
    recovery = cast(Literal["homotopy", "cvxpy"], check_choice(recovery, "recovery", {"homotopy", "cvxpy"}))
    solver = check_solver(solver)  # the homotopy falls back to it on degenerate matrices
    options = SamplingOptions.checked(
        game, "compressive_shapley", batch_size=batch_size, n_jobs=n_jobs, progress=progress,
        empty_utility=empty_utility, target_stderr=target_stderr, target_rank_correlation=target_rank_correlation,
        checkpoint=checkpoint, checkpoint_interval=checkpoint_interval)
    m = _check_measurements(n_measurements, n)
    epsilon = None if epsilon is None else check_float(epsilon, "epsilon", minimum=0.0)
    return drive(CompressiveSpec(method="compressive", n_players=n, dim=n + m, per_unit=n, unit_name="permutation",
                                 desc="compressive sampling", progress_unit="perm", needs_full=True, n_measurements=m,
                                 epsilon=epsilon, recovery=recovery, solver=solver), game, budget, seed, options)


def _check_measurements(n_measurements: object, n: int) -> int:
    """``M``: ``ceil(N / 2)`` by default; ``M N`` at most :data:`MAX_MEASUREMENT_ENTRIES`."""
    m = int(np.ceil(n / 2)) if n_measurements is None else check_int(n_measurements, "n_measurements", minimum=1)
    if m * n > MAX_MEASUREMENT_ENTRIES:
        raise ValueError(
            f"n_measurements={m} x {n} players is a measurement matrix of {m * n:,} entries; compressive_shapley "
            f"takes at most {MAX_MEASUREMENT_ENTRIES:,} (its matrix and l1 recovery grow as M x N, unlike the "
            "O(N) estimators). Pass a smaller n_measurements (Theorem 4 asks about K log(N / 2K) for K-sparse "
            "values), or use permutation_shapley or group_testing_shapley on a game this large.")
    return m


@dataclass(frozen=True, kw_only=True)
class CompressiveSpec(SamplingSpec):
    """:func:`compressive_shapley` for :func:`~._sampling._driver.drive`: a unit is a permutation, its sample the
    marginal contributions and their ``M`` measurements; the l1 recovery runs once, at the end (no record)."""

    n_measurements: int
    epsilon: float | None
    recovery: Literal["homotopy", "cvxpy"]
    solver: str

    def fingerprint_options(self, n_units: int | None) -> dict:
        return {"n_measurements": self.n_measurements}

    def enumeration_info(self, empty_utility: float | None) -> dict:
        return {"n_measurements": self.n_measurements}

    def start(self, game: GameLike, run: Run, anchors: Anchors | None) -> Sampler:
        n, anchors = self.n_players, cast(Anchors, anchors)  # both anchors are always evaluated
        matrix = bernoulli_matrix(aux_rng(run.entropy), self.n_measurements, n)

        # a closure, as before the driver: with a functools.partial of a module-level function instead, Dask's
        # workers rounded phi @ matrix.T differently at N = 61 (tests/estimators/test_parallel.py)
        def sample_batch(rng: np.random.Generator, size: int) -> tuple[np.ndarray, int]:
            perms = random_permutations(rng, size, n)
            phi = marginal_contributions(game, perms, anchors.empty)
            return np.hstack([phi, phi @ matrix.T]), perms.size

        return Sampler(sample_batch, {}, watch=slice(0, n),
                       context={"anchors": anchors, "matrix": matrix, "batch_size": run.batch_size})

    def estimates(self, sampler: Sampler, state: MeanState) -> tuple[np.ndarray, np.ndarray | None, dict]:
        n, anchors, matrix = self.n_players, sampler.context["anchors"], sampler.context["matrix"]
        phi_bar, y_bar = state.mean[:n], state.mean[n:]
        epsilon = self.epsilon
        if epsilon is None:
            epsilon = float(np.sqrt(np.sum(state.variance[n:]) / state.count)) if state.count > 1 else 0.0
        centre = np.full(n, (anchors.full - anchors.empty) / n)
        values, status = l1_recovery(matrix, y_bar, centre, epsilon, solver=self.solver, method=self.recovery)
        return values, None, {"n_measurements": self.n_measurements, "epsilon": epsilon, "recovery": self.recovery,
                              "status": status, "permutation_values": phi_bar, "permutation_stderr": state.stderr[:n],
                              "empty_utility": anchors.empty, "full_utility": anchors.full,
                              "batch_size": sampler.context["batch_size"]}

    def report(self, sampler: Sampler, summary: dict, updates: dict) -> dict:
        return {**updates, **summary}

