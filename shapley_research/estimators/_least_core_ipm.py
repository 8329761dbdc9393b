r"""A dense primal-dual interior-point method for the least core's two programs.

Both programs have the form

.. math::

    \min_z\; \tfrac12 z^\top P z + q^\top z \quad\text{s.t.}\quad G z \ge h,\qquad a^\top z = c,

with ``P`` diagonal, a few rows ``G`` per variable, and ``G`` made of coalition
indicators: dense (each player is in half the uniform coalitions), so sparse
solvers gain nothing from sparsity and pay for their generality (HiGHS took
40 s on the linear program at ``N = 400`` with ``10 N`` rows, some ``N^{3.5}``).
Each step of this method costs one ``(k, k)`` Gram matrix
:math:`P + G^\top W G` (``k`` variables, ``W`` diagonal, a BLAS product of
``m k^2`` flops, formed over chunks of rows so that no ``m x k`` temporary is
made) and its Cholesky factor, shared by the predictor and the corrector
(Mehrotra). The equality row is handled by a bordered solve.

The linear program's variables are :math:`z = (x, e)` and its rows
:math:`[\,\mathbb 1_S, 1\,]`: :class:`Rows` keeps the masks (``m x N``
booleans as float64) and appends the column of ones implicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

#: Rows per chunk of the Gram matrix (with ``N = 1,000``: 32 MiB of float64 a chunk).
GRAM_ROWS = 4096
#: Stop when every residual is below this (the data are scaled to about 1) and the gap below the next.
IPM_TOLERANCE = 1e-10
#: Stop when the total duality gap relative to the objective is below this. The values move with it (a row near
#: its bound keeps a multiplier of about ``gap / (m slack)``): 1e-10 leaves up to 2e-6 of them in scaled units;
#: 1e-12 would leave 1e-8 but stalls on some majority games (N = 100, 10 N rows).
IPM_GAP_TOLERANCE = 1e-10
#: Most steps (Mehrotra's method usually needs 15-40).
IPM_MAX_STEPS = 200
#: Rounds of iterative refinement of each Newton direction (:meth:`_System.newton`): one takes the dual
#: equation's error from about 1e-9 to 1e-11 near the solution, a second to rounding.
IPM_REFINEMENTS = 2
#: No refinement where the dual equation's error is below this share of the dual residual it must remove
#: (or of :data:`IPM_TOLERANCE`): far from the solution an error of 1e-9 is harmless.
REFINED_SHARE = 1e-3


@dataclass
class Rows:
    """The rows ``[masks, 1]`` (``with_ones``) or ``masks`` of a program, as a dense float64 matrix."""

    masks: np.ndarray  # (m, N) float64
    with_ones: bool

    @property
    def shape(self) -> tuple[int, int]:
        return self.masks.shape[0], self.masks.shape[1] + self.with_ones

    def matvec(self, z: np.ndarray) -> np.ndarray:
        if self.with_ones:
            return self.masks @ z[:-1] + z[-1]
        return self.masks @ z

    def rmatvec(self, y: np.ndarray) -> np.ndarray:
        out = y @ self.masks
        return np.append(out, y.sum()) if self.with_ones else out

    def gram(self, weights: np.ndarray) -> np.ndarray:
        """:math:`G^\\top \\operatorname{diag}(w) G`, summed over chunks of :data:`GRAM_ROWS` rows."""
        m, n = self.masks.shape
        out = np.zeros((n, n))
        for start in range(0, m, GRAM_ROWS):
            chunk = self.masks[start:start + GRAM_ROWS]
            out += (chunk * weights[start:start + GRAM_ROWS, None]).T @ chunk
        if not self.with_ones:
            return out
        column = weights @ self.masks
        return np.block([[out, column[:, None]], [column[None, :], np.array([[weights.sum()]])]])


def interior_point(rows: Rows, h: np.ndarray, q: np.ndarray, p: np.ndarray, a: np.ndarray, c: float,
                   z0: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    r"""Solve :math:`\min \frac12 z^\top \operatorname{diag}(p) z + q^\top z` s.t. ``rows z >= h``, ``a z = c``.

    Mehrotra's predictor-corrector from ``z0`` (any point: the slacks start
    at :math:`\max(Gz_0 - h, 1)`, the duals at 1). Returns the solution, the
    rows' slacks :math:`Gz - h` and ``"optimal"``; raises ``RuntimeError`` if
    it does not converge in :data:`IPM_MAX_STEPS` steps.

    It stops when the duality gap relative to the objective,
    :math:`s^\top\lambda / (1 + |\tfrac12 z^\top P z + q^\top z|)` (with
    the residuals at 0, :math:`s^\top\lambda` is the primal objective less
    the dual one), the equality residual,
    the primal residual relative to :math:`1 + \|h\|_\infty` and the dual
    residual :math:`r_d = Pz + q - G^\top\lambda - a\nu` relative to
    :math:`1 + \max(\|Pz\|_\infty, \|q\|_\infty, \|G^\top\lambda\|_\infty,
    \|a\nu\|_\infty)` below :data:`IPM_TOLERANCE`, the gap below
    :data:`IPM_GAP_TOLERANCE`. The dual
    residual is a difference of those terms: where the multipliers are large
    (a thin feasible set, a small ``tolerance`` of the least core, makes
    :math:`G^\top\lambda` some 500) its rounding alone is about
    ``m eps`` times them, above an absolute ``1e-10``. The gap is the
    total, not the mean :math:`\mu` over the ``m`` rows: a mean below
    ``1e-10`` left the subsidy up to ``m 1e-10`` above its minimum, and the
    values up to ``1e-4`` (scaled) from their exact point: a row near its bound, whose multiplier
    should be 0, keeps about :math:`\mu / s_i`, with :math:`s_i` as small as
    the least core's ``tolerance``.
    """
    m = rows.shape[0]
    z, nu = z0.astype(float).copy(), 0.0
    s, lam = np.maximum(rows.matvec(z) - h, 1.0), np.ones(m)
    for _ in range(IPM_MAX_STEPS):
        pulled = rows.rmatvec(lam)
        r_dual = p * z + q - pulled - a * nu
        r_primal = rows.matvec(z) - s - h
        r_eq = float(a @ z) - c
        gap = float(s @ lam)
        mu = gap / m
        objective = 0.5 * float(z @ (p * z)) + float(q @ z)
        dual_scale = 1 + max(np.abs(p * z).max(), np.abs(q).max(), np.abs(pulled).max(), np.abs(a * nu).max())
        if gap / (1 + abs(objective)) < IPM_GAP_TOLERANCE and max(
                np.abs(r_dual).max() / dual_scale, np.abs(r_primal).max() / (1 + np.abs(h).max()),
                abs(r_eq)) < IPM_TOLERANCE:
            return z, s, "optimal"
        w = lam / s
        factor = _factor(rows.gram(w) + np.diag(p))
        system = _System(rows, factor, a, cho_solve(factor, a), s, lam, r_dual, r_primal, r_eq, p)
        _, s_aff, lam_aff, _ = system.newton(-s * lam)
        step = _step(s, s_aff, lam, lam_aff)
        sigma = (float((s + step * s_aff) @ (lam + step * lam_aff)) / m / mu) ** 3
        d_z, d_s, d_lam, d_nu = system.newton(-s * lam + sigma * mu - s_aff * lam_aff)
        step = min(1.0, 0.99 * _step(s, d_s, lam, d_lam))
        z, s, lam, nu = z + step * d_z, s + step * d_s, lam + step * d_lam, nu + step * d_nu
    raise RuntimeError(f"least core: the interior-point method did not converge in {IPM_MAX_STEPS} steps "
                       "(try method='highs').")


@dataclass
class _System:
    """One step's Newton system: the factor of :math:`P + G^\\top W G`, the point and its residuals."""

    rows: Rows
    factor: tuple
    a: np.ndarray
    solve_a: np.ndarray  # the factor applied to a, for the bordered solve
    s: np.ndarray
    lam: np.ndarray
    r_dual: np.ndarray
    r_primal: np.ndarray
    r_eq: float
    p: np.ndarray  # the diagonal of P

    def newton(self, r_comp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        r"""The direction ``(dz, ds, dlam, dnu)`` whose complementarity residual is ``r_comp``, refined.

        Eliminating :math:`\Delta s = G\Delta z + r_p` and
        :math:`\Delta\lambda = S^{-1}(r_c - \Lambda\Delta s)` leaves
        :math:`(P + G^\top W G)\Delta z - a\Delta\nu = -r_d + G^\top(S^{-1} r_c - W r_p)`,
        :math:`a^\top \Delta z = -r_e`, solved with the factor and its border.

        The primal and complementarity equations then hold by construction,
        the dual one :math:`P\Delta z - G^\top\Delta\lambda - a\Delta\nu = -r_d`
        only as well as the solve: near the solution the weights :math:`w`
        span 20 orders of magnitude, the normal matrix's condition passes
        :math:`10^{14}`, and the solve leaves an error of about ``1e-9`` there,
        on which the dual residual stalls above :data:`IPM_TOLERANCE` while
        :math:`\mu` keeps falling (until the directions are noise). Each of
        up to :data:`IPM_REFINEMENTS` rounds of iterative refinement solves
        the same system, with the same factor, for that error :math:`e_d`
        (and :math:`e_e` of the equality row; the other residuals 0) and adds
        the correction (three products with ``G``) while the error exceeds
        :data:`REFINED_SHARE` times the larger of :math:`\|r_d\|_\infty` and
        :data:`IPM_TOLERANCE`.
        """
        d_z, d_s, d_lam, d_nu = self._solve(self.r_dual, self.r_primal, r_comp, self.r_eq)
        zeros = np.zeros_like(self.s)
        refined = REFINED_SHARE * max(float(np.abs(self.r_dual).max()), IPM_TOLERANCE)
        for _ in range(IPM_REFINEMENTS):
            e_dual = self.r_dual + self.p * d_z - self.rows.rmatvec(d_lam) - self.a * d_nu
            e_eq = self.r_eq + float(self.a @ d_z)
            if max(np.abs(e_dual).max(), abs(e_eq)) <= refined:
                break
            c_z, c_s, c_lam, c_nu = self._solve(e_dual, zeros, zeros, e_eq)
            d_z, d_s, d_lam, d_nu = d_z + c_z, d_s + c_s, d_lam + c_lam, d_nu + c_nu
        return d_z, d_s, d_lam, d_nu

    def _solve(self, r_dual: np.ndarray, r_primal: np.ndarray, r_comp: np.ndarray,
               r_eq: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """The Newton direction for the residuals ``(r_dual, r_primal, r_comp, r_eq)``, by the factor."""
        s, lam = self.s, self.lam
        rhs = -r_dual + self.rows.rmatvec((r_comp - lam * r_primal) / s)
        base = cho_solve(self.factor, rhs)
        d_nu = (-r_eq - float(self.a @ base)) / float(self.a @ self.solve_a)
        d_z = base + self.solve_a * d_nu
        d_s = self.rows.matvec(d_z) + r_primal
        return d_z, d_s, (r_comp - lam * d_s) / s, d_nu


def _factor(matrix: np.ndarray) -> tuple:
    """Cholesky factor of ``matrix``, regularised only where it is singular (fewer independent rows than
    variables): near the solution the weights span some 25 orders of magnitude, and a ridge scaled to the
    largest diagonal entry would swamp the small ones and stall the dual residual."""
    try:
        return cho_factor(matrix)
    except LinAlgError:
        pass
    ridge = 1e-14 * max(float(np.abs(np.diag(matrix)).max()), 1.0)
    for _ in range(8):
        try:
            return cho_factor(matrix + ridge * np.eye(matrix.shape[0]))
        except LinAlgError:
            ridge *= 100
    return cho_factor(matrix + ridge * np.eye(matrix.shape[0]))


def _step(s: np.ndarray, d_s: np.ndarray, lam: np.ndarray, d_lam: np.ndarray) -> float:
    """Largest step in ``[0, 1]`` keeping ``s`` and ``lam`` non-negative."""
    ratios = np.concatenate([-s[d_s < 0] / d_s[d_s < 0], -lam[d_lam < 0] / d_lam[d_lam < 0]])
    return float(min(1.0, ratios.min(initial=np.inf)))
