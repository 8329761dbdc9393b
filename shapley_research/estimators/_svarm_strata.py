r"""The batches and state of Stratified SVARM, and the stratum statistics read from it.

The state of :func:`~shapley_research.stratified_svarm_shapley` holds, per
player ``i`` and coalition size ``k``, the count, sum and sum of squares of
the centred utilities of the sampled coalitions of size ``k`` that contain
``i`` (entry ``k N + i`` of each of the three blocks, the layout in which a
batch's sums are added), then the same per size over all sampled coalitions:
``3 (N + 1)^2`` running moments (:class:`SizedSums`, filled batch by batch by
:class:`CoalitionBatches`, a chunk of evaluations at a time). The strata
:math:`\phi^+_{i,k-1}` (members) and :math:`\phi^-_{i,k}` (the others) are
read from them (:func:`stratum_statistics`, :func:`stratum_estimates`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._sampling._loop import COMPILED_MERGE_DIM, MeanState, evaluation_chunks
from ._sampling._subsets import random_subsets
from ._sampling._without_replacement import draw_coalitions
from .._validation import check_utilities


def block_size(n: int) -> int:
    """Entries of one per-(player, size) block of the state."""
    return n * (n + 1)


class SizedSums:
    r"""The sums over a batch's coalitions from which the state's batch statistics follow.

    The vector of sample ``t`` (coalition :math:`A_t`, size :math:`k_t`, centred
    utility :math:`u_t`) holds, for every player ``i`` and size ``k``,
    :math:`c = [i \in A_t, k_t = k]`, :math:`u_t c` and :math:`u_t^2 c`, then
    per size :math:`[k_t = k]`, :math:`u_t [k_t = k]` and :math:`u_t^2 [k_t = k]`.
    Their sums are sums over the members of each coalition: the chunks of a
    batch are kept packed to bits as they come (:meth:`add`: ``N / 8`` bytes a
    coalition), then added all at once, a compiled sweep per row in a stable
    order by size (:meth:`state`: in row order for every entry, as a
    ``np.bincount`` over the members would add them, and each size's line of
    sums loaded once per batch rather than once per chunk), and
    :math:`M_2 = \sum x^2 - (\sum x)^2 / b` follows from the same sums
    (:math:`c^2 = c`) plus one of :math:`u^4`.
    """

    def __init__(self, n_players: int, sizes: np.ndarray) -> None:
        self.n_players = n_players
        self.sizes = np.asarray(sizes, dtype=np.int64)  # of the batch's coalitions, in row order
        self.utilities = np.empty(self.sizes.size)
        self.bits = np.empty((self.sizes.size, (n_players + 7) // 8), dtype=np.uint8)

    def add(self, rows: slice, masks: np.ndarray, u: np.ndarray) -> None:
        """Keep the coalitions ``masks`` (the batch's ``rows``, in order) with their centred utilities ``u``."""
        self.utilities[rows] = np.asarray(u, dtype=float)
        self.bits[rows] = np.packbits(masks, axis=1)

    def totals(self) -> SizedBatch:
        """The batch's sums: the members' blocks in one compiled pass, in a stable order by size."""
        from ._sampling._gt_kernels import add_sized_member_moments

        n = self.n_players
        powers = (self.utilities, self.utilities**2, self.utilities**4)  # u, u^2, u^4: contiguous floats
        sized = np.zeros((n + 1, 4, n))  # [size, moment, player]: one line per row and moment
        add_sized_member_moments(self.bits, np.argsort(self.sizes, kind="stable"), self.sizes, *powers, sized)
        by_size = [np.bincount(self.sizes, weights=w, minlength=n + 1).astype(float) for w in (None, *powers)]
        return SizedBatch(self.sizes.size, sized, np.stack(by_size))


@dataclass
class SizedBatch:
    r"""A batch of Stratified SVARM as its sums, the form in which it merges into the run's state.

    ``sized``: ``(N + 1, 4, N)`` sums of :math:`c`, :math:`u c`, :math:`u^2 c`
    and :math:`u^4 c` by size and player; ``by_size``: ``(4, N + 1)`` sums of
    ``1``, ``u``, ``u^2``, ``u^4`` by size. :meth:`merge_into` forms each
    entry's batch mean and :math:`M_2` where it merges them (the bits of
    :meth:`moments` then :meth:`MeanState.merge`), so a batch's ``O(N^2)``
    moments are never written out.
    """

    count: int
    sized: np.ndarray
    by_size: np.ndarray

    @property
    def dim(self) -> int:
        """Length of the state's vectors."""
        n = self.sized.shape[2]
        return 3 * block_size(n) + 3 * (n + 1)

    def moments(self) -> MeanState:
        """The batch's count, mean and :math:`M_2`."""
        from ._sampling._gt_kernels import side_moments_by_size, sized_member_moments

        head = 3 * block_size(self.sized.shape[2])
        mean, m2 = np.empty(self.dim), np.empty(self.dim)
        sized_member_moments(self.sized, self.count, mean, m2)
        side_moments_by_size(self.by_size, self.count, mean[head:], m2[head:])
        return MeanState(self.dim, self.count, mean, m2)

    def merge_into(self, state: MeanState) -> None:
        """Merge the batch into ``state`` as ``state.merge(self.moments())`` would, in one pass."""
        from ._sampling._gt_kernels import merge_moments, merge_sized_member_moments, side_moments_by_size

        if state.dim != self.dim:
            raise ValueError(f"cannot merge states of dimension {state.dim} and {self.dim}.")
        if self.count == 0:
            return
        if state.count == 0 or self.dim < COMPILED_MERGE_DIM:  # the first batch is the state; small ones: numpy
            batch = self.moments()
            if state.count == 0:
                state.count, state.mean, state.m2 = batch.count, batch.mean, batch.m2
            else:
                state.merge(batch)
            return
        weight, cross = state.merge_weights(self.count)
        before_mean, before_m2 = (np.ascontiguousarray(a, dtype=float) for a in (state.mean, state.m2))
        mean, m2 = np.empty(self.dim), np.empty(self.dim)  # new arrays: a snapshot may hold the old ones
        merge_sized_member_moments(self.sized, self.count, before_mean, before_m2, weight, cross, mean, m2)
        head = 3 * block_size(self.sized.shape[2])
        tail_mean, tail_m2 = np.empty(self.dim - head), np.empty(self.dim - head)
        side_moments_by_size(self.by_size, self.count, tail_mean, tail_m2)
        merge_moments(before_mean[head:], before_m2[head:], tail_mean, tail_m2, weight, cross, mean[head:], m2[head:])
        state.count, state.mean, state.m2 = state.count + self.count, mean, m2


def batch_state(masks: np.ndarray, sizes: np.ndarray, u: np.ndarray) -> MeanState:
    """Count, mean and M2 of the per-sample vectors of coalitions ``masks`` of ``sizes`` (:class:`SizedSums`)."""
    sums = SizedSums(masks.shape[1], sizes)
    sums.add(slice(0, masks.shape[0]), masks, u)
    return sums.totals().moments()


def size_sums(sums: np.ndarray, n: int):
    """Per size ``k = 0..N``, the count, sum and sum of squares of the sampled utilities (from summed stats)."""
    start = 3 * block_size(n)
    return tuple(sums[start + j * (n + 1):start + (j + 1) * (n + 1)] for j in range(3))


def stratum_statistics(state: MeanState, n: int):
    """Per (player, size) counts, sums and sums of squares of the members (``in``) and the others (``out``)."""
    sums = state.mean * state.count
    block = block_size(n)
    # entry (player i, size k) at k N + i: (N + 1, N) blocks, copied to (N, N + 1) ones (the elementwise work
    # downstream runs twice as fast on rows than on transposed views)
    c_in, y_in, q_in = (np.ascontiguousarray(sums[j * block:(j + 1) * block].reshape(n + 1, n).T) for j in range(3))
    c, y, q = size_sums(sums, n)
    return (np.rint(c_in), y_in, q_in), (np.rint(c) - np.rint(c_in), y - y_in, q - q_in)


def nearest_filled(means: np.ndarray, filled: np.ndarray) -> np.ndarray:
    """``means`` with each unfilled entry of a row replaced by the nearest filled one (ties: the smaller size).

    Every row of Stratified SVARM's strata holds a filled entry (its exact strata).
    """
    from ._sampling._gt_kernels import nearest_filled_rows

    out = np.empty_like(means, dtype=float)
    nearest_filled_rows(np.ascontiguousarray(means, dtype=float), np.ascontiguousarray(filled, dtype=bool), out)
    return out


def stratum_estimates(stats, offset: int, exact: dict, n: int):
    """Means, variances and counts of one sign's strata ``l = 0..N-1``.

    ``stats`` are indexed by coalition size ``k``; the sampled sizes
    ``2..N-2`` are the strata ``l = k + offset`` (``None`` when ``N < 4``: no
    size is sampled). The ``exact`` strata have an infinite count (no
    sampling error).
    """
    from ._sampling._gt_kernels import fill_strata

    means, variances, counts = np.zeros((n, n)), np.full((n, n), np.nan), np.zeros((n, n))
    if stats is not None:  # mean, variance (rounding can make the spread negative: 0) and count, compiled
        count, total, square = (np.asarray(a, dtype=float)[:, 2:n - 1] for a in stats)
        fill_strata(count, total, square, 2 + offset, means, variances, counts)
    for level, values in exact.items():
        means[:, level], variances[:, level], counts[:, level] = values, 0.0, np.inf
    return means, variances, counts


def pooled_variances(variances: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per size, the variance pooled over the players whose stratum has two samples or more (NaN if none)."""
    from ._sampling._gt_kernels import pooled_column_sums

    weighted, weights = np.zeros(variances.shape[1]), np.zeros(variances.shape[1])  # no rows: 0 / 0
    pooled_column_sums(np.asarray(variances, dtype=float), np.asarray(counts, dtype=float), weighted, weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        return weighted / weights


def size_variances(state: MeanState, n: int) -> np.ndarray:
    """Per size ``k = 2..N-2``, the variance of the utility of the sampled coalitions (NaN below two)."""
    c, y, q = (a[2:n - 1] for a in size_sums(state.mean * state.count, n))
    c = np.rint(c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 1, np.maximum(q - y**2 / np.maximum(c, 1), 0.0) / np.maximum(c - 1, 1), np.nan)


def evaluate_batch(game, masks: np.ndarray) -> np.ndarray:
    """Checked utilities of one batch of coalitions (module level, so joblib workers can run it)."""
    return check_utilities(game.evaluate(masks), masks.shape[0])


class CoalitionBatches:
    """The ``sample_batch`` of :func:`run_sampling`: sampled coalitions reduced to the state (:func:`batch_state`).

    Sizes from ``probabilities`` over ``levels``; with a ``planned`` batch (strata without replacement) the
    sizes and offsets in the strata's orders come from :func:`_stratum_planner`.
    """

    def __init__(self, game, n_players: int, levels: np.ndarray, probabilities: np.ndarray, entropy: int,
                 reference: float):
        self.game, self.n_players, self.levels, self.probabilities = game, n_players, levels, probabilities
        self.entropy, self.reference = entropy, reference

    def __call__(self, rng: np.random.Generator, size: int, planned=None):
        n = self.n_players
        if planned is None:  # every stratum with replacement: sizes and coalitions from the batch's stream
            sizes, offsets = rng.choice(self.levels, size=size, p=self.probabilities), None
        else:
            sizes, offsets = planned
        sums = SizedSums(n, sizes)
        for rows in evaluation_chunks(size, n):  # drawn, evaluated and added chunk by chunk
            masks = (random_subsets(rng, sizes[rows], n) if offsets is None
                     else draw_coalitions(rng, sizes[rows], offsets[rows], n, self.entropy))
            sums.add(rows, masks, evaluate_batch(self.game, masks) - self.reference)
        return sums.totals(), size
