"""Compiled loops of the group-testing sampler (numba, ``cache=True``: compiled once, then loaded from disk).

A row's small side (the coalition or its complement, whichever is smaller)
is drawn one of two ways, both exactly uniform:

* *sparse* rows, by Floyd's algorithm: ``O(1)`` per member of the small side
  (2 to 3.5 ns), members listed for a scatter-add of the moments (about
  1.7 ns per member);
* *dense* rows (small side of at least a tenth of the players), by a coin per
  player then a uniform fix-up of the count (about 0.3 ns per player), the
  moments added by a pass over the row (0.2 to 0.35 ns per player).

Timings at 1,000 players; the two costs per row cross near a tenth.

In numpy, exact small random integers, repeat detection and scatter-adds cost
several nanoseconds per member, plus a dense pass per large side, which kept
group testing at about twice the cost of evaluating a 1 ns-per-cell game.

The other samplers' per-batch reductions live here too: MSR Banzhaf's
and unbiased KernelSHAP's weighted member sums, Beta Shapley's nested
coalitions, the compiled merge of long states, Stratified SVARM's sums,
one-pass merge and strata, and position adjustment's one-pass merge. Those
that replace a numpy expression name it and keep its operations in its order
(numpy's bits); the kernels compiled with ``_FAST`` reassociate their sums.
"""

from __future__ import annotations

import numba
import numpy as np

_U11, _U3, _U24, _U40, _U32 = (np.uint64(b) for b in (11, 3, 24, 40, 32))
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)
_HIGH_BITS = np.uint64(0x8080808080808080)  # the high bit of each byte
_LOW_BITS = np.uint64(0x0101010101010101)  # the low bit of each byte
_U7, _U8, _U56, _BYTE = np.uint64(7), np.uint64(8), np.uint64(56), np.uint64(0xFF)
_FAST = {"reassoc", "nsz", "arcp", "contract"}  # reassociated sums vectorise: rounding-level differences


@numba.njit(cache=True, nogil=True, inline="always")
def _sfc64(a, b, c, w):
    """One step of SFC64 (numpy's ``sfc64_next``): the output and the new state."""
    out = a + b + w
    return out, b ^ (b >> _U11), c + (c << _U3), ((c << _U24) | (c >> _U40)) + out, w + np.uint64(1)


@numba.njit(cache=True, nogil=True, inline="always")
def _floyd_step(word, k, m, cells, on, vals):
    """Step ``k`` of Floyd's algorithm for an ``m``-subset of ``cells`` with the uniform 32-bit ``word``.

    Returns ``k + 1``, or ``k`` if the word is rejected. ``j = word * (top + 1)
    >> 32`` (Lemire's multiply-shift) is uniform in ``[0, top]``,
    ``top = P - m + k``, once words whose low product half is below
    ``2**32 mod (top + 1)`` are rejected; ``top`` joins instead of ``j`` if
    ``j`` is in the side already, a select rather than a branch (a
    mispredicted branch per repeat would cost more than the draw). The
    joining player's cell is set to ``on`` and it is written to ``vals[k]``.
    """
    top = cells.size - m + k
    bound = np.uint64(top + 1)
    x = word * bound
    if x & _LOW32 < bound and x & _LOW32 < _TWO32 % bound:  # rare
        return k
    j = np.int64(x >> _U32)
    j += (top - j) * np.int64(cells[j] == on)
    cells[j] = on
    vals[k] = j
    return k + 1


