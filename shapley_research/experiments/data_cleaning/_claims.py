"""The experiment's claims, with criteria fixed before the run (the constants below), judged per data set.

Every claim compares methods on the *same* (data set, repetition): paired
differences over the repetitions, so the split and the flips cancel. A claim
holds only if it holds on every data set.
"""

from __future__ import annotations

import numpy as np

from ._methods import RANDOM, SEMIVALUES

#: Every valuation method's mean detection AUROC must exceed random values' by more than this.
ABOVE_RANDOM_MARGIN = 0.05
#: "At least as well": a mean paired AUROC deficit no larger than this counts as a tie.
DETECTION_TOLERANCE = 0.02
#: "Far lower wall time": Data-OOB's mean wall time at most this share of the fastest semivalue's.
WALL_TIME_RATIO = 0.5
#: The removal claim: the share of the training set removed.
REMOVAL_FRACTION = 0.10
#: The method the removal claim ranks by (the Shapley value as the package samples it by default).
REMOVAL_METHOD = "permutation"

BANZHAF_SECTION = "Wang & Jia (AISTATS 2023), experiments section: noisy label detection"
BETA_SECTION = "Kwon & Zou (AISTATS 2022), experiments section: noisy label detection"
OOB_SECTION = "Kwon & Zou (ICML 2023), experiments section: mislabeled data detection and elapsed time"


def _main(detection):
    return detection[detection["main"] & detection["error"].isna()]


def paired_difference(detection, method: str, baseline: str, column: str = "auroc") -> dict:
    """Per data set, the mean over repetitions of ``column`` of ``method`` minus that of ``baseline``.

    Only repetitions where both ran are paired; a data set where either never
    ran maps to NaN.
    """
    table = _main(detection)
    out = {}
    for dataset, group in table.groupby("dataset", sort=False):
        wide = group.pivot_table(index="repetition", columns="method", values=column, aggfunc="first")
        if method not in wide or baseline not in wide:
            out[dataset] = float("nan")
            continue
        diff = (wide[method] - wide[baseline]).dropna()
        out[dataset] = float(diff.mean()) if len(diff) else float("nan")
    return out


def _worst(by_dataset: dict) -> float:
    values = np.array(list(by_dataset.values()), dtype=float)
    return float(np.min(values)) if values.size and np.isfinite(values).all() else float("nan")


def _failed_methods(detection) -> list[str]:
    main = detection[detection["main"]]
    return sorted(set(main.loc[main["error"].notna(), "method"]))


def above_random_claim(detection):
    """Every valuation method detects flipped labels better than random values, by a margin, on every data set."""
    from .. import claim

    methods = [m for m in dict.fromkeys(_main(detection)["method"]) if m != RANDOM]
    gaps = {m: paired_difference(detection, m, RANDOM) for m in methods}
    worst = {m: _worst(g) for m, g in gaps.items()}
    failing = sorted(m for m, w in worst.items() if not w > ABOVE_RANDOM_MARGIN)
    statistic = min(worst.values()) if worst else float("nan")
    holds = bool(methods) and not failing
    failed = _failed_methods(detection)
    note = ("Methods that failed to run (excluded): " + ", ".join(failed) + ". ") if failed else ""
    if failing:
        note += "Below the margin: " + ", ".join(f"{m} ({worst[m]:+.3f})" for m in failing) + "."
    return claim("Every valuation method ranks the flipped labels lower than random values do.",
                 "min over methods and data sets of mean AUROC(method) - AUROC(random)", statistic, holds,
                 source="reproduction",
                 criterion=f"For every method that ran and every data set, the mean over seeds of the paired "
                           f"difference of detection AUROC (method - random values) > {ABOVE_RANDOM_MARGIN:g}.",
                 note=note or None)


def _at_least_as_well(detection, method: str, baseline: str, text: str, section: str):
    from .. import claim

    by_dataset = paired_difference(detection, method, baseline)
    statistic = _worst(by_dataset)
    holds = bool(np.isfinite(statistic) and statistic >= -DETECTION_TOLERANCE)
    note = "Per data set: " + ", ".join(f"{d} {v:+.3f}" for d, v in by_dataset.items()) + "."
    if not np.isfinite(statistic):
        note += f" Cause of the miss: {method} or {baseline} did not run on every data set."
    elif not holds:
        note += f" Cause of the miss: {method} detects worse than {baseline} by more than the tolerance."
    return claim(text, f"min over data sets of mean AUROC({method}) - AUROC({baseline})", statistic, holds,
                 source="paper", section=section,
                 criterion=f"On every data set, the mean over seeds of the paired difference of detection AUROC "
                           f"({method} - {baseline}), at the common budget, >= -{DETECTION_TOLERANCE:g}.",
                 note=note)


def banzhaf_claim(detection):
    """Data Banzhaf (MSR) detects flipped labels at least as well as permutation Shapley at equal budget."""
    return _at_least_as_well(detection, "msr_banzhaf", "permutation",
                             "Data Banzhaf (maximum sample reuse) detects flipped labels at least as well as "
                             "permutation-sampled Shapley values at the same number of utility evaluations.",
                             BANZHAF_SECTION)


def beta_claim(detection):
    """Beta(16, 1) Shapley detects flipped labels at least as well as the Shapley value at equal budget."""
    return _at_least_as_well(detection, "beta_shapley", "permutation",
                             "Beta(16, 1) Shapley detects flipped labels at least as well as the Shapley value "
                             "(permutation sampling) at the same number of utility evaluations.", BETA_SECTION)


