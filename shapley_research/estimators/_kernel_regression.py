r"""Classic KernelSHAP: the Shapley value as a weighted regression on sampled coalitions (Lundberg & Lee 2017).

The Shapley values solve the constrained least-squares problem of
:mod:`~shapley_research.estimators._kernel_shapley` (Charnes et al. 1988):

.. math::

    \phi = \arg\min_{\beta}\; \mathbb E_{z \sim p}\bigl[(U(z) - U(\emptyset) - z^\top \beta)^2\bigr]
    \quad\text{s.t.}\quad \mathbf 1^\top \beta = \Delta := U(D) - U(\emptyset),

with :math:`p` the Shapley kernel over the coalitions of ``1 .. N-1``
players. KernelSHAP replaces both moments by their sample means over ``n``
coalitions drawn from :math:`p`,

.. math::

    \hat A = \frac1n \sum_k z_k z_k^\top, \qquad \hat b = \frac1n \sum_k z_k\,(U(z_k) - U(\emptyset)),
    \qquad
    \hat\phi = \hat A^{-1}\Bigl(\hat b - \mathbf 1\,
        \frac{\mathbf 1^\top \hat A^{-1} \hat b - \Delta}{\mathbf 1^\top \hat A^{-1} \mathbf 1}\Bigr),

a ratio of sample means: biased (by :math:`O(1/n)`) but consistent, and
Covert & Lee (AISTATS 2021) found its variance far below that of the unbiased
variant, which uses the exact :math:`A` (:func:`~._kernel_shapley.unbiased_kernel_shapley`).
With *paired sampling* (their Section 4, the default) each drawn coalition
is evaluated with its complement and both enter the means.

*Cost.* :math:`\hat A` is ``N x N``: ``O(N^2)`` work per coalition (one
matrix product per chunk of masks, in float32, exact as the entries are
counts below :math:`2^{24}`) and ``O(N^2)`` memory, against ``O(N)`` for the
unbiased variant; :data:`MAX_PLAYERS` bounds ``N``. The running state holds
the upper triangle of the summed :math:`\hat A` and :math:`\hat b`, never a
``budget x N`` array; each solve is ``O(N^3)``.

*Standard errors* (after Covert & Lee's code): each batch is cut into groups
of about :data:`GROUP_PER_PLAYER` ``* N`` consecutive units (pairs, or
coalitions); each group solves its own regression, :math:`\hat\phi_g` from
its :math:`n_g` units. With :math:`\mathrm{Var}(\hat\phi_g) \approx
\sigma^2 / n_g`, the pooled

.. math::

    \hat\sigma^2 = \frac{1}{G - 1} \sum_g n_g (\hat\phi_g - \bar\phi)^2, \qquad
    \bar\phi = \frac{\sum_g n_g \hat\phi_g}{\sum_g n_g},
    \qquad \mathrm{se}(\hat\phi) = \sqrt{\hat\sigma^2 / n},

is the standard error of the estimate from all ``n`` units. Groups whose
matrix is singular are left out; with fewer than two groups the standard
errors are NaN. Smaller groups (a ``batch_size`` below the group size) are
more nonlinear, so the standard errors then err on the large side.

*Singular* :math:`\hat A` (fewer than about ``N`` distinct coalitions, at
small budgets): the values are then the minimum-norm solution of the
problem's KKT system (a pseudo-inverse, by an SVD), still efficient, and
``info["rank_deficient"]`` says so. A budget that cannot give ``N``
independent rows (fewer than ``N - 1`` pairs: each pair's
:math:`z + (1 - z)` is the same all-ones vector; ``N`` coalitions unpaired)
is warned about before any evaluation.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from ._kernel_shapley import _draw_sizes, one_player_message, shapley_kernel_sizes
from ._large_work import announce_large_work
from ._permutation import documents_sampling_options
from ._sampling._driver import Run, Sampler, SamplingOptions, SamplingSpec, drive
from ._sampling._loop import Anchors, MeanState, default_batch_size, evaluation_chunks
from ._sampling._subsets import draw_small_sides
from ._small_games import enumeration_affordable
from .._threads import pinned_threads
from .._validation import check_bool, check_game, check_utilities
from ..games import GameLike
from ..result import Finalizer, SamplingRecord, ValuationResult, register_finalizer

__all__ = ["kernel_shapley", "constrained_regression"]

#: Most players: the ``N x N`` matrices (the state's triangle and its merge, a group's and a batch's sums, the
#: solves) peaked at about ``45 N^2`` bytes (1.06 GiB traced at N = 5,000; some 4.5 GB at 10,000), and every
#: coalition costs ``N^2`` multiply-adds.
MAX_PLAYERS = 10_000
#: Units (pairs, or coalitions) per group of the standard errors, per player: Covert & Lee's ~10 N.
GROUP_PER_PLAYER = 10
#: Fewest units per batch, per player, of a run with a precision target: a smaller group's matrix is often
#: singular (it needs ``N`` coalitions at least), so its run might never have standard errors to stop on.
TARGET_BATCH_PER_PLAYER = 2

ONE_PLAYER = one_player_message("kernel_shapley")


def constrained_regression(gram: NDArray[np.float64], moments: NDArray[np.float64],
                           delta: float) -> tuple[NDArray[np.float64], bool]:
    r"""The :math:`\beta` minimising :math:`\beta^\top A \beta - 2 b^\top \beta` subject to sum :math:`\Delta`.

    ``gram`` is :math:`A` (symmetric positive semi-definite), ``moments``
    :math:`b`. Where :math:`A` is positive definite (Cholesky succeeds with a
    reciprocal condition number above machine epsilon),
    :math:`\beta = A^{-1}(b - \mathbf 1 \nu)` with
    :math:`\nu = (\mathbf 1^\top A^{-1} b - \Delta) / (\mathbf 1^\top A^{-1} \mathbf 1)`;
    otherwise the minimum-norm least-squares solution of the KKT system
    :math:`\begin{pmatrix} A & \mathbf 1 \\ \mathbf 1^\top & 0 \end{pmatrix}
    \binom{\beta}{\nu} = \binom{b}{\Delta}` (always consistent). Either way
    :math:`\beta` is then shifted by :math:`(\Delta - \mathbf 1^\top\beta) / N`,
    a rounding's worth, so that it sums to :math:`\Delta`. Returns
    :math:`\beta` and whether :math:`A` was singular.
    """
    n = gram.shape[0]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            solved = scipy.linalg.solve(gram, np.column_stack([np.ones(n), moments]), assume_a="pos")
        ones, fitted = solved[:, 0], solved[:, 1]
        beta, singular = fitted - ones * ((fitted.sum() - delta) / ones.sum()), False
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
        kkt = np.zeros((n + 1, n + 1))
        kkt[:n, :n], kkt[n, :n], kkt[:n, n] = gram, 1.0, 1.0
        beta, singular = scipy.linalg.lstsq(kkt, np.append(moments, delta))[0][:n], True
    return beta + (delta - beta.sum()) / n, singular


def _upper(n: int) -> NDArray[np.bool_]:
    """The mask of the upper triangle (diagonal included) of an ``n x n`` matrix, row by row."""
    return ~np.tri(n, k=-1, dtype=bool)


def _unpack(triangle: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """The symmetric ``n x n`` matrix whose upper triangle, row by row, is ``triangle``."""
    full = np.zeros((n, n))
    full[_upper(n)] = triangle
    return full + np.triu(full, k=1).T


def _layout(n: int) -> tuple[int, int]:
    """Where the state's parts start: the triangle of :math:`\\hat A` at 0, :math:`\\hat b` at the first,
    the groups' sums (``S1``, ``S2``, ``W``, ``G``) at the second."""
    tri = n * (n + 1) // 2
    return tri, tri + n


