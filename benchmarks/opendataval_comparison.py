"""Side-by-side benchmark against OpenDataVal 1.3.0: finding flipped labels on its own task, at equal model fits.

Run ``PYTHONPATH=$PWD python benchmarks/opendataval_comparison.py`` (7
minutes on 2 quiet cores, 31 under a load average of 7 to 12; the peer's AME and
class-wise Shapley on digits the longest; ``--quick`` for a
smoke run: one seed, 100 training and 50 validation points, small budgets,
about 2 minutes; ``--methods tmc,loo`` and ``--datasets digits`` select a
subset; ``--output PATH`` for the markdown file, default
``benchmarks/results/opendataval_comparison.md``). OpenDataVal pins torch 2.1
and numpy < 2 and imports only with ``transformers~=4.35.0``, so it lives in a
virtual environment of its own, outside the repository (nothing of it is
committed; the pip install takes minutes and downloads a few GB of CUDA
wheels)::

    python -m venv ../odv-venv          # from the repository root: a sibling folder
    ../odv-venv/bin/pip install "opendataval==1.3.0" "transformers~=4.35.0"

The script finds that interpreter at ``../odv-venv/bin/python`` from the
repository root (``--peer-python`` or ``$OPENDATAVAL_PYTHON`` elsewhere) and
runs ``benchmarks/_opendataval_peer.py`` with it, one process per data set;
the two sides exchange data and values through ``.npz``/``.json`` files in a
temporary folder. BLAS/OpenMP on one thread on both sides
(``OMP/MKL/OPENBLAS_NUM_THREADS=1`` and ``torch.set_num_threads(1)`` there,
``threadpoolctl`` here).

*The task is OpenDataVal's.* Per data set (``breast_cancer``: 30 features
min-max scaled, 2 classes; ``digits``: 64 pixel features, 10 classes) and seed
``s``: ``DataFetcher.setup(name, random_state=s, train_count=300,
valid_count=100, test_count=0, add_noise=mix_labels, noise_kwargs={"noise_rate":
0.15})``, which splits the data and flips 15% of the training labels (45) and
of the validation labels to another class. Both sides value the very same
points: the peer saves the covariates its models see (float32), the labels and
``noisy_train_indices``. Model: scikit-learn's ``LogisticRegression()`` with
its defaults, ``sklogreg`` there and ``ModelUtility(LogisticRegression(), ...,
metric="accuracy", fast="auto")`` here (the library picks the route, batched
learner or one scikit-learn fit per coalition, as a user would get it);
utility: accuracy on the 100 validation points.

*Methods* (OpenDataVal's evaluator / ours):

* TMC Shapley: ``DataShapley(sampler=TMCSampler(mc_epochs=T))`` (its
  truncation: stop a permutation after 10 consecutive contributions below
  1e-8 of the running sum, permutations start at 5 points) /
  ``permutation_shapley(game, budget, seed, truncation=0.01)`` (stop at the
  first prefix within 1% of ``U(D)``);
* Beta(16, 1) Shapley: ``BetaShapley(sampler=TMCSampler(mc_epochs=T),
  alpha=16, beta=1)`` (its TMC marginal contributions, weighted by size) /
  ``beta_shapley(game, budget, seed, alpha=16, beta=1)``;
* Banzhaf: ``DataBanzhaf(num_models=M)`` (maximum sample reuse) /
  ``msr_banzhaf(game, budget, seed)``;
* Data-OOB: ``DataOob(num_models=B)`` / ``data_oob(LogisticRegression(), X,
  y, n_estimators, seed, fast="auto")``;
* leave-one-out: ``LeaveOneOut()`` / ``leave_one_out(game)`` (``N + 1`` fits);
* KNN-Shapley, K = 10: ``KNNShapley(k_neighbors=10)`` / ``knn_shapley``
  (exact, no fits);
* AME: ``AME(num_models=M)`` (``M`` coalitions for each inclusion
  probability 0.2, 0.4, 0.6, 0.8, then ``LassoCV`` on per-coalition z-scores)
  / ``ame(game, budget, seed)`` (the same grid in equal shares, the penalty chosen as ``LassoLarsCV`` does, on
  standardised indicators);
* class-wise Shapley: ``ClassWiseShapley(sampler=TMCSampler(mc_epochs=T))``
  (``T`` truncated permutations of each class's points, with every
  out-of-class training point as context; one line of its 1.3.0 code is
  patched by the peer script, which otherwise indexes the validation labels
  out of bounds) / ``class_wise_shapley(game, budget, seed)`` (random
  out-of-class contexts, rounds of one permutation of every class, normalised);
* LAVA: ``LavaEvaluator()`` (geomloss Sinkhorn) / ``lava(X, y, X_valid,
  y_valid)`` (POT); no model fits on either side.

*Equal fits.* OpenDataVal runs first with its own budget parameters; its real
fits are counted (calls of ``LogisticRegression.fit``: its model wrapper
replaces a coalition missing a class by a constant ``DummyClassifier`` without
fitting, which costs far less and is not counted; the wrapper's calls are
reported beside). Ours then gets that many real fits: ``ModelUtility.n_fits``
counts ours (our degenerate coalitions, fewer than two classes, are scored by
a constant model and not counted either). Our budget counts utility
evaluations, so it starts at the peer's fits and is rescaled by
``target / fits`` and rerun (at most twice) until our fits are within 1%; the
last run is the one reported. Data-OOB: ``n_estimators`` = the peer's fits.

Measured per data set, method and seed: AUROC of detecting the flipped
training points (flipped = positive, ranked by lowest value, ties half), wall
time of the valuation call on each side (OpenDataVal: ``evaluator.train(
fetcher, model)`` and ``evaluate_data_values()``; ours: the utility's
construction and the estimator), real fits. Goals (one ``OK``/``MISS`` line
each): for the sampled methods (TMC, Beta, Banzhaf, Data-OOB, AME, class-wise Shapley) OpenDataVal's
mean wall time is at least 10x ours on both data sets; for every method our
AUROC is as good or better within noise (mean paired gap over seeds >= -2
standard errors, the larger of the one over seeds and that of a paired
bootstrap of the training points). The load average at start and end, the
versions and the library's git commit are printed. ``--raw PATH`` saves the
measurements (values included) as JSON, ``--from-raw PATH`` rewrites the report
from one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from shapley_research import (ModelUtility, ame, beta_shapley, class_wise_shapley, data_oob, knn_shapley, lava,
                              leave_one_out, msr_banzhaf, permutation_shapley)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)  # also when loaded by file path (the tests)
from cleaning_comparison import bootstrap_gaps, detection  # noqa: E402  (detection scores and their noise)
from pydvl_comparison import _table, _verdict, log, machine_info, quiet_warnings  # noqa: E402

PEER_SCRIPT = os.path.join(HERE, "_opendataval_peer.py")
DEFAULT_PEER_PYTHON = os.path.join(os.path.dirname(REPO), "odv-venv", "bin", "python")
DEFAULT_OUTPUT = os.path.join(HERE, "results", "opendataval_comparison.md")
DATASETS = ("breast_cancer", "digits")
METHODS = {"tmc": "TMC Shapley", "beta": "Beta(16, 1) Shapley", "banzhaf": "Banzhaf (MSR)", "oob": "Data-OOB",
           "loo": "leave-one-out", "knn": "KNN-Shapley (K = 10)", "ame": "AME", "cs": "class-wise Shapley",
           "lava": "LAVA"}
SAMPLED = ("tmc", "beta", "banzhaf", "oob", "ame", "cs")
FIXED_COST = ("loo", "knn", "lava")  # no budget: N + 1 fits, or none
TASK = {"train_count": 300, "valid_count": 100, "test_count": 0, "noise_rate": 0.15}
QUICK_TASK = {**TASK, "train_count": 100, "valid_count": 50}  # smoke run: fewer points, so fewer fits per unit
TRUNCATION = 0.01  # ours: stop a permutation at the first prefix within 1% of U(D)
ALPHA, BETA = 16.0, 1.0
K_NEIGHBOURS = 10
TIME_GOAL = 10.0  # OpenDataVal wall time / ours, sampled methods
NOISE_SE = 2.0  # detection within noise: mean paired gap >= -NOISE_SE standard errors
FIT_TOLERANCE = 0.01  # our real fits within 1% of the peer's
MAX_CORRECTIONS = 2
# the peer's budget parameters: permutations of TMC and Beta (their fits follow from its truncation), models
# of Banzhaf and Data-OOB; chosen so that the full run takes about 20 minutes on 2 cores
# (AME: models per inclusion probability, four of them; class-wise Shapley: permutations of each class)
FULL_BUDGETS = {"breast_cancer": {"permutations": 6, "models": 800, "oob_models": 300, "ame_models": 250,
                                  "cs_permutations": 3},
                "digits": {"permutations": 4, "models": 150, "oob_models": 100, "ame_models": 100,
                           "cs_permutations": 2}}
QUICK_BUDGETS = {"breast_cancer": {"permutations": 3, "models": 150, "oob_models": 50, "ame_models": 50,
                                   "cs_permutations": 1},
                 "digits": {"permutations": 2, "models": 80, "oob_models": 30, "ame_models": 25,
                            "cs_permutations": 1}}


def peer_budgets(sizes: dict[str, dict[str, int]]) -> dict[str, dict[str, dict[str, float]]]:
    """The config's ``budgets[dataset][method]`` for the peer, from the sizes of ``FULL_BUDGETS``."""
    return {name: {"tmc": {"permutations": s["permutations"]},
                   "beta": {"permutations": s["permutations"], "alpha": ALPHA, "beta": BETA},
                   "banzhaf": {"models": s["models"]}, "oob": {"models": s["oob_models"]}, "loo": {},
                   "knn": {"k": K_NEIGHBOURS}, "ame": {"models": s["ame_models"]},
                   "cs": {"permutations": s["cs_permutations"]}, "lava": {}} for name, s in sizes.items()}


