"""The penalised softmax objective of logistic regression over a chunk of coalitions.

:class:`_SoftmaxData` holds what every chunk shares (design, labels, per-point
outer products); :class:`_SoftmaxChunk` is a batch of coalitions given as mask
weights over all ``N`` points, with the objective, gradient, full Hessian and
class-block Hessian inverses of each. Also the Hessian helpers shared with
the exact prefix path: :func:`_fix_null_directions` and :func:`_data_hessian`,
and :data:`NEG_LOGIT`, the logit of a class absent from a coalition.
"""

from __future__ import annotations

import numpy as np

from .._model_data import TargetInfo
from ._base import _Design

NEG_LOGIT = -1e30  # logit of a class absent from a coalition: exp underflows to exactly 0


class _SoftmaxData:
    """What every chunk shares: the design, labels and (for Newton) packed outer products."""

    def __init__(self, design: _Design, targets: TargetInfo):
        self.X = design.train
        self.XT = np.ascontiguousarray(design.train.T)
        self.penalty = design.penalty
        self.K, self.q = targets.n_classes, design.q
        self.onehot = np.ascontiguousarray(targets.train_onehot.T)  # (K, N)
        n = self.X.shape[0]
        self.true_index = targets.y_train_index * n + np.arange(n)  # flat (K, N) index of each true logit
        self._outer = None

    @property
    def outer(self) -> np.ndarray:
        """Per-point outer products ``x_i x_i^T`` flattened, (N, q^2); built on first use (Newton)."""
        if self._outer is None:
            self._outer = (self.X[:, :, None] * self.X[:, None, :]).reshape(self.X.shape[0], -1)
        return self._outer


class _SoftmaxChunk:
    """A chunk of coalitions (mask weights over all ``N`` points) and its penalised softmax objective.

    Every product runs over all ``N`` rows with weight 0 outside the
    coalition, so each step of a whole chunk is a few large BLAS calls (no
    per-coalition small matrices). Shapes: ``weight`` (B, N), ``present``
    (B, K), ``C`` (B,): ``C`` for three or more classes, ``C/2`` for two
    (module docstring), ``offset`` (B, K, 1) with ``NEG_LOGIT`` on absent classes.
    """

    def __init__(self, data: _SoftmaxData, weight, present, C):
        self.data, self.weight, self.present, self.C = data, weight, present, C
        self.offset = np.where(present, 0.0, NEG_LOGIT)[:, :, None]
        self.all_present = bool(present.all())
        self.size = weight.sum(axis=1)

    @classmethod
    def from_masks(cls, data: _SoftmaxData, masks, counts, C: float) -> "_SoftmaxChunk":
        present = counts > 0
        return cls(data, masks.astype(float), present, np.where(present.sum(axis=1) == 2, 0.5 * C, C))

    def take(self, rows) -> "_SoftmaxChunk":
        return _SoftmaxChunk(self.data, self.weight[rows], self.present[rows], self.C[rows])

    def __len__(self) -> int:
        return self.weight.shape[0]

    def logits(self, theta) -> np.ndarray:
        B, K, q = theta.shape
        Z = (theta.reshape(B * K, q) @ self.data.XT).reshape(B, K, -1)
        if not self.all_present:
            Z += self.offset
        return Z

    def objective(self, theta, grad: bool = True, probabilities: bool = False):
        """``f``, and optionally the gradient (B, K, q) and the probabilities (B, K, N) for :meth:`hessian`.

        Works in place on one ``(B, K, N)`` array (logits, shifted logits,
        exponentials, probabilities, residuals in turn): these passes over
        memory, not the two matrix products, dominate the cost.
        """
        data = self.data
        B, K, q = theta.shape
        Z = self.logits(theta)
        Z -= Z.max(axis=1, keepdims=True)
        # loss_i = log sum_k exp(z_ik) - z_iy (shift-invariant); rows outside S have weight 0
        z_true = np.take(Z.reshape(B, -1), data.true_index, axis=1)
        E = np.exp(Z, out=Z)
        total = E.sum(axis=1)
        loss = np.log(total)
        loss -= z_true
        f = self.C * np.einsum("bn,bn->b", loss, self.weight)
        f += 0.5 * np.einsum("bkq,q->b", theta * theta, data.penalty)
        if not grad:
            return f
        E /= total[:, None, :]
        P = E.copy() if probabilities else E
        residual = E
        residual -= data.onehot
        residual *= self.weight[:, None, :]
        g = (residual.reshape(B * K, -1) @ data.X).reshape(B, K, q)
        g *= self.C[:, None, None]
        g += theta * data.penalty
        return (f, g, P) if probabilities else (f, g)

    def hessian(self, P) -> np.ndarray:
        """Full softmax Hessian, null directions made harmless (:func:`_fix_null_directions`).

        Block ``(k, l)`` is ``sum_i w_i (p_ik [k=l] - p_ik p_il) x_i x_i^T``: one
        product of the class-pair weights with the per-point outer products,
        ``(B K^2, N) @ (N, q^2)``.
        """
        data = self.data
        B, K, N = P.shape
        q = data.q
        W = -P[:, :, None, :] * P[:, None, :, :]  # (B, K, K, N)
        index = np.arange(K)
        W[:, index, index, :] += P
        W *= self.weight[:, None, None, :]
        blocks = (W.reshape(B * K * K, N) @ data.outer).reshape(B, K, K, q, q)
        H = np.ascontiguousarray(blocks.transpose(0, 1, 3, 2, 4)).reshape(B, K * q, K * q)
        H *= self.C[:, None, None]
        diagonal = np.arange(K * q)
        H[:, diagonal, diagonal] += np.tile(data.penalty, K)
        _fix_null_directions(H, self.present, self.data.penalty)
        return H

    def converged(self, g, tol) -> np.ndarray:
        return np.abs(g).max(axis=(1, 2)) <= tol * self.C * self.size

    def block_hessian_inverse(self, theta) -> np.ndarray:
        """Inverses of the class-diagonal blocks of the Hessian at ``theta``, shape (B, K, q, q).

        Block ``k`` is ``C sum_i w_i p_ik (1 - p_ik) x_i x_i^T`` plus the penalty
        (unit intercept entry for absent classes). Twice this block-diagonal
        matrix dominates the full Hessian (the softmax covariance
        ``diag(p) - p p^T`` is diagonally dominant), so steps preconditioned by
        it contract: the chord iteration converges.
        """
        data = self.data
        B, K, q = theta.shape
        _, _, P = self.objective(theta, grad=True, probabilities=True)
        W = P * (1.0 - P) * self.weight[:, None, :]
        blocks = (W.reshape(B * K, -1) @ data.outer).reshape(B, K, q, q) * self.C[:, None, None, None]
        diagonal = np.arange(q)
        blocks[:, :, diagonal, diagonal] += data.penalty
        if data.penalty[-1] == 0.0:
            blocks[:, :, q - 1, q - 1] += ~self.present
        return np.linalg.inv(blocks)

    def exact_hessian_inverse(self, theta) -> np.ndarray:
        """Inverse of the (null-fixed) Hessian at ``theta``, shape (B, Kq, Kq)."""
        _, _, P = self.objective(theta, grad=True, probabilities=True)
        return np.linalg.inv(self.hessian(P))


