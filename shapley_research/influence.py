r"""Influence-function heuristics for L2-regularised logistic regression (paper Section 4.5).

Two estimators replace model re-training by the influence function of Koh &
Liang (2017):

* :func:`largest_s_influence` (*largest-S influence*): one model trained on the
  whole training set ``I``; the marginal contribution of every point to its
  largest coalition, :math:`U(I) - U(I \setminus \{i\})`, from the influence of
  removing it, rescaled by the constant :math:`C_U` of the paper's Theorem 6 so
  that the values sum to :math:`U(I) - U(\emptyset)`.
  :func:`largest_s_influence_general` does the same for any smooth model given
  its per-sample gradients, Hessian and test-utility gradient.
* :func:`all_s_influence` (*all-S influence*): the Shapley value written by
  coalition size,

  .. math::

      s_i = \frac1N \sum_{k=0}^{N-1} \mathbb E\bigl[X_i^k\bigr], \qquad
      X_i^k = U(S \cup \{i\}) - U(S),\; S \text{ uniform among the size-}k
      \text{ subsets of } I \setminus \{i\},

  estimated by stratified sampling over the sizes ``k`` (Neyman allocation
  after a pilot round). Each sampled coalition costs one model fit; the
  marginal contributions of all players to it follow from influence updates of
  that one fitted model.

The model
---------
:class:`LogisticObjective` is exactly scikit-learn's
``LogisticRegression(C=C)`` (L2 penalty, ``l1_ratio=0``), written for
parameters :math:`\theta` (weights :math:`w`, unpenalised intercept :math:`b`)
and a training subset :math:`S`:

.. math::

    F_S(\theta) = C \sum_{j \in S} \ell(z_j, \theta) + \tfrac12 \lVert w \rVert^2 .

For two classes (labels coded :math:`y \in \{-1, +1\}`, positive class =
the larger label, as in scikit-learn) :math:`\ell = \log(1 + e^{-y\,
\tilde x^\top \theta})` with :math:`\tilde x = (x, 1)`; for :math:`K \ge 3`
classes it is the softmax cross-entropy with one weight row and intercept per
class (scikit-learn's multinomial model). Per-sample gradient and Hessian are

.. math::

    \nabla \ell = r \otimes \tilde x, \qquad \nabla^2 \ell = A \otimes \tilde x \tilde x^\top,

with residual :math:`r = \sigma(\tilde x^\top\theta) - [y = +1]` and curvature
:math:`A = \sigma(\tilde x^\top\theta)\,\sigma(-\tilde x^\top\theta)` (binary),
or :math:`r = p - e_y`, :math:`A = \operatorname{diag}(p) - p p^\top` (softmax).
Dividing :math:`F` by :math:`C` gives the paper's closed form: the Hessian is
:math:`\sum_j \sigma\sigma\, \tilde x_j \tilde x_j^\top + I_w / C`, where the
identity acts on the weights only.

The influence update
--------------------
Adding (:math:`s = +1`) or removing (:math:`s = -1`) a point :math:`z` changes
the objective to :math:`F' = F + s\,C\,\ell(z, \cdot)`. One Newton step on
:math:`F'` from the fitted :math:`\hat\theta` (where :math:`\nabla F = 0`) is

.. math::

    \Delta\theta = -\bigl(H + s\,C \nabla^2\ell(z, \hat\theta)\bigr)^{-1}
                   s\,C\, \nabla\ell(z, \hat\theta)
    \qquad (\texttt{approximation="newton"}),

and the classic influence function replaces the updated Hessian by the
Hessian :math:`H` of :math:`F` itself (``approximation="influence"``, the
formula of the paper and of Koh & Liang):
:math:`\Delta\theta = -s\, H^{-1} C \nabla\ell(z, \hat\theta)`. For removal
this is :math:`+H^{-1} C \nabla \ell`, the paper's
:math:`-(\sum_i \sigma\sigma x_i x_i^\top)^{-1}\sigma(-y x^\top\theta)\,y\,x`
with the regularisation term added. Because :math:`\nabla^2\ell` has rank
:math:`K' \le K`, the Newton step costs the same as the influence step
(push-through identity):
:math:`(H + U B U^\top)^{-1} U = H^{-1} U (I + B\,U^\top H^{-1} U)^{-1}` with
:math:`U = I_{K'} \otimes \tilde x`, :math:`B = s\,C A`; for binary models it
is the influence step divided by :math:`1 + s\,C\,\sigma\sigma\,\tilde x^\top
H^{-1} \tilde x` (one minus/plus the leverage).

The utility change then is either linear,
:math:`\Delta U \approx \nabla U_{\text{test}}(\hat\theta)^\top \Delta\theta`
(``utility_change="linear"``, the paper's first-order rule), or the test
utility evaluated at the updated parameters,
:math:`U_{\text{test}}(\hat\theta + \Delta\theta) - U_{\text{test}}(\hat\theta)`
(``utility_change="evaluate"``): exact in the utility, needed for accuracy.

Test utilities
--------------
``"neg_log_loss"``: minus the mean test cross-entropy (the paper's runtime
experiment). ``"accuracy"``: the test accuracy, with a tie between ``t``
classes credited ``1/t`` (so the uninformed model scores ``1/K``). Accuracy is
piecewise constant in :math:`\theta`, so its *linear* change uses the
gradient of the smooth surrogate "expected accuracy" (the mean predicted
probability of the true class, :math:`\frac1T\sum_t p_{y_t}(x_t)`, equal to
the accuracy of the model's randomised predictions); ``"evaluate"`` uses the
true accuracy.

Degenerate subsets (a fixed convention)
---------------------------------------
A training subset that lacks one of the ``K`` classes (in particular the empty
set and every single point) cannot be fitted: the unpenalised intercept of a
missing class diverges and the test log-loss becomes infinite. Such a subset
gets the *uninformed model* :math:`\theta = 0` (uniform prediction), so
:math:`U(S) = U_0 := U_{\text{test}}(0)`: :math:`-\log K` for
``"neg_log_loss"``, :math:`1/K` for ``"accuracy"``. This is also
:math:`U(\emptyset)`. Consequences: :math:`X_i^0 = U(\{i\}) - U(\emptyset) = 0`
for every ``i`` (the ``k = 0`` stratum is known exactly and never sampled),
and a marginal contribution between two degenerate subsets is exactly ``0``.
Adding a point to a degenerate subset that completes the classes is
approximated by one Newton step of the completed objective from
:math:`\theta = 0` (or the influence step with the Hessian at ``0``).
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
import numpy as np
from scipy import linalg

from ._sampling import batch_rng
from ._validation import (check_bool, check_choice, check_class_labels, check_features, check_float, check_int,
                          check_label_kinds, check_real_array, check_seed, check_target_vector)
from .result import ValuationResult

__all__ = [
    "LogisticObjective", "largest_s_influence", "largest_s_influence_general", "all_s_influence",
    "neyman_allocation",
]

UTILITIES = ("neg_log_loss", "accuracy")
APPROXIMATIONS = ("influence", "newton")
UTILITY_CHANGES = ("linear", "evaluate")
PRIOR_SETS = 4.0  # base sets' worth of weight of the pooled variance in each stratum's estimate
_BIG = 2**50  # stand-in for subset counts too large to matter (sums stay within int64)


# --------------------------------------------------------------------------- validation

def _check_labels(y, n: int, name: str, x_name: str) -> np.ndarray:
    return check_class_labels(check_target_vector(y, name, n, x_name), name)


def _real_vector(values, name: str) -> np.ndarray:
    """``values`` as a flat float array, or a TypeError naming ``name``."""
    return check_real_array(values, name).reshape(-1)


def _integer_vector(values, name: str) -> np.ndarray:
    """``values`` as a flat int64 array of whole numbers (never truncated), or raise naming ``name``."""
    if np.asarray(values).dtype.kind in "biu":
        return np.asarray(values, dtype=np.int64).reshape(-1)
    array = _real_vector(values, name)
    if not (np.isfinite(array) & (array == np.round(array))).all():
        raise ValueError(f"{name} must hold whole numbers, got {array[:5].tolist()}.")
    return array.astype(np.int64)


# --------------------------------------------------------------------------- the model

def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free logistic function


class LogisticObjective:
    r"""scikit-learn's L2 logistic regression objective, its derivatives and a test utility.

    .. math::

        F_S(\theta) = C \sum_{j \in S} \ell(z_j, \theta) + \tfrac12 \lVert w \rVert^2

    (see the module docstring for :math:`\ell`, the parameter layout and the
    degenerate-subset convention). Parameters are flat vectors of length
    ``n_params = K' * q`` holding a ``(K', q)`` matrix row by row: ``K' = 1``
    for two classes, ``K`` for more; ``q = d + 1`` with an intercept (last
    column), ``d`` without. :meth:`coef` converts to scikit-learn's
    ``coef_``/``intercept_``.

    Parameters
    ----------
    X_train : array of shape (N, d)
    y_train : array of shape (N,)
        Class labels; at least two classes. Sorted unique labels define the
        classes (for two classes the larger one is the positive class).
    X_test : array of shape (T, d)
    y_test : array of shape (T,)
        Labels among those of ``y_train``.
    C : float, default 1.0
        Inverse regularisation strength, ``> 0`` (scikit-learn's ``C``).
    fit_intercept : bool, default True
        Fit an unpenalised intercept (per class).
    utility : {"neg_log_loss", "accuracy"}, default "neg_log_loss"
        Test utility (module docstring).
    """

    def __init__(self, X_train, y_train, X_test, y_test, *, C=1.0, fit_intercept=True,
                 utility="neg_log_loss"):
        X_train = check_features(X_train, "X_train")
        X_test = check_features(X_test, "X_test")
        if X_train.shape[1] != X_test.shape[1]:
            raise ValueError(f"X_train has {X_train.shape[1]} features but X_test has {X_test.shape[1]}.")
        y_train = _check_labels(y_train, X_train.shape[0], "y_train", "X_train")
        y_test = _check_labels(y_test, X_test.shape[0], "y_test", "X_test")
        check_label_kinds(y_train, y_test)
        self.C = check_float(C, "C", minimum=0.0, strict=True)
        self.fit_intercept = check_bool(fit_intercept, "fit_intercept")
        self.utility_name = check_choice(utility, "utility", UTILITIES)

        self.classes_ = np.unique(y_train)
        if self.classes_.size < 2:
            raise ValueError(f"y_train must contain at least two classes, got only {self.classes_.tolist()}.")
        unseen = np.setdiff1d(np.unique(y_test), self.classes_)
        if unseen.size:
            raise ValueError(f"y_test contains labels absent from y_train: {unseen[:5].tolist()}.")
        self.n_classes = int(self.classes_.size)
        self.n_outputs = 1 if self.n_classes == 2 else self.n_classes
        self.codes = np.searchsorted(self.classes_, y_train)
        self.codes_test = np.searchsorted(self.classes_, y_test)
        self.n_features = X_train.shape[1]
        self.q = self.n_features + int(self.fit_intercept)
        self.n_params = self.n_outputs * self.q
        ones = np.ones((X_train.shape[0], 1)), np.ones((X_test.shape[0], 1))
        self.Xt = np.hstack([X_train, ones[0]]) if self.fit_intercept else X_train
        self.Xt_test = np.hstack([X_test, ones[1]]) if self.fit_intercept else X_test
        # L2 penalty acts on weights only: diagonal of the penalty Hessian.
        pen = np.ones((self.n_outputs, self.q))
        if self.fit_intercept:
            pen[:, -1] = 0.0
        self.penalty = pen.reshape(-1)
        # Softmax intercepts are defined up to a common shift: a null direction of F.
        self.null = None
        if self.fit_intercept and self.n_outputs > 1:
            v = np.zeros((self.n_outputs, self.q))
            v[:, -1] = 1.0 / np.sqrt(self.n_outputs)
            self.null = v.reshape(-1)
        self.n_train = X_train.shape[0]

    # ---- per-sample quantities ------------------------------------------------
    def _scores(self, theta: np.ndarray, Xt: np.ndarray) -> np.ndarray:
        return Xt @ theta.reshape(self.n_outputs, self.q).T  # (n, K')

    def _loss(self, Z: np.ndarray, codes: np.ndarray) -> np.ndarray:
        if self.n_outputs == 1:
            return np.logaddexp(0.0, Z[:, 0]) - (codes == 1) * Z[:, 0]
        return np.logaddexp.reduce(Z, axis=1) - Z[np.arange(Z.shape[0]), codes]

    def _probs(self, Z: np.ndarray) -> np.ndarray:
        if self.n_outputs == 1:
            return _sigmoid(Z)
        E = np.exp(Z - Z.max(axis=1, keepdims=True))
        return E / E.sum(axis=1, keepdims=True)

    def _residual_curvature(self, Z: np.ndarray, codes: np.ndarray):
        """Residuals ``r`` (n, K') and curvatures ``A`` (n, K', K') of the per-sample loss."""
        P = self._probs(Z)
        if self.n_outputs == 1:
            r = P - (codes == 1)[:, None]
            A = (P * (1.0 - P))[:, :, None]
        else:
            r = P.copy()
            r[np.arange(P.shape[0]), codes] -= 1.0
            A = np.einsum("nk,kl->nkl", P, np.eye(self.n_outputs)) - P[:, :, None] * P[:, None, :]
        return r, A

    def _index(self, idx) -> np.ndarray:
        if idx is None:
            return np.arange(self.n_train)
        idx = np.asarray(idx)
        return np.flatnonzero(idx) if idx.dtype == np.bool_ else idx.astype(np.intp)

    # ---- objective ------------------------------------------------------------
    def objective(self, theta, idx=None) -> float:
        """:math:`F_S(\\theta)` for the training subset ``idx`` (indices or mask; all by default)."""
        idx = self._index(idx)
        Z = self._scores(theta, self.Xt[idx])
        return float(self.C * self._loss(Z, self.codes[idx]).sum() + 0.5 * (self.penalty * theta**2).sum())

    def per_sample_gradients(self, theta, idx=None) -> np.ndarray:
        r""":math:`C \nabla_\theta \ell(z_j, \theta)` for ``j`` in ``idx``: shape (m, n_params)."""
        idx = self._index(idx)
        Xs = self.Xt[idx]
        r, _ = self._residual_curvature(self._scores(theta, Xs), self.codes[idx])
        return self.C * (r[:, :, None] * Xs[:, None, :]).reshape(idx.size, -1)

    def gradient(self, theta, idx=None) -> np.ndarray:
        """Gradient of :math:`F_S` at ``theta``."""
        return self.per_sample_gradients(theta, idx).sum(axis=0) + self.penalty * theta

    def hessian(self, theta, idx=None) -> np.ndarray:
        r"""Hessian of :math:`F_S`: :math:`C\sum_j A_j \otimes \tilde x_j \tilde x_j^\top + I_w`.

        Singular along the common shift of the softmax intercepts (see
        :meth:`inverse_hessian`).
        """
        idx = self._index(idx)
        Xs = self.Xt[idx]
        _, A = self._residual_curvature(self._scores(theta, Xs), self.codes[idx])
        if self.n_outputs == 1:
            H = (Xs * (self.C * A[:, 0, 0])[:, None]).T @ Xs
        else:
            H = np.einsum("nkl,na,nb->kalb", self.C * A, Xs, Xs, optimize=True).reshape(
                self.n_params, self.n_params)
        H[np.diag_indices_from(H)] += self.penalty
        return H

    def inverse_hessian(self, H: np.ndarray) -> np.ndarray:
        r"""Inverse of ``H`` on the identifiable parameter space.

        With softmax intercepts, ``H v = 0`` for the common intercept shift
        ``v``; gradients are orthogonal to ``v``, and :math:`(H + v v^\top)^{-1}`
        acts as the pseudo-inverse on them. Raises ``numpy.linalg.LinAlgError``
        if ``H`` is not positive definite on that space.
        """
        if self.null is not None:
            H = H + np.outer(self.null, self.null)
        factor = linalg.cho_factor(H, lower=True, check_finite=False)
        return linalg.cho_solve(factor, np.eye(H.shape[0]), check_finite=False)

    def degenerate(self, idx) -> bool:
        """Whether the subset misses a class (then its model is ``theta = 0``)."""
        idx = self._index(idx)
        return np.unique(self.codes[idx]).size < self.n_classes

    def fit(self, idx=None, *, theta0=None, tol: float = 1e-10, max_iter: int = 100) -> np.ndarray:
        """Minimise :math:`F_S` by damped Newton; ``theta = 0`` for a degenerate subset.

        Armijo backtracking far from the optimum; full Newton steps once the
        Newton decrement :math:`g^\top H^{-1} g` is below ``1e-8 * max(1, |F|)``
        (there objective differences are rounding noise, the step is not).
        Stops when the step's largest entry is below
        ``tol * (1 + max|theta|)``; the minimiser matches scikit-learn's
        ``LogisticRegression(C=C)`` to about scikit-learn's own tolerance.
        """
        idx = self._index(idx)
        theta = np.zeros(self.n_params) if theta0 is None else np.array(theta0, dtype=float)
        if self.degenerate(idx):
            return np.zeros(self.n_params)
        f = self.objective(theta, idx)
        for _ in range(max_iter):
            g = self.gradient(theta, idx)
            H = self.hessian(theta, idx)
            if self.null is not None:
                H += np.outer(self.null, self.null)
            step = linalg.cho_solve(linalg.cho_factor(H, lower=True, check_finite=False), g,
                                    check_finite=False)
            decrement = float(g @ step)
            if decrement <= 1e-8 * max(1.0, abs(f)):  # quadratic region: full step
                theta = theta - step
                if np.abs(step).max() <= tol * (1.0 + np.abs(theta).max()):
                    return theta
                f = self.objective(theta, idx)
                continue
            t = 1.0
            while True:  # Armijo backtracking: keeps Newton globally convergent
                candidate = theta - t * step
                f_new = self.objective(candidate, idx)
                if f_new <= f - 1e-4 * t * decrement:
                    break
                if t < 1e-10:
                    raise RuntimeError(f"Newton's line search failed (subset of {idx.size} points, "
                                       f"C={self.C}, Newton decrement {decrement:.3g}).")
                t *= 0.5
            theta, f = candidate, f_new
        raise RuntimeError(f"Newton's method did not converge in {max_iter} iterations "
                           f"(subset of {idx.size} points, C={self.C}).")

    def coef(self, theta):
        """``(coef_, intercept_)`` in scikit-learn's layout."""
        M = np.asarray(theta, dtype=float).reshape(self.n_outputs, self.q)
        if self.fit_intercept:
            return M[:, :-1].copy(), M[:, -1].copy()
        return M.copy(), np.zeros(self.n_outputs)

    # ---- test utility -----------------------------------------------------------
    @property
    def degenerate_utility(self) -> float:
        """:math:`U_0`: utility of the uniform prediction, used for every degenerate subset."""
        return -math.log(self.n_classes) if self.utility_name == "neg_log_loss" else 1.0 / self.n_classes

    def utilities(self, thetas) -> np.ndarray:
        """Test utility of each row of ``thetas`` (m, n_params); a 1-D ``theta`` gives a scalar."""
        thetas = np.asarray(thetas, dtype=float)
        single = thetas.ndim == 1
        thetas = thetas.reshape(-1, self.n_outputs, self.q)
        m, T = thetas.shape[0], self.Xt_test.shape[0]
        if self.n_outputs == 1:
            z = thetas[:, 0, :] @ self.Xt_test.T  # (m, T)
            positive = self.codes_test == 1
            if self.utility_name == "neg_log_loss":
                return self._finish(-(np.logaddexp(0.0, z) - positive * z).mean(axis=1), single)
            correct = np.where(positive, z > 0, z < 0) + 0.5 * (z == 0)
            return self._finish(correct.mean(axis=1), single)
        Z = np.einsum("tq,mkq->mtk", self.Xt_test, thetas, optimize=True)  # (m, T, K)
        z_true = np.take_along_axis(Z, np.broadcast_to(self.codes_test[None, :, None], (m, T, 1)), axis=2)[:, :, 0]
        if self.utility_name == "neg_log_loss":
            return self._finish(-(np.logaddexp.reduce(Z, axis=2) - z_true).mean(axis=1), single)
        ties = Z == Z.max(axis=2, keepdims=True)
        correct = (z_true == Z.max(axis=2)) / ties.sum(axis=2)
        return self._finish(correct.mean(axis=1), single)

    @staticmethod
    def _finish(out: np.ndarray, single: bool):
        return float(out[0]) if single else out

    def utility(self, theta) -> float:
        """Test utility of one parameter vector."""
        return float(self.utilities(np.asarray(theta, dtype=float).reshape(1, -1))[0])

    def utility_gradient(self, theta) -> np.ndarray:
        r"""Gradient of the smooth test utility at ``theta``.

        ``"neg_log_loss"``: :math:`-\frac1T\sum_t r_t \otimes \tilde x_t`.
        ``"accuracy"``: gradient of the expected accuracy
        :math:`\frac1T\sum_t p_{y_t}(x_t)`, i.e.
        :math:`\frac1T\sum_t p_{y_t}(e_{y_t} - p_t) \otimes \tilde x_t`
        (binary: :math:`\frac1T\sum_t y_t\,\sigma\sigma\,\tilde x_t`).
        """
        theta = np.asarray(theta, dtype=float)
        Z = self._scores(theta, self.Xt_test)
        r, _ = self._residual_curvature(Z, self.codes_test)
        if self.utility_name == "neg_log_loss":
            weights = -r
        else:
            P = self._probs(Z)
            if self.n_outputs == 1:
                sign = np.where(self.codes_test == 1, 1.0, -1.0)[:, None]
                weights = sign * P * (1.0 - P)
            else:
                p_true = P[np.arange(P.shape[0]), self.codes_test][:, None]
                weights = -p_true * r  # p_y (e_y - p)
        return (weights[:, :, None] * self.Xt_test[:, None, :]).sum(axis=0).reshape(-1) / self.Xt_test.shape[0]

    # ---- influence updates --------------------------------------------------------
    def newton_steps(self, theta, base, points, *, direction: str = "add",
                     approximation: str = "newton", H_inv=None) -> np.ndarray:
        r"""Approximate parameter changes from adding or removing each of ``points``.

        For base subset :math:`S` with parameters ``theta`` and each point
        :math:`z` of ``points``, the step for :math:`F' = F_S + s\,C\ell(z,\cdot)`
        (:math:`s = +1` for ``"add"``, :math:`-1` for ``"remove"``):

        .. math::

            \Delta\theta = -(H + U B U^\top)^{-1}\bigl(g + s\,C\,U r\bigr),
            \quad U = I_{K'}\otimes\tilde x,\; B = s\,C A,

        with :math:`g = \nabla F_S(\theta)` (zero at a fitted ``theta``; not
        at the ``theta = 0`` of a degenerate base). ``approximation="influence"``
        drops :math:`U B U^\top` (the classic influence function).

        Parameters
        ----------
        theta : array (n_params,)
            Parameters of the base subset (its fit, or 0 if it is degenerate).
        base : indices or mask
            The base training subset :math:`S`.
        points : array of int
            Points to add (should be outside ``base``) or remove (inside it).
        direction : {"add", "remove"}
        approximation : {"newton", "influence"}
        H_inv : array, optional
            :meth:`inverse_hessian` of the base Hessian, if already computed.

        Returns
        -------
        ndarray of shape (len(points), n_params)
        """
        check_choice(direction, "direction", ("add", "remove"))
        check_choice(approximation, "approximation", APPROXIMATIONS)
        s = 1.0 if direction == "add" else -1.0
        theta = np.asarray(theta, dtype=float)
        base = self._index(base)
        points = np.asarray(points, dtype=np.intp).reshape(-1)
        if H_inv is None:
            H_inv = self.inverse_hessian(self.hessian(theta, base))
        g = self.gradient(theta, base)
        if self.null is not None:
            g = g - (g @ self.null) * self.null
        h = H_inv @ g
        Xp = self.Xt[points]
        r, A = self._residual_curvature(self._scores(theta, Xp), self.codes[points])
        v = s * self.C * r  # (m, K')
        if approximation == "newton":
            Kp, q = self.n_outputs, self.q
            G = H_inv.reshape(Kp, q, Kp, q)
            M = np.einsum("ma,kalb,mb->mkl", Xp, G, Xp, optimize=True)  # U^T H^-1 U
            Uh = Xp @ h.reshape(Kp, q).T  # U^T h, (m, K')
            B = s * self.C * A
            system = np.eye(Kp)[None] + B @ M
            rhs = np.einsum("mkl,ml->mk", B, Uh + np.einsum("mkl,ml->mk", M, v))
            v = v - np.linalg.solve(system, rhs[:, :, None])[:, :, 0]
        steps = -(v[:, :, None] * Xp[:, None, :]).reshape(points.size, -1) @ H_inv
        return steps - h[None, :]


# --------------------------------------------------------------------------- largest-S

def _normalise(marginals: np.ndarray, full_utility: float, empty_utility: float):
    """Values ``C_U * marginals`` with ``sum = U(I) - U(empty)`` (Theorem 6), and ``C_U``."""
    total = float(marginals.sum())
    if not np.isfinite(total) or abs(total) <= 1e-12 * max(float(np.abs(marginals).sum()), 1e-300):
        warnings.warn("the influence marginal contributions sum to (almost) zero: the constant C_U of "
                      "Theorem 6 is undefined; returning the unnormalised marginal contributions.",
                      UserWarning, stacklevel=3)
        return marginals.copy(), float("nan")
    c_u = (full_utility - empty_utility) / total
    if c_u < 0:
        warnings.warn(f"C_U = {c_u:.3g} < 0: the marginal contributions sum to the opposite sign of "
                      "U(I) - U(empty), so normalising reverses the ranking of the points.",
                      UserWarning, stacklevel=3)
    return c_u * marginals, c_u


def largest_s_influence_general(per_sample_gradients, hessian, test_utility_gradient, *,
                                full_utility=None, empty_utility=None,
                                normalize: bool = True) -> ValuationResult:
    r"""Largest-S influence values of any smooth model (paper Section 4.5, Theorem 6).

    With :math:`\hat\theta` the minimiser of the training objective
    :math:`F(\theta) = \sum_j L_j(\theta) + R(\theta)`, removing point ``i``
    moves the parameters by :math:`\Delta\theta_i \approx H^{-1}\nabla L_i(\hat\theta)`
    (influence function), so its marginal contribution to its largest
    coalition is

    .. math::

        \Delta_i = U(I) - U(I\setminus\{i\}) \approx
        -\nabla U(\hat\theta)^\top H^{-1} \nabla L_i(\hat\theta)
        = -\nabla L_i(\hat\theta)^\top s_{\text{test}},\qquad
        s_{\text{test}} = H^{-1}\nabla U(\hat\theta),

    one linear solve whatever ``N`` (Koh & Liang's :math:`s_{\text{test}}`
    trick). Values are :math:`\hat s_i = C_U \Delta_i` with
    :math:`C_U = (U(I) - U(\emptyset)) / \sum_j \Delta_j`, the scheme of
    Theorem 6 (which, by the theorem, is not additive in the utility).

    Parameters
    ----------
    per_sample_gradients : array of shape (N, p)
        :math:`\nabla L_i(\hat\theta)`, each scaled as it enters the objective
        (e.g. ``C * grad log-loss`` for scikit-learn, ``grad / N`` for a mean).
    hessian : array of shape (p, p) or callable
        Hessian of the whole objective (regulariser included) at
        :math:`\hat\theta`, or a function ``solve(b) -> H^{-1} b`` for a
        vector ``b`` (conjugate gradients, LiSSA, ...). A singular array is
        handled with the least-squares (pseudo-inverse) solution.
    test_utility_gradient : array of shape (p,)
        :math:`\nabla U_{\text{test}}(\hat\theta)`.
    full_utility, empty_utility : float
        :math:`U(I)` and :math:`U(\emptyset)`; required when ``normalize``.
    normalize : bool, default True
        Rescale by :math:`C_U`; otherwise the values are the raw
        :math:`\Delta_i`.

    Returns
    -------
    ValuationResult
        ``method="largest_s_influence"``, ``n_evaluations=0`` (no model fitted
        here), ``info["marginal_estimates"]`` the raw :math:`\Delta_i`,
        ``info["normalization_constant"]`` :math:`C_U` (NaN if not normalised).
    """
    start = time.perf_counter()
    G = check_real_array(per_sample_gradients, "per_sample_gradients")
    if G.ndim != 2 or G.shape[0] == 0:
        raise ValueError(f"per_sample_gradients must have shape (N, p) with N >= 1, got {G.shape}.")
    if not np.isfinite(G).all():
        raise ValueError("per_sample_gradients contains NaN or infinite values.")
    p = G.shape[1]
    grad_u = check_real_array(test_utility_gradient, "test_utility_gradient").reshape(-1)
    if grad_u.shape != (p,):
        raise ValueError(f"test_utility_gradient must have shape ({p},), got {grad_u.shape}.")
    if not np.isfinite(grad_u).all():
        raise ValueError("test_utility_gradient contains NaN or infinite values.")
    normalize = check_bool(normalize, "normalize")
    solver = "callable"
    if callable(hessian):
        s_test = check_real_array(hessian(grad_u), "hessian(b)").reshape(-1)
        if s_test.shape != (p,) or not np.isfinite(s_test).all():
            raise ValueError(f"hessian(b) must return a finite vector of shape ({p},).")
    else:
        H = check_real_array(hessian, "hessian")
        if H.shape != (p, p):
            raise ValueError(f"hessian must have shape ({p}, {p}) or be callable, got {H.shape}.")
        if not np.isfinite(H).all():
            raise ValueError("hessian contains NaN or infinite values.")
        try:
            s_test = linalg.cho_solve(linalg.cho_factor(H, lower=True), grad_u)
            solver = "cholesky"
        except np.linalg.LinAlgError:
            s_test = np.linalg.lstsq(H, grad_u, rcond=None)[0]
            solver = "lstsq"
    marginals = -(G @ s_test)
    info = {"marginal_estimates": marginals, "hessian_solver": solver}
    if normalize:
        if full_utility is None or empty_utility is None:
            raise ValueError("normalize=True needs full_utility (U(I)) and empty_utility (U(empty)).")
        full_utility = check_float(full_utility, "full_utility")
        empty_utility = check_float(empty_utility, "empty_utility")
        values, c_u = _normalise(marginals, full_utility, empty_utility)
        info.update(full_utility=full_utility, empty_utility=empty_utility)
    else:
        values, c_u = marginals.copy(), float("nan")
    info["normalization_constant"] = c_u
    return ValuationResult(values=values, n_evaluations=0, method="largest_s_influence",
                           wall_time=time.perf_counter() - start, info=info)


def largest_s_influence(X_train, y_train, X_test, y_test, *, C=1.0, fit_intercept=True,
                        utility="neg_log_loss", approximation="influence", utility_change="linear",
                        normalize: bool = True, empty_utility=None) -> ValuationResult:
    r"""Largest-S influence values of L2 logistic regression (paper Section 4.5).

    Fits scikit-learn's ``LogisticRegression(C=C)`` objective once on all
    ``N`` points (:class:`LogisticObjective`, Newton's method), approximates
    for every point ``i`` the parameters without it (module docstring,
    ``direction="remove"``) and its marginal contribution to the largest
    coalition, :math:`\Delta_i \approx U(I) - U(I\setminus\{i\})`. A point
    whose removal leaves a class empty gets the exact
    :math:`\Delta_i = U(I) - U_0` (degenerate-subset convention). Values are

    .. math:: \hat s_i = C_U \Delta_i, \qquad C_U = \frac{U(I) - U(\emptyset)}{\sum_j \Delta_j},

    the scheme of Theorem 6 (the paper states it for :math:`U(\emptyset) = 0`),
    so :math:`\sum_i \hat s_i = U(I) - U(\emptyset)`. :math:`C_U` can be
    negative or huge when the :math:`\Delta_j` nearly cancel; a warning says
    so.

    Parameters
    ----------
    X_train, y_train, X_test, y_test, C, fit_intercept, utility
        As for :class:`LogisticObjective`.
    approximation : {"influence", "newton"}, default "influence"
        ``"influence"``: the paper's formula (Hessian of the full objective);
        ``"newton"``: the Hessian without the removed point (one exact Newton
        step; for binary models, the influence step divided by one minus the
        point's weighted leverage).
    utility_change : {"linear", "evaluate"}, default "linear"
        ``"linear"``: :math:`\Delta_i \approx -\nabla U^\top\Delta\theta_i` with
        the gradient of the (smooth surrogate of the) test utility;
        ``"evaluate"``: :math:`U(\hat\theta) - U(\hat\theta + \Delta\theta_i)`.
        With ``utility="accuracy"``, ``"evaluate"`` gives mostly zero changes
        (accuracy is piecewise constant), which ``normalize`` cannot rescale.
    normalize : bool, default True
        Rescale by :math:`C_U`; otherwise return the raw :math:`\Delta_i`.
    empty_utility : float, optional
        :math:`U(\emptyset)` for the normalisation; default :math:`U_0`, the
        utility of the uniform prediction (:math:`-\log K` or :math:`1/K`).

    Returns
    -------
    ValuationResult
        ``method="largest_s_influence"``, ``n_evaluations=1`` (one fit of the
        full set, whose test utility is :math:`U(I)`; :math:`U(\emptyset)` is
        the convention constant and the ``N`` influence-approximated
        utilities are not counted). ``info``: ``marginal_estimates`` (raw
        :math:`\Delta_i`), ``normalization_constant`` (:math:`C_U`),
        ``parameter_changes`` (``(N, n_params)`` approximations of
        :math:`\hat\theta_{-i} - \hat\theta`), ``theta`` (the fit),
        ``full_utility``, ``empty_utility``.

    Examples
    --------
    >>> import numpy as np
    >>> from shapley_research import largest_s_influence
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2)); y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
    >>> res = largest_s_influence(X[:30], y[:30], X[30:], y[30:], C=1.0)
    >>> bool(np.isclose(res.values.sum(), res.info["full_utility"] - res.info["empty_utility"]))
    True
    """
    start = time.perf_counter()
    obj = LogisticObjective(X_train, y_train, X_test, y_test, C=C, fit_intercept=fit_intercept,
                            utility=utility)
    check_choice(approximation, "approximation", APPROXIMATIONS)
    check_choice(utility_change, "utility_change", UTILITY_CHANGES)
    normalize = check_bool(normalize, "normalize")
    u_empty = obj.degenerate_utility if empty_utility is None else check_float(empty_utility, "empty_utility")

    everyone = np.arange(obj.n_train)
    theta = obj.fit(everyone)
    u_full = obj.utility(theta)
    marginals, steps, meta = _marginals(obj, theta, everyone, everyone, "remove", approximation,
                                        utility_change, u_full)
    info = {"marginal_estimates": marginals, "parameter_changes": steps, "theta": theta,
            "full_utility": u_full, "empty_utility": u_empty, "approximation": approximation,
            "utility_change": utility_change, "utility": obj.utility_name, "C": obj.C,
            "n_influence_updates": meta["n_influence_updates"], "n_fits": 1}
    if normalize:
        values, c_u = _normalise(marginals, u_full, u_empty)
    else:
        values, c_u = marginals.copy(), float("nan")
    info["normalization_constant"] = c_u
    return ValuationResult(values=values, n_evaluations=1, method="largest_s_influence",
                           wall_time=time.perf_counter() - start, info=info)


def _marginals(obj: LogisticObjective, theta, base, points, direction, approximation, utility_change,
               u_base, H_inv=None):
    """Marginal contributions of ``points`` to (``"add"``) or within (``"remove"``) ``base``.

    ``"add"``: :math:`U(S\\cup\\{i\\}) - U(S)`; ``"remove"``:
    :math:`U(T) - U(T\\setminus\\{j\\})`. Coalitions that miss a class have the
    exact utility :math:`U_0`; all others are influence approximations.
    Returns the marginals, the parameter steps (NaN rows where not used) and
    counters.
    """
    points = np.asarray(points, dtype=np.intp)
    m = points.size
    out = np.zeros(m)
    steps = np.full((m, obj.n_params), np.nan)
    u0 = obj.degenerate_utility
    counts = np.bincount(obj.codes[base], minlength=obj.n_classes)
    base_degenerate = bool((counts == 0).any())
    if direction == "add":
        missing = np.flatnonzero(counts == 0)
        # S + i has every class iff S misses none, or only the class of i.
        if missing.size == 0:
            target_ok = np.ones(m, dtype=bool)
        elif missing.size == 1:
            target_ok = obj.codes[points] == missing[0]
        else:
            target_ok = np.zeros(m, dtype=bool)
    else:
        if base_degenerate:  # T and every T - j miss a class: both utilities are U_0
            return out, steps, {"n_influence_updates": 0}
        # T - j misses a class iff j is the only member of its class in T.
        target_ok = counts[obj.codes[points]] > 1
    approx = np.flatnonzero(target_ok)
    u_target = np.full(m, u0)
    if approx.size:
        if H_inv is None:
            H_inv = obj.inverse_hessian(obj.hessian(theta, base))
        d_theta = obj.newton_steps(theta, base, points[approx], direction=direction,
                                   approximation=approximation, H_inv=H_inv)
        steps[approx] = d_theta
        if utility_change == "linear":
            u_target[approx] = u_base + d_theta @ obj.utility_gradient(theta)
        else:
            u_target[approx] = obj.utilities(theta[None, :] + d_theta)
    out = u_target - u_base if direction == "add" else u_base - u_target
    return out, steps, {"n_influence_updates": int(approx.size)}


# --------------------------------------------------------------------------- all-S

def neyman_allocation(std, budget, *, coverage=None, lower=None, upper=None) -> np.ndarray:
    r"""Integer Neyman allocation of ``budget`` samples over strata.

    Minimises :math:`\sum_k \sigma_k^2 / (c_k n_k)` subject to
    :math:`\sum_k n_k = B` and :math:`l_k \le n_k \le u_k`: the variance of a
    sum of stratum means when a sample of stratum ``k`` yields :math:`c_k`
    (coverage) useful observations with standard deviation :math:`\sigma_k`.
    The continuous solution is :math:`n_k = \operatorname{clip}(\lambda
    \sigma_k / \sqrt{c_k}, l_k, u_k)` (water-filling on :math:`\lambda`);
    it is rounded by largest remainders. If every stratum has zero weight the
    remainder is spread evenly. If :math:`\sum_k u_k \le B` the result is ``upper``.

    Parameters
    ----------
    std : array of shape (K,)
        Non-negative standard deviations :math:`\sigma_k`.
    budget : int
        Total samples :math:`B \ge \sum_k l_k`.
    coverage : array of shape (K,), optional
        Positive :math:`c_k` (default 1).
    lower, upper : arrays of shape (K,), optional
        Integer bounds (default 0 and unbounded).

    Returns
    -------
    ndarray of int, shape (K,)
    """
    std = _real_vector(std, "std")
    K = std.size
    if K == 0 or not np.isfinite(std).all() or (std < 0).any():
        raise ValueError("std must be a non-empty array of finite, non-negative numbers.")
    budget = check_int(budget, "budget", minimum=0)
    coverage = np.ones(K) if coverage is None else _real_vector(coverage, "coverage")
    if coverage.shape != (K,) or not (np.isfinite(coverage) & (coverage > 0)).all():
        raise ValueError(f"coverage must hold {K} finite, positive numbers.")
    lower = np.zeros(K, dtype=np.int64) if lower is None else _integer_vector(lower, "lower")
    upper = np.full(K, _BIG) if upper is None else _integer_vector(upper, "upper")
    if lower.shape != (K,) or upper.shape != (K,) or (lower < 0).any() or (upper < lower).any():
        raise ValueError("lower and upper must be K integers with 0 <= lower <= upper.")
    if lower.sum() > budget:
        raise ValueError(f"budget={budget} is smaller than the sum of the lower bounds ({lower.sum()}).")
    if upper.sum() <= budget:
        return upper.copy()
    weight = std / np.sqrt(coverage)
    open_ = upper > lower
    if not (weight[open_] > 0).any():
        weight = open_.astype(float)

    def total(lam):
        return np.clip(lam * weight, lower, upper).sum()

    lo, hi = 0.0, 1.0
    while total(hi) < budget:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if total(mid) < budget else (lo, mid)
    target = np.clip(hi * weight, lower, upper)
    alloc = np.floor(target).astype(np.int64)
    alloc = np.clip(alloc, lower, upper)
    remainder = budget - int(alloc.sum())
    while remainder < 0:  # only after float round-off: take back from the largest allocations
        k = int(np.argmax(np.where(alloc > lower, alloc, -1)))
        alloc[k] -= 1
        remainder += 1
    order = np.argsort(-(target - np.floor(target)), kind="stable")
    for k in itertools.cycle(order):
        if remainder <= 0:
            break
        if alloc[k] < upper[k]:
            alloc[k] += 1
            remainder -= 1
    return alloc


class _Stratum:
    """Running per-player statistics of the marginal contributions of one coalition size."""

    def __init__(self, k: int, n: int):
        self.k = k
        # Add to size-k sets, or remove from size-(k+1) sets: whichever covers more players per fit.
        self.direction = "add" if n - k >= k + 1 else "remove"
        self.base_size = k if self.direction == "add" else k + 1
        self.coverage = (n - k) / n if self.direction == "add" else (k + 1) / n
        self.population = math.comb(n, self.base_size)  # exact Python int, may be huge
        self.drawn: set = set()
        self.count = np.zeros(n, dtype=np.int64)
        self.mean = np.zeros(n)
        self.m2 = np.zeros(n)
        self.n_fits = 0

    def add(self, players: np.ndarray, values: np.ndarray) -> None:
        self.count[players] += 1
        delta = values - self.mean[players]
        self.mean[players] += delta / self.count[players]
        self.m2[players] += delta * (values - self.mean[players])

    def pooled_variance(self) -> float:
        """Within-player variance pooled over players (NaN without degrees of freedom)."""
        dof = np.maximum(self.count - 1, 0).sum()
        if dof == 0:
            return float("nan")
        return float(self.m2.sum() / dof)

    def total_variance(self) -> float:
        """Variance of all observations, players pooled (a conservative fallback)."""
        n_obs = self.count.sum()
        if n_obs < 2:
            return float("nan")
        grand = (self.count * self.mean).sum() / n_obs
        return float((self.m2.sum() + (self.count * (self.mean - grand) ** 2).sum()) / (n_obs - 1))


def _stratum_std(strata, prior_sets: float = 0.0) -> np.ndarray:
    r"""Within-player standard deviation of each stratum, optionally shrunk.

    With ``prior_sets`` :math:`n_0 > 0` the variance of a stratum whose
    estimate rests on :math:`b_k` base sets becomes
    :math:`(b_k\hat\sigma_k^2 + n_0ar\sigma^2)/(b_k + n_0)`, with
    :math:`ar\sigma^2` the base-set-weighted mean over strata: marginal
    contributions are heavy-tailed (a few coalitions move the model a lot), so
    a two-set pilot often reads a near-zero variance, and plain Neyman
    allocation then starves that stratum.
    """
    variances = np.array([st.pooled_variance() for st in strata])
    fallback = np.array([st.total_variance() for st in strata])
    variances = np.where(np.isnan(variances), fallback, variances)
    if np.isnan(variances).all():
        return np.ones(len(strata))
    variances = np.where(np.isnan(variances), np.nanmax(variances), variances)
    if prior_sets > 0:
        sets = np.array([len(st.drawn) for st in strata], dtype=float)
        pooled = np.average(variances, weights=np.maximum(sets, 1.0))
        variances = (sets * variances + prior_sets * pooled) / (sets + prior_sets)
    return np.sqrt(variances)


def _draw_subsets(stratum: _Stratum, n: int, size: int, rng: np.random.Generator) -> list:
    """``size`` new distinct base sets of the stratum, uniform without replacement."""
    size = min(size, stratum.population - len(stratum.drawn))
    if size <= 0:
        return []
    m = stratum.base_size
    if 2 * (len(stratum.drawn) + size) > stratum.population:
        # Dense draw (small population): enumerate the undrawn sets and choose among them.
        pool = [c for c in itertools.combinations(range(n), m) if c not in stratum.drawn]
        chosen = [pool[j] for j in np.sort(rng.choice(len(pool), size=size, replace=False))]
    else:
        chosen = []
        while len(chosen) < size:  # rejection: at most half the population is taken
            c = tuple(np.sort(rng.choice(n, size=m, replace=False)).tolist())
            if c not in stratum.drawn:
                stratum.drawn.add(c)
                chosen.append(c)
        return chosen
    stratum.drawn.update(chosen)
    return chosen


def all_s_influence(X_train, y_train, X_test, y_test, budget, seed=None, *, C=1.0, fit_intercept=True,
                    utility="neg_log_loss", approximation="newton", utility_change="evaluate",
                    n_pilot: int = 2, progress: bool | None = None) -> ValuationResult:
    r"""All-S influence: stratified Shapley sampling with influence-approximated marginals.

    Writes :math:`s_i = \frac1N\sum_{k=0}^{N-1}\mathbb E[X_i^k]` (module
    docstring) and estimates each stratum mean :math:`\mu_{ik} = \mathbb
    E[X_i^k]` from sampled coalitions, each fitted once:

    * **stratum** ``k = 0`` is exact: :math:`X_i^0 = 0` (degenerate-subset
      convention), never sampled;
    * **stratum** ``k \ge 1`` draws *base sets* uniformly without replacement.
      If :math:`N - k \ge k + 1` a base set is a size-``k`` set :math:`S` and
      every :math:`i \notin S` gets :math:`X_i^k = U(S\cup\{i\}) - U(S)` from
      the influence of *adding* :math:`z_i`; otherwise it is a size-``(k+1)``
      set :math:`T` and every :math:`j\in T` gets
      :math:`X_j^k = U(T) - U(T\setminus\{j\})` from the influence of
      *removing* :math:`z_j`. Conditionally on covering player ``i`` the
      coalition is uniform among the size-``k`` subsets of
      :math:`I\setminus\{i\}`, so both are unbiased up to the influence
      error; the choice maximises the players covered per fit,
      :math:`c_k = \max(N-k, k+1)/N`. (The ``k = N-1`` stratum is then the
      single set :math:`T = I`: largest-S influence without normalisation.)
    * **allocation**: a pilot of ``n_pilot`` base sets per stratum estimates
      the within-player standard deviation :math:`\sigma_k` of
      :math:`X_i^k` (pooled over players); the rest of the budget follows the
      Neyman allocation :math:`n_k \propto \sigma_k/\sqrt{c_k}`
      (:func:`neyman_allocation`), which minimises
      :math:`\sum_i \operatorname{Var}\hat s_i`, capped at the number of
      distinct base sets :math:`\binom{N}{|S|}` (a stratum given all of them
      is computed exactly, up to the influence error). It is spent in rounds
      of doubling size (the first as large as the pilot), re-estimating
      :math:`\sigma_k` before each, with each variance shrunk toward the
      pooled one by 4 base sets' worth of weight: marginal contributions are
      heavy-tailed, a two-set pilot often reads a near-zero variance, and
      plain one-shot Neyman allocation then did worse than equal allocation
      in our checks. One allocation per stratum, not per player ("customises
      the number of samples ... according to the variance of
      :math:`X_i^k`"), because one fit serves all the players it covers.
    * **estimate**: :math:`\hat\mu_{ik}` is the mean of player ``i``'s
      observations in stratum ``k``; a player with none falls back to the
      stratum's mean over players (counted in ``info["n_missing_cells"]``).

    Parameters
    ----------
    X_train, y_train, X_test, y_test, C, fit_intercept, utility
        As for :class:`LogisticObjective`.
    budget : int
        Number of sampled base sets (one model fit each, none for a base set
        that misses a class: its model is the convention ``theta = 0``). At
        least the pilot, :math:`\sum_{k=1}^{N-1}\min(\texttt{n\_pilot},
        \binom{N}{|S_k|})`. The run stops early if every stratum is exhausted.
    seed : int, optional
        Seed; ``None`` draws one (kept on the result). Round ``r`` (0: the
        pilot) of stratum ``k`` draws from stream ``batch_rng(seed, r N + k)``,
        so results depend only on the seed, the data and the arguments.
    approximation : {"newton", "influence"}, default "newton"
        ``"newton"``: one Newton step with the Hessian of the changed set
        (second-order accurate; same cost); ``"influence"``: the paper's
        influence function with the base set's Hessian.
    utility_change : {"evaluate", "linear"}, default "evaluate"
        ``"evaluate"``: the test utility at the updated parameters (exact in
        the utility, required for accuracy); ``"linear"``: first-order change
        through the (surrogate) utility gradient.
    n_pilot : int, default 2
        Pilot base sets per stratum, at least 2.
    progress : bool, optional
        Show a progress bar (default: only on an interactive terminal).

    Returns
    -------
    ValuationResult
        ``method="all_s_influence"``; ``stderr`` from the pooled within-player
        variance of each stratum with the finite-population correction
        (:math:`\frac1N\sqrt{\sum_k \hat\sigma_k^2 (1 - n_{ik}/\binom{N-1}{k}) / n_{ik}}`;
        it ignores the influence approximation's bias). ``n_evaluations`` is
        the number of model fits actually made: each fit is followed by one
        exact test-utility evaluation of that model, and the pair counts as
        one evaluation (one coalition whose utility was computed, the unit of
        every estimator of the package). Not counted: coalitions whose utility
        is the convention constant :math:`U_0`, and the influence-approximated
        utilities (``info["n_influence_updates"]``). ``n_samples`` is the
        number of base sets drawn. ``info`` also holds the per-stratum
        ``allocation`` (base sets drawn), ``coverage``, ``directions``,
        ``pilot_std`` (raw, after the pilot), ``stratum_std`` (final, shrunk),
        ``exhausted`` strata, ``n_rounds``, ``stratum_means`` (``(N, N)``,
        column ``k`` estimates :math:`\mathbb E[X_i^k]`), ``n_fits``,
        ``n_degenerate_bases``, ``n_missing_cells``.
    """
    start = time.perf_counter()
    obj = LogisticObjective(X_train, y_train, X_test, y_test, C=C, fit_intercept=fit_intercept,
                            utility=utility)
    check_choice(approximation, "approximation", APPROXIMATIONS)
    check_choice(utility_change, "utility_change", UTILITY_CHANGES)
    n_pilot = check_int(n_pilot, "n_pilot", minimum=2)
    budget = check_int(budget, "budget", minimum=0)
    entropy = check_seed(seed)
    n = obj.n_train
    strata = [_Stratum(k, n) for k in range(1, n)]
    pilot = np.array([min(n_pilot, st.population) for st in strata], dtype=np.int64)
    if budget < pilot.sum():
        raise ValueError(f"budget={budget} is too small: the pilot round alone needs {int(pilot.sum())} "
                         f"base sets ({n_pilot} per coalition size k = 1..{n - 1}, fewer where a size "
                         "has fewer distinct sets); raise budget or lower n_pilot.")
    counters = {"n_fits": 0, "n_degenerate_bases": 0, "n_influence_updates": 0}

    def process(stratum: _Stratum, base: tuple) -> None:
        base = np.asarray(base, dtype=np.intp)
        if obj.degenerate(base):
            theta, u_base = np.zeros(obj.n_params), obj.degenerate_utility
            counters["n_degenerate_bases"] += 1
        else:
            theta = obj.fit(base)
            u_base = obj.utility(theta)
            counters["n_fits"] += 1
        if stratum.direction == "add":
            players = np.setdiff1d(np.arange(n), base, assume_unique=True)
        else:
            players = base
        values, _, meta = _marginals(obj, theta, base, players, stratum.direction, approximation,
                                     utility_change, u_base)
        counters["n_influence_updates"] += meta["n_influence_updates"]
        stratum.add(players, values)

    from threadpoolctl import threadpool_limits
    from tqdm.auto import tqdm

    bar = tqdm(total=budget, desc="all-S influence", unit="set", leave=False,
               disable=None if progress is None else not progress)
    with threadpool_limits(1), bar:  # many tiny fits: one BLAS thread is much faster
        for st, size in zip(strata, pilot):
            for base in _draw_subsets(st, n, int(size), batch_rng(entropy, st.k)):
                process(st, base)
                bar.update(1)
        pilot_std = _stratum_std(strata)
        upper = np.array([min(st.population, _BIG) for st in strata], dtype=np.int64)
        coverage = np.array([st.coverage for st in strata])
        # Neyman allocation in rounds of doubling size, re-estimating the stratum
        # variances after each: a two-sample pilot alone misallocates badly.
        n_rounds, step = 0, max(int(pilot.sum()), 1)
        while True:
            drawn = np.array([len(st.drawn) for st in strata], dtype=np.int64)
            spent = int(drawn.sum())
            if spent >= budget or (drawn >= upper).all():
                break
            n_rounds += 1
            # Exhausted strata are exact: no variance left to reduce.
            std = np.where(drawn >= upper, 0.0, _stratum_std(strata, PRIOR_SETS))
            target = neyman_allocation(std, min(budget, spent + step), coverage=coverage,
                                       lower=drawn, upper=upper)
            for st, total, have in zip(strata, target, drawn):
                for base in _draw_subsets(st, n, int(total - have), batch_rng(entropy, n_rounds * n + st.k)):
                    process(st, base)
                    bar.update(1)
            step *= 2

    stratum_means = np.zeros((n, n))  # column k: estimates of E[X_i^k]; column 0 is exactly 0
    stratum_var = _stratum_std(strata, PRIOR_SETS) ** 2
    variance_terms = np.zeros(n)
    n_missing = 0
    for st, var_k in zip(strata, stratum_var):
        seen = st.count > 0
        fill = st.mean[seen].mean() if seen.any() else 0.0
        n_missing += int((~seen).sum())
        stratum_means[:, st.k] = np.where(seen, st.mean, fill)
        # Finite-population correction: each player's stratum has C(N-1, k) coalitions.
        population = math.comb(n - 1, st.k)
        fpc = np.clip(1.0 - st.count / population, 0.0, 1.0) if population < _BIG else 1.0
        variance_terms += np.where(seen, var_k * fpc / np.maximum(st.count, 1), var_k)
    values = stratum_means.sum(axis=1) / n
    stderr = np.sqrt(variance_terms) / n
    n_drawn = int(sum(len(st.drawn) for st in strata))
    info = {
        "budget": budget, "n_pilot": n_pilot, "approximation": approximation,
        "utility_change": utility_change, "utility": obj.utility_name, "C": obj.C,
        "sizes": np.arange(1, n), "directions": [st.direction for st in strata],
        "coverage": np.array([st.coverage for st in strata]),
        "allocation": np.array([len(st.drawn) for st in strata]),
        "pilot_std": pilot_std, "stratum_std": np.sqrt(stratum_var), "n_rounds": n_rounds,
        "exhausted": np.array([len(st.drawn) == st.population for st in strata]),
        "stratum_means": stratum_means, "n_missing_cells": n_missing,
        "empty_utility": obj.degenerate_utility, **counters,
    }
    return ValuationResult(values=values, n_evaluations=counters["n_fits"], method="all_s_influence",
                           seed=entropy, wall_time=time.perf_counter() - start, stderr=stderr,
                           n_samples=n_drawn, info=info)
