"""Routing from :class:`~shapley_research.ModelUtility` to a batched learner.

:func:`unsupported_reason` says why a scikit-learn model has no batched
learner (``None`` when it has one: an exact ``LogisticRegression`` with the
L2 penalty, or ``Ridge``, with supported parameters and metric, alone or as
the final step of a ``Pipeline`` whose other steps are per-coalition scalers
(:mod:`._scalers`), each fitted on the coalition as the pipeline does),
:func:`route_decision` decides ``fast``'s route (for ``"auto"`` by the cost
model of :mod:`._cost`) and says why, and :func:`learner_for` builds the
equivalent :class:`RidgeUtility` or :class:`LogisticRegressionUtility`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_bool_or_auto
from .._model_data import CLASSIFICATION_METRICS, REGRESSION_METRICS, Metric
if TYPE_CHECKING:
    import torch
from ._calibration import calibration
from ._cost import RouteDecision, batched_logistic_solver, model_max_iter, route_by_cost
from ._logistic import LogisticRegressionUtility
from ._ridge import RidgeUtility
from ._scalers import is_pipeline, pipeline_parts, shift_reason


def unsupported_reason(model: Any, metric: Metric | None) -> str | None:
    """Why ``model`` (a scikit-learn estimator) cannot use a batched learner with ``metric`` (None when it can)."""
    from sklearn.linear_model import LogisticRegression, Ridge

    if is_pipeline(model):
        return _pipeline_reason(model, metric)
    if type(model) is LogisticRegression:
        if not isinstance(metric, str) or metric not in CLASSIFICATION_METRICS:
            return f"the metric must be one of {list(CLASSIFICATION_METRICS)}"
        params = model.get_params()
        penalty, l1_ratio = params.get("penalty", "deprecated"), params.get("l1_ratio", None)
        if penalty not in ("l2", "deprecated") or l1_ratio not in (0, 0.0, None):
            return f"only the L2 penalty is supported (penalty={penalty!r}, l1_ratio={l1_ratio!r})"
        C = params.get("C")
        # np.isscalar's TypeGuard narrows C to numpy scalars and str, where numbers are meant
        if not (np.isscalar(C) and np.isfinite(C) and C > 0):  # type: ignore[operator]
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


def _pipeline_reason(model: Any, metric: Metric | None) -> str | None:
    """Why a ``Pipeline`` has no batched learner: the first step that is not a scaler, or its final step's reason."""
    scalers, final, reason = pipeline_parts(model)
    if reason is not None:
        return reason
    name = model.steps[-1][0]
    reason = unsupported_reason(final, metric)
    if reason is not None:
        return f"final step {name!r} ({type(final).__name__}): {reason}"
    if not final.get_params().get("fit_intercept", True):
        shifting = [step for step in scalers if step.shifts]
        if shifting:
            return shift_reason(shifting[0])
    return None


def final_estimator(model: Any) -> Any:
    """The estimator that a batched learner replaces: a ``Pipeline``'s final step, else ``model`` itself."""
    return model.steps[-1][1] if is_pipeline(model) else model


def check_fast(fast: object) -> bool | Literal["auto"]:
    """``fast`` as ``True``, ``False`` or ``"auto"`` (numpy booleans accepted), else a ``ValueError``."""
    return check_bool_or_auto(fast, "fast")


def route_decision(model: Any, metric: Metric | None, fast: bool | Literal["auto"], n_samples: int, n_features: int,
                   n_classes: int | None = None, warm_prefixes: bool = False, device: torch.device | None = None,
                   *, unit: str = "coalition", always_batched: bool = False,
                   task: str | None = None) -> RouteDecision:
    """Where ``ModelUtility(model, ..., fast=fast)`` fits its coalitions, and why.

    ``fast`` is ``False`` (always per subset), ``True`` (the batched learner;
    a ``ValueError`` naming the reason if the model has none) or ``"auto"``:
    an unsupported model goes per subset; a supported one goes batched when
    :func:`~._cost.route_by_cost` predicts it at least
    :data:`~._cost.SAFETY_MARGIN` times faster per coalition, or when
    ``warm_prefixes`` asks for the logistic learner's exact one-pass path, or
    when the training labels hold one class (every coalition is degenerate:
    nothing is fitted), or when a ``device`` (a resolved ``torch.device``) is
    given: the cost model predicts numpy on this CPU, and a device asks for the
    learner's torch path.

    Other callers (:func:`~shapley_research.data_oob`) name what one fit
    trains on (``unit``, in the messages), route every supported model with
    ``fast="auto"`` batched (``always_batched``), and may give the ``task``
    they need instead of a ``metric`` (which is then ignored): the model is
    checked with its own task's default metric, and a model whose learner is
    for the other task has none.
    """
    fast = check_fast(fast)
    if fast is False:
        if device is not None:
            raise ValueError(f"device={str(device)!r} runs a batched learner, but fast=False fits "
                             f"{type(model).__name__} itself on every {unit}; pass fast='auto' or fast=True.")
        return RouteDecision(False, f"per-subset fits: fast=False fits the estimator on every {unit}")
    reason = _task_reason(model, task) if task is not None else unsupported_reason(model, metric)
    if reason is not None:
        _refuse_unsupported(model, fast, device, reason, unit)
        return RouteDecision(False, f"per-subset fits: {type(model).__name__} has no batched learner ({reason})")
    if fast is True:
        return RouteDecision(True, "batched: fast=True forces the batched learner")
    if device is not None:
        return RouteDecision(True, f"batched: device={str(device)!r} runs the batched learner there")
    if always_batched:
        return RouteDecision(True, f"batched: fast='auto' trains every {unit} with the batched learner")
    decision = _route_supported(final_estimator(model), n_samples, n_features, n_classes, warm_prefixes)
    if is_pipeline(model) and decision.batched:
        names = ", ".join(repr(step.name) for step in pipeline_parts(model)[0]) or "none"
        decision = replace(decision, reason=f"{decision.reason}; Pipeline scalers fitted per coalition: {names}")
    return decision


