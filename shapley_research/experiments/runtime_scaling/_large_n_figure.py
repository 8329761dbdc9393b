"""Large-N panel: the figure of panels (d)-(f) (:func:`plot_measured_scaling`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._large_n_games import SCALING_GAMES
from ._large_n_measure import SCALING_METHODS

LABELS = {"permutation": "permutation sampling", "permutation_antithetic": "permutation, antithetic",
          "group_testing_paper": "group testing (Alg. 1)", "group_testing_improved": "group testing (Wang & Jia)",
          "compressive": "compressive (Alg. 2)", "svarm": "stratified SVARM"}
STYLE = {"permutation": ("tab:blue", "o"), "permutation_antithetic": ("tab:cyan", "D"),
         "group_testing_paper": ("tab:orange", "s"), "group_testing_improved": ("tab:brown", "P"),
         "compressive": ("tab:pink", "X"), "svarm": ("tab:olive", "^")}


# --------------------------------------------------------------------------------------------
# Figure
# --------------------------------------------------------------------------------------------

def _guides(ax, n0, y0, ns):
    """Grey slope guides through ``(n0, y0)``: the shapes of the two theorems' counts."""
    x = np.geomspace(min(ns), max(ns), 20)
    for shape, label, style in ((lambda n: n ** 2 * np.log(n), r"$N^2 \log N$ (Thm. 2)", "--"),
                                (lambda n: n * np.log(n) ** 2, r"$N (\log N)^2$ (Thm. 3)", ":")):
        ax.plot(x, y0 * shape(x) / shape(n0), style, color="0.55", lw=1.2, label=label, zorder=0)


def plot_measured_scaling(records, learner_view: pd.DataFrame, theory: pd.DataFrame, *, targets, exponents: dict,
                          basis: dict | None = None):
    """Evaluations to target against N per game, and the paper learner's time: bound beside behaviour.

    Filled markers: the median reached the target (solid line: the smaller
    target, dashed: the larger); hollow markers on a dotted line: not reached
    within the cap, drawn at the extrapolated count. The last panel repeats
    panel (b)'s theorem counts times measured cost (lines) beside the counts
    at the smaller target times the same cost (filled: measured, hollow:
    extrapolated; large markers KNN, small unanimity).
    """
    import matplotlib.pyplot as plt

    small, large = min(targets), max(targets)
    games = [g for g in SCALING_GAMES if any(r["game"] == g for r in records)]
    fig, axes = plt.subplots(1, len(games) + 1, figsize=(6 * (len(games) + 1), 5.4))
    for ax, game in zip(axes, games):
        rows = [r for r in records if r["game"] == game]
        ns = sorted({r["n_players"] for r in rows})
        for method in SCALING_METHODS:
            color, marker = STYLE[method]
            for target, line in ((small, "-"), (large, "--"))[:1 if large == small else 2]:
                part = sorted((r for r in rows if r["method"] == method and r["target_relative_error"] == target),
                              key=lambda r: r["n_players"])
                hit = [(r["n_players"], r["evaluations"]) for r in part if r["evaluations"] is not None]
                miss = [(r["n_players"], r["extrapolated_evaluations"]) for r in part
                        if r["evaluations"] is None and r.get("extrapolated_evaluations") is not None]
                slope = exponents.get(method, {}).get(game)
                extrapolated = (basis or {}).get(method, {}).get(game) == "extrapolated"
                label = (f"{LABELS[method]}" + (f" (slope {slope:.2f}{', extrapolated' if extrapolated else ''})"
                                                if slope is not None else "") if target == small else None)
                if hit:
                    ax.plot(*zip(*hit), line, color=color, marker=marker, ms=5, lw=1.4 if line == "-" else 0.9,
                            alpha=1 if line == "-" else 0.5, label=label)
                    label = None
                if miss and target == small:
                    ax.plot(*zip(*miss), ":", color=color, marker=marker, ms=8, markerfacecolor="none",
                            markeredgecolor=color, lw=0.9, label=label or None)
        base = [r for r in rows if r["method"] == "permutation" and r["target_relative_error"] == small
                and r["evaluations"] is not None]
        if base:
            _guides(ax, base[0]["n_players"], base[0]["evaluations"], ns)
        ax.set(xscale="log", yscale="log", xlabel="number of players N",
               ylabel="utility evaluations to the target (median over seeds)",
               title=f"({'de'[games.index(game)]}) {game} game: evaluations to relative l2 error {small:g} (solid)"
                     + (f", {large:g} (dashed)" if large != small else "")
                     + "\nhollow, dotted: not reached within the cap, extrapolated as $B (e/target)^2$")
        ax.legend(fontsize=7, loc="upper left")
    ax = axes[-1]
    for method in ("permutation", "group_testing_paper", "group_testing_improved"):
        color, marker = STYLE[method]
        part = theory[theory["method"] == method].sort_values("n")
        if len(part):
            ax.plot(part["n"], part["seconds"], "-", color=color, lw=1.2, label=f"{LABELS[method]}: theorem count")
        for game, size in (("knn", 8), ("unanimity", 5)):
            pts = learner_view[(learner_view["method"] == method) & (learner_view["game"] == game)
                               & (learner_view["target_relative_error"] == small)] if len(learner_view) else []
            for basis, fill in (("measured", color), ("extrapolated", "none")):
                part = pts[pts["basis"] == basis] if len(pts) else pts
                if len(part):
                    ax.plot(part["n_players"], part["cpu_seconds"], linestyle="none", marker=marker, ms=size,
                            markerfacecolor=fill, markeredgecolor=color, label=f"{LABELS[method]}: {game}, {basis}")
    ax.set(xscale="log", yscale="log", xlabel="number of data points N", ylabel="CPU seconds of the paper's learner",
           title="(f) bound beside behaviour: theorem counts (lines, panel b) and measured\n"
                 f"evaluations to {small:g} (markers; large: knn, small: unanimity) times one evaluation's cost")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig
