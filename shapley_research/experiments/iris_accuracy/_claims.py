"""The paper's claims, decided on t-intervals fixed before the run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._common import claim
from ._agreement import METHODS, decide, repetitions_to_decide
from ._methods import THEOREM_KEY

if TYPE_CHECKING:
    import pandas as pd
    from .._common import Claim

#: The methods the paper says agree closely: (a), (b) Algorithm 1 as published and (c) with the paper's
#: influence function (this package's refinements are no part of the paper's claim).
CLOSE_METHODS = ("permutation", "gt_paper", "all_s_first_order")
#: The methods whose recovery of the SV is judged, in the order of the claims: (a), (b) (Algorithm 1 as
#: published, the paper's claim), (b') and (b*) (this package's group-testing refinements, its own checks),
#: (c) (all-S with the paper's influence function, the paper's claim) and (c') (this package's Newton update).
RECOVERY_METHODS = ("permutation", "gt_paper", "gt_improved", "gt_paper_wor", "all_s_first_order", "all_s")
#: This package's own methods: their recovery is a check of the reproduction, not a claim of the paper.
_OWN_METHODS = ("gt_improved", "gt_paper_wor", "all_s")
_SAMPLERS = {
    "gt_paper": ("Sampler: Algorithm 1 as published, every test drawn independently "
                 "(group_testing_shapley(variant='paper', sampling='independent'), no centering). The same "
                 "algorithm at Theorem 3's count of tests is check (b#)."),
    "gt_paper_wor": ("Not the algorithm as published: Algorithm 1's estimator on this package's refinement of its "
                     "sampler (sampling='without_replacement': up to 22 players the tests of each size are read "
                     "along random orders of its coalitions, which at this N and budget nearly enumerates the "
                     "likely sizes); the paper's claim is judged on (b), independent tests."),
    "gt_improved": ("Wang & Jia's null player plus this package's linear centering, on the tests drawn without "
                    "replacement (the library's defaults)."),
    "all_s_first_order": ("The paper's formula (Section 4.5, after Koh & Liang): the parameters after adding a "
                          "point by the influence function with the base set's Hessian, the utility change "
                          "linearised (all_s_influence(approximation='influence', utility_change='linear'))."),
    "all_s": ("Not the paper's formula: this package's update, one Newton step with the Hessian of the changed "
              "set and the utility evaluated at the updated parameters (all_s_influence's defaults); the "
              "paper's claim is judged on (c)."),
}
_SECTION = ("Section 5, 'Comparing Approximation Accuracy'; Figure 3(a) (fig:comp, the data values of each method; "
            "the text cites it as fig:adv(d))")


def _all(verdicts):
    """Conjunction of three-valued verdicts: False if any is False, True if all are True, else None."""
    return False if False in verdicts else True if all(v is True for v in verdicts) else None


def _condition_text(name, mean, low, high, side, threshold, label, verdict, sd, level):
    """``name mean [low, high] >= label`` (or ``<``, ...) and, when undecided, the repetitions that would decide."""
    relation = {(True, "above"): ">=", (True, "below"): "<=", (False, "above"): "<", (False, "below"): ">",
                (None, "above"): "straddles", (None, "below"): "straddles"}[verdict, side]
    text = f"{name} {mean:.3f} [{low:.3f}, {high:.3f}] {relation} {label}"
    if verdict is None:
        needed = repetitions_to_decide(sd, mean - threshold, level)
        text += f" (about {needed} repetitions would decide)" if needed else " (no practical number would decide)"
    return text


def evaluate_claims(summary: pd.DataFrame, distances: pd.DataFrame, *, uniform_error: float,
                    spearman_threshold: float = 0.8, error_threshold: float = 0.25, alpha: float = 0.05,
                    level: float = 0.95, theorem: dict | None = None) -> list[Claim]:
    r"""The claims, decided from the run on intervals fixed before running (see the package docstring).

    1. (a), (b), (c) recover the SV (and, as this package's own checks, its
       group-testing refinements (b') and (b*) and its all-S update (c')): the ``level`` t-interval of
       the mean Spearman lies at or above ``spearman_threshold``, that of the
       mean relative l2 error at or below ``error_threshold`` and below the
       uniform split's error ``uniform_error``. (b) is Algorithm 1 as
       published (independent tests), (c) all-S with the paper's influence
       function; their notes give the interval of their refinement, (b*) and
       (c'), beside it where ``summary`` has it.
    2. (a)-(c) are closest to each other: every interval of a mean distance
       within (a)-(c) lies below every interval of a distance from largest-S
       to one of them, and below the uniform split's error (closer to each
       other than a constant is to the exact values: the trivial baseline).
    3. Largest-S is correlated with the reference: Spearman > 0 with
       one-sided p-value < ``alpha`` (a test against random values).
    4. Largest-S does not recover the SV: its (deterministic) relative error
       fails the recovery criterion of claim 1, above ``error_threshold`` or
       not below the uniform split's error.

    5. With ``theorem`` (:func:`~._methods.theorem3_summary`) and the
       runs of :func:`~._methods.theorem3_runs` in ``summary``, this
       package's check that (b) recovers the SV at Theorem 3's count of
       tests for the precision the paper asks of (a), by claim 1's criterion.

    ``summary`` is :func:`summarise`'s table (optionally with
    ``rel_l2_error_of_mean``, :func:`mean_estimate_error`, used in notes),
    ``distances`` :func:`pairwise_distances`'. An undecided verdict is
    reported as inconclusive (``holds=False``), with a note that says so.

    Returns
    -------
    list of Claim
    """
    claims = [_recovery_claim(key, summary.loc[key], uniform_error=uniform_error,
                              spearman_threshold=spearman_threshold, error_threshold=error_threshold, level=level,
                              sampler=_sampler_note(key, summary))
              for key in RECOVERY_METHODS]
    claims.append(_closeness_claim(distances, level, uniform_error))
    claims.append(_correlation_claim(summary.loc["largest_s"], alpha))
    claims.append(_largest_s_claim(summary, uniform_error=uniform_error, error_threshold=error_threshold))
    if theorem is not None:
        if THEOREM_KEY not in summary.index:
            raise ValueError(f"theorem is given but summary has no {THEOREM_KEY!r} row: add the runs of "
                             "theorem3_runs to the table the summary comes from.")
        claims.append(_recovery_claim(THEOREM_KEY, summary.loc[THEOREM_KEY], uniform_error=uniform_error,
                                      spearman_threshold=spearman_threshold, error_threshold=error_threshold,
                                      level=level, sampler=_theorem_note(theorem),
                                      setting="by the recovery rule of (a)-(c)"))
    return claims


def _theorem_note(theorem: dict) -> str:
    """The count Theorem 3 asks, how it was drawn, and how often its promised event occurred."""
    return (f"Theorem 3 asks T = {theorem['tests']:,} tests for epsilon = {theorem['epsilon']:g} (1/N, the precision "
            f"the paper asks of (a)), delta = {theorem['delta']:g} and the utility's range r = "
            f"{theorem['utility_range']:.3f} over all coalitions: {theorem['times_common_budget']:.0f}x the common "
            f"budget ({theorem['tests'] / theorem['n_coalitions']:.0f}x the {theorem['n_coalitions']:,} coalitions), "
            "drawn as published (independently, no centering) from the table of every coalition's utility, "
            "without the small-game enumeration (which would return the exact values at this count). The "
            f"theorem's event ||estimate - SV||_2 <= epsilon occurred in {theorem['within_epsilon']} of "
            f"{theorem['n_repetitions']} repetitions (promised with probability >= {1 - theorem['delta']:g}; "
            f"largest error {theorem['max_l2_error']:.4f}).")


def _undecided(verdict: bool | None) -> str | None:
    """The verdict word of a claim whose intervals decide nothing: "inconclusive", else None."""
    return "inconclusive" if verdict is None else None


#: The paper's method -> the variants of it its note reports, and how the note names each: this package's
#: refinements, and for (c) the paper's update with the utility evaluated (the same base sets: the two differ by
#: the linearisation of the utility change alone).
_REFINED = {"gt_paper": (("gt_paper_wor", "The same estimator on this package's tests without replacement, (b*),"),),
            "all_s_first_order": (("all_s_influence_evaluated", "The paper's update with the utility evaluated at the "
                                                                "updated parameters instead of linearised, (c''),"),
                                  ("all_s", "All-S with this package's Newton update, (c'),"))}


def _sampler_note(key: str, summary) -> str:
    """How ``key`` computes its values; for (b) and (c), also their variants' means on the same budget."""
    note = _SAMPLERS.get(key, "")
    for variant, name in _REFINED.get(key, ()):
        if variant in summary.index:
            refined = summary.loc[variant]
            note += (f" {name} has mean Spearman {refined['spearman']:.3f} [{refined['spearman_ci_low']:.3f}, "
                     f"{refined['spearman_ci_high']:.3f}] and mean relative l2 error {refined['rel_l2_error']:.3f} at "
                     "the same budget.")
    return note