@dataclass
class _GroupSums:
    """A batch's running sums: over all its coalitions, and the groups' pooled spread (see the module)."""

    n: int
    centre: float  # the uniform split Delta / N: the groups' values are pooled about it (fewer digits lost)
    gram: NDArray[np.float64]
    moments: NDArray[np.float64]
    spread: NDArray[np.float64]  # S1 (N), S2 (N), W, G

    @classmethod
    def empty(cls, n: int, centre: float) -> _GroupSums:
        return cls(n, centre, np.zeros((n, n)), np.zeros(n), np.zeros(2 * n + 2))

    def add_group(self, gram: NDArray[np.float64], moments: NDArray[np.float64], coalitions: int, units: int,
                  delta: float) -> None:
        """Add one group's sums over its ``coalitions``; its own solve enters the spread unless singular."""
        self.gram += gram
        self.moments += moments
        values, singular = constrained_regression(gram / coalitions, moments / coalitions, delta)
        if not singular:
            shifted = values - self.centre
            n = self.n
            self.spread[:n] += units * shifted
            self.spread[n:2 * n] += units * shifted * shifted
            self.spread[2 * n:] += (units, 1.0)

    def state(self, count: int, per_unit: int) -> MeanState:
        """The batch as a :class:`MeanState` of ``count`` units: per-unit means of the sums (no ``M_2``)."""
        mean = np.concatenate([self.gram[_upper(self.n)] / per_unit, self.moments / per_unit, self.spread])
        mean /= count
        return MeanState(mean.size, count, mean, np.zeros(mean.size))


