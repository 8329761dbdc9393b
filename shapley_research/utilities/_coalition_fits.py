"""What surrounds one coalition's fit in :class:`~shapley_research.ModelUtility`.

* :func:`with_all_classes`: a fitted classifier seen with the classes of the
  whole training set, so that scorer objects score coalitions that miss a class;
* :func:`fit_size_limit`: the smallest coalition a model is known to need;
* :func:`collected_warnings` and :class:`WarningTally`: the warnings raised
  while fitting and scoring coalitions, reported once per kind with a count;
* :class:`CoalitionFitWarning` and :func:`unfit_message`: the one warning about
  coalitions that could not be fitted;
* :class:`OncePerGame`: each kind of those warnings shown once per game, the
  first time (the batched learners' warnings too);
* :func:`check_scorer_classes`: a scorer of probabilities or decision scores
  refused when ``y_test`` holds classes that ``y_train`` lacks.

The conventions themselves are documented once, in :class:`~shapley_research.ModelUtility` (Notes).
"""

from __future__ import annotations

import threading
import warnings
from numbers import Integral
from typing import TYPE_CHECKING, Any, Callable, Hashable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils.metaestimators import available_if

from .._warnings import NUMBER, WarningTally, collected_warnings

if TYPE_CHECKING:
    from ._model_data import TargetInfo

__all__ = ["AllClassesModel", "with_all_classes", "fit_size_limit", "collected_warnings", "WarningTally",
           "CoalitionFitWarning", "unfit_message", "describe_error", "OncePerGame", "check_scorer_classes",
           "unseen_classes_note", "check_scorer"]


# --------------------------------------------------------------------------------------------
# Every class of the training set
# --------------------------------------------------------------------------------------------

def _inner_has(method: str) -> Callable[[AllClassesModel], bool]:
    return lambda self: hasattr(self.coalition_model_, method)


class AllClassesModel:
    """A fitted classifier that answers with a column for every class of the training set.

    The convention for the classes the coalition missed is documented in
    :class:`~shapley_research.ModelUtility` (Notes, "Classes a coalition missed").
    """

    _estimator_type = "classifier"  # scikit-learn < 1.6 reads this instead of the tags

    def __init__(self, model: Any, classes: ArrayLike) -> None:
        self.coalition_model_ = model
        self.classes_ = np.asarray(classes)
        self._columns = np.searchsorted(self.classes_, np.asarray(model.classes_))

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import get_tags

        return get_tags(self.coalition_model_)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("coalition_model_", "classes_", "_columns"):
            raise AttributeError(name)  # never recurse while unpickling or half-built
        return getattr(self.coalition_model_, name)

    def predict(self, X: Any) -> np.ndarray:
        return self.coalition_model_.predict(X)

    @available_if(_inner_has("predict_proba"))
    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        return self._spread(self.coalition_model_.predict_proba(X), 0.0)

    @available_if(_inner_has("predict_log_proba"))
    def predict_log_proba(self, X: Any) -> NDArray[np.float64]:
        return self._spread(self.coalition_model_.predict_log_proba(X), -np.inf)

    @available_if(_inner_has("decision_function"))
    def decision_function(self, X: Any) -> NDArray[np.float64]:
        scores = np.asarray(self.coalition_model_.decision_function(X), dtype=float)
        if scores.ndim == 1:  # two classes: the score of classes_[1]; classes_[0]'s is its negation (sklearn's rule)
            scores = np.column_stack([-scores, scores])
        lowest = scores.min(axis=1, keepdims=True)
        return self._spread(scores, lowest - 1.0 - np.abs(lowest))

    def _spread(self, values: ArrayLike, fill: float | NDArray[np.float64]) -> NDArray[np.float64]:
        array = np.asarray(values, dtype=float)
        out = np.empty((array.shape[0], len(self.classes_)))
        out[...] = fill
        out[:, self._columns] = array
        return out


def with_all_classes(model: Any, classes: np.ndarray) -> Any:
    """``model`` itself when it knows every class in ``classes``, else an :class:`AllClassesModel`."""
    seen = getattr(model, "classes_", None)
    if seen is None:
        return model
    seen = np.asarray(seen)
    if seen.ndim != 1 or len(seen) == len(classes) or len(seen) == 0:
        return model
    position = np.clip(np.searchsorted(classes, seen), 0, len(classes) - 1)
    if not np.array_equal(classes[position], seen):  # labels the training set does not hold: leave it alone
        return model
    return AllClassesModel(model, classes)


