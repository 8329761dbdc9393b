"""The figure: detection AUROC per method, MLP beside logistic regression, and their paired difference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._claims import DIFFERENCE_MARGIN, RANDOM_AUROC
from ._measure import LABELS, METHODS, MODEL_LABELS, MODELS, paired_differences, summarise_detection

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLORS = {"mlp": "tab:orange", "logistic": "tab:blue"}


def _bars(ax, x, means, lows, highs, **kwargs) -> None:
    means, lows, highs = (np.asarray(a, dtype=float) for a in (means, lows, highs))
    err = np.vstack([means - lows, highs - means])
    ax.bar(x, np.nan_to_num(means), yerr=np.nan_to_num(err), capsize=3, **kwargs)
    for i in np.flatnonzero(np.isnan(means)):
        ax.text(x[i], 0.02, "failed", rotation=90, ha="center", va="bottom", fontsize=7)


def plot_detection(detection: Sequence[dict[str, Any]]) -> Figure:
    """Per data set: mean AUROC per method for each model, 95% t intervals, random's 0.5 dashed; and the
    paired difference MLP - logistic with its interval and the claim's margin.
    """
    import matplotlib.pyplot as plt

    summary = {(s["dataset"], s["model"], s["method"]): s for s in summarise_detection(detection)}
    differences = {(d["dataset"], d["method"]): d for d in paired_differences(detection)}
    datasets = list(dict.fromkeys(r["dataset"] for r in detection))
    present = set(r["method"] for r in detection)
    methods = [m for m in METHODS if m in present]
    models = [m for m in MODELS if m in set(r["model"] for r in detection)]
    fig, axes = plt.subplots(len(datasets), 2, figsize=(11.5, 4.3 * len(datasets)), squeeze=False,
                             gridspec_kw={"width_ratios": [1.6, 1]})
    x = np.arange(len(methods))
    width = 0.8 / max(1, len(models))
    names = [LABELS.get(m, m) for m in methods]
    for row, dataset in enumerate(datasets):
        ax = axes[row, 0]
        for k, model in enumerate(models):
            rows = [summary.get((dataset, model, m), {}) for m in methods]
            _bars(ax, x + (k - (len(models) - 1) / 2) * width, [r.get("auroc_mean", np.nan) for r in rows],
                  [r.get("auroc_low", np.nan) for r in rows], [r.get("auroc_high", np.nan) for r in rows],
                  width=width, color=COLORS[model], label=MODEL_LABELS[model])
        ax.axhline(RANDOM_AUROC, color="black", ls="--", lw=1, label="random values (0.5)")
        ax.set(xticks=x, ylim=(0, 1.22), ylabel="detection AUROC (mean, 95% t interval)",
               title=f"{dataset}: detecting flipped labels (lowest value flagged)")
        ax.set_xticklabels(names, rotation=20, ha="right")
        ax.legend(loc="upper center", ncol=3, fontsize=8)  # above the bars (AUROC <= 1), clear of them
        ax = axes[row, 1]
        rows = [differences.get((dataset, m), {}) for m in methods]
        _bars(ax, x, [r.get("difference_mean", np.nan) for r in rows], [r.get("difference_low", np.nan) for r in rows],
              [r.get("difference_high", np.nan) for r in rows], width=0.6, color="tab:gray")
        ax.axhline(0.0, color="black", lw=0.8)
        ax.axhline(-DIFFERENCE_MARGIN, color="tab:red", ls=":", lw=1.2,
                   label=f"claim's margin (-{DIFFERENCE_MARGIN:g})")
        ax.set(xticks=x, ylabel="AUROC(MLP) - AUROC(logistic), paired by seed", title=f"{dataset}: MLP - logistic")
        ax.set_xticklabels(names, rotation=20, ha="right")
        ax.set_ylim(min(ax.get_ylim()[0], -2.2 * DIFFERENCE_MARGIN), ax.get_ylim()[1])  # room below the margin
        ax.legend(loc="lower left", fontsize=8)
    fig.suptitle("Mislabel detection with an MLP utility beside logistic regression (same data, splits, flips)")
    fig.tight_layout()
    return fig