@dataclass(frozen=True)
class SizeDesign:
    r"""How coalitions are drawn and weighted: a size ``s`` by ``cumulative`` (the cumulative weights of
    ``s = 1 .. N-1``), then a uniform coalition of that size, entering :math:`\hat A` and :math:`\hat b` with
    the importance ratio ``ratios[s - 1]`` :math:`= p_s / q_s` of the Shapley kernel's size probability to the
    sampling one (``None``: the kernel itself, every ratio 1)."""

    cumulative: NDArray[np.float64]
    ratios: NDArray[np.float64] | None = None


def _group(game: GameLike, anchors: Anchors, paired: bool, design: SizeDesign,
           rng: np.random.Generator, units: int) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    r"""Sums of :math:`z z^\top` and :math:`z (U(z) - U(\emptyset))` over the coalitions of ``units`` units
    drawn chunk by chunk (with ``paired``, each coalition and its complement), and the evaluations made."""
    from ._sampling._gt_kernels import add_weighted_members  # numba loads on first use

    if design.ratios is not None:
        return _weighted_group(game, anchors, paired, design, rng, units)
    cumulative = design.cumulative

    n, per = game.n_players, 2 if paired else 1
    cross, columns = np.zeros((n, n), dtype=np.float32), np.zeros(n)
    sums = np.zeros((2, n))
    constant = 0.0  # sum over complements of U(D \ z) - U(empty): the ones' share of b
    for rows in evaluation_chunks(units, n * per):
        count = rows.stop - rows.start
        masks = draw_small_sides(rng, _draw_sizes(rng, cumulative, count), n).masks
        z = masks.astype(np.float32)
        cross += z.T @ z  # exact: counts below 2**24 per chunk, and below 2**24 summed over a group
        if paired:
            u = check_utilities(game.evaluate(np.concatenate([masks, ~masks])), 2 * count) - anchors.empty
            gains, constant = u[:count] - u[count:], constant + float(u[count:].sum())
            columns += z.sum(axis=0, dtype=np.float64)
        else:
            gains = check_utilities(game.evaluate(masks), count) - anchors.empty
        add_weighted_members(np.ascontiguousarray(masks).view(np.uint8), np.ascontiguousarray(gains),
                             np.zeros(count), sums)
    gram = cross.astype(np.float64)
    if paired:  # sum of z z^T + (1 - z)(1 - z)^T = k 11^T - 1 m^T - m 1^T + 2 Z^T Z
        gram = units - columns[:, None] - columns[None, :] + 2.0 * gram
    return gram, sums[0] + constant, units * per