# --------------------------------------------------------------------------- the peer


def peer_environment() -> dict[str, str]:
    """This environment with one BLAS/OpenMP thread, no GPU and without our ``PYTHONPATH``."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    return env


def run_peer(python: str, config: dict, folder: str) -> None:
    """Run the peer on ``config`` in ``folder`` (its files land there); its progress goes to our stderr."""
    config_path = os.path.join(folder, "config.json")
    with open(config_path, "w") as handle:
        json.dump({**config, "out_dir": folder}, handle)
    script = os.path.join(folder, os.path.basename(PEER_SCRIPT))
    if not os.path.exists(script):  # a copy taken at start: edits to the working tree during the run do not count
        shutil.copy(PEER_SCRIPT, script)
    subprocess.run([python, script, config_path], env=peer_environment(), check=True)


def load_task(folder: str, dataset: str, seed: int) -> dict[str, np.ndarray]:
    """The peer's task of ``dataset`` and ``seed``, with ``flipped`` as a boolean mask over the training points."""
    with np.load(os.path.join(folder, f"data_{dataset}_{seed}.npz")) as saved:
        task = {key: saved[key] for key in saved.files}
    task["flipped"] = np.zeros(len(task["y_train"]), dtype=bool)
    task["flipped"][task["noisy"]] = True
    return task


