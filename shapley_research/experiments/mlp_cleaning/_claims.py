"""This package's own claims (none is the paper's), decided on t intervals over seeds, criteria fixed before the run.

A verdict is three-valued, as :mod:`~shapley_research.experiments._verdicts` decides: the
claim *holds* if the whole interval lies on the claimed side of the
threshold, *does not hold* if it lies wholly on the other side, and is
*inconclusive* if it straddles the threshold (or fewer than two seeds ran),
written as ``holds=False`` with the verdict ``"inconclusive"``
(:func:`~shapley_research.experiments._common.verdict_of` reads it back). Over several
data sets a claim holds if it holds on each and fails if it fails (or did not run) on
one, with "fails" corrected for the data sets by Holm's procedure: the same rule as
data_cleaning's claims (:func:`~shapley_research.experiments._family_claims.family_claim`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._common import verdict_of  # noqa: F401  (re-exported)
from .._family_claims import family_claim
from .._verdicts import AUROC_RANGE, DIFFERENCE_RANGE, FAMILY_RULE, interval_verdict
from ._measure import LABELS, METHODS, auroc_samples, paired_auroc_samples

if TYPE_CHECKING:
    from .._common import Claim

#: Random values' expected detection AUROC.
RANDOM_AUROC = 0.5
#: "Better than random" asks for an AUROC above random's by this margin, as data_cleaning's check does.
ABOVE_RANDOM_MARGIN = 0.05
#: "At least as good": AUROC(MLP) - AUROC(logistic) down to minus this margin counts as at least as good.
DIFFERENCE_MARGIN = 0.05
#: Level of the Student-t intervals over seeds.
CONFIDENCE = 0.95
OWN = "This package's own check, not the paper's."


def _criterion(statistic: str, threshold: str, n_datasets: int, who: str) -> str:
    rule = (f"On every data set, the {CONFIDENCE:.0%} Student-t interval over seeds of the {statistic} lies at or "
            f"above {threshold} (holds); does not hold if it lies wholly below {threshold} on some data set or "
            f"did not run there; inconclusive if it straddles {threshold} or fewer than 2 {who}.")
    return rule + (" " + FAMILY_RULE.format(k=n_datasets) if n_datasets > 1 else "")


def above_random_claim(detection: Sequence[dict], method: str, model: str = "mlp",
                       margin: float = ABOVE_RANDOM_MARGIN) -> Claim:
    """On ``model``'s utility, ``method`` ranks flipped labels lower than random: AUROC interval >= 0.5 + margin."""
    threshold = RANDOM_AUROC + margin
    entries = {d: interval_verdict(x, threshold, "above", CONFIDENCE, bounds=AUROC_RANGE)
               for d, x in auroc_samples(detection, model, method).items()}
    name = model.upper() if model == "mlp" else model
    return family_claim(
        f"On the {name} utility, {LABELS.get(method, method)} detects flipped labels better than random values (by "
        f"at least {margin:g} AUROC). {OWN}", "mean AUROC over seeds, lowest over data sets", entries,
        source="reproduction", level=CONFIDENCE,
        criterion=_criterion(f"mean detection AUROC (lowest value flagged; random values: {RANDOM_AUROC:g} in "
                             "expectation)", f"{threshold:g}", len(entries), "seeds ran"),
        note=f"Threshold {threshold:g}: random values' expected AUROC {RANDOM_AUROC:g} plus {margin:g}, on the "
             f"{name} utility.")


def mlp_vs_logistic_claim(detection: Sequence[dict], method: str, margin: float = DIFFERENCE_MARGIN) -> Claim:
    """On the same problems, ``method`` on the MLP utility detects at least as well as on the logistic one."""
    entries = {d: interval_verdict(x, -margin, "above", CONFIDENCE, bounds=DIFFERENCE_RANGE)
               for d, x in paired_auroc_samples(detection, method).items()}
    return family_claim(
        f"{LABELS.get(method, method)} detects flipped labels at least as well on the MLP utility as on the "
        f"logistic-regression utility, on the same data, splits and flips (within {margin:g} AUROC). {OWN}",
        "mean paired AUROC difference MLP - logistic over seeds, lowest over data sets", entries,
        source="reproduction", level=CONFIDENCE,
        criterion=_criterion("mean paired difference AUROC(MLP) - AUROC(logistic) (same seed, same method seed)",
                             f"-{margin:g}", len(entries), "seeds paired"),
        note="AUROC(MLP) - AUROC(logistic) per data set:")


def mlp_cleaning_claims(detection: Sequence[dict], methods: Sequence[str] = METHODS) -> list[Claim]:
    """All claims, in the order of the report: above random on the MLP per method, then MLP vs logistic."""
    return ([above_random_claim(detection, m) for m in methods]
            + [mlp_vs_logistic_claim(detection, m) for m in methods])
