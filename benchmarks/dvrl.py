"""DVRL against MSR Banzhaf, Data-OOB and random values: detecting flipped labels at equal model fits.

Run ``python benchmarks/dvrl.py`` (about a minute on 2 cores; ``--quick``
for a smoke run; ``--output PATH`` for the markdown file, default
``benchmarks/results/dvrl.md``).

The data_cleaning setting, small: breast cancer split into 200 training and
200 test points (``make_problem``), 15% of the training labels flipped, the
test accuracy of logistic regression as the utility (``make_game``:
``ModelUtility(..., fast=True)``). Each method gets the same number of model
fits, 10 N and 20 N: ``dvrl`` spends them as utility evaluations (its
default value network, and three variants: without the marginal signal, a
logistic estimator, the paper's moving-average baseline), ``msr_banzhaf``
likewise, ``data_oob`` as bagged models (``fast=True``). Two references
spend no budget: random values (0.5 in expectation) and the marginal signal
alone, the input column of DVRL's default features that compares each label
with a model fitted on the test set (one fit): how much of DVRL's detection
its input already holds. AUROC of flagging the lowest values
(``detection_auroc``), mean ± standard error [min, max] over 3 problem seeds
(each seeds its split, its flips and the estimators), and the wall time of
each call.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from _reference_games import log, mean_cell, parse_arguments, report_head, write_report  # the report: a sibling
from shapley_research import data_oob, dvrl, msr_banzhaf
from shapley_research.estimators import dvrl_features
from shapley_research.experiments.data_cleaning import detection_auroc, make_game, make_problem

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(HERE, "results", "dvrl.md")
COMMON = dict(progress=False)


class _Values:
    """What a reference without a budget returns: values and the evaluations they took."""

    def __init__(self, values: np.ndarray, n_evaluations: int):
        self.values, self.n_evaluations = values, n_evaluations


def random_values(game, problem, budget: int, seed: int) -> _Values:
    return _Values(np.random.default_rng([seed, 9_999]).normal(size=game.n_players), 0)


def marginal_alone(game, problem, budget: int, seed: int) -> _Values:
    """Minus the marginal signal |onehot(y) - f_test(x)| (summed over the classes): DVRL's input column alone."""
    raw = dvrl_features(game)  # standardised columns: x (30), one-hot y (2), marginal (2)
    return _Values(-raw[:, -2:].sum(axis=1), 0)


ESTIMATORS = {
    "random values": random_values,
    "marginal signal alone (1 fit)": marginal_alone,
    "dvrl (default: MLP (100,), marginal)": lambda g, p, b, s: dvrl(g, b, s, **COMMON),
    "dvrl (marginal=False)": lambda g, p, b, s: dvrl(g, b, s, marginal=False, **COMMON),
    "dvrl (hidden=(), logistic)": lambda g, p, b, s: dvrl(g, b, s, hidden=(), **COMMON),
    "dvrl (baseline=moving_average)": lambda g, p, b, s: dvrl(g, b, s, baseline="moving_average", **COMMON),
    "msr_banzhaf": lambda g, p, b, s: msr_banzhaf(g, b, s, **COMMON),
    "data_oob (fast, B = budget)": lambda g, p, b, s: data_oob(g.model, p["X_train"], p["y_train"], n_estimators=b,
                                                               seed=s, fast=True, **COMMON),
}
NO_BUDGET = ("random values", "marginal signal alone (1 fit)")


def detection(problems, multiples, n_train: int = 200) -> dict:
    """``(label, multiple) -> {"auroc": {problem: AUROC}, "time": [...], "spent": [...]}``."""
    cells: dict = {}
    for p in problems:
        problem = make_problem("breast_cancer", n_train, 200, 0.15, p)
        game = make_game(problem)
        for label, run in ESTIMATORS.items():
            for t in multiples[:1] if label in NO_BUDGET else multiples:
                log(f"  problem {p}: {label}, {t} N ...")
                entry = cells.setdefault((label, t), {"auroc": {}, "time": [], "spent": []})
                start = time.perf_counter()
                result = run(game, problem, t * n_train, p)
                entry["time"].append(time.perf_counter() - start)
                entry["auroc"][p] = detection_auroc(result.values, problem["flipped"])
                entry["spent"].append(result.n_evaluations)
    return cells


def table(cells: dict) -> list[str]:
    lines = ["| method | model fits | AUROC | wall time s |", "|---|---|---|---|"]
    for (label, t), e in cells.items():
        fits = "-" if label == "random values" else "1" if label in NO_BUDGET else f"{t} N ({e['spent'][0]})"
        lines.append(f"| {label} | {fits} | {mean_cell(list(e['auroc'].values()))} | {mean_cell(e['time'], 2)} |")
    return lines


def paired(cells: dict, multiples, method: str = "dvrl (default: MLP (100,), marginal)") -> list[str]:
    """The default DVRL's AUROC minus each budgeted reference's, paired by problem."""
    lines = []
    for t in multiples:
        mine = cells[(method, t)]["auroc"]
        for other in ("msr_banzhaf", "data_oob (fast, B = budget)", "dvrl (marginal=False)"):
            theirs = cells[(other, t)]["auroc"]
            lines.append(f"- {t} N: default dvrl minus {other}: "
                         f"{mean_cell([mine[p] - theirs[p] for p in mine])}")
        marginal = cells[("marginal signal alone (1 fit)", multiples[0])]["auroc"]
        lines.append(f"- {t} N: default dvrl minus the marginal signal alone: "
                     f"{mean_cell([mine[p] - marginal[p] for p in mine])}")
    return lines


def main(argv=None) -> int:
    args = parse_arguments(__doc__, DEFAULT_OUTPUT, argv)
    start = time.perf_counter()
    problems, multiples = (range(1), [5]) if args.quick else (range(3), [10, 20])
    with threadpool_limits(1):
        cells = detection(problems, multiples)
    lines = report_head("DVRL against MSR Banzhaf, Data-OOB and random values", args.quick) + [
        "", "Detecting flipped labels: breast cancer, 200 training / 200 test points, 15% of training labels "
        "flipped, test accuracy of logistic regression; AUROC of flagging the lowest values (mean ± standard "
        f"error [min, max] over {len(problems)} problem seeds; random values: 0.5 in expectation). Model fits: "
        "utility evaluations for dvrl and msr_banzhaf, bagged models for data_oob.", ""]
    lines += table(cells) + ["", "Paired by problem seed:", ""] + paired(cells, multiples) + [""]
    return write_report(lines, start, args.output)


if __name__ == "__main__":
    sys.exit(main())
