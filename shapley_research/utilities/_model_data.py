"""Data checks, metrics and the degenerate-coalition convention shared by every model utility.

Holds what :class:`~shapley_research.ModelUtility` and the batched
learners of :mod:`shapley_research.utilities.learners` both need: validation of the
train/test split, of the metric and of the degenerate-coalition options;
:class:`TargetInfo` (targets prepared once for scoring); the metric helpers;
:class:`ConstantPredictor` and the utilities of degenerate coalitions. The
conventions are documented in :class:`~shapley_research.ModelUtility` (Notes). It sits below
both so that imports point one way: ``utility -> learners -> _model_data``.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Literal, Union, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator

from ._options import DEGENERATE_MODES, resolve_degenerate  # noqa: F401  (DEGENERATE_MODES re-exported)
from .._validation import (check_class_labels, check_feature_pair, check_features, check_label_kinds,
                           check_same_columns, check_target_vector, check_two_classes, is_frame, is_sparse)

CLASSIFICATION_METRICS = ("accuracy", "neg_log_loss")
REGRESSION_METRICS = ("neg_mean_squared_error", "neg_mean_absolute_error", "r2")
_METRIC_ALIASES = {"neg_mse": "neg_mean_squared_error", "neg_mae": "neg_mean_absolute_error"}
LOG_EPS = float(np.log(np.finfo(float).eps))  # sklearn's log_loss clips probabilities at eps
LOG_ONE_MINUS_EPS = float(np.log1p(-np.finfo(float).eps))

#: A scorer ``scorer(model, X_test, y_test) -> float``, such as ``sklearn.metrics.get_scorer(name)``.
Scorer = Callable[[Any, Any, Any], float]
#: A metric as given: a name (:data:`CLASSIFICATION_METRICS`, :data:`REGRESSION_METRICS`, an alias) or a scorer.
Metric = Union[str, Scorer]
Task = Literal["classification", "regression"]


# --------------------------------------------------------------------------------------------
# Validation of the data set, the metric and the degenerate-coalition options
# --------------------------------------------------------------------------------------------

def _check_targets(y: ArrayLike, name: str, n_samples: int, X_name: str, task: str) -> np.ndarray:
    vector = check_target_vector(y, name, n_samples, X_name, noun="targets")
    if task == "regression":
        if vector.dtype.kind in "cUS":
            raise TypeError(f"{name} must be real numbers for a regression metric, got dtype {vector.dtype}.")
        try:
            vector = vector.astype(float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be numeric for a regression metric.") from exc
        if not np.isfinite(vector).all():
            raise ValueError(f"{name} contains NaN or infinite values.")
        return vector
    return check_class_labels(vector, name)


def is_raw_table(X: object) -> bool:
    """A DataFrame that is not a finite numeric table (text, categories, missing values): given as is.

    A DataFrame of sparse columns is not one: it is taken as a sparse matrix (:func:`check_sparse_features`).
    """
    if not is_frame(X) or is_sparse(X):
        return False
    try:
        check_features(X, "X")
    except (TypeError, ValueError):
        return True
    return False


def check_table(X: Any, name: str) -> Any:
    """A DataFrame given to the model as it is: at least one row and one column, left as it is."""
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty: it must contain at least one sample.")
    if X.shape[1] == 0:
        raise ValueError(f"{name} has no features (shape {X.shape}).")
    return X


def _check_tables(X_train: Any, X_test: Any) -> tuple[Any, Any]:
    """Two DataFrames with the same columns and at least one row and column each, left as they are."""
    for name, X in (("X_train", X_train), ("X_test", X_test)):
        if not is_frame(X):
            raise TypeError(f"{name} must be a DataFrame when the other features are a DataFrame with "
                            f"non-numeric columns or missing values (both go to the model as they are), "
                            f"got {type(X).__name__}.")
        check_table(X, name)
    check_same_columns(X_train, X_test)
    return X_train, X_test


def take_rows(X: Any, mask: NDArray[np.bool_]) -> Any:
    """The rows of ``mask``: ``X[mask]`` for arrays, by position for DataFrames and sparse matrices."""
    if is_frame(X):
        return X.iloc[np.flatnonzero(mask)]
    return X[np.flatnonzero(mask)] if is_sparse(X) else X[mask]


def given_as_is(X: object) -> bool:
    """Features that go to the model as they are (a raw DataFrame, a sparse matrix): no batched learner."""
    return is_frame(X) or is_sparse(X)


def as_is_kind(X_train: Any, X_test: Any) -> str:
    """What features given to the model as they are (:func:`given_as_is`) are, in words."""
    if is_frame(X_train) or is_frame(X_test):
        return "DataFrames with non-numeric columns or missing values"
    return "sparse matrices" if is_sparse(X_train) and is_sparse(X_test) else "sparse matrices in part"


def _n_rows(X: Any) -> int:
    return int(X.shape[0]) if hasattr(X, "shape") else len(X)


def check_sparse_features(X: Any, name: str) -> Any:
    """Features a model takes as they are when sparse: a SciPy sparse matrix or array (or a DataFrame of sparse
    columns) as CSR float64.

    Parameters
    ----------
    X : scipy.sparse matrix or array, DataFrame of sparse columns, or array-like
        The features; a dense one gets :func:`~shapley_research._validation.check_features`.
    name : str
        The argument's name, for the errors.

    Returns
    -------
    scipy.sparse.csr_matrix or csr_array (float64), or numpy.ndarray

    Raises
    ------
    ValueError
        If ``X`` is not 2-D, has no row or column, or holds NaN or infinity.
    TypeError
        If its values are not real numbers.
    """
    if not is_sparse(X):
        return check_features(X, name)
    if is_frame(X):  # every column sparse: as a matrix, without densifying it
        X = X.sparse.to_coo()
    if getattr(X, "ndim", 2) != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}.")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a sparse matrix of real numbers, got dtype {X.dtype}.")
    X = X.tocsr().astype(np.float64)
    check_table(X, name)
    if not np.isfinite(X.data).all():
        raise ValueError(f"{name} contains NaN or infinite values.")
    return X


def _check_sparse_pair(X_train: Any, X_test: Any) -> tuple[Any, Any]:
    """Features of which one at least is sparse, each checked (:func:`check_sparse_features`), of one width."""
    X_tr, X_te = check_sparse_features(X_train, "X_train"), check_sparse_features(X_test, "X_test")
    if X_tr.shape[1] != X_te.shape[1]:
        raise ValueError(f"X_train has {X_tr.shape[1]} features but X_test has {X_te.shape[1]}.")
    return X_tr, X_te


def check_dataset(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, task: str, *,
                  tables: bool = False, allow_nan: bool = False) -> tuple[Any, np.ndarray, Any, np.ndarray]:
    """Validate a train/test split; return float features and 1-D targets.

    Returns ``(X_train, y_train, X_test, y_test)``: float64 ``(N, d)`` and
    ``(m, d)`` features (or the DataFrames, see ``tables``), targets of
    shapes ``(N,)`` and ``(m,)`` (float64 for regression, the labels as
    given for classification).

    Raises ``ValueError`` for classification if ``y_train`` holds a single
    class (:func:`~shapley_research._validation.check_two_classes`).

    With ``tables=True`` a DataFrame that is not a finite numeric table (see
    :func:`is_raw_table`) is kept as it is, for a model to take it (X_test
    then must be a DataFrame with the same columns), and a SciPy sparse matrix
    is kept sparse (CSR, float64, checked finite); anything else is checked
    and converted to float exactly as without it. ``allow_nan``: arrays may
    hold missing values (for a model that takes them).
    """
    X_tr: Any
    X_te: Any
    if tables and (is_raw_table(X_train) or is_raw_table(X_test)):
        X_tr, X_te = _check_tables(X_train, X_test)
    elif tables and (is_sparse(X_train) or is_sparse(X_test)):
        X_tr, X_te = _check_sparse_pair(X_train, X_test)
    else:
        X_tr, X_te = check_feature_pair(X_train, X_test, allow_nan)
    y_tr = _check_targets(y_train, "y_train", X_tr.shape[0], "X_train", task)
    y_te = _check_targets(y_test, "y_test", X_te.shape[0], "X_test", task)
    if task == "classification":
        check_two_classes(y_tr, "y_train")
        check_label_kinds(y_tr, y_te)
    return X_tr, y_tr, X_te, y_te


def resolve_metric(metric: Metric, scorer_names: bool = False) -> tuple[Metric, Task | None]:
    """Return ``(metric, task)``; ``task`` is None for a callable scorer.

    With ``scorer_names``, a string that is none of this package's metrics but
    names a scikit-learn scorer (``"roc_auc"``, ``"f1_macro"``, any of
    ``sklearn.metrics.get_scorer_names()``) becomes ``get_scorer(metric)``: a
    callable scorer (``ModelUtility``, which fits one model per coalition, can
    call any; the batched learners compute their own metrics only), with the
    task of its score function (:func:`scorer_task`).
    """
    if callable(metric) and not isinstance(metric, str):
        return metric, None
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string or a callable scorer(model, X, y), got {metric!r}.")
    name = _METRIC_ALIASES.get(metric, metric)
    if name in CLASSIFICATION_METRICS:
        return name, "classification"
    if name in REGRESSION_METRICS:
        return name, "regression"
    from sklearn.metrics import get_scorer, get_scorer_names

    if scorer_names and name in get_scorer_names():
        scorer = get_scorer(name)
        return scorer, scorer_task(scorer)
    known = sorted(CLASSIFICATION_METRICS + REGRESSION_METRICS + tuple(_METRIC_ALIASES))
    if scorer_names:
        raise ValueError(f"metric must be one of {known}, another name of sklearn.metrics.get_scorer_names(), or a "
                         f"callable scorer(model, X_test, y_test); got {metric!r}.")
    note = (f" scikit-learn's scorer {name!r} needs ModelUtility, which fits one model per coalition."
            if name in get_scorer_names() else "")
    raise ValueError(f"metric must be one of {known}; got {metric!r}.{note}")


def scorer_task(scorer: Any) -> Task | None:
    """The task of a scikit-learn scorer, from the module of its score function (None: neither, e.g. clustering)."""
    module = getattr(getattr(scorer, "_score_func", None), "__module__", "") or ""
    if module.endswith("_regression"):
        return "regression"
    return "classification" if module.endswith(("_classification", "_ranking")) else None


def fresh_copy(model: Any) -> Any:
    """An unfitted copy of ``model``: ``sklearn.base.clone`` for estimators, ``copy.deepcopy`` for other objects."""
    if hasattr(model, "get_params"):
        from sklearn.base import clone

        return clone(model)
    return copy.deepcopy(model)


def estimator_kind(model: Any) -> str | None:
    """"classifier" or "regressor" by scikit-learn's tags (or ``_estimator_type``), else None."""
    from sklearn.base import is_classifier, is_regressor

    try:
        return "classifier" if is_classifier(model) else "regressor" if is_regressor(model) else None
    except Exception:  # noqa: BLE001 - objects outside sklearn's tag system
        kind = getattr(model, "_estimator_type", None)
        return kind if kind in ("classifier", "regressor") else None


