"""Figures: the halves' values against the privacy level, the per-point values, and the replication over draws."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ._measure import HALVES
from ._replication import CONFIDENCE, FAMILY

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    import pandas as pd


def _finite_and_reference(levels, half):
    rows = levels[levels["half"] == half].sort_values("epsilon")
    return rows[~rows["reference"]], rows[rows["reference"]]


def _sigma_axis(ax, finite):
    """A top axis labelled with the per-pixel noise sigma at every grid epsilon."""
    top = ax.twiny()
    top.set_xscale("log")
    top.set_xlim(ax.get_xlim())
    top.set_xticks(finite["epsilon"].to_numpy())
    top.set_xticklabels([f"{s:.2g}" for s in finite["sigma"]], fontsize=8)
    top.minorticks_off()
    top.grid(False)
    top.set_xlabel(r"noise $\sigma$ per pixel (pixels in [0, 1])")
    return top


def plot_privacy_values(levels: pd.DataFrame, delta: float, clip_norm: float) -> Figure:
    """Two panels against epsilon (log): mean per-point SV of each half; exact two-player SVs and accuracies."""
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12.5, 5.2))
    colors = {"noisy": "tab:red", "clean": "tab:blue"}
    for half in HALVES:
        finite, ref = _finite_and_reference(levels, half)
        ax.errorbar(finite["epsilon"], finite["sv_mean"], yerr=finite["sv_mean_se"], marker="o", capsize=3,
                    color=colors[half], label=f"{half} half (mean per point, ±1 SE)")
        if len(ref):
            ax.axhline(ref["sv_mean"].iloc[0], color=colors[half], ls="--", lw=1,
                       label=rf"{half} half, no noise ($\epsilon=\infty$)")
        bx.plot(finite["epsilon"], finite["two_player_sv"], marker="o", color=colors[half],
                label=f"SV of the {half} half (2-player game)")
        bx.plot(finite["epsilon"], finite["accuracy_half_alone"], marker="s", ls=":", color=colors[half],
                label=f"accuracy trained on the {half} half alone")
    finite, _ = _finite_and_reference(levels, "noisy")
    bx.plot(finite["epsilon"], finite["accuracy_all"], marker="^", ls="-.", color="black",
            label="accuracy trained on both halves")
    ax.axhline(0.0, color="grey", lw=0.8)
    bx.axhline(0.0, color="grey", lw=0.8)
    for axis, title, ylabel in (
            (ax, "(a) Shapley value per training point (permutation sampling)",
             "mean Shapley value per point (test accuracy)"),
            (bx, "(b) Halves as two players (exact) and model accuracy", "Shapley value / test accuracy")):
        axis.set_xscale("log")
        axis.set_xlabel(rf"privacy level $\epsilon$ of the noisy half ($\delta$={delta:g}, clip $C$={clip_norm:g})"
                        "\nsmaller = more private, more noise")
        axis.set_ylabel(ylabel)
        axis.set_title(title, pad=30)
        _sigma_axis(axis, finite)
    for axis in (ax, bx):
        axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.27), ncol=2, frameon=False)
    fig.suptitle("Value of MNIST images released through the Gaussian mechanism (local DP) vs privacy level",
                 y=1.0)
    fig.tight_layout()
    return fig


def plot_point_values(points: pd.DataFrame) -> Figure:
    """Box plots of the per-point SVs of each half at every privacy level."""
    import matplotlib.pyplot as plt

    eps = np.sort(points["epsilon"].unique())
    sigma = points.groupby("epsilon")["sigma"].first()
    labels = [r"$\infty$" + "\n" + r"$\sigma$=0" if math.isinf(e) else f"{e:g}\n" + rf"$\sigma$={sigma[e]:.2g}"
              for e in eps]
    fig, ax = plt.subplots(figsize=(10.0, 4.2))
    width = 0.35
    for offset, half, color in ((-0.2, "clean", "tab:blue"), (0.2, "noisy", "tab:red")):
        data = [points[(points["epsilon"] == e) & (points["half"] == half)]["sv"].to_numpy() for e in eps]
        box = ax.boxplot(data, positions=np.arange(len(eps)) + offset, widths=width, patch_artist=True,
                         showfliers=True, flierprops={"markersize": 2, "alpha": 0.5},
                         medianprops={"color": "black"})
        for patch in box["boxes"]:
            patch.set_facecolor(color)
            patch.set_alpha(0.45)
        ax.plot([], [], color=color, lw=6, alpha=0.45, label=f"{half} points")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xticks(np.arange(len(eps)))
    ax.set_xticklabels(labels)
    ax.set_xlabel(r"privacy level $\epsilon$ of the noisy half, and its noise $\sigma$ per pixel ($\infty$: no noise)")
    ax.set_ylabel("Shapley value of a point (test accuracy)")
    ax.set_title("Per-point Shapley values by half and privacy level")
    ax.legend(loc="best")
    fig.tight_layout()
    return fig


def plot_replication(draws: pd.DataFrame) -> Figure:
    r"""Per data draw, the two excess drops the replication claim decides on, with their t-intervals.

    One panel per entry of the claim's family (:data:`FAMILY`): a strip of the
    draws' values (the main draw in black), their mean with its
    :data:`CONFIDENCE` Student-t interval :math:`\bar x \pm t_{n-1}\, s / \sqrt n`
    (no interval below two draws), the zero line and the claim's threshold.
    """
    import matplotlib.pyplot as plt

    from .._verdicts import mean_interval

    fig, axes = plt.subplots(1, len(FAMILY), figsize=(10.0, 4.2))
    main = draws["main"].to_numpy(dtype=bool)
    offsets = np.linspace(-0.15, 0.15, len(draws)) if len(draws) > 1 else np.zeros(1)
    for ax, (label, (column, threshold, bounds)) in zip(axes, FAMILY.items()):
        values = draws[column].to_numpy(dtype=float)
        if (~main).any():
            ax.scatter(offsets[~main], values[~main], color="tab:red", alpha=0.7, label="replication draw")
        ax.scatter(offsets[main], values[main], color="black", marker="D", label="main draw")
        for x, y, seed in zip(offsets, values, draws["seed"]):
            ax.annotate(f"{int(seed)}", (x, y), xytext=(4, 2), textcoords="offset points", fontsize=7)
        finite = values[np.isfinite(values)]
        if finite.size:
            mean, low, high = mean_interval(finite, CONFIDENCE, bounds)
            if np.isfinite(low):
                ax.errorbar([0.5], [mean], yerr=[[mean - low], [high - mean]], fmt="o", color="tab:blue", capsize=5,
                            label=f"mean, {CONFIDENCE:.0%} t-interval (n {finite.size})")
            else:
                ax.plot([0.5], [mean], "o", color="tab:blue", label="mean (one draw: no interval)")
        ax.axhline(0.0, color="grey", lw=0.8)
        if threshold != 0:
            ax.axhline(threshold, color="grey", ls="--", lw=0.8, label=f"threshold {threshold:g}")
        ax.set_xlim(-0.5, 1.0)
        ax.set_xticks([0.0, 0.5])
        ax.set_xticklabels(["data draws", "mean"])
        ax.set_title(label, fontsize=10)
        ax.set_ylabel("excess drop beyond the uniform share\n(least to most private level, test accuracy)")
        ax.legend(fontsize=8, loc="best")
    fig.suptitle("The noisy half's value beyond its uniform share, over draws of the data (labels: seeds)")
    fig.tight_layout()
    return fig
