"""Summary statistics of the levels table and the experiment's claims."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from .._common import Claim


def privacy_summary(levels: pd.DataFrame, spearman_threshold: float = -0.8,
                    excess_drop_min_se: float = 2.0) -> dict[str, Any]:
    r"""Statistics of the claim "the value of the noisy half falls as the noise grows".

    Computed on the finite privacy levels (the reference ``epsilon = inf`` is
    excluded), from the ``levels`` table of :func:`run_privacy_noise`. The
    trivial baseline is the uniform split of :math:`U(D) - U(\emptyset)`
    (exact refits), whose share of the noisy half is
    :math:`u = \frac{n_\text{noisy}}{N}\,(U(D) - U(\emptyset))`: it falls with
    the noise too, because :math:`U(D)` does, but moves both halves alike.

    Returns
    -------
    dict
        ``spearman_sigma_vs_noisy_sum`` (per-point SVs summed over the noisy half),
        ``spearman_sigma_vs_noisy_two_player`` (exact two-player SV) and
        ``spearman_sigma_vs_uniform_noisy`` (the baseline's :math:`u`);
        ``noisy_sum_least_noise``/``_most_noise`` with their standard errors,
        ``prefix_path_efficiency_gap_max`` (largest ``|sum of both halves' SVs - (U(all) - U(0))|`` over
        the levels, ``U`` by exact refits: the one-pass approximation's error on the full set),
        ``drop`` (least minus most noise), ``drop_combined_se``
        (``sqrt(se1^2 + se2^2)``), ``drop_in_se``, ``uniform_drop`` (the same
        for :math:`u`, no Monte Carlo error), ``excess_drop = drop - uniform_drop``
        and ``excess_drop_in_se``; ``two_player_drop`` and ``uniform_half_drop``
        (the exact two-player SV's drop and that of its uniform share
        :math:`(U(D) - U(\emptyset)) / 2`); booleans ``monotone_holds``,
        ``two_player_holds``, ``drop_holds`` (``drop > drop_combined_se``),
        ``excess_drop_holds`` (``excess_drop_in_se > excess_drop_min_se``) and
        ``two_player_excess_holds`` (``two_player_drop - uniform_half_drop >``
        :data:`TWO_PLAYER_MIN_EXCESS`).
    """
    from .._verdicts import rank_correlation

    finite = levels[~levels["reference"]]
    noisy = finite[finite["half"] == "noisy"].sort_values("sigma")
    if len(noisy) < 2:
        raise ValueError("need at least two finite privacy levels.")
    n_total = finite.groupby("epsilon")["n_points"].sum()
    uniform = noisy["n_points"] / noisy["epsilon"].map(n_total) * (noisy["accuracy_all"] - noisy["accuracy_empty"])

    def rho(values):  # NaN (never "falls") for a constant series
        return rank_correlation(noisy["sigma"], values)

    rho_sum, rho_two, rho_uniform = rho(noisy["sv_sum"]), rho(noisy["two_player_sv"]), rho(uniform)
    least, most = noisy.iloc[0], noisy.iloc[-1]
    # efficiency of the permutation estimate: the halves' sums add up to the one-pass path's U(all) - U(empty);
    # its distance to the exact refit's U(all) - U(empty) measures the prefix approximation
    by_level = levels.groupby("epsilon")
    gap = (by_level["sv_sum"].sum() - (by_level["accuracy_all"].first() - by_level["accuracy_empty"].first())).abs()
    drop = float(least["sv_sum"] - most["sv_sum"])
    se = float(math.hypot(least["sv_sum_se"], most["sv_sum_se"]))
    uniform_drop = float(uniform.iloc[0] - uniform.iloc[-1])
    excess_in_se = (drop - uniform_drop) / se if se > 0 else math.copysign(math.inf, drop - uniform_drop)
    return {"spearman_sigma_vs_noisy_sum": rho_sum, "spearman_sigma_vs_noisy_two_player": rho_two,
            "spearman_sigma_vs_uniform_noisy": rho_uniform,
            "noisy_sum_least_noise": float(least["sv_sum"]), "noisy_sum_least_noise_se": float(least["sv_sum_se"]),
            "noisy_sum_most_noise": float(most["sv_sum"]), "noisy_sum_most_noise_se": float(most["sv_sum_se"]),
            "sigma_least_noise": float(least["sigma"]), "sigma_most_noise": float(most["sigma"]),
            "prefix_path_efficiency_gap_max": float(gap.max()),
            "drop": drop, "drop_combined_se": se, "drop_in_se": drop / se if se > 0 else math.inf,
            "uniform_drop": uniform_drop, "excess_drop": drop - uniform_drop, "excess_drop_in_se": excess_in_se,
            **_two_player_drops(noisy), "n_levels": int(len(noisy)),
            "monotone_holds": bool(rho_sum <= spearman_threshold),
            "two_player_holds": bool(rho_two <= spearman_threshold),
            "drop_holds": bool(drop > se),
            "excess_drop_holds": bool(excess_in_se > excess_drop_min_se)}


#: The two-player check's margin over its uniform share's drop: one point of test accuracy.
TWO_PLAYER_MIN_EXCESS = 0.01


def _two_player_drops(noisy: pd.DataFrame) -> dict[str, Any]:
    """The exact two-player SV's drop from the least to the most noise, its uniform share's, and the comparison."""
    half_share = (noisy["accuracy_all"] - noisy["accuracy_empty"]) / 2  # the two-player game's uniform split
    drop = float(noisy["two_player_sv"].iloc[0] - noisy["two_player_sv"].iloc[-1])
    half_drop = float(half_share.iloc[0] - half_share.iloc[-1])
    return {"two_player_drop": drop, "uniform_half_drop": half_drop,
            "two_player_excess_holds": bool(drop - half_drop > TWO_PLAYER_MIN_EXCESS)}


def _largest_rise(noisy, column: str, se_column: str | None = None) -> str:
    """Where a value that should fall with sigma rises most between neighbouring levels (the cause of a miss)."""
    values = noisy[column].to_numpy()
    j = int(np.argmax(np.diff(values)))
    rise = float(values[j + 1] - values[j])
    text = (f"it rises by {rise:.3g} from sigma = {noisy['sigma'].iloc[j]:.3g} to {noisy['sigma'].iloc[j + 1]:.3g}"
            if rise > 0 else "it never rises but stays flat over too many levels")
    if se_column is not None and rise > 0:
        se = float(math.hypot(noisy[se_column].iloc[j], noisy[se_column].iloc[j + 1]))
        text += f" ({rise / se:.1f} combined SE" + ("; within the Monte Carlo error)" if rise < 2 * se else ")")
    return text


SECTION = "Section 5 ('Value for Privacy-Preserving Data'), Figure 5b (fig:stable_noise)"
#: what the standard errors measure: the permutation estimate's precision, every level on the same data
ONE_DRAW = ("The combined SE measures the Monte Carlo precision of the permutation estimate on one draw of the data "
            "(one training set, one split into halves, one noise draw, one test set); it says nothing of another "
            "draw.")


def _p1_note(summary: dict[str, Any], noisy: pd.DataFrame) -> str:
    """P1's note: both parts' numbers, and which part fails (with its cause) when P1 does not hold."""
    drops = (f"Spearman {summary['spearman_sigma_vs_noisy_sum']:.2f}, against "
             f"{summary['spearman_sigma_vs_uniform_noisy']:.2f} for the uniform split of U(D) - U(empty), which "
             f"follows U(D), both halves alike. From sigma = {summary['sigma_least_noise']:.3g} to "
             f"{summary['sigma_most_noise']:.3g} the noisy half's SV sum drops by {summary['drop']:.3f} (combined "
             f"SE {summary['drop_combined_se']:.3f}), its uniform share by {summary['uniform_drop']:.3f}: "
             f"an excess of {summary['excess_drop_in_se']:.2f} SE.")
    causes = []
    if not summary["monotone_holds"]:
        causes.append(f"the Spearman part fails: {_largest_rise(noisy, 'sv_sum', 'sv_sum_se')}")
    if not summary["excess_drop_holds"]:
        causes.append("the baseline comparison fails: " + (
            "the excess over the uniform share's drop is within the Monte Carlo error" if summary["excess_drop"] > 0
            else "the SV lowers the noisy half no more than the uniform split does"))
    return drops if not causes else f"{drops} Cause of the miss: {'; '.join(causes)}."


def _two_player_claim(summary: dict[str, Any], noisy: pd.DataFrame, threshold: float) -> Claim:
    """This package's check: the exact two-player SV of the noisy half falls, and more than its uniform share."""
    from .. import claim

    causes = []
    if not summary["two_player_holds"]:
        causes.append(f"the Spearman part fails: {_largest_rise(noisy, 'two_player_sv')}")
    if not summary["two_player_excess_holds"]:
        causes.append(f"the baseline comparison fails: the two-player SV drops no more than {TWO_PLAYER_MIN_EXCESS:g} "
                      "beyond the uniform share")
    note = (f"Spearman {summary['spearman_sigma_vs_noisy_two_player']:.2f}, against "
            f"{summary['spearman_sigma_vs_uniform_noisy']:.2f} for the uniform split (U(D) - U(empty)) / 2. From "
            f"sigma = {summary['sigma_least_noise']:.3g} to {summary['sigma_most_noise']:.3g} the two-player SV drops "
            f"by {summary['two_player_drop']:.3f}, its uniform share by {summary['uniform_half_drop']:.3f} (exact "
            "values, no Monte Carlo error).")
    return claim("The Shapley value of the noisy half, valued as one player against the clean half, decreases as "
                 "its noise grows, more than its uniform share does.",
                 "spearman(sigma, exact two-player SV of the noisy half) and its drop - the uniform share's drop",
                 {"spearman": summary["spearman_sigma_vs_noisy_two_player"],
                  "excess_drop": summary["two_player_drop"] - summary["uniform_half_drop"]},
                 summary["two_player_holds"] and summary["two_player_excess_holds"], source="reproduction",
                 criterion=f"Both: (a) Spearman correlation between sigma and the exact two-player SV of the noisy "
                           f"half (4 coalitions, exact refits) over the {summary['n_levels']} finite privacy levels "
                           f"<= {threshold:g}; and (b) the comparison with the trivial baseline: from the least to "
                           "the most private finite level the two-player SV drops by more than its uniform share "
                           f"(U(D) - U(empty)) / 2 does, by over {TWO_PLAYER_MIN_EXCESS:g} (one point of test "
                           "accuracy). Does not hold if either fails. Exact refits: no Monte Carlo error, on one "
                           "draw of the data (one training set, one split into halves, one noise draw, one test "
                           "set); it says nothing of another draw.",
                 note=note if not causes else f"{note} Cause of the miss: {'; '.join(causes)}.")


def privacy_claims(levels: pd.DataFrame, spearman_threshold: float = -0.8,
                   excess_drop_min_se: float = 2.0) -> tuple[list[Claim], dict[str, Any]]:
    """The claims of the experiment, judged on the ``levels`` table of :func:`run_privacy_noise`.

    The paper's claim (the noisy half's SV falls as its noise grows) is decided
    jointly with the comparison to the trivial baseline: the uniform split of
    U(D) - U(empty) falls with the noise too, so the Spearman criterion alone
    cannot tell the SV from it. The claim holds only if the Spearman criterion
    holds *and* the noisy half's SV drop, from the least to the most private
    level, exceeds its uniform share's drop by more than ``excess_drop_min_se``
    combined standard errors. This package's check: the exact two-player SV of
    the noisy half falls too, and by more than its uniform share (U(D) -
    U(empty)) / 2 does (by over :data:`TWO_PLAYER_MIN_EXCESS`). Returns
    ``(claims, summary)`` with :func:`privacy_summary`'s statistics.
    """
    from .. import claim

    summary = privacy_summary(levels, spearman_threshold, excess_drop_min_se)
    noisy = levels[(levels["half"] == "noisy") & ~levels["reference"]].sort_values("sigma")
    k, thr = summary["n_levels"], spearman_threshold
    claims = [
        claim("The Shapley value of the noisy half of an MNIST training set decreases as its noise grows "
              "(per-point values summed over the half; judged against the uniform-split baseline, which falls "
              "with U(D)).",
              "spearman(sigma, noisy-half SV sum) and (SV drop - uniform-split drop) / combined SE",
              {"spearman": summary["spearman_sigma_vs_noisy_sum"], "excess_drop_in_se": summary["excess_drop_in_se"]},
              summary["monotone_holds"] and summary["excess_drop_holds"], source="paper", section=SECTION,
              criterion=f"Both: (a) Spearman correlation between the per-pixel noise sigma and the noisy half's summed "
                        f"per-point SV (permutation sampling) over the {k} finite privacy levels <= {thr:g}; and "
                        "(b) the comparison with the trivial baseline: (drop of the noisy "
                        "half's SV sum - drop of its uniform share (n_noisy / N)(U(D) - U(empty)), exact refits) / "
                        f"combined standard error of the two SV sums > {excess_drop_min_se:g}, between the least and "
                        f"the most private finite level. Does not hold if either fails. {ONE_DRAW}",
              note=_p1_note(summary, noisy)),
        _two_player_claim(summary, noisy, thr),
    ]
    return claims, summary
