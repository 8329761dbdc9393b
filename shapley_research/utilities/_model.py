r"""Model utilities: the value of a training subset is the test score of a model trained on it.

For a learning algorithm :math:`A` and a fixed test set, the utility of a
coalition :math:`S` of training points is

.. math:: U(S) = \text{metric}\bigl(A(S), X_{\text{test}}, y_{\text{test}}\bigr),

the paper's :math:`U(S) = U_m(A(S))` (Section 4.1). :class:`ModelUtility`
fits any scikit-learn style estimator once per coalition (a fresh
``sklearn.base.clone`` each time); :mod:`shapley_research.utilities.learners` trains
many coalitions at once for L2 logistic regression and ridge regression.

The metrics and the convention for degenerate coalitions are documented in
:class:`ModelUtility` (Notes), which the batched learners share.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Callable

import numpy as np

# The data checks, metrics, TargetInfo, ConstantPredictor and the degenerate-coalition helpers live in
# _model_data, below this module and the batched learners; their names are re-exported here.
from ._model_data import (CLASSIFICATION_METRICS, DEGENERATE_MODES, LOG_EPS, LOG_ONE_MINUS_EPS,  # noqa: F401
                          REGRESSION_METRICS, ConstantPredictor, TargetInfo, check_dataset,
                          check_degenerate_options, clipped_mean_log_probability, constant_utilities,
                          degenerate_rows, degenerate_utilities, r2_from_sums, regression_scores,
                          resolve_metric)
from .._threads import thread_controller
from .._validation import check_bool, check_choice, check_int, check_n_jobs, check_real_scalar
from ..games._base import Game
from .learners import learner_for, route_decision

__all__ = ["ModelUtility", "ConstantPredictor", "CLASSIFICATION_METRICS", "REGRESSION_METRICS"]


# --------------------------------------------------------------------------------------------
# Memoisation
# --------------------------------------------------------------------------------------------

class CoalitionCache:
    """Bounded least-recently-used map from coalitions to utilities.

    Keys are the packed bits of a mask (``N/8`` bytes), so a cache of
    ``maxsize`` entries costs about ``maxsize * (N/8 + 100)`` bytes.
    """

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self._store: OrderedDict[bytes, float] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._store)

    def evaluate(self, masks: np.ndarray, compute: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """Utilities of ``masks``, computing only coalitions not seen before (once each)."""
        packed = np.packbits(masks, axis=1)
        keys = [row.tobytes() for row in packed]
        values = np.empty(len(keys))
        missing: dict[bytes, list[int]] = {}
        for row, key in enumerate(keys):
            value = self._store.get(key)
            if value is None:
                missing.setdefault(key, []).append(row)
            else:
                self._store.move_to_end(key)
                values[row] = value
                self.hits += 1
        if missing:
            first_rows = [rows[0] for rows in missing.values()]
            computed = np.asarray(compute(masks[first_rows]), dtype=float)
            for (key, rows), value in zip(missing.items(), computed):
                values[rows] = value
                self.misses += 1
                self.hits += len(rows) - 1
                self._store[key] = float(value)
            while len(self._store) > self.maxsize:
                self._store.popitem(last=False)
        return values

    def clear(self) -> None:
        self._store.clear()
        self.hits = self.misses = 0


# ModelUtility
# --------------------------------------------------------------------------------------------

def _is_classifier(model) -> bool:
    from sklearn.base import is_classifier

    try:
        return bool(is_classifier(model))
    except Exception:  # noqa: BLE001 - objects outside sklearn's tag system
        return getattr(model, "_estimator_type", None) == "classifier"


def _fresh_copy(model):
    """``sklearn.base.clone`` for estimators, ``copy.deepcopy`` for other fit/predict objects."""
    if hasattr(model, "get_params"):
        from sklearn.base import clone

        return clone(model)
    return copy.deepcopy(model)


class ModelUtility(Game):
    r"""Utility of a training subset: the test score of ``model`` fitted on it.

    .. math:: U(S) = \text{metric}(\text{clone}(\text{model}).\text{fit}(X_S, y_S),\ X_{\text{test}}, y_{\text{test}})

    Players are the training points (``n_players = len(X_train)``). Every
    non-degenerate coalition gets a fresh ``sklearn.base.clone(model)`` (or a
    deep copy for non-scikit-learn objects with ``fit``/``predict``), fitted on
    the rows of ``S`` and scored on the fixed test set. The metrics and the
    convention for degenerate coalitions (empty, a single class, fewer than
    ``min_samples`` points) are in the Notes below.

    Parameters
    ----------
    model : estimator
        Any object with ``fit(X, y)`` and ``predict(X)`` (and ``predict_proba``
        for ``metric="neg_log_loss"``). Never modified.
    X_train, y_train : arrays of shape (N, d) and (N,)
        The players. Features must be finite; labels may be any sortable values.
    X_test, y_test : arrays of shape (m, d) and (m,)
        The fixed test set.
    metric : str or callable, default "accuracy"
        ``"accuracy"``, ``"neg_log_loss"``, ``"neg_mean_squared_error"``
        (``"neg_mse"``), ``"neg_mean_absolute_error"`` (``"neg_mae"``), ``"r2"``,
        or ``scorer(model, X_test, y_test) -> float``.
    task : {"auto", "classification", "regression"}, default "auto"
        With a string metric the task follows from it; with a callable it is
        ``"classification"`` for scikit-learn classifiers, else ``"regression"``.
        It decides what counts as degenerate and what the constant model predicts.
    degenerate : {"constant", "default", "raise"}, default "constant"
        Utility of coalitions no model can be fitted on (Notes).
    default_utility : float, optional
        The utility of degenerate coalitions with ``degenerate="default"``.
    min_samples : int, default 1
        Coalitions with fewer points are degenerate (the empty set always is).
    cache : bool, default False
        Memoise utilities by coalition (packed mask bytes, least recently used
        dropped beyond ``cache_size``): repeated coalitions are fitted once.
    cache_size : int, default 65536
        Most coalitions kept in the cache.
    fast : {False, "auto", True}, default False
        By default the estimator itself is cloned and fitted on every coalition,
        so the utility is exactly that estimator's. Opt in to route to a batched learner of
        :mod:`shapley_research.utilities.learners`, which
        trains a whole batch of coalitions at once: ``LogisticRegression``
        (L2 penalty, ``dual=False``, no ``class_weight``, finite ``C``, any
        solver but ``liblinear``) to :class:`~shapley_research.utilities.learners.LogisticRegressionUtility`
        and ``Ridge`` (scalar ``alpha > 0``, ``positive=False``) to
        :class:`~shapley_research.utilities.learners.RidgeUtility`, with a string metric of
        the model's task. They minimise the same objective as scikit-learn:
        ridge agrees with ``Ridge`` to rounding (about 1e-14 relative); logistic
        regression is solved to ``min(model.tol, 1e-6)`` (tighter than the
        default ``tol=1e-4`` of ``LogisticRegression``), so coefficients agree
        with a tightly converged scikit-learn fit to about 1e-5 relative and
        probabilities to about 1e-4, and differ from a default fit by that
        solver's own stopping error (accuracy can then differ on test points
        lying that close to a decision boundary). ``"auto"`` routes a supported model
        (exact type, supported parameters) only where it is predicted to be faster:
        the batched learner's predicted seconds per coalition must be at least 1.5
        times below one scikit-learn fit's, by a formula in the shapes, solvers and
        iterations calibrated on measured timings
        (:mod:`shapley_research.utilities.learners._cost`); iris goes batched,
        10-class digits (300 points, 64 features, L-BFGS) per subset.
        ``warm_prefixes=True`` routes any supported ``LogisticRegression``.
        ``True`` forces the batched learner (raises if the model is not
        supported), ``False`` always fits the estimator itself. ``route_`` states
        the route taken and why (``str(game.route_)``). A routed ridge
        game also gets the learner's exact one-pass ``evaluate_prefixes``; the
        logistic learner's one-pass path is an approximation of refitting, so it
        is not exposed here (use ``game.learner_.evaluate_prefixes`` knowingly),
        unless ``warm_prefixes=True``.
    warm_prefixes : bool, default False
        For a model routed to the logistic learner: give the game the learner's
        *exact* one-pass path (``prefix_path="exact"``), so that
        ``permutation_shapley`` fits the prefixes of each permutation one after
        another, each warm-started from the previous prefix's solution and
        solved to the same tolerance as a refit. The utilities agree with
        refitting every prefix to that tolerance; it pays off for larger
        models (on 1,000 MNIST images it is about 1.7x as fast as batched
        refits) and not on tiny ones (on iris batched refits are faster; see
        ``benchmarks/results/utility_throughput.txt``). Needs a
        ``LogisticRegression`` routed by ``fast``; a ``ValueError`` otherwise.
    blas_threads : int or None, default 1
        BLAS threads while fitting one coalition at a time (tiny fits run far
        faster on one thread); ``None`` leaves the thread pools alone. Ignored
        by the batched learners, whose large products use the default pools.

    n_jobs : int or None, default None
        Fit the coalitions of one ``evaluate`` call in parallel through joblib
        (``None`` or 1: in this process; -1: all cores; pick a backend, e.g.
        Dask, with ``joblib.parallel_config``). The utilities do not depend on
        it. For the sampling estimators, their own ``n_jobs`` (parallel
        batches) is usually the better lever; do not use both.

    Attributes
    ----------
    n_players : int
    n_fits : int
        Models fitted so far (non-degenerate coalitions actually trained).
    learner_ : Game or None
        The batched learner when the model was routed to one, else None.
    cache_ : CoalitionCache or None
        With ``hits`` and ``misses`` counters.

    Notes
    -----
    **Metrics** (higher is better; all finite):

    ``"accuracy"``
        :math:`\frac1m\sum_j 1[\hat y_j = y_j]`.
    ``"neg_log_loss"``
        :math:`\frac1m\sum_j \log \operatorname{clip}(p_{j, y_j}, \epsilon, 1-\epsilon)`
        with :math:`\epsilon` the float64 machine epsilon, exactly as
        ``-sklearn.metrics.log_loss``. A class the model never saw gets
        probability 0, i.e. :math:`\log\epsilon \approx -36.04`.
    ``"neg_mean_squared_error"`` (``"neg_mse"``), ``"neg_mean_absolute_error"`` (``"neg_mae"``)
        :math:`-\frac1m\sum_j (\hat y_j - y_j)^2` and :math:`-\frac1m\sum_j |\hat y_j - y_j|`.
    ``"r2"``
        :math:`1 - \mathrm{SS}_{res}/\mathrm{SS}_{tot}`, as ``sklearn.metrics.r2_score``
        (1 if both are 0, 0 if only :math:`\mathrm{SS}_{tot}` is).
    a callable ``scorer(model, X_test, y_test) -> float``
        e.g. an ``sklearn.metrics.get_scorer`` object (:class:`ModelUtility` only).

    **Degenerate coalitions.** A coalition is *degenerate* when a model cannot
    be fitted on it: the empty set, any coalition with fewer than
    ``min_samples`` points, and for classification any coalition holding fewer
    than two classes. Degenerate
    coalitions are never passed to the estimator (so they never crash and never
    hang); their utility follows ``degenerate``:

    ``"constant"`` (default)
        Score the constant model of :class:`ConstantPredictor`, the model that
        knows only the labels of ``S``: for classification it predicts the class
        frequencies of ``S`` as probabilities and the most frequent class of ``S``
        as label (ties to the smallest label), like
        ``DummyClassifier(strategy="prior")``; for the empty set it uses the class
        frequencies of the whole training set (the prior). For regression it
        predicts the mean of the targets of ``S``, and ``0`` for the empty set.
    ``"default"``
        Every degenerate coalition gets the number ``default_utility``.
    ``"raise"``
        Raise a ``ValueError`` naming the coalition.

    Errors raised while fitting a *non-degenerate* coalition are real errors and
    propagate (with a note giving the coalition size); raise ``min_samples`` for
    models that need more points (e.g. ``KNeighborsClassifier(n_neighbors=5)``).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from shapley_research import ModelUtility
    >>> X, y = load_iris(return_X_y=True)
    >>> game = ModelUtility(LogisticRegression(), X[::2], y[::2], X[1::2], y[1::2], fast=False)
    >>> round(game(list(range(75))), 3)   # U(D): accuracy of a model trained on all 75 points
    0.96
    """

    def __init__(self, model, X_train, y_train, X_test, y_test, metric="accuracy", *,
                 task: str = "auto", degenerate: str = "constant", default_utility: float | None = None,
                 min_samples: int = 1, cache: bool = False, cache_size: int = 65536, fast=False,
                 blas_threads: int | None = 1, n_jobs: int | None = None, warm_prefixes: bool = False):
        if isinstance(model, type):
            raise TypeError(f"model must be an estimator instance, got the class {model.__name__}; "
                            f"pass {model.__name__}() instead.")
        if not (hasattr(model, "fit") and hasattr(model, "predict")):
            raise TypeError(f"model must be an estimator with fit and predict methods, got {type(model).__name__}.")
        self.model = model
        self.metric, metric_task = resolve_metric(metric)
        check_choice(task, "task", ("auto", "classification", "regression"))
        if task == "auto":
            task = metric_task or ("classification" if _is_classifier(model) else "regression")
        elif metric_task is not None and metric_task != task:
            raise ValueError(f"metric={metric!r} is a {metric_task} metric but task={task!r}.")
        self.task = task
        if self.metric == "neg_log_loss" and not hasattr(model, "predict_proba"):
            raise TypeError(f"metric='neg_log_loss' needs a model with predict_proba; "
                            f"{type(model).__name__} has none.")
        self.X_train, self.y_train, self.X_test, self.y_test = check_dataset(
            X_train, y_train, X_test, y_test, task)
        self.degenerate, self.default_utility, self.min_samples = check_degenerate_options(
            degenerate, default_utility, min_samples)
        self.n_players = self.X_train.shape[0]
        self.targets = TargetInfo(self.y_train, self.y_test, task)
        cache = check_bool(cache, "cache")
        self.cache_ = CoalitionCache(check_int(cache_size, "cache_size", minimum=1)) if cache else None
        if blas_threads is not None:
            blas_threads = check_int(blas_threads, "blas_threads", minimum=1)
        self.blas_threads = blas_threads
        self.n_jobs = check_n_jobs(n_jobs)
        self.n_fits = 0
        self.warm_prefixes = check_bool(warm_prefixes, "warm_prefixes")
        self.learner_ = self._route(fast)
        if self.warm_prefixes and getattr(self.learner_, "prefix_path", None) != "exact":
            routing = "not routed" if self.learner_ is None else "routed to " + type(self.learner_).__name__
            raise ValueError(f"warm_prefixes=True needs a LogisticRegression routed to the batched learner "
                             f"(fast='auto' or True); this {type(model).__name__} with fast={fast!r} is {routing}.")
        if self.learner_ is not None and hasattr(self.learner_, "evaluate_prefixes") and self.learner_.exact_prefixes:
            # only an exact one-pass path is exposed: an approximate one would silently change U
            self.evaluate_prefixes = self._evaluate_prefixes

    # -- routing to the batched learners ------------------------------------------------------
    def _route(self, fast):
        """The batched learner or None, by :func:`~.learners.route_decision`; the decision is kept as ``route_``."""
        if isinstance(fast, (bool, np.bool_)):
            fast = bool(fast)
        elif not (isinstance(fast, str) and fast == "auto"):  # a membership test would let 1 and 0 through
            raise ValueError(f"fast must be 'auto', True or False, got {fast!r}.")
        n_classes = len(self.targets.classes) if self.task == "classification" else None
        self.route_ = route_decision(self.model, self.metric, fast, self.n_players, self.X_train.shape[1],
                                     n_classes, warm_prefixes=self.warm_prefixes)
        if not self.route_.batched:
            return None
        from sklearn.linear_model import LogisticRegression

        warm = self.warm_prefixes and type(self.model) is LogisticRegression
        options = {"prefix_path": "exact"} if warm else {}
        return learner_for(self.model, self.X_train, self.y_train, self.X_test, self.y_test,
                           self.metric, degenerate=self.degenerate,
                           default_utility=self.default_utility, min_samples=self.min_samples, **options)

    # -- evaluation -------------------------------------------------------------------------
    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        if self.cache_ is not None:
            return self.cache_.evaluate(masks, self._compute)
        return self._compute(masks)

    def _compute(self, masks: np.ndarray) -> np.ndarray:
        if self.learner_ is not None:
            before = self.learner_.n_fits
            values = self.learner_.evaluate(masks)
            self.n_fits += self.learner_.n_fits - before
            return values
        counts = self.targets.class_counts(masks) if self.task == "classification" else None
        degenerate = degenerate_rows(masks, self.targets, self.min_samples, counts)
        values = np.empty(masks.shape[0])
        if degenerate.any():
            values[degenerate] = degenerate_utilities(
                masks[degenerate], self.targets, self.metric, self.degenerate, self.default_utility,
                None if counts is None else counts[degenerate], self.X_test)
        rows = np.flatnonzero(~degenerate)
        if rows.size < 2 or self.n_jobs in (None, 1):
            values[rows] = self._fit_rows(masks[rows])
            return values
        from joblib import Parallel, delayed, effective_n_jobs

        # a few chunks per worker: process overhead stays small next to the fits, load stays balanced
        chunks = np.array_split(rows, min(rows.size, 4 * effective_n_jobs(self.n_jobs)))
        worker = copy.copy(self)
        worker.cache_, worker.n_jobs = None, None  # no cache to ship; no parallelism inside workers
        parts = Parallel(n_jobs=self.n_jobs)(delayed(worker._fit_rows)(masks[chunk]) for chunk in chunks)
        values[rows] = np.concatenate(parts)
        self.n_fits += rows.size
        return values

    def _fit_rows(self, masks: np.ndarray) -> np.ndarray:
        """Fit and score one coalition per row of ``masks`` (all non-degenerate), in this process."""
        if self.blas_threads is None:
            return np.array([self._fit_and_score(mask) for mask in masks], dtype=float)
        with thread_controller().limit(limits=self.blas_threads):
            return np.array([self._fit_and_score(mask) for mask in masks], dtype=float)

    def _fit_and_score(self, mask: np.ndarray) -> float:
        model = _fresh_copy(self.model)
        try:
            model.fit(self.X_train[mask], self.y_train[mask])
        except Exception as exc:
            if hasattr(exc, "add_note"):
                exc.add_note(f"ModelUtility: while fitting {type(self.model).__name__} on a coalition of "
                             f"{int(mask.sum())} points; raise min_samples to treat such coalitions as "
                             "degenerate if the model cannot be fitted on them.")
            raise
        self.n_fits += 1
        return self.score(model)

    def score(self, model) -> float:
        """The metric of a fitted ``model`` on the test set."""
        if callable(self.metric):
            return check_real_scalar(self.metric(model, self.X_test, self.y_test), "metric: the scorer")
        if self.task == "regression":
            predictions = np.asarray(model.predict(self.X_test), dtype=float).reshape(1, -1)
            return float(regression_scores(predictions, self.y_test, self.metric, self.targets.ss_tot)[0])
        if self.metric == "accuracy":
            return float(np.mean(np.asarray(model.predict(self.X_test)) == self.y_test))
        proba = np.asarray(model.predict_proba(self.X_test), dtype=float)
        model_classes = np.asarray(model.classes_)
        column = {label: j for j, label in enumerate(model_classes.tolist())}
        columns = np.array([column.get(label, -1) for label in self.y_test.tolist()])
        with np.errstate(divide="ignore"):
            log_p = np.where(columns >= 0, np.log(proba[np.arange(len(columns)), np.maximum(columns, 0)]),
                             -np.inf)
        return float(clipped_mean_log_probability(log_p))

    def _evaluate_prefixes(self, permutations) -> np.ndarray:
        """One-pass prefix utilities (exact learners only); bypasses the cache."""
        values = self.learner_.evaluate_prefixes(permutations)
        return values

    def clear_cache(self) -> None:
        if self.cache_ is not None:
            self.cache_.clear()

    def __repr__(self) -> str:
        backend = type(self.learner_).__name__ if self.learner_ is not None else "clone-and-fit"
        return (f"ModelUtility({type(self.model).__name__}, n_players={self.n_players}, "
                f"metric={getattr(self.metric, '__name__', self.metric)!r}, backend={backend})")
