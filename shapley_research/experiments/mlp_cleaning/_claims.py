"""This package's own claims (none is the paper's), decided on t intervals over seeds, criteria fixed before the run.

A verdict is three-valued, as :mod:`~shapley_research.experiments._verdicts` decides: the
claim *holds* if the whole interval lies on the claimed side of the
threshold, *does not hold* if it lies wholly on the other side, and is
*inconclusive* if it straddles the threshold (or fewer than two seeds ran),
written as ``holds=False`` with the verdict ``"inconclusive"``
(:func:`~shapley_research.experiments._common.verdict_of` reads it back). Over several
data sets a claim holds if it holds on each, fails if it fails on one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .._common import Claim, claim, verdict_of  # noqa: F401  (verdict_of re-exported)
from .._verdicts import combine, decide, repetitions_to_decide
from ._measure import LABELS, METHODS, paired_differences, summarise_detection

#: Random values' expected detection AUROC: the threshold of "better than random".
RANDOM_AUROC = 0.5
#: "At least as good": AUROC(MLP) - AUROC(logistic) down to minus this margin counts as at least as good.
DIFFERENCE_MARGIN = 0.05
#: Level of the Student-t intervals over seeds.
CONFIDENCE = 0.95
OWN = "This package's own check, not the paper's."


def _verdict(low: float, high: float, threshold: float, n: int) -> bool | None:
    """``_verdicts.decide(low, high, threshold, "above")``; None with fewer than two seeds (no spread)."""
    return decide(low, high, threshold, "above") if n >= 2 else None


def _describe(name: str, mean: float, low: float, high: float, n: int, threshold: float, sd: float,
              verdict: bool | None) -> str:
    relation = {True: ">=", False: "<", None: "straddles"}[verdict]
    text = f"{name}: {mean:.3f} [{low:.3f}, {high:.3f}] over {n} seeds {relation} {threshold:g}"
    if verdict is None and n >= 2 and math.isfinite(sd):
        needed = repetitions_to_decide(sd, mean - threshold, CONFIDENCE)
        text += f" (about {needed} seeds would decide)" if needed else " (no practical number of seeds would decide)"
    return text


def _undecided(verdict: bool | None) -> str | None:
    return "inconclusive" if verdict is None else None


def _note(verdict: bool | None, parts: list[str], cause: str) -> str:
    body = "; ".join(parts) + "."
    if verdict is None:
        return "inconclusive: the interval straddles the threshold on some data set. " + body
    return body if verdict else f"does not hold: {cause}. {body}"


def above_random_claim(detection: Sequence[dict], method: str, model: str = "mlp") -> Claim:
    """On ``model``'s utility, ``method`` ranks flipped labels lower than random: AUROC interval above 0.5."""
    rows = [s for s in summarise_detection(detection, CONFIDENCE) if s["model"] == model and s["method"] == method]
    verdicts, parts = [], []
    for s in rows:
        verdicts.append(_verdict(s["auroc_low"], s["auroc_high"], RANDOM_AUROC, s["n_repetitions"]))
        parts.append(_describe(s["dataset"], s["auroc_mean"], s["auroc_low"], s["auroc_high"], s["n_repetitions"],
                               RANDOM_AUROC, s["auroc_sd"], verdicts[-1]))
    ran = [s for s in rows if s["n_repetitions"]]
    verdict = combine(verdicts) if ran else False
    worst = min(ran, key=lambda s: s["auroc_low"] if math.isfinite(s["auroc_low"]) else -math.inf, default=None)
    value = [worst[k] for k in ("auroc_mean", "auroc_low", "auroc_high")] if worst else [math.nan] * 3
    cause = (f"{method} did not run on the {model} utility" if not ran
             else "the AUROC interval lies below 0.5: worse than random on some data set")
    return claim(f"On the {model.upper() if model == 'mlp' else model} utility, {LABELS.get(method, method)} detects "
                 f"flipped labels better than random values. {OWN}",
                 "[mean AUROC, CI low, CI high] over seeds, data set with the lowest CI low", value,
                 verdict is True, source="reproduction",
                 criterion=(f"On every data set, the {CONFIDENCE:.0%} Student-t interval over seeds of the mean "
                            f"detection AUROC (lowest value flagged) lies at or above {RANDOM_AUROC} (holds); "
                            f"does not hold if it lies wholly below {RANDOM_AUROC} on some data set; inconclusive "
                            "if it straddles 0.5 or fewer than 2 seeds ran."),
                 note=_note(verdict, parts or ["no run"], cause), undecided=_undecided(verdict))


def mlp_vs_logistic_claim(detection: Sequence[dict], method: str, margin: float = DIFFERENCE_MARGIN) -> Claim:
    """On the same problems, ``method`` on the MLP utility detects at least as well as on the logistic one."""
    rows = [d for d in paired_differences(detection, "mlp", "logistic", CONFIDENCE) if d["method"] == method]
    verdicts, parts = [], []
    for d in rows:
        verdicts.append(_verdict(d["difference_low"], d["difference_high"], -margin, d["n_pairs"]))
        parts.append(_describe(f"{d['dataset']} AUROC(MLP) - AUROC(logistic)", d["difference_mean"],
                               d["difference_low"], d["difference_high"], d["n_pairs"], -margin,
                               d["difference_sd"], verdicts[-1]))
    paired = [d for d in rows if d["n_pairs"]]
    verdict = combine(verdicts) if paired else False
    worst = min(paired, key=lambda d: d["difference_low"] if math.isfinite(d["difference_low"]) else -math.inf,
                default=None)
    value = [worst[k] for k in ("difference_mean", "difference_low", "difference_high")] if worst else [math.nan] * 3
    cause = ("no seed where both utilities ran" if not paired
             else f"the MLP's AUROC is below the logistic regression's by more than {margin:g} on some data set")
    return claim(f"{LABELS.get(method, method)} detects flipped labels at least as well on the MLP utility as on the "
                 f"logistic-regression utility, on the same data, splits and flips (within {margin:g} AUROC). "
                 f"{OWN}",
                 "[mean paired AUROC difference MLP - logistic, CI low, CI high], data set with the lowest CI low",
                 value, verdict is True, source="reproduction",
                 criterion=(f"On every data set, the {CONFIDENCE:.0%} Student-t interval over seeds of the mean "
                            f"paired difference AUROC(MLP) - AUROC(logistic) (same seed, same method seed) lies at "
                            f"or above -{margin:g} (holds); does not hold if it lies wholly below -{margin:g} on "
                            f"some data set; inconclusive if it straddles -{margin:g} or fewer than 2 seeds paired."),
                 note=_note(verdict, parts or ["no pair"], cause), undecided=_undecided(verdict))


def mlp_cleaning_claims(detection: Sequence[dict], methods: Sequence[str] = METHODS) -> list[Claim]:
    """All claims, in the order of the report: above random on the MLP per method, then MLP vs logistic."""
    return ([above_random_claim(detection, m) for m in methods]
            + [mlp_vs_logistic_claim(detection, m) for m in methods])