def oob_detection_claim(detection, semivalues=SEMIVALUES):
    """Data-OOB detects flipped labels at least as well as every semivalue estimator."""
    from .. import claim

    gaps = {m: _worst(paired_difference(detection, "data_oob", m)) for m in semivalues}
    statistic = min(gaps.values())
    holds = bool(np.isfinite(statistic) and statistic >= -DETECTION_TOLERANCE)
    note = "Worst data set per semivalue: " + ", ".join(f"{m} {g:+.3f}" for m, g in gaps.items()) + "."
    if not holds:
        note += " Cause of the miss: " + ", ".join(m for m, g in gaps.items()
                                                   if not g >= -DETECTION_TOLERANCE) + " detect(s) better."
    return claim("Data-OOB detects flipped labels at least as well as the semivalues (Shapley, truncated Monte "
                 "Carlo, Banzhaf, Beta(16, 1)).",
                 "min over semivalues and data sets of mean AUROC(data_oob) - AUROC(semivalue)", statistic, holds,
                 source="paper", section=OOB_SECTION,
                 criterion=f"For each of {', '.join(semivalues)} and every data set, the mean over seeds of the "
                           f"paired AUROC difference (data_oob - semivalue) >= -{DETECTION_TOLERANCE:g}; Data-OOB "
                           "fits min(budget, oob_max_estimators) models.",
                 note=note)


def oob_wall_time_claim(detection, semivalues=SEMIVALUES):
    """Data-OOB takes far less wall time than the fastest semivalue estimator (a timed claim)."""
    from .. import claim

    table = _main(detection)
    means = table.groupby(["dataset", "method"])["wall_time_s"].mean()
    ratios = {}
    for dataset in dict.fromkeys(table["dataset"]):
        ran = [m for m in semivalues if (dataset, m) in means.index]
        if (dataset, "data_oob") in means.index and ran:
            ratios[dataset] = float(means[(dataset, "data_oob")] / min(means[(dataset, m)] for m in ran))
        else:
            ratios[dataset] = float("nan")
    values = np.array(list(ratios.values()), dtype=float)
    statistic = float(values.max()) if values.size and np.isfinite(values).all() else float("nan")
    holds = bool(np.isfinite(statistic) and statistic <= WALL_TIME_RATIO)
    note = "Per data set: " + ", ".join(f"{d} {r:.2f}" for d, r in ratios.items()) + "."
    if not holds:
        note += (" Cause of the miss: the semivalues run on the package's batched logistic learner (a whole batch "
                 "of coalitions per call), while Data-OOB fits scikit-learn's model once per bootstrap sample.")
    return claim("Data-OOB takes far less wall time than the semivalue estimators.",
                 "max over data sets of mean wall time(data_oob) / min over semivalues of mean wall time",
                 statistic, holds, source="paper", section=OOB_SECTION, timing=True,
                 criterion=f"On every data set, Data-OOB's mean wall time <= {WALL_TIME_RATIO:g} x the mean wall "
                           f"time of the fastest of {', '.join(semivalues)} at the common budget.",
                 note=note)


def removal_gain(curves, method: str = REMOVAL_METHOD, fraction: float = REMOVAL_FRACTION) -> dict:
    """Per data set, the mean paired accuracy after removing ``method``'s lowest-valued ``fraction`` minus random's."""
    rows = curves[(curves["curve"] == "remove_lowest") & np.isclose(curves["fraction"], fraction)]
    out = {}
    for dataset, group in rows.groupby("dataset", sort=False):
        wide = group.pivot_table(index="repetition", columns="method", values="accuracy", aggfunc="first")
        diff = (wide[method] - wide[RANDOM]).dropna() if method in wide and RANDOM in wide else []
        out[dataset] = float(np.mean(diff)) if len(diff) else float("nan")
    return out


def removal_claim(curves, method: str = REMOVAL_METHOD, fraction: float = REMOVAL_FRACTION):
    """Removing the lowest-valued points raises test accuracy more than removing random points."""
    from .. import claim

    by_dataset = removal_gain(curves, method, fraction)
    statistic = _worst(by_dataset) if by_dataset else float("nan")
    holds = bool(np.isfinite(statistic) and statistic > 0)
    note = "Per data set: " + ", ".join(f"{d} {v:+.3f}" for d, v in by_dataset.items()) + "."
    if not holds:
        note += (" Cause of the miss: no removal curve at this fraction." if not np.isfinite(statistic) else
                 f" Cause of the miss: removing {method}'s lowest-valued points does no better than random ones.")
    return claim(f"Removing the {fraction:.0%} lowest-valued training points ({method}) leaves a model with higher "
                 f"test accuracy than removing {fraction:.0%} chosen at random.",
                 f"min over data sets of mean accuracy gap (lowest {method} removed - random removed)", statistic,
                 holds, source="reproduction",
                 criterion=f"On every data set, the mean over seeds of the paired difference of test accuracy after "
                           f"removing round({fraction:g} N) points ({method}'s lowest values - random values' "
                           "lowest) > 0.",
                 note=note)


def data_cleaning_claims(detection, curves) -> list:
    """All claims, in the order of the report."""
    return [above_random_claim(detection), banzhaf_claim(detection), beta_claim(detection),
            oob_detection_claim(detection), oob_wall_time_claim(detection), removal_claim(curves)]
