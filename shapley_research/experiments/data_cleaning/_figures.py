"""Figures: detection per method (bars), detection against evaluations, removal and addition curves."""

from __future__ import annotations

import numpy as np

from ._measure import summarise
from ._methods import BUDGETED, LABELS, METHODS, RANDOM

CURVE_TITLES = {"remove_lowest": "removing the lowest-valued points", "remove_highest":
                "removing the highest-valued points", "add_highest": "adding points from the highest value"}


def _order(methods) -> list[str]:
    present = list(dict.fromkeys(methods))
    return [m for m in METHODS if m in present] + [m for m in present if m not in METHODS]


def _colors(methods) -> dict:
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab20")
    return {m: ("black" if m == RANDOM else cmap(i % 20)) for i, m in enumerate(_order(methods))}


def plot_detection(detection):
    """Mean detection AUROC and F1 per method and data set at the common budget, with 95% intervals.

    Random values are drawn as a dashed line; a method that failed has no bar.
    """
    import matplotlib.pyplot as plt

    main = detection[detection["main"]]
    summary = summarise(main, ["dataset", "method"], ["auroc", "f1"])
    datasets = list(dict.fromkeys(main["dataset"]))
    methods = [m for m in _order(main["method"]) if m != RANDOM]
    fig, axes = plt.subplots(2, len(datasets), figsize=(5.6 * len(datasets), 7.5), squeeze=False, sharey="row")
    width = 0.8
    for col, dataset in enumerate(datasets):
        rows = summary[summary["dataset"] == dataset].set_index("method")
        for r, (metric, label) in enumerate((("auroc", "detection AUROC"), ("f1", "F1, lowest k flagged"))):
            ax = axes[r, col]
            means = np.array([rows[f"{metric}_mean"].get(m, np.nan) for m in methods])
            err = np.array([[means[i] - rows[f"{metric}_low"].get(m, np.nan),
                             rows[f"{metric}_high"].get(m, np.nan) - means[i]] for i, m in enumerate(methods)]).T
            x = np.arange(len(methods))
            ax.bar(x, np.nan_to_num(means), width, yerr=np.nan_to_num(err), capsize=2, color="tab:blue", alpha=0.8)
            for i in np.flatnonzero(np.isnan(means)):
                ax.text(x[i], 0.02, "failed", rotation=90, ha="center", va="bottom", fontsize=7)
            if RANDOM in rows.index:
                ax.axhline(rows.loc[RANDOM, f"{metric}_mean"], color="black", ls="--", lw=1, label="random values")
            ax.set_xticks(x)
            ax.set_xticklabels([LABELS.get(m, m) for m in methods], rotation=60, ha="right", fontsize=8)
            ax.set_ylim(0, 1.05)
            ax.set_ylabel(label)
            ax.set_title(f"{dataset}: {label}")
            ax.legend(loc="lower right", fontsize=8)
    fig.suptitle("Detecting flipped labels by lowest value (mean over seeds, 95% interval)")
    fig.tight_layout()
    return fig


def plot_detection_vs_evaluations(detection):
    """Mean detection AUROC against the utility evaluations (fits) spent, one line per budgeted method.

    Methods of fixed cost are drawn as horizontal lines (their cost in the legend).
    """
    import matplotlib.pyplot as plt

    ok = detection[detection["error"].isna()]
    summary = summarise(ok, ["dataset", "method", "budget"], ["auroc", "n_evaluations"])
    datasets = list(dict.fromkeys(detection["dataset"]))
    colors = _colors(detection["method"])
    fig, axes = plt.subplots(1, len(datasets), figsize=(6.2 * len(datasets), 4.6), squeeze=False, sharey=True)
    for ax, dataset in zip(axes[0], datasets):
        rows = summary[summary["dataset"] == dataset]
        for method in _order(rows["method"]):
            line = rows[rows["method"] == method].sort_values("budget")
            label = LABELS.get(method, method)
            if method in BUDGETED:
                ax.errorbar(line["n_evaluations_mean"], line["auroc_mean"],
                            yerr=[line["auroc_mean"] - line["auroc_low"], line["auroc_high"] - line["auroc_mean"]],
                            marker="o", ms=4, capsize=2, color=colors[method], label=label)
            else:
                ax.axhline(line["auroc_mean"].iloc[-1], color=colors[method], ls="--" if method == RANDOM else ":",
                           lw=1.2, label=f"{label} ({line['n_evaluations_mean'].iloc[-1]:.0f} evals)")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.05)  # an AUROC; intervals from few seeds can reach past it
        ax.set_xlabel("utility evaluations (model fits for Data-OOB, all-S influence)")
        ax.set_title(dataset)
    axes[0, 0].set_ylabel("detection AUROC (mean, 95% interval)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, fontsize=8, frameon=False)
    fig.suptitle("Detection of flipped labels against evaluations spent")
    fig.tight_layout()
    return fig


def plot_curves(curves):
    """Test accuracy after removing the lowest / highest-valued points and after adding from the highest.

    One row per data set, one column per curve; mean over seeds, random values in black.
    """
    import matplotlib.pyplot as plt

    summary = summarise(curves, ["dataset", "method", "curve", "fraction"], ["accuracy"])
    datasets = list(dict.fromkeys(curves["dataset"]))
    kinds = [k for k in CURVE_TITLES if k in set(curves["curve"])]
    colors = _colors(curves["method"])
    fig, axes = plt.subplots(len(datasets), len(kinds), figsize=(5.0 * len(kinds), 3.9 * len(datasets)),
                             squeeze=False)
    for r, dataset in enumerate(datasets):
        for c, kind in enumerate(kinds):
            ax = axes[r, c]
            rows = summary[(summary["dataset"] == dataset) & (summary["curve"] == kind)]
            for method in _order(rows["method"]):
                line = rows[rows["method"] == method].sort_values("fraction")
                ax.plot(line["fraction"], line["accuracy_mean"], marker=".", color=colors[method],
                        lw=2.0 if method == RANDOM else 1.2, ls="--" if method == RANDOM else "-",
                        label=LABELS.get(method, method))
            ax.set_xlabel("share of training points " + ("kept" if kind.startswith("add") else "removed"))
            ax.set_ylabel("test accuracy (mean over seeds)")
            ax.set_title(f"{dataset}: {CURVE_TITLES[kind]}", fontsize=10)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=5, fontsize=8, frameon=False)
    fig.suptitle("Point removal and addition by value")
    fig.tight_layout()
    return fig
