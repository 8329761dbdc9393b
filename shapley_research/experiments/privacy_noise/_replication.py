r"""Replication over data draws: the experiment rerun on further seeds, and this package's claim on the draws.

One run of :func:`run_privacy_noise` rests on **one draw of the data**: one
training set, one split into halves, one noise draw, one test set (and one
set of permutations). Its standard errors measure the permutation estimate's
Monte Carlo precision on that draw and say nothing of another.
:func:`run_replication` reruns the experiment, every setting the same, on
further seeds (``replication_seeds``; each seed redraws all of the above
through ``numpy.random.SeedSequence(seed)``, as :func:`run_privacy_noise`
does) and keeps, per draw, the statistics the two per-draw claims decide on
(:func:`draw_statistics`). :func:`replication_claim` then decides this
package's own check of the paper's Section 5 claim on the Student-t
intervals over the draws of two excess drops, from the least to the most
private finite level:

(a) the noisy half's summed per-point SV :math:`S` beyond its uniform share
    :math:`u = \frac{n_\text{noisy}}{N}\,(U(D) - U(\emptyset))`
    (``excess_drop`` of :func:`privacy_summary`),

    .. math:: e_a = [S(\sigma_\min) - S(\sigma_\max)] - [u(\sigma_\min) - u(\sigma_\max)];

(b) the exact two-player SV :math:`\phi` of the noisy half beyond its uniform
    share :math:`h = (U(D) - U(\emptyset)) / 2`,

    .. math:: e_b = [\phi(\sigma_\min) - \phi(\sigma_\max)] - [h(\sigma_\min) - h(\sigma_\max)].

Ranges: since :math:`\phi - h = (U(\text{noisy}) - U(\text{clean})) / 2`,
:math:`e_b` is half a difference of two differences of accuracies, within
``[-1, 1]`` (:data:`TWO_PLAYER_EXCESS_BOUNDS`). :math:`S` is not bounded
by 1: only the sum over *both* halves telescopes to :math:`U(D) - U(\emptyset)`;
one half's sum adds some of the increments of an accuracy path, which can
exceed 1 in absolute value. So :math:`e_a` gets no range
(:data:`EXCESS_DROP_BOUNDS` is None): its interval is never cut.

The claim holds if both intervals lie above their thresholds (0 for (a),
:data:`TWO_PLAYER_MIN_EXCESS` for (b), the per-draw two-player check's
margin), "does not hold" corrected for the two intervals by Holm's procedure
(:func:`~shapley_research.experiments._family_claims.family_claim`). The
criterion was fixed before the claim's first run.

Resume: with ``cache_dir``, each finished draw's row is written there as it
ends and read back by a rerun after a stop, keyed by the seed, the settings
and the main draw's own numbers (so a code change that moves any number of the
main draw invalidates the cache); the files are removed once every draw is
done, so a finished run leaves nothing behind.
"""

from __future__ import annotations

import inspect
import os
from typing import TYPE_CHECKING, Any


from .._family_claims import family_claim
from .._parallel import check_n_jobs
from .._resume import PartCache, check_replication_seeds
from .._verdicts import DIFFERENCE_RANGE, FAMILY_RULE, interval_verdict
from ._claims import SECTION, TWO_PLAYER_MIN_EXCESS, privacy_summary
from ._measure import run_privacy_noise

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    import pandas as pd
    from .._common import Claim

#: Level of the Student-t intervals over the data draws.
CONFIDENCE = 0.95
#: (a) the mean excess drop of the noisy half's SV sum must lie above this (per draw, P1 asks it to exceed 2 SE).
EXCESS_DROP_THRESHOLD = 0.0
#: (a)'s range: none (a half's SV sum is not bounded by 1; see the module docstring).
EXCESS_DROP_BOUNDS: tuple[float, float] | None = None
#: (b)'s range: half a difference of two accuracy differences.
TWO_PLAYER_EXCESS_BOUNDS = DIFFERENCE_RANGE
#: Fewer data draws give no interval: the claim is then inconclusive.
MIN_DRAWS = 2
#: Stem of the per-draw table in the run's folder.
REPLICATION_TABLE = "privacy_replication"
#: Columns of the per-draw table, in order (``main``: the main run's draw).
DRAW_COLUMNS = ("seed", "main", "excess_drop", "excess_drop_se", "excess_drop_in_se", "two_player_excess",
                "spearman_noisy_sum", "spearman_two_player", "spearman_uniform", "drop", "uniform_drop",
                "two_player_drop", "uniform_half_drop", "paper_criterion_holds", "two_player_criterion_holds",
                "valuation_cpu_seconds")
