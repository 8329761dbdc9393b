"""Ridge regression utility trained for a whole batch of coalitions at once.

:class:`RidgeUtility` solves the normal equations of every coalition in a
batch from one matrix product of the masks with the packed per-point outer
products, and walks permutations in one pass by Sherman-Morrison updates of
the inverse (the mathematics is in :mod:`shapley_research.utilities.learners`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._model_data import constant_means, degenerate_rows, regression_scores
from ..._validation import check_float, check_int, check_permutations, check_weights
from ._array import Array
from ._base import _CHUNK_BYTES, _BatchedLearner, _check_features_like, _chunks

if TYPE_CHECKING:
    from .._options import DegeneratePolicy
    import torch


class RidgeUtility(_BatchedLearner):
    r"""Ridge regression utility, trained for a whole batch of coalitions at once.

    ``U(S)`` is the ``metric`` on the test set of ``Ridge(alpha, fit_intercept)``
    fitted on ``S``: the minimiser of :math:`\|y_S - X_S w - b\|^2 + \alpha\|w\|^2`
    (intercept unpenalised), computed from the normal equations (module
    docstring). Agrees with scikit-learn's ``Ridge`` to rounding (measured
    about 1e-14 relative on diabetes; the tests check 1e-8).

    Parameters
    ----------
    X_train, y_train, X_test, y_test : arrays
        Training points (the players) and the fixed test set; finite, numeric.
    metric : {"neg_mean_squared_error", "neg_mean_absolute_error", "r2"}, default "neg_mean_squared_error"
        Also the aliases ``"neg_mse"``, ``"neg_mae"``.
    alpha : float, default 1.0
        Penalty strength, ``> 0`` (then every non-empty coalition has a unique fit).
    fit_intercept : bool, default True
    degenerate, default_utility, min_samples
        Degenerate coalitions (here: fewer than ``min_samples`` points, the
        empty set always) as in :class:`~shapley_research.ModelUtility` (Notes): by default the
        mean target of ``S`` is predicted, 0 for the empty set. ``degenerate``
        may be a :class:`~shapley_research.DegeneratePolicy` holding all three.
    batch_size : int, optional
        Most coalitions (or permutations) trained together; by default as many
        as fit in about 48 MiB of working memory (on a device, a third of its
        total memory), at most a cap that a ``batch_size`` replaces.
    refresh_every : int, default 64
        Along a permutation, recompute the inverse exactly every so many points.
    device : None, "auto", str or torch.device, default None
        Where the normal equations are built and solved: ``None``, numpy on
        this CPU; a torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``, a
        ``torch.device``), the same code in torch there (see
        :class:`LogisticRegressionUtility`); ``"auto"``, ``"cuda"`` when torch
        sees a GPU, else ``None``. On a device :meth:`evaluate_prefixes`
        solves every prefix's normal equations in batches (exact) instead of
        the Sherman-Morrison pass.
    dtype : {"float64", "float32"}, default "float64"
    scalers : sequence of scikit-learn scalers, default ()
        ``StandardScaler``, ``MinMaxScaler`` (``clip=False``) or
        ``MaxAbsScaler`` instances, fitted on each coalition before the model,
        as ``make_pipeline(*scalers, Ridge(alpha))`` does: solved as the
        per-coalition penalty :math:`\alpha\sum_j w_j^2/s_{S,j}^2` on the
        original features (:mod:`._scalers`), the same minimiser. Shifting
        scalers need ``fit_intercept=True``; :meth:`evaluate_prefixes` then
        refits every prefix.

    Attributes
    ----------
    n_fits : int
        Models trained by :meth:`evaluate` and :meth:`evaluate_prefixes`
        (non-degenerate coalitions; each prefix counts one).
    """

    _DEFINING = _BatchedLearner._DEFINING + ("alpha",)

    exact_prefixes = True

    def __init__(self, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike,
                 metric: str = "neg_mean_squared_error", *, alpha: float = 1.0, fit_intercept: bool = True,
                 degenerate: Literal["constant", "default", "raise"] | DegeneratePolicy = "constant",
                 default_utility: float | None = None, min_samples: int = 1, batch_size: int | None = None,
                 refresh_every: int = 64, device: str | torch.device | None = None,
                 dtype: Literal["float64", "float32"] = "float64", scalers: Sequence[Any] = ()) -> None:
        self._setup(X_train, y_train, X_test, y_test, metric, fit_intercept, degenerate, default_utility,
                    min_samples, batch_size, "regression")
        self._set_scaling(scalers)
        self.alpha = check_float(alpha, "alpha", minimum=0.0, strict=True)
        self.refresh_every = check_int(refresh_every, "refresh_every", minimum=1)
        self._set_backend(device, dtype)
        backend = self._backend
        q = self.design.q
        self._upper = np.triu_indices(q)
        self._upper_b = (backend.asarray(self._upper[0], "int"), backend.asarray(self._upper[1], "int"))
        self._ridge = self.alpha * np.diag(self.design.penalty)
        self._rhs_rows = self.design.train * self.y_train[:, None]
        self._train_b = backend.asarray(self.design.train)
        self._ridge_b, self._rhs_rows_b = backend.asarray(self._ridge), backend.asarray(self._rhs_rows)
        self._test_T = backend.xp.permute_dims(backend.asarray(self.design.test), (1, 0))
        packed_bytes = self.n_players * len(self._upper[0]) * 8
        # per-point outer products, packed; kept when small, else rebuilt per player block
        self._outer = self._outer_products(slice(None)) if packed_bytes <= 2 * _CHUNK_BYTES else None

    def _outer_products(self, rows: slice) -> Array:
        X = self._train_b[rows]
        return X[:, self._upper_b[0]] * X[:, self._upper_b[1]]

    def _gram(self, weights: Array, penalty: Array = None) -> Array:
        """Regularised Gram matrices ``R + sum_i w_i x_i x_i^T``, shape (B, q, q), of backend weights (B, N).

        ``R`` is ``alpha diag(penalty)`` with per-coalition ``penalty`` rows (B, q)
        (a pipeline's scalers), else the shared ``alpha diag(1, ..., 1, 0)``.
        """
        if self._outer is not None:
            packed = weights @ self._outer
        else:
            block = max(1, _CHUNK_BYTES // (8 * len(self._upper[0])))
            packed = sum(weights[:, s] @ self._outer_products(s) for s in _chunks(self.n_players, block))
        q = self.design.q
        gram = self._backend.empty((weights.shape[0], q, q))
        gram[:, self._upper_b[0], self._upper_b[1]] = packed
        gram[:, self._upper_b[1], self._upper_b[0]] = packed
        if penalty is None:
            return gram + self._ridge_b
        diagonal = self._backend.arange(q)
        gram[:, diagonal, diagonal] += self.alpha * penalty
        return gram

    def _thetas(self, masks: np.ndarray) -> Array:
        """Parameters (m, q), in the backend, of masks or integer sample weights (m, N) (numpy)."""
        backend, q = self._backend, self.design.q
        out = backend.empty((masks.shape[0], q))
        for s in _chunks(masks.shape[0], self._chunk_size(8 * (3 * q * q + self.n_players))):
            weights = backend.asarray(masks[s])
            rhs = weights @ self._rhs_rows_b
            gram = self._gram(weights, self._coalition_penalty(masks[s]))
            out[s] = backend.xp.linalg.solve(gram, rhs[..., None])[..., 0]
        return out

    def fit_subsets(self, masks: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Fitted ``(coef, intercept)`` of each coalition: arrays (m, d) and (m,).

        ``masks`` (m, N) are boolean masks or integer sample weights (bootstrap
        counts: ``Ridge().fit(X, y, sample_weight=w)``). Rows of degenerate
        coalitions (no model is fitted) are NaN.
        """
        masks = check_weights(masks, self.n_players, "masks")
        theta = np.full((masks.shape[0], self.design.q), np.nan)
        fit = ~degenerate_rows(masks, self.targets, self.min_samples)
        theta[fit] = self._backend.to_numpy(self._thetas(masks[fit]))
        return self.design.to_original(theta)

    def predict(self, masks: ArrayLike, X: ArrayLike | None = None) -> NDArray[np.float64]:
        """Predictions (m, n) on ``X`` (default: the test set) of each coalition's model.

        ``masks`` as in :meth:`fit_subsets` (masks or integer sample weights).
        Degenerate coalitions predict by the constant convention (mean of
        ``y_S``, weighted; 0 for the empty set), whatever ``degenerate`` says.
        """
        masks = check_weights(masks, self.n_players, "masks")
        X = self.design.test if X is None else _check_features_like(X, self.design)
        fit = ~degenerate_rows(masks, self.targets, self.min_samples)
        out = np.repeat(constant_means(masks, self.targets)[:, None], X.shape[0], axis=1)
        backend = self._backend
        out[fit] = backend.to_numpy(self._thetas(masks[fit]) @ backend.xp.permute_dims(backend.asarray(X), (1, 0)))
        return out

    def _fitted_utilities(self, masks: NDArray[np.bool_], counts: NDArray[np.float64] | None) -> NDArray[np.float64]:
        return self._score_thetas(self._thetas(masks))

    def _score_thetas(self, theta: Array) -> NDArray[np.float64]:
        """Test metric (numpy, m) of parameters ``theta`` (m, q) in the backend."""
        values = np.empty(theta.shape[0])
        for s in _chunks(theta.shape[0], self._chunk_size(8 * len(self.y_test))):
            values[s] = regression_scores(self._backend.to_numpy(theta[s] @ self._test_T), self.y_test,
                                          self.metric, self.targets.ss_tot)
        return values

    def evaluate_prefixes(self, permutations: ArrayLike) -> NDArray[np.float64]:
        """Utilities (m, n) of the prefixes of each permutation, in one pass each (exact).

        ``A^{-1}`` of the first point is computed directly (the unpenalised
        intercept makes ``R`` itself singular), then updated by Sherman-Morrison
        for each added point and recomputed from the accumulated Gram matrix
        every ``refresh_every`` points. ``O(n q^2)`` per permutation plus the
        scoring of ``n`` models; agrees with :meth:`evaluate` on the prefix
        masks to rounding (about 1e-12 relative).
        """
        n, q = self.n_players, self.design.q
        permutations = check_permutations(permutations, n)
        if self.device is not None or self.scaling is not None:
            return self._device_prefixes(permutations)
        m = permutations.shape[0]
        values = np.empty((m, n))
        X, y = self.design.train, self.y_train
        per_perm_bytes = 8 * (n * q + 3 * q * q + n)
        for s in _chunks(m, self._chunk_size(per_perm_bytes, cap=256)):
            perms = permutations[s]
            b = perms.shape[0]
            thetas = np.empty((b, n, q))
            x = X[perms[:, 0]]
            gram = np.einsum("bi,bj->bij", x, x)
            inverse = np.linalg.inv(gram + self._ridge)
            rhs = x * y[perms[:, 0], None]
            thetas[:, 0] = np.einsum("bij,bj->bi", inverse, rhs)
            for k in range(1, n):
                x = X[perms[:, k]]
                u = np.einsum("bij,bj->bi", inverse, x)
                inverse -= np.einsum("bi,bj->bij", u, u / (1.0 + np.einsum("bi,bi->b", x, u))[:, None])
                gram += np.einsum("bi,bj->bij", x, x)
                rhs += x * y[perms[:, k], None]
                if k % self.refresh_every == 0:
                    inverse = np.linalg.inv(gram + self._ridge)
                thetas[:, k] = np.einsum("bij,bj->bi", inverse, rhs)
            values[s] = self._score_thetas(thetas.reshape(b * n, q)).reshape(b, n)
        degenerate = self._prefix_degenerate(permutations)
        if degenerate.any():
            values[degenerate] = self._prefix_degenerate_utilities(permutations, degenerate)
        self.n_fits += int((~degenerate).sum())
        return values

    def __repr__(self) -> str:
        device = "" if self.device is None else f", device={str(self.device)!r}, dtype={self.dtype!r}"
        return f"RidgeUtility(n_players={self.n_players}, alpha={self.alpha}, metric={self.metric!r}{device})"
