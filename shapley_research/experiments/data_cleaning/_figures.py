"""Figures: detection per method (bars), detection against evaluations, removal and addition curves."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._measure import summarise
from ._methods import LABELS, METHODS, RANDOM

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    import pandas as pd

CURVE_TITLES = {"remove_lowest": "removing the lowest-valued points", "remove_highest":
                "removing the highest-valued points", "add_highest": "adding points from the highest value"}


def _order(methods) -> list[str]:
    present = list(dict.fromkeys(methods))
    return [m for m in METHODS if m in present] + [m for m in present if m not in METHODS]


#: Small multiples by family: each panel holds a few methods, each with its own colour and marker.
FAMILIES = {
    "Shapley value estimators": ("permutation", "permutation_antithetic", "truncated_permutation", "group_testing",
                                 "compressive", "svarm"),
    "other semivalues, leave-one-out": ("msr_banzhaf", "beta_shapley", "leave_one_out"),
    "without a game (model, KNN, gradients)": ("knn_shapley", "data_oob", "all_s_influence", "largest_s_influence"),
    "OpenDataVal's other methods": ("ame", "class_wise_shapley", "lava"),
}
#: One style per method, the same in every figure: distinct colours within a family, distinct markers overall.
STYLES = {
    "permutation": ("tab:blue", "o"), "permutation_antithetic": ("tab:orange", "s"),
    "truncated_permutation": ("tab:green", "^"), "group_testing": ("tab:red", "v"), "compressive": ("tab:purple", "D"),
    "svarm": ("tab:brown", "P"), "msr_banzhaf": ("tab:blue", "X"), "beta_shapley": ("tab:red", "*"),
    "leave_one_out": ("tab:olive", "h"), "knn_shapley": ("tab:cyan", "<"), "data_oob": ("tab:orange", ">"),
    "all_s_influence": ("tab:green", "p"), "largest_s_influence": ("tab:pink", "d"), "ame": ("tab:purple", "8"),
    "class_wise_shapley": ("tab:green", "H"), "lava": ("tab:brown", "1"), RANDOM: ("black", None),
}


def _style(method: str) -> dict:
    color, marker = STYLES.get(method, ("tab:gray", "."))
    return {"color": color, "marker": marker}


def _families(methods) -> dict:
    """``{family: methods present}``, unknown methods in a family of their own; empty families dropped."""
    present = [m for m in _order(methods) if m != RANDOM]
    out = {name: [m for m in members if m in present] for name, members in FAMILIES.items()}
    known = {m for members in FAMILIES.values() for m in members}
    out["other"] = [m for m in present if m not in known]
    return {name: members for name, members in out.items() if members}


def plot_detection(detection: pd.DataFrame) -> Figure:
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


def _draw_probe(ax, probe, dataset: str, members) -> None:
    """The budget probe's means as hollow markers on a dotted line (few seeds: no interval drawn)."""
    rows = probe[(probe["dataset"] == dataset) & probe["error"].isna()]
    means = rows.groupby(["method", "budget"], sort=True)[["auroc", "n_evaluations"]].mean().reset_index()
    for method in members:
        line = means[means["method"] == method]
        if line.empty:
            continue
        style = _style(method)
        ax.plot(line["n_evaluations"], line["auroc"], ls=":", lw=1.2, ms=6, mfc="white", **style)


