"""Budgets checked against the data before a notebook runs: each estimator's smallest budget for ``n_train`` players.

A budget of utility evaluations below what an estimator needs for one sampling
unit (one permutation, one stratum pass, ...) makes the estimator raise; in a
notebook that failure is recorded per method and the run breaks cells later
(``experiment.budget=20`` at ``n_train=30``). :func:`budget_problems` finds
such a budget in the composed parameters, before the kernel starts, naming the
parameter and the smallest budget that works.

The smallest budget is the estimator's own rule, not a copy of it: each
estimator is called with the budget on a stand-in game whose first evaluation
stops the call (:class:`_Enough`), so a budget passes exactly when the
estimator accepts it before evaluating anything. ``all_s_influence``, which
takes data rather than a game, needs its pilot round: one base set per
coalition size and pilot draw (:func:`all_s_minimum`).
``tests/experiments/test_budgets.py`` checks both against the estimators run
for real.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from ._methods import method_defaults, method_names

__all__ = ["GAME_ESTIMATORS", "smallest_budget", "all_s_minimum", "budget_problems"]


class _Enough(Exception):
    """Raised by the stand-in game at its first evaluation: the estimator accepted the budget."""


def _stand_in(n_players: int):
    from ..games import as_game

    def evaluate(masks):
        raise _Enough

    return as_game(evaluate, n_players, vectorized=True)


def _call(method: str, game: Any, budget: int, options: Mapping[str, Any]) -> Any:
    """Method ``method`` of the registry called on ``game`` as the experiments call it (seed 0); returns its result."""
    from ._methods import MethodCall, get_method as registered_method

    call = MethodCall({}, budget, 0, {**method_defaults([method]), **options}, make_game=lambda: game)
    result, _, _ = registered_method(method).call(call)
    return result


#: The methods :func:`smallest_budget` knows (the registry's budgeted game methods), besides ``all_s_influence``
#: (:func:`all_s_minimum`).
GAME_ESTIMATORS = method_names(needs="game", budgeted=True)


def _accepts(method: str, n_players: int, budget: int, options: tuple[tuple[str, Any], ...]) -> bool:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _call(method, _stand_in(n_players), budget, dict(options))
    except _Enough:
        return True
    except ValueError:  # the inputs are valid but for the budget
        return False
    return True  # finished without evaluating anything


@lru_cache(maxsize=256)
def _smallest(method: str, n_players: int, options: tuple[tuple[str, Any], ...]) -> int:
    low, high = 1, 64
    while not _accepts(method, n_players, high, options):
        low, high = high + 1, high * 2
        if high > 1 << 40:
            raise RuntimeError(f"{method} accepts no budget for {n_players} players.")
    while low < high:  # the smallest accepted budget in [low, high]
        middle = (low + high) // 2
        if _accepts(method, n_players, middle, options):
            high = middle
        else:
            low = middle + 1
    return low


def smallest_budget(method: str, n_players: int, options: Mapping[str, Any] | None = None) -> int:
    """The smallest budget (utility evaluations) ``method`` accepts on a game of ``n_players``.

    Parameters
    ----------
    method : str
        One of :data:`GAME_ESTIMATORS` (data_cleaning's names) or ``all_s_influence``.
    n_players : int
        The number of training points.
    options : mapping, optional
        ``truncation``, ``beta_alpha`` and ``beta_beta`` where the method takes
        them (default: the registry's, :mod:`._methods`).

    Returns
    -------
    int
    """
    if method not in (*GAME_ESTIMATORS, "all_s_influence"):
        raise ValueError(f"method must be one of {', '.join(GAME_ESTIMATORS)} or all_s_influence, got {method!r}.")
    rule = _rule(method, int(n_players))
    return rule if rule is not None else _smallest(method, int(n_players), _merged(method, options))


def all_s_minimum(n_players: int, n_pilot: int = 2) -> int:
    """The smallest budget ``all_s_influence`` accepts: its pilot round's base sets over the coalition sizes.

    Size ``k`` draws base sets of size ``k`` (adding a point) or ``k + 1``
    (removing one), whichever covers more players per fit, so it has
    ``C(N, k)`` or ``C(N, k + 1)`` of them; the pilot takes ``n_pilot`` of
    each, or all where there are fewer (the estimator's rule, checked against
    it by ``tests/experiments/test_budgets.py``).
    """
    import math

    n = int(n_players)
    return sum(min(n_pilot, math.comb(n, k if n - k >= k + 1 else k + 1)) for k in range(1, n))


def _merged(method: str, options: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """The options ``method`` reads (the registry's defaults under ``options``), hashable for the cache."""
    from ._methods import get_method as registered_method

    keys = tuple(registered_method(method).defaults)
    merged = {**method_defaults([method]), **(options or {})}
    return tuple((k, float(merged[k])) for k in keys)


def _rule(method: str, n_train: int) -> int | None:
    """The smallest budget of a method that no stand-in game can probe (its own rule), else ``None``.

    ``all_s_influence`` takes data, not a game; ``class_wise_shapley`` refuses
    any game but a classifier's, and needs one permutation of every class
    (the experiments' tasks are binary: two classes).
    """
    if method == "all_s_influence":
        return all_s_minimum(n_train)
    if method == "class_wise_shapley":
        from ..estimators import class_wise_minimum_budget

        return class_wise_minimum_budget(n_train, 2)
    return None


def _enough(method: str, budget: int, n_train: int, options: Mapping[str, Any]) -> bool:
    rule = _rule(method, n_train)
    if rule is not None:
        return budget >= rule
    return _accepts(method, n_train, budget, _merged(method, options))


def _check(where: str, budget: int, n_train: int, methods: Iterable[str], options: Mapping[str, Any]) -> list[str]:
    methods = tuple(methods)
    if all(_enough(m, budget, n_train, options) for m in methods):
        return []  # one call per method; the smallest budgets are searched only for the message
    needs = {m: smallest_budget(m, n_train, options) for m in methods}
    short = {method: need for method, need in needs.items() if budget < need}
    listed = ", ".join(f"{method} {need}" for method, need in sorted(short.items(), key=lambda kv: -kv[1]))
    return [f"{where}={budget} is too small for n_train={n_train}: at least {max(needs.values())} utility "
            f"evaluations are needed (by method: {listed})."]


def budget_problems(name: str, params: Mapping[str, Any]) -> list[str]:
    """One line per budget of experiment ``name`` too small for its ``n_train`` (empty when all suffice).

    iris_accuracy: the sizes its two iris classes can give and its exact
    reference can enumerate (:func:`~.iris_accuracy.size_problems`, the check
    its loader makes).

    data_cleaning: ``budget`` (every budgeted method of its list runs at it), each value of
    ``budget_grid`` up to ``budget`` (all its budgeted game methods run there;
    larger ones only the semivalues, which need less) and each of
    ``probe_budgets`` (the semivalues). mlp_cleaning: ``budget`` (MSR
    Banzhaf, Beta Shapley, truncated Monte Carlo). Other experiments have no
    budget of this kind. Parameters that break their own spec are left to
    :func:`~._schema.parameter_problems`.
    """
    n_train = params.get("n_train")
    if name == "iris_accuracy" and {"n_train", "n_test", "reference"} <= set(params):
        from .iris_accuracy import size_problems

        return size_problems(params["n_train"], params["n_test"], params["reference"], prefix="experiment.")
    if name not in ("data_cleaning", "mlp_cleaning") or not isinstance(n_train, int) or n_train < 2:
        return []
    from .data_cleaning import METHODS as CLEANING_METHODS
    from .data_cleaning import SEMIVALUES
    from .mlp_cleaning import METHODS as MLP_METHODS

    options = {k: params[k] for k in method_defaults() if k in params}
    budgets: dict[str, tuple[Any, tuple[str, ...]]]
    if name == "mlp_cleaning":
        budgets = {"experiment.budget": (params.get("budget"), tuple(m for m in MLP_METHODS if m in GAME_ESTIMATORS))}
    else:
        main = params.get("budget")
        # the methods data_cleaning runs: a registered method outside its list (dvrl) sets no minimum here
        runs = tuple(m for m in GAME_ESTIMATORS if m in CLEANING_METHODS)
        budgets = {"experiment.budget": (main, (*runs, "all_s_influence"))}
        for i, value in enumerate(params.get("budget_grid") or ()):
            if isinstance(main, int) and isinstance(value, int) and value <= main:
                budgets[f"experiment.budget_grid[{i}]"] = (value, runs)
        for i, value in enumerate(params.get("probe_budgets") or ()):
            budgets[f"experiment.probe_budgets[{i}]"] = (value, SEMIVALUES)
    problems = []
    for where, (budget, methods) in budgets.items():
        if isinstance(budget, int) and not isinstance(budget, bool):
            problems += _check(where, budget, n_train, methods, options)
    return problems
