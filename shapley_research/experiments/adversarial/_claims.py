"""Claims: the paper's two (on the gap), the literal raw-value readings, and the attack-size check, with their
thresholds."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._data import ATTACK_LABELS, ATTACKS
from ._replication import ATTACK_MATCH, GAP_CHANGE, KINDS, SHIFT_RATIO

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from .._common import Claim

Z_THRESHOLD = 2.0  # a change "holds" when it exceeds this many standard errors
SPEARMAN_THRESHOLD = 0.8
SHIFT_FACTOR = 1.5  # CW's median PCA-space shift must be within this factor of FGSM's
#: the attack-match claim compares two attacks whose strengths this package set (cw_confidence)
SENSITIVITY = ("Its verdict depends on the attacks' strengths, which the paper does not give: CW's confidence is "
               "calibrated so that CW moves the training points as far as FGSM (check R3); the check 'whatever the "
               "strength of the CW attack' decides it at the other confidences of the sweep.")
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


# --------------------------------------------------------------------------------------------
# Replications (this package's checks of the paper's claims beyond one draw and one attack strength)
# --------------------------------------------------------------------------------------------

#: what a replication's data draw redraws
DRAW = ("A draw redraws the split, the PCA, the attacked model, both attacks' images, the test-set mixing and the "
        "permutations; each draw's statistic carries its own Monte Carlo error, which the spread over draws "
        "includes.")


def _draws(table: pd.DataFrame, statistic: str) -> pd.DataFrame:
    rows = table[table["kind"].isin(KINDS[:2]) & (table["statistic"] == statistic)]
    return rows.sort_values(["seed", "train", "test"], kind="stable")


def _replicated(table: pd.DataFrame, statistic: str, cases: Sequence[tuple[str, str]], text: str, label: str,
                paper_claim: str) -> Claim:
    """A paper claim replicated over data draws: per case, the draws' t-interval above 0 (Holm over the cases)."""
    from .._family_claims import family_claim
    from .._verdicts import interval_verdict

    rows = _draws(table, statistic)
    seeds = sorted(rows["seed"].unique().tolist())
    values = {f"train {train}" + (f"/test {test}" if test else ""):
              rows[(rows["train"] == train) & (rows["test"] == test)]["value"].to_numpy() for train, test in cases}
    entries = {key: interval_verdict(draws, 0.0, "above", strict=True) for key, draws in values.items()}
    where = "in all four cases" if len(cases) == 4 else "in both panels"
    return family_claim(
        text, f"lowest mean over the data draws of {label}", entries, source="reproduction",
        criterion=f"Over the {len(seeds)} data draws (seeds {', '.join(map(str, seeds))}; the main run's is the "
                  f"first), the 95% t-interval of the mean of {label} lies above 0 {where} (Holm-corrected over "
                  f"them); with fewer than two draws it is undecided. {DRAW} This package's check of the paper's "
                  f"{paper_claim} claim across data draws.",
        note="Per-draw values: " + "; ".join(f"{key}: " + ", ".join(f"{v:.3g}" for v in draws)
                                             for key, draws in values.items()) + ".")


def claim_replicated_gap(table: pd.DataFrame) -> Claim:
    """The paper's first claim across data draws: the gap's change from ratio 0 to 1 is positive on average."""
    return _replicated(table, GAP_CHANGE, CASES,
                       "Across draws of the data and attacks, the gap mean value(adversarial) - mean value(benign) "
                       "rises as the test data becomes more adversarial, in all four attack cases.",
                       "the gap's change from test ratio 0 to 1", "first (Section 5, Figure 6 (a, b))")


def claim_replicated_match(table: pd.DataFrame) -> Claim:
    """The paper's second claim across data draws: the gap is larger on the same-attack test set on average."""
    return _replicated(table, ATTACK_MATCH, tuple((tr, "") for tr in ATTACKS),
                       "Across draws of the data and attacks, adversarial training examples are more valuable when "
                       "generated by the same attack as the adversarial test examples, in both panels.",
                       "gap(same-attack test set) - gap(other-attack test set) at test ratio 1",
                       "second (Section 5, Figure 6 (a, b))")


def claim_match_across_confidence(table: pd.DataFrame, z_threshold: float = Z_THRESHOLD) -> Claim:
    """The paper's second claim at every CW confidence of the sweep, on the main draw (P2's criterion at each).

    Holds if at every confidence (the main run's and the sweep's) the gap is
    larger on the same-attack test set by ``z > z_threshold`` in both panels;
    inconclusive if the sweep holds no other confidence.
    """
    from .._common import claim

    rows = table[table["kind"].isin((KINDS[0], KINDS[2]))]
    confidences = sorted(rows["cw_confidence"].unique().tolist())
    z = {c: [float(rows[(rows["cw_confidence"] == c) & (rows["statistic"] == ATTACK_MATCH)
                        & (rows["train"] == tr)]["z"].iloc[0]) for tr in ATTACKS] for c in confidences}
    ratio = {c: float(rows[(rows["cw_confidence"] == c) & (rows["statistic"] == SHIFT_RATIO)]["value"].iloc[0])
             for c in confidences}
    failing = [c for c in confidences if not all(np.isfinite(v) and v > z_threshold for v in z[c])]
    note = "z (train " + ", train ".join(ATTACKS) + ") and CW's shift / FGSM's: " + "; ".join(
        f"confidence {c:g}: " + ", ".join(f"{v:.3g}" for v in z[c]) + f" (shift ratio {ratio[c]:.2f})"
        for c in confidences) + "."
    if failing:
        note = f"Fails at confidence {', '.join(f'{c:g}' for c in failing)}. " + note + _shared_preference(z)
    single = len(confidences) < 2
    return claim(
        "Adversarial training examples are more valuable when generated by the same attack as the adversarial test "
        "examples, whatever the strength (logit margin) of the CW attack.",
        "lowest z over the CW confidences and panels of gap(same-attack test set) - gap(other-attack test set)",
        float(min(min(v) for v in z.values())), not failing and not single, source="reproduction",
        undecided="inconclusive" if single and not failing else None,
        note=note + (" No other confidence ran." if single else ""),
        criterion=f"At every CW confidence of {', '.join(f'{c:g}' for c in confidences)} (the main run's and the "
                  f"sweep's, fixed before the run), on the main draw, z > {z_threshold:g} in both panels (the "
                  f"paper's second claim's criterion at each strength). {ONE_DRAW} This package's check of the "
                  "paper's second claim (Section 5, Figure 6 (a, b)) across the attack strength it does not give.")


def _shared_preference(z: dict[float, list[float]]) -> str:
    """Where both panels' gaps are larger on the same attack's test set (z of opposite signs), which one."""
    shared: dict[str, list[str]] = {}
    for confidence, (z_fgsm, z_cw) in z.items():  # z > 0: the panel prefers its own attack's test set
        if z_fgsm > 0 > z_cw or z_cw > 0 > z_fgsm:
            shared.setdefault("fgsm" if z_fgsm > 0 else "cw", []).append(f"{confidence:g}")
    return "".join(f" At confidence {', '.join(cs)} both panels' gaps are larger on the {ATTACK_LABELS[a]} test "
                   f"set." for a, cs in shared.items())


def replication_claims(table: pd.DataFrame) -> list:
    """The three replication checks (:func:`claim_replicated_gap`, :func:`claim_replicated_match`,
    :func:`claim_match_across_confidence`) on the table of :func:`~._replication.run_replications` plus the main
    run's rows."""
    return [claim_replicated_gap(table), claim_replicated_match(table), claim_match_across_confidence(table)]
