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

import contextlib
import copy
import warnings
from typing import TYPE_CHECKING, Any, Callable, Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._ordered import ordered_map

# The data checks, metrics, TargetInfo, ConstantPredictor and the degenerate-coalition helpers live in
# _model_data, below this module and the batched learners; their names are re-exported here.
from ._model_data import (CLASSIFICATION_METRICS, DEGENERATE_MODES, LOG_EPS, LOG_ONE_MINUS_EPS,  # noqa: F401
                          REGRESSION_METRICS, ConstantPredictor, Metric, TargetInfo, check_dataset,
                          check_degenerate_options, check_metric_suits_model, clipped_mean_log_probability,
                          constant_utilities, estimator_kind, fresh_copy, unseeded_randomness,
                          degenerate_rows, degenerate_utilities, given_as_is, as_is_kind, r2_from_sums,
                          regression_scores, resolve_metric, split_degenerate, take_rows)
from ._input_tags import model_takes_nan, refuse_unsupported_features
from ._cache import CoalitionCache
from ._coalition_fits import (CoalitionFitWarning, OncePerGame, WarningTally, check_model_responds, check_scorer,
                              collected_warnings, describe_error, fit_size_limit, unfit_message, unseen_classes_note,
                              with_all_classes)
from .._device import check_dtype, resolve_device
from .._threads import thread_controller
from .._validation import _callers_level, check_bool, check_choice, check_int, check_n_jobs, check_real_scalar
from ..games import Game, content_digest, report_evaluated, supports_prefixes
from .learners import RouteDecision, check_fast, final_estimator, is_pipeline, learner_for, route_decision

if TYPE_CHECKING:
    from ._options import DegeneratePolicy
    import torch

__all__ = ["ModelUtility", "ConstantPredictor", "CLASSIFICATION_METRICS", "REGRESSION_METRICS"]


# --------------------------------------------------------------------------------------------
# ModelUtility
# --------------------------------------------------------------------------------------------

def _warn_unseeded(model: Any) -> None:
    """Warn where fits of ``model`` draw fresh randomness: the utility is then no function of the coalition."""
    random = unseeded_randomness(model)
    if random:
        warnings.warn(f"{' and '.join(random)} has random_state=None: each fit may draw fresh randomness, so a "
                      "coalition's utility can differ between calls and an estimator's seed does not repeat the "
                      "values. Set random_state to an integer on the model for values that repeat.",
                      UserWarning, stacklevel=3)


