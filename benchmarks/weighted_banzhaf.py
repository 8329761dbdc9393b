"""Weighted Banzhaf values by their weight: noisy-label detection, with and without noise in the utility.

Run ``python benchmarks/weighted_banzhaf.py`` (about 5 minutes on 2 cores;
``--quick`` for a smoke run; ``--output PATH`` for the markdown file, default
``benchmarks/results/weighted_banzhaf.md``).

Li & Yu (NeurIPS 2023) value a point by the weighted Banzhaf value, each
other point in a coalition with probability ``w``, and argue that the weight
most robust to a noisy utility need not be Banzhaf's 1/2; Feldman & Zhang's
subsampled influence is ``w = 0.7``. ``msr_banzhaf(..., weight=w)`` estimates
any of them from the same kind of samples, so the weight is a free choice
worth measuring. The setting is the data_cleaning experiment's, small: breast
cancer split into 200 training and 200 test points (``make_problem``), 15% of
the training labels flipped, the test accuracy of logistic regression
(``make_game``); each problem seed seeds its split, its flips and the
estimator.

1. **Detection by weight and budget**: AUROC of flagging the lowest values
   (``detection_auroc``) at 5 N, 20 N and 80 N evaluations, for weights 0.1, 0.2,
   0.3, 0.5, 0.7 and 0.8, against random values (0.5 in expectation) and the
   Shapley value at the same budget (``permutation_shapley``, antithetic).
2. **With a noisy utility** (at 20 N): the accuracy plus Gaussian noise of
   standard deviation 0.02 or 0.05 (a retrained network's accuracy varies by
   about that much), a fixed function of the coalition (each is evaluated
   once, so this is what a noisy retraining gives the estimator).
3. **Seed-to-seed stability** (at 20 N, no noise): Spearman's rho between the
   values of two estimator seeds on the same problem, the sampling noise alone.

Each table gives mean ± standard error [min, max] over problem seeds, and
each weight's AUROC minus Banzhaf's (``w = 0.5``), paired by problem seed.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
import warnings

import numpy as np
from scipy.stats import spearmanr
from threadpoolctl import threadpool_limits

from _reference_games import log, mean_cell, parse_arguments, report_head, write_report  # the report: a sibling
from shapley_research import Game, msr_banzhaf, permutation_shapley
from shapley_research.experiments.data_cleaning import detection_auroc, make_game, make_problem

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(HERE, "results", "weighted_banzhaf.md")
WEIGHTS = (0.1, 0.2, 0.3, 0.5, 0.7, 0.8)
BANZHAF = 0.5
N_TRAIN = 200
SHAPLEY = "Shapley (antithetic permutation)"


class NoisyUtility(Game):
    """``U(S) + sigma z(S)``: ``z(S)`` standard normal, a fixed function of the coalition and ``seed``.

    A hash of the coalition's bits seeds each ``z``, so the game is a function
    (the same coalition always gets the same noise, whatever the order of the
    calls), as a retrained model's accuracy is to an estimator that evaluates
    each coalition once.
    """

    def __init__(self, game: Game, sigma: float, seed: int) -> None:
        self.game, self.sigma, self.seed = game, sigma, seed
        self.n_players = game.n_players

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        utilities = np.asarray(self.game.evaluate(masks), dtype=float)
        packed = np.packbits(masks, axis=1)
        noise = [np.random.default_rng([self.seed, int.from_bytes(hashlib.blake2b(row.tobytes(), digest_size=8)
                                                                  .digest(), "little")]).standard_normal()
                 for row in packed]
        return utilities + self.sigma * np.asarray(noise)


def values_of(game: Game, budget: int, seed: int, weight: float) -> np.ndarray:
    """MSR estimates at ``weight``; a player seen on one side only (rare at these budgets) keeps its 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return msr_banzhaf(game, budget, seed, weight=weight, progress=False).values


