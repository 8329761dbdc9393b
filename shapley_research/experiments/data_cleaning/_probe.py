"""The budget probe: does the semivalues' detection AUROC still move past the sweep's largest budget?

The sweep decides the papers' claims on ``n_seeds`` repetitions up to its
largest budget. Running it further on every seed would cost several times the
whole experiment, so the probe runs the semivalues (:data:`PROBE_METHODS`) at
a few larger budgets on the first ``probe_seeds`` repetitions only: the same
splits, flips and method streams as the sweep (:func:`problem_seed`,
:func:`method_seed`), so every probe value is paired with the sweep's value
of the same (data set, repetition, method). The probe decides no paper's
claim; it says where the curves stop moving (the package's own claim
``settled_claim`` in :mod:`._claims`) and what the papers' comparisons look
like there (in their notes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_int
from .._parallel import check_n_jobs
from .._verdicts import DIFFERENCE_RANGE, describe, interval_verdict
from ._measure import EXPERIMENT_OPTIONS, detection_fields, map_problems, problem_settings, task_problem
from ._methods import SEMIVALUES, run_methods

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    import pandas as pd

__all__ = ["PROBE_METHODS", "run_budget_probe", "auroc_by_repetition", "paired_across", "rise_past_sweep",
           "probe_comparison_note", "trajectory_note", "probe_summary"]

#: The methods the probe runs: the semivalues, whose AUROC the sweep's claims compare.
PROBE_METHODS = SEMIVALUES


def _probe_rows(dataset: str, repetition: int, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The probe's methods at its budgets on one (data set, repetition): one task of the probe."""
    pseed, problem = task_problem(settings, dataset, repetition)
    return [{"dataset": dataset, "repetition": repetition, "method": row["method"], "budget": row["budget"],
             **detection_fields(row, problem["flipped"])}
            for row in run_methods(problem, settings["budgets"], pseed, settings["options"], settings["methods"],
                                   settings["budgets"][-1])]


def run_budget_probe(*, datasets: Sequence[str], n_train: int, n_test: int, flip_fraction: float,
                     probe_seeds: int, probe_budgets: Sequence[int], digit_classes: Sequence[int] = (3, 8),
                     options: dict[str, Any] | None = None, methods: Sequence[str] = PROBE_METHODS, seed: int = 0,
                     progress: Callable[..., Iterable[Any]] | None = None, n_jobs: int = 1) -> pd.DataFrame:
    """Detection by ``methods`` at ``probe_budgets`` on repetitions ``0 .. probe_seeds - 1``.

    ``n_jobs`` worker processes share the (data set, repetition) problems
    (as :func:`~._measure.run_data_cleaning`; the numbers do not depend on it).

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, repetition, method, budget): ``n_evaluations``,
        ``wall_time_s``, ``auroc``, ``f1``, ``n_nan``, ``note``, ``error``
        (the columns of :func:`~._measure.run_data_cleaning`'s ``detection``,
        without ``main``).
    """
    import pandas as pd

    probe_seeds = check_int(probe_seeds, "probe_seeds", minimum=1)
    budgets = sorted({check_int(b, "probe_budgets", minimum=1) for b in probe_budgets})
    if not budgets:
        raise ValueError("probe_budgets must name at least one budget.")
    n_jobs = check_n_jobs(n_jobs)
    settings = problem_settings(seed=seed, n_train=n_train, n_test=n_test, flip_fraction=flip_fraction,
                                digit_classes=digit_classes, options={**EXPERIMENT_OPTIONS, **(options or {})},
                                budgets=budgets, methods=tuple(methods))
    parts = map_problems(_probe_rows, settings, datasets, probe_seeds, n_jobs=n_jobs, progress=progress,
                         desc="probe: data sets x seeds")
    return pd.DataFrame([row for _, part in parts for row in part])


def auroc_by_repetition(table, method: str, budget: int) -> dict:
    """Per data set, ``method``'s AUROC at ``budget`` as a Series indexed by repetition (runs that failed left out)."""
    ran = table[table["error"].isna() & (table["method"] == method) & (table["budget"] == budget)]
    return {d: g.set_index("repetition")["auroc"] for d, g in ran.groupby("dataset", sort=False)}