def _recovery_claim(key: str, row, *, uniform_error: float, spearman_threshold: float, error_threshold: float,
                    level: float, sampler: str = "", setting: str = "at the common budget"):
    """Claim 1 for one of (a)-(c): its t-intervals against the thresholds and the uniform split's error."""
    level_text = f"{level:.0%} t-interval"
    n = int(row["n_repetitions"])
    parts = [("mean Spearman", "spearman", "above", spearman_threshold, f"{spearman_threshold:g}"),
             ("mean relative l2 error", "rel_l2_error", "below", error_threshold, f"{error_threshold:g}"),
             ("mean relative l2 error", "rel_l2_error", "below", uniform_error,
              f"the uniform split's {uniform_error:.3f}")]
    verdicts, texts = [], []
    for name, column, side, threshold, label in parts:
        low, high = row[f"{column}_ci_low"], row[f"{column}_ci_high"]
        verdicts.append(decide(low, high, threshold, side))
        texts.append(_condition_text(name, row[column], low, high, side, threshold, label, verdicts[-1],
                                     row[f"{column}_sd"], level))
    verdict = _all(verdicts)
    note = f"{level:.0%} CIs over {n} repetitions: " + "; ".join(texts) + "."
    if verdict is None:
        note = "undecided: the interval straddles the threshold. " + note
    elif verdict is False and "rel_l2_error_of_mean" in row and np.isfinite(row["rel_l2_error_of_mean"]):
        variance = row["rel_l2_error_of_mean"] < 0.5 * row["rel_l2_error"]
        note += (f" Cause: {'variance at the common budget, not bias' if variance else 'bias'}: the estimate "
                 f"averaged over the {n} repetitions has relative error {row['rel_l2_error_of_mean']:.3f} "
                 f"(one repetition's: {row['rel_l2_error']:.3f} on average, Spearman sd {row['spearman_sd']:.3f}).")
    if sampler:
        note += " " + sampler
    own = key in _OWN_METHODS + (THEOREM_KEY,)
    return claim(
        f"{METHODS[key]} recovers the reference Shapley values {setting}.",
        "[mean Spearman, CI low, CI high, mean relative l2 error, CI low, CI high, uniform split's error]",
        [row["spearman"], row["spearman_ci_low"], row["spearman_ci_high"], row["rel_l2_error"],
         row["rel_l2_error_ci_low"], row["rel_l2_error_ci_high"], uniform_error], verdict is True,
        source="reproduction" if own else "paper", section=None if own else _SECTION,
        criterion=(f"{level_text} of the mean Spearman over {n} repetitions >= {spearman_threshold}, and that "
                   f"of the mean relative l2 error <= {error_threshold} and below the uniform split's "
                   f"error ({uniform_error:.3f}); fails if an interval lies wholly on the wrong side."),
        note=note, undecided=_undecided(verdict))


