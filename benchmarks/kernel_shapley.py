"""Classic and unbiased KernelSHAP against permutation sampling and SVARM: relative error at equal budgets, cost.

Run ``python benchmarks/kernel_shapley.py`` (about 3 minutes on 2 cores;
``--quick`` for a smoke run; ``--output PATH`` for the markdown file, default
``benchmarks/results/kernel_shapley.md``).

1. **Relative error** ``||v_hat - v||_2 / ||v||_2`` at budgets of ``t N + 2``
   evaluations, mean over seeds, on the games of ``pydvl_comparison.py`` part 3
   with exact values: the airport game (N = 100), the linear + sqrt +
   unanimity game (N = 200) and the KNN utility on 1,000 MNIST images (K = 5,
   100 test images; exact values by ``knn_shapley``). Estimators:
   ``kernel_shapley`` (classic KernelSHAP, paired), ``unbiased_kernel_shapley``
   paired (the default) and unpaired, and as references
   ``permutation_shapley(antithetic=True)`` and ``stratified_svarm_shapley``.
   The mean z-score spread of the kernels' errors (``std((v_hat - v) /
   stderr)`` over players and seeds, about 1 when the standard errors are
   right) is printed beside; the classic estimator has standard errors only
   from two groups of ``10 N`` pairs on (``40 N`` evaluations).

2. **Cost on a cheap game at N = 1,000 and 20,000** (``CheapGame`` of
   ``core_overhead.py``, about a nanosecond per mask cell): wall time of the
   paired estimator against ``msr_banzhaf`` at the same evaluations, both
   single-threaded, best of 3; this is the estimators' own work, O(N) per
   evaluation for both.

3. **Cost of the classic estimator at N = 1,000 and 5,000** on the same
   cheap game: wall time and peak traced memory (``tracemalloc``) of
   ``kernel_shapley`` against ``unbiased_kernel_shapley`` at the same
   evaluations, single-threaded: its ``O(N^2)`` matrix products and
   ``O(N^3)`` solves.
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
from shapley_research import knn_shapley, msr_banzhaf, permutation_shapley, stratified_svarm_shapley
from shapley_research.estimators import kernel_shapley, unbiased_kernel_shapley

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from core_overhead import CheapGame  # noqa: E402
from pydvl_comparison import AirportGame, KNNGame, load_mnist  # noqa: E402

DEFAULT_OUTPUT = os.path.join(HERE, "results", "kernel_shapley.md")
COMMON = dict(progress=False)
ESTIMATORS = {
    "classic KernelSHAP (paired)": lambda g, b, s: kernel_shapley(g, b, s, **COMMON),
    "unbiased KernelSHAP (paired)": lambda g, b, s: unbiased_kernel_shapley(g, b, s, **COMMON),
    "unbiased KernelSHAP (unpaired)": lambda g, b, s: unbiased_kernel_shapley(g, b, s, paired=False, **COMMON),
    "permutation (antithetic)": lambda g, b, s: permutation_shapley(g, b, s, antithetic=True, **COMMON),
    "stratified SVARM": lambda g, b, s: stratified_svarm_shapley(g, b, s, **COMMON),
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def error_rows(name: str, game, truth: np.ndarray, multiples, seeds) -> list[str]:
    """Markdown rows: one per estimator, mean relative error at each budget (and the kernel's z spread)."""
    n, norm = game.n_players, np.linalg.norm(truth)
    budgets = [int(t * n) + 2 for t in multiples]
    rows = []
    for label, run in ESTIMATORS.items():
        cells, z_spread, groups = [], [], []
        for budget in budgets:
            log(f"  {name}: {label}, budget {budget:,} ...")
            errors = []
            for seed in seeds:
                result = run(game, budget, seed)
                errors.append(np.linalg.norm(result.values - truth) / norm)
                if "Kernel" in label and np.isfinite(result.stderr).all():
                    z_spread.append(np.std((result.values - truth) / result.stderr))
                    groups.append(result.info.get("n_groups"))
            cells.append(f"{np.mean(errors):.3f}")
        # the classic's spread at the largest budget only, with its groups: from fewer groups it is a t with few
        # degrees of freedom (two groups: a Cauchy), which says nothing of the calibration
        spread = (f"{np.mean(z_spread[-len(seeds):]):.2f}" if z_spread else "n/a") if "Kernel" in label else ""
        if "classic" in label and z_spread:
            spread += f" ({groups[-1]} groups)"
        rows.append(f"| {name} | {label} | " + " | ".join(cells) + f" | {spread} |")
    header = ("| game | estimator | " + " | ".join(f"{t} N" for t in multiples) + " | z spread |\n"
              "|---|---|" + "---|" * len(multiples) + "---|")
    return [header, *rows]


def error_part(quick: bool) -> list[str]:
    seeds = range(2) if quick else range(4)
    multiples = [10, 30] if quick else [10, 30, 100]
    airport, cheap = AirportGame(100, seed=1), CheapGame(200, seed=2)
    lines = error_rows("airport, N = 100", airport, airport.shapley_values(), multiples, seeds)
    lines += error_rows("linear + sqrt + unanimity, N = 200", cheap, cheap.shapley_values(), multiples, seeds)[1:]
    log("  KNN game on MNIST: exact values ...")
    Z_train, y_train, Z_test, y_test, _ = load_mnist()
    n_test = 20 if quick else 100
    knn = KNNGame(Z_train, y_train, Z_test[:n_test], y_test[:n_test], 5)
    exact = knn_shapley(Z_train, y_train, Z_test[:n_test], y_test[:n_test], 5).values
    lines += ["", *error_rows(f"KNN, {len(y_train):,} MNIST images", knn, exact, [10] if quick else [10, 30],
                              range(1) if quick else range(3))]
    return lines


def best_seconds(repeats: int, run, *args, **kwargs) -> float:
    """The best wall time of ``repeats`` calls of ``run(*args, **kwargs)``."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        run(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best


def cost_against_msr(name: str, estimator, cases, quick: bool) -> list[str]:
    """Markdown rows: best-of-3 wall time of ``estimator`` and of MSR Banzhaf on the cheap game, ``cases``:
    ``(N, budget)``; ``name`` heads the estimator's column."""
    lines = [f"| N | evaluations | {name} s | MSR Banzhaf s | ratio |", "|---|---|---|---|---|"]
    for n, budget in cases:
        game = CheapGame(n)
        times = {}
        for label, run in ((name, estimator), ("MSR Banzhaf", msr_banzhaf)):
            log(f"  cost: {label} at N = {n:,} ...")
            times[label] = best_seconds(1 if quick else 3, run, game, budget, 0, progress=False)
        ours, msr = times[name], times["MSR Banzhaf"]
        lines.append(f"| {n:,} | {budget:,} | {ours:.3f} | {msr:.3f} | {ours / msr:.2f}x |")
    return lines


def cost_part(quick: bool, cases=None) -> list[str]:
    """Markdown rows: best-of-3 wall time of the paired kernel and of MSR Banzhaf, ``cases``: ``(N, budget)``."""
    if cases is None:
        cases = ((1000, 20_002 if quick else 200_002), (20_000, 4_002 if quick else 40_002))
    return cost_against_msr("unbiased KernelSHAP (paired)", unbiased_kernel_shapley, cases, quick)


def classic_cost_part(quick: bool) -> list[str]:
    """Markdown rows: wall time (best of 3) and peak traced memory of the classic against the unbiased kernel."""
    import tracemalloc

    cases = ((1000, 20_002 if quick else 200_002), (5000, 4_002 if quick else 40_002))
    lines = ["| N | evaluations | classic s | classic peak MiB | unbiased s | unbiased peak MiB | time ratio |",
             "|---|---|---|---|---|---|---|"]
    for n, budget in cases:
        game, cells = CheapGame(n), {}
        for label, run in (("classic", kernel_shapley), ("unbiased", unbiased_kernel_shapley)):
            log(f"  classic cost: {label} at N = {n:,} ...")
            best = best_seconds(1 if quick else 3, run, game, budget, 0, progress=False)
            tracemalloc.start()
            run(game, budget, 0, progress=False)
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            cells[label] = (best, peak)
        (tc, mc), (tu, mu) = cells["classic"], cells["unbiased"]
        lines.append(f"| {n:,} | {budget:,} | {tc:.2f} | {mc:.0f} | {tu:.2f} | {mu:.0f} | {tc / tu:.1f}x |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small budgets, fewer seeds")
    parser.add_argument("--output", metavar="PATH", default=DEFAULT_OUTPUT, help="markdown output file")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with threadpool_limits(1):
        unbiased_kernel_shapley(CheapGame(50), 1_002, 0, progress=False)  # compile the subset sampler first
        errors, costs, classic = error_part(args.quick), cost_part(args.quick), classic_cost_part(args.quick)
    text = "\n".join([
        "# Classic and unbiased KernelSHAP against permutation sampling and SVARM", "",
        f"shapley_research {shapley_research.__version__} | Python {platform.python_version()} | "
        f"numpy {np.__version__} | {os.cpu_count()} CPUs | one BLAS thread" + (" | --quick" if args.quick else ""),
        "", "1. Relative error ||v_hat - v|| / ||v|| at t N + 2 evaluations (mean over seeds); z spread: "
        "std of (v_hat - v) / stderr for the kernel estimators at the largest budget (about 1: honest standard "
        "errors; the classic estimator's come from groups of about 10 N pairs, their number in brackets: from a "
        "few groups they are noisy).", "",
        *errors, "", "2. Cost on the cheap closed-form game (the estimators' own work; best of 3).", "", *costs, "",
        "3. The classic estimator's own cost on the cheap game (best of 3; peak memory traced by tracemalloc).", "",
        *classic, "",
        f"Total wall time: {time.perf_counter() - start:.0f} s.", ""])
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