def _task_reason(model: Any, task: str) -> str | None:
    """Why ``model`` has no batched learner for ``task``, checked with its own task's default metric."""
    from sklearn.linear_model import LogisticRegression, Ridge

    own = {LogisticRegression: "classification", Ridge: "regression"}.get(type(final_estimator(model)))
    reason = unsupported_reason(model, "accuracy" if (own or task) == "classification" else "neg_mean_squared_error")
    if reason is None and own != task:
        return f"task={task!r}, but its batched learner is for {own}"
    return reason


def _refuse_unsupported(model: Any, fast: bool | str, device: torch.device | None, reason: str, unit: str) -> None:
    """The ``ValueError`` of a model without a batched learner that ``device`` or ``fast=True`` asks for."""
    name = type(model).__name__
    if device is not None:
        raise ValueError(f"device={str(device)!r} needs a model with a batched learner, but {name} has none: "
                         f"{reason}. For a torch module use TorchModelUtility.")
    if fast is True:
        raise ValueError(f"fast=True but {name} has no batched learner: {reason}. Pass fast='auto' or "
                         f"fast=False to fit {name} itself on every {unit}.")


def _route_supported(model: Any, n_samples: int, n_features: int, n_classes: int | None,
                     warm_prefixes: bool) -> RouteDecision:
    """``fast="auto"`` for a supported model: the exact prefix path, one class, or the cost model."""
    from sklearn.linear_model import LogisticRegression

    logistic = type(model) is LogisticRegression
    if logistic and warm_prefixes:
        return RouteDecision(True, "batched: warm_prefixes=True asks for the logistic learner's exact one-pass path")
    if logistic and n_classes is not None and n_classes < 2:
        return RouteDecision(True, "batched: the training labels hold one class, so no coalition is fitted")
    return route_by_cost(model, n_samples, n_features, n_classes, costs=calibration())


def routed_tolerance(model_tol: float, newton: bool) -> float:
    """The tolerance a routed ``LogisticRegression`` is solved to: its own, or ``1e-6`` for Newton.

    L-BFGS stops where scikit-learn's lbfgs stops, at the model's ``tol`` in the
    same gradient test (``max |grad| <= tol`` on scikit-learn's mean loss): a
    tighter tolerance would double its iterations for a solution closer to the
    optimum than scikit-learn's own. Newton converges quadratically, so
    ``min(tol, 1e-6)`` costs it about one more step and it is solved tight.
    """
    return min(model_tol, 1e-6) if newton else model_tol


def routed_max_iter(params: dict) -> int:
    """The iteration cap of a routed ``LogisticRegression`` (its ``get_params()``): the model's, at least 500.

    A larger ``max_iter`` (set for a hard problem) is kept. A smaller one, such
    as scikit-learn's default 100, is raised to the learner's own default,
    because the routed fit is meant to reach the tolerance a scikit-learn fit
    reaches when it converges, and the two solvers' iterations differ.
    """
    return max(model_max_iter(params, 500), 500)


def learner_for(model: Any, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike,
                metric: Metric, **options: Any) -> LogisticRegressionUtility | RidgeUtility:
    """The batched learner equivalent to ``model`` (see :func:`unsupported_reason`).

    ``options`` go to the learner (``degenerate``, ``prefix_path``, ``device``, ...).
    A ``Pipeline``'s scalers go to it as ``scalers``, fitted per coalition.
    """
    from sklearn.linear_model import LogisticRegression

    if is_pipeline(model):
        options = {**options, "scalers": pipeline_parts(model)[0]}
        model = final_estimator(model)
    params = model.get_params()
    name = cast(str, metric)  # a supported model's metric is a name (unsupported_reason)
    if type(model) is LogisticRegression:
        shape, n_classes = np.shape(X_train), len(np.unique(np.asarray(y_train)))
        solver = batched_logistic_solver(shape[0], shape[1], max(n_classes, 2), bool(params["fit_intercept"]))
        tol = routed_tolerance(float(params.get("tol", 1e-4)), solver == "newton")
        return LogisticRegressionUtility(X_train, y_train, X_test, y_test, name, C=float(params["C"]),
                                         fit_intercept=bool(params["fit_intercept"]), tol=tol,
                                         max_iter=routed_max_iter(params), **options)
    return RidgeUtility(X_train, y_train, X_test, y_test, name, alpha=float(params["alpha"]),
                        fit_intercept=bool(params["fit_intercept"]), **options)