class ModelUtility(Game):
    r"""Utility of a training subset: the test score of ``model`` fitted on it.

    .. math:: U(S) = \text{metric}(\text{clone}(\text{model}).\text{fit}(X_S, y_S),\ X_{\text{test}}, y_{\text{test}})

    Players are the training points (``n_players = len(X_train)``). Every
    non-degenerate coalition gets a fresh ``sklearn.base.clone(model)`` (or a
    deep copy for non-scikit-learn objects with ``fit``/``predict``), fitted on
    the rows of ``S`` and scored on the fixed test set; by default
    (``fast="auto"``) a supported linear model may instead be trained by an
    equivalent batched learner (see ``fast``). The metrics, the
    convention for degenerate coalitions (empty, a single class, fewer than
    ``min_samples`` points, or none the model can be fitted on), the classes a
    coalition missed and the warnings of coalition fits are in the Notes below.

    Parameters
    ----------
    model : estimator
        Any object with ``fit(X, y)`` and ``predict(X)`` (and ``predict_proba``
        for ``metric="neg_log_loss"``). Never modified.
    X_train, y_train : arrays of shape (N, d) and (N,)
        The players. Arrays, lists and DataFrames of finite numbers are
        converted to float arrays; a DataFrame with a non-numeric column or
        missing values goes to the model as it is (rows taken by position), for
        instance raw data for a ``Pipeline`` with a ``ColumnTransformer``, and
        ``X_test`` must then be a DataFrame with the same columns; a SciPy
        sparse matrix (text features, say) goes to the model as it is, in CSR
        (finite values, the same number of columns). Labels may be
        any sortable values (a list or Series too); a classification task needs
        at least two distinct ones (a single class raises a ``ValueError``
        naming it: every coalition's model would predict that class and every
        value be about 0). Regression accepts any real targets.
    X_test, y_test : arrays of shape (m, d) and (m,)
        The fixed test set, of the same kind as ``X_train``.
    metric : str or callable, default "accuracy"
        ``"accuracy"``, ``"neg_log_loss"``, ``"neg_mean_squared_error"``
        (``"neg_mse"``), ``"neg_mean_absolute_error"`` (``"neg_mae"``), ``"r2"``,
        or ``scorer(model, X_test, y_test) -> float``, such as any scorer of
        ``sklearn.metrics.get_scorer``; another scorer's name (``"roc_auc"``,
        ``"f1_macro"``: ``sklearn.metrics.get_scorer_names()``) stands for
        ``get_scorer(name)`` (see Notes for coalitions that miss a class;
        a scorer of probabilities or decision scores is a ``ValueError`` when
        ``y_test`` holds a class that ``y_train`` lacks, which the string metrics score).
        A string metric of the other task than a scikit-learn classifier's or
        regressor's is a ``ValueError`` unless ``task`` says so.
    task : {"auto", "classification", "regression"}, default "auto"
        With a string metric the task follows from it; with a callable it is
        ``"classification"`` for scikit-learn classifiers, else ``"regression"``.
        It decides what counts as degenerate and what the constant model predicts.
    degenerate : {"constant", "default", "raise"} or DegeneratePolicy, default "constant"
        Utility of coalitions no model can be fitted on (Notes). A
        :class:`~shapley_research.DegeneratePolicy` sets it with
        ``default_utility`` and ``min_samples`` in one object (then leave
        those two keywords out).
    default_utility : float, optional
        The utility of degenerate coalitions with ``degenerate="default"``.
    min_samples : int, default 1
        Coalitions with fewer points are degenerate (the empty set always is).
    cache : bool, default False
        Memoise utilities by coalition (packed mask bytes, least recently used
        dropped beyond ``cache_size``): repeated coalitions are fitted once.
    cache_size : int, default 65536
        Most coalitions kept in the cache.
    fast : {"auto", False, True}, default "auto"
        Where the coalitions are fitted. ``False`` is the exact scikit-learn
        path: the estimator itself is cloned and fitted on every coalition, so
        the utility is exactly that estimator's. ``True`` forces a batched
        learner of :mod:`shapley_research.utilities.learners`, which trains a
        whole batch of coalitions at once (a ``ValueError`` if the model has
        none); ``"auto"`` (the default) uses it only where it is predicted to be
        faster, so its route depends on the model, the data's shapes and the
        cost model's calibration on the machine; pass ``True`` or ``False`` where
        results must not depend on the machine. The batched learners: ``LogisticRegression``
        (L2 penalty, ``dual=False``, no ``class_weight``, finite ``C``, any
        solver but ``liblinear``) to :class:`~shapley_research.utilities.learners.LogisticRegressionUtility`
        and ``Ridge`` (scalar ``alpha > 0``, ``positive=False``) to
        :class:`~shapley_research.utilities.learners.RidgeUtility`, with a string metric of
        the model's task, on numeric features (``"auto"`` fits DataFrames and sparse
        matrices given as they are with the model itself). Also a ``Pipeline`` of such a model after
        ``StandardScaler``, ``MinMaxScaler`` (``clip=False``) or ``MaxAbsScaler``
        steps (and ``"passthrough"``), each scaler fitted on the coalition alone as the
        pipeline fits it (solved as a per-coalition penalty, the same minimiser); any
        other step is fitted per subset, and ``route_`` names it. They minimise the same objective as
        scikit-learn: ridge agrees with ``Ridge`` to rounding (about 1e-14 relative). Logistic regression
        by Newton (binary, or up to 160 unknowns) is solved to ``min(model.tol, 1e-6)``, tighter than
        scikit-learn's default ``tol=1e-4`` at the cost of about one step; by L-BFGS (10-class digits,
        MNIST) it stops at the model's own ``tol`` in scikit-learn's own gradient test, iterating in
        ``float32`` then ``float64`` (:class:`~shapley_research.utilities.learners.LogisticRegressionUtility`),
        with the model's ``max_iter`` as its cap when above the learner's 500.
        Either way the utilities differ from a default scikit-learn fit by the solvers' stopping error
        (accuracy can then differ on test points lying that close to a decision boundary; measured max
        \|dU\| 0.004-0.015 on digits and MNIST, ``benchmarks/results/batched_routing.txt``). ``"auto"``
        routes a supported model (exact type, supported parameters) only where it is predicted to be
        faster: the batched learner's predicted seconds per coalition must be at least 1.5 times below
        one scikit-learn fit's, by a formula in the shapes, solvers and iterations
        (:mod:`shapley_research.utilities.learners._cost`) whose constants are scaled by factors
        measured once on this machine and cached per machine and version
        (:mod:`shapley_research.utilities.learners._calibration`; the environment variable
        ``SHAPLEY_RESEARCH_ROUTING=fixed`` keeps the committed constants); iris, breast cancer,
        10-class digits and MNIST after PCA go batched.
        ``warm_prefixes=True`` routes any supported ``LogisticRegression``.
        An unsupported model (any other estimator) is fitted per coalition.
        ``route_`` states the route taken and why (``str(game.route_)``). A routed ridge
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
    device : None, "auto", str or torch.device, default None
        Run the batched learner with torch on this device (``"cpu"``,
        ``"cuda"``, ``"cuda:1"``, a ``torch.device``; ``"auto"``: ``"cuda"``
        when torch sees a GPU, else ``None``), see
        :class:`LogisticRegressionUtility`. With a device, ``fast="auto"``
        routes a supported model there whatever the CPU cost model predicts;
        an explicit device with ``fast=False`` or with a model that has no
        batched learner is refused (for torch modules use
        :class:`TorchModelUtility`). ``None``: numpy.
    dtype : {"float64", "float32"}, default "float64"
        The batched learner's floating-point type on a device.
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
        Models fitted so far (non-degenerate coalitions actually trained, and
        the one fit of the full training set described in Notes).
    n_unfit : int
        Coalitions that could not be fitted or scored so far (Notes), also
        after their warning stopped repeating: those of evaluate calls made in
        this process (``n_fits`` likewise; a process-based backend's workers
        count, and warn, in their own copies of the game).
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

    **Classes a coalition missed** (classification with a callable metric). A
    model fitted on a coalition that holds some training classes but not all
    knows only those. The scorer then gets the fitted model seen with every
    class of the training set: ``classes_`` is the full set, ``predict_proba``
    gives a missed class probability 0 (so the scorer
    ``get_scorer("neg_log_loss")`` equals ``"neg_log_loss"`` where every class
    of ``y_test`` is in ``y_train``; a class only ``y_test`` holds has no column,
    so such a scorer is refused, while the string metric gives it probability 0),
    ``predict_log_proba`` gives it ``-inf``, ``decision_function`` gives it the
    lowest score of the row minus ``1 + |lowest|`` (finite, ranked last, as
    probability 0 is; a two-class model's single score :math:`d` is :math:`-d`
    and :math:`d` for its two classes, as in scikit-learn), and ``predict`` and
    every other attribute are the fitted model's (which is ``coalition_model_``).
    A coalition that holds every class is scored with the fitted model itself.

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

    **Coalitions the model cannot be fitted on.** A model with a known minimum
    (``KNeighborsClassifier`` / ``KNeighborsRegressor``, also as a
    ``Pipeline``'s final step, needs ``n_neighbors`` points) is never handed a
    smaller coalition; any other error raised while fitting or scoring a
    coalition is caught. Such coalitions get the utility of a degenerate
    coalition under ``degenerate`` (``"raise"`` raises the error), and the
    first ``evaluate`` call that meets some (or a new cause) gives one
    ``UserWarning`` (``CoalitionFitWarning``) with their count, their causes and
    the ``min_samples`` that would make them degenerate up front (and silent);
    ``n_unfit`` counts them all (in this process). An error is the user's to see, and is raised
    with a note, when the full training set cannot be fitted and scored either: at
    the first caught error the full training set is fitted once to find out
    (and a model whose minimum exceeds ``N`` is refused when the game is built).

    **Warnings of coalition fits.** Warnings raised while fitting and scoring
    the coalitions of one ``evaluate`` call (in this process or in its joblib
    workers) are collected and shown once per kind (category and message, its
    numbers aside), with the first message and how often it was raised, at the
    place it was first raised: filters on category, message or module apply as
    to the warning itself (e.g. ``warnings.filterwarnings("ignore",
    category=ConvergenceWarning)``). Each kind is shown once per game, at the
    first call that raises it (the batched learners' warnings too).

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

    def __init__(self, model: Any, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike,
                 metric: Metric = "accuracy", *,
                 task: Literal["auto", "classification", "regression"] = "auto",
                 degenerate: Literal["constant", "default", "raise"] | DegeneratePolicy = "constant",
                 default_utility: float | None = None, min_samples: int = 1, cache: bool = False,
                 cache_size: int = 65536, fast: bool | Literal["auto"] = "auto", blas_threads: int | None = 1,
                 n_jobs: int | None = None, warm_prefixes: bool = False,
                 device: str | torch.device | None = None, dtype: Literal["float64", "float32"] = "float64") -> None:
        if isinstance(model, type):
            raise TypeError(f"model must be an estimator instance, got the class {model.__name__}; "
                            f"pass {model.__name__}() instead.")
        if not (hasattr(model, "fit") and hasattr(model, "predict")):
            raise TypeError(f"model must be an estimator with fit and predict methods, got {type(model).__name__}.")
        self.model = model
        self.metric, metric_task = resolve_metric(metric, scorer_names=True)
        check_choice(task, "task", ("auto", "classification", "regression"))
        task_given = task
        if task == "auto":
            task = metric_task or ("classification" if estimator_kind(model) == "classifier" else "regression")
        elif metric_task is not None and metric_task != task:
            raise ValueError(f"metric={metric!r} is a {metric_task} metric but task={task!r}.")
        self.task = task
        if task_given == "auto":
            check_metric_suits_model(model, metric, metric_task)
        check_model_responds(model, self.metric, metric)
        self.X_train, self.y_train, self.X_test, self.y_test = check_dataset(
            X_train, y_train, X_test, y_test, task, tables=True, allow_nan=model_takes_nan(model))
        self.degenerate, self.default_utility, self.min_samples = check_degenerate_options(
            degenerate, default_utility, min_samples, self.X_train.shape[0])
        self.n_players = self.X_train.shape[0]
        self._fit_limit = fit_size_limit(model)
        if self._fit_limit is not None and self.min_samples <= self.n_players < self._fit_limit[0]:
            raise ValueError(f"{self._fit_limit[1]} but X_train has {self.n_players}: no coalition could be "
                             "fitted. Lower n_neighbors, or raise min_samples above the number of points to "
                             "treat every coalition as degenerate.")
        self._full_set_fits: bool | None = None  # found out at the first coalition that cannot be fitted
        self.targets = TargetInfo(self.y_train, self.y_test, task)
        check_scorer(metric, self.metric, self.targets, self.X_test)  # before any fit: none could be scored
        cache = check_bool(cache, "cache")
        self.cache_ = CoalitionCache(check_int(cache_size, "cache_size", minimum=1)) if cache else None
        if blas_threads is not None:
            blas_threads = check_int(blas_threads, "blas_threads", minimum=1)
        self.blas_threads = blas_threads
        self.n_jobs = check_n_jobs(n_jobs)
        self.n_fits, self.n_unfit, self._warned = 0, 0, OncePerGame()  # _warned: kinds of warning shown
        self.warm_prefixes = check_bool(warm_prefixes, "warm_prefixes")
        self.device, self.dtype = resolve_device(device, "ModelUtility"), check_dtype(dtype, "ModelUtility")
        as_is = given_as_is(self.X_train) or given_as_is(self.X_test)
        self.learner_ = self._route_tables(fast) if as_is else self._route(fast)
        self.independent_rows = self.learner_ is None  # a clone fitted per coalition: each row's utility is its own
        if self.warm_prefixes and getattr(self.learner_, "prefix_path", None) != "exact":
            routing = "not routed" if self.learner_ is None else "routed to " + type(self.learner_).__name__
            raise ValueError(f"warm_prefixes=True needs a LogisticRegression routed to the batched learner "
                             f"(fast='auto' or True); this {type(model).__name__} with fast={fast!r} is {routing}.")
        if self.learner_ is None:  # a routed model is fitted by the batched learner, which draws nothing
            _warn_unseeded(model)

    # -- routing to the batched learners ------------------------------------------------------
    def _route(self, fast: object) -> Any:
        """The batched learner or None, by :func:`~.learners.route_decision`; the decision is kept as ``route_``."""
        fast = check_fast(fast)
        if self.warm_prefixes and fast is not False and is_pipeline(self.model):
            raise ValueError("warm_prefixes=True cannot be used with a Pipeline: the exact one-pass path knows no "
                             "per-coalition scalers. Drop warm_prefixes (a routed Pipeline refits every prefix).")
        n_classes = len(self.targets.classes) if self.task == "classification" else None
        self.route_ = route_decision(self.model, self.metric, fast, self.n_players, self.X_train.shape[1],
                                     n_classes, warm_prefixes=self.warm_prefixes, device=self.device)
        if not self.route_.batched:
            return None
        from sklearn.linear_model import LogisticRegression

        warm = self.warm_prefixes and type(self.model) is LogisticRegression
        options: dict[str, Any] = {"prefix_path": "exact"} if warm else {}
        if self.cache_ is not None and type(final_estimator(self.model)) is LogisticRegression:
            options["chain_prefixes"] = False  # a cached utility must be the one any call would give
        if self.device is not None:
            options.update(device=self.device, dtype=self.dtype)
        return learner_for(self.model, self.X_train, self.y_train, self.X_test, self.y_test,
                           self.metric, degenerate=self.degenerate,
                           default_utility=self.default_utility, min_samples=self.min_samples, **options)

    def _route_tables(self, fast: object) -> Any:
        """Routing for features given as they are (raw DataFrames, sparse matrices): no batched learner."""
        kind = as_is_kind(self.X_train, self.X_test)
        refuse_unsupported_features(self.model, self.X_train, self.X_test)
        if self.device is not None:
            raise ValueError(f"device={str(self.device)!r} needs numeric features in dense arrays, but X_train and "
                             f"X_test are {kind} that go to the model as they are.")
        if isinstance(fast, (bool, np.bool_)) and fast:
            raise ValueError(f"fast=True needs numeric features in dense arrays, but X_train and X_test are {kind}, "
                             "which go to the model as they are. Pass fast='auto' or fast=False to fit the model "
                             "itself.")
        if (isinstance(fast, (bool, np.bool_)) and not fast) or (isinstance(fast, str) and fast == "auto"):
            self.route_ = RouteDecision(False, f"per-subset fits: X_train and X_test are {kind}, which go to the "
                                               "model as they are")
            return None
        return self._route(fast)  # refuses any other value with its own message

    # -- evaluation -------------------------------------------------------------------------
    def _evaluate(self, masks: NDArray[np.bool_]) -> NDArray[np.float64]:
        if self.cache_ is not None:
            return self.cache_.evaluate(masks, self._compute)
        return self._compute(masks)

    def _compute(self, masks: NDArray[np.bool_]) -> NDArray[np.float64]:
        if self.learner_ is not None:
            before = self.learner_.n_fits
            values = self.learner_.evaluate(masks)
            self.n_fits += self.learner_.n_fits - before
            return values
        with collected_warnings() as tally:
            values, unfit = self._compute_rows(masks, tally)
        self._warned.emit(tally, masks.shape[0])  # outside the collection: the user's filters decide
        if unfit is not None:  # once per game and cause, at the user's line that led here
            self._warned.warn(unfit[0], CoalitionFitWarning, *unfit[1], stacklevel=_callers_level())
        return values

    def _compute_rows(self, masks: NDArray[np.bool_], tally: WarningTally
                      ) -> tuple[NDArray[np.float64], tuple[str, tuple[str, ...]] | None]:
        """Utilities of ``masks``; the message about coalitions that could not be fitted and its causes (or None)."""
        values, degenerate, counts = split_degenerate(masks, self.targets, self.metric, self.degenerate,
                                                      self.default_utility, self.min_samples, self.X_test)
        too_small = np.zeros_like(degenerate)
        if self._fit_limit is not None:  # known before the fit: never handed to the model
            too_small = ~degenerate & (masks.sum(axis=1) < self._fit_limit[0])
        rows = np.flatnonzero(~degenerate & ~too_small)
        values[rows], errors = self._fit_batches(masks[rows], tally)
        failed = rows[sorted(errors)]
        if not too_small.any() and failed.size == 0:
            return values, None
        limit = cast("tuple[int, str]", self._fit_limit)  # read only when a row is too small, so set
        causes: dict[str, int] = {}
        if too_small.any():
            causes[limit[1]] = int(too_small.sum())
        for error in errors.values():
            causes[describe_error(error)] = causes.get(describe_error(error), 0) + 1
        self._check_unfit(masks, too_small, failed, [errors[i] for i in sorted(errors)], tally)
        unfit = too_small.copy()
        unfit[failed] = True
        values[unfit] = self._degenerate_utilities(masks, unfit, counts)
        self.n_unfit += int(unfit.sum())
        largest = int(masks[unfit].sum(axis=1).max())
        suggested = max(largest + 1, limit[0] if too_small.any() else 0)
        message = unfit_message(int(unfit.sum()), masks.shape[0], causes, largest, suggested, self.degenerate)
        return values, (message, tuple(causes))

    def _degenerate_utilities(self, masks: NDArray[np.bool_], rows: NDArray[np.bool_],
                              counts: NDArray[np.float64] | None) -> NDArray[np.float64]:
        return degenerate_utilities(masks[rows], self.targets, self.metric, self.degenerate, self.default_utility,
                                    None if counts is None else counts[rows], self.X_test)

    def _check_unfit(self, masks: NDArray[np.bool_], too_small: NDArray[np.bool_], failed: NDArray[np.intp],
                     errors: list[Exception], tally: WarningTally) -> None:
        """Raise when coalitions that could not be fitted must not get the degenerate utility.

        Errors are the user's to see when the full training set cannot be fitted
        and scored either, and with ``degenerate="raise"``.
        """
        if errors:
            if self._full_set_fits is None:  # one probe per game: a fit of the full training set
                _, probe_errors = self._fit_batches(np.ones((1, self.n_players), dtype=bool), tally)
                self._full_set_fits = not probe_errors
            if not self._full_set_fits or self.degenerate == "raise":
                error = errors[0]
                why = ("the full training set cannot be fitted and scored either, so this is no small-coalition "
                       "problem" + (unseen_classes_note(self.targets) if callable(self.metric) else "")
                       if not self._full_set_fits else "degenerate='raise'")
                if hasattr(error, "add_note"):
                    error.add_note(f"ModelUtility: while fitting and scoring {type(self.model).__name__} on a "
                                   f"coalition of {int(masks[failed[0]].sum())} points; raised because {why}. "
                                   "Coalitions that only small sizes fail on get the degenerate utility "
                                   "(raise min_samples to make them degenerate up front).")
                raise error
        if self.degenerate == "raise" and too_small.any():
            size = int(masks[too_small][0].sum())
            limit = cast("tuple[int, str]", self._fit_limit)  # set, since a row is too small
            raise ValueError(f"ModelUtility: cannot fit a coalition of {size} point(s): {limit[1]}; "
                             f"pass min_samples={limit[0]}, or degenerate='constant' or 'default'.")

    def _fit_batches(self, masks: NDArray[np.bool_], tally: WarningTally
                     ) -> tuple[NDArray[np.float64], dict[int, Exception]]:
        """Fit and score every row of ``masks``, in joblib workers with ``n_jobs``: values and errors by row."""
        if masks.shape[0] < 2 or self.n_jobs in (None, 1):
            parts = [self._fit_rows(masks)]
        else:
            from joblib import effective_n_jobs

            # a few chunks per worker: process overhead stays small next to the fits, load stays balanced
            chunks = np.array_split(np.arange(masks.shape[0]), min(masks.shape[0], 4 * effective_n_jobs(self.n_jobs)))
            worker = copy.copy(self)
            worker.cache_, worker.n_jobs = None, None  # no cache to ship; no parallelism inside workers
            parts = list(ordered_map(worker._fit_rows, ((masks[chunk],) for chunk in chunks), self.n_jobs))
        values, errors, offset = [np.empty(0)], {}, 0
        for part_values, part_errors, n_fitted, part_tally in parts:
            values.append(part_values)
            errors.update({offset + row: error for row, error in part_errors.items()})
            offset += len(part_values)
            self.n_fits += n_fitted
            tally.merge(part_tally)
        return np.concatenate(values), errors

    def _fit_rows(self, masks: NDArray[np.bool_]
                  ) -> tuple[NDArray[np.float64], dict[int, Exception], int, WarningTally]:
        """Fit and score one coalition per row of ``masks``, in this process.

        Returns the utilities (NaN where it failed), the errors by row, the
        number of models fitted and the warnings raised (a worker's own).
        """
        values, errors, n_fitted = np.full(masks.shape[0], np.nan), {}, 0
        limit = (contextlib.nullcontext() if self.blas_threads is None
                 else thread_controller().limit(limits=self.blas_threads))
        with collected_warnings() as tally, limit:
            for row, mask in enumerate(masks):
                model = fresh_copy(self.model)
                try:
                    model.fit(take_rows(self.X_train, mask), self.y_train[mask])
                    n_fitted += 1
                    values[row] = self.score(model)
                except MemoryError:
                    raise
                except Exception as error:  # noqa: BLE001 - judged in _check_unfit, against the full training set
                    errors[row] = error
                report_evaluated()  # moves the estimator's progress bar per fit (a no-op in worker processes)
        return values, errors, n_fitted, tally

    def score(self, model: Any) -> float:
        """The metric of a fitted ``model`` (an estimator with ``predict``) on the test set."""
        if callable(self.metric):
            if self.task == "classification":  # a column for every training class (Notes)
                model = with_all_classes(model, self.targets.classes)
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

    @property
    def has_exact_prefixes(self) -> bool:
        """Whether this game offers the learner's exact one-pass prefix path (:attr:`evaluate_prefixes`).

        Only an exact path is exposed: an approximate one would silently change
        ``U``; with a pipeline's scalers the learner has none (it refits, as
        ``evaluate`` does through the cache).
        """
        learner = self.learner_
        return (learner is not None and supports_prefixes(learner) and bool(learner.exact_prefixes)
                and getattr(learner, "scaling", None) is None)

    @property
    def evaluate_prefixes(self) -> Callable[[ArrayLike], NDArray[np.float64]]:
        """One-pass prefix utilities of permutations, where :attr:`has_exact_prefixes` (bypasses the cache).

        Declared by the class, present on an instance only where the routed
        learner has an exact path (a routed ``Ridge``, or ``warm_prefixes=True``):
        elsewhere reading it raises ``AttributeError``, so that
        :func:`~shapley_research.games.supports_prefixes` (and ``hasattr``) is ``False``.
        """
        if not self.has_exact_prefixes:
            raise AttributeError(f"this {self!r} has no exact one-pass evaluate_prefixes (see has_exact_prefixes).")
        return self.learner_.evaluate_prefixes

    def clear_cache(self) -> None:
        """Empty the coalition cache (no-op without ``cache=True``)."""
        if self.cache_ is not None:
            self.cache_.clear()

    def fingerprint(self) -> str:
        """A digest of the data, the model's class and parameters, the metric and the degenerate convention."""
        params = self.model.get_params(deep=True) if hasattr(self.model, "get_params") else vars(self.model)
        return content_digest(self.X_train, self.y_train, self.X_test, self.y_test, type(self.model).__qualname__,
                              sorted((key, repr(value)) for key, value in params.items()),
                              getattr(self.metric, "__qualname__", self.metric), self.task, self.degenerate,
                              self.default_utility, self.min_samples)

    def __repr__(self) -> str:
        backend = type(self.learner_).__name__ if self.learner_ is not None else "clone-and-fit"
        return (f"ModelUtility({type(self.model).__name__}, n_players={self.n_players}, "
                f"metric={getattr(self.metric, '__name__', self.metric)!r}, backend={backend})")
