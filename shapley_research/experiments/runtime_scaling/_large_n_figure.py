"""Large-N panel: the figure of panels (d)-(f) (:func:`plot_measured_scaling`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ._large_n_games import SCALING_GAMES
from ._large_n_measure import SCALING_METHODS

if TYPE_CHECKING:
    from collections.abc import Sequence
    from matplotlib.figure import Figure

LABELS = {"permutation": "permutation sampling", "permutation_antithetic": "permutation, antithetic",
          "group_testing_paper": "group testing (Alg. 1)",
          "group_testing_improved": "group testing, Wang & Jia + this package's centering",
          "group_testing_wang_jia": "group testing, Wang & Jia as published",
          "compressive": "compressive (Alg. 2)", "svarm": "stratified SVARM"}
# one colour and one marker per method, none shared
STYLE = {"permutation": ("tab:blue", "o"), "permutation_antithetic": ("tab:cyan", "D"),
         "group_testing_paper": ("tab:orange", "s"), "group_testing_improved": ("tab:red", "P"),
         "group_testing_wang_jia": ("tab:purple", "v"), "compressive": ("tab:brown", "X"),
         "svarm": ("tab:green", "^")}
_GAME_NAMES = {"knn": "KNN utility (MNIST features)", "unanimity": "sum of N unanimity games"}


# --------------------------------------------------------------------------------------------
# Figure
# --------------------------------------------------------------------------------------------

def _guides(ax, n0, y0, ns):
    """Grey slope guides through ``(n0, y0)``: the shapes of the two theorems' counts."""
    x = np.geomspace(min(ns), max(ns), 20)
    for shape, label, style in ((lambda n: n ** 2 * np.log(n), r"$N^2 \log N$ (Thm. 2)", "--"),
                                (lambda n: n * np.log(n) ** 2, r"$N (\log N)^2$ (Thm. 3)", ":")):
        ax.plot(x, y0 * shape(x) / shape(n0), style, color="0.55", lw=1.2, label=label, zorder=0)


def _game_panel(ax, rows, game: str, letter: str, small: float, large: float, exponents: dict, basis: dict):
    """Evaluations to target against N on one game: one colour and marker per method."""
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
            extrapolated = basis.get(method, {}).get(game) == "extrapolated"
            label = (LABELS[method] + (f" (slope {slope:.2f}{', extrapolated' if extrapolated else ''})"
                                       if slope is not None else "") if target == small else None)
            if hit:
                ax.plot(*zip(*hit), line, color=color, marker=marker, ms=6, lw=1.5 if line == "-" else 1.0,
                        alpha=1 if line == "-" else 0.45, label=label)
                label = None
            if miss and target == small:
                ax.plot(*zip(*miss), ":", color=color, marker=marker, ms=8, markerfacecolor="none",
                        markeredgecolor=color, lw=1.0, label=label)
    base = [r for r in rows if r["method"] == "permutation" and r["target_relative_error"] == small
            and r["evaluations"] is not None]
    if base:
        _guides(ax, base[0]["n_players"], base[0]["evaluations"], ns)
    ax.set(xscale="log", yscale="log", xlabel="number of data points N (players)",
           ylabel="utility evaluations to the target (count, median over seeds)")
    ax.set_title(f"({letter}) {_GAME_NAMES.get(game, game)}:\nevaluations until relative l2 error <= {small:g}",
                 fontsize=11)
    ax.legend(fontsize=8.5, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1, frameon=False,
              title=f"solid: error {small:g}" + (f"; dashed, faint: {large:g}" if large != small else "")
                    + "; hollow on dotted: not reached within the cap,\ndrawn at the extrapolated count "
                      "B (e / target)^2", title_fontsize=8.5)


def plot_measured_scaling(records: Sequence[dict[str, Any]], learner_view: pd.DataFrame, theory: pd.DataFrame, *,
                          targets: Sequence[float], exponents: dict[str, Any],
                          basis: dict[str, Any] | None = None) -> Figure:
    """Evaluations to target against N per game, and the paper learner's time: bound beside behaviour.

    Filled markers: the median reached the target (solid line: the smaller
    target, dashed: the larger); hollow markers on a dotted line: not reached
    within the cap, drawn at the extrapolated count. The last panel repeats
    panel (b)'s theorem counts times measured cost (lines) beside the counts
    at the smaller target times the same cost (filled: measured, hollow:
    extrapolated; large markers KNN, small unanimity). Legends sit below
    their panels so that no text overlaps.
    """
    import matplotlib.pyplot as plt

    small, large = min(targets), max(targets)
    games = [g for g in SCALING_GAMES if any(r["game"] == g for r in records)]
    fig, axes = plt.subplots(1, len(games) + 1, figsize=(7.2 * (len(games) + 1), 10.5), layout="constrained")
    for ax, game, letter in zip(axes, games, "de"):
        _game_panel(ax, [r for r in records if r["game"] == game], game, letter, small, large, exponents,
                    basis or {})
    ax = axes[-1]
    for method in ("permutation", "group_testing_paper", "group_testing_improved", "group_testing_wang_jia"):
        color, marker = STYLE[method]
        part = theory[theory["method"] == method].sort_values("n")
        if len(part):
            bound = {"group_testing_paper": "group testing: Theorem 3 (Alg. 1)",
                     "group_testing_improved": "group testing: Wang & Jia's improved bound"}.get(method, LABELS[method])
            ax.plot(part["n"], part["seconds"], "-", color=color, lw=1.4, label=f"{bound}: theorem count")
        for game, size in (("knn", 9), ("unanimity", 5)):
            # a DataFrame, or the empty list when nothing was measured
            pts: Any = learner_view[(learner_view["method"] == method) & (learner_view["game"] == game)
                               & (learner_view["target_relative_error"] == small)] if len(learner_view) else []
            for kind, fill in (("measured", color), ("extrapolated", "none")):
                part = pts[pts["basis"] == kind] if len(pts) else pts
                if len(part):
                    ax.plot(part["n_players"], part["cpu_seconds"], linestyle="none", marker=marker, ms=size,
                            markerfacecolor=fill, markeredgecolor=color, label=f"{LABELS[method]}: {game}, {kind}")
    ax.set(xscale="log", yscale="log", xlabel="number of data points N",
           ylabel="CPU time of the paper's learner (seconds, one core)")
    ax.set_title(f"(f) theorem counts (lines, as panel b) beside measured\nevaluations to error {small:g} "
                 "(markers), both x one evaluation's cost", fontsize=11)
    ax.legend(fontsize=8.5, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1, frameon=False,
              title="markers: large KNN, small unanimity; filled measured, hollow extrapolated",
              title_fontsize=8.5)
    return fig
