"""The Monte Carlo least core against permutation sampling and MSR Banzhaf: ranks, noisy labels, solve time.

Run ``python benchmarks/least_core.py`` (about 2-3 minutes on 2 cores;
``--quick`` for a smoke run; ``--output PATH`` for the markdown file, default
``benchmarks/results/least_core.md``). Every estimator gets the same budget of
utility evaluations; the evaluations each one spent are printed (permutation
sampling spends whole permutations only, so it may leave part unspent).

1. **Ranks on small games with exact values** (N = 12): the test accuracy of
   logistic regression (``ModelUtility(..., fast=True)``, the data_cleaning
   game) on 12 breast-cancer points with 2 labels flipped, one game per problem
   seed, and ``CheapGame`` of ``core_overhead.py`` (linear + sqrt + unanimity).
   Spearman rank correlation with the exact Shapley values (``exact_shapley``)
   and with the exact least core (``exact_least_core``, solved by
   ``method="highs"``, the reference solver; whether the default
   ``method="ipm"`` converged on the same game is counted) of ``least_core``
   (default ``method="ipm"``), ``permutation_shapley(antithetic=True)`` and
   i.i.d. normal values (the floor, about 0), at 4 N, 16 N and 64 N evaluations;
   mean over (game, seed) pairs with its standard error. A run that raises is
   counted, not hidden.

2. **Noisy-label detection** (the data_cleaning setting, small): breast cancer
   split into 200 training and 200 test points (``make_problem``), 15% of the
   training labels flipped, the same game; AUROC of flagging the lowest values
   (``detection_auroc``) of ``least_core`` (``method="ipm"``, the default, and
   ``"highs"``, the reference solver), ``permutation_shapley`` (plain and
   antithetic) and ``msr_banzhaf`` at 10 N and 20 N evaluations, over problem
   seeds (each seeds its split, its flips and the estimators); random values
   score 0.5 in expectation.

3. **Solve time against N** on ``CheapGame`` (evaluating it costs about a
   nanosecond per mask cell, so a call's wall time is the solve) at 10 N
   evaluations: ``method="ipm"`` (best of 2) against ``method="highs"`` (one
   run, at the smaller sizes), with how far apart their values and subsidies are.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from scipy.stats import spearmanr
from threadpoolctl import threadpool_limits

from _reference_games import log, mean_cell, parse_arguments, report_head, write_report  # the report: a sibling
from _games import CheapGame
from shapley_research import exact_least_core, exact_shapley, least_core, msr_banzhaf, permutation_shapley
from shapley_research.experiments.data_cleaning import detection_auroc, make_game, make_problem

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(HERE, "results", "least_core.md")
COMMON = dict(progress=False)


def random_values(game, budget: int, seed: int):
    """The floor: i.i.d. standard normal values (no evaluation), as an object with ``values``."""
    return _Values(np.random.default_rng([seed, 9_999]).normal(size=game.n_players), 0)


class _Values:
    def __init__(self, values: np.ndarray, n_evaluations: int):
        self.values, self.n_evaluations = values, n_evaluations


RANK_ESTIMATORS = {
    "least_core (ipm)": lambda g, b, s: least_core(g, b, s, **COMMON),
    "permutation (antithetic)": lambda g, b, s: permutation_shapley(g, b, s, antithetic=True, **COMMON),
    "random values": random_values,
}
DETECTION_ESTIMATORS = {
    "least_core (ipm)": lambda g, b, s: least_core(g, b, s, **COMMON),
    "least_core (highs)": lambda g, b, s: least_core(g, b, s, method="highs", **COMMON),
    "permutation": lambda g, b, s: permutation_shapley(g, b, s, **COMMON),
    "permutation (antithetic)": lambda g, b, s: permutation_shapley(g, b, s, antithetic=True, **COMMON),
    "msr_banzhaf": lambda g, b, s: msr_banzhaf(g, b, s, **COMMON),
    "random values": random_values,
}


def rank(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho (average ranks for ties); nan when either side is constant."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b)[0])


def exact_references(game) -> dict:
    """Exact Shapley values, the exact least core (HiGHS) and whether the default interior-point solve converged."""
    shapley = exact_shapley(game, **COMMON).values
    core = exact_least_core(game, method="highs", **COMMON)
    try:
        ipm = exact_least_core(game, **COMMON).values
        ipm_gap = float(np.abs(ipm - core.values).max() / np.abs(core.values).max())
    except (RuntimeError, ValueError):
        ipm_gap = None
    return {"shapley": shapley, "core": core.values, "subsidy": core.info["subsidy"], "ipm_gap": ipm_gap}


def small_games(quick: bool, n: int = 12) -> list[tuple[str, object]]:
    """The rank part's games: (family, game), data games first."""
    problems = range(2) if quick else range(4)
    games = [("logistic regression, 12 breast-cancer points", make_game(make_problem("breast_cancer", n, 200, 0.15, p)))
             for p in problems]
    return games + [("linear + sqrt + unanimity", CheapGame(n, n_unanimity=4, seed=p)) for p in problems]


