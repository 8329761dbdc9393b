"""Part 3 of ``pydvl_comparison.py``: relative error at equal budgets, and the evaluations to reach an error.

Not a script: ``pydvl_comparison.py`` imports it. Every budgeted estimator of
Shapley values of each library runs on games with exact values (the airport
game, the cheap closed-form game, KNN-Shapley on 1,000 MNIST images) at the
same budgets of utility evaluations, over seeds (:func:`error_part`);
:func:`our_evaluations_to_reach` reads off the error curves how many
evaluations ours needs to reach pyDVL's error (log-log interpolation).
"""

from __future__ import annotations

import time

import numpy as np

from _games import AirportGame, CheapGame, KNNGame, load_mnist
from _peer_common import log
from _pydvl_adapters import pydvl_estimators, pydvl_values, run_pydvl_estimator
from _pydvl_throughput import draw_masks
from shapley_research import (compressive_shapley, group_testing_shapley, knn_shapley, permutation_shapley,
                              stratified_svarm_shapley)


def rotations_for(n: int, budget: int, most: int = 16) -> int:
    """Rotations per antithetic pair: ``most``, or as many as the budget affords in one group (at least 1)."""
    return int(np.clip((budget - 1) // (2 * n), 1, most))


def our_estimators(with_compressive: bool) -> dict:
    """Our estimators of Shapley values that take a budget, by name: ``run(game, budget, seed)``."""
    common = dict(progress=False)
    estimators = {
        "permutation": lambda game, budget, seed: permutation_shapley(game, budget, seed, **common),
        "permutation (antithetic)":
            lambda game, budget, seed: permutation_shapley(game, budget, seed, antithetic=True, **common),
        # m rotations per antithetic pair, m = min(16, pairs the budget affords): positions stratified
        "permutation (antithetic, rotations)": lambda game, budget, seed: permutation_shapley(
            game, budget, seed, antithetic=True, rotations=rotations_for(game.n_players, budget), **common),
        # two-way fit (player + position bin) of the antithetic pairs' contributions
        "permutation (antithetic, position-adjusted)": lambda game, budget, seed: permutation_shapley(
            game, budget, seed, antithetic=True, position_adjustment=True, **common),
        "group testing (improved)": lambda game, budget, seed: group_testing_shapley(game, budget, seed, **common),
        "stratified SVARM": lambda game, budget, seed: stratified_svarm_shapley(game, budget, seed, **common),
        # sizes drawn by the Neyman allocation estimated from a pilot of 5 N coalitions
        "stratified SVARM (Neyman)": lambda game, budget, seed: stratified_svarm_shapley(
            game, budget, seed, allocation="neyman", **common),
    }
    if with_compressive:
        estimators["compressive"] = lambda game, budget, seed: compressive_shapley(game, budget, seed, **common)
    return estimators


def error_game(name, game, truth, permutations, seeds, with_compressive, screen_top=None,
               below=(0.5,)) -> dict:
    """Errors of every estimator of both libraries at budgets ``t * N + 2`` for ``t`` in ``permutations``.

    Our estimators also run at the fractions ``below`` of the smallest budget
    (default: half of it; pyDVL's are not run there: its errors are the
    targets), so that a curve of ours can show that it reaches pyDVL's
    smallest-budget error with half the evaluations (a curve already below
    that error at our smallest budget only gives an upper bound, hence a
    quarter where half is not enough).
    With ``screen_top``, every estimator runs up to the smallest budget both
    libraries run (ours also at half of it), and only the ``screen_top`` best
    of each library (by mean error at that common budget) at
    the others.
    """
    permutations = [permutations[0] * f for f in sorted(below)] + list(permutations)
    n = game.n_players
    budgets = [int(t * n) + 2 for t in permutations]  # our permutation sampling uses t * n + 1 of them
    empty_utility = float(game._evaluate(np.zeros((1, n), dtype=bool))[0])
    norm = np.linalg.norm(truth)
    rows = [{"library": library, "estimator": est_name, "run": run, "errors": [], "evaluations": [], "seconds": []}
            for library, estimators in (("shapley_research", our_estimators(with_compressive)),
                                        ("pyDVL", pydvl_estimators()))
            for est_name, run in estimators.items()]

    def measure(row, budget):
        log(f"part 3: {name}: {row['library']} {row['estimator']}, budget {budget:,} ...")
        errors, evaluations, seconds = [], [], []
        for seed in seeds:
            if row["library"] == "pyDVL":
                values, used, wall = run_pydvl_estimator(row["run"], game, budget - 1, seed, empty_utility)
            else:
                result = row["run"](game, budget, seed)
                values, used, wall = result.values, result.n_evaluations, result.wall_time
            errors.append(float(np.linalg.norm(values - truth) / norm))
            evaluations.append(int(used))
            seconds.append(wall)
        row["errors"].append(errors)
        row["evaluations"].append(evaluations)
        row["seconds"].append(seconds)

    first = {"shapley_research": 0, "pyDVL": len(below)}  # index of each library's smallest budget
    screen_at = max(first.values())  # the smallest budget both run: a fair screen (half a budget is not)
    for i, budget in enumerate(budgets):
        active = []
        for library, start in first.items():
            mine = [r for r in rows if r["library"] == library]
            if i < start:
                for row in mine:  # not run: a placeholder keeps the columns aligned
                    for key in ("errors", "evaluations", "seconds"):
                        row[key].append(None)
                continue
            if screen_top is not None and i > screen_at:
                mine = sorted(mine, key=lambda r: np.mean(r["errors"][screen_at]))[:screen_top]
            active += mine
        for row in active:
            measure(row, budget)
    for row in rows:
        del row["run"]
    return {"name": name, "n": n, "budgets": budgets, "permutations": list(permutations), "seeds": list(seeds),
            "screen_top": screen_top, "rows": rows}


def knn_game_setup(n_test: int, k: int, checks: int, rng) -> tuple:
    """The MNIST KNN game, its exact values, and the cross-checks (ours vs pyDVL, fast vs reference game)."""
    from pydvl.valuation import Dataset, KNNClassifierUtility, KNNShapleyValuation
    from pydvl.valuation.types import Sample
    from shapley_research import KNNUtility
    from sklearn.neighbors import KNeighborsClassifier

    Z_train, y_train, Z_test, y_test, _ = load_mnist()
    Z_test, y_test = Z_test[:n_test], y_test[:n_test]
    game = KNNGame(Z_train, y_train, Z_test, y_test, k)
    start = time.perf_counter()
    exact = knn_shapley(Z_train, y_train, Z_test, y_test, k).values
    t_ours = time.perf_counter() - start
    train, test = Dataset(Z_train, y_train), Dataset(Z_test, y_test)
    start = time.perf_counter()
    theirs = KNNShapleyValuation(KNeighborsClassifier(n_neighbors=k), test, progress=False).fit(train)
    t_theirs = time.perf_counter() - start
    pydvl_exact = pydvl_values(theirs.result, len(y_train))

    masks = draw_masks(rng, checks, len(y_train))
    masks[0] = True
    reference = KNNUtility(Z_train, y_train, Z_test, y_test, k).evaluate(masks)
    fast = game.evaluate(masks)
    # pyDVL's own KNN utility, on the same coalitions
    pydvl_utility = KNNClassifierUtility(KNeighborsClassifier(n_neighbors=k), test).with_dataset(train)
    pydvl_u = np.array([pydvl_utility(Sample(None, np.flatnonzero(mask))) for mask in masks])
    full_utility = float(reference[0])
    checks_out = {
        "n_train": len(y_train), "n_test": n_test, "k": k,
        "exact_max_diff": float(np.abs(exact - pydvl_exact).max()),
        "exact_scale": float(np.abs(exact).max()), "t_exact_ours": t_ours, "t_exact_pydvl": t_theirs,
        "efficiency_gap": float(abs(exact.sum() - full_utility)),
        "fast_vs_reference": float(np.abs(fast - reference).max()), "n_masks": checks,
        "pydvl_utility_max_diff": float(np.abs(pydvl_u - reference).max()),
        "pydvl_utility_n_differ": int((np.abs(pydvl_u - reference) > 1e-12).sum()),
    }
    return game, exact, checks_out


def error_part(quick: bool, rng) -> tuple[list[dict], dict]:
    """Part 3: :func:`error_game` on the airport, cheap and KNN games, and the KNN game's cross-checks."""
    games = []
    seeds = range(2) if quick else range(4)
    airport = AirportGame(100, seed=1)
    games.append(error_game("airport, N = 100 (closed form)", airport, airport.shapley_values(),
                            [10, 30] if quick else [10, 30, 100, 300], seeds, True, below=(0.25, 0.5)))
    cheap = CheapGame(200, seed=2)
    games.append(error_game("linear + sqrt + unanimity, N = 200 (closed form)", cheap, cheap.shapley_values(),
                            [10, 30] if quick else [10, 30, 100], seeds, True))
    log("part 3: KNN game on MNIST: exact values and cross-checks ...")
    knn, exact, checks = knn_game_setup(20 if quick else 100, 5, 50 if quick else 300, rng)
    games.append(error_game(f"KNN-Shapley, {checks['n_train']:,} MNIST images, K = {checks['k']}, "
                            f"{checks['n_test']} test images (exact)", knn, exact,
                            [6, 10] if quick else [10, 30, 100], range(1) if quick else range(3), not quick,
                            screen_top=2))
    return games, checks


# --------------------------------------------------------------------------- analysis


def our_evaluations_to_reach(rows, target) -> tuple[float, str, str]:
    """Fewest evaluations any of our estimators needs to reach ``target`` error: (value, kind, estimator).

    Measured results (``kind`` "interpolated" or "at most") are preferred; an
    extrapolation is used only when no estimator reaches the target inside
    its measured range.
    """
    options = []
    for r in rows:
        if r["library"] != "shapley_research" or len(r["errors"]) < 2:
            continue
        needed, kind = evaluations_to_reach([np.mean(u) for u in r["evaluations"]],
                                            [np.mean(e) for e in r["errors"]], target)
        if np.isfinite(needed):
            options.append((kind == "extrapolated", needed, kind, r["estimator"]))
    if not options:
        return float("nan"), "not reached", "none"
    _, needed, kind, name = min(options)
    return needed, kind, name


def evaluations_to_reach(budgets, errors, target) -> tuple[float, str]:
    """Budget at which the curve ``errors(budgets)`` (budgets ascending) first reaches ``target``.

    * ``"interpolated"``: log-log interpolation between the last budget above
      the target and the first at or below it;
    * ``"at most"``: the smallest budget is already at or below the target
      (a measured upper bound);
    * ``"extrapolated"``: no budget reaches it; the power law fitted to the
      whole curve is extended (``nan`` if the fit does not decrease).
    """
    x, y = np.log(np.asarray(budgets, float)), np.log(np.asarray(errors, float))
    t = np.log(target)
    below = np.flatnonzero(y <= t)
    if below.size:
        i = below[0]
        if i == 0:
            return float(budgets[0]), "at most"
        return float(np.exp(x[i - 1] + (t - y[i - 1]) * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))), "interpolated"
    slope, intercept = np.polyfit(x, y, 1)
    if slope >= 0:
        return float("nan"), "extrapolated"
    return float(np.exp((t - intercept) / slope)), "extrapolated"
