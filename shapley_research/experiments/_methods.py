"""One registry of the valuation methods the experiments run: name -> how it is called, its label, its defaults.

Every experiment that runs methods by name (data_cleaning, its noisy utility
and budget probe, mlp_cleaning, the budget check of :mod:`._budgets`) looks
them up here, so a method has one spelling, one call and one label. Adding a
method is one :func:`register_method` call with a :class:`Method`. Two entries
(``weighted_banzhaf``, MSR at ``banzhaf_weight``; ``dvrl``) are in no
experiment's method list: a config or notebook runs them by name.

A method is called on a :class:`MethodCall`: the problem's arrays, the budget,
the seed, the options, and how to build the utility (``game``) and Data-OOB's
model (``learner``) when the method needs them (built only then).
:func:`run_method` records one call as a row (values, evaluations, wall time,
warnings, or the error of a failure).

Defaults: each method declares the options it reads and their defaults
(:attr:`Method.defaults`); :func:`method_defaults` merges them with the
model's (:data:`MODEL_DEFAULTS`). The experiments' settings come from
``conf/experiment/*.yaml``, which must agree with these defaults where both
name an option (``tests/experiments/test_methods_registry.py`` checks it).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from ..games import GameLike

__all__ = ["Method", "MethodCall", "MODEL_DEFAULTS", "register_method", "unregister_method",
           "get_method", "method_names", "method_defaults",
           "run_method", "truncation_game"]

#: What a method's call returns: ``(ValuationResult or values array, n_evaluations or None, note or None)``;
#: ``n_evaluations`` None means the result's own count.
Outcome = tuple[Any, "int | None", "str | None"]

#: The model options every game-based method's default utility reads (data_cleaning's logistic regression).
MODEL_DEFAULTS: Mapping[str, Any] = MappingProxyType({"logistic_C": 1.0, "max_iter": 1000})


@dataclass(frozen=True)
class MethodCall:
    """One call of a method: what it values and with what.

    Parameters
    ----------
    problem : mapping
        ``X_train, y_train, X_test, y_test`` (the data-based methods read them).
    budget : int or None
        Utility evaluations (model fits for Data-OOB and all-S influence);
        ``None`` for a method whose cost no budget sets.
    seed : int
        The method's seed.
    options : mapping
        The method's options (:func:`method_defaults` supplies the missing ones).
    make_game : callable
        ``make_game() -> game``: the utility of the game-based methods (called only by them).
    make_learner : callable, optional
        ``make_learner() -> model``: Data-OOB's model, fitted per bootstrap.
        ``None``: Data-OOB bags the game itself (a batched learner such as
        ``TorchModelUtility``: bootstrap counts as sample weights).
    """

    problem: Mapping[str, Any]
    budget: int | None
    seed: int
    options: Mapping[str, Any]
    make_game: Callable[[], GameLike]
    make_learner: Callable[[], Any] | None = None

    @property
    def game(self) -> GameLike:
        """The game (built on each access: read it once)."""
        return self.make_game()


@dataclass(frozen=True)
class Method:
    """A registered method.

    Parameters
    ----------
    name : str
        Its one spelling: the key of the registry and the ``method`` of every table.
    label : str
        The name readers see in figures and tables.
    call : callable
        ``call(MethodCall) -> (result, n_evaluations, note)``: ``result`` a
        ``ValuationResult`` or an array of values; ``n_evaluations`` ``None``
        to use the result's; ``note`` how it ran, or ``None``.
    needs : {"game", "data", "nothing"}
        What it values: a game (a utility of coalitions), the data arrays
        directly, or nothing (the random floor).
    budgeted : bool
        Whether the budget sets its cost (``False``: run once, budget ``None``).
    defaults : mapping
        The options it reads, with their defaults.
    """

    name: str
    label: str
    call: Callable[[MethodCall], Outcome]
    needs: Literal["game", "data", "nothing"] = "game"
    budgeted: bool = True
    defaults: Mapping[str, Any] = field(default_factory=dict)


_REGISTRY: dict[str, Method] = {}


def register_method(entry: Method) -> Method:
    """Add ``entry`` to the registry (its name must be new); returns it."""
    if not isinstance(entry, Method):
        raise TypeError(f"entry must be a Method, got {type(entry).__name__}.")
    if entry.name in _REGISTRY:
        raise ValueError(f"entry: a method named {entry.name!r} is already registered.")
    clash = {k: v for k, v in entry.defaults.items()
             if k in _all_defaults() and _all_defaults()[k] != v}
    if clash:
        raise ValueError(f"entry: {entry.name}'s defaults {clash} disagree with those already registered "
                         f"(one default per option).")
    _REGISTRY[entry.name] = entry
    return entry


def unregister_method(name: str) -> Method:
    """Remove the method called ``name`` from the registry; returns its entry."""
    get_method(name)
    return _REGISTRY.pop(name)


def get_method(name: str) -> Method:
    """The registered method called ``name``."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(_REGISTRY)}.")
    return _REGISTRY[name]


