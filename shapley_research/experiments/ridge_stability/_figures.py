"""The figures: Fig. 5(a) (variance of the values vs lambda) and Theorem 5 with the stability constants."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._data import CONVENTIONS
from ._measure import u_shape_statistics
from ._tables import THEOREM5_CONVENTION, _convention_rows

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    import pandas as pd


#: Figure labels of the conventions, in the paper's symbols (the claims keep :data:`LABELS`).
FIGURE_LABELS = {"fixed_alpha": r"fixed $\alpha = N\lambda$, intercept (main)",
                 "per_coalition": r"$\alpha_S = |S|\,\lambda$ per coalition, intercept",
                 "no_intercept": r"$\alpha = N\lambda$, no intercept (fully penalised)"}
#: Colour and marker per convention, the same in both figures.
STYLES = {"fixed_alpha": ("tab:blue", "-", "o"), "per_coalition": ("tab:orange", "--", "s"),
          "no_intercept": ("tab:purple", "-", "^")}
LAMBDA_AXIS = r"$\lambda$ (ridge penalty of the paper's objective; scikit-learn $\alpha = N\lambda$)"


def _shade_fit_region(ax, lams, fits, label=None):
    lams = np.asarray(lams)
    fits = np.asarray(fits, dtype=bool)
    if not fits.any():
        return
    k = int(np.flatnonzero(fits).max())
    right = np.sqrt(lams[k] * lams[k + 1]) if k + 1 < len(lams) else lams[k]
    ax.axvspan(lams[0], right, color="tab:green", alpha=0.12, lw=0, label=label)


def _interval_label(u_shape: dict | None, convention: str, factor: float) -> str:
    """The U-shape claim's bootstrap interval for a legend entry ("" without one)."""
    if u_shape is None or not isinstance(u_shape.get(convention), dict):
        return ""
    entry = u_shape[convention]
    return (f"\nends / minimum {entry['point']:.3g}, {u_shape.get('level', 0.95):.0%} bootstrap interval "
            f"[{entry['low']:.3g}, {entry['high']:.3g}] (U shape: >= {factor:g})")


