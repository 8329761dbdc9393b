"""Claims: the paper's two (on the gap), the literal raw-value readings, and the attack-size check, with their
thresholds."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._data import ATTACKS

if TYPE_CHECKING:
    from .._common import Claim

Z_THRESHOLD = 2.0  # a change "holds" when it exceeds this many standard errors
SPEARMAN_THRESHOLD = 0.8
SHIFT_FACTOR = 1.5  # CW's median PCA-space shift must be within this factor of FGSM's
#: the attack-match claim compares two attacks whose strengths this package set (cw_confidence)
SENSITIVITY = ("Its verdict depends on the attacks' strengths, which the paper does not give: CW's confidence is "
               "calibrated so that CW moves the training points as far as FGSM (check R3); the departures from the "
               "paper report a sensitivity run at foolbox's default confidence 0.")
#: what a z over permutation pairs measures: the standard errors come from the permutations alone
ONE_DRAW = ("z measures the Monte Carlo precision of the Shapley estimate on one draw of the data and attacks (one "
            "training set, one trained model, one set of adversarial examples, one test set); it says nothing of "
            "another draw.")


# --------------------------------------------------------------------------------------------
# Claims (criteria fixed before the run: module constants)
# --------------------------------------------------------------------------------------------

SECTION = "Section 5 (Experimental Results), paragraph 'Value for Adversarial Examples', Figure 6(a, b) (fig:adv)"
CASES = tuple((tr, te) for tr in ATTACKS for te in ATTACKS)


def _case_list(cases) -> str:
    return ", ".join(f"train {tr}/test {te}" for tr, te in cases)


_TREND_CLAIMS = {  # what: (source, sign of the claimed change, claim)
    "gap": ("paper", 1, "The Shapley value of adversarial training examples increases as the test data becomes more "
                        "adversarial, and contrariwise for benign examples."),
    "adversarial": ("reproduction", 1, "Literal reading of Figure 6 (fig:adv): the raw mean Shapley value of "
                                       "adversarial training points rises as the test set becomes more adversarial."),
    "benign": ("reproduction", -1, "Literal reading of Figure 6 (fig:adv): the raw mean Shapley value of benign "
                                   "training points falls as the test set becomes more adversarial."),
}


def claim_trend(trends: dict, what: str, totals: dict, n_players: int, z_threshold: float = Z_THRESHOLD,
                spearman_threshold: float = SPEARMAN_THRESHOLD) -> Claim:
    """A claim on how ``what`` moves from test ratio 0 to 1, in all four (train, test) attack cases.

    ``what="gap"``: the paper's claim (adversarial points gain value, benign
    ones lose it), decided on the gap of :func:`series` (free of the total's shift): it must
    rise. ``"adversarial"`` / ``"benign"``: the literal reading of the
    figure on raw group means (must rise / fall), which also carry the
    uniform split :math:`(U(D) - U(\\emptyset))/N`. ``trends[(train, test,
    what)]`` is :func:`ratio_trend`; the change must exceed ``z_threshold``
    paired standard errors with Spearman(value, ratio) beyond
    ``spearman_threshold``, in the claimed direction. ``totals[(train,
    test)]`` (:math:`U(D) - U(\\emptyset)` at ratios 0 and 1) is quoted in the
    note. A raw mean is also compared with the trivial baseline, the uniform
    share :math:`(U(D) - U(\\emptyset)) / N` (``N = n_players``), which moves
    with the total: its change beyond the share's must exceed ``z_threshold``
    standard errors in the claimed direction too (the share has no Monte Carlo
    error).
    """
    from .._common import claim

    source, sign, text = _TREND_CLAIMS[what]
    stats = [trends[c + (what,)] for c in CASES]
    # the gap holds no share of the total (0 for the uniform split); a raw mean holds 1/N of it
    shares = [0.0 if what == "gap" else (totals[c][1] - totals[c][0]) / n_players for c in CASES]
    beyond = [(t["change"] - share) / t["stderr"] if t["stderr"] > 0 else float("nan")
              for t, share in zip(stats, shares)]
    failing = [c for c, t, b in zip(CASES, stats, beyond)
               if not (np.isfinite(t["z"]) and sign * t["z"] > z_threshold
                       and np.isfinite(t["spearman"]) and sign * t["spearman"] >= spearman_threshold
                       and np.isfinite(b) and sign * b > z_threshold)]
    note = ("The values sum to U(D) - U(empty), which moves both groups' means alike; from ratio 0 to 1 it goes "
            + "; ".join(f"{totals[c][0]:.3g} -> {totals[c][1]:.3g} (train {c[0]}/test {c[1]})" for c in CASES)
            + ". The gap (adversarial - benign) does not contain it.")
    if what != "gap":
        note += (" The uniform share (U(D) - U(empty)) / N, the trivial baseline, changes by "
                 + ", ".join(f"{share:+.4f}" for share in shares) + " against the mean's "
                 + ", ".join(f"{t['change']:+.4f}" for t in stats) + ".")
    if failing:
        note = f"Fails in {_case_list(failing)}. " + note
    label = ("the gap mean value(adversarial) - mean value(benign)" if what == "gap"
             else f"the {what} points' mean value")
    relation, bound = (">" if sign > 0 else "<"), sign * z_threshold
    baseline = ("" if what == "gap" else
                f", and the change beyond the uniform share's (U(D) - U(empty)) / N, in standard errors, "
                f"{relation} {bound:g} (the share moves with the total and has no Monte Carlo error)")
    value = {"z": [t["z"] for t in stats], "spearman": [t["spearman"] for t in stats]}
    if what != "gap":
        value["z_beyond_uniform_share"] = beyond
    return claim(
        text, f"z and Spearman of the change of {label} from test ratio 0 to 1 ({_case_list(CASES)})",
        value, not failing, source=source, section=SECTION if source == "paper" else None, note=note,
        criterion=f"in all four cases z {relation} {bound:g} (paired over permutation pairs) and Spearman(value, "
                  f"ratio) {'>=' if sign > 0 else '<='} {sign * spearman_threshold:g}{baseline}. " + ONE_DRAW)


def claim_attack_match(matches: dict, z_threshold: float = Z_THRESHOLD) -> Claim:
    """Paper: adversarial points are worth more against the attack that made them.

    ``matches[train]`` is :func:`attack_match` of the gap at ratio 1; holds
    if in both panels the gap is larger on the same-attack test set by
    ``z > z_threshold``.
    """
    from .._common import claim

    failing = [tr for tr in ATTACKS if not (np.isfinite(matches[tr]["z"]) and matches[tr]["z"] > z_threshold)]
    note = "" if not failing else "Fails for " + "; ".join(
        f"train {tr}: gap {matches[tr]['value_same']:.3g} on the {tr} test set vs {matches[tr]['value_other']:.3g} "
        f"on the other attack's (z = {matches[tr]['z']:.3g})" for tr in failing) + ". "
    note += SENSITIVITY
    return claim(
        "Adversarial training examples are more valuable when generated by the same attack as the adversarial test "
        "examples.",
        f"z of gap(same-attack test set) - gap(other-attack test set) at test ratio 1 "
        f"(train {', train '.join(ATTACKS)})",
        [matches[tr]["z"] for tr in ATTACKS], not failing, source="paper", section=SECTION, note=note,
        criterion=f"in both panels z > {z_threshold:g} (paired over permutation pairs; gap = mean value(adversarial) "
                  f"- mean value(benign), which the different totals of the two test sets do not move). {ONE_DRAW}")


def claim_comparable_attacks(shifts: dict, factor: float = SHIFT_FACTOR) -> Claim:
    """Reproduction: CW moves the training points about as far as FGSM in the valued model's feature space.

    ``shifts[attack]`` is the median PCA-space distance between a training
    image and its adversarial version; holds if CW's is within ``factor``
    of FGSM's (both ways). Decided by construction: the experiment's
    ``cw_confidence`` was calibrated so that the two shifts match, so the check
    confirms the calibration and is not counted as evidence.
    """
    from .._common import claim

    ratio = shifts["cw"] / shifts["fgsm"]
    holds = bool(np.isfinite(ratio) and 1.0 / factor <= ratio <= factor)
    note = (f"median PCA-space shift: FGSM {shifts['fgsm']:.3g}, CW {shifts['cw']:.3g}; the paper gives neither "
            f"FGSM's epsilon nor CW's confidence. The confidence was chosen so that the shifts match: a check of "
            f"that calibration, decided by construction.")
    if not holds:
        note += (" CW's confidence (cw_confidence) does not give it FGSM's size, so the two panels differ in attack "
                 "strength.")
    return claim(
        "The CW adversarial training points are moved about as far as the FGSM ones in the valued model's feature "
        "space, so the two panels compare attacks, not attack strengths.",
        "median PCA-space shift of the CW training images / that of the FGSM ones", ratio, holds,
        source="reproduction", note=note, criterion=f"ratio within [1/{factor:g}, {factor:g}]",
        by_construction=True)


def build_claims(trends: dict, matches: dict, totals: dict, shifts: dict, n_players: int) -> list:
    """All claims: the paper's two (on the gap), the literal raw-value readings, and the attack-size check."""
    return [claim_trend(trends, "gap", totals, n_players), claim_attack_match(matches),
            claim_trend(trends, "adversarial", totals, n_players), claim_trend(trends, "benign", totals, n_players),
            claim_comparable_attacks(shifts)]
