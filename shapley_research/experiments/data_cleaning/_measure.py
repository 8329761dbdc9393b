"""The tasks: detection of flipped labels, point removal and addition curves; the whole run; summaries."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_int
from ...evaluation import removal_masks
from .._parallel import check_n_jobs, parallel_map
from .._verdicts import AUROC_RANGE, NONNEGATIVE_RANGE
from ._data import make_game, make_problem
from ._methods import BUDGETED, DEFAULT_OPTIONS, METHODS, run_methods

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from numpy.typing import ArrayLike
    import pandas as pd
    from ...games import GameLike

#: The experiment's method options over the library defaults: Data-OOB's bagged models on the batched learner
#: the games use, so that its wall time compares with the semivalues' on the same learner.
EXPERIMENT_OPTIONS = {**DEFAULT_OPTIONS, "oob_fast": True}


def _as_rankings(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if values.ndim not in (1, 2) or values.shape[-1] < 2 or not np.isfinite(values).all():
        raise ValueError(f"values must be finite, of shape (N,) or (R, N) with N >= 2, got shape {values.shape}.")
    return values


def _as_positives(flipped, n: int) -> np.ndarray:
    flipped = np.asarray(flipped, dtype=bool)
    if flipped.shape != (n,):
        raise ValueError(f"flipped must be a boolean array of shape ({n},), got shape {flipped.shape}.")
    if flipped.all() or not flipped.any():
        raise ValueError("flipped must hold both flipped and clean points.")
    return flipped


def detection_auroc(values: ArrayLike, flipped: ArrayLike) -> float | np.ndarray:
    r"""AUROC of ranking points by *lowest* value as detecting the flipped ones.

    The Mann-Whitney form: the probability that a flipped point has a lower
    value than a clean one, ties counting one half,

    .. math:: \mathrm{AUROC} = \frac{\sum_{i \in F} r_i - |F|(|F|+1)/2}{|F|\,(N - |F|)},

    with :math:`r_i` the (average) rank of :math:`-v_i` among all points.
    1 is perfect detection, 0.5 a random ranking. ``values`` may hold several
    rankings as rows (one AUROC each).

    Parameters
    ----------
    values : array of shape (N,) or (m, N)
        One value per point, or ``m`` rankings as rows.
    flipped : bool array of shape (N,)
        Which labels were flipped.

    Returns
    -------
    float or ndarray of shape (m,)
    """
    from scipy.stats import rankdata

    values = _as_rankings(values)
    positives = _as_positives(flipped, values.shape[-1])
    ranks = rankdata(-values, axis=-1)  # average ranks: ties count one half
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    auroc = (ranks[..., positives].sum(axis=-1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return float(auroc) if values.ndim == 1 else auroc


def lowest_k(values: ArrayLike, k: int) -> np.ndarray:
    """Indices of the ``k`` lowest values; ties go to the lower index (a stable sort), so it is deterministic.

    ``values`` of shape (N,) or (m, N) gives indices of shape (k,) or (m, k).
    """
    values = _as_rankings(values)
    return np.argsort(values, axis=-1, kind="stable")[..., :k]


def detection_f1(values: ArrayLike, flipped: ArrayLike, k: int | None = None) -> float | np.ndarray:
    """F1 score of flagging the ``k`` lowest-valued points as flipped (default ``k`` = the number flipped).

    ``F1 = 2 TP / (k + |F|)``; with ``k = |F|`` precision, recall and F1 are equal.
    """
    values = _as_rankings(values)
    positives = _as_positives(flipped, values.shape[-1])
    k = int(positives.sum()) if k is None else check_int(k, "k", minimum=1)
    flagged = lowest_k(values, k)
    true_positives = positives[flagged].sum(axis=-1)
    f1 = 2.0 * true_positives / (k + positives.sum())
    return float(f1) if values.ndim == 1 else f1


def addition_masks(values: ArrayLike, fractions: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Coalitions of the ``ceil(f N)`` highest-valued points, per fraction (adding points from the highest).

    Returns ``(masks, n_kept)``.
    """
    values = _as_rankings(values)
    if values.ndim != 1:
        raise ValueError("addition_masks takes one ranking, shape (N,).")
    n = values.size
    order = np.argsort(-values, kind="stable")
    n_kept = np.array([min(n, max(1, math.ceil(f * n - 1e-9))) for f in fractions])
    masks = np.zeros((len(fractions), n), dtype=bool)
    for row, count in enumerate(n_kept):
        masks[row, order[:count]] = True
    return masks, n_kept