#: The entries of the claim's family: label -> (column, threshold, bounds).
FAMILY = {
    "(a) excess drop of the noisy half's SV sum (> 0)": ("excess_drop", EXCESS_DROP_THRESHOLD, EXCESS_DROP_BOUNDS),
    f"(b) excess drop of the two-player SV (> {TWO_PLAYER_MIN_EXCESS:g})":
        ("two_player_excess", TWO_PLAYER_MIN_EXCESS, TWO_PLAYER_EXCESS_BOUNDS),
}
_CACHE_PREFIX = "privacy_replication_seed"


def draw_statistics(levels: pd.DataFrame, seed: int, *, main: bool = False, spearman_threshold: float = -0.8,
                    excess_drop_min_se: float = 2.0) -> dict[str, Any]:
    r"""One data draw's row of the replication table, from its ``levels`` table (:func:`run_privacy_noise`).

    Returns
    -------
    dict
        ``seed``, ``main``; ``excess_drop`` (:math:`e_a`), ``excess_drop_se``
        (the combined Monte Carlo SE of the two SV sums) and ``excess_drop_in_se``;
        ``two_player_excess`` (:math:`e_b` = ``two_player_drop - uniform_half_drop``);
        the Spearman correlations of sigma with the noisy half's SV sum, its
        two-player SV and its uniform share; the drops they come from;
        ``paper_criterion_holds`` and ``two_player_criterion_holds`` (the two
        per-draw claims' criteria on this draw); ``valuation_cpu_seconds``
        (the levels' CPU time).
    """
    s = privacy_summary(levels, spearman_threshold, excess_drop_min_se)
    cpu = float(levels.groupby("epsilon")["cpu_seconds"].first().sum())
    return {"seed": int(seed), "main": bool(main), "excess_drop": s["excess_drop"],
            "excess_drop_se": s["drop_combined_se"], "excess_drop_in_se": s["excess_drop_in_se"],
            "two_player_excess": s["two_player_drop"] - s["uniform_half_drop"],
            "spearman_noisy_sum": s["spearman_sigma_vs_noisy_sum"],
            "spearman_two_player": s["spearman_sigma_vs_noisy_two_player"],
            "spearman_uniform": s["spearman_sigma_vs_uniform_noisy"], "drop": s["drop"],
            "uniform_drop": s["uniform_drop"], "two_player_drop": s["two_player_drop"],
            "uniform_half_drop": s["uniform_half_drop"],
            "paper_criterion_holds": bool(s["monotone_holds"] and s["excess_drop_holds"]),
            "two_player_criterion_holds": bool(s["two_player_holds"] and s["two_player_excess_holds"]),
            "valuation_cpu_seconds": cpu}


def _check_settings(settings: dict[str, Any]) -> None:
    """``settings`` must be :func:`run_privacy_noise`'s keyword arguments but those run_replication sets."""
    own = {"seed", "n_jobs", "progress"}
    parameters = inspect.signature(run_privacy_noise).parameters
    unknown = sorted(set(settings) - set(parameters) - own)
    given = sorted(own & set(settings))
    if unknown or given:
        raise TypeError(f"settings must be keyword arguments of run_privacy_noise but seed, n_jobs and progress; "
                        f"got {unknown + given}.")
    missing = sorted(k for k, p in parameters.items() if p.default is inspect.Parameter.empty and k not in settings)
    if missing:
        raise TypeError(f"settings must give every required setting of run_privacy_noise; missing {missing}.")


def _valid_row(seed: int, row: Any) -> bool:
    """Whether a cached value is a draw row of ``seed`` (:data:`DRAW_COLUMNS`)."""
    return isinstance(row, dict) and set(row) == set(DRAW_COLUMNS) and row.get("seed") == seed


