"""Agreement with the reference: the tables, the pairwise distances, the summary and the t-intervals."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import ValuationResult
from .._verdicts import (CORRELATION_RANGE, NONNEGATIVE_RANGE, decide, mean_interval,  # noqa: F401
                         rank_correlation_test, repetitions_to_decide)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from numpy.typing import ArrayLike
    import pandas as pd
    from ._methods import MethodRun

#: Display label of every method, in the order of the figure and the tables.
METHODS = {
    "permutation": "(a) permutation sampling",
    "gt_paper": "(b) group testing, Alg. 1 as published (independent tests)",
    "gt_paper_wor": "(b*) group testing, Alg. 1 + this package's tests without replacement",
    "gt_improved": "(b') group testing, Wang & Jia + this package's centering (tests without replacement)",
    "gt_paper_theorem3": "(b#) group testing, Alg. 1 as published, at Theorem 3's count of tests",
    "all_s_first_order": "(c) all-S influence, the paper's influence function",
    "all_s_influence_evaluated": "(c'') all-S influence, the paper's influence function, the utility evaluated",
    "all_s": "(c') all-S influence, one Newton step (this package's update)",
    "largest_s": "(d) largest-S influence",
    "loo_exact": "(d*) largest-S scheme, exact LOO",
}
#: Methods drawn in the figure (the paper's four, and this package's group-testing and all-S refinements).
MAIN_METHODS = ("permutation", "gt_paper", "gt_paper_wor", "gt_improved", "all_s_first_order", "all_s", "largest_s")
#: Methods with random draws (run once per repetition); the others are deterministic.
RANDOM_METHODS = ("permutation", "gt_paper", "gt_paper_wor", "gt_improved", "all_s", "all_s_first_order",
                  "all_s_influence_evaluated")


# ------------------------------------------------------------------------------------- agreement

def agreement(values: ArrayLike, reference: ArrayLike) -> dict[str, float]:
    """Agreement of ``values`` with ``reference``.

    Returns
    -------
    dict
        ``spearman`` and its one-sided p-value ``spearman_p`` (H1: positive
        rank correlation; :func:`~.._verdicts.rank_correlation_test`, the
        coefficient rounded as every experiment's), ``pearson``, ``l2_error`` and ``rel_l2_error``
        (:math:`\\|v - s\\|_2 / \\|s\\|_2`), ``max_abs_error``.
    """
    from scipy import stats

    values, reference = np.asarray(values, dtype=float), np.asarray(reference, dtype=float)
    if values.shape != reference.shape:
        raise ValueError(f"values {values.shape} and reference {reference.shape} differ in shape.")
    rho, p_one_sided = rank_correlation_test(values, reference, alternative="greater")
    error = values - reference
    return {"spearman": rho, "spearman_p": p_one_sided,
            "pearson": float(stats.pearsonr(values, reference).statistic),
            "l2_error": float(np.linalg.norm(error)),
            "rel_l2_error": float(np.linalg.norm(error) / np.linalg.norm(reference)),
            "max_abs_error": float(np.abs(error).max())}


def agreement_table(runs: Sequence[MethodRun], reference: ValuationResult) -> pd.DataFrame:
    """One row per run: method, repetition, agreement with the reference, cost (CPU, wall, evaluations).

    Returns
    -------
    pandas.DataFrame
        Columns ``method, label, repetition, seed``, the keys of
        :func:`agreement`, ``cpu_time_s, wall_time_s, n_evaluations, n_samples``.
    """
    import pandas as pd

    rows = []
    for run in runs:
        rows.append({"method": run.key, "label": METHODS[run.key], "repetition": run.repetition,
                     "seed": run.seed, **agreement(run.result.values, reference.values),
                     "cpu_time_s": run.cpu_time, "wall_time_s": run.result.wall_time,
                     "n_evaluations": run.n_model_fits, "n_samples": int(run.result.n_samples)})
    return pd.DataFrame(rows)


def values_table(runs: Sequence[MethodRun], reference: ValuationResult, y_train: ArrayLike) -> pd.DataFrame:
    """Tidy values behind the figure: one row per (method, repetition, point), reference included.

    Returns
    -------
    pandas.DataFrame
        Columns ``method, repetition, point, label, reference_rank, value,
        stderr, reference_value`` (``method`` is ``"reference"`` for the
        reference's own rows).
    """
    import pandas as pd

    order = np.argsort(reference.values, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    frames = []
    entries = [("reference", 0, reference)] + [(run.key, run.repetition, run.result) for run in runs]
    for key, repetition, result in entries:
        stderr = result.stderr if result.stderr is not None else np.full(result.n_players, np.nan)
        frames.append(pd.DataFrame({
            "method": key, "repetition": repetition, "point": np.arange(result.n_players),
            "label": np.asarray(y_train), "reference_rank": rank, "value": result.values, "stderr": stderr,
            "reference_value": reference.values}))
    return pd.concat(frames, ignore_index=True)


def uniform_split_error(reference: ArrayLike) -> float:
    r"""Relative l2 error of the trivial baseline :math:`v_i = (U(I) - U(\emptyset))/N` (the uniform split)."""
    reference = np.asarray(reference, dtype=float)
    return float(np.linalg.norm(reference - reference.mean()) / np.linalg.norm(reference))


def mean_estimate_error(runs: Sequence[MethodRun], reference: ValuationResult) -> dict[str, float]:
    """Relative l2 error of each method's estimate averaged over its repetitions (a bias proxy)."""
    by_key: dict[str, list] = {}
    for run in runs:
        by_key.setdefault(run.key, []).append(run.result.values)
    norm = np.linalg.norm(reference.values)
    return {key: float(np.linalg.norm(np.mean(v, axis=0) - reference.values) / norm) for key, v in by_key.items()}


def pairwise_distances(runs: Sequence[MethodRun], reference: ValuationResult, methods: Sequence[str] = MAIN_METHODS,
                       level: float = 0.95) -> pd.DataFrame:
    """Relative l2 distance :math:`\\|v_a - v_b\\|/\\|s\\|` between methods of the same repetition.

    Deterministic methods (largest-S) are paired with every repetition.

    Returns
    -------
    pandas.DataFrame
        Columns ``method_a``, ``method_b``, ``rel_distance`` (mean over
        repetitions), ``ci_low``, ``ci_high`` (its t-interval at ``level``),
        ``n_repetitions``; every unordered pair once.
    """
    import pandas as pd

    norm = np.linalg.norm(reference.values)
    by_rep: dict[int, dict[str, np.ndarray]] = {}
    fixed = {}
    for run in runs:
        if run.key not in methods:
            continue
        if run.key in RANDOM_METHODS:
            by_rep.setdefault(run.repetition, {})[run.key] = run.result.values
        else:
            fixed[run.key] = run.result.values
    if not by_rep:
        by_rep = {0: {}}
    rows = []
    for i, a in enumerate(methods):
        for b in methods[i + 1:]:
            distances = [np.linalg.norm(v[a] - v[b]) / norm
                         for v in ({**fixed, **rep} for rep in by_rep.values()) if a in v and b in v]
            if distances:
                mean, low, high = mean_interval(distances, level, bounds=NONNEGATIVE_RANGE)
                rows.append({"method_a": a, "method_b": b, "rel_distance": mean, "ci_low": low, "ci_high": high,
                             "n_repetitions": len(distances)})
    return pd.DataFrame(rows)


def summarise(table: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per method: mean over repetitions of agreement and cost, and the t-interval at ``level`` of the
    mean Spearman and mean relative error (``*_ci_low``, ``*_ci_high``; NaN with one repetition), cut to
    the statistic's range ([-1, 1] and [0, inf)).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`agreement_table`'s rows.
    level : float

    Returns
    -------
    pandas.DataFrame
        Indexed by ``method``; columns the means of ``spearman, spearman_p,
        pearson, rel_l2_error, l2_error, cpu_time_s, wall_time_s,
        n_evaluations``, then ``spearman_sd, pearson_sd, rel_l2_error_sd``,
        ``spearman_ci_low, spearman_ci_high, rel_l2_error_ci_low,
        rel_l2_error_ci_high`` and ``n_repetitions``.
    """
    columns = ["spearman", "spearman_p", "pearson", "rel_l2_error", "l2_error", "cpu_time_s", "wall_time_s",
               "n_evaluations"]
    grouped = table.groupby("method", sort=False)
    summary = grouped[columns].mean()
    for column in ("spearman", "pearson", "rel_l2_error"):
        summary[f"{column}_sd"] = grouped[column].std(ddof=1).fillna(0.0)
    for column, bounds in (("spearman", CORRELATION_RANGE), ("rel_l2_error", NONNEGATIVE_RANGE)):
        intervals = grouped[column].apply(lambda x, b=bounds: mean_interval(x, level, b))
        summary[f"{column}_ci_low"] = intervals.map(lambda t: t[1])
        summary[f"{column}_ci_high"] = intervals.map(lambda t: t[2])
    summary["n_repetitions"] = grouped.size()
    return summary
