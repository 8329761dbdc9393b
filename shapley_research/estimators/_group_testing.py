r"""Group-testing Shapley estimation (paper Algorithm 1 and Wang & Jia 2023).

Both variants draw *tests*: a size :math:`k \sim q(k) \propto 1/k + 1/(P-k)`
and a uniform coalition of that size among ``P`` players, then one utility
evaluation. With :math:`Z = \sum_k (1/k + 1/(P-k))`, Lemma 1 of the paper
gives :math:`s_i - s_j = Z\,\mathbb E[U(S)(\beta_i - \beta_j)]`.

``variant="paper"`` (Algorithm 1, ``P = N``) estimates the pairwise
differences :math:`C_{ij} = \frac{Z}{T}\sum_t u_t(\beta_{ti}-\beta_{tj})` and
recovers values from the feasibility problem
:math:`\sum_i \hat s_i = U(D) - U(\emptyset)`,
:math:`|\hat s_i - \hat s_j - C_{ij}| \le \tau`. Writing
:math:`a_i = \frac{Z}{T}\sum_t u_t\beta_{ti}`, :math:`C_{ij} = a_i - a_j`, so
:math:`\hat s = a + \frac{U(D) - U(\emptyset) - \sum a}{N}\mathbf 1` satisfies
every constraint with slack ``tau`` for any ``tau >= 0``: that closed form is
the default recovery. Only the centred vector ``a - mean(a)`` is accumulated
(``O(N)`` memory; no ``T x N`` or ``N x N`` matrix).

``variant="improved"`` (Wang & Jia 2023) adds a null player ``N+1``
(``P = N + 1``) whose value is 0, so
:math:`\hat s_i = \frac{Z}{T}\sum_t u_t(\beta_{ti} - \beta_{t,N+1})` is unbiased
directly, with no feasibility problem (and efficiency is not enforced).

*Centering.* Subtracting any function ``b(k_t)`` of the drawn size from
``u_t`` leaves both estimators unbiased, since
:math:`\mathbb E[\beta_i - \beta_j \mid k] = 0`. ``centering="linear"`` uses
:math:`b(k) = U(\emptyset) + \frac{k}{P}(U(D) - U(\emptyset))`, which removes
the large common part of the utilities and cuts the variance several-fold on
games with a large baseline utility.

*Sampling.* ``sampling="independent"`` draws every test afresh, as Algorithm 1
is published; ``sampling="without_replacement"`` (the default) reads the
coalitions of each size along random orders up to 22 players, a refinement of
this package with the same law for every test (see
:func:`group_testing_shapley`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
from numpy.typing import NDArray

from ._sampling._driver import Run, Sampler, SamplingOptions, SamplingSpec, drive
from ._sampling._loop import Anchors, MeanState, coalition_batch_size, evaluate_coalitions, evaluation_chunks
from .._validation import check_choice, check_float, check_game, check_solver
from ._sampling._subsets import SmallSides, draw_small_sides, random_subsets, small_sides_of
from ._sampling._without_replacement import (MAX_STRATUM, StratumPlan, draw_coalitions, size_rng,
                                            without_replacement_sizes)
from ._permutation import documents_sampling_options
from ..games import GameLike
from ..result import Finalizer, SamplingRecord, ValuationResult, register_finalizer

_Variant = Literal["improved", "paper"]
_Centering = Literal["none", "linear"]
_Recovery = Literal["closed_form", "cvxpy", "cvxpy_pairwise"]
_Sampling = Literal["without_replacement", "independent"]

__all__ = ["group_testing_shapley", "group_testing_size_distribution", "FeasibilityError",
           "recover_from_differences", "random_subsets"]


class FeasibilityError(RuntimeError):
    """The solver could not find a point of the group-testing feasibility problem."""


def group_testing_size_distribution(n_drawn: int) -> tuple[NDArray[np.int64], NDArray[np.float64], float]:
    r"""Sizes ``k = 1..P-1``, their probabilities ``q(k)`` and the constant ``Z``.

    ``P = n_drawn`` is the number of players coalitions are drawn from
    (``N`` for Algorithm 1, ``N + 1`` for the improved variant).

    Returns
    -------
    sizes : numpy.ndarray of int64, shape (P - 1,)
        ``1, ..., P - 1``.
    probabilities : numpy.ndarray of float64, shape (P - 1,)
        :math:`q(k) \propto 1/k + 1/(P - k)`, summing to 1.
    z : float
        The normalising constant ``Z``.
    """
    k = np.arange(1, n_drawn, dtype=float)
    weights = 1.0 / k + 1.0 / (n_drawn - k)
    z = float(weights.sum())
    return k.astype(np.int64), weights / z, z


def _draw_sizes(rng: np.random.Generator, size: int, probabilities: np.ndarray) -> np.ndarray:
    """``size`` test sizes ``k ~ q(k)`` (``probabilities[j]`` is ``q(j + 1)``), in increasing order.

    Inverse CDF on sorted uniforms (sorted keys make the search several times
    faster): as a multiset the sizes are ``size`` independent draws from ``q``,
    and nothing downstream depends on the order of the tests in a batch.
    """
    cdf = np.cumsum(probabilities)
    k = np.searchsorted(cdf, np.sort(rng.random(size)) * cdf[-1], side="right")
    k += 1
    np.minimum(k, probabilities.size, out=k)
    return k


def _add_small_sides(y: np.ndarray, rows: np.ndarray, sides: SmallSides, sums: np.ndarray) -> None:
    """``sums[i] += sum_t beta_ti y_t`` over the tests ``rows`` but for their complements' constant part.

    The members of each small side are scattered (``-y`` where the side is a
    complement), and rows whose small side was drawn dense (no members
    listed) are added by a pass over the mask: ``O(min(k, N - k))`` per test.
    """
    from ._sampling._gt_kernels import add_dense_rows, scatter_small_sides

    scatter_small_sides(y, rows, sides.flip, sides.indptr, sides.vals, sums)
    dense = np.flatnonzero(sides.dense)
    if dense.size:
        add_dense_rows(sides.masks.view(np.uint8), dense, y, rows[dense], sums)


def _contrast_moments(weight: np.ndarray, offset: np.ndarray, y: np.ndarray, complement: np.ndarray,
                      sums: np.ndarray) -> MeanState:
    r"""Moments of the per-test vectors :math:`x_{ti} = w_t(\beta_{ti} - o_t)` (``i < N``), not formed.

    ``o_t`` is the null player's indicator (improved) or ``k_t / N`` (paper,
    which centres the contrasts). Both sums are linear in the 0/1 masks:
    :math:`\sum_t x_{ti} = (w^\top\beta)_i - w^\top o` and, as
    :math:`(\beta - o)^2 = \beta(1 - 2o) + o^2` for 0/1 :math:`\beta`,
    :math:`\sum_t x_{ti}^2 = (y^\top\beta)_i + (w^2)^\top o^2` with
    :math:`y = [w, w^2(1 - 2o)]`. A coalition is :math:`\beta_t = f_t + s_t e_t`
    with ``e_t`` its small side, ``f_t`` 1 if it is the complement (or the
    grand coalition) and :math:`s_t = 1 - 2f_t`: ``sums`` holds the small
    sides' part (:func:`_add_small_sides`), ``complement`` the :math:`f_t`.
    """
    size = weight.shape[0]
    weight, offset = np.ascontiguousarray(weight), np.asarray(offset, dtype=float)  # unit-stride BLAS products
    sums += complement @ y
    mean = (sums[:, 0] - weight @ offset) / size
    total_sq = sums[:, 1] + weight**2 @ offset**2
    m2 = np.maximum(total_sq - size * mean**2, 0.0)
    return MeanState(sums.shape[0], size, mean, m2)


def recover_from_differences(centred: np.ndarray, total: float, *, recovery: str = "closed_form",
                             tolerance: float = 0.0, solver: str = "CLARABEL") -> tuple[np.ndarray, dict]:
    r"""Values with ``sum = total`` and pairwise differences within ``tolerance`` of ``C``.

    ``C_ij = centred_i - centred_j``. ``"closed_form"`` returns
    ``centred + total / N``, a point of the feasible set for every tolerance.
    ``"cvxpy"`` solves the feasibility problem in ``O(N)`` constraints, using
    that all ``N(N-1)`` constraints hold iff the residuals
    ``d = s - centred`` fit in an interval of width ``tolerance``:
    ``lo <= d_i <= lo + tolerance``. ``"cvxpy_pairwise"`` states the
    ``N(N-1)/2`` absolute-value constraints literally (one vectorised
    expression; ``O(N^2)`` memory, for verification on small games).
    """
    n = centred.shape[0]
    base = centred + total / n
    if recovery == "closed_form":
        return base, {"recovery": "closed_form"}
    import cvxpy as cp

    # Solve in units of the values' scale so solver tolerances are meaningful.
    scale = max(float(np.abs(base).max()), abs(total) / n, 1e-12)
    c, tot, tol = centred / scale, total / scale, tolerance / scale
    s = cp.Variable(n)
    constraints = [cp.sum(s) == tot]
    if recovery == "cvxpy":
        lo = cp.Variable()
        constraints += [s - c >= lo, s - c <= lo + tol]
    else:
        i, j = np.triu_indices(n, 1)
        constraints += [cp.abs(s[i] - s[j] - (c[i] - c[j])) <= tol]
    problem = cp.Problem(cp.Minimize(0), constraints)
    try:
        problem.solve(solver=solver)
    except cp.error.SolverError as exc:
        raise FeasibilityError(
            f"solver {solver} failed on the group-testing feasibility problem ({exc}). "
            "recovery='closed_form' always has a solution."
        ) from exc
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or s.value is None:
        raise FeasibilityError(
            f"the group-testing feasibility problem is {problem.status} for solver {solver} "
            f"with tolerance {tolerance:.3g}. The problem is feasible in exact arithmetic "
            "(the closed form is a solution), so this is numerical: use a larger epsilon, another "
            "solver, or recovery='closed_form'."
        )
    return np.asarray(s.value) * scale, {"recovery": recovery, "solver": solver, "status": problem.status}


@documents_sampling_options
def group_testing_shapley(game: GameLike, budget: int | None, seed: int | np.random.SeedSequence | None = None, *,
                          variant: Literal["improved", "paper"] = "improved",
                          centering: Literal["none", "linear"] | None = None,
                          recovery: Literal["closed_form", "cvxpy", "cvxpy_pairwise"] = "closed_form",
                          epsilon: float | None = None, solver: str = "CLARABEL",
                          sampling: Literal["without_replacement", "independent"] = "without_replacement",
                          batch_size: int | None = None, n_jobs: int | None = None,
                          progress: bool | None = None, empty_utility: float | None = None,
                          target_stderr: float | None = None,
                          target_rank_correlation: float | None = None,
                          checkpoint: str | os.PathLike[str] | None = None,
                          checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""Shapley values by group testing.

    *How the tests are drawn* (``sampling``). Every test has the law of
    Algorithm 1's lines "draw :math:`k_t \sim q(k)`; uniformly sample a
    length-:math:`k_t` sequence :math:`S` from :math:`\{1, \dots, P\}`":
    :math:`\Pr(k_t = k, S_t = S) = q(k) / \binom Pk` for :math:`|S| = k`,
    so :math:`\mathbb E[\beta_{ti}] = \mathbb E[k_t] / P` and every
    estimator below is unbiased either way. The options differ in the joint
    law of the ``T`` tests:

    * ``"independent"`` (Algorithm 1 as published): the pairs
      :math:`(k_t, S_t)` are i.i.d., so a coalition may be drawn again and
      the variance of a value is :math:`\sigma^2 / T` with :math:`\sigma^2`
      the variance of one test's contrast.
    * ``"without_replacement"`` (this package's refinement, the default):
      the sizes are still i.i.d. from :math:`q`, but when every size's
      stratum holds at most
      :data:`~shapley_research.estimators._sampling._without_replacement.MAX_STRATUM`
      coalitions of the ``P`` players (``P <= 22``) the tests of size ``k``
      are read along seeded random orders of its :math:`C_k = \binom Pk`
      coalitions (:mod:`~shapley_research.estimators._sampling._without_replacement`):
      the first :math:`C_k` tests of size ``k`` take every coalition once,
      the next :math:`C_k` again in a fresh order, and so on. Within a pass,
      :math:`m_k` tests are a simple random sample of the stratum, so the
      within-size variance of their mean shrinks by the finite-population
      correction :math:`1 - m_k / C_k` (0 once a pass is complete). On the
      test games this cut the median relative error by 15-30 % (improved)
      and 35-55 % (paper) at ``N = 7`` to 10; at ``N = 16`` and
      ``T = 1000 N`` it nearly enumerates the likely sizes. The reported
      standard error stays that of i.i.d. tests, an upper bound (the state
      keeps no per-size moments to correct it). Larger games (``P > 22``)
      draw independently under either option: only their sizes near 1 and
      ``P - 1`` would qualify, which measured no gain at ``N = 30`` and
      would cost the sampler a pass over ``N`` per such test. Unlike
      Stratified SVARM, no size is skipped once complete: the mean over all
      tests needs the sizes from :math:`q`.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` (at least 2) and ``evaluate(masks)``.
    budget : int or None
        Utility evaluations allowed: ``U(D)`` and ``U(empty)`` are evaluated
        once, every remaining evaluation is one test. ``None`` (no cap) only
        with a ``target_stderr`` or ``target_rank_correlation``.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the random streams; ``None`` draws one (kept on the result).
    variant : {"improved", "paper"}, default "improved"
        ``"paper"`` is Algorithm 1; ``"improved"`` is Wang & Jia (2023) with a
        null player and no feasibility problem
        (:mod:`shapley_research.estimators._group_testing`).
    centering : {"none", "linear"}, optional
        Subtract a function of the drawn size from each utility (unbiased
        variance reduction). Default: ``"linear"`` for ``"improved"``,
        ``"none"`` for ``"paper"`` (the algorithm as published).
    recovery : {"closed_form", "cvxpy", "cvxpy_pairwise"}, default "closed_form"
        How ``"paper"`` turns pairwise differences into values (see
        :func:`recover_from_differences`); ignored by ``"improved"``.
    epsilon : float, optional
        Target l2 error of the paper's feasibility problem: its pairwise
        constraints use ``tau = epsilon / (2 sqrt(N))``. By default ``tau`` is
        the largest estimated standard error of a value. Used by the cvxpy
        recoveries only.
    solver : str, default "CLARABEL"
        cvxpy solver of the feasibility problem.
    sampling : {"without_replacement", "independent"}, default "without_replacement"
        How the tests are drawn (see above): ``"independent"`` draws every
        test afresh, as Algorithm 1 is published; ``"without_replacement"``
        (this package's refinement) reads the coalitions of each size along
        random orders where every stratum is small (``P <= 22``) and draws
        independently beyond. The default keeps the results of earlier
        versions bit for bit.
    batch_size, n_jobs, progress, empty_utility
        As in :func:`permutation_shapley`; a batch holds tests, 4096 by
        default, evaluated about ``2**22`` mask cells at a time (one call
        to ``game.evaluate`` up to ``N = 1,024``).
{sampling}
        For ``"paper"`` both targets apply to the closed-form recovery (the
        values with ``recovery="closed_form"``, which differ from the
        accumulated contrasts by a common shift), also when a cvxpy recovery
        produces the final values: no solver runs per batch.

    Returns
    -------
    ValuationResult
        ``stderr`` is the standard error of each value (for ``"paper"``, of
        the closed-form recovery); ``info["sampling"]`` is ``sampling`` and
        ``info["without_replacement"]`` lists the sizes drawn without
        replacement (empty where every test was drawn independently); runs with different seeds combine
        with :func:`~shapley_research.merge_results`.
    """
    variant, centering, recovery, solver = _check_test_options(variant, centering, recovery, solver)
    sampling = cast(_Sampling, check_choice(sampling, "sampling", {"without_replacement", "independent"}))
    n = check_game(game, minimum=2)
    options = SamplingOptions.checked(
        game, "group_testing_shapley", batch_size=batch_size, n_jobs=n_jobs, progress=progress,
        empty_utility=empty_utility, target_stderr=target_stderr, target_rank_correlation=target_rank_correlation,
        checkpoint=checkpoint, checkpoint_interval=checkpoint_interval)
    epsilon = None if epsilon is None else check_float(epsilon, "epsilon", minimum=0.0)
    return drive(GroupTestingSpec(method=f"group_testing[{variant}]", n_players=n, dim=n, per_unit=1, unit_name="test",
                                  desc=f"group testing ({variant})", progress_unit="test", needs_full=True,
                                  variant=variant, centering=centering, recovery=recovery, epsilon=epsilon,
                                  solver=solver, sampling=sampling), game, budget, seed, options)


