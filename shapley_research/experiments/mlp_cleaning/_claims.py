"""This package's own claims (none is the paper's), decided on t intervals over seeds, criteria fixed before the run.

A verdict is three-valued, as :mod:`~shapley_research.experiments._verdicts` decides: the
claim *holds* if the whole interval lies on the claimed side of the
threshold, *does not hold* if it lies wholly on the other side, and is
*inconclusive* if it straddles the threshold (or fewer than two seeds ran),
written as ``holds=False`` with the verdict ``"inconclusive"``
(:func:`~shapley_research.experiments._common.verdict_of` reads it back). Over several
data sets a claim holds if it holds on each and fails if it fails on one, with
"fails" corrected for the data sets by Holm's procedure
(:func:`~shapley_research.experiments._verdicts.family_verdicts`), as data_cleaning's claims are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._common import Claim, claim, verdict_of  # noqa: F401  (verdict_of re-exported)
from .._verdicts import FAMILY_RULE, combine, describe, family_verdicts, interval_verdict
from ._measure import AUROC_RANGE, DIFFERENCE_RANGE, LABELS, METHODS, auroc_samples, paired_auroc_samples

#: Random values' expected detection AUROC.
RANDOM_AUROC = 0.5
#: "Better than random" asks for an AUROC above random's by this margin, as data_cleaning's check does.
ABOVE_RANDOM_MARGIN = 0.05
#: "At least as good": AUROC(MLP) - AUROC(logistic) down to minus this margin counts as at least as good.
DIFFERENCE_MARGIN = 0.05
#: Level of the Student-t intervals over seeds.
CONFIDENCE = 0.95
OWN = "This package's own check, not the paper's."


def _decided(samples: dict[str, np.ndarray], threshold: float, bounds: tuple[float, float],
             ) -> tuple[bool | None, dict[str, dict[str, Any]]]:
    """Per data set the interval verdict of the mean against ``threshold``, Holm-corrected; the combined verdict.

    False when nothing ran on any data set (no seed to decide on).
    """
    entries = family_verdicts({d: interval_verdict(x, threshold, "above", CONFIDENCE, bounds=bounds)
                               for d, x in samples.items()}, CONFIDENCE)
    ran = [e for e in entries.values() if e["n"]]
    return (combine(e["verdict"] for e in entries.values()) if ran else False), entries


def _worst(entries: dict[str, dict[str, Any]]) -> list[float]:
    """``[mean, low, high]`` of the data set with the lowest interval end (NaN end first; NaN if none ran)."""
    ran = [e for e in entries.values() if e["n"]]
    worst = min(ran, key=lambda e: e["low"] if math.isfinite(e["low"]) else -math.inf, default=None)
    return [worst[k] for k in ("mean", "low", "high")] if worst else [math.nan] * 3


def _note(verdict: bool | None, entries: dict[str, dict[str, Any]], prefix: str, cause: str) -> str:
    body = "; ".join(describe(f"{prefix}{d}", e) for d, e in entries.items()) or "no run"
    if verdict is None:
        return f"inconclusive: an interval straddles the threshold on some data set. {body}."
    return f"{body}." if verdict else f"does not hold: {cause}. {body}."


def _criterion(statistic: str, threshold: str, n_datasets: int, who: str) -> str:
    rule = (f"On every data set, the {CONFIDENCE:.0%} Student-t interval over seeds of the {statistic} lies at or "
            f"above {threshold} (holds); does not hold if it lies wholly below {threshold} on some data set; "
            f"inconclusive if it straddles {threshold} or fewer than 2 {who}.")
    return rule + (" " + FAMILY_RULE.format(k=n_datasets) if n_datasets > 1 else "")


def above_random_claim(detection: Sequence[dict], method: str, model: str = "mlp",
                       margin: float = ABOVE_RANDOM_MARGIN) -> Claim:
    """On ``model``'s utility, ``method`` ranks flipped labels lower than random: AUROC interval >= 0.5 + margin."""
    threshold = RANDOM_AUROC + margin
    verdict, entries = _decided(auroc_samples(detection, model, method), threshold, AUROC_RANGE)
    ran = any(e["n"] for e in entries.values())
    cause = (f"{method} did not run on the {model} utility" if not ran
             else f"the AUROC interval lies below {threshold:g} (random values' {RANDOM_AUROC:g} + {margin:g}) "
                  "on some data set")
    return claim(f"On the {model.upper() if model == 'mlp' else model} utility, {LABELS.get(method, method)} detects "
                 f"flipped labels better than random values (by at least {margin:g} AUROC). {OWN}",
                 "[mean AUROC, CI low, CI high] over seeds, data set with the lowest CI low", _worst(entries),
                 verdict is True, source="reproduction",
                 criterion=_criterion(f"mean detection AUROC (lowest value flagged; random values: {RANDOM_AUROC:g} "
                                      "in expectation)", f"{threshold:g}", len(entries), "seeds ran"),
                 note=_note(verdict, entries, "", cause),
                 undecided="inconclusive" if verdict is None else None)


def mlp_vs_logistic_claim(detection: Sequence[dict], method: str, margin: float = DIFFERENCE_MARGIN) -> Claim:
    """On the same problems, ``method`` on the MLP utility detects at least as well as on the logistic one."""
    verdict, entries = _decided(paired_auroc_samples(detection, method), -margin, DIFFERENCE_RANGE)
    paired = any(e["n"] for e in entries.values())
    cause = ("no seed where both utilities ran" if not paired
             else f"the MLP's AUROC is below the logistic regression's by more than {margin:g} on some data set")
    return claim(f"{LABELS.get(method, method)} detects flipped labels at least as well on the MLP utility as on the "
                 f"logistic-regression utility, on the same data, splits and flips (within {margin:g} AUROC). "
                 f"{OWN}",
                 "[mean paired AUROC difference MLP - logistic, CI low, CI high], data set with the lowest CI low",
                 _worst(entries), verdict is True, source="reproduction",
                 criterion=_criterion("mean paired difference AUROC(MLP) - AUROC(logistic) (same seed, same method "
                                      "seed)", f"-{margin:g}", len(entries), "seeds paired"),
                 note=_note(verdict, entries, "AUROC(MLP) - AUROC(logistic) on ", cause),
                 undecided="inconclusive" if verdict is None else None)


def mlp_cleaning_claims(detection: Sequence[dict], methods: Sequence[str] = METHODS) -> list[Claim]:
    """All claims, in the order of the report: above random on the MLP per method, then MLP vs logistic."""
    return ([above_random_claim(detection, m) for m in methods]
            + [mlp_vs_logistic_claim(detection, m) for m in methods])
