"""The penalised softmax objective of logistic regression over a chunk of coalitions.

:class:`_SoftmaxData` holds what every chunk shares (design, labels, per-point
outer products); :class:`_SoftmaxChunk` is a batch of coalitions given as mask
weights over all ``N`` points, with the objective, gradient, full Hessian and
class-block Hessian inverses of each. Also the Hessian helpers shared with
the exact prefix path: :func:`_fix_null_directions` and :func:`_data_hessian`,
and :data:`NEG_LOGIT`, the logit of a class absent from a coalition.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._model_data import TargetInfo
from ._array import NUMPY, Array, ArrayBackend, namespace
from ._base import _Design

NEG_LOGIT = -1e30  # logit of a class absent from a coalition: exp underflows to exactly 0


class _SoftmaxData:
    """What every chunk shares: the design, labels and (for Newton) packed outer products, in ``backend``."""

    def __init__(self, design: _Design, targets: TargetInfo, backend: ArrayBackend = NUMPY):
        self.backend = backend
        self.X = backend.asarray(design.train)
        self.XT = backend.asarray(np.ascontiguousarray(design.train.T))
        self.penalty = backend.asarray(design.penalty)
        self.has_intercept = design.fit_intercept  # the unpenalised last coordinate (no device round trip)
        self.K, self.q = targets.n_classes, design.q
        self.onehot = backend.asarray(np.ascontiguousarray(targets.train_onehot.T))  # (K, N)
        n = design.train.shape[0]
        # flat (K, N) index of each true logit
        self.true_index = backend.asarray(targets.y_train_index * n + np.arange(n), "int")
        self.labels = np.asarray(targets.y_train_index, dtype=np.int64)  # numpy: the compiled CPU path's
        self._outer: Array = None

    @property
    def xp(self) -> Any:
        """The backend's array namespace (read through, so the data pickles: a module does not)."""
        return self.backend.xp

    @property
    def outer(self) -> Array:
        """Per-point outer products ``x_i x_i^T`` flattened, (N, q^2); built on first use (Newton)."""
        if self._outer is None:
            self._outer = self.xp.reshape(self.X[:, :, None] * self.X[:, None, :], (self.X.shape[0], -1))
        return self._outer


