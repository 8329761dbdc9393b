r"""Exact solution of :math:`\min \|d\|_1` s.t. :math:`\|r - Ad\|_2 \le \epsilon` by the lasso homotopy.

The lasso solutions :math:`d(\lambda) = \arg\min_d \frac12\|r - Ad\|_2^2 +
\lambda\|d\|_1` form a piecewise-linear path from :math:`d = 0` at
:math:`\lambda_0 = \|A^\top r\|_\infty` down to :math:`\lambda = 0`, and the
residual norm falls monotonically along it. For
:math:`0 < \epsilon < \|r\|_2` the constrained problem is solved by the point
of the path whose residual norm is exactly :math:`\epsilon` (Lagrange duality),
so the path is followed knot by knot (LARS with the lasso modification:
Osborne, Presnell & Turlach 2000; Efron et al. 2004) and stopped inside the
segment where the residual crosses :math:`\epsilon`: the answer is exact up to
rounding, with no solver tolerance.

Between knots, with active set :math:`S`, signs :math:`\sigma_S` and
:math:`w = (A_S^\top A_S)^{-1}\sigma_S`, decreasing :math:`\lambda` by
:math:`\gamma` moves :math:`d_S \mathrel{+}= \gamma w`; the next knot is the
first :math:`\gamma` at which an inactive correlation reaches
:math:`\pm(\lambda - \gamma)` (a join) or an active coefficient reaches 0 (a
drop). A step costs one product with :math:`A^\top` (``O(MN)``, both the
fresh correlations and the direction's in one pass) plus ``O(Mk + k^2)`` for
``k`` active columns; the Cholesky factor of :math:`A_S^\top A_S` is updated,
never refactored. Memory: ``A``'s active columns and a ``min(M, N)`` square
factor. A matrix of the form :math:`A = cB` with small integers ``B`` (the
Bernoulli matrices of compressive sampling) is solved with ``B`` stored as
int8: exact products, an eighth of the memory traffic per pass, and exactly
zero pivots for repeated columns.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["l1_homotopy", "HomotopyError"]


class HomotopyError(RuntimeError):
    """The path could not be followed to the requested residual.

    ``infeasible`` is true when no ``d`` at all is within ``epsilon`` (the
    least-squares residual is larger); otherwise the path met degenerate
    columns (e.g. repeated columns of a tiny ``A``, where the lasso solution
    is not unique) and another solver should be used.
    """

    def __init__(self, message: str, *, infeasible: bool = False):
        super().__init__(message)
        self.infeasible = infeasible


_FAST = {"reassoc", "nsz", "arcp", "contract"}  # reassociated sums vectorise: rounding-level differences


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _dot(x, y):
    total = 0.0
    for i in range(x.size):
        total += x[i] * y[i]
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def _copy_into(out, values, count):
    """``out[:count] = values[:count]``, element by element.

    Numba compiles an array assigned to a slice through its broadcasting
    machinery, about 3 s a kernel on a first run; a loop compiles in
    milliseconds and copies the same bits.
    """
    for j in range(count):
        out[j] = values[j]


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _combine(weights, rows, k, out):
    """``out = sum_i weights[i] rows[i]`` over the first ``k`` rows (row-wise, contiguous).

    Four rows per sweep of ``out``: a quarter of the loads and stores of
    ``out`` (the sweeps, not the multiplications, bounded the one-row loop).
    """
    out[:] = 0.0
    i = 0
    while i + 4 <= k:
        w0, w1, w2, w3 = weights[i], weights[i + 1], weights[i + 2], weights[i + 3]
        r0, r1, r2, r3 = rows[i], rows[i + 1], rows[i + 2], rows[i + 3]
        for j in range(out.size):
            out[j] += w0 * r0[j] + w1 * r1[j] + w2 * r2[j] + w3 * r3[j]
        i += 4
    while i < k:
        wi, row = weights[i], rows[i]
        for j in range(out.size):
            out[j] += wi * row[j]
        i += 1


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _project(pair, a_mat, out):
    """``out = pair @ a_mat``: ``A^T`` of the residual and of the direction in one pass over ``A``'s rows.

    Four rows of ``A`` per sweep, as in :func:`_combine`.
    """
    out[:] = 0.0
    first, second = out[0], out[1]
    rows = a_mat.shape[0]
    i = 0
    while i + 4 <= rows:
        p0, p1, p2, p3 = pair[0, i], pair[0, i + 1], pair[0, i + 2], pair[0, i + 3]
        q0, q1, q2, q3 = pair[1, i], pair[1, i + 1], pair[1, i + 2], pair[1, i + 3]
        r0, r1, r2, r3 = a_mat[i], a_mat[i + 1], a_mat[i + 2], a_mat[i + 3]
        for j in range(first.size):
            x0, x1, x2, x3 = r0[j], r1[j], r2[j], r3[j]
            first[j] += p0 * x0 + p1 * x1 + p2 * x2 + p3 * x3
            second[j] += q0 * x0 + q1 * x1 + q2 * x2 + q3 * x3
        i += 4
    while i < rows:
        p, q, row = pair[0, i], pair[1, i], a_mat[i]
        for j in range(first.size):
            first[j] += p * row[j]
            second[j] += q * row[j]
        i += 1


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _row_dots(rows, k, x):
    """``rows[:k] @ x``, four rows per sweep of ``x``."""
    out = np.zeros(k)
    i = 0
    while i + 4 <= k:
        r0, r1, r2, r3 = rows[i], rows[i + 1], rows[i + 2], rows[i + 3]
        s0 = s1 = s2 = s3 = 0.0
        for j in range(x.size):
            xj = x[j]
            s0 += r0[j] * xj
            s1 += r1[j] * xj
            s2 += r2[j] * xj
            s3 += r3[j] * xj
        out[i], out[i + 1], out[i + 2], out[i + 3] = s0, s1, s2, s3
        i += 4
    while i < k:
        out[i] = _dot(rows[i], x)
        i += 1
    return out


@numba.njit(cache=True, nogil=True)
def _cholesky_delete(factor, k, p):
    """Delete row and column ``p`` of the ``k x k`` lower factor ``L`` in place (``O(k^2)``).

    Removing them leaves ``L33 L33^T + l l^T`` for the trailing block (``l``
    the deleted column below ``p``): a rank-one *update*, done by Givens-like
    sweeps, which is stable.
    """
    for i in range(p, k - 1):  # shift the rows below p up by one, dropping column p into x
        for j in range(p):
            factor[i, j] = factor[i + 1, j]
    x = np.empty(k - 1 - p)
    for i in range(k - 1 - p):
        x[i] = factor[p + 1 + i, p]
    for i in range(p, k - 1):  # the trailing block, shifted one column left
        for j in range(p, i + 1):
            factor[i, j] = factor[i + 1, j + 1]
    size = k - 1 - p
    for i in range(size):
        row = p + i
        diag = factor[row, row]
        radius = np.sqrt(diag * diag + x[i] * x[i])
        c, s = radius / diag, x[i] / diag
        factor[row, row] = radius
        for q in range(i + 1, size):
            below = p + q
            factor[below, row] = (factor[below, row] + s * x[q]) / c
            x[q] = c * x[q] - s * factor[below, row]
    for j in range(k):
        factor[k - 1, j] = 0.0
        factor[j, k - 1] = 0.0


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _solve_lower(factor, k, rhs):
    """``z`` with ``L z = rhs`` for the leading ``k x k`` block of the lower factor (rows are contiguous).

    The row dot products may be reassociated (``fastmath``) so that they vectorise.
    """
    z = rhs[:k].copy()
    for i in range(k):
        acc = z[i]
        for j in range(i):
            acc -= factor[i, j] * z[j]
        z[i] = acc / factor[i, i]
    return z


@numba.njit(cache=True, nogil=True)
def _solve_gram(factor, k, rhs):
    """``w`` with ``L L^T w = rhs``: forward, then backward substitution by rows of ``L`` (no copy of ``L``)."""
    w = _solve_lower(factor, k, rhs)
    for i in range(k - 1, -1, -1):
        w[i] /= factor[i, i]
        wi = w[i]
        for j in range(i):
            w[j] -= factor[i, j] * wi
    return w


@numba.njit(cache=True, nogil=True)
def _first_join(corr, along, lam, tiny, blocked, dropped):
    """The first inactive column whose correlation reaches ``+-(lam - g)``: ``(index, g, sign)``, -1 if none.

    Along the segment the correlation of column ``j`` is ``corr_j - g along_j``;
    it reaches ``lam - g`` at ``g = (lam - corr_j) / (1 - along_j)`` and
    ``-(lam - g)`` at ``g = (lam + corr_j) / (1 + along_j)`` (when positive).
    """
    best, best_gamma, best_sign = -1, np.inf, 0.0
    for j in range(corr.size):
        if blocked[j] or j == dropped:
            continue
        plus_den, minus_den = 1.0 - along[j], 1.0 + along[j]
        if plus_den > 0.0:
            g = (lam - corr[j]) / plus_den
            if tiny < g < best_gamma:
                best, best_gamma, best_sign = j, g, 1.0
        if minus_den > 0.0:
            g = (lam + corr[j]) / minus_den
            if tiny < g < best_gamma:
                best, best_gamma, best_sign = j, g, -1.0
    return best, best_gamma, best_sign


@numba.njit(cache=True, nogil=True)
def _first_knot(a_mat, r, pair, both):
    """Start of the path: ``pair[0] = r``, ``both[0] = A^T r``; the first column to join, its sign, and ``lam``."""
    _copy_into(pair[0], r, r.size)
    _combine(r, a_mat, a_mat.shape[0], both[0])  # A^T r, by rows of A
    corr = both[0]
    joining, lam = 0, 0.0
    for j in range(corr.size):
        if abs(corr[j]) > lam:
            joining, lam = j, abs(corr[j])
    return joining, 1.0 if corr[joining] > 0 else -1.0, lam


@numba.njit(cache=True, nogil=True)
def _join(a_mat, joining, joining_sign, k, active, coef, signs, rows, factor, blocked):
    """Extend the factor by column ``joining`` (``L z = A_S^T a_j``) unless it is in the active span; new ``k``."""
    column = a_mat[:, joining].copy()
    z = _solve_lower(factor, k, _row_dots(rows, k, column))
    pivot = _dot(column, column) - _dot(z, z)
    blocked[joining] = True
    if pivot > 1e-10 * _dot(column, column):
        _copy_into(factor[k], z, k)
        factor[k, k] = np.sqrt(pivot)
        _copy_into(rows[k], column, column.size)
        active[k], coef[k], signs[k] = joining, 0.0, joining_sign
        k += 1
    return k


@numba.njit(cache=True, nogil=True)
def _first_drop(coef, w, k, tiny):
    """The first active coefficient to reach 0 along the direction ``w``: ``(index, g)``, -1 if none."""
    drop_at, gamma_drop = -1, np.inf
    for i in range(k):
        if w[i] != 0.0:
            g = -coef[i] / w[i]
            if tiny < g < gamma_drop:
                drop_at, gamma_drop = i, g
    return drop_at, gamma_drop


@numba.njit(cache=True, nogil=True)
def _crossing(pair, eps2):
    """The step ``g`` at which the residual ``pair[0] - g pair[1]`` reaches ``epsilon`` (``inf``: never)."""
    residual, u = pair[0], pair[1]
    rr, ru, uu = _dot(residual, residual), _dot(residual, u), _dot(u, u)
    disc = ru * ru - uu * (rr - eps2)  # ||residual - g u||^2 = eps^2 at the smaller root
    # (epsilon = 0 is the end of the path, where this root is double and loses half the digits)
    return (rr - eps2) / (ru + np.sqrt(disc)) if eps2 > 0 and disc >= 0 and ru > 0 else np.inf


@numba.njit(cache=True, nogil=True)
def _drop(drop_at, k, active, coef, signs, rows, factor, blocked):
    """Remove active entry ``drop_at`` (its coefficient reached 0) from the active set and the factor; new ``k``."""
    for i in range(drop_at, k - 1):
        active[i], coef[i], signs[i] = active[i + 1], coef[i + 1], signs[i + 1]
        _copy_into(rows[i], rows[i + 1], rows.shape[1])
    _cholesky_delete(factor, k, drop_at)
    k -= 1
    blocked[:] = False  # a column in the old span may be outside the new one
    for i in range(k):
        blocked[active[i]] = True
    return k


@numba.njit(cache=True, nogil=True, inline="always")
def _direction_and_join(a_mat, joining, joining_sign, k, active, coef, signs, rows, factor, blocked, pair, both, lam,
                        tiny, dropped):
    """A segment of the path on the design: the column ``joining`` added (unless -1), the direction, the next join.

    The direction is ``w = (A_S^T A_S)^{-1} signs`` and ``u = A_S w`` (``pair[1]``); one pass over ``A``
    gives ``A^T`` of the residual and of ``u`` (``both``). Returns ``(k, w, joining, gamma_join, sign)``
    of the first inactive column to join (-1 and ``inf`` once the factor is full).
    """
    if joining >= 0:
        k = _join(a_mat, joining, joining_sign, k, active, coef, signs, rows, factor, blocked)
    w = _solve_gram(factor, k, signs)
    _combine(w, rows, k, pair[1])
    _project(pair, a_mat, both)
    joining, gamma_join, joining_sign = _first_join(both[0], both[1], lam, tiny, blocked, dropped)
    if k == factor.shape[0]:
        joining, gamma_join = -1, np.inf
    return k, w, joining, gamma_join, joining_sign


_CROSSED, _END, _OUT_OF_STEPS = 0, 1, 2


@numba.njit(cache=True, nogil=True)
def _follow_path(a_mat, r, eps2, max_steps, active, coef, signs, rows, factor, pair):
    """The knot-by-knot loop of :func:`l1_homotopy`, compiled (in Python it cost about as much as the algebra).

    ``rows[:k]`` holds the active columns of ``A`` as rows (contiguous),
    ``factor[:k, :k]`` the lower Cholesky factor of their Gram matrix,
    ``pair`` the residual (row 0) and the direction ``u`` (row 1). Returns
    ``(k, knots, lam, outcome)``.
    """
    n = a_mat.shape[1]
    blocked = np.zeros(n, dtype=np.bool_)  # active, or in the span of the active columns (until a drop)
    both = np.zeros((2, n))
    joining, joining_sign, lam = _first_knot(a_mat, r, pair, both)
    tiny = 1e-12 * lam
    k, dropped = 0, -1
    for step in range(1, max_steps + 1):
        k, w, joining, gamma_join, joining_sign = _direction_and_join(
            a_mat, joining, joining_sign, k, active, coef, signs, rows, factor, blocked, pair, both, lam, tiny,
            dropped)
        # the first knot: a join, a drop (coef + g w = 0), the residual reaching epsilon, or lam = 0
        drop_at, gamma_drop = _first_drop(coef, w, k, tiny)
        gamma_cross = _crossing(pair, eps2)
        gamma = min(gamma_join, gamma_drop, gamma_cross, lam)
        for i in range(k):
            coef[i] += gamma * w[i]
        residual, u = pair[0], pair[1]
        for j in range(residual.size):
            residual[j] -= gamma * u[j]
        at_end = gamma == lam
        lam -= gamma
        if gamma == gamma_cross:
            return k, step, lam, _CROSSED
        if at_end:
            return k, step, 0.0, _END
        dropped = -1
        if gamma == gamma_drop:
            joining, dropped = -1, active[drop_at]
            k = _drop(drop_at, k, active, coef, signs, rows, factor, blocked)
    return k, max_steps, lam, _OUT_OF_STEPS


_CHUNK_ENTRIES = 2**20  # entries of A converted at a time: 8 MiB temporaries, whatever the size of A


def _small_integer_form(a_mat: np.ndarray) -> tuple[float, np.ndarray | None]:
    """``(c, B)`` with ``A = c B`` exactly and ``B`` an int8 matrix, or ``(1, None)``.

    Bernoulli measurement matrices (entries ``+-1/sqrt(M)``) have this form,
    with ``c`` the smallest non-zero ``|A_ij|``. Products with ``B`` are exact
    in float64, so the path is the same up to rounding, while each pass over
    ``A`` reads a byte per entry instead of eight. Both passes over ``A`` (the
    magnitudes, then ``B = rint(A / c)`` checked by ``c B = A``) go by blocks
    of rows, so the temporaries stay small next to ``A`` and ``B``: the
    element-wise operations are those on the whole matrix, hence the same
    ``c`` and ``B``.
    """
    step = max(1, _CHUNK_ENTRIES // max(a_mat.shape[1], 1))  # rows per block
    blocks = [slice(i, i + step) for i in range(0, a_mat.shape[0], step)]
    lowest, highest = np.inf, 0.0
    for rows in blocks:
        magnitudes = np.abs(a_mat[rows][a_mat[rows] != 0])
        if magnitudes.size == 0:
            continue
        if not np.isfinite(magnitudes).all():
            return 1.0, None
        lowest, highest = min(lowest, float(magnitudes.min())), max(highest, float(magnitudes.max()))
    if highest == 0.0:  # every entry is zero
        return 1.0, None
    scale = float(lowest)
    if highest / scale > 127:
        return 1.0, None
    small = np.empty(a_mat.shape, dtype=np.int8)
    for rows in blocks:
        block = np.rint(a_mat[rows] / scale)
        if not np.array_equal(block * scale, a_mat[rows]):
            return 1.0, None
        small[rows] = block  # integers in [-127, 127]: the cast is exact
    return scale, small


def _raise_end_too_far(a_mat, r, epsilon, slack):
    """The path ended farther than ``epsilon``: infeasible if least squares is too, else degenerate."""
    closest = r - a_mat @ np.linalg.lstsq(a_mat, r, rcond=None)[0]
    distance = float(np.sqrt(closest @ closest))
    if distance > epsilon + slack:
        raise HomotopyError(f"no point is within epsilon={epsilon:.6g} of the target: the least-squares "
                            f"fit is {distance:.6g} away (the constraint is infeasible).", infeasible=True)
    raise HomotopyError("the lasso path ended short of the target (degenerate columns?).")


def l1_homotopy(matrix: np.ndarray, target: np.ndarray, epsilon: float, *,
                max_steps: int | None = None) -> tuple[np.ndarray, int]:
    r"""Solve :math:`\min \|d\|_1` s.t. :math:`\|r - Ad\|_2 \le \epsilon`; return ``d`` and the knots passed.

    Parameters
    ----------
    matrix : ndarray of shape (M, N)
        ``A``.
    target : ndarray of shape (M,)
        ``r``.
    epsilon : float
        Radius, ``>= 0``. ``epsilon >= ||r||`` gives ``d = 0``.
    max_steps : int, optional
        Knots to pass before giving up (default ``10 (M + N)``; the path
        usually has fewer than ``2 min(M, N)``).

    Raises
    ------
    HomotopyError
        With ``infeasible=True`` if no ``d`` is within ``epsilon`` of ``r``
        (possible when the columns of ``A`` do not span ``R^M``, e.g.
        ``M > N``). Otherwise, if the answer cannot be certified: the end of
        the path is short of ``epsilon``, the lasso optimality conditions fail
        at the final ``lambda`` (both happen with degenerate, e.g. repeated,
        columns), or the path has more than ``max_steps`` knots.
    """
    a_mat = np.ascontiguousarray(matrix, dtype=float)
    r = np.ascontiguousarray(target, dtype=float)
    scale, small = _small_integer_form(a_mat)
    if small is None:
        return _solve(a_mat, r, epsilon, max_steps)
    d, knots = _solve(small, r, epsilon, max_steps)  # A d = B (scale d): the same path, scaled
    return d / scale, knots


def _solve(a_mat: np.ndarray, r: np.ndarray, epsilon: float, max_steps: int | None) -> tuple[np.ndarray, int]:
    """:func:`l1_homotopy` for a C-contiguous float64 or int8 ``a_mat``."""
    m, n = a_mat.shape
    d = np.zeros(n)
    eps2 = float(epsilon) ** 2
    if r @ r <= eps2:
        return d, 0
    slack = 1e-9 * float(np.sqrt(r @ r))  # rounding: the end of the path is "exactly" on target
    capacity = min(m, n)
    max_steps = 10 * (m + n) if max_steps is None else max_steps
    active = np.zeros(capacity, dtype=np.int64)
    coef, signs = np.zeros(capacity), np.zeros(capacity)
    rows = np.zeros((capacity, m), dtype=a_mat.dtype)  # the active columns, as rows
    factor, pair = np.zeros((capacity, capacity)), np.zeros((2, m))
    k, knots, lam, outcome = _follow_path(a_mat, r, eps2, max_steps, active, coef, signs, rows, factor, pair)
    residual = pair[0]
    if outcome == _OUT_OF_STEPS:
        raise HomotopyError(f"the lasso path has more than max_steps={max_steps} knots.")
    if outcome == _END and float(np.sqrt(residual @ residual)) > epsilon + slack:
        _raise_end_too_far(a_mat, r, epsilon, slack)
    lam0 = float(np.abs(r @ a_mat).max())
    if lam > 1e-9 * lam0:  # d solves the lasso at lam > 0 (KKT), so it solves the constrained problem
        _certify(residual @ a_mat, lam, active[:k], signs[:k], coef[:k], 1e-8 * (lam + lam0))
    else:  # the end of the path (basis pursuit, or the least-squares fit), where KKT at lam ~ 0 says nothing:
        # on the last segment the residual is r_end + lam u with A^T r_end = 0, so u is a dual point
        _certify(pair[1] @ a_mat, 1.0, active[:k], signs[:k], coef[:k], 1e-7)
    d[active[:k]] = coef[:k]
    return d, knots


def _certify(corr, lam, active, signs, coef, tolerance):
    """Raise unless the optimality conditions hold: ``|corr| <= lam``, ``corr = lam * signs`` on the active set
    (to ``tolerance``), and every active coefficient has its sign (or is 0)."""
    violation = max(float(np.abs(corr).max()) - lam, float(np.abs(corr[active] - lam * signs).max(initial=0.0)))
    wrong_sign = bool((coef * signs < -1e-12 * np.abs(coef).max(initial=0.0)).any())
    if violation > tolerance or wrong_sign:
        raise HomotopyError(f"the path lost optimality (violation {violation:.3g} of the optimality conditions "
                            f"at lambda {lam:.3g}; degenerate columns?).")