# Estimators whose random_state matters only with some parameters: the test of those (on get_params()).
_RANDOM_ONLY_WHEN: dict[str, Callable[[dict], bool]] = {
    "LogisticRegression": lambda params: params.get("solver") in ("liblinear", "sag", "saga"),
    "Ridge": lambda params: params.get("solver") in ("sag", "saga"),
    "RidgeClassifier": lambda params: params.get("solver") in ("sag", "saga"),
    "SVC": lambda params: params.get("probability") is True,
    "NuSVC": lambda params: params.get("probability") is True,
    "Lasso": lambda params: params.get("selection") == "random",
    "ElasticNet": lambda params: params.get("selection") == "random",
    "MultiTaskLasso": lambda params: params.get("selection") == "random",
    "MultiTaskElasticNet": lambda params: params.get("selection") == "random",
    "LinearSVC": lambda params: params.get("dual") is not False,
    "LinearSVR": lambda params: params.get("dual") is not False,
}


def _deep_params(model: Any) -> dict:
    """``model.get_params(deep=True)``, or an empty dict for an object without scikit-learn's parameters."""
    try:
        return dict(model.get_params(deep=True))
    except Exception:  # noqa: BLE001 - an object without scikit-learn's parameters has none to read
        return {}


def _unset_random_states(params: dict) -> list[str]:
    return sorted(key for key, value in params.items()
                  if value is None and (key == "random_state" or key.endswith("__random_state")))


