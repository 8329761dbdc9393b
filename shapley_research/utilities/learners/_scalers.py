r"""Per-coalition scalers of a scikit-learn ``Pipeline`` as per-coalition penalties of the batched learners.

A ``Pipeline`` fits its scaler on each coalition's rows alone. The scalers
handled here are per-feature affine maps fitted on the coalition ``S``,
:math:`x \mapsto s_S \odot x + t_S`:

* ``StandardScaler``: :math:`s = 1/\sigma_S` (population standard deviation,
  ``ddof = 0``), :math:`t = -\mu_S s`; a feature constant on ``S`` (variance
  below scikit-learn's two-pass rounding bound
  :math:`n\epsilon\sigma^2 + (n\mu\epsilon)^2`) gets :math:`s = 1`, as
  scikit-learn's ``_handle_zeros_in_scale``; ``with_std=False`` gives
  :math:`s = 1`, ``with_mean=False`` gives :math:`t = 0`;
* ``MinMaxScaler(feature_range=(a, b))``: :math:`s = (b - a)/(\max_S - \min_S)`,
  a range below :math:`10\epsilon` counting as 1, :math:`t = a - s\min_S`
  (``clip=True`` is not affine on the test set and is not handled);
* ``MaxAbsScaler``: :math:`s = 1/\max_S|x|`, a maximum below :math:`10\epsilon`
  counting as 1, :math:`t = 0`.

Chained scalers compose: the second is fitted on the first one's output over
``S``, and the whole is again affine, with the product of the scales.

The final linear model fits :math:`w'^\top z + b'` on :math:`z = s\odot x + t`
with the L2 penalty on :math:`w'`. In the original features its coefficients
are :math:`w = s \odot w'` and its intercept :math:`b = b' + w'^\top t`, so
with an unpenalised intercept (which absorbs any shift) the penalty
:math:`\frac12\|w'\|^2` is the *diagonal* penalty
:math:`\frac12\sum_j w_j^2 / s_j^2`: the same minimiser, the same predictions.
The learners therefore solve on one shared design for all coalitions, with
a penalty vector per coalition. The shared design is centred by the training
mean and scaled by the scales :math:`g` of the scalers fitted on the whole
training set (a fixed reparametrisation :math:`\tilde w_j = w_j / g_j`, which
keeps the solvers as well conditioned as on scaled data), so coalition ``S``
gets the penalty :math:`r_j = (g_j / s_{S,j})^2` on the design's coefficients
(about 1 for large coalitions) and 0 on the intercept. Without an intercept a
shifting scaler (:math:`t \ne 0`) cannot be expressed. L-BFGS then starts
from a per-coalition diagonal inverse Hessian that carries :math:`r_S`
(:func:`diagonal_preconditioner`), not the full-data eigenbasis one, which
assumes the penalty :math:`I`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np
from numpy.typing import NDArray

from ._array import Array, ArrayBackend, namespace
from ._precondition import DiagonalInverse

_EPS = float(np.finfo(np.float64).eps)
_STATS_BYTES = 32 * 2**20  # working memory of the (B, N, d) deviations per chunk of coalitions
ScalerKind = Literal["standard", "minmax", "maxabs"]


@dataclass(frozen=True)
class ScalerStep:
    """One per-coalition scaler of a pipeline: its step name, kind and the parameters that matter.

    Attributes
    ----------
    name : str
        The step's name in the pipeline (for messages).
    kind : {"standard", "minmax", "maxabs"}
        ``StandardScaler``, ``MinMaxScaler`` or ``MaxAbsScaler``.
    with_mean, with_std : bool
        ``StandardScaler``'s options (True for the other kinds).
    feature_range : tuple of float
        ``MinMaxScaler``'s ``(a, b)``.
    """

    name: str
    kind: ScalerKind
    with_mean: bool = True
    with_std: bool = True
    feature_range: tuple[float, float] = (0.0, 1.0)

    @property
    def shifts(self) -> bool:
        """Whether the map has a shift ``t`` (which only an intercept can absorb)."""
        return self.kind == "minmax" or (self.kind == "standard" and self.with_mean)


def is_pipeline(model: Any) -> bool:
    """Whether ``model`` is exactly a ``sklearn.pipeline.Pipeline`` (subclasses may fit differently)."""
    from sklearn.pipeline import Pipeline

    return type(model) is Pipeline


def scaler_step(name: str, step: Any) -> ScalerStep | str:
    """The :class:`ScalerStep` of pipeline step ``(name, step)``, or the reason it is none.

    Parameters
    ----------
    name : str
        The step's name in the pipeline (for messages).
    step : object
        The pipeline's step: a ``StandardScaler``, ``MinMaxScaler`` (without
        ``clip``) or ``MaxAbsScaler`` becomes a :class:`ScalerStep` with the
        options that matter; anything else is no per-coalition scaler.

    Returns
    -------
    ScalerStep or str
        The step, or why it cannot be one (a sentence naming the step), so a
        caller can say why a pipeline is not routed to the batched learners.
    """
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler

    label = f"step {name!r} ({type(step).__name__})"
    if type(step) is StandardScaler:
        params = step.get_params()
        return ScalerStep(name, "standard", bool(params["with_mean"]), bool(params["with_std"]))
    if type(step) is MinMaxScaler:
        params = step.get_params()
        if params.get("clip", False):
            return f"{label} has clip=True, which is not affine on the test set"
        low, high = _feature_range(params.get("feature_range"))
        if not low < high:
            return f"{label} has feature_range={params.get('feature_range')!r}; it must be (a, b) with a < b"
        return ScalerStep(name, "minmax", feature_range=(low, high))
    if type(step) is MaxAbsScaler:
        return ScalerStep(name, "maxabs")
    return f"{label} is not a per-coalition scaler the batched learners can express"


def _feature_range(value: Any) -> tuple[float, float]:
    """``(a, b)`` as floats, ``(nan, nan)`` for anything else (then ``a < b`` fails)."""
    try:
        low, high = value
        return float(low), float(high)
    except (TypeError, ValueError):
        return float("nan"), float("nan")


def pipeline_parts(model: Any) -> tuple[tuple[ScalerStep, ...], Any, str | None]:
    """The scalers and final estimator of a ``Pipeline``, and why it has no batched form (None when it has).

    ``passthrough`` and ``None`` steps are skipped; every other step before the
    last must be a scaler (:func:`scaler_step`). The final estimator is
    returned as it is; its own checks are the caller's.
    """
    steps = list(model.steps)
    scalers = []
    for name, step in steps[:-1]:
        if _skipped(step):
            continue
        parsed = scaler_step(name, step)
        if isinstance(parsed, str):
            return (), None, parsed
        scalers.append(parsed)
    name, final = steps[-1]
    if _skipped(final):
        return (), None, f"the final step {name!r} is {final!r}, not an estimator"
    return tuple(scalers), final, None


def _skipped(step: Any) -> bool:
    """A ``"passthrough"`` or ``None`` step (the identity)."""
    return step is None or (isinstance(step, str) and step == "passthrough")


def check_scalers(scalers: Sequence[Any], fit_intercept: bool) -> tuple[ScalerStep, ...]:
    """Scaler estimators (or :class:`ScalerStep`) as :class:`ScalerStep`, checked; a ``ValueError`` otherwise.

    ``"passthrough"`` and ``None`` entries are skipped, as in a ``Pipeline``.
    """
    if isinstance(scalers, (str, bytes)) or not isinstance(scalers, Sequence):
        raise TypeError(f"scalers must be a sequence of scikit-learn scalers, got {type(scalers).__name__}.")
    steps = []
    for position, scaler in enumerate(scalers):
        if _skipped(scaler):
            continue
        parsed = scaler if isinstance(scaler, ScalerStep) else scaler_step(f"scalers[{position}]", scaler)
        if isinstance(parsed, str):
            raise ValueError(f"scalers: {parsed}.")
        if parsed.shifts and not fit_intercept:
            raise ValueError(f"scalers: {shift_reason(parsed)}.")
        steps.append(parsed)
    return tuple(steps)


def shift_reason(step: ScalerStep) -> str:
    """Why a shifting scaler cannot precede a model without intercept."""
    return (f"step {step.name!r} shifts the features, which a final estimator with fit_intercept=False "
            "cannot absorb")


class CoalitionScaling:
    r"""The scales of a pipeline's scalers fitted on each coalition, and the penalties they make.

    Parameters
    ----------
    steps : sequence of ScalerStep
        The scalers in pipeline order (at least one).
    X_train : ndarray of shape (N, d)
        The training features (the players), as the pipeline receives them.

    Attributes
    ----------
    reference : ndarray of shape (d,)
        The scales :math:`g` of the scalers fitted on the whole training set,
        by which the learners' shared design is scaled.
    """

    def __init__(self, steps: Sequence[ScalerStep], X_train: NDArray[np.float64]) -> None:
        if not steps:
            raise ValueError("steps must hold at least one ScalerStep.")
        self.steps = tuple(steps)
        self.X_train = np.asarray(X_train, dtype=np.float64)
        self.reference = self.scales(np.ones((1, self.X_train.shape[0])))[0]

    def scales(self, weights: NDArray[Any]) -> NDArray[np.float64]:
        """Scales :math:`s_S` (m, d) of the composed scalers fitted on each row of ``weights``.

        ``weights`` (m, N) are masks or integer sample weights (a point of
        weight ``c`` counts as ``c`` copies, as repeated rows do); every row
        must have a positive total (degenerate coalitions are not fitted).
        """
        weights = np.asarray(weights, dtype=np.float64)
        n, d = self.X_train.shape
        out = np.empty((weights.shape[0], d))
        chunk = max(1, _STATS_BYTES // (8 * 3 * n * d))
        for lo in range(0, weights.shape[0], chunk):
            out[lo:lo + chunk] = self._composed_scales(weights[lo:lo + chunk])
        return out

    def penalty(self, weights: NDArray[Any], fit_intercept: bool) -> NDArray[np.float64]:
        r"""Penalty rows (m, q) on the learners' design: :math:`(g_j/s_{S,j})^2`, then 0 for the intercept."""
        ratio = self.reference / self.scales(weights)
        rows = ratio * ratio
        if fit_intercept:
            rows = np.hstack([rows, np.zeros((rows.shape[0], 1))])
        return rows

    def _composed_scales(self, weights: NDArray[np.float64]) -> NDArray[np.float64]:
        """Product of the steps' scales; each later step sees the earlier steps' output on the coalition."""
        values: NDArray[np.float64] = self.X_train[None, :, :]
        total = np.ones((weights.shape[0], self.X_train.shape[1]))
        for position, step in enumerate(self.steps):
            scale, shift = _affine_map(step, values, weights)
            total *= scale
            if position + 1 < len(self.steps):
                values = values * scale[:, None, :] + shift[:, None, :]
        return total