def task_curves(game: GameLike, values: ArrayLike, removal_fractions: Sequence[float],
                addition_fractions: Sequence[float]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Test accuracy of the model retrained on every coalition of the three curves, in one batched call.

    Returns
    -------
    dict
        ``{"remove_lowest": (n_changed, accuracy), "remove_highest": ..., "add_highest": ...}``:
        ``n_changed`` the points removed (kept, for addition) at each fraction.
    """
    low, n_low = removal_masks(values, removal_fractions)
    high, n_high = removal_masks(values, removal_fractions, highest=True)
    add, n_add = addition_masks(values, addition_fractions)
    accuracy = np.asarray(game.evaluate(np.vstack([low, high, add])), dtype=float)
    a, b = len(low), 2 * len(low)
    return {"remove_lowest": (n_low, accuracy[:a]), "remove_highest": (n_high, accuracy[a:b]),
            "add_highest": (n_add, accuracy[b:])}


def problem_seed(seed: int, dataset: str, repetition: int) -> int:
    """The seed of one (data set, repetition): split, flips and every method's stream derive from it."""
    entropy = [int(seed), int(repetition)] + list(dataset.encode())
    return int(np.random.SeedSequence(entropy).generate_state(1, dtype=np.uint32)[0])


def problem_settings(*, seed: int, n_train: int, n_test: int, flip_fraction: float,
                     digit_classes: Sequence[int], **more: Any) -> dict[str, Any]:
    """What a task needs to rebuild its (data set, repetition) problem, plus ``more`` of its own."""
    return {"seed": seed, "n_train": n_train, "n_test": n_test, "flip_fraction": flip_fraction,
            "digit_classes": digit_classes, **more}


def task_problem(settings: dict[str, Any], dataset: str, repetition: int) -> tuple[int, dict[str, Any]]:
    """``(problem seed, problem)`` of one (data set, repetition): the same in the run, the probe and the noisy part."""
    pseed = problem_seed(settings["seed"], dataset, repetition)
    return pseed, make_problem(dataset, settings["n_train"], settings["n_test"], settings["flip_fraction"], pseed,
                               settings["digit_classes"])


def detection_fields(row: dict[str, Any], flipped: np.ndarray) -> dict[str, Any]:
    """The detection columns of one method's run (a row of :func:`~._methods.run_method`): AUROC, F1, cost, notes."""
    ok = row["values"] is not None
    return {"n_evaluations": row["n_evaluations"], "wall_time_s": row["wall_time_s"],
            "auroc": detection_auroc(row["values"], flipped) if ok else math.nan,
            "f1": detection_f1(row["values"], flipped) if ok else math.nan,
            "n_nan": row["n_nan"], "note": row["note"], "error": row["error"]}


def map_problems(task: Callable[..., Any], settings: dict[str, Any], datasets: Sequence[str], n_seeds: int, *,
                 n_jobs: int, progress: Callable[..., Iterable[Any]] | None, desc: str) -> list[tuple[str, Any]]:
    """``[(data set, task(data set, repetition, settings))]`` over every data set and repetition, in that order,
    the tasks spread over ``n_jobs`` workers (:func:`~shapley_research.experiments.parallel_map`)."""
    jobs = [(d, r, settings) for d in datasets for r in range(n_seeds)]
    parts = parallel_map(task, jobs, n_jobs=n_jobs, progress=progress, desc=desc)
    return [(dataset, part) for (dataset, _, _), part in zip(jobs, parts)]


def _problem_rows(dataset: str, repetition: int, settings: dict[str, Any]) -> dict[str, Any]:
    """Every method on one (data set, repetition), its task curves and values: one task of the run."""
    import pandas as pd

    s = settings
    options, main_budget = s["options"], s["main_budget"]
    pseed, problem = task_problem(s, dataset, repetition)
    game = make_game(problem, options["logistic_C"], options["max_iter"])
    clean = make_game({**problem, "y_train": problem["y_clean"]}, options["logistic_C"], options["max_iter"])
    full = np.ones((1, problem["y_train"].size), dtype=bool)
    flipped = problem["flipped"]
    out: dict[str, Any] = {"full_accuracy": float(game.evaluate(full)[0]),
                           "clean_accuracy": float(clean.evaluate(full)[0]), "n_flipped": int(flipped.sum()),
                           "detection": [], "curves": [], "values": []}
    for row in run_methods(problem, s["budgets"], pseed, options, s["methods"], main_budget):
        main = row["budget"] is None or row["budget"] == main_budget
        budget = row["budget"] if row["method"] in BUDGETED else main_budget
        out["detection"].append({"dataset": dataset, "repetition": repetition, "method": row["method"],
                                 "budget": budget, "main": main, **detection_fields(row, flipped)})
        if row["values"] is None:
            continue
        for curve, (counts, accuracy) in task_curves(game, row["values"], s["removal_fractions"],
                                                     s["addition_fractions"]).items():
            fractions = s["removal_fractions"] if curve.startswith("remove") else s["addition_fractions"]
            out["curves"] += [{"dataset": dataset, "repetition": repetition, "method": row["method"],
                               "budget": budget, "main": main, "curve": curve, "fraction": float(f),
                               "n_points": int(c), "accuracy": float(a)}
                              for f, c, a in zip(fractions, counts, accuracy)]
        if main:
            out["values"].append(pd.DataFrame({"dataset": dataset, "repetition": repetition, "method": row["method"],
                                               "point": np.arange(flipped.size), "flipped": flipped,
                                               "value": row["values"]}))
    return out


def run_data_cleaning(*, datasets: Sequence[str], n_train: int, n_test: int, flip_fraction: float, n_seeds: int,
                      budgets: Sequence[int], removal_fractions: Sequence[float],
                      addition_fractions: Sequence[float], digit_classes: Sequence[int] = (3, 8),
                      options: dict[str, Any] | None = None, methods: Sequence[str] = METHODS, seed: int = 0,
                      progress: Callable[..., Iterable[Any]] | None = None,
                      budget: int | None = None,
                      n_jobs: int = 1) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The whole experiment: every method on every (data set, repetition), then its tasks.

    Parameters
    ----------
    budgets : sequence of int
        The sweep of utility evaluations: detection against evaluations
        spent (which method runs at which: :func:`~._methods.method_budgets`).
    budget : int, optional
        The common budget the tasks (curves, values) are judged at; default
        the largest of ``budgets``.
    options : dict, optional
        Method options over :data:`EXPERIMENT_OPTIONS` (``logistic_C``,
        ``max_iter``, ``knn_k``, ``truncation``, ``beta_alpha``, ``beta_beta``,
        ``oob_max_estimators``, ``oob_fast``, ...).
    progress : callable, optional
        ``progress(iterable, desc=..., total=...)``.
    n_jobs : int
        Worker processes over the (data set, repetition) problems (-1: every
        core); the numbers do not depend on it, only the measured times (each
        worker runs one method at a time on one BLAS thread).

    Returns
    -------
    detection : pandas.DataFrame
        One row per (dataset, repetition, method, budget): ``main`` (at the
        common budget), ``n_evaluations``, ``wall_time_s``, ``auroc``, ``f1``,
        ``n_nan``, ``note``, ``error``.
    curves : pandas.DataFrame
        One row per (dataset, repetition, method, budget, curve, fraction),
        at every budget a method ran at (as ``detection``): ``main`` (at the
        common budget: the figures and tables), ``n_points`` (removed or
        kept), ``accuracy``.
    values : pandas.DataFrame
        The values at the common budget: ``dataset, repetition, method, point, flipped, value``.
    info : dict
        Per data set: ``full_accuracy`` and ``clean_accuracy`` (the model on all
        noisy / all clean labels), mean over repetitions, and ``n_flipped``.
    """
    import pandas as pd

    n_seeds = check_int(n_seeds, "n_seeds", minimum=1)
    budgets = sorted(check_int(b, "budgets", minimum=1) for b in budgets)
    n_jobs = check_n_jobs(n_jobs)
    main_budget = budgets[-1] if budget is None else check_int(budget, "budget", minimum=1)
    settings = problem_settings(seed=seed, n_train=n_train, n_test=n_test, flip_fraction=flip_fraction,
                                digit_classes=digit_classes, options={**EXPERIMENT_OPTIONS, **(options or {})},
                                main_budget=main_budget, budgets=budgets, methods=tuple(methods),
                                removal_fractions=removal_fractions, addition_fractions=addition_fractions)
    by_dataset = map_problems(_problem_rows, settings, datasets, n_seeds, n_jobs=n_jobs, progress=progress,
                              desc="data sets x seeds")
    parts = [part for _, part in by_dataset]
    info: dict[str, Any] = {}
    for dataset, part in by_dataset:
        entry = info.setdefault(dataset, {"full_accuracy": [], "clean_accuracy": [], "n_flipped": part["n_flipped"]})
        entry["full_accuracy"].append(part["full_accuracy"])
        entry["clean_accuracy"].append(part["clean_accuracy"])
    for entry in info.values():
        entry["full_accuracy"] = float(np.mean(entry["full_accuracy"]))
        entry["clean_accuracy"] = float(np.mean(entry["clean_accuracy"]))
    values = [frame for part in parts for frame in part["values"]]
    return (pd.DataFrame([r for part in parts for r in part["detection"]]),
            pd.DataFrame([r for part in parts for r in part["curves"]]),
            pd.concat(values, ignore_index=True) if values else pd.DataFrame(), info)


#: The range of each column :func:`summarise` knows: its intervals are cut to it.
COLUMN_RANGES = {"auroc": AUROC_RANGE, "f1": AUROC_RANGE, "accuracy": AUROC_RANGE, "wall_time_s": NONNEGATIVE_RANGE,
                 "n_evaluations": NONNEGATIVE_RANGE}


def mean_interval(samples: ArrayLike, confidence: float = 0.95,
                  bounds: tuple[float, float] | None = None) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean and its Student-t interval over the samples (NaN ignored).

    The shared :func:`~shapley_research.experiments._verdicts.mean_interval`
    after dropping NaN, kept apart for the summary tables: a failed method
    leaves NaN rows (which the shared one refuses), and one sample gives an
    interval of zero width here (a point in a table) where the shared one
    gives NaN ends (nothing to decide). The claims use the shared one.
    ``bounds``: the statistic's range, which the interval is cut to.
    """
    from .._verdicts import mean_interval as shared_interval

    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan, math.nan, math.nan
    if x.size == 1:
        return float(x[0]), float(x[0]), float(x[0])
    return shared_interval(x, confidence, bounds)


def summarise(table: pd.DataFrame, by: Sequence[str], columns: Sequence[str],
              confidence: float = 0.95) -> pd.DataFrame:
    """Mean and ``confidence`` interval over repetitions of every column, per group ``by``.

    Returns a tidy frame with ``by`` plus ``COLUMN_mean, COLUMN_low, COLUMN_high`` and ``n_repetitions``;
    the intervals of the columns in :data:`COLUMN_RANGES` are cut to their range.
    """
    import pandas as pd

    rows = []
    for key, group in table.groupby(list(by), sort=False, dropna=False):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        for column in columns:
            row[f"{column}_mean"], row[f"{column}_low"], row[f"{column}_high"] = mean_interval(
                group[column], confidence, COLUMN_RANGES.get(column))
        row["n_repetitions"] = int(group[columns[0]].notna().sum())
        rows.append(row)
    return pd.DataFrame(rows)
