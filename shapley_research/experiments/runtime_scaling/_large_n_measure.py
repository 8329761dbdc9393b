"""Large-N panel: doubling-budget runs of each estimator, evaluations to a target, and the fitted exponents."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ... import compressive_shapley, group_testing_shapley, permutation_shapley, stratified_svarm_shapley
from .._parallel import parallel_map
from ._large_n_games import scaling_game

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from numpy.typing import ArrayLike
    from ...games import GameLike
    from ...result import ValuationResult
    from ._large_n_games import KNNData

SCALING_METHODS = ("permutation", "permutation_antithetic", "group_testing_paper", "group_testing_improved",
                   "group_testing_wang_jia", "compressive", "svarm")
GROUP_TESTING = ("group_testing_paper", "group_testing_improved", "group_testing_wang_jia")
MIN_POINTS_FOR_EXPONENT = 3
# The published Wang & Jia estimator (improved variant, no centering) runs beside this package's centred one,
# whenever that one is configured, up to this N: it only reports the centering's effect, and N <= 1,000 keeps
# its cost to about a sixth of the centred variant's (the runs at N = 3,000 and 10,000 cost the most).
PUBLISHED_MAX_PLAYERS = 1000


# --------------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------------

def scaling_estimate(method: str, game: GameLike, budget: int, seed: int) -> ValuationResult:
    """The run of scaling method ``method`` at ``budget``: its public estimator, one job, no progress bar.

    Parameters
    ----------
    method : str
        One of :data:`SCALING_METHODS` (``group_testing_wang_jia`` is Wang &
        Jia's estimator as published, without this package's centering).
    game : GameLike
        The game to value.
    budget : int
        Utility evaluations.
    seed : int
        The estimator's seed.

    Returns
    -------
    ValuationResult
    """
    options: dict[str, Any] = {"seed": seed, "progress": False, "n_jobs": 1}
    if method in ("permutation", "permutation_antithetic"):
        return permutation_shapley(game, budget, antithetic=method == "permutation_antithetic", **options)
    if method == "group_testing_paper":
        return group_testing_shapley(game, budget, variant="paper", **options)
    if method == "group_testing_improved":  # this package's variant: Wang & Jia + linear centering (its default)
        return group_testing_shapley(game, budget, variant="improved", centering="linear", **options)
    if method == "group_testing_wang_jia":  # the published estimator: no centering
        return group_testing_shapley(game, budget, variant="improved", centering="none", **options)
    if method == "compressive":
        return compressive_shapley(game, budget, **options)
    if method == "svarm":
        return stratified_svarm_shapley(game, budget, **options)
    raise ValueError(f"method must be one of {SCALING_METHODS}, got {method!r}.")


def relative_error(estimate: ArrayLike, exact: ArrayLike) -> float:
    """``||estimate - exact|| / ||exact||``."""
    return float(np.linalg.norm(np.asarray(estimate) - exact) / np.linalg.norm(exact))


def error_trace(method: str, game: GameLike, exact: np.ndarray, seed: int, *, target: float, cap: int,
                estimate: Callable[..., ValuationResult] | None = None) -> list[dict[str, Any]]:
    """Errors of the doubling budgets ``2^j (N + 2)`` until the error is at most ``target`` or past ``cap``.

    Budgets below a method's minimum are skipped. ``estimate(method, game,
    budget, seed)`` returns a :class:`ValuationResult` (default: the public
    estimators). Returns one record per run: budget, ``evaluations``
    (``n_evaluations`` of the result), ``relative_error``, ``seconds``.
    """
    estimate = scaling_estimate if estimate is None else estimate
    trace, budget = [], game.n_players + 2
    while budget <= cap:
        try:
            result = estimate(method, game, budget, seed)
        except ValueError as exc:  # below the method's smallest budget: try the next
            if "smaller than" not in str(exc):
                raise
        else:
            error = relative_error(result.values, exact)
            trace.append({"budget": budget, "evaluations": int(result.n_evaluations), "relative_error": error,
                          "seconds": float(result.wall_time)})
            if error <= target:
                break
        budget *= 2
    return trace


def largest_budget(n: int, cap: int) -> int:
    """The largest budget ``2^j (N + 2)`` of the doubling schedule within ``cap``."""
    budget = n + 2
    while 2 * budget <= cap:
        budget *= 2
    return budget


def scaling_plan(methods: Sequence[str], games: Sequence[str], ns: Sequence[int], *,
                 permutation_ns: Sequence[int] | None = None, caps: dict[str, int],
                 max_work: dict[str, int] | None = None,
                 max_players: dict[str, int] | None = None) -> list[tuple[str, str, int, int]]:
    """The ``(method, game, n, cap)`` runs: every method on every game at ``ns``.

    ``permutation_ns`` adds larger N for the two permutation methods on the
    unanimity game (the only game cheap there). A method's cap at N is
    ``min(caps[method], max_work[method] // N)`` evaluations (``max_work``
    bounds ``N`` times the evaluations, about the mask cells a run draws);
    ``max_players[method]`` skips larger N (SVARM's state is ``O(N^2)``).
    """
    max_work, max_players = max_work or {}, max_players or {}
    plan = []
    for method in methods:
        for game in games:
            extra = (permutation_ns if permutation_ns and game == "unanimity" and method.startswith("permutation")
                     else [])
            for n in sorted(set(ns) | set(extra)):
                if n > max_players.get(method, n):
                    continue
                cap = min(caps[method], max_work.get(method, caps[method] * n) // n)
                plan.append((method, game, n, int(cap)))
    return plan


def with_published_variant(methods: Sequence[str], max_players: dict[str, int] | None = None,
                           ) -> tuple[list[str], dict[str, int]]:
    """``methods`` plus ``group_testing_wang_jia`` beside ``group_testing_improved``, and its N limit.

    Returns the methods and ``max_players`` with the published estimator
    limited to :data:`PUBLISHED_MAX_PLAYERS`.
    """
    methods, max_players = list(methods), dict(max_players or {})
    if "group_testing_improved" in methods and "group_testing_wang_jia" not in methods:
        methods.insert(methods.index("group_testing_improved") + 1, "group_testing_wang_jia")
        max_players.setdefault("group_testing_wang_jia", PUBLISHED_MAX_PLAYERS)
    return methods, max_players


def uniform_split_errors(plan: Sequence[tuple[str, str, int, int]], *, knn_data: KNNData | None = None, k: int = 5,
                         game_seed: int = 0) -> dict[str, dict[int, float]]:
    """``{game: {N: relative error of the uniform split}}``: the trivial baseline every target must beat.

    The uniform split gives every player ``(U(D) - U(empty)) / N``, the exact
    values' mean (efficiency).
    """
    errors: dict = {}
    for game, n in sorted({(g, n) for _, g, n, _ in plan}):
        _, exact = scaling_game(game, n, knn_data=knn_data, k=k, seed=game_seed)
        errors.setdefault(game, {})[str(n)] = relative_error(np.full(n, exact.mean()), exact)
    return errors


def _task(method, game_name, n, seed, target, cap, knn_data, k, game_seed):
    game, exact = scaling_game(game_name, n, knn_data=knn_data, k=k, seed=game_seed)
    start = time.process_time()
    trace = error_trace(method, game, exact, seed, target=target, cap=cap)
    return [{"method": method, "game": game_name, "n_players": n, "seed": seed,
             "cap_evaluations": largest_budget(n, cap),
             "cpu_seconds_total": time.process_time() - start, **row} for row in trace]


def measure_scaling(plan: Sequence[tuple[str, str, int, int]], seeds: Iterable[int], *, target: float,
                    knn_data: KNNData | None = None, k: int = 5, game_seed: int = 0, n_jobs: int = 1,
                    progress: Callable[..., Iterable[Any]] | None = None) -> pd.DataFrame:
    """Run :func:`error_trace` for every ``(method, game, n, cap)`` of ``plan`` (:func:`scaling_plan`) and seed.

    Tasks run through joblib (largest first); the numbers do not depend on
    ``n_jobs``. Returns every run, one row per budget.
    """
    tasks = sorted(((m, g, n, s, cap) for m, g, n, cap in plan for s in seeds), key=lambda t: -t[2] * t[4])
    runs = parallel_map(_task, [(m, g, n, s, target, cap, knn_data if g == "knn" else None, k, game_seed)
                                for m, g, n, s, cap in tasks],
                        n_jobs=n_jobs, progress=progress, desc="evaluations to target")
    rows = [row for trace in runs for row in trace]
    order = ["method", "game", "n_players", "seed", "budget"]
    return pd.DataFrame(rows).sort_values(order, key=lambda c: c.map(_rank) if c.name == "method" else c,
                                          ignore_index=True)


def _rank(method: str) -> int:
    return SCALING_METHODS.index(method)


# A plateau is an error that no longer falls with the budget (a biased estimator: compressive sampling's
# l1 recovery), not an error that rises at one doubling: the improved group testing variant does not
# enforce efficiency, so a common-mode shift moves its error up and down around a 1/sqrt(B) decay. The
# rule therefore reads the trend over the last PLATEAU_WINDOW runs (a factor 32 in budget), not the last
# step: the least-squares slope of log(error) on log(evaluations) must be at most PLATEAU_SLOPE, half the
# -1/2 of an unbiased Monte Carlo mean, for the run to be extrapolated.
PLATEAU_SLOPE = -0.25
PLATEAU_WINDOW = 6
DECAY_RATIO = 2.0 ** PLATEAU_SLOPE  # the same rule per doubling (0.84), kept for readers of the old name


def error_slope(evaluations: ArrayLike, errors: ArrayLike, window: int = PLATEAU_WINDOW) -> float | None:
    """Least-squares slope of log error on log evaluations over the last ``window`` runs (None: fewer than 3)."""
    evaluations, errors = np.asarray(evaluations, float)[-window:], np.asarray(errors, float)[-window:]
    if errors.size < 3 or not (errors > 0).all():
        return None
    return float(np.polyfit(np.log(evaluations), np.log(errors), 1)[0])


def _seed_evaluations(trace: pd.DataFrame, target: float) -> tuple[float, float | None]:
    """One seed: evaluations to ``target`` (inf if never) and the extrapolation from its last run.

    The extrapolation ``B (e / target)^2`` assumes the ``1/sqrt(B)`` decay of
    an unbiased mean; it is None when the error's trend over the last runs
    (:func:`error_slope`) is flatter than :data:`PLATEAU_SLOPE` (a plateau) or
    when there are fewer than three runs.
    """
    hit = trace[trace["relative_error"] <= target]
    if len(hit):
        first = float(hit["evaluations"].iloc[0])
        return first, first
    errors = trace["relative_error"].to_numpy()
    slope = error_slope(trace["evaluations"].to_numpy(), errors)
    if slope is None or slope > PLATEAU_SLOPE:
        return np.inf, None
    return np.inf, float(trace["evaluations"].iloc[-1] * (errors[-1] / target) ** 2)


def summarise_scaling(runs: pd.DataFrame, targets: Iterable[float]) -> list[dict[str, Any]]:
    """The ``measured_scaling`` records: per method, game, N and target, the median over seeds.

    ``evaluations`` is the median evaluations to the target (a seed that never
    reached counts as infinite; ``None`` if the median is), ``reached_fraction``
    the share of seeds that reached it, ``extrapolated_evaluations`` the
    median of measured counts and, for seeds that did not reach,
    ``B_cap (e / target)^2`` (None if a seed's error had stopped falling).
    """
    records = []
    for (method, game, n), part in runs.groupby(["method", "game", "n_players"], sort=False):
        for target in sorted(targets, reverse=True):
            per_seed = [_seed_evaluations(trace, target) for _, trace in part.groupby("seed")]
            measured = np.array([m for m, _ in per_seed])
            median = float(np.median(measured))
            extrapolated = [e for _, e in per_seed]
            records.append({
                "method": method, "game": game, "n_players": int(n), "target_relative_error": float(target),
                "evaluations": None if not np.isfinite(median) else int(round(median)),
                "reached_fraction": float(np.isfinite(measured).mean()), "seeds": len(per_seed),
                "cap_evaluations": int(part["cap_evaluations"].iloc[0]),
                "extrapolated_evaluations": (None if None in extrapolated
                                             # no None is left here (the line above)
                                             else int(round(float(np.median(extrapolated))))),  # type: ignore[arg-type]
            })
    return sorted(records, key=lambda r: (_rank(r["method"]), r["game"], -r["target_relative_error"],
                                          r["n_players"]))


def fit_exponents(records: Sequence[dict[str, Any]], target: float, *,
                  field: str = "evaluations") -> dict[str, dict[str, float | None]]:
    """``{method: {game: slope}}`` of log ``field`` on log N at ``target`` (None: fewer than 3 points)."""
    return {method: {game: (float(np.polyfit(np.log([p[0] for p in pts]), np.log([p[1] for p in pts]), 1)[0])
                            if len(pts) >= MIN_POINTS_FOR_EXPONENT else None)
                     for game, pts in games.items()}
            for method, games in _exponent_points(records, target, field).items()}


def _exponent_points(records: Sequence[dict[str, Any]], target: float,
                     field: str = "evaluations") -> dict[str, dict[str, list[tuple[int, float]]]]:
    """``{method: {game: [(N, count), ...]}}``: the counts an exponent is fitted to (every method and game run)."""
    points: dict = {}
    for r in records:
        points.setdefault(r["method"], {}).setdefault(r["game"], [])
        if r["target_relative_error"] == target and r[field] is not None:
            points[r["method"]][r["game"]].append((r["n_players"], r[field]))
    return points


def exponent_bracket(records: Sequence[dict[str, Any]], target: float, method: str,
                     game: str) -> tuple[float, float] | None:
    r"""The range of the measured exponent where each count may lie anywhere in its doubling bracket.

    The budgets double, so a count of evaluations to ``target`` is known only
    within :math:`(B/2, B]`. The least-squares slope is :math:`\sum_i w_i y_i`
    with :math:`w_i = (x_i - \bar x) / \sum_j (x_j - \bar x)^2` on
    :math:`x = \log N`, :math:`y = \log B`; moving each :math:`y_i` within
    :math:`(y_i - \log 2, y_i]` moves it by at most
    :math:`\log 2 \sum_{w_i > 0} w_i` either way.

    Returns
    -------
    (float, float) or None
        ``(low, high)`` around :func:`fit_exponents`' slope (None: fewer than
        :data:`MIN_POINTS_FOR_EXPONENT` N reached the target).
    """
    points = _exponent_points(records, target).get(method, {}).get(game, [])
    if len(points) < MIN_POINTS_FOR_EXPONENT:
        return None
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    weights = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
    slope, half_width = float(weights @ y), float(np.log(2) * weights[weights > 0].sum())
    return slope - half_width, slope + half_width


def scaling_exponents(records: Sequence[dict[str, Any]], target: float) -> tuple[dict[str, dict[str, float | None]],
                                                                  dict[str, dict[str, str | None]]]:
    """Exponents from measured counts where possible, else from the extrapolated ones; and their basis.

    ``basis[method][game]`` is ``"measured"`` (at least
    :data:`MIN_POINTS_FOR_EXPONENT` N reached the target), ``"extrapolated"``
    (fitted to ``extrapolated_evaluations``, see :func:`summarise_scaling`)
    or None (too few N run).
    """
    measured = fit_exponents(records, target)
    extrapolated = fit_exponents(records, target, field="extrapolated_evaluations")
    exponents: dict[str, dict[str, float | None]] = {}
    basis: dict[str, dict[str, str | None]] = {}
    for method, games in measured.items():
        for game, value in games.items():
            fallback = extrapolated[method][game]
            exponents.setdefault(method, {})[game] = value if value is not None else fallback
            basis.setdefault(method, {})[game] = ("measured" if value is not None
                                                  else "extrapolated" if fallback is not None else None)
    return exponents, basis


def theorem_exponents(ns: Iterable[int] | np.ndarray, epsilon: float, delta: float,
                      utility_range: float) -> dict[str, float | None]:
    """Local log-log slope, over ``ns``, of the evaluations the theorems require (None: no theorem).

    Permutation sampling (both forms): ``N`` times the Hoeffding count, about
    ``N^2 log N``; group testing: Theorem 3 and Wang & Jia's bound, about
    ``N (log N)^2`` (the published and the centred improved estimator share
    Wang & Jia's bound: centering does not enter it). Compressive sampling's Theorem 4 depends on an unknown
    sparsity and constant, and SVARM is not in the paper: None.
    """
    from shapley_research import group_testing_sample_size, permutation_sample_size

    ns = np.asarray(sorted(ns), dtype=float)
    counts = {
        "permutation": [n * permutation_sample_size(epsilon, delta, int(n), utility_range) for n in ns],
        "group_testing_paper": [group_testing_sample_size(epsilon, delta, int(n), utility_range, variant="paper")
                                for n in ns],
        "group_testing_improved": [group_testing_sample_size(epsilon, delta, int(n), utility_range,
                                                             variant="improved") for n in ns],
    }
    counts["permutation_antithetic"] = counts["permutation"]
    counts["group_testing_wang_jia"] = counts["group_testing_improved"]
    slopes = {m: float(np.polyfit(np.log(ns), np.log(np.asarray(c, dtype=float)), 1)[0]) for m, c in counts.items()}
    return {m: slopes.get(m) for m in SCALING_METHODS}


def predicted_ratios(ns: Iterable[int], epsilon: float, delta: float,
                     utility_range: float) -> dict[int, dict[str, float]]:
    """``{N: {"algorithm_1": r, "improved_bound": r}}``: the theorems' permutation / group testing count ratio.

    Permutation sampling's count is ``N`` times the Hoeffding count; group
    testing's Theorem 3 (Algorithm 1) and Wang & Jia's improved bound, all at
    the same ``(epsilon, delta)`` and utility range: what an estimator that
    met its theorem would show at that N.
    """
    from shapley_research import group_testing_sample_size, permutation_sample_size

    out = {}
    for n in sorted({int(n) for n in ns}):
        base = n * permutation_sample_size(epsilon, delta, n, utility_range)
        # variant is one of the two literals named on the next line
        out[n] = {name: float(base / group_testing_sample_size(epsilon, delta, n, utility_range,
                                                               variant=variant))  # type: ignore[arg-type]
                  for name, variant in (("algorithm_1", "paper"), ("improved_bound", "improved"))}
    return out


def learner_seconds(records: Sequence[dict[str, Any]], fit_cost: Callable[[ArrayLike], np.ndarray]) -> pd.DataFrame:
    """Measured counts times the paper learner's measured cost per evaluation (CPU seconds).

    Where the median did not reach the target, the extrapolated count is used
    instead (``basis`` says which).

    The cost of one evaluation is the learner's training cost averaged over
    the coalition sizes the method evaluates: all prefix sizes for the
    permutation-based methods, the size distribution of each group-testing
    variant, SVARM's size allocation.

    Returns
    -------
    pandas.DataFrame
        One row per record with a count: the record's keys, ``basis``
        (``"measured"`` or ``"extrapolated"``) and ``cpu_seconds``.
    """
    from shapley_research.estimators import svarm_size_probabilities

    from ._theory import group_testing_expected_cost, permutation_cost_per_permutation

    def per_evaluation(method, n):
        if method in ("permutation", "permutation_antithetic", "compressive"):
            return permutation_cost_per_permutation(n, fit_cost) / n
        if method.startswith("group_testing"):
            return group_testing_expected_cost(n, fit_cost, "paper" if method == "group_testing_paper"
                                               else "improved")
        return float(svarm_size_probabilities(n) @ fit_cost(np.arange(2, n - 1, dtype=float)))

    rows = []
    for r in records:
        count, basis = ((r["evaluations"], "measured") if r["evaluations"] is not None
                        else (r.get("extrapolated_evaluations"), "extrapolated"))
        if count is not None:
            rows.append({**r, "basis": basis, "cpu_seconds": count * per_evaluation(r["method"], r["n_players"])})
    return pd.DataFrame(rows)