@dataclass(frozen=True, kw_only=True)
class GroupTestingSpec(SamplingSpec):
    """:func:`group_testing_shapley` for :func:`~._sampling._driver.drive`: a unit is one test
    (:class:`_TestBatches`), its sizes along the strata's orders where they are small (:func:`_test_planner`)."""

    variant: _Variant
    centering: _Centering
    recovery: _Recovery
    epsilon: float | None
    solver: str
    sampling: _Sampling

    @property
    def sizes(self) -> tuple[int, np.ndarray, np.ndarray, float, list]:
        """``P``, the sizes, their probabilities ``q``, ``Z`` and the sizes drawn without replacement."""
        n_drawn = self.n_players + 1 if self.variant == "improved" else self.n_players
        levels, probabilities, z = group_testing_size_distribution(n_drawn)
        return n_drawn, levels, probabilities, z, _exhaustive_sizes(n_drawn, levels, self.sampling)

    def batch_size(self, batch_size: int | None, n_units: int | None) -> int:
        return coalition_batch_size(self.n_players) if batch_size is None else batch_size

    def options(self) -> dict:
        """The options of the estimate: runs merge only with equal ones."""
        return {"variant": self.variant, "centering": self.centering}

    def fingerprint_options(self, n_units: int | None) -> dict:
        # files of runs drawn independently (N > 22 or sampling="independent") stay valid
        return {**self.options(), **({"without_replacement": MAX_STRATUM} if self.sizes[-1] else {})}

    def enumeration_info(self, empty_utility: float | None) -> dict:
        return {"options": self.options(), **self.options()}

    def start(self, game: GameLike, run: Run, anchors: Anchors | None) -> Sampler:
        variant, anchors = self.variant, cast(Anchors, anchors)  # both anchors are always evaluated
        n_drawn, levels, probabilities, z, exhaustive = self.sizes
        tests = _TestBatches(game, self.n_players, variant, self.centering, probabilities, z, anchors, run.entropy)
        info = {**self.enumeration_info(None), "Z": z, "empty_utility": anchors.empty, "full_utility": anchors.full,
                "batch_size": run.batch_size, "recovery": self.recovery, "epsilon": self.epsilon,
                "solver": self.solver, "sampling": self.sampling, "without_replacement": exhaustive}
        drawn = {"sampling": self.sampling, "without_replacement": exhaustive}
        record = SamplingRecord(GroupTestingFinalizer(variant, self.epsilon, self.recovery, self.solver),
                                self.options(), empty_utility=anchors.empty, full_utility=anchors.full,
                                seeds=(run.entropy,), drawn=drawn)
        return Sampler(tests, info, record, estimates_of=lambda s: (_judged_values(s, variant, anchors), s.stderr),
                       plan=_test_planner(n_drawn, levels, exhaustive, probabilities, run.entropy))