def _weighted_group(game: GameLike, anchors: Anchors, paired: bool, design: SizeDesign,
                    rng: np.random.Generator, units: int) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    r""":func:`_group` with importance ratios :math:`r_s`: sums of :math:`r_s z z^\top` and
    :math:`r_s z (U(z) - U(\emptyset))` (float64: the ratios are not counts). A pair adds
    :math:`r_s (z z^\top + (1 - z)(1 - z)^\top)`, the complement's ratio being its coalition's
    (:math:`r_s = r_{N-s}`)."""
    from ._sampling._gt_kernels import add_weighted_members  # numba loads on first use

    n, per, ratios = game.n_players, 2 if paired else 1, cast(NDArray[np.float64], design.ratios)
    gram, columns, sums = np.zeros((n, n)), np.zeros(n), np.zeros((2, n))
    total = constant = 0.0  # sum of the ratios; sum over complements of r (U(D \ z) - U(empty))
    for rows in evaluation_chunks(units, n * per):
        count = rows.stop - rows.start
        sizes = _draw_sizes(rng, design.cumulative, count)
        masks = draw_small_sides(rng, sizes, n).masks
        ratio = ratios[sizes - 1]
        rooted = masks * np.sqrt(ratio)[:, None]
        gram += rooted.T @ rooted  # symmetric: r z z^T summed as (sqrt(r) z)(sqrt(r) z)^T
        if paired:
            u = check_utilities(game.evaluate(np.concatenate([masks, ~masks])), 2 * count) - anchors.empty
            gains, constant = u[:count] - u[count:], constant + float(ratio @ u[count:])
            columns += ratio @ masks
            total += float(ratio.sum())
        else:
            gains = check_utilities(game.evaluate(masks), count) - anchors.empty
        add_weighted_members(np.ascontiguousarray(masks).view(np.uint8), np.ascontiguousarray(ratio * gains),
                             np.zeros(count), sums)
    if paired:  # sum of r (z z^T + (1 - z)(1 - z)^T) = (sum r) 11^T - 1 m^T - m 1^T + 2 sum r z z^T
        gram = total - columns[:, None] - columns[None, :] + 2.0 * gram
    return gram, sums[0] + constant, units * per


def _regression_batch(game: GameLike, anchors: Anchors, paired: bool, design: SizeDesign,
                      group_size: int, rng: np.random.Generator, size: int) -> tuple[MeanState, int]:
    """The ``sample_batch`` of :func:`kernel_shapley`: ``size`` units in ``max(1, size // group_size)``
    groups of near-equal sizes, each drawn, evaluated and solved in turn."""
    n, per = game.n_players, 2 if paired else 1
    delta = anchors.full - anchors.empty
    sums, made = _GroupSums.empty(n, delta / n), 0
    n_groups = max(1, size // group_size)
    for units in np.diff(np.linspace(0, size, n_groups + 1).round().astype(int)):
        gram, moments, evaluations = _group(game, anchors, paired, design, rng, int(units))
        sums.add_group(gram, moments, int(units) * per, int(units), delta)
        made += evaluations
    return sums.state(size, per), made


def regression_estimates(state: MeanState, n: int, delta: float) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                                                          bool]:
    """Values, standard errors and whether :math:`\\hat A` is singular, from a :func:`kernel_shapley` state."""
    first, second = _layout(n)
    mean = state.mean
    with pinned_threads():  # the same rounding wherever the final solve runs
        values, singular = constrained_regression(_unpack(mean[:first], n), mean[first:second], delta)
    spread = mean[second:] * state.count
    s1, s2, weight, groups = spread[:n], spread[n:2 * n], spread[2 * n], int(round(spread[2 * n + 1]))
    if groups < 2:
        return values, np.full(n, np.nan), singular
    variance = np.maximum(s2 - s1 * s1 / weight, 0.0) / (groups - 1)
    return values, np.sqrt(variance / state.count), singular


