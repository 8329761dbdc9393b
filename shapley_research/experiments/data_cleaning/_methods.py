"""The valuation methods compared, run through the package's public API at one budget of utility evaluations."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._data import make_game, make_model

if TYPE_CHECKING:
    from ...games import GameLike

#: Every method, in the order of the tables and figures. ``random`` is the floor: i.i.d. uniform values.
METHODS = ("random", "knn_shapley", "permutation", "permutation_antithetic", "truncated_permutation",
           "group_testing", "compressive", "svarm", "msr_banzhaf", "beta_shapley", "leave_one_out", "data_oob",
           "all_s_influence", "largest_s_influence")
#: Methods whose cost is set by the budget (run at every budget of the grid); the others cost a fixed amount.
BUDGETED = ("permutation", "permutation_antithetic", "truncated_permutation", "group_testing", "compressive",
            "svarm", "msr_banzhaf", "beta_shapley", "data_oob", "all_s_influence")
#: The semivalue estimators the Data-OOB paper compares with (Data Shapley, its truncated form, Banzhaf, Beta).
SEMIVALUES = ("permutation", "truncated_permutation", "msr_banzhaf", "beta_shapley")
#: Methods the claims compare: run at every budget of the sweep, also above the common budget.
SWEPT = SEMIVALUES + ("data_oob",)
#: Run at the common budget only: all-S influence's refits dominate the run time (about 5 s per 3,000 fits),
#: and its AUROC did not move from 750 to 3,000 fits (0.983 / 0.983 / 0.984 on breast cancer, 4 seeds).
COMMON_BUDGET_ONLY = ("all_s_influence",)
RANDOM = "random"

LABELS = {
    "random": "random values", "knn_shapley": "KNN-Shapley (exact)", "permutation": "permutation Shapley",
    "permutation_antithetic": "antithetic + position adj.", "truncated_permutation": "truncated MC (TMC)",
    "group_testing": "group testing (Wang & Jia + centering)", "compressive": "compressive",
    "svarm": "stratified SVARM",
    "msr_banzhaf": "Banzhaf (MSR)", "beta_shapley": "Beta(16, 1)", "leave_one_out": "leave-one-out",
    "data_oob": "Data-OOB", "all_s_influence": "all-S influence", "largest_s_influence": "largest-S influence",
}

DEFAULT_OPTIONS = {"logistic_C": 1.0, "max_iter": 1000, "knn_k": 10, "truncation": 0.01, "beta_alpha": 16.0,
                   "beta_beta": 1.0, "oob_max_estimators": 300, "oob_fast": False}


def method_seed(seed: int, method: str) -> int:
    """An independent seed for ``method``, determined by ``seed`` (the same at every budget of the grid)."""
    entropy = [int(seed)] + list(method.encode())
    return int(np.random.SeedSequence(entropy).generate_state(1, dtype=np.uint32)[0])


def truncation_game(game: GameLike) -> tuple[GameLike, str]:
    """``(game, how)``: the game truncated Monte Carlo runs on.

    ``permutation_shapley(truncation=...)`` refuses a game with a one-pass
    ``evaluate_prefixes`` (truncation could save nothing there). The routed
    logistic game has none (``warm_prefixes=False``), so it is used as is;
    otherwise a wrapper exposing only ``evaluate`` is used, and ``how`` says so.
    """
    from ... import as_game

    if getattr(game, "evaluate_prefixes", None) is None:
        return game, "routed game (no evaluate_prefixes)"
    return as_game(game.evaluate, game.n_players, vectorized=True), "as_game(game.evaluate) wrapper"


def _call(method: str, problem: dict, budget: int | None, seed: int, options: dict, game: GameLike | None = None):
    """One valuation: returns ``(ValuationResult or values array, n_evaluations, note)``.

    ``game``: the utility of the game-based methods (default :func:`~._data.make_game` on ``problem``).
    """
    import shapley_research as sr

    X, y, X_test, y_test = problem["X_train"], problem["y_train"], problem["X_test"], problem["y_test"]
    n = y.size
    quiet: dict[str, Any] = {"progress": False}
    if method == RANDOM:
        return np.random.default_rng(seed).random(n), 0, None
    if method == "knn_shapley":
        return sr.knn_shapley(X, y, X_test, y_test, options["knn_k"]), 0, None
    if method == "data_oob":
        n_estimators = min(budget, options["oob_max_estimators"])
        model = make_model(options["logistic_C"], options["max_iter"])
        # oob_fast: the bagged models on the batched learner the games use (equal footing for wall time)
        fast = bool(options.get("oob_fast", False))
        return (sr.data_oob(model, X, y, n_estimators=n_estimators, seed=seed, fast=fast, **quiet), None,
                "batched learner (fast=True)" if fast else "scikit-learn fits")
    if method == "all_s_influence":
        # a budgeted method always gets its budget (run_methods)
        return sr.all_s_influence(X, y, X_test, y_test, budget, seed,  # type: ignore[arg-type]
                                  C=options["logistic_C"], utility="accuracy",
                                  **quiet), None, None
    if method == "largest_s_influence":
        # utility="accuracy" as the game's; its smooth surrogate gives the linear change (the library default)
        return sr.largest_s_influence(X, y, X_test, y_test, C=options["logistic_C"], utility="accuracy"), None, None
    game = make_game(problem, options["logistic_C"], options["max_iter"]) if game is None else game
    if method == "leave_one_out":
        return sr.leave_one_out(game), None, None
    if method == "permutation":
        return sr.permutation_shapley(game, budget, seed, **quiet), None, None
    if method == "permutation_antithetic":
        return sr.permutation_shapley(game, budget, seed, antithetic=True, position_adjustment=True,
                                      **quiet), None, None
    if method == "truncated_permutation":
        target, how = truncation_game(game)
        return sr.permutation_shapley(target, budget, seed, truncation=options["truncation"], **quiet), None, how
    if method == "group_testing":  # Wang & Jia's estimator (variant "improved") with this package's linear centering
        return sr.group_testing_shapley(game, budget, seed, variant="improved", centering="linear",
                                        **quiet), None, None
    if method == "compressive":
        return sr.compressive_shapley(game, budget, seed, **quiet), None, None
    if method == "svarm":
        return sr.stratified_svarm_shapley(game, budget, seed, **quiet), None, None
    if method == "msr_banzhaf":
        return sr.msr_banzhaf(game, budget, seed, **quiet), None, None
    if method == "beta_shapley":
        return sr.beta_shapley(game, budget, seed, alpha=options["beta_alpha"], beta=options["beta_beta"],
                               **quiet), None, None
    raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}.")


def run_method(method: str, problem: dict, budget: int | None, seed: int, options: dict | None = None, *,
               game: GameLike | None = None) -> dict:
    """Value ``problem``'s training points with ``method``; a failure is recorded, not raised.

    ``game`` replaces the logistic game of the game-based methods (the noisy
    utility of :mod:`._noisy`); the other methods ignore it.

    Returns
    -------
    dict
        ``method, budget`` (``None`` for methods whose cost the budget does not
        set), ``values`` (``(N,)`` float array, or ``None`` after a failure),
        ``n_evaluations`` (utility evaluations, or model fits for Data-OOB and
        all-S influence), ``wall_time_s``, ``n_nan`` (values that were NaN,
        e.g. a point never out of bag; they are ranked as the mean value),
        ``note`` (how truncation ran, or the warnings raised), ``error``
        (``"Type: message"`` of a failure, else ``None``).
    """
    import warnings

    options = {**DEFAULT_OPTIONS, **(options or {})}
    row: dict[str, Any] = {"method": method, "budget": budget if method in BUDGETED else None, "values": None,
                           "n_evaluations": 0, "wall_time_s": float("nan"), "n_nan": 0, "note": None, "error": None}
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result, n_evaluations, note = _call(method, problem, budget, seed, options, game)
    except Exception as err:  # a method that fails on this setup is a result: record why
        row["wall_time_s"] = time.perf_counter() - start
        row["error"] = f"{type(err).__name__}: {err}"
        return row
    row["wall_time_s"] = time.perf_counter() - start
    values = np.asarray(result if n_evaluations is not None else result.values, dtype=float)
    row["n_evaluations"] = int(n_evaluations if n_evaluations is not None else result.n_evaluations)
    nan = ~np.isfinite(values)
    row["n_nan"] = int(nan.sum())
    if nan.any():
        values = np.where(nan, np.nanmean(values) if (~nan).any() else 0.0, values)
    row["values"] = values
    messages = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    row["note"] = "; ".join(([note] if note else []) + messages) or None
    return row


def method_budgets(method: str, budgets: Sequence[int], main_budget: int) -> list[int]:
    """The budgets ``method`` runs at: :data:`SWEPT` at all, other budgeted ones up to ``main_budget``.

    Methods whose cost the budget does not set, and :data:`COMMON_BUDGET_ONLY`, run once (at ``main_budget``).
    """
    if method in SWEPT:
        return sorted(set(budgets) | {main_budget})
    if method in BUDGETED and method not in COMMON_BUDGET_ONLY:
        return sorted({b for b in budgets if b <= main_budget} | {main_budget})
    return [main_budget]


def run_methods(problem: dict, budgets: Sequence[int], seed: int, options: dict | None = None,
                methods: Sequence[str] = METHODS, main_budget: int | None = None) -> list[dict]:
    """Every method on one problem, each at :func:`method_budgets` (``main_budget``: default the largest)."""
    main_budget = max(budgets) if main_budget is None else main_budget
    rows = []
    for method in methods:
        grid = method_budgets(method, budgets, main_budget)
        for budget in grid:
            rows.append(run_method(method, problem, budget, method_seed(seed, method), options))
    return rows