def _exhaustive_sizes(n_drawn: int, levels: np.ndarray, sampling: str) -> list:
    """The sizes drawn without replacement: all of them where every size is a small stratum and ``sampling``
    asks for it, else none (see :func:`group_testing_shapley`)."""
    if sampling != "without_replacement":
        return []
    exhaustive = without_replacement_sizes(n_drawn, levels)
    return exhaustive if len(exhaustive) == levels.size else []


def _check_test_options(variant: object, centering: object, recovery: object,
                        solver: str) -> tuple[_Variant, _Centering, _Recovery, str]:
    """The variant, the centering (default by variant), the recovery and, where a cvxpy recovery runs, the solver."""
    variant = check_choice(variant, "variant", {"improved", "paper"})
    centering = check_choice("linear" if centering is None and variant == "improved"
                             else centering or "none", "centering", {"none", "linear"})
    recovery = check_choice(recovery, "recovery", {"closed_form", "cvxpy", "cvxpy_pairwise"})
    if variant == "paper" and recovery != "closed_form":
        solver = check_solver(solver)
    # checked: each is one of its Literal's values
    return cast(_Variant, variant), cast(_Centering, centering), cast(_Recovery, recovery), solver


class _TestBatches:
    """The ``sample_batch`` of :func:`run_sampling`: a batch of tests reduced to its contrast moments.

    A test draws a size ``k`` from :math:`q` and a uniform coalition of that size among the ``P`` players
    (``planned``: along the strata's orders, :func:`_test_planner`); with ``"improved"`` the null player
    ``N`` is among them with probability ``k / P`` and the rest is a coalition of the ``N`` players.
    """

    def __init__(self, game, n_players: int, variant: str, centering: str, probabilities: np.ndarray, z: float,
                 anchors: Anchors, entropy: int):
        self.game, self.n, self.variant, self.centering = game, n_players, variant, centering
        self.n_drawn = n_players + 1 if variant == "improved" else n_players
        self.probabilities, self.z, self.anchors, self.entropy = probabilities, z, anchors, entropy
        self.slope = (anchors.full - anchors.empty) / self.n_drawn

    def __call__(self, rng: np.random.Generator, size: int, planned=None):
        n, n_drawn, anchors = self.n, self.n_drawn, self.anchors
        if planned is None:
            k, tests = _draw_sizes(rng, size, self.probabilities), None
        else:  # the tests along their strata's orders, over the P players (the null player last)
            k, offsets = planned
            tests = draw_coalitions(rng, k, offsets, n_drawn, self.entropy)
        if self.variant == "improved":  # the null player is in a uniform k-subset of N + 1 w.p. k / (N + 1),
            # the rest is a uniform subset of the N players
            null = rng.integers(0, n_drawn, size) < k if tests is None else tests[:, n]
            in_game = k - null
        else:
            null, in_game = None, k
        offset = cast(np.ndarray, null if self.variant == "improved" else k / n)  # null is set with "improved"
        drawn = np.flatnonzero((in_game > 0) & (in_game < n))  # U(empty), U(D): the anchors
        u = np.where(in_game == 0, anchors.empty, anchors.full)
        y, complement = np.empty((size, 2)), (in_game == n).astype(float)
        self._weigh(u, k, offset, y, np.flatnonzero((in_game == 0) | (in_game == n)))
        sums, evaluations = np.zeros((n, 2)), 0
        for chunk in evaluation_chunks(drawn.size, n):  # drawn, evaluated and added chunk by chunk
            rows = drawn[chunk]
            sides = (draw_small_sides(rng, in_game[rows], n) if tests is None
                     else small_sides_of(tests[rows, :n]))
            u[rows], made = evaluate_coalitions(self.game, sides.masks, anchors.empty, anchors.full,
                                                sizes=in_game[rows])
            evaluations += made
            self._weigh(u, k, offset, y, rows)
            complement[rows] = sides.flip & ~sides.dense
            _add_small_sides(y, rows, sides, sums)
        return _contrast_moments(y[:, 0], offset, y, complement, sums), evaluations

    def _weigh(self, u: np.ndarray, k: np.ndarray, offset: np.ndarray, y: np.ndarray, rows: np.ndarray) -> None:
        """``y[rows] = [w, w^2 (1 - 2 o)]`` with ``w = Z u`` (``u`` centred in place first, with ``"linear"``)."""
        if self.centering == "linear":
            u[rows] -= self.anchors.empty + self.slope * k[rows]
        weight = self.z * u[rows]
        y[rows, 0] = weight
        y[rows, 1] = weight**2 * (1.0 - 2.0 * offset[rows])