@register_finalizer("kernel_shapley")
@dataclass(frozen=True)
class RegressionFinalizer(Finalizer):
    """The final step of :func:`kernel_shapley`: the constrained regression on the merged sums."""

    n_players: int

    def finalize(self, state: MeanState, record: SamplingRecord) -> tuple[np.ndarray, np.ndarray, dict]:
        empty, full = record.anchors()
        values, stderr, singular = regression_estimates(state, self.n_players, full - empty)
        groups = int(round(state.mean[-1] * state.count))
        return values, stderr, {"rank_deficient": singular, "n_groups": groups}


@dataclass(frozen=True, kw_only=True)
class RegressionSpec(SamplingSpec):
    """:func:`kernel_shapley` for :func:`~._sampling._driver.drive`: a unit is a kernel coalition (with
    ``paired``, and its complement); a batch reduces to the sums of :math:`\\hat A`, :math:`\\hat b` and its
    groups' spread."""

    paired: bool

    @property
    def group_size(self) -> int:
        return GROUP_PER_PLAYER * self.n_players

    def batch_size(self, batch_size: int | None, n_units: int | None) -> int:
        """At least one group: ``max(default, GROUP_PER_PLAYER * N)`` units by default."""
        if batch_size is not None:
            return batch_size
        return max(default_batch_size(self.n_players, self.per_unit), self.group_size)

    def design(self) -> SizeDesign:
        """How the coalitions are drawn and weighted: from the Shapley kernel, unweighted."""
        weights, _ = shapley_kernel_sizes(self.n_players)
        return SizeDesign(np.cumsum(weights))

    def options(self) -> dict:
        """The run's options, as the result's ``info["options"]`` and the record keep them."""
        return {"paired": self.paired}

    def units(self, budget: object, options: SamplingOptions) -> int | None:
        if self.n_players < 2 and budget is None:
            raise ValueError(one_player_message(self.method))
        least = TARGET_BATCH_PER_PLAYER * self.n_players
        targeted = options.target_stderr is not None or options.target_rank_correlation is not None
        if targeted and options.batch_size is not None and options.batch_size < least:
            raise ValueError(
                f"batch_size={options.batch_size} is too small for a precision target: {self.method}'s standard "
                f"errors come from groups within a batch, which need {least} units (2 N) at least to have a "
                f"regular matrix. Pass batch_size >= {least}, or none (groups of 10 N).")
        units = super().units(budget, options)
        if units and not enumeration_affordable(self.n_players, budget, options.empty_utility):
            self._warn_if_singular(budget, units)
        return units

    def _warn_if_singular(self, budget: object, units: int) -> None:
        r"""A ``UserWarning``, before any evaluation, where the budget cannot make :math:`\hat A` regular.

        Its rank is at most that of the coalitions' span: ``z_1 .. z_u`` and, paired, the all-ones vector
        ``z + (1 - z)`` of every pair. Below ``N``, Cholesky fails and the minimum-norm solve is an SVD.
        """
        rank = units + 1 if self.paired else units
        if rank >= self.n_players:
            return
        noun = "coalition pair" if self.paired else "coalition"
        drawn = f"{units:,} {noun}{'' if units == 1 else 's'}"
        warnings.warn(f"{self.method}: budget={budget} draws {drawn} for {self.n_players:,} players, so the N x N "
                      f"matrix has rank {rank:,} at most: it is singular, the values are the minimum-norm solution "
                      "(an SVD of the whole system: minutes at thousands of players) and carry no standard errors. "
                      "Draw N - 1 pairs (N coalitions unpaired) at least; standard errors need about 200 N "
                      "evaluations.", UserWarning, stacklevel=5)  # the caller of kernel_shapley

    def fingerprint_options(self, n_units: int | None) -> dict:
        return {**self.options(), "group_size": self.group_size}

    def enumeration_info(self, empty_utility: float | None) -> dict:
        return {"options": self.options(), **self.options()}

    def start(self, game: GameLike, run: Run, anchors: Anchors | None) -> Sampler:
        anchors = cast(Anchors, anchors)  # both anchors are always needed
        if self.n_players < 2:
            raise ValueError(one_player_message(self.method))
        options = self.options()
        info = {"options": options, **options, "batch_size": run.batch_size,
                "group_size": self.group_size, "empty_utility": anchors.empty, "full_utility": anchors.full}
        record = SamplingRecord(RegressionFinalizer(self.n_players), options, empty_utility=anchors.empty,
                                full_utility=anchors.full, seeds=(run.entropy,))
        design, group, paired = self.design(), self.group_size, self.paired
        delta = anchors.full - anchors.empty

        def sample_batch(rng: np.random.Generator, size: int) -> tuple[MeanState, int]:
            return _regression_batch(game, anchors, paired, design, group, rng, size)

        def estimates_of(state: MeanState) -> tuple[np.ndarray, np.ndarray]:
            values, stderr, _ = regression_estimates(state, self.n_players, delta)
            return values, np.where(np.isnan(stderr), np.inf, stderr)  # no spread yet: no stop on it

        return Sampler(sample_batch, info, record, estimates_of=estimates_of)


