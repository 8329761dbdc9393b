"""The game: test accuracy of a nearest-centroid classifier, with an exact one-pass prefix path.

Also the prefix cache, the replay of compressive sampling's permutations, the seeds and the MNIST game.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_int, check_permutations
from ...games import Game
from ...utilities import TargetInfo, check_dataset, constant_utilities, degenerate_rows

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from ...games import GameLike


class NearestCentroidUtility(Game):
    r"""Test accuracy of a nearest-centroid classifier trained on a coalition.

    The model of ``S`` predicts for a test point ``x`` the class ``k`` present
    in ``S`` whose mean :math:`\mu_k(S)` is closest in Euclidean distance,
    i.e. the largest score :math:`x^\top\mu_k - \|\mu_k\|^2/2`; this is
    ``sklearn.neighbors.NearestCentroid()`` (uniform priors). Coalitions with
    fewer than two classes are degenerate and follow the library's
    ``"constant"`` convention (:class:`~shapley_research.ModelUtility`, Notes): one class
    predicts that class (as the centroid rule would), the empty set predicts
    the most frequent training class.

    The model is incrementally trainable: adding a point of class ``c``
    changes only :math:`\mu_c`, hence only the score column of ``c``, so
    :meth:`evaluate_prefixes` values all ``N`` prefixes of a permutation in
    one pass of ``O(N d + N n_test K)`` work; it is exact (same values as
    :meth:`evaluate` on the prefix masks). A test point counts as correct when
    its true class's score is the largest (exact ties, which have probability
    zero on continuous features, count as correct).

    Parameters
    ----------
    X_train, y_train, X_test, y_test : arrays
        Training points (the players) and the fixed test set.
    batch_size : int, default 64
        Permutations processed together by :meth:`evaluate_prefixes`.

    Attributes
    ----------
    n_players : int
    n_prefix_evaluations : int
        Prefix utilities computed by :meth:`evaluate_prefixes` so far.
    """

    def __init__(self, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, *,
                 batch_size: int = 64) -> None:
        self.X_train, self.y_train, self.X_test, self.y_test = check_dataset(
            X_train, y_train, X_test, y_test, "classification")
        self.n_players = self.X_train.shape[0]
        self.targets = TargetInfo(self.y_train, self.y_test, "classification")
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self._test_t = np.ascontiguousarray(self.X_test.T)
        self.n_prefix_evaluations = 0

    def _scores(self, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Scores (m, K, n_test) of the centroid models; ``-inf`` for absent classes."""
        mu = sums / np.maximum(counts, 1.0)[..., None]
        scores = mu @ self._test_t - 0.5 * np.einsum("mkd,mkd->mk", mu, mu)[..., None]
        return np.where((counts > 0)[..., None], scores, -np.inf)

    def _accuracy(self, scores: np.ndarray) -> np.ndarray:
        index = self.targets.y_test_index
        true = np.take_along_axis(scores, np.maximum(index, 0)[None, None, :], axis=1)[:, 0]
        correct = (true >= scores.max(axis=1)) & (index >= 0)
        return correct.mean(axis=1)

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        info = self.targets
        counts = info.class_counts(masks)
        values = np.empty(masks.shape[0])
        degenerate = degenerate_rows(masks, info, 1, counts)
        if degenerate.any():
            values[degenerate] = constant_utilities(masks[degenerate], info, "accuracy", counts=counts[degenerate])
        rows = np.flatnonzero(~degenerate)
        members = [info.y_train_index == k for k in range(info.n_classes)]
        for lo in range(0, rows.size, self.batch_size):
            r = rows[lo:lo + self.batch_size]
            weights = masks[r].astype(float)
            sums = np.stack([weights[:, m] @ self.X_train[m] for m in members], axis=1)  # (b, K, d)
            values[r] = self._accuracy(self._scores(sums, counts[r]))
        return values

    def evaluate_prefixes(self, permutations: ArrayLike) -> np.ndarray:
        """Utilities (m, n) of all prefixes of each permutation, in one pass each (exact).

        Running class sums and counts give the one centroid that changes at
        each step; its new score row replaces the old one in the ``(B, K,
        n_test)`` score array, the true class's score is kept aside, and a test
        point is correct when that score is the maximum over classes.
        """
        n = self.n_players
        permutations = check_permutations(permutations, n)
        m = permutations.shape[0]
        info = self.targets
        K, d, n_test = info.n_classes, self.X_train.shape[1], len(self.y_test)
        labels, y_index = info.y_train_index, info.y_test_index
        values = np.empty((m, n))
        for lo in range(0, m, self.batch_size):
            perms = permutations[lo:lo + self.batch_size]
            b = perms.shape[0]
            rows = np.arange(b)
            sums = np.zeros((b, K, d))
            counts = np.zeros((b, K))
            scores = np.full((b, K, n_test), -np.inf)
            true_score = np.full((b, n_test), -np.inf)
            best = np.empty((b, n_test))
            for k in range(n):
                j = perms[:, k]
                c = labels[j]
                sums[rows, c] += self.X_train[j]
                counts[rows, c] += 1.0
                mu = sums[rows, c] / counts[rows, c][:, None]
                new = mu @ self._test_t
                new -= 0.5 * np.einsum("bd,bd->b", mu, mu)[:, None]
                scores[rows, c] = new
                np.copyto(true_score, new, where=y_index[None, :] == c[:, None])
                np.max(scores, axis=1, out=best)
                values[lo:lo + b, k] = np.count_nonzero(true_score >= best, axis=1)
        values /= n_test
        self.n_prefix_evaluations += m * n
        return values

    def __repr__(self) -> str:
        return (f"NearestCentroidUtility(n_players={self.n_players}, n_features={self.X_train.shape[1]}, "
                f"n_test={len(self.y_test)})")


