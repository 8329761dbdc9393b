"""Weighted Banzhaf values by their weight: noisy-label detection, with and without noise in the utility.

Run ``python benchmarks/weighted_banzhaf.py`` (about 10.5 minutes on one core;
``--quick`` for a smoke run; ``--output PATH`` for the markdown file, default
``benchmarks/results/weighted_banzhaf.md``).

Li & Yu (NeurIPS 2023) value a point by the weighted Banzhaf value, each
other point in a coalition with probability ``w``, and argue that the weight
most robust to a noisy utility need not be Banzhaf's 1/2; Feldman & Zhang's
subsampled influence is ``w = 0.7``. ``msr_banzhaf(..., weight=w)`` estimates
any of them from the same kind of samples, so the weight is a free choice
worth measuring. The setting of sections 1-3 is the data_cleaning
experiment's, small: breast cancer split into 200 training and 200 test
points (``make_problem``), 15% of the training labels flipped, the test
accuracy of logistic regression (``make_game``); each problem seed seeds its
split, its flips and the estimator.

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
4. **Other tasks**, section 1's protocol on other data and models, all
   offline: the KNN utility (K = 10, no training) on the same breast cancer
   problems and on digits 3 vs 8 (data_cleaning's second data set, 200
   training / 150 test points), logistic regression on digits, and
   mlp_cleaning's MLP (``TorchModelUtility``, 150 / 150 breast cancer points);
   80 N only where the game is cheap (KNN), 6 problem seeds.
5. **Every task at 20 N**: w = 0.1, Banzhaf and Shapley side by side.

Each table gives mean ± standard error [min, max] over problem seeds, and
each weight's AUROC minus Banzhaf's (``w = 0.5``), paired by problem seed.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
import warnings

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.stats import spearmanr
from threadpoolctl import threadpool_limits

from _reference_games import log, mean_cell, parse_arguments, report_head, write_report  # the report: a sibling
from shapley_research import Game, KNNUtility, msr_banzhaf, permutation_shapley
from shapley_research.experiments.data_cleaning import detection_auroc, make_game, make_problem

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(HERE, "results", "weighted_banzhaf.md")
WEIGHTS = (0.1, 0.2, 0.3, 0.5, 0.7, 0.8)
BANZHAF = 0.5
N_TRAIN = 200
SHAPLEY = "Shapley (antithetic permutation)"
FLIPPED = 0.15  # the share of training labels flipped, every task
KNN_K = 10  # data_cleaning's K of KNN-Shapley
OTHER_SEEDS = 6  # problem seeds of section 4 (8 there would take about 2 minutes more on 2 cores)
DATA_NAMES = {"breast_cancer": "breast cancer", "digits": "digits 3 vs 8"}


class Task(NamedTuple):
    """A detection task: its name, its number of training points and ``problem seed -> (game, flipped)``."""

    label: str
    n_train: int
    build: Callable[[int], tuple[Game, np.ndarray]]


def logistic_task(dataset: str, n_train: int, n_test: int) -> Task:
    """data_cleaning's problem of ``dataset`` (split, standardised features, flips: ``make_problem``) and game:
    the test accuracy of logistic regression (``make_game``)."""
    def build(p: int) -> tuple[Game, np.ndarray]:
        problem = make_problem(dataset, n_train, n_test, FLIPPED, p)
        return make_game(problem), problem["flipped"]

    return Task(f"{DATA_NAMES[dataset]}, logistic regression", n_train, build)


def knn_task(dataset: str, n_train: int, n_test: int) -> Task:
    """The same problems as :func:`logistic_task`; the game is ``KNNUtility`` (K = 10): the mean share of each
    test point's K nearest coalition points that carry its label (no model is trained)."""
    def build(p: int) -> tuple[Game, np.ndarray]:
        problem = make_problem(dataset, n_train, n_test, FLIPPED, p)
        return (KNNUtility(problem["X_train"], problem["y_train"], problem["X_test"], problem["y_test"], KNN_K),
                problem["flipped"])

    return Task(f"{DATA_NAMES[dataset]}, KNN (K = {KNN_K})", n_train, build)


