"""Shared machinery of the batched learners: the design matrices and the common base class.

:class:`_Design` holds the training and test features centred by the
training mean with the intercept column appended, and the penalty pattern
(the intercept unpenalised); :class:`_BatchedLearner` is the base of
:class:`RidgeUtility` and :class:`LogisticRegressionUtility`: data and option
checks, the degenerate coalitions (:class:`~shapley_research.ModelUtility`'s
convention), chunking by working memory and the ``evaluate`` flow.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Iterator, Sequence, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._coalition_fits import OncePerGame
from .._model_data import (TargetInfo, check_dataset, check_degenerate_options,
                           Metric, degenerate_utilities, resolve_metric, split_degenerate)
from ..._device import check_dtype, chunk_capacity, released, resolve_device
from ..._validation import check_bool, check_features, check_int
from ...games import Game, content_digest, prefix_positions, prefix_utilities
from ._array import NUMPY, Array, ArrayBackend
from ._scalers import CoalitionScaling, check_scalers

if TYPE_CHECKING:
    import torch

_CHUNK_BYTES = 48 * 2**20  # working memory per chunk of coalitions


class _Design:
    """Centred design matrices with the intercept column, and the penalty pattern.

    ``feature_scale`` (d,), when given, multiplies the centred features (the
    scales of a pipeline's scalers fitted on the whole training set, see
    :mod:`._scalers`): the coefficients on the design are then ``coef / feature_scale``.
    """

    def __init__(self, X_train: NDArray[np.float64], X_test: NDArray[np.float64], fit_intercept: bool,
                 feature_scale: NDArray[np.float64] | None = None) -> None:
        self.fit_intercept = fit_intercept
        self.n_features = X_train.shape[1]
        self.mean = X_train.mean(axis=0) if fit_intercept else np.zeros(self.n_features)
        self.feature_scale = feature_scale
        self.train = self.transform(X_train)
        self.test = self.transform(X_test)
        self.q = self.train.shape[1]
        self.penalty = np.ones(self.q)
        if fit_intercept:
            self.penalty[-1] = 0.0

    def transform(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """``(n, d)`` features to the ``(n, q)`` centred design (intercept column last)."""
        X = X - self.mean
        if self.feature_scale is not None:
            X = X * self.feature_scale
        if self.fit_intercept:
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        return np.ascontiguousarray(X)

    def to_original(self, theta: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(coef, intercept)`` in the original feature coordinates from centred ``theta[..., q]``."""
        coef = theta[..., :self.n_features]
        if self.feature_scale is not None:
            coef = coef * self.feature_scale
        if not self.fit_intercept:
            return coef.copy(), np.zeros(theta.shape[:-1])
        return coef.copy(), theta[..., -1] - coef @ self.mean


def _check_features_like(X: ArrayLike, design: _Design, name: str = "X") -> NDArray[np.float64]:

    features = check_features(X, name)
    if features.shape[1] != design.n_features:
        raise ValueError(f"{name} has {features.shape[1]} features; the game was built with {design.n_features}.")
    return design.transform(features)


_Learner = TypeVar("_Learner", bound="_BatchedLearner")


def _chunks(total: int, size: int) -> Iterator[slice]:
    for lo in range(0, total, size):
        yield slice(lo, min(lo + size, total))


