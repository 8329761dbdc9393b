"""Owen sampling against permutation sampling and SVARM: relative error at equal budgets, and cost.

Run ``python benchmarks/owen_sampling.py`` (about 6 minutes on 2 cores;
``--quick`` for a smoke run; ``--output PATH`` for the markdown file, default
``benchmarks/results/owen_sampling.md``).

1. **Relative error** ``||v_hat - v||_2 / ||v||_2`` at budgets of ``t N + 2``
   evaluations, mean over seeds (with the standard error of that mean), on
   the games of ``kernel_shapley.py`` with exact values: the airport game
   (N = 100), the linear + sqrt + unanimity game (N = 200) and the KNN
   utility on 1,000 MNIST images (K = 5, 100 test images; exact values by
   ``knn_shapley``). Estimators: ``owen_shapley`` with its defaults (4 bins),
   antithetic, and with 16 bins antithetic (a sweep then costs ``16 (N + 1)``
   evaluations: "-" where the budget pays for fewer than two sweeps, so no
   standard error); as references ``permutation_shapley(antithetic=True)``
   and ``stratified_svarm_shapley``. ``msr_banzhaf`` estimates another value
   (Banzhaf's), so it has no error against these Shapley values; it is the
   cost reference below. Beside each Owen variant, the *variance ratio* at
   the largest budget: the estimates' variance over the seeds divided by
   the mean squared standard error, summed over players (about 1 when the
   standard errors are right in the mean; with few seeds, itself noisy).

2. **Cost on a cheap game at N = 1,000 and 5,000** (``CheapGame`` of
   ``core_overhead.py``, about a nanosecond per mask cell): wall time of
   ``owen_shapley`` against ``msr_banzhaf`` at the same evaluations (both
   evaluate masks, ``N`` cells each), single-threaded, best of 3: the
   estimators' own work.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

import shapley_research
from shapley_research import knn_shapley, msr_banzhaf, owen_shapley, permutation_shapley, stratified_svarm_shapley

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from core_overhead import CheapGame  # noqa: E402
from kernel_shapley import cost_against_msr  # noqa: E402
from pydvl_comparison import AirportGame, KNNGame, load_mnist  # noqa: E402

DEFAULT_OUTPUT = os.path.join(HERE, "results", "owen_sampling.md")
COMMON = dict(progress=False)
# label -> (run(game, budget, seed), evaluations of one sampling unit at N players, or None)
ESTIMATORS = {
    "Owen (4 bins, default)": (lambda g, b, s: owen_shapley(g, b, s, **COMMON), lambda n: 4 * (n + 1)),
    "Owen (4 bins, antithetic)": (lambda g, b, s: owen_shapley(g, b, s, antithetic=True, **COMMON),
                                  lambda n: 4 * (n + 1)),
    "Owen (16 bins, antithetic)": (lambda g, b, s: owen_shapley(g, b, s, n_bins=16, antithetic=True, **COMMON),
                                   lambda n: 16 * (n + 1)),
    "permutation (antithetic)": (lambda g, b, s: permutation_shapley(g, b, s, antithetic=True, **COMMON), None),
    "permutation (antithetic, position-adjusted)": (lambda g, b, s: permutation_shapley(
        g, b, s, antithetic=True, position_adjustment=True, **COMMON), None),
    "stratified SVARM": (lambda g, b, s: stratified_svarm_shapley(g, b, s, **COMMON), None),
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def error_cell(label: str, game, truth: np.ndarray, budget: int, seeds) -> tuple[str, float | None]:
    """One cell: the mean relative error over ``seeds`` and its standard error; for Owen sampling, the ratio
    of the estimates' variance over the seeds to the mean squared standard error (pooled over players)."""
    run, unit = ESTIMATORS[label]
    if unit is not None and budget < 2 * unit(game.n_players):
        return "-", None
    errors, values, stderr = [], [], []
    for seed in seeds:
        result = run(game, budget, seed)
        errors.append(np.linalg.norm(result.values - truth) / np.linalg.norm(truth))
        values.append(result.values)
        stderr.append(result.stderr)
    spread = np.std(errors, ddof=1) / np.sqrt(len(errors)) if len(errors) > 1 else 0.0
    ratio = None
    if label.startswith("Owen") and len(errors) > 1:
        ratio = float(np.var(values, axis=0, ddof=1).sum() / np.mean(np.square(stderr), axis=0).sum())
    return f"{np.mean(errors):.3f} ± {spread:.3f}", ratio