def mlp_task(n_train: int, n_test: int) -> Task:
    """mlp_cleaning's game on breast cancer: its problems (data_cleaning's) and its MLP (16 hidden ReLUs, 100
    full-batch Adam steps from initial parameters drawn from the problem seed, weight decay 0.05)."""
    from shapley_research.experiments import mlp_cleaning

    def build(p: int) -> tuple[Game, np.ndarray]:
        problem = mlp_cleaning.make_problem("breast_cancer", n_train, n_test, FLIPPED, p)
        return mlp_cleaning.make_mlp_game(problem, mlp_cleaning.DEFAULT_OPTIONS, seed=p), problem["flipped"]

    return Task("breast cancer, MLP (mlp_cleaning's)", n_train, build)


#: The task of sections 1-3 (data_cleaning's setting, small).
BREAST_CANCER = logistic_task("breast_cancer", N_TRAIN, 200)


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


#: ``(task, n_train, problem, multiple, sigma, weight) -> values``: a run repeated in another section (section 2's
#: sigma = 0, section 3's first seed are section 1's runs) is computed once; each is a function of its key.
_VALUES: dict = {}


def task_values(task: Task, p: int, game: Game, column: tuple[int, float], weight) -> np.ndarray:
    """The values at ``weight`` (or antithetic permutation Shapley) of problem ``p``'s ``game``, budget
    ``multiple * N`` and estimator seed ``p``, ``column`` being ``(multiple, sigma)``; computed once per key."""
    key = (task.label, task.n_train, p, *column, weight)
    if key not in _VALUES:
        log(f"  {task.label}, problem {p}: {column}, {weight} ...")
        budget = column[0] * task.n_train
        _VALUES[key] = (permutation_shapley(game, budget, p, antithetic=True, progress=False).values
                        if weight == SHAPLEY else values_of(game, budget, p, weight))
    return _VALUES[key]


def detection_aurocs(task: Task, columns: dict, problems) -> dict:
    """``{(weight, column): [AUROC per problem]}`` on ``task``, ``columns`` ``label -> (multiple, sigma)``,
    plus ``("random", "")``: random values, the trivial baseline (0.5 in expectation)."""
    aurocs: dict = {}
    for p in problems:
        clean, flipped = task.build(p)
        for label, (multiple, sigma) in columns.items():
            game = clean if sigma == 0 else NoisyUtility(clean, sigma, seed=p)
            for weight in (*WEIGHTS, SHAPLEY):
                values = task_values(task, p, game, (multiple, sigma), weight)
                aurocs.setdefault((weight, label), []).append(detection_auroc(values, flipped))
        random = np.random.default_rng([p, 9_999]).normal(size=task.n_train)
        aurocs.setdefault(("random", ""), []).append(detection_auroc(random, flipped))
    return aurocs


def auroc_lines(aurocs: dict, columns) -> list[str]:
    """Rows by weight (and random values), one column per entry of ``columns``; then each weight minus
    Banzhaf's, paired by problem."""
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


def auroc_table(task: Task, columns: dict, problems) -> list[str]:
    """:func:`auroc_lines` of :func:`detection_aurocs`: the AUROC by weight, then each weight minus Banzhaf's."""
    return auroc_lines(detection_aurocs(task, columns, problems), columns)


def stability_table(problems, multiple: int, task: Task = BREAST_CANCER) -> list[str]:
    """Rows by weight: Spearman's rho between two estimator seeds' values on the same problem."""
    rhos: dict = {}
    for p in problems:
        game = task.build(p)[0]
        for weight in WEIGHTS:
            log(f"  stability: problem {p}, weight {weight} ...")
            first = task_values(task, p, game, (multiple, 0.0), weight)
            second = values_of(game, multiple * task.n_train, 1_000 + p, weight)
            rhos.setdefault(weight, []).append(float(spearmanr(first, second)[0]))
    return ["| weight | rho between two seeds |", "|---|---|",
            *(f"| {w} | {mean_cell(rhos[w])} |" for w in WEIGHTS)]


