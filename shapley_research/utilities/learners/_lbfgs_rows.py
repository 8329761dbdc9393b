r"""L-BFGS coalition by coalition on each coalition's own rows, in compiled loops: the CPU path of softmax fits.

:func:`lbfgs_own_rows` runs the algorithm of :func:`._lbfgs._lbfgs` (the
two-loop recursion over ``memory`` secant pairs on top of the same initial
inverse Hessian, backtracking Armijo steps with the trial point's gradient,
the same restart, stall and convergence tests) one coalition at a time
instead of in chunk-wide array operations. Each coalition gathers its own
rows, :math:`|S|` of them rather than all :math:`N` with zero weights, and
its whole fit runs in numba loops and small BLAS products whose operands
stay in cache: no Python call per iteration and no pass over a chunk's
``(B, K, N)`` arrays. Measured against the chunked numpy path (one thread,
10-class digits and MNIST PCA-50): 1.2-1.8x on chunks of 150-200 coalitions,
where the chunked path's large products were already efficient; 4-5x for
permutation prefixes and about 10x for the one-off full-data fit, small
chunks where its Python calls per iteration dominated.

A row that adds one point to the row before it (:class:`PrefixLinks`)
starts from that row's solution, not from the start it was given; links
carry across chunks, so where chunks are cut never changes a fit.

The iterates of an unlinked row are those of the chunked path up to rounding (sums run in
another order, and the low-rank initial inverse Hessian's correction to the
identity is applied in ``float32``), so a fit agrees with it to far below
``tol``. Two kernels of the loop were most of a fit's time and are written
for the hardware: ``exp`` in SIMD lanes (:func:`_exp_in_place`; libm's, one
call per entry, was 40% of the objective) and the low-rank matrix as
``float32`` rows multiplied by BLAS (the products stream it from cache, so
half the bytes is about twice the speed: 55 us to 20 us an application on
MNIST PCA-50); the class blocks are ``float32`` rows too, in loops the
compiler vectorises (6.5 us an application on 10-class digits, 65 features,
against 15 us for the low rank of 260 directions it replaces). The
iterations are ``float64``: compiling the kernels costs about 12 s the
first time (then cached on disk), each further float type as much again,
and a ``float32`` phase saved 0-15% here. The objective is
:math:`C\sum_{i\in S} w_i\ell_i(\theta) + \frac12\sum_{k,j} r_j\theta_{kj}^2`
over the classes present (:mod:`._softmax`). The chunk's ``(B, K, N)``
arrays remain the path of torch devices, where many coalitions per kernel
are what keeps a GPU busy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from ._array import Array
from ._lbfgs import CURVATURE_MIN
from ._line_search import ARMIJO_SLOPE, MAX_HALVINGS, NO_PROGRESS_ULPS, STALL_TOL_FACTOR
from ._precondition import CLASS_BLOCKS, LOW_RANK, NO_PRECONDITIONER

# reassociation lets the sums and updates over a coalition's rows and parameters run in SIMD lanes;
# infinities and NaNs keep their meaning (a trial step may overflow the objective)
_FAST = {"reassoc", "contract", "arcp", "nsz"}

_LOG2_E = 1.4426950408889634
_LN2_HIGH, _LN2_LOW = 6.93147180369123816490e-01, 1.90821492927058770002e-10  # ln 2 in two parts (Cody-Waite)
#: Smallest exponent taken: ``exp(-708)`` is about 3e-308, the float64 normal range's end (below it 2^k has no bits).
_EXP_FLOOR = -708.0
_INVERSE_FACTORIALS = tuple(1.0 / math.factorial(j) for j in range(14))
#: Entries of the (unit) eigenvectors below this are set to zero in the float32 preconditioner.
TINY_DIRECTION_ENTRY = 2.0**-40


@numba.njit(cache=True, nogil=True, fastmath={"contract", "nsz"})  # no reassociation: it would undo Cody-Waite
def _exp_in_place(x: Any, bits: Any) -> None:
    """``x <- exp(x)`` for ``x <= 0`` (1-D), within 4 ulp, in SIMD lanes; ``bits``: int64 work of ``x``'s length.

    libm's ``exp``, one call per entry, was 40% of a softmax objective (5,000 entries: 24 us of 58);
    written as ``2^k exp(r)``, ``|r| <= ln 2 / 2``, with ``exp(r)`` a degree-13 Taylor polynomial
    (truncation below 1e-17) and ``2^k`` built in its exponent bits, the loop vectorises (about 5 us).
    Entries below :data:`_EXP_FLOOR` give ``exp(_EXP_FLOOR)`` instead of a smaller number or 0,
    next to the row's largest term 1 in a softmax.
    """
    c = _INVERSE_FACTORIALS
    for i in range(x.shape[0]):
        v = max(x[i], _EXP_FLOOR)
        k = np.floor(v * _LOG2_E + 0.5)
        r = (v - k * _LN2_HIGH) - k * _LN2_LOW
        p = c[12] + r * c[13]
        p = c[11] + r * p
        p = c[10] + r * p
        p = c[9] + r * p
        p = c[8] + r * p
        p = c[7] + r * p
        p = c[6] + r * p
        p = c[5] + r * p
        p = c[4] + r * p
        p = c[3] + r * p
        p = c[2] + r * p
        p = c[1] + r * p
        x[i] = c[0] + r * p
        bits[i] = (np.int64(k) + 1023) << 52
    scale = bits.view(np.float64)
    for i in range(x.shape[0]):
        x[i] *= scale[i]


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _objective(theta: Any, Xs: Any, XsT: Any, w: Any, labels: Any, present: Any, C: float, penalty: Any,
               Z: Any, R: Any, G: Any) -> float:
    """Objective of one coalition at ``theta`` (K, q); its gradient into ``G`` (K, q). ``Z``, ``R``: (K, n) work."""
    K, q = theta.shape
    n = Xs.shape[0]
    np.dot(theta, XsT, Z)
    top, total, bits = np.full(n, -np.inf), np.zeros(n), np.empty(n, np.int64)
    for k in range(K):  # class-major passes over contiguous rows of Z and R
        if present[k]:
            for i in range(n):
                top[i] = max(top[i], Z[k, i])
    for k in range(K):
        if not present[k]:
            for i in range(n):
                R[k, i] = 0.0
            continue
        for i in range(n):
            R[k, i] = Z[k, i] - top[i]
        _exp_in_place(R[k], bits)
        for i in range(n):
            total[i] += R[k, i]
    loss = 0.0
    for i in range(n):
        loss += w[i] * (np.log(total[i]) - (Z[labels[i], i] - top[i]))
        total[i] = w[i] / total[i]
    for k in range(K):
        for i in range(n):
            R[k, i] *= total[i]
    for i in range(n):
        R[labels[i], i] -= w[i]
    np.dot(R, Xs, G)
    penalty_value = 0.0
    for k in range(K):
        for j in range(q):
            G[k, j] = C * G[k, j] + theta[k, j] * penalty[j]
            penalty_value += penalty[j] * theta[k, j] * theta[k, j]
    return C * loss + 0.5 * penalty_value


@numba.njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _dot(a: Any, b: Any) -> float:
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


@numba.njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _max_abs(a: Any) -> float:
    largest = 0.0
    for i in range(a.shape[0]):
        largest = max(largest, abs(a[i]))
    return largest


@numba.njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _class_blocks_inverse(r: Any, present: Any, q: int, block_rows: Any, block_values: Any, weight: float) -> None:
    """``r <- (C B C + M) r`` (flat, K q): the class blocks ``B`` on the part of ``r`` off the class mean.

    ``M`` replicates the mean over the classes present and ``C = I - M``: along the
    class-sum directions the data has no curvature (softmax is invariant to adding
    one vector to every class), so the blocks act on the centred part and the
    mean passes as under the penalty ``I``. Row ``k q + j`` of ``block_rows`` is
    ``U_k[:, j]`` (``float32``); ``B_k = U_k diag(1 / (w lambda + 1)) U_k^T``.
    """
    K = r.shape[0] // q
    mean_in, mean_out = np.zeros(q), np.zeros(q)
    r32, c, out = np.empty(q, block_rows.dtype), np.empty(q, block_rows.dtype), np.empty(q, block_rows.dtype)
    n_present = 0
    for k in range(K):
        if present[k]:
            n_present += 1
            for a in range(q):
                mean_in[a] += r[k * q + a]
    for a in range(q):
        mean_in[a] /= max(n_present, 1)
    for k in range(K):
        base = k * q
        if not present[k]:
            for a in range(q):
                r[base + a] = 0.0
            continue
        for a in range(q):
            r32[a] = r[base + a] - mean_in[a]
        for j in range(q):
            total = np.float32(0.0)
            row = block_rows[base + j]
            for a in range(q):
                total += row[a] * r32[a]
            c[j] = total / (weight * block_values[base + j] + 1.0)
        out[:] = 0.0
        for j in range(q):
            row, scale = block_rows[base + j], c[j]
            for a in range(q):
                out[a] += scale * row[a]
        for a in range(q):
            r[base + a] = out[a]
            mean_out[a] += out[a]
    for k in range(K):
        if present[k]:
            for a in range(q):
                r[k * q + a] += (mean_in[a] - mean_out[a] / max(n_present, 1))


@numba.njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _initial_inverse(r: Any, g: Any, kind: int, pairs: int, gamma: float, present: Any, q: int,
                     vectors: Any, eigenvalues: Any, rank: int, weight: float, diagonal: Any, penalty: Any,
                     block_rows: Any, block_values: Any) -> None:
    """``r <- H0 r`` (flat, K q): ``gamma I`` (``1/max|g|`` before any pair), low-rank, class blocks or diagonal."""
    d = r.shape[0]
    if kind == NO_PRECONDITIONER:
        scale = 1.0 / max(_max_abs(g), 1.0) if pairs == 0 else gamma
        for a in range(d):
            r[a] *= scale
    elif kind == LOW_RANK:  # I + V diag(1 / (w lambda + 1) - 1) V^T, on the classes present
        own = vectors[:rank]  # the coalition's own leading directions, one per row, in float32
        r32 = np.empty(d, own.dtype)
        for a in range(d):
            if not present[a // q]:
                r[a] = 0.0
            r32[a] = r[a]
        z = np.dot(own, r32)
        for j in range(rank):
            z[j] *= 1.0 / (weight * eigenvalues[j] + 1.0) - 1.0
        correction = np.dot(z, own)
        for a in range(d):
            r[a] = r[a] + correction[a] if present[a // q] else 0.0
    elif kind == CLASS_BLOCKS:
        _class_blocks_inverse(r, present, q, block_rows, block_values, weight)
    else:  # diag(w h_D + r_S)^-1 on the classes present
        for a in range(d):
            k, j = a // q, a % q
            curvature = weight * diagonal[k, j] + penalty[j]
            r[a] = r[a] / (curvature if curvature > 0 else 1.0) if present[k] else 0.0


@numba.njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _direction(direction: Any, g: Any, S: Any, Y: Any, rho: Any, alpha: Any, it: int, pairs: int, gamma: float,
               kind: int, present: Any, q: int, vectors: Any, eigenvalues: Any, rank: int, weight: float,
               diagonal: Any, penalty: Any, block_rows: Any, block_values: Any) -> int:
    """``direction <- -H g`` by the two-loop recursion, newest pair first; returns the pairs kept.

    A direction pointing uphill restarts from steepest descent with every pair dropped.
    """
    memory, d = S.shape
    for a in range(d):
        direction[a] = g[a]
    written = min(it, memory)
    for j in range(written):
        slot = (it - 1 - j) % memory
        if rho[slot] != 0.0:  # a slot without a curvature pair contributes exactly nothing
            alpha[slot] = rho[slot] * _dot(S[slot], direction)
            for a in range(d):
                direction[a] -= alpha[slot] * Y[slot, a]
    _initial_inverse(direction, g, kind, pairs, gamma, present, q, vectors, eigenvalues, rank, weight, diagonal,
                     penalty, block_rows, block_values)
    for j in range(written - 1, -1, -1):
        slot = (it - 1 - j) % memory
        if rho[slot] != 0.0:
            beta = rho[slot] * _dot(Y[slot], direction)
            for a in range(d):
                direction[a] += (alpha[slot] - beta) * S[slot, a]
    for a in range(d):
        direction[a] = -direction[a]
    if _dot(direction, g) >= 0:
        largest = max(_max_abs(g), 1.0)
        for a in range(d):
            direction[a] = -g[a] / largest
        for slot in range(memory):
            rho[slot] = 0.0
        return 0
    return pairs


@numba.njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _solve(theta: Any, Xs: Any, XsT: Any, w: Any, labels: Any, present: Any, C: float, penalty: Any,
           threshold: float, max_iter: int, memory: int, strict: bool, no_progress: float, kind: int,
           vectors: Any, eigenvalues: Any, rank: int, weight: float, diagonal: Any, block_rows: Any,
           block_values: Any) -> tuple[int, bool]:
    """L-BFGS of one coalition from ``theta`` (K, q, updated in place): ``(iterations, converged)``.

    ``threshold`` is the gradient test ``tol C |S|``; ``no_progress`` the relative decrease (64 eps of
    the float type) below which a step counts as stalled.
    """
    K, q = theta.shape
    d, n = K * q, Xs.shape[0]
    Z, R = np.empty((K, n), theta.dtype), np.empty((K, n), theta.dtype)
    g, g_trial, trial = np.empty((K, q), theta.dtype), np.empty((K, q), theta.dtype), np.empty((K, q), theta.dtype)
    direction = np.empty(d, theta.dtype)
    S, Y = np.zeros((memory, d), theta.dtype), np.zeros((memory, d), theta.dtype)
    rho, alpha = np.zeros(memory), np.zeros(memory)
    flat, flat_g, flat_trial, flat_g_trial = theta.reshape(d), g.reshape(d), trial.reshape(d), g_trial.reshape(d)
    f = _objective(theta, Xs, XsT, w, labels, present, C, penalty, Z, R, g)
    gamma, pairs, iterations = 1.0, 0, 0
    for it in range(max_iter + 1):
        if _max_abs(flat_g) <= threshold:
            return iterations, True
        if it == max_iter:
            break
        pairs = _direction(direction, flat_g, S, Y, rho, alpha, it, pairs, gamma, kind, present, q, vectors,
                           eigenvalues, rank, weight, diagonal, penalty, block_rows, block_values)
        slope, step, accepted, f_trial = _dot(flat_g, direction), 1.0, False, f
        for _ in range(MAX_HALVINGS):
            for a in range(d):
                flat_trial[a] = flat[a] + step * direction[a]
            f_trial = _objective(trial, Xs, XsT, w, labels, present, C, penalty, Z, R, g_trial)
            if np.isfinite(f_trial) and f_trial <= f + ARMIJO_SLOPE * step * slope:
                accepted = True
                break
            step *= 0.5
        slot = it % memory
        for a in range(d):
            S[slot, a] = flat_trial[a] - flat[a] if accepted else 0.0
            Y[slot, a] = flat_g_trial[a] - flat_g[a] if accepted else 0.0
        sy, yy = _dot(S[slot], Y[slot]), _dot(Y[slot], Y[slot])
        good = accepted and sy > CURVATURE_MIN * np.sqrt(_dot(S[slot], S[slot]) * yy)
        rho[slot] = 1.0 / sy if good else 0.0
        if good:
            gamma, pairs = sy / yy, pairs + 1
        stalled = not accepted or f - f_trial <= no_progress * max(abs(f), abs(f_trial), 1.0)
        if accepted:
            for a in range(d):
                flat[a], flat_g[a] = flat_trial[a], flat_g_trial[a]
            f = f_trial
        iterations += 1
        if stalled:  # no decrease along a descent direction: optimum to rounding
            return iterations, _max_abs(flat_g) <= (threshold if strict else STALL_TOL_FACTOR * threshold)
    return iterations, False


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _fit_each(X: Any, labels: Any, weight: Any, present: Any, C: Any, penalty: Any, theta: Any, tol: float,
              max_iter: int, memory: int, strict: bool, no_progress: float, kind: int, vectors: Any,
              eigenvalues: Any, ranks: Any, preconditioner_weight: Any, diagonal: Any, block_rows: Any,
              block_values: Any, use_blocks: Any, iterations: Any, converged: Any, linked: Any,
              previous: Any) -> None:
    """Every coalition ``b`` of ``weight`` (B, N): gather its rows, then :func:`_solve` it into ``theta[b]``.

    A coalition with ``use_blocks[b]`` takes the class blocks (``block_rows``, ``block_values``) for ``kind``.

    A ``linked`` row starts from the solution of the row before it (``previous`` for the first row).
    """
    B, N = weight.shape
    K, q = theta.shape[1], X.shape[1]
    for b in range(B):
        if linked[b]:
            source = theta[b - 1] if b > 0 else previous
            for k in range(K):
                for j in range(q):
                    theta[b, k, j] = source[k, j] if present[b, k] else 0.0
        n, size = 0, 0.0
        for i in range(N):
            if weight[b, i] > 0:
                n += 1
                size += weight[b, i]
        Xs, XsT = np.empty((n, q), X.dtype), np.empty((q, n), X.dtype)
        w, own_labels = np.empty(n, X.dtype), np.empty(n, np.int64)
        row = 0
        for i in range(N):
            if weight[b, i] > 0:
                for j in range(q):
                    Xs[row, j] = X[i, j]
                    XsT[j, row] = X[i, j]
                w[row], own_labels[row] = weight[b, i], labels[i]
                row += 1
        penalty_row = penalty[b] if penalty.shape[0] == B else penalty[0]
        iterations[b], converged[b] = _solve(theta[b], Xs, XsT, w, own_labels, present[b], C[b], penalty_row,
                                             tol * C[b] * size, max_iter, memory, strict, no_progress,
                                             CLASS_BLOCKS if use_blocks[b] else kind, vectors, eigenvalues,
                                             ranks[b], preconditioner_weight[b], diagonal, block_rows,
                                             block_values)


def _float32_rows(vectors: Any) -> np.ndarray:
    """Unit vectors as contiguous ``float32`` rows, entries below :data:`TINY_DIRECTION_ENTRY` set to zero.

    Tiny entries (directions of features constant in the data) make subnormal products, each a slow
    microcode path (4x an application on raw digits); below 2^-40 of a unit vector they are zero to
    float32's 2^-24 resolution.
    """
    rows = np.array(vectors, dtype=np.float32, order="C")  # a copy: the zeroing below never reaches the caller's
    rows[np.abs(rows) < TINY_DIRECTION_ENTRY] = 0.0
    return rows


def _preconditioner_arrays(precondition: Any, B: int) -> tuple[Any, ...]:
    """The arguments of :func:`_fit_each` from ``kind`` to ``use_blocks`` for an initial inverse Hessian or None."""
    dtype = np.float64
    kind, vectors, eigenvalues, diagonal = NO_PRECONDITIONER, np.zeros((1, 1), np.float32), np.zeros(1, dtype), \
        np.zeros((1, 1), dtype)
    weight, ranks = np.zeros(B, dtype), np.zeros(B, np.int64)
    block_rows, block_values, use_blocks = np.zeros((1, 1), np.float32), np.zeros(1, dtype), np.zeros(B, bool)
    if precondition is not None:
        kind, weight = precondition.kind, np.asarray(precondition.weight, dtype)
        if kind == LOW_RANK:  # rank-major float32 rows: BLAS products at half float64's memory traffic
            vectors = _float32_rows(np.asarray(precondition.vectors).T)
            eigenvalues = np.ascontiguousarray(precondition.eigenvalues, dtype)
            ranks = np.asarray(precondition.ranks, np.int64)
            if precondition.blocks is not None:
                block_rows = _float32_rows(precondition.blocks.rows)
                block_values = np.ascontiguousarray(precondition.blocks.eigenvalues, dtype).reshape(-1)
                use_blocks = np.asarray(precondition.use_blocks, bool)
        else:
            diagonal = np.ascontiguousarray(precondition.diagonal, dtype)
    return kind, vectors, eigenvalues, ranks, weight, diagonal, block_rows, block_values, use_blocks


@dataclass
class PrefixLinks:
    """Which rows of a chunk add one point to the row before them, and the solution that row left.

    A linked row (the next prefix of a permutation, say) starts its fit from
    the previous row's solution instead of the start it was given: adding a
    point moves the optimum little, so it takes 2-3 times fewer iterations
    (10-class noisy digits: 82 to 30 along a class-wise Shapley block, 61 to
    24 along a permutation's prefixes). ``previous`` is the raw (uncentred)
    solution of the row before the chunk's first; :func:`lbfgs_own_rows`
    leaves its last row's there, so links carry from chunk to chunk and a
    fit does not depend on where chunks are cut.
    """

    linked: NDArray[np.bool_]
    previous: np.ndarray | None = None

    @staticmethod
    def of(masks: np.ndarray) -> NDArray[np.bool_]:
        """Rows of ``masks`` (m, N; booleans or integer weights) that add one point to the row before."""
        linked = np.zeros(masks.shape[0], dtype=bool)
        if masks.shape[0] > 1:
            sizes = masks.sum(axis=1)
            rows = np.flatnonzero(sizes[1:] == sizes[:-1] + 1) + 1
            linked[rows] = (masks[rows] >= masks[rows - 1]).all(axis=1)
        return linked


def lbfgs_own_rows(chunk: Any, theta: Array, tol: float, max_iter: int, memory: int = 10,
                   precondition: Any = None, strict: bool = False,
                   links: PrefixLinks | None = None) -> tuple[Array, Array, Array]:
    """:func:`._lbfgs._lbfgs` on a numpy chunk (a :class:`._softmax._SoftmaxChunk`), coalition by coalition.

    ``precondition`` is ``None`` or one of the initial inverse Hessians of
    :mod:`._precondition`, read as data; ``links`` (the chunk's rows) starts
    linked rows from the row before (its ``previous`` is then updated).
    Returns ``(theta, iterations, converged)``, ``theta`` uncentred.
    """
    data = chunk.data
    dtype = np.dtype(np.float64)  # the kernels are compiled for float64 only (their compile is the cost)
    if data.X.dtype != dtype:
        raise TypeError(f"lbfgs_own_rows: expected a float64 chunk, got {data.X.dtype}")
    theta = np.array(theta, dtype=dtype, order="C")
    B = theta.shape[0]
    iterations, converged = np.zeros(B, dtype=np.int64), np.zeros(B, dtype=bool)
    penalty = np.ascontiguousarray(np.atleast_2d(chunk.penalty), dtype)
    no_progress = NO_PROGRESS_ULPS * data.backend.eps
    linked = np.zeros(B, dtype=bool) if links is None else np.asarray(links.linked, dtype=bool)
    previous = theta[0] if links is None or links.previous is None else np.asarray(links.previous, dtype)
    if linked[0] and (links is None or links.previous is None):
        raise ValueError("lbfgs_own_rows: the chunk's first row is linked, but no previous solution was given")
    _fit_each(data.X, data.labels, np.ascontiguousarray(chunk.weight, dtype), np.ascontiguousarray(chunk.present),
              np.asarray(chunk.C, dtype), penalty, theta, tol, max_iter, memory, strict, no_progress,
              *_preconditioner_arrays(precondition, B), iterations, converged, linked, np.ascontiguousarray(previous))
    if links is not None:
        links.previous = theta[-1].copy()
    return theta, iterations, converged
