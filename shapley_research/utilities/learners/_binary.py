r"""The binary logistic objective over a chunk of coalitions, for Newton on two-class problems.

On a two-class problem every fitted coalition holds both classes, and the
symmetric two-class softmax with ``C/2`` that :mod:`._softmax` minimises is
half of scikit-learn's binary objective in :math:`v = \theta_1 - \theta_0`
(:mod:`shapley_research.utilities.learners`):

.. math::

    f(v) = C \sum_i m_i \bigl(\log(1 + e^{z_i}) - y_i z_i\bigr) + \tfrac12 \sum_j r_j v_j^2,
    \qquad z_i = v^\top \tilde x_i,

with gradient :math:`C\sum_i m_i (p_i - y_i)\tilde x_i + r \odot v` and
Hessian :math:`C\sum_i m_i p_i(1 - p_i)\tilde x_i\tilde x_i^\top + \operatorname{diag}(r)`,
:math:`p_i = \sigma(z_i)`. The softmax iterates started from a symmetric point
stay symmetric, and Newton's steps and the Armijo test are invariant to
this reparametrisation and to scaling the objective, so Newton on :math:`f`
takes the very steps of Newton on the softmax, with the same convergence
test (:math:`\|\nabla f\|_\infty \le \text{tol}\, C |S|` is the softmax's test
at ``C/2``): only rounding differs. It costs a quarter of the softmax's
Hessian product and an eighth of its factorisation (``q`` unknowns instead
of ``2q``), and no null direction needs fixing: the data Hessian of a
coalition with both classes is positive definite in the intercept.
"""

from __future__ import annotations

from typing import Any

from ._array import Array, namespace
from ._softmax import _SoftmaxData


class _BinaryChunk:
    """A chunk of two-class coalitions (mask weights over all ``N`` points) and its binary objective.

    Parameters are ``(B, 1, q)``, the shape :func:`~._newton._newton` expects
    with one "class"; :meth:`softmax_parameters` maps them back to the
    symmetric ``(B, 2, q)`` of :class:`~._softmax._SoftmaxChunk`. ``penalty``
    is the diagonal :math:`r` of the penalty, read by every objective and
    Hessian: the shared ``data.penalty`` (q,) by default, or one row per
    coalition (B, q) (a pipeline's per-coalition scalers, :mod:`._scalers`).
    """

    def __init__(self, data: _SoftmaxData, weight: Array, C: Array, penalty: Array = None) -> None:
        self.data, self.weight, self.C = data, weight, C
        self.penalty = data.penalty if penalty is None else penalty
        self.size = data.xp.sum(weight, axis=1)
        self.positive = data.onehot[1]  # y_i: 1 for the second class

    @classmethod
    def from_masks(cls, data: _SoftmaxData, masks: Any, C: float, penalty: Array = None) -> _BinaryChunk:
        """A chunk from masks or integer sample weights (m, N), in the data's backend (``penalty`` (m, q) or None)."""
        weight = data.backend.asarray(masks)
        return cls(data, weight, data.backend.full((weight.shape[0],), float(C)), penalty)

    def take(self, rows: Array) -> _BinaryChunk:
        return _BinaryChunk(self.data, self.weight[rows], self.C[rows],
                            self.penalty[rows] if self.penalty.ndim == 2 else None)

    def __len__(self) -> int:
        return self.weight.shape[0]

    def objective(self, theta: Array, grad: bool = True, probabilities: bool = False) -> Any:
        """``f``, and optionally the gradient (B, 1, q) and the probabilities (B, N) for :meth:`hessian`."""
        data, xp = self.data, self.data.xp
        v = theta[:, 0, :]
        z = v @ data.XT  # (B, N)
        # log(1 + e^z) - y z, stably: max(z, 0) + log1p(e^-|z|) - y z
        loss = xp.log1p(xp.exp(-xp.abs(z)))
        loss += data.backend.maximum(z, 0.0)
        loss -= self.positive * z
        f = self.C * xp.einsum("bn,bn->b", loss, self.weight)
        f += 0.5 * xp.einsum("bq,bq->b" if self.penalty.ndim == 2 else "bq,q->b", v * v, self.penalty)
        if not grad:
            return f
        p = 0.5 * (1.0 + xp.tanh(0.5 * z))  # the logistic sigmoid, without overflow
        residual = p - self.positive
        residual *= self.weight
        g = residual @ data.X
        g *= self.C[:, None]
        g += v * self.penalty
        g = g[:, None, :]
        return (f, g, p) if probabilities else (f, g)

    def hessian(self, p: Array) -> Array:
        """``C sum_i m_i p_i (1 - p_i) x_i x_i^T + diag(penalty)``, (B, q, q): one product ``(B, N) @ (N, q^2)``."""
        data = self.data
        q = data.q
        W = p * (1.0 - p)
        W *= self.weight
        W *= self.C[:, None]
        H = data.xp.reshape(W @ data.outer, (-1, q, q))
        diagonal = data.backend.arange(q)
        H[:, diagonal, diagonal] += self.penalty
        return H

    def converged(self, g: Array, tol: float) -> Array:
        xp = self.data.xp
        return xp.max(xp.abs(g), axis=(1, 2)) <= tol * self.C * self.size

    @staticmethod
    def binary_parameters(theta: Array) -> Array:
        """``v = theta_1 - theta_0`` (B, 1, q) from symmetric softmax parameters (B, 2, q)."""
        return (theta[:, 1, :] - theta[:, 0, :])[:, None, :]

    @staticmethod
    def softmax_parameters(v: Array) -> Array:
        """The symmetric softmax parameters ``(-v/2, v/2)`` (B, 2, q) of ``v`` (B, 1, q)."""
        half = 0.5 * v[:, 0, :]
        return namespace(v).stack([-half, half], axis=1)
