"""Routing from :class:`~shapley_research.ModelUtility` to a batched learner.

:func:`unsupported_reason` says why a scikit-learn model has no batched
learner (``None`` when it has one: an exact ``LogisticRegression`` with the
L2 penalty, or ``Ridge``, with supported parameters and metric), and
:func:`learner_for` builds the equivalent :class:`RidgeUtility` or
:class:`LogisticRegressionUtility`.
"""

from __future__ import annotations

import numpy as np

from .._model_data import CLASSIFICATION_METRICS, REGRESSION_METRICS
from ...games._base import Game
from ._logistic import LogisticRegressionUtility
from ._ridge import RidgeUtility


def unsupported_reason(model, metric) -> str | None:
    """Why ``model`` cannot use a batched learner (None when it can)."""
    from sklearn.linear_model import LogisticRegression, Ridge

    if type(model) is LogisticRegression:
        if not isinstance(metric, str) or metric not in CLASSIFICATION_METRICS:
            return f"the metric must be one of {list(CLASSIFICATION_METRICS)}"
        params = model.get_params()
        penalty, l1_ratio = params.get("penalty", "deprecated"), params.get("l1_ratio", None)
        if penalty not in ("l2", "deprecated") or l1_ratio not in (0, 0.0, None):
            return f"only the L2 penalty is supported (penalty={penalty!r}, l1_ratio={l1_ratio!r})"
        C = params.get("C")
        if not (np.isscalar(C) and np.isfinite(C) and C > 0):
            return f"C must be a finite positive number, got {C!r}"
        if params.get("dual", False):
            return "dual=True is not supported"
        if params.get("class_weight") is not None:
            return "class_weight is not supported"
        if params.get("solver") == "liblinear":
            return "liblinear penalises the intercept (a different objective)"
        if params.get("multi_class", "auto") not in ("auto", "multinomial", "deprecated"):
            return "one-vs-rest is not supported"
        return None
    if type(model) is Ridge:
        if not isinstance(metric, str) or metric not in REGRESSION_METRICS:
            return f"the metric must be one of {list(REGRESSION_METRICS)}"
        alpha = model.get_params().get("alpha")
        if np.ndim(alpha) != 0 or not np.isfinite(alpha) or alpha <= 0:
            return f"alpha must be one positive number, got {alpha!r}"
        if model.get_params().get("positive", False):
            return "positive=True is not supported"
        return None
    return "only sklearn.linear_model.LogisticRegression and Ridge have batched learners"


def learner_for(model, X_train, y_train, X_test, y_test, metric, **options) -> Game:
    """The batched learner equivalent to ``model`` (see :func:`unsupported_reason`)."""
    from sklearn.linear_model import LogisticRegression

    params = model.get_params()
    if type(model) is LogisticRegression:
        # honour a tolerance tighter than the learner's default (the learner's is tighter than sklearn's)
        tol = min(float(params.get("tol", 1e-4)), 1e-6)
        return LogisticRegressionUtility(X_train, y_train, X_test, y_test, metric, C=float(params["C"]),
                                         fit_intercept=bool(params["fit_intercept"]), tol=tol, **options)
    return RidgeUtility(X_train, y_train, X_test, y_test, metric, alpha=float(params["alpha"]),
                        fit_intercept=bool(params["fit_intercept"]), **options)
