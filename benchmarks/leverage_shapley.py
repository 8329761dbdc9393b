"""Leverage SHAP against classic and unbiased KernelSHAP and antithetic permutation sampling, at equal budgets.

Run ``python benchmarks/leverage_shapley.py`` (about 2 minutes on 2 cores;
``--quick`` for a smoke run; ``--output PATH`` for the markdown file, default
``benchmarks/results/leverage_shapley.md``).

1. **Relative error** ``||v_hat - v||_2 / ||v||_2`` at budgets of ``t N + 2``
   evaluations, mean over seeds with the standard error of that mean, on the
   games of ``kernel_shapley.py`` with exact values (the airport game, N = 100,
   and a smaller one, N = 20; the linear + sqrt + unanimity game, N = 200; the
   KNN utility on 1,000 MNIST images, K = 5, 100 test images, exact values by
   ``knn_shapley``). Estimators, all paired: ``leverage_shapley`` (Leverage
   SHAP, sampled with replacement), ``kernel_shapley`` (classic KernelSHAP),
   ``unbiased_kernel_shapley``, and ``permutation_shapley(antithetic=True)``.

2. **Leverage against classic KernelSHAP, seed by seed**: the ratio of their
   mean errors and on how many seeds Leverage SHAP's error was the smaller
   (the same seeds, so the same game and budget, drawn differently).

3. **Own cost** on the cheap game (``CheapGame`` of ``core_overhead.py``) at
   N = 1,000: wall time (best of 3) and peak traced memory of
   ``leverage_shapley`` against ``kernel_shapley`` at the same evaluations,
   single-threaded (Leverage SHAP's weighted Gram products are float64, the
   classic's exact float32 counts).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from _reference_games import (  # this script's sibling: the reference games, timers and report
    closed_form_games, knn_reference, log, parse_arguments, report_head, table_header, traced_cost_rows, write_report)
from _games import AirportGame, CheapGame
from shapley_research import permutation_shapley
from shapley_research.estimators import kernel_shapley, leverage_shapley, unbiased_kernel_shapley

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(HERE, "results", "leverage_shapley.md")
COMMON = dict(progress=False)
LEVERAGE, CLASSIC = "Leverage SHAP (paired)", "classic KernelSHAP (paired)"
ESTIMATORS = {
    LEVERAGE: lambda g, b, s: leverage_shapley(g, b, s, **COMMON),
    CLASSIC: lambda g, b, s: kernel_shapley(g, b, s, **COMMON),
    "unbiased KernelSHAP (paired)": lambda g, b, s: unbiased_kernel_shapley(g, b, s, **COMMON),
    "permutation (antithetic)": lambda g, b, s: permutation_shapley(g, b, s, antithetic=True, **COMMON),
}


def errors_of(game, truth: np.ndarray, multiples, seeds) -> dict[str, np.ndarray]:
    """Relative errors, ``label -> (budgets, seeds)`` array, at budgets ``t N + 2``."""
    norm = np.linalg.norm(truth)
    table = {}
    for label, run in ESTIMATORS.items():
        rows = []
        for t in multiples:
            log(f"  N = {game.n_players}: {label}, {t} N ...")
            rows.append([np.linalg.norm(run(game, int(t * game.n_players) + 2, seed).values - truth) / norm
                         for seed in seeds])
        table[label] = np.array(rows)
    return table


def error_rows(name: str, table: dict[str, np.ndarray]) -> list[str]:
    """Markdown rows: mean relative error ± its standard error over the seeds, one row per estimator."""
    rows = []
    for label, errors in table.items():
        spread = errors.std(axis=1, ddof=1) / np.sqrt(errors.shape[1]) if errors.shape[1] > 1 else 0 * errors[:, 0]
        rows.append(f"| {name} | {label} | " + " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in
                                                          zip(errors.mean(axis=1), spread)) + " |")
    return rows


def versus_rows(name: str, table: dict[str, np.ndarray], multiples) -> list[str]:
    """Markdown rows: Leverage over classic KernelSHAP, the ratio of mean errors and the seeds it won."""
    ours, theirs = table[LEVERAGE], table[CLASSIC]
    cells = [f"{o.mean() / c.mean():.2f} ({int((o < c).sum())}/{o.size})" for o, c in zip(ours, theirs)]
    return [f"| {name} | " + " | ".join(cells) + " |" + " |" * (len(multiples) - len(cells))]


def error_part(quick: bool) -> tuple[list[str], list[str]]:
    seeds = range(2) if quick else range(6)
    multiples = [10, 30] if quick else [10, 30, 100]
    games = closed_form_games()
    games.insert(1, ("airport, N = 20", AirportGame(20, seed=4)))  # and a small airport game
    errors, versus = [table_header(multiples)], [table_header(multiples, "| game | ")]
    for name, game in games:
        table = errors_of(game, game.shapley_values(), multiples, seeds)
        errors += error_rows(name, table)
        versus += versus_rows(name, table, multiples)
    name, knn, exact = knn_reference(quick)
    knn_multiples = [10] if quick else [10, 30]
    table = errors_of(knn, exact, knn_multiples, range(1) if quick else range(3))
    errors += ["", table_header(knn_multiples), *error_rows(name, table)]
    versus += versus_rows(name, table, multiples)
    return errors, versus


def cost_part(quick: bool, cases=None) -> list[str]:
    """Markdown rows: best-of-3 wall time and peak traced memory of Leverage SHAP and classic KernelSHAP."""
    if cases is None:
        cases = ((1000, 20_002 if quick else 200_002),)
    return traced_cost_rows(("Leverage", leverage_shapley), ("classic", kernel_shapley), cases, quick, 2)


def main(argv=None) -> int:
    args = parse_arguments(__doc__, DEFAULT_OUTPUT, argv)
    start = time.perf_counter()
    with threadpool_limits(1):
        unbiased_kernel_shapley(CheapGame(50), 1_002, 0, progress=False)  # compile the subset sampler first
        (errors, versus), costs = error_part(args.quick), cost_part(args.quick)
    return write_report([
        *report_head("Leverage SHAP against classic and unbiased KernelSHAP and antithetic permutation sampling",
                     args.quick),
        "", "1. Relative error ||v_hat - v|| / ||v|| at t N + 2 evaluations: mean ± standard error over the seeds "
        "(6; KNN 3).", "", *errors, "",
        "2. Leverage SHAP against classic KernelSHAP: ratio of mean errors (below 1: Leverage better) and the seeds "
        "on which Leverage SHAP's error was smaller.", "", *versus, "",
        "3. Own cost on the cheap closed-form game (best of 3; peak memory traced by tracemalloc).", "", *costs, ""],
        start, args.output)


if __name__ == "__main__":
    sys.exit(main())