#: The methods of the model that scikit-learn < 1.4's scorer classes call (later ones name it in _response_method).
_SCORER_METHODS = {"_PredictScorer": ("predict",), "_ProbaScorer": ("predict_proba",),
                   "_ThresholdScorer": ("decision_function", "predict_proba")}


def scorer_methods(metric: Any) -> tuple[str, ...] | None:
    """The methods of the model a scikit-learn scorer object calls, or None for any other callable."""
    if not type(metric).__module__.startswith("sklearn."):
        return None
    method = getattr(metric, "_response_method", None)
    if method is None:
        return _SCORER_METHODS.get(type(metric).__name__)
    return (method,) if isinstance(method, str) else tuple(method)


def check_model_responds(model: Any, metric: Any, name: Any = None) -> None:
    """Refuse a metric of probabilities or decision scores for a model with no method that gives them.

    ``"neg_log_loss"`` needs ``predict_proba``; a scikit-learn scorer needs one of the methods it calls
    (:func:`scorer_methods`) besides ``predict``. Otherwise every coalition's scoring would fail, after its fit.
    ``name``: the metric as the user gave it (a scorer's name), for the message.

    Raises
    ------
    TypeError
        Naming the metric, the methods it needs and the model.
    """
    needed = ("predict_proba",) if isinstance(metric, str) and metric == "neg_log_loss" else tuple(
        method for method in scorer_methods(metric) or () if method != "predict")
    if needed and not any(hasattr(model, method) for method in needed):
        shown = metric if name is None else name
        raise TypeError(f"metric={shown!r} needs a model with {' or '.join(needed)}; {type(model).__name__} has "
                        "none. Use a metric of its predictions ('accuracy'), or a model that gives them.")


def _test_only(targets: TargetInfo) -> tuple[np.ndarray, int]:
    """The classes of ``y_test`` that ``y_train`` lacks, and the number of test rows holding them."""
    unseen = targets.y_test_index < 0
    return np.unique(targets.y_test[unseen]), int(unseen.sum())


def _listed(classes: np.ndarray) -> str:
    return ", ".join(map(repr, classes[:10].tolist())) + (", ..." if len(classes) > 10 else "")


def check_scorer_classes(metric: Any, targets: TargetInfo) -> None:
    """Refuse a scikit-learn scorer of probabilities or decision scores when ``y_test`` holds classes ``y_train`` lacks.

    Such a scorer (``get_scorer("neg_log_loss")``, ``"roc_auc_ovr"``,
    ``"average_precision"``, ...) gets one column per training class, so it
    fails on every coalition, the full training set too; a scorer of
    ``predict`` (``"accuracy"``, ``"f1_macro"``) and the string metrics score
    those rows (as never predicted). Other callables are left to run.

    Raises
    ------
    ValueError
        Naming ``metric``, the classes of ``y_test`` missing from ``y_train``
        and what to do instead.
    """
    methods = scorer_methods(metric)
    if targets.task != "classification" or not methods or set(methods) <= {"predict"}:
        return
    classes, rows = _test_only(targets)
    if rows:
        raise ValueError(
            f"metric={metric!r} scores the model's {' or '.join(methods)} over the classes of y_train, but y_test "
            f"holds class(es) {_listed(classes)} ({rows} row(s)) that y_train lacks: no model fitted on a coalition "
            "has a column for them, so no coalition could be scored. Use a string metric, which scores those rows "
            "as never predicted (metric='neg_log_loss' gives them probability 0, i.e. log(eps); see ModelUtility, "
            "Notes), or drop the rows of those classes from X_test and y_test.")


def check_scorer(name: Any, scorer: Any, targets: TargetInfo, X_test: Any) -> None:
    """Refuse, before any fit, a scorer that could score no coalition (``ValueError``).

    :func:`check_scorer_classes` for every scorer; and a scikit-learn scorer
    given by name (``name``, resolved to ``scorer``) must score a constant
    model on this test set, which catches a binary one (``"roc_auc"``,
    ``"f1"``) on more than two classes or on labels without the positive
    label 1. Only for names: a callable of the user's may need more than a
    constant model offers.
    """
    check_scorer_classes(scorer, targets)
    if not isinstance(name, str) or not callable(scorer):
        return
    from ._model_data import ConstantPredictor

    constant = ConstantPredictor.from_coalition(np.ones(targets.y_train.shape[0], dtype=bool), targets)
    try:
        scorer(constant, X_test, targets.y_test)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"metric={name!r} cannot score this problem (scikit-learn says: {exc}). Choose a scorer "
                         "for its labels, e.g. 'roc_auc_ovr' or 'f1_macro' for more than two classes.") from exc