#: Cost model of the ``N x N`` work, from N = 5,000 (20,000 pairs in 33 s, 1.06 GiB traced): one ``N^2``
#: product per unit at some 1.5e10 multiply-adds a second, and about ``45 N^2`` bytes.
GRAM_RATE, GRAM_BYTES_PER_CELL = 1.5e10, 45


def announce_regression_work(n: int, budget: object, paired: bool, method: str) -> None:
    """A ``UserWarning`` before any evaluation where the ``N x N`` work will take long or much memory."""
    known = isinstance(budget, (int, np.integer)) and not isinstance(budget, bool) and budget > 2
    units = (int(budget) - 2) // (2 if paired else 1) if known else None  # type: ignore[call-overload]
    announce_large_work(method, f"{n:,} players" + (f" and {units:,} samples" if units else ""),
                        None if units is None else units * n**2 / GRAM_RATE, GRAM_BYTES_PER_CELL * n**2,
                        "each sample costs N^2 and the state holds N x N matrices: unbiased_kernel_shapley does "
                        "the same regression in O(N) a sample.", stacklevel=4)


def check_players(n: int, method: str) -> None:
    """A ``ValueError`` above :data:`MAX_PLAYERS` players, naming ``method``."""
    if n > MAX_PLAYERS:
        raise ValueError(
            f"{method} regresses on an N x N matrix: {n:,} players is above its {MAX_PLAYERS:,} (memory "
            f"about 45 N^2 bytes, N^2 work per coalition). Use unbiased_kernel_shapley, the same regression with "
            f"its exact matrix, O(N) per coalition, or permutation_shapley.")