def method_names(*, needs: str | None = None, budgeted: bool | None = None) -> tuple[str, ...]:
    """The registered names, in registration order, optionally only those that need ``needs`` / are ``budgeted``."""
    return tuple(m.name for m in _REGISTRY.values()
                 if (needs is None or m.needs == needs) and (budgeted is None or m.budgeted == budgeted))


def _all_defaults() -> dict[str, Any]:
    merged = dict(MODEL_DEFAULTS)
    for entry in _REGISTRY.values():
        merged.update(entry.defaults)
    return merged


def method_defaults(methods: Iterable[str] | None = None) -> dict[str, Any]:
    """The defaults of the options ``methods`` read (default every registered method), with :data:`MODEL_DEFAULTS`."""
    if methods is None:
        return _all_defaults()
    merged = dict(MODEL_DEFAULTS)
    for name in methods:
        merged.update(get_method(name).defaults)
    return merged


def run_method(name: str, call: MethodCall) -> dict[str, Any]:
    """Run method ``name`` on ``call``; a failure is recorded, not raised.

    Returns
    -------
    dict
        ``method, budget`` (``None`` for methods whose cost the budget does not
        set), ``values`` (``(N,)`` float array, or ``None`` after a failure),
        ``n_evaluations`` (utility evaluations, or model fits for Data-OOB and
        all-S influence), ``wall_time_s``, ``n_nan`` (values that were NaN,
        e.g. a point never out of bag; they are ranked as the mean value),
        ``note`` (how it ran, and the warnings raised), ``error``
        (``"Type: message"`` of a failure, else ``None``).
    """
    entry = get_method(name)
    row: dict[str, Any] = {"method": name, "budget": call.budget if entry.budgeted else None, "values": None,
                           "n_evaluations": 0, "wall_time_s": float("nan"), "n_nan": 0, "note": None, "error": None}
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result, n_evaluations, note = entry.call(call)
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


def truncation_game(game: GameLike) -> tuple[GameLike, str]:
    """``(game, how)``: the game truncated Monte Carlo runs on.

    ``permutation_shapley(truncation=...)`` refuses a game with a one-pass
    ``evaluate_prefixes`` (truncation could save nothing there). A game
    without that capability (the routed logistic game, ``warm_prefixes=False``)
    is used as is; otherwise a wrapper exposing only ``evaluate`` is used, and
    ``how`` says so.
    """
    from ..games import as_game, supports_prefixes

    if not supports_prefixes(game):
        return game, "routed game (no evaluate_prefixes)"
    return as_game(game.evaluate, game.n_players, vectorized=True), "as_game(game.evaluate) wrapper"



# ----------------------------------------------------------------------------- the methods

_QUIET: Mapping[str, Any] = MappingProxyType({"progress": False})


