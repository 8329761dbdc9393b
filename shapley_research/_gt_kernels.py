"""Compiled loops of the group-testing sampler (numba, ``cache=True``: compiled once, then loaded from disk).

Both cost ``O(1)`` per member of a test's *small side* (the coalition or its
complement, whichever is smaller). In numpy, exact small random integers,
repeat detection and scatter-adds cost several nanoseconds per member, plus a
dense pass per large side, which kept group testing at about twice the cost
of evaluating a 1 ns-per-cell game.
"""

from __future__ import annotations

import numba
import numpy as np

_U11, _U3, _U24, _U40, _U32 = (np.uint64(b) for b in (11, 3, 24, 40, 32))
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)


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
def fill_small_sides(state, masks, small, flip, indptr, vals):
    """Draw the small sides of the rows of ``masks`` by Floyd's algorithm.

    Row ``t`` is set to ``flip[t]``, then ``small[t]`` players join its small
    side (their cells set to ``not flip[t]``, their indices written to
    ``vals[indptr[t]:indptr[t + 1]]``) by Floyd's algorithm: step ``k`` draws
    ``j`` uniform in ``[0, P - m + k]`` and adds it, or adds ``P - m + k`` if
    ``j`` is in the side already; the side is then a uniform ``m``-subset.
    Rows go two at a time, the first drawing from the high and the second
    from the low 32 bits of the same outputs of the SFC64 generator ``state``
    (advanced in place), until both are complete: their two chains of steps
    overlap (about 1.3x faster than one row at a time).
    """
    rows = masks.shape[0]
    a, b, c, w = state[0], state[1], state[2], state[3]
    for t in range(0, rows, 2):
        u = min(t + 1, rows - 1)  # an odd last row pairs with itself, and draws for one only
        first, second = masks[t], masks[u]
        first[:] = flip[t]
        second[:] = flip[u]
        on_first, on_second = not flip[t], not flip[u]
        m_first, m_second = small[t], small[u] if u > t else 0
        vals_first, vals_second = vals[indptr[t]:indptr[t + 1]], vals[indptr[u]:indptr[u + 1]]
        k_first = k_second = 0
        while k_first < m_first or k_second < m_second:
            out, a, b, c, w = _sfc64(a, b, c, w)
            if k_first < m_first:
                k_first = _floyd_step(out >> _U32, k_first, m_first, first, on_first, vals_first)
            if k_second < m_second:
                k_second = _floyd_step(out & _LOW32, k_second, m_second, second, on_second, vals_second)
    state[0], state[1], state[2], state[3] = a, b, c, w


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
