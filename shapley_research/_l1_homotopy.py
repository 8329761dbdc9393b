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
factor.
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


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz", "arcp", "contract"})
def _solve_lower(factor, k, rhs):
    """``z`` with ``L z = rhs`` for the leading ``k x k`` block of the lower factor (rows are contiguous).

    The row dot products may be reassociated (``fastmath``) so that they
    vectorise: a rounding-level difference, at a fraction of the time.
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
        (possible when ``A`` has fewer rows than rank, e.g. ``M > N``).
        Otherwise, if the answer cannot be certified: the end of the path is
        short of ``epsilon``, the lasso optimality conditions fail at the
        final ``lambda`` (both happen with degenerate, e.g. repeated,
        columns), or the path has more than ``max_steps`` knots.
    """
    a_mat = np.ascontiguousarray(matrix, dtype=float)
    r = np.asarray(target, dtype=float)
    m, n = a_mat.shape
    d = np.zeros(n)
    eps2 = float(epsilon) ** 2
    if r @ r <= eps2:
        return d, 0
    slack = 1e-9 * float(np.sqrt(r @ r))  # rounding: the end of the path is "exactly" on target
    capacity = min(m, n)
    max_steps = 10 * (m + n) if max_steps is None else max_steps
    active = np.empty(capacity, dtype=np.int64)
    coef = np.zeros(capacity)
    signs = np.zeros(capacity)
    columns = np.empty((m, capacity), order="F")  # A[:, active], in the order of `active`
    factor = np.zeros((capacity, capacity))  # lower Cholesky factor of A_S^T A_S
    blocked = np.zeros(n, dtype=bool)  # active, or in the span of the active columns (until a drop)
    k = 0
    pair = np.empty((2, m))  # the residual and the direction u, so that one pass gives A^T of both
    pair[0] = r
    corr = r @ a_mat
    lam = float(np.abs(corr).max())
    tiny = 1e-12 * lam
    joining = int(np.argmax(np.abs(corr)))
    joining_sign, dropped = np.sign(corr[joining]), -1
    for step in range(1, max_steps + 1):
        if joining >= 0:  # extend the factor by the new column: L z = A_S^T a_j
            column = a_mat[:, joining]
            z = _solve_lower(factor, k, columns[:, :k].T @ column)
            pivot = float(column @ column - z @ z)
            blocked[joining] = True
            if pivot > 1e-10 * float(column @ column):
                factor[k, :k], factor[k, k] = z, np.sqrt(pivot)
                columns[:, k] = column
                active[k], coef[k], signs[k] = joining, 0.0, joining_sign
                k += 1
        # direction w = (A_S^T A_S)^{-1} signs and u = A_S w; one pass gives A^T residual and A^T u
        w = _solve_gram(factor, k, signs)
        pair[1] = columns[:, :k] @ w
        residual, u = pair
        corr, along = pair @ a_mat
        # the first knot: a join, a drop (coef + g w = 0), the residual reaching epsilon, or lam = 0
        joining, gamma_join, joining_sign = _first_join(corr, along, lam, tiny, blocked, dropped)
        if k == capacity:
            joining, gamma_join = -1, np.inf
        to_zero = np.divide(-coef[:k], w, out=np.full(k, np.inf), where=w != 0)
        to_zero[~(to_zero > tiny)] = np.inf
        drop_at = int(np.argmin(to_zero)) if k else -1
        gamma_drop = to_zero[drop_at] if k else np.inf
        rr, ru, uu = residual @ residual, residual @ u, u @ u  # ||residual - g u||^2 = eps^2: smaller root
        disc = ru * ru - uu * (rr - eps2)
        gamma_cross = (rr - eps2) / (ru + np.sqrt(disc)) if disc >= 0 and ru > 0 else np.inf
        gamma = min(gamma_join, gamma_drop, gamma_cross, lam)
        coef[:k] += gamma * w
        residual -= gamma * u
        at_end, lam = gamma == lam, lam - gamma
        if gamma == gamma_cross:
            break
        if at_end:  # lam reached 0: the least-squares fit on the active columns ends the path
            if float(np.sqrt(residual @ residual)) > epsilon + slack:
                _raise_end_too_far(a_mat, r, epsilon, slack)
            break
        dropped = -1
        if gamma == gamma_drop:
            joining, dropped = -1, int(active[drop_at])
            blocked[:] = False  # a column in the old span may be outside the new one
            blocked[active[:k]] = True
            blocked[dropped] = False
            for arr in (active, coef, signs):
                arr[drop_at:k - 1] = arr[drop_at + 1:k]
            columns[:, drop_at:k - 1] = columns[:, drop_at + 1:k]
            _cholesky_delete(factor, k, drop_at)
            k -= 1
    else:
        raise HomotopyError(f"the lasso path has more than max_steps={max_steps} knots.")
    if lam > 0:  # certificate: d solves the lasso at lam (KKT), so it solves the constrained problem
        corr = residual @ a_mat
        violation = max(float(np.abs(corr).max()) - lam,
                        float(np.abs(corr[active[:k]] - lam * signs[:k]).max(initial=0.0)))
        if violation > 1e-8 * (lam + tiny * 1e12):
            raise HomotopyError(f"the path lost optimality (KKT violation {violation:.3g} at lambda {lam:.3g}; "
                                "degenerate columns?).")
    d[active[:k]] = coef[:k]
    return d, step