@numba.njit(cache=True, nogil=True)
def fill_small_sides(state, masks, small, flip, sparse, dense, indptr, vals):
    """Draw the small sides of the rows of ``masks`` (``uint8``, 0/1): rows ``sparse`` by Floyd, ``dense`` by coins.

    Row ``t`` is set to ``flip[t]``, then ``small[t]`` players join its small
    side (their cells set to ``1 - flip[t]``). Sparse rows list the joining
    players in ``vals[indptr[t]:indptr[t + 1]]``: step ``k`` of Floyd's
    algorithm draws ``j`` uniform in ``[0, P - m + k]`` and adds it, or adds
    ``P - m + k`` if ``j`` is in the side already; the side is then a uniform
    ``m``-subset. Sparse rows go two at a time, the first drawing from the
    high and the second from the low 32 bits of the same outputs of the SFC64
    generator ``state`` (advanced in place), until both are complete: their
    two chains of steps overlap (about 1.3x faster than one row at a time).
    Dense rows follow, one at a time (:func:`_coin_row`).
    """
    a, b, c, w = state[0], state[1], state[2], state[3]
    for i in range(0, sparse.size, 2):
        t, u = sparse[i], sparse[min(i + 1, sparse.size - 1)]  # an odd last row pairs with itself, drawn once
        first, second = masks[t], masks[u]
        first[:] = flip[t]
        second[:] = flip[u]
        on_first, on_second = np.uint8(1 - flip[t]), np.uint8(1 - flip[u])
        m_first, m_second = small[t], small[u] if u != t else 0
        vals_first, vals_second = vals[indptr[t]:indptr[t + 1]], vals[indptr[u]:indptr[u + 1]]
        k_first = k_second = 0
        while k_first < m_first or k_second < m_second:
            out, a, b, c, w = _sfc64(a, b, c, w)
            if k_first < m_first:
                k_first = _floyd_step(out >> _U32, k_first, m_first, first, on_first, vals_first)
            if k_second < m_second:
                k_second = _floyd_step(out & _LOW32, k_second, m_second, second, on_second, vals_second)
    for t in dense:
        a, b, c, w = _coin_row(a, b, c, w, masks[t], small[t], flip[t])
    state[0], state[1], state[2], state[3] = a, b, c, w


