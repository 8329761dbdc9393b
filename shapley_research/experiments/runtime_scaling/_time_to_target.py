"""What a user sees (panel c): measured CPU time of each estimator to a fixed relative error at small N."""

from __future__ import annotations

import math
import time
import warnings
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._parallel import parallel_map
from ._costs import LN2, stratum_layout

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from numpy.typing import ArrayLike
    import pandas as pd
    from ...games import FunctionGame
    from ...result import ValuationResult

#: Estimators, in the order of the figure's legend.
METHODS = ("permutation", "group_testing_paper", "group_testing_improved", "all_s_influence",
           "largest_s_influence")


# --------------------------------------------------------------------------------------------
# What a user sees: time to a fixed empirical error at small N
# --------------------------------------------------------------------------------------------

def pca_project(X_train: np.ndarray, X_test: np.ndarray, n_components: int,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Project both sets on the top principal axes of ``X_train`` (fitted on train only).

    Returns
    -------
    A : ndarray of shape (n_train, n_components)
    B : ndarray of shape (n_test, n_components)
    """
    from shapley_research.datasets import pca_features

    A, B, _ = pca_features(X_train, X_test, n_components, seed=seed)
    return A, B


def shifted_log_loss_game(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, *,
                          C: float = 1.0) -> FunctionGame:
    r"""The game :math:`U(S) = \ln 2 - \text{test log-loss of } \mathrm{LogisticRegression}(C) \text{ fitted on } S`.

    The paper's negative test loss, shifted so that the uninformed model
    (probability 1/2, the model of every coalition lacking a class, the empty
    one included) scores 0; the shift changes no Shapley value. Trained by the
    package's batched learner
    (:class:`~shapley_research.LogisticRegressionUtility`, exact refits,
    scikit-learn's objective). Wrapped with :func:`~shapley_research.as_game`
    so permutation sampling refits every prefix (the learner's approximate
    one-pass path is not used). The influence estimators value the same game:
    they use the same objective and the same convention for degenerate
    coalitions.
    """
    from shapley_research import LogisticRegressionUtility, as_game

    learner = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", C=C,
                                        degenerate="default", default_utility=-LN2)
    return as_game(lambda masks: learner.evaluate(masks) + LN2, learner.n_players, vectorized=True)


def relative_error(estimate: ArrayLike, reference: ArrayLike) -> float:
    r""":math:`\lVert \hat s - s\rVert_2 / \lVert s\rVert_2`."""
    estimate, reference = np.asarray(estimate, dtype=float), np.asarray(reference, dtype=float)
    if estimate.shape != reference.shape:
        raise ValueError(f"shapes differ: {estimate.shape} and {reference.shape}.")
    norm = np.linalg.norm(reference)
    if norm == 0:
        raise ValueError("the reference values are all zero: relative error undefined.")
    return float(np.linalg.norm(estimate - reference) / norm)


def reference_values(X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray, *,
                     C: float = 1.0, seed: int = 0, exact_max_players: int = 12, rel_error: float = 0.05,
                     pilot_permutations: int = 50, max_permutations: int = 4000) -> dict[str, Any]:
    r"""Reference Shapley values of :func:`shifted_log_loss_game`.

    Exact (:func:`~shapley_research.exact_shapley`) when ``N <=
    exact_max_players``; otherwise permutation sampling with enough
    permutations for an estimated relative error
    :math:`\sqrt{\sum_i \mathrm{se}_i^2}/\lVert\hat s\rVert \le` ``rel_error``
    (a pilot of ``pilot_permutations`` sets the count, capped at
    ``max_permutations``).

    Returns
    -------
    dict
        ``values``, ``method`` (``"exact"`` or ``"permutation"``),
        ``estimated_rel_error`` (0 for exact), ``evaluations``, ``cpu_seconds``.
    """
    from shapley_research import exact_shapley, permutation_shapley

    n = len(y_train)
    start = time.process_time()
    game = shifted_log_loss_game(X_train, y_train, X_test, y_test, C=C)
    if n <= exact_max_players:
        result = exact_shapley(game)
        return {"values": result.values, "method": "exact", "estimated_rel_error": 0.0,
                "evaluations": result.n_evaluations, "cpu_seconds": time.process_time() - start}

    def estimated(res):
        return float(np.sqrt(np.sum(res.stderr ** 2)) / np.linalg.norm(res.values))

    pilot = permutation_shapley(game, pilot_permutations * n + 1, seed=seed)
    wanted = int(math.ceil(pilot_permutations * (estimated(pilot) / rel_error) ** 2 * 1.2))
    permutations = int(min(max(wanted, pilot_permutations), max_permutations))
    result = pilot if permutations <= pilot_permutations else permutation_shapley(game, permutations * n + 1, seed=seed)
    return {"values": result.values, "method": "permutation", "estimated_rel_error": estimated(result),
            "evaluations": result.n_evaluations + (pilot.n_evaluations if result is not pilot else 0),
            "cpu_seconds": time.process_time() - start}


def run_estimator(method: str, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
                  budget: int | None, seed: int, *, C: float = 1.0) -> tuple[ValuationResult, float]:
    """Run one estimator on :func:`shifted_log_loss_game`, timing it (game construction included).

    ``budget`` is the number of sampled utility evaluations: ``budget / N``
    permutations, ``budget`` group tests (plus the anchors each method
    evaluates once), or for all-S the number of fitted base sets; largest-S
    ignores it. Returns ``(ValuationResult, cpu_seconds)``.
    """
    from shapley_research import (all_s_influence, group_testing_shapley, largest_s_influence,
                                  permutation_shapley)

    n = len(y_train)
    start = time.process_time()
    # the budgeted methods (all but largest-S) are always given a budget: int(budget) below is safe
    if method == "permutation":
        game = shifted_log_loss_game(X_train, y_train, X_test, y_test, C=C)
        result = permutation_shapley(game, int(budget) + 1, seed=seed)  # type: ignore[arg-type]
    elif method in ("group_testing_paper", "group_testing_improved"):
        game = shifted_log_loss_game(X_train, y_train, X_test, y_test, C=C)
        variant: Literal["paper", "improved"] = "paper" if method == "group_testing_paper" else "improved"
        result = group_testing_shapley(game, int(budget) + 2, seed=seed, variant=variant)  # type: ignore[arg-type]
    elif method == "all_s_influence":
        result = all_s_influence(X_train, y_train, X_test, y_test, int(budget),  # type: ignore[arg-type]
                                 seed=seed, C=C, progress=False)
    elif method == "largest_s_influence":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # C_U < 0 is recorded in the result's info
            result = largest_s_influence(X_train, y_train, X_test, y_test, C=C)
    else:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}.")
    seconds = time.process_time() - start
    if n != result.values.size:  # pragma: no cover - defensive
        raise RuntimeError("estimator returned the wrong number of values.")
    return result, seconds


def budget_schedule(method: str, n: int, max_doublings: int, *, n_pilot: int = 2) -> list[int | None]:
    """Geometric budgets of the time-to-target search.

    Sampling methods: ``N * 2**j`` evaluations, ``j = 0..max_doublings``
    (``2**j`` permutations). All-S: its pilot (``n_pilot`` base sets per
    coalition size, fewer where a size has fewer sets) times ``2**j``.
    Largest-S: one run (``[None]``).
    """
    if method == "largest_s_influence":
        return [None]
    if method == "all_s_influence":
        k = np.arange(1, n)
        base = np.where(n - k >= k + 1, k, k + 1)
        pilot = int(sum(min(n_pilot, math.comb(n, int(b))) for b in base))
        return [pilot * 2 ** j for j in range(max_doublings + 1)]
    return [n * 2 ** j for j in range(max_doublings + 1)]


def time_to_target(method: str, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
                   reference: np.ndarray, target: float, seed: int, *, max_doublings: int,
                   C: float = 1.0) -> list[dict[str, Any]]:
    """Run ``method`` at increasing budgets until its relative error is at most ``target``.

    Budgets follow :func:`budget_schedule`; the search stops at the first
    budget that reaches the target (the time reported is that run's CPU time,
    not the whole search's) or after the largest budget.

    Returns
    -------
    list of dict
        One per run: ``n``, ``method``, ``seed``, ``budget``, ``evaluations``,
        ``cpu_seconds``, ``rel_error``, ``reached``.
    """
    n = len(y_train)
    rows = []
    for budget in budget_schedule(method, n, max_doublings):
        result, seconds = run_estimator(method, X_train, y_train, X_test, y_test, budget, seed, C=C)
        error = relative_error(result.values, reference)
        rows.append({"n": n, "method": method, "seed": int(seed), "budget": -1 if budget is None else int(budget),
                     "evaluations": int(result.n_evaluations), "cpu_seconds": float(seconds),
                     "rel_error": error, "reached": bool(error <= target)})
        if error <= target:
            break
    return rows


def _time_to_target_task(method, X_train, y_train, X_test, y_test, reference, target, seed, max_doublings, C):
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # single-core timings, also inside joblib workers
        return time_to_target(method, X_train, y_train, X_test, y_test, reference, target, seed,
                              max_doublings=max_doublings, C=C)


def measure_time_to_target(X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
                           ns: Iterable[int], references: dict[int, dict[str, Any]], target: float,
                           seeds: Iterable[int], *,
                           methods: Sequence[str] = METHODS, max_doublings: int = 12, all_s_max_doublings: int = 3,
                           C: float = 1.0, n_jobs: int = 1, progress: Callable[..., Iterable[Any]] | None = None,
                           ) -> list[dict[str, Any]]:
    """:func:`time_to_target` for every (``N``, method, seed) on the first ``N`` training points.

    ``references[N]`` holds the reference values. With ``n_jobs > 1`` the
    searches run in joblib worker processes (each timing its own CPU time);
    the errors and budgets do not depend on ``n_jobs``, only the timings'
    noise does.
    """
    tasks = [(n, method, seed) for n in ns for method in methods for seed in seeds]

    def arguments(n, method, seed):
        doublings = all_s_max_doublings if method == "all_s_influence" else max_doublings
        return (method, X_train[:n], y_train[:n], X_test, y_test, references[n], target, seed, doublings, C)

    results = parallel_map(_time_to_target_task, [arguments(*t) for t in tasks],
                           n_jobs=1 if n_jobs is None else n_jobs, progress=progress, desc="time to target")
    return [row for rows in results for row in rows]


def summarise_time_to_target(runs: Sequence[dict[str, Any]] | pd.DataFrame, target: float) -> pd.DataFrame:
    """Per (``n``, ``method``): median CPU time to the target over seeds, or a lower bound.

    A seed that never reached the target counts as infinite time; when the
    median is infinite the row reports ``reached=False`` and, as
    ``cpu_seconds``, the largest single run's CPU time (a lower bound on the
    time needed). ``rel_error`` is the median error of each seed's last run.

    Returns
    -------
    pandas.DataFrame
        Columns ``n``, ``method``, ``reached``, ``cpu_seconds``,
        ``evaluations``, ``rel_error``, ``seeds_reached``, ``n_seeds``, ``target``.
    """
    import pandas as pd

    runs = pd.DataFrame(runs)
    rows = []
    for (n, method), group in runs.groupby(["n", "method"], sort=False):
        finals = group.groupby("seed").tail(1)
        times = np.where(finals["reached"], finals["cpu_seconds"], np.inf)
        evals = np.where(finals["reached"], finals["evaluations"], np.inf)
        median_time = float(np.median(times))
        reached = bool(np.isfinite(median_time))
        rows.append({"n": int(n), "method": method, "reached": reached,
                     "cpu_seconds": median_time if reached else float(group["cpu_seconds"].max()),
                     "evaluations": float(np.median(evals)) if reached else float(group["evaluations"].max()),
                     "rel_error": float(finals["rel_error"].median()),
                     "seeds_reached": int(finals["reached"].sum()), "n_seeds": int(len(finals)),
                     "target": float(target)})
    order = {m: i for i, m in enumerate(METHODS)}
    return pd.DataFrame(rows).sort_values(["n", "method"], key=lambda s: s.map(order) if s.name == "method" else s,
                                          ignore_index=True)


def all_s_enumerated_error(X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray, *,
                           C: float = 1.0, seed: int = 0) -> dict[str, Any]:
    r"""Relative l2 error of all-S influence with every stratum enumerated: the influence bias alone.

    A budget of :math:`\sum_{k=1}^{N-1}\binom{N}{|S_k|}` base sets exhausts
    every stratum, so no sampling error is left and the error against the
    exact values (:func:`reference_values`) is the bias of the marginal
    approximation: ``"newton"`` (one Newton step, the default of
    :func:`shapley_research.all_s_influence` and of the measured panel) and
    ``"influence"`` (the paper's first-order formula). ``rel_error_uniform``:
    the trivial baseline :math:`\hat s_i = \sum_j s_j / N`.

    Returns ``{n, base_sets, rel_error_uniform, rel_error_newton, rel_error_influence}``;
    raises ValueError unless ``3 <= N <= 14`` (the exact values take :math:`2^N` fits).
    """
    from shapley_research import all_s_influence

    n = len(y_train)
    if not 3 <= n <= 14:
        raise ValueError(f"y_train must hold 3 to 14 points (exact reference values), got {n}.")
    reference = reference_values(X_train, y_train, X_test, y_test, C=C, exact_max_players=n)["values"]
    base_sets = sum(math.comb(n, stratum_layout(n, k)[1]) for k in range(1, n))
    out = {"n": n, "base_sets": base_sets,
           "rel_error_uniform": relative_error(np.full(n, reference.sum() / n), reference)}
    for approximation in ("newton", "influence"):
        result = all_s_influence(X_train, y_train, X_test, y_test, base_sets, seed=seed, C=C,
                                 approximation=approximation, progress=False)
        if not result.info["exhausted"].all():  # pragma: no cover - defensive
            raise RuntimeError("the all-S budget did not exhaust every stratum.")
        out[f"rel_error_{approximation}"] = relative_error(result.values, reference)
    return out


def empirical_time_ratio(measured: pd.DataFrame, n: int, numerator: str, denominator: str) -> tuple[float, bool]:
    """``time(numerator) / time(denominator)`` at ``n`` in :func:`summarise_time_to_target`'s table.

    Returns ``(ratio, numerator_faster)``: ``numerator_faster`` is True only
    when the numerator reached the target and in less time than the
    denominator, or reached it while the denominator did not. A time of a
    method that did not reach the target is a lower bound, so the ratio is
    then a bound too (NaN when neither reached it).
    """
    at = measured[measured["n"] == n].set_index("method")
    num, den = at.loc[numerator], at.loc[denominator]
    if not num["reached"] and not den["reached"]:
        return float("nan"), False
    ratio = float(num["cpu_seconds"] / den["cpu_seconds"])
    faster = bool(num["reached"] and (not den["reached"] or ratio < 1.0))
    return ratio, faster
