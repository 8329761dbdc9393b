"""Side-by-side benchmark against pyDVL: throughput, group testing at scale, error at equal budgets.

Run ``python benchmarks/pydvl_comparison.py`` (about 15 minutes on 2 cores;
``--quick`` for a smoke run of about 1.5 minutes; ``--output PATH`` for the
markdown file, default ``benchmarks/results/pydvl_comparison.md``). pyDVL is an
optional benchmark dependency (``pip install 'shapley-research[benchmark]'``
or, without touching numpy, ``pip install --no-deps pydvl==0.10.0
pyDeprecate==0.3.2 more-itertools``), never a runtime one. Both libraries run
in this process (or in fresh worker processes started by it) on the same games,
with BLAS/OpenMP limited to one thread (``threadpoolctl``) on both sides.

1. **Utility evaluations per second** of logistic-regression utilities on iris
   (N = 100, 3 classes) and MNIST (1,000 images, PCA to 50 components, 10
   classes), prepared exactly as in ``benchmarks/utility_throughput.py``.
   pyDVL: ``ModelUtility(LogisticRegression(), SupervisedScorer("neg_log_loss"))``
   called once per subset (it fits scikit-learn once per subset); ours:
   ``LogisticRegressionUtility.evaluate(masks)`` on the *same* random subsets
   (sizes uniform on 1..N); pyDVL evaluates a prefix of the list. Agreement:
   max |dU| on the common subsets holding every class (pyDVL scores a subset
   missing a test class with the scorer's default, we with the clipped
   log-loss, so those are left out and counted). Two more rows of ours: what
   ``ModelUtility(LogisticRegression(), fast="auto")`` gives on the same
   subsets (routed, at scikit-learn's ``tol``), and ``evaluate_prefixes``
   with ``prefix_path="exact"`` (every prefix of a permutation refitted, as
   permutation sampling asks; other subsets than pyDVL's, so a rate per
   subset). A reference row times our one-pass ``evaluate_prefixes``, an
   *approximation* of refitting.

2. **Group testing at N = 200, 1,000 and 10,000 players**, the same number
   of tests T on both sides, each configuration in a fresh process, on a cheap
   vectorised game with closed-form values (linear + c*sqrt(|S|) + 10 unanimity
   terms), wrapped for pyDVL as a ``UtilityBase`` that calls the very same
   evaluation function. pyDVL: ``GroupTestingShapleyValuation(n_samples=T,
   epsilon=tau)`` (Algorithm 1 with its N(N-1) cvxpy constraints, SCS by
   default); ours: ``group_testing_shapley(variant="paper")`` with the
   O(N)-constraint cvxpy recovery (the same feasibility problem, ``tau`` the
   same tolerance), with the closed-form recovery, and ``variant="improved"``.
   Measured: wall time, the growth of the peak resident set (Linux ``VmHWM``,
   includes the solvers' C memory) and the ``tracemalloc`` peak (Python and
   numpy allocations only) in a second fresh process. pyDVL runs under a
   wall-time and a resident-memory limit enforced by this process; a run that
   hits one is reported as such, with the stage it had reached.

3. **Relative error at equal budgets** ``||v_hat - v||_2 / ||v||_2`` on games
   with exact values: two closed-form games (the airport game, N = 100, and the
   game of part 2, N = 200) and the KNN classification utility on the 1,000
   MNIST images (K = 5, 100 test images), whose exact values come from
   ``knn_shapley`` (cross-checked against pyDVL's ``KNNShapleyValuation``).
   Every estimator of each library that targets Shapley values with a budget
   runs at the same budgets of utility evaluations (counted by a wrapper on
   pyDVL's side: every non-empty subset passed to the utility counts, plus one
   for the empty set), averaged over seeds. At each budget, pyDVL's best
   estimator there sets a target error; the evaluations each of our estimators
   needs to reach it come from log-log interpolation of its error curve, and
   the fewest is reported (an extrapolation by the fitted power law is used
   only when none of ours reaches the target inside its measured range, and is
   labelled). On the KNN game every estimator runs up to the smallest budget
   both libraries run, and the two best of each library there at the larger
   ones (to keep the run short).

Every number in the output comes from the run; the load average at start and
end is printed, since timings on a shared machine are noisy. The worker
processes run a copy of the library and of this script taken at start, so that
edits to the working tree during the run do not change what is measured; the
report states the git commit and the library files modified in the working
tree. ``--raw PATH`` saves the measurements as JSON, ``--from-raw PATH``
rewrites the report from them without measuring again.

The three parts, the pyDVL adapters and the report live in this script's
siblings: ``_pydvl_throughput.py``, ``_pydvl_group_testing.py`` (the fresh
worker processes), ``_pydvl_errors.py``, ``_pydvl_adapters.py`` and
``_pydvl_report.py``; the games are ``_games.py``'s, the machine record and
the output ``_peer_common.py``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # also when loaded by file path (the tests)
from _peer_common import load_raw, machine_info, quiet_warnings, save_raw, write_outputs  # noqa: E402
from _pydvl_errors import error_part  # noqa: E402  (the three parts, each in a sibling)
from _pydvl_group_testing import GIB, gt_part, gt_worker, remove_snapshot, snapshot_for_workers  # noqa: E402
from _pydvl_report import report  # noqa: E402
from _pydvl_throughput import throughput_part  # noqa: E402

DEFAULT_OUTPUT = os.path.join(HERE, "results", "pydvl_comparison.md")
REPORT_KEYS = ("info", "load", "throughput", "explained", "gt", "gt_tests", "errors", "checks", "wall", "quick")


def parse_arguments(argv=None) -> argparse.Namespace:
    """The command line: ``--quick``, ``--output``, ``--seed``, the group-testing limits, ``--raw``/``--from-raw``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small budgets and sizes (about 1.5 minutes)")
    parser.add_argument("--output", metavar="PATH", default=DEFAULT_OUTPUT,
                        help=f"markdown output (default {os.path.relpath(DEFAULT_OUTPUT)})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gt-timeout", type=float, default=None,
                        help="wall-time limit of one pyDVL group-testing run, seconds (default 120; 15 --quick)")
    parser.add_argument("--gt-rss-limit-gib", type=float, default=6.0,
                        help="resident-memory limit of one group-testing run, GiB (default 6)")
    parser.add_argument("--raw", metavar="PATH", help="also save the raw measurements as JSON")
    parser.add_argument("--from-raw", metavar="PATH", help="only rewrite the report from a --raw JSON file")
    parser.add_argument("--_gt-worker", dest="gt_worker", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def measure(args: argparse.Namespace) -> dict:
    """Run the three parts (workers from a snapshot of the library); the raw record the report is written from."""
    info = machine_info()
    snapshot_for_workers()
    load_start = os.getloadavg()[0]
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    timeout = args.gt_timeout or (15.0 if args.quick else 120.0)
    with threadpool_limits(1):
        throughput, explained = throughput_part(args.quick, rng)
    sizes = (50, 1_000) if args.quick else (200, 1_000, 10_000)
    tests = 2_000 if args.quick else 10_000
    gt = gt_part(sizes, tests, timeout, args.gt_rss_limit_gib * GIB,
                 pydvl_traced_max_s=15 if args.quick else 90)
    with threadpool_limits(1):
        errors, checks = error_part(args.quick, rng)
    raw = {"info": info, "load": (load_start, os.getloadavg()[0]), "throughput": throughput,
           "explained": explained, "gt": gt, "gt_tests": tests, "errors": errors, "checks": checks,
           "wall": time.perf_counter() - start, "quick": args.quick}
    remove_snapshot()
    return raw


def main(argv=None) -> int:
    args = parse_arguments(argv)
    quiet_warnings()
    if args.gt_worker:
        gt_worker(json.loads(args.gt_worker))
        return 0
    try:
        import pydvl  # noqa: F401
    except ImportError:
        if not args.from_raw:
            print("pyDVL is not installed: pip install --no-deps pydvl==0.10.0 pyDeprecate==0.3.2 more-itertools "
                  "(see benchmarks/README.md).", file=sys.stderr)
            return 2

    if args.from_raw:
        raw = load_raw(args.from_raw)
    else:
        raw = measure(args)
        if args.raw:
            save_raw(raw, args.raw)
    report_args = [raw[key] for key in REPORT_KEYS]
    write_outputs(lambda markdown: report(*report_args, markdown=markdown), args.output,
                  "shapley_research vs pyDVL, side by side",
                  f"python benchmarks/pydvl_comparison.py{' --quick' if raw['quick'] else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
