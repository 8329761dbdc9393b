r"""Unbiased KernelSHAP: the Shapley value as a weighted regression, solved in closed form (Covert & Lee 2021).

The Shapley values are the solution of a constrained weighted least-squares
problem (Charnes et al. 1988; KernelSHAP, Lundberg & Lee, NeurIPS 2017):

.. math::

    \phi = \arg\min_{\beta}\; \mathbb E_{z \sim p}\bigl[(U(z) - U(\emptyset) - z^\top \beta)^2\bigr]
    \quad\text{s.t.}\quad \mathbf 1^\top \beta = U(D) - U(\emptyset) =: \Delta,

with :math:`z \in \{0, 1\}^N` a coalition and :math:`p` the Shapley kernel
over the coalitions of sizes :math:`1 \dots N-1`: a size ``s`` with
probability :math:`w_s \propto 1 / (s (N - s))`, then a uniform coalition of
that size. The solution is
:math:`\phi = A^{-1}\bigl(b - \mathbf 1 \frac{\mathbf 1^\top A^{-1} b - \Delta}{\mathbf 1^\top A^{-1}
\mathbf 1}\bigr)` with :math:`A = \mathbb E[z z^\top]` and
:math:`b = \mathbb E[z\,(U(z) - U(\emptyset))]`. KernelSHAP estimates both
:math:`A` and :math:`b` from the samples (consistent, biased); Covert and Lee
("Improving KernelSHAP", AISTATS 2021) observe that :math:`A` is known: by
symmetry :math:`A = d\,I + c\,\mathbf 1 \mathbf 1^\top` with

.. math::

    c = \frac{\mathbb E[s (s - 1)]}{N (N - 1)}, \qquad d = \tfrac12 - c,

so only :math:`b` is estimated, by a sample mean, and the estimate is
unbiased. With this :math:`A` the affine map collapses (the
:math:`\mathbf 1 \mathbf 1^\top` parts cancel):

.. math::

    \phi = \frac{b - \bar b\,\mathbf 1}{d} + \frac{\Delta}{N}\,\mathbf 1,
    \qquad \bar b = \tfrac1N \mathbf 1^\top b,

so each sample contributes the vector
:math:`x = (z - \tfrac{s}{N}\mathbf 1)(U(z) - U(\emptyset)) / d + \tfrac{\Delta}{N}\mathbf 1`
and the estimate is their mean: ``O(N)`` work and memory per sample, no
``N x N`` matrix, a standard error per player from the samples' variance,
and efficiency :math:`\sum_i x_i = \Delta` exactly in every sample (the
entries of :math:`z - \tfrac{s}{N}\mathbf 1` sum to 0).

*Paired sampling* (Covert & Lee, Section 4), the default: a unit evaluates a
coalition and its complement (both distributed as :math:`p`, the kernel
being symmetric in ``s`` and ``N - s``) and averages their two vectors,

.. math::

    x = \frac{(z - \tfrac{s}{N}\mathbf 1)\,(U(z) - U(D \setminus z))}{2 d} + \frac{\Delta}{N}\,\mathbf 1,

in which :math:`U(\emptyset)` cancels but for :math:`\Delta`; the pair's
two evaluations are negatively correlated where the utility grows with the
coalition, which removes most of the variance.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from typing import cast

import numpy as np
from numpy.typing import NDArray

from ._permutation import documents_sampling_options
from ._sampling._driver import Run, Sampler, SamplingOptions, SamplingSpec, drive
from ._sampling._loop import Anchors, MeanState, evaluation_chunks
from ._sampling._subsets import draw_small_sides
from ..games import GameLike
from .._validation import check_bool, check_game, check_utilities
from ..result import Finalizer, SamplingRecord, ValuationResult, register_finalizer

__all__ = ["unbiased_kernel_shapley", "shapley_kernel_sizes"]

def one_player_message(method: str) -> str:
    """Why a 1-player game cannot be sampled by ``method``: there is no coalition of 1 to N-1 players to draw."""
    return (f"{method} samples coalitions of 1 to N-1 players: a 1-player game has none; its value is U(D) - "
            "U(empty). Pass a budget of 2 evaluations (1 with empty_utility) or more: the game is then enumerated.")


ONE_PLAYER = one_player_message("unbiased_kernel_shapley")


def shapley_kernel_sizes(n_players: int) -> tuple[NDArray[np.float64], float]:
    r"""The Shapley kernel's size distribution and the diagonal shift ``d`` of :math:`A = d I + c 11^\top`.

    Returns ``(weights, d)``: ``weights[s - 1]`` is the probability
    :math:`w_s \propto 1 / (s (N - s))` of size ``s = 1 .. N-1`` (summing to
    1), and :math:`d = \tfrac12 - \mathbb E[s (s - 1)] / (N (N - 1))`, the
    factor that turns the mean of :math:`z (U(z) - U(\emptyset))` into values.
    ``N >= 2``.
    """
    sizes = np.arange(1, n_players, dtype=float)
    weights = 1.0 / (sizes * (n_players - sizes))
    weights /= weights.sum()
    pair_share = float(weights @ (sizes * (sizes - 1.0))) / (n_players * (n_players - 1.0))
    return weights, 0.5 - pair_share


def _draw_sizes(rng: np.random.Generator, cumulative: NDArray[np.float64], count: int) -> NDArray[np.int64]:
    """``count`` coalition sizes from the kernel's cumulative weights, by inversion (one uniform each)."""
    picked = np.searchsorted(cumulative, rng.random(count) * cumulative[-1], side="right")
    return np.minimum(picked, cumulative.size - 1).astype(np.int64) + 1


