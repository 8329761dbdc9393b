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
hold if any does not, and is inconclusive otherwise. A claim decided on
several intervals corrects "does not hold" for their number: an interval
counts as wholly on the wrong side only if Holm's step-down procedure over
the claim's intervals rejects it
(:func:`~shapley_research.experiments._verdicts.family_verdicts`; the rule in
words: :data:`~shapley_research.experiments._verdicts.FAMILY_RULE`, in every
criterion).

Data Banzhaf's claim is decided on a noisy utility (:mod:`._noisy`, the
setting Wang & Jia argue for); its measurement on the deterministic game is
reported beside it, as outside its scope.

The papers' detection claims are decided at the *claim budget*: the
largest budget of the sweep at which the compared methods ran (where the
semivalues' AUROC has nearly stopped moving, nearest the papers' estimators
run long); the verdict at every other budget of the sweep is in the note and
in :func:`comparison_table`, since it changes with the budget. The other
claims are decided at the common budget (Data-OOB's wall time at the largest)
and report every budget of the sweep alike (:mod:`._sweeps`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._verdicts import (DIFFERENCE_RANGE, FAMILY_RULE, NONNEGATIVE_RANGE, VERDICT_WORDS, combine,  # noqa: F401
                         describe, family_verdicts, interval_verdict)
from .._family_claims import family_claim
from ._methods import RANDOM, SEMIVALUES
from ._noisy import NOISY_GAME, NOISY_UTILITY
from ._probe import probe_comparison_note, rise_past_sweep, trajectory_note
from ._sweeps import (above_random_sweep, budget_sweep, claim_budget, main_budget, paired_difference,  # noqa: F401
                      paired_samples, ran_at, removal_sweep, sweep_note, wall_time_ratios, wall_time_sweep)
from ._sweeps import removal_gain as _removal_gain
from ._sweeps import removal_samples as _removal_samples

if TYPE_CHECKING:
    from collections.abc import Sequence
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


def _family(k: int) -> str:
    """The multiplicity sentence of a criterion over ``k`` intervals."""
    return FAMILY_RULE.format(k=k)


def removal_samples(curves: pd.DataFrame, method: str = REMOVAL_METHOD, fraction: float = REMOVAL_FRACTION,
                    budget: int | None = None) -> dict[str, np.ndarray]:
    """Per data set, the paired accuracy after removing ``method``'s lowest-valued ``fraction`` minus random's.

    ``method``'s ranking at ``budget`` (default the common budget); random values' as they ran (once).
    """
    return _removal_samples(curves, method, fraction, budget)


def removal_gain(curves: pd.DataFrame, method: str = REMOVAL_METHOD,
                 fraction: float = REMOVAL_FRACTION) -> dict[str, float]:
    """Per data set, the mean of :func:`removal_samples` at the common budget (NaN where there is no curve)."""
    return _removal_gain(curves, method, fraction)


def _sweep_rows(claim_key: str, comparison, sweep: dict, threshold: float, side: str, level: float = LEVEL):
    """Tidy rows of one claim's sweep: every entry at every budget, with its verdict and its family's."""
    rows = []
    for budget, entries in sweep.items():
        for label, e in family_verdicts(entries, level).items():
            rows.append({"claim": claim_key, "comparison": comparison(label), "dataset": label.split(" on ")[-1],
                         "budget": budget, "threshold": threshold, "side": side,
                         **{k: e[k] for k in ("n", "mean", "low", "high")},
                         "verdict": VERDICT_WORDS[e["uncorrected"]], "family": e["family"],
                         "holm_p": e["holm_p"], "family_verdict": VERDICT_WORDS[e["verdict"]],
                         "seeds_to_decide": e["seeds_to_decide"]})
    return rows


def comparison_table(detection: pd.DataFrame, semivalues: Sequence[str] = SEMIVALUES,
                     curves: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every interval of the claims at every budget of the sweep, as a tidy frame.

    Columns ``claim, comparison, dataset, budget, threshold, side, n, mean,
    low, high, verdict`` (the interval's own), ``family`` (the intervals of
    the claim at that budget), ``holm_p`` (Holm-adjusted one-sided p-value of
    the wrong side), ``family_verdict`` (after Holm's correction, as the claim
    decides), ``seeds_to_decide``. ``comparison`` is ``"method - baseline"``
    (AUROC) or ``"removal: method - random"`` (test accuracy; with
    ``curves``). Data-OOB's wall-time claim, whose numbers are measured times,
    is apart: :func:`wall_time_table`.
    """
    import pandas as pd

    tol = -DETECTION_TOLERANCE
    rows = []
    for key, method in (("banzhaf_deterministic", "msr_banzhaf"), ("beta", "beta_shapley")):
        rows += _sweep_rows(key, lambda _, m=method: f"{m} - permutation",
                            budget_sweep(detection, method, "permutation", tol), tol, "above")
    oob = _oob_sweep(detection, semivalues)
    rows += _sweep_rows("oob_detection", lambda label: f"data_oob - {label.split(' on ')[0]}", oob, tol, "above")
    rows += _sweep_rows("above_random", lambda label: f"{label.split(' on ')[0]} - {RANDOM}",
                        above_random_sweep(detection, ABOVE_RANDOM_MARGIN), ABOVE_RANDOM_MARGIN, "above")
    if curves is not None:
        rows += _sweep_rows("removal", lambda _: f"removal: {REMOVAL_METHOD} - {RANDOM}",
                            removal_sweep(curves, REMOVAL_METHOD, REMOVAL_FRACTION), 0.0, "above (strict)")
    return pd.DataFrame(rows)


def wall_time_table(detection: pd.DataFrame, semivalues: Sequence[str] = SEMIVALUES) -> pd.DataFrame:
    """Data-OOB's wall time over the fastest semivalue's at every budget, as :func:`comparison_table`'s rows.

    Apart from :func:`comparison_table` because every number here derives
    from measured times (``metrics.json`` keeps it under a key named as a time).
    """
    import pandas as pd

    return pd.DataFrame(_sweep_rows("oob_wall_time", lambda _: "data_oob / fastest semivalue",
                                    wall_time_sweep(detection, semivalues, WALL_TIME_RATIO), WALL_TIME_RATIO,
                                    "below"))


def _oob_sweep(detection, semivalues) -> dict:
    """Per budget: ``{f"{semivalue} on {data set}": data_oob - semivalue}``, every semivalue in one family."""
    sweep: dict = {}
    for m in semivalues:
        for budget, by_dataset in budget_sweep(detection, "data_oob", m, -DETECTION_TOLERANCE).items():
            sweep.setdefault(budget, {}).update({f"{m} on {d}": e for d, e in by_dataset.items()})
    return dict(sorted(sweep.items()))


def _decided_claim(text, statistic, entries: dict, **options) -> Claim:
    """:func:`~.._family_claims.family_claim` at this experiment's level."""
    return family_claim(text, statistic, entries, level=LEVEL, **options)


def above_random_claim(detection: pd.DataFrame) -> Claim:
    """Every valuation method detects flipped labels better than random values, by a margin, on every data set.

    Decided at the common budget; the verdict at every budget of the sweep (the methods that ran there) in the note.
    """
    budget = main_budget(detection)
    sweep = above_random_sweep(detection, ABOVE_RANDOM_MARGIN)
    methods = [m for m in dict.fromkeys(ran_at(detection)["method"]) if m != RANDOM]
    entries = {f"{m} on {d}": interval_verdict(x, ABOVE_RANDOM_MARGIN, bounds=DIFFERENCE_RANGE)
               for m in methods for d, x in paired_samples(detection, m, RANDOM).items()}
    main = detection[detection["main"]]
    failed = sorted(set(main.loc[main["error"].notna(), "method"]))
    note = ("Methods that failed to run (excluded): " + ", ".join(failed) + ". ") if failed else ""
    reversed_runs = _reversed_runs(main[main["budget"] == budget])
    for label in reversed_runs.keys() & entries.keys():  # a count of seeds would decide a mixture's mean
        if entries[label]["verdict"] is None:
            entries[label] = {**entries[label], "seeds_to_decide": None, "undecidable": BIMODAL}
    if reversed_runs:
        note += ("Reversed rankings (a normalising constant C_U < 0 flips the values, so the AUROC is bimodal: its "
                 "mean weighs the reversed runs against the others, and more seeds would estimate how often C_U < 0, "
                 "not how well the method detects): " + "; ".join(reversed_runs.values()) + ". ")
    note += sweep_note(sweep) if len(sweep) > 1 else ""
    return _decided_claim("Every valuation method ranks the flipped labels lower than random values do.",
                          "min over methods and data sets of mean AUROC(method) - AUROC(random), common budget",
                          entries, source="reproduction", note=note.strip(),
                          criterion=f"For every method that ran and every data set, the {LEVEL:.0%} t-interval over "
                                    f"seeds of the paired difference of detection AUROC (method - random values) "
                                    f"at the common budget ({budget}) lies wholly >= {ABOVE_RANDOM_MARGIN:g} "
                                    "(holds), wholly below (does not hold), else inconclusive; the verdicts at the "
                                    "sweep's other budgets (the methods that ran there) are reported beside it. "
                                    + _family(len(entries)))


#: The warning of a normalisation that reverses a method's ranking (largest-S influence's C_U < 0).
REVERSED = "reverses the ranking"
#: In place of "about n seeds would decide" for an interval over runs some of which were reversed.
BIMODAL = "bimodal (reversed rankings in some runs): its mean mixes the two modes, so no count of seeds is given"


def _reversed_runs(runs: pd.DataFrame) -> dict[str, str]:
    r"""``{"METHOD on DATASET": description}`` where a method's normalisation reversed its ranking in some runs.

    Largest-S influence divides by :math:`C_U`; where the marginals sum to the
    opposite sign of :math:`U(I) - U(\emptyset)`, its values flip, and so does
    its AUROC: a bimodal AUROC, whose mean over seeds mixes the two modes.
    """
    if "note" not in runs:
        return {}
    out = {}
    for (method, dataset), rows in runs.groupby(["method", "dataset"], sort=False):
        flipped = rows["note"].fillna("").str.contains(REVERSED)
        if flipped.any():
            out[f"{method} on {dataset}"] = (
                f"{method} on {dataset}: {int(flipped.sum())} of {len(rows)} runs (AUROC "
                f"{rows.loc[flipped, 'auroc'].min():.2f}-{rows.loc[flipped, 'auroc'].max():.2f} there, "
                f"{rows.loc[~flipped, 'auroc'].min():.2f}-{rows.loc[~flipped, 'auroc'].max():.2f} in the others)")
    return out


def _probe_note(detection, probe, method: str, baseline: str) -> str:
    return "" if probe is None else probe_comparison_note(detection, probe, method, baseline, -DETECTION_TOLERANCE)


def _at_least_as_well(detection, method: str, baseline: str, text: str, section: str, budget=None, *,
                      undecided=None, scope_note="", probe=None, utility=""):
    budget = claim_budget(detection, (method, baseline)) if budget is None else budget
    sweep = budget_sweep(detection, method, baseline, -DETECTION_TOLERANCE)
    entries = sweep.get(budget) or {d: interval_verdict([], 0.0) for d in dict.fromkeys(detection["dataset"])}
    probe_note = _probe_note(detection, probe, method, baseline)
    sweep_text = sweep_note(sweep) if len(sweep) > 1 else ""
    where = "the largest of the sweep" if len(sweep) > 1 or not utility else utility
    how = "measured" if undecided == "outside its scope" else "decided"
    return _decided_claim(f"{text} ({how} at {budget} evaluations, {where}).",
                          f"min over data sets of mean AUROC({method}) - AUROC({baseline}) at {budget} evaluations",
                          entries, source="paper", section=section, undecided=undecided,
                          note=" ".join(p for p in (scope_note, sweep_text, probe_note) if p),
                          criterion=f"On every data set, the {LEVEL:.0%} t-interval over seeds of the paired "
                                    f"difference of detection AUROC ({method} - {baseline}){utility and ' ' + utility} "
                                    f"at the largest budget both ran lies wholly >= -{DETECTION_TOLERANCE:g} (holds), "
                                    "wholly below (does not hold), else inconclusive; the verdicts at the sweep's "
                                    "other budgets, if any, are reported beside it. " + _family(len(entries)))


BANZHAF_TEXT = ("Data Banzhaf (maximum sample reuse) detects flipped labels at least as well as permutation-sampled "
                "Shapley values at the same number of utility evaluations")


def noisy_banzhaf_claim(noisy: pd.DataFrame, detection: pd.DataFrame | None = None,
                        noise: dict[str, dict[str, float]] | None = None) -> Claim:
    """Data Banzhaf's claim where Wang & Jia make it: on a noisy utility (:mod:`._noisy`), decided.

    ``noisy`` is :func:`~._noisy.run_noisy_utility`'s table (one budget);
    ``detection`` the main run's, whose deterministic comparison at the same
    budget, on the same problems, goes into the note; ``noise`` the measured
    spread of the utility (:func:`~._noisy.utility_noise` per data set).
    """
    training = {k: noisy[k].iloc[0] if k in noisy and len(noisy) else "?"
                for k in ("epochs", "batch_size", "learning_rate")}
    parts = [f"The noisy utility: {NOISY_GAME.format(**training)}."]
    if noise:
        parts.append("Its noise (standard deviation of U over independent draws of the game, mean over seeds): "
                     + "; ".join(f"{d} U(D) {e['full_mean']:.3f} +- {e['full_sd']:.3f}, random halves +- "
                                 f"{e['half_sd']:.3f}" for d, e in noise.items()) + ".")
    budget = claim_budget(noisy, ("msr_banzhaf", "permutation"))
    same = {} if detection is None else budget_sweep(detection, "msr_banzhaf", "permutation",
                                                     -DETECTION_TOLERANCE).get(budget, {})  # type: ignore[arg-type]
    if same:
        parts.append(f"For comparison, on the deterministic utility at {budget} evaluations (same problems and "
                     "method seeds, all the main run's seeds): "
                     + "; ".join(describe(d, e) for d, e in family_verdicts(same, LEVEL).items()) + ".")
    return _at_least_as_well(noisy, "msr_banzhaf", "permutation", f"{BANZHAF_TEXT}, on a noisy utility "
                             f"(Wang & Jia's setting: {NOISY_UTILITY})", BANZHAF_SECTION, budget,
                             scope_note=" ".join(parts), utility="on the noisy utility")


def banzhaf_claim(detection: pd.DataFrame, budget: int | None = None, noisy_utility: bool = False,
                  probe: pd.DataFrame | None = None, decided_on_noise: bool = False) -> Claim:
    """Data Banzhaf (MSR) detects flipped labels at least as well as permutation Shapley at equal budget.

    Wang & Jia argue from a *noisy* utility (stochastic training): Banzhaf is
    the semivalue most robust to utility noise. With ``noisy_utility=False``
    (this experiment's deterministic learner) the claim is reported as outside
    its scope, the measurement in the note (:func:`noisy_banzhaf_claim`
    decides it on a noisy utility: ``decided_on_noise`` says so in the note);
    with True it is decided.
    """
    scope = None if noisy_utility else "outside its scope"
    scope_note = "" if noisy_utility else (
        "Outside its scope: Wang & Jia argue from a noisy utility (random initialisation, SGD), where Banzhaf "
        "is the semivalue most robust to the noise; this batched logistic regression is deterministic (the "
        "same coalition always gives the same accuracy), so their argument has nothing to act on."
        + (" The claim is decided on a noisy utility in the entry before this one." if decided_on_noise else "")
        + " Measured:")
    text = BANZHAF_TEXT if noisy_utility else f"{BANZHAF_TEXT}, on the deterministic utility (reported, not decided)"
    return _at_least_as_well(detection, "msr_banzhaf", "permutation", text, BANZHAF_SECTION, budget,
                             undecided=scope, scope_note=scope_note, probe=probe)


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
    sweep = _oob_sweep(detection, semivalues)
    # a None budget (no budget every method ran at) finds no entry
    entries = dict(sweep.get(budget) or {}) or {"data_oob": interval_verdict([], 0.0)}  # type: ignore[arg-type]
    sweep_notes = [" ".join(p for p in (f"vs {m}: " + sweep_note(budget_sweep(detection, "data_oob", m,
                                                                              -DETECTION_TOLERANCE)),
                                        _probe_note(detection, probe, "data_oob", m)) if p) for m in semivalues]
    fits = ran_at(detection, budget)
    oob_fits = fits.loc[fits["method"] == "data_oob", "n_evaluations"]
    return _decided_claim(f"Data-OOB detects flipped labels at least as well as the semivalues (Shapley, truncated "
                          f"Monte Carlo, Banzhaf, Beta(16, 1)) (decided at {budget} evaluations of the semivalues).",
                          f"min over semivalues and data sets of mean AUROC(data_oob) - AUROC(semivalue) at {budget}",
                          entries, source="paper", section=OOB_SECTION,
                          note=(f"Data-OOB fitted {oob_fits.max() if len(oob_fits) else 'no'} models at this budget. "
                                + (sweep_note(sweep) + " Per semivalue: " if len(sweep) > 1 else "")
                                + " ".join(sweep_notes)),
                          criterion=f"For each of {', '.join(semivalues)} and every data set, the {LEVEL:.0%} "
                                    f"t-interval over seeds of the paired AUROC difference (data_oob - semivalue) "
                                    f"at the largest budget of the sweep lies wholly >= -{DETECTION_TOLERANCE:g} "
                                    "(holds), wholly below (does not hold), else inconclusive; Data-OOB fits "
                                    "min(budget, oob_max_estimators) models. " + _family(len(entries)))


def oob_wall_time_claim(detection: pd.DataFrame, semivalues: Sequence[str] = SEMIVALUES, budget: int | None = None,
                        same_learner: bool = True) -> Claim:
    """Data-OOB takes far less wall time than the fastest semivalue estimator (a timed claim)."""
    budget = claim_budget(detection, ("data_oob",) + tuple(semivalues)) if budget is None else budget
    entries = {d: interval_verdict(x, WALL_TIME_RATIO, side="below", bounds=NONNEGATIVE_RANGE)
               for d, x in wall_time_ratios(detection, semivalues, budget).items()}
    sweep = wall_time_sweep(detection, semivalues, WALL_TIME_RATIO)
    table = ran_at(detection, budget)
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
                          note=footing + "mean fits counted: " + counts + "."
                               + (" " + sweep_note(sweep, worst=max) if len(sweep) > 1 else ""),
                          criterion=f"On every data set, the {LEVEL:.0%} t-interval over seeds of Data-OOB's wall "
                                    f"time over the fastest of {', '.join(semivalues)} (same seed, largest budget of "
                                    f"the sweep) lies wholly <= {WALL_TIME_RATIO:g} (holds), wholly above (does not "
                                    "hold), else inconclusive; the verdicts at the sweep's other budgets are "
                                    "reported beside it. " + _family(len(entries)))


def removal_claim(curves: pd.DataFrame, method: str = REMOVAL_METHOD, fraction: float = REMOVAL_FRACTION) -> Claim:
    """Removing the lowest-valued points raises test accuracy more than removing random points.

    Decided at the common budget; ``method``'s ranking at every budget of the sweep in the note.
    """
    entries = {d: interval_verdict(x, 0.0, strict=True, bounds=DIFFERENCE_RANGE)
               for d, x in removal_samples(curves, method, fraction).items()}
    sweep = removal_sweep(curves, method, fraction)
    return _decided_claim(f"Removing the {fraction:.0%} lowest-valued training points ({method}) leaves a model with "
                          f"higher test accuracy than removing {fraction:.0%} chosen at random.",
                          f"min over data sets of mean accuracy gap (lowest {method} removed - random removed)",
                          entries, source="reproduction", note=sweep_note(sweep) if len(sweep) > 1 else "",
                          criterion=f"On every data set, the {LEVEL:.0%} t-interval over seeds of the paired "
                                    f"difference of test accuracy after removing round({fraction:g} N) points "
                                    f"({method}'s lowest values - random values' lowest), at the common budget, lies "
                                    "wholly > 0 (holds), wholly <= 0 (does not hold), else inconclusive; the "
                                    f"verdicts with {method}'s values at the sweep's other budgets are reported "
                                    "beside it. " + _family(len(entries)))


def settled_claim(detection: pd.DataFrame, probe: pd.DataFrame, semivalues: Sequence[str] = SEMIVALUES) -> Claim:
    """The semivalues' detection AUROC has stopped rising by the sweep's largest budget (the probe's verdict)."""
    entries, budgets = {}, set()
    for method in semivalues:
        sweep_top, probe_top, rises = rise_past_sweep(detection, probe, method)
        budgets.add((sweep_top, probe_top))
        entries.update({f"{method} on {d}": interval_verdict(x, SETTLED_TOLERANCE, side="below",
                                                             bounds=DIFFERENCE_RANGE) for d, x in rises.items()})
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
                                    f"{SETTLED_TOLERANCE:g} (holds), wholly above (does not hold), else "
                                    "inconclusive. " + _family(len(entries)))


def data_cleaning_claims(detection: pd.DataFrame, curves: pd.DataFrame, *, noisy_utility: bool = False,
                         same_learner: bool = True, probe: pd.DataFrame | None = None,
                         noisy: pd.DataFrame | None = None,
                         noise: dict[str, dict[str, float]] | None = None) -> list[Claim]:
    """All claims, in the order of the report.

    With ``noisy`` (:func:`~._noisy.run_noisy_utility`'s table, ``noise`` its
    noise measure), Data Banzhaf's claim decided on it comes first among the
    papers' claims, the deterministic measurement right after it; with the
    budget ``probe``, its notes and :func:`settled_claim`.
    """
    claims = [above_random_claim(detection)]
    if noisy is not None:
        claims.append(noisy_banzhaf_claim(noisy, detection, noise))
    claims += [banzhaf_claim(detection, noisy_utility=noisy_utility, probe=probe, decided_on_noise=noisy is not None),
               beta_claim(detection, probe=probe),
               oob_detection_claim(detection, probe=probe), oob_wall_time_claim(detection, same_learner=same_learner),
               removal_claim(curves)]
    return claims if probe is None else claims + [settled_claim(detection, probe)]
