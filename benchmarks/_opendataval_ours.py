"""Our side of ``opendataval_comparison.py``: each method on the peer's task, with as many real fits as the peer.

Not a script: ``opendataval_comparison.py`` imports it. :func:`ours_once`
times one call as a user would make it (the utility's construction and
routing included); :func:`ours_matched` rescales our budget of utility
evaluations and reruns until our real fits (``ModelUtility.n_fits``) come
within 1% of the peer's, or as close as indivisible sampling units allow.
"""

from __future__ import annotations

import re
import time
import warnings
from typing import Any

import numpy as np

from _opendataval_task import ALPHA, BETA, FIT_TOLERANCE, FIXED_COST, K_NEIGHBOURS, MAX_CORRECTIONS, METHODS, TRUNCATION
from shapley_research import (ModelUtility, ame, beta_shapley, class_wise_shapley, data_oob, knn_shapley, lava,
                              leave_one_out, msr_banzhaf, permutation_shapley)


def make_model() -> Any:
    """A fresh ``LogisticRegression()`` with scikit-learn's defaults."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression()  # scikit-learn's defaults, as OpenDataVal's sklogreg


def ours_once(method: str, task: dict[str, np.ndarray], seed: int, budget: int) -> dict[str, Any]:
    """One timed run of our ``method`` with ``budget`` (utility evaluations, or bagged models for Data-OOB).

    The clock covers what a user's call costs: the utility's construction
    (its routing included) and the estimator.
    """
    X, y, X_valid, y_valid = task["x_train"], task["y_train"], task["x_valid"], task["y_valid"]
    start = time.perf_counter()
    if method == "oob":
        result = data_oob(make_model(), X, y, n_estimators=budget, seed=seed, fast="auto", progress=False)
        seconds = time.perf_counter() - start  # a bootstrap sample of one class is not fitted
        return {"values": result.values, "seconds": seconds, "fits": budget - int(result.info["n_single_class"]),
                "evaluations": budget, "route": str(result.info["route"]).split(":")[0]}
    if method in ("knn", "lava"):
        result = (knn_shapley(X, y, X_valid, y_valid, K_NEIGHBOURS) if method == "knn"
                  else lava(X, y, X_valid, y_valid))
        return {"values": result.values, "seconds": time.perf_counter() - start, "fits": 0, "evaluations": 0,
                "route": "exact" if method == "knn" else str(result.info["solver"])}
    game = ModelUtility(make_model(), X, y, X_valid, y_valid, metric="accuracy", fast="auto")
    if method == "tmc":
        result = permutation_shapley(game, budget, seed, truncation=TRUNCATION, progress=False)
    elif method == "beta":
        result = beta_shapley(game, budget, seed, alpha=ALPHA, beta=BETA, progress=False)
    elif method == "banzhaf":
        result = msr_banzhaf(game, budget, seed, progress=False)
    elif method == "loo":
        result = leave_one_out(game)
    elif method == "ame":
        result = ame(game, budget, seed, progress=False)
    elif method == "cs":  # predictions, not utilities: its fits are the coalitions it did not find degenerate
        result = class_wise_shapley(game, budget, seed, progress=False)
        game.n_fits += int(result.info["model_fits"])
    else:
        raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    seconds = time.perf_counter() - start
    route = str(game.route_).split(":")[0]  # "batched" or the per-fit route, the reason left out
    return {"values": result.values, "seconds": seconds, "fits": int(game.n_fits),
            "evaluations": int(result.n_evaluations), "route": route, "units": int(result.n_samples)}


def ours_at_least_one_unit(method: str, task: dict[str, np.ndarray], seed: int, budget: int) -> dict[str, Any]:
    """:func:`ours_once`; a budget below one sampling unit is raised to the minimum the estimator states.

    When the peer made fewer fits than one of our permutations (or Beta
    units) costs, ours runs one unit and so makes more fits than the peer
    (``floored`` is then True and the table shows both counts).
    """
    try:
        return {**ours_once(method, task, seed, budget), "budget": budget, "floored": False}
    except ValueError as error:
        minimum = re.search(r"needs at least ([\d,]+) utility evaluations", str(error))
        if minimum is None:
            raise
        budget = int(minimum.group(1).replace(",", ""))
        return {**ours_once(method, task, seed, budget), "budget": budget, "floored": True}


def ours_matched(method: str, task: dict[str, np.ndarray], seed: int, target_fits: int) -> dict[str, Any]:
    """Our run whose real fits come closest to the peer's ``target_fits`` (rescaled budget, reruns).

    Our budget counts utility evaluations, degenerate coalitions (scored by a
    constant model, not fitted) included, so the first run's budget is the
    target and each rerun's the last one times ``target / fits``, until the
    fits are within ``FIT_TOLERANCE`` or after ``MAX_CORRECTIONS`` reruns.
    Permutations, Beta units and class-wise rounds are indivisible (a unit gives every player
    one contribution), so the fits move in steps of about ``N`` there: the
    run closest to the target is returned (the larger on a tie), with every
    ``(budget, fits)`` tried in ``attempts``.
    """
    if method in FIXED_COST:  # their fits are fixed: N + 1, or none
        run = ours_once(method, task, seed, 0)
        return {**run, "budget": 0, "floored": False, "attempts": [(0, run["fits"])]}
    runs = [ours_at_least_one_unit(method, task, seed, max(int(target_fits), 2))]
    miss = lambda run: abs(run["fits"] - target_fits)
    while (method != "oob" and runs[-1]["fits"] > 0 and len(runs) <= MAX_CORRECTIONS
           and miss(runs[-1]) > FIT_TOLERANCE * target_fits
           and not (runs[-1]["floored"] and runs[-1]["fits"] > target_fits)):  # one unit: as few as it gets
        budget = max(int(round(runs[-1]["budget"] * target_fits / runs[-1]["fits"])), 2)
        runs.append(ours_at_least_one_unit(method, task, seed, budget))
    best = min(runs, key=lambda run: (miss(run), -run["fits"]))
    return {**best, "attempts": [(run["budget"], run["fits"]) for run in runs]}


def warm_up(task: dict[str, np.ndarray], n_points: int = 40, budget: int = 60) -> None:
    """Untimed first calls of every method on the task's first ``n_points`` (imports, numba loops, caches).

    The peer's process is warm when its clock starts; without this, the first
    timed run of each estimator would also pay for loading its compiled loops.
    """
    small = {**task, "x_train": task["x_train"][:n_points], "y_train": task["y_train"][:n_points]}
    with warnings.catch_warnings():  # so few points and models: warnings about them do not matter here
        warnings.simplefilter("ignore")
        for method in METHODS:
            ours_at_least_one_unit(method, small, 0, budget)
