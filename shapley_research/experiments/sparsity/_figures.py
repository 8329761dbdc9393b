"""Figures: the value distribution with its sparsity curve, and the error curves with permutations per target."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._measure import BASELINE
from ._statistics import smallest_sparse_k, sparsity_curve

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike
    import pandas as pd


def _label(method: str, m: int) -> str:
    return "baseline (permutation sampling)" if method == BASELINE else f"compressive, M = {int(m)}"



def plot_value_distribution(values: ArrayLike, level: float = 0.5, paper_k_fraction: float = 0.367,
                            nulls: dict[str, np.ndarray] | None = None, bins: int = 60) -> Figure:
    """Figure: histogram of the values (paper's Figure 2) and ``sigma_K/sum`` against dense nulls.

    ``nulls`` (name -> draws, :func:`dense_nulls`) adds each null's mean curve and 5-95% band.
    """
    import matplotlib.pyplot as plt

    s = np.asarray(values, dtype=float)
    n = s.size
    k = smallest_sparse_k(s, level)
    curve = sparsity_curve(s)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11.0, 4.0))
    ax.hist(1e3 * s, bins=bins, color="tab:blue", alpha=0.85)
    ax.axvline(1e3 * s.mean(), color="k", ls="--", lw=1, label=f"mean = sum / N = {1e3 * s.mean():.2f}e-3")
    ax.axvline(0.0, color="grey", lw=0.8)
    ax.set(xlabel=r"Shapley value ($\times 10^{-3}$ test accuracy)", ylabel="training points",
           title=f"Values of N = {n} MNIST points (utility: test accuracy)")
    ax.text(0.03, 0.95, rf"$\sigma_{{{k}}}(s)\ /\ \Sigma_i\, s_i \leq {level}$" + f"\nK/N = {k / n:.3f} "
            f"(paper: {paper_k_fraction})", transform=ax.transAxes, ha="left", va="top",
            bbox={"boxstyle": "round", "fc": "white", "alpha": 0.8})
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.8))
    fractions = np.arange(n + 1) / n
    bx.plot(fractions, curve, color="tab:blue", zorder=3, label="these values")
    for (name, draws), colour in zip((nulls or {}).items(), ("tab:green", "tab:purple")):
        curves = np.array([sparsity_curve(x) for x in draws])
        bx.plot(fractions, curves.mean(axis=0), color=colour, lw=1, label=f"dense null: {name}, same mean and sd")
        bx.fill_between(fractions, *np.quantile(curves, [0.05, 0.95], axis=0), color=colour, alpha=0.25)
    bx.plot(fractions, 1 - fractions, color="grey", ls=":", label="equal values")
    bx.axhline(level, color="k", lw=0.8, ls="--")
    bx.plot([k / n], [level], "o", color="tab:blue", label=f"K = {k}")
    bx.plot([paper_k_fraction], [level], "s", color="tab:red", label=f"paper: K = {round(paper_k_fraction * 1000)} "
            "of 1,000")
    bx.set(xlabel="K / N (largest-magnitude values kept)", ylabel=r"$\sigma_K(s)\ /\ \Sigma_i\, s_i$",
           title="Best K-term approximation error (bands: 5-95% of null draws)",
           ylim=(0, max(1.05, float(curve[0]) * 1.02)))
    bx.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_error_curves(summary: pd.DataFrame, tables_by_m: dict[int, pd.DataFrame], uniform_error: float,
                      reference_floor: float) -> Figure:
    """Figure: relative l2 error vs permutations (paper's Figure 4) and permutations needed per target error.

    ``tables_by_m`` maps ``M`` to its :func:`target_table`; the targets are drawn on the error curves, and
    the errors above the uniform split's (worse than the zero-cost estimate) are shaded. Each series has
    its own colour and marker; the legends sit below the panels so that they hide no curve.
    """
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11.5, 6.4))
    keys = summary[["method", "n_measurements"]].drop_duplicates().sort_values(
        ["method", "n_measurements"], ascending=[True, False])
    styles = {(BASELINE, 0): ("tab:blue", "o")}
    palette = iter([("tab:orange", "s"), ("tab:green", "^"), ("tab:red", "v"), ("tab:purple", "D")])
    for _, key in keys.iterrows():
        part = summary[(summary["method"] == key["method"]) & (summary["n_measurements"] == key["n_measurements"])]
        part = part.sort_values("n_permutations")
        style = (key["method"], int(key["n_measurements"]) if key["method"] != BASELINE else 0)
        colour, marker = styles.get(style) or styles.setdefault(style, next(palette))
        ax.plot(part["n_permutations"], part["mean"], "-", marker=marker, color=colour, ms=5,
                label=_label(key["method"], key["n_measurements"]))
        ax.fill_between(part["n_permutations"], part["min"], part["max"], color=colour, alpha=0.2)
    top = 1.5 * float(summary["max"].max())
    ax.axhspan(uniform_error, top, color="grey", alpha=0.1, lw=0,
               label="above the uniform split's error (worse than the zero-cost estimate)")
    ax.axhline(uniform_error, color="grey", ls=":", label=r"uniform split $U(D)/N$ (zero cost, T = 0)")
    ax.axhline(reference_floor, color="k", ls="--", lw=0.8, label="reference's own relative standard error")
    targets = next(iter(tables_by_m.values()))
    for j, e in enumerate(targets["target_error"]):
        ax.axhline(e, color="tab:red", lw=0.6, alpha=0.5,
                   label="target errors f x the uniform split's" if j == 0 else None)
    ax.set(xscale="log", yscale="log", xlabel="permutations T (N utility evaluations each)",
           ylabel=r"relative error $\|\hat s - s_{ref}\|_2 / \|s_{ref}\|_2$", ylim=(None, top),
           title="Approximation error (mean, band: min-max over seeds)")
    bx.plot(targets["target_error"], targets["baseline_permutations"], "-", marker="o", color="tab:blue", ms=5,
            label="baseline (permutation sampling)")
    for m, table in sorted(tables_by_m.items(), reverse=True):  # the left panel's order: largest M first
        colour, marker = styles.get(("compressive", int(m)), ("tab:orange", "s"))
        bx.plot(table["target_error"], table["compressive_permutations"], "-", marker=marker, color=colour, ms=6,
                label=f"compressive, M = {m} ({int(table['compressive_reaches'].sum())} of {len(table)} targets "
                      "reached)")
    bx.axvline(uniform_error, color="grey", ls=":", label="uniform split's error (0 permutations)")
    bx.set(xscale="log", yscale="log", xlabel="target relative error (below the uniform split's)",
           ylabel="permutations needed (read off the mean curve)", title="Permutations to reach each target")
    _plain_log_ticks(ax, sorted(summary["n_permutations"].unique()))
    _plain_log_ticks(bx, targets["target_error"], "%.3g")
    bx.invert_xaxis()
    for panel in (ax, bx):
        panel.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.13), frameon=False)
    fig.tight_layout()
    return fig


def _plain_log_ticks(ax, grid, fmt: str = "%d") -> None:
    """Ticks at ``grid`` on the log x axis and plain numbers on both log axes."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    ax.set_xticks(list(grid))
    ax.set_xticklabels([fmt % t for t in grid])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())
