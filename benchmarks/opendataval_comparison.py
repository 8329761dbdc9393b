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

This file holds the command line and the order of the measurements; its
siblings hold the task and budgets (``_opendataval_task.py``), the peer's side
and the exchange of files with it (``_opendataval_peer.py``), our side
(``_opendataval_ours.py``) and the report (``_opendataval_report.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)  # also when loaded by file path (the tests)
from _opendataval_ours import ours_matched, warm_up  # noqa: E402  (this script's siblings: our side, the peer's)
from _opendataval_peer import load_peer, load_task, load_versions, run_peer  # noqa: E402
from _opendataval_report import report  # noqa: E402
from _opendataval_task import (  # noqa: E402  (the task, methods and budgets)
    DATASETS, FULL_BUDGETS, METHODS, QUICK_BUDGETS, QUICK_TASK, TASK, peer_budgets)
from _peer_common import load_raw, log, machine_info, quiet_warnings, save_raw, write_outputs  # noqa: E402
from cleaning_comparison import detection  # noqa: E402  (the detection scores)

DEFAULT_PEER_PYTHON = os.path.join(os.path.dirname(REPO), "odv-venv", "bin", "python")
DEFAULT_OUTPUT = os.path.join(HERE, "results", "opendataval_comparison.md")


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
        peer_versions = load_versions(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"rows": rows, "datasets": datasets, "seeds": seeds, "methods": methods, "sizes": sizes,
            "peer_versions": peer_versions, "task": dict(task_sizes)}


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
        raw = load_raw(args.from_raw)
    else:
        if not os.path.exists(args.peer_python):
            print(f"OpenDataVal's interpreter {args.peer_python} is missing: install it with python -m venv "
                  '../odv-venv && ../odv-venv/bin/pip install "opendataval==1.3.0" "transformers~=4.35.0" '
                  "(see benchmarks/README.md), or pass --peer-python.", file=sys.stderr)
            return 2
        raw = run(args)
        if args.raw:
            save_raw(raw, args.raw)
    write_outputs(lambda markdown: report(raw, markdown=markdown), args.output,
                  "Finding flipped labels: shapley_research vs OpenDataVal 1.3.0, side by side", raw["command"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
