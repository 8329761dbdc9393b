"""What the paper plotted (panel b): the evaluations the theorems require times the measured cost of one."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ._costs import CostModel, all_s_fit_weights

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from numpy.typing import ArrayLike
    import pandas as pd


# --------------------------------------------------------------------------------------------
# What the paper plotted: theorem counts x measured costs
# --------------------------------------------------------------------------------------------

def permutation_cost_per_permutation(n: int, fit_cost: Callable[[ArrayLike], np.ndarray]) -> float:
    """CPU seconds of one permutation: one training on each prefix, sizes ``1..n``."""
    return float(np.sum(fit_cost(np.arange(1, n + 1))))


def group_testing_expected_cost(n: int, fit_cost: Callable[[ArrayLike], np.ndarray], variant: str = "paper") -> float:
    r"""Expected CPU seconds of one group test: :math:`\mathbb E_{k\sim q}[\text{cost}(|S|)]`.

    ``"paper"``: :math:`q(k) \propto 1/k + 1/(n-k)`, ``k = 1..n-1``.
    ``"improved"``: the same on ``n + 1`` players (a null player); the
    coalition trained on loses the null player when drawn, with probability
    ``k / (n + 1)``, and costs nothing when it is then empty or complete
    (those two utilities are anchors, evaluated once per run).
    """
    from shapley_research.estimators import group_testing_size_distribution

    if variant not in ("paper", "improved"):
        raise ValueError(f"variant must be 'paper' or 'improved', got {variant!r}.")
    players = n if variant == "paper" else n + 1
    sizes, probabilities, _ = group_testing_size_distribution(players)
    sizes = sizes.astype(float)
    if variant == "paper":
        return float(probabilities @ fit_cost(sizes))
    with_null = sizes / players

    def trained(s):  # the empty and the full coalition are anchors, evaluated once per run
        return np.where((s >= 1) & (s <= n - 1), fit_cost(np.clip(s, 1, max(n - 1, 1))), 0.0)

    return float(probabilities @ (with_null * trained(sizes - 1) + (1 - with_null) * trained(sizes)))


def all_s_expected_fit_cost(n: int, fit_cost: Callable[[ArrayLike], np.ndarray]) -> float:
    """Mean CPU seconds of the training of one all-S base set (fit shares of :func:`all_s_fit_weights`)."""
    _, base, weight = all_s_fit_weights(n)
    return float(weight @ fit_cost(base.astype(float)))


def all_s_fit_count(n: int, epsilon: float, delta: float, utility_range: float) -> int:
    r"""Fitted coalitions all-S influence needs, under a stated assumption (no theorem covers it).

    Assumption: every player needs as many marginal contributions as the
    baseline's Hoeffding count :math:`m = \frac{2r^2N}{\epsilon^2}\log\frac{2N}{\delta}`
    (the same bound holds for the stratified mean with equal allocation
    :math:`m/N` per stratum, since both average ``m`` terms of range ``2r/m``),
    and each fitted base set gives one to every player it covers (share
    :math:`c_k`). Hence :math:`\frac mN\sum_{k=1}^{N-1} 1/c_k \approx 1.39\,m`
    fits, against :math:`N m` for the baseline. The error of the influence
    approximation itself is ignored.
    """
    from shapley_research import permutation_sample_size

    m = permutation_sample_size(epsilon, delta, n, utility_range)
    k = np.arange(1, n, dtype=float)
    inverse_coverage = n / np.maximum(n - k, k + 1)
    return int(math.ceil(m / n * inverse_coverage.sum()))


def required_evaluations(n: int, epsilon: float, delta: float, utility_range: float) -> dict:
    """Utility evaluations (model trainings) each method needs for an ``(epsilon, delta)`` approximation.

    Permutation sampling: ``N`` times the Hoeffding count of permutations
    (appendix theorem); group testing: Theorem 3 (``"paper"``) and the bound
    of Wang & Jia 2023 (``"improved"``); all-S: :func:`all_s_fit_count`;
    largest-S: one training (plus ``N`` influence computations).
    """
    from shapley_research import group_testing_sample_size, permutation_sample_size

    return {
        "permutation": n * permutation_sample_size(epsilon, delta, n, utility_range),
        "group_testing_paper": group_testing_sample_size(epsilon, delta, n, utility_range, variant="paper"),
        "group_testing_improved": group_testing_sample_size(epsilon, delta, n, utility_range, variant="improved"),
        "all_s_influence": all_s_fit_count(n, epsilon, delta, utility_range),
        "largest_s_influence": 1,
    }


def theoretical_runtimes(ns: Iterable[int], epsilon: float, delta: float, utility_range: float, fit_cost: CostModel,
                         largest_s_cost: CostModel, all_s_cost: CostModel) -> pd.DataFrame:
    """Required CPU time of each method at each ``N``: theorem counts times measured costs.

    * permutation: ``m_perm`` permutations, each one training per prefix
      size ``1..N`` (:func:`permutation_cost_per_permutation`);
    * group testing: ``T`` tests, each of expected cost under ``q``
      (:func:`group_testing_expected_cost`);
    * all-S: :func:`all_s_fit_count` fits, each a training
      (:func:`all_s_expected_fit_cost`) plus its influence work (``all_s_cost(N)``);
    * largest-S: one training on ``N`` points plus ``largest_s_cost(N)``.

    Returns
    -------
    pandas.DataFrame
        One row per (``n``, ``method``): ``evaluations``,
        ``seconds_per_evaluation`` (training and, for all-S, influence work
        per fit), ``seconds``, and ``extrapolated`` (some cost used lies
        beyond the measured range).
    """
    import pandas as pd

    rows = []
    for n in ns:
        n = int(n)
        counts = required_evaluations(n, epsilon, delta, utility_range)
        beyond_fit = n > fit_cost.max_measured
        m_perm = counts["permutation"] // n
        per_perm = permutation_cost_per_permutation(n, fit_cost)
        entries = {
            "permutation": (counts["permutation"], per_perm / n, m_perm * per_perm, beyond_fit),
            "group_testing_paper": (counts["group_testing_paper"], group_testing_expected_cost(n, fit_cost, "paper"),
                                    None, beyond_fit),
            "group_testing_improved": (counts["group_testing_improved"],
                                       group_testing_expected_cost(n, fit_cost, "improved"), None, beyond_fit),
            "all_s_influence": (counts["all_s_influence"],
                                all_s_expected_fit_cost(n, fit_cost) + float(all_s_cost(n)), None,
                                beyond_fit or n > all_s_cost.max_measured),
            "largest_s_influence": (1, float(fit_cost(n)) + float(largest_s_cost(n)), None,
                                    beyond_fit or n > largest_s_cost.max_measured),
        }
        for method, (evaluations, per_eval, seconds, extrapolated) in entries.items():
            rows.append({"n": n, "method": method, "evaluations": float(evaluations),
                         "seconds_per_evaluation": per_eval,
                         "seconds": float(evaluations * per_eval if seconds is None else seconds),
                         "extrapolated": bool(extrapolated)})
    return pd.DataFrame(rows)


def cost_models(fit_costs: pd.DataFrame, influence_costs: pd.DataFrame, n_tail: int = 3) -> dict[str, CostModel]:
    """:class:`CostModel` of every measured cost, keyed ``"fit:LEARNER"`` and ``"influence:COMPONENT"``."""
    models = {}
    for learner, group in fit_costs.groupby("learner", sort=False):
        models[f"fit:{learner}"] = CostModel.fit(group["size"], group["cpu_seconds"], n_tail=n_tail)
    for component, group in influence_costs.groupby("component", sort=False):
        models[f"influence:{component}"] = CostModel.fit(group["n"], group["cpu_seconds"], n_tail=n_tail)
    return models


def cost_table(fit_costs: pd.DataFrame, influence_costs: pd.DataFrame, models: dict[str, CostModel], x_max: float,
               points_per_decade: int = 8) -> pd.DataFrame:
    """Tidy table of panel (a): the measurements and each cost model on a log grid up to ``x_max``.

    Columns ``kind``, ``source`` (``"measured"`` or ``"model"``), ``x``,
    ``cpu_seconds``, ``extrapolated``.
    """
    import pandas as pd

    rows = [{"kind": f"fit:{r.learner}", "source": "measured", "x": float(r.size), "cpu_seconds": r.cpu_seconds,
             "extrapolated": False} for r in fit_costs.itertuples()]
    rows += [{"kind": f"influence:{r.component}", "source": "measured", "x": float(r.n), "cpu_seconds": r.cpu_seconds,
              "extrapolated": False} for r in influence_costs.itertuples()]
    for kind, model in models.items():
        lo = np.log10(model.x[0])
        grid = np.unique(np.concatenate([
            np.logspace(lo, np.log10(x_max), int(np.ceil((np.log10(x_max) - lo) * points_per_decade)) + 1),
            model.x]))
        for x in grid:
            rows.append({"kind": kind, "source": "model", "x": float(x), "cpu_seconds": float(model(x)),
                         "extrapolated": bool(x > model.max_measured)})
    return pd.DataFrame(rows)


def theory_grid(n_min: int, n_max: int, points_per_decade: int) -> list[int]:
    """Log-spaced integer ``N`` from ``n_min`` to ``n_max`` (both included)."""
    if not 2 <= n_min <= n_max:
        raise ValueError(f"need 2 <= n_min <= n_max, got {n_min} and {n_max}.")
    decades = np.log10(n_max) - np.log10(n_min)
    count = max(2, int(round(decades * points_per_decade)) + 1)
    return sorted({int(round(v)) for v in np.logspace(np.log10(n_min), np.log10(n_max), count)})


def runtime_ratio(df: pd.DataFrame, numerator: str, denominator: str, n: int | None = None) -> float:
    """``seconds(numerator) / seconds(denominator)`` at ``n`` (default: the largest ``n``) of a theory table."""
    n = int(df["n"].max()) if n is None else int(n)
    at = df[df["n"] == n].set_index("method")["seconds"]
    return float(at[numerator] / at[denominator])


def crossover_n(df: pd.DataFrame, faster: str, slower: str) -> float:
    """Smallest grid ``n`` from which ``faster`` takes less time than ``slower`` at every larger ``n`` (NaN: never)."""
    pivot = df.pivot(index="n", columns="method", values="seconds").sort_index()
    below = (pivot[faster] < pivot[slower]).to_numpy()
    if not below[-1]:
        return float("nan")
    last_bad = np.flatnonzero(~below)
    first = 0 if last_bad.size == 0 else last_bad[-1] + 1
    return float(pivot.index[first])