def plot_detection_vs_evaluations(detection: pd.DataFrame, probe: pd.DataFrame | None = None) -> Figure:
    """Mean detection AUROC against utility evaluations spent: one panel per (family, data set).

    Budgeted methods are lines with 95% intervals; methods of fixed cost, and
    those run at one budget only, are single points at their cost; random
    values are a dashed black line in every panel. With the budget ``probe``
    (:func:`~._probe.run_budget_probe`), its means over its few seeds continue
    the semivalues' lines as hollow markers on a dotted line.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    ok = detection[detection["error"].isna()]
    summary = summarise(ok, ["dataset", "method", "budget"], ["auroc", "n_evaluations"])
    datasets = list(dict.fromkeys(detection["dataset"]))
    families = _families(ok["method"])
    fig, axes = plt.subplots(len(families), len(datasets), figsize=(5.4 * len(datasets) + 2.6, 3.4 * len(families)),
                             squeeze=False, sharey=True, sharex=True)
    for r, (family, members) in enumerate(families.items()):
        for c, dataset in enumerate(datasets):
            ax = axes[r, c]
            rows = summary[summary["dataset"] == dataset]
            for method in members:
                line = rows[rows["method"] == method].sort_values("budget")
                if line.empty:
                    continue
                x = line["n_evaluations_mean"].clip(lower=1)  # KNN-Shapley and random values cost no evaluation
                ax.errorbar(x, line["auroc_mean"], yerr=[line["auroc_mean"] - line["auroc_low"],
                                                         line["auroc_high"] - line["auroc_mean"]],
                            ms=6, capsize=2, lw=1.4, label=LABELS.get(method, method), **_style(method))
            if probe is not None:
                _draw_probe(ax, probe, dataset, members)
            random = rows[rows["method"] == RANDOM]
            if len(random):
                ax.axhline(random["auroc_mean"].iloc[0], color="black", ls="--", lw=1, label="random values")
            ax.set_xscale("log")
            ax.set_ylim(0.4, 1.02)  # AUROC; random values sit at 0.5
            ax.grid(alpha=0.3)
            ax.set_title(f"{dataset}: {family}", fontsize=10)
            if c == 0:
                ax.set_ylabel("detection AUROC\n(mean over seeds, 95% interval)")
            if r == len(families) - 1:
                ax.set_xlabel("utility evaluations (model fits for Data-OOB, all-S influence), log scale")
        handles, labels = axes[r, -1].get_legend_handles_labels()
        if probe is not None and set(members) & set(probe["method"]):
            seeds = probe["repetition"].nunique()
            handles.append(Line2D([], [], color="gray", ls=":", marker="o", mfc="white"))
            labels.append(f"past the sweep (probe, {seeds} seeds)")
        axes[r, -1].legend(handles, labels, loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8,
                           frameon=False)
    fig.suptitle("Detection of flipped labels against evaluations spent (methods that spend no utility evaluation "
                 "are drawn at 1)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    return fig


def plot_curves(curves: pd.DataFrame) -> Figure:
    """Test accuracy after removing the lowest / highest-valued points and after adding from the highest.

    At the common budget (the rows with ``main``, where ``curves`` has the
    column). One row per (data set, family), one column per curve; mean over
    seeds, random values as a dashed black line in every panel.
    """
    import matplotlib.pyplot as plt

    curves = curves[curves["main"]] if "main" in curves else curves  # the common budget
    summary = summarise(curves, ["dataset", "method", "curve", "fraction"], ["accuracy"])
    datasets = list(dict.fromkeys(curves["dataset"]))
    kinds = [k for k in CURVE_TITLES if k in set(curves["curve"])]
    families = _families(curves["method"])
    rows_of = [(d, f) for d in datasets for f in families]
    fig, axes = plt.subplots(len(rows_of), len(kinds), figsize=(4.4 * len(kinds) + 2.6, 2.9 * len(rows_of)),
                             squeeze=False)
    for r, (dataset, family) in enumerate(rows_of):
        for c, kind in enumerate(kinds):
            ax = axes[r, c]
            rows = summary[(summary["dataset"] == dataset) & (summary["curve"] == kind)]
            for method in families[family] + [RANDOM]:
                line = rows[rows["method"] == method].sort_values("fraction")
                if line.empty:
                    continue
                style = {"color": "black", "ls": "--", "lw": 1.2} if method == RANDOM else \
                    {**_style(method), "lw": 1.3, "ms": 5}
                ax.plot(line["fraction"] * 100, line["accuracy_mean"], label=LABELS.get(method, method), **style)
            ax.grid(alpha=0.3)
            ax.set_title(f"{dataset}, {family}:\n{CURVE_TITLES[kind]}", fontsize=9)
            ax.set_xlabel("training points " + ("kept" if kind.startswith("add") else "removed") + " (% of N)",
                          fontsize=9)
            if c == 0:
                ax.set_ylabel("test accuracy\n(mean over seeds)", fontsize=9)
        axes[r, -1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8, frameon=False)
    fig.suptitle("Point removal and addition by value")
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    return fig
