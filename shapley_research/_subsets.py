"""Uniform random subsets of given sizes, drawn fast (the group-testing sampler).

A subset is drawn as its *small side* (the subset or its complement, whichever
has at most half of the players): small sides player by player with
replacement, large ones as Bernoulli cells, both topped up with uniform new
players to the exact size. :func:`_draw_small_sides` says why every subset of
a size is equally likely. The cost is ``O(min(k, P - k))`` per row for small
sides and a few byte operations per player for large ones.
"""

from __future__ import annotations

import numpy as np

__all__ = ["random_subsets"]


# A test's coalition is drawn as its *small side*: the coalition or its complement, whichever has
# at most half of the players, marked in a uint8 cell matrix (see _draw_small_sides).
_TAG_CAP = 254  # players a row draws per round; the uint8 tags 1..254 tell a row's draws apart
_LISTED_FRACTION = 0.05  # small sides up to this fraction of the players (or _LISTED_MIN) are listed
_LISTED_MIN = 64
_tag_cache = [np.resize(np.arange(1, _TAG_CAP + 1, dtype=np.uint8), 1 << 16)]
_ones_cache = [np.ones(1 << 16)]
for _cache in (_tag_cache, _ones_cache):
    _cache[0].setflags(write=False)


def _ones(total: int) -> np.ndarray:
    """``total`` ones (float64, read-only), from a cache."""
    ones = _ones_cache[0]
    if ones.size < total:
        ones = np.ones(max(total, 2 * ones.size))
        ones.setflags(write=False)
        _ones_cache[0] = ones
    return ones[:total]


def _tags(total: int) -> np.ndarray:
    """``1, 2, ..., 254, 1, 2, ...`` (``total`` values): distinct over any 254 consecutive ones."""
    cycle = _tag_cache[0]
    if cycle.size < total:
        cycle = np.resize(cycle[:_TAG_CAP], max(total, 2 * cycle.size))
        cycle.setflags(write=False)
        _tag_cache[0] = cycle
    return cycle[:total]


def _listed_up_to(n_drawn: int) -> float:
    """Largest small side drawn player by player; larger ones start as Bernoulli cells."""
    return max(_LISTED_FRACTION * n_drawn, _LISTED_MIN)


def _row_counts(cells: np.ndarray) -> np.ndarray:
    """Row sums of a 0/1 ``(rows, P)`` uint8 matrix (a narrow accumulator is several times faster)."""
    narrow = np.uint16 if cells.shape[1] < 2**16 else np.int64
    return cells.sum(axis=1, dtype=narrow).astype(np.int64)


class _SmallSides:
    """The small sides of a batch of subsets.

    ``cells[t, i] != 0`` iff player ``i`` is in row ``t``'s small side (until
    :func:`_game_masks` turns ``cells`` into the game masks). The first
    ``indptr.size - 1`` rows are *listed*: their members are the entries of
    ``vals[indptr[t]:indptr[t + 1]]`` other than ``P`` (which marks a repeated
    draw) and the ``extra_vals`` whose ``extra_rows`` is ``t``. The other rows
    are *Bernoulli rows*; their members are known from ``cells`` only.
    """

    def __init__(self, cells, indptr, vals, extra_rows, extra_vals):
        self.cells, self.indptr, self.vals = cells, indptr, vals
        self.extra_rows, self.extra_vals = extra_rows, extra_vals

    @property
    def n_listed(self) -> int:
        return self.indptr.size - 1


