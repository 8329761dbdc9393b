"""The model fitted on all of D, the Lipschitz and stability constants of Theorem 5, and the fit check."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._validation import check_float, check_int
from ...estimators import stability_bound, uniform_division_guarantee
from ._data import RidgeData, alpha_from_lambda

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


# --------------------------------------------------------------------------------------------
# The full model and the stability constants
# --------------------------------------------------------------------------------------------

def full_model_summary(data: RidgeData, lam: float) -> dict:
    r"""The model fitted on all of ``D`` at the paper's ``lam`` and the paper's Lipschitz constant.

    Returns
    -------
    dict
        ``train_mse``, ``test_mse`` (standardised units), ``u_full`` (``U(D) = M - test MSE``),
        ``sigma`` = :math:`\max_i 2|x_i^\top\theta + b - y_i|\,\|x_i\|` over the training points (the
        paper's estimate of the loss's Lipschitz constant in :math:`\theta`; :math:`x_i` the
        standardised features). It is a lower bound on Theorem 5's :math:`\sigma`, a supremum over
        every coalition's model and the test points too (:func:`sigma_sup_bound`). Also
        ``max_residual`` and ``coef_norm``.
    """
    from sklearn.linear_model import Ridge

    model = Ridge(alpha=alpha_from_lambda(lam, data.n_players)).fit(data.X_train, data.y_train)
    residual = model.predict(data.X_train) - data.y_train
    test_mse = float(np.mean((model.predict(data.X_test) - data.y_test) ** 2))
    sigma = float(np.max(2.0 * np.abs(residual) * np.linalg.norm(data.X_train, axis=1)))
    return {"train_mse": float(np.mean(residual**2)), "test_mse": test_mse,
            "u_full": data.empty_test_mse - test_mse, "sigma": sigma,
            "max_residual": float(np.max(np.abs(residual))), "coef_norm": float(np.linalg.norm(model.coef_))}


def sigma_sup_bound(data: RidgeData, lam: float) -> dict:
    r"""Rigorous upper bound on Theorem 5's :math:`\sigma` for fully penalised ridge (package docstring).

    :math:`\sigma = 2\sup_{S\subseteq D}\max_z |x_z^\top\theta_S - y_z|\,\|x_z\|` (:math:`z` in train and
    test) and :math:`\|\theta_S\| \le \Theta = \|y_D\|/(2\sqrt{N\lambda})` for every coalition.

    Returns
    -------
    dict
        ``sigma_sup`` :math:`= 2\max_z(|y_z| + \|x_z\|\Theta)\|x_z\|`, ``theta_bound`` :math:`\Theta` and
        ``kappa`` :math:`= \max_z\|x_z\|` (train and test).
    """
    lam = check_float(lam, "lam", minimum=0.0, strict=True)
    norms = np.linalg.norm(np.vstack([data.X_train, data.X_test]), axis=1)
    y = np.abs(np.r_[data.y_train, data.y_test])
    theta = float(np.linalg.norm(data.y_train) / (2.0 * np.sqrt(alpha_from_lambda(lam, data.n_players))))
    return {"sigma_sup": float(2.0 * np.max((y + norms * theta) * norms)), "theta_bound": theta,
            "kappa": float(norms.max())}


def stability_summary(sigma: float, lam: float, n_players: int, epsilon: float) -> dict:
    r"""Theorem 5's quantities from a Lipschitz constant ``sigma`` (the paper's form, containing :math:`\|x\|`).

    :math:`\beta = \sigma^2/(2\lambda N)` (valid for fully penalised ridge with :math:`\sigma` the supremum of
    the package docstring, e.g. :func:`sigma_sup_bound`), :math:`C_{stab} = N\beta`, the bound
    :math:`B = 2C_{stab}(1+\log(N-1))/(N-1)` on every :math:`s_i - s_j`
    (:func:`~shapley_research.stability_bound`), the bound it implies on the uniform division's error,
    :math:`\|s - \bar s\mathbf 1\|_2 \le \sqrt N\,\frac{N-1}{N}B` (each
    :math:`|s_i - \bar s| = |\frac1N\sum_j (s_i - s_j)| \le \frac{N-1}{N}B`), and Lemma 2's
    certificate (:func:`~shapley_research.uniform_division_guarantee`): uniform division is an
    :math:`(\epsilon, 0)`-approximation when :math:`B \le \epsilon/(2\sqrt N)`.
    """
    n = check_int(n_players, "n_players", minimum=2)
    lam = check_float(lam, "lam", minimum=0.0, strict=True)
    beta = float(sigma) ** 2 / (2.0 * lam * n)
    c_stab = n * beta
    guarantee = uniform_division_guarantee(c_stab, n, epsilon)
    bound = stability_bound(c_stab, n)
    return {"beta": beta, "c_stab": c_stab, "pair_bound": bound,
            "error_bound": float(np.sqrt(n) * (n - 1) / n * bound),
            "guarantee_threshold": guarantee.threshold, "guarantee_holds": bool(guarantee.holds)}


def fits_well_mask(train_mse: ArrayLike, ols_train_mse: float, tolerance: float) -> np.ndarray:
    """Where the full model "fits the training data well": training MSE within ``tolerance`` of OLS's."""
    return np.asarray(train_mse) <= (1.0 + check_float(tolerance, "tolerance", minimum=0.0)) * ols_train_mse


def ols_train_mse(data: RidgeData) -> float:
    """Training MSE of unregularised least squares with intercept (the best possible fit)."""
    design = np.hstack([data.X_train, np.ones((data.n_players, 1))])
    theta = np.linalg.lstsq(design, data.y_train, rcond=None)[0]
    return float(np.mean((design @ theta - data.y_train) ** 2))

