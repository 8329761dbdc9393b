r"""L-BFGS's initial inverse Hessians for a chunk of coalitions, as data that either solver path reads.

Each is a callable ``apply(r, rows)`` (``r`` (b, K, q) for the chunk rows
``rows``) for the chunked array path (:func:`._lbfgs._lbfgs`) and carries
its arrays and a ``kind`` for the compiled per-coalition path
(:func:`._lbfgs_rows.lbfgs_own_rows`), so both apply the same matrix:

* :class:`LowRankInverse`: the full-data Hessian scaled to each coalition,
  :math:`I + Q_r\,\mathrm{diag}\bigl(1/(w\lambda_j + 1) - 1\bigr)\,Q_r^\top`
  with :math:`w = C|S|/N` (built by :func:`low_rank_inverse`);
* :class:`DiagonalInverse`: :math:`\operatorname{diag}(w h_D + r_S)^{-1}` under
  per-coalition penalties (:func:`._scalers.diagonal_preconditioner`).

Both act on the classes present only (zero elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._array import Array, ArrayBackend

NO_PRECONDITIONER, LOW_RANK, DIAGONAL = 0, 1, 2
#: Scaled curvature ``C |S| / N * lambda`` from which an eigendirection enters the low-rank preconditioner.
PRECONDITION_MIN_CURVATURE = 1.0


@dataclass(frozen=True)
class LowRankInverse:
    """``I + V_b diag(1/(w lambda + 1) - 1) V_b^T`` per coalition: its own leading ``ranks[b]`` eigenvectors.

    ``vectors`` (Kq, r) and ``eigenvalues`` (r,) hold the chunk's most
    directions; ``weight`` (B,) is each coalition's ``C |S| / N``, ``ranks``
    (B,) how many leading directions it takes, ``present`` (B, K) its classes.
    A coalition's matrix depends on the coalition alone, never on its chunk.
    """

    vectors: Array
    eigenvalues: Array
    weight: Array
    ranks: Array
    present: Array
    xp: Any
    kind: int = LOW_RANK

    def __call__(self, r: Array, rows: Array) -> Array:
        xp = self.xp
        K, q = r.shape[1], r.shape[2]
        present = self.present[rows][:, :, None]
        flat = xp.reshape(r * present, (len(rows), K * q))
        z = flat @ self.vectors
        factor = 1.0 / (self.weight[rows, None] * self.eigenvalues[None, :] + 1.0) - 1.0
        own = xp.arange(self.eigenvalues.shape[0], device=getattr(self.eigenvalues, "device", None))[None, :] \
            < self.ranks[rows, None]
        z *= xp.where(own, factor, xp.zeros_like(factor))
        flat += z @ xp.permute_dims(self.vectors, (1, 0))
        return xp.reshape(flat, (len(rows), K, q)) * present


@dataclass(frozen=True)
class DiagonalInverse:
    """``diag(w h_D + r_S)^-1`` per coalition: ``diagonal`` (K, q), ``penalty`` (q,) or (B, q).

    A zero curvature entry counts as 1.
    """

    diagonal: Array
    weight: Array
    penalty: Array
    present: Array
    one: Array  # the backend's scalar 1 (``where`` with a Python scalar is not portable)
    xp: Any
    kind: int = DIAGONAL

    def __call__(self, r: Array, rows: Array) -> Array:
        penalty = self.penalty[rows][:, None, :] if self.penalty.ndim == 2 else self.penalty
        curvature = self.weight[rows, None, None] * self.diagonal[None] + penalty
        return r / self.xp.where(curvature > 0, curvature, self.one) * self.present[rows][:, :, None]


def symmetric_eigen(H: Array, backend: ArrayBackend) -> tuple[Array, Array]:
    """Eigenvalues (ascending) and eigenvectors of the symmetric ``H``, in its float type.

    On numpy by LAPACK's float32 divide and conquer (half float64's time: 65 to 30 ms at 650 unknowns, the
    one-off cost of a 10-class digits game): the preconditioner it builds is applied in float32 anyway.
    Its rounding depends on the BLAS threads, and scipy's BLAS, loaded here on first use, can miss a pin
    taken before (:func:`~shapley_research._threads.pinned_threads`): the call itself is held at
    :data:`~shapley_research._threads.BATCH_THREADS` threads.
    """
    if not backend.is_numpy:
        return backend.xp.linalg.eigh(H)
    import scipy.linalg

    from ..._threads import BATCH_THREADS, thread_controller

    with thread_controller().limit(limits=BATCH_THREADS, user_api="blas"):
        eigenvalues, vectors = scipy.linalg.eigh(H.astype(np.float32), driver="evd", check_finite=False)
    return eigenvalues.astype(H.dtype), vectors.astype(H.dtype)


def hessian_eigen(H: Array, backend: ArrayBackend) -> tuple[Array, Array]:
    """Eigenvalues (descending, clipped at 0) and eigenvectors of the symmetric data Hessian ``H`` (Kq, Kq)."""
    eigenvalues, vectors = symmetric_eigen(H, backend)
    xp = backend.xp
    return backend.maximum(xp.flip(eigenvalues, axis=0), 0.0), xp.flip(vectors, axis=1)


def low_rank_inverse(eigenvalues: Array, vectors: Array, chunk: Any, n_players: int) -> LowRankInverse:
    r"""L-BFGS's initial inverse Hessian for a chunk: the full-data Hessian scaled to each coalition, low rank.

    A coalition's data Hessian is on average :math:`|S|/N` times that of the
    whole training set, so with :math:`H_D = Q\Lambda Q^\top` (data part at
    the full-data solution, :func:`hessian_eigen`, computed once) ``H0`` is
    :math:`Q\,(w\Lambda + I)^{-1}Q^\top` with :math:`w = C|S|/N` (the penalty
    taken as :math:`I`), restricted to the classes present. Written as
    :math:`I + Q_r\,\mathrm{diag}\bigl(1/(w\lambda_j + 1) - 1\bigr)\,Q_r^\top`
    over the coalition's own :math:`r` leading eigenvectors, those whose
    scaled curvature :math:`w\lambda_j` reaches
    :data:`PRECONDITION_MIN_CURVATURE` (at least one): along the others the
    coalition's curvature is below the penalty's, ``H0`` is within a factor
    2 of the identity there, and L-BFGS's own pairs do the rest. The
    matrix depends on the coalition alone, so a coalition's fit is the
    same whatever chunk it is fitted in. On 10-class digits this keeps 93 of 650
    directions, a seventh of the cost per application, for the same
    iterations (24.9 against 24.4). The preconditioner cuts the iterations
    on MNIST about threefold for large coalitions. ``chunk`` is a
    :class:`._softmax._SoftmaxChunk`; the arrays are in its backend.
    """
    xp = chunk.data.xp
    weight = chunk.C * chunk.size / n_players
    # each coalition's own directions: its scaled curvature reaches the threshold (at least one)
    ranks = xp.sum(eigenvalues[None, :] * weight[:, None] >= PRECONDITION_MIN_CURVATURE, axis=1)
    ranks = xp.where(ranks > 0, ranks, xp.ones_like(ranks))
    rank = int(xp.max(ranks))
    return LowRankInverse(vectors[:, :rank], eigenvalues[:rank], weight, ranks, chunk.present, xp)
