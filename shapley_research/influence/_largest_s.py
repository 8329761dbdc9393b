"""Largest-S influence: each point's marginal contribution to the whole set, normalised (Theorem 6).

:func:`largest_s_influence` fits L2 logistic regression once and
approximates every point's removal by an influence update;
:func:`largest_s_influence_general` does the same for any smooth model from
its per-sample gradients, Hessian and test-utility gradient; both rescale by
the constant :math:`C_U` of the paper's Theorem 6 (:func:`_normalise`).
"""

from __future__ import annotations

import time
import warnings

from typing import Any, Callable, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import linalg

from .._validation import check_bool, check_choice, check_float, check_real_array
from ..result import ValuationResult
from ._marginals import UTILITY_CHANGES, _marginals, warn_out_of_range
from ._objective import APPROXIMATIONS, LogisticObjective


def _normalise(marginals: NDArray[np.float64], full_utility: float,
               empty_utility: float) -> tuple[NDArray[np.float64], float]:
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
                      "U(I) - U(empty), so normalising reverses the ranking of the points; normalize=False keeps "
                      "the marginal contributions' ranking (the values then do not sum to U(I) - U(empty)).",
                      UserWarning, stacklevel=3)
    return c_u * marginals, c_u


def largest_s_influence_general(per_sample_gradients: ArrayLike,
                                hessian: ArrayLike | Callable[[NDArray[np.float64]], ArrayLike],
                                test_utility_gradient: ArrayLike, *, full_utility: float | None = None,
                                empty_utility: float | None = None, normalize: bool = True) -> ValuationResult:
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
    s_test: NDArray[np.floating[Any]]  # H^-1 grad U, shape (p,)
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
    info: dict[str, Any] = {"marginal_estimates": marginals, "hessian_solver": solver}
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


def largest_s_influence(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, *,
                        C: float = 1.0, fit_intercept: bool = True,
                        utility: Literal["neg_log_loss", "accuracy"] = "neg_log_loss",
                        approximation: Literal["influence", "newton"] = "influence",
                        utility_change: Literal["linear", "evaluate"] = "linear", normalize: bool = True,
                        empty_utility: float | None = None) -> ValuationResult:
    r"""Largest-S influence values of L2 logistic regression (paper Section 4.5).

    Fits scikit-learn's ``LogisticRegression(C=C)`` objective once on all
    ``N`` points (:class:`LogisticObjective`, Newton's method), approximates
    for every point ``i`` the parameters without it
    (:mod:`shapley_research.influence._largest_s`,
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
        ``full_utility``, ``empty_utility``, ``n_out_of_range`` (raw
        marginals beyond any change of the utility, with a ``RuntimeWarning``:
        the influence steps broke down).

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
    warn_out_of_range("largest_s_influence", obj, meta)
    info: dict[str, Any] = {"marginal_estimates": marginals, "parameter_changes": steps, "theta": theta,
            "full_utility": u_full, "empty_utility": u_empty, "approximation": approximation,
            "utility_change": utility_change, "utility": obj.utility_name, "C": obj.C,
            "n_influence_updates": meta["n_influence_updates"], "n_out_of_range": meta["n_out_of_range"],
            "n_fits": 1}
    if normalize:
        values, c_u = _normalise(marginals, u_full, u_empty)
    else:
        values, c_u = marginals.copy(), float("nan")
    info["normalization_constant"] = c_u
    return ValuationResult(values=values, n_evaluations=1, method="largest_s_influence",
                           wall_time=time.perf_counter() - start, info=info)