def plot_variance(table: pd.DataFrame, factor: float = 2.0, u_shape: dict | None = None) -> Figure:
    """Figure 5(a): variance of the values vs lambda, and the full model's errors (two regimes shaded).

    Drawn from :func:`grid_table`'s columns only (``ridge_variance.csv`` redraws it), and, with
    ``u_shape`` (``metrics["u_shape_bootstrap"]`` of :func:`evaluate_claims`), the U-shape claims'
    bootstrap interval of min(end / minimum) in the legend entry of each convention's minimum, and
    a dotted line at ``factor`` times the main convention's minimum (the ends must reach it).
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(7.5, 10.0), sharex=True,
                             gridspec_kw={"height_ratios": [1.25, 1.0, 0.9]})
    main_lams, main = _convention_rows(table, "fixed_alpha")
    fits = main["fits_well"].to_numpy()
    for ax, conventions, corner in ((axes[0], ("fixed_alpha", "per_coalition"), "upper right"),
                                    (axes[1], ("no_intercept",), "lower left")):  # corners the curves leave free
        _shade_fit_region(ax, main_lams, fits, label="full model fits the training data\n"
                          "(training MSE within the tolerance of least squares')")
        shown = []
        for convention in conventions:
            if convention not in set(table["convention"]):
                continue
            lams, sub = _convention_rows(table, convention)
            color, ls, marker = STYLES[convention]
            v = sub["variance"].to_numpy()
            positive = np.where(v > 0, v, np.nan)  # a debiased estimate can fall below 0 where noise dominates
            shown.append(positive)
            ax.plot(lams, positive, ls=ls, marker=marker, ms=4, color=color, label=FIGURE_LABELS[convention])
            lo, hi = sub["variance_lo"].to_numpy(), sub["variance_hi"].to_numpy()
            if np.isfinite(lo).all():
                ax.fill_between(lams, np.where(lo > 0, lo, 1e-300), hi, color=color, alpha=0.2, lw=0)
            shape = u_shape_statistics(lams, v, factor)
            if shape["interior"] and shape["min_variance"] > 0:
                ax.plot(shape["lambda_argmin"], shape["min_variance"], marker="*", ms=14, color=color, ls="none",
                        mec="k", label=rf"minimum at $\lambda$ = {shape['lambda_argmin']:.3g}"
                        + _interval_label(u_shape, convention, factor))
                if u_shape is not None and convention == "fixed_alpha":
                    ax.axhline(factor * shape["min_variance"], color=color, lw=0.8, ls=":",
                               label=f"{factor:g}x the main convention's minimum")
        ax.set_yscale("log")
        if shown and np.isfinite(np.concatenate(shown)).any():  # limits from the estimates; bands may run past them
            ax.set_ylim(np.nanmin(np.concatenate(shown)) / 4, np.nanmax(np.concatenate(shown)) * 4)
        ax.set_ylabel(r"variance of the values $\mathrm{Var}(s)$")
        ax.legend(loc=corner, fontsize=8)
    axes[0].set_title("Ridge on diabetes: spread of data values vs regularisation\n"
                      "(debiased permutation estimate, band: 95% bootstrap interval)")
    axes[1].set_title("Sensitivity: the paper's objective as written (no intercept)", fontsize=10)
    ax = axes[2]
    _shade_fit_region(ax, main_lams, fits)
    ax.plot(main_lams, main["test_mse"], "-o", ms=4, color="tab:red", label="test MSE, model fitted on all N points")
    ax.plot(main_lams, main["train_mse"], "--s", ms=4, color="tab:gray", label="training MSE")
    ax.axhline(main["ols_train_mse"].iloc[0], color="k", lw=0.8, ls=":", label="training MSE of least squares")
    ax.set_ylabel("MSE (standardised target)")
    ax.set_xscale("log")
    ax.set_xlabel(LAMBDA_AXIS)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def _theorem5_series(axes, table, main_lams, main) -> None:
    """The conventions' error and spread (panels 1-2) with the bound, epsilon and Lemma 2's certificates."""
    for convention in CONVENTIONS:
        if convention not in set(table["convention"]):
            continue
        lams, sub = _convention_rows(table, convention)
        err = sub["uniform_error_debiased"].to_numpy()
        color, ls, marker = STYLES[convention]
        tag = "Theorem 5 applies" if convention == THEOREM5_CONVENTION else "outside Theorem 5"
        label = FIGURE_LABELS[convention].removesuffix(")") + f"; {tag})"
        style = {"ls": ls, "marker": marker, "ms": 4, "color": color, "label": label}
        axes[0].plot(lams, np.where(err > 0, err, np.nan), **style)
        axes[1].plot(lams, sub["value_range"], **style)
    axes[0].plot(main_lams, main["error_bound"], "k--", lw=1.2,
                 label=r"Theorem 5's bound $\sqrt{N}\,\frac{N-1}{N}\,B$ (valid without intercept)")
    eps = float(main["epsilon"].iloc[0])
    axes[0].axhline(eps, color="tab:green", lw=1, ls=":", label=rf"$\epsilon$ = {eps:g}")
    certified = main["guarantee_holds"].to_numpy().astype(bool)
    if certified.any():
        axes[0].plot(main_lams[certified], main["error_bound"].to_numpy()[certified], "D", mfc="none",
                     color="tab:green", ms=8, ls="none",
                     label=r"Lemma 2 certifies an $(\epsilon, 0)$-approximation: $B \leq \epsilon / (2\sqrt{N})$")
    axes[1].plot(main_lams, main["pair_bound"], "k--", lw=1.2,
                 label=r"Theorem 5's bound $B = 2\,C_{stab}\,(1+\log(N-1))/(N-1)$")


def plot_theorem5(table: pd.DataFrame) -> Figure:
    """Theorem 5 and the uniform division: empirical spread vs the bound, and the stability constants.

    The bound (from the rigorous ``sigma_sup``) is valid for ``"no_intercept"`` only; the intercept
    conventions are drawn against the same formula for comparison (outside the theorem's hypotheses).
    Each panel's legend sits below it so that no entry hides a curve.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16.0, 6.6))
    main_lams, main = _convention_rows(table, "fixed_alpha")
    _theorem5_series(axes, table, main_lams, main)
    axes[0].set_title("Uniform-division error vs its Theorem 5 bound")
    axes[0].set_ylabel(r"error of the uniform division $\|s - \frac{U(D)}{N}\mathbf{1}\|_2$")
    axes[1].set_title("Spread of the values vs Theorem 5's bound")
    axes[1].set_ylabel(r"spread of the values $\max_i s_i - \min_i s_i$")
    for values, (color, marker), label in (
            (main["sigma"], ("tab:brown", "o"),
             r"$\hat\sigma$ estimated (paper): $\max_i 2|x_i^\top\theta_D - y_i|\,\|x_i\|$"),
            (main["sigma_sup"], ("tab:red", "s"),
             r"$\bar\sigma$: rigorous bound over every coalition's model, training and test points"),
            (main["c_stab"], ("tab:cyan", "D"), r"$C_{stab} = \bar\sigma^2 / (2\lambda)$"),
            (main["sigma"] ** 2 / (2 * main_lams), ("tab:gray", "v"),
             r"$N\hat\beta = \hat\sigma^2 / (2\lambda)$ (paper's stability estimate)")):
        axes[2].plot(main_lams, values, "-", marker=marker, ms=4, color=color, label=label)
    axes[2].set_title(r"Lipschitz constant $\sigma$ and stability constants" + "\n"
                      r"(intercept fitted: fixed $\alpha = N\lambda$)", fontsize=10)
    axes[2].set_ylabel(r"$\sigma$, $C_{stab}$, $N\beta$ (standardised target units)")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(LAMBDA_AXIS, fontsize=8.5)
        _shade_fit_region(ax, main_lams, main["fits_well"].to_numpy(),
                          label="full model fits the training data" if ax is axes[2] else None)
        ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    fig.suptitle(r"Theorem 5 with $C_{stab}$ from a rigorous bound on $\sigma$; its hypotheses hold for fully "
                 "penalised ridge (no intercept) only. Shaded: the full model fits the training data",
                 fontsize=10.5)
    fig.tight_layout()
    return fig
