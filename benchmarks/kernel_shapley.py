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

import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from _reference_games import (  # this script's sibling: the reference games, timers and report
    cost_against_msr, error_tables, log, parse_arguments, report_head, table_header, traced_cost_rows, write_report)
from _games import CheapGame
from shapley_research import permutation_shapley, stratified_svarm_shapley
from shapley_research.estimators import kernel_shapley, unbiased_kernel_shapley

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(HERE, "results", "kernel_shapley.md")
COMMON = dict(progress=False)
ESTIMATORS = {
    "classic KernelSHAP (paired)": lambda g, b, s: kernel_shapley(g, b, s, **COMMON),
    "unbiased KernelSHAP (paired)": lambda g, b, s: unbiased_kernel_shapley(g, b, s, **COMMON),
    "unbiased KernelSHAP (unpaired)": lambda g, b, s: unbiased_kernel_shapley(g, b, s, paired=False, **COMMON),
    "permutation (antithetic)": lambda g, b, s: permutation_shapley(g, b, s, antithetic=True, **COMMON),
    "stratified SVARM": lambda g, b, s: stratified_svarm_shapley(g, b, s, **COMMON),
}


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
    return [table_header(multiples, last="z spread"), *rows]


def error_part(quick: bool) -> list[str]:
    """Markdown: the error tables on the reference games (``_reference_games.py``)."""
    if quick:
        return error_tables(error_rows, quick, [10, 30], range(2), [10], range(1))
    return error_tables(error_rows, quick, [10, 30, 100], range(4), [10, 30], range(3))


def cost_part(quick: bool, cases=None) -> list[str]:
    """Markdown rows: best-of-3 wall time of the paired kernel and of MSR Banzhaf, ``cases``: ``(N, budget)``."""
    if cases is None:
        cases = ((1000, 20_002 if quick else 200_002), (20_000, 4_002 if quick else 40_002))
    return cost_against_msr("unbiased KernelSHAP (paired)", unbiased_kernel_shapley, cases, quick)


def classic_cost_part(quick: bool) -> list[str]:
    """Markdown rows: wall time (best of 3) and peak traced memory of the classic against the unbiased kernel."""
    cases = ((1000, 200_002), (5000, 40_002)) if not quick else ((1000, 20_002), (2000, 4_002))  # N^3 solves at 5,000
    return traced_cost_rows(("classic", kernel_shapley), ("unbiased", unbiased_kernel_shapley), cases, quick, 1,
                            "classic cost")


def main(argv=None) -> int:
    args = parse_arguments(__doc__, DEFAULT_OUTPUT, argv)
    start = time.perf_counter()
    with threadpool_limits(1):
        unbiased_kernel_shapley(CheapGame(50), 1_002, 0, progress=False)  # compile the subset sampler first
        errors, costs, classic = error_part(args.quick), cost_part(args.quick), classic_cost_part(args.quick)
    return write_report([
        *report_head("Classic and unbiased KernelSHAP against permutation sampling and SVARM", args.quick),
        "", "1. Relative error ||v_hat - v|| / ||v|| at t N + 2 evaluations (mean over seeds); z spread: "
        "std of (v_hat - v) / stderr for the kernel estimators at the largest budget (about 1: honest standard "
        "errors; the classic estimator's come from groups of about 10 N pairs, their number in brackets: from a "
        "few groups they are noisy).", "",
        *errors, "", "2. Cost on the cheap closed-form game (the estimators' own work; best of 3).", "", *costs, "",
        "3. The classic estimator's own cost on the cheap game (best of 3; peak memory traced by tracemalloc).", "",
        *classic, ""], start, args.output)


if __name__ == "__main__":
    sys.exit(main())