def kernel_samples(masks: NDArray[np.bool_], sizes: NDArray[np.int64], gains: NDArray[np.float64], d: float,
                   delta: float) -> NDArray[np.float64]:
    r"""Per-sample vectors :math:`x_k = (z_k - \tfrac{s_k}{N})\,g_k / d + \Delta / N` (their mean is the estimate).

    ``gains`` is :math:`U(z) - U(\emptyset)` for single samples and
    :math:`(U(z) - U(D \setminus z)) / 2` for pairs.
    """
    n = masks.shape[1]
    centred = masks - (sizes / n)[:, None]
    return centred * (gains / d)[:, None] + delta / n


class _KernelSums:
    r"""A batch's sums from which the moments of the vectors :math:`x_k` follow, without the ``b x N`` array.

    With :math:`a_k = g_k / d` and :math:`x_k = a_k (z_k - \tfrac{s_k}{N}) + \tfrac{\Delta}{N}`, and
    :math:`z^2 = z`:

    .. math::

        \sum_k (x_{ki} - \tfrac{\Delta}{N}) = \sum_k a_k z_{ki} - \sum_k a_k \tfrac{s_k}{N}, \qquad
        \sum_k (x_{ki} - \tfrac{\Delta}{N})^2 = \sum_k a_k^2 (1 - \tfrac{2 s_k}{N})\, z_{ki}
            + \sum_k a_k^2 \tfrac{s_k^2}{N^2},

    added chunk by chunk (rows in order), then turned into the batch's count, mean and
    :math:`M_2 = \sum y^2 - (\sum y)^2 / b` once (:meth:`state`). The sums of squares are formed without
    centring (of :math:`x - \Delta/N`): a sample mean ``m`` against a spread ``sigma`` costs about
    :math:`\log_{10}(m^2/\sigma^2)` of the 16 digits of the standard errors, none of the values.
    """

    def __init__(self, n_players: int, d: float) -> None:
        self.n, self.d = n_players, d
        self.member_sums = np.zeros((2, n_players))
        self.shift, self.shift_sq, self.count = 0.0, 0.0, 0

    def add(self, masks: NDArray[np.bool_], sizes: NDArray[np.int64], gains: NDArray[np.float64]) -> None:
        """Add the samples of coalitions ``masks`` of ``sizes`` with ``gains`` (see :func:`kernel_samples`)."""
        from ._sampling._gt_kernels import add_weighted_members  # numba loads on first use

        a = np.ascontiguousarray(gains, dtype=float) / self.d
        share = sizes / self.n
        add_weighted_members(np.ascontiguousarray(masks).view(np.uint8), a, a * a * (1.0 - 2.0 * share),
                              self.member_sums)
        self.shift += float(a @ share)
        self.shift_sq += float((a * share) @ (a * share))
        self.count += masks.shape[0]

    def state(self, delta: float) -> MeanState:
        """The batch's count, mean and :math:`M_2` of the vectors :math:`x_k`."""
        total = self.member_sums[0] - self.shift
        count = max(self.count, 1)
        m2 = np.maximum(self.member_sums[1] + self.shift_sq - total * total / count, 0.0)
        return MeanState(self.n, self.count, total / count + delta / self.n, m2)


def _kernel_batch(game: GameLike, anchors: Anchors, paired: bool, cumulative: NDArray[np.float64], d: float,
                  rng: np.random.Generator, size: int) -> tuple[MeanState, int]:
    """The ``sample_batch`` of :func:`unbiased_kernel_shapley`: ``size`` units, drawn, evaluated and added by
    chunks of about ``2**22`` mask cells."""
    n = game.n_players
    sums, made = _KernelSums(n, d), 0
    for rows in evaluation_chunks(size, n * (2 if paired else 1)):
        count = rows.stop - rows.start
        sizes = _draw_sizes(rng, cumulative, count)
        masks = draw_small_sides(rng, sizes, n).masks
        if paired:
            utilities = check_utilities(game.evaluate(np.concatenate([masks, ~masks])), 2 * count)
            gains = (utilities[:count] - utilities[count:]) / 2.0
        else:
            gains = check_utilities(game.evaluate(masks), count) - anchors.empty
        sums.add(masks, sizes, gains)
        made += count * (2 if paired else 1)
    return sums.state(anchors.full - anchors.empty), made


@register_finalizer("unbiased_kernel_shapley")
@dataclass(frozen=True)
class KernelFinalizer(Finalizer):
    """The final step of :func:`unbiased_kernel_shapley`: the values are the samples' mean."""

    def finalize(self, state: MeanState, record: SamplingRecord) -> tuple[np.ndarray, np.ndarray, dict]:
        return state.mean.copy(), state.stderr, {}