def unseeded_random_states(model: Any) -> list[str]:
    """The ``get_params(deep=True)`` keys of ``model``'s ``random_state`` parameters left at None (steps too)."""
    return _unset_random_states(_deep_params(model))


def unseeded_randomness(model: Any) -> list[str]:
    """Names of the estimators in ``model`` (itself, or a pipeline's steps) that draw fresh randomness at each fit.

    Those with ``random_state=None``, but for the cases of :data:`_RANDOM_ONLY_WHEN`
    whose parameters use no randomness (``LogisticRegression``'s lbfgs, say). A
    heuristic for a warning: a search over a grid of solvers is judged by its
    base estimator's, and an object it cannot read is named by its key.
    """
    params = _deep_params(model)
    names = []
    for key in _unset_random_states(params):
        step = model if key == "random_state" else params.get(key.rsplit("__", 1)[0])
        if step is None:
            names.append(key)
            continue
        # a subclass (a LogisticRegression with a custom fit, say) follows its scikit-learn base's rule
        rule = next((_RANDOM_ONLY_WHEN[cls.__name__] for cls in type(step).__mro__
                     if cls.__name__ in _RANDOM_ONLY_WHEN), None)
        try:
            random = rule is None or rule(step.get_params(deep=False))
        except Exception:  # noqa: BLE001 - a step without readable parameters: assume it draws
            random = True
        if random:
            names.append(type(step).__name__)
    return names


