r"""Exact Shapley values of the K-nearest-neighbour utility (Jia et al., VLDB 2019).

:func:`knn_shapley` (its docstring has the recursion) and :class:`KNNUtility`, the
game whose exact values it computes.
"""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import (check_class_labels, check_feature_pair, check_int, check_label_kinds, check_permutations,
                           check_target_vector)
from ..games import Game, content_digest, knn_match_counts, knn_prefix_match_counts
from ..result import ValuationResult

__all__ = ["knn_shapley", "KNNUtility"]


def _check_xy(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike
              ) -> tuple[NDArray[np.float64], np.ndarray, NDArray[np.float64], np.ndarray]:
    X_tr, X_te = check_feature_pair(X_train, X_test)
    # labels are only compared for equality here, so they need not be sortable
    y_tr = check_class_labels(check_target_vector(y_train, "y_train", X_tr.shape[0], "X_train"), "y_train",
                              sortable=False)
    y_te = check_class_labels(check_target_vector(y_test, "y_test", X_te.shape[0], "X_test"), "y_test",
                              sortable=False)
    check_label_kinds(y_tr, y_te)
    return X_tr, y_tr, X_te, y_te


def _neighbour_order(X_train: NDArray[np.float64], X_test: NDArray[np.float64]) -> NDArray[np.intp]:
    """Training indices sorted by distance to each test point (stable: ties by index)."""
    sq = (np.einsum("ij,ij->i", X_test, X_test)[:, None] - 2.0 * X_test @ X_train.T
          + np.einsum("ij,ij->i", X_train, X_train)[None, :])
    return np.argsort(sq, axis=1, kind="stable")


def knn_shapley(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, k: int, *,
                block_size: int = 256) -> ValuationResult:
    r"""Exact Shapley values of the KNN classification utility.

    For one test point :math:`(x, y)` the utility of a training set :math:`S` is

    .. math:: U(S) = \frac1K \sum_{j \in \text{the } \min(K, |S|) \text{ nearest points of } S} \mathbb 1[y_j = y],

    and the utility over a test set is the mean over its points. With training
    points sorted by distance to :math:`x`, :math:`\alpha_1` nearest, the exact
    Shapley values follow from the recursion

    .. math::

        s_{\alpha_N} = \frac{\mathbb 1[y_{\alpha_N} = y]}{N}\,\frac{\min(K, N)}{K}, \qquad
        s_{\alpha_j} = s_{\alpha_{j+1}} + \frac{\mathbb 1[y_{\alpha_j} = y] -
        \mathbb 1[y_{\alpha_{j+1}} = y]}{K}\,\frac{\min(K, j)}{j},

    computed here for blocks of test points at once as a reversed cumulative sum:
    ``O(N log N)`` per test point, no utility evaluation, which makes it the exact
    ground truth at thousands of points. Ties in distance are broken by index, in
    both :func:`knn_shapley` and :class:`KNNUtility`, so the two agree exactly.

    Parameters
    ----------
    X_train : array-like of float, shape (N, d)
    y_train : array-like, shape (N,)
        Class labels (integers or strings), compared for equality only.
    X_test : array-like of float, shape (m, d)
    y_test : array-like, shape (m,)
    k : int
        Number of neighbours, at least 1.
    block_size : int, default 256
        Test points processed together (memory ``O(block_size * N)``).

    Returns
    -------
    ValuationResult
        Values sum to the utility of the full training set (efficiency);
        ``n_evaluations`` is 0 (no utility is evaluated).
    """
    start = time.perf_counter()
    X_tr, y_tr, X_te, y_te = _check_xy(X_train, y_train, X_test, y_test)
    k = check_int(k, "k", minimum=1)
    block_size = check_int(block_size, "block_size", minimum=1)
    n = X_tr.shape[0]
    ranks = np.arange(1, n + 1)
    step = np.minimum(k, ranks[:-1]) / (k * ranks[:-1])  # min(K, j) / (K j), j = 1..N-1
    totals = np.zeros(n)
    for lo in range(0, X_te.shape[0], block_size):
        order = _neighbour_order(X_tr, X_te[lo:lo + block_size])
        match = (y_tr[order] == y_te[lo:lo + block_size, None]).astype(float)
        last = match[:, -1:] * (min(k, n) / (k * n))  # 1[match] / N unless K > N
        increments = (match[:, :-1] - match[:, 1:]) * step
        sorted_values = np.hstack([np.cumsum(increments[:, ::-1], axis=1)[:, ::-1] + last, last])
        totals += np.bincount(order.ravel(), weights=sorted_values.ravel(), minlength=n)
    return ValuationResult(values=totals / X_te.shape[0], n_evaluations=0, method="knn_exact",
                           wall_time=time.perf_counter() - start, stderr=np.zeros(len(totals)), info={"k": k})


class KNNUtility(Game):
    """The KNN classification utility as a game, for checking estimators.

    ``U(S)`` is the mean over test points of the fraction of the ``K`` nearest
    points of ``S`` that carry the test label (fewer than ``K`` if ``|S| < K``,
    still divided by ``K``); ``U(empty) = 0``. :func:`knn_shapley` gives its
    exact Shapley values.

    Evaluation is compiled and costs about ``O(N)`` per coalition (see
    :func:`shapley_research.games.knn_match_counts`); ``evaluate_prefixes`` walks a
    permutation in one pass, ``O(T K)`` per added player for ``T`` test
    points, so permutation estimators pay ``O(N T K)`` per permutation.
    """

    def __init__(self, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, k: int) -> None:
        X_tr, y_tr, X_te, y_te = _check_xy(X_train, y_train, X_test, y_test)
        self.k = check_int(k, "k", minimum=1)
        self.n_players = X_tr.shape[0]
        order = _neighbour_order(X_tr, X_te)
        rank = np.empty(order.shape, dtype=np.int32)
        np.put_along_axis(rank, order, np.arange(self.n_players, dtype=np.int32)[None, :], axis=1)
        self._order = order.astype(np.int32)
        self._rank = np.ascontiguousarray(rank.T)  # player-major: a player's ranks in one sweep
        self._match = np.ascontiguousarray((y_tr[:, None] == y_te[None, :]).astype(np.int32))
        self._scale = self.k * self._order.shape[0]

    def fingerprint(self) -> str:
        """A digest of ``k``, each test point's order of the training points, and which labels match."""
        return content_digest(self.k, self._order, self._match)

    def _evaluate(self, masks: NDArray[np.bool_]) -> NDArray[np.float64]:
        counts = knn_match_counts(np.ascontiguousarray(masks), self._order, self._rank, self._match, self.k)
        return counts / self._scale

    def evaluate_prefixes(self, permutations: ArrayLike) -> NDArray[np.float64]:
        """Utilities of every prefix of each permutation, an ``(m, N)`` array (see :mod:`shapley_research.games`).

        ``permutations`` is an integer ``(m, N)`` array whose rows permute ``range(N)``.
        """
        checked = check_permutations(permutations, self.n_players)
        return knn_prefix_match_counts(checked, self._rank, self._match, self.k) / self._scale
