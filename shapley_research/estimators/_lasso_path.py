r"""The lasso path knot by knot (compiled), and the penalty cross-validated along it: scikit-learn's ``LassoLarsCV``.

:func:`lasso_lars_cv` selects the penalty as ``LassoLarsCV(cv=cv)`` does
(folds in order, each fold's training rows centred, the held-out residuals
interpolated along the piecewise-linear path onto the union of the folds'
knots, the penalty of least mean squared error), then solves the lasso on
all rows at that penalty. The path is followed by the compiled homotopy of
:mod:`._l1_homotopy` (the same steps as LARS with the lasso modification),
not by scikit-learn's Python loop, whose per-knot overhead was most of AME's
time on cheap games (1,676 knots, 0.35 s on 1,000 coalitions of 300 players).
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

from ._l1_homotopy import _direction_and_join, _drop, _first_drop, _first_join, _first_knot, _solve_gram, _solve_lower

__all__ = ["lasso_lars_cv", "lasso_path"]

#: Most penalties on which the folds' errors are compared (scikit-learn's ``max_n_alphas``).
MAX_N_ALPHAS = 1000


@numba.njit(cache=True, nogil=True, inline="always")
def _first_knot_recorded(knot_lams, lam, lam_stop):
    """Record the first knot's penalty ``lam``; the rounding floor ``1e-12 lam`` and the stop, never below it."""
    knot_lams[0] = lam
    tiny = 1e-12 * lam
    return tiny, max(lam_stop, tiny)  # below, joins come from rounding (a noiseless fit's residual is ~1e-16)


@numba.njit(cache=True, nogil=True, inline="always")
def _to_next_knot(coef, w, k, lam, lam_stop, gamma_join, joining, tiny, active, signs, rows, factor, blocked,
                  knot_lams, knot_coefs, count):
    """Move ``coef`` along ``w`` to the next knot (a join, a drop or the stop), record it, and drop there.

    Returns ``(gamma, lam, k, joining, dropped)`` after the step: an active entry that reaches 0 leaves the
    active set and the factor (``rows``: the design's active columns, or none for the Gram form), and is
    ``dropped`` (-1 otherwise); the path stops when ``lam <= lam_stop``.
    """
    drop_at, gamma_drop = _first_drop(coef, w, k, tiny)
    gamma = min(gamma_join, gamma_drop, lam - lam_stop)
    for i in range(k):
        coef[i] += gamma * w[i]
    lam -= gamma
    knot_lams[count] = lam
    for i in range(k):
        knot_coefs[count, active[i]] = coef[i]
    dropped = -1
    if lam > lam_stop and gamma == gamma_drop:
        joining, dropped = -1, active[drop_at]
        k = _drop(drop_at, k, active, coef, signs, rows, factor, blocked)
    return gamma, lam, k, joining, dropped


@numba.njit(cache=True, nogil=True)
def _trace(a_mat, r, lam_stop, knot_lams, knot_coefs, active, coef, signs, rows, factor, pair):
    """The lasso path of ``(A, r)`` from its start down to ``lam_stop`` or its end; returns the knots recorded.

    The end is taken at ``1e-12`` of the first knot's penalty, not at 0:
    below it the correlations are rounding, and a column joining there (as
    on noiseless data) would be an artefact.

    ``knot_lams[t]`` and ``knot_coefs[t]`` (zeros on entry) get the penalty
    and the coefficients at knot ``t``, the start (``lam0``, zeros) first
    and the stop last; at most ``knot_lams.size`` knots are recorded.
    """
    n = a_mat.shape[1]
    blocked = np.zeros(n, dtype=np.bool_)
    both = np.zeros((2, n))
    joining, joining_sign, lam = _first_knot(a_mat, r, pair, both)
    tiny, lam_stop = _first_knot_recorded(knot_lams, lam, lam_stop)
    if lam <= lam_stop:
        return 1
    k, dropped = 0, -1
    for count in range(1, knot_lams.size):
        k, w, joining, gamma_join, joining_sign = _direction_and_join(
            a_mat, joining, joining_sign, k, active, coef, signs, rows, factor, blocked, pair, both, lam, tiny,
            dropped)
        gamma, lam, k, joining, dropped = _to_next_knot(coef, w, k, lam, lam_stop, gamma_join, joining, tiny, active,
                                                        signs, rows, factor, blocked, knot_lams, knot_coefs, count)
        residual, u = pair[0], pair[1]
        for j in range(residual.size):
            residual[j] -= gamma * u[j]
        if lam <= lam_stop:
            return count + 1
    return knot_lams.size


