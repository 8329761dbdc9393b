r"""Batched learners: train many coalitions at once, score them like :class:`ModelUtility`.

Both games value training points by the test score of a linear model fitted
on the coalition, with the metrics and the degenerate-coalition convention
of :mod:`shapley_research.utility`, and they minimise exactly scikit-learn's
objectives, so their utilities agree with ``ModelUtility(Ridge(alpha))`` and
``ModelUtility(LogisticRegression(C))``.

Notation: :math:`\tilde x_i = (x_i - \bar x, 1)` is the training point
centred by the training mean with an intercept column appended (``q = d + 1``
entries; without an intercept, ``\tilde x_i = x_i`` and ``q = d``). Since the
intercept is not penalised, centring is an exact reparametrisation (the
intercept absorbs :math:`\bar x^\top w`); it only improves conditioning.

:class:`RidgeUtility`
    ``Ridge(alpha)`` minimises :math:`\|y_S - X_S w - b\|^2 + \alpha\|w\|^2`.
    With :math:`R = \operatorname{diag}(\alpha, \dots, \alpha, 0)` the solution
    of coalition ``S`` (mask :math:`m`) solves the normal equations

    .. math:: \Bigl(R + \sum_i m_i \tilde x_i \tilde x_i^\top\Bigr)\theta = \sum_i m_i y_i \tilde x_i .

    For a batch of ``B`` coalitions the Gram matrices are one matrix product
    ``masks @ O`` with ``O`` the ``(N, q(q+1)/2)`` packed per-point outer
    products (``O(B N q^2)`` flops in one BLAS call), followed by one batched
    ``np.linalg.solve`` on ``(B, q, q)``. Along a permutation the inverse is
    updated by Sherman-Morrison, :math:`A_{k}^{-1} = A_{k-1}^{-1} -
    \frac{u u^\top}{1 + \tilde x^\top u}`, :math:`u = A_{k-1}^{-1}\tilde x`
    (``O(q^2)`` per prefix, exact; the inverse is recomputed every
    ``refresh_every`` points to stop rounding drift).

:class:`LogisticRegressionUtility`
    ``LogisticRegression(C)`` minimises :math:`C\sum_{i \in S}\ell_i(\theta) +
    \frac12\sum_k \|w_k\|^2` (intercepts unpenalised). With the classes
    :math:`\mathcal K_S` present in ``S``, :math:`\ell_i = \log\sum_{k \in
    \mathcal K_S} e^{z_{ik}} - z_{i y_i}`, :math:`z_{ik} = \theta_k^\top \tilde
    x_i`: a coalition with three or more classes gets the multinomial model
    over its classes, as scikit-learn fits. A coalition with exactly two classes
    gets scikit-learn's *binary* model :math:`C\sum_i \log(1 + e^{-s_i v^\top
    \tilde x_i}) + \frac12\|v\|^2`; it is computed in the same softmax code as
    the symmetric two-class softmax with :math:`C/2`, whose minimiser is
    :math:`\theta_{c_1} = -\theta_{c_0} = v/2` (the loss depends on
    :math:`\theta_{c_1} - \theta_{c_0}` only and the penalty then splits
    evenly), so predictions and probabilities are identical. Intercepts are
    kept centred (they sum to zero over present classes, as in scikit-learn).

    Solvers (batched over coalitions, each with its own convergence test
    :math:`\|\nabla f\|_\infty \le \text{tol}\cdot C\cdot|S|`, which is
    scikit-learn's ``gtol`` on its normalised objective, and an iteration cap):

    * ``"newton"``: Newton's method with the full softmax Hessian
      :math:`\sum_i m_i(\operatorname{diag} p_i - p_i p_i^\top) \otimes \tilde x_i\tilde x_i^\top`,
      built for a whole chunk by one product ``(B K^2, N) @ (N, q^2)`` of
      class-pair weights with the per-point outer products; ``(B, Kq, Kq)``
      batched Cholesky solves (the null direction of the intercepts is made
      harmless by a rank-one term that does not change the step); a full step
      evaluated together with the next gradient, backtracking only where the
      Armijo test fails. Quadratic convergence: 3-5 iterations from the warm
      start, but ``O(K^2 N q^2)`` per iteration;
    * ``"lbfgs"``: limited-memory BFGS (10 pairs, two-loop recursion) with
      backtracking Armijo steps: ``O(K N q)`` per iteration, for models with
      many parameters (MNIST after PCA: ``K q = 510``), where one Hessian costs
      more than a whole fit. Its initial inverse Hessian is the full-data
      Hessian scaled to the coalition, :math:`(C\frac{|S|}{N} H_D + I)^{-1}`
      through one eigendecomposition of :math:`H_D` (a random coalition's
      curvature is on average :math:`|S|/N` of the whole set's): about three
      times fewer iterations on MNIST;
    * ``"auto"``: Newton when ``K q <= newton_max_params``, else L-BFGS.

    Warm start: every fit starts from the full-data solution (fitted once,
    like :math:`H_D`).
    Every product runs over all ``N`` rows with the mask as weights, so a chunk
    of coalitions costs a few large BLAS calls per iteration; converged
    coalitions leave the chunk.

    One pass along a permutation (:meth:`LogisticRegressionUtility.evaluate_prefixes`)
    is an *approximation* of refitting every prefix, the paper's
    "incrementally trainable" model (Section 4.1). When point ``k`` joins the
    prefix ``S_k``, up to ``prefix_steps`` damped quasi-Newton (chord) steps
    on the prefix objective :math:`f_k` start from the previous prefix's
    parameters:

    .. math:: \theta \leftarrow \theta - t\,\frac{k_{\text{ref}}}{k}\,H_{\text{ref}}^{-1}\nabla f_k(\theta),

    with the exact gradient of the whole prefix, :math:`H_{\text{ref}}` the
    Hessian at the last exact refit (size :math:`k_{\text{ref}}`, rescaled to
    the prefix size; its class-diagonal blocks when Newton is not used, a
    preconditioner that provably contracts because twice it dominates the
    Hessian), and :math:`t` from Armijo backtracking (a stale Hessian
    overshoots on small, nearly separable prefixes). Steps stop once
    :math:`\|\nabla f_k\|_\infty \le 100\,\text{tol}\,C\,k`. The prefix is
    refitted exactly (warm-started, to ``tol``) at the sizes
    :math:`\lceil r^i\rceil` for ``r = prefix_refit_ratio`` (shared by all
    permutations, so refits are batched) and whenever its set of classes
    changes. Because each step uses the exact gradient, errors left by one
    step are corrected by the next; the tests and the benchmark report the
    distance to exact refits.

    With ``prefix_path="exact"`` the pass is exact instead
    (:mod:`shapley_research._warm_prefix`): every prefix is iterated to the
    convergence test of :meth:`LogisticRegressionUtility.evaluate`, from the
    previous prefix's solution, by L-BFGS steps over the prefix's rows whose
    secant pairs carry over between prefixes, on top of the rescaled inverse
    Hessian of a recent prefix.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._validation import check_bool, check_choice, check_features, check_float, check_int, check_permutations
from .games import Game
from .utility import (CLASSIFICATION_METRICS, REGRESSION_METRICS, TargetInfo, check_dataset,
                      check_degenerate_options, clipped_mean_log_probability, degenerate_rows,
                      degenerate_utilities, regression_scores, resolve_metric)

__all__ = ["LogisticRegressionUtility", "RidgeUtility", "unsupported_reason", "learner_for"]

NEG_LOGIT = -1e30  # logit of a class absent from a coalition: exp underflows to exactly 0
_CHUNK_BYTES = 48 * 2**20  # working memory per chunk of coalitions


# --------------------------------------------------------------------------------------------
# Routing from ModelUtility
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# Shared machinery
# --------------------------------------------------------------------------------------------

class _Design:
    """Centred design matrices with the intercept column, and the penalty pattern."""

    def __init__(self, X_train: np.ndarray, X_test: np.ndarray, fit_intercept: bool):
        self.fit_intercept = fit_intercept
        self.n_features = X_train.shape[1]
        self.mean = X_train.mean(axis=0) if fit_intercept else np.zeros(self.n_features)
        self.train = self.transform(X_train)
        self.test = self.transform(X_test)
        self.q = self.train.shape[1]
        self.penalty = np.ones(self.q)
        if fit_intercept:
            self.penalty[-1] = 0.0

    def transform(self, X: np.ndarray) -> np.ndarray:
        X = X - self.mean
        if self.fit_intercept:
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        return np.ascontiguousarray(X)

    def to_original(self, theta: np.ndarray):
        """``(coef, intercept)`` in the original feature coordinates from centred ``theta[..., q]``."""
        coef = theta[..., :self.n_features]
        if not self.fit_intercept:
            return coef.copy(), np.zeros(theta.shape[:-1])
        return coef.copy(), theta[..., -1] - coef @ self.mean


def _check_features_like(X, design: _Design, name: str = "X") -> np.ndarray:

    X = check_features(X, name)
    if X.shape[1] != design.n_features:
        raise ValueError(f"{name} has {X.shape[1]} features; the game was built with {design.n_features}.")
    return design.transform(X)


def _chunks(total: int, size: int):
    for lo in range(0, total, size):
        yield slice(lo, min(lo + size, total))


class _BatchedLearner(Game):
    """Data checks, degenerate coalitions and the evaluate flow shared by the learners."""

    exact_prefixes = False

    def _setup(self, X_train, y_train, X_test, y_test, metric, fit_intercept, degenerate, default_utility,
               min_samples, batch_size, task):
        self.metric, metric_task = resolve_metric(metric)
        if callable(self.metric):
            raise TypeError(f"{type(self).__name__} takes a metric name, not a callable "
                            "(use ModelUtility for a custom scorer).")
        if metric_task != task:
            raise ValueError(f"{type(self).__name__} needs a {task} metric, got {metric!r}.")
        self.task = task
        self.X_train, self.y_train, self.X_test, self.y_test = check_dataset(X_train, y_train, X_test, y_test, task)
        check_bool(fit_intercept, "fit_intercept")
        self.degenerate, self.default_utility, self.min_samples = check_degenerate_options(
            degenerate, default_utility, min_samples)
        self.batch_size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.n_players = self.X_train.shape[0]
        self.targets = TargetInfo(self.y_train, self.y_test, task)
        self.design = _Design(self.X_train, self.X_test, bool(fit_intercept))
        self.n_fits = 0

    def _chunk_size(self, bytes_per_row: float, cap: int = 4096) -> int:
        size = int(max(1, min(cap, _CHUNK_BYTES // max(bytes_per_row, 1))))
        return size if self.batch_size is None else min(size, self.batch_size)

    def _counts(self, masks):
        return self.targets.class_counts(masks) if self.task == "classification" else None

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        counts = self._counts(masks)
        degenerate = degenerate_rows(masks, self.targets, self.min_samples, counts)
        values = np.empty(masks.shape[0])
        if degenerate.any():
            values[degenerate] = degenerate_utilities(
                masks[degenerate], self.targets, self.metric, self.degenerate, self.default_utility,
                None if counts is None else counts[degenerate], owner=type(self).__name__)
        fit = ~degenerate
        if fit.any():
            values[fit] = self._fitted_utilities(masks[fit], None if counts is None else counts[fit])
            self.n_fits += int(fit.sum())
        return values

    def _prefix_degenerate(self, permutations: np.ndarray) -> np.ndarray:
        """(m, n) booleans: is prefix ``k`` of permutation ``t`` degenerate."""
        sizes = np.arange(1, self.n_players + 1)
        degenerate = np.broadcast_to(sizes < self.min_samples, permutations.shape).copy()
        if self.task == "classification":
            labels = self.targets.y_train_index[permutations]
            first = labels[:, :1]
            degenerate |= np.logical_and.accumulate(labels == first, axis=1)
        return degenerate

    def _prefix_degenerate_utilities(self, permutations, degenerate) -> np.ndarray:
        """Utilities of the degenerate prefixes (usually the first few of each permutation)."""
        rows, cols = np.nonzero(degenerate)
        if rows.size == 0:
            return np.empty(0)
        positions = np.empty_like(permutations)
        np.put_along_axis(positions, permutations, np.arange(self.n_players)[None, :], axis=1)
        masks = positions[rows] <= cols[:, None]
        return degenerate_utilities(masks, self.targets, self.metric, self.degenerate, self.default_utility,
                                    owner=type(self).__name__)


# --------------------------------------------------------------------------------------------
# Ridge regression
# --------------------------------------------------------------------------------------------

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
        empty set always) as in :mod:`shapley_research.utility`: by default the
        mean target of ``S`` is predicted, 0 for the empty set.
    batch_size : int, optional
        Most coalitions (or permutations) trained together; by default as many
        as fit in about 48 MiB of working memory.
    refresh_every : int, default 64
        Along a permutation, recompute the inverse exactly every so many points.

    Attributes
    ----------
    n_fits : int
        Models trained by :meth:`evaluate` and :meth:`evaluate_prefixes`
        (non-degenerate coalitions; each prefix counts one).
    """

    exact_prefixes = True

    def __init__(self, X_train, y_train, X_test, y_test, metric="neg_mean_squared_error", *, alpha: float = 1.0,
                 fit_intercept: bool = True, degenerate: str = "constant", default_utility: float | None = None,
                 min_samples: int = 1, batch_size: int | None = None, refresh_every: int = 64):
        self._setup(X_train, y_train, X_test, y_test, metric, fit_intercept, degenerate, default_utility,
                    min_samples, batch_size, "regression")
        self.alpha = check_float(alpha, "alpha", minimum=0.0, strict=True)
        self.refresh_every = check_int(refresh_every, "refresh_every", minimum=1)
        q = self.design.q
        self._upper = np.triu_indices(q)
        self._ridge = self.alpha * np.diag(self.design.penalty)
        self._rhs_rows = self.design.train * self.y_train[:, None]
        packed_bytes = self.n_players * len(self._upper[0]) * 8
        # per-point outer products, packed; kept when small, else rebuilt per player block
        self._outer = self._outer_products(slice(None)) if packed_bytes <= 2 * _CHUNK_BYTES else None

    def _outer_products(self, rows) -> np.ndarray:
        X = self.design.train[rows]
        return X[:, self._upper[0]] * X[:, self._upper[1]]

    def _gram(self, masks: np.ndarray) -> np.ndarray:
        """Regularised Gram matrices ``R + sum_i m_i x_i x_i^T``, shape (B, q, q)."""
        weights = masks.astype(float)
        if self._outer is not None:
            packed = weights @ self._outer
        else:
            block = max(1, _CHUNK_BYTES // (8 * len(self._upper[0])))
            packed = sum(weights[:, s] @ self._outer_products(s) for s in _chunks(self.n_players, block))
        q = self.design.q
        gram = np.empty((masks.shape[0], q, q))
        gram[:, self._upper[0], self._upper[1]] = packed
        gram[:, self._upper[1], self._upper[0]] = packed
        return gram + self._ridge

    def _thetas(self, masks: np.ndarray) -> np.ndarray:
        q = self.design.q
        out = np.empty((masks.shape[0], q))
        for s in _chunks(masks.shape[0], self._chunk_size(8 * (3 * q * q + self.n_players))):
            rhs = masks[s].astype(float) @ self._rhs_rows
            out[s] = np.linalg.solve(self._gram(masks[s]), rhs[..., None])[..., 0]
        return out

    def fit_subsets(self, masks):
        """Fitted ``(coef, intercept)`` of each coalition: arrays (m, d) and (m,).

        Rows of degenerate coalitions (no model is fitted) are NaN.
        """
        from ._validation import check_masks

        masks = check_masks(masks, self.n_players)
        theta = np.full((masks.shape[0], self.design.q), np.nan)
        fit = ~degenerate_rows(masks, self.targets, self.min_samples)
        theta[fit] = self._thetas(masks[fit])
        return self.design.to_original(theta)

    def predict(self, masks, X=None) -> np.ndarray:
        """Predictions (m, n) on ``X`` (default: the test set) of each coalition's model.

        Degenerate coalitions predict by the constant convention (mean of
        ``y_S``, 0 for the empty set), whatever ``degenerate`` says.
        """
        from ._validation import check_masks

        masks = check_masks(masks, self.n_players)
        X = self.design.test if X is None else _check_features_like(X, self.design)
        fit = ~degenerate_rows(masks, self.targets, self.min_samples)
        sizes = masks.sum(axis=1)
        means = np.where(sizes > 0, (masks @ self.y_train) / np.maximum(sizes, 1), 0.0)
        out = np.repeat(means[:, None], X.shape[0], axis=1)
        out[fit] = self._thetas(masks[fit]) @ X.T
        return out

    def _fitted_utilities(self, masks, counts) -> np.ndarray:
        return self._score_thetas(self._thetas(masks))

    def _score_thetas(self, theta: np.ndarray) -> np.ndarray:
        values = np.empty(theta.shape[0])
        for s in _chunks(theta.shape[0], self._chunk_size(8 * len(self.y_test))):
            values[s] = regression_scores(theta[s] @ self.design.test.T, self.y_test, self.metric,
                                          self.targets.ss_tot)
        return values

    def evaluate_prefixes(self, permutations) -> np.ndarray:
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
        return f"RidgeUtility(n_players={self.n_players}, alpha={self.alpha}, metric={self.metric!r})"


# --------------------------------------------------------------------------------------------
# Logistic regression: a chunk of coalitions and its softmax objective
# --------------------------------------------------------------------------------------------

class _SoftmaxData:
    """What every chunk shares: the design, labels and (for Newton) packed outer products."""

    def __init__(self, design: _Design, targets: TargetInfo):
        self.X = design.train
        self.XT = np.ascontiguousarray(design.train.T)
        self.penalty = design.penalty
        self.K, self.q = targets.n_classes, design.q
        self.onehot = np.ascontiguousarray(targets.train_onehot.T)  # (K, N)
        n = self.X.shape[0]
        self.true_index = targets.y_train_index * n + np.arange(n)  # flat (K, N) index of each true logit
        self._outer = None

    @property
    def outer(self) -> np.ndarray:
        """Per-point outer products ``x_i x_i^T`` flattened, (N, q^2); built on first use (Newton)."""
        if self._outer is None:
            self._outer = (self.X[:, :, None] * self.X[:, None, :]).reshape(self.X.shape[0], -1)
        return self._outer


class _SoftmaxChunk:
    """A chunk of coalitions (mask weights over all ``N`` points) and its penalised softmax objective.

    Every product runs over all ``N`` rows with weight 0 outside the
    coalition, so each step of a whole chunk is a few large BLAS calls (no
    per-coalition small matrices). Shapes: ``weight`` (B, N), ``present``
    (B, K), ``C`` (B,): ``C`` for three or more classes, ``C/2`` for two
    (module docstring), ``offset`` (B, K, 1) with ``NEG_LOGIT`` on absent classes.
    """

    def __init__(self, data: _SoftmaxData, weight, present, C):
        self.data, self.weight, self.present, self.C = data, weight, present, C
        self.offset = np.where(present, 0.0, NEG_LOGIT)[:, :, None]
        self.all_present = bool(present.all())
        self.size = weight.sum(axis=1)

    @classmethod
    def from_masks(cls, data: _SoftmaxData, masks, counts, C: float) -> "_SoftmaxChunk":
        present = counts > 0
        return cls(data, masks.astype(float), present, np.where(present.sum(axis=1) == 2, 0.5 * C, C))

    def take(self, rows) -> "_SoftmaxChunk":
        return _SoftmaxChunk(self.data, self.weight[rows], self.present[rows], self.C[rows])

    def __len__(self) -> int:
        return self.weight.shape[0]

    def logits(self, theta) -> np.ndarray:
        B, K, q = theta.shape
        Z = (theta.reshape(B * K, q) @ self.data.XT).reshape(B, K, -1)
        if not self.all_present:
            Z += self.offset
        return Z

    def objective(self, theta, grad: bool = True, probabilities: bool = False):
        """``f``, and optionally the gradient (B, K, q) and the probabilities (B, K, N) for :meth:`hessian`.

        Works in place on one ``(B, K, N)`` array (logits, shifted logits,
        exponentials, probabilities, residuals in turn): these passes over
        memory, not the two matrix products, dominate the cost.
        """
        data = self.data
        B, K, q = theta.shape
        Z = self.logits(theta)
        Z -= Z.max(axis=1, keepdims=True)
        # loss_i = log sum_k exp(z_ik) - z_iy (shift-invariant); rows outside S have weight 0
        z_true = np.take(Z.reshape(B, -1), data.true_index, axis=1)
        E = np.exp(Z, out=Z)
        total = E.sum(axis=1)
        loss = np.log(total)
        loss -= z_true
        f = self.C * np.einsum("bn,bn->b", loss, self.weight)
        f += 0.5 * np.einsum("bkq,q->b", theta * theta, data.penalty)
        if not grad:
            return f
        E /= total[:, None, :]
        P = E.copy() if probabilities else E
        residual = E
        residual -= data.onehot
        residual *= self.weight[:, None, :]
        g = (residual.reshape(B * K, -1) @ data.X).reshape(B, K, q)
        g *= self.C[:, None, None]
        g += theta * data.penalty
        return (f, g, P) if probabilities else (f, g)

    def hessian(self, P) -> np.ndarray:
        """Full softmax Hessian, null directions made harmless (:func:`_fix_null_directions`).

        Block ``(k, l)`` is ``sum_i w_i (p_ik [k=l] - p_ik p_il) x_i x_i^T``: one
        product of the class-pair weights with the per-point outer products,
        ``(B K^2, N) @ (N, q^2)``.
        """
        data = self.data
        B, K, N = P.shape
        q = data.q
        W = -P[:, :, None, :] * P[:, None, :, :]  # (B, K, K, N)
        index = np.arange(K)
        W[:, index, index, :] += P
        W *= self.weight[:, None, None, :]
        blocks = (W.reshape(B * K * K, N) @ data.outer).reshape(B, K, K, q, q)
        H = np.ascontiguousarray(blocks.transpose(0, 1, 3, 2, 4)).reshape(B, K * q, K * q)
        H *= self.C[:, None, None]
        diagonal = np.arange(K * q)
        H[:, diagonal, diagonal] += np.tile(data.penalty, K)
        _fix_null_directions(H, self.present, self.data.penalty)
        return H

    def converged(self, g, tol) -> np.ndarray:
        return np.abs(g).max(axis=(1, 2)) <= tol * self.C * self.size

    def block_hessian_inverse(self, theta) -> np.ndarray:
        """Inverses of the class-diagonal blocks of the Hessian at ``theta``, shape (B, K, q, q).

        Block ``k`` is ``C sum_i w_i p_ik (1 - p_ik) x_i x_i^T`` plus the penalty
        (unit intercept entry for absent classes). Twice this block-diagonal
        matrix dominates the full Hessian (the softmax covariance
        ``diag(p) - p p^T`` is diagonally dominant), so steps preconditioned by
        it contract: the chord iteration converges.
        """
        data = self.data
        B, K, q = theta.shape
        _, _, P = self.objective(theta, grad=True, probabilities=True)
        W = P * (1.0 - P) * self.weight[:, None, :]
        blocks = (W.reshape(B * K, -1) @ data.outer).reshape(B, K, q, q) * self.C[:, None, None, None]
        diagonal = np.arange(q)
        blocks[:, :, diagonal, diagonal] += data.penalty
        if data.penalty[-1] == 0.0:
            blocks[:, :, q - 1, q - 1] += ~self.present
        return np.linalg.inv(blocks)

    def exact_hessian_inverse(self, theta) -> np.ndarray:
        """Inverse of the (null-fixed) Hessian at ``theta``, shape (B, Kq, Kq)."""
        _, _, P = self.objective(theta, grad=True, probabilities=True)
        return np.linalg.inv(self.hessian(P))


def _fix_null_directions(H, present, penalty) -> None:
    """Make Hessians ``H`` (B, Kq, Kq) invertible without changing Newton steps on admissible gradients.

    Absent classes (``present`` (B, K) false): their coordinates never move
    (zero gradient), so their unpenalised intercept entries get a unit
    diagonal. Present classes: the loss is invariant to adding one constant to
    all their intercepts, a direction every gradient is orthogonal to; adding
    ``c v v^T`` along it leaves the solution of ``H d = -g`` unchanged.
    """
    if penalty[-1] != 0.0:  # no intercept: the penalty makes H positive definite
        return
    q = penalty.shape[0]
    K = present.shape[1]
    intercept = np.arange(K) * q + (q - 1)
    H[:, intercept, intercept] += ~present
    v = present.astype(float)
    scale = np.abs(H[:, intercept, intercept]).mean(axis=1)
    H[:, intercept[:, None], intercept[None, :]] += (scale[:, None, None] / K) * (v[:, :, None] * v[:, None, :])


def _data_hessian(X: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``sum_i (diag p_i - p_i p_i^T) (x) x_i x_i^T`` for rows ``X`` (n, q) and probabilities ``P`` (K, n).

    As ``diag`` blocks ``X^T diag(p_k) X`` minus ``V^T V`` with ``V_i = p_i (x) x_i``:
    ``O(n K^2 q^2)`` in one GEMM, the cheapest form for one large model.
    """
    n, q = X.shape
    K = P.shape[0]
    V = (P.T[:, :, None] * X[:, None, :]).reshape(n, K * q)
    H = -(V.T @ V)
    for c in range(K):
        H[c * q:(c + 1) * q, c * q:(c + 1) * q] += (X.T * P[c]) @ X
    return H


def _solve_spd(H: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``H x = b`` for a batch of symmetric positive definite ``H`` (B, p, p), ``b`` (B, p).

    Batched Cholesky, then forward and back substitution vectorised over the
    batch (``2p`` small numpy steps): several times faster than
    ``np.linalg.solve``'s per-matrix LU for the small ``p`` Newton uses.
    Falls back to LU if a factorisation fails.
    """
    try:
        L = np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        return np.linalg.solve(H, b[..., None])[..., 0]
    p = b.shape[1]
    y = np.empty_like(b)
    for j in range(p):
        y[:, j] = (b[:, j] - np.einsum("bk,bk->b", L[:, j, :j], y[:, :j])) / L[:, j, j]
    x = np.empty_like(b)
    for j in range(p - 1, -1, -1):
        x[:, j] = (y[:, j] - np.einsum("bk,bk->b", L[:, j + 1:, j], x[:, j + 1:])) / L[:, j, j]
    return x


def _armijo(chunk: _SoftmaxChunk, theta, f, g, direction, with_grad: bool, max_halvings: int = 40, slope=None):
    """Backtracking line search: per coalition the largest ``t = 2^-j`` with sufficient decrease.

    Returns the new parameters, objective, gradient (when ``with_grad``; the
    gradient of the trial point comes with the same pass) and which
    coalitions found a decrease.
    """
    if slope is None:
        slope = np.einsum("bkq,bkq->b", g, direction)
    step = np.ones(len(chunk))
    accepted = np.zeros(len(chunk), dtype=bool)
    new_theta, new_f = theta.copy(), f.copy()
    new_g = g.copy() if with_grad else None
    pending = np.arange(len(chunk))
    for _ in range(max_halvings):
        sub = chunk if pending.size == len(chunk) else chunk.take(pending)
        trial = theta[pending] + step[pending, None, None] * direction[pending]
        if with_grad:
            f_trial, g_trial = sub.objective(trial)
        else:
            f_trial = sub.objective(trial, grad=False)
        ok = np.isfinite(f_trial) & (f_trial <= f[pending] + 1e-4 * step[pending] * slope[pending])
        done = pending[ok]
        new_theta[done], new_f[done], accepted[done] = trial[ok], f_trial[ok], True
        if with_grad:
            new_g[done] = g_trial[ok]
        pending = pending[~ok]
        if pending.size == 0:
            break
        step[pending] *= 0.5
    return new_theta, new_f, new_g, accepted


def _no_progress(f_old, f_new) -> np.ndarray:
    """Relative decrease below ``64 eps`` (scipy's L-BFGS ``ftol`` as scikit-learn sets it)."""
    scale = np.maximum(np.maximum(np.abs(f_old), np.abs(f_new)), 1.0)
    return (f_old - f_new) <= 64 * np.finfo(float).eps * scale


def _stalled_converged(chunk: _SoftmaxChunk, g, tol: float) -> np.ndarray:
    """Coalitions whose line search found no decrease: done if the gradient is at rounding level."""
    return chunk.converged(g, 1e3 * tol)


def _newton(chunk: _SoftmaxChunk, theta, tol: float, max_iter: int):
    """Batched damped Newton; returns theta, iterations used and converged flags.

    The full step is evaluated together with the next iteration's gradient
    and Hessian (one pass per iteration); only coalitions failing the Armijo
    test backtrack, and the Hessian is skipped for coalitions already converged.
    """
    B, K, q = theta.shape
    active = np.arange(B)
    converged = np.zeros(B, dtype=bool)
    iterations = np.zeros(B, dtype=int)
    sub = chunk
    f, g, P = sub.objective(theta, grad=True, probabilities=True)
    for it in range(max_iter + 1):
        done = sub.converged(g, tol)
        converged[active[done]] = True
        if done.all() or it == max_iter:
            break
        if done.any():
            keep = ~done
            active, sub, f, g, P = active[keep], sub.take(keep), f[keep], g[keep], P[keep]
        H = sub.hessian(P)
        direction = -_solve_spd(H, g.reshape(len(active), K * q)).reshape(len(active), K, q)
        slope = np.einsum("bkq,bkq->b", g, direction)
        th = theta[active]
        trial = th + direction
        f_new, g_new, P_new = sub.objective(trial, grad=True, probabilities=True)
        ok = np.isfinite(f_new) & (f_new <= f + 1e-4 * slope)
        iterations[active] += 1
        if not ok.all():  # damp the step of these coalitions, then re-evaluate them at the accepted point
            bad = np.flatnonzero(~ok)
            part = sub.take(bad)
            half = 0.5 * direction[bad]
            damped, _, _, accepted = _armijo(part, th[bad], f[bad], g[bad], half, with_grad=False,
                                             slope=0.5 * slope[bad])
            f_b, g_b, P_b = part.objective(damped, grad=True, probabilities=True)
            trial[bad], f_new[bad], g_new[bad], P_new[bad] = damped, f_b, g_b, P_b
            if not accepted.all():  # no decrease at all along the Newton direction: optimum to rounding
                stuck = bad[~accepted]
                converged[active[stuck]] = _stalled_converged(sub.take(stuck), g[stuck], tol)
                keep = np.ones(len(active), dtype=bool)
                keep[stuck] = False
                theta[active] = trial
                active, sub = active[keep], sub.take(keep)
                f, g, P = f_new[keep], g_new[keep], P_new[keep]
                if active.size == 0:
                    break
                continue
        theta[active] = trial
        stuck = _no_progress(f, f_new)
        f, g, P = f_new, g_new, P_new
        if stuck.any():  # the objective no longer decreases: optimum to rounding
            converged[active[stuck]] = _stalled_converged(sub.take(stuck), g[stuck], tol)
            keep = ~stuck
            active, sub, f, g, P = active[keep], sub.take(keep), f[keep], g[keep], P[keep]
            if active.size == 0:
                break
    return theta, iterations, converged


def _lbfgs(chunk: _SoftmaxChunk, theta, tol: float, max_iter: int, memory: int = 10, precondition=None):
    """Batched L-BFGS (two-loop recursion, ``memory`` pairs) with backtracking Armijo steps.

    ``precondition(r, rows)``, if given, applies the initial inverse Hessian
    ``H0`` to ``r`` for the chunk rows ``rows`` (instead of ``gamma I``).
    """
    B, K, q = theta.shape
    active = np.arange(B)
    converged = np.zeros(B, dtype=bool)
    iterations = np.zeros(B, dtype=int)
    sub = chunk
    f, g = sub.objective(theta)
    S = np.zeros((B, memory, K, q))
    Y = np.zeros((B, memory, K, q))
    rho = np.zeros((B, memory))
    gamma = np.ones(B)
    pairs = np.zeros(B, dtype=int)  # curvature pairs stored since the last restart

    def keep_rows(keep):
        nonlocal active, sub, f, g, S, Y, rho, gamma, pairs
        active, sub = active[keep], sub.take(keep)
        f, g, S, Y, rho, gamma, pairs = f[keep], g[keep], S[keep], Y[keep], rho[keep], gamma[keep], pairs[keep]

    for it in range(max_iter + 1):
        done = sub.converged(g, tol)
        converged[active[done]] = True
        if done.all() or it == max_iter:
            break
        if done.any():
            keep_rows(~done)
        # two-loop recursion over the stored pairs, newest first
        r = g.copy()
        alphas = np.zeros((len(active), memory))
        newest_first = [(it - 1 - j) % memory for j in range(memory)]
        for j in newest_first:
            alphas[:, j] = rho[:, j] * np.einsum("bkq,bkq->b", S[:, j], r)
            r -= alphas[:, j, None, None] * Y[:, j]
        if precondition is not None:  # initial inverse Hessian H0: the scaled full-data Hessian
            r = precondition(r, active)
        else:  # H0 = gamma I (the usual scaling), 1/|g| before any pair is stored
            scale = np.where(pairs == 0, 1.0 / np.maximum(np.abs(g).max(axis=(1, 2)), 1.0), gamma)
            r *= scale[:, None, None]
        for j in reversed(newest_first):
            beta = rho[:, j] * np.einsum("bkq,bkq->b", Y[:, j], r)
            r += (alphas[:, j] - beta)[:, None, None] * S[:, j]
        direction = -r
        uphill = np.einsum("bkq,bkq->b", direction, g) >= 0
        if uphill.any():  # stale pairs spoiled the curvature model: restart from steepest descent
            direction[uphill] = -g[uphill] / np.maximum(np.abs(g[uphill]).max(axis=(1, 2)), 1.0)[:, None, None]
            rho[uphill], pairs[uphill] = 0.0, 0
        th = theta[active]
        new_theta, new_f, new_g, accepted = _armijo(sub, th, f, g, direction, with_grad=True)
        s, y = new_theta - th, new_g - g
        sy = np.einsum("bkq,bkq->b", s, y)
        yy = np.einsum("bkq,bkq->b", y, y)
        good = accepted & (sy > 1e-12 * np.sqrt(np.einsum("bkq,bkq->b", s, s) * yy))
        slot = it % memory
        S[:, slot], Y[:, slot] = s, y
        rho[:, slot] = np.where(good, 1.0 / np.where(good, sy, 1.0), 0.0)
        gamma = np.where(good, sy / np.where(good, yy, 1.0), gamma)
        pairs += good
        stalled = ~accepted | _no_progress(f, new_f)
        theta[active], f, g = new_theta, new_f, new_g
        iterations[active] += 1
        if stalled.any():  # no decrease along a descent direction: optimum to rounding
            converged[active[stalled]] = _stalled_converged(sub.take(stalled), g[stalled], tol)
            keep_rows(~stalled)
            if active.size == 0:
                break
    return theta, iterations, converged


# --------------------------------------------------------------------------------------------
# Logistic regression utility
# --------------------------------------------------------------------------------------------

class LogisticRegressionUtility(_BatchedLearner):
    r"""L2 logistic regression utility (binary and multinomial), many coalitions at once.

    ``U(S)`` is the ``metric`` on the test set of
    ``LogisticRegression(C=C, fit_intercept=fit_intercept)`` (L2 penalty,
    lbfgs-type solvers) fitted on ``S``: the minimiser of
    :math:`C\sum_{i\in S}\ell_i + \frac12\sum_k\|w_k\|^2`, binary for coalitions
    with two classes, multinomial over the present classes otherwise (see
    the module docstring). Solved to ``tol`` per coalition, tighter than
    scikit-learn's default ``1e-4``. Measured against scikit-learn's newton-cg
    at ``tol=1e-12`` on iris: at the default ``tol=1e-6`` coefficients agree
    to about 1e-5 relative and probabilities to about 1e-4; at ``tol=1e-10``
    to about 1e-8 and 1e-7 (the tests check 1e-6 for Newton, 1e-4 for L-BFGS).

    Parameters
    ----------
    X_train, y_train, X_test, y_test : arrays
        Training points (the players) and the fixed test set. Labels may be any
        sortable values; test labels absent from training count as errors.
    metric : {"accuracy", "neg_log_loss"}, default "accuracy"
    C : float, default 1.0
        Inverse penalty strength, finite and ``> 0``.
    fit_intercept : bool, default True
    tol : float, default 1e-6
        Stop a coalition when :math:`\|\nabla f\|_\infty \le \text{tol}\,C\,|S|`
        (or when the objective stops decreasing, at rounding level).
    max_iter : int, default 500
        Iteration cap per coalition (a ``ConvergenceWarning`` says how many hit it).
    solver : {"auto", "newton", "lbfgs"}, default "auto"
        See the module docstring.
    newton_max_params : int, default 160
        ``"auto"`` uses Newton when ``n_classes * q`` is at most this.
    degenerate, default_utility, min_samples
        Degenerate coalitions (empty, one class, fewer than ``min_samples``
        points) as in :mod:`shapley_research.utility`.
    batch_size : int, optional
        Most coalitions (or permutations) trained together (default: about
        48 MiB of working memory).
    prefix_refit_ratio : float or None, default 1.5
        One-pass path: prefixes of sizes ``ceil(ratio^i)`` are refitted exactly
        (``None``: only when the prefix's classes change).
    prefix_steps : int, default 3
        One-pass path: most chord steps per joining point.
    warm_start : bool, default True
        Start every fit from the full-data solution (fitted once), and
        precondition L-BFGS by the full-data Hessian scaled to ``|S|/N``.
    prefix_path : {"online", "exact"}, default "online"
        What :meth:`evaluate_prefixes` computes. ``"online"``: one pass of
        chord steps, an approximation of refitting (fast). ``"exact"``: every
        prefix fitted to ``tol`` like :meth:`evaluate`, warm-started from the
        previous prefix (:mod:`shapley_research._warm_prefix`); the learner then
        has ``exact_prefixes = True``, so ``permutation_shapley`` values equal
        those from refitting every prefix (to the solver tolerance).

    Attributes
    ----------
    classes_ : ndarray
        Sorted training labels.
    n_fits : int
        Models trained by :meth:`evaluate` and :meth:`evaluate_prefixes`
        (non-degenerate coalitions; each prefix counts one).
    last_fit_info_ : dict
        Solver, mean and max iterations, coalitions not converged, of the last batch fitted.
    last_prefix_info_ : dict
        For ``prefix_path="exact"``, counts of the last :meth:`evaluate_prefixes`:
        ``passes`` (objective passes over a prefix per permutation), ``refits``
        (batched fits when the classes change), ``fallbacks`` (batched fits of
        prefixes the warm steps did not converge), ``hessians`` (inverted).
    """

    def __init__(self, X_train, y_train, X_test, y_test, metric="accuracy", *, C: float = 1.0,
                 fit_intercept: bool = True, tol: float = 1e-6, max_iter: int = 500, solver: str = "auto",
                 newton_max_params: int = 160, degenerate: str = "constant",
                 default_utility: float | None = None, min_samples: int = 1, batch_size: int | None = None,
                 prefix_refit_ratio: float | None = 1.5, prefix_steps: int = 3, warm_start: bool = True,
                 prefix_path: str = "online"):
        self._setup(X_train, y_train, X_test, y_test, metric, fit_intercept, degenerate, default_utility,
                    min_samples, batch_size, "classification")
        self.C = check_float(C, "C", minimum=0.0, strict=True)
        self.tol = check_float(tol, "tol", minimum=0.0, strict=True)
        self.max_iter = check_int(max_iter, "max_iter", minimum=1)
        self.newton_max_params = check_int(newton_max_params, "newton_max_params", minimum=1)
        self.solver = check_choice(solver, "solver", ("auto", "newton", "lbfgs"))
        if prefix_refit_ratio is not None:
            prefix_refit_ratio = check_float(prefix_refit_ratio, "prefix_refit_ratio", minimum=1.0, strict=True)
        self.prefix_refit_ratio = prefix_refit_ratio
        self.prefix_steps = check_int(prefix_steps, "prefix_steps", minimum=1)
        self.prefix_tol = 100 * self.tol
        self.warm_start = check_bool(warm_start, "warm_start")
        self.prefix_path = check_choice(prefix_path, "prefix_path", ("online", "exact"))
        # an exact prefix path lets ModelUtility and the estimators rely on evaluate_prefixes
        self.exact_prefixes = self.prefix_path == "exact"
        self.last_prefix_info_: dict = {}
        self.classes_ = self.targets.classes
        self.last_fit_info_: dict = {}

    @property
    def n_params(self) -> int:
        return self.targets.n_classes * self.design.q

    def _use_newton(self) -> bool:
        # "auto" also needs the (N, q^2) per-point outer products of the Hessian product to stay small
        small = self.n_players * self.design.q**2 * 8 <= 2 * _CHUNK_BYTES
        return self.solver == "newton" or (self.solver == "auto" and small and self.n_params <= self.newton_max_params)

    # -- fitting ------------------------------------------------------------------------------
    def _row_bytes(self) -> float:
        """Working memory of one coalition in a chunk (logit-sized arrays, history, Hessian)."""
        K, q, N = self.targets.n_classes, self.design.q, self.n_players
        per = 8 * (7 * K * N + 2 * N + 24 * K * q)
        if self._use_newton():
            per += 8 * (K * K * (N + q * q) + 4 * (K * q) ** 2)
        return per

    def _preconditioner(self, chunk: _SoftmaxChunk):
        r"""L-BFGS's initial inverse Hessian for a chunk: the full-data Hessian scaled to each coalition.

        A coalition's data Hessian is on average :math:`|S|/N` times that of the
        whole training set, so with :math:`H_D = Q\Lambda Q^\top` (data part at
        the full-data solution, computed once) ``H0`` is
        :math:`Q\,(C|S|/N\,\Lambda + I)^{-1}Q^\top` (the penalty taken as
        :math:`I`), restricted to the classes present. It cuts the iterations on
        MNIST about threefold for large coalitions; ``None`` without ``warm_start``.
        """
        if not self.warm_start:
            return None
        if getattr(self, "_full_hessian", None) is None:
            self._warm_start()
            Z = self._full_theta @ self.design.train.T  # (K, N); all classes are present in the full set
            P = np.exp(Z - Z.max(axis=0, keepdims=True))
            P /= P.sum(axis=0, keepdims=True)
            eigenvalues, vectors = np.linalg.eigh(_data_hessian(self.design.train, P))
            self._full_hessian = (np.clip(eigenvalues, 0.0, None), vectors)
        eigenvalues, vectors = self._full_hessian
        K, q = self.targets.n_classes, self.design.q
        weight = chunk.C * chunk.size / self.n_players
        present = chunk.present[:, :, None]

        def apply(r, rows):
            z = (r * present[rows]).reshape(len(rows), K * q) @ vectors
            z /= weight[rows, None] * eigenvalues[None, :] + 1.0
            return (z @ vectors.T).reshape(len(rows), K, q) * present[rows]

        return apply

    def _warm_start(self) -> np.ndarray:
        """Start of every fit: the full-data solution when ``warm_start`` (fitted once), else 0."""
        K, q = self.targets.n_classes, self.design.q
        if not self.warm_start:
            return np.zeros((K, q))
        if getattr(self, "_full_theta", None) is None:
            full = np.ones((1, self.n_players), dtype=bool)
            counts = self.targets.class_counts(full)
            self._full_theta = np.zeros((K, q))
            if not degenerate_rows(full, self.targets, self.min_samples, counts)[0]:
                self._full_theta = self._fit_thetas(full, counts, theta0=np.zeros((1, K, q)), precondition=False)[0]
        return self._full_theta

    @property
    def _softmax_data(self) -> _SoftmaxData:
        if getattr(self, "_data", None) is None:
            self._data = _SoftmaxData(self.design, self.targets)
        return self._data

    def _fit_thetas(self, masks: np.ndarray, counts: np.ndarray, theta0: np.ndarray | None = None,
                    precondition: bool = True) -> np.ndarray:
        """Centred parameters (m, K, q) of non-degenerate coalitions, fitted chunk by chunk."""
        m = masks.shape[0]
        K, q = self.targets.n_classes, self.design.q
        if theta0 is None:
            theta0 = self._warm_start()
        theta = np.zeros((m, K, q)) + theta0
        iterations = np.zeros(m, dtype=int)
        converged = np.ones(m, dtype=bool)
        newton = self._use_newton()
        for rows in _chunks(m, self._chunk_size(self._row_bytes())):
            chunk = _SoftmaxChunk.from_masks(self._softmax_data, masks[rows], counts[rows], self.C)
            th = theta[rows] * chunk.present[:, :, None]
            if newton:
                theta[rows], iterations[rows], converged[rows] = _newton(chunk, th, self.tol, self.max_iter)
            else:
                theta[rows], iterations[rows], converged[rows] = _lbfgs(
                    chunk, th, self.tol, self.max_iter,
                    precondition=self._preconditioner(chunk) if precondition else None)
            if self.design.fit_intercept:  # centre the intercepts of present classes, as scikit-learn's are
                b = theta[rows, :, -1]
                present = chunk.present
                b -= present * (b * present).sum(axis=1, keepdims=True) / present.sum(axis=1, keepdims=True)
                theta[rows, :, -1] = b
        self.last_fit_info_ = {"n_iter_max": int(iterations.max(initial=0)),
                               "n_iter_mean": float(iterations.mean()) if m else 0.0,
                               "n_not_converged": int((~converged).sum()),
                               "solver": "newton" if self._use_newton() else "lbfgs"}
        if not converged.all():
            from sklearn.exceptions import ConvergenceWarning

            warnings.warn(f"LogisticRegressionUtility: {int((~converged).sum())} of {m} coalitions did not reach "
                          f"tol={self.tol} in max_iter={self.max_iter} iterations; raise max_iter.",
                          ConvergenceWarning, stacklevel=3)
        return theta

    def _test_logits(self, theta: np.ndarray, present: np.ndarray, X: np.ndarray) -> np.ndarray:
        return theta @ X.T + np.where(present, 0.0, NEG_LOGIT)[:, :, None]

    def _score_thetas(self, theta: np.ndarray, present: np.ndarray) -> np.ndarray:
        values = np.empty(theta.shape[0])
        K, n_test = self.targets.n_classes, len(self.y_test)
        y_index = self.targets.y_test_index
        for s in _chunks(theta.shape[0], self._chunk_size(8 * 4 * K * n_test)):
            Z = self._test_logits(theta[s], present[s], self.design.test)
            if self.metric == "accuracy":
                values[s] = np.mean(np.argmax(Z, axis=1) == y_index, axis=1)
                continue
            zmax = Z.max(axis=1)
            lse = zmax + np.log(np.exp(Z - zmax[:, None, :]).sum(axis=1))
            z_true = np.take_along_axis(Z, np.maximum(y_index, 0)[None, None, :], axis=1)[:, 0, :]
            log_p = np.where(y_index >= 0, z_true - lse, -np.inf)
            values[s] = clipped_mean_log_probability(log_p)
        return values

    def _fitted_utilities(self, masks, counts) -> np.ndarray:
        return self._score_thetas(self._fit_thetas(masks, counts), counts > 0)

    def fit_subsets(self, masks):
        """Fitted ``(coef, intercept)`` of each coalition, in scikit-learn's layout.

        Binary problems (two training classes): ``coef`` (m, d), ``intercept``
        (m,), as ``LogisticRegression.coef_[0]``/``intercept_[0]``. Otherwise
        ``coef`` (m, K, d) and ``intercept`` (m, K) over :attr:`classes_`, with
        zeros for classes absent from the coalition; for a coalition with
        exactly two classes ``c0 < c1``, scikit-learn's binary ``coef_`` is
        ``coef[c1] - coef[c0]`` (and likewise the intercept). Degenerate
        coalitions give NaN rows.
        """
        from ._validation import check_masks

        masks = check_masks(masks, self.n_players)
        counts = self.targets.class_counts(masks)
        fit = ~degenerate_rows(masks, self.targets, self.min_samples, counts)
        K, q = self.targets.n_classes, self.design.q
        theta = np.full((masks.shape[0], K, q), np.nan)
        if fit.any():
            theta[fit] = self._fit_thetas(masks[fit], counts[fit])
        coef, intercept = self.design.to_original(theta)
        if K == 2:
            return coef[:, 1] - coef[:, 0], intercept[:, 1] - intercept[:, 0]
        return coef, intercept

    def predict_proba(self, masks, X=None) -> np.ndarray:
        """Class probabilities (m, n, K) over :attr:`classes_` on ``X`` (default: the test set).

        Classes absent from a coalition get probability 0. Degenerate
        coalitions give the constant model's probabilities (class frequencies
        of ``S``, the prior for the empty set).
        """
        from ._validation import check_masks

        masks = check_masks(masks, self.n_players)
        X = self.design.test if X is None else _check_features_like(X, self.design)
        counts = self.targets.class_counts(masks)
        fit = ~degenerate_rows(masks, self.targets, self.min_samples, counts)
        sizes = counts.sum(axis=1, keepdims=True)
        freq = np.where(sizes > 0, counts / np.maximum(sizes, 1), self.targets.prior)
        out = np.repeat(freq[:, None, :], X.shape[0], axis=1)
        if fit.any():
            theta = self._fit_thetas(masks[fit], counts[fit])
            Z = self._test_logits(theta, counts[fit] > 0, X)
            Z -= Z.max(axis=1, keepdims=True)
            E = np.exp(Z)
            out[fit] = (E / E.sum(axis=1, keepdims=True)).transpose(0, 2, 1)
        return out

    # -- one pass along permutations ----------------------------------------------------------
    def evaluate_prefixes(self, permutations) -> np.ndarray:
        """Prefix utilities (m, n) in one pass per permutation: exact or an online approximation.

        With ``prefix_path="exact"`` every prefix is fitted to ``tol`` (the
        convergence test of :meth:`evaluate`), warm-started from the previous
        prefix's solution with quasi-Newton steps over the prefix's rows only
        (:mod:`shapley_research._warm_prefix`); the values agree with
        :meth:`evaluate` on the prefix masks to the solver tolerance. The rest
        of this docstring is about the default ``prefix_path="online"``.

        What it computes (module docstring): when point ``k`` joins the prefix,
        one quasi-Newton step on the prefix objective from the previous
        prefix's parameters, ``theta -= (k_ref / k) H_ref^{-1} grad f_k(theta)``,
        with the exact gradient of the whole prefix and the Hessian ``H_ref``
        of the last exact refit (at size ``k_ref``) rescaled to the prefix size.
        Exact refits (warm-started, to ``tol``, with their exact Hessian) happen
        when the prefix's set of classes changes and when it has grown by
        ``prefix_refit_ratio`` since the last refit. Degenerate prefixes follow
        the degenerate convention. Because the gradient is exact, errors of
        earlier steps are corrected by later ones; the parameters trail the
        refitted ones by a fraction of one point's influence. Measured
        differences to exact refits are in ``benchmarks/utility_throughput.py``
        and the tests; use :meth:`evaluate` on prefix masks for exact values.
        """
        n = self.n_players
        permutations = check_permutations(permutations, n)
        m = permutations.shape[0]
        K, q = self.targets.n_classes, self.design.q
        P = K * q
        values = np.empty((m, n))
        degenerate = self._prefix_degenerate(permutations)
        if self.exact_prefixes:
            from ._warm_prefix import exact_prefix_utilities

            info = {"passes": 0, "refits": 0, "fallbacks": 0, "hessians": 0}
            # per permutation: its reordered rows, its inverse Hessian (float32), secant pairs
            per_perm_bytes = 8 * (n * (q + K) + P * P // 2 + 10 * P) + 8 * 4 * K * len(self.y_test)
            for s in _chunks(m, self._chunk_size(per_perm_bytes, cap=64)):
                values[s], counts = exact_prefix_utilities(self, permutations[s], degenerate[s])
                info = {key: info[key] + counts[key] for key in info}
            self.last_prefix_info_ = info
        else:
            inverse_size = P * P if self._use_newton() else K * q * q
            per_perm_bytes = 8 * (2 * inverse_size + 4 * P + 8 * n * K + 4 * K * len(self.y_test))
            for s in _chunks(m, self._chunk_size(per_perm_bytes, cap=256)):
                values[s] = self._online_pass(permutations[s], degenerate[s])
        if degenerate.any():
            values[degenerate] = self._prefix_degenerate_utilities(permutations, degenerate)
        self.n_fits += int((~degenerate).sum())
        return values

    def _refit_sizes(self, n: int) -> np.ndarray:
        """Prefix sizes refitted exactly in every permutation: ``ceil(ratio^i)``, shared so refits batch."""
        if self.prefix_refit_ratio is None:
            return np.zeros(0, dtype=int)
        count = int(np.ceil(np.log(n) / np.log(self.prefix_refit_ratio))) + 2
        return np.unique(np.ceil(self.prefix_refit_ratio ** np.arange(count) - 1e-9).astype(int))

    def _online_pass(self, perms: np.ndarray, degenerate: np.ndarray):
        """Utilities (b, n) of every prefix (see evaluate_prefixes), each scored as its model is updated.

        Keeps the objective ``f`` and gradient ``g`` of the current prefix at the
        current parameters: a joining point adds its own loss and gradient
        (``O(K q)``), and each chord step costs one pass (the trial point's
        ``f`` for the Armijo test and its ``g`` for the next step come together).
        """
        b, n = perms.shape
        K, q = self.targets.n_classes, self.design.q
        X, labels = self.design.train, self.targets.y_train_index
        data = self._softmax_data
        full = self._use_newton()
        values = np.zeros((b, n))
        theta = np.zeros((b, K, q))
        f, g = np.zeros(b), np.zeros((b, K, q))
        # inverse Hessian at the last refit: full (b, Kq, Kq), or its class blocks (b, K, q, q)
        inverse = np.zeros((b, K * q, K * q)) if full else np.zeros((b, K, q, q))
        present = np.zeros((b, K), dtype=bool)
        members = np.zeros((b, n))
        refit_size = np.zeros(b)
        fitted = np.zeros(b, dtype=bool)
        rows_b = np.arange(b)
        grid = np.zeros(n + 1, dtype=bool)
        sizes = self._refit_sizes(n)
        grid[sizes[sizes <= n]] = True
        for k in range(n):
            j = perms[:, k]
            new_class = ~present[rows_b, labels[j]]
            present[rows_b, labels[j]] = True
            members[rows_b, j] = 1.0
            size = k + 1
            live = ~degenerate[:, k]
            refit = live & (new_class | ~fitted | grid[size])
            step = np.flatnonzero(live & ~refit)
            if step.size:  # the joining point's loss and gradient at the current parameters
                x, label = X[j[step]], labels[j[step]]
                C = np.where(present[step].sum(axis=1) == 2, 0.5 * self.C, self.C)
                z = np.einsum("bkq,bq->bk", theta[step], x) + np.where(present[step], 0.0, NEG_LOGIT)
                z -= z.max(axis=1, keepdims=True)
                p = np.exp(z)
                total = p.sum(axis=1)
                f[step] += C * (np.log(total) - z[np.arange(step.size), label])
                p /= total[:, None]
                p[np.arange(step.size), label] -= 1.0
                g[step] += C[:, None, None] * p[:, :, None] * x[:, None, :]
            for _ in range(self.prefix_steps):
                chunk = _SoftmaxChunk(data, members[step], present[step],
                                      np.where(present[step].sum(axis=1) == 2, 0.5 * self.C, self.C))
                step = step[~chunk.converged(g[step], self.prefix_tol)]
                if step.size == 0:
                    break
                chunk = _SoftmaxChunk(data, members[step], present[step],
                                      np.where(present[step].sum(axis=1) == 2, 0.5 * self.C, self.C))
                scale = (refit_size[step] / size)[:, None, None]
                if full:
                    delta = np.einsum("bij,bj->bi", inverse[step], g[step].reshape(step.size, K * q))
                    delta = delta.reshape(step.size, K, q)
                else:  # (2 D)^{-1}: twice the class blocks D dominate the Hessian, so this step contracts
                    delta = 0.5 * np.einsum("bkij,bkj->bki", inverse[step], g[step])
                # Armijo backtracking: a stale Hessian can overshoot on small, nearly separable prefixes
                th, f_new, g_new, accepted = _armijo(chunk, theta[step], f[step], g[step], -scale * delta,
                                                     with_grad=True)
                theta[step], f[step], g[step] = th, f_new, g_new
                step = step[accepted]
            if refit.any():
                rr = np.flatnonzero(refit)
                masks = members[rr] > 0
                counts = self.targets.class_counts(masks)
                th = self._fit_thetas(masks, counts, theta0=theta[rr] * present[rr][:, :, None])
                chunk = _SoftmaxChunk.from_masks(data, masks, counts, self.C)
                theta[rr] = th
                f[rr], g[rr] = chunk.objective(th)
                inverse[rr] = chunk.exact_hessian_inverse(th) if full else chunk.block_hessian_inverse(th)
                fitted[rr] = True
                refit_size[rr] = size
            if live.any():  # degenerate prefixes are filled in by the caller
                values[live, k] = self._score_thetas(theta[live], present[live])
        return values

    def __repr__(self) -> str:
        return (f"LogisticRegressionUtility(n_players={self.n_players}, n_classes={self.targets.n_classes}, "
                f"C={self.C}, metric={self.metric!r})")
