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

from ._array import Array, ArrayBackend, namespace

NO_PRECONDITIONER, LOW_RANK, DIAGONAL, CLASS_BLOCKS = 0, 1, 2, 3
#: Scaled curvature ``C |S| / N * lambda`` from which an eigendirection enters the low-rank preconditioner.
PRECONDITION_MIN_CURVATURE = 1.0


@dataclass(frozen=True)
class ClassBlocks:
    r"""The class-diagonal blocks of the full-data Hessian, :math:`H_{kk} = U_k\Lambda_k U_k^\top`, eigendecomposed.

    ``vectors`` (K, q, q) holds :math:`U_k`, ``eigenvalues`` (K, q) the
    :math:`\lambda_{kj}` (clipped at 0). Applied to a coalition of weight
    :math:`w`, class by class, :math:`U_k\,\mathrm{diag}(1/(w\lambda_{kj} + 1))\,U_k^\top`,
    on the part of a vector off its mean over the classes (:meth:`apply`).
    """

    vectors: Array
    eigenvalues: Array

    @property
    def xp(self) -> Any:
        """The arrays' namespace (read through, so the blocks pickle with the learner that keeps them)."""
        return namespace(self.vectors)

    @property
    def rows(self) -> Array:
        """(K q, q): row ``k q + j`` is ``U_k[:, j]`` (the compiled path's layout)."""
        K, q, _ = self.vectors.shape
        return self.xp.reshape(self.xp.permute_dims(self.vectors, (0, 2, 1)), (K * q, q))

    def apply(self, r: Array, weight: Array, present: Array) -> Array:
        r"""``(C B C + M) r`` for ``r`` (b, K, q), ``weight`` (b,) each row's ``w``, ``present`` (b, K) its classes.

        ``M`` replicates the mean over the classes present, ``C = I - M``: the
        data has no curvature along the class-sum directions (softmax is
        invariant to adding one vector to every class), so the blocks ``B``
        act on the centred part of ``r`` and its mean passes as under the
        penalty ``I``. Blocks applied to the mean too (the block-diagonal
        matrix alone) moved the iterates off :math:`\sum_k \theta_k = 0`:
        2-7 times the iterations at tol 1e-6 (wine, standardised digits).
        """
        xp = self.xp
        weights = xp.astype(present, r.dtype)[:, :, None]
        count = xp.sum(weights, axis=1, keepdims=True)
        mean = xp.sum(r * weights, axis=1, keepdims=True) / count
        c = xp.einsum("kaj,bka->bkj", self.vectors, (r - mean) * weights)
        c /= weight[:, None, None] * self.eigenvalues[None] + 1.0
        out = xp.einsum("kaj,bkj->bka", self.vectors, c) * weights
        return out - xp.sum(out, axis=1, keepdims=True) / count + mean


@dataclass(frozen=True)
class LowRankInverse:
    """``I + V_b diag(1/(w lambda + 1) - 1) V_b^T`` per coalition: its own leading ``ranks[b]`` eigenvectors.

    ``vectors`` (Kq, r) and ``eigenvalues`` (r,) hold the chunk's most
    directions; ``weight`` (B,) is each coalition's ``C |S| / N``, ``ranks``
    (B,) how many leading directions it takes, ``present`` (B, K) its classes.
    Coalitions with ``use_blocks`` (B,) take the class blocks ``blocks``
    instead (:func:`low_rank_inverse` says when); ``some_blocks`` and
    ``all_blocks`` say so for the chunk, read on the host.
    A coalition's matrix depends on the coalition alone, never on its chunk.
    """

    vectors: Array
    eigenvalues: Array
    weight: Array
    ranks: Array
    present: Array
    xp: Any
    blocks: ClassBlocks | None = None
    use_blocks: Array = None
    some_blocks: bool = False
    all_blocks: bool = False
    kind: int = LOW_RANK

    def __call__(self, r: Array, rows: Array) -> Array:
        present = self.present[rows][:, :, None]
        if self.blocks is None or not self.some_blocks:
            return self._low_rank(r, rows) * present
        blocked = self.blocks.apply(r, self.weight[rows], self.present[rows])
        if not self.all_blocks:
            blocked = self.xp.where(self.use_blocks[rows][:, None, None], blocked, self._low_rank(r, rows))
        return blocked * present

    def _low_rank(self, r: Array, rows: Array) -> Array:
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
        return xp.reshape(flat, (len(rows), K, q))


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


