"""Threshold KNN-Shapley against exact KNN-Shapley: finding flipped labels, and time at scale.

Run ``python benchmarks/threshold_knn.py`` (about a minute on 2 cores;
``--quick`` for a smoke run; ``--output PATH`` for the markdown file, default
``benchmarks/results/threshold_knn.md``).

Detection: the data_cleaning task's problems (``make_problem``: breast cancer
and digits 3 vs 8, 200 training / 150 test points, standardised features, 15%
of the training labels flipped; repetition ``r`` seeded by
``problem_seed(0, data set, r)``, the experiment's seeds, ``r = 0..5``). AUROC
of flagging the lowest values (``detection_auroc``) for ``knn_shapley`` at the
experiment's ``K = 10`` and ``threshold_knn_shapley`` at radii chosen from the
features alone (no label is looked at):

* ``tau = K-matched``: the median over test points of the distance to the
  10th nearest training point, so that a typical test point votes with about
  the K = 10 points KNN-Shapley uses (the default advice);
* ``tau = q-quantile``: the ``q``-quantile of all test-to-training distances
  (``q`` = 0.01, 0.05, 0.1, 0.25), a sweep around it.

Beside each radius: the share of test points with no training point within
it (they value every point 0). Time: the same two calls on Gaussian data
(``N`` training, 1,000 test points, 30 features, 5 classes), min-max seconds
of 3 calls, with the peak traced memory (``tracemalloc``) of one more call,
at ``N`` = 20,000 and 100,000 (``--quick``: 5,000). One BLAS thread.
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from _reference_games import log, mean_cell, parse_arguments, report_head, write_report  # a sibling
from shapley_research import knn_shapley, threshold_knn_shapley
from shapley_research.experiments.data_cleaning import DATASETS, detection_auroc, make_problem, problem_seed

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(HERE, "results", "threshold_knn.md")
K = 10  #: data_cleaning's knn_k
QUANTILES = (0.01, 0.05, 0.1, 0.25)


def distances(X_train: np.ndarray, X_test: np.ndarray) -> np.ndarray:
    """Euclidean test-to-training distances, ``(m, N)`` (for choosing ``tau`` only)."""
    sq = (X_test ** 2).sum(1)[:, None] - 2.0 * X_test @ X_train.T + (X_train ** 2).sum(1)[None, :]
    return np.sqrt(np.maximum(sq, 0.0))


def radii(X_train: np.ndarray, X_test: np.ndarray) -> dict[str, float]:
    """``label -> tau``: the K-matched radius, then the quantiles of all distances."""
    d = distances(X_train, X_test)
    out = {"threshold_knn_shapley, tau = K-matched": float(np.median(np.partition(d, K - 1, axis=1)[:, K - 1]))}
    out.update({f"threshold_knn_shapley, tau = {q:g}-quantile": float(np.quantile(d, q)) for q in QUANTILES})
    return out


def timed(run, *args, **kwargs):
    start = time.perf_counter()
    result = run(*args, **kwargs)
    return result, time.perf_counter() - start


def detection(datasets=DATASETS, repetitions=range(6), n_train: int = 200, n_test: int = 150) -> dict:
    """``label -> {"auroc": [...], "time": [...], "tau": [...], "empty": [...]}`` over data sets x repetitions."""
    cells: dict = {}
    for name in datasets:
        for r in repetitions:
            p = make_problem(name, n_train, n_test, 0.15, problem_seed(0, name, r))
            data = (p["X_train"], p["y_train"], p["X_test"], p["y_test"])
            log(f"  {name}, repetition {r} ...")
            random = np.random.default_rng([r, 9_999]).normal(size=n_train)
            runs = {"random values": (random, 0.0, np.nan, np.nan)}
            result, seconds = timed(knn_shapley, *data, K)
            runs[f"knn_shapley, K = {K}"] = (result.values, seconds, np.nan, np.nan)
            for label, tau in radii(p["X_train"], p["X_test"]).items():
                result, seconds = timed(threshold_knn_shapley, *data, tau)
                runs[label] = (result.values, seconds, tau, result.info["empty_neighbourhoods"] / n_test)
            for label, (values, seconds, tau, empty) in runs.items():
                entry = cells.setdefault((name, label), {"auroc": [], "time": [], "tau": [], "empty": []})
                entry["auroc"].append(detection_auroc(values, p["flipped"]))
                entry["time"].append(seconds)
                entry["tau"].append(tau)
                entry["empty"].append(empty)
    return cells


def detection_table(cells: dict) -> list[str]:
    lines = ["| data set | method | tau | empty neighbourhoods | AUROC | wall time ms |", "|---|---|---|---|---|---|"]
    for (name, label), e in cells.items():
        tau = "-" if np.isnan(e["tau"][0]) else f"{np.mean(e['tau']):.2f} [{min(e['tau']):.2f}, {max(e['tau']):.2f}]"
        empty = "-" if np.isnan(e["empty"][0]) else f"{np.mean(e['empty']):.1%}"
        lines.append(f"| {name} | {label} | {tau} | {empty} | {mean_cell(e['auroc'])} | "
                     f"{mean_cell(1000 * np.asarray(e['time']), 1)} |")
    return lines


def peak_mib(run, *args, **kwargs) -> float:
    tracemalloc.start()
    run(*args, **kwargs)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return peak


def scale_rows(sizes, repeats: int) -> list[str]:
    """Seconds (min-max of ``repeats`` calls) and peak MiB of both calls on Gaussian data, one row per ``N``."""
    lines = ["| N | test points | knn_shapley s | knn_shapley peak MiB | threshold_knn_shapley s | "
             "threshold peak MiB | time ratio (fastest calls) |", "|---|---|---|---|---|---|---|"]
    for n in sizes:
        rng = np.random.default_rng(n)
        X_train, X_test = rng.normal(size=(n, 30)), rng.normal(size=(1000, 30))
        y_train, y_test = rng.integers(0, 5, n), rng.integers(0, 5, 1000)
        tau = float(np.median(np.partition(distances(X_train, X_test[:100]), K - 1, axis=1)[:, K - 1]))
        cells = []
        for run, arg in ((knn_shapley, K), (threshold_knn_shapley, tau)):
            log(f"  scale: {run.__name__} at N = {n:,} ...")
            data = (X_train, y_train, X_test, y_test, arg)
            seconds = [timed(run, *data)[1] for _ in range(repeats)]
            cells.append((seconds, peak_mib(run, *data)))
        (tk, mk), (tt, mt) = cells
        lines.append(f"| {n:,} | 1,000 | {min(tk):.3f}-{max(tk):.3f} | {mk:.0f} | {min(tt):.3f}-{max(tt):.3f} | "
                     f"{mt:.0f} | {min(tk) / min(tt):.1f}x |")
    return lines


def main(argv=None) -> int:
    args = parse_arguments(__doc__, DEFAULT_OUTPUT, argv)
    start, load = time.perf_counter(), os.getloadavg()[0]
    with threadpool_limits(1):
        cells = detection(repetitions=range(2) if args.quick else range(6))
        scale = scale_rows([5_000] if args.quick else [20_000, 100_000], 1 if args.quick else 3)
    n_reps = 2 if args.quick else 6
    lines = report_head("Threshold KNN-Shapley against exact KNN-Shapley", args.quick) + [
        "", "Detecting flipped labels: the data_cleaning task's problems (200 training / 150 test points, "
        f"standardised features, 15% of training labels flipped, {n_reps} repetitions per data set, seeded as the "
        "experiment seeds them); AUROC of flagging the lowest values (mean ± standard error [min, max]; random "
        "values: 0.5 in expectation). tau: K-matched is the median over test points of the distance to the 10th "
        "nearest training point; a q-quantile is that of all test-to-training distances (features only, no labels). "
        "Empty neighbourhoods: the share of test points with no training point within tau.", ""]
    lines += detection_table(cells) + [
        "", "Time on Gaussian data (30 features, 5 classes, tau K-matched): min-max seconds of "
        f"{1 if args.quick else 3} calls; peak memory traced over one more call (load average "
        f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} CPUs):", ""] + scale + [""]
    return write_report(lines, start, args.output)


if __name__ == "__main__":
    sys.exit(main())
