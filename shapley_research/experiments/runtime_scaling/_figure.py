"""The figure of panels (a)-(c): measured costs, required time, measured time to target."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._theory import runtime_ratio
from ._time_to_target import METHODS

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    import pandas as pd

METHOD_LABELS = {
    "permutation": "permutation sampling (baseline)",
    "group_testing_paper": "group testing (paper, Alg. 1 / Thm. 3)",
    "group_testing_improved": "group testing, Wang & Jia + this package's centering (count: Wang & Jia's bound)",
    "all_s_influence": "all-S influence (stratified)",
    "largest_s_influence": "largest-S influence",
}
_STYLE = {
    "permutation": dict(color="black", marker="o"),
    "group_testing_paper": dict(color="tab:blue", marker="s"),
    "group_testing_improved": dict(color="tab:cyan", marker="D"),
    "all_s_influence": dict(color="tab:green", marker="^"),
    "largest_s_influence": dict(color="tab:red", marker="v"),
}
#: panel (a): cost kind -> (label, colour, marker)
_COST_STYLE = {"fit:sgd": ("training + test loss: SGD, 150 epochs (paper's learner)", "tab:purple", "o"),
               "fit:lbfgs": ("training + test loss: sklearn LogisticRegression (lbfgs)", "tab:orange", "s"),
               "influence:largest_s_influence": ("largest-S influence work on N points", "tab:red", "v"),
               "influence:all_s_influence_per_fit": ("all-S influence work per fit", "tab:green", "^")}


# --------------------------------------------------------------------------------------------
# Figure
# --------------------------------------------------------------------------------------------

def plot_runtime_scaling(costs: pd.DataFrame, theory: pd.DataFrame, measured: pd.DataFrame, *, epsilon: float,
                         delta: float, utility_range: float, target: float) -> Figure:
    """Three panels: measured costs, the paper's view (required time), the user's view (time to target).

    Parameters
    ----------
    costs : DataFrame
        :func:`cost_table` (measurements and cost models).
    theory : DataFrame
        :func:`theoretical_runtimes` (one learner's costs).
    measured : DataFrame
        :func:`summarise_time_to_target`.
    epsilon, delta, utility_range, target : float
        For the titles.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    _plot_costs(axes[0], costs)
    _plot_required_time(axes[1], theory, epsilon=epsilon, delta=delta, utility_range=utility_range)
    _plot_time_to_target(axes[2], measured, target)
    fig.tight_layout()
    return fig


def _plot_costs(ax, costs) -> None:
    """Panel (a): every measured cost, its interpolation (solid) and its linear extrapolation (dashed)."""
    for kind, (label, color, marker) in _COST_STYLE.items():
        pts = costs[(costs["kind"] == kind) & (costs["source"] == "measured")]
        if pts.empty:
            continue
        ax.plot(pts["x"], pts["cpu_seconds"], marker, color=color, label=label, ms=5)
        curve = costs[(costs["kind"] == kind) & (costs["source"] == "model")].sort_values("x")
        inside = curve[~curve["extrapolated"].astype(bool)]
        ax.plot(inside["x"], inside["cpu_seconds"], "-", color=color, lw=1)
        beyond = curve[curve["x"] >= inside["x"].max()]
        ax.plot(beyond["x"], beyond["cpu_seconds"], "--", color=color, lw=1)
    ax.set(xscale="log", yscale="log", xlabel="subset size (training) or N (influence)",
           ylabel="CPU seconds (one core)",
           title="(a) measured cost of one evaluation\n(lines: interpolation; dashed: linear extrapolation)")
    ax.legend(loc="upper left", fontsize=7.5)


def _plot_required_time(ax, theory, *, epsilon: float, delta: float, utility_range: float) -> None:
    """Panel (b), the paper's view: theorem count x measured cost, solid where the costs were measured."""
    for method in METHODS:
        part = theory[theory["method"] == method].sort_values("n")
        style = _STYLE[method]
        inside = part[~part["extrapolated"]]
        # draw the extrapolated segment from the last measured point so the curve is continuous
        outside = part[part["n"] >= (inside["n"].max() if len(inside) else 0)]
        ax.plot(inside["n"], inside["seconds"], "-", color=style["color"], marker=style["marker"], ms=3,
                label=METHOD_LABELS[method])
        ax.plot(outside["n"], outside["seconds"], "--", color=style["color"], lw=1.2)
    ax.set(xscale="log", yscale="log", xlabel="number of data points N",
           ylabel="required CPU seconds (theorem count x measured cost)",
           title=f"(b) what the paper plotted: ($\\epsilon$={epsilon:g}, $\\delta$={delta:g}, r={utility_range:.3g})\n"
                 "solid: measured costs; dashed: extrapolated costs")
    n_max = int(theory["n"].max())
    ratio = runtime_ratio(theory, "permutation", "group_testing_paper", n_max)
    low, high = ax.get_ylim()
    ax.set_ylim(low, high * (high / low) ** 0.3)  # head room for the legend
    ax.legend(loc="upper left", fontsize=7.5, title_fontsize=7.5,
              title=f"at N = {n_max:,}: permutation / group testing (Thm. 3) = {ratio:,.0f}x")


def _plot_time_to_target(ax, measured, target: float) -> None:
    """Panel (c), the user's view: median CPU time to ``target``; hollow markers where it was not reached."""
    for method in METHODS:
        part = measured[measured["method"] == method].sort_values("n")
        if part.empty:
            continue
        style = _STYLE[method]
        hit = part[part["reached"]]
        miss = part[~part["reached"]]
        if len(hit):
            ax.plot(hit["n"], hit["cpu_seconds"], "-", color=style["color"], marker=style["marker"], ms=6,
                    label=METHOD_LABELS[method])
        if len(miss):
            ax.plot(miss["n"], miss["cpu_seconds"], linestyle="none", marker=style["marker"], ms=8,
                    markerfacecolor="none", markeredgecolor=style["color"],
                    label=f"{METHOD_LABELS[method]}: not reached\n(time of its largest run; its error noted)")
            for r in miss.itertuples():
                ax.annotate(f"err {r.rel_error:.2g}", (r.n, r.cpu_seconds), textcoords="offset points",
                            xytext=(7, -3), fontsize=7, color=style["color"])
    ax.set(xscale="log", yscale="log", xlabel="number of data points N",
           ylabel=f"CPU seconds to reach relative l2 error {target:g}",
           title=f"(c) what a user sees: measured time to relative error {target:g}\n"
                 "(median over seeds; hollow: not reached; larger N not run)")
    ns = sorted(measured["n"].unique())
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=7)
