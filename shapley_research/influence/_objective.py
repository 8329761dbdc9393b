"""scikit-learn's L2 logistic regression objective with its derivatives, test utilities and influence updates.

:class:`LogisticObjective` is the model of both influence heuristics: the
penalised log-loss of a training subset (binary or multinomial), per-sample
gradients, Hessians, a Newton fit, the test utility and its gradient, and the
influence (or one-step Newton) parameter change of adding or removing points
(the mathematics is in :mod:`shapley_research.influence`).
"""

from __future__ import annotations

import math

from typing import Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import linalg

from .._validation import (check_bool, check_choice, check_class_labels, check_feature_pair, check_float,
                           check_label_kinds, check_target_vector)

UTILITIES = ("neg_log_loss", "accuracy")
APPROXIMATIONS = ("influence", "newton")


def _check_labels(y: ArrayLike, n: int, name: str, x_name: str) -> np.ndarray:
    return check_class_labels(check_target_vector(y, name, n, x_name), name)


def _sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free logistic function


class LogisticObjective:
    r"""scikit-learn's L2 logistic regression objective, its derivatives and a test utility.

    .. math::

        F_S(\theta) = C \sum_{j \in S} \ell(z_j, \theta) + \tfrac12 \lVert w \rVert^2

    (see :mod:`shapley_research.influence._objective` for :math:`\ell`, the parameter layout and the
    degenerate-subset convention). Parameters are flat vectors of length
    ``n_params = K' * q`` holding a ``(K', q)`` matrix row by row: ``K' = 1``
    for two classes, ``K`` for more; ``q = d + 1`` with an intercept (last
    column), ``d`` without. :meth:`coef` converts to scikit-learn's
    ``coef_``/``intercept_``.

    Parameters
    ----------
    X_train : array-like of float, shape (N, d)
    y_train : array-like, shape (N,)
        Class labels; at least two classes. Sorted unique labels define the
        classes (for two classes the larger one is the positive class).
    X_test : array-like of float, shape (T, d)
    y_test : array-like, shape (T,)
        Labels among those of ``y_train``.
    C : float, default 1.0
        Inverse regularisation strength, ``> 0`` (scikit-learn's ``C``).
    fit_intercept : bool, default True
        Fit an unpenalised intercept (per class).
    utility : {"neg_log_loss", "accuracy"}, default "neg_log_loss"
        Test utility (:mod:`shapley_research.influence._objective`).
    """

    def __init__(self, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, *,
                 C: float = 1.0, fit_intercept: bool = True,
                 utility: Literal["neg_log_loss", "accuracy"] = "neg_log_loss") -> None:
        X_train, X_test = check_feature_pair(X_train, X_test)
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
        self.null: NDArray[np.float64] | None = None
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

    def _residual_curvature(self, Z: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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

    def _index(self, idx: ArrayLike | None) -> NDArray[np.intp]:
        if idx is None:
            return np.arange(self.n_train)
        array = np.asarray(idx)
        return np.flatnonzero(array) if array.dtype == np.bool_ else array.astype(np.intp)

    # ---- objective ------------------------------------------------------------
    def objective(self, theta: NDArray[np.float64], idx: ArrayLike | None = None) -> float:
        """:math:`F_S(\\theta)` for the training subset ``idx`` (indices or mask; all by default)."""
        idx = self._index(idx)
        Z = self._scores(theta, self.Xt[idx])
        return float(self.C * self._loss(Z, self.codes[idx]).sum() + 0.5 * (self.penalty * theta**2).sum())

    def per_sample_gradients(self, theta: NDArray[np.float64], idx: ArrayLike | None = None) -> NDArray[np.float64]:
        r""":math:`C \nabla_\theta \ell(z_j, \theta)` for ``j`` in ``idx``: shape (m, n_params)."""
        idx = self._index(idx)
        Xs = self.Xt[idx]
        r, _ = self._residual_curvature(self._scores(theta, Xs), self.codes[idx])
        return self.C * (r[:, :, None] * Xs[:, None, :]).reshape(idx.size, -1)

    def gradient(self, theta: NDArray[np.float64], idx: ArrayLike | None = None) -> NDArray[np.float64]:
        """Gradient of :math:`F_S` at ``theta``, shape (n_params,)."""
        return self.per_sample_gradients(theta, idx).sum(axis=0) + self.penalty * theta

    def hessian(self, theta: NDArray[np.float64], idx: ArrayLike | None = None) -> NDArray[np.float64]:
        r"""Hessian of :math:`F_S`: :math:`C\sum_j A_j \otimes \tilde x_j \tilde x_j^\top + I_w`, (n_params, n_params).

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

    def inverse_hessian(self, H: NDArray[np.float64]) -> NDArray[np.float64]:
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

    def degenerate(self, idx: ArrayLike | None) -> bool:
        """Whether the subset misses a class (then its model is ``theta = 0``)."""
        idx = self._index(idx)
        return np.unique(self.codes[idx]).size < self.n_classes

    def fit(self, idx: ArrayLike | None = None, *, theta0: ArrayLike | None = None, tol: float = 1e-10,
            max_iter: int = 100) -> NDArray[np.float64]:
        """Minimise :math:`F_S` by damped Newton; ``theta = 0`` for a degenerate subset.

        ``idx``: indices or a mask of the subset (all points by default);
        ``theta0``: the starting point, shape (n_params,). Returns the
        minimiser, shape (n_params,).

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

    def coef(self, theta: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(coef_, intercept_)`` in scikit-learn's layout: shapes (K', d) and (K',)."""
        M = np.asarray(theta, dtype=float).reshape(self.n_outputs, self.q)
        if self.fit_intercept:
            return M[:, :-1].copy(), M[:, -1].copy()
        return M.copy(), np.zeros(self.n_outputs)

    # ---- test utility -----------------------------------------------------------
    @property
    def degenerate_utility(self) -> float:
        """:math:`U_0`: utility of the uniform prediction, used for every degenerate subset."""
        return -math.log(self.n_classes) if self.utility_name == "neg_log_loss" else 1.0 / self.n_classes

    @property
    def utility_range(self) -> float:
        """Largest change of the test utility between two sensible models: ``-log(eps)`` (36.04) for the log-loss,
        as far as scikit-learn's clipped one can move; 1 for accuracy."""
        return -math.log(np.finfo(float).eps) if self.utility_name == "neg_log_loss" else 1.0

    def utilities(self, thetas: ArrayLike) -> NDArray[np.float64] | float:
        """Test utility of each row of ``thetas`` (m, n_params), shape (m,); a 1-D ``theta`` gives a float."""
        array = np.asarray(thetas, dtype=float)
        single = array.ndim == 1
        thetas = array.reshape(-1, self.n_outputs, self.q)
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
    def _finish(out: NDArray[np.float64], single: bool) -> NDArray[np.float64] | float:
        return float(out[0]) if single else out

    def utility(self, theta: ArrayLike) -> float:
        """Test utility of one parameter vector."""
        values = cast(NDArray[np.float64], self.utilities(np.asarray(theta, dtype=float).reshape(1, -1)))  # 2-D in
        return float(values[0])

    def utility_gradient(self, theta: ArrayLike) -> NDArray[np.float64]:
        r"""Gradient of the smooth test utility at ``theta``, shape (n_params,).

        ``"neg_log_loss"``: :math:`-\frac1T\sum_t r_t \otimes \tilde x_t`.
        ``"accuracy"``: gradient of the expected accuracy
        :math:`\frac1T\sum_t p_{y_t}(x_t)`, i.e.
        :math:`\frac1T\sum_t p_{y_t}(e_{y_t} - p_t) \otimes \tilde x_t`
        (binary: :math:`\frac1T\sum_t y_t\,\sigma\sigma\,\tilde x_t`).
        """
        params = np.asarray(theta, dtype=float)
        Z = self._scores(params, self.Xt_test)
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
    def newton_steps(self, theta: ArrayLike, base: ArrayLike | None, points: ArrayLike, *,
                     direction: Literal["add", "remove"] = "add",
                     approximation: Literal["newton", "influence"] = "newton",
                     H_inv: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
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
