"""Data Utility Learning against sampling the real game, at equal numbers of real utility evaluations.

Run ``python benchmarks/data_utility_learning.py`` (about 5 minutes on 2 cores;
``--quick`` for a smoke run of a few seconds; ``--output PATH`` for the
markdown file, default ``benchmarks/results/data_utility_learning.md``).

For each budget ``B`` of real evaluations, seed by seed:

* **real**: ``permutation_shapley(game, B, seed)`` and ``msr_banzhaf(game, B,
  seed)`` on the real game;
* **DUL (MLP)**: ``learn_utility(game, B, seed=seed)`` (the default regressor,
  an MLP on the indicator vector; coalition sizes uniform), then the same two
  estimators on the learned game with a large budget (``LEARNED_MULTIPLE x N``
  evaluations, which cost predictions only);
* **DUL (ridge)**: the same with ``RidgeCV``: an additive learned game, whose
  Shapley and Banzhaf values are the ridge coefficients.

Games: the KNN utility (K = 5) on scikit-learn's breast cancer data, 200
training points with 15% of their labels flipped (``cleaning_comparison.py``'s
data, seed 0), the 369 others as test set, exact Shapley values by
``knn_shapley``; the test accuracy of logistic regression on the same kind of
data (the data_cleaning game: ``make_problem("breast_cancer", 200, 200, 0.15,
0)`` and ``make_game``), whose Shapley reference is antithetic permutation
sampling with ``REFERENCE_MULTIPLE x N`` evaluations (its relative standard
error is printed); and the airport game (N = 100, Shapley values in closed
form). The Banzhaf reference is ``msr_banzhaf`` on the real game with
``REFERENCE_MULTIPLE x N`` evaluations (its own relative standard error is
printed). Measured: the relative error ``||v_hat - v|| / ||v||`` against the
reference, and on the KNN task the AUROC of finding the flipped labels by lowest
value. Trivial baselines alongside: the best constant vector for the error (the
reference's mean to everyone; for the Shapley value, uniform division
``(U(D) - U(empty)) / N``), random values for the AUROC.
Cells: mean over seeds [min, max].
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from _reference_games import log, parse_arguments, report_head, write_report
from cleaning_comparison import corrupted_breast_cancer, detection
from _games import AirportGame
from shapley_research import KNNUtility, knn_shapley, msr_banzhaf, permutation_shapley
from shapley_research.experiments.data_cleaning import make_game, make_problem
from shapley_research.utilities import learn_utility

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(HERE, "results", "data_utility_learning.md")
LEARNED_MULTIPLE = 200  # evaluations of the learned game: 200 N (200 permutations)
REFERENCE_MULTIPLE = 500  # the sampled references on the real game (MSR Banzhaf, logistic's Shapley): 500 N
METHODS = ("real", "DUL (MLP)", "DUL (ridge)")
ESTIMATORS = {"Shapley (permutation)": permutation_shapley, "Banzhaf (MSR)": msr_banzhaf}


def ridge():
    from sklearn.linear_model import RidgeCV

    return RidgeCV(alphas=np.logspace(-3, 3, 13))


def reference_games(quick: bool) -> list[dict]:
    """``{"name", "game", "shapley", "flipped"}`` per task (``flipped`` None where no label is noisy)."""
    n_train = 60 if quick else 200
    data = corrupted_breast_cancer(0, n_train=n_train)
    n_test = 60 if quick else data["y_test"].size
    X_test, y_test = data["X_test"][:n_test], data["y_test"][:n_test]
    knn = KNNUtility(data["X_train"], data["y_train"], X_test, y_test, 5)
    exact = knn_shapley(data["X_train"], data["y_train"], X_test, y_test, 5).values
    airport = AirportGame(30 if quick else 100, seed=1)
    return [{"name": f"KNN, breast cancer N = {n_train}, 15% flipped", "game": knn, "shapley": exact,
             "flipped": data["flipped"]},
            logistic_task(n_train, 60 if quick else 200),
            {"name": f"airport, N = {airport.n_players}", "game": airport, "shapley": airport.shapley_values(),
             "flipped": None}]


def logistic_task(n_train: int, n_test: int) -> dict:
    """The data_cleaning game (logistic regression's test accuracy, 15% of training labels flipped) with a
    sampled Shapley reference: antithetic permutation sampling, ``REFERENCE_MULTIPLE x N`` evaluations."""
    problem = make_problem("breast_cancer", n_train, n_test, 0.15, 0)
    game = make_game(problem)
    log(f"  logistic regression, N = {n_train}: Shapley reference ...")
    reference = permutation_shapley(game, REFERENCE_MULTIPLE * n_train, 54321, antithetic=True, progress=False)
    return {"name": f"logistic regression, breast cancer N = {n_train}, 15% flipped", "game": game,
            "shapley": reference.values, "flipped": problem["flipped"],
            "shapley_rse": np.linalg.norm(reference.stderr) / np.linalg.norm(reference.values)}


def values_of(method: str, estimator, game, budget: int, seed: int, learned_games: dict | None = None
              ) -> tuple[np.ndarray, dict]:
    """Values of ``estimator`` by ``method`` at ``budget`` real evaluations, and what the run measured.

    ``learned_games`` keeps each learned game by ``(method, budget, seed)``, so both estimators value the same one.
    """
    if method == "real":
        result = estimator(game, budget, seed, progress=False)
        return result.values, {"real": result.n_evaluations}
    learned_games = {} if learned_games is None else learned_games
    if (method, budget, seed) not in learned_games:
        learned_games[method, budget, seed] = learn_utility(game, budget, None if method == "DUL (MLP)" else ridge(),
                                                            seed=seed, progress=False)
    learned = learned_games[method, budget, seed]
    result = estimator(learned, LEARNED_MULTIPLE * game.n_players, seed, progress=False)
    quality = learned.fit_quality
    return result.values, {"real": learned.n_real_evaluations, "r2": quality.r2 if quality else np.nan}


def measure(task: dict, budgets, seeds, methods=METHODS) -> dict:
    """``(estimator, method) -> {"error", "auroc", "r2", "real"}``, each a ``(budgets, seeds)`` array."""
    game, n = task["game"], task["game"].n_players
    banzhaf = msr_banzhaf(game, REFERENCE_MULTIPLE * n, 12345, progress=False)
    task["banzhaf"], task["banzhaf_rse"] = banzhaf.values, np.linalg.norm(banzhaf.stderr) / np.linalg.norm(
        banzhaf.values)
    table: dict = {}
    learned_games: dict = {}
    for label, estimator in ESTIMATORS.items():
        truth = task["shapley"] if label.startswith("Shapley") else task["banzhaf"]
        for method in methods:
            cells = {key: np.full((len(budgets), len(seeds)), np.nan) for key in ("error", "auroc", "r2", "real")}
            for b, budget in enumerate(budgets):
                log(f"  {task['name']}: {label}, {method}, {budget} real evaluations ...")
                for s, seed in enumerate(seeds):
                    values, seen = values_of(method, estimator, game, budget, seed, learned_games)
                    cells["error"][b, s] = np.linalg.norm(values - truth) / np.linalg.norm(truth)
                    if task["flipped"] is not None:
                        cells["auroc"][b, s] = detection(values, task["flipped"])[0]
                    for key, value in seen.items():
                        cells[key][b, s] = value
            table[label, method] = cells
    return table


def baselines(task: dict, seeds) -> dict:
    """The trivial baselines: the best constant's relative error (the reference's mean to everyone; for the
    Shapley value that is uniform division, ``(U(D) - U(empty)) / N``) and random values' AUROC."""
    out = {label: np.linalg.norm(truth.mean() - truth) / np.linalg.norm(truth)
           for label, truth in (("Shapley (permutation)", task["shapley"]), ("Banzhaf (MSR)", task["banzhaf"]))}
    if task["flipped"] is not None:
        rng = np.random.default_rng(0)
        out["auroc"] = np.array([detection(rng.standard_normal(task["flipped"].size), task["flipped"])[0]
                                 for _ in seeds])
    return out