def rank_rows(family: str, games, references, multiples, seeds) -> list[str]:
    """Markdown rows of one game family: per estimator and budget, rho with exact Shapley and with the least core."""
    n = games[0].n_players
    rows = []
    for label, run in RANK_ESTIMATORS.items():
        for t in multiples[:1] if label == "random values" else multiples:
            budget = t * n
            log(f"  ranks: {family}: {label}, budget {budget} ...")
            with_shapley, with_core, spent, failures = [], [], [], 0
            for game, ref in zip(games, references):
                for seed in seeds:
                    try:
                        result = run(game, budget, seed)
                    except (RuntimeError, ValueError):  # a solver failure is counted (see the report)
                        failures += 1
                        continue
                    with_shapley.append(rank(result.values, ref["shapley"]))
                    with_core.append(rank(result.values, ref["core"]))
                    spent.append(result.n_evaluations)
            runs = len(games) * len(seeds)
            shown = "-" if label == "random values" else f"{t} N"
            rows.append(f"| {family} | {label} | {shown} | {min(spent, default=0)}-{max(spent, default=0)} | "
                        f"{mean_cell(with_shapley)} | {mean_cell(with_core)} | {failures}/{runs} |")
    return rows


def rank_part(quick: bool) -> list[str]:
    seeds = range(2) if quick else range(3)
    multiples = [4, 16] if quick else [4, 16, 64]
    games = small_games(quick)
    lines = ["| game | estimator | budget | evaluations spent | rho with exact Shapley | rho with exact least core "
             "| failed runs |", "|---|---|---|---|---|---|---|"]
    notes = []
    for family in dict.fromkeys(f for f, _ in games):
        members = [g for f, g in games if f == family]
        log(f"  ranks: {family}: exact values of {len(members)} games ...")
        references = [exact_references(g) for g in members]
        gaps = [r["ipm_gap"] for r in references]
        lines += rank_rows(family, members, references, multiples, seeds)
        lines.append(f"| {family} | exact least core (reference) | 2^N | {2 ** members[0].n_players} | "
                     f"{mean_cell([rank(r['core'], r['shapley']) for r in references])} | 1 | |")
        notes.append(f"- {family}: {len(members)} games, exact least-core subsidy e* "
                     f"{mean_cell([r['subsidy'] for r in references])}; `exact_least_core` with the default "
                     f"`method=\"ipm\"` raised (did not converge) on {sum(g is None for g in gaps)} of {len(gaps)}, "
                     f"largest relative gap to HiGHS where it converged: "
                     f"{max((g for g in gaps if g is not None), default=float('nan')):.1e}.")
    return lines + [""] + notes


def detection_part(quick: bool, n_train: int = 200, problems=None, multiples=None) -> list[str]:
    """Markdown rows: per estimator and budget, the detection AUROC over problem seeds."""
    problems = (range(2) if quick else range(8)) if problems is None else problems
    multiples = ([10] if quick else [10, 20]) if multiples is None else multiples
    cells: dict = {}
    for p in problems:
        problem = make_problem("breast_cancer", n_train, 200, 0.15, p)
        game = make_game(problem)
        for label, run in DETECTION_ESTIMATORS.items():
            for t in multiples[:1] if label == "random values" else multiples:
                log(f"  detection: problem {p}: {label}, budget {t * n_train} ...")
                entry = cells.setdefault((label, t), {"auroc": {}, "spent": [], "time": [], "failures": 0})
                start = time.perf_counter()
                try:
                    result = run(game, t * n_train, p)
                except (RuntimeError, ValueError):
                    entry["failures"] += 1
                    continue
                entry["time"].append(time.perf_counter() - start)
                entry["auroc"][p] = detection_auroc(result.values, problem["flipped"])
                entry["spent"].append(result.n_evaluations)
    lines = ["| estimator | budget | evaluations spent | AUROC | wall time s | failed runs |",
             "|---|---|---|---|---|---|"]
    for (label, t), e in cells.items():
        shown = "-" if label == "random values" else f"{t} N"
        lines.append(f"| {label} | {shown} | {min(e['spent'], default=0)}-{max(e['spent'], default=0)} | "
                     f"{mean_cell(list(e['auroc'].values()))} | {mean_cell(e['time'], 2)} | "
                     f"{e['failures']}/{len(problems)} |")
    return lines + [""] + paired_lines(cells, multiples)


