r"""Experiment ``iris_accuracy``: how closely the approximation methods recover the Shapley value.

Paper, Section 5, "Comparing Approximation Accuracy" and Figure 3(a)
(``fig:comp``, "the data values produced by them"; the text cites the figure
as ``fig:adv``(d), whose caption has no panel (d)): on a small iris task with a regularised logistic regression,
compare (a) permutation sampling, (b) group testing, (c) all-S influence and
(d) largest-S influence against a precise reference. The paper's claims:
"(a)-(c) are closest to each other; largest-S is correlated with the others
although it cannot recover the true SV".

The game
--------
Players are ``n_train`` iris flowers of two classes (default versicolor vs
virginica, the overlapping pair), features standardised with the training
mean and standard deviation. The utility of a coalition ``S`` is the authors'
``ln 2 - test log-loss`` of scikit-learn's ``LogisticRegression(C=C)`` (L2
penalty, unpenalised intercept) fitted on ``S``:

.. math:: U(S) = \ln 2 + \frac1T \sum_t \log p_{\hat\theta_S}(y_t \mid x_t).

A coalition that misses a class (the empty set, every single point, every
one-class subset) cannot be fitted; it gets the uninformed model (probability
1/2), so :math:`U = 0` there and :math:`U(\emptyset) = 0` as the paper assumes
(Section 3). The shift by ``ln 2`` changes no Shapley value, but it does change
the variance of Algorithm 1 (group testing, ``variant="paper"``), which
averages raw utilities. Every method values this one game:

* :func:`make_game` (:class:`~shapley_research.ModelUtility` with
  ``degenerate="default", default_utility=-log 2``, plus ``ln 2``) for the
  exact reference, permutation sampling and group testing, and
* the influence module's fixed convention (:class:`~shapley_research.LogisticObjective`:
  a subset missing a class has :math:`\theta = 0`, utility :math:`-\log 2`),
  for all-S and largest-S influence; both only use utility differences and
  :math:`U(I) - U(\emptyset)`, so the constant does not enter,

and :func:`utility_mismatch` checks that the two agree up to the constant.
The authors clip ``U`` at 0; that clip is dropped (it would make ``U``
non-smooth, and influence functions need a smooth utility).

Methods and budgets
-------------------
Every sampling method gets the same budget ``B = budget_permutations * N``:
utility evaluations for permutation sampling (``budget_permutations``
permutations) and group testing (``B`` tests), model fits for all-S influence
(``B`` sampled base coalitions, each fitted once; the influence-approximated
marginal contributions derived from a fit are not counted, as in the paper).
Largest-S influence fits one model.

Verdicts
--------
Claims on a mean over repetitions are decided on its 95% t-interval
(:func:`mean_interval`), fixed before the run: a bound holds if the whole
interval is on the claimed side, fails if the whole interval is on the other
side, and is undecided otherwise (:func:`decide`). Accuracy is also compared
with the trivial uniform split :math:`U(I)/N` (:func:`uniform_split_error`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import (LogisticObjective, ModelUtility, ValuationResult, all_s_influence, as_game, exact_shapley,
                group_testing_shapley, largest_s_influence, permutation_shapley)
from ._common import claim, progress

__all__ = [
    "LN2", "METHODS", "MAIN_METHODS", "CLOSE_METHODS", "RANDOM_METHODS", "SHORT_NAMES", "IRIS_CLASSES", "MethodRun",
    "load_iris_pair", "make_game", "make_objective", "influence_utilities", "degenerate_and_random_masks",
    "utility_mismatch", "reference_values", "leave_one_out_normalised", "run_methods", "run_deterministic",
    "run_all", "repetition_seeds", "agreement", "agreement_table", "values_table", "uniform_split_error",
    "mean_estimate_error", "mean_interval", "decide", "repetitions_to_decide", "pairwise_distances", "summarise",
    "evaluate_claims", "plot_comparison",
]

IRIS_CLASSES = ("setosa", "versicolor", "virginica")
LN2 = math.log(2.0)

#: Display label of every method, in the order of the figure and the tables.
METHODS = {
    "permutation": "(a) permutation sampling",
    "gt_paper": "(b) group testing, paper (Alg. 1)",
    "gt_improved": "(b') group testing, improved",
    "all_s": "(c) all-S influence",
    "largest_s": "(d) largest-S influence",
    "all_s_first_order": "(c*) all-S, first-order influence",
    "loo_exact": "(d*) largest-S scheme, exact LOO",
}
#: Methods drawn in the figure (the paper's four, both group-testing variants).
MAIN_METHODS = ("permutation", "gt_paper", "gt_improved", "all_s", "largest_s")
#: The methods the paper says agree closely: (a)-(c).
CLOSE_METHODS = ("permutation", "gt_paper", "gt_improved", "all_s")
#: Methods with random draws (run once per repetition); the others are deterministic.
RANDOM_METHODS = ("permutation", "gt_paper", "gt_improved", "all_s", "all_s_first_order")


# ------------------------------------------------------------------------------------- data and game

def load_iris_pair(classes=(1, 2), n_train: int = 16, n_test: int = 40, seed: int = 0,
                   standardize: bool = True):
    """Two iris classes, split into a class-balanced training set and a test set.

    Parameters
    ----------
    classes : pair of int
        Iris class codes (0 setosa, 1 versicolor, 2 virginica).
    n_train, n_test : int
        Even sizes; each class gets half of each (so every class is in both).
    seed : int
        Seed of the split (``numpy.random.default_rng``).
    standardize : bool
        Centre and scale the features with the training set's mean and
        standard deviation (both sets).

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarrays
        Float features, integer labels (the original class codes). Training
        points are shuffled, so player indices carry no class order.
    """
    from sklearn.datasets import load_iris

    classes = tuple(int(c) for c in classes)
    if len(classes) != 2 or len(set(classes)) != 2 or not all(0 <= c <= 2 for c in classes):
        raise ValueError(f"classes must be two distinct iris class codes in 0..2, got {classes!r}.")
    for name, size in (("n_train", n_train), ("n_test", n_test)):
        if size < 2 or size % 2:
            raise ValueError(f"{name} must be an even number >= 2 (half per class), got {size}.")
    if (n_train + n_test) // 2 > 50:
        raise ValueError(f"n_train + n_test = {n_train + n_test} exceeds the 100 flowers of two classes.")
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in classes:
        rows = rng.permutation(np.flatnonzero(y == c))
        train.append(rows[:n_train // 2])
        test.append(rows[n_train // 2:(n_train + n_test) // 2])
    train = rng.permutation(np.concatenate(train))
    test = np.concatenate(test)
    X_train, X_test = X[train].astype(float), X[test].astype(float)
    if standardize:
        mean, std = X_train.mean(axis=0), X_train.std(axis=0)
        std = np.where(std > 0, std, 1.0)
        X_train, X_test = (X_train - mean) / std, (X_test - mean) / std
    return X_train, y[train], X_test, y[test]


def _check_binary(y_train) -> None:
    if np.unique(y_train).size != 2:
        raise ValueError("this experiment's utility convention is exact for two classes only: with K >= 3 "
                         "ModelUtility fits coalitions that miss a class while the influence module gives "
                         f"them theta = 0; got classes {np.unique(y_train).tolist()}.")


def make_game(X_train, y_train, X_test, y_test, C: float = 1.0, tol: float = 1e-8):
    """The game every model-refitting method values: ``ln 2 - test log-loss``, 0 when degenerate.

    ``ModelUtility(LogisticRegression(C, tol))`` routed to the batched
    :class:`~shapley_research.LogisticRegressionUtility` (exact refits; the
    learner's approximate one-pass prefix path is *not* used, so permutation
    sampling refits every prefix), degenerate coalitions (empty, one class)
    at ``-log 2``, shifted by ``ln 2`` so that :math:`U(\\emptyset) = 0`.
    """
    from sklearn.linear_model import LogisticRegression

    _check_binary(y_train)
    base = ModelUtility(LogisticRegression(C=C, tol=tol), X_train, y_train, X_test, y_test,
                        metric="neg_log_loss", degenerate="default", default_utility=-LN2, fast=True)
    return as_game(lambda masks: base.evaluate(masks) + LN2, base.n_players, vectorized=True)


def make_objective(X_train, y_train, X_test, y_test, C: float = 1.0) -> LogisticObjective:
    """The influence module's model of the same game (``utility="neg_log_loss"``)."""
    _check_binary(y_train)
    return LogisticObjective(X_train, y_train, X_test, y_test, C=C, utility="neg_log_loss")


