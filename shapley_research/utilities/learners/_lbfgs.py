"""Batched limited-memory BFGS for the softmax objective of a chunk of coalitions.

:func:`_lbfgs` runs the two-loop recursion over each coalition's own secant
pairs with backtracking Armijo steps, optionally on top of an initial
inverse Hessian (the full-data Hessian scaled to the coalition): ``O(K N q)``
per iteration, for models with many parameters (:mod:`shapley_research.utilities.learners`).
This chunk-wide form is the path of torch devices; on a CPU the same
algorithm runs coalition by coalition in compiled loops (:mod:`._lbfgs_rows`).
"""

from __future__ import annotations

from typing import Any, Callable

from ._array import Array, ArrayBackend
from ._line_search import _armijo, _no_progress, _stalled_converged
from ._softmax import _SoftmaxChunk

#: A secant pair enters the curvature model only when ``s.y > CURVATURE_MIN |s| |y|``.
CURVATURE_MIN = 1e-12


def _lbfgs(chunk: _SoftmaxChunk, theta: Array, tol: float, max_iter: int, memory: int = 10,
           precondition: Callable[[Array, Array], Array] | None = None,
           strict: bool = False) -> tuple[Array, Array, Array]:
    """Batched L-BFGS (two-loop recursion, ``memory`` pairs) with backtracking Armijo steps.

    ``precondition(r, rows)``, if given, applies the initial inverse Hessian
    ``H0`` to ``r`` for the chunk rows ``rows`` (instead of ``gamma I``).
    A coalition whose line search stalls counts as converged when its gradient
    is at rounding level (``1e3 tol``), or, with ``strict``, only when it
    meets ``tol`` itself (mixed precision then refines it in ``float64``).
    """
    B, K, q = theta.shape
    backend, xp = chunk.data.backend, chunk.data.xp
    active = backend.arange(B)
    converged = backend.zeros((B,), "bool")
    iterations = backend.zeros((B,), "int")
    sub = chunk
    f, g = sub.objective(theta)
    # slot j holds pair j of every coalition, one (B, K, q) array, None until written: the two-loop
    # recursion reads whole slots, and dropping converged coalitions copies only the slots written
    S: list[Array] = [None] * memory
    Y: list[Array] = [None] * memory
    rho = backend.zeros((memory, B))
    gamma = backend.ones((B,))
    pairs = backend.zeros((B,), "int")  # curvature pairs stored since the last restart

    def keep_rows(keep: Array) -> None:
        """Drop finished coalitions; ``keep`` holds integer rows (about 30 arrays follow, none waits on the device)."""
        nonlocal active, sub, f, g, S, Y, rho, gamma, pairs
        active, sub = active[keep], sub.take(keep)
        f, g, rho = f[keep], g[keep], rho[:, keep]
        S, Y = [None if s is None else s[keep] for s in S], [None if y is None else y[keep] for y in Y]
        gamma, pairs = gamma[keep], pairs[keep]

    for it in range(max_iter + 1):
        done = sub.converged(g, tol)
        n_done = int(xp.sum(backend.asarray(done, "int")))  # one device wait for "all" and "any"
        if n_done == done.shape[0] or it == max_iter:
            converged[active[done]] = True
            break
        if n_done:
            converged[active[backend.rows(done)]] = True
            keep_rows(backend.rows(~done))
        direction = _search_direction(backend, g, S, Y, rho, gamma, pairs, it, precondition, active)
        th = theta[active]
        new_theta, new_f, new_g, accepted = _armijo(sub, th, f, g, direction, with_grad=True)
        s, y = new_theta - th, new_g - g
        sy, yy = _inner(xp, s, y), _inner(xp, y, y)
        good = accepted & (sy > CURVATURE_MIN * xp.sqrt(_inner(xp, s, s) * yy))
        slot = it % memory
        S[slot], Y[slot] = s, y
        one, zero = backend.scalar(1.0), backend.scalar(0.0)
        rho[slot] = xp.where(good, 1.0 / xp.where(good, sy, one), zero)
        gamma = xp.where(good, sy / xp.where(good, yy, one), gamma)
        pairs += backend.asarray(good, "int")
        stalled = ~accepted | _no_progress(sub, f, new_f)
        theta[active], f, g = new_theta, new_f, new_g
        iterations[active] += 1
        if bool(xp.any(stalled)):  # no decrease along a descent direction: optimum to rounding
            stalled_rows = backend.rows(stalled)
            stalled_chunk = sub.take(stalled_rows)
            converged[active[stalled_rows]] = (stalled_chunk.converged(g[stalled_rows], tol) if strict
                                               else _stalled_converged(stalled_chunk, g[stalled_rows], tol))
            keep_rows(backend.rows(~stalled))
            if active.shape[0] == 0:
                break
    return theta, iterations, converged


def _search_direction(backend: ArrayBackend, g: Array, S: list[Array], Y: list[Array], rho: Array, gamma: Array,
                      pairs: Array,
                      it: int, precondition: Callable[[Array, Array], Array] | None, active: Array) -> Array:
    """The L-BFGS direction ``-H g`` by the two-loop recursion over the stored pairs, newest first.

    ``H0`` is ``precondition(r, active)`` when given, else ``gamma I`` (``1/|g|``
    before any pair is stored). Rows whose direction points uphill (stale
    pairs spoiled the curvature model) restart from steepest descent: their
    pairs are dropped in place (``rho`` and ``pairs``).
    """
    xp = backend.xp
    memory = len(S)
    r = backend.copy(g)
    alphas = backend.zeros((memory, g.shape[0]))
    # the slots written so far, newest first (an unwritten slot holds no pair)
    newest_first = [(it - 1 - j) % memory for j in range(min(it, memory))]
    for j in newest_first:
        alphas[j] = rho[j] * _inner(xp, S[j], r)
        r -= alphas[j, :, None, None] * Y[j]
    if precondition is not None:  # initial inverse Hessian H0: the scaled full-data Hessian
        r = precondition(r, active)
    else:  # H0 = gamma I (the usual scaling), 1/|g| before any pair is stored
        scale = xp.where(pairs == 0, 1.0 / backend.maximum(xp.max(xp.abs(g), axis=(1, 2)), 1.0), gamma)
        r *= scale[:, None, None]
    for j in reversed(newest_first):
        beta = rho[j] * _inner(xp, Y[j], r)
        r += (alphas[j] - beta)[:, None, None] * S[j]
    direction = -r
    uphill = _inner(xp, direction, g) >= 0
    if bool(xp.any(uphill)):
        largest = backend.maximum(xp.max(xp.abs(g[uphill]), axis=(1, 2)), 1.0)
        direction[uphill] = -g[uphill] / largest[:, None, None]
        rho[:, uphill], pairs[uphill] = 0.0, 0
    return direction


def _inner(xp: Any, a: Array, b: Array) -> Array:
    """Per-coalition inner products ``sum_kq a[b, k, q] b[b, k, q]`` (B,): ``vecdot`` over flattened rows."""
    return xp.vecdot(xp.reshape(a, (a.shape[0], -1)), xp.reshape(b, (b.shape[0], -1)))
