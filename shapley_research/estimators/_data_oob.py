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

import copy
import time
import warnings
from typing import Callable

import numpy as np

from ._sampling._loop import batch_rng
from .._threads import Pinned, pinned_threads
from .._validation import (check_bool, check_choice, check_class_labels, check_features, check_int, check_n_jobs,
                           check_real_array, check_seed, check_target_vector)
from ..result import ValuationResult

__all__ = ["data_oob", "bootstrap_indices"]

DEFAULT_N_ESTIMATORS = 200
TASKS = ("auto", "classification", "regression")


def bootstrap_indices(seed: int, estimator: int, n_samples: int) -> np.ndarray:
    """Rows of the bootstrap sample of estimator ``estimator`` in a run with entropy ``seed``.

    ``n_samples`` uniform draws from ``range(n_samples)`` with replacement,
    from the estimator's own stream ``SeedSequence(seed, spawn_key=(0,
    estimator))`` (the sampling loop's batch stream): they depend on the seed
    and the estimator's number only, never on which worker fits it. Pass
    ``result.seed`` to recompute the samples of a run.
    """
    return batch_rng(seed, estimator).integers(n_samples, size=n_samples)


def correctness(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """The default score of classifiers: ``1.0`` where the prediction is the label, else ``0.0``."""
    return (y_pred == y_true).astype(float)


def negative_squared_error(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """The default score of regressors: ``-(y_pred - y_true)**2``."""
    return -(np.asarray(y_pred, dtype=float) - y_true) ** 2


def _is_classifier(model) -> bool:
    from sklearn.base import is_classifier

    try:
        return bool(is_classifier(model))
    except Exception:  # noqa: BLE001 - objects outside scikit-learn's tag system
        return getattr(model, "_estimator_type", None) == "classifier"


def _fresh_copy(model):
    """``sklearn.base.clone`` for scikit-learn estimators, a deep copy for other fit/predict objects."""
    if hasattr(model, "get_params"):
        from sklearn.base import clone

        return clone(model)
    return copy.deepcopy(model)


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
        return check_class_labels(y, "y_train")
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


def _fit_one(model, X: np.ndarray, y: np.ndarray, seed: int, estimator: int, classification: bool,
             score: Callable) -> tuple[np.ndarray, np.ndarray, bool]:
    """Fit estimator ``estimator`` on its bootstrap sample; return its out-of-bag rows, their scores, and
    whether a model was fitted (a classifier's sample holding one class is not: it predicts that class)."""
    n = X.shape[0]
    rows = bootstrap_indices(seed, estimator, n)
    in_bag = np.zeros(n, dtype=bool)
    in_bag[rows] = True
    oob = np.flatnonzero(~in_bag)
    if classification:
        classes = np.unique(y[rows])
        if classes.size == 1:  # most classifiers refuse one class; the only sensible prediction is that class
            return oob, _scores(score, y[oob], np.full(oob.size, classes[0], dtype=y.dtype), "model"), False
    fitted = _fresh_copy(model)
    try:
        fitted.fit(X[rows], y[rows])
    except Exception as exc:
        if hasattr(exc, "add_note"):
            exc.add_note(f"data_oob: while fitting {type(model).__name__} on bootstrap sample {estimator}.")
        raise
    if oob.size == 0:
        return oob, np.empty(0), True
    return oob, _scores(score, y[oob], fitted.predict(X[oob]), f"{type(model).__name__}.predict"), True


def data_oob(model, X_train, y_train, n_estimators: int = DEFAULT_N_ESTIMATORS, seed=None, *,
             task: str = "auto", score: Callable | None = None, n_jobs: int | None = None,
             progress: bool | None = None) -> ValuationResult:
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

    A point in every bootstrap sample (probability :math:`(1 - (1-1/N)^N)^B
    \approx 0.63^B`: only with a small ``B``) has no out-of-bag prediction:
    its value and standard error are NaN, with a ``RuntimeWarning``, rather
    than a made-up number; ``info["never_oob"]`` lists such points. Raise
    ``n_estimators`` if that happens. A point with :math:`B_i = 1` has a value
    and a NaN standard error.

    For a classifier, a bootstrap sample holding a single class is not fitted
    (most classifiers refuse one class): that estimator predicts its class for
    every point. Such estimators are counted in ``info["n_single_class"]`` and
    not in ``n_evaluations``.

    The values are bit-identical for any ``n_jobs``: estimator ``b`` draws
    its sample from its own stream (:func:`bootstrap_indices`), every fit
    runs with one BLAS/OpenMP thread wherever it runs, and the scores are
    combined in estimator order.

    Parameters
    ----------
    model : estimator
        An object with ``fit(X, y)`` and ``predict(X)``, e.g. any scikit-learn
        estimator. Never modified: each estimator is a fresh
        ``sklearn.base.clone`` (a deep copy for objects without
        ``get_params``).
    X_train : array_like of shape (N, d)
        Finite real features of the points to value.
    y_train : array_like of shape (N,)
        Their labels (classification, any sortable values) or real targets
        (regression).
    n_estimators : int, default 200
        ``B``, the number of bootstrap samples, and so (up to single-class
        samples) of model fits.
    seed : int, optional
        Seed of the bootstrap streams; ``None`` draws one (kept on the result).
    task : {"auto", "classification", "regression"}, default "auto"
        ``"auto"``: classification for scikit-learn classifiers (or objects
        with ``_estimator_type = "classifier"``), else regression. It picks the
        default score, the checks of ``y_train`` and the single-class rule.
    score : callable, optional
        ``score(y_true, y_pred) -> scores``, one finite real number per point
        (higher is better), for arrays of the out-of-bag points' labels and
        predictions. Default: :func:`correctness` ``1[y_pred == y_true]`` for
        classification, :func:`negative_squared_error` for regression.
    n_jobs : int, optional
        Fit estimators in parallel through joblib (``None`` or 1: in this
        process; -1: all cores; ``joblib.parallel_config`` picks a backend).
    progress : bool, optional
        Show a progress bar over the fits (default: only on an interactive
        terminal).

    Returns
    -------
    ValuationResult
        ``method="data_oob"``, ``n_evaluations`` the model fits made,
        ``n_samples = B``, ``stderr`` as above. ``info`` holds
        ``n_estimators``, ``task``, ``score`` (its name), ``oob_counts``
        (:math:`B_i` per point), ``n_never_oob`` and ``never_oob`` (the points
        with :math:`B_i = 0`) and ``n_single_class``. No sample statistics
        (``state``) are kept: runs are not merged with ``merge_results``;
        raise ``n_estimators`` instead.

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
    _check_model(model)
    X = check_features(X_train, "X_train")
    task = check_choice(task, "task", TASKS)
    if task == "auto":
        task = "classification" if _is_classifier(model) else "regression"
    y = _check_targets(y_train, X.shape[0], task)
    n_estimators = check_int(n_estimators, "n_estimators", minimum=1)
    entropy = check_seed(seed)
    if score is not None and not callable(score):
        raise TypeError(f"score must be a callable score(y_true, y_pred) -> one score per point, "
                        f"got {type(score).__name__}.")
    n_jobs = check_n_jobs(n_jobs)
    if progress is not None:
        progress = check_bool(progress, "progress")
    classification = task == "classification"
    score_name = getattr(score, "__name__", type(score).__name__) if score is not None else (
        "correctness" if classification else "negative_squared_error")
    if score is None:
        score = correctness if classification else negative_squared_error

    n = X.shape[0]
    count = np.zeros(n, dtype=np.int64)
    mean = np.zeros(n)
    m2 = np.zeros(n)  # sums of squared deviations from the running mean (Welford), for the standard error
    n_fits = 0
    from tqdm.auto import tqdm

    bar = tqdm(total=n_estimators, desc="Data-OOB", unit="fit", leave=False,
               disable=None if progress is None else not progress)
    # as in the sampling loop: this thread holds the pin over every fit it runs (and workers pin their
    # own), since a BLAS product's rounding depends on how many threads split it
    with pinned_threads(), bar:
        tasks = ((model, X, y, entropy, b, classification, score) for b in range(n_estimators))
        if n_jobs in (None, 1):
            results = (_fit_one(*args) for args in tasks)
        else:
            from joblib import Parallel, delayed

            results = Parallel(n_jobs=n_jobs, return_as="generator")(
                delayed(Pinned(_fit_one))(*args) for args in tasks)
        try:
            for oob, scores, fitted in results:  # in estimator order, whatever ran where
                count[oob] += 1
                delta = scores - mean[oob]
                mean[oob] += delta / count[oob]
                m2[oob] += delta * (scores - mean[oob])
                n_fits += int(fitted)
                bar.update(1)
        finally:
            results.close()  # an interrupted run stops joblib from dispatching further fits

    never_oob = np.flatnonzero(count == 0)
    if never_oob.size:
        warnings.warn(f"data_oob: {never_oob.size} of {n} points were in every one of the {n_estimators} "
                      f"bootstrap samples, so they have no out-of-bag prediction; their values are NaN "
                      f"(info['never_oob'] lists them). Raise n_estimators.", RuntimeWarning, stacklevel=2)
    values = np.where(count > 0, mean, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        stderr = np.where(count > 1, np.sqrt(m2 / np.maximum(count - 1, 1) / np.maximum(count, 1)), np.nan)
    info = {"n_estimators": n_estimators, "task": task, "score": score_name, "oob_counts": count,
            "n_never_oob": int(never_oob.size), "never_oob": never_oob, "n_single_class": n_estimators - n_fits,
            "options": {"n_estimators": n_estimators, "task": task, "score": score_name}}
    return ValuationResult(values=values, n_evaluations=n_fits, method="data_oob", seed=entropy,
                           wall_time=time.perf_counter() - start, stderr=stderr, n_samples=n_estimators, info=info)