def auroc_table(columns: dict, problems) -> list[str]:
    """Rows by weight (and random values), one column per ``columns`` entry ``label -> (multiple, sigma)``:
    the detection AUROC over ``problems``, then each weight minus Banzhaf's, paired by problem."""
    aurocs: dict = {}
    for p in problems:
        problem = make_problem("breast_cancer", N_TRAIN, 200, 0.15, p)
        clean = make_game(problem)
        for label, (multiple, sigma) in columns.items():
            game = clean if sigma == 0 else NoisyUtility(clean, sigma, seed=p)
            for weight in (*WEIGHTS, SHAPLEY):
                log(f"  problem {p}: {label}, {weight} ...")
                values = (permutation_shapley(game, multiple * N_TRAIN, p, antithetic=True, progress=False).values
                          if weight == SHAPLEY else values_of(game, multiple * N_TRAIN, p, weight))
                aurocs.setdefault((weight, label), []).append(detection_auroc(values, problem["flipped"]))
        random = np.random.default_rng([p, 9_999]).normal(size=N_TRAIN)
        aurocs.setdefault(("random", ""), []).append(detection_auroc(random, problem["flipped"]))
    lines = ["| weight | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for weight in (*WEIGHTS, SHAPLEY):
        lines.append(f"| {weight} | " + " | ".join(mean_cell(aurocs[(weight, c)]) for c in columns) + " |")
    lines.append("| random values | " + " | ".join(mean_cell(aurocs[("random", "")]) for _ in columns) + " |")
    lines += ["", "Minus Banzhaf's (w = 0.5), paired by problem seed:", "",
              "| weight | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for weight in (*(w for w in WEIGHTS if w != BANZHAF), SHAPLEY):
        gaps = [np.subtract(aurocs[(weight, c)], aurocs[(BANZHAF, c)]) for c in columns]
        lines.append(f"| {weight} | " + " | ".join(mean_cell(g) for g in gaps) + " |")
    return lines


def stability_table(problems, multiple: int) -> list[str]:
    """Rows by weight: Spearman's rho between two estimator seeds' values on the same problem."""
    rhos: dict = {}
    for p in problems:
        game = make_game(make_problem("breast_cancer", N_TRAIN, 200, 0.15, p))
        for weight in WEIGHTS:
            log(f"  stability: problem {p}, weight {weight} ...")
            first, second = (values_of(game, multiple * N_TRAIN, seed, weight) for seed in (p, 1_000 + p))
            rhos.setdefault(weight, []).append(float(spearmanr(first, second)[0]))
    return ["| weight | rho between two seeds |", "|---|---|",
            *(f"| {w} | {mean_cell(rhos[w])} |" for w in WEIGHTS)]


def main(argv=None) -> int:
    args = parse_arguments(__doc__, DEFAULT_OUTPUT, argv)
    start = time.perf_counter()
    problems = range(2) if args.quick else range(8)
    budgets = {f"{t} N": (t, 0.0) for t in ((5, 20) if args.quick else (5, 20, 80))}
    noisy = {f"sigma = {s}": (20, s) for s in (0.0, 0.02, 0.05)}
    with threadpool_limits(1):
        by_budget, by_noise = auroc_table(budgets, problems), auroc_table(noisy, problems)
        stability = stability_table(problems, 20)
    return write_report([
        *report_head("Weighted Banzhaf values by their weight", args.quick), "",
        "Breast cancer, 200 training / 200 test points, 15% of training labels flipped, test accuracy of logistic "
        f"regression; `msr_banzhaf(game, budget, seed, weight=w)`; mean ± standard error [min, max] over "
        f"{len(problems)} problem seeds.", "",
        "1. Detection AUROC of flipped labels (lowest values first) by weight and budget.", "", *by_budget, "",
        "2. Detection AUROC at 20 N with Gaussian noise of standard deviation sigma added to each coalition's "
        "accuracy.", "", *by_noise, "",
        "3. Seed-to-seed stability at 20 N (no noise): Spearman's rho between two estimator seeds.", "",
        *stability, ""], start, args.output)


if __name__ == "__main__":
    sys.exit(main())
