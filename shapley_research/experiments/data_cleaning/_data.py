"""Data: two data sets that ship with scikit-learn, a train/test split, flipped training labels, the game."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_choice, check_float, check_int

if TYPE_CHECKING:
    from collections.abc import Sequence
    from sklearn.linear_model import LogisticRegression
    from ...utilities import ModelUtility

#: The data sets the experiment knows (both ship with scikit-learn: no download).
DATASETS = ("breast_cancer", "digits")


def load_dataset(name: str, digit_classes: Sequence[int] = (3, 8)) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of one data set, labels as ``0..K-1``.

    ``"breast_cancer"``: scikit-learn's Wisconsin diagnostic data (569 points,
    30 features, 2 classes). ``"digits"``: scikit-learn's 8x8 handwritten
    digits restricted to the two ``digit_classes`` (label 1 for the second),
    64 pixel features; two similar digits make a binary task a linear model
    does not solve perfectly.

    Returns
    -------
    X : ndarray of shape (n, d)
    y : int ndarray of shape (n,)
    """
    from sklearn.datasets import load_breast_cancer, load_digits

    check_choice(name, "name", DATASETS)
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        return X.astype(float), y.astype(int)
    first, second = (check_int(c, "digit_classes", minimum=0) for c in digit_classes)
    if first == second or max(first, second) > 9:
        raise ValueError(f"digit_classes must be two distinct digits 0-9, got {digit_classes!r}.")
    X, y = load_digits(return_X_y=True)
    keep = (y == first) | (y == second)
    return X[keep].astype(float), (y[keep] == second).astype(int)


def flip_labels(y: np.ndarray, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Flip ``round(fraction * N)`` labels, chosen uniformly, each to a different class drawn uniformly.

    Returns
    -------
    noisy : int array
        The labels after flipping.
    flipped : bool array
        Which points were flipped (the positives of the detection task).
    """
    fraction = check_float(fraction, "fraction", minimum=0.0, strict=True, maximum=1.0)
    y = np.asarray(y)
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError("flipping labels needs at least two classes.")
    n_flip = max(1, int(round(fraction * y.size)))
    chosen = rng.choice(y.size, size=n_flip, replace=False)
    # a shift of 1..K-1 positions in the class list moves every chosen label to another class, uniformly
    position = np.searchsorted(classes, y[chosen])
    shift = rng.integers(1, classes.size, size=n_flip)
    noisy = y.copy()
    noisy[chosen] = classes[(position + shift) % classes.size]
    flipped = np.zeros(y.size, dtype=bool)
    flipped[chosen] = True
    return noisy, flipped


def make_problem(name: str, n_train: int, n_test: int, flip_fraction: float, seed: int | None,
                 digit_classes: Sequence[int] = (3, 8)) -> dict[str, Any]:
    """One corrupted problem: a stratified train/test split, standardised features, flipped training labels.

    The scaler is fitted on the training features only. Labels are flipped
    after the split, so the test set stays clean.

    Returns
    -------
    dict
        ``name, X_train, y_train`` (noisy), ``y_clean`` (before flipping),
        ``flipped`` (bool), ``X_test, y_test``.
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    n_train = check_int(n_train, "n_train", minimum=4)
    n_test = check_int(n_test, "n_test", minimum=2)
    X, y = load_dataset(name, digit_classes)
    if n_train + n_test > y.size:
        raise ValueError(f"{name} has {y.size} points: n_train + n_test = {n_train + n_test} is too many.")
    rng = np.random.default_rng(seed)
    split_seed = int(rng.integers(2**31))
    X_train, X_test, y_clean, y_test = train_test_split(X, y, train_size=n_train, test_size=n_test,
                                                        stratify=y, random_state=split_seed)
    scaler = StandardScaler().fit(X_train)
    y_train, flipped = flip_labels(y_clean, flip_fraction, rng)
    return {"name": name, "X_train": scaler.transform(X_train), "y_train": y_train, "y_clean": y_clean,
            "flipped": flipped, "X_test": scaler.transform(X_test), "y_test": y_test}


def make_model(logistic_C: float = 1.0, max_iter: int = 1000) -> LogisticRegression:
    """The experiment's model: scikit-learn's L2 logistic regression."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=logistic_C, max_iter=max_iter)


def make_game(problem: dict[str, Any], logistic_C: float = 1.0, max_iter: int = 1000) -> ModelUtility:
    """``ModelUtility(LogisticRegression(...), ..., metric="accuracy", fast=True)`` on ``problem``.

    ``fast=True`` trains the coalitions with the package's batched logistic
    regression learner (one call trains a whole batch of coalitions); that
    game has no ``evaluate_prefixes`` unless ``warm_prefixes=True``. It is the
    route ``fast="auto"`` took on every configuration with committed results
    (data_cleaning's and mlp_cleaning's paper and quick profiles: binary
    tasks, 30 to 200 points, 30 or 64 features, predicted 4.7x to 30x faster
    batched), pinned so that no result depends on ``ModelUtility``'s default or
    on a machine's calibration of the cost model that ``"auto"`` consults.
    """
    from ... import ModelUtility

    return ModelUtility(make_model(logistic_C, max_iter), problem["X_train"], problem["y_train"],
                        problem["X_test"], problem["y_test"], metric="accuracy", fast=True)
