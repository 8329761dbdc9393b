"""The valuation methods compared, run through the package's public API at one budget of utility evaluations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import _methods as registry
from .._methods import truncation_game  # noqa: F401  (re-exported by the package)
from ._data import make_game, make_model

if TYPE_CHECKING:
    from ...games import GameLike

#: Every method, in the order of the tables and figures (names, calls and labels: the registry,
#: :mod:`shapley_research.experiments._methods`). ``random`` is the floor: i.i.d. uniform values.
METHODS = ("random", "knn_shapley", "permutation", "permutation_antithetic", "truncated_permutation",
           "group_testing", "compressive", "svarm", "msr_banzhaf", "beta_shapley", "leave_one_out", "data_oob",
           "all_s_influence", "largest_s_influence", "ame", "class_wise_shapley", "lava")
#: Methods whose cost is set by the budget (run at every budget of the grid); the others cost a fixed amount.
BUDGETED = tuple(m for m in METHODS if registry.get_method(m).budgeted)
#: The semivalue estimators the Data-OOB paper compares with (Data Shapley, its truncated form, Banzhaf, Beta).
SEMIVALUES = ("permutation", "truncated_permutation", "msr_banzhaf", "beta_shapley")
#: Methods the claims compare: run at every budget of the sweep, also above the common budget.
SWEPT = SEMIVALUES + ("data_oob",)
#: Run at the common budget only: all-S influence's refits dominate the run time (about 5 s per 3,000 fits),
#: and its AUROC did not move from 750 to 3,000 fits (0.983 / 0.983 / 0.984 on breast cancer, 4 seeds).
COMMON_BUDGET_ONLY = ("all_s_influence",)
RANDOM = "random"

#: The reader-visible name of each method (the registry's labels).
LABELS = {m: registry.get_method(m).label for m in METHODS}

#: The options the methods read and their defaults (one source: the registry; the experiment's YAML agrees).
DEFAULT_OPTIONS = registry.method_defaults(METHODS)


def method_seed(seed: int, method: str) -> int:
    """An independent seed for ``method``, determined by ``seed`` (the same at every budget of the grid)."""
    entropy = [int(seed)] + list(method.encode())
    return int(np.random.SeedSequence(entropy).generate_state(1, dtype=np.uint32)[0])


def run_method(method: str, problem: dict, budget: int | None, seed: int, options: dict | None = None, *,
               game: GameLike | None = None) -> dict:
    """Value ``problem``'s training points with ``method``; a failure is recorded, not raised.

    ``game`` replaces the logistic game of the game-based methods (the noisy
    utility of :mod:`._noisy`); the other methods ignore it. Data-OOB bags
    :func:`~._data.make_model` (``oob_fast``: on the games' batched learner).

    Returns
    -------
    dict
        The row of :func:`shapley_research.experiments._methods.run_method`:
        ``method, budget`` (``None`` for methods whose cost the budget does
        not set), ``values`` (or ``None`` after a failure), ``n_evaluations``,
        ``wall_time_s``, ``n_nan``, ``note``, ``error``.
    """
    # a registered method outside METHODS (weighted_banzhaf, dvrl) runs with its own defaults too
    options = {**registry.method_defaults([method]), **DEFAULT_OPTIONS, **(options or {})}
    C, max_iter = options["logistic_C"], options["max_iter"]
    call = registry.MethodCall(problem, budget, seed, options,
                               make_game=(lambda: make_game(problem, C, max_iter)) if game is None else (lambda: game),
                               make_learner=lambda: make_model(C, max_iter))
    return registry.run_method(method, call)


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
