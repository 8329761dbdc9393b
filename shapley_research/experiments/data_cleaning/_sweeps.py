"""The samples the claims decide on, paired per (data set, repetition), at one budget or at every budget of the sweep.

A *sweep* is ``{budget: {label: interval_verdict}}``: for each budget of the
sweep, the interval entries of one claim (a data set, or a method on a data
set). Every claim is decided on one budget's entries and reports the verdict
at the other budgets (:func:`sweep_note`), each budget's family corrected
alike (:func:`~shapley_research.experiments._verdicts.family_verdicts`).

Methods whose cost the budget does not set (random values, exact
KNN-Shapley, leave-one-out, largest-S influence) ran once; at every budget
they are paired as they ran (:func:`ran_at`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._verdicts import (DIFFERENCE_RANGE, NONNEGATIVE_RANGE, VERDICT_WORDS, combine, family_verdicts,
                         interval_verdict)
from ._methods import BUDGETED, RANDOM, SEMIVALUES

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    import pandas as pd

__all__ = ["ran_at", "paired_samples", "paired_difference", "claim_budget", "main_budget", "budget_sweep",
           "above_random_sweep", "wall_time_ratios", "wall_time_sweep", "removal_samples", "removal_gain",
           "removal_sweep", "sweep_note"]

Sweep = dict  # {budget: {label: interval_verdict entry}}


def ran_at(table: pd.DataFrame, budget: int | None = None) -> pd.DataFrame:
    """Rows that ran: at the common budget (``main``) if ``budget`` is None, else at ``budget``.

    At a ``budget``, methods whose cost the budget does not set (not in
    :data:`~._methods.BUDGETED`) are kept as they ran, once.
    """
    ok = table[table["error"].isna()] if "error" in table else table
    if budget is None:
        return ok[ok["main"]]
    return ok[(ok["budget"] == budget) | ~ok["method"].isin(BUDGETED)]


def paired_samples(detection: pd.DataFrame, method: str, baseline: str, column: str = "auroc",
                   budget: int | None = None) -> dict[str, np.ndarray]:
    """Per data set, the paired differences ``column(method) - column(baseline)`` over repetitions (an array).

    Only repetitions where both ran are paired; a data set where either never ran maps to an empty array.
    """
    out = {}
    for dataset in dict.fromkeys(detection["dataset"]):
        group = ran_at(detection[detection["dataset"] == dataset], budget)
        wide = group.pivot_table(index="repetition", columns="method", values=column, aggfunc="first")
        if method not in wide or baseline not in wide:
            out[dataset] = np.array([])
            continue
        out[dataset] = (wide[method] - wide[baseline]).dropna().to_numpy(dtype=float)
    return out


def paired_difference(detection: pd.DataFrame, method: str, baseline: str, column: str = "auroc",
                      budget: int | None = None) -> dict[str, float]:
    """Per data set, the mean paired difference of :func:`paired_samples` (NaN where nothing was paired)."""
    return {d: float(x.mean()) if x.size else float("nan")
            for d, x in paired_samples(detection, method, baseline, column, budget).items()}


def _budgets_of(table: pd.DataFrame, method: str) -> set[int]:
    """The budgets ``method`` ran at; every budget of the table for a method the budget does not set."""
    ran = table[table["error"].isna()] if "error" in table else table
    budgets = ran["budget"] if method not in BUDGETED else ran.loc[ran["method"] == method, "budget"]
    return set(budgets.dropna().astype(int)) if (ran["method"] == method).any() else set()


def claim_budget(detection: pd.DataFrame, methods: Iterable[str]) -> int | None:
    """The largest budget at which every one of ``methods`` ran (None if there is none)."""
    common: set[int] | None = None
    for method in methods:
        budgets = _budgets_of(detection, method)
        common = budgets if common is None else common & budgets
    return max(common) if common else None


def main_budget(table: pd.DataFrame) -> int | None:
    """The common budget: that of the ``main`` rows (None if the table has none)."""
    budgets = table.loc[table["main"], "budget"].dropna() if "budget" in table else []
    return int(max(budgets)) if len(budgets) else None


def budget_sweep(detection: pd.DataFrame, method: str, baseline: str, threshold: float,
                 side: str = "above") -> Sweep:
    """Per budget both ran at: per data set, the :func:`interval_verdict` of the paired AUROC difference."""
    budgets = sorted(_budgets_of(detection, method) & _budgets_of(detection, baseline))
    return {b: {d: interval_verdict(x, threshold, side, bounds=DIFFERENCE_RANGE)
                for d, x in paired_samples(detection, method, baseline, budget=b).items()} for b in budgets}


def above_random_sweep(detection: pd.DataFrame, margin: float) -> Sweep:
    """Per budget of the table: every method that ran there (not random values) minus random values, per data set."""
    sweep = {}
    for budget in sorted(set(detection["budget"].dropna().astype(int))):
        methods = [m for m in dict.fromkeys(ran_at(detection, budget)["method"]) if m != RANDOM]
        sweep[budget] = {f"{m} on {d}": interval_verdict(x, margin, bounds=DIFFERENCE_RANGE)
                         for m in methods for d, x in paired_samples(detection, m, RANDOM, budget=budget).items()}
    return sweep


def wall_time_ratios(detection: pd.DataFrame, semivalues: Sequence[str] = SEMIVALUES, budget: int | None = None,
                     ) -> dict[str, np.ndarray]:
    """Per data set, per repetition: Data-OOB's wall time over the fastest semivalue's at ``budget``."""
    out = {}
    for dataset in dict.fromkeys(detection["dataset"]):
        group = ran_at(detection[detection["dataset"] == dataset], budget)
        wide = group.pivot_table(index="repetition", columns="method", values="wall_time_s", aggfunc="first")
        ran = [m for m in semivalues if m in wide]
        out[dataset] = ((wide["data_oob"] / wide[ran].min(axis=1)).dropna().to_numpy(dtype=float)
                        if "data_oob" in wide and ran else np.array([]))
    return out


def wall_time_sweep(detection: pd.DataFrame, semivalues: Sequence[str], ratio: float) -> Sweep:
    """Per budget Data-OOB and a semivalue ran at: per data set, the wall-time ratio against ``ratio`` (below)."""
    semivalue_budgets = set().union(*(_budgets_of(detection, m) for m in semivalues)) if semivalues else set()
    budgets = sorted(_budgets_of(detection, "data_oob") & semivalue_budgets)
    return {b: {d: interval_verdict(x, ratio, side="below", bounds=NONNEGATIVE_RANGE)
                for d, x in wall_time_ratios(detection, semivalues, b).items()} for b in budgets}


def _with_budget(curves: pd.DataFrame) -> pd.DataFrame:
    """``curves`` with ``budget`` and ``main`` (a table without them: every row at the common budget, NaN)."""
    if "budget" in curves and "main" in curves:
        return curves
    return curves.assign(budget=np.nan, main=True)


def removal_samples(curves: pd.DataFrame, method: str, fraction: float,
                    budget: int | None = None) -> dict[str, np.ndarray]:
    """Per data set, the paired accuracy after removing ``method``'s lowest-valued ``fraction`` minus random's.

    ``method``'s ranking at ``budget`` (default the common budget); random values' as they ran (once).
    """
    curves = _with_budget(curves)
    rows = curves[(curves["curve"] == "remove_lowest") & np.isclose(curves["fraction"], fraction)]
    mine = rows[rows["main"]] if budget is None else rows[rows["budget"] == budget]
    rows = [mine[mine["method"] == method], rows[(rows["method"] == RANDOM) & rows["main"]]]
    out = {}
    for dataset in dict.fromkeys(curves["dataset"]):
        first, second = (r[r["dataset"] == dataset].groupby("repetition")["accuracy"].first() for r in rows)
        out[dataset] = (first - second).dropna().to_numpy(dtype=float) if len(first) and len(second) else np.array([])
    return out


def removal_gain(curves: pd.DataFrame, method: str, fraction: float) -> dict[str, float]:
    """Per data set, the mean of :func:`removal_samples` at the common budget (NaN where there is no curve)."""
    return {d: float(x.mean()) if x.size else float("nan")
            for d, x in removal_samples(curves, method, fraction).items()}


def removal_sweep(curves: pd.DataFrame, method: str, fraction: float) -> Sweep:
    """Per budget ``method``'s curves exist at: per data set, the removal gain over random values (> 0, strict).

    A table without budgets gives one entry, keyed ``None`` (the common budget).
    """
    curves = _with_budget(curves)
    budgets = sorted(set(curves.loc[curves["method"] == method, "budget"].dropna().astype(int)))
    keys: list[Any] = budgets or [None]
    return {b: {d: interval_verdict(x, 0.0, strict=True, bounds=DIFFERENCE_RANGE)
                for d, x in removal_samples(curves, method, fraction, b).items()} for b in keys}


def sweep_note(sweep: Sweep, worst: Any = min, level: float = 0.95) -> str:
    """``Across budgets: 750 holds (worst mean +0.038), 1500 inconclusive (...)``: the corrected verdict per budget."""
    parts = []
    for budget, entries in sweep.items():
        corrected = family_verdicts(entries, level)
        verdict = combine(e["verdict"] for e in corrected.values())
        means = [e["mean"] for e in corrected.values() if e["n"]]
        shown = f"{worst(means):+.3f}" if means else "nan"
        parts.append(f"{budget} {VERDICT_WORDS[verdict]} (worst mean {shown})")
    return "Across budgets (evaluations; Holm over each budget's intervals): " + "; ".join(parts) + "." \
        if parts else ""