def cell(values: np.ndarray, digits: int = 3) -> str:
    """``mean [min, max]`` of the finite entries, ``-`` if none."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return "-"
    if finite.size == 1:
        return f"{finite[0]:.{digits}f}"
    return f"{finite.mean():.{digits}f} [{finite.min():.{digits}f}, {finite.max():.{digits}f}]"


def rows(name: str, table: dict, key: str, budgets) -> list[str]:
    """Markdown rows of one measurement ``key``: one per (estimator, method), one column per budget."""
    return [f"| {name} | {label} | {method} | " + " | ".join(cell(table[label, method][key][b])
                                                            for b in range(len(budgets))) + " |"
            for (label, method) in table]


def header(budgets) -> list[str]:
    return ["| game | estimator | method | " + " | ".join(f"{b:,} real evaluations" for b in budgets) + " |",
            "|---" * (3 + len(budgets)) + "|"]


def run(quick: bool) -> list[str]:
    seeds = range(1) if quick else range(3)
    errors, aurocs, fits, notes = [], [], [], []
    for task in reference_games(quick):
        n = task["game"].n_players
        budgets = [2 * n] if quick else [2 * n, 5 * n, 10 * n, 25 * n]
        table = measure(task, budgets, seeds)
        base = baselines(task, seeds)
        errors += ["", f"**{task['name']}**", "", *header(budgets), *rows(task["name"], table, "error", budgets)]
        errors += [f"| {task['name']} | {label} | constant: the reference's mean (trivial) | "
                   + " | ".join([f"{base[label]:.3f}"] * len(budgets)) + " |" for label in ESTIMATORS]
        fits += ["", f"**{task['name']}**", "", *header(budgets),
                 *[r for r in rows(task["name"], table, "r2", budgets) if "DUL" in r and "Shapley" in r]]
        notes.append(f"- {task['name']}: Banzhaf reference = MSR on the real game, {REFERENCE_MULTIPLE} N "
                     f"evaluations, relative standard error {task['banzhaf_rse']:.3f}."
                     + (f" Shapley reference = antithetic permutation sampling, {REFERENCE_MULTIPLE} N evaluations, "
                        f"relative standard error {task['shapley_rse']:.3f}." if "shapley_rse" in task else ""))
        if task["flipped"] is not None:
            aurocs += ["", *header(budgets), *rows(task["name"], table, "auroc", budgets),
                       f"| {task['name']} | - | random values (trivial) | "
                       + " | ".join([cell(base["auroc"])] * len(budgets)) + " |"]
    return [f"1. Relative error ||v_hat - v|| / ||v|| against the reference, mean [min, max] over "
            f"{len(seeds)} seed(s).", *errors, "", *notes, "",
            "2. AUROC of finding the flipped labels by lowest value (the KNN and logistic tasks), mean [min, max] "
            "over the seeds.",
            *aurocs, "", "3. Held-out R^2 of the learned utility (20% of the sample held out; the same learned "
            "game serves both estimators).", *fits, ""]


def main(argv=None) -> int:
    args = parse_arguments(__doc__, DEFAULT_OUTPUT, argv)
    start = time.perf_counter()
    with threadpool_limits(1):
        lines = run(args.quick)
    return write_report([*report_head("Data Utility Learning against sampling the real game, at equal real "
                                      "evaluations", args.quick), "", *lines], start, args.output)


if __name__ == "__main__":
    sys.exit(main())