def _test_planner(n_drawn: int, levels: np.ndarray, exhaustive: list, probabilities: np.ndarray, entropy: int):
    """The ``plan(batch, size)`` of :func:`run_sampling` where the tests follow the strata's orders (else ``None``)."""
    if not exhaustive:
        return None
    plan = StratumPlan(n_drawn, levels, exhaustive)

    def plan_batch(batch: int, size: int):  # in this process, in batch order: where each stratum's order is
        k = _draw_sizes(size_rng(entropy, batch), size, probabilities)
        return k, plan.offsets(k)

    return plan_batch


def _judged_values(state: MeanState, variant: str, anchors: Anchors) -> np.ndarray:
    """The values the criteria judge: the contrasts (improved), their closed-form recovery (paper)."""
    if variant == "improved":
        return state.mean
    return recover_from_differences(state.mean, anchors.full - anchors.empty)[0]


@register_finalizer("group_testing[improved]", "group_testing[paper]")
@dataclass(frozen=True)
class GroupTestingFinalizer(Finalizer):
    """The final step of :func:`group_testing_shapley`: values from the accumulated contrasts, directly
    (improved) or by recovery (paper). Merged runs list how each drew its tests (``sampling``,
    ``without_replacement``)."""

    variant: str
    epsilon: float | None
    recovery: str
    solver: str
    listed = ("sampling", "without_replacement")

    def finalize(self, state: MeanState, record: SamplingRecord) -> tuple[np.ndarray, np.ndarray, dict]:
        stderr = state.stderr
        if self.variant == "improved":
            return state.mean.copy(), stderr, {}
        n, epsilon = state.dim, self.epsilon
        tau = (epsilon / (2 * np.sqrt(n)) if epsilon is not None
               else float(np.nanmax(stderr)) if np.isfinite(stderr).any() else 0.0)
        empty, full = record.anchors()
        values, details = recover_from_differences(state.mean, full - empty, recovery=self.recovery,
                                                   tolerance=tau, solver=self.solver)
        return values, stderr, {**details, "tolerance": tau}
