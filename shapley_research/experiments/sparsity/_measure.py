"""Reference values, error curves of the baseline and compressive sampling, and permutations per target error."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..._validation import check_float, check_int
from .._parallel import parallel_map
from ._game import PrefixCache, compressive_permutations
from ._statistics import relative_error

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    import pandas as pd
    from ...games import GameLike
    from ...result import ValuationResult

BASELINE = "baseline"


def _reference_part(game: GameLike, budget: int, seed: int, batch_size: int) -> tuple[ValuationResult, float]:
    """One part of :func:`reference_values` and the CPU seconds it took (in the process that ran it)."""
    from ... import permutation_shapley

    start = time.process_time()
    result = permutation_shapley(game, budget, seed=seed, batch_size=batch_size, progress=False)
    return result, time.process_time() - start


def reference_values(game: GameLike, n_permutations: int, seeds: Sequence[int], *, batch_size: int = 64,
                     n_jobs: int | None = None) -> dict[str, Any]:
    """Reference values: permutation sampling in ``len(seeds)`` independent parts of equal size.

    Parameters
    ----------
    game : game
    n_permutations : int
        Total permutations, split evenly over the parts.
    seeds : sequence of int
        One seed per part (at least one).
    batch_size : int
        Passed to :func:`shapley_research.permutation_shapley`.
    n_jobs : int, optional
        Worker processes over the parts (-1: every core); the values do not
        depend on it.

    Returns
    -------
    dict
        ``values`` (mean of the parts), ``stderr`` (its standard error),
        ``parts`` (list of per-part values), ``n_permutations`` (used),
        ``relative_stderr`` (``||stderr|| / ||values||``: the error floor of
        any comparison with this reference), ``cpu_time`` (the parts' CPU
        seconds, each measured where it ran).
    """
    seeds = list(seeds)
    if not seeds:
        raise ValueError("give at least one seed.")
    per_part = check_int(n_permutations, "n_permutations", minimum=len(seeds)) // len(seeds)
    parts = parallel_map(_reference_part, [(game, 1 + per_part * game.n_players, s, batch_size) for s in seeds],
                         n_jobs=1 if n_jobs is None else n_jobs)
    results = [result for result, _ in parts]
    values = np.mean([r.values for r in results], axis=0)
    # permutation sampling always reports a standard error
    stderr = np.sqrt(np.sum([r.stderr**2 for r in results], axis=0)) / len(results)  # type: ignore[operator]
    return {"values": values, "stderr": stderr, "parts": [r.values for r in results],
            "n_permutations": per_part * len(seeds),
            "relative_stderr": float(np.linalg.norm(stderr) / np.linalg.norm(values)),
            "cpu_time": sum(cpu for _, cpu in parts)}


def error_curves(game: GameLike, reference: ArrayLike, permutation_grid: Sequence[int], seeds: Sequence[int],
                 measurements: Sequence[int], *, recovery: Literal["homotopy", "cvxpy"] = "homotopy",
                 solver: str = "CLARABEL", show_progress: bool = True) -> pd.DataFrame:
    """Relative errors of the baseline and compressive sampling against ``reference``.

    For every seed and every ``T`` in ``permutation_grid``, one call of
    :func:`shapley_research.compressive_shapley` per ``M`` in ``measurements``
    on ``T`` permutations (budget ``2 + T N``); the baseline is its
    ``info["permutation_values"]``, the plain permutation estimate from the
    same permutations. The sampling batch size is the gcd of the grid, so the
    ``T`` permutations of a seed are the first ``T`` of its largest run; they
    are valued once (:class:`PrefixCache`, filled with the largest ``T``).
    ``recovery`` and ``solver`` are passed on (the l1 recovery: the exact
    homotopy, or cvxpy with ``solver``).

    Returns
    -------
    pandas.DataFrame
        One row per (seed, T, method): ``seed_index``, ``seed``,
        ``n_permutations``, ``method`` (``"baseline"`` or ``"compressive"``),
        ``n_measurements`` (0 for the baseline), ``relative_error``,
        ``epsilon``, ``status``, ``solve_cpu_s``.
    """
    import pandas as pd

    from ... import compressive_shapley
    from .._common import progress

    grid = sorted({check_int(t, "permutation_grid entry", minimum=1) for t in permutation_grid})
    measurements = [check_int(m, "measurements entry", minimum=1) for m in measurements]
    batch = math.gcd(*grid)
    n = game.n_players
    reference = np.asarray(reference, dtype=float)
    rows = []
    jobs = [(i, s) for i, s in enumerate(seeds)]
    for i, seed in (progress(jobs, desc="error curves (seeds)") if show_progress else jobs):
        cache = PrefixCache(game)
        cache.prefill(compressive_permutations(seed, grid[-1], n, batch))
        for t in grid:
            baseline = None
            for m in measurements:
                start = time.process_time()
                result = compressive_shapley(cache, 2 + t * n, seed=seed, n_measurements=m, recovery=recovery,
                                             solver=solver, batch_size=batch, progress=False)
                cpu = time.process_time() - start
                if baseline is None:
                    baseline = result.info["permutation_values"]
                    rows.append({"seed_index": i, "seed": seed, "n_permutations": t, "method": BASELINE,
                                 "n_measurements": 0, "relative_error": relative_error(baseline, reference),
                                 "epsilon": np.nan, "status": "", "solve_cpu_s": 0.0})
                elif not np.array_equal(baseline, result.info["permutation_values"]):
                    raise RuntimeError("runs with the same seed drew different permutations.")
                rows.append({"seed_index": i, "seed": seed, "n_permutations": t, "method": "compressive",
                             "n_measurements": m, "relative_error": relative_error(result.values, reference),
                             "epsilon": result.info["epsilon"], "status": result.info["status"],
                             "solve_cpu_s": cpu})
        cache.clear()
    return pd.DataFrame(rows)



def summarise_errors(errors: pd.DataFrame) -> pd.DataFrame:
    """Mean, min and max relative error over seeds per (method, M, T).

    Returns
    -------
    pandas.DataFrame
        Columns ``method``, ``n_measurements``, ``n_permutations``, ``mean``,
        ``min``, ``max``, ``n_seeds``; sorted by method, M and T.
    """
    grouped = errors.groupby(["method", "n_measurements", "n_permutations"])["relative_error"]
    out = grouped.agg(["mean", "min", "max", "count"]).reset_index().rename(columns={"count": "n_seeds"})
    return out.sort_values(["method", "n_measurements", "n_permutations"]).reset_index(drop=True)


def permutations_to_reach(grid: ArrayLike, errors: ArrayLike, target: float) -> float:
    r"""Permutations a method needs for a mean error of ``target``, read off its error curve.

    Log-log interpolation between grid points; outside the grid the
    Monte Carlo rate :math:`e(T) \propto T^{-1/2}` of permutation sampling
    extrapolates from the nearest end (used for the baseline, whose error
    follows that rate exactly in expectation). A curve that is not
    decreasing is made so by a running minimum first.
    """
    grid = np.asarray(grid, dtype=float)
    errors = np.minimum.accumulate(np.asarray(errors, dtype=float))
    target = check_float(target, "target", minimum=0.0, strict=True)
    if grid.ndim != 1 or grid.shape != errors.shape or grid.size == 0:
        raise ValueError("grid and errors must be 1-D arrays of the same length.")
    if target >= errors[0]:
        return float(grid[0] * (errors[0] / target) ** 2)
    if target <= errors[-1]:
        return float(grid[-1] * (errors[-1] / target) ** 2)
    j = int(np.searchsorted(-errors, -target))  # first index with errors[j] <= target
    lo, hi = j - 1, j
    if errors[lo] == errors[hi]:
        return float(grid[hi])
    w = (np.log(errors[lo]) - np.log(target)) / (np.log(errors[lo]) - np.log(errors[hi]))
    return float(np.exp(np.log(grid[lo]) + w * (np.log(grid[hi]) - np.log(grid[lo]))))


def target_table(summary: pd.DataFrame, n_measurements: int, uniform_error: float,
                 fractions: Sequence[float]) -> pd.DataFrame:
    r"""Permutations each method needs to reach fixed errors below the uniform split's.

    The targets are :math:`e_j = f_j\,u` for the fractions ``0 < f_j < 1`` of
    the uniform split's error ``u`` (the error of the zero-cost estimate
    ``U(D)/N``), so that only errors a constant cannot reach are compared.
    Both needs are read off the mean curves with :func:`permutations_to_reach`:
    the baseline's extrapolates at its Monte Carlo rate where needed; the
    compressive one counts only targets its curve reaches inside the grid (it
    does not follow that rate), and a target already met at the smallest ``T``
    counts as that ``T`` (an upper bound, which counts against compressive).

    Returns
    -------
    pandas.DataFrame
        One row per target: ``n_measurements``, ``target_fraction``,
        ``target_error``, ``compressive_reaches``, ``compressive_permutations``
        (NaN where not reached), ``baseline_permutations``, ``sample_ratio``
        (baseline over compressive permutations; above 1 = compressive needs
        fewer), ``compressive_best_error`` (lowest compressive mean error on the grid).
    """
    import pandas as pd

    uniform_error = check_float(uniform_error, "uniform_error", minimum=0.0, strict=True)
    fractions = [check_float(f, "fractions entry", minimum=0.0, strict=True) for f in fractions]
    if not fractions or max(fractions) >= 1.0:
        raise ValueError(f"fractions must be a non-empty list of numbers in (0, 1), got {fractions}.")
    base = summary[summary["method"] == BASELINE].sort_values("n_permutations")
    comp = summary[(summary["method"] == "compressive") & (summary["n_measurements"] == n_measurements)]
    comp = comp.sort_values("n_permutations")
    if comp.empty or base.empty:
        raise ValueError(f"summary needs baseline runs and compressive runs with M = {n_measurements}.")
    grid, curve = comp["n_permutations"].to_numpy(float), comp["mean"].to_numpy(float)
    rows = []
    for f in sorted(fractions, reverse=True):
        target = f * uniform_error
        reaches = bool(curve.min() <= target)
        need = (grid[0] if curve[0] <= target else permutations_to_reach(grid, curve, target)) if reaches else np.nan
        baseline = permutations_to_reach(base["n_permutations"], base["mean"], target)
        rows.append({"n_measurements": int(n_measurements), "target_fraction": f, "target_error": target,
                     "compressive_reaches": reaches, "compressive_permutations": need,
                     "baseline_permutations": baseline, "sample_ratio": baseline / need,
                     "compressive_best_error": float(curve.min())})
    return pd.DataFrame(rows)


def ratio_table(errors: pd.DataFrame, n_measurements: int, uniform_error: float,
                level: float = 0.95) -> pd.DataFrame:
    r"""Per ``T``: both mean errors, the error ratio compressive / baseline, whether ``T`` is above the trivial error.

    The ratio is paired by seed (both methods value the same permutations),
    with the Student-t interval of its mean over seeds
    (:func:`~shapley_research.experiments._verdicts.mean_interval`). ``T``
    lies *above the trivial error* when the lower of the two mean errors
    still exceeds the uniform split's ``uniform_error``: there neither method
    beats the zero-cost estimate ``U(D)/N``.

    Returns
    -------
    pandas.DataFrame
        One row per ``T`` (ascending): ``n_measurements``, ``n_permutations``, ``baseline_mean``,
        ``compressive_mean``, ``mean_ratio`` (ratio of the mean errors, as
        the figure shows them), ``ratio`` (mean of the per-seed ratios),
        ``ratio_low``, ``ratio_high``, ``n_seeds``, ``seed_ratios`` (the
        per-seed ratios, in seed order), ``above_trivial``, ``uniform_error``.
    """
    import pandas as pd

    from .._verdicts import mean_interval

    uniform_error = check_float(uniform_error, "uniform_error", minimum=0.0, strict=True)
    keys = ["seed_index", "n_permutations"]
    base = errors[errors["method"] == BASELINE].set_index(keys)["relative_error"]
    comp = errors[(errors["method"] == "compressive") & (errors["n_measurements"] == n_measurements)]
    comp = comp.set_index(keys)["relative_error"]
    if comp.empty or base.empty:
        raise ValueError(f"errors need baseline runs and compressive runs with M = {n_measurements}.")
    paired = pd.DataFrame({"baseline": base, "compressive": comp}).dropna()
    rows = []
    for t, part in paired.groupby(level="n_permutations"):
        seed_ratios = (part["compressive"] / part["baseline"]).sort_index()
        mean, low, high = mean_interval(seed_ratios, level)
        b, c = float(part["baseline"].mean()), float(part["compressive"].mean())
        rows.append({"n_measurements": int(n_measurements), "n_permutations": int(t), "baseline_mean": b,
                     "compressive_mean": c, "mean_ratio": c / b, "ratio": mean, "ratio_low": low, "ratio_high": high,
                     "n_seeds": len(part),
                     "seed_ratios": seed_ratios.tolist(), "above_trivial": bool(min(b, c) > uniform_error),
                     "uniform_error": uniform_error})
    return pd.DataFrame(rows)
