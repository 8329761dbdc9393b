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


#: Test rows x training points that one step after the distance GEMM handles at once (512 KiB per
#: float64 array, cache-sized: faster than larger steps): everything after the GEMM is row by row,
#: so this bounds memory and time, not results.
_CHUNK_CELLS = 1 << 16
_SIGN = np.uint64(1 << 63)


def _doubled_gram(X_train: NDArray[np.float64], X_test: NDArray[np.float64],
                  out: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """``(2 X_test) X_train^T``, the BLAS step of the squared distances, into ``out``.

    One call on all of ``X_test``'s rows, as ``2.0 * X_test @ X_train.T`` (``*`` binds
    before ``@``) has always been computed: OpenBLAS rounds a row differently with
    another number of rows or threads per call, which would move ties and near-ties.
    """
    return np.matmul(2.0 * X_test, X_train.T, out=out)


def _finish_distances(gram: NDArray[np.float64], test_sq: NDArray[np.float64], train_sq: NDArray[np.float64]
                      ) -> NDArray[np.float64]:
    """``|x|^2 - 2 x.z + |z|^2`` in place of ``gram`` (rows ``x``), the elementwise steps in the old order."""
    np.subtract(test_sq[:, None], gram, out=gram)
    gram += train_sq[None, :]
    return gram


def _stable_order(sq: NDArray[np.float64]) -> NDArray[np.int64]:
    r"""Columns of each row of ``sq`` by value, ties by index: ``argsort(sq, axis=1, kind="stable")``, faster.

    With :math:`b` bits for an index, each value's bits, mapped to an unsigned integer
    :math:`u` in the same order (``-0.0`` first made ``+0.0``), keep their high part
    :math:`h = \lfloor u / 2^b \rfloor` and carry the index in the low :math:`b` bits.
    One integer sort of these distinct keys orders by :math:`(h, \text{index})`. Equal
    values have equal :math:`h`, so that is the stable order unless two neighbours
    share :math:`h` while their values differ; a row where truncation dropped nonzero
    bits and neighbours share :math:`h` gets a stable sort of its values in that order,
    which moves no equal values past each other. NaNs (none without overflow): a plain
    stable sort.
    """
    if np.isnan(sq.max()):  # max propagates NaN
        return np.argsort(sq, axis=1, kind="stable").astype(np.int64, copy=False)
    n = sq.shape[1]
    low = np.uint64((1 << max(1, (n - 1).bit_length())) - 1)
    key = (sq + 0.0).view(np.uint64)
    key ^= (key.view(np.int64) >> 63).view(np.uint64) | _SIGN  # negatives: all bits flipped; others: sign bit set
    lost = np.flatnonzero((key & low).any(axis=1))
    key &= ~low
    key |= np.arange(n, dtype=np.uint64)
    key.sort(axis=1)
    lost = lost[((key[lost, 1:] ^ key[lost, :-1]) <= low).any(axis=1)]  # and neighbours sharing h
    key &= low
    order = key.view(np.int64)
    for row in lost:
        order[row] = order[row][np.argsort(sq[row][order[row]], kind="stable")]
    return order


def _neighbour_order(X_train: NDArray[np.float64], X_test: NDArray[np.float64]) -> NDArray[np.int32]:
    """Training indices sorted by distance to each test point (stable: ties by index), as ``int32``."""
    gram = _doubled_gram(X_train, X_test)
    test_sq, train_sq = np.einsum("ij,ij->i", X_test, X_test), np.einsum("ij,ij->i", X_train, X_train)
    order = np.empty(gram.shape, dtype=np.int32)
    rows = max(1, _CHUNK_CELLS // gram.shape[1])
    for lo in range(0, gram.shape[0], rows):
        order[lo:lo + rows] = _stable_order(_finish_distances(gram[lo:lo + rows], test_sq[lo:lo + rows], train_sq))
    return order


def _sorted_values(match: NDArray[np.bool_], step: NDArray[np.float64], last_weight: float) -> NDArray[np.float64]:
    """Each row's values in neighbour order, from ``match`` (label matches in that order).

    The recursion of :func:`knn_shapley` with the same floating-point operations as
    ``cumsum(((m[:-1] - m[1:]) * step)[::-1])[::-1] + m[-1] w`` (``m`` as floats,
    ``w = last_weight``): ``m[j] - m[j+1]`` is exact in ``int8``, the sum runs from
    the far end, so the bits are the same.
    """
    values = np.empty(match.shape)
    last = match[:, -1:] * last_weight
    as_int = match.view(np.int8)
    np.multiply(as_int[:, :-1] - as_int[:, 1:], step, out=values[:, :-1])
    from_far_end = values[:, -2::-1]
    np.cumsum(from_far_end, axis=1, out=from_far_end)
    values[:, :-1] += last
    values[:, -1:] = last
    return values


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
        Test points whose squared distances are computed together, in one
        ``block_size x N`` float64 array (``8 * block_size * N`` bytes, the bulk of the
        memory at large ``N``); sorting and the recursion then take rows of that block
        about ``2**16`` cells at a time. The block's values are summed before they join
        the total, so another ``block_size`` moves the values by rounding only.

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
    n, m = X_tr.shape[0], X_te.shape[0]
    ranks = np.arange(1, n + 1)
    step = np.minimum(k, ranks[:-1]) / (k * ranks[:-1])  # min(K, j) / (K j), j = 1..N-1
    train_sq = np.einsum("ij,ij->i", X_tr, X_tr)
    buffer = np.empty((min(block_size, m), n))
    totals = np.zeros(n)
    for lo in range(0, m, block_size):
        gram = _doubled_gram(X_tr, X_te[lo:lo + block_size], buffer[:min(block_size, m - lo)])
        test_sq = np.einsum("ij,ij->i", X_te[lo:lo + block_size], X_te[lo:lo + block_size])
        totals += _block_sum(gram, test_sq, train_sq, y_tr, y_te[lo:lo + block_size], step, min(k, n) / (k * n))
    return ValuationResult(values=totals / X_te.shape[0], n_evaluations=0, method="knn_exact",
                           wall_time=time.perf_counter() - start, stderr=np.zeros(len(totals)), info={"k": k})


def _block_sum(gram: NDArray[np.float64], test_sq: NDArray[np.float64], train_sq: NDArray[np.float64],
               y_train: np.ndarray, y_test: np.ndarray, step: NDArray[np.float64], last_weight: float
               ) -> NDArray[np.float64]:
    """Each training point's values summed over a block of test points, from the block's :func:`_doubled_gram`.

    The rows are finished, sorted and valued about :data:`_CHUNK_CELLS` cells at a
    time (``gram`` is overwritten), and added in the order ``np.bincount`` over the
    whole block would add them (row after row, from zero): the bits of the block at once.
    """
    n = gram.shape[1]
    rows = max(1, _CHUNK_CELLS // n)
    total = np.zeros(n)
    for lo in range(0, gram.shape[0], rows):
        order = _stable_order(_finish_distances(gram[lo:lo + rows], test_sq[lo:lo + rows], train_sq))
        # each label pair compared as before, then gathered: a gather of bools is cheaper than of labels
        match = np.take_along_axis(y_train[None, :] == y_test[lo:lo + rows, None], order, axis=1)
        values = _sorted_values(match, step, last_weight)
        if lo == 0:
            total = np.bincount(order.ravel(), weights=values.ravel(), minlength=n).astype(np.float64, copy=False)
        else:
            for indices, row in zip(order, values):
                total[indices] += row
    return total


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
        self._order = order
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