def unseen_classes_note(targets: TargetInfo) -> str:
    """A note for an error of a callable metric: the classes of ``y_test`` that ``y_train`` lacks (or "")."""
    if targets.task != "classification":
        return ""
    classes, rows = _test_only(targets)
    if not rows:
        return ""
    return (f"; y_test holds class(es) {_listed(classes)} ({rows} row(s)) that y_train lacks, which a scorer of "
            "probabilities or decision scores cannot score: use a string metric (which handles them) or drop "
            "those rows of X_test and y_test")


# --------------------------------------------------------------------------------------------
# Models known to need a minimum number of points
# --------------------------------------------------------------------------------------------

def fit_size_limit(model: Any) -> tuple[int, str] | None:
    """``(k, reason)`` when ``model`` (or a Pipeline's final step) cannot be used on fewer than ``k`` points."""
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
    from sklearn.pipeline import Pipeline

    final = model
    while isinstance(final, Pipeline) and final.steps:
        final = final.steps[-1][1]
    if isinstance(final, (KNeighborsClassifier, KNeighborsRegressor)):
        k = final.n_neighbors
        if isinstance(k, Integral) and not isinstance(k, bool) and int(k) > 1:
            return int(k), f"{type(final).__name__}(n_neighbors={k}) needs at least {k} points"
    return None


# --------------------------------------------------------------------------------------------
# Coalitions that could not be fitted
# --------------------------------------------------------------------------------------------

class CoalitionFitWarning(UserWarning):
    """Some coalitions could not be fitted or scored and got the utility of a degenerate coalition."""


def unfit_message(n_unfit: int, n_coalitions: int, causes: dict[str, int], largest: int, min_samples: int,
                  degenerate: str) -> str:
    """The one warning of an evaluate call about coalitions that could not be fitted or scored."""
    listed = "; ".join(f"{count} x {cause}" for cause, count in causes.items())
    return (f"ModelUtility: {n_unfit} of {n_coalitions} coalition(s) of this evaluate call could not be fitted "
            f"and scored, and got the utility of a degenerate coalition (degenerate={degenerate!r}): {listed}. "
            f"The largest had {largest} point(s): pass min_samples={min_samples} to treat coalitions that "
            "small as degenerate without this warning. The game's n_unfit counts every such coalition.")


class OncePerGame:
    """The kinds of warning a game has shown: each kind is shown once per game, the first time it arises.

    A game is evaluated many times (an estimator calls ``evaluate`` once per
    batch); a warning repeated on each call would bury the rest. Thread-safe;
    shared by the shallow copies a game makes of itself, and pickled with it:
    a worker process (loky, Dask) gets the record as it was when the game was
    sent, so each may show a kind once more.
    """

    NOTE = "[This game shows it only the first time: later evaluate calls do not repeat it.]"

    def __init__(self) -> None:
        self.shown: set[Hashable] = set()

    def first(self, *kinds: Hashable) -> bool:
        """Whether any of ``kinds`` was not shown before; all count as shown from now on."""
        with _ONCE_LOCK:
            new = not self.shown.issuperset(kinds)
            self.shown.update(kinds)
        return new

    def warn(self, message: str, category: type[Warning], *kinds: Hashable, stacklevel: int = 1) -> None:
        """``warnings.warn(message, category)`` with :attr:`NOTE`, unless every kind (default: the category) was."""
        if self.first(*(kinds or (category,))):
            warnings.warn(f"{message}\n{self.NOTE}", category, stacklevel=stacklevel + 1)

    def emit(self, tally: WarningTally, n_coalitions: int) -> None:
        """:meth:`WarningTally.emit` for the kinds of ``tally`` this game has not shown yet."""
        for key in [key for key in tally.kinds if not self.first(key)]:
            del tally.kinds[key]
        tally.emit(n_coalitions, "ModelUtility: raised {count} time(s) while fitting and scoring {n} coalition(s) "
                                 "of one evaluate call, the first of this game to raise it; later calls do not "
                                 "repeat it")


_ONCE_LOCK = threading.Lock()  # OncePerGame's check-and-set (a lock per game would not pickle)


def describe_error(error: BaseException) -> str:
    """``"Type: first line of the message"``, numbers replaced by ``#``, to count errors by kind."""
    lines = str(error).strip().splitlines()
    first = NUMBER.sub("#", lines[0] if lines else "")
    return f"{type(error).__name__}: {first[:160]}"
