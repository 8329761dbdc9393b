"""Batched damped Newton's method for the softmax objective of a chunk of coalitions.

:func:`_newton` takes full Newton steps with the exact softmax Hessian,
solved by :func:`_solve_spd` (one batched LAPACK solve),
backtracking only the coalitions that fail the Armijo test; quadratic
convergence, ``O(K^2 N q^2)`` per iteration (:mod:`shapley_research.utilities.learners`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._array import Array, namespace
from ._line_search import ARMIJO_SLOPE, _armijo, _no_progress, _stalled_converged
from ._softmax import _SoftmaxChunk

if TYPE_CHECKING:
    from ._binary import _BinaryChunk


def _solve_spd(H: Array, b: Array) -> Array:
    """Solve ``H x = b`` for a batch of symmetric positive definite ``H`` (B, p, p), ``b`` (B, p).

    One batched LAPACK call (``np.linalg.solve``, LU per matrix). Against a
    batched Cholesky with substitutions vectorised over the batch (``2p``
    numpy steps) it measured as fast from about 200 matrices of size 31 on,
    and 10-20x faster for the handful of matrices that a small call of the
    learner brings, as truncated permutations make (numpy 2.4, one BLAS
    thread). Newton's Hessians are made nonsingular by
    :func:`~._softmax._fix_null_directions`.
    """
    return namespace(H).linalg.solve(H, b[..., None])[..., 0]


def _newton(chunk: _SoftmaxChunk | _BinaryChunk, theta: Array, tol: float,
            max_iter: int) -> tuple[Array, Array, Array]:
    """Batched damped Newton; returns theta, iterations used and converged flags.

    The full step is evaluated together with the next iteration's gradient
    and Hessian (one pass per iteration); only coalitions failing the Armijo
    test backtrack, and the Hessian is skipped for coalitions already converged.
    """
    B, K, q = theta.shape
    backend, xp = chunk.data.backend, chunk.data.xp
    active = backend.arange(B)
    converged = backend.zeros((B,), "bool")
    iterations = backend.zeros((B,), "int")
    sub = chunk
    f, g, P = sub.objective(theta, grad=True, probabilities=True)
    for it in range(max_iter + 1):
        done = sub.converged(g, tol)
        converged[active[done]] = True
        if bool(xp.all(done)) or it == max_iter:
            break
        if bool(xp.any(done)):
            keep = ~done
            active, sub, f, g, P = active[keep], sub.take(keep), f[keep], g[keep], P[keep]
        H = sub.hessian(P)
        direction = xp.reshape(-_solve_spd(H, xp.reshape(g, (len(active), K * q))), (len(active), K, q))
        slope = xp.einsum("bkq,bkq->b", g, direction)
        th = theta[active]
        trial = th + direction
        f_new, g_new, P_new = sub.objective(trial, grad=True, probabilities=True)
        ok = xp.isfinite(f_new) & (f_new <= f + ARMIJO_SLOPE * slope)
        iterations[active] += 1
        if not bool(xp.all(ok)):  # damp the step of these coalitions, then re-evaluate them at the accepted point
            bad = xp.nonzero(~ok)[0]
            part = sub.take(bad)
            half = 0.5 * direction[bad]
            damped, _, _, accepted = _armijo(part, th[bad], f[bad], g[bad], half, with_grad=False,
                                             slope=0.5 * slope[bad])
            f_b, g_b, P_b = part.objective(damped, grad=True, probabilities=True)
            trial[bad], f_new[bad], g_new[bad], P_new[bad] = damped, f_b, g_b, P_b
            if not bool(xp.all(accepted)):  # no decrease at all along the Newton direction: optimum to rounding
                stuck = bad[~accepted]
                converged[active[stuck]] = _stalled_converged(sub.take(stuck), g[stuck], tol)
                keep = backend.ones((len(active),), "bool")
                keep[stuck] = False
                theta[active] = trial
                active, sub = active[keep], sub.take(keep)
                f, g, P = f_new[keep], g_new[keep], P_new[keep]
                if active.shape[0] == 0:
                    break
                continue
        theta[active] = trial
        stuck = _no_progress(sub, f, f_new)
        f, g, P = f_new, g_new, P_new
        if bool(xp.any(stuck)):  # the objective no longer decreases: optimum to rounding
            converged[active[stuck]] = _stalled_converged(sub.take(stuck), g[stuck], tol)
            keep = ~stuck
            active, sub, f, g, P = active[keep], sub.take(keep), f[keep], g[keep], P[keep]
            if active.shape[0] == 0:
                break
    return theta, iterations, converged