def load_peer(folder: str, dataset: str, seed: int) -> dict[str, dict[str, Any]]:
    with open(os.path.join(folder, f"peer_{dataset}_{seed}.json")) as handle:
        return json.load(handle)


# --------------------------------------------------------------------------- our side


def make_model() -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression()  # scikit-learn's defaults, as OpenDataVal's sklogreg


def ours_once(method: str, task: dict[str, np.ndarray], seed: int, budget: int) -> dict[str, Any]:
    """One timed run of our ``method`` with ``budget`` (utility evaluations, or bagged models for Data-OOB).

    The clock covers what a user's call costs: the utility's construction
    (its routing included) and the estimator.
    """
    X, y, X_valid, y_valid = task["x_train"], task["y_train"], task["x_valid"], task["y_valid"]
    start = time.perf_counter()
    if method == "oob":
        result = data_oob(make_model(), X, y, n_estimators=budget, seed=seed, fast="auto", progress=False)
        seconds = time.perf_counter() - start  # a bootstrap sample of one class is not fitted
        return {"values": result.values, "seconds": seconds, "fits": budget - int(result.info["n_single_class"]),
                "evaluations": budget, "route": str(result.info["route"]).split(":")[0]}
    if method in ("knn", "lava"):
        result = (knn_shapley(X, y, X_valid, y_valid, K_NEIGHBOURS) if method == "knn"
                  else lava(X, y, X_valid, y_valid))
        return {"values": result.values, "seconds": time.perf_counter() - start, "fits": 0, "evaluations": 0,
                "route": "exact" if method == "knn" else str(result.info["solver"])}
    game = ModelUtility(make_model(), X, y, X_valid, y_valid, metric="accuracy", fast="auto")
    if method == "tmc":
        result = permutation_shapley(game, budget, seed, truncation=TRUNCATION, progress=False)
    elif method == "beta":
        result = beta_shapley(game, budget, seed, alpha=ALPHA, beta=BETA, progress=False)
    elif method == "banzhaf":
        result = msr_banzhaf(game, budget, seed, progress=False)
    elif method == "loo":
        result = leave_one_out(game)
    elif method == "ame":
        result = ame(game, budget, seed, progress=False)
    elif method == "cs":  # predictions, not utilities: its fits are the coalitions it did not find degenerate
        result = class_wise_shapley(game, budget, seed, progress=False)
        game.n_fits += int(result.info["model_fits"])
    else:
        raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    seconds = time.perf_counter() - start
    route = str(game.route_).split(":")[0]  # "batched" or the per-fit route, the reason left out
    return {"values": result.values, "seconds": seconds, "fits": int(game.n_fits),
            "evaluations": int(result.n_evaluations), "route": route, "units": int(result.n_samples)}