def _fix_null_directions(H, present, penalty) -> None:
    """Make Hessians ``H`` (B, Kq, Kq) invertible without changing Newton steps on admissible gradients.

    Absent classes (``present`` (B, K) false): their coordinates never move
    (zero gradient), so their unpenalised intercept entries get a unit
    diagonal. Present classes: the loss is invariant to adding one constant to
    all their intercepts, a direction every gradient is orthogonal to; adding
    ``c v v^T`` along it leaves the solution of ``H d = -g`` unchanged.
    """
    if penalty[-1] != 0.0:  # no intercept: the penalty makes H positive definite
        return
    q = penalty.shape[0]
    K = present.shape[1]
    intercept = np.arange(K) * q + (q - 1)
    H[:, intercept, intercept] += ~present
    v = present.astype(float)
    scale = np.abs(H[:, intercept, intercept]).mean(axis=1)
    H[:, intercept[:, None], intercept[None, :]] += (scale[:, None, None] / K) * (v[:, :, None] * v[:, None, :])


def _data_hessian(X: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``sum_i (diag p_i - p_i p_i^T) (x) x_i x_i^T`` for rows ``X`` (n, q) and probabilities ``P`` (K, n).

    As ``diag`` blocks ``X^T diag(p_k) X`` minus ``V^T V`` with ``V_i = p_i (x) x_i``:
    ``O(n K^2 q^2)`` in one GEMM, the cheapest form for one large model.
    """
    n, q = X.shape
    K = P.shape[0]
    V = (P.T[:, :, None] * X[:, None, :]).reshape(n, K * q)
    H = -(V.T @ V)
    for c in range(K):
        H[c * q:(c + 1) * q, c * q:(c + 1) * q] += (X.T * P[c]) @ X
    return H
