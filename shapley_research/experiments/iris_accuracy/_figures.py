"""The figure: values per point, the estimates against the reference, and the error per method."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._verdicts import NONNEGATIVE_RANGE
from ._agreement import MAIN_METHODS, METHODS, agreement, mean_interval
from ._claims import RECOVERY_METHODS

if TYPE_CHECKING:
    from collections.abc import Sequence
    from matplotlib.figure import Figure
    import pandas as pd

IRIS_CLASSES = ("setosa", "versicolor", "virginica")


# ------------------------------------------------------------------------------------- figure

SHORT_NAMES = {
    "permutation": "(a) permutation", "gt_paper": "(b) GT Alg. 1", "gt_paper_wor": "(b*) GT Alg. 1 w/o repl.",
    "gt_improved": "(b') GT W&J + centering", "gt_paper_theorem3": "(b#) GT Alg. 1, Thm 3 count",
    "all_s_first_order": "(c) all-S", "all_s_influence_evaluated": "(c'') all-S, U evaluated",
    "all_s": "(c') all-S Newton", "largest_s": "(d) largest-S",
    "loo_exact": "(d*) exact LOO scheme",
}

_STYLE = {  # marker, colour
    "permutation": ("o", "tab:blue"), "gt_paper": ("s", "tab:orange"), "gt_paper_wor": ("P", "tab:olive"),
    "gt_improved": ("D", "tab:green"), "gt_paper_theorem3": ("*", "tab:orange"),
    "all_s": ("^", "tab:purple"), "largest_s": ("v", "tab:red"), "all_s_first_order": ("x", "tab:brown"),
    "all_s_influence_evaluated": ("1", "tab:pink"),
    "loo_exact": ("+", "tab:gray"),
}


def _scatter_panel(ax, first, keys, title):
    """Estimates of ``keys`` (repetition 0) against the reference, with the line y = x over the data's range."""
    drawn = first[first.method.isin(keys)]
    for key in keys:
        rows = drawn[drawn.method == key]
        if rows.empty:
            continue
        marker, colour = _STYLE[key]
        rho = agreement(rows.value, rows.reference_value)["spearman"]
        ax.plot(rows.reference_value, rows.value, marker, color=colour, ms=6, ls="none", alpha=0.85,
                label=f"{SHORT_NAMES[key]}: Spearman {rho:.2f}")
    lo = min(drawn.value.min(), drawn.reference_value.min())
    hi = max(drawn.value.max(), drawn.reference_value.max())
    pad = 0.05 * (hi - lo)
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "k--", lw=1, label="y = x")
    ax.set(xlabel="reference Shapley value", ylabel="estimated value", title=title)
    ax.legend(fontsize=8, loc="upper left")


def plot_comparison(values: pd.DataFrame, table: pd.DataFrame, *, error_threshold: float | None = None,
                    baseline_error: float | None = None, methods: Sequence[str] = MAIN_METHODS, title: str = "",
                    level: float = 0.95) -> Figure:
    """Four panels: values per point, (a)-(c) against the reference, largest-S against it, error per method.

    Parameters
    ----------
    values : DataFrame
        :func:`values_table` output; repetition 0 of each method is drawn.
    table : DataFrame
        :func:`agreement_table` output (all repetitions, for the error panel).
    error_threshold : float, optional
        Drawn as a dashed line in the error panel.
    baseline_error : float, optional
        The uniform split's error (:func:`uniform_split_error`), drawn dotted.
    level : float
        Confidence level of the error bars (t-interval of the mean error).
    methods : sequence of str
        Methods of the values panel (the scatter panels split them into
        :data:`RECOVERY_METHODS` and the rest, plus the exact-LOO scheme).
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(14, 9.5))
    (ax_values, ax_close), (ax_largest, ax_error) = axes
    first = values[values.repetition == 0]
    reference = first[first.method == "reference"].sort_values("reference_rank")
    x = reference.reference_rank.to_numpy()
    exact = not np.nan_to_num(reference.stderr.to_numpy()).any()
    ax_values.plot(x, reference.value, "k-", lw=2, label="reference (exact)" if exact else "reference", zorder=5)
    n_methods = len(methods)
    for j, key in enumerate(methods):
        rows = first[first.method == key].sort_values("reference_rank")
        marker, colour = _STYLE[key]
        shift = (j - (n_methods - 1) / 2) * 0.09
        ax_values.plot(rows.reference_rank + shift, rows.value, marker, color=colour, ms=5, ls="none",
                       label=METHODS[key], alpha=0.85)
    ax_values.set(xlabel="training point (id, class), sorted by reference value", ylabel="Shapley value",
                  title="Values of every point (repetition 0)")
    ax_values.set_xticks(x)
    initials = {code: name[:3] for code, name in enumerate(IRIS_CLASSES)}
    ax_values.set_xticklabels([f"{p}\n{initials.get(int(c), c)}" for p, c in zip(reference.point, reference.label)],
                              fontsize=7)
    ax_values.axhline(0, color="k", lw=0.5)
    close = [k for k in methods if k in RECOVERY_METHODS]
    others = [k for k in methods if k not in RECOVERY_METHODS] + ["loo_exact"]
    _scatter_panel(ax_close, first, close,
                   "(a)-(c) and the group-testing refinements against the reference (repetition 0)")
    _scatter_panel(ax_largest, first, others, "Largest-S scheme against the reference")
    present = set(table.method)
    order = [m for m in methods if m in present] + [m for m in METHODS if m not in methods and m in present]
    rng = np.random.default_rng(0)  # horizontal jitter of the dots only
    for i, key in enumerate(order):
        errors = table.loc[table.method == key, "rel_l2_error"].to_numpy()
        marker, colour = _STYLE[key]
        mean, low, high = mean_interval(errors, level, bounds=NONNEGATIVE_RANGE)
        ax_error.bar(i, mean, color=colour, alpha=0.6)
        ax_error.plot(i + rng.uniform(-0.25, 0.25, errors.size), errors, marker, color="k", ms=2, alpha=0.3, ls="none")
        if errors.size > 1:
            ax_error.errorbar(i, mean, yerr=[[mean - low], [high - mean]], color="k", capsize=6, lw=1.5)
    ax_error.set_yscale("log")
    ax_error.set_xticks(range(len(order)))
    ax_error.set_xticklabels([SHORT_NAMES[k] for k in order], rotation=30, ha="right")
    for line, style, label in ((error_threshold, "--", "claim threshold"), (baseline_error, ":", "uniform split")):
        if line is not None:
            ax_error.axhline(line, color="k", ls=style, lw=1, label=f"{label} {line:.3g}")
    if error_threshold is not None or baseline_error is not None:
        ax_error.legend(fontsize=8, loc="upper left")
    ax_error.set(ylabel=r"relative $\ell_2$ error $\|v - s\|/\|s\|$",
                 title=f"Error against the reference (bars: mean, {level:.0%} CI; dots: repetitions)")
    handles, labels = ax_values.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(handles), 3), fontsize=9, frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig
