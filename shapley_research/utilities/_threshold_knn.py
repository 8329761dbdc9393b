r"""Exact Shapley values of the threshold-KNN utility (Wang et al., ICLR 2024: TKNN-Shapley).

:func:`threshold_knn_shapley` (its docstring has the closed form) and :class:`ThresholdKNNUtility`,
the game whose exact values it computes. Beside :func:`~shapley_research.knn_shapley`: the
classifier votes with every training point within a radius ``tau`` instead of the ``K``
nearest, which needs no sort (``O(N)`` per test point).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_float, check_int, check_permutations
from ..games import Game, content_digest
from ..result import ValuationResult
from ._knn import _check_xy, _doubled_gram, _finish_distances

__all__ = ["threshold_knn_shapley", "ThresholdKNNUtility"]

#: Cells (test rows x training points, or pairs x features) handled at once after the distance GEMM:
#: bounds the pairs within the radius held at once and the arrays of their recomputed distances.
_CHUNK_CELLS = 1 << 16
#: Rows of coalitions evaluated at once by :class:`ThresholdKNNUtility` (bounds the float copy of the masks).
_EVALUATE_ROWS = 4096


def _check_tau(tau: object) -> float:
    return check_float(tau, "tau", minimum=0.0, strict=True)


def _class_count(y_train: np.ndarray, y_test: np.ndarray, n_classes: object) -> int:
    """``C``: ``n_classes`` if given (at least the distinct labels seen), else the distinct labels of both sets."""
    seen = len(set(y_train.tolist()) | set(y_test.tolist()))  # labels are only compared, never sorted
    if n_classes is None:
        return seen
    count = check_int(n_classes, "n_classes", minimum=1)
    if count < seen:
        raise ValueError(f"n_classes must be at least the {seen} distinct labels of y_train and y_test, "
                         f"got {count}.")
    return count


def _pair_distances(X_train: NDArray[np.float64], X_test: NDArray[np.float64], rows: NDArray[np.intp],
                    cols: NDArray[np.intp]) -> NDArray[np.float64]:
    """``sum_k (x_k - z_k)^2`` for the pairs ``(X_test[rows], X_train[cols])``: a function of each pair alone."""
    out = np.empty(rows.size)
    step = max(1, _CHUNK_CELLS // X_train.shape[1])
    for lo in range(0, rows.size, step):
        diff = X_test[rows[lo:lo + step]] - X_train[cols[lo:lo + step]]
        out[lo:lo + step] = np.square(diff, out=diff).sum(axis=1)
    return out


def _pairs_within(gram: NDArray[np.float64], X_train: NDArray[np.float64], train_sq: NDArray[np.float64],
                  X_test: NDArray[np.float64], tau_sq: float) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    r"""``(rows, cols)``, row-major, of the pairs with ``|x - z|^2 <= tau^2``, from ``gram`` = ``(2 X_test) X_train^T``.

    ``gram`` (overwritten) becomes the squared distances ``|x|^2 - 2 x.z +
    |z|^2``, whose error is at most about :math:`(d + 3) u (|x| + |z|)^2`
    (``u`` the unit roundoff). A pair whose value lies within twice that
    bound, with margin, of ``tau^2`` has its distance recomputed as
    :math:`\sum_k (x_k - z_k)^2` (a row whose bound overflows: every pair);
    elsewhere the fast value is on the same side. So membership is that of the
    recomputed distance for every pair, whatever the rows computed together:
    ties at the radius are decided alike in every block and in the game.
    """
    test_sq = np.einsum("ij,ij->i", X_test, X_test)
    norms = np.sqrt(test_sq) + np.sqrt(train_sq.max())  # |x| + max |z|: a bound for every pair of the row
    bound = 2.0 * (X_train.shape[1] + 4) * np.finfo(float).eps * norms ** 2
    candidate = _finish_distances(gram, test_sq, train_sq) <= (tau_sq + bound)[:, None]
    candidate[~np.isfinite(bound)] = True
    rows, cols = np.nonzero(candidate)
    unsure = ~(gram[rows, cols] < tau_sq - bound[rows])  # NaN (overflow) included
    keep = ~unsure
    keep[unsure] = _pair_distances(X_train, X_test, rows[unsure], cols[unsure]) <= tau_sq
    return rows[keep], cols[keep]


def _chunks_within(X_train: NDArray[np.float64], train_sq: NDArray[np.float64], X_test: NDArray[np.float64],
                   tau_sq: float, buffer: NDArray[np.float64] | None = None
                   ) -> Iterator[tuple[int, int, NDArray[np.intp], NDArray[np.intp]]]:
    """``(lo, hi, rows, cols)``: :func:`_pairs_within` of test rows ``lo:hi``, about :data:`_CHUNK_CELLS` cells each.

    One GEMM for all of ``X_test`` (into ``buffer``), then the chunks: the
    pairs a chunk yields are bounded by its cells.
    """
    gram = _doubled_gram(X_train, X_test, buffer)
    step = max(1, _CHUNK_CELLS // X_train.shape[0])
    for lo in range(0, X_test.shape[0], step):
        hi = min(lo + step, X_test.shape[0])
        yield lo, hi, *_pairs_within(gram[lo:hi], X_train, train_sq, X_test[lo:hi], tau_sq)


def _within_radius(X_train: NDArray[np.float64], X_test: NDArray[np.float64], tau: float) -> NDArray[np.bool_]:
    """Which training points lie within ``tau`` of each test point, a dense ``(m, N)`` bool array."""
    within = np.zeros((X_test.shape[0], X_train.shape[0]), dtype=bool)
    for lo, _, rows, cols in _chunks_within(X_train, np.einsum("ij,ij->i", X_train, X_train), X_test, tau * tau):
        within[lo + rows, cols] = True
    return within


def _harmonic_weights(n: int) -> NDArray[np.float64]:
    r"""``g[c] = (H_c - 1) / (c - 1)`` for ``c = 0..n`` (``0`` for ``c <= 1``), ``H_c = sum_{k<=c} 1/k``."""
    harmonic = np.cumsum(1.0 / np.arange(1, n + 1))
    weights = np.zeros(n + 1)
    weights[2:] = (harmonic[1:] - 1.0) / np.arange(1, n)
    return weights


def _chunk_sum(rows: NDArray[np.intp], cols: NDArray[np.intp], match: NDArray[np.bool_], n_rows: int,
               weights: NDArray[np.float64], n_classes: int, n_train: int) -> tuple[NDArray[np.float64], int]:
    """Each training point's values summed over a chunk of test rows, and how many rows had no neighbour.

    ``(rows, cols)`` are the chunk's pairs within the radius and ``match``
    whether their labels agree; row ``t`` gives each of its points
    ``alpha_t 1[match] + beta_t`` (the closed form of :func:`threshold_knn_shapley`),
    every other point 0: ``O(pairs)`` work.
    """
    count = np.bincount(rows, minlength=n_rows)
    plus = np.bincount(rows, weights=match, minlength=n_rows)  # whole numbers, exact
    g, scale = weights[count], 1.0 / np.maximum(count, 1)  # a row with count 0 has no pair
    alpha, beta = (1.0 + count * g) * scale, -(1.0 / n_classes + plus * g) * scale
    values = np.bincount(cols, weights=beta[rows] + alpha[rows] * match, minlength=n_train)
    return values.astype(np.float64, copy=False), int(np.count_nonzero(count == 0))


def threshold_knn_shapley(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike,
                          tau: float, *, n_classes: int | None = None, block_size: int = 256) -> ValuationResult:
    r"""Exact Shapley values of the threshold-KNN classification utility (TKNN-Shapley).

    For one test point :math:`(x, y)` the classifier votes with the points of
    :math:`S` within distance :math:`\tau`, :math:`N_\tau(S) = \{j \in S : \|x_j -
    x\|_2 \le \tau\}` (Wang et al., ICLR 2024, Eq. 3):

    .. math::

        U(S) = \frac{1}{|N_\tau(S)|} \sum_{j \in N_\tau(S)} \mathbb 1[y_j = y]
        \text{ if } N_\tau(S) \ne \emptyset, \qquad U(S) = \frac1C \text{ otherwise},

    :math:`C` classes; the utility over a test set is the mean over its points,
    so :math:`U(\emptyset) = 1/C`. Let :math:`c` be the number of training
    points within :math:`\tau` of :math:`x` and :math:`c_+` those of them with
    label :math:`y`. A point outside the radius is a null player (value 0); a
    point :math:`i` inside, with :math:`m_i = \mathbb 1[y_i = y]`, has

    .. math::

        s_i = \frac1c \Big[ m_i - \frac1C + (c\, m_i - c_+) \frac{H_c - 1}{c - 1} \Big],
        \qquad H_c = \sum_{k=1}^{c} \frac1k

    (the last term 0 for :math:`c = 1`). Derivation: only the :math:`c` points
    in the radius change :math:`U`; joining a coalition of :math:`t \ge 1` of
    the others holding :math:`s` matches, :math:`i` adds
    :math:`m_i/(t+1) - s/(t(t+1))`, where :math:`E[s] = t (c_+ - m_i)/(c - 1)`
    at a uniform coalition of size :math:`t`; joining the empty one it adds
    :math:`m_i - 1/C`; the Shapley value averages the sizes
    :math:`t = 0..c-1` alike. The values sum to :math:`c_+/c - 1/C = U(D) -
    U(\emptyset)`. After counting :math:`c` and :math:`c_+` this is ``O(N)``
    per test point, no sort (the paper's Theorem 13 counts the same
    quantities; this form was derived here and is checked against enumeration).

    Parameters
    ----------
    X_train : array-like of float, shape (N, d)
    y_train : array-like, shape (N,)
        Class labels (integers or strings), compared for equality only.
    X_test : array-like of float, shape (m, d)
    y_test : array-like, shape (m,)
    tau : float
        The radius, finite and > 0 (Euclidean; a point at exactly ``tau``
        is in). A quantile of the test-to-training distances is a sensible
        start; ``info["empty_neighbourhoods"]`` says how many test points had
        no training point within it (they value every point 0).
    n_classes : int, optional
        :math:`C`, the value :math:`1/C` of an empty neighbourhood; default
        the distinct labels of ``y_train`` and ``y_test`` together (pass the
        task's count where a split misses a class). Moves every value of a
        point in a radius by a constant per test point, never a ranking
        within it.
    block_size : int, default 256
        Test points whose squared distances are computed together, in one
        ``block_size x N`` float64 array (the bulk of the memory at large
        ``N``); the pairs within the radius are then found and valued about
        ``2**16`` cells at a time, ``O(pairs)`` work. Membership of the radius does
        not depend on it: where the fast squared distance
        (``|x|^2 - 2 x.z + |z|^2``) lies within its rounding bound of
        ``tau^2``, the pair's distance is recomputed feature by feature. The
        block's values are summed before they join the total, so another
        ``block_size`` moves the values by rounding only.

    Returns
    -------
    ValuationResult
        Values sum to :math:`U(D) - U(\emptyset)` (efficiency); ``n_evaluations``
        is 0; ``info`` holds ``tau``, ``n_classes`` and ``empty_neighbourhoods``.
    """
    start = time.perf_counter()
    X_tr, y_tr, X_te, y_te = _check_xy(X_train, y_train, X_test, y_test)
    tau = _check_tau(tau)
    classes = _class_count(y_tr, y_te, n_classes)
    block_size = check_int(block_size, "block_size", minimum=1)
    n, m = X_tr.shape[0], X_te.shape[0]
    train_sq, weights = np.einsum("ij,ij->i", X_tr, X_tr), _harmonic_weights(n)
    buffer = np.empty((min(block_size, m), n))
    totals, empty = np.zeros(n), 0
    for lo in range(0, m, block_size):
        hi = min(lo + block_size, m)
        block = np.zeros(n)
        for first, last, rows, cols in _chunks_within(X_tr, train_sq, X_te[lo:hi], tau * tau, buffer[:hi - lo]):
            chunk, chunk_empty = _chunk_sum(rows, cols, y_tr[cols] == y_te[lo + first + rows], last - first,
                                            weights, classes, n)
            block += chunk
            empty += chunk_empty
        totals += block
    return ValuationResult(values=totals / m, n_evaluations=0, method="threshold_knn_exact",
                           wall_time=time.perf_counter() - start, stderr=np.zeros(n),
                           info={"tau": tau, "n_classes": classes, "empty_neighbourhoods": empty})


class ThresholdKNNUtility(Game):
    r"""The threshold-KNN classification utility as a game, for checking estimators.

    ``U(S)`` is the mean over test points of the fraction of the points of
    ``S`` within distance ``tau`` that carry the test label, ``1/C`` for a test
    point with none of them (so ``U(empty) = 1/C``); ``n_classes`` as in
    :func:`threshold_knn_shapley`, which gives its exact Shapley values (the
    same membership of the radius, ties included).

    Evaluation costs ``O(N T)`` per coalition for ``T`` test points (two
    matrix products of 0/1 floats: exact counts); ``evaluate_prefixes`` walks
    each permutation by cumulative counts, ``O(N T)`` per permutation, the
    same numbers bit for bit as ``evaluate`` on the prefixes. Holds two
    ``N x T`` float arrays.
    """

    #: A row's utility depends on that row alone (exact integer counts, a per-row mean).
    independent_rows = True

    def __init__(self, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, tau: float,
                 *, n_classes: int | None = None) -> None:
        X_tr, y_tr, X_te, y_te = _check_xy(X_train, y_train, X_test, y_test)
        self.tau = _check_tau(tau)
        self.n_classes = _class_count(y_tr, y_te, n_classes)
        self.n_players = X_tr.shape[0]
        within = _within_radius(X_tr, X_te, self.tau)
        # player-major float copies: a coalition's counts are one matrix product, a prefix's one cumulative sum
        self._within = np.ascontiguousarray(within.T, dtype=np.float64)
        self._hits = np.ascontiguousarray((within & (y_tr[None, :] == y_te[:, None])).T, dtype=np.float64)

    def fingerprint(self) -> str:
        """A digest of ``C``, each test point's neighbours within ``tau`` and which of them match its label."""
        return content_digest(self.n_classes, self._within, self._hits)

    def _fractions(self, counts: NDArray[np.float64], hits: NDArray[np.float64]) -> NDArray[np.float64]:
        """Row means over test points of ``hits / counts``, ``1/C`` where ``counts`` is 0."""
        fraction = np.divide(hits, counts, out=np.full(counts.shape, 1.0 / self.n_classes), where=counts > 0)
        return fraction.mean(axis=1)

    def _evaluate(self, masks: NDArray[np.bool_]) -> NDArray[np.float64]:
        out = np.empty(masks.shape[0])
        for lo in range(0, masks.shape[0], _EVALUATE_ROWS):
            rows = masks[lo:lo + _EVALUATE_ROWS].astype(np.float64)
            out[lo:lo + _EVALUATE_ROWS] = self._fractions(rows @ self._within, rows @ self._hits)
        return out

    def evaluate_prefixes(self, permutations: ArrayLike) -> NDArray[np.float64]:
        """Utilities of every prefix of each permutation, an ``(m, N)`` array (see :mod:`shapley_research.games`).

        ``permutations`` is an integer ``(m, N)`` array whose rows permute ``range(N)``.
        """
        checked = check_permutations(permutations, self.n_players)
        out = np.empty(checked.shape)
        for r, order in enumerate(checked):
            out[r] = self._fractions(np.cumsum(self._within[order], axis=0), np.cumsum(self._hits[order], axis=0))
        return out
