"""The figure: mean values of benign and adversarial points, and their gap, against the test set's adversarial ratio."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._data import ATTACK_LABELS, ATTACKS
from ._replication import ATTACK_MATCH, GAP_CHANGE, KINDS, SHIFT_RATIO

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


# --------------------------------------------------------------------------------------------
# Figure
# --------------------------------------------------------------------------------------------

def plot_mean_values(table: pd.DataFrame, scale: float = 1e3) -> Figure:
    """Figure 6 (a, b) (fig:adv) and its gap version: values vs the test set's adversarial ratio.

    Top row, the paper's figure (train benign + FGSM, train benign + CW):
    mean value of adversarial and benign points (solid and dashed), tested
    against FGSM and CW test sets (blue and red). Bottom row: the gap,
    adversarial minus benign (what the claims are decided on). Bands: one
    standard error.
    """
    import matplotlib.pyplot as plt

    colors = {"fgsm": "tab:blue", "cw": "tab:red"}
    styles = {"adversarial": ("-", "o"), "benign": ("--", "s"), "gap": ("-", "^")}
    fig, axes = plt.subplots(2, len(ATTACKS), figsize=(11, 7.6), sharex=True, sharey="row", squeeze=False)
    for column, (letter, train_attack) in enumerate(zip("ab", ATTACKS)):
        panel = table[table["train_attack"] == train_attack]
        for row, groups in enumerate((("adversarial", "benign"), ("gap",))):
            ax = axes[row, column]
            for group in groups:
                for test_attack in ATTACKS:
                    rows = panel[(panel["group"] == group) & (panel["test_attack"] == test_attack)].sort_values("ratio")
                    x = rows["ratio"].to_numpy()
                    y, e = scale * rows["mean_value"].to_numpy(), scale * rows["stderr"].to_numpy()
                    line, marker = styles[group]
                    label = (f"{group}, tested vs {ATTACK_LABELS[test_attack]}" if group != "gap"
                             else f"adversarial - benign, tested vs {ATTACK_LABELS[test_attack]}")
                    ax.plot(x, y, linestyle=line, marker=marker, markersize=4, color=colors[test_attack], label=label)
                    ax.fill_between(x, y - e, y + e, color=colors[test_attack], alpha=0.15, linewidth=0)
            ax.axhline(0.0, color="0.5", linewidth=0.8)
            if row == 0:
                ax.set_title(f"({letter}) trained on benign + {ATTACK_LABELS[train_attack]}")
            else:
                ax.set_xlabel("fraction of adversarial images in the test set")
    exponent = int(round(np.log10(scale)))
    unit = rf" ($\times 10^{{{-exponent}}}$)" if exponent else ""
    axes[0, 0].set_ylabel(f"mean Shapley value per training point{unit}")
    axes[1, 0].set_ylabel(f"gap: adversarial - benign{unit}")
    handles, labels = [], []
    for ax in axes[:, 0]:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    fig.suptitle("Value of benign and adversarial MNIST training examples (utility: negative test log-loss of "
                 "logistic regression; bands: 1 standard error)", fontsize=11)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
    return fig


def plot_replications(table: pd.DataFrame, z_threshold: float = 2.0, scale: float = 1e3) -> Figure:
    """The replication checks: the claims' statistics over data draws (left) and P2's z over CW's confidence (right).

    Left: per statistic (the gap's change from test ratio 0 to 1 per attack
    case, the gap's excess on the same-attack test set per panel), one dot per
    data draw (the main run's circled) and the mean with its 95% t-interval;
    the claims need the intervals above 0. Right: the second claim's z per
    panel at every CW confidence of the main draw, against ``z_threshold``.
    """
    import matplotlib.pyplot as plt

    from .._verdicts import mean_interval

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1.5, 1]})
    draws = table[table["kind"].isin(KINDS[:2]) & table["statistic"].isin((GAP_CHANGE, ATTACK_MATCH))]
    labels = []
    for x, ((statistic, train, test), rows) in enumerate(draws.groupby(["statistic", "train", "test"], sort=False)):
        values, main = scale * rows["value"].to_numpy(), (rows["kind"] == KINDS[0]).to_numpy()
        color = "tab:purple" if statistic == GAP_CHANGE else "tab:green"
        left.scatter(np.full(values.size, x) + 0.12, values, s=14, color=color, alpha=0.7)
        left.scatter([x + 0.12] * int(main.sum()), values[main], s=60, facecolors="none", edgecolors="k")
        if values.size >= 2:
            mean, low, high = mean_interval(values)
            left.errorbar([x - 0.12], [mean], yerr=[[mean - low], [high - mean]], fmt="D", color=color, capsize=4)
        what = "change" if statistic == GAP_CHANGE else "same - other"
        labels.append(f"{what}\ntrain {ATTACK_LABELS[train]}" + (f"\ntest {ATTACK_LABELS[test]}" if test else ""))
    left.axhline(0.0, color="0.5", linewidth=0.8)
    left.set_xticks(range(len(labels)), labels, fontsize=8)
    exponent = int(round(np.log10(scale)))
    left.set_ylabel("gap statistic" + (rf" ($\times 10^{{{-exponent}}}$)" if exponent else ""))
    left.set_title(f"over {draws['seed'].nunique()} data draws (circled: the main run; diamond: mean, 95% t-interval)",
                   fontsize=10)
    sweep = table[table["kind"].isin((KINDS[0], KINDS[2])) & (table["statistic"] == ATTACK_MATCH)]
    for train, marker in zip(ATTACKS, "os"):
        rows = sweep[sweep["train"] == train].sort_values("cw_confidence")
        right.plot(rows["cw_confidence"], rows["z"], marker=marker, label=f"trained on benign + {ATTACK_LABELS[train]}")
    shifts = table[table["kind"].isin((KINDS[0], KINDS[2])) & (table["statistic"] == SHIFT_RATIO)]
    shifts = shifts.sort_values("cw_confidence")
    right.set_xticks(shifts["cw_confidence"], [f"{c:g}\n{r:.2f}" for c, r in zip(shifts["cw_confidence"],
                                                                                  shifts["value"])])
    right.axhline(z_threshold, color="0.3", linestyle="--", linewidth=0.9, label=f"z = {z_threshold:g}")
    right.axhline(0.0, color="0.5", linewidth=0.8)
    main_confidence = table[table["kind"] == KINDS[0]]["cw_confidence"]
    if len(main_confidence):
        right.axvline(float(main_confidence.iloc[0]), color="0.7", linewidth=0.8, linestyle=":")
    right.set_xlabel("CW confidence (logit margin), dotted: the main run's;\nbelow: CW's median shift / FGSM's")
    right.set_ylabel("z of gap(same attack) - gap(other attack)")
    right.set_title("second claim at every CW strength (main draw)", fontsize=10)
    right.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