def run_replication(main_levels: pd.DataFrame, *, seed: int, replication_seeds: Sequence[int] | None,
                    spearman_threshold: float = -0.8, excess_drop_min_se: float = 2.0, n_jobs: int = 1,
                    progress: Callable[..., Iterable[Any]] | None = None,
                    cache_dir: str | os.PathLike | None = None, **settings: Any) -> pd.DataFrame:
    """The main draw and one rerun of :func:`run_privacy_noise` per replication seed, as the per-draw table.

    Parameters
    ----------
    main_levels : pandas.DataFrame
        The ``levels`` table of the main run (``seed``, the same ``settings``).
    seed : int
        The main run's seed.
    replication_seeds : sequence of int or None
        The extra draws (:func:`check_replication_seeds`).
    spearman_threshold, excess_drop_min_se : float
        As :func:`privacy_claims` (for the per-draw criteria in the table).
    n_jobs : int
        Passed to :func:`run_privacy_noise` (levels in parallel); results do not depend on it.
    progress : callable, optional
        ``progress(iterable, desc=...)`` over the draws (e.g. ``experiments.progress``).
    cache_dir : path, optional
        Where finished draws wait for a rerun after a stop (module docstring); removed once all are done.
    **settings
        :func:`run_privacy_noise`'s keyword arguments but ``seed``, ``n_jobs``, ``progress``.

    Returns
    -------
    pandas.DataFrame
        One row per draw, the main one first, columns :data:`DRAW_COLUMNS`.
    """
    import pandas as pd

    seeds = check_replication_seeds(replication_seeds, seed)
    _check_settings(settings)
    n_jobs = check_n_jobs(n_jobs)
    main = draw_statistics(main_levels, seed, main=True, spearman_threshold=spearman_threshold,
                           excess_drop_min_se=excess_drop_min_se)
    thresholds = {"spearman_threshold": spearman_threshold, "excess_drop_min_se": excess_drop_min_se}
    cache = None
    if cache_dir is not None:
        numbers_of_main = {k: v for k, v in main.items() if k != "valuation_cpu_seconds"}
        cache = PartCache(cache_dir, _CACHE_PREFIX, {"settings": settings, **thresholds, "main": numbers_of_main},
                          valid=_valid_row)
    rows = [main]
    for draw_seed in (progress(seeds, desc="data draws") if progress is not None and seeds else seeds):
        row = cache.read(draw_seed) if cache is not None else None
        if row is None:
            levels, _, _ = run_privacy_noise(**settings, seed=draw_seed, n_jobs=n_jobs)
            row = draw_statistics(levels, draw_seed, spearman_threshold=spearman_threshold,
                                  excess_drop_min_se=excess_drop_min_se)
            if cache is not None:
                cache.write(draw_seed, row)
        rows.append(row)
    if cache is not None:
        cache.clear()
    return pd.DataFrame(rows, columns=list(DRAW_COLUMNS))


