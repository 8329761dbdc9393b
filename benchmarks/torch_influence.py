"""Koh & Liang influence values of an MLP against MSR Banzhaf, Data-OOB and random values: finding flipped labels.

Run ``python benchmarks/torch_influence.py`` (about a minute on 2 cores;
``--quick`` for a smoke run; ``--output PATH`` for the markdown file, default
``benchmarks/results/torch_influence.md``).

The mlp_cleaning setting at N = 200: breast cancer split into 200 training
and 200 test points (``make_problem``), 15% of the training labels flipped,
the game ``make_mlp_game`` with mlp_cleaning's recipe (``Linear(30, 16) -
ReLU - Linear(16, 2)``, 100 full-batch Adam steps at 0.01, weight decay
0.05, float32, test accuracy). ``torch_influence`` trains that model once
and values each point by its influence on the test cross-entropy, at the
damping 0.01 (Koh & Liang's; its Hessian is indefinite here: the 100 Adam
steps stop short of a minimum, so ``direct`` solves by LU with a warning and
CG refuses it), the default 0.1 and 1.0 (``direct`` and ``cg``); at 0.1 also the
approximate solvers ``lissa`` (1000 steps on all rows, and on minibatches of
32 rows) and ``arnoldi`` (rank 10 and 50), with each one's largest deviation
from ``direct``'s values relative to their largest magnitude. References: ``msr_banzhaf``
and ``data_oob`` at mlp_cleaning's budgets (4 N coalitions, 200 bagged
MLPs) and at about the influence's wall time (N / 2 coalitions, 20 bagged
MLPs), and random values. AUROC of flagging the lowest values
(``detection_auroc``), mean ± standard error [min, max] over 3 problem seeds
(each seeds its split, flips and MLP initialisation), and the wall time of
each call after one untimed warm-up call (torch.func's first use costs
seconds of imports).
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from _reference_games import log, mean_cell, parse_arguments, report_head, write_report  # the report: a sibling
from shapley_research import data_oob, msr_banzhaf, torch_influence
from shapley_research.experiments.data_cleaning import detection_auroc
from shapley_research.experiments.mlp_cleaning import make_mlp_game, make_problem

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(HERE, "results", "torch_influence.md")
#: mlp_cleaning's MLP recipe (conf/experiment/mlp_cleaning.yaml)
RECIPE = dict(hidden=16, steps=100, learning_rate=0.01, weight_decay=0.05, device="cpu", dtype="float32",
              chunk_size=None)


class _Values:
    """Random values: no model trained."""

    def __init__(self, values: np.ndarray):
        self.values, self.n_evaluations = values, 0


def influence(method: str, damping: float, **options):
    return lambda game, problem, n, seed: torch_influence(game, method=method, damping=damping, seed=seed, **options)


ESTIMATORS = {
    "random values": lambda game, problem, n, seed: _Values(np.random.default_rng([seed, 9_999]).normal(size=n)),
    "torch_influence direct, damping 0.01": influence("direct", 0.01),
    "torch_influence cg, damping 0.01": influence("cg", 0.01),
    "torch_influence direct, damping 0.1 (default)": influence("direct", 0.1),
    "torch_influence cg, damping 0.1 (default)": influence("cg", 0.1),
    "torch_influence lissa, damping 0.1, all rows, depth 1000": influence("lissa", 0.1),
    "torch_influence lissa, damping 0.1, batches of 32, depth 1000": influence("lissa", 0.1, lissa_batch_size=32),
    "torch_influence arnoldi, damping 0.1, rank 10": influence("arnoldi", 0.1, arnoldi_rank=10),
    "torch_influence arnoldi, damping 0.1, rank 50": influence("arnoldi", 0.1, arnoldi_rank=50),
    "torch_influence direct, damping 1.0": influence("direct", 1.0),
    "torch_influence cg, damping 1.0": influence("cg", 1.0),
    "msr_banzhaf, N / 2 coalitions": lambda game, problem, n, seed: msr_banzhaf(game, n // 2, seed, progress=False),
    "msr_banzhaf, 4 N coalitions": lambda game, problem, n, seed: msr_banzhaf(game, 4 * n, seed, progress=False),
    "data_oob, 20 bagged MLPs": lambda game, problem, n, seed: data_oob(
        game, problem["X_train"], problem["y_train"], n_estimators=20, seed=seed, progress=False),
    "data_oob, 200 bagged MLPs": lambda game, problem, n, seed: data_oob(
        game, problem["X_train"], problem["y_train"], n_estimators=200, seed=seed, progress=False),
}


#: the approximate solvers' reference: ``direct`` at the same damping
DIRECT = {label: "torch_influence direct, damping 0.1 (default)" for label in ESTIMATORS
          if label.startswith(("torch_influence lissa", "torch_influence arnoldi", "torch_influence cg, damping 0.1"))}


def warm_up() -> None:
    """One small untimed call of each method: torch.func's and the estimators' first-use costs."""
    problem = make_problem("breast_cancer", 40, 40, 0.15, 99)
    game = make_mlp_game(problem, {**RECIPE, "steps": 5}, 99)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for run in ESTIMATORS.values():
            try:
                run(game, problem, 40, 0)
            except ValueError:
                pass


def run_one(run, game, problem, n: int, seed: int) -> tuple[object, float, str]:
    """The result (None if refused), the seconds, and a note: the warnings or the refusal."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            result = run(game, problem, n, seed)
        except ValueError as error:
            return None, time.perf_counter() - start, f"refused: {str(error).split(': ')[1]}"
    notes = {str(w.message).split(": ")[1] for w in caught if issubclass(w.category, RuntimeWarning)}
    return result, time.perf_counter() - start, "; ".join(sorted(notes))