def class_blocks(X: Array, P: Array, backend: ArrayBackend) -> ClassBlocks:
    r"""The eigendecomposed class-diagonal blocks :math:`\sum_i p_{ik}(1 - p_{ik})\,x_i x_i^\top` of the data Hessian.

    ``X`` (N, q) rows, ``P`` (K, N) probabilities at the full-data solution:
    ``O(N K q^2)``, then ``K`` eigendecompositions of ``q x q`` (on numpy at
    :data:`~shapley_research._threads.BATCH_THREADS` BLAS threads, so the
    rounding never depends on the machine's thread count).
    """
    from ..._threads import BATCH_THREADS, thread_controller

    xp = backend.xp
    curvature = P * (1.0 - P)
    X_T = xp.permute_dims(X, (1, 0))
    blocks = xp.stack([(X_T * curvature[k]) @ X for k in range(P.shape[0])])
    if backend.is_numpy:
        with thread_controller().limit(limits=BATCH_THREADS, user_api="blas"):
            eigenvalues, vectors = np.linalg.eigh(blocks)
    else:
        eigenvalues, vectors = xp.linalg.eigh(blocks)
    return ClassBlocks(vectors, backend.maximum(eigenvalues, 0.0))


def low_rank_inverse(eigenvalues: Array, vectors: Array, chunk: Any, n_players: int,
                     blocks: ClassBlocks | None = None) -> LowRankInverse:
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
    2 of the identity there, and L-BFGS's own pairs do the rest. On
    standardised 10-class digits this keeps 93 of 650 directions, a seventh
    of the cost per application, for the same iterations (24.9 against
    24.4). The preconditioner cuts the iterations on MNIST about threefold
    for large coalitions.

    Where a coalition keeps more than ``q`` directions (features plus
    intercept), ``blocks`` (:func:`class_blocks`), if given, takes its place:
    the class-diagonal blocks of :math:`w H_D + I`, inverted class by class on
    the part of a vector off its class mean (:meth:`ClassBlocks.apply`). They
    cost :math:`2Kq^2` multiply-adds an application against the low rank's
    :math:`2rKq`. Measured (one thread, tol 1e-4, 100 coalitions of each
    inclusion probability 0.2 / 0.5 / 0.9, one run): raw digits with 15% of
    labels flipped 64 / 53 / 28 iterations against 79 / 73 / 36, 1.19 / 1.36
    / 0.93 ms a fit against 2.38 / 3.27 / 2.03; MNIST PCA-50 21 / 13 / 7
    iterations against 21 / 14 / 7, 0.64 / 0.70 / 0.61 ms against 0.76 / 1.07
    / 0.90; standardised digits (ranks 32 / 65 / 98: the blocks only at 0.9)
    0.34 / 0.25 / 0.18 ms against 0.33 / 0.25 / 0.19. ``chunk`` is a
    :class:`._softmax._SoftmaxChunk`; the arrays are in its backend.
    """
    xp = chunk.data.xp
    weight = chunk.C * chunk.size / n_players
    # each coalition's own directions: its scaled curvature reaches the threshold (at least one)
    ranks = xp.sum(eigenvalues[None, :] * weight[:, None] >= PRECONDITION_MIN_CURVATURE, axis=1)
    ranks = xp.where(ranks > 0, ranks, xp.ones_like(ranks))
    if blocks is None:
        rank = int(xp.max(ranks))
        return LowRankInverse(vectors[:, :rank], eigenvalues[:rank], weight, ranks, chunk.present, xp)
    q = blocks.vectors.shape[-1]
    use_blocks = ranks > q
    low_ranks = xp.where(use_blocks, xp.ones_like(ranks), ranks)
    rank = int(xp.max(low_ranks))  # two host reads a chunk, none an iteration
    n_blocks = int(xp.sum(use_blocks))
    return LowRankInverse(vectors[:, :rank], eigenvalues[:rank], weight, low_ranks, chunk.present, xp, blocks,
                          use_blocks, n_blocks > 0, n_blocks == len(chunk))