class _BatchedLearner(Game):
    """Data checks, degenerate coalitions and the evaluate flow shared by the learners."""

    exact_prefixes = False
    device: torch.device | None = None  # numpy unless _set_backend chose a torch device
    dtype = "float64"
    _backend = NUMPY
    scaling: CoalitionScaling | None = None  # a pipeline's scalers, fitted per coalition (_set_scaling)

    def _setup(self, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, metric: Metric,
               fit_intercept: bool, degenerate: Any, default_utility: float | None, min_samples: int,
               batch_size: int | None, task: str) -> None:
        resolved, metric_task = resolve_metric(metric)
        if callable(resolved):
            raise TypeError(f"{type(self).__name__} takes a metric name, not a callable "
                            "(use ModelUtility for a custom scorer).")
        self.metric = resolved
        if metric_task != task:
            raise ValueError(f"{type(self).__name__} needs a {task} metric, got {metric!r}.")
        self.task = task
        self.X_train, self.y_train, self.X_test, self.y_test = check_dataset(X_train, y_train, X_test, y_test, task)
        check_bool(fit_intercept, "fit_intercept")
        self.degenerate, self.default_utility, self.min_samples = check_degenerate_options(
            degenerate, default_utility, min_samples, self.X_train.shape[0])
        self.batch_size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.n_players = self.X_train.shape[0]
        self.targets = TargetInfo(self.y_train, self.y_test, task)
        self.design = _Design(self.X_train, self.X_test, bool(fit_intercept))
        self.n_fits = 0
        self._warned = OncePerGame()  # a learner's warnings, once per game (ModelUtility's convention)

    def _set_backend(self, device: str | torch.device | None, dtype: Any) -> None:
        """Where the solvers run: numpy (``device=None``) or torch on ``device``, in ``dtype``."""
        owner = type(self).__name__
        self.device = resolve_device(device, owner)
        self.dtype = check_dtype(dtype, owner)
        self._backend = ArrayBackend(self.device, self.dtype)
        if self.device is not None:  # the one-pass prefix paths are numpy's; a device refits every prefix
            self.exact_prefixes = True

    #: Attributes that cache arrays in the learner's backend (a subclass names its own).
    _BACKEND_CACHES: tuple[str, ...] = ()

    def _on_numpy(self: _Learner) -> _Learner:
        """This learner on the numpy backend in ``float64``: the same data, options and warnings, none of the
        backend's caches (a shallow copy; a device learner's full-data fit runs there)."""
        twin = copy.copy(self)
        twin._set_backend(None, "float64")
        for name in self._BACKEND_CACHES:
            twin.__dict__.pop(name, None)
        return twin

    #: Attributes that define a learner's utilities beyond its data (a subclass adds its own hyperparameters).
    _DEFINING: tuple[str, ...] = ("metric", "task", "degenerate", "default_utility", "min_samples", "dtype")

    def fingerprint(self) -> str:
        """A digest of the data, the intercept, the scalers and the attributes in :attr:`_DEFINING`."""
        scalers = None if self.scaling is None else repr(getattr(self.scaling, "steps", self.scaling))
        return content_digest(self.X_train, self.y_train, self.X_test, self.y_test, type(self).__qualname__,
                              self.design.fit_intercept, scalers,
                              [(name, getattr(self, name, None)) for name in self._DEFINING])

    def _set_scaling(self, scalers: Sequence[Any]) -> None:
        """Scalers fitted on each coalition before the model, as a pipeline does (:mod:`._scalers`).

        The design is rebuilt scaled by the scalers fitted on the whole
        training set, and each coalition gets its own penalty vector
        (:meth:`_coalition_penalty`). The one-pass prefix paths know no
        per-coalition scalers, so :meth:`evaluate_prefixes` then refits every
        prefix (exact).
        """
        steps = check_scalers(scalers, self.design.fit_intercept)
        if not steps:
            return
        self.scaling = CoalitionScaling(steps, self.X_train)
        self.design = _Design(self.X_train, self.X_test, self.design.fit_intercept, self.scaling.reference)
        self.exact_prefixes = True

    def _coalition_penalty(self, masks: NDArray[Any]) -> Array:
        """Penalty rows (m, q) in the backend of masks or integer weights (m, N); None without scalers (shared)."""
        if self.scaling is None:
            return None
        return self._backend.asarray(self.scaling.penalty(masks, self.design.fit_intercept))

    def _chunk_size(self, bytes_per_row: float, cap: int = 4096, device_cap: int | None = None) -> int:
        """Coalitions per chunk: as many as the memory budget holds, at most ``cap`` (on a device ``device_cap``,
        default 4 ``cap``).

        An explicit ``batch_size`` takes the cap's place, above it or below; the memory budget still bounds it.
        """
        if self.device is None:
            cap = cap if self.batch_size is None else self.batch_size
            return int(max(1, min(cap, _CHUNK_BYTES // max(bytes_per_row, 1))))
        # the estimates count float64 entries; a device chunk takes a share of the device's memory
        bytes_per_row *= self._backend.xp.finfo(self._backend.float).bits / 64
        device_cap = 4 * cap if device_cap is None else device_cap
        cap = device_cap if self.batch_size is None else self.batch_size
        return int(chunk_capacity(self.device, bytes_per_row, cap, type(self).__name__))

    def _fitted_utilities(self, masks: NDArray[np.bool_],
                          counts: NDArray[np.float64] | None) -> NDArray[np.float64]:  # pragma: no cover
        """Utilities of non-degenerate coalitions (with their class counts): each learner's own."""
        raise NotImplementedError

    def _evaluate(self, masks: NDArray[np.bool_]) -> NDArray[np.float64]:
        values, degenerate, counts = split_degenerate(masks, self.targets, self.metric, self.degenerate,
                                                      self.default_utility, self.min_samples,
                                                      owner=type(self).__name__)
        fit = ~degenerate
        if fit.any():
            with released(self.device):  # the chunks' cached device memory goes back; the game's data stays
                values[fit] = self._fitted_utilities(masks[fit], None if counts is None else counts[fit])
            self.n_fits += int(fit.sum())
        return values

    def _device_prefixes(self, permutations: NDArray[np.integer[Any]]) -> NDArray[np.float64]:
        """Every prefix refitted in batches of masks (exact), as without a prefix path: on a device, with scalers,
        and where fits chain along prefixes (faster there than the warm prefix path)."""
        positions = prefix_positions(permutations)
        return prefix_utilities(self, positions, np.arange(self.n_players, dtype=positions.dtype))

    def _prefix_degenerate(self, permutations: NDArray[np.integer[Any]]) -> NDArray[np.bool_]:
        """(m, n) booleans: is prefix ``k`` of permutation ``t`` degenerate."""
        sizes = np.arange(1, self.n_players + 1)
        degenerate = np.broadcast_to(sizes < self.min_samples, permutations.shape).copy()
        if self.task == "classification":
            labels = self.targets.y_train_index[permutations]
            first = labels[:, :1]
            degenerate |= np.logical_and.accumulate(labels == first, axis=1)
        return degenerate

    def _prefix_degenerate_utilities(self, permutations: NDArray[np.integer[Any]],
                                     degenerate: NDArray[np.bool_]) -> NDArray[np.float64]:
        """Utilities of the degenerate prefixes (usually the first few of each permutation)."""
        rows, cols = np.nonzero(degenerate)
        if rows.size == 0:
            return np.empty(0)
        positions = np.empty_like(permutations)
        np.put_along_axis(positions, permutations, np.arange(self.n_players)[None, :], axis=1)
        masks = positions[rows] <= cols[:, None]
        return degenerate_utilities(masks, self.targets, self.metric, self.degenerate, self.default_utility,
                                    owner=type(self).__name__)