def ours_at_least_one_unit(method: str, task: dict[str, np.ndarray], seed: int, budget: int) -> dict[str, Any]:
    """:func:`ours_once`; a budget below one sampling unit is raised to the minimum the estimator states.

    When the peer made fewer fits than one of our permutations (or Beta
    units) costs, ours runs one unit and so makes more fits than the peer
    (``floored`` is then True and the table shows both counts).
    """
    try:
        return {**ours_once(method, task, seed, budget), "budget": budget, "floored": False}
    except ValueError as error:
        minimum = re.search(r"needs at least ([\d,]+) utility evaluations", str(error))
        if minimum is None:
            raise
        budget = int(minimum.group(1).replace(",", ""))
        return {**ours_once(method, task, seed, budget), "budget": budget, "floored": True}


def ours_matched(method: str, task: dict[str, np.ndarray], seed: int, target_fits: int) -> dict[str, Any]:
    """Our run whose real fits come closest to the peer's ``target_fits`` (rescaled budget, reruns).

    Our budget counts utility evaluations, degenerate coalitions (scored by a
    constant model, not fitted) included, so the first run's budget is the
    target and each rerun's the last one times ``target / fits``, until the
    fits are within ``FIT_TOLERANCE`` or after ``MAX_CORRECTIONS`` reruns.
    Permutations, Beta units and class-wise rounds are indivisible (a unit gives every player
    one contribution), so the fits move in steps of about ``N`` there: the
    run closest to the target is returned (the larger on a tie), with every
    ``(budget, fits)`` tried in ``attempts``.
    """
    if method in FIXED_COST:  # their fits are fixed: N + 1, or none
        run = ours_once(method, task, seed, 0)
        return {**run, "budget": 0, "floored": False, "attempts": [(0, run["fits"])]}
    runs = [ours_at_least_one_unit(method, task, seed, max(int(target_fits), 2))]
    miss = lambda run: abs(run["fits"] - target_fits)
    while (method != "oob" and runs[-1]["fits"] > 0 and len(runs) <= MAX_CORRECTIONS
           and miss(runs[-1]) > FIT_TOLERANCE * target_fits
           and not (runs[-1]["floored"] and runs[-1]["fits"] > target_fits)):  # one unit: as few as it gets
        budget = max(int(round(runs[-1]["budget"] * target_fits / runs[-1]["fits"])), 2)
        runs.append(ours_at_least_one_unit(method, task, seed, budget))
    best = min(runs, key=lambda run: (miss(run), -run["fits"]))
    return {**best, "attempts": [(run["budget"], run["fits"]) for run in runs]}


def warm_up(task: dict[str, np.ndarray], n_points: int = 40, budget: int = 60) -> None:
    """Untimed first calls of every method on the task's first ``n_points`` (imports, numba loops, caches).

    The peer's process is warm when its clock starts; without this, the first
    timed run of each estimator would also pay for loading its compiled loops.
    """
    small = {**task, "x_train": task["x_train"][:n_points], "y_train": task["y_train"][:n_points]}
    with warnings.catch_warnings():  # so few points and models: warnings about them do not matter here
        warnings.simplefilter("ignore")
        for method in METHODS:
            ours_at_least_one_unit(method, small, 0, budget)


# --------------------------------------------------------------------------- measurement