def _random(call: MethodCall) -> Outcome:
    return np.random.default_rng(call.seed).random(np.asarray(call.problem["y_train"]).size), 0, None


def _data(call: MethodCall) -> tuple[Any, Any, Any, Any]:
    p = call.problem
    return p["X_train"], p["y_train"], p["X_test"], p["y_test"]


def _knn_shapley(call: MethodCall) -> Outcome:
    from .. import knn_shapley

    return knn_shapley(*_data(call), call.options["knn_k"]), 0, None


def _data_oob(call: MethodCall) -> Outcome:
    from .. import data_oob

    n_estimators = min(call.budget, call.options["oob_max_estimators"])  # type: ignore[type-var]
    X, y = call.problem["X_train"], call.problem["y_train"]
    if call.make_learner is None:  # the game is the batched learner: bootstrap counts as sample weights
        return data_oob(call.game, X, y, n_estimators=n_estimators, seed=call.seed, **_QUIET), None, None
    # oob_fast: the bagged models on the batched learner the games use (equal footing for wall time)
    fast = bool(call.options["oob_fast"])
    return (data_oob(call.make_learner(), X, y, n_estimators=n_estimators, seed=call.seed, fast=fast, **_QUIET),
            None, "batched learner (fast=True)" if fast else "scikit-learn fits")


def _all_s_influence(call: MethodCall) -> Outcome:
    from .. import all_s_influence

    # a budgeted method always gets its budget; utility="accuracy" as the game's
    return all_s_influence(*_data(call), call.budget, call.seed,  # type: ignore[arg-type]
                           C=call.options["logistic_C"], utility="accuracy", **_QUIET), None, None


def _largest_s_influence(call: MethodCall) -> Outcome:
    from .. import largest_s_influence

    # utility="accuracy" as the game's; its smooth surrogate gives the linear change (the library default)
    return largest_s_influence(*_data(call), C=call.options["logistic_C"], utility="accuracy"), None, None


def _leave_one_out(call: MethodCall) -> Outcome:
    from .. import leave_one_out

    return leave_one_out(call.game), None, None


def _permutation(call: MethodCall) -> Outcome:
    from .. import permutation_shapley

    return permutation_shapley(call.game, call.budget, call.seed, **_QUIET), None, None  # type: ignore[arg-type]


def _permutation_antithetic(call: MethodCall) -> Outcome:
    from .. import permutation_shapley

    return permutation_shapley(call.game, call.budget, call.seed,  # type: ignore[arg-type]
                               antithetic=True, position_adjustment=True, **_QUIET), None, None


def _truncated_permutation(call: MethodCall) -> Outcome:
    from .. import permutation_shapley

    target, how = truncation_game(call.game)
    return permutation_shapley(target, call.budget, call.seed,  # type: ignore[arg-type]
                               truncation=call.options["truncation"], **_QUIET), None, how


def _group_testing(call: MethodCall) -> Outcome:
    from .. import group_testing_shapley

    # Wang & Jia's estimator (variant "improved") with this package's linear centering
    return group_testing_shapley(call.game, call.budget, call.seed,  # type: ignore[arg-type]
                                 variant="improved", centering="linear", **_QUIET), None, None


def _compressive(call: MethodCall) -> Outcome:
    from .. import compressive_shapley

    return compressive_shapley(call.game, call.budget, call.seed, **_QUIET), None, None  # type: ignore[arg-type]


def _svarm(call: MethodCall) -> Outcome:
    from .. import stratified_svarm_shapley

    return stratified_svarm_shapley(call.game, call.budget, call.seed,  # type: ignore[arg-type]
                                    **_QUIET), None, None


def _msr_banzhaf(call: MethodCall) -> Outcome:
    from .. import msr_banzhaf

    return msr_banzhaf(call.game, call.budget, call.seed, **_QUIET), None, None  # type: ignore[arg-type]