def error_rows(name: str, game, truth: np.ndarray, multiples, seeds) -> list[str]:
    """Markdown rows: one per estimator, mean relative error at each budget (and the Owen variance ratio at
    the largest budget)."""
    budgets = [int(t * game.n_players) + 2 for t in multiples]
    rows = []
    for label in ESTIMATORS:
        cells, ratio = [], None
        for budget in budgets:
            log(f"  {name}: {label}, budget {budget:,} ...")
            cell, ratio = error_cell(label, game, truth, budget, seeds)
            cells.append(cell)
        shown = "" if ratio is None else f"{ratio:.2f}"
        rows.append(f"| {name} | {label} | " + " | ".join(cells) + f" | {shown} |")
    header = ("| game | estimator | " + " | ".join(f"{t} N" for t in multiples) + " | variance ratio |\n"
              "|---|---|" + "---|" * len(multiples) + "---|")
    return [header, *rows]


def error_part(quick: bool) -> list[str]:
    seeds = range(2) if quick else range(8)
    multiples = [10, 50] if quick else [10, 50, 100]
    airport, cheap = AirportGame(100, seed=1), CheapGame(200, seed=2)
    lines = error_rows("airport, N = 100", airport, airport.shapley_values(), multiples, seeds)
    lines += error_rows("linear + sqrt + unanimity, N = 200", cheap, cheap.shapley_values(), multiples, seeds)[1:]
    log("  KNN game on MNIST: exact values ...")
    Z_train, y_train, Z_test, y_test, _ = load_mnist()
    n_test = 20 if quick else 100
    knn = KNNGame(Z_train, y_train, Z_test[:n_test], y_test[:n_test], 5)
    exact = knn_shapley(Z_train, y_train, Z_test[:n_test], y_test[:n_test], 5).values
    lines += ["", *error_rows(f"KNN, {len(y_train):,} MNIST images", knn, exact, [10] if quick else [10, 50],
                              range(1) if quick else range(3))]
    return lines


def cost_part(quick: bool, cases=None) -> list[str]:
    """Markdown rows: best-of-3 wall time of Owen sampling and of MSR Banzhaf, ``cases``: ``(N, budget)``."""
    if cases is None:
        cases = ((1000, 4 * 1001 * (5 if quick else 50)), (5000, 4 * 5001 * (2 if quick else 6)))
    return cost_against_msr("Owen sampling", owen_shapley, cases, quick)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small budgets, fewer seeds")
    parser.add_argument("--output", metavar="PATH", default=DEFAULT_OUTPUT, help="markdown output file")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with threadpool_limits(1):
        stratified_svarm_shapley(CheapGame(50), 1_002, 0, progress=False)  # compile the compiled loops first
        msr_banzhaf(CheapGame(50), 1_002, 0, progress=False)
        errors, costs = error_part(args.quick), cost_part(args.quick)
    text = "\n".join([
        "# Owen sampling against permutation sampling and SVARM", "",
        f"shapley_research {shapley_research.__version__} | Python {platform.python_version()} | "
        f"numpy {np.__version__} | {os.cpu_count()} CPUs | one BLAS thread" + (" | --quick" if args.quick else ""),
        "", "1. Relative error ||v_hat - v|| / ||v|| at t N + 2 evaluations (mean over seeds ± its standard "
        "error; -: fewer than two sweeps); variance ratio: for the Owen estimators at the largest budget, the "
        "variance of the estimates over the seeds / the mean squared standard error, summed over players (about 1: "
        "standard errors right in the mean).", "",
        *errors, "", "2. Cost on the cheap closed-form game (the estimators' own work; best of 3).", "", *costs, "",
        f"Total wall time: {time.perf_counter() - start:.0f} s.", ""])
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