def measure_dataset(dataset: str, seeds: list[int], methods: list[str], budgets: dict, python: str,
                    folder: str, task_sizes: dict[str, Any]) -> list[dict[str, Any]]:
    """Peer first (one process, every seed and method), then ours on the same tasks with the peer's fits."""
    log(f"{dataset}: OpenDataVal ...")
    run_peer(python, {**task_sizes, "datasets": [dataset], "seeds": seeds, "methods": methods, "budgets": budgets},
             folder)
    rows = []
    for seed in seeds:
        task, peer = load_task(folder, dataset, seed), load_peer(folder, dataset, seed)
        if seed == seeds[0]:
            warm_up(task)
        for method in methods:
            theirs = peer[method]
            log(f"{dataset} seed {seed}: ours {method} ({theirs['real_fits']:,} peer fits) ...")
            with threadpool_limits(1):
                mine = ours_matched(method, task, seed, theirs["real_fits"])
            rows.append({"dataset": dataset, "seed": seed, "method": method, "flipped": task["noisy"].tolist(),
                         "peer": {**theirs, "auroc": detection(np.asarray(theirs["values"]), task["flipped"])[0]},
                         "ours": {**mine, "values": np.asarray(mine["values"], float).tolist(),
                                  "auroc": detection(mine["values"], task["flipped"])[0]}})
    return rows


def measure(datasets: list[str], seeds: list[int], methods: list[str], sizes: dict, python: str,
            task_sizes: dict[str, Any] = TASK) -> dict:
    """Every data set in turn (peer, then ours); the peer's versions come back from its first process."""
    folder = tempfile.mkdtemp(prefix="opendataval_comparison_")
    try:
        rows = []
        for dataset in datasets:
            rows += measure_dataset(dataset, seeds, methods, peer_budgets(sizes), python, folder, task_sizes)
        with open(os.path.join(folder, "peer_versions.json")) as handle:
            peer_versions = json.load(handle)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"rows": rows, "datasets": datasets, "seeds": seeds, "methods": methods, "sizes": sizes,
            "peer_versions": peer_versions, "task": dict(task_sizes)}


# --------------------------------------------------------------------------- analysis and report


def select(rows: list[dict], dataset: str, method: str) -> list[dict]:
    """The rows of one data set and method, by seed."""
    return sorted((r for r in rows if r["dataset"] == dataset and r["method"] == method), key=lambda r: r["seed"])


def detection_gap(rows: list[dict]) -> dict[str, float]:
    """Our AUROC minus the peer's, paired by seed: mean gap and its standard errors.

    ``se_seeds``: standard deviation of the per-seed gaps over
    ``sqrt(seeds)`` (0 with one seed); ``se_bootstrap``: that of the mean gap
    when each seed's training points are resampled (paired bootstrap,
    ``cleaning_comparison.bootstrap_gaps``). ``se`` is the larger of the two.
    """
    gaps = np.array([r["ours"]["auroc"] - r["peer"]["auroc"] for r in rows])
    se_seeds = float(gaps.std(ddof=1) / np.sqrt(gaps.size)) if gaps.size > 1 else 0.0
    variances = []
    for r in rows:
        flipped = np.zeros(len(r["ours"]["values"]), dtype=bool)
        flipped[r["flipped"]] = True
        resampled = bootstrap_gaps(r["ours"]["values"], r["peer"]["values"], flipped, seed=r["seed"])
        variances.append(resampled[:, 0].var(ddof=1))
    se_bootstrap = float(np.sqrt(np.sum(variances)) / gaps.size)
    return {"gap": float(gaps.mean()), "se_seeds": se_seeds, "se_bootstrap": se_bootstrap,
            "se": max(se_seeds, se_bootstrap)}


def cell(values: Any, digits: int = 3) -> str:
    """``mean [min-max]`` over seeds, or the one value."""
    values = np.asarray(values, float)
    if values.size == 1:
        return f"{values[0]:,.{digits}f}"
    return f"{values.mean():,.{digits}f} [{values.min():,.{digits}f}-{values.max():,.{digits}f}]"


def method_row(method: str, runs: list[dict]) -> list[str]:
    """Fits, AUROC, wall time of both sides and their ratio, each ``mean [min-max]`` over the seeds."""
    column = lambda side, key, digits=3: cell([r[side][key] for r in runs], digits)
    ratios = np.array([r["peer"]["seconds"] / r["ours"]["seconds"] for r in runs])
    wall, per_fit = time_ratios(runs)
    per_fit_cell = "" if method == "knn" else ("n/a" if np.isnan(per_fit) else f"{per_fit:,.1f}x")  # NaN: no fits
    return [METHODS[method], f"{column('peer', 'real_fits', 0)} ({column('peer', 'wrapper_fits', 0)})",
            f"{column('ours', 'fits', 0)} ({column('ours', 'evaluations', 0)})", column("peer", "auroc"),
            column("ours", "auroc"), column("peer", "seconds", 2), column("ours", "seconds", 3),
            f"{wall:,.1f}x [{ratios.min():,.1f}-{ratios.max():,.1f}]", per_fit_cell,
            ", ".join(sorted({r["ours"]["route"] for r in runs}))]


