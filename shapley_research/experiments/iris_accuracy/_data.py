"""The iris data and the game: the refitting methods' utility, the influence module's, and their check."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ... import LogisticObjective, ModelUtility, as_game

if TYPE_CHECKING:
    from collections.abc import Sequence
    from numpy.typing import ArrayLike
    from ...games import FunctionGame, GameLike

LN2 = math.log(2.0)


# ------------------------------------------------------------------------------------- data and game

FLOWERS_PER_CLASS = 50  # scikit-learn's iris: 50 flowers of each class
EXACT_MAX_PLAYERS = 20  # the exact reference's table of 2^N utilities (coalition_utilities' default limit)


def size_problems(n_train: int, n_test: int, reference: str = "permutation", prefix: str = "") -> list[str]:
    """One line per split size the data cannot give (and a training set too large for an exact reference).

    ``prefix`` goes before every parameter name (``"experiment."`` for the configuration's keys).
    """
    problems = [f"{prefix}{name}={size}: expected an even number >= 2 (half per class)."
                for name, size in (("n_train", n_train), ("n_test", n_test)) if size < 2 or size % 2]
    if n_train + n_test > 2 * FLOWERS_PER_CLASS:
        problems.append(f"{prefix}n_train + {prefix}n_test = {n_train + n_test}: expected at most the "
                        f"{2 * FLOWERS_PER_CLASS} flowers of two classes.")
    if reference == "exact" and n_train > EXACT_MAX_PLAYERS:
        problems.append(f"{prefix}n_train={n_train}: the exact reference enumerates 2^n_train coalitions, at most "
                        f"n_train = {EXACT_MAX_PLAYERS}; set {prefix}reference=permutation for more players.")
    return problems


def load_iris_pair(classes: Sequence[int] = (1, 2), n_train: int = 16, n_test: int = 40, seed: int = 0,
                   standardize: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two iris classes, split into a class-balanced training set and a test set.

    Parameters
    ----------
    classes : pair of int
        Iris class codes (0 setosa, 1 versicolor, 2 virginica).
    n_train, n_test : int
        Even sizes; each class gets half of each (so every class is in both).
    seed : int
        Seed of the split (``numpy.random.default_rng``).
    standardize : bool
        Centre and scale the features with the training set's mean and
        standard deviation (both sets).

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarrays
        Float features, integer labels (the original class codes). Training
        points are shuffled, so player indices carry no class order.
    """
    from sklearn.datasets import load_iris

    classes = tuple(int(c) for c in classes)
    if len(classes) != 2 or len(set(classes)) != 2 or not all(0 <= c <= 2 for c in classes):
        raise ValueError(f"classes must be two distinct iris class codes in 0..2, got {classes!r}.")
    problems = size_problems(n_train, n_test)
    if problems:
        raise ValueError("\n".join(problems))
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(seed)
    train_parts: list[np.ndarray] = []
    test_parts: list[np.ndarray] = []
    for c in classes:
        rows = rng.permutation(np.flatnonzero(y == c))
        train_parts.append(rows[:n_train // 2])
        test_parts.append(rows[n_train // 2:(n_train + n_test) // 2])
    train = rng.permutation(np.concatenate(train_parts))
    test = np.concatenate(test_parts)
    X_train, X_test = X[train].astype(float), X[test].astype(float)
    if standardize:
        mean, std = X_train.mean(axis=0), X_train.std(axis=0)
        std = np.where(std > 0, std, 1.0)
        X_train, X_test = (X_train - mean) / std, (X_test - mean) / std
    return X_train, y[train], X_test, y[test]


def _check_binary(y_train) -> None:
    if np.unique(y_train).size != 2:
        raise ValueError("this experiment's utility convention is exact for two classes only: with K >= 3 "
                         "ModelUtility fits coalitions that miss a class while the influence module gives "
                         f"them theta = 0; got classes {np.unique(y_train).tolist()}.")


def make_game(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, C: float = 1.0,
              tol: float = 1e-8) -> FunctionGame:
    """The game every model-refitting method values: ``ln 2 - test log-loss``, 0 when degenerate.

    ``ModelUtility(LogisticRegression(C, tol))`` routed to the batched
    :class:`~shapley_research.LogisticRegressionUtility` (exact refits; the
    learner's approximate one-pass prefix path is *not* used, so permutation
    sampling refits every prefix), degenerate coalitions (empty, one class)
    at ``-log 2``, shifted by ``ln 2`` so that :math:`U(\\emptyset) = 0`.
    """
    from sklearn.linear_model import LogisticRegression

    _check_binary(y_train)
    base = ModelUtility(LogisticRegression(C=C, tol=tol), X_train, y_train, X_test, y_test,
                        metric="neg_log_loss", degenerate="default", default_utility=-LN2, fast=True)
    return as_game(lambda masks: base.evaluate(masks) + LN2, base.n_players, vectorized=True)


def make_objective(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike,
                   C: float = 1.0) -> LogisticObjective:
    """The influence module's model of the same game (``utility="neg_log_loss"``)."""
    _check_binary(y_train)
    return LogisticObjective(X_train, y_train, X_test, y_test, C=C, utility="neg_log_loss")


def influence_utilities(objective: LogisticObjective, masks: ArrayLike) -> np.ndarray:
    """``U(S) - U_0`` as the influence module defines ``U``: exact fit, or :math:`U_0` for a subset missing a class.

    Subtracting :math:`U_0 = -\\log 2` puts it on :func:`make_game`'s scale (:math:`U(\\emptyset) = 0`).
    """
    masks = np.atleast_2d(np.asarray(masks, dtype=bool))
    out = np.empty(masks.shape[0])
    for row, mask in enumerate(masks):
        if objective.degenerate(mask):
            out[row] = objective.degenerate_utility
        else:
            out[row] = objective.utility(objective.fit(mask))
    return out - objective.degenerate_utility


def degenerate_and_random_masks(n_players: int, y_train: ArrayLike, n_random: int, seed: int = 0) -> np.ndarray:
    """Coalitions that exercise every convention: empty, singletons, one-class sets, full set, random ones.

    Returns
    -------
    ndarray of bool, shape (m, n_players)
        The empty set, each singleton, each class alone, the full set, then
        ``n_random`` coalitions of uniformly random size (1..N) and members.
    """
    y_train = np.asarray(y_train)
    rows = [np.zeros(n_players, dtype=bool)]
    rows += list(np.eye(n_players, dtype=bool))
    rows += [y_train == c for c in np.unique(y_train)]
    rows.append(np.ones(n_players, dtype=bool))
    rng = np.random.default_rng(seed)
    for _ in range(n_random):
        mask = np.zeros(n_players, dtype=bool)
        mask[rng.choice(n_players, size=rng.integers(1, n_players + 1), replace=False)] = True
        rows.append(mask)
    return np.array(rows)


def utility_mismatch(game: GameLike, objective: LogisticObjective, masks: ArrayLike) -> float:
    """Largest ``|U_game(S) - U_influence(S)|`` over ``masks``: 0 (to solver tolerance) if both value one ``U``."""
    masks = np.atleast_2d(np.asarray(masks, dtype=bool))
    return float(np.max(np.abs(game.evaluate(masks) - influence_utilities(objective, masks))))
