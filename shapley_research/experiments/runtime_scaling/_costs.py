"""Measured costs: CPU time of one utility evaluation (training + test loss) and of the influence work,
and the cost model that interpolates and extrapolates them (:class:`CostModel`)."""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ._data import concatenated_copies, subset_of_copies

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from numpy.typing import ArrayLike
    import pandas as pd
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from ...influence import LogisticObjective

LN2 = math.log(2.0)


# --------------------------------------------------------------------------------------------
# Measured costs
# --------------------------------------------------------------------------------------------

def cpu_time(fn: Callable[[], object], *, min_total: float = 0.2, max_repeats: int = 5) -> tuple[float, int]:
    """Median CPU time (``time.process_time``) of ``fn()``.

    ``fn`` runs at least once and is repeated until the CPU time spent reaches
    ``min_total`` seconds or it ran ``max_repeats`` times.

    Returns
    -------
    (seconds, repeats) : (float, int)
    """
    times = []
    while True:
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
        if sum(times) >= min_total or len(times) >= max_repeats:
            return float(np.median(times)), len(times)


def make_fit_model(learner: str, n_samples: int, *, epochs: int = 150, C: float = 1.0,
                   seed: int = 0) -> SGDClassifier | LogisticRegression:
    """An unfitted scikit-learn logistic regression for ``n_samples`` training points.

    ``"sgd"``: the paper's learner, ``SGDClassifier(loss="log_loss")`` for
    exactly ``epochs`` epochs (``tol=None``) with ``alpha = 1 / (C n)``, the
    L2 strength of ``LogisticRegression(C)`` written per sample.
    ``"lbfgs"``: ``LogisticRegression(C=C)`` (what a scikit-learn user fits).
    """
    from sklearn.linear_model import LogisticRegression, SGDClassifier

    if learner == "sgd":
        return SGDClassifier(loss="log_loss", penalty="l2", alpha=1.0 / (C * max(n_samples, 1)),
                             max_iter=epochs, tol=None, random_state=seed)
    if learner == "lbfgs":
        return LogisticRegression(C=C, max_iter=1000)
    raise ValueError(f"learner must be 'sgd' or 'lbfgs', got {learner!r}.")


def fit_and_score(model: SGDClassifier | LogisticRegression, X: ArrayLike, y: ArrayLike, X_test: ArrayLike,
                  y_test: ArrayLike) -> float:
    """Fit ``model`` on ``(X, y)`` and return the utility ``ln 2 - test log-loss``."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import log_loss

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    return LN2 - log_loss(y_test, model.predict_proba(X_test), labels=model.classes_)


def measure_fit_costs(X: np.ndarray, y: np.ndarray, X_test: ArrayLike, y_test: ArrayLike, sizes: Iterable[int],
                      learners: Sequence[str] = ("sgd",), *, epochs: int = 150, C: float = 1.0, seed: int = 0,
                      min_total: float = 0.2, max_repeats: int = 5,
                      progress: Callable[..., Iterable[Any]] | None = None) -> pd.DataFrame:
    """CPU seconds of one utility evaluation (train on a subset, test loss) by subset size.

    For each learner and size ``s`` a subset of size ``s`` of the training set
    grown to ``2 s`` points by concatenated copies is drawn
    (:func:`subset_of_copies`, seeded), and the median CPU time of fitting a
    fresh model on it and scoring it is taken (:func:`cpu_time`).

    Returns
    -------
    pandas.DataFrame
        Columns ``learner``, ``size``, ``cpu_seconds``, ``repeats``.
    """
    import pandas as pd

    tasks = [(learner, int(s)) for learner in learners for s in sizes]
    for learner in learners:  # warm up (imports, first-call set-up) outside the timings
        idx = subset_of_copies(np.random.default_rng(seed), X.shape[0], 10)
        fit_and_score(make_fit_model(learner, 10, epochs=epochs, C=C, seed=seed), X[idx], y[idx], X_test, y_test)
    rows = []
    for learner, s in (progress(tasks, desc="fit costs") if progress else tasks):
        rng = np.random.default_rng([seed, s])
        idx = subset_of_copies(rng, X.shape[0], s)
        Xs, ys = X[idx], y[idx]
        # cpu_time calls the lambda at once, in this iteration: the loop variables it reads are current
        seconds, repeats = cpu_time(lambda: fit_and_score(make_fit_model(learner, s, epochs=epochs,  # noqa: B023
                                                                         C=C, seed=seed),
                                                          Xs, ys, X_test, y_test),  # noqa: B023
                                    min_total=min_total, max_repeats=max_repeats)
        rows.append({"learner": learner, "size": s, "cpu_seconds": seconds, "repeats": repeats})
    return pd.DataFrame(rows)


def stratum_layout(n: int, k: int) -> tuple[Literal["add", "remove"], int, int]:
    """How all-S influence samples coalition size ``k`` (as :func:`shapley_research.all_s_influence` does).

    Returns ``(direction, base_size, n_covered)``: base sets of size ``k``
    whose ``n - k`` outsiders are *added* by influence, or of size ``k + 1``
    whose members are *removed*, whichever covers more players per fit.
    """
    if not 1 <= k <= n - 1:
        raise ValueError(f"k must be in 1..{n - 1}, got {k}.")
    if n - k >= k + 1:
        return "add", k, n - k
    return "remove", k + 1, k + 1


def all_s_fit_weights(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Strata ``k = 1..n-1``, their base-set sizes and the share of all-S fits each takes.

    Giving every player the same number of observations in every stratum
    takes :math:`\propto 1/c_k` fits in stratum ``k``, with
    :math:`c_k = \max(n-k, k+1)/n` the share of players a fit covers.

    Returns
    -------
    k, base_size, weight : arrays of length ``n - 1``
        ``weight`` sums to 1.
    """
    k = np.arange(1, n, dtype=np.int64)
    add = n - k >= k + 1
    base = np.where(add, k, k + 1)
    coverage = np.where(add, n - k, k + 1) / n
    inverse = 1.0 / coverage
    return k, base, inverse / inverse.sum()