def check_metric_suits_model(model: Any, metric: Metric, metric_task: str | None) -> None:
    """Refuse a string metric of the other task than a scikit-learn classifier's or regressor's.

    ``r2`` on a classifier would score class labels as numbers, ``accuracy``
    on a regressor would count exact real-valued hits: never what is meant
    by default. An explicit ``task=`` (checked by the caller against the
    metric) or a scorer callable still scores anything deliberately.
    """
    kind = estimator_kind(model)
    expected = {"classifier": "classification", "regressor": "regression"}.get(kind or "")
    if metric_task is None or expected is None or expected == metric_task:
        return
    if expected == "classification":
        names = "'accuracy' or 'neg_log_loss'" if hasattr(model, "predict_proba") else "'accuracy'"
    else:
        names = "'r2', 'neg_mse' or 'neg_mae'"
    raise ValueError(f"metric={metric!r} is a {metric_task} metric, but {type(model).__name__} is a {kind}; "
                     f"use {names}, or pass task={metric_task!r} to score its predictions as such deliberately.")


def check_degenerate_options(degenerate: Any, default_utility: float | None, min_samples: int,
                             n_players: int) -> tuple[str, float | None, int]:
    """Validate ``degenerate`` (a mode or a :class:`~._options.DegeneratePolicy`) with its two settings.

    ``min_samples`` may be at most ``n_players``: above, every coalition, the
    full training set too, would be degenerate and no model ever trained.
    """
    mode, default_utility, min_samples = resolve_degenerate(degenerate, default_utility, min_samples)
    if min_samples > n_players:
        raise ValueError(f"min_samples={min_samples} exceeds the {n_players} training points: every coalition, "
                         "the full training set too, would be degenerate and no model would be trained.")
    return mode, default_utility, min_samples


# --------------------------------------------------------------------------------------------
# Targets, metrics and the constant model of degenerate coalitions
# --------------------------------------------------------------------------------------------

class TargetInfo:
    """Everything about the targets that scoring needs, computed once.

    Classification: ``classes`` (sorted training labels), ``y_train_index``,
    ``y_test_index`` (``-1`` for a test label absent from training),
    ``train_onehot`` (N, K), ``prior`` and ``test_fraction`` per class.
    Regression: ``y_train``, ``y_test``, ``ss_tot``.
    """

    def __init__(self, y_train: np.ndarray, y_test: np.ndarray, task: str) -> None:
        self.task = task
        self.y_train, self.y_test = y_train, y_test
        if task == "classification":
            self.classes = np.unique(y_train)
            self.y_train_index = np.searchsorted(self.classes, y_train)
            position = np.clip(np.searchsorted(self.classes, y_test), 0, len(self.classes) - 1)
            self.y_test_index = np.where(self.classes[position] == y_test, position, -1)
            k = len(self.classes)
            self.train_onehot = np.zeros((len(y_train), k))
            self.train_onehot[np.arange(len(y_train)), self.y_train_index] = 1.0
            self.prior = self.train_onehot.mean(axis=0)
            seen = self.y_test_index >= 0
            self.test_fraction = np.bincount(self.y_test_index[seen], minlength=k) / len(y_test)
            self.unseen_test_fraction = 1.0 - seen.mean()
        else:
            self.ss_tot = float(((y_test - y_test.mean()) ** 2).sum())

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def class_counts(self, masks: np.ndarray) -> NDArray[np.float64]:
        """Number of points of each class in each coalition, shape (m, K)."""
        return masks.astype(float) @ self.train_onehot