@numba.njit(cache=True, nogil=True, inline="always")
def _coin_row(a, b, c, w, cells, m, flip):
    """Make ``cells`` (0/1 bytes) a uniform subset whose small side, the cells ``!= flip``, has ``m`` members.

    Every player first joins with the same probability ``thr / 256``,
    ``thr = round(256 m / P) <= 128``: the random bytes of SFC64 outputs are
    compared with ``thr`` eight at a time (``x < thr`` is the high bit of
    ``~(((x | 0x80) - thr) | x)`` for ``thr <= 128``, with no borrow between
    bytes). Then, while the count is off ``m``, a uniform player is drawn
    (Lemire's multiply-shift with rejection) and leaves the side (the count
    is too high; a non-member stays out) or joins it (too low; a member stays
    in). Every step treats all players alike, so the law of the side is
    invariant under relabelling the players; its size is ``m``; so it is the
    uniform ``m``-subset.
    """
    n = cells.size
    on = np.uint8(1 - flip)
    flip_bytes = np.uint64(flip) * _LOW_BITS
    threshold = np.uint64((256 * m + n // 2) // n)
    thresholds = threshold * _LOW_BITS
    count = 0
    words = n // 8
    for i in range(words):
        out, a, b, c, w = _sfc64(a, b, c, w)
        below = ~(((out | _HIGH_BITS) - thresholds) | out) & _HIGH_BITS
        count += np.int64(((below >> _U7) * _LOW_BITS) >> _U56)  # the number of bytes below: a byte sum
        joined = (below >> _U7) ^ flip_bytes
        for k in range(8):
            cells[8 * i + k] = np.uint8((joined >> (_U8 * np.uint64(k))) & _BYTE)
    if 8 * words < n:
        out, a, b, c, w = _sfc64(a, b, c, w)
        for j in range(8 * words, n):
            below = ((out >> (_U8 * np.uint64(j - 8 * words))) & _BYTE) < threshold
            count += np.int64(below)
            cells[j] = np.uint8(below) ^ np.uint8(flip)
    bound = np.uint64(n)
    reject_below = _TWO32 % bound
    direction = 1 if count < m else -1  # join (count too low) or leave (too high); it never changes sign
    value = on if count < m else np.uint8(flip)
    while count != m:  # branch-free steps: a non-member leaving, or a member joining, is a no-op
        out, a, b, c, w = _sfc64(a, b, c, w)
        x = (out >> _U32) * bound
        if x & _LOW32 >= reject_below:
            j = np.int64(x >> _U32)
            count += direction * np.int64(cells[j] != value)
            cells[j] = value
        x = (out & _LOW32) * bound
        if count != m and x & _LOW32 >= reject_below:
            j = np.int64(x >> _U32)
            count += direction * np.int64(cells[j] != value)
            cells[j] = value
    return a, b, c, w


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def add_dense_rows(masks, rows, y, y_rows, sums):
    """``sums[:, c] += y[y_rows[i], c] * masks[rows[i]]`` for every ``i``: four rows per sweep of ``sums``."""
    n = sums.shape[0]
    first, second = np.empty(n), np.empty(n)  # the two columns, contiguous (filled and stored by loops: an
    for j in range(n):                        # array assigned to a slice costs numba seconds to compile)
        first[j], second[j] = sums[j, 0], sums[j, 1]
    i = 0
    while i + 4 <= rows.size:
        r0, r1, r2, r3 = masks[rows[i]], masks[rows[i + 1]], masks[rows[i + 2]], masks[rows[i + 3]]
        t0, t1, t2, t3 = y_rows[i], y_rows[i + 1], y_rows[i + 2], y_rows[i + 3]
        a0, a1, a2, a3 = y[t0, 0], y[t1, 0], y[t2, 0], y[t3, 0]
        b0, b1, b2, b3 = y[t0, 1], y[t1, 1], y[t2, 1], y[t3, 1]
        for j in range(n):
            x0, x1, x2, x3 = r0[j], r1[j], r2[j], r3[j]
            first[j] += a0 * x0 + a1 * x1 + a2 * x2 + a3 * x3
            second[j] += b0 * x0 + b1 * x1 + b2 * x2 + b3 * x3
        i += 4
    while i < rows.size:
        row, t = masks[rows[i]], y_rows[i]
        for j in range(n):
            first[j] += y[t, 0] * row[j]
            second[j] += y[t, 1] * row[j]
        i += 1
    for j in range(n):
        sums[j, 0], sums[j, 1] = first[j], second[j]


@numba.njit(cache=True, nogil=True)
def scatter_small_sides(y, drawn, flip, indptr, vals, sums):
    """``sums[i] += s_r y[drawn[r]]`` for every member ``i`` of small side ``r``; ``s_r = -1`` where ``flip[r]``.

    Two members at a time: members of a side are distinct, and the unrolled
    loop lets their read-modify-writes overlap (about 1.3x faster).
    """
    for r in range(drawn.size):
        sign = -1.0 if flip[r] else 1.0
        a, b = sign * y[drawn[r], 0], sign * y[drawn[r], 1]
        e, stop = indptr[r], indptr[r + 1]
        while e + 1 < stop:
            i, j = vals[e], vals[e + 1]
            sums[i, 0] += a
            sums[i, 1] += b
            sums[j, 0] += a
            sums[j, 1] += b
            e += 2
        if e < stop:
            sums[vals[e], 0] += a
            sums[vals[e], 1] += b


@numba.njit(cache=True, nogil=True)
def add_masked_moments(masks, y, sums):
    """``sums[0, i] += sum_t y_t x_ti``, ``sums[1, i] += sum_t y_t^2 x_ti``, ``sums[2, i] += sum_t x_ti``.

    ``masks``: ``(b, N)`` uint8 (0/1). Rows are added strictly in order (so the
    sums are the same on every machine and thread count), each a vectorised
    sweep of the players: 0.6-1.1 ns per cell from ``N = 1,000`` to ``10^5``
    (unrolling rows or tiling players measured 2-3x slower: the loop no longer
    vectorised), where casting the masks to float for a BLAS product cost
    several times more than a cheap game's own evaluation of them (MSR
    Banzhaf's batch statistics).
    """
    for t in range(masks.shape[0]):
        a = y[t]
        q = a * a
        row = masks[t]
        for i in range(masks.shape[1]):
            x = np.float64(row[i])
            sums[0, i] += a * x
            sums[1, i] += q * x
            sums[2, i] += x


@numba.njit(cache=True, nogil=True)
def add_weighted_members(masks, first, second, sums):
    """``sums[0, i] += sum_t first_t x_ti`` and ``sums[1, i] += sum_t second_t x_ti``, rows strictly in order.

    ``masks``: ``(b, N)`` uint8 (0/1); one vectorised sweep of the players per row, as
    :func:`add_masked_moments` (unbiased KernelSHAP's batch sums, whose second weights are not the first's
    squares).
    """
    for t in range(masks.shape[0]):
        a, q, row = first[t], second[t], masks[t]
        for i in range(masks.shape[1]):
            x = np.float64(row[i])
            sums[0, i] += a * x
            sums[1, i] += q * x


@numba.njit(cache=True, nogil=True)
def add_sized_member_moments(bits, order, sizes, w1, w2, w4, out):
    """``out[k_t, :, i] += [1, w1_t, w2_t, w4_t] x_ti`` for every row ``t`` (size ``k_t``) and player ``i``.

    ``bits``: ``(b, ceil(N / 8))`` the rows packed by ``np.packbits`` (player
    ``i`` at bit ``7 - i % 8`` of byte ``i // 8``); ``out``: ``(N + 1, 4, N)``,
    so that a row adds into one contiguous line per moment (four vectorised
    sweeps); rows are taken in ``order``, a stable sort of a whole batch's
    rows by size, so that the rows of a size add into a line still in cache
    (at ``N = 2,048`` the lines hold 130 MB). Each entry receives its rows in
    row order (the sort is stable and the rows of other sizes leave it
    alone), so it is the same sum, in the same order, as a ``np.bincount``
    over the members in row-major order (adding ``0 * w`` leaves a sum
    unchanged): Stratified SVARM's per-(player, size) moments at a vectorised
    sweep per row instead of a scattered bincount per member.
    """
    n = out.shape[2]
    x = np.empty(bits.shape[1] * 8)
    for j in range(order.shape[0]):
        t = order[j]
        a1, a2, a4 = w1[t], w2[t], w4[t]
        row = bits[t]
        for byte in range(row.shape[0]):
            v = row[byte]
            for bit in range(8):
                x[8 * byte + bit] = np.float64((v >> (7 - bit)) & 1)
        line = out[sizes[t]]
        members, first, second, fourth = line[0], line[1], line[2], line[3]
        for i in range(n):
            members[i] += x[i]
        for i in range(n):
            first[i] += a1 * x[i]
        for i in range(n):
            second[i] += a2 * x[i]
        for i in range(n):
            fourth[i] += a4 * x[i]


@numba.njit(cache=True, nogil=True)
def fill_chain_ranks(positions, unit, head, length, low, rank):
    """``rank[c]``: Beta Shapley's ranks of chain ``c`` from its unit's permutation, one sweep per chain.

    Player ``i`` lies ``r = (positions[unit[c], i] - head[c]) mod N`` places
    after the chain's first slot: it joins the chain ``(r + 1)``-th for
    ``r < length[c]``, is in its base (rank 0) for
    ``r < length[c] + low[c]``, and is outside it (``N + 1``) otherwise.
    ``positions`` is the inverse of the units' permutations; a sweep of it
    replaces numpy's scatters of the base, ``O(low)`` element-wise index
    arithmetic per chain that cost more than the masks themselves.
    """
    n = rank.shape[1]
    for c in range(rank.shape[0]):
        where, start = positions[unit[c]], head[c]
        joined, based = length[c], length[c] + low[c]
        out = rank[c]
        for i in range(n):
            r = where[i] - start
            if r < 0:
                r += n
            out[i] = r + 1 if r < joined else (0 if r < based else n + 1)


@numba.njit(cache=True, nogil=True)
def fill_chain_masks(rank, chain, steps, masks):
    """``masks[r] = rank[chain[r]] <= steps[r]``: Beta Shapley's nested coalitions, one compare sweep per row.

    Consecutive rows mostly share a chain, so its rank row stays in cache; numpy
    would gather a ``(rows, N)`` copy of the ranks first.
    """
    for r in range(masks.shape[0]):
        line = rank[chain[r]]
        step = steps[r]
        out = masks[r]
        for i in range(masks.shape[1]):
            out[i] = line[i] <= step


@numba.njit(cache=True, nogil=True)
def merge_moments(mean, m2, other_mean, other_m2, weight, cross, out_mean, out_m2):
    """Chan et al.'s merge of two (mean, M2) states in one pass, the same operations as numpy's.

    ``out_mean = mean + (other_mean - mean) * weight`` and
    ``out_m2 = (m2 + other_m2) + (other_mean - mean)**2 * cross``, element by
    element in that order (no fused multiply-add), so the results are those of
    :meth:`~shapley_research.estimators._sampling._loop.MeanState.merge`'s
    numpy expressions bit for bit, without their seven passes and four
    temporaries: at ``N = 10^5`` the per-batch merge was a fifth of the cost
    of evaluating a batch of a cheap game.
    """
    for i in range(mean.shape[0]):
        out_mean[i], out_m2[i] = _merged_entry(mean[i], m2[i], other_mean[i], other_m2[i], weight, cross)


@numba.njit(cache=True, nogil=True, inline="always")
def _merged_entry(mean, m2, other_mean, other_m2, weight, cross):
    """One entry of :func:`merge_moments`: ``(mean + delta weight, (m2 + other_m2) + delta^2 cross)``."""
    delta = other_mean - mean
    return mean + delta * weight, (m2 + other_m2) + delta * delta * cross


@numba.njit(cache=True, nogil=True)
def position_moments(binned, values, n_bins, count, merging, mean, m2, weight, cross, out_mean, out_m2):
    """Position adjustment's per-(player, bin) batch moments, merged with ``mean``, ``m2`` if ``merging``.

    ``binned[t, i]``, ``values[t, i]``: the bin of player ``i``'s sample of
    unit ``t`` and the sample. The batch's blocks ``c`` and ``D`` (entry
    ``i B + b`` and ``N B + i B + b``) are the ``bincount`` sums of
    :func:`~shapley_research.estimators._position_effects.batch_state`, each
    bin's samples added from ``0.0`` in ``t`` order as ``bincount`` adds them,
    then formed as :func:`sized_member_moments` forms them and merged as
    :func:`merge_moments` merges them: the same operations in the same order
    (the same bits), in one pass over the state, without its ``2 N B``-long
    temporaries. Without ``merging`` the batch's moments go to ``out_*``.
    """
    size, n = values.shape
    half = n * n_bins
    hits, total, square = np.empty(n_bins), np.empty(n_bins), np.empty(n_bins)
    for i in range(n):
        hits[:] = 0.0
        total[:] = 0.0
        square[:] = 0.0
        for t in range(size):
            b, value = binned[t, i], values[t, i]
            hits[b] += 1.0
            total[b] += value
            square[b] += value * value
        for b in range(n_bins):
            cell, other = i * n_bins + b, half + i * n_bins + b
            out_mean[cell], out_m2[cell] = _moments_of_sums(hits[b], hits[b], count, merging, mean[cell], m2[cell],
                                                            weight, cross)
            out_mean[other], out_m2[other] = _moments_of_sums(total[b], square[b], count, merging, mean[other],
                                                              m2[other], weight, cross)


@numba.njit(cache=True, nogil=True, inline="always")
def _moments_of_sums(total, square, count, merging, mean, m2, weight, cross):
    """An entry's batch (mean, M2) from its sums, merged with ``(mean, m2)`` if ``merging``.

    Scalars in and out: passing the arrays in made each call count their
    references, several times slower than the sweep itself.
    """
    batch_mean, batch_m2 = _moment_pair(total, square, count)
    if merging:
        return _merged_entry(mean, m2, batch_mean, batch_m2, weight, cross)
    return batch_mean, batch_m2


@numba.njit(cache=True, nogil=True, inline="always")
def _moment_pair(total, square, count):
    """``total / count`` and ``max(square - total**2 / count, 0)`` as numpy computes them (NaN kept)."""
    spread = square - total * total / count
    return total / count, spread if (spread >= 0.0 or spread != spread) else 0.0


@numba.njit(cache=True, nogil=True)
def side_moments(moments, total, total_sq, count, mean, m2):
    """Mean and M2 of MSR Banzhaf's ``3N`` per-coalition vectors from their sums, in one pass.

    ``moments``: ``(3, N)`` sums of ``u x``, ``u^2 x`` and ``x`` over ``count``
    coalitions; ``total``, ``total_sq``: the sums of ``u`` and ``u^2``. The
    blocks are ``u x``, ``x``, ``u (1 - x)``: each entry the same operations,
    in the same order, as numpy's ``sums / b`` and
    ``np.maximum(squares - sums**2 / b, 0.0)`` on the concatenated blocks.
    """
    n = moments.shape[1]
    for i in range(n):
        inside, inside_sq, members = moments[0, i], moments[1, i], moments[2, i]
        mean[i], m2[i] = _moment_pair(inside, inside_sq, count)
        mean[n + i], m2[n + i] = _moment_pair(members, members, count)
        mean[2 * n + i], m2[2 * n + i] = _moment_pair(total - inside, total_sq - inside_sq, count)


_MOMENT_LINES = ((0, 0), (1, 2), (2, 3))  # the state's blocks c, u c, u^2 c: (sum, sum of squares) lines of sized


@numba.njit(cache=True, nogil=True)
def sized_member_moments(sized, count, mean, m2):
    """Mean and M2 of Stratified SVARM's per-(player, size) blocks from the sums ``sized``, in one pass.

    ``sized``: ``(N + 1, 4, N)`` sums of ``x``, ``u x``, ``u^2 x`` and
    ``u^4 x`` by size and player (:func:`add_sized_member_moments`); the
    blocks ``c``, ``u c``, ``u^2 c`` of the state lay entry (player ``i``,
    size ``k``) at ``k N + i``, the layout of ``sized``, so each block is a
    contiguous sweep. Each entry takes the same operations as numpy's
    ``sums / b`` and ``np.maximum(squares - sums**2 / b, 0.0)`` (the squares
    of the three blocks are the sums of ``x``, ``u^2 x`` and ``u^4 x``).
    """
    _sized_sweep(sized, count, mean, m2, False, mean, m2, 0.0, 0.0)


@numba.njit(cache=True, nogil=True)
def merge_sized_member_moments(sized, count, mean, m2, weight, cross, out_mean, out_m2):
    """:func:`merge_moments` of a running state with :func:`sized_member_moments`'s blocks, in one pass.

    Each entry's batch mean and M2 are formed as :func:`sized_member_moments`
    forms them and merged at once with ``mean``, ``m2`` as
    :func:`merge_moments` merges them (the same operations in the same
    order: the same bits), without writing the batch's blocks out and
    reading them back (200 MB a batch at ``N = 2,048``).
    """
    _sized_sweep(sized, count, out_mean, out_m2, True, mean, m2, weight, cross)


@numba.njit(cache=True, nogil=True, inline="always")
def _sized_sweep(sized, count, out_mean, out_m2, merging, mean, m2, weight, cross):
    """Each entry's batch (mean, M2) from ``sized`` into ``out_*``, merged with ``mean``, ``m2`` if ``merging``."""
    sizes, n = sized.shape[0], sized.shape[2]
    block = n * sizes
    for k in range(sizes):
        for j in range(3):
            totals, squares = sized[k, _MOMENT_LINES[j][0]], sized[k, _MOMENT_LINES[j][1]]
            base = j * block + k * n
            for i in range(n):
                cell = base + i
                batch_mean, batch_m2 = _moment_pair(totals[i], squares[i], count)
                if merging:
                    batch_mean, batch_m2 = _merged_entry(mean[cell], m2[cell], batch_mean, batch_m2, weight, cross)
                out_mean[cell], out_m2[cell] = batch_mean, batch_m2


@numba.njit(cache=True, nogil=True)
def fill_strata(count, total, square, first_column, means, variances, counts):
    """Stratified SVARM's stratum means, variances and counts from their sums, in one pass.

    Column ``j`` of ``count``, ``total``, ``square`` fills column
    ``first_column + j`` of the outputs, each entry the operations of numpy's
    ``np.where(count > 0, total / count, 0.0)``,
    ``np.maximum(square - total**2 / np.maximum(count, 1), 0.0)`` and
    ``np.where(count > 1, spread / np.maximum(count - 1, 1), np.nan)`` (NaN
    kept as ``np.maximum`` keeps it): the same bits, without their eight
    temporaries of ``N^2`` entries.
    """
    for i in range(count.shape[0]):
        for j in range(count.shape[1]):
            c, t, q = count[i, j], total[i, j], square[i, j]
            column = first_column + j
            means[i, column] = t / c if c > 0 else 0.0
            spread = q - t * t / (c if c >= 1.0 else 1.0)
            spread = spread if (spread >= 0.0 or spread != spread) else 0.0
            fewer = c - 1
            variances[i, column] = spread / (fewer if fewer >= 1.0 else 1.0) if c > 1 else np.nan
            counts[i, column] = c


@numba.njit(cache=True, nogil=True)
def pooled_column_sums(variances, counts, weighted, weights):
    """Per column, the sums of ``(count - 1) variance`` and of ``count - 1`` over the strata of two samples or more.

    The operations of numpy's ``np.where(ok, variances * weight, 0.0).sum(axis=0)``
    and ``weight.sum(axis=0)`` (``ok``: a finite count above 1; ``weight``:
    ``count - 1`` there, else 0) in numpy's order for a reduction over rows:
    the first row, then each next row added. The same bits, in one pass.
    """
    for i in range(variances.shape[0]):
        for j in range(variances.shape[1]):
            c = counts[i, j]
            ok = np.isfinite(c) and c > 1
            weight = c - 1 if ok else 0.0
            term = variances[i, j] * weight if ok else 0.0
            if i == 0:
                weighted[j], weights[j] = term, weight
            else:
                weighted[j] += term
                weights[j] += weight


@numba.njit(cache=True, nogil=True)
def side_moments_by_size(by_size, count, mean, m2):
    """Mean and M2 of Stratified SVARM's per-size blocks ``[k_t = k]``, ``u [k_t = k]``, ``u^2 [k_t = k]``.

    ``by_size``: ``(4, N + 1)`` sums of ``1``, ``u``, ``u^2`` and ``u^4`` by
    size; the operations of :func:`sized_member_moments`.
    """
    sizes = by_size.shape[1]
    for k in range(sizes):
        members, first, second, fourth = by_size[0, k], by_size[1, k], by_size[2, k], by_size[3, k]
        mean[k], m2[k] = _moment_pair(members, members, count)
        mean[sizes + k], m2[sizes + k] = _moment_pair(first, second, count)
        mean[2 * sizes + k], m2[2 * sizes + k] = _moment_pair(second, fourth, count)


@numba.njit(cache=True, nogil=True)
def nearest_filled_rows(means, filled, out):
    """``out[r, j]``: ``means[r, j]`` if ``filled[r, j]``, else the entry of the nearest filled column of row ``r``.

    Ties go to the smaller column; a row without a filled entry keeps its own
    values. A selection, no arithmetic: Stratified SVARM's
    :func:`~shapley_research.estimators._svarm_strata.nearest_filled` in two
    sweeps per row instead of a dozen whole-array passes.
    """
    n_rows, n_cols = means.shape
    before = np.empty(n_cols, dtype=np.int64)
    for r in range(n_rows):
        last = -1
        for j in range(n_cols):
            if filled[r, j]:
                last = j
            before[j] = last
        after = n_cols
        for j in range(n_cols - 1, -1, -1):
            if filled[r, j]:
                after = j
            source = before[j]
            if source < 0 or (after < n_cols and after - j < j - source):
                source = after
            out[r, j] = means[r, source] if source < n_cols else means[r, j]