def paired_lines(cells: dict, multiples, reference: str = "least_core (highs)") -> list[str]:
    """One line per budget and method: the AUROC of ``reference`` minus the method's, paired by problem."""
    lines = []
    for t in multiples:
        mine = cells[(reference, t)]["auroc"]
        for label in DETECTION_ESTIMATORS:
            if label in (reference, "random values"):
                continue
            other = cells[(label, t)]["auroc"]
            common = [p for p in mine if p in other]
            gaps = [mine[p] - other[p] for p in common]
            lines.append(f"- {t} N: {reference} minus {label}, paired by problem ({len(common)} problems): "
                         f"{mean_cell(gaps)}")
    return lines


def solve_part(quick: bool, sizes=None, highs_sizes=None) -> list[str]:
    """Markdown rows: wall time of ``least_core`` at 10 N evaluations of the cheap game, ipm against HiGHS."""
    sizes = ((50, 100) if quick else (100, 200, 400)) if sizes is None else sizes
    highs_sizes = ((50,) if quick else (100, 200)) if highs_sizes is None else highs_sizes
    lines = ["| N | evaluations | ipm s (best of 2) | HiGHS + CLARABEL s (1 run) | subsidy ipm / HiGHS | "
             "max relative value gap | rho ipm vs HiGHS |", "|---|---|---|---|---|---|---|"]
    for n in sizes:
        game, budget = CheapGame(n, seed=3), 10 * n
        log(f"  solve: ipm at N = {n} ...")
        best, ipm = np.inf, None
        for _ in range(2):
            start = time.perf_counter()
            ipm = least_core(game, budget, 0, **COMMON)
            best = min(best, time.perf_counter() - start)
        cells = ["-", f"{ipm.info['subsidy']:.4f} / -", "-", "-"]
        if n in highs_sizes:
            log(f"  solve: highs at N = {n} ...")
            start = time.perf_counter()
            highs = least_core(game, budget, 0, method="highs", **COMMON)
            gap = np.abs(ipm.values - highs.values).max() / np.abs(highs.values).max()
            cells = [f"{time.perf_counter() - start:.2f}", f"{ipm.info['subsidy']:.4f} / {highs.info['subsidy']:.4f}",
                     f"{gap:.1e}", f"{rank(ipm.values, highs.values):.4f}"]
        lines.append(f"| {n} | {ipm.n_evaluations:,} | {best:.2f} | " + " | ".join(cells) + " |")
    return lines


def main(argv=None) -> int:
    args = parse_arguments(__doc__, DEFAULT_OUTPUT, argv)
    start = time.perf_counter()
    with threadpool_limits(1):
        msr_banzhaf(CheapGame(50), 1_002, 0, **COMMON)  # compile the compiled loops first
        ranks, detection, solve = rank_part(args.quick), detection_part(args.quick), solve_part(args.quick)
    return write_report([
        *report_head("The Monte Carlo least core against permutation sampling and MSR Banzhaf", args.quick),
        "", "1. Spearman rank correlation with exact values on games of N = 12 players, at t N evaluations "
        f"(mean ± standard error [min, max] over games x {2 if args.quick else 3} estimator seeds; a constant "
        "estimate has no rho and is left out). The exact least core is solved by HiGHS; its own rho with exact "
        "Shapley is the last row of each family.", "", *ranks, "",
        "2. Detecting flipped labels: breast cancer, 200 training / 200 test points, 15% of training labels flipped, "
        "test accuracy of logistic regression; AUROC of flagging the lowest values (mean ± standard error [min, max] "
        "over problem seeds; random values: 0.5 in expectation).", "", *detection, "",
        "3. Solve time on the cheap closed-form game at 10 N evaluations (evaluation costs microseconds: the time is "
        "the solve). HiGHS: the linear program by HiGHS, the quadratic one by CLARABEL with constraint generation.",
        "", *solve, ""], start, args.output)


if __name__ == "__main__":
    sys.exit(main())