def r2_from_sums(ss_res: ArrayLike, ss_tot: float) -> NDArray[np.float64]:
    """``1 - ss_res / ss_tot`` with ``sklearn.metrics.r2_score``'s finite convention (same shape as ``ss_res``)."""
    residual = np.asarray(ss_res, dtype=float)
    if ss_tot == 0.0:
        return np.where(residual == 0.0, 1.0, 0.0)
    return 1.0 - residual / ss_tot


def regression_scores(predictions: np.ndarray, y_test: np.ndarray, metric: str,
                      ss_tot: float) -> NDArray[np.float64]:
    """Metric of each row of ``predictions`` (m, n_test) against ``y_test``."""
    residual = np.atleast_2d(predictions) - y_test
    if metric == "neg_mean_squared_error":
        return -np.mean(residual**2, axis=1)
    if metric == "neg_mean_absolute_error":
        return -np.mean(np.abs(residual), axis=1)
    return r2_from_sums(np.sum(residual**2, axis=1), ss_tot)


def clipped_mean_log_probability(log_p_true: np.ndarray) -> NDArray[np.float64]:
    """Row means of ``log p`` of the true labels, clipped like sklearn's log_loss."""
    return np.mean(np.clip(log_p_true, LOG_EPS, LOG_ONE_MINUS_EPS), axis=-1)


def constant_frequencies(counts: np.ndarray, info: TargetInfo) -> NDArray[np.float64]:
    """Class probabilities (m, K) of the constant model: the (weighted) class frequencies, the prior when empty."""
    sizes = counts.sum(axis=1, keepdims=True)
    return np.where(sizes > 0, counts / np.maximum(sizes, 1), info.prior)


def constant_means(weights: np.ndarray, info: TargetInfo) -> NDArray[np.float64]:
    """Prediction (m,) of the constant regression model: the (weighted) mean target, 0 when empty."""
    sizes = weights.sum(axis=1)
    return np.where(sizes > 0, (weights @ info.y_train) / np.maximum(sizes, 1), 0.0)


def constant_utilities(masks: np.ndarray, info: TargetInfo, metric: Metric, counts: np.ndarray | None = None,
                       X_test: Any = None) -> NDArray[np.float64]:
    """Utility of the constant model (see :class:`ConstantPredictor`) of each coalition.

    ``masks`` is a boolean ``(m, N)`` array (or ``(m, N)`` sample weights),
    ``counts`` the ``(m, K)`` class counts when already known; returns the
    ``(m,)`` float64 utilities. ``X_test`` is what a callable metric scores on.
    """
    if callable(metric):
        return np.array([float(metric(ConstantPredictor.from_coalition(mask, info), X_test, info.y_test))
                         for mask in masks])
    if info.task == "classification":
        freq = constant_frequencies(info.class_counts(masks) if counts is None else counts, info)
        if metric == "accuracy":
            return info.test_fraction[np.argmax(freq, axis=1)]
        with np.errstate(divide="ignore"):
            log_freq = np.log(freq)
        clipped = np.clip(log_freq, LOG_EPS, LOG_ONE_MINUS_EPS)
        return clipped @ info.test_fraction + info.unseen_test_fraction * LOG_EPS
    means = constant_means(masks, info)
    return regression_scores(np.repeat(means[:, None], len(info.y_test), axis=1), info.y_test, metric,
                             info.ss_tot)