def _closeness_claim(distances, level: float, uniform_error: float):
    """Claim 2: every (a)-(c) distance interval below every one to largest-S and below the uniform split's error."""
    level_text = f"{level:.0%} t-interval"
    pair_keys = distances[["method_a", "method_b"]]
    within = distances[pair_keys.isin(CLOSE_METHODS).all(axis=1)]
    to_largest = distances[pair_keys.isin(["largest_s"]).any(axis=1) & pair_keys.isin(CLOSE_METHODS).any(axis=1)]
    far, near = within.loc[within.ci_high.idxmax()], within.loc[within.ci_low.idxmax()]
    nearest = to_largest.loc[to_largest.ci_low.idxmin()]
    ceiling = min(to_largest.ci_low.min(), uniform_error)  # closer than largest-S, and than a constant
    verdict = (True if within.ci_high.max() < ceiling
               else False if within.ci_low.max() >= min(to_largest.ci_high.min(), uniform_error) else None)
    note = (f"highest {level:.0%} CI upper end within (a)-(c): {far.method_a}-{far.method_b} {far.rel_distance:.3f} "
            f"[{far.ci_low:.3f}, {far.ci_high:.3f}] ({far.n_repetitions} repetitions); lowest lower end to "
            f"largest-S: {nearest.method_a}-{nearest.method_b} {nearest.rel_distance:.3f} [{nearest.ci_low:.3f}, "
            f"{nearest.ci_high:.3f}]; the uniform split's error, the trivial baseline: {uniform_error:.3f}.")
    if verdict is False:
        cause = (f"{near.method_a} and {near.method_b} lie {near.rel_distance:.3f} apart [{near.ci_low:.3f}, "
                 f"{near.ci_high:.3f}], " + ("farther than the uniform split lies from the exact values"
                                            if near.ci_low >= uniform_error else "as far as largest-S lies from them"))
        note = f"does not hold: {cause}. {note}"
    return claim(
        "The approximations (a)-(c) are closest to each other, farther from largest-S influence.",
        "[max mean distance within (a)-(c), max CI high, min mean distance to largest-S, min CI low]",
        [within.rel_distance.max(), within.ci_high.max(), to_largest.rel_distance.min(), to_largest.ci_low.min()],
        verdict is True, source="paper", section=_SECTION,
        criterion=(f"the upper ends of the {level_text}s of the mean relative l2 distances between two of (a), "
                   "(b) and (c) (the paper's methods) are all below the lower ends of those from largest-S to each "
                   "of them, and below the uniform split's relative error (the trivial baseline: approximations "
                   "that agree less well than a constant agrees with the exact values are not close); fails if "
                   "some within-pair's lower end reaches some largest-S pair's upper end or the uniform split's "
                   "error."),
        note=note if verdict is not None else "undecided: the intervals overlap. " + note,
        undecided=_undecided(verdict))


