r"""The games with exact values that the benchmarks share, and the MNIST features of the KNN game.

Not a script: the benchmarks import it by name (``benchmarks/`` is first on
``sys.path`` when one of them runs).

- :class:`CheapGame`: linear + ``c sqrt(|S|)`` + unanimity terms, about a
  nanosecond per mask cell, closed-form values (the overhead benchmark's game,
  ``core_overhead.py``, and the closed-form game of the error tables);
- :class:`AirportGame`: :math:`U(S) = \max_{i \in S} c_i`, closed-form values;
- :class:`KNNGame`: the KNN classification utility, evaluated faster than
  ``KNNUtility`` (exact values by ``knn_shapley``);
- :func:`load_mnist`: the 1,000 MNIST images after PCA that the KNN game and
  ``pydvl_comparison.py``'s throughput part use.
"""

from __future__ import annotations

import numpy as np

from shapley_research import Game


class CheapGame(Game):
    r"""A cheap vectorised game with closed-form Shapley values.

    .. math::

        U(S) = \sum_{i \in S} w_i + c\sqrt{|S|} + \sum_j a_j [T_j \subseteq S]

    (a linear part, a concave symmetric part and a few unanimity terms on
    three-player sets). ``evaluate`` costs one ``(m, N) @ (N, 2)`` product plus
    a gather of ``3K`` columns: about a nanosecond per mask cell.
    """

    def __init__(self, n_players: int, n_unanimity: int = 10, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.n_players = n_players
        self.weights = rng.normal(0.0, 1.0, n_players)
        self.concave = 5.0
        self.sets = np.stack([rng.choice(n_players, 3, replace=False) for _ in range(n_unanimity)])
        self.set_weights = rng.normal(0.0, 2.0, n_unanimity)
        self._linear = np.column_stack([self.weights, np.ones(n_players)])

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        scores = masks @ self._linear
        unanimity = masks[:, self.sets].all(axis=2) @ self.set_weights
        return scores[:, 0] + self.concave * np.sqrt(scores[:, 1]) + unanimity

    def shapley_values(self) -> np.ndarray:
        values = self.weights + self.concave * np.sqrt(self.n_players) / self.n_players
        for members, weight in zip(self.sets, self.set_weights):
            values[members] += weight / len(members)
        return values


class AirportGame(Game):
    r"""Airport game :math:`U(S) = \max_{i \in S} c_i`: the ``k``-th cheapest player pays
    :math:`\sum_{j \le k} (c_{(j)} - c_{(j-1)}) / (N - j + 1)` (Littlechild and Owen, 1973)."""

    def __init__(self, n_players: int, seed: int = 0):
        self.n_players = n_players
        self.costs = np.random.default_rng(seed).uniform(0.0, 1.0, n_players)

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        return np.where(masks, self.costs[None, :], 0.0).max(axis=1)

    def shapley_values(self) -> np.ndarray:
        order = np.argsort(self.costs, kind="stable")
        segments = np.diff(self.costs[order], prepend=0.0) / (self.n_players - np.arange(self.n_players))
        values = np.empty(self.n_players)
        values[order] = np.cumsum(segments)
        return values


class KNNGame(Game):
    """The KNN classification utility of :class:`shapley_research.KNNUtility`, evaluated faster.

    ``U(S)`` = mean over test points of (labels matching among the ``K`` nearest
    points of ``S``) / ``K``; ties in distance broken by index, as in
    ``knn_shapley``. Instead of scanning all ``N`` neighbours of every test
    point, it scans the nearest ``heads[0]`` first, then only the (coalition,
    test point) pairs that hold fewer than ``K`` members there further, and so
    on up to all ``N``.
    The benchmark checks that it equals ``KNNUtility`` on random coalitions.
    """

    def __init__(self, X_train, y_train, X_test, y_test, k: int, heads=(32, 256), small: int = 64):
        X_train, X_test = np.asarray(X_train, float), np.asarray(X_test, float)
        sq = (np.einsum("ij,ij->i", X_test, X_test)[:, None] - 2.0 * X_test @ X_train.T
              + np.einsum("ij,ij->i", X_train, X_train)[None, :])
        self.order = np.argsort(sq, axis=1, kind="stable")
        self.match = np.asarray(y_train)[self.order] == np.asarray(y_test)[:, None]
        self.k, self.n_players, self.n_test = int(k), X_train.shape[0], X_test.shape[0]
        self.heads = sorted({min(int(h), self.n_players) for h in heads} | {self.n_players})
        self.small = small
        # rank of every training point for every test point, with a sentinel player N (rank N, no match)
        self.rank = np.full((self.n_test, self.n_players + 1), self.n_players, dtype=np.int32)
        np.put_along_axis(self.rank, self.order, np.arange(self.n_players, dtype=np.int32)[None, :], axis=1)
        self.match_by_rank = np.hstack([self.match, np.zeros((self.n_test, 1), dtype=bool)])

    def _hits(self, ranked: np.ndarray, match: np.ndarray):
        """Matches among the first K members of each row of ``ranked``, and whether it holds K members."""
        seen = np.cumsum(ranked, axis=-1, dtype=np.int32)
        return (ranked & (seen <= self.k) & match).sum(axis=-1), seen[..., -1] >= self.k

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        sizes = masks.sum(axis=1)
        out = np.empty(masks.shape[0])
        few = sizes <= self.small
        if few.any():
            out[few] = self._evaluate_small(masks[few], sizes[few])
        if not few.all():
            out[~few] = self._evaluate_large(masks[~few])
        return out

    def _evaluate_small(self, masks: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Coalitions of at most ``small`` players: the ``K`` smallest ranks among their members."""
        width = max(int(sizes.max()), self.k)
        members = np.full((masks.shape[0], width), self.n_players, dtype=np.int64)  # padded with the sentinel
        rows, cols = np.nonzero(masks)
        members[rows, np.arange(rows.size) - np.concatenate([[0], np.cumsum(sizes)[:-1]])[rows]] = cols
        out = np.empty(masks.shape[0])
        step = max(1, 2**22 // (self.n_test * width))
        for lo in range(0, masks.shape[0], step):
            ranks = self.rank[:, members[lo:lo + step]]  # (n_test, rows, width)
            nearest = np.partition(ranks, self.k - 1, axis=2)[:, :, :self.k] if width > self.k else ranks
            hits = np.take_along_axis(self.match_by_rank, nearest.reshape(self.n_test, -1),
                                      axis=1).reshape(nearest.shape)
            out[lo:lo + step] = hits.sum(axis=(0, 2)) / (self.k * self.n_test)
        return out

    def _evaluate_large(self, masks: np.ndarray) -> np.ndarray:
        m, first = masks.shape[0], self.heads[0]
        out = np.empty(m)
        rows_per_chunk = max(1, 2**22 // (self.n_test * first))
        for lo in range(0, m, rows_per_chunk):
            block = masks[lo:lo + rows_per_chunk]
            hits, done = self._hits(block[:, self.order[:, :first]], self.match[None, :, :first])
            rows, tests = np.nonzero(~done)  # fewer than K members among the nearest `first`
            for head in self.heads[1:]:
                if rows.size == 0:
                    break
                step = max(1, 2**22 // head)
                still = []
                for start in range(0, rows.size, step):
                    r, t = rows[start:start + step], tests[start:start + step]
                    h, d = self._hits(block[r[:, None], self.order[t, :head]], self.match[t, :head])
                    hits[r, t] = h
                    still.append(~d)
                keep = np.concatenate(still)
                rows, tests = rows[keep], tests[keep]
            out[lo:lo + block.shape[0]] = hits.sum(axis=1) / (self.k * self.n_test)
        return out


def load_mnist(dim: int = 50):
    """1,000 MNIST training and 500 test images (pixels / 255, seed 0), projected on ``dim`` principal components.

    Parameters
    ----------
    dim : int
        Number of principal components, fitted on the training images.

    Returns
    -------
    tuple
        ``(Z_train, y_train, Z_test, y_test, explained)``, ``explained`` the share of the variance kept.
    """
    from shapley_research.datasets import load_mnist_subset, pca_features

    X_train, y_train, X_test, y_test = load_mnist_subset(1000, 500, seed=0, scale=True)
    Z_train, Z_test, explained = pca_features(X_train, X_test, dim)
    return Z_train, y_train, Z_test, y_test, explained

