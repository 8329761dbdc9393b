"""The figure: mean values of benign and adversarial points, and their gap, against the test set's adversarial ratio."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._data import ATTACK_LABELS, ATTACKS

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
