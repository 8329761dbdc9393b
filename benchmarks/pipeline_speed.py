"""Pipelines of per-coalition scalers on the batched learners against one Pipeline fit per coalition.

Run ``python benchmarks/pipeline_speed.py`` (``--quick`` for a smoke run).
For each case, ``ModelUtility(pipeline, ..., fast="auto")`` (the batched
learner with the scaler fitted on each coalition as a per-coalition penalty,
``shapley_research/utilities/learners/_scalers.py``) and
``ModelUtility(pipeline, ..., fast=False)`` (one ``clone(pipeline).fit`` and
score per coalition) evaluate the same coalitions (sizes uniform on 1..N),
side by side in each repeat, BLAS limited to one thread on both sides
(``threadpoolctl``). The batched time includes building the game (its
full-data warm start); an untimed run of both sides precedes each case.
Reported: the route, the time ratio per repeat (its range and median) and
the largest utility difference ``max |dU|``.

Cases (issue #33, item 3): ``make_pipeline(StandardScaler(), LogisticRegression())``
and the same with ``MinMaxScaler`` on raw breast cancer (300 training, 200 test
points, accuracy), and ``make_pipeline(StandardScaler(), Ridge())`` on diabetes
(300 / 142, R^2). Goals: median ratio >= 10x and max |dU| <= 0.02. The
machine load is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from threadpoolctl import threadpool_limits

from shapley_research import ModelUtility

SPEED_GOAL = 10.0
TOLERANCE_GOAL = 0.02
SEED = 20261128


def breast_cancer() -> tuple[np.ndarray, ...]:
    """Raw breast cancer (unscaled features), shuffled once: 300 training and 200 test points."""
    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(SEED).permutation(len(y))
    return X[order[:300]], y[order[:300]], X[order[300:500]], y[order[300:500]]


def diabetes() -> tuple[np.ndarray, ...]:
    """Diabetes, shuffled once: 300 training and the other 142 as test points."""
    X, y = load_diabetes(return_X_y=True)
    order = np.random.default_rng(SEED).permutation(len(y))
    return X[order[:300]], y[order[:300]], X[order[300:]], y[order[300:]]


CASES: list[tuple[str, Callable[[], Any], Callable[[], tuple[np.ndarray, ...]], str]] = [
    ("StandardScaler + LogisticRegression, breast cancer 300/200",
     lambda: make_pipeline(StandardScaler(), LogisticRegression()), breast_cancer, "accuracy"),
    ("MinMaxScaler + LogisticRegression, breast cancer 300/200",
     lambda: make_pipeline(MinMaxScaler(), LogisticRegression()), breast_cancer, "accuracy"),
    ("StandardScaler + Ridge, diabetes 300/142",
     lambda: make_pipeline(StandardScaler(), Ridge()), diabetes, "r2"),
]


def uniform_size_masks(n: int, m: int, seed: int) -> np.ndarray:
    """``m`` coalitions of ``n`` players, sizes uniform on 1..n, members uniform given the size."""
    rng = np.random.default_rng(seed)
    masks = np.zeros((m, n), dtype=bool)
    for row, size in zip(masks, rng.integers(1, n + 1, m)):
        row[rng.choice(n, size, replace=False)] = True
    return masks


def timed_values(model: Any, data: tuple[np.ndarray, ...], metric: str, fast: Any,
                 masks: np.ndarray) -> tuple[float, np.ndarray, ModelUtility]:
    """Seconds to build the game and evaluate ``masks``, the utilities and the game."""
    start = time.perf_counter()
    game = ModelUtility(model, *data, metric=metric, fast=fast)
    values = game.evaluate(masks)
    return time.perf_counter() - start, values, game


def run_case(name: str, make_model: Callable[[], Any], load: Callable[[], tuple[np.ndarray, ...]], metric: str,
             coalitions: int, repeats: int) -> tuple[float, float]:
    """Print one case; return its median ratio and its max |dU|."""
    data = load()
    ratios, largest = [], 0.0
    for fast in ("auto", False):  # untimed: first calls (imports, caches) are no part of either side
        timed_values(make_model(), data, metric, fast, uniform_size_masks(len(data[1]), 4, SEED - 1))
    for repeat in range(repeats):
        masks = uniform_size_masks(len(data[1]), coalitions, SEED + repeat)
        batched_s, batched, game = timed_values(make_model(), data, metric, "auto", masks)
        per_subset_s, per_subset, _ = timed_values(make_model(), data, metric, False, masks)
        ratios.append(per_subset_s / batched_s)
        largest = max(largest, float(np.abs(batched - per_subset).max()))
        if repeat == 0:
            print(f"\n{name} ({metric}, {coalitions} coalitions per repeat)\n  route: {game.route_}")
        print(f"  repeat {repeat + 1}: batched {batched_s * 1e3 / coalitions:.3f} ms/coalition, per subset "
              f"{per_subset_s * 1e3 / coalitions:.3f} ms/coalition, ratio {ratios[-1]:.1f}x")
    median = statistics.median(ratios)
    print(f"  ratio median {median:.1f}x (range {min(ratios):.1f}-{max(ratios):.1f}x), max |dU| {largest:.2e}")
    return median, largest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 40 coalitions, 1 repeat")
    parser.add_argument("--coalitions", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    coalitions, repeats = (40, 1) if args.quick else (args.coalitions, args.repeats)
    print(f"pipeline_speed: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start, "
          f"BLAS threads 1 (both sides), python {sys.version.split()[0]}")
    results = []
    with threadpool_limits(limits=1):
        for name, make_model, load, metric in CASES:
            results.append((name, *run_case(name, make_model, load, metric, coalitions, repeats)))
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}\n")
    for name, ratio, largest in results:
        speed = "OK" if ratio >= SPEED_GOAL else "MISS"
        tolerance = "OK" if largest <= TOLERANCE_GOAL else "MISS"
        print(f"{speed:4s} {name}: {ratio:.1f}x (goal >= {SPEED_GOAL:g}x)")
        print(f"{tolerance:4s} {name}: max |dU| {largest:.2e} (goal <= {TOLERANCE_GOAL:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
