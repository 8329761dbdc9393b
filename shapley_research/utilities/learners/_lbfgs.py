"""Batched limited-memory BFGS for the softmax objective of a chunk of coalitions.

:func:`_lbfgs` runs the two-loop recursion over each coalition's own secant
pairs with backtracking Armijo steps, optionally on top of an initial
inverse Hessian (the full-data Hessian scaled to the coalition): ``O(K N q)``
per iteration, for models with many parameters (:mod:`shapley_research.utilities.learners`).
"""

from __future__ import annotations

import numpy as np

from ._line_search import _armijo, _no_progress, _stalled_converged
from ._softmax import _SoftmaxChunk


def _lbfgs(chunk: _SoftmaxChunk, theta, tol: float, max_iter: int, memory: int = 10, precondition=None):
    """Batched L-BFGS (two-loop recursion, ``memory`` pairs) with backtracking Armijo steps.

    ``precondition(r, rows)``, if given, applies the initial inverse Hessian
    ``H0`` to ``r`` for the chunk rows ``rows`` (instead of ``gamma I``).
    """
    B, K, q = theta.shape
    active = np.arange(B)
    converged = np.zeros(B, dtype=bool)
    iterations = np.zeros(B, dtype=int)
    sub = chunk
    f, g = sub.objective(theta)
    S = np.zeros((B, memory, K, q))
    Y = np.zeros((B, memory, K, q))
    rho = np.zeros((B, memory))
    gamma = np.ones(B)
    pairs = np.zeros(B, dtype=int)  # curvature pairs stored since the last restart

    def keep_rows(keep):
        nonlocal active, sub, f, g, S, Y, rho, gamma, pairs
        active, sub = active[keep], sub.take(keep)
        f, g, S, Y, rho, gamma, pairs = f[keep], g[keep], S[keep], Y[keep], rho[keep], gamma[keep], pairs[keep]

    for it in range(max_iter + 1):
        done = sub.converged(g, tol)
        converged[active[done]] = True
        if done.all() or it == max_iter:
            break
        if done.any():
            keep_rows(~done)
        # two-loop recursion over the stored pairs, newest first
        r = g.copy()
        alphas = np.zeros((len(active), memory))
        newest_first = [(it - 1 - j) % memory for j in range(memory)]
        for j in newest_first:
            alphas[:, j] = rho[:, j] * np.einsum("bkq,bkq->b", S[:, j], r)
            r -= alphas[:, j, None, None] * Y[:, j]
        if precondition is not None:  # initial inverse Hessian H0: the scaled full-data Hessian
            r = precondition(r, active)
        else:  # H0 = gamma I (the usual scaling), 1/|g| before any pair is stored
            scale = np.where(pairs == 0, 1.0 / np.maximum(np.abs(g).max(axis=(1, 2)), 1.0), gamma)
            r *= scale[:, None, None]
        for j in reversed(newest_first):
            beta = rho[:, j] * np.einsum("bkq,bkq->b", Y[:, j], r)
            r += (alphas[:, j] - beta)[:, None, None] * S[:, j]
        direction = -r
        uphill = np.einsum("bkq,bkq->b", direction, g) >= 0
        if uphill.any():  # stale pairs spoiled the curvature model: restart from steepest descent
            direction[uphill] = -g[uphill] / np.maximum(np.abs(g[uphill]).max(axis=(1, 2)), 1.0)[:, None, None]
            rho[uphill], pairs[uphill] = 0.0, 0
        th = theta[active]
        new_theta, new_f, new_g, accepted = _armijo(sub, th, f, g, direction, with_grad=True)
        s, y = new_theta - th, new_g - g
        sy = np.einsum("bkq,bkq->b", s, y)
        yy = np.einsum("bkq,bkq->b", y, y)
        good = accepted & (sy > 1e-12 * np.sqrt(np.einsum("bkq,bkq->b", s, s) * yy))
        slot = it % memory
        S[:, slot], Y[:, slot] = s, y
        rho[:, slot] = np.where(good, 1.0 / np.where(good, sy, 1.0), 0.0)
        gamma = np.where(good, sy / np.where(good, yy, 1.0), gamma)
        pairs += good
        stalled = ~accepted | _no_progress(f, new_f)
        theta[active], f, g = new_theta, new_f, new_g
        iterations[active] += 1
        if stalled.any():  # no decrease along a descent direction: optimum to rounding
            converged[active[stalled]] = _stalled_converged(sub.take(stalled), g[stalled], tol)
            keep_rows(~stalled)
            if active.size == 0:
                break
    return theta, iterations, converged