class PrefixCache(Game):
    """Memoise a game's prefix utilities by permutation.

    Estimators called repeatedly with the same seed (growing budgets) draw the
    same leading permutations; with this wrapper each permutation is valued
    once. :meth:`prefill` computes a known list in one large batch.

    Attributes
    ----------
    hits, misses : int
        Permutations served from the cache and computed.
    """

    def __init__(self, game: GameLike) -> None:
        self.game = game
        self.n_players = int(game.n_players)
        self.hits = 0
        self.misses = 0
        self._store: dict[bytes, np.ndarray] = {}

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        return self.game.evaluate(masks)

    @staticmethod
    def _key(row: np.ndarray) -> bytes:
        return np.asarray(row, dtype=np.int32).tobytes()

    def evaluate_prefixes(self, permutations: ArrayLike) -> np.ndarray:
        """Prefix utilities (m, n), computing only permutations not seen before."""
        from ...games import evaluate_prefixes

        permutations = np.asarray(permutations)
        keys = [self._key(row) for row in permutations]
        missing = [i for i, key in enumerate(keys) if key not in self._store]
        if missing:
            new = evaluate_prefixes(self.game, permutations[missing])
            for i, row in zip(missing, new):
                self._store[keys[i]] = row
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        return np.stack([self._store[key] for key in keys]) if keys else np.empty((0, self.n_players))

    def prefill(self, permutations: ArrayLike) -> None:
        """Value ``permutations`` now, in one call of the wrapped game."""
        self.evaluate_prefixes(permutations)

    def clear(self) -> None:
        """Forget every stored permutation (the counters are kept)."""
        self._store.clear()


def compressive_permutations(seed: int, n_permutations: int, n_players: int, batch_size: int) -> np.ndarray:
    """The permutations ``compressive_shapley(seed=seed, batch_size=batch_size)`` draws, in order.

    The library's sampling loop draws batch ``b`` (``batch_size`` permutations,
    the last one possibly shorter) from its own stream of ``seed``; this
    replays those streams so that a :class:`PrefixCache` can be filled in one
    large batch. A mismatch would only cost time (cache misses), never change
    a result.
    """
    from ...estimators import batch_rng, random_permutations

    n_permutations = check_int(n_permutations, "n_permutations", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    sizes = [batch_size] * (n_permutations // batch_size)
    if n_permutations % batch_size:
        sizes.append(n_permutations % batch_size)
    return np.concatenate([random_permutations(batch_rng(seed, b), size, n_players)
                           for b, size in enumerate(sizes)])


def derive_seeds(seed: int, tag: str, count: int) -> list[int]:
    """``count`` independent integer seeds for the purpose ``tag``, all determined by ``seed``."""
    entropy = [check_int(seed, "seed", minimum=0)] + list(tag.encode())
    return [int(s) for s in np.random.SeedSequence(entropy).generate_state(check_int(count, "count", minimum=1),
                                                                           dtype=np.uint32)]


def load_mnist_game(n_train: int, n_test: int, n_components: int, seed: int,
                    batch_size: int = 64) -> tuple[NearestCentroidUtility, dict[str, Any]]:
    """The experiment's game on a class-balanced MNIST split (PCA features).

    Returns
    -------
    game : NearestCentroidUtility
    info : dict
        ``explained_variance`` of the PCA, ``labels`` of the training points,
        ``empty_utility`` and ``full_utility``.
    """
    from ...datasets import load_mnist_subset, pca_features

    X_train, y_train, X_test, y_test = load_mnist_subset(n_train, n_test, seed=seed, scale=True)
    Z_train, Z_test, explained = pca_features(X_train, X_test, n_components, seed=seed)
    game = NearestCentroidUtility(Z_train, y_train, Z_test, y_test, batch_size=batch_size)
    anchors = game.evaluate(np.vstack([np.zeros(game.n_players, bool), np.ones(game.n_players, bool)]))
    return game, {"explained_variance": explained, "labels": y_train,
                  "empty_utility": float(anchors[0]), "full_utility": float(anchors[1])}
