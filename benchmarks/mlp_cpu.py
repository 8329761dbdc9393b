"""Small MLPs per coalition on one CPU thread: TorchModelUtility against a plain torch loop.

Run ``python benchmarks/mlp_cpu.py`` (about 2 minutes on 2 cores; ``--quick``
for a smoke run of a few seconds). Everything below is measured side by side
in this one run, one torch thread and one BLAS thread on every side:

* the recipe: breast cancer (scikit-learn's copy; 200 training and 200 test
  points drawn with seed 0, standardised on the training points), an MLP
  ``Linear(30, 32) - ReLU - Linear(32, 2)`` from ``torch.manual_seed(0)``,
  200 full-batch Adam steps at learning rate 1e-2, float32; coalitions of
  sizes uniform on 1..200 (the single-class ones, which TorchModelUtility
  does not train, are left out on every side);
* (a) the plain loop: per coalition a fresh copy of the module,
  ``torch.optim.Adam`` and 200 steps on the coalition's own rows (timed on an
  evenly spaced subset of the coalitions);
* (b) ``TorchModelUtility.evaluate`` on all of them (models/s from the models it
  trained), and once more after the caller set torch to every core (the class
  pins one thread inside ``evaluate``);
* scikit-learn's ``MLPClassifier`` with the same architecture and 200 full-batch
  Adam steps, for reference;
* the single-thread float32 peak of this core: a 2048 x 2048 matmul, before and
  after, and the GFlop/s (b) achieves, counting the matrix products of a step on
  the coalition's own rows: forward :math:`2(30 \\cdot 32 + 32 \\cdot 2)`, weight
  gradients as much again, the hidden layer's input gradient :math:`2 \\cdot 32 \\cdot 2`:
  4,224 flops per row and step (elementwise work uncounted).

Agreement: max |dU| in test accuracy between (a) and (b) on the loop's
coalitions, in float32 and in float64 (where it should be 0). Repeats: the
loop and (b) alternate ``--repeats`` times; the ratio is printed per repeat and
as the median and range. The last lines judge the goals of issue 33 (``OK`` or
``MISS``): >= 8x the plain loop and >= 100 models/s.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import sys
import time
import warnings

import numpy as np
import torch
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from shapley_research import TorchModelUtility

N_TRAIN, N_TEST, HIDDEN, STEPS, LEARNING_RATE = 200, 200, 32, 200, 1e-2
FLOPS_PER_ROW_STEP = 2 * (30 * HIDDEN + HIDDEN * 2) * 2 + 2 * HIDDEN * 2  # 4,224 (module docstring)
GOALS = {"ratio": 8.0, "models_per_s": 100.0}


def breast_cancer() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """200 training and 200 test points (seed 0), standardised on the training points."""
    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:N_TRAIN], order[N_TRAIN:N_TRAIN + N_TEST]
    scaler = StandardScaler().fit(X[train])
    return scaler.transform(X[train]), y[train], scaler.transform(X[test]), y[test]


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(30, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 2))


def coalitions(count: int, y_train: np.ndarray, seed: int = 1) -> np.ndarray:
    """``count`` masks of sizes uniform on 1..N, single-class ones dropped (so slightly fewer)."""
    rng = np.random.default_rng(seed)
    masks = np.zeros((count, N_TRAIN), dtype=bool)
    for row, size in enumerate(rng.integers(1, N_TRAIN + 1, size=count)):
        masks[row, rng.choice(N_TRAIN, size=size, replace=False)] = True
    both_classes = np.array([np.unique(y_train[mask]).size == 2 for mask in masks])
    return masks[both_classes]


def clock() -> np.ndarray:
    """Wall-clock and CPU seconds of this process, now (the difference of two is an elapsed pair)."""
    return np.array([time.perf_counter(), time.process_time()])


def plain_loop(masks: np.ndarray, data: tuple, dtype: torch.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Test accuracies and (wall, CPU) seconds of the per-coalition loop: fresh module, torch.optim.Adam, own rows."""
    X_train, y_train, X_test, y_test = data
    template = mlp().to(dtype)
    X, y = torch.as_tensor(X_train, dtype=dtype), torch.as_tensor(y_train)
    X_eval = torch.as_tensor(X_test, dtype=dtype)
    accuracies = np.empty(masks.shape[0])
    start = clock()
    for row, mask in enumerate(masks):
        model = copy.deepcopy(template)
        optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
        rows = torch.as_tensor(np.flatnonzero(mask))
        X_rows, y_rows = X[rows], y[rows]
        for _ in range(STEPS):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(X_rows), y_rows).backward()
            optimizer.step()
        with torch.no_grad():
            accuracies[row] = (model(X_eval).argmax(dim=1).numpy() == y_test).mean()
    return accuracies, clock() - start