def paired_across(first: dict, second: dict, datasets) -> dict:
    """Per data set, ``first - second`` over the repetitions both have (an empty array where either has none)."""
    out = {}
    for dataset in datasets:
        if dataset in first and dataset in second:
            out[dataset] = (first[dataset] - second[dataset]).dropna().to_numpy(dtype=float)
        else:
            out[dataset] = np.array([])
    return out


def _largest(table, method: str) -> int | None:
    budgets = table.loc[table["error"].isna() & (table["method"] == method), "budget"].dropna()
    return int(budgets.max()) if len(budgets) else None


def rise_past_sweep(detection: pd.DataFrame, probe: pd.DataFrame, method: str) -> tuple[int | None, int | None, dict]:
    """``(sweep budget, probe budget, {data set: AUROC(probe top) - AUROC(sweep top)})``, paired per repetition."""
    sweep_top, probe_top = _largest(detection, method), _largest(probe, method)
    datasets = list(dict.fromkeys(detection["dataset"]))
    if sweep_top is None or probe_top is None:
        return sweep_top, probe_top, {d: np.array([]) for d in datasets}
    return sweep_top, probe_top, paired_across(auroc_by_repetition(probe, method, probe_top),
                                               auroc_by_repetition(detection, method, sweep_top), datasets)


def probe_comparison_note(detection: pd.DataFrame, probe: pd.DataFrame, method: str, baseline: str,
                          threshold: float) -> str:
    """The paired comparison ``method - baseline`` at the probe's largest budget, in words (or "").

    A method the probe did not run (Data-OOB, whose cost is capped below the
    sweep's budgets) is taken from the sweep's largest budget: the same fits.
    """
    top = _largest(probe, baseline)
    if top is None:
        return ""
    source = probe if method in set(probe["method"]) else detection
    at = top if source is probe else _largest(detection, method)
    if at is None:
        return ""
    datasets = list(dict.fromkeys(detection["dataset"]))
    samples = paired_across(auroc_by_repetition(source, method, at), auroc_by_repetition(probe, baseline, top),
                            datasets)
    parts = "; ".join(describe(d, interval_verdict(x, threshold, bounds=DIFFERENCE_RANGE)) for d, x in samples.items())
    seeds = int(probe.loc[probe["method"] == baseline, "repetition"].nunique())
    return f"Past the sweep (probe, {seeds} seeds, not the verdict's data), {method} - {baseline} at {top}: {parts}."


def trajectory_note(detection: pd.DataFrame, probe: pd.DataFrame, methods: Sequence[str] = PROBE_METHODS) -> str:
    """Mean AUROC over the probe's repetitions at the sweep's largest budget and at every probe budget, in words."""
    reps = set(probe["repetition"])
    parts = []
    for method in methods:
        sweep_top = _largest(detection, method)
        for dataset in dict.fromkeys(detection["dataset"]):
            points = []
            for table, budgets in ((detection, [sweep_top] if sweep_top else []),
                                   (probe, sorted(set(probe.loc[probe["method"] == method, "budget"])))):
                for budget in budgets:
                    series = auroc_by_repetition(table, method, budget).get(dataset)
                    if series is None:
                        continue
                    on_probe_seeds = series[series.index.isin(reps)]
                    if len(on_probe_seeds):
                        points.append(f"{int(budget)} {on_probe_seeds.mean():.3f}")
            if points:
                parts.append(f"{method} on {dataset}: " + ", ".join(points))
    return ("Mean AUROC on the probe's seeds by evaluations: " + "; ".join(parts) + ".") if parts else ""


def probe_summary(probe: pd.DataFrame) -> dict[str, dict[str, dict[str, float]]]:
    """``{dataset: {method: {budget: mean AUROC}}}`` over the probe's repetitions (for ``metrics.json``)."""
    ran = probe[probe["error"].isna()]
    return {d: {m: {str(int(b)): float(a) for b, a in g.groupby("budget")["auroc"].mean().items()}
                for m, g in ran[ran["dataset"] == d].groupby("method", sort=False)}
            for d in dict.fromkeys(probe["dataset"])}