def dataset_table(rows: list[dict], dataset: str, methods: list[str], markdown: bool) -> str:
    """One line per method (:func:`method_row`)."""
    headers = ["method", "OpenDataVal fits (coalitions)", "ours fits (evaluations)", "AUROC OpenDataVal",
               "AUROC ours", "OpenDataVal s/run", "ours s/run", "OpenDataVal / ours", "per fit", "our route"]
    return _table(headers, [method_row(method, select(rows, dataset, method)) for method in methods], markdown)


def time_ratios(runs: list[dict]) -> tuple[float, float]:
    """OpenDataVal's mean wall time over ours, and the same per real fit (NaN if the peer made no fit at all)."""
    peer = np.mean([r["peer"]["seconds"] for r in runs])
    mine = np.mean([r["ours"]["seconds"] for r in runs])
    peer_fits = np.mean([r["peer"]["real_fits"] for r in runs])
    my_fits = np.mean([r["ours"]["fits"] for r in runs])
    if peer_fits == 0:
        return float(peer / mine), float("nan")
    return float(peer / mine), float((peer / peer_fits) / (mine / my_fits)) if my_fits else float("inf")


def time_goal(dataset: str, method: str, runs: list[dict]) -> str:
    """The time goal of a sampled method, judged per real fit.

    Our permutations and Beta units are indivisible, so our fits can only
    come near the peer's: the time per fit is compared (with equal fits it is
    the wall-time ratio, printed beside it). Where the peer made no real fit
    in any seed the ratio is undefined, and the goal is not met.
    """
    wall, per_fit = time_ratios(runs)
    peer_fits = np.mean([r["peer"]["real_fits"] for r in runs])
    my_fits = np.mean([r["ours"]["fits"] for r in runs])
    line = (f"time {dataset} {METHODS[method]}: OpenDataVal {np.mean([r['peer']['seconds'] for r in runs]):.2f} s "
            f"for {peer_fits:,.0f} fits, ours {np.mean([r['ours']['seconds'] for r in runs]):.3f} s for "
            f"{my_fits:,.0f}: ")
    if np.isnan(per_fit):
        return line + f"UNDEFINED per fit, OpenDataVal made no real fit (goal >= {TIME_GOAL:g}x per fit) MISS"
    return line + (f"{per_fit:,.1f}x per fit ({wall:,.1f}x wall) (goal >= {TIME_GOAL:g}x per fit) "
                   f"{_verdict(per_fit >= TIME_GOAL)}")


def goal_lines(rows: list[dict], datasets: list[str], methods: list[str]) -> list[str]:
    """One ``OK``/``MISS`` line per goal: time per fit of every sampled method (:func:`time_goal`), detection."""
    goals = []
    for dataset in datasets:
        for method in methods:
            runs = select(rows, dataset, method)
            if method in SAMPLED:
                goals.append(time_goal(dataset, method, runs))
            gap = detection_gap(runs)
            ok = gap["gap"] >= -NOISE_SE * gap["se"] - 1e-12
            goals.append(f"detection {dataset} {METHODS[method]}: AUROC ours - OpenDataVal {gap['gap']:+.3f} (se "
                         f"seeds {gap['se_seeds']:.3f}, bootstrap {gap['se_bootstrap']:.3f}) (goal: >= "
                         f"-{NOISE_SE:g} se) {_verdict(ok)}")
    return goals