def other_tasks(quick: bool) -> list[tuple[Task, tuple[int, ...]]]:
    """Section 4's tasks, each with its budgets (multiples of N): 80 N only where the game is cheap (KNN)."""
    tasks = [(knn_task("breast_cancer", N_TRAIN, 200), (5, 20, 80)), (knn_task("digits", N_TRAIN, 150), (5, 20, 80)),
             (logistic_task("digits", N_TRAIN, 150), (5, 20)), (mlp_task(150, 150), (5, 20))]
    return [(task, multiples[:2] if quick else multiples) for task, multiples in tasks]


SUMMARY_HEAD = ["| task | w = 0.1 | Banzhaf (w = 0.5) | Shapley | random values | w = 0.1 minus Banzhaf | "
                "Shapley minus Banzhaf |", "|---|---|---|---|---|---|---|"]


def summary_row(task: Task, aurocs: dict) -> str:
    """One task at 20 N: w = 0.1, Banzhaf, Shapley, random values, then w = 0.1's and Shapley's paired gaps."""
    at_20 = {w: aurocs[(w, "20 N")] for w in (0.1, BANZHAF, SHAPLEY)}
    return (f"| {task.label} | " + " | ".join(mean_cell(a) for a in at_20.values())
            + f" | {mean_cell(aurocs[('random', '')])} | "
            + " | ".join(mean_cell(np.subtract(at_20[w], at_20[BANZHAF])) for w in (0.1, SHAPLEY)) + " |")


def task_sections(tasks, problems) -> tuple[list[str], list[str]]:
    """Section 4 (a table per task of ``tasks``, ``(task, multiples)`` pairs) and its summary rows."""
    lines, summary = [], []
    for task, multiples in tasks:
        columns = {f"{t} N": (t, 0.0) for t in multiples}
        aurocs = detection_aurocs(task, columns, problems)
        lines += [f"**{task.label}**, {task.n_train} training points.", "", *auroc_lines(aurocs, columns), ""]
        summary.append(summary_row(task, aurocs))
    return lines, summary


def main(argv=None) -> int:
    args = parse_arguments(__doc__, DEFAULT_OUTPUT, argv)
    start = time.perf_counter()
    problems, other_problems = (range(2), range(2)) if args.quick else (range(8), range(OTHER_SEEDS))
    budgets = {f"{t} N": (t, 0.0) for t in ((5, 20) if args.quick else (5, 20, 80))}
    noisy = {f"sigma = {s}": (20, s) for s in (0.0, 0.02, 0.05)}
    with threadpool_limits(1):
        first = detection_aurocs(BREAST_CANCER, budgets, problems)
        by_budget, by_noise = auroc_lines(first, budgets), auroc_table(BREAST_CANCER, noisy, problems)
        stability = stability_table(problems, 20)
        others, summary = task_sections(other_tasks(args.quick), other_problems)
    return write_report([
        *report_head("Weighted Banzhaf values by their weight", args.quick), "",
        "Breast cancer, 200 training / 200 test points, 15% of training labels flipped, test accuracy of logistic "
        f"regression; `msr_banzhaf(game, budget, seed, weight=w)`; mean ± standard error [min, max] over "
        f"{len(problems)} problem seeds.", "",
        "1. Detection AUROC of flipped labels (lowest values first) by weight and budget.", "", *by_budget, "",
        "2. Detection AUROC at 20 N with Gaussian noise of standard deviation sigma added to each coalition's "
        "accuracy.", "", *by_noise, "",
        "3. Seed-to-seed stability at 20 N (no noise): Spearman's rho between two estimator seeds.", "",
        *stability, "",
        f"4. Other tasks, section 1's protocol (15% of training labels flipped, estimator seed = problem seed, "
        f"{len(other_problems)} problem seeds; the utility: test accuracy, or for KNN the mean "
        "share of each test point's K nearest coalition points that carry its label): the detection AUROC by weight "
        "and budget, then minus Banzhaf's.", "",
        *others,
        f"5. Every task at 20 N (the first row is sections 1-3's task, {len(problems)} problem seeds; the others "
        f"{len(other_problems)}): w = 0.1, Banzhaf and Shapley, and the paired gaps.", "",
        *SUMMARY_HEAD,
        summary_row(BREAST_CANCER, first), *summary, ""],
        start, args.output)


if __name__ == "__main__":
    sys.exit(main())
