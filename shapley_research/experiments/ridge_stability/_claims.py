"""The key numbers and the claims of the paper and of the reproduction, from the grid's table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._common import claim
from .._verdicts import VERDICT_WORDS
from ._bootstrap import INTERIOR_TO_FAIL, LOCATED_TO_HOLD, U_SHAPE_LEVEL, u_shape_interval
from ._measure import _spearman, u_shape_fraction, u_shape_statistics
from ._tables import THEOREM5_CONVENTION, _convention_rows, bootstrap_matrix

if TYPE_CHECKING:
    import pandas as pd
    from .._common import Claim

LABELS = {"fixed_alpha": "Ridge(alpha = N lambda), intercept (main)",
          "per_coalition": "alpha_S = |S| lambda, intercept",
          "no_intercept": "alpha = N lambda, no intercept (paper's objective as written)"}

SECTION_FIGURE = "Section 5, 'Stable learning algorithms'; Fig. 5(a) (fig:stable_noise)"
SECTION_THEOREM5 = "Section 4.4, Theorem 5 (proof: appendix 'Proof of Theorem 5')"


def _shape_note(shape: dict, factor: float) -> str | None:
    """Why a curve is not U-shaped (None when it is)."""
    if shape["holds"]:
        return None
    if not shape["interior"]:
        return f"the minimum of the variance is at the edge of the grid (lambda = {shape['lambda_argmin']:.3g})."
    if shape["min_variance"] <= 0:
        return "the debiased variance at the minimum is <= 0 (Monte Carlo noise dominates there)."
    # four digits: a ratio of 1.9955 must not read as the 2x it falls short of
    return (f"the ends are {shape['left_ratio']:.4g}x and {shape['right_ratio']:.4g}x the minimum; both must be at "
            f"least {factor:g}x.")


def _trend(rho: float, threshold: float, n_points: int, what: str) -> tuple[bool, str | None]:
    """Whether a Spearman correlation reaches ``threshold`` (sign gives the direction) and, if not, why."""
    holds = bool(np.isfinite(rho) and rho * np.sign(threshold) >= abs(threshold))
    if holds:
        return True, None
    if not np.isfinite(rho):
        return False, f"only {n_points} grid point(s) {what}: too few for a Spearman correlation."
    return False, f"the Spearman correlation {what} is {rho:.3g} over {n_points} grid points."


def evaluate_claims(table: pd.DataFrame, rows: list[dict[str, Any]], factor: float = 2.0,
                    spearman_threshold: float = 0.8) -> tuple[dict[str, Any], list[Claim]]:
    r"""The key numbers and the claims, from :func:`grid_table`'s table and :func:`run_grid`'s rows.

    The paper's claims (main convention ``"fixed_alpha"``): U shape; the variance falls left of its
    minimum and rises right of it; its :math:`\hat\sigma` and :math:`\hat\beta = \hat\sigma^2/(2\lambda N)`
    rise right of it; Theorem 5, judged under :data:`THEOREM5_CONVENTION` only, where its hypotheses
    hold (with an unpenalised intercept the formula's ratio goes to ``metrics`` and the note, unjudged);
    the identity :math:`\|\hat s - \frac{U(D)}{N}\mathbf 1\|_2 = \sqrt{N\,\mathrm{Var}(\hat s)}`. The
    reproduction's checks: the U shape under the two other conventions. Each claim's ``criterion``
    states its threshold. The three U-shape claims are decided on the bootstrap over the shared
    permutations (the rows' ``resampled_variance``; :mod:`._bootstrap`), inconclusive where the
    rows have none; ``metrics["u_shape_bootstrap"]`` holds the intervals.

    Returns
    -------
    metrics : dict
    claims : list of :class:`~shapley_research.experiments.Claim`
    """
    metrics: dict = {"n_lambdas": int(table["lambda"].nunique()), "u_shape_factor": factor,
                     "spearman_threshold": spearman_threshold}
    shapes, ratios = _convention_shapes(table, rows, factor)
    metrics.update(shapes)
    intervals = _u_shape_intervals(rows, shapes, factor)
    metrics["u_shape_bootstrap"] = _interval_metrics(intervals)
    lams, _, sub = ratios["fixed_alpha"]
    metrics.update(_main_statistics(table, rows, lams, sub, shapes["fixed_alpha"]))
    formula, outside = _formula_beyond_scope(ratios)
    metrics.update(formula)
    theorem5, thm_verdict, thm_note = _theorem5(ratios, metrics["kappa"], outside)
    metrics.update(theorem5)
    trends = _trend_verdicts(lams, sub, shapes, intervals, metrics, spearman_threshold)
    n_permutations = metrics["n_permutations"]
    claims = (_variance_claims(shapes["fixed_alpha"], intervals["fixed_alpha"], trends, factor, spearman_threshold,
                               n_permutations)
              + _stability_claims(metrics, trends, spearman_threshold)
              + _theorem5_claims(thm_verdict, thm_note, metrics["max_identity_gap"])
              + _reproduction_claims(shapes, intervals, factor, n_permutations))
    return metrics, claims


def _convention_shapes(table, rows: list[dict], factor: float) -> tuple[dict, dict]:
    """Per convention: the U-shape statistics, and ``(lambdas, value range / pair bound, its rows)``."""
    shapes, ratios = {}, {}
    for convention in table["convention"].unique():
        lams, sub = _convention_rows(table, convention)
        shape = u_shape_statistics(lams, sub["variance"].to_numpy(), factor)
        shape["bootstrap_u_shape_fraction"] = u_shape_fraction(lams, bootstrap_matrix(rows, convention)[1], factor)
        shape["min_variance_se"] = float(sub["variance_se"].to_numpy()[shape["argmin"]])
        shapes[convention] = shape
        ratios[convention] = (lams, sub["value_range"].to_numpy() / sub["pair_bound"].to_numpy(), sub)
    return shapes, ratios


def _main_statistics(table, rows: list[dict], lams: np.ndarray, sub, shape: dict) -> dict:
    """The key numbers of the main convention (``sub``, its rows), and the identity's largest gap over ``table``."""
    k = shape["argmin"]
    sigma, beta = sub["sigma"].to_numpy(), sub["beta"].to_numpy()
    rho_sigma, rho_beta = _spearman(lams[k:], sigma[k:]), _spearman(lams[k:], beta[k:])
    identity = float(np.abs(table["uniform_error"] - np.sqrt(len(rows[0]["values"]) * table["variance_raw"])).max())
    fits = sub["fits_well"].to_numpy()
    return {
        "lambda_argmin": shape["lambda_argmin"], "min_variance": shape["min_variance"],
        "left_ratio": shape["left_ratio"], "right_ratio": shape["right_ratio"],
        "spearman_left": shape["spearman_left"], "spearman_right": shape["spearman_right"],
        "spearman_sigma_right": rho_sigma, "spearman_beta_right": rho_beta, "max_sigma_paper": float(sigma.max()),
        "fits_well_lambda_max": float(lams[fits].max()) if fits.any() else None,
        "best_test_mse": float(sub["test_mse"].min()),
        "lambda_best_test_mse": float(lams[int(np.argmin(sub["test_mse"].to_numpy()))]),
        "min_uniform_error": float(sub["uniform_error_debiased"].min()), "epsilon": float(sub["epsilon"].iloc[0]),
        "kappa": float(sub["kappa"].iloc[0]), "max_identity_gap": identity,
        "n_permutations": int(sub["n_permutations"].iloc[0])}


def _formula_beyond_scope(ratios: dict) -> tuple[dict, list[str]]:
    """Theorem 5's formula where its hypotheses fail (unpenalised intercept): reported, not judged.

    Returns the metrics entries and one sentence per convention where the formula is exceeded.
    """
    entries: dict[str, float | None] = {}
    outside: list[str] = []
    for convention in ("fixed_alpha", "per_coalition"):
        if convention in ratios:
            c_lams, ratio, _ = ratios[convention]
            over = np.flatnonzero(ratio > 1)
            entries[f"max_range_over_formula_{convention}"] = float(ratio.max())
            entries[f"lambda_first_formula_exceeded_{convention}"] = float(c_lams[over[0]]) if over.size else None
            if over.size:
                slope = np.polyfit(np.log(c_lams[over]), np.log(ratio[over]), 1)[0] if over.size > 1 else np.nan
                outside.append(f"{convention}: from lambda = {c_lams[over[0]]:.3g} on, up to {ratio.max():.3g}x at "
                               f"lambda = {c_lams[int(np.argmax(ratio))]:.3g}, log-log slope in lambda {slope:.2f}")
    return entries, outside


def _theorem5(ratios: dict, kappa: float, outside: list[str]) -> tuple[dict, tuple, str]:
    """Theorem 5 judged under :data:`THEOREM5_CONVENTION` only: metrics entries, ``(value, holds, undecided)``, note."""
    thm = THEOREM5_CONVENTION
    entries: dict = {}
    thm_undecided: str | None
    thm_value, thm_holds, thm_undecided = float("nan"), False, "outside its scope"
    thm_note = f"Not checked: {thm}, the only convention that meets the hypotheses, was not run. "
    if thm in ratios:
        t_lams, ratio, t_sub = ratios[thm]
        certified = t_sub["guarantee_holds"].to_numpy().astype(bool)
        within = t_sub["uniform_error_debiased"].to_numpy() <= t_sub["epsilon"].to_numpy()
        thm_value, thm_holds, thm_undecided = float(ratio.max()), bool(ratio.max() <= 1.0), None
        entries = {"max_range_over_bound": thm_value, "lambda_max_range_over_bound": float(
            t_lams[int(np.argmax(ratio))]), "n_bound_violations": int((ratio > 1).sum()),
            "min_pair_bound": float(t_sub["pair_bound"].min()), "n_certified_by_theorem5": int(certified.sum()),
            "n_uniform_error_within_epsilon": int(within.sum()),
            "n_certified_but_error_above_epsilon": int((certified & ~within).sum())}
        thm_note = (f"Judged under {thm} (fully penalised ridge), where the hypotheses hold; sigma bounds the sup over "
                    f"every coalition's model and all training and test points (kappa = {kappa:.3g}). "
                    + (f"The bound holds with {1 / thm_value:.3g}x to spare: a sanity check (a proven bound this far "
                       "from the estimates can fail only through a bug), not evidence. " if thm_holds else
                       f"The range exceeds the bound at {int((ratio > 1).sum())} lambdas (the range of the estimates "
                       "includes their Monte Carlo noise). "))
    if outside:
        thm_note += ("With an unpenalised intercept (fixed_alpha, per_coalition) the hypotheses fail: as lambda grows "
                     "the learner becomes the coalition mean, whose stability (up to 8 max|y|^2/|S|) does not shrink "
                     "with lambda, unlike the formula. The formula is exceeded there (" + "; ".join(outside)
                     + "): outside the theorem, not a violation of it.")
    return entries, (thm_value, thm_holds, thm_undecided), thm_note


def _trend_verdicts(lams: np.ndarray, sub, shapes: dict, intervals: dict, metrics: dict, thr: float) -> dict:
    """``(holds, note)`` of the four trend claims on the main convention: variance falls, rises; sigma, beta rise."""
    shape = shapes["fixed_alpha"]
    k = shape["argmin"]
    rho_sigma, rho_beta = metrics["spearman_sigma_right"], metrics["spearman_beta_right"]
    sigma, beta = sub["sigma"].to_numpy(), sub["beta"].to_numpy()
    falls, falls_note = _trend(shape["spearman_left"], -thr, k + 1, "up to the minimum")
    rises, rises_note = _trend(shape["spearman_right"], thr, len(lams) - k, "from the minimum on")
    if rises and (intervals.get("no_intercept") or {}).get("verdict") is False:
        rises_note = ("Under no_intercept, where Theorem 5 applies, the variance does not rise again (the "
                      "reproduction's check): the rise comes with the unpenalised intercept, not with a rising beta.")
    sigma_rises, sigma_note = _trend(rho_sigma, thr, len(lams) - k, "of sigma_hat from the minimum on")
    beta_rises, beta_note = _trend(rho_beta, thr, len(lams) - k, "of beta_hat from the minimum on")
    if not beta_rises and sigma_rises and np.isfinite(rho_beta):
        beta_note = (f"sigma_hat saturates at {sigma.max():.3g} (residuals stay bounded as lambda grows) while lambda "
                     f"grows {lams[-1] / lams[k]:.3g}-fold right of the minimum, so sigma_hat^2/lambda falls "
                     f"{beta[k] / beta[-1]:.3g}-fold: beta does not explain the rise of the variance.")
    return {"falls": (falls, falls_note), "rises": (rises, rises_note), "sigma": (sigma_rises, sigma_note),
            "beta": (beta_rises, beta_note)}


def _paper_claim(text, stat, value, holds, criterion, note=None, section=SECTION_FIGURE, sanity=False,
                 undecided=None):
    """A claim of the paper (default section: the figure's)."""
    return claim(text, stat, value, holds, source="paper", section=section, criterion=criterion, note=note,
                 sanity=sanity, undecided=undecided)


def _variance_claims(shape: dict, interval: dict | None, trends: dict, factor: float, thr: float,
                     n_permutations: int) -> list:
    """The paper's claims on the variance under the main convention: U shape, falls, then rises."""
    (falls, falls_note), (rises, rises_note) = trends["falls"], trends["rises"]
    rule = "fixed_alpha: Spearman correlation of the variance with lambda over the grid points"
    verdict = interval["verdict"] if interval else None
    return [
        _paper_claim("The variance of the training points' values is U-shaped in the regularisation strength: more "
                     "regularisation first lowers it, excessive regularisation raises it again.",
                     "min(end variance / minimum variance), fixed_alpha", shape["min_end_ratio"], verdict is True,
                     f"fixed_alpha: the minimum of the debiased variance lies strictly inside the lambda grid and the "
                     f"variance at both ends is at least {factor:g}x the minimum, "
                     + _bootstrap_rule(interval, factor, n_permutations),
                     _interval_note(shape, interval, factor, n_permutations),
                     undecided="inconclusive" if verdict is None else None),
        _paper_claim("While the model fits the data, more regularisation (a more stable learner) lowers the variance "
                     "of the values.", "Spearman(variance, lambda) left of the minimum", shape["spearman_left"], falls,
                     f"{rule} up to and including the minimum <= -{thr:g}.", falls_note),
        _paper_claim("With excessive regularisation the variance of the values increases with the regularisation "
                     "strength.", "Spearman(variance, lambda) right of the minimum", shape["spearman_right"], rises,
                     f"{rule} from the minimum on >= {thr:g}.", rises_note),
    ]


def _stability_claims(metrics: dict, trends: dict, thr: float) -> list:
    """The paper's explanation of the rise: sigma, then beta, grow with lambda right of the variance minimum."""
    (sigma_rises, sigma_note), (beta_rises, beta_note) = trends["sigma"], trends["beta"]
    return [
        _paper_claim("Once the model no longer fits, the Lipschitz constant sigma = 2|x_i^T theta - y_i| |x_i| grows "
                     "with the regularisation strength.", "Spearman(sigma_hat, lambda) right of the variance minimum",
                     metrics["spearman_sigma_right"], sigma_rises, f"Spearman correlation with lambda, from the "
                     f"variance minimum on, of the paper's estimate sigma_hat = max_i 2|x_i^T theta_D - y_i| ||x_i|| "
                     f"(model fitted on all N points) >= {thr:g}.", sigma_note or f"sigma_hat rises but saturates at "
                     f"{metrics['max_sigma_paper']:.3g}: as lambda grows the model tends to a constant and sigma_hat "
                     "to max_i 2|y_i| ||x_i||."),
        _paper_claim("Because sigma grows, the stability parameter beta ~ sigma^2 / lambda increases with excessive "
                     "regularisation (the paper's explanation of the rise).",
                     "Spearman(beta_hat = sigma_hat^2/(2 lambda N), lambda) right of the variance minimum",
                     metrics["spearman_beta_right"], beta_rises, f"Spearman correlation of sigma_hat^2/(2 lambda N) "
                     f"with lambda, from the variance minimum on, >= {thr:g}.", beta_note),
    ]


def _theorem5_claims(thm_verdict: tuple, thm_note: str, identity: float) -> list:
    """Two sanity checks: Theorem 5's bound (judged where it applies) and the variance / uniform-error identity."""
    thm = THEOREM5_CONVENTION
    thm_value, thm_holds, thm_undecided = thm_verdict
    return [
        _paper_claim("Theorem 5: for a learner with uniform stability C_stab/|S|, every difference s_i - s_j is at "
                     "most 2 C_stab (1 + log(N-1)) / (N-1).", f"max over lambda of (max_i s_i - min_i s_i) / bound, "
                     f"{thm}", thm_value, thm_holds, f"{thm} (fully penalised ridge: the theorem's hypotheses): at "
                     "every lambda the range of the estimated values <= 2 C_stab (1+log(N-1))/(N-1), C_stab = "
                     "sigma^2/(2 lambda), sigma = 2 max_z (|y_z| + ||x_z|| ||y_D|| / (2 sqrt(N lambda))) ||x_z|| over "
                     "training and test points z (a rigorous bound on the sup over every coalition's model).",
                     thm_note, SECTION_THEOREM5,  # a proven bound, met with a wide slack: only a bug breaks it
                     sanity=True, undecided=thm_undecided),
        _paper_claim("The variance of the Shapley values is identical to the approximation error of the uniform value "
                     "division: ||s - U(D)/N 1||_2 = sqrt(N Var(s)).", "max |uniform-division error - sqrt(N Var)|",
                     identity, bool(identity <= 1e-9), "max over every (convention, lambda) of "
                     "| ||s_hat - U(D)/N 1||_2 - sqrt(N Var_pop(s_hat)) | <= 1e-9 (the estimates sum to U(D)).",
                     "An algebraic identity for estimates that sum to U(D): a sanity check of the estimator, not "
                     "evidence." if identity <= 1e-9 else "the estimated values do not sum to U(D).",
                     sanity=True),  # an algebraic identity of efficient estimates
    ]


def _reproduction_claims(shapes: dict, intervals: dict, factor: float, n_permutations: int) -> list:
    """The reproduction's checks: the U shape under the two other conventions, where they were run."""
    intro = {"per_coalition": "Sensitivity: the paper's objective on every coalition (alpha_S = |S| lambda).",
             "no_intercept": "Not a claim of the paper. Under no_intercept every model tends to theta = 0, and every "
                             "value to 0, as lambda grows (by construction), so the variance cannot rise again."}
    claims = []
    for convention in ("per_coalition", "no_intercept"):
        if convention in shapes:
            other, interval = shapes[convention], intervals.get(convention)
            verdict = interval["verdict"] if interval else None
            claims.append(claim(
                f"The variance of the values is U-shaped in lambda also under the {convention} convention "
                f"({LABELS[convention]}).", f"min(end variance / minimum variance), {convention}",
                other["min_end_ratio"], verdict is True, source="reproduction",
                criterion=f"{convention}: as the paper's U-shape claim (minimum strictly inside the grid, both ends "
                          f">= {factor:g}x the minimum), " + _bootstrap_rule(interval, factor, n_permutations),
                note=intro[convention] + " " + _interval_note(other, interval, factor, n_permutations),
                undecided="inconclusive" if verdict is None else None,
                by_construction=convention == "no_intercept"))  # cannot rise again: decided by the learner
    return claims


# --------------------------------------------------------------------------------------------
# The U-shape claims' bootstrap over the shared permutations
# --------------------------------------------------------------------------------------------

def _u_shape_intervals(rows: list[dict], shapes: dict, factor: float) -> dict[str, dict | None]:
    """Per convention: :func:`~._bootstrap.u_shape_interval` on the rows' resamples (None where they have none)."""
    intervals: dict[str, dict | None] = {}
    for convention in shapes:
        lams, replicates = bootstrap_matrix(rows, convention, "resampled_variance")
        mine = sorted((row for row in rows if row["convention"] == convention), key=lambda r: r["lam"])
        if not len(replicates):
            intervals[convention] = None
            continue
        variance = np.array([row["variance"] for row in mine])
        shift = np.array([row["mc_noise"] for row in mine])  # aligns the resamples on the estimate
        intervals[convention] = u_shape_interval(lams, variance, replicates, shift, int(mine[0]["n_permutations"]),
                                                 factor)
    return intervals


def _interval_metrics(intervals: dict[str, dict | None]) -> dict[str, Any]:
    """``metrics["u_shape_bootstrap"]``: the rule's constants and, per convention, the interval and verdict.

    An infinite end of an interval (more than 2.5% of the resamples with a minimum <= 0, whose ratio is
    ``inf``; ``nonpositive_minimum_fraction`` says how many) is written ``null`` in ``metrics.json``.
    """
    entries = {c: dict(i, verdict=VERDICT_WORDS[i["verdict"]]) for c, i in intervals.items() if i is not None}
    first = next(iter(entries.values()), {})
    return {"n_bootstrap": first.get("n_bootstrap", 0), "level": U_SHAPE_LEVEL, "located_to_hold": LOCATED_TO_HOLD,
            "interior_to_fail": INTERIOR_TO_FAIL,
            "interval": "percentile (Efron: numpy 'inverted_cdf') of min(end/minimum) over resamples of the shared "
                        "permutations, each resample's debiased variance minus the estimate's mc_noise",
            **entries}


def _bootstrap_rule(interval: dict | None, factor: float, n_permutations: int) -> str:
    """The U-shape claims' decision rule, in words (ends a criterion)."""
    resamples = f"{interval['n_bootstrap']} resamples" if interval else "resamples"
    return (f"decided on a bootstrap over the shared permutations ({resamples} with replacement of the "
            f"{n_permutations} permutations, the same for every lambda; the debiased variance recomputed at every "
            "lambda and aligned on the estimate by subtracting its Monte Carlo correction; the minimum re-selected "
            f"in every resample): holds if the {U_SHAPE_LEVEL:.0%} percentile interval of min(end variance / "
            f"minimum variance) has its lower end >= {factor:g} and a positive minimum lies strictly inside the "
            f"grid in at least {LOCATED_TO_HOLD:.0%} of the resamples; does not hold if its upper end is < "
            f"{factor:g} or the minimum lies strictly inside the grid in fewer than {INTERIOR_TO_FAIL:.0%} of them; "
            "inconclusive otherwise.")


def _interval_note(shape: dict, interval: dict | None, factor: float, n_permutations: int) -> str:
    """The interval, the point estimate and, unless it holds, why (and, if undecided, what would decide it)."""
    if interval is None:
        return (f"Undecided (inconclusive): no bootstrap resamples of the permutations; the point estimate is "
                f"{shape['min_end_ratio']:.4g}.")
    where = max(interval["argmin_fractions"].items(), key=lambda item: item[1])
    located = interval["located_fraction"]
    text = (f"{U_SHAPE_LEVEL:.0%} bootstrap interval of min(end / minimum) over {interval['n_bootstrap']} resamples "
            f"of the {n_permutations} permutations: [{interval['low']:.4g}, {interval['high']:.4g}], point estimate "
            f"{interval['point']:.4g}; a positive minimum strictly inside the grid in {located:.1%} of the resamples "
            f"(the minimum at lambda = {float(where[0]):.3g} in {where[1]:.1%}).")
    if interval["verdict"] is True:
        return text
    if interval["verdict"] is False:
        causes = [f"the minimum lies at the edge of the grid in {1 - interval['interior_fraction']:.1%} of the "
                  "resamples"] if interval["interior_fraction"] < INTERIOR_TO_FAIL else []
        if interval["high"] < factor:
            causes.append(f"the interval's upper end is below {factor:g}")
        point = _shape_note(shape, factor)
        return "Fails: " + " and ".join(causes) + (f"; at the estimate, {point}" if point else ".") + " " + text
    needed = interval["permutations_to_decide"]
    if interval["low"] < factor <= interval["high"]:
        why = f"the interval straddles {factor:g}; " + (
            f"about {needed} permutations (now {n_permutations}) would decide it if it narrowed as 1/sqrt(T) about "
            "the same point estimate" if needed else "more permutations would narrow it")
    else:
        why = (f"a positive minimum lies strictly inside the grid in {located:.1%} of the resamples (at least "
               f"{LOCATED_TO_HOLD:.0%} needed); more permutations would pin the minimum down")
    return f"Undecided (inconclusive): {why}. " + text