def _affine_map(step: ScalerStep, values: NDArray[np.float64],
                weights: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Scale and shift (B, d) of ``step`` fitted on each coalition: ``values`` (1 or B, N, d), ``weights`` (B, N)."""
    if step.kind == "standard":
        return _standard_map(step, values, weights)
    present = (weights > 0)[:, :, None]
    if step.kind == "maxabs":
        largest = np.where(present, np.abs(values), 0.0).max(axis=1)
        return 1.0 / _nonzero(largest), np.zeros_like(largest)
    low, high = step.feature_range
    data_min = np.where(present, values, np.inf).min(axis=1)
    data_max = np.where(present, values, -np.inf).max(axis=1)
    scale = (high - low) / _nonzero(data_max - data_min)
    return scale, low - data_min * scale


def _nonzero(scale: NDArray[np.float64]) -> NDArray[np.float64]:
    """scikit-learn's ``_handle_zeros_in_scale`` without a mask: entries below ``10 eps`` become 1."""
    return np.where(scale < 10 * _EPS, 1.0, scale)


def _standard_map(step: ScalerStep, values: NDArray[np.float64],
                  weights: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""``StandardScaler`` on each coalition: the two-pass weighted mean and variance, as scikit-learn's.

    :math:`\mu = \sum_i w_i x_i / n`, then with :math:`\delta_i = x_i - \mu`,
    :math:`\sigma^2 = (\sum_i w_i\delta_i^2 - (\sum_i w_i\delta_i)^2/n)/n`
    (the correction term cancels the rounding of :math:`\mu`); a constant
    feature is recognised by scikit-learn's bound :math:`\sigma^2 \le
    n\epsilon\sigma^2 + (n\mu\epsilon)^2` and keeps scale 1.
    """
    n = weights.sum(axis=1)[:, None]
    if values.shape[0] == 1:
        mean = weights @ values[0] / n
    else:
        mean = np.einsum("bn,bnd->bd", weights, values) / n
    scale = np.ones_like(mean)
    if step.with_std:
        deviation = values - mean[:, None, :]
        correction = np.einsum("bn,bnd->bd", weights, deviation)
        deviation *= deviation
        variance = (np.einsum("bn,bnd->bd", weights, deviation) - correction**2 / n) / n
        constant = variance <= n * _EPS * variance + (n * mean * _EPS) ** 2
        scale = 1.0 / np.where(constant, 1.0, np.sqrt(variance))
    shift = -mean * scale if step.with_mean else np.zeros_like(mean)
    return scale, shift


def data_hessian_diagonal(X: Array, theta: Array) -> Array:
    r"""Diagonal (K, q) of the softmax data Hessian at ``theta`` (K, q) over rows ``X`` (N, q), all classes present.

    Entry :math:`(k, j)` is :math:`\sum_i p_{ik}(1 - p_{ik})\,x_{ij}^2`: ``O(N K q)``.
    """
    xp = namespace(X)
    Z = theta @ xp.permute_dims(X, (1, 0))
    P = xp.exp(Z - xp.max(Z, axis=0, keepdims=True))
    P /= xp.sum(P, axis=0, keepdims=True)
    return (P * (1.0 - P)) @ (X * X)


def diagonal_preconditioner(diagonal: Array, chunk: Any, n_players: int, backend: ArrayBackend) -> DiagonalInverse:
    r"""L-BFGS's initial inverse Hessian under per-coalition penalties: a diagonal, coalition by coalition.

    :math:`H_0 = \operatorname{diag}\bigl(C\frac{|S|}{N} h_D + r_S\bigr)^{-1}`
    with :math:`h_D` the full-data Hessian diagonal (:func:`data_hessian_diagonal`)
    and :math:`r_S` the coalition's penalty row (zero entries, if any, count as 1),
    restricted to the classes present. The full-data eigenbasis preconditioner
    assumes the penalty :math:`I`, which per-coalition scalers break by orders
    of magnitude where a feature is rare in ``S``. Measured on digits (300
    points, ``StandardScaler``, 40 coalitions): 41 L-BFGS iterations on
    average against 146 from :math:`\gamma I` (``MinMaxScaler``: 24 against 34).
    """
    return DiagonalInverse(diagonal, chunk.C * chunk.size / n_players, chunk.penalty, chunk.present,
                           backend.scalar(1.0), chunk.data.xp)