@numba.njit(cache=True, nogil=True)
def _trace_gram(gram, xty, lam_stop, knot_lams, knot_coefs, active, coef, signs, factor):
    """:func:`_trace` from ``G = A^T A`` and ``A^T r``: a knot costs ``O(n k)``, not ``O(m n)`` (for ``m > n``)."""
    n = gram.shape[0]
    capacity = factor.shape[0]
    blocked = np.zeros(n, dtype=np.bool_)
    corr, along, gathered = xty.copy(), np.zeros(n), np.zeros(n)
    no_rows = np.zeros((capacity, 0))
    joining, lam = 0, 0.0
    for j in range(n):
        if abs(corr[j]) > lam:
            joining, lam = j, abs(corr[j])
    joining_sign = 1.0 if corr[joining] > 0 else -1.0
    tiny, lam_stop = _first_knot_recorded(knot_lams, lam, lam_stop)
    if lam <= lam_stop:
        return 1
    k, dropped = 0, -1
    for count in range(1, knot_lams.size):
        if joining >= 0:  # extend the factor of G_SS by column ``joining`` unless it is in the active span
            for i in range(k):
                gathered[i] = gram[joining, active[i]]
            z = _solve_lower(factor, k, gathered)
            pivot = gram[joining, joining] - np.dot(z, z)
            blocked[joining] = True
            if pivot > 1e-10 * gram[joining, joining]:
                for i in range(k):
                    factor[k, i] = z[i]
                factor[k, k] = np.sqrt(pivot)
                active[k], coef[k], signs[k] = joining, 0.0, joining_sign
                k += 1
        w = _solve_gram(factor, k, signs)
        along[:] = 0.0
        for i in range(k):  # G[:, S] w, by rows of the symmetric G
            wi, row = w[i], gram[active[i]]
            for j in range(n):
                along[j] += wi * row[j]
        joining, gamma_join, joining_sign = _first_join(corr, along, lam, tiny, blocked, dropped)
        if k == capacity:
            joining, gamma_join = -1, np.inf
        gamma, lam, k, joining, dropped = _to_next_knot(coef, w, k, lam, lam_stop, gamma_join, joining, tiny, active,
                                                        signs, no_rows, factor, blocked, knot_lams, knot_coefs, count)
        for j in range(n):
            corr[j] -= gamma * along[j]
        if lam <= lam_stop:
            return count + 1
    return knot_lams.size


def lasso_path(X: NDArray[np.float64], y: NDArray[np.float64], alpha_min: float = 0.0,
               max_knots: int = 10_000) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(alphas, coefs)`` of ``min 1/(2m) ||y - X w||^2 + alpha ||w||_1`` at the path's knots, down to ``alpha_min``.

    ``X`` and ``y`` as given (centre them for an intercept); ``alphas``
    descending from the first knot (all coefficients 0) to ``alpha_min`` or
    the path's end, ``coefs`` (knots, features); at most ``max_knots`` steps
    (the last row is then where the path stopped, as scikit-learn's
    ``max_iter``). Scikit-learn's ``lars_path(method="lasso")`` computes the
    same path in a Python loop.
    """
    X = np.ascontiguousarray(X, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    m, n = X.shape
    capacity = min(m, n)
    gram = (X.T @ X, X.T @ y) if m > n else None  # more rows than features: knots from the Gram matrix
    size = min(max_knots, 4 * capacity + 16)  # paths rarely have 2 min(m, n) knots; doubled when one has more
    while True:
        knot_lams, knot_coefs = np.zeros(size + 1), np.zeros((size + 1, n))
        active, coef, signs = np.zeros(capacity, dtype=np.int64), np.zeros(capacity), np.zeros(capacity)
        factor = np.zeros((capacity, capacity))
        if gram is not None:
            count = _trace_gram(*gram, alpha_min * m, knot_lams, knot_coefs, active, coef, signs, factor)
        else:
            count = _trace(X, y, alpha_min * m, knot_lams, knot_coefs, active, coef, signs, np.zeros((capacity, m)),
                           factor, np.zeros((2, m)))
        if count <= size or size >= max_knots:
            return knot_lams[:count] / m, knot_coefs[:count]
        size = min(max_knots, 2 * size)


def _fold_residues(X, y, test, max_knots):
    """``(alphas, residues)`` of one fold: the path on the other rows (centred), its residuals on ``test``."""
    train = np.ones(len(y), dtype=bool)
    train[test] = False
    x_mean, y_mean = X[train].mean(axis=0), y[train].mean()
    alphas, coefs = lasso_path(X[train] - x_mean, y[train] - y_mean, 0.0, max_knots)
    return alphas, (X[test] - x_mean) @ coefs.T - (y[test] - y_mean)[:, None]


def lasso_lars_cv(X: NDArray[np.float64], y: NDArray[np.float64], cv: int = 5,
                  max_knots: int = 10_000) -> tuple[NDArray[np.float64], float]:
    """The lasso's coefficients on all rows at the penalty ``LassoLarsCV(cv=cv)`` selects, and that penalty."""
    folds = np.array_split(np.arange(len(y)), cv)
    paths = [_fold_residues(X, y, test, max_knots) for test in folds]
    all_alphas = np.unique(np.concatenate([alphas for alphas, _ in paths]))
    if all_alphas[-1] == 0:  # no column correlates with y in any fold (a constant y): 0 at every penalty
        return np.zeros(X.shape[1]), 0.0
    all_alphas = all_alphas[::max(1, int(len(all_alphas) / MAX_N_ALPHAS))]
    from scipy.interpolate import interp1d

    mse = np.empty((len(all_alphas), cv))
    for index, (alphas, residues) in enumerate(paths):
        alphas, residues = alphas[::-1], residues.T[::-1]  # ascending
        if alphas[0] != 0:
            alphas, residues = np.r_[0, alphas], np.r_[residues[:1], residues]
        if alphas[-1] != all_alphas[-1]:
            alphas, residues = np.r_[alphas, all_alphas[-1]], np.r_[residues, residues[-1:]]
        mse[:, index] = np.mean(interp1d(alphas, residues, axis=0)(all_alphas) ** 2, axis=-1)
    finite = np.all(np.isfinite(mse), axis=-1)
    all_alphas, mse = all_alphas[finite], mse[finite]
    best = float(all_alphas[np.argmin(mse.mean(axis=-1))])
    _, coefs = lasso_path(X - X.mean(axis=0), y - y.mean(), best, max_knots)
    return coefs[-1], best