def header_lines(raw: dict) -> list[str]:
    """Machine, versions of both sides, the library's commit, load average, wall time, the task."""
    info, measured = raw["info"], raw["measured"]
    task = measured.get("task", TASK)
    v, peer, lib = info["versions"], measured["peer_versions"], info["library"]
    out = [f"Machine: {info['cpu']}, {info['cores']} cores ({info['machine']}), {info['system']}",
           f"Ours: Python {v['python']}, numpy {v['numpy']}, scikit-learn {v['sklearn']}, shapley_research "
           f"{v['shapley_research']} at git commit {lib['commit']}"
           + (f" with uncommitted changes to {', '.join(lib['modified'])}" if lib["modified"] else "")
           + f" (sources sha256 {lib['sources_sha256']}).",
           f"OpenDataVal {peer['opendataval']} in its own environment: Python {peer['python']}, torch {peer['torch']}, "
           f"numpy {peer['numpy']}, scikit-learn {peer['sklearn']}.",
           f"Date: {info['date']}. Load average (1 min) at start / end: {raw['load'][0]:.2f} / {raw['load'][1]:.2f}. "
           f"Benchmark wall time: {raw['wall'] / 60:.1f} min (`{raw['command']}`).",
           "One BLAS/OpenMP thread on both sides (environment variables and torch.set_num_threads(1) there, "
           "threadpoolctl here); OpenDataVal runs first on each data set, in a process of its own.",
           "",
           f"Task: OpenDataVal's DataFetcher.setup(dataset, random_state=seed, train_count={task['train_count']}, "
           f"valid_count={task['valid_count']}, test_count={task['test_count']}, add_noise=mix_labels, "
           f"noise_kwargs={{'noise_rate': {task['noise_rate']}}}); seeds {', '.join(map(str, measured['seeds']))}. "
           "Model LogisticRegression() (sklogreg there, ModelUtility(..., metric=\"accuracy\", fast=\"auto\") "
           "here); utility: accuracy on the validation points (15% of their labels flipped too).",
           f"Budgets (OpenDataVal's parameters; ours gets its real fits): {json.dumps(measured['sizes'])}; TMC "
           f"truncation: OpenDataVal's own rule there, {TRUNCATION:g} |U(D)| here; Beta({ALPHA:g}, {BETA:g}) on both "
           f"sides; K = {K_NEIGHBOURS}.",
           "Cells: mean over seeds [min-max]. Fits: real model fits (OpenDataVal: LogisticRegression.fit calls, its "
           "coalitions missing a class get a DummyClassifier, in brackets every coalition; ours: "
           "ModelUtility.n_fits, in brackets utility evaluations). AUROC: flipped = positive, ranked by lowest "
           "value. s/run: the valuation call. OpenDataVal / ours: of the mean wall times [per seed min-max]; per fit: "
           "of the mean times per real fit."]
    return out


def sampling_notes(rows: list[dict], dataset: str, sizes: dict[str, int]) -> list[str]:
    """Permutations or units per run on each side, OpenDataVal's share of unfitted coalitions, reruns, floors."""
    out = []
    for method in ("tmc", "beta"):
        runs = select(rows, dataset, method)
        if runs:
            units = np.mean([r["ours"]["units"] for r in runs])
            coalitions = sum(r["peer"]["wrapper_fits"] for r in runs)
            unfitted = 1.0 - sum(r["peer"]["real_fits"] for r in runs) / coalitions if coalitions else 0.0
            out.append(f"   {METHODS[method]}: OpenDataVal {sizes['permutations']} permutations per run, "
                       f"{unfitted:.0%} of its coalitions missing a class (DummyClassifier, not fitted); ours "
                       f"{units:,.1f} " + ("permutations" if method == "tmc" else "sampling units") + " per run.")
    reruns = [r for r in rows if r["dataset"] == dataset and len(r["ours"]["attempts"]) > 1]
    if reruns:
        tried = "; ".join(f"{METHODS[r['method']]} seed {r['seed']}: "
                          + ", ".join(f"{budget:,} -> {fits:,}" for budget, fits in r["ours"]["attempts"])
                          for r in reruns)
        out.append(f"   Our budget was rescaled and rerun to match the fits in {len(reruns)} of the runs above "
                   f"(budget -> fits: {tried}).")
    knn = select(rows, dataset, "knn")
    if knn:  # the same exact values on both sides, up to its float32 distances: a check of the exchange
        gap = max(float(np.max(np.abs(np.subtract(r["ours"]["values"], r["peer"]["values"])))) for r in knn)
        out.append(f"   KNN-Shapley, the same exact values on both sides: max |ours - OpenDataVal| = {gap:.1e}.")
    floored = [r for r in rows if r["dataset"] == dataset and r["ours"]["floored"]]
    if floored:
        out.append(f"   In {len(floored)} run(s) ({', '.join(sorted({METHODS[r['method']] for r in floored}))}) "
                   "OpenDataVal made fewer fits than one of our sampling units costs: ours ran one unit and made "
                   "more fits than it.")
    return out


