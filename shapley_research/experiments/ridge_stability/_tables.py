"""The result tables: one row per (convention, lambda), the tidy values and the bootstrap replicates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._data import CONVENTIONS, RidgeData, alpha_from_lambda
from ._stability import fits_well_mask, full_model_summary, ols_train_mse, sigma_sup_bound, stability_summary

if TYPE_CHECKING:
    import pandas as pd


# --------------------------------------------------------------------------------------------
# Tables, claims and figures
# --------------------------------------------------------------------------------------------

VARIANCE_COLUMNS = ["convention", "lambda", "alpha_full", "variance", "variance_se", "variance_lo", "variance_hi",
                    "variance_raw", "mc_noise", "u_full", "n_permutations", "train_mse", "test_mse",
                    "ols_train_mse", "fits_well"]
THEOREM5_COLUMNS = ["convention", "lambda", "theorem5_applies", "uniform_error", "uniform_error_debiased",
                    "error_bound", "value_range", "pair_bound", "sigma", "beta", "max_residual", "coef_norm",
                    "sigma_sup", "kappa", "theta_bound", "beta_sup", "c_stab", "epsilon", "guarantee_threshold",
                    "guarantee_holds"]
#: The convention that meets Theorem 5's hypotheses (fully penalised ridge; see the package docstring).
THEOREM5_CONVENTION = "no_intercept"


def grid_table(rows: list[dict[str, Any]], data: RidgeData, epsilon: float, fit_tolerance: float) -> pd.DataFrame:
    r"""One row per (convention, lambda): the variance statistics, the full model and Theorem 5's numbers.

    ``sigma`` and ``beta`` are the paper's estimates (:func:`full_model_summary`,
    :math:`\hat\sigma^2/(2\lambda N)`); ``sigma_sup`` (:func:`sigma_sup_bound`) gives ``beta_sup``,
    ``c_stab``, the bounds and Lemma 2's certificate, valid where ``theorem5_applies``
    (the ``"no_intercept"`` rows). Returns a pandas DataFrame holding the union of
    :data:`VARIANCE_COLUMNS` and :data:`THEOREM5_COLUMNS`.
    """
    import pandas as pd

    lams = sorted({row["lam"] for row in rows})
    full = {lam: full_model_summary(data, lam) for lam in lams}
    sup = {lam: sigma_sup_bound(data, lam) for lam in lams}
    stab = {lam: stability_summary(sup[lam]["sigma_sup"], lam, data.n_players, epsilon) for lam in lams}
    ols = ols_train_mse(data)
    records = []
    for row in rows:
        lam = row["lam"]
        record = {"convention": row["convention"], "lambda": lam, "alpha_full": alpha_from_lambda(lam, data.n_players),
                  "epsilon": float(epsilon), "ols_train_mse": ols}
        record.update({k: row[k] for k in ("variance", "variance_se", "variance_lo", "variance_hi", "variance_raw",
                                           "mc_noise", "u_full", "n_permutations", "uniform_error",
                                           "uniform_error_debiased", "value_range")})
        record.update({k: full[lam][k] for k in ("train_mse", "test_mse", "sigma", "max_residual", "coef_norm")})
        record.update(sup[lam], theorem5_applies=row["convention"] == THEOREM5_CONVENTION,
                      beta=full[lam]["sigma"] ** 2 / (2.0 * lam * data.n_players))
        record.update({("beta_sup" if k == "beta" else k): v for k, v in stab[lam].items()})
        records.append(record)
    table = pd.DataFrame.from_records(records)
    table["fits_well"] = fits_well_mask(table["train_mse"], ols, fit_tolerance)
    return table.sort_values(["convention", "lambda"], key=lambda c: c.map(CONVENTIONS.index)
                             if c.name == "convention" else c, kind="stable").reset_index(drop=True)


def values_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Tidy values: one row per (convention, lambda, training point) with value and standard error.

    Returns
    -------
    pandas.DataFrame
        Columns ``convention, lambda, point, value, stderr``.
    """
    import pandas as pd

    frames = [pd.DataFrame({"convention": row["convention"], "lambda": row["lam"],
                            "point": np.arange(len(row["values"])), "value": row["values"],
                            "stderr": row["stderr"]}) for row in rows]
    return pd.concat(frames, ignore_index=True)


def bootstrap_matrix(rows: list[dict], convention: str, key: str = "bootstrap") -> tuple[np.ndarray, np.ndarray]:
    """``(lambdas, replicates)`` of one convention: replicates (B, n_lambdas) of the variance.

    ``key``: ``"bootstrap"`` (the standard error's resamples, the first ``n_bootstrap`` of the run's
    draw, recentred) or ``"resampled_variance"`` (the U-shape claims', the first
    ``n_bootstrap_u_shape`` of the same draw, not aligned); rows without it give ``B = 0``.
    """
    mine = sorted((row for row in rows if row["convention"] == convention), key=lambda r: r["lam"])
    lams = np.array([row["lam"] for row in mine])
    if not mine or not len(mine[0].get(key, ())):
        return lams, np.zeros((0, len(mine)))
    return lams, np.stack([row[key] for row in mine], axis=1)


def _convention_rows(table, convention):
    sub = table[table["convention"] == convention].sort_values("lambda")
    return sub["lambda"].to_numpy(), sub