def batched(masks: np.ndarray, data: tuple, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Test accuracies and (wall, CPU) seconds of ``TorchModelUtility.evaluate`` on ``masks`` (a fresh game)."""
    game = TorchModelUtility(mlp(), *data, steps=STEPS, learning_rate=LEARNING_RATE, dtype=dtype)
    start = clock()
    values = game.evaluate(masks)
    seconds = clock() - start
    assert game.n_fits == masks.shape[0]  # every coalition trained (none degenerate)
    return values, seconds


def sklearn_loop(masks: np.ndarray, data: tuple) -> np.ndarray:
    """(Wall, CPU) seconds of scikit-learn's MLPClassifier per coalition: same architecture, 200 Adam steps."""
    X_train, y_train, _, _ = data
    start = clock()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for mask in masks:
            MLPClassifier((HIDDEN,), solver="adam", learning_rate_init=LEARNING_RATE, alpha=0.0,
                          batch_size=int(mask.sum()), max_iter=STEPS, shuffle=False, tol=0.0,
                          n_iter_no_change=STEPS + 1, random_state=0).fit(X_train[mask], y_train[mask])
    return clock() - start


def matmul_peak(size: int = 2048, repeats: int = 5) -> float:
    """Single-thread float32 GFlop/s of a ``size`` x ``size`` matmul (best of ``repeats``)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def timed_side_by_side(masks: np.ndarray, subset: np.ndarray, data: tuple, repeats: int) -> dict:
    """The loop on ``masks[subset]`` and ``evaluate`` on all ``masks``, alternating; models/s of each repeat."""
    runs: dict = {"loop": [], "batched": [], "values": None, "loop_accuracy": None}  # rates: (wall, CPU) pairs
    plain_loop(masks[:1], data, torch.float32)  # untimed: the first optimiser step imports and sets up lazily
    batched(masks[:2], data, "float32")
    for repeat in range(repeats):
        accuracies, loop_seconds = plain_loop(masks[subset], data, torch.float32)
        values, batched_seconds = batched(masks, data, "float32")
        runs["loop"].append(subset.size / loop_seconds)
        runs["batched"].append(masks.shape[0] / batched_seconds)
        runs["values"], runs["loop_accuracy"] = values, accuracies
        loop_rate, batched_rate = runs["loop"][-1], runs["batched"][-1]
        print(f"  repeat {repeat + 1}: plain loop {loop_rate[0]:6.2f} models/s ({loop_rate[1]:6.2f} per CPU s)   "
              f"TorchModelUtility {batched_rate[0]:6.1f} models/s ({batched_rate[1]:6.1f} per CPU s)   ratio "
              f"{batched_rate[0] / loop_rate[0]:5.1f}x ({batched_rate[1] / loop_rate[1]:5.1f}x in CPU time)",
              flush=True)
    return runs


def judge(label: str, value: float, goal: float, quick: bool) -> str:
    verdict = "not judged (--quick)" if quick else ("OK" if value >= goal else "MISS")
    return f"{verdict}: {label}: {value:.1f} >= {goal:g}"


def report_agreement(masks: np.ndarray, subset: np.ndarray, data: tuple, runs: dict) -> None:
    """max |dU| (test accuracy) between the loop and evaluate, float32 (from the timed runs) and float64."""
    float32 = np.abs(runs["values"][subset] - runs["loop_accuracy"]).max()
    small = subset[:max(2, subset.size // 3)]
    loop64, _ = plain_loop(masks[small], data, torch.float64)
    batched64, _ = batched(masks[small], data, "float64")
    print(f"  max |dU| (test accuracy), loop vs TorchModelUtility: float32 {float32:.4f} on {subset.size} "
          f"coalitions (1/{N_TEST} = {1 / N_TEST:.4f} is one test point); float64 "
          f"{np.abs(loop64 - batched64).max():.2e} on {small.size}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: few coalitions, one repeat")
    parser.add_argument("--coalitions", type=int, default=None, help="coalitions drawn (default 512, quick 40)")
    parser.add_argument("--repeats", type=int, default=None, help="alternating repeats (default 3, quick 1)")
    args = parser.parse_args(argv)
    count = args.coalitions or (40 if args.quick else 512)
    repeats = args.repeats or (1 if args.quick else 3)
    torch.set_num_threads(1)
    print(f"mlp_cpu: torch {torch.__version__}, numpy {np.__version__}, python {platform.python_version()}, "
          f"{platform.machine()}, {os.cpu_count()} CPUs, 1 torch/BLAS thread; load average at start {load()}")
    with threadpool_limits(1):
        peak_size = 1024 if args.quick else 2048
        peak_before = matmul_peak(peak_size)
        data = breast_cancer()
        masks = coalitions(count, data[1])
        subset = np.unique(np.linspace(0, masks.shape[0] - 1, 3 if args.quick else 24).astype(int))
        rows = masks.sum(axis=1)
        print(f"== MLP 30-{HIDDEN}-2, {STEPS} full-batch Adam steps, lr {LEARNING_RATE:g}, float32: {masks.shape[0]}"
              f" coalitions (mean size {rows.mean():.1f}), plain loop timed on {subset.size} of them ==")
        runs = timed_side_by_side(masks, subset, data, repeats)
        report_agreement(masks, subset, data, runs)
        sklearn_rate = subset.size / sklearn_loop(masks[subset], data)
        torch.set_num_threads(os.cpu_count() or 1)  # the caller's setting: evaluate pins its own
        _, all_threads_seconds = batched(masks, data, "float32")
        torch.set_num_threads(1)
        peak_after = matmul_peak(peak_size)
    return summarise(runs, rows, sklearn_rate, masks.shape[0] / all_threads_seconds, (peak_before, peak_after),
                     args.quick)


def summarise(runs: dict, rows: np.ndarray, sklearn_rate: np.ndarray, all_threads_rate: np.ndarray,
              peaks: tuple[float, float], quick: bool) -> int:
    """Print the rates (wall clock, and per CPU second), ratios, GFlop/s against the peak, and the goals."""
    loop, fast = np.array(runs["loop"]), np.array(runs["batched"])  # (repeats, 2): wall, CPU
    ratios = fast / loop
    rate, ratio = np.median(fast, axis=0), np.median(ratios, axis=0)
    gflop_per_model = rows.mean() * STEPS * FLOPS_PER_ROW_STEP / 1e9
    print(f"  TorchModelUtility: {rate[0]:.1f} models/s (median; range {fast[:, 0].min():.1f}-{fast[:, 0].max():.1f})"
          f", {rate[1]:.1f} per CPU second (range {fast[:, 1].min():.1f}-{fast[:, 1].max():.1f})")
    print(f"  plain loop: {np.median(loop[:, 0]):.2f} models/s, {np.median(loop[:, 1]):.2f} per CPU second")
    print(f"  ratio: {ratio[0]:.1f}x wall clock (range {ratios[:, 0].min():.1f}-{ratios[:, 0].max():.1f}), "
          f"{ratio[1]:.1f}x CPU time (range {ratios[:, 1].min():.1f}-{ratios[:, 1].max():.1f})")
    print(f"  scikit-learn MLPClassifier (same recipe, 1 thread): {sklearn_rate[0]:.2f} models/s "
          f"({sklearn_rate[1]:.2f} per CPU s); TorchModelUtility / scikit-learn = {rate[0] / sklearn_rate[0]:.1f}x "
          f"({rate[1] / sklearn_rate[1]:.1f}x in CPU time)")
    print(f"  evaluate after the caller set torch to {os.cpu_count()} threads: {all_threads_rate[0]:.1f} models/s, "
          f"{all_threads_rate[1]:.1f} per CPU s (evaluate pins 1 thread on the CPU)")
    print(f"  work: {gflop_per_model:.3f} GFlop a model on its own rows (4,224 flops per row and step); achieved "
          f"{gflop_per_model * rate[0]:.1f} GFlop/s wall, {gflop_per_model * rate[1]:.1f} per CPU s; single-thread "
          f"float32 matmul peak {peaks[0]:.1f} (start) / {peaks[1]:.1f} (end) GFlop/s: "
          f"{gflop_per_model * rate[1] / max(peaks):.0%} of the better (CPU time)")
    print(f"load average at end {load()}")
    print(judge("TorchModelUtility over the plain per-coalition loop (x, median, wall clock)", ratio[0],
                GOALS["ratio"], quick))
    print(judge("TorchModelUtility models/s on one thread (median, wall clock)", rate[0], GOALS["models_per_s"],
                quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