class _SoftmaxChunk:
    r"""A chunk of coalitions (mask weights over all ``N`` points) and its penalised softmax objective.

    Every product runs over all ``N`` rows with weight 0 outside the
    coalition, so each step of a whole chunk is a few large BLAS calls (no
    per-coalition small matrices). Shapes: ``weight`` (B, N), ``present``
    (B, K), ``C`` (B,): ``C`` for three or more classes, ``C/2`` for two
    (module docstring), ``offset`` (B, K, 1) with ``NEG_LOGIT`` on absent classes.

    ``penalty`` is the diagonal :math:`r` of the penalty :math:`\frac12\sum_k
    \sum_j r_j\theta_{kj}^2` that every objective, gradient and Hessian
    reads: the shared ``data.penalty`` (q,) (1 per feature, 0 for the
    intercept) by default, or one row per coalition (B, q) for a pipeline's
    per-coalition scalers (:mod:`._scalers`); :meth:`take` keeps the rows.
    """

    def __init__(self, data: _SoftmaxData, weight: Array, present: Array, C: Array,
                 all_present: bool | None = None, penalty: Array = None) -> None:
        self.data, self.weight, self.present, self.C = data, weight, present, C
        self.penalty = data.penalty if penalty is None else penalty
        xp, backend = data.xp, data.backend
        self.offset = xp.where(present, backend.scalar(0.0), backend.scalar(NEG_LOGIT))[:, :, None]
        # ``None``: read from ``present`` (a device sync on a GPU)
        self.all_present = bool(xp.all(present)) if all_present is None else all_present
        self.size = xp.sum(weight, axis=1)

    @classmethod
    def from_masks(cls, data: _SoftmaxData, masks: np.ndarray, counts: np.ndarray, C: float,
                   penalty: Array = None) -> _SoftmaxChunk:
        """A chunk from masks or integer sample weights (m, N) and class counts (m, K), in the data's backend.

        ``penalty``: per-coalition penalty rows (m, q) in the backend, or None for the shared one.
        """
        backend, xp = data.backend, data.xp
        present = backend.asarray(counts > 0, "bool")
        n_present = xp.sum(backend.asarray(present, "int"), axis=1)
        return cls(data, backend.asarray(masks), present,
                   xp.where(n_present == 2, backend.scalar(0.5 * C), backend.scalar(C)),
                   penalty=None if penalty is None else backend.asarray(penalty))

    @property
    def per_coalition(self) -> bool:
        """Whether ``penalty`` has one row per coalition (B, q) rather than the shared (q,)."""
        return self.penalty.ndim == 2

    def take(self, rows: Array) -> _SoftmaxChunk:
        """The chunk of coalitions ``rows``, without a device wait: a chunk with an absent class keeps adding its
        offsets, 0 on every present class, even where none of ``rows`` lacks one."""
        return _SoftmaxChunk(self.data, self.weight[rows], self.present[rows], self.C[rows],
                             all_present=self.all_present,
                             penalty=self.penalty[rows] if self.per_coalition else None)

    def _penalty_value(self, theta: Array) -> Array:
        r""":math:`\frac12\sum_{k,j} r_j\theta_{kj}^2` per coalition (B,)."""
        squares = theta * theta
        if self.per_coalition:
            return 0.5 * self.data.xp.einsum("bkq,bq->b", squares, self.penalty)
        return 0.5 * self.data.xp.einsum("bkq,q->b", squares, self.penalty)

    def _penalty_broadcast(self) -> Array:
        """The penalty shaped to multiply (B, K, q) parameters: (q,) or (B, 1, q)."""
        return self.penalty[:, None, :] if self.per_coalition else self.penalty

    def __len__(self) -> int:
        return self.weight.shape[0]

    def logits(self, theta: Array) -> Array:
        B, K, q = theta.shape
        Z = self.data.xp.reshape(self.data.xp.reshape(theta, (B * K, q)) @ self.data.XT, (B, K, -1))
        if not self.all_present:
            Z += self.offset
        return Z

    def objective(self, theta: Array, grad: bool = True, probabilities: bool = False) -> Any:
        """``f``, and optionally the gradient (B, K, q) and the probabilities (B, K, N) for :meth:`hessian`.

        Works in place on one ``(B, K, N)`` array (logits, shifted logits,
        exponentials, probabilities, residuals in turn): these passes over
        memory, not the two matrix products, dominate the cost.
        """
        data, xp = self.data, self.data.xp
        B, K, q = theta.shape
        Z = self.logits(theta)
        Z -= xp.max(Z, axis=1, keepdims=True)
        # loss_i = log sum_k exp(z_ik) - z_iy (shift-invariant); rows outside S have weight 0
        z_true = xp.take(xp.reshape(Z, (B, -1)), data.true_index, axis=1)
        E = data.backend.exp_(Z)
        total = xp.sum(E, axis=1)
        loss = xp.log(total)
        loss -= z_true
        f = self.C * xp.einsum("bn,bn->b", loss, self.weight)
        f += self._penalty_value(theta)
        if not grad:
            return f
        E /= total[:, None, :]
        P = data.backend.copy(E) if probabilities else E
        residual = E
        residual -= data.onehot
        residual *= self.weight[:, None, :]
        g = xp.reshape(xp.reshape(residual, (B * K, -1)) @ data.X, (B, K, q))
        g *= self.C[:, None, None]
        g += theta * self._penalty_broadcast()
        return (f, g, P) if probabilities else (f, g)

    def hessian(self, P: Array) -> Array:
        """Full softmax Hessian, null directions made harmless (:func:`_fix_null_directions`).

        Block ``(k, l)`` is ``sum_i w_i (p_ik [k=l] - p_ik p_il) x_i x_i^T``: one
        product of the class-pair weights with the per-point outer products,
        ``(B K^2, N) @ (N, q^2)``.
        """
        data, xp = self.data, self.data.xp
        B, K, N = P.shape
        q = data.q
        W = -P[:, :, None, :] * P[:, None, :, :]  # (B, K, K, N)
        index = data.backend.arange(K)
        W[:, index, index, :] += P
        W *= self.weight[:, None, None, :]
        blocks = xp.reshape(xp.reshape(W, (B * K * K, N)) @ data.outer, (B, K, K, q, q))
        H = xp.reshape(xp.permute_dims(blocks, (0, 1, 3, 2, 4)), (B, K * q, K * q))
        H *= self.C[:, None, None]
        diagonal = data.backend.arange(K * q)
        H[:, diagonal, diagonal] += xp.tile(self.penalty, (1, K) if self.per_coalition else (K,))
        _fix_null_directions(H, self.present, self.data.penalty, data.backend)
        return H

    def converged(self, g: Array, tol: float) -> Array:
        return self.data.xp.max(self.data.xp.abs(g), axis=(1, 2)) <= tol * self.C * self.size

    def block_hessian_inverse(self, theta: Array) -> Array:
        """Inverses of the class-diagonal blocks of the Hessian at ``theta``, shape (B, K, q, q).

        Block ``k`` is ``C sum_i w_i p_ik (1 - p_ik) x_i x_i^T`` plus the penalty
        (unit intercept entry for absent classes). Twice this block-diagonal
        matrix dominates the full Hessian (the softmax covariance
        ``diag(p) - p p^T`` is diagonally dominant), so steps preconditioned by
        it contract: the chord iteration converges.
        """
        data, xp = self.data, self.data.xp
        B, K, q = theta.shape
        _, _, P = self.objective(theta, grad=True, probabilities=True)
        W = P * (1.0 - P) * self.weight[:, None, :]
        blocks = xp.reshape(xp.reshape(W, (B * K, -1)) @ data.outer, (B, K, q, q)) * self.C[:, None, None, None]
        diagonal = data.backend.arange(q)
        blocks[:, :, diagonal, diagonal] += self._penalty_broadcast()
        if data.has_intercept:
            blocks[:, :, q - 1, q - 1] += data.backend.asarray(~self.present)
        return xp.linalg.inv(blocks)

    def exact_hessian_inverse(self, theta: Array) -> Array:
        """Inverse of the (null-fixed) Hessian at ``theta``, shape (B, Kq, Kq)."""
        _, _, P = self.objective(theta, grad=True, probabilities=True)
        return self.data.xp.linalg.inv(self.hessian(P))