def influence_utilities(objective: LogisticObjective, masks) -> np.ndarray:
    """``U(S) - U_0`` as the influence module defines ``U``: exact fit, or :math:`U_0` for a subset missing a class.

    Subtracting :math:`U_0 = -\\log 2` puts it on :func:`make_game`'s scale (:math:`U(\\emptyset) = 0`).
    """
    masks = np.atleast_2d(np.asarray(masks, dtype=bool))
    out = np.empty(masks.shape[0])
    for row, mask in enumerate(masks):
        if objective.degenerate(mask):
            out[row] = objective.degenerate_utility
        else:
            out[row] = objective.utility(objective.fit(mask))
    return out - objective.degenerate_utility


def degenerate_and_random_masks(n_players: int, y_train, n_random: int, seed: int = 0) -> np.ndarray:
    """Coalitions that exercise every convention: empty, singletons, one-class sets, full set, random ones.

    Returns
    -------
    ndarray of bool, shape (m, n_players)
        The empty set, each singleton, each class alone, the full set, then
        ``n_random`` coalitions of uniformly random size (1..N) and members.
    """
    y_train = np.asarray(y_train)
    rows = [np.zeros(n_players, dtype=bool)]
    rows += list(np.eye(n_players, dtype=bool))
    rows += [y_train == c for c in np.unique(y_train)]
    rows.append(np.ones(n_players, dtype=bool))
    rng = np.random.default_rng(seed)
    for _ in range(n_random):
        mask = np.zeros(n_players, dtype=bool)
        mask[rng.choice(n_players, size=rng.integers(1, n_players + 1), replace=False)] = True
        rows.append(mask)
    return np.array(rows)


