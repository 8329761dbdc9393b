"""The diabetes data, the lambda grid and the utility games (the three penalty conventions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..._validation import check_float, check_int
from ...games import Game
from ...utilities.learners import RidgeUtility

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

#: How a coalition's penalty follows from the paper's lambda: main protocol first.
CONVENTIONS = ("fixed_alpha", "per_coalition", "no_intercept")


# --------------------------------------------------------------------------------------------
# Data and the regularisation grid
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RidgeData:
    """A standardised diabetes split: training points are the players.

    Attributes
    ----------
    X_train, y_train, X_test, y_test : ndarray
        Features standardised with the training mean and standard deviation;
        targets likewise (so ``y_train`` has mean 0 and variance 1).
    target_scale : float
        Standard deviation of the raw training target (disease progression
        units per standardised unit).
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    target_scale: float

    @property
    def n_players(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def empty_test_mse(self) -> float:
        """``M``: test MSE of the empty set's model, which predicts 0 (the training mean)."""
        return float(np.mean(self.y_test**2))


def load_standardised_diabetes(n_train: int = 100, seed: int = 0) -> RidgeData:
    """Diabetes: ``n_train`` random patients for training, the rest (``442 - n_train``) for testing.

    Features and target are standardised with the *training* statistics
    (mean, population standard deviation), so the penalty treats the ten
    features alike and errors are in units of the target's variance.
    """
    from ...datasets import load_diabetes_split

    n_train = check_int(n_train, "n_train", minimum=3)
    X_train, y_train, X_test, y_test = load_diabetes_split(n_train=n_train, seed=seed)
    mean, scale = X_train.mean(axis=0), X_train.std(axis=0)
    y_mean, y_scale = y_train.mean(), y_train.std()
    return RidgeData(X_train=(X_train - mean) / scale, y_train=(y_train - y_mean) / y_scale,
                     X_test=(X_test - mean) / scale, y_test=(y_test - y_mean) / y_scale,
                     target_scale=float(y_scale))


def lambda_grid(lambda_min: float, lambda_max: float, n_lambdas: int) -> np.ndarray:
    """``n_lambdas`` values of the paper's lambda, evenly spaced on a log scale (both ends included)."""
    lo = check_float(lambda_min, "lambda_min", minimum=0.0, strict=True)
    hi = check_float(lambda_max, "lambda_max", minimum=lo, strict=True)
    n = check_int(n_lambdas, "n_lambdas", minimum=3)
    return np.logspace(np.log10(lo), np.log10(hi), n)


def alpha_from_lambda(lam: float, n_points: int) -> float:
    r"""scikit-learn's ``alpha`` equivalent to the paper's lambda on a set of ``n_points`` points.

    :math:`\frac1n\|y - Xw - b\|^2 + \lambda\|w\|^2 = \frac1n\bigl(\|y - Xw - b\|^2 + n\lambda\|w\|^2\bigr)`,
    so ``Ridge(alpha = n * lambda)`` has the same minimiser.
    """
    return check_int(n_points, "n_points", minimum=1) * check_float(lam, "lam", minimum=0.0, strict=True)


# --------------------------------------------------------------------------------------------
# The per-coalition game (sensitivity convention)
# --------------------------------------------------------------------------------------------

class CoalitionScaledRidge(Game):
    r"""Ridge utility with the paper's objective on every coalition: ``alpha_S = |S| * lambda``.

    ``U(S) = -test MSE`` of the minimiser of :math:`\frac1{|S|}\sum_{i\in S}(x_i^\top w + b - y_i)^2 +
    \lambda\|w\|^2` (intercept unpenalised), i.e. ``Ridge(alpha=|S| lambda)`` fitted on ``S``; the
    empty set predicts 0 (as :class:`~shapley_research.RidgeUtility`'s constant convention does for
    standardised targets). Unlike ``RidgeUtility`` the penalty changes with the coalition's size, so
    prefixes of a permutation are solved directly: ``evaluate_prefixes`` accumulates the Gram matrices
    with one cumulative sum and solves all ``n`` prefix systems of a chunk of permutations in one
    batched ``np.linalg.solve`` (``q = d + 1`` unknowns each). The test MSE is the exact quadratic form
    :math:`\theta^\top Q\theta - 2c^\top\theta + \overline{y^2}` of the test moments.

    Parameters
    ----------
    X_train, y_train, X_test, y_test : ndarray
        Training points (the players) and the test set. Features are centred by the training mean
        internally (an exact reparametrisation, since the intercept is free).
    lam : float
        The paper's lambda, ``> 0``.
    batch_size : int
        Permutations solved together in ``evaluate_prefixes``.
    """

    exact_prefixes = True

    def __init__(self, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, lam: float,
                 batch_size: int = 32) -> None:
        X_train, X_test = np.asarray(X_train, dtype=float), np.asarray(X_test, dtype=float)
        self.y_train, self.y_test = np.asarray(y_train, dtype=float), np.asarray(y_test, dtype=float)
        self.lam = check_float(lam, "lam", minimum=0.0, strict=True)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.n_players = int(X_train.shape[0])
        mean = X_train.mean(axis=0)
        self._train = np.hstack([X_train - mean, np.ones((self.n_players, 1))])
        test = np.hstack([X_test - mean, np.ones((X_test.shape[0], 1))])
        self.q = self._train.shape[1]
        self._penalty = np.diag(np.r_[np.ones(self.q - 1), 0.0])
        n_test = test.shape[0]
        self._Q, self._c, self._y2 = test.T @ test / n_test, test.T @ self.y_test / n_test, float(
            np.mean(self.y_test**2))
        self._outer = (self._train[:, :, None] * self._train[:, None, :]).reshape(self.n_players, -1)
        self._rhs = self._train * self.y_train[:, None]

    def _scores(self, theta: np.ndarray) -> np.ndarray:
        """``-test MSE`` of parameters ``theta[..., q]``."""
        quad = np.einsum("...i,ij,...j->...", theta, self._Q, theta)
        return -(quad - 2.0 * theta @ self._c + self._y2)

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        sizes = masks.sum(axis=1)
        values = np.full(masks.shape[0], -self._y2)  # empty set: predict 0
        fit = sizes > 0
        if fit.any():
            weights = masks[fit].astype(float)
            gram = (weights @ self._outer).reshape(-1, self.q, self.q) + \
                (sizes[fit] * self.lam)[:, None, None] * self._penalty
            theta = np.linalg.solve(gram, (weights @ self._rhs)[..., None])[..., 0]
            values[fit] = self._scores(theta)
        return values

    def evaluate_prefixes(self, permutations: ArrayLike) -> np.ndarray:
        """Utilities (m, n) of all prefixes of each permutation (exact; batched solves)."""
        permutations = np.asarray(permutations)
        m, n = permutations.shape
        if n != self.n_players:
            raise ValueError(f"permutations must have {self.n_players} columns, got {n}.")
        values = np.empty((m, n))
        ridge = (np.arange(1, n + 1) * self.lam)[:, None, None] * self._penalty  # (n, q, q)
        for lo in range(0, m, self.batch_size):
            perms = permutations[lo:lo + self.batch_size]
            gram = np.cumsum(self._outer[perms], axis=1).reshape(perms.shape[0], n, self.q, self.q)
            rhs = np.cumsum(self._rhs[perms], axis=1)
            theta = np.linalg.solve(gram + ridge, rhs[..., None])[..., 0]
            values[lo:lo + perms.shape[0]] = self._scores(theta)
        return values

    def __repr__(self) -> str:
        return f"CoalitionScaledRidge(n_players={self.n_players}, lam={self.lam})"


def make_game(data: RidgeData, lam: float, convention: str = "fixed_alpha") -> Game:
    """The utility game at the paper's ``lam`` under a penalty ``convention`` (see :data:`CONVENTIONS`).

    ``"fixed_alpha"``: ``RidgeUtility(alpha = N * lam)`` with the negative test MSE.
    ``"per_coalition"``: :class:`CoalitionScaledRidge` (``alpha_S = |S| * lam``).
    ``"no_intercept"``: ``RidgeUtility(alpha = N * lam, fit_intercept=False)``.
    In all three the empty set predicts 0 (the training mean of the standardised target).
    """
    if convention in ("fixed_alpha", "no_intercept"):
        return RidgeUtility(data.X_train, data.y_train, data.X_test, data.y_test, "neg_mean_squared_error",
                            alpha=alpha_from_lambda(lam, data.n_players),
                            fit_intercept=convention == "fixed_alpha")
    if convention == "per_coalition":
        return CoalitionScaledRidge(data.X_train, data.y_train, data.X_test, data.y_test, lam)
    raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}.")