class ConstantPredictor(BaseEstimator):
    """The model of a degenerate coalition: it predicts from the labels of ``S`` alone.

    Classification: probabilities = class frequencies in ``S`` (the training
    prior when ``S`` is empty), label = most frequent class (ties to the
    smallest label). Regression: the mean target of ``S`` (0 when ``S`` is
    empty). Offers ``predict`` / ``predict_proba`` / ``classes_`` and
    scikit-learn's estimator tags (a classifier when ``classes`` is given, a
    regressor otherwise), so that a scorer object such as
    ``sklearn.metrics.get_scorer("roc_auc_ovr")`` scores it like a fitted
    estimator.

    Parameters
    ----------
    classes : array of shape (n_classes,), optional
        The class labels; ``None`` for regression.
    probabilities : array of shape (n_classes,), optional
        The predicted class probabilities (classification).
    value : float
        The predicted target (regression).
    """

    def __init__(self, classes: ArrayLike | None = None, probabilities: ArrayLike | None = None,
                 value: float = 0.0) -> None:
        self.classes = classes
        self.probabilities = probabilities
        self.value = value
        if classes is not None:
            self.classes_ = np.asarray(classes)
        self._probabilities = None if probabilities is None else np.asarray(probabilities, dtype=float)
        self._value = float(value)

    @property
    def _estimator_type(self) -> str:  # scikit-learn < 1.6 reads this instead of the tags
        return "regressor" if self.classes is None else "classifier"

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import ClassifierTags, RegressorTags

        tags = super().__sklearn_tags__()
        tags.estimator_type = self._estimator_type
        if self.classes is None:
            tags.regressor_tags = RegressorTags()
        else:
            tags.classifier_tags = ClassifierTags()
        return tags

    @classmethod
    def from_coalition(cls, mask: ArrayLike, info: TargetInfo) -> ConstantPredictor:
        """The constant model of the coalition ``mask`` (boolean, length ``N``)."""
        members = np.asarray(mask, dtype=bool)
        if info.task == "classification":
            counts = info.train_onehot[members].sum(axis=0)
            freq = counts / counts.sum() if counts.sum() > 0 else info.prior
            return cls(classes=info.classes, probabilities=freq)
        return cls(value=float(info.y_train[members].mean()) if members.any() else 0.0)

    def fit(self, X: Any, y: Any) -> ConstantPredictor:  # pragma: no cover - for the estimator protocol only
        """Nothing to fit: the prediction is fixed at construction."""
        return self

    def predict(self, X: Any) -> np.ndarray:
        """``len(X)`` copies of the predicted label (classification) or target (regression)."""
        n = _n_rows(X)
        if self.classes is None:
            return np.full(n, self._value)
        probabilities = cast(NDArray[np.float64], self._probabilities)  # given with the classes
        return np.repeat(self.classes_[np.argmax(probabilities)], n)

    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        """The class probabilities, shape ``(len(X), n_classes)`` (classification only)."""
        if self.classes is None:
            raise AttributeError("a regression ConstantPredictor has no predict_proba.")
        return np.tile(cast(NDArray[np.float64], self._probabilities), (_n_rows(X), 1))


# --------------------------------------------------------------------------------------------
# Degenerate coalitions, shared by ModelUtility and the batched learners
# --------------------------------------------------------------------------------------------

def degenerate_rows(masks: np.ndarray, info: TargetInfo, min_samples: int,
                    counts: np.ndarray | None = None) -> NDArray[np.bool_]:
    """Boolean per coalition: empty, fewer than ``min_samples`` points, or (classification) one class."""
    sizes = masks.sum(axis=1)
    degenerate = sizes < min_samples
    if info.task == "classification":
        counts = info.class_counts(masks) if counts is None else counts
        degenerate |= (counts > 0).sum(axis=1) < 2
    return degenerate


def degenerate_utilities(masks: np.ndarray, info: TargetInfo, metric: Metric, mode: str, default_utility: float | None,
                         counts: np.ndarray | None = None, X_test: Any = None,
                         owner: str = "ModelUtility") -> NDArray[np.float64]:
    """Utilities of degenerate coalitions under the ``degenerate`` convention."""
    if masks.shape[0] == 0:
        return np.empty(0)
    if mode == "default":
        return np.full(masks.shape[0], float(cast(float, default_utility)))  # checked with the mode
    if mode == "raise":
        size = int(masks[0].sum())
        raise ValueError(f"{owner}: cannot fit a model on a degenerate coalition of {size} point(s) "
                         "(empty, fewer than min_samples points, or a single class); pass "
                         "degenerate='constant' or degenerate='default' to give it a utility.")
    return constant_utilities(masks, info, metric, counts=counts, X_test=X_test)


def split_degenerate(masks: np.ndarray, info: TargetInfo, metric: Metric, mode: str, default_utility: float | None,
                     min_samples: int, X_test: Any = None, owner: str = "ModelUtility"
                     ) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64] | None]:
    """Utilities (m,) with those of the degenerate coalitions filled in, the degenerate rows, the class counts.

    The first step of every model utility's ``evaluate``: the entries of the
    non-degenerate rows are left for the fits. ``counts`` is ``None`` for regression.
    """
    counts = info.class_counts(masks) if info.task == "classification" else None
    degenerate = degenerate_rows(masks, info, min_samples, counts)
    values = np.empty(masks.shape[0])
    if degenerate.any():
        values[degenerate] = degenerate_utilities(masks[degenerate], info, metric, mode, default_utility,
                                                  None if counts is None else counts[degenerate], X_test, owner)
    return values, degenerate, counts