def utility_mismatch(game, objective: LogisticObjective, masks) -> float:
    """Largest ``|U_game(S) - U_influence(S)|`` over ``masks``: 0 (to solver tolerance) if both value one ``U``."""
    masks = np.atleast_2d(np.asarray(masks, dtype=bool))
    return float(np.max(np.abs(game.evaluate(masks) - influence_utilities(objective, masks))))


# ------------------------------------------------------------------------------------- the methods

def reference_values(game, method: str = "exact", n_permutations: int = 20000, seed: int = 0,
                     n_jobs: int = 1) -> ValuationResult:
    """The precise reference: exact enumeration, or permutation sampling with many permutations.

    Parameters
    ----------
    method : {"exact", "permutation"}
        ``"exact"`` evaluates all :math:`2^N` coalitions (``stderr`` zero);
        ``"permutation"`` draws ``n_permutations`` permutations (the paper's
        protocol, for ``N`` too large to enumerate) and keeps their standard
        error.
    """
    if method == "exact":
        result = exact_shapley(game, max_players=22)
        result.stderr = np.zeros(result.n_players)
        return result
    if method == "permutation":
        return permutation_shapley(game, n_permutations * game.n_players + 1, seed=seed, n_jobs=n_jobs,
                                   progress=False)
    raise ValueError(f"reference must be 'exact' or 'permutation', got {method!r}.")


def leave_one_out_normalised(game, empty_utility: float | None = None) -> ValuationResult:
    r"""The largest-S scheme with *exact* marginals: :math:`C_U\,[U(I) - U(I\setminus\{i\})]`.

    :math:`C_U` rescales the leave-one-out marginals to sum to
    :math:`U(I) - U(\emptyset)` (Theorem 6). It separates the error of the
    scheme (one subset per point) from the error of the influence
    approximation. ``N + 2`` evaluations.
    """
    start = time.perf_counter()
    n = game.n_players
    masks = np.ones((n + 2, n), dtype=bool)
    masks[np.arange(n), np.arange(n)] = False
    masks[n + 1] = False
    u = game.evaluate(masks)
    full, empty = u[n], (u[n + 1] if empty_utility is None else float(empty_utility))
    marginals = full - u[:n]
    c_u = (full - empty) / marginals.sum()
    return ValuationResult(values=c_u * marginals, n_evaluations=n + 2, method="leave_one_out_normalised",
                           wall_time=time.perf_counter() - start,
                           info={"marginal_estimates": marginals, "normalization_constant": c_u})


@dataclass
class MethodRun:
    """One method's result with the process CPU time it took (the machine is shared: wall time is inflated)."""

    key: str
    result: ValuationResult
    cpu_time: float
    repetition: int = 0
    seed: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def n_model_fits(self) -> int:
        """Models actually fitted (all-S, largest-S) or utility evaluations (the others)."""
        return int(self.result.n_evaluations)


def _timed(key, fn, repetition=0, seed=None) -> MethodRun:
    start = time.process_time()
    result = fn()
    return MethodRun(key, result, time.process_time() - start, repetition, seed)


def run_methods(game, data, *, C: float, budget: int, seed: int, repetition: int = 0,
                methods=("permutation", "gt_paper", "gt_improved", "all_s"), n_jobs: int = 1) -> list[MethodRun]:
    """Run the randomised methods once with the same ``budget``, all from ``seed``.

    Parameters
    ----------
    game : ModelUtility
        From :func:`make_game` (permutation sampling and group testing).
    data : tuple
        ``(X_train, y_train, X_test, y_test)`` (the influence methods refit
        through :class:`~shapley_research.LogisticObjective`).
    C : float
        scikit-learn's ``C``, the same as the game's.
    budget : int
        Utility evaluations (permutation sampling, group testing) or sampled
        base coalitions, one fit each (all-S influence).
    seed : int
        Seed of every method of this repetition.
    methods : sequence of str
        Keys among ``permutation``, ``gt_paper``, ``gt_improved``, ``all_s``,
        ``all_s_first_order`` (all-S with the paper's first-order influence
        formula: base-set Hessian, linearised utility change).

    Returns
    -------
    list of MethodRun
    """
    calls = {
        "permutation": lambda: permutation_shapley(game, budget, seed=seed, n_jobs=n_jobs, progress=False),
        "gt_paper": lambda: group_testing_shapley(game, budget, seed=seed, variant="paper", n_jobs=n_jobs,
                                                  progress=False),
        "gt_improved": lambda: group_testing_shapley(game, budget, seed=seed, variant="improved", n_jobs=n_jobs,
                                                     progress=False),
        "all_s": lambda: all_s_influence(*data, budget, seed=seed, C=C, progress=False),
        "all_s_first_order": lambda: all_s_influence(*data, budget, seed=seed, C=C, approximation="influence",
                                                     utility_change="linear", progress=False),
    }
    unknown = set(methods) - set(calls)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; choose among {sorted(calls)}.")
    return [_timed(key, calls[key], repetition, seed) for key in methods]