def report(raw: dict, markdown: bool) -> str:
    measured = raw["measured"]
    rows, methods = measured["rows"], measured["methods"]
    out = header_lines(raw)
    for dataset in measured["datasets"]:
        out += ["", f"{dataset}:", dataset_table(rows, dataset, methods, markdown)]
        out += sampling_notes(rows, dataset, measured["sizes"][dataset])
    out += ["", "Goals:"]
    out += [("- " if markdown else "  ") + g for g in goal_lines(rows, measured["datasets"], methods)]
    return "\n".join(out)


# ----------------------------------------------------------------------------- main


def names(text: str, known: tuple[str, ...] | dict[str, str], what: str) -> list[str]:
    """A comma-separated selection of ``known`` names, in the order given; an ``ArgumentTypeError`` otherwise."""
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in known]
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"--{what}: expected a comma-separated list of {', '.join(known)}, "
                                         f"got {text!r}")
    return list(dict.fromkeys(chosen))


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: one seed, 100 training points, small budgets (about 2 minutes)")
    parser.add_argument("--methods", type=lambda t: names(t, METHODS, "methods"), default=list(METHODS),
                        help=f"comma-separated subset of {','.join(METHODS)} (default: all)")
    parser.add_argument("--datasets", type=lambda t: names(t, DATASETS, "datasets"), default=list(DATASETS),
                        help=f"comma-separated subset of {','.join(DATASETS)} (default: both)")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds, from 0 (default 3; 1 --quick)")
    parser.add_argument("--peer-python", default=os.environ.get("OPENDATAVAL_PYTHON", DEFAULT_PEER_PYTHON),
                        help="OpenDataVal's interpreter (default $OPENDATAVAL_PYTHON, else ../odv-venv/bin/python "
                             "from the repository root)")
    parser.add_argument("--output", metavar="PATH", default=DEFAULT_OUTPUT,
                        help=f"markdown output (default {os.path.relpath(DEFAULT_OUTPUT)})")
    parser.add_argument("--raw", metavar="PATH", help="also save the raw measurements (values included) as JSON")
    parser.add_argument("--from-raw", metavar="PATH", help="only rewrite the report from a --raw JSON file")
    args = parser.parse_args(argv)
    if args.seeds is not None and args.seeds < 1:
        parser.error(f"--seeds: expected a positive number of seeds, got {args.seeds}")
    return args


def command_line(args: argparse.Namespace) -> str:
    """The one-line command that measured, without where it wrote."""
    parts = ["python benchmarks/opendataval_comparison.py"] + (["--quick"] if args.quick else [])
    if args.methods != list(METHODS):
        parts.append("--methods " + ",".join(args.methods))
    if args.datasets != list(DATASETS):
        parts.append("--datasets " + ",".join(args.datasets))
    if args.seeds is not None:
        parts.append(f"--seeds {args.seeds}")
    return " ".join(parts)


def run(args: argparse.Namespace) -> dict:
    """Measure what ``args`` selects; the raw record the report is written from."""
    seeds = list(range(args.seeds or (1 if args.quick else 3)))
    sizes = {name: (QUICK_BUDGETS if args.quick else FULL_BUDGETS)[name] for name in args.datasets}
    info = machine_info()
    load_start = os.getloadavg()[0]
    start = time.perf_counter()
    measured = measure(args.datasets, seeds, args.methods, sizes, args.peer_python,
                       QUICK_TASK if args.quick else TASK)
    return {"info": info, "load": (load_start, os.getloadavg()[0]), "measured": measured,
            "wall": time.perf_counter() - start, "command": command_line(args)}


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    quiet_warnings()
    if args.from_raw:
        with open(args.from_raw) as handle:
            raw = json.load(handle)
    else:
        if not os.path.exists(args.peer_python):
            print(f"OpenDataVal's interpreter {args.peer_python} is missing: install it with python -m venv "
                  '../odv-venv && ../odv-venv/bin/pip install "opendataval==1.3.0" "transformers~=4.35.0" '
                  "(see benchmarks/README.md), or pass --peer-python.", file=sys.stderr)
            return 2
        raw = run(args)
        if args.raw:
            with open(args.raw, "w") as handle:
                json.dump(raw, handle, default=float)
    print(report(raw, markdown=False))
    if args.output:
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        with open(args.output, "w") as handle:
            handle.write("# Finding flipped labels: shapley_research vs OpenDataVal 1.3.0, side by side\n\n"
                         f"Written by `{raw['command']}` (every number below comes from that run).\n\n"
                         + report(raw, markdown=True) + "\n")
        print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