def _draw_small_sides(rng: np.random.Generator, m: np.ndarray, n_drawn: int, n_listed: int) -> _SmallSides:
    r"""Row ``t``: a uniform ``m[t]``-subset of ``n_drawn`` players; rows ``t >= n_listed`` need ``m[t] > 0``.

    *Listed rows* (``t < n_listed``, meant for small ``m``) start with the
    distinct players among ``min(m, 254)`` uniform draws with replacement.
    *Bernoulli rows* (large ``m``) start with the players whose independent
    uniform byte lies below a threshold chosen from row counts, at most ``m``
    of them (:func:`_bernoulli_cells`). Every row is then topped up with
    uniform new players until it holds exactly ``m`` (:func:`_top_up`).

    *Uniformity.* Every decision (how many players a row draws, its
    thresholds, whether it draws new bytes, which draws it keeps) depends only
    on counts, on positions in the sequence of draws and on whether a drawn
    player is already in the row, never on which player it is. Relabelling
    the players by a permutation (of every drawn player and of the cells'
    bytes) maps each run of the procedure to an equally likely run whose
    result is the permuted result. So the law of a row's result is invariant
    under permutations of the players, and as the result always has ``m``
    players, it is the uniform law on the ``m``-subsets. Rows use disjoint
    random draws, so they are independent given ``m``.

    *Cost.* A listed row costs ``O(m)`` (a Bernoulli row ``O(P)`` byte
    operations, cheaper per player once ``m`` is above a few percent of
    ``P``); repeats are found through the cell matrix, without sorting and
    without counting over whole rows: each round writes uint8 tags, distinct
    among a row's draws of that round, with ``np.maximum.at``, and a draw
    found a new player iff its cell was empty and holds its tag afterwards.
    """
    p, rows_total = n_drawn, m.size
    cells = np.empty((rows_total, p), dtype=np.uint8)
    cells[:n_listed] = 0  # _bernoulli_cells writes every cell of the other rows
    flat = cells.reshape(-1)
    need = np.empty(rows_total, dtype=np.int64)
    # listed rows, first round
    counts = np.minimum(m[:n_listed], _TAG_CAP)
    indptr = np.zeros(n_listed + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    vals = _uniform_ints(rng, p, int(indptr[-1]))
    pos = np.repeat(np.arange(0, n_listed * p, p), counts)
    pos += vals
    tags = _tags(vals.size)
    np.maximum.at(flat, pos, tags)
    repeated = np.flatnonzero(flat[pos] != tags)
    need[:n_listed] = m[:n_listed] - counts
    if repeated.size:
        need[:n_listed] += np.bincount(pos[repeated] // p, minlength=n_listed)
        vals[repeated] = p
    # Bernoulli rows
    if n_listed < rows_total:
        need[n_listed:] = m[n_listed:] - _bernoulli_cells(rng, cells[n_listed:], m[n_listed:])
    extra_rows, extra_vals = _top_up(rng, flat, p, m, need, n_listed)
    return _SmallSides(cells, indptr, vals, extra_rows, extra_vals)


def _bernoulli_cells(rng: np.random.Generator, cells: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Write into every cell of ``cells`` rows of at most ``m`` players each; returns the row sizes.

    Every cell gets an independent uniform byte ``r`` and a row takes the
    players with ``r`` below a threshold, chosen from row counts only: first
    about 2.5 standard deviations short of ``m`` (a row above ``m`` even then
    gets new bytes), then, from the count ``x`` at that threshold, a higher
    one that adds about ``m - x`` players less one standard deviation of that
    addition (lowered one step at a time, never below the first, while the
    row exceeds ``m``). That leaves the top-up about one standard deviation
    of the second step plus the threshold's rounding to add, typically half
    of the ``sqrt(m)`` a single threshold would leave.
    """
    d, p = cells.shape
    raw = _random_bytes(rng, d * p).reshape(d, p)
    bits = cells.view(bool)
    mf = m.astype(float)
    spread = np.sqrt(mf * (1.0 - mf / p))
    low = np.floor(np.maximum(mf - 2.5 * spread - 1.0, 0.0) * (256.0 / p)).astype(np.uint8)
    np.less(raw, low[:, None], out=bits)
    sizes = _row_counts(cells)
    over = np.flatnonzero(sizes > m)
    while over.size:
        raw[over] = _random_bytes(rng, over.size * p).reshape(over.size, p)
        block = np.less(raw[over], low[over, None])
        bits[over] = block
        sizes[over] = _row_counts(block.view(np.uint8))
        over = over[sizes[over] > m[over]]
    free, want = p - sizes, m - sizes
    levels = 256 - low.astype(np.int64)
    more = np.maximum(want - np.sqrt(want * (free - want) / free) - 1.0, 0.0)
    high = (low + np.floor(more * levels / free)).astype(np.uint8)  # <= low + levels - 1 = 255
    np.less(raw, high[:, None], out=bits)
    sizes = _row_counts(cells)
    over = np.flatnonzero(sizes > m)
    while over.size:
        high[over] -= 1
        block = np.less(raw[over], high[over, None])
        bits[over] = block
        sizes[over] = _row_counts(block.view(np.uint8))
        over = over[sizes[over] > m[over]]
    return sizes


def _random_bytes(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` independent uniform bytes (the generator's raw 64-bit output, as bytes)."""
    return rng.bit_generator.random_raw(-(-size // 8)).view(np.uint8)[:size]


def _uniform_ints(rng: np.random.Generator, high: int, size: int) -> np.ndarray:
    """``size`` independent uniform int32 in ``[0, high)``, exactly (Lemire's multiply-shift).

    Four 16-bit draws per raw 64-bit word, ``u * high >> 16`` rejected when
    ``u * high mod 2**16 < 2**16 mod high`` (which makes it exactly uniform);
    rejected draws (under ``high / 2**16`` of them) are replaced by
    ``rng.integers``. About twice as fast as ``rng.integers``.
    """
    if high > 2**16:
        return rng.integers(0, high, size).astype(np.int32)
    x = np.multiply(rng.bit_generator.random_raw(-(-size // 4)).view(np.uint16)[:size], np.uint32(high),
                    dtype=np.uint32)
    rejected = np.flatnonzero(x.astype(np.uint16) < 2**16 % high)
    values = (x >> 16).view(np.int32)
    if rejected.size:
        values[rejected] = rng.integers(0, high, rejected.size)
    return values


def _top_up(rng: np.random.Generator, flat: np.ndarray, p: int, m: np.ndarray, need: np.ndarray,
            n_listed: int) -> tuple[np.ndarray, np.ndarray]:
    """Add uniform new players until row ``t`` has ``m[t]`` (``need[t]`` missing).

    Returns the players added to listed rows (``t < n_listed``), as row and player indices.

    The first round draws as many players as a row lacks, so it cannot take
    a row past its size. Later rounds, for the few players still missing,
    draw more than that (so that one round usually completes a row) and keep
    a row's first ``left`` new players in the order of its draws (a new
    player counted at the draw that holds its tag); the others are removed
    again. Either rule depends on positions in the sequence of draws and on
    whether a player is new, never on which player it is.
    """
    rows = np.flatnonzero(need)
    left = need[rows]
    extra_rows, extra_vals = [], []
    first = True
    while rows.size:
        if first:
            counts = np.minimum(left, _TAG_CAP)
        else:  # a draw is new with probability (p - players in the row) / p
            counts = np.ceil((left + 2.0 * np.sqrt(left) + 2.0) * (p / (p - m[rows] + left))).astype(np.int64)
            np.clip(counts, left, _TAG_CAP, out=counts)
        ptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        vals = _uniform_ints(rng, p, int(ptr[-1]))
        pos = np.repeat(rows * p, counts)
        pos += vals
        tags = _tags(vals.size)
        new = flat[pos] == 0
        np.maximum.at(flat, pos, tags)
        new &= flat[pos] == tags
        if first:
            got = np.add.reduceat(new.view(np.uint8), ptr[:-1], dtype=np.int64)
        else:
            rank = np.cumsum(new)
            before = rank[ptr[:-1]] - new[ptr[:-1]]
            got = np.minimum(rank[ptr[1:] - 1] - before, left)
            surplus = np.flatnonzero(new & (rank > np.repeat(before + left, counts)))
            flat[pos[surplus]] = 0
            new[surplus] = False
        listed = int(np.searchsorted(rows, n_listed))
        if listed:
            found = np.flatnonzero(new[:ptr[listed]])
            extra_rows.append(pos[found] // p)
            extra_vals.append(vals[found])
        left = left - got
        more = left > 0
        rows, left = rows[more], left[more]
        first = False
    if not extra_rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
    return np.concatenate(extra_rows), np.concatenate(extra_vals)


def random_subsets(rng: np.random.Generator, k: np.ndarray, n_drawn: int) -> np.ndarray:
    """Boolean ``(len(k), n_drawn)`` rows, row ``t`` a uniform subset of size ``k[t]``.

    Each row is drawn as its smaller side (the subset or its complement) by
    :func:`_draw_small_sides`: small sides player by player with replacement,
    large ones as Bernoulli cells, both topped up with uniform new players
    until the side has exactly its size. No step depends on which players
    were drawn (only on counts, on positions in the sequence of draws and on
    repeats), so every subset of the row's size is equally likely (see
    :func:`_draw_small_sides`); rows are independent. The work is
    ``O(min(k, P - k))`` per row for small sides and a few byte operations per
    player for large ones, never a shuffle of all ``P`` players.
    """
    k = np.asarray(k, dtype=np.int64)
    flip = k > n_drawn // 2
    small = np.where(flip, n_drawn - k, k)
    bernoulli = small > _listed_up_to(n_drawn)
    order = np.argsort(bernoulli, kind="stable")
    sides = _draw_small_sides(rng, small[order], n_drawn, k.size - int(np.count_nonzero(bernoulli)))
    masks = np.empty((k.size, n_drawn), dtype=bool)
    masks[order] = (sides.cells != 0) != flip[order, None]
    return masks