def run_deterministic(game, data, *, C: float) -> list[MethodRun]:
    """Largest-S influence (the paper's formula, normalised by :math:`C_U`) and its exact-LOO counterpart."""
    # the influence module's U is unshifted: its U(empty) is -log 2 (only U(I) - U(empty) enters C_U)
    return [_timed("largest_s", lambda: largest_s_influence(*data, C=C, empty_utility=-LN2)),
            _timed("loo_exact", lambda: leave_one_out_normalised(game))]


def repetition_seeds(seed: int, n_repetitions: int) -> list[int]:
    """``n_repetitions`` distinct, reproducible seeds derived from ``seed``."""
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(n_repetitions)]


def run_all(game, data, *, C: float, budget: int, seed: int, n_repetitions: int,
            n_repetitions_all_s: int | None = None, first_order: bool = True, n_jobs: int = 1) -> list[MethodRun]:
    """Every method: the cheap randomised ones ``n_repetitions`` times, all-S in the first
    ``n_repetitions_all_s`` of them (default all; its fits cost ~100x more), its first-order variant once."""
    n_all_s = n_repetitions if n_repetitions_all_s is None else n_repetitions_all_s
    if not 1 <= n_all_s <= n_repetitions:
        raise ValueError(f"n_repetitions_all_s must be in 1..n_repetitions={n_repetitions}, got {n_all_s}.")
    runs = run_deterministic(game, data, C=C)
    seeds = repetition_seeds(seed, n_repetitions)
    for repetition in progress(range(n_repetitions), desc="repetitions"):
        methods = ["permutation", "gt_paper", "gt_improved"] + ["all_s"] * (repetition < n_all_s)
        if first_order and repetition == 0:
            methods.append("all_s_first_order")
        runs += run_methods(game, data, C=C, budget=budget, seed=seeds[repetition], repetition=repetition,
                            methods=methods, n_jobs=n_jobs)
    return runs


# ------------------------------------------------------------------------------------- agreement

def agreement(values, reference) -> dict:
    """Agreement of ``values`` with ``reference``.

    Returns
    -------
    dict
        ``spearman`` and its one-sided p-value ``spearman_p`` (H1: positive
        rank correlation), ``pearson``, ``l2_error`` and ``rel_l2_error``
        (:math:`\\|v - s\\|_2 / \\|s\\|_2`), ``max_abs_error``.
    """
    from scipy import stats

    values, reference = np.asarray(values, dtype=float), np.asarray(reference, dtype=float)
    if values.shape != reference.shape:
        raise ValueError(f"values {values.shape} and reference {reference.shape} differ in shape.")
    rho = stats.spearmanr(values, reference)
    p_one_sided = rho.pvalue / 2 if rho.statistic > 0 else 1 - rho.pvalue / 2
    error = values - reference
    return {"spearman": float(rho.statistic), "spearman_p": float(p_one_sided),
            "pearson": float(stats.pearsonr(values, reference).statistic),
            "l2_error": float(np.linalg.norm(error)),
            "rel_l2_error": float(np.linalg.norm(error) / np.linalg.norm(reference)),
            "max_abs_error": float(np.abs(error).max())}


def agreement_table(runs, reference: ValuationResult):
    """One row per run: method, repetition, agreement with the reference, cost (CPU, wall, evaluations)."""
    import pandas as pd

    rows = []
    for run in runs:
        rows.append({"method": run.key, "label": METHODS[run.key], "repetition": run.repetition,
                     "seed": run.seed, **agreement(run.result.values, reference.values),
                     "cpu_time_s": run.cpu_time, "wall_time_s": run.result.wall_time,
                     "n_evaluations": run.n_model_fits, "n_samples": int(run.result.n_samples)})
    return pd.DataFrame(rows)