def detection(problems, n_train: int = 200) -> dict:
    """``label -> {"auroc": {problem: AUROC}, "time": [...], "fits": [...], "notes": [...], "deviation": [...]}``
    (``deviation``: ``max |v - v_direct| / max |v_direct|`` for the labels of :data:`DIRECT`)."""
    cells: dict = {}
    for p in problems:
        problem = make_problem("breast_cancer", n_train, 200, 0.15, p)
        game = make_mlp_game(problem, RECIPE, p)
        values = {}
        for label, run in ESTIMATORS.items():
            log(f"  problem {p}: {label} ...")
            entry = cells.setdefault(label, {"auroc": {}, "time": [], "fits": [], "notes": [], "deviation": []})
            result, seconds, note = run_one(run, game, problem, n_train, p)
            entry["time"].append(seconds)
            if note:
                entry["notes"].append(f"seed {p}: {note}")
            if result is not None:
                values[label] = result.values
                entry["auroc"][p] = detection_auroc(result.values, problem["flipped"])
                entry["fits"].append(result.n_evaluations)
        for label, reference in DIRECT.items():
            if label in values and reference in values:
                scale = np.abs(values[reference]).max()
                cells[label]["deviation"].append(np.abs(values[label] - values[reference]).max() / scale)
    return cells


def table(cells: dict) -> list[str]:
    lines = ["| method | models trained | AUROC | wall time s | deviation from direct |", "|---|---|---|---|---|"]
    for label, e in cells.items():
        fits = "-" if not e["fits"] else str(e["fits"][0])
        deviation = f"{max(e['deviation']):.1e}" if e.get("deviation") else "-"
        lines.append(f"| {label} | {fits} | {mean_cell(list(e['auroc'].values()))} | {mean_cell(e['time'], 2)} | "
                     f"{deviation} |")
    return lines


def notes(cells: dict) -> list[str]:
    return [f"- {label}: {note}" for label, e in cells.items() for note in e["notes"]]


def main(argv=None) -> int:
    args = parse_arguments(__doc__, DEFAULT_OUTPUT, argv)
    start = time.perf_counter()
    problems = range(1) if args.quick else range(3)
    with threadpool_limits(1):
        warm_up()
        cells = detection(problems)
    lines = report_head("Influence values of an MLP against MSR Banzhaf, Data-OOB and random values", args.quick) + [
        "", "Detecting flipped labels: breast cancer, 200 training / 200 test points, 15% of training labels flipped, "
        "mlp_cleaning's MLP game (Linear(30, 16) - ReLU - Linear(16, 2), 100 full-batch Adam steps at 0.01, weight "
        "decay 0.05, float32, test accuracy); AUROC of flagging the lowest values (mean ± standard error [min, max] "
        f"over {len(problems)} problem seeds; random values: 0.5 in expectation). Models trained: the influence "
        "trains the full-set model once; coalitions for msr_banzhaf, bagged models for data_oob. Wall time after an "
        "untimed warm-up call of every method. Deviation from direct: the largest over the seeds of "
        "max |v - v_direct| / max |v_direct|, against direct at the same damping (0.1); lissa and arnoldi draw from "
        "the problem seed.", ""]
    lines += table(cells) + ["", "Warnings and refusals:", ""] + (notes(cells) or ["- none"]) + [""]
    return write_report(lines, start, args.output)


if __name__ == "__main__":
    sys.exit(main())