def _weighted_banzhaf(call: MethodCall) -> Outcome:
    from .. import msr_banzhaf

    # Li & Yu's weighted Banzhaf value by MSR: each player in a coalition with probability banzhaf_weight
    return msr_banzhaf(call.game, call.budget, call.seed,  # type: ignore[arg-type]
                       weight=call.options["banzhaf_weight"], **_QUIET), None, None


def _dvrl(call: MethodCall) -> Outcome:
    from .. import dvrl

    # the paper's settings (dvrl's defaults); on a ModelUtility its input holds the marginal signal of one extra
    # fit on the validation set, which n_evaluations (the coalitions evaluated) does not count
    result = dvrl(call.game, call.budget, call.seed, **_QUIET)  # type: ignore[arg-type]
    return result, None, f"features: {result.info['features']}"


def _beta_shapley(call: MethodCall) -> Outcome:
    from .. import beta_shapley

    return beta_shapley(call.game, call.budget, call.seed,  # type: ignore[arg-type]
                        alpha=call.options["beta_alpha"], beta=call.options["beta_beta"], **_QUIET), None, None


def _ame(call: MethodCall) -> Outcome:
    from .. import ame

    # the penalty by 5-fold cross-validation along the exact Lasso path over the inclusion indicators (the defaults)
    return ame(call.game, call.budget, call.seed, **_QUIET), None, None  # type: ignore[arg-type]


def _class_wise_shapley(call: MethodCall) -> Outcome:
    from .. import class_wise_shapley

    return class_wise_shapley(call.game, call.budget, call.seed, **_QUIET), None, None  # type: ignore[arg-type]


def _lava(call: MethodCall) -> Outcome:
    from .. import lava

    return lava(*_data(call)), None, None


for _entry in (
    Method("random", "random values", _random, needs="nothing", budgeted=False),
    Method("knn_shapley", "KNN-Shapley (exact)", _knn_shapley, needs="data", budgeted=False, defaults={"knn_k": 10}),
    Method("permutation", "permutation Shapley", _permutation),
    Method("permutation_antithetic", "antithetic + position adj.", _permutation_antithetic),
    Method("truncated_permutation", "truncated MC (TMC)", _truncated_permutation, defaults={"truncation": 0.01}),
    Method("group_testing", "group testing (Wang & Jia + centering)", _group_testing),
    Method("compressive", "compressive", _compressive),
    Method("svarm", "stratified SVARM", _svarm),
    Method("msr_banzhaf", "Banzhaf (MSR)", _msr_banzhaf),
    Method("beta_shapley", "Beta(16, 1)", _beta_shapley, defaults={"beta_alpha": 16.0, "beta_beta": 1.0}),
    Method("leave_one_out", "leave-one-out", _leave_one_out, budgeted=False),
    Method("data_oob", "Data-OOB", _data_oob, needs="data",
           defaults={"oob_max_estimators": 800, "oob_fast": False}),
    Method("all_s_influence", "all-S influence", _all_s_influence, needs="data"),
    Method("largest_s_influence", "largest-S influence", _largest_s_influence, needs="data", budgeted=False),
    Method("ame", "AME (Lasso)", _ame),
    Method("class_wise_shapley", "class-wise Shapley", _class_wise_shapley),
    Method("lava", "LAVA (optimal transport)", _lava, needs="data", budgeted=False),
    # available by name, in no experiment's method list. banzhaf_weight 0.1: on the utilities that train a model
    # (logistic regression on breast cancer and digits, mlp_cleaning's MLP) it detected flipped labels best or
    # within 0.002 of the best weight, at 20 N 0.07-0.16 AUROC above Banzhaf's 0.5 (above it on every seed); on the KNN
    # utility it was 0.013-0.016 below (benchmarks/results/weighted_banzhaf.md)
    Method("weighted_banzhaf", "weighted Banzhaf (MSR)", _weighted_banzhaf, defaults={"banzhaf_weight": 0.1}),
    Method("dvrl", "DVRL", _dvrl),
):
    register_method(_entry)
del _entry