def values_table(runs, reference: ValuationResult, y_train):
    """Tidy values behind the figure: one row per (method, repetition, point), reference included."""
    import pandas as pd

    order = np.argsort(reference.values, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    frames = []
    entries = [("reference", 0, reference)] + [(run.key, run.repetition, run.result) for run in runs]
    for key, repetition, result in entries:
        stderr = result.stderr if result.stderr is not None else np.full(result.n_players, np.nan)
        frames.append(pd.DataFrame({
            "method": key, "repetition": repetition, "point": np.arange(result.n_players),
            "label": np.asarray(y_train), "reference_rank": rank, "value": result.values, "stderr": stderr,
            "reference_value": reference.values}))
    return pd.concat(frames, ignore_index=True)


def uniform_split_error(reference) -> float:
    r"""Relative l2 error of the trivial baseline :math:`v_i = (U(I) - U(\emptyset))/N` (the uniform split)."""
    reference = np.asarray(reference, dtype=float)
    return float(np.linalg.norm(reference - reference.mean()) / np.linalg.norm(reference))


def mean_estimate_error(runs, reference: ValuationResult) -> dict:
    """Relative l2 error of each method's estimate averaged over its repetitions (a bias proxy)."""
    by_key: dict[str, list] = {}
    for run in runs:
        by_key.setdefault(run.key, []).append(run.result.values)
    norm = np.linalg.norm(reference.values)
    return {key: float(np.linalg.norm(np.mean(v, axis=0) - reference.values) / norm) for key, v in by_key.items()}


def mean_interval(samples, level: float = 0.95) -> tuple[float, float, float]:
    r"""Mean and two-sided t-interval :math:`\bar x \pm t_{(1+\ell)/2,\,n-1}\, s / \sqrt n` of the samples.

    Returns ``(mean, low, high)``; with a single sample the ends are NaN (nothing can be decided).
    """
    from scipy import stats

    x = np.asarray(samples, dtype=float).ravel()
    if x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"samples must be a non-empty array of finite numbers, got {x!r}.")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}.")
    mean = float(x.mean())
    if x.size < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf((1 + level) / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return mean, mean - half, mean + half


def decide(low: float, high: float, threshold: float, side: str = "above"):
    """Verdict on ``mean >= threshold`` (``side="above"``) or ``mean <= threshold`` (``"below"``).

    True if the whole interval ``[low, high]`` is on the claimed side, False
    if it is wholly on the other side, None (undecided) if it straddles the
    threshold or is NaN.
    """
    if side == "above":
        return True if low >= threshold else False if high < threshold else None
    if side == "below":
        return True if high <= threshold else False if low > threshold else None
    raise ValueError(f"side must be 'above' or 'below', got {side!r}.")


def repetitions_to_decide(sd: float, distance: float, level: float = 0.95, n_max: int = 10**7) -> int | None:
    r"""Smallest ``n`` whose t-interval half-width :math:`t_{n-1}\,\mathrm{sd}/\sqrt n` is below ``|distance|``.

    ``distance`` is the mean's distance from the threshold (None if 0 or more than ``n_max`` are needed).
    """
    from scipy import stats

    distance = abs(float(distance))
    if distance == 0 or not np.isfinite(sd):
        return None
    n = max(2, math.ceil((stats.norm.ppf((1 + level) / 2) * sd / distance) ** 2))
    while n <= n_max and stats.t.ppf((1 + level) / 2, n - 1) * sd / math.sqrt(n) >= distance:
        n += max(1, n // 50)
    return n if n <= n_max else None


def pairwise_distances(runs, reference: ValuationResult, methods=MAIN_METHODS, level: float = 0.95):
    """Relative l2 distance :math:`\\|v_a - v_b\\|/\\|s\\|` between methods of the same repetition.

    Deterministic methods (largest-S) are paired with every repetition.

    Returns
    -------
    pandas.DataFrame
        Columns ``method_a``, ``method_b``, ``rel_distance`` (mean over
        repetitions), ``ci_low``, ``ci_high`` (its t-interval at ``level``),
        ``n_repetitions``; every unordered pair once.
    """
    import pandas as pd

    norm = np.linalg.norm(reference.values)
    by_rep: dict[int, dict[str, np.ndarray]] = {}
    fixed = {}
    for run in runs:
        if run.key not in methods:
            continue
        if run.key in RANDOM_METHODS:
            by_rep.setdefault(run.repetition, {})[run.key] = run.result.values
        else:
            fixed[run.key] = run.result.values
    if not by_rep:
        by_rep = {0: {}}
    rows = []
    for i, a in enumerate(methods):
        for b in methods[i + 1:]:
            distances = [np.linalg.norm(v[a] - v[b]) / norm
                         for v in ({**fixed, **rep} for rep in by_rep.values()) if a in v and b in v]
            if distances:
                mean, low, high = mean_interval(distances, level)
                rows.append({"method_a": a, "method_b": b, "rel_distance": mean, "ci_low": low, "ci_high": high,
                             "n_repetitions": len(distances)})
    return pd.DataFrame(rows)


def summarise(table, level: float = 0.95):
    """Per method: mean over repetitions of agreement and cost, and the t-interval at ``level`` of the
    mean Spearman and mean relative error (``*_ci_low``, ``*_ci_high``; NaN with one repetition)."""
    columns = ["spearman", "spearman_p", "pearson", "rel_l2_error", "l2_error", "cpu_time_s", "wall_time_s",
               "n_evaluations"]
    grouped = table.groupby("method", sort=False)
    summary = grouped[columns].mean()
    for column in ("spearman", "pearson", "rel_l2_error"):
        summary[f"{column}_sd"] = grouped[column].std(ddof=1).fillna(0.0)
    for column in ("spearman", "rel_l2_error"):
        intervals = grouped[column].apply(lambda x: mean_interval(x, level))
        summary[f"{column}_ci_low"] = intervals.map(lambda t: t[1])
        summary[f"{column}_ci_high"] = intervals.map(lambda t: t[2])
    summary["n_repetitions"] = grouped.size()
    return summary


def _all(verdicts):
    """Conjunction of three-valued verdicts: False if any is False, True if all are True, else None."""
    return False if False in verdicts else True if all(v is True for v in verdicts) else None


def _condition_text(name, mean, low, high, side, threshold, label, verdict, sd, level):
    """``name mean [low, high] >= label`` (or ``<``, ...) and, when undecided, the repetitions that would decide."""
    relation = {(True, "above"): ">=", (True, "below"): "<=", (False, "above"): "<", (False, "below"): ">",
                (None, "above"): "straddles", (None, "below"): "straddles"}[verdict, side]
    text = f"{name} {mean:.3f} [{low:.3f}, {high:.3f}] {relation} {label}"
    if verdict is None:
        needed = repetitions_to_decide(sd, mean - threshold, level)
        text += f" (about {needed} repetitions would decide)" if needed else " (no practical number would decide)"
    return text


def evaluate_claims(summary, distances, *, uniform_error: float, spearman_threshold: float = 0.8,
                    error_threshold: float = 0.25, ratio_threshold: float = 2.0,
                    largest_error_threshold: float = 0.5, alpha: float = 0.05, level: float = 0.95):
    r"""The claims, decided from the run on intervals fixed before running (see the module docstring).

    1. (a), (b), (b'), (c) recover the SV: the ``level`` t-interval of the
       mean Spearman lies at or above ``spearman_threshold``, that of the mean
       relative l2 error at or below ``error_threshold`` and below the uniform
       split's error ``uniform_error``.
    2. (a)-(c) are closest to each other: every interval of a mean distance
       within (a)-(c) lies below every interval of a distance from largest-S
       to one of them.
    3. Largest-S is correlated with the reference: Spearman > 0 with
       one-sided p-value < ``alpha`` (a test against random values).
    4. Largest-S does not recover the SV: its (deterministic) relative error
       is ``>= largest_error_threshold`` and ``>= ratio_threshold`` times the
       upper end of the worst (a)-(c) error interval.

    ``summary`` is :func:`summarise`'s table (optionally with
    ``rel_l2_error_of_mean``, :func:`mean_estimate_error`, used in notes),
    ``distances`` :func:`pairwise_distances`'. An undecided verdict is
    reported as ``holds=False`` with a note that says so.

    Returns
    -------
    list of Claim
    """
    section = ("Section 5, 'Comparing Approximation Accuracy'; Figure 3(a) (fig:comp, the data values of each "
               "method; the text cites it as fig:adv(d))")
    level_text = f"{level:.0%} t-interval"
    claims = []
    for key in CLOSE_METHODS:
        row = summary.loc[key]
        n = int(row["n_repetitions"])
        parts = [("mean Spearman", "spearman", "above", spearman_threshold, f"{spearman_threshold:g}"),
                 ("mean relative l2 error", "rel_l2_error", "below", error_threshold, f"{error_threshold:g}"),
                 ("mean relative l2 error", "rel_l2_error", "below", uniform_error,
                  f"the uniform split's {uniform_error:.3f}")]
        verdicts, texts = [], []
        for name, column, side, threshold, label in parts:
            low, high = row[f"{column}_ci_low"], row[f"{column}_ci_high"]
            verdicts.append(decide(low, high, threshold, side))
            texts.append(_condition_text(name, row[column], low, high, side, threshold, label, verdicts[-1],
                                         row[f"{column}_sd"], level))
        verdict = _all(verdicts)
        note = f"{level:.0%} CIs over {n} repetitions: " + "; ".join(texts) + "."
        if verdict is None:
            note = "undecided: the interval straddles the threshold. " + note
        elif verdict is False and "rel_l2_error_of_mean" in row and np.isfinite(row["rel_l2_error_of_mean"]):
            variance = row["rel_l2_error_of_mean"] < 0.5 * row["rel_l2_error"]
            note += (f" Cause: {'variance at the common budget, not bias' if variance else 'bias'}: the estimate "
                     f"averaged over the {n} repetitions has relative error {row['rel_l2_error_of_mean']:.3f} "
                     f"(one repetition's: {row['rel_l2_error']:.3f} on average, Spearman sd {row['spearman_sd']:.3f}).")
        claims.append(claim(
            f"{METHODS[key]} recovers the reference Shapley values at the common budget.",
            "[mean Spearman, CI low, CI high, mean relative l2 error, CI low, CI high, uniform split's error]",
            [row["spearman"], row["spearman_ci_low"], row["spearman_ci_high"], row["rel_l2_error"],
             row["rel_l2_error_ci_low"], row["rel_l2_error_ci_high"], uniform_error], verdict is True,
            source="reproduction" if key == "gt_improved" else "paper",
            section=None if key == "gt_improved" else section,
            criterion=(f"{level_text} of the mean Spearman over {n} repetitions >= {spearman_threshold}, and that "
                       f"of the mean relative l2 error <= {error_threshold} and below the uniform split's "
                       f"error ({uniform_error:.3f}); fails if an interval lies wholly on the wrong side."),
            note=note))
    pair_keys = distances[["method_a", "method_b"]]
    within = distances[pair_keys.isin(CLOSE_METHODS).all(axis=1)]
    to_largest = distances[pair_keys.isin(["largest_s"]).any(axis=1) & pair_keys.isin(CLOSE_METHODS).any(axis=1)]
    far, near = within.loc[within.ci_high.idxmax()], to_largest.loc[to_largest.ci_low.idxmin()]
    verdict = (True if within.ci_high.max() < to_largest.ci_low.min()
               else False if within.ci_low.max() >= to_largest.ci_high.min() else None)
    note = (f"highest {level:.0%} CI upper end within (a)-(c): {far.method_a}-{far.method_b} {far.rel_distance:.3f} "
            f"[{far.ci_low:.3f}, {far.ci_high:.3f}] ({far.n_repetitions} repetitions); lowest lower end to "
            f"largest-S: {near.method_a}-{near.method_b} {near.rel_distance:.3f} [{near.ci_low:.3f}, "
            f"{near.ci_high:.3f}].")
    claims.append(claim(
        "The approximations (a)-(c) are closest to each other, farther from largest-S influence.",
        "[max mean distance within (a)-(c), max CI high, min mean distance to largest-S, min CI low]",
        [within.rel_distance.max(), within.ci_high.max(), to_largest.rel_distance.min(), to_largest.ci_low.min()],
        verdict is True, source="paper", section=section,
        criterion=(f"the upper ends of the {level_text}s of the mean relative l2 distances between two of (a)-(c) "
                   "are all below the lower ends of those from largest-S to each of them; fails if some "
                   "within-pair's lower end reaches some largest-S pair's upper end."),
        note=note if verdict is not None else "undecided: the intervals overlap. " + note))
    largest = summary.loc["largest_s"]
    correlated = (largest["spearman"] > 0) and (largest["spearman_p"] < alpha)
    claims.append(claim(
        "Largest-S influence is correlated with the reference Shapley values.",
        "[Spearman, one-sided p-value]", [largest["spearman"], largest["spearman_p"]], correlated,
        source="paper", section=section,
        criterion=(f"Spearman with the exact reference > 0 with one-sided p < {alpha} (largest-S is "
                   "deterministic: one run; random values have Spearman 0 in expectation)."),
        note=None if correlated else f"Spearman {largest['spearman']:.3f}, p = {largest['spearman_p']:.3g}."))
    worst = summary.loc[list(CLOSE_METHODS)]
    error = float(largest["rel_l2_error"])
    verdict = (False if error < largest_error_threshold or error < ratio_threshold * worst.rel_l2_error_ci_low.max()
               else True if error >= ratio_threshold * worst.rel_l2_error_ci_high.max() else None)
    note = (f"largest-S error {error:.3f}; worst (a)-(c) mean error {worst.rel_l2_error.max():.3f}, {level:.0%} CI "
            f"ends up to [{worst.rel_l2_error_ci_low.max():.3f}, {worst.rel_l2_error_ci_high.max():.3f}]; the "
            f"uniform split's error is {uniform_error:.3f}.")
    if verdict is False:
        cause = (f"largest-S's error is below {largest_error_threshold}" if error < largest_error_threshold
                 else f"(a)-(c) are not accurate enough to separate from largest-S by {ratio_threshold}x")
        note = f"does not hold: {cause}; {note}"
    if "loo_exact" in summary.index:
        note += (f" The same scheme on exact leave-one-out marginals, (d*), has error "
                 f"{summary.loc['loo_exact', 'rel_l2_error']:.3f}.")
    claims.append(claim(
        "Largest-S influence cannot recover the Shapley value.",
        "[largest-S relative l2 error, worst (a)-(c) mean error, its CI high]",
        [error, worst.rel_l2_error.max(), worst.rel_l2_error_ci_high.max()], verdict is True,
        source="paper", section=section,
        criterion=(f"largest-S relative l2 error >= {largest_error_threshold} and >= {ratio_threshold}x the "
                   f"largest upper end of the (a)-(c) error {level_text}s; fails below {largest_error_threshold} "
                   f"or below {ratio_threshold}x the largest lower end."),
        note=note if verdict is not None else "undecided: the interval straddles the threshold. " + note))
    return claims


# ------------------------------------------------------------------------------------- figure

SHORT_NAMES = {
    "permutation": "(a) permutation", "gt_paper": "(b) GT paper", "gt_improved": "(b') GT improved",
    "all_s": "(c) all-S", "largest_s": "(d) largest-S", "all_s_first_order": "(c*) all-S 1st order",
    "loo_exact": "(d*) exact LOO scheme",
}

_STYLE = {  # marker, colour
    "permutation": ("o", "tab:blue"), "gt_paper": ("s", "tab:orange"), "gt_improved": ("D", "tab:green"),
    "all_s": ("^", "tab:purple"), "largest_s": ("v", "tab:red"), "all_s_first_order": ("x", "tab:brown"),
    "loo_exact": ("+", "tab:gray"),
}


def _scatter_panel(ax, first, keys, title):
    """Estimates of ``keys`` (repetition 0) against the reference, with the line y = x over the data's range."""
    drawn = first[first.method.isin(keys)]
    for key in keys:
        rows = drawn[drawn.method == key]
        if rows.empty:
            continue
        marker, colour = _STYLE[key]
        rho = agreement(rows.value, rows.reference_value)["spearman"]
        ax.plot(rows.reference_value, rows.value, marker, color=colour, ms=6, ls="none", alpha=0.85,
                label=f"{SHORT_NAMES[key]}: Spearman {rho:.2f}")
    lo = min(drawn.value.min(), drawn.reference_value.min())
    hi = max(drawn.value.max(), drawn.reference_value.max())
    pad = 0.05 * (hi - lo)
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "k--", lw=1, label="y = x")
    ax.set(xlabel="reference Shapley value", ylabel="estimated value", title=title)
    ax.legend(fontsize=8, loc="upper left")


def plot_comparison(values, table, *, error_threshold: float | None = None, baseline_error: float | None = None,
                    methods=MAIN_METHODS, title: str = "", level: float = 0.95):
    """Four panels: values per point, (a)-(c) against the reference, largest-S against it, error per method.

    Parameters
    ----------
    values : DataFrame
        :func:`values_table` output; repetition 0 of each method is drawn.
    table : DataFrame
        :func:`agreement_table` output (all repetitions, for the error panel).
    error_threshold : float, optional
        Drawn as a dashed line in the error panel.
    baseline_error : float, optional
        The uniform split's error (:func:`uniform_split_error`), drawn dotted.
    level : float
        Confidence level of the error bars (t-interval of the mean error).
    methods : sequence of str
        Methods of the values panel (the scatter panels split them into
        :data:`CLOSE_METHODS` and the rest, plus the exact-LOO scheme).
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(14, 9.5))
    (ax_values, ax_close), (ax_largest, ax_error) = axes
    first = values[values.repetition == 0]
    reference = first[first.method == "reference"].sort_values("reference_rank")
    x = reference.reference_rank.to_numpy()
    exact = not np.nan_to_num(reference.stderr.to_numpy()).any()
    ax_values.plot(x, reference.value, "k-", lw=2, label="reference (exact)" if exact else "reference", zorder=5)
    n_methods = len(methods)
    for j, key in enumerate(methods):
        rows = first[first.method == key].sort_values("reference_rank")
        marker, colour = _STYLE[key]
        shift = (j - (n_methods - 1) / 2) * 0.09
        ax_values.plot(rows.reference_rank + shift, rows.value, marker, color=colour, ms=5, ls="none",
                       label=METHODS[key], alpha=0.85)
    ax_values.set(xlabel="training point (id, class), sorted by reference value", ylabel="Shapley value",
                  title="Values of every point (repetition 0)")
    ax_values.set_xticks(x)
    initials = {code: name[:3] for code, name in enumerate(IRIS_CLASSES)}
    ax_values.set_xticklabels([f"{p}\n{initials.get(int(c), c)}" for p, c in zip(reference.point, reference.label)],
                              fontsize=7)
    ax_values.axhline(0, color="k", lw=0.5)
    close = [k for k in methods if k in CLOSE_METHODS]
    others = [k for k in methods if k not in CLOSE_METHODS] + ["loo_exact"]
    _scatter_panel(ax_close, first, close, "(a)-(c) against the reference (repetition 0)")
    _scatter_panel(ax_largest, first, others, "Largest-S scheme against the reference")
    present = set(table.method)
    order = [m for m in methods if m in present] + [m for m in METHODS if m not in methods and m in present]
    rng = np.random.default_rng(0)  # horizontal jitter of the dots only
    for i, key in enumerate(order):
        errors = table.loc[table.method == key, "rel_l2_error"].to_numpy()
        marker, colour = _STYLE[key]
        mean, low, high = mean_interval(errors, level)
        ax_error.bar(i, mean, color=colour, alpha=0.6)
        ax_error.plot(i + rng.uniform(-0.25, 0.25, errors.size), errors, marker, color="k", ms=2, alpha=0.3, ls="none")
        if errors.size > 1:
            ax_error.errorbar(i, mean, yerr=[[mean - low], [high - mean]], color="k", capsize=6, lw=1.5)
    ax_error.set_yscale("log")
    ax_error.set_xticks(range(len(order)))
    ax_error.set_xticklabels([SHORT_NAMES[k] for k in order], rotation=30, ha="right")
    for line, style, label in ((error_threshold, "--", "claim threshold"), (baseline_error, ":", "uniform split")):
        if line is not None:
            ax_error.axhline(line, color="k", ls=style, lw=1, label=f"{label} {line:.3g}")
    if error_threshold is not None or baseline_error is not None:
        ax_error.legend(fontsize=8, loc="upper left")
    ax_error.set(ylabel=r"relative $\ell_2$ error $\|v - s\|/\|s\|$",
                 title=f"Error against the reference (bars: mean, {level:.0%} CI; dots: repetitions)")
    handles, labels = ax_values.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(handles), fontsize=9, frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig
