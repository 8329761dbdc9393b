r"""The (robust) volume of a coalition's features: a validation-free utility (Xu et al., NeurIPS 2021).

Xu, Wu, Foo and Low, "Validation free and replication robust volume-based
data valuation" (NeurIPS 2021): a coalition's worth is the volume its
feature vectors span,

.. math::

    \mathrm{Vol}(S) = \sqrt{\det(X_S^\top X_S)},

no model, no labels, no validation set. Since copies of a point add volume,
the *robust* volume first merges the points of each cube of a grid of side
:math:`\omega` into their mean, and rewards a cube's ``n`` points by a
factor growing geometrically slower:

.. math::

    \mathrm{RV}(S) = \sqrt{\det(\tilde X_S^\top \tilde X_S)}\;
        \prod_{c:\, n_c(S) > 0} \frac{1 - \alpha^{n_c(S) + 1}}{1 - \alpha},
    \qquad \alpha = \frac{1}{\beta\, k(S)},

with :math:`\tilde X_S` the means of the ``k(S)`` cubes that hold points of
``S`` and :math:`n_c(S)` their counts (OpenDataVal's
``RobustVolumeShapley``, with its :math:`\beta = 10`). Values follow from any
estimator of this package on the game.

Evaluation is vectorised over coalitions: the per-cube sums of a chunk of
coalitions are one sparse product, their Gram matrices one contraction and
the determinants one batched ``slogdet``, ``O(N d + C d^2)`` per coalition
(``C`` cubes, ``d`` features).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..games import Game, content_digest
from .._validation import check_bool, check_float, check_real_array

__all__ = ["VolumeUtility"]

#: Most floats of one chunk's per-cube sums (coalitions x cubes x features): 32 MiB.
CHUNK_FLOATS = 2**22


class VolumeUtility(Game):
    r"""The volume (default: the robust volume) spanned by a coalition's feature vectors.

    Parameters
    ----------
    X : array-like of shape (N, d)
        The training points' features, finite; standardise them first (the
        volume and the grid are in their units). The labels play no part.
    robust : bool, default True
        The robust volume (module docstring): points of one cube of side
        ``omega`` count as their mean, and a cube's count adds a factor
        :math:`(1 - \alpha^{n + 1}) / (1 - \alpha)`, so that replicating a
        point gains little. ``False``: :math:`\sqrt{\det(X_S^\top X_S)}`.
    omega : float, default 0.05
        Side of the grid's cubes (robust volume only), anchored at the
        smallest value of each feature over all ``N`` points. OpenDataVal
        anchors the grid of each coalition at that coalition's own minimum
        instead; a fixed grid makes a cube the same for every coalition.
    beta : float, default 10
        :math:`\alpha = 1 / (\beta\, k(S))` for ``k(S)`` occupied cubes (robust volume only), > 1.

    Attributes
    ----------
    n_cubes : int
        Cubes of the grid that hold at least one point (``N`` without ``robust``).

    Notes
    -----
    A coalition whose (merged) points span fewer than ``d`` dimensions has
    volume 0, the empty coalition included, so the values of small coalitions
    are 0 until ``d`` points (cubes) come together.
    """

    def __init__(self, X: ArrayLike, *, robust: bool = True, omega: float = 0.05, beta: float = 10.0) -> None:
        features = check_real_array(X, "X")
        if features.ndim != 2 or features.shape[0] < 1 or features.shape[1] < 1:
            raise ValueError(f"X must be a 2-D array of shape (N, d) with N, d >= 1, got shape {features.shape}.")
        if not np.isfinite(features).all():
            raise ValueError("X must be finite (no NaN or infinity).")
        self.robust = check_bool(robust, "robust")
        self.omega = check_float(omega, "omega", minimum=0.0, strict=True)
        self.beta = check_float(beta, "beta", minimum=1.0, strict=True)
        self.X = np.ascontiguousarray(features, dtype=float)
        self.n_players = self.X.shape[0]
        cube = _cube_ids(self.X, self.omega) if self.robust else np.arange(self.n_players)
        self.n_cubes = int(cube.max()) + 1
        # the maps from a coalition to its cubes' feature sums and counts, built once (robust volume only)
        self._cube_maps = _cube_maps(self.X, cube, self.n_cubes) if self.robust else None

    def fingerprint(self) -> str:
        """A digest of the features and the options."""
        return content_digest(self.X, self.robust, self.omega, self.beta)

    def _evaluate(self, masks: NDArray[np.bool_]) -> NDArray[np.float64]:
        out = np.empty(masks.shape[0])
        d = self.X.shape[1]
        rows = max(1, CHUNK_FLOATS // (self.n_players * d))  # masked X, or cube sums (n_cubes <= N)
        for start in range(0, masks.shape[0], rows):
            out[start:start + rows] = self._volumes(masks[start:start + rows])
        return out

    def _volumes(self, masks: NDArray[np.bool_]) -> NDArray[np.float64]:
        """Volumes of one chunk of coalitions."""
        if self._cube_maps is None:  # X_S^T X_S as (X masked)^T X: one batched product, no N x d x d array
            chosen = masks[:, :, None] * self.X[None, :, :]
            return _sqrt_det(chosen.transpose(0, 2, 1) @ self.X, masks.sum(axis=1))
        counts, sums = _cube_sums(masks, *self._cube_maps, self.n_cubes, self.X.shape[1])
        weights = 1.0 / np.maximum(counts, 1.0) ** 2  # a cube's mean is its sum over its count
        gram = np.einsum("rcd,rce,rc->rde", sums, sums, weights)
        return _sqrt_det(gram, (counts > 0).sum(axis=1)) * np.exp(_log_replication_factor(counts, self.beta))


def _cube_ids(X: NDArray[np.float64], omega: float) -> NDArray[np.int64]:
    """The cube of each point on the grid of side ``omega`` anchored at each feature's minimum, numbered 0..C-1."""
    keys = np.floor((X - X.min(axis=0)) / omega).astype(np.int64)
    _, ids = np.unique(keys, axis=0, return_inverse=True)
    return ids.reshape(-1).astype(np.int64)


def _cube_maps(X: NDArray[np.float64], cube: NDArray[np.int64], n_cubes: int) -> tuple[Any, Any]:
    """Sparse ``(C d, N)`` and ``(C, N)`` maps: a point's features to its cube's columns, and its membership."""
    from scipy.sparse import csr_matrix

    n, d = X.shape
    columns = (cube[:, None] * d + np.arange(d)[None, :]).ravel()
    spread = csr_matrix((X.ravel(), (np.repeat(np.arange(n), d), columns)), shape=(n, n_cubes * d))
    members = csr_matrix((np.ones(n), (np.arange(n), cube)), shape=(n, n_cubes))
    return spread.T, members.T


def _cube_sums(masks: NDArray[np.bool_], spread: Any, members: Any, n_cubes: int,
               d: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per coalition and cube: the count of its points and the sum of their features, ``(r, C)`` and ``(r, C, d)``."""
    chosen = masks.astype(float)
    sums = np.asarray((spread @ chosen.T).T).reshape(-1, n_cubes, d)
    counts = np.asarray((members @ chosen.T).T)
    return counts, sums


def _log_replication_factor(counts: NDArray[np.float64], beta: float) -> NDArray[np.float64]:
    r""":math:`\sum_c \log \frac{1 - \alpha^{n_c + 1}}{1 - \alpha}` over the occupied cubes, with
    :math:`\alpha = 1/(\beta k)` for ``k`` of them."""
    occupied = counts > 0
    k = occupied.sum(axis=1, keepdims=True)
    alpha = 1.0 / (beta * np.maximum(k, 1))
    terms = np.log1p(-alpha ** (counts + 1.0)) - np.log1p(-alpha)
    return np.where(occupied, terms, 0.0).sum(axis=1)


def _sqrt_det(gram: NDArray[np.float64], n_vectors: NDArray[np.int64]) -> NDArray[np.float64]:
    """``sqrt(det(G))`` of a stack of Gram matrices of ``n_vectors`` vectors each, 0 where ``G`` is singular.

    Fewer vectors than dimensions span a volume of lower dimension: exactly 0, where rounding could leave a
    tiny positive determinant.
    """
    sign, logdet = np.linalg.slogdet(gram)
    return np.where((sign > 0) & (n_vectors >= gram.shape[-1]), np.exp(0.5 * logdet), 0.0)