def influence_objective(X: np.ndarray, y: np.ndarray, X_test: ArrayLike, y_test: ArrayLike, n: int, *,
                        C: float = 1.0) -> LogisticObjective:
    """:class:`~shapley_research.LogisticObjective` of the base set grown to ``n`` points by copies."""
    from shapley_research import LogisticObjective

    rows = concatenated_copies(X.shape[0], n)
    return LogisticObjective(X[rows], y[rows], X_test, y_test, C=C)


def largest_s_influence_work(obj: LogisticObjective, theta: np.ndarray) -> np.ndarray:
    """The influence part of :func:`shapley_research.largest_s_influence` (its defaults) after the fit.

    Hessian of the whole objective at ``theta``, its inverse, the removal
    influence of every point and the first-order utility change: what the
    method adds to one training on all ``N`` points. Returns the ``N``
    marginal-contribution estimates.
    """
    everyone = np.arange(obj.n_train)
    H_inv = obj.inverse_hessian(obj.hessian(theta, everyone))
    steps = obj.newton_steps(theta, everyone, everyone, direction="remove", approximation="influence", H_inv=H_inv)
    return -(steps @ obj.utility_gradient(theta))


def all_s_fit_work(obj: LogisticObjective, theta: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """The influence part of one all-S fit in stratum ``k`` (defaults of :func:`shapley_research.all_s_influence`).

    A random base set laid out as :func:`stratum_layout` says, its Hessian and
    inverse, one Newton step for each covered player and the test utility at
    each updated parameter vector. Returns the covered players' utilities.
    """
    n = obj.n_train
    direction, base_size, _ = stratum_layout(n, k)
    base = np.sort(rng.choice(n, size=base_size, replace=False))
    players = np.setdiff1d(np.arange(n), base, assume_unique=True) if direction == "add" else base
    H_inv = obj.inverse_hessian(obj.hessian(theta, base))
    steps = obj.newton_steps(theta, base, players, direction=direction, approximation="newton", H_inv=H_inv)
    return obj.utilities(theta[None, :] + steps)  # type: ignore[return-value]  # an array for 2-D thetas


def _reference_parameters(X, y, C: float) -> np.ndarray:
    """Parameters ``(w, b)`` of scikit-learn's ``LogisticRegression(C)`` on the base set, in
    :class:`~shapley_research.LogisticObjective`'s layout (binary: positive class = larger label)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(C=C, max_iter=1000).fit(X, y)
    if model.classes_.size != 2:
        raise ValueError("the influence timings need a two-class base set.")
    return np.concatenate([model.coef_[0], model.intercept_])


def measure_influence_costs(X: np.ndarray, y: np.ndarray, X_test: ArrayLike, y_test: ArrayLike, ns: Iterable[int], *,
                            C: float = 1.0, seed: int = 0, n_strata: int = 3, min_total: float = 0.2,
                            max_repeats: int = 3, progress: Callable[..., Iterable[Any]] | None = None) -> pd.DataFrame:
    """CPU seconds of the influence computations, by training-set size ``N``.

    ``largest_s_influence``: :func:`largest_s_influence_work` on all ``N``
    points. ``all_s_influence_per_fit``: the mean of :func:`all_s_fit_work`
    over ``n_strata`` strata drawn with the all-S fit shares
    (:func:`all_s_fit_weights`). Neither includes the model training, which
    is costed with the learner (:func:`measure_fit_costs`); the parameters are
    scikit-learn's L2 logistic regression fitted once on the base set (the
    cost of the linear algebra does not depend on their value).

    Returns
    -------
    pandas.DataFrame
        Columns ``component``, ``n``, ``cpu_seconds``, ``repeats``.
    """
    import pandas as pd

    theta = _reference_parameters(X, y, C)
    rows = []
    for n in (progress(list(ns), desc="influence costs") if progress else ns):
        n = int(n)
        obj = influence_objective(X, y, X_test, y_test, n, C=C)
        # cpu_time calls each lambda at once, in this iteration: the loop variables it reads are current
        seconds, repeats = cpu_time(lambda: largest_s_influence_work(obj, theta), min_total=min_total,  # noqa: B023
                                    max_repeats=max_repeats)
        rows.append({"component": "largest_s_influence", "n": n, "cpu_seconds": seconds, "repeats": repeats})
        rng = np.random.default_rng([seed, n])
        k, _, weight = all_s_fit_weights(n)
        strata = rng.choice(k, size=n_strata, p=weight)
        # mypy cannot infer a lambda with a default argument
        per_stratum = [cpu_time(lambda kk=int(kk): all_s_fit_work(  # type: ignore[misc]
                                    obj, theta, kk, np.random.default_rng([seed, n, kk])),  # noqa: B023
                                min_total=0.0, max_repeats=1)[0] for kk in strata]
        rows.append({"component": "all_s_influence_per_fit", "n": n, "cpu_seconds": float(np.mean(per_stratum)),
                     "repeats": n_strata})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class CostModel:
    """A measured cost curve ``cost(x)``: log-log interpolation, affine extrapolation.

    Inside the measured range the cost is interpolated linearly in
    ``(log x, log cost)``. Beyond the largest measured ``x`` it grows
    linearly, ``cost(x_max) + slope * (x - x_max)``, with ``slope`` the
    least-squares slope of cost against ``x`` over the ``n_tail`` largest
    measurements (at least 0): the algorithms timed here cost an affine
    function of the size (SGD: ``epochs * s * d``; influence:
    ``p^3 + N p^2``). Below the smallest measured ``x`` the cost is the
    smallest measurement's (a fixed overhead dominates there).
    """

    x: np.ndarray
    cost: np.ndarray
    slope: float

    @classmethod
    def fit(cls, x: ArrayLike, cost: ArrayLike, n_tail: int = 3) -> "CostModel":
        x = np.asarray(x, dtype=float)
        cost = np.asarray(cost, dtype=float)
        if x.ndim != 1 or x.shape != cost.shape or x.size < 2:
            raise ValueError("x and cost must be 1-D arrays of the same length, at least 2.")
        if not (np.isfinite(x).all() and np.isfinite(cost).all() and (x > 0).all() and (cost > 0).all()):
            raise ValueError("x and cost must be finite and positive.")
        order = np.argsort(x)
        x, cost = x[order], cost[order]
        if np.unique(x).size != x.size:
            raise ValueError("x must not repeat (take the median of repeated measurements first).")
        tail = slice(max(0, x.size - max(2, n_tail)), None)
        slope = max(float(np.polyfit(x[tail], cost[tail], 1)[0]), 0.0)
        return cls(x=x, cost=cost, slope=slope)

    @property
    def max_measured(self) -> float:
        return float(self.x[-1])

    def __call__(self, x: ArrayLike) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        logx = np.log(np.maximum(x, 1e-300))
        inside = np.exp(np.interp(logx, np.log(self.x), np.log(self.cost)))
        beyond = self.cost[-1] + self.slope * (x - self.x[-1])
        return np.where(x > self.x[-1], beyond, inside)
