r"""Data-OOB: each training point's out-of-bag score over a bagged ensemble (Kwon & Zou, ICML 2023).

Unlike the other estimators here, Data-OOB values the points of a data set
for a learning algorithm directly, without a game: it needs the model, not a
utility of coalitions. ``B`` clones of the model are fitted on bootstrap
samples of the training set, and a point's value is the mean score of the
predictions made for it by the clones that did not see it,

.. math::

    \psi_i = \frac{\sum_{b=1}^{B} 1[i \notin S_b]\, T\bigl(y_i, f_b(x_i)\bigr)}
                  {\sum_{b=1}^{B} 1[i \notin S_b]},

with :math:`S_b` the ``b``-th bootstrap sample (``N`` draws with
replacement), :math:`f_b` the model fitted on it and :math:`T` a per-point
score: the correctness :math:`1[f_b(x_i) = y_i]` for classifiers, the
negative squared error :math:`-(f_b(x_i) - y_i)^2` for regressors. A point
that its peers contradict (a flipped label) is mispredicted by the models
that did not see it, so it gets a low value. One estimator costs one model
fit, where a semivalue needs thousands.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._data_oob_batched import (batched_learner, batched_results, check_learner, is_batched_learner,
                                learner_task)
from ._sampling._batches import close_batches, model_seeds
from ._sampling._loop import batch_rng
from .._device import check_game_jobs
from .._ordered import ordered_map
from .._threads import Pinned, pinned_threads
from .._warnings import WarningTally, collected_warnings
from .._validation import (check_choice, check_class_labels, check_features, check_int, check_n_jobs, check_progress,
                           check_real_array, check_seed, check_target_vector, check_two_classes, is_frame)
from ..result import ValuationResult
from ..utilities import (check_sparse_features, check_table, estimator_kind, fresh_copy, is_raw_table, is_sparse,
                         model_takes_nan, refuse_unsupported_features, unseeded_random_states)
from ..utilities.learners import check_fast

if TYPE_CHECKING:
    import torch

__all__ = ["data_oob", "bootstrap_indices"]

DEFAULT_N_ESTIMATORS = 200
TASKS = ("auto", "classification", "regression")


def bootstrap_indices(seed: int, estimator: int, n_samples: int) -> NDArray[np.int64]:
    """Rows of the bootstrap sample of estimator ``estimator`` in a run with entropy ``seed``.

    ``n_samples`` uniform draws from ``range(n_samples)`` with replacement,
    from the estimator's own stream ``SeedSequence(seed, spawn_key=(0,
    estimator))`` (the sampling loop's batch stream): they depend on the seed
    and the estimator's number only, never on which worker fits it. Pass
    ``result.seed`` to recompute the samples of a run.

    Returns
    -------
    numpy.ndarray of int64, shape (n_samples,)
        The rows drawn, in the order drawn.
    """
    return batch_rng(seed, estimator).integers(n_samples, size=n_samples)


def correctness(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """The default score of classifiers: ``1.0`` where the prediction is the label, else ``0.0``."""
    return (y_pred == y_true).astype(float)


def negative_squared_error(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """The default score of regressors: ``-(y_pred - y_true)**2``."""
    return -(np.asarray(y_pred, dtype=float) - y_true) ** 2


def _is_classifier(model) -> bool:
    return estimator_kind(model) == "classifier"


def _check_model(model) -> None:
    if isinstance(model, type):
        raise TypeError(f"model must be an estimator instance, got the class {model.__name__}; "
                        f"pass {model.__name__}() instead.")
    for method in ("fit", "predict"):
        if not callable(getattr(model, method, None)):
            raise TypeError(f"model must be an estimator with fit and predict methods; "
                            f"{type(model).__name__} has no {method}.")


def _check_targets(y_train, n_samples: int, task: str) -> np.ndarray:
    y = check_target_vector(y_train, "y_train", n_samples, "X_train", noun="targets")
    if task == "classification":
        return check_two_classes(check_class_labels(y, "y_train"), "y_train")
    if y.dtype.kind not in "biuf":
        raise TypeError(f"y_train must be real numbers for a regressor, got dtype {y.dtype}.")
    y = y.astype(float)
    if not np.isfinite(y).all():
        raise ValueError("y_train contains NaN or infinite values.")
    return y


def _scores(score: Callable, y_true: np.ndarray, y_pred, what: str) -> np.ndarray:
    """``score(y_true, y_pred)`` checked to be one finite real number per point."""
    y_pred = np.asarray(y_pred)
    if y_pred.ndim == 2 and y_pred.shape[1] == 1:
        y_pred = y_pred.reshape(-1)
    if y_pred.shape != y_true.shape:
        raise ValueError(f"{what} must return one prediction per out-of-bag point: expected shape "
                         f"{y_true.shape}, got {y_pred.shape}.")
    values = check_real_array(score(y_true, y_pred), "score(y_true, y_pred)")
    if values.shape != y_true.shape:
        raise ValueError(f"score(y_true, y_pred) must return one score per point: expected shape "
                         f"{y_true.shape}, got {values.shape}.")
    if not np.isfinite(values).all():
        raise ValueError("score(y_true, y_pred) returned NaN or infinite scores.")
    return values


def _fit_one(model, X: Any, y: np.ndarray, seed: int, estimator: int, classification: bool,
             score: Callable) -> tuple[np.ndarray, np.ndarray, bool]:
    """Fit estimator ``estimator`` on its bootstrap sample; return its out-of-bag rows, their scores, and
    whether a model was fitted (a classifier's sample holding one class is not: it predicts that class)."""
    n = X.shape[0]
    rows = bootstrap_indices(seed, estimator, n)
    take = (lambda index: X.iloc[index]) if is_frame(X) else (lambda index: X[index])
    in_bag = np.zeros(n, dtype=bool)
    in_bag[rows] = True
    oob = np.flatnonzero(~in_bag)
    if classification:
        classes = np.unique(y[rows])
        if classes.size == 1:  # most classifiers refuse one class; the only sensible prediction is that class
            return oob, _scores(score, y[oob], np.full(oob.size, classes[0], dtype=y.dtype), "model"), False
    fitted = fresh_copy(model)
    unseeded = unseeded_random_states(fitted) if callable(getattr(fitted, "set_params", None)) else []
    try:
        if unseeded:  # the bag's own randomness, from the seed (one per parameter): the same seed repeats values
            fitted.set_params(**dict(zip(unseeded, model_seeds(seed, estimator, len(unseeded)))))
        fitted.fit(take(rows), y[rows])
    except Exception as exc:
        if hasattr(exc, "add_note"):
            exc.add_note(f"data_oob: while fitting {type(model).__name__} on bootstrap sample {estimator}.")
        raise
    if oob.size == 0:
        return oob, np.empty(0), True
    return oob, _scores(score, y[oob], fitted.predict(take(oob)), f"{type(model).__name__}.predict"), True


def data_oob(model: Any, X_train: ArrayLike, y_train: ArrayLike, n_estimators: int = DEFAULT_N_ESTIMATORS,
             seed: int | np.random.SeedSequence | None = None, *,
             task: Literal["auto", "classification", "regression"] = "auto",
             score: Callable[[np.ndarray, np.ndarray], ArrayLike] | None = None, n_jobs: int | None = None,
             progress: bool | None = None, fast: bool | Literal["auto"] = False,
             device: str | torch.device | None = None) -> ValuationResult:
    r"""Data-OOB values (Kwon & Zou, ICML 2023): each point's mean out-of-bag score over a bagged ensemble.

    For ``b = 1..B`` (``B = n_estimators``) a fresh clone of ``model`` is
    fitted on the bootstrap sample :math:`S_b` (``N`` rows drawn uniformly
    with replacement), and

    .. math::

        \psi_i = \frac{1}{B_i}\sum_{b:\, i \notin S_b} T\bigl(y_i, f_b(x_i)\bigr),
        \qquad B_i = \#\{b : i \notin S_b\},

    the mean score of point ``i`` over the :math:`B_i` estimators for which it
    is out of bag (on average :math:`B (1 - 1/N)^N \approx 0.37 B`). Low
    values flag points the rest of the data contradicts, such as flipped
    labels. :math:`\psi_i` estimates, without bias, its limit for
    :math:`B \to \infty` (the expected out-of-bag score of ``i``); given that
    ``i`` is out of bag the :math:`T(y_i, f_b(x_i))` are i.i.d., so
    ``stderr`` is their sample standard deviation over :math:`\sqrt{B_i}`.
    Each estimator is **one fit of the user's model** (the paper bags 800
    decision trees; with a costlier model fewer estimators are usually
    affordable, and 200 give each point about 74 out-of-bag predictions).

    **Batched path** (``fast=True`` or ``"auto"`` with a scikit-learn
    ``LogisticRegression`` or ``Ridge``, or a batched learner passed as
    ``model``): the ``B`` models are trained a chunk at a time by a batched
    learner (:class:`~shapley_research.LogisticRegressionUtility`,
    :class:`~shapley_research.RidgeUtility`,
    :class:`~shapley_research.TorchModelUtility`). Estimator ``b`` draws the
    same sample :math:`S_b` (so the same out-of-bag sets), turned into counts
    :math:`w_{bi} = \#\{i \text{ in } S_b\}`, and the learner fits the model
    with sample weights :math:`w_b`, exactly scikit-learn's ``sample_weight``
    objective (for these losses a count is the row repeated, so this is the
    model fitted on the bootstrap sample), then predicts all of ``X_train``
    for the chunk in one call; the scores are then combined in estimator
    order exactly as on the per-fit path. Why: one scikit-learn fit of a
    logistic regression on 300 points takes milliseconds, mostly Python
    overhead, while the batched learner trains hundreds of models in a few
    large array operations (tens of microseconds a model; measured on
    standardised breast cancer, 300 points, 200 estimators, two shared CPU
    cores: 0.76 s per fit, 0.05 s batched). The routed learner solves to
    ``min(tol, 1e-6)``, so its predictions equal scikit-learn's except for
    points within the solvers' tolerance of the decision boundary (at
    ``LogisticRegression(tol=1e-8)`` the tests find the values equal on iris
    and breast cancer), or where scikit-learn stops at ``max_iter`` before
    converging (unscaled features: the batched learner solves the objective,
    the per-fit model does not); ``Ridge`` agrees to rounding.

    A point in every bootstrap sample (probability :math:`(1 - (1-1/N)^N)^B
    \approx 0.63^B`: only with a small ``B``) has no out-of-bag prediction:
    its value and standard error are NaN, with a ``RuntimeWarning``, rather
    than a made-up number; ``info["never_oob"]`` lists such points. Raise
    ``n_estimators`` if that happens. A point with :math:`B_i = 1` has a value
    and a NaN standard error.

    For a classifier, a bootstrap sample holding a single class is not fitted
    (most classifiers refuse one class): that estimator predicts its class for
    every point (the batched learners' degenerate convention does the same).
    Such estimators are counted in ``info["n_single_class"]`` and not in
    ``n_evaluations``.

    The values are bit-identical for any ``n_jobs``: estimator ``b`` draws
    its sample from its own stream (:func:`bootstrap_indices`), every fit
    runs with one BLAS/OpenMP thread wherever it runs, and the scores are
    combined in estimator order. The batched path is bit-identical between
    runs with the same seed (on a GPU: with the learner's chunk size fixed).

    Parameters
    ----------
    model : estimator or batched learner
        An object with ``fit(X, y)`` and ``predict(X)``, e.g. any scikit-learn
        estimator. Never modified: each estimator is a fresh
        ``sklearn.base.clone`` (a deep copy for objects without
        ``get_params``). Or a batched learner instance (an object with
        ``predict(weights, X)`` and ``n_players``: a
        ``LogisticRegressionUtility``, ``RidgeUtility`` or
        ``TorchModelUtility`` built on ``X_train, y_train`` as its training
        set; its test set is not used): its own training recipe and device
        run every estimator, ``n_players`` must equal ``N`` and ``fast`` is
        ignored.
    X_train : array_like of shape (N, d)
        Finite real features of the points to value; or, for a model that
        takes them (a ``Pipeline`` with a ``ColumnTransformer``), a DataFrame
        with text or categorical columns or missing values, given to each fit
        as it is (rows by position), one fit per bootstrap sample, as
        :class:`~shapley_research.ModelUtility` does.
    y_train : array_like of shape (N,)
        Their labels (classification, any sortable values, at least two
        distinct ones: a single class raises a ``ValueError`` naming it, as
        every out-of-bag prediction would be right and every value 1) or real
        targets (regression).
    n_estimators : int, default 200
        ``B``, the number of bootstrap samples, and so (up to single-class
        samples) of model fits.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the bootstrap streams; ``None`` draws one (kept on the result).
        A model (or pipeline step, or ensemble member) left at
        ``random_state=None`` gets, for bag ``b``, a ``random_state`` drawn
        from the seed and ``b`` (one per such parameter), as a random forest
        seeds its trees, so the same seed repeats the values; a
        ``random_state`` set on the model is kept (every bag then uses it).
    task : {"auto", "classification", "regression"}, default "auto"
        ``"auto"``: a batched learner's ``task`` attribute; else
        classification for scikit-learn classifiers (or objects with
        ``_estimator_type = "classifier"``), else regression. It picks the
        default score, the checks of ``y_train`` and the single-class rule.
    score : callable, optional
        ``score(y_true, y_pred) -> scores``, one finite real number per point
        (higher is better), for arrays of the out-of-bag points' labels and
        predictions. Default: :func:`correctness` ``1[y_pred == y_true]`` for
        classification, :func:`negative_squared_error` for regression.
    n_jobs : int, optional
        Per-fit path: fit estimators in parallel through joblib (``None`` or
        1: in this process; -1: all cores; ``joblib.parallel_config`` picks a
        backend). Batched path: joblib is not used; ``n_jobs`` is checked and
        ignored on numpy (one process trains whole chunks), and ``n_jobs > 1``
        is refused with a learner on a torch device (one process owns it).
    progress : bool, optional
        Show a progress bar over the estimators (default: only on an
        interactive terminal); on the batched path it moves a chunk at a time.
    fast : {False, "auto", True}, default False
        As in :class:`~shapley_research.ModelUtility`. ``False``: fit
        ``model`` itself on every bootstrap sample (the original path, bit
        for bit). ``True``: route a scikit-learn ``LogisticRegression`` (L2)
        or ``Ridge`` to its batched learner
        (:func:`~shapley_research.utilities.learners.learner_for`); a
        ``ValueError`` naming the reason for other models. ``"auto"``: the
        batched learner when the model has one, else per fit.
    device : None, "auto", str or torch.device, default None
        Where the routed batched learner runs (see
        :class:`~shapley_research.LogisticRegressionUtility`); checked by
        :func:`~shapley_research._device.resolve_device` before any fit. An
        explicit device with ``fast=False``, with a model that has no batched
        learner, or with a learner instance (build it on its device) is a
        ``ValueError``.

    Returns
    -------
    ValuationResult
        ``method="data_oob"``, ``n_evaluations`` the model fits made,
        ``n_samples = B``, ``stderr`` as above. ``info`` holds
        ``n_estimators``, ``task``, ``score`` (its name), ``oob_counts``
        (:math:`B_i` per point), ``n_never_oob`` and ``never_oob`` (the points
        with :math:`B_i = 0`), ``n_single_class`` and ``route`` (``"per-fit"``
        or ``"batched: <learner>"``; on the batched path also in
        ``info["options"]``, whose other keys are unchanged). No sample
        statistics (``state``) are kept: runs are not merged with
        ``merge_results``; raise ``n_estimators`` instead.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> result = data_oob(DecisionTreeClassifier(), X, y, n_estimators=50, seed=0)
    >>> result.values.shape, result.n_evaluations
    ((150,), 50)
    """
    start = time.perf_counter()
    run = _prepare(model, X_train, y_train, n_estimators, seed, task, score, n_jobs, progress, fast, device)
    count, mean, m2, n_fits = _accumulate(run)
    return _result(run, count, mean, m2, n_fits, start)


@dataclass
class _Run:
    """The checked arguments of one data_oob call."""

    model: Any
    learner: Any  # the batched learner, or None for the per-fit path
    X: Any  # float features, or a DataFrame given to the model as it is
    y: np.ndarray
    task: str
    n_estimators: int
    entropy: int
    score: Callable
    score_name: str
    n_jobs: int | None
    progress: bool | None

    @property
    def classification(self) -> bool:
        return self.task == "classification"

    @property
    def route(self) -> str:
        return "per-fit" if self.learner is None else f"batched: {self.learner!r}"


def _prepare(model, X_train, y_train, n_estimators, seed, task, score, n_jobs, progress, fast, device) -> _Run:
    """Every argument checked, in the order of their errors, and the route chosen: all before any fit."""
    instance = is_batched_learner(model)
    if not instance:
        _check_model(model)
    raw = not instance and (is_raw_table(X_train) or is_sparse(X_train))  # given to the model as it is
    if raw:
        X = (check_sparse_features if is_sparse(X_train) else check_table)(X_train, "X_train")
    else:  # a learner instance takes dense features only (check_features says so), whatever X_train is
        X = check_features(X_train, "X_train", allow_nan=not instance and model_takes_nan(model))
    if not instance:
        refuse_unsupported_features(model, X)
    task = check_choice(task, "task", TASKS)
    if instance:
        task = learner_task(model, task, lambda m: "classification" if _is_classifier(m) else "regression")
    elif task == "auto":
        task = "classification" if _is_classifier(model) else "regression"
    y = _check_targets(y_train, X.shape[0], task)
    n_estimators = check_int(n_estimators, "n_estimators", minimum=1)
    entropy = check_seed(seed)
    if score is not None and not callable(score):
        raise TypeError(f"score must be a callable score(y_true, y_pred) -> one score per point, "
                        f"got {type(score).__name__}.")
    n_jobs = check_n_jobs(n_jobs)
    progress = check_progress(progress)
    fast = check_fast(fast)
    if raw and fast is True:
        kind = "a sparse matrix" if is_sparse(X) else "a DataFrame with non-numeric columns or missing values"
        raise ValueError(f"fast=True needs numeric features in dense arrays, but X_train is {kind}, which goes to "
                         "the model as it is: pass fast='auto' or False.")
    if instance:
        check_learner(model, X, y, device)
        check_game_jobs(model, n_jobs, "data_oob")
        learner = model
    else:
        learner = None if raw else batched_learner(model, X, y, task, fast, device, n_jobs)
    classification = task == "classification"
    score_name = getattr(score, "__name__", type(score).__name__) if score is not None else (
        "correctness" if classification else "negative_squared_error")
    if score is None:
        score = correctness if classification else negative_squared_error
    return _Run(model, learner, X, y, task, n_estimators, entropy, score, score_name, n_jobs, progress)


def _fit_one_collecting(*args: Any) -> tuple[np.ndarray, np.ndarray, bool, WarningTally]:
    """:func:`_fit_one`'s triple and the warnings its fit raised, collected (a worker's reach the parent)."""
    with collected_warnings() as tally:
        return (*_fit_one(*args), tally)


def _per_fit_results(run: _Run):
    """Per estimator, in order: ``_fit_one``'s triple and its warnings, fitted here or by joblib workers."""
    tasks = ((run.model, run.X, run.y, run.entropy, b, run.classification, run.score)
             for b in range(run.n_estimators))
    fit = _fit_one_collecting
    return ordered_map(fit if run.n_jobs in (None, 1) else Pinned(fit), tasks, run.n_jobs)


def _accumulate(run: _Run):
    """Out-of-bag counts, means and sums of squared deviations (Welford) per point, and the models fitted."""
    n = run.X.shape[0]
    count = np.zeros(n, dtype=np.int64)
    mean = np.zeros(n)
    m2 = np.zeros(n)  # sums of squared deviations from the running mean (Welford), for the standard error
    n_fits = 0
    from tqdm.auto import tqdm

    bar = tqdm(total=run.n_estimators, desc="Data-OOB", unit="fit", leave=False,
               disable=None if run.progress is None else not run.progress)
    per_fit = run.learner is None
    # as in the sampling loop: this thread holds the pin over every fit it runs (and workers pin their
    # own), since a BLAS product's rounding depends on how many threads split it
    with pinned_threads(), bar:
        results = _per_fit_results(run) if per_fit else batched_results(
            run.learner, run.X, run.y, run.entropy, run.n_estimators, run.classification, run.score, bar,
            bootstrap_indices, _scores)
        tally = WarningTally()  # a model's warnings (ConvergenceWarning...), shown once per kind, not once per fit
        try:
            for oob, scores, fitted, *raised in results:  # in estimator order, whatever ran where
                if raised:
                    tally.merge(raised[0])
                count[oob] += 1
                delta = scores - mean[oob]
                mean[oob] += delta / count[oob]
                m2[oob] += delta * (scores - mean[oob])
                n_fits += int(fitted)
                if per_fit:
                    bar.update(1)
        finally:
            close_batches(results)  # an interrupted run stops joblib from dispatching further fits
    tally.emit(n_fits, "data_oob: raised {count} time(s) while fitting {n} bootstrap models")
    return count, mean, m2, n_fits


def _result(run: _Run, count, mean, m2, n_fits: int, start: float) -> ValuationResult:
    n, n_estimators = count.size, run.n_estimators
    never_oob = np.flatnonzero(count == 0)
    if never_oob.size:
        warnings.warn(f"data_oob: {never_oob.size} of {n} points were in every one of the {n_estimators} "
                      f"bootstrap samples, so they have no out-of-bag prediction; their values are NaN "
                      f"(info['never_oob'] lists them). Raise n_estimators.", RuntimeWarning, stacklevel=3)
    values = np.where(count > 0, mean, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        stderr = np.where(count > 1, np.sqrt(m2 / np.maximum(count - 1, 1) / np.maximum(count, 1)), np.nan)
    options = {"n_estimators": n_estimators, "task": run.task, "score": run.score_name}
    if run.learner is not None:  # only then: results of the per-fit path keep their options
        options["route"] = run.route
    info = {"n_estimators": n_estimators, "task": run.task, "score": run.score_name, "oob_counts": count,
            "n_never_oob": int(never_oob.size), "never_oob": never_oob, "n_single_class": n_estimators - n_fits,
            "route": run.route, "options": options}
    return ValuationResult(values=values, n_evaluations=n_fits, method="data_oob", seed=run.entropy,
                           wall_time=time.perf_counter() - start, stderr=stderr, n_samples=n_estimators, info=info)