@dataclass(frozen=True, kw_only=True)
class KernelSpec(SamplingSpec):
    """:func:`unbiased_kernel_shapley` for :func:`~._sampling._driver.drive`: a unit is a coalition drawn
    from the Shapley kernel (with ``paired``, and its complement), reduced to its vector of ``N`` terms."""

    paired: bool

    def units(self, budget: object, options: SamplingOptions) -> int | None:
        if self.n_players < 2 and budget is None:
            raise ValueError(ONE_PLAYER)
        return super().units(budget, options)

    def fingerprint_options(self, n_units: int | None) -> dict:
        return {"paired": self.paired}

    def enumeration_info(self, empty_utility: float | None) -> dict:
        return {"options": {"paired": self.paired}, "paired": self.paired}

    def start(self, game: GameLike, run: Run, anchors: Anchors | None) -> Sampler:
        anchors = cast(Anchors, anchors)  # both anchors are always needed
        if self.n_players < 2:
            raise ValueError(ONE_PLAYER)
        weights, d = shapley_kernel_sizes(self.n_players)
        options = {"paired": self.paired}
        info = {"options": options, "paired": self.paired, "batch_size": run.batch_size,
                "empty_utility": anchors.empty, "full_utility": anchors.full, "kernel_d": d}
        record = SamplingRecord(KernelFinalizer(), options, empty_utility=anchors.empty, full_utility=anchors.full,
                                seeds=(run.entropy,))
        sample = partial(_kernel_batch, game, anchors, self.paired, np.cumsum(weights), d)
        return Sampler(sample, info, record)


@documents_sampling_options
def unbiased_kernel_shapley(game: GameLike, budget: int | None, seed: int | np.random.SeedSequence | None = None, *,
                            paired: bool = True, batch_size: int | None = None, n_jobs: int | None = None,
                            progress: bool | None = None, empty_utility: float | None = None,
                            target_stderr: float | None = None, target_rank_correlation: float | None = None,
                            checkpoint: str | os.PathLike[str] | None = None,
                            checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""Shapley values by unbiased KernelSHAP (Covert & Lee, AISTATS 2021), in ``O(N)`` per sample.

    Coalitions :math:`z` are drawn from the Shapley kernel (a size ``s`` in
    ``1 .. N-1`` with probability :math:`\propto 1/(s(N-s))`, then a uniform
    coalition of that size); each gives the vector

    .. math::

        x = \frac{(z - \tfrac{s}{N}\mathbf 1)\,(U(z) - U(\emptyset))}{d} + \frac{U(D) - U(\emptyset)}{N}\,\mathbf 1,
        \qquad d = \tfrac12 - \frac{\mathbb E[s(s-1)]}{N(N-1)},

    and the values are the mean of the vectors: the solution of KernelSHAP's
    weighted least-squares problem with the exact :math:`\mathbb E[z z^\top]`
    in place of its sample estimate, which makes the estimate unbiased and
    its standard error the samples' (see
    :mod:`shapley_research.estimators._kernel_shapley` for the derivation).
    Every sample sums to :math:`U(D) - U(\emptyset)`, so efficiency holds
    exactly; a null player's value is 0 only in expectation.

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
        Evaluate each drawn coalition with its complement and average the two
        vectors (Covert & Lee's paired sampling): :math:`U(\emptyset)` then
        enters only through :math:`U(D) - U(\emptyset)`, and on games whose
        utility grows with the coalition the variance drops several-fold.
        ``False``: one coalition per sample.
    batch_size, n_jobs, progress
        As in :func:`~shapley_research.permutation_shapley`; a batch holds
        samples (pairs or coalitions), about ``2**22`` mask cells by default.
    empty_utility : float, optional
        Use this value as ``U(empty)`` instead of evaluating it.
{sampling}
    Returns
    -------
    ValuationResult
        ``method="unbiased_kernel_shapley"``; ``n_samples`` counts pairs (or
        coalitions), ``stderr`` the standard error of each value;
        ``info["kernel_d"]`` is :math:`d`. Runs with different seeds combine
        with :func:`~shapley_research.merge_results`.
    """
    n = check_game(game)
    paired = check_bool(paired, "paired")
    options = SamplingOptions.checked(
        game, "unbiased_kernel_shapley", batch_size=batch_size, n_jobs=n_jobs, progress=progress,
        empty_utility=empty_utility, target_stderr=target_stderr, target_rank_correlation=target_rank_correlation,
        checkpoint=checkpoint, checkpoint_interval=checkpoint_interval)
    unit = "coalition pair" if paired else "kernel coalition"
    return drive(KernelSpec(method="unbiased_kernel_shapley", n_players=n, dim=n, per_unit=2 if paired else 1,
                            unit_name=unit, desc="unbiased KernelSHAP", progress_unit="coalition",
                            needs_empty=True, needs_full=True, paired=paired),
                 game, budget, seed, options)