@documents_sampling_options
def kernel_shapley(game: GameLike, budget: int | None, seed: int | np.random.SeedSequence | None = None, *,
                   paired: bool = True, batch_size: int | None = None, n_jobs: int | None = None,
                   progress: bool | None = None, empty_utility: float | None = None,
                   target_stderr: float | None = None, target_rank_correlation: float | None = None,
                   checkpoint: str | os.PathLike[str] | None = None,
                   checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""Shapley values by classic KernelSHAP (Lundberg & Lee, NeurIPS 2017), paired as in Covert & Lee (2021).

    Coalitions :math:`z` are drawn from the Shapley kernel (a size ``s`` in
    ``1 .. N-1`` with probability :math:`\propto (N-1)/(s(N-s))`, then a
    uniform coalition of that size), by default each with its complement;
    with :math:`\hat A = \frac1n\sum_k z_k z_k^\top` and
    :math:`\hat b = \frac1n\sum_k z_k (U(z_k) - U(\emptyset))` over the ``n``
    evaluated coalitions, the values are the constrained least-squares fit

    .. math::

        \hat\phi = \hat A^{-1}\Bigl(\hat b - \mathbf 1\,
            \frac{\mathbf 1^\top \hat A^{-1}\hat b - (U(D) - U(\emptyset))}{\mathbf 1^\top \hat A^{-1}\mathbf 1}\Bigr).

    Biased (a ratio of sample means, the bias :math:`O(1/n)`) but consistent,
    and usually of much lower variance than
    :func:`~shapley_research.unbiased_kernel_shapley`, which puts the exact
    :math:`\mathbb E[z z^\top]` in place of :math:`\hat A`. Efficiency holds
    exactly in every run; a null player's value is 0 only in the limit. The
    price is ``O(N^2)`` work per coalition and memory (the ``N x N``
    :math:`\hat A`), at most :data:`MAX_PLAYERS` players, and an ``O(N^3)``
    solve per group and at the end. Standard errors come from the spread of
    the regressions of groups of about ``10 N`` units (see
    :mod:`shapley_research.estimators._kernel_regression`); with fewer than
    two groups they are NaN, and from a few groups they are noisy (the
    errors over them are Student's t with ``G - 1`` degrees of freedom: ask
    some ``200 N`` evaluations or more for ten groups). A singular :math:`\hat A` (too few coalitions)
    gives the minimum-norm solution, flagged by ``info["rank_deficient"]``;
    a budget of fewer than ``N - 1`` pairs (``N`` coalitions unpaired) is
    warned about before any evaluation.
    Work expected to take over ten minutes or 4 GiB (from ``N^2`` a sample
    and about ``45 N^2`` bytes) is announced by a ``UserWarning`` before any
    evaluation.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    budget : int or None
        Utility evaluations allowed: ``U(empty)`` and ``U(D)`` once each,
        then 2 per pair (``paired``) or 1 per coalition. ``None`` (no cap)
        only with a ``target_stderr`` or ``target_rank_correlation``.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the random streams; ``None`` draws one (kept on the result).
    paired : bool, default True
        Evaluate each drawn coalition with its complement (Covert & Lee's
        paired sampling); ``False``: one coalition per sample.
    batch_size, n_jobs, progress
        As in :func:`~shapley_research.permutation_shapley`; a batch holds
        units (pairs or coalitions), by default at least one group
        (``10 N`` units); groups never span batches, so a smaller
        ``batch_size`` gives smaller groups and more cautious standard errors.
    empty_utility : float, optional
        Use this value as ``U(empty)`` instead of evaluating it.
{sampling}
    Returns
    -------
    ValuationResult
        ``method="kernel_shapley"``; ``n_samples`` counts pairs (or
        coalitions); ``info["n_groups"]`` the groups behind the standard
        errors, ``info["rank_deficient"]`` whether :math:`\hat A` was
        singular. Runs with different seeds combine with
        :func:`~shapley_research.merge_results` (their sums add up, so the
        merged values are the regression on all their coalitions).

    Raises
    ------
    ValueError
        Above :data:`MAX_PLAYERS` players (before any evaluation).
    """
    spec, options = regression_run(RegressionSpec, "kernel_shapley", "KernelSHAP", game, budget, paired,
                                   batch_size=batch_size, n_jobs=n_jobs, progress=progress,
                                   empty_utility=empty_utility, target_stderr=target_stderr,
                                   target_rank_correlation=target_rank_correlation, checkpoint=checkpoint,
                                   checkpoint_interval=checkpoint_interval)
    return drive(spec, game, budget, seed, options)


def regression_run(spec_type: type[RegressionSpec], method: str, desc: str, game: GameLike, budget: int | None,
                   paired: bool, **sampling: Any) -> tuple[RegressionSpec, SamplingOptions]:
    r"""The checked spec and options of one of the regressions on :math:`\hat A` (``kernel_shapley``,
    ``leverage_shapley``), large work announced: they differ only in ``spec_type`` (how coalitions are drawn and
    weighted), ``method`` and ``desc``."""
    n = check_game(game)
    paired = check_bool(paired, "paired")
    check_players(n, method)
    options = SamplingOptions.checked(game, method, **sampling)
    announce_regression_work(n, budget, paired, method)
    unit = "coalition pair" if paired else f"{method.split('_')[0]} coalition"  # "kernel coalition", ...
    return spec_type(method=method, n_players=n, dim=n * (n + 1) // 2 + 3 * n + 2, per_unit=2 if paired else 1,
                     unit_name=unit, desc=desc, progress_unit="coalition", needs_empty=True, needs_full=True,
                     paired=paired), options
