"""The experiment's claims, with criteria fixed before the run (the constants below), decided on intervals.

Every claim compares methods on the *same* (data set, repetition): paired
differences over the repetitions, so the split and the flips cancel. A
comparison is decided on the Student-t 95% interval of the mean paired
difference (:func:`~shapley_research.experiments._verdicts.decide`): it holds
if the whole interval is on the claimed side of the threshold, does not hold
if the whole interval is on the other side, and is inconclusive if the
interval straddles it (the note then says about how many seeds would decide,
:func:`~shapley_research.experiments._verdicts.repetitions_to_decide`). A
claim holds if every data set (and every compared method) holds, does not
hold if any does not, and is inconclusive otherwise.

The papers' detection claims (P1-P4) are decided at the *claim budget*: the
largest budget of the sweep at which the compared methods ran (where the
semivalues' AUROC has nearly stopped moving, nearest the papers' estimators
run long); the verdict at every other budget of the sweep is in the note and
in :func:`comparison_table`, since it changes with the budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._verdicts import VERDICT_WORDS, combine, describe, interval_verdict  # noqa: F401  (re-exported)
from ._methods import RANDOM, SEMIVALUES
from ._probe import probe_comparison_note, rise_past_sweep, trajectory_note

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    import pandas as pd
    from .._common import Claim

#: Every valuation method's mean detection AUROC must exceed random values' by at least this.
ABOVE_RANDOM_MARGIN = 0.05
#: "At least as well": a mean paired AUROC deficit no larger than this counts as a tie.
DETECTION_TOLERANCE = 0.02
#: "Far lower wall time": Data-OOB's wall time at most this share of the fastest semivalue's.
WALL_TIME_RATIO = 0.5
#: The removal claim: the share of the training set removed.
REMOVAL_FRACTION = 0.10
#: The method the removal claim ranks by (the Shapley value as the package samples it by default).
REMOVAL_METHOD = "permutation"
#: The confidence level of every interval.
LEVEL = 0.95
#: "Settled": from the sweep's largest budget to the probe's, no semivalue's mean AUROC rises by more than this.
SETTLED_TOLERANCE = 0.02

BANZHAF_SECTION = "Wang & Jia (AISTATS 2023), experiments section: noisy label detection"
BETA_SECTION = "Kwon & Zou (AISTATS 2022), experiments section: noisy label detection"
OOB_SECTION = "Kwon & Zou (ICML 2023), experiments section: mislabeled data detection and elapsed time"


def _ran(detection, budget=None):
    """Rows that ran: at the common budget (``main``) if ``budget`` is None, else at ``budget``."""
    table = detection[detection["error"].isna()]
    return table[table["main"]] if budget is None else table[table["budget"] == budget]


def paired_samples(detection: pd.DataFrame, method: str, baseline: str, column: str = "auroc",
                   budget: int | None = None) -> dict[str, np.ndarray]:
    """Per data set, the paired differences ``column(method) - column(baseline)`` over repetitions (an array).

    Only repetitions where both ran are paired; a data set where either never ran maps to an empty array.
    """
    out = {}
    for dataset in dict.fromkeys(detection["dataset"]):
        group = _ran(detection[detection["dataset"] == dataset], budget)
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


def claim_budget(detection: pd.DataFrame, methods: Iterable[str]) -> int | None:
    """The largest budget at which every one of ``methods`` ran (None if there is none)."""
    ran = detection[detection["error"].isna()]
    common = None
    for method in methods:
        budgets = set(ran.loc[ran["method"] == method, "budget"].dropna().astype(int))
        common = budgets if common is None else common & budgets
    return max(common) if common else None


def budget_sweep(detection: pd.DataFrame, method: str, baseline: str, threshold: float,
                 side: str = "above") -> dict[int, dict[str, dict[str, Any]]]:
    """Per budget both ran at: per data set, the :func:`interval_verdict` of the paired AUROC difference."""
    ran = detection[detection["error"].isna()]
    budgets = sorted(set(ran.loc[ran["method"] == method, "budget"].astype(int))
                     & set(ran.loc[ran["method"] == baseline, "budget"].astype(int)))
    return {b: {d: interval_verdict(x, threshold, side)
                for d, x in paired_samples(detection, method, baseline, budget=b).items()} for b in budgets}


def _sweep_note(sweep: dict) -> str:
    """``Across budgets: 750 holds (worst +0.038), 1500 inconclusive (...)``: the combined verdict per budget."""
    parts = []
    for budget, by_dataset in sweep.items():
        verdict = combine(e["verdict"] for e in by_dataset.values())
        worst = min((e["mean"] for e in by_dataset.values()), default=float("nan"))
        parts.append(f"{budget} {VERDICT_WORDS[verdict]} (worst mean {worst:+.3f})")
    return "Across budgets (evaluations): " + "; ".join(parts) + "." if parts else ""


def comparison_table(detection: pd.DataFrame, semivalues: Sequence[str] = SEMIVALUES) -> pd.DataFrame:
    """Every paired detection comparison of the claims at every budget of the sweep, as a tidy frame.

    Columns ``comparison, dataset, budget, threshold, n, mean, low, high, verdict, seeds_to_decide``.
    """
    import pandas as pd

    pairs = [("msr_banzhaf", "permutation"), ("beta_shapley", "permutation")]
    pairs += [("data_oob", m) for m in semivalues]
    rows = []
    for method, baseline in pairs:
        for budget, by_dataset in budget_sweep(detection, method, baseline, -DETECTION_TOLERANCE).items():
            for dataset, e in by_dataset.items():
                rows.append({"comparison": f"{method} - {baseline}", "dataset": dataset, "budget": budget,
                             "threshold": -DETECTION_TOLERANCE, **{k: e[k] for k in ("n", "mean", "low", "high")},
                             "verdict": VERDICT_WORDS[e["verdict"]], "seeds_to_decide": e["seeds_to_decide"]})
    return pd.DataFrame(rows)


def _decided_claim(text, statistic, entries: dict, *, source, criterion, section=None, note="", worst=min,
                   timing=False, undecided=None):
    """A claim from ``{label: interval_verdict}``: combined verdict, worst mean as the statistic."""
    from .. import claim

    verdict = combine(e["verdict"] if e["n"] else False for e in entries.values())
    means = [e["mean"] for e in entries.values() if e["n"]]
    value = float(worst(means)) if means and len(means) == len(entries) else float("nan")
    # many entries (a method per data set): name those that do not hold, and the worst of those that do
    shown = entries if len(entries) <= 8 else {k: e for k, e in entries.items() if e["verdict"] is not True}
    if len(shown) < len(entries) and means:
        best = {k: e for k, e in entries.items() if e["verdict"] is True}
        key = (min if worst is min else max)(best, key=lambda k: best[k]["mean"]) if best else None
        shown = {**({key: best[key]} if key else {}), **shown}
    rest = len(entries) - len(shown)
    if len(shown) > 8:  # keep the note readable: the eight nearest the wrong side
        order = sorted(shown, key=lambda k: shown[k]["mean"] if np.isfinite(shown[k]["mean"]) else -np.inf,
                       reverse=worst is not min)
        shown = {k: shown[k] for k in order[:8]}
    body = "; ".join(describe(k, e) for k, e in shown.items()) + "."
    if len(shown) < len(entries):
        body += f" ({len(entries) - len(shown)} more: {rest} hold, the others are undecided or missed by less.)"
    if verdict is False:
        failing = [k for k, e in entries.items() if e["verdict"] is False or not e["n"]]
        body += " Cause of the miss: " + ", ".join(failing) + " (interval wholly on the wrong side, or did not run)."
    elif verdict is None:
        body = "Inconclusive: an interval straddles the threshold. " + body
    full_note = " ".join(part for part in (note, body) if part)
    return claim(text, statistic, value, verdict is True and not undecided, source=source, criterion=criterion,
                 section=section, note=full_note, timing=timing,
                 undecided=undecided if undecided else ("inconclusive" if verdict is None else None))


def above_random_claim(detection: pd.DataFrame) -> Claim:
    """Every valuation method detects flipped labels better than random values, by a margin, on every data set."""
    methods = [m for m in dict.fromkeys(_ran(detection)["method"]) if m != RANDOM]
    entries = {f"{m} on {d}": interval_verdict(x, ABOVE_RANDOM_MARGIN)
               for m in methods for d, x in paired_samples(detection, m, RANDOM).items()}
    main = detection[detection["main"]]
    failed = sorted(set(main.loc[main["error"].notna(), "method"]))
    note = ("Methods that failed to run (excluded): " + ", ".join(failed) + ".") if failed else ""
    return _decided_claim("Every valuation method ranks the flipped labels lower than random values do.",
                          "min over methods and data sets of mean AUROC(method) - AUROC(random), common budget",
                          entries, source="reproduction", note=note,
                          criterion=f"For every method that ran and every data set, the {LEVEL:.0%} t-interval over "
                                    f"seeds of the paired difference of detection AUROC (method - random values) "
                                    f"at the common budget lies wholly >= {ABOVE_RANDOM_MARGIN:g} (holds), wholly "
                                    "below (does not hold), else inconclusive.")


def _probe_note(detection, probe, method: str, baseline: str) -> str:
    return "" if probe is None else probe_comparison_note(detection, probe, method, baseline, -DETECTION_TOLERANCE)


def _at_least_as_well(detection, method: str, baseline: str, text: str, section: str, budget=None, *,
                      undecided=None, scope_note="", probe=None):
    budget = claim_budget(detection, (method, baseline)) if budget is None else budget
    sweep = budget_sweep(detection, method, baseline, -DETECTION_TOLERANCE)
    entries = sweep.get(budget) or {d: interval_verdict([], 0.0) for d in dict.fromkeys(detection["dataset"])}
    probe_note = _probe_note(detection, probe, method, baseline)
    return _decided_claim(f"{text} (decided at {budget} evaluations, the largest of the sweep).",
                          f"min over data sets of mean AUROC({method}) - AUROC({baseline}) at {budget} evaluations",
                          entries, source="paper", section=section, undecided=undecided,
                          note=" ".join(p for p in (scope_note, _sweep_note(sweep), probe_note) if p),
                          criterion=f"On every data set, the {LEVEL:.0%} t-interval over seeds of the paired "
                                    f"difference of detection AUROC ({method} - {baseline}) at the largest budget "
                                    f"both ran lies wholly >= -{DETECTION_TOLERANCE:g} (holds), wholly below (does "
                                    "not hold), else inconclusive; the verdicts at the sweep's other budgets are "
                                    "reported beside it.")


def banzhaf_claim(detection: pd.DataFrame, budget: int | None = None, noisy_utility: bool = False,
                  probe: pd.DataFrame | None = None) -> Claim:
    """Data Banzhaf (MSR) detects flipped labels at least as well as permutation Shapley at equal budget.

    Wang & Jia argue from a *noisy* utility (stochastic training): Banzhaf is
    the semivalue most robust to utility noise. With ``noisy_utility=False``
    (this experiment's deterministic learner) the claim is reported as outside
    its scope, the measurement in the note; with True it is decided.
    """
    scope = None if noisy_utility else "outside its scope"
    scope_note = "" if noisy_utility else (
        "Outside its scope: Wang & Jia argue from a noisy utility (random initialisation, SGD), where Banzhaf "
        "is the semivalue most robust to the noise; this batched logistic regression is deterministic (the "
        "same coalition always gives the same accuracy), so their argument has nothing to act on. Measured:")
    return _at_least_as_well(detection, "msr_banzhaf", "permutation",
                             "Data Banzhaf (maximum sample reuse) detects flipped labels at least as well as "
                             "permutation-sampled Shapley values at the same number of utility evaluations",
                             BANZHAF_SECTION, budget, undecided=scope, scope_note=scope_note, probe=probe)


def beta_claim(detection: pd.DataFrame, budget: int | None = None, probe: pd.DataFrame | None = None) -> Claim:
    """Beta(16, 1) Shapley detects flipped labels at least as well as the Shapley value at equal budget."""
    return _at_least_as_well(detection, "beta_shapley", "permutation",
                             "Beta(16, 1) Shapley detects flipped labels at least as well as the Shapley value "
                             "(permutation sampling) at the same number of utility evaluations", BETA_SECTION, budget,
                             probe=probe)


def oob_detection_claim(detection: pd.DataFrame, semivalues: Sequence[str] = SEMIVALUES, budget: int | None = None,
                        probe: pd.DataFrame | None = None) -> Claim:
    """Data-OOB detects flipped labels at least as well as every semivalue estimator."""
    budget = claim_budget(detection, ("data_oob",) + tuple(semivalues)) if budget is None else budget
    entries, sweep_notes = {}, []
    for m in semivalues:
        sweep = budget_sweep(detection, "data_oob", m, -DETECTION_TOLERANCE)
        # a None budget (no budget every method ran at) finds no entry
        for d, e in (sweep.get(budget) or {}).items():  # type: ignore[arg-type]
            entries[f"{m} on {d}"] = e
        sweep_notes.append(" ".join(p for p in (f"vs {m}: " + _sweep_note(sweep),
                                                 _probe_note(detection, probe, "data_oob", m)) if p))
    if not entries:
        entries = {"data_oob": interval_verdict([], 0.0)}
    fits = _ran(detection, budget)
    oob_fits = fits.loc[fits["method"] == "data_oob", "n_evaluations"]
    return _decided_claim(f"Data-OOB detects flipped labels at least as well as the semivalues (Shapley, truncated "
                          f"Monte Carlo, Banzhaf, Beta(16, 1)) (decided at {budget} evaluations of the semivalues).",
                          f"min over semivalues and data sets of mean AUROC(data_oob) - AUROC(semivalue) at {budget}",
                          entries, source="paper", section=OOB_SECTION,
                          note=(f"Data-OOB fitted {oob_fits.max() if len(oob_fits) else 'no'} models at this budget. "
                                + " ".join(sweep_notes)),
                          criterion=f"For each of {', '.join(semivalues)} and every data set, the {LEVEL:.0%} "
                                    f"t-interval over seeds of the paired AUROC difference (data_oob - semivalue) "
                                    f"at the largest budget of the sweep lies wholly >= -{DETECTION_TOLERANCE:g} "
                                    "(holds), wholly below (does not hold), else inconclusive; Data-OOB fits "
                                    "min(budget, oob_max_estimators) models.")


def wall_time_ratios(detection: pd.DataFrame, semivalues: Sequence[str] = SEMIVALUES,
                     budget: int | None = None) -> dict[str, np.ndarray]:
    """Per data set, per repetition: Data-OOB's wall time over the fastest semivalue's at ``budget``."""
    out = {}
    for dataset in dict.fromkeys(detection["dataset"]):
        group = _ran(detection[detection["dataset"] == dataset], budget)
        wide = group.pivot_table(index="repetition", columns="method", values="wall_time_s", aggfunc="first")
        ran = [m for m in semivalues if m in wide]
        out[dataset] = ((wide["data_oob"] / wide[ran].min(axis=1)).dropna().to_numpy(dtype=float)
                        if "data_oob" in wide and ran else np.array([]))
    return out


def oob_wall_time_claim(detection: pd.DataFrame, semivalues: Sequence[str] = SEMIVALUES, budget: int | None = None,
                        same_learner: bool = True) -> Claim:
    """Data-OOB takes far less wall time than the fastest semivalue estimator (a timed claim)."""
    budget = claim_budget(detection, ("data_oob",) + tuple(semivalues)) if budget is None else budget
    entries = {d: interval_verdict(x, WALL_TIME_RATIO, side="below")
               for d, x in wall_time_ratios(detection, semivalues, budget).items()}
    table = _ran(detection, budget)
    fits = table.groupby("method")["n_evaluations"].mean()
    per_fit = (table.groupby("method")["wall_time_s"].mean() / fits.clip(lower=1)) * 1e6
    footing = ("Equal footing: Data-OOB's bagged models and the semivalues' coalitions are trained by the same "
               "batched logistic learner (data_oob(..., fast=True)); " if same_learner else
               "Unequal footing: Data-OOB fits scikit-learn's model once per bootstrap sample while the semivalues "
               "run on the batched learner; ")
    counts = ", ".join(f"{m} {fits[m]:.0f} fits ({per_fit[m]:.0f} us a fit)" for m in ("data_oob",) + tuple(semivalues)
                       if m in fits)
    return _decided_claim(f"Data-OOB takes far less wall time than the semivalue estimators (at {budget} evaluations "
                          "of the semivalues).",
                          "max over data sets of mean per-seed wall time(data_oob) / min over semivalues of wall time",
                          entries, source="paper", section=OOB_SECTION, timing=True, worst=max,
                          note=footing + "mean fits counted: " + counts + ".",
                          criterion=f"On every data set, the {LEVEL:.0%} t-interval over seeds of Data-OOB's wall "
                                    f"time over the fastest of {', '.join(semivalues)} (same seed, largest budget of "
                                    f"the sweep) lies wholly <= {WALL_TIME_RATIO:g} (holds), wholly above (does not "
                                    "hold), else inconclusive.")


def removal_samples(curves: pd.DataFrame, method: str = REMOVAL_METHOD,
                    fraction: float = REMOVAL_FRACTION) -> dict[str, np.ndarray]:
    """Per data set, the paired accuracy after removing ``method``'s lowest-valued ``fraction`` minus random's."""
    rows = curves[(curves["curve"] == "remove_lowest") & np.isclose(curves["fraction"], fraction)]
    out = {}
    for dataset in dict.fromkeys(curves["dataset"]):
        wide = rows[rows["dataset"] == dataset].pivot_table(index="repetition", columns="method", values="accuracy",
                                                            aggfunc="first")
        out[dataset] = ((wide[method] - wide[RANDOM]).dropna().to_numpy(dtype=float)
                        if method in wide and RANDOM in wide else np.array([]))
    return out


def removal_gain(curves: pd.DataFrame, method: str = REMOVAL_METHOD,
                 fraction: float = REMOVAL_FRACTION) -> dict[str, float]:
    """Per data set, the mean of :func:`removal_samples` (NaN where there is no curve)."""
    return {d: float(x.mean()) if x.size else float("nan")
            for d, x in removal_samples(curves, method, fraction).items()}


def removal_claim(curves: pd.DataFrame, method: str = REMOVAL_METHOD, fraction: float = REMOVAL_FRACTION) -> Claim:
    """Removing the lowest-valued points raises test accuracy more than removing random points."""
    entries = {d: interval_verdict(x, 0.0, strict=True) for d, x in removal_samples(curves, method, fraction).items()}
    return _decided_claim(f"Removing the {fraction:.0%} lowest-valued training points ({method}) leaves a model with "
                          f"higher test accuracy than removing {fraction:.0%} chosen at random.",
                          f"min over data sets of mean accuracy gap (lowest {method} removed - random removed)",
                          entries, source="reproduction",
                          criterion=f"On every data set, the {LEVEL:.0%} t-interval over seeds of the paired "
                                    f"difference of test accuracy after removing round({fraction:g} N) points "
                                    f"({method}'s lowest values - random values' lowest), at the common budget, lies "
                                    "wholly > 0 (holds), wholly <= 0 (does not hold), else inconclusive.")


def settled_claim(detection: pd.DataFrame, probe: pd.DataFrame, semivalues: Sequence[str] = SEMIVALUES) -> Claim:
    """The semivalues' detection AUROC has stopped rising by the sweep's largest budget (the probe's verdict)."""
    entries, budgets = {}, set()
    for method in semivalues:
        sweep_top, probe_top, rises = rise_past_sweep(detection, probe, method)
        budgets.add((sweep_top, probe_top))
        entries.update({f"{method} on {d}": interval_verdict(x, SETTLED_TOLERANCE, side="below")
                        for d, x in rises.items()})
    (sweep_top, probe_top), = budgets if len(budgets) == 1 else {(None, None)}
    seeds = int(probe["repetition"].nunique()) if len(probe) else 0
    return _decided_claim(f"The semivalues' detection AUROC has settled by the largest budget of the sweep "
                          f"({sweep_top} evaluations): going on to {probe_top} raises no semivalue's mean AUROC by "
                          f"more than {SETTLED_TOLERANCE:g} on any data set.",
                          f"max over semivalues and data sets of mean AUROC at {probe_top} - AUROC at {sweep_top}",
                          entries, source="reproduction", worst=max,
                          note=f"Probe: the first {seeds} repetitions (same splits, flips and streams as the sweep). "
                               + trajectory_note(detection, probe, semivalues),
                          criterion=f"For each of {', '.join(semivalues)} and every data set, the {LEVEL:.0%} "
                                    f"t-interval over the probe's seeds of the paired AUROC difference (at the "
                                    f"probe's largest budget - at the sweep's largest) lies wholly <= "
                                    f"{SETTLED_TOLERANCE:g} (holds), wholly above (does not hold), else inconclusive.")


def data_cleaning_claims(detection: pd.DataFrame, curves: pd.DataFrame, *, noisy_utility: bool = False,
                         same_learner: bool = True, probe: pd.DataFrame | None = None) -> list[Claim]:
    """All claims, in the order of the report; with the budget ``probe``, its notes and :func:`settled_claim`."""
    claims = [above_random_claim(detection), banzhaf_claim(detection, noisy_utility=noisy_utility, probe=probe),
              beta_claim(detection, probe=probe), oob_detection_claim(detection, probe=probe),
              oob_wall_time_claim(detection, same_learner=same_learner), removal_claim(curves)]
    return claims if probe is None else claims + [settled_claim(detection, probe)]
