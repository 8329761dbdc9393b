"""Batched backtracking line search and the stall tests shared by the Newton and L-BFGS solvers.

:func:`_armijo` finds, per coalition of a chunk, the largest step ``2^-j``
with sufficient decrease; :func:`_no_progress` and :func:`_stalled_converged`
decide when a coalition whose objective no longer decreases counts as
converged (at rounding level).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._softmax import _SoftmaxChunk

#: Armijo's condition: the decrease must reach this fraction of the step times the directional derivative.
ARMIJO_SLOPE = 1e-4
#: Step halvings before a line search gives up (the last trial step is ``2^-39``).
MAX_HALVINGS = 40
#: A decrease below this many units of roundoff of the objective is no progress.
NO_PROGRESS_ULPS = 64
#: A stalled coalition counts as converged when its gradient meets this multiple of ``tol`` (rounding level).
STALL_TOL_FACTOR = 1e3

if TYPE_CHECKING:
    from ._binary import _BinaryChunk


def _armijo(chunk: _SoftmaxChunk | _BinaryChunk, theta: Any, f: Any, g: Any, direction: Any, with_grad: bool,
            max_halvings: int = MAX_HALVINGS, slope: Any = None) -> tuple[Any, Any, Any, Any]:
    """Backtracking line search: per coalition the largest ``t = 2^-j`` with sufficient decrease.

    Returns the new parameters, objective, gradient (when ``with_grad``; the
    gradient of the trial point comes with the same pass) and which
    coalitions found a decrease.
    """
    backend, xp = chunk.data.backend, chunk.data.xp
    if slope is None:
        slope = xp.einsum("bkq,bkq->b", g, direction)
    step = backend.ones((len(chunk),))
    accepted = backend.zeros((len(chunk),), "bool")
    new_theta, new_f = backend.copy(theta), backend.copy(f)
    new_g: Any = backend.copy(g) if with_grad else None  # a backend array when with_grad
    pending = backend.arange(len(chunk))
    for _ in range(max_halvings):
        rows = None if pending.shape[0] == len(chunk) else pending  # None: every row (the first trial), no gather
        sub = chunk if rows is None else chunk.take(rows)
        trial_step = _gather(step, rows)
        trial = _gather(theta, rows) + trial_step[:, None, None] * _gather(direction, rows)
        if with_grad:
            f_trial, g_trial = sub.objective(trial)
        else:
            f_trial = sub.objective(trial, grad=False)
        ok = xp.isfinite(f_trial) & (f_trial <= _gather(f, rows) + ARMIJO_SLOPE * trial_step * _gather(slope, rows))
        ok_rows = backend.rows(ok)  # integer rows: one device wait, not one per boolean index below
        done = pending[ok_rows]
        new_theta[done], new_f[done], accepted[done] = trial[ok_rows], f_trial[ok_rows], True
        if with_grad:
            new_g[done] = g_trial[ok_rows]
        if ok_rows.shape[0] == pending.shape[0]:
            break
        pending = pending[backend.rows(~ok)]
        step[pending] *= 0.5
    return new_theta, new_f, new_g, accepted


def _gather(x: Any, rows: Any) -> Any:
    """``x[rows]``, or ``x`` itself for ``rows=None``."""
    return x if rows is None else x[rows]


def _no_progress(chunk: _SoftmaxChunk | _BinaryChunk, f_old: Any, f_new: Any) -> Any:
    """Relative decrease below ``64 eps`` (scipy's L-BFGS ``ftol`` as scikit-learn sets it), eps of the dtype."""
    backend, xp = chunk.data.backend, chunk.data.xp
    scale = backend.maximum(xp.maximum(xp.abs(f_old), xp.abs(f_new)), 1.0)
    return (f_old - f_new) <= NO_PROGRESS_ULPS * backend.eps * scale


def _stalled_converged(chunk: _SoftmaxChunk | _BinaryChunk, g: Any, tol: float) -> Any:
    """Coalitions whose line search found no decrease: done if the gradient is at rounding level."""
    return chunk.converged(g, STALL_TOL_FACTOR * tol)