def _entries(draws: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """The claim's family: one :func:`interval_verdict` per excess drop, over the draws (strict: above)."""
    entries = {}
    for label, (column, threshold, bounds) in FAMILY.items():
        entry = interval_verdict(draws[column].to_numpy(dtype=float), threshold, "above", CONFIDENCE, strict=True,
                                 bounds=bounds)
        if 0 < entry["n"] < MIN_DRAWS:
            entry["undecidable"] = f"fewer than {MIN_DRAWS} data draws: no interval"
        entries[label] = entry
    return entries


def replication_summary(draws: pd.DataFrame, spearman_threshold: float = -0.8) -> dict[str, Any]:
    """The per-draw table in brief, for ``metrics.json`` (its ``replication`` key).

    Returns
    -------
    dict
        ``seeds``, ``n_draws``; per draw (lists, in the table's order)
        ``excess_drop``, ``excess_drop_in_se``, ``two_player_excess``,
        ``spearman_noisy_sum``, ``spearman_two_player``; the t-intervals
        ``excess_drop_mean``/``_low``/``_high`` and ``two_player_excess_mean``/``_low``/``_high``
        (NaN ends below :data:`MIN_DRAWS` draws); ``n_spearman_holds`` (draws
        whose Spearman of the SV sum is ``<= spearman_threshold``),
        ``n_spearman_two_player_holds``, ``n_paper_criterion_holds``,
        ``n_two_player_criterion_holds``.
    """
    entries = _entries(draws)
    out: dict[str, Any] = {"seeds": [int(s) for s in draws["seed"]], "n_draws": int(len(draws))}
    for column in ("excess_drop", "excess_drop_in_se", "two_player_excess", "spearman_noisy_sum",
                   "spearman_two_player"):
        out[column] = [float(v) for v in draws[column]]
    for entry, (column, _, _) in zip(entries.values(), FAMILY.values()):
        out.update({f"{column}_mean": entry["mean"], f"{column}_low": entry["low"], f"{column}_high": entry["high"]})
    out.update({"n_spearman_holds": int((draws["spearman_noisy_sum"] <= spearman_threshold).sum()),
                "n_spearman_two_player_holds": int((draws["spearman_two_player"] <= spearman_threshold).sum()),
                "n_paper_criterion_holds": int(draws["paper_criterion_holds"].sum()),
                "n_two_player_criterion_holds": int(draws["two_player_criterion_holds"].sum())})
    return out


def _criterion(n_draws: int) -> str:
    return (f"Over the data draws (the main run's seed and the replication seeds: {n_draws} here; each draw "
            "redraws the training set, its split into halves, the noise, the permutations and the test set, so the "
            "intervals measure variation over data draws, not only the Monte Carlo precision of one draw), the "
            f"{CONFIDENCE:.0%} Student-t intervals of the mean of (a) the excess drop of the noisy half's summed "
            "per-point SV beyond its uniform share's drop (from the least to the most private finite level: drop "
            "of the SV sum - drop of (n_noisy / N)(U(D) - U(empty)), exact refits; no range, the interval is never "
            "cut) and (b) the exact two-player SV's drop beyond its uniform share's (U(D) - U(empty)) / 2 (within "
            f"[-1, 1]) lie wholly above 0 for (a) and above {TWO_PLAYER_MIN_EXCESS:g} for (b) (one point of test "
            "accuracy, the per-draw two-player check's margin): holds if both do; does not hold if one lies "
            "wholly at or below its threshold; inconclusive if one straddles it or fewer than "
            f"{MIN_DRAWS} draws ran. " + FAMILY_RULE.format(k=len(FAMILY)) + " This package's own check of the "
            f"paper's {SECTION.split(' (')[0]} claim, over data draws; criterion fixed before its first run. The "
            "per-draw Spearman criterion is reported in the note, not decided here.")


def _replication_note(draws: pd.DataFrame, spearman_threshold: float) -> str:
    """Per-draw values, and how many draws pass the Spearman criterion and each per-draw claim."""
    n = len(draws)
    per_draw = "; ".join(
        f"seed {int(r.seed)}{' (main)' if r.main else ''}: (a) {r.excess_drop:+.3f} ({r.excess_drop_in_se:.1f} SE), "
        f"(b) {r.two_player_excess:+.3f}, Spearman {r.spearman_noisy_sum:.2f}" for r in draws.itertuples())
    few = f"Too few data draws to decide: {n} < {MIN_DRAWS} (no replication seed). " if n < MIN_DRAWS else ""
    return (f"{few}Per draw: {per_draw}. Spearman(sigma, noisy-half SV sum) <= {spearman_threshold:g} on "
            f"{int((draws['spearman_noisy_sum'] <= spearman_threshold).sum())} of {n} draws (two-player SV: "
            f"{int((draws['spearman_two_player'] <= spearman_threshold).sum())} of {n}); the per-draw paper "
            f"criterion holds on {int(draws['paper_criterion_holds'].sum())} of {n}, the per-draw two-player "
            f"check on {int(draws['two_player_criterion_holds'].sum())} of {n}.")


def replication_claim(draws: pd.DataFrame, spearman_threshold: float = -0.8) -> Claim:
    """This package's check of the paper's Section 5 claim over data draws (module docstring, :data:`FAMILY`).

    Parameters
    ----------
    draws : pandas.DataFrame
        The per-draw table of :func:`run_replication` (columns ``excess_drop``,
        ``two_player_excess``, ``spearman_noisy_sum``, ... of :data:`DRAW_COLUMNS`).
    spearman_threshold : float
        For the note's count of draws whose Spearman passes.

    Returns
    -------
    Claim
        Statistic: the lower of the two means over the draws; note: the per-draw values.
    """
    missing = sorted(set(DRAW_COLUMNS) - {"valuation_cpu_seconds"} - set(draws.columns))
    if missing:
        raise ValueError(f"draws must be run_replication's table; missing columns {missing}.")
    if len(draws) == 0:
        raise ValueError("draws must hold at least the main draw.")
    return family_claim(
        "The noisy half's value falls more than its uniform share across draws of the data (training set, "
        "halves, noise, test set): from the least to the most private level, both the noisy half's summed "
        "per-point SV and its exact two-player SV drop beyond their uniform shares, on average over the draws.",
        "mean over data draws of the excess drop, lower of (a) the noisy half's SV sum and (b) its two-player SV",
        _entries(draws), source="reproduction", criterion=_criterion(len(draws)), worst=min, level=CONFIDENCE,
        note=_replication_note(draws, spearman_threshold))
