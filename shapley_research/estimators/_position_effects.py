r"""Position-adjusted permutation sampling: a two-way regression of the marginal contributions.

Along a uniform permutation, player ``i`` joins at a uniform position ``k``;
much of the spread of its marginal contribution :math:`\Delta_i` is due to
``k`` alone (a learning curve: large gains at small training sets, small ones
near the full set), and that part is common to all players. The additive model

.. math::

    \Delta_{i,t} \approx \alpha_i + h_{b(k_{i,t})}

(a player effect plus an effect of the position's bin :math:`b`) is fitted to
all samples by least squares, and the value is the model's mean over the
uniform position,

.. math::

    \hat s_i = \hat\alpha_i + \frac1N \sum_{k=0}^{N-1} \hat h_{b(k)}
             = \frac1T \sum_t \bigl(\Delta_{i,t} - \hat h_{b(k_{i,t})}\bigr)
               + \frac1N \sum_k \hat h_{b(k)},

a regression-adjusted Monte Carlo estimate: the position effect is estimated
from all ``N`` players' samples at once, and each player's own samples only
have to average out what is left (interactions, noise). When the
contributions are exactly a player effect plus a position effect (an additive
game plus any function of the coalition size, with one bin per position) the
values are exact once the design is connected. Efficiency holds exactly
(every permutation covers every position once). The estimate is consistent,
with an :math:`O(1/T)` bias from fitting :math:`\hat h` on the same samples.

With antithetic pairs the sample is the pair's mean and its position the
distance ``min(k, N - 1 - k)`` from the nearer end (both ends of the pair).

The sufficient statistics are, per (player, bin), the share of samples in the
bin and the mean of :math:`\Delta [b = b_{i,t}]` (with its sum of squared
deviations, for the standard errors): ``2 N B`` numbers, ``B`` the number of
bins (logarithmic in ``N``), merged exactly across batches, runs and resumes.
A batch travels as its ``O(size N)`` samples and their bins
(:class:`PositionBatch`) and forms its ``2 N B`` statistics where it merges
them, in one compiled pass over the state: beyond about 1,450 players a
default batch is one antithetic pair, and forming and merging its statistics
in numpy (ten passes over ``2 N B`` entries) cost more than evaluating it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._sampling._loop import COMPILED_MERGE_DIM, MeanState

EXACT_POSITIONS = 4  # distances from an end that get a bin of their own (the steepest part of learning curves)
GROWTH = 1.5  # ratio of consecutive bin starts further in (bins widen geometrically)
MAX_CELLS = 2**22  # cap on N x B where possible (the state holds 4 N B floats: 128 MiB at the cap)


def _half_bins(half: int, exact: int, growth: float) -> np.ndarray:
    """Bin of each distance ``0..half-1`` from an end: ``exact`` single distances, then bins starting at
    distances that grow by the factor ``growth``."""
    starts = list(range(min(exact, half)))
    start = exact
    while start < half:
        starts.append(start)
        start = max(start + 1, int(round(start * growth)))
    return np.searchsorted(np.asarray(starts), np.arange(half), side="right") - 1


def position_bins(n_players: int, antithetic: bool) -> tuple[np.ndarray, int]:
    """Bin of each position ``k = 0..N-1`` of the drawn permutation, and the number of bins ``B``.

    Positions are binned by their distance ``min(k, N - 1 - k)`` from the
    nearer end (``EXACT_POSITIONS`` single distances, then geometrically
    wider bins toward the middle) and, without ``antithetic``, by which end
    (a pair's mean is symmetric in the two ends). ``B`` grows like
    ``log N``; widths grow faster if ``N B`` would exceed ``MAX_CELLS``.
    """
    n = int(n_players)
    k = np.arange(n)
    distance = np.minimum(k, n - 1 - k)
    half = (n + 1) // 2
    sides = 1 if antithetic else 2
    growth = GROWTH
    while True:
        distance_bins = _half_bins(half, EXACT_POSITIONS, growth)
        n_half = int(distance_bins[-1]) + 1
        if n * n_half * sides <= MAX_CELLS or n_half <= EXACT_POSITIONS + 1:
            break
        growth *= 1.25
    bins = distance_bins[distance]
    if not antithetic:
        bins = bins + n_half * (k > n - 1 - k)
    return bins, n_half * sides


def batch_state(contributions: np.ndarray, positions: np.ndarray, bins: np.ndarray, n_bins: int) -> MeanState:
    r"""Sufficient statistics of a batch: per (player, bin) share of samples and mean of :math:`\Delta [b]`.

    ``contributions[t, i]`` is player ``i``'s sample of unit ``t``,
    ``positions[t, i]`` its position in the drawn permutation. The layout is
    ``[c (N x B) | D (N x B)]`` with :math:`c = [b_{i,t} = b]` and
    :math:`D = \Delta_{i,t} c`; the sums of squares of ``c`` are its sums.
    """
    return binned_state(contributions, bins[positions], n_bins)


def binned_state(contributions: np.ndarray, binned: np.ndarray, n_bins: int) -> MeanState:
    """:func:`batch_state` of samples whose bins are known: ``binned[t, i]`` the bin of ``contributions[t, i]``."""
    size, n = contributions.shape
    cells = (np.arange(n) * n_bins + binned).ravel()
    values = contributions.ravel()
    count = np.bincount(cells, minlength=n * n_bins).astype(float)
    first = np.bincount(cells, weights=values, minlength=n * n_bins)
    second = np.bincount(cells, weights=values**2, minlength=n * n_bins)
    sums = np.concatenate([count, first])
    squares = np.concatenate([count, second])
    return MeanState(sums.size, size, sums / size, np.maximum(squares - sums**2 / size, 0.0))


def player_positions(permutations: np.ndarray) -> np.ndarray:
    """``positions[t, i]``: the position of player ``i`` in permutation ``t`` (the inverse permutations)."""
    positions = np.empty_like(permutations)
    np.put_along_axis(positions, permutations, np.arange(permutations.shape[1])[None, :], axis=1)
    return positions


def reduce_by_position(contributions: np.ndarray, permutations: np.ndarray, bins: np.ndarray,
                       n_bins: int) -> PositionBatch:
    """A batch of samples along ``permutations``, to be merged as the two-way fit's statistics
    (:func:`batch_state`): a :class:`PositionBatch`."""
    binned = bins[player_positions(permutations)]
    return PositionBatch(len(contributions), np.ascontiguousarray(contributions, dtype=float), binned, n_bins,
                         np.empty((len(contributions), 0)))


@dataclass
class PositionBatch:
    """A batch of position-adjusted samples as they came, the form in which it merges into the run's state.

    ``values[t, i]``: player ``i``'s sample of unit ``t``; ``binned[t, i]``:
    the bin of its position; ``extra``: ``(count, k)`` coordinates the state
    holds after the ``2 N B`` statistics (truncation's tally). It holds and
    sends ``O(count N)`` numbers, not the ``4 N B`` of its moments, and
    :meth:`merge_into` forms and merges those in one compiled pass: the bits
    of ``state.merge(self.moments())``.
    """

    count: int
    values: np.ndarray
    binned: np.ndarray
    n_bins: int
    extra: np.ndarray

    @property
    def dim(self) -> int:
        """Length of the state's vectors."""
        return 2 * self.values.shape[1] * self.n_bins + self.extra.shape[1]

    def with_extra(self, extra: np.ndarray) -> PositionBatch:
        """The batch with the ``(count, k)`` coordinates ``extra`` appended after those it has."""
        return PositionBatch(self.count, self.values, self.binned, self.n_bins, np.column_stack([self.extra, extra]))

    def extra_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and M2 of ``extra``, as :meth:`MeanState.add_batch` forms them (so ``append_tally`` too)."""
        mean = self.extra.mean(axis=0)
        return mean, ((self.extra - mean) ** 2).sum(axis=0)

    def moments(self) -> MeanState:
        """The batch's count, mean and M2: :func:`batch_state`, then those of ``extra``."""
        state = binned_state(self.values, self.binned, self.n_bins)
        if not self.extra.shape[1]:
            return state
        mean, m2 = self.extra_moments()
        return MeanState(self.dim, self.count, np.concatenate([state.mean, mean]), np.concatenate([state.m2, m2]))

    def merge_into(self, state: MeanState) -> None:
        """Merge the batch into ``state`` as ``state.merge(self.moments())`` would, in one pass (long states)."""
        from ._sampling._gt_kernels import merge_moments, position_moments

        if state.dim != self.dim:
            raise ValueError(f"cannot merge states of dimension {state.dim} and {self.dim}.")
        if self.count == 0:
            return
        if self.dim < COMPILED_MERGE_DIM:  # numpy's expressions, as for any short state
            state.merge(self.moments())
            return
        merging = state.count > 0  # else the batch's moments are the state
        weight, cross = state.merge_weights(self.count) if merging else (0.0, 0.0)
        before_mean, before_m2 = (np.ascontiguousarray(a, dtype=float) for a in (state.mean, state.m2))
        mean, m2 = np.empty(self.dim), np.empty(self.dim)  # new arrays: a snapshot may hold the old ones
        position_moments(self.binned, self.values, self.n_bins, self.count, merging, before_mean, before_m2,
                         weight, cross, mean, m2)
        head = self.dim - self.extra.shape[1]
        if head < self.dim:
            tail_mean, tail_m2 = self.extra_moments()
            if merging:
                merge_moments(before_mean[head:], before_m2[head:], tail_mean, tail_m2, weight, cross,
                              mean[head:], m2[head:])
            else:
                mean[head:], m2[head:] = tail_mean, tail_m2
        state.count, state.mean, state.m2 = state.count + self.count, mean, m2


def fit(state: MeanState, bins: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Values and standard errors from the merged statistics.

    Eliminating :math:`\alpha` from the normal equations leaves a ``B x B``
    system :math:`(\operatorname{diag}(\bar n) - C^\top C)\,h = \bar S - C^\top \bar\Delta`
    (``C`` the per-player shares, :math:`\bar n` its column sums,
    :math:`\bar S` the per-bin means), singular only along a common shift of
    ``h``, which the value does not see; it is solved by least squares. The
    standard error of :math:`\hat s_i` is that of the mean of the residuals
    :math:`\Delta_{i,t} - \hat h_{b(k_{i,t})}`, treating :math:`\hat h` as
    known (its own error is of order :math:`1/T` relative to theirs).
    """
    n = bins.size
    cells = n * n_bins
    share = state.mean[:cells].reshape(n, n_bins)
    masked = state.mean[cells:].reshape(n, n_bins)
    delta = masked.sum(axis=1)
    per_bin = share.sum(axis=0)
    system = np.diag(per_bin) - share.T @ share
    effects = np.linalg.lstsq(system, masked.sum(axis=0) - share.T @ delta, rcond=None)[0]
    alpha = delta - share @ effects
    values = alpha + effects[bins].mean()
    t = state.count
    if t < 2:
        return values, np.full(n, np.nan)
    square = state.m2[cells:].reshape(n, n_bins) / t + masked**2  # mean of (Delta [b])^2
    second = (square - 2.0 * effects * masked + effects**2 * share).sum(axis=1)
    variance = np.maximum(second - alpha**2, 0.0) * t / (t - 1)
    return values, np.sqrt(variance / t)