def _correlation_claim(largest, alpha: float):
    """Claim 3: largest-S's (single, deterministic) Spearman with the reference is positive and significant."""
    correlated = (largest["spearman"] > 0) and (largest["spearman_p"] < alpha)
    return claim(
        "Largest-S influence is correlated with the reference Shapley values.",
        "[Spearman, one-sided p-value]", [largest["spearman"], largest["spearman_p"]], correlated,
        source="paper", section=_SECTION,
        criterion=(f"Spearman with the exact reference > 0 with one-sided p < {alpha} (largest-S is "
                   "deterministic: one run; random values have Spearman 0 in expectation)."),
        note=None if correlated else f"Spearman {largest['spearman']:.3f}, p = {largest['spearman_p']:.3g}.")


def _largest_s_claim(summary, *, uniform_error: float, error_threshold: float):
    """Claim 4: largest-S's (deterministic) error fails the recovery criterion (a)-(c) are held to."""
    largest = summary.loc["largest_s"]
    worst = summary.loc[list(CLOSE_METHODS)]
    error = float(largest["rel_l2_error"])
    verdict = error > error_threshold or error >= uniform_error
    closer = "closer to" if error >= uniform_error else "farther from"
    note = (f"largest-S error {error:.3f} against the recovery threshold {error_threshold:g} and the uniform "
            f"split's error {uniform_error:.3f} (a constant is {closer} the exact values); (a)-(c)'s mean errors "
            f"reach {worst.rel_l2_error.max():.3f}.")
    if not verdict:
        note = f"does not hold: largest-S meets the recovery criterion. {note}"
    if "loo_exact" in summary.index:
        note += (f" The same scheme on exact leave-one-out marginals, (d*), has error "
                 f"{summary.loc['loo_exact', 'rel_l2_error']:.3f}.")
    return claim(
        "Largest-S influence cannot recover the Shapley value.",
        "[largest-S relative l2 error, the uniform split's error]", [error, uniform_error], verdict,
        source="paper", section=_SECTION,
        criterion=(f"largest-S fails the recovery criterion of (a)-(c): its relative l2 error (deterministic: one "
                   f"run) is above {error_threshold:g} or not below the uniform split's error; does not hold if it "
                   f"is at most {error_threshold:g} and below the uniform split's."),
        note=note)