def _effective_C(C: float, present: np.ndarray) -> np.ndarray:
    """``C/2`` for two present classes (the binary model as a symmetric softmax), else ``C``."""
    return np.where(present.sum(axis=1) == 2, 0.5 * C, C)


def _point_terms(X: np.ndarray, labels: np.ndarray, theta: np.ndarray, present: np.ndarray,
                 C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Loss and gradient of one point per permutation (rows ``X`` (a, q)), weighted by ``C``."""
    z = np.einsum("bkq,bq->bk", theta, X) + np.where(present, 0.0, NEG_LOGIT)
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    total = p.sum(axis=1)
    rows = np.arange(len(labels))
    loss = C * (np.log(total) - z[rows, labels])
    p /= total[:, None]
    p[rows, labels] -= 1.0
    return loss, C[:, None, None] * p[:, :, None] * X[:, None, :]


def _fix_null_directions(H: Array, present: Array, penalty: Array, backend: ArrayBackend = NUMPY) -> None:
    """Make Hessians ``H`` (B, Kq, Kq) invertible without changing Newton steps on admissible gradients.

    Absent classes (``present`` (B, K) false): their coordinates never move
    (zero gradient), so their unpenalised intercept entries get a unit
    diagonal. Present classes: the loss is invariant to adding one constant to
    all their intercepts, a direction every gradient is orthogonal to; adding
    ``c v v^T`` along it leaves the solution of ``H d = -g`` unchanged.
    """
    if float(penalty[-1]) != 0.0:  # no intercept: the penalty makes H positive definite
        return
    xp = backend.xp
    q = penalty.shape[0]
    K = present.shape[1]
    intercept = backend.arange(K) * q + (q - 1)
    v = backend.asarray(present)
    H[:, intercept, intercept] += 1.0 - v
    scale = xp.mean(xp.abs(H[:, intercept, intercept]), axis=1)
    H[:, intercept[:, None], intercept[None, :]] += (scale[:, None, None] / K) * (v[:, :, None] * v[:, None, :])


def _data_hessian(X: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``sum_i (diag p_i - p_i p_i^T) (x) x_i x_i^T`` for rows ``X`` (n, q) and probabilities ``P`` (K, n).

    As ``diag`` blocks ``X^T diag(p_k) X`` minus ``V^T V`` with ``V_i = p_i (x) x_i``:
    ``O(n K^2 q^2)`` in one GEMM, the cheapest form for one large model.
    """
    n, q = X.shape
    K = P.shape[0]
    xp = namespace(X)
    PT = xp.permute_dims(P, (1, 0))
    V = xp.reshape(PT[:, :, None] * X[:, None, :], (n, K * q))
    H = -(xp.permute_dims(V, (1, 0)) @ V)
    X_T = xp.permute_dims(X, (1, 0))
    for c in range(K):
        H[c * q:(c + 1) * q, c * q:(c + 1) * q] += (X_T * P[c]) @ X
    return H
