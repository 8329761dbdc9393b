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
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import hashlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

import shapley_research
import shapley_research.datasets  # noqa: F401  (loaded now: the run uses the library as it is at start)
from shapley_research import (Game, LogisticRegressionUtility, ModelUtility, compressive_shapley,
                              group_testing_shapley, knn_shapley, permutation_shapley, stratified_svarm_shapley)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # also when loaded by file path (the tests)
from core_overhead import (  # noqa: E402  (the cheap closed-form game of the overhead benchmark, its RSS probes)
    CheapGame, _reset_peak_rss, _rss_bytes)

THROUGHPUT_GOAL = 100.0  # x pyDVL evaluations per second
GT_TIME_GOAL = 100.0  # x pyDVL group testing wall time
EVALUATIONS_GOAL = 0.5  # our evaluations / pyDVL's at the same error
GT_SEED = 20240601
MIB = 2.0**20
GIB = 2.0**30
LOG_EPS = float(np.log(np.finfo(float).eps))
DEFAULT_OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "pydvl_comparison.md")


_T0 = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _T0:6.0f} s] {message}", file=sys.stderr, flush=True)


def quiet_warnings() -> None:
    warnings.filterwarnings("ignore", category=UserWarning, module="sklearn")  # lbfgs ConvergenceWarning
    warnings.filterwarnings("ignore", message=".*did not reach tol.*")
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)


# --------------------------------------------------------------------------- machine


def machine_info() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    versions = {"python": platform.python_version(), "numpy": np.__version__,
                "shapley_research": shapley_research.__version__}
    for name in ("sklearn", "scipy", "cvxpy", "pydvl"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = "not installed"
    return {"cpu": cpu, "cores": os.cpu_count(), "machine": platform.machine(), "system": platform.platform(),
            "versions": versions, "library": library_provenance(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def library_provenance() -> dict:
    """Git commit of the checkout, library files modified in the working tree, hash of the sources loaded."""
    package = os.path.dirname(os.path.abspath(shapley_research.__file__))
    digest = hashlib.sha256()
    for root, _, files in sorted(os.walk(package)):
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(root, name), "rb") as f:
                    digest.update(name.encode() + f.read())
    info = {"package": package, "sources_sha256": digest.hexdigest()[:12], "commit": "unknown", "modified": []}
    try:
        repo = os.path.dirname(package)
        info["commit"] = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True,
                                        text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--", "shapley_research"],
                                capture_output=True, text=True, check=True).stdout
        info["modified"] = [line[3:] for line in status.splitlines() if line.strip()]
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


_SNAPSHOT: dict = {}


def snapshot_for_workers() -> None:
    """Copy the loaded library and this script to a temporary folder that the worker processes run from.

    Other people may edit the working tree while the benchmark runs; the
    workers then still run the very code the main process loaded at start.
    """
    folder = tempfile.mkdtemp(prefix="pydvl_comparison_")
    package = os.path.dirname(os.path.abspath(shapley_research.__file__))
    shutil.copytree(package, os.path.join(folder, "shapley_research"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for script in ("pydvl_comparison.py", "core_overhead.py"):
        shutil.copy(os.path.join(HERE, script), os.path.join(folder, script))
    env = dict(os.environ)
    env["PYTHONPATH"] = folder + os.pathsep + env.get("PYTHONPATH", "")
    _SNAPSHOT.update(folder=folder, script=os.path.join(folder, "pydvl_comparison.py"), env=env)


# --------------------------------------------------------------------------- games


class AirportGame(Game):
    r"""Airport game :math:`U(S) = \max_{i \in S} c_i`: the ``k``-th cheapest player pays
    :math:`\sum_{j \le k} (c_{(j)} - c_{(j-1)}) / (N - j + 1)` (Littlechild and Owen, 1973)."""

    def __init__(self, n_players: int, seed: int = 0):
        self.n_players = n_players
        self.costs = np.random.default_rng(seed).uniform(0.0, 1.0, n_players)

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        return np.where(masks, self.costs[None, :], 0.0).max(axis=1)

    def shapley_values(self) -> np.ndarray:
        order = np.argsort(self.costs, kind="stable")
        segments = np.diff(self.costs[order], prepend=0.0) / (self.n_players - np.arange(self.n_players))
        values = np.empty(self.n_players)
        values[order] = np.cumsum(segments)
        return values


class KNNGame(Game):
    """The KNN classification utility of :class:`shapley_research.KNNUtility`, evaluated faster.

    ``U(S)`` = mean over test points of (labels matching among the ``K`` nearest
    points of ``S``) / ``K``; ties in distance broken by index, as in
    ``knn_shapley``. Instead of scanning all ``N`` neighbours of every test
    point, it scans the nearest ``heads[0]`` first, then only the (coalition,
    test point) pairs that hold fewer than ``K`` members there further, and so
    on up to all ``N``.
    The benchmark checks that it equals ``KNNUtility`` on random coalitions.
    """

    def __init__(self, X_train, y_train, X_test, y_test, k: int, heads=(32, 256), small: int = 64):
        X_train, X_test = np.asarray(X_train, float), np.asarray(X_test, float)
        sq = (np.einsum("ij,ij->i", X_test, X_test)[:, None] - 2.0 * X_test @ X_train.T
              + np.einsum("ij,ij->i", X_train, X_train)[None, :])
        self.order = np.argsort(sq, axis=1, kind="stable")
        self.match = np.asarray(y_train)[self.order] == np.asarray(y_test)[:, None]
        self.k, self.n_players, self.n_test = int(k), X_train.shape[0], X_test.shape[0]
        self.heads = sorted({min(int(h), self.n_players) for h in heads} | {self.n_players})
        self.small = small
        # rank of every training point for every test point, with a sentinel player N (rank N, no match)
        self.rank = np.full((self.n_test, self.n_players + 1), self.n_players, dtype=np.int32)
        np.put_along_axis(self.rank, self.order, np.arange(self.n_players, dtype=np.int32)[None, :], axis=1)
        self.match_by_rank = np.hstack([self.match, np.zeros((self.n_test, 1), dtype=bool)])

    def _hits(self, ranked: np.ndarray, match: np.ndarray):
        """Matches among the first K members of each row of ``ranked``, and whether it holds K members."""
        seen = np.cumsum(ranked, axis=-1, dtype=np.int32)
        return (ranked & (seen <= self.k) & match).sum(axis=-1), seen[..., -1] >= self.k

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        sizes = masks.sum(axis=1)
        out = np.empty(masks.shape[0])
        few = sizes <= self.small
        if few.any():
            out[few] = self._evaluate_small(masks[few], sizes[few])
        if not few.all():
            out[~few] = self._evaluate_large(masks[~few])
        return out

    def _evaluate_small(self, masks: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Coalitions of at most ``small`` players: the ``K`` smallest ranks among their members."""
        width = max(int(sizes.max()), self.k)
        members = np.full((masks.shape[0], width), self.n_players, dtype=np.int64)  # padded with the sentinel
        rows, cols = np.nonzero(masks)
        members[rows, np.arange(rows.size) - np.concatenate([[0], np.cumsum(sizes)[:-1]])[rows]] = cols
        out = np.empty(masks.shape[0])
        step = max(1, 2**22 // (self.n_test * width))
        for lo in range(0, masks.shape[0], step):
            ranks = self.rank[:, members[lo:lo + step]]  # (n_test, rows, width)
            nearest = np.partition(ranks, self.k - 1, axis=2)[:, :, :self.k] if width > self.k else ranks
            hits = np.take_along_axis(self.match_by_rank, nearest.reshape(self.n_test, -1),
                                      axis=1).reshape(nearest.shape)
            out[lo:lo + step] = hits.sum(axis=(0, 2)) / (self.k * self.n_test)
        return out

    def _evaluate_large(self, masks: np.ndarray) -> np.ndarray:
        m, first = masks.shape[0], self.heads[0]
        out = np.empty(m)
        rows_per_chunk = max(1, 2**22 // (self.n_test * first))
        for lo in range(0, m, rows_per_chunk):
            block = masks[lo:lo + rows_per_chunk]
            hits, done = self._hits(block[:, self.order[:, :first]], self.match[None, :, :first])
            rows, tests = np.nonzero(~done)  # fewer than K members among the nearest `first`
            for head in self.heads[1:]:
                if rows.size == 0:
                    break
                step = max(1, 2**22 // head)
                still = []
                for start in range(0, rows.size, step):
                    r, t = rows[start:start + step], tests[start:start + step]
                    h, d = self._hits(block[r[:, None], self.order[t, :head]], self.match[t, :head])
                    hits[r, t] = h
                    still.append(~d)
                keep = np.concatenate(still)
                rows, tests = rows[keep], tests[keep]
            out[lo:lo + block.shape[0]] = hits.sum(axis=1) / (self.k * self.n_test)
        return out


# --------------------------------------------------------------------------- pyDVL adapters


class Counter:
    """Shared by the copies pyDVL makes of a utility (``with_dataset`` copies shallowly)."""

    def __init__(self):
        self.count = 0


def pydvl_game_utility(game, counter: Counter | None = None, empty_utility: float | None = None):
    """A pyDVL ``UtilityBase`` calling ``game._evaluate`` on the mask of each sample.

    Every non-empty subset counts as one evaluation; the empty set is
    evaluated once here and returned for free afterwards (pyDVL's own
    ``ModelUtility`` returns its scorer's default for it), so it counts once.
    """
    from pydvl.valuation.utility.base import UtilityBase

    counter = counter or Counter()
    n = game.n_players
    if empty_utility is None:
        empty_utility = float(game._evaluate(np.zeros((1, n), dtype=bool))[0])
    counter.count += 1

    class GameUtility(UtilityBase):
        def __init__(self):
            self.counter, self.empty = counter, empty_utility

        def __call__(self, sample) -> float:
            if sample is None or len(sample.subset) == 0:
                return self.empty
            self.counter.count += 1
            mask = np.zeros((1, n), dtype=bool)
            mask[0, np.asarray(sample.subset, dtype=np.int64)] = True
            return float(game._evaluate(mask)[0])

    return GameUtility(), counter


def pydvl_players(n: int):
    """A pyDVL dataset of ``n`` players (the utility ignores its features)."""
    from pydvl.valuation import Dataset

    return Dataset(np.arange(n, dtype=float).reshape(-1, 1), np.zeros(n))


def max_evaluations(counter: Counter, budget: int):
    """pyDVL stopping criterion: stop once ``counter`` reaches ``budget`` evaluations."""
    from pydvl.utils.status import Status
    from pydvl.valuation.stopping import StoppingCriterion

    class MaxEvaluations(StoppingCriterion):
        def _check(self, result):
            if counter.count >= budget:
                self._converged = np.full(len(result.indices), True)
                return Status.Converged
            return Status.Pending

        def completion(self) -> float:
            return min(1.0, counter.count / budget)

    return MaxEvaluations()


def pydvl_values(result, n: int) -> np.ndarray:
    values = np.zeros(n)
    values[np.asarray(result.indices, dtype=np.int64)] = np.nan_to_num(np.asarray(result.values, dtype=float))
    return values


# ------------------------------------------------------------------ part 1: throughput


def draw_masks(rng, m, n):
    """``m`` random coalitions of ``n`` players, sizes uniform on 1..n (as utility_throughput.py)."""
    k = rng.integers(1, n + 1, size=m)
    order = rng.random((m, n)).argsort(axis=1)
    return order < k[:, None]


def throughput_case(name, X_train, y_train, X_test, y_test, *, n_ours, n_pydvl, n_perms, rng) -> dict:
    from pydvl.valuation import Dataset, ModelUtility as PydvlModelUtility, SupervisedScorer
    from pydvl.valuation.types import Sample
    from sklearn.linear_model import LogisticRegression

    n = len(y_train)
    masks = draw_masks(rng, n_ours, n)
    train, test = Dataset(X_train, y_train), Dataset(X_test, y_test)
    scorer = SupervisedScorer("neg_log_loss", test, default=LOG_EPS, range=(LOG_EPS, 0.0))
    utility = PydvlModelUtility(LogisticRegression(), scorer, catch_errors=True,
                                show_warnings=False).with_dataset(train)
    samples = [Sample(None, np.flatnonzero(mask)) for mask in masks[:n_pydvl]]
    start = time.perf_counter()
    u_pydvl = np.array([utility(sample) for sample in samples])
    t_pydvl = time.perf_counter() - start

    ours = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss")
    start = time.perf_counter()
    u_ours = ours.evaluate(masks)
    t_ours = time.perf_counter() - start
    info = dict(ours.last_fit_info_)

    routed = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, metric="neg_log_loss", fast="auto")
    start = time.perf_counter()
    u_routed = routed.evaluate(masks)
    t_routed = time.perf_counter() - start

    online = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss")
    permutations = np.array([rng.permutation(n) for _ in range(n_perms)])
    start = time.perf_counter()
    online.evaluate_prefixes(permutations)
    t_online = time.perf_counter() - start

    exact_prefixes = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", prefix_path="exact")
    start = time.perf_counter()
    exact_prefixes.evaluate_prefixes(permutations)
    t_exact_prefixes = time.perf_counter() - start

    classes = np.unique(y_train)
    all_classes = np.array([np.unique(y_train[mask]).size == classes.size for mask in masks[:n_pydvl]])
    gap = np.abs(u_ours[:n_pydvl] - u_pydvl)[all_classes]
    routed_gap = np.abs(u_routed[:n_pydvl] - u_pydvl)[all_classes]
    return {"name": name, "n": n, "n_test": len(y_test), "features": X_train.shape[1], "classes": classes.size,
            "n_pydvl": n_pydvl, "t_pydvl": t_pydvl, "n_ours": n_ours, "t_ours": t_ours,
            "n_online": permutations.size, "t_online": t_online, "t_exact_prefixes": t_exact_prefixes,
            "t_routed": t_routed, "route": routed.route_, "solver": info.get("solver", "?"),
            "routed_max_gap": float(routed_gap.max()) if routed_gap.size else float("nan"),
            "n_compared": int(all_classes.sum()), "n_excluded": int((~all_classes).sum()),
            "max_gap": float(gap.max()) if gap.size else float("nan"),
            "mean_gap": float(gap.mean()) if gap.size else float("nan")}


def load_mnist(dim: int = 50):
    from shapley_research.datasets import load_mnist_subset, pca_features

    X_train, y_train, X_test, y_test = load_mnist_subset(1000, 500, seed=0, scale=True)
    Z_train, Z_test, explained = pca_features(X_train, X_test, dim)
    return Z_train, y_train, Z_test, y_test, explained


def throughput_part(quick: bool, rng) -> tuple[list[dict], float]:
    from shapley_research.datasets import load_iris_split

    iris = load_iris_split(n_train=100, n_test=50, seed=0)
    Z_train, y_train, Z_test, y_test, explained = load_mnist()
    cases = []
    log("part 1: throughput on iris ...")
    cases.append(throughput_case("iris LR (3 classes)", *iris, n_ours=1000 if quick else 5000,
                                 n_pydvl=60 if quick else 400, n_perms=20 if quick else 100, rng=rng))
    log("part 1: throughput on MNIST ...")
    cases.append(throughput_case("MNIST LR (10 classes)", Z_train, y_train, Z_test, y_test,
                                 n_ours=40 if quick else 400, n_pydvl=10 if quick else 100,
                                 n_perms=1 if quick else 4, rng=rng))
    return cases, explained


# ------------------------------------------------------- part 2: group testing at scale


def _status_kib(pid: int | str, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _emit(record: dict) -> None:
    print("@@" + json.dumps(record), flush=True)


def gt_worker(config: dict) -> None:
    """One group-testing run in a fresh process; prints ``@@{json}`` records as it goes."""
    quiet_warnings()
    n, tests, side = config["n"], config["tests"], config["side"]
    traced = config.get("traced", False)
    with threadpool_limits(1):
        game = CheapGame(n)
        if side == "ours":
            kwargs = dict(seed=GT_SEED, variant=config["variant"], recovery=config["recovery"], progress=False)
            group_testing_shapley(CheapGame(50), 500, **kwargs)  # warm-up: imports, solver
            run = lambda: group_testing_shapley(game, tests + 2, **kwargs)
        else:
            import cvxpy as cp
            import pydvl.valuation.methods.gt_shapley as gt
            from pydvl.valuation import GroupTestingShapleyValuation

            original_create, original_solve = gt.create_group_testing_problem, cp.Problem.solve
            started = [None]  # set when the measured run starts: the warm-up emits nothing

            def create(*args, **kw):
                problem = original_create(*args, **kw)
                if started[0] is not None:
                    _emit({"stage": "tests sampled, N x N differences computed",
                           "at": time.perf_counter() - started[0]})
                return problem

            def solve(self, *args, **kw):
                if started[0] is not None:
                    _emit({"stage": f"{len(self.constraints):,} constraints built, solving",
                           "at": time.perf_counter() - started[0]})
                return original_solve(self, *args, **kw)

            gt.create_group_testing_problem, cp.Problem.solve = create, solve
            small = CheapGame(20)
            GroupTestingShapleyValuation(pydvl_game_utility(small)[0], n_samples=200, epsilon=config["epsilon"],
                                         progress=False, seed=0).fit(pydvl_players(20))  # warm-up

            def run():
                utility, _ = pydvl_game_utility(game)
                valuation = GroupTestingShapleyValuation(utility, n_samples=tests, epsilon=config["epsilon"],
                                                         progress=False, seed=GT_SEED)
                started[0] = time.perf_counter()
                valuation.fit(pydvl_players(n))
                return valuation.result

        gc.collect()
        rss_before = _rss_bytes()
        hwm_reset = _reset_peak_rss()
        _emit({"stage": "started", "at": 0.0, "rss_before": rss_before, "since_launch": time.perf_counter() - _T0})
        if traced:
            tracemalloc.start()
        start = time.perf_counter()
        result = run()
        seconds = time.perf_counter() - start
        peak_traced = tracemalloc.get_traced_memory()[1] if traced else None
        if traced:
            tracemalloc.stop()
        peak_rss = (_status_kib("self", "VmHWM") or 0) * 1024
    truth = game.shapley_values()
    values = result.values if side == "ours" else pydvl_values(result, n)
    record = {"stage": "done", "seconds": seconds, "peak_traced": peak_traced,
              "rss_growth": (peak_rss - rss_before) if hwm_reset else None,
              "rel_error": float(np.linalg.norm(values - truth) / np.linalg.norm(truth))}
    if side == "ours":
        record["tolerance"] = result.info.get("tolerance")
        record["status"] = result.info.get("status", "")
    else:
        record["status"] = str(result.status)
    _emit(record)


def run_gt_worker(config: dict, timeout: float, rss_limit: float) -> dict:
    """Run :func:`gt_worker` in a fresh process under a wall-time and a resident-memory limit."""
    script = _SNAPSHOT.get("script", os.path.abspath(__file__))
    cmd = [sys.executable, script, "--_gt-worker", json.dumps(config)]
    errors = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors, text=True, env=_SNAPSHOT.get("env"))
    start, peak_rss, killed = time.perf_counter(), 0, None
    while True:
        try:
            proc.wait(timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            pass
        rss = (_status_kib(proc.pid, "VmRSS") or 0) * 1024
        peak_rss = max(peak_rss, rss)
        elapsed = time.perf_counter() - start
        if elapsed > timeout:
            killed = f"did not finish in {timeout:.0f} s"
        elif rss > rss_limit:
            killed = f"exceeded {rss_limit / GIB:.0f} GiB resident ({rss / GIB:.1f} GiB at {elapsed:.0f} s)"
        if killed:
            proc.kill()
            proc.wait()
            break
    elapsed = time.perf_counter() - start
    stdout, _ = proc.communicate()
    errors.seek(0)
    stderr = errors.read()
    errors.close()
    records = [json.loads(line[2:]) for line in stdout.splitlines() if line.startswith("@@")]
    result = {**config, "records": records, "killed": killed, "monitor_peak_rss": peak_rss, "elapsed": elapsed}
    done = [r for r in records if r.get("stage") == "done"]
    if done:
        result.update(done[-1])
    elif not killed:
        raise RuntimeError(f"worker {config} failed:\n{stderr[-4000:]}")
    else:
        started = [r for r in records if r.get("stage") == "started"]
        # time the measured call had run when killed (process start-up and warm-up excluded)
        result["measured_before_kill"] = elapsed - started[0]["since_launch"] if started else 0.0
        stages = [r for r in records if r.get("stage") not in ("started", "done")]
        result["last_stage"] = (f"{stages[-1]['stage']} (at {stages[-1]['at']:.1f} s)" if stages
                                else "sampling tests / computing the N x N differences")
    return result


def gt_part(sizes, tests, timeout, rss_limit, pydvl_traced_max_s) -> list[dict]:
    results = []
    for n in sizes:
        tolerance = None
        for variant, recovery in (("paper", "cvxpy"), ("paper", "closed_form"), ("improved", "closed_form")):
            config = {"side": "ours", "n": n, "tests": tests, "variant": variant, "recovery": recovery}
            log(f"part 2: ours N={n:,} T={tests:,} {variant}/{recovery} (fresh processes) ...")
            timed = run_gt_worker(config, timeout, rss_limit)
            traced = run_gt_worker({**config, "traced": True}, timeout, rss_limit)
            timed["peak_traced"] = traced.get("peak_traced")
            results.append(timed)
            if recovery == "cvxpy":
                tolerance = timed.get("tolerance")
        config = {"side": "pydvl", "n": n, "tests": tests, "epsilon": float(tolerance)}
        log(f"part 2: pyDVL N={n:,} T={tests:,} (fresh process, limits {timeout:.0f} s and "
            f"{rss_limit / GIB:.0f} GiB) ...")
        timed = run_gt_worker(config, timeout, rss_limit)
        if not timed["killed"] and timed["seconds"] <= pydvl_traced_max_s:
            log(f"part 2: pyDVL N={n:,} again under tracemalloc ...")
            traced = run_gt_worker({**config, "traced": True}, max(timeout, 5 * timed["seconds"] + 60), rss_limit)
            timed["peak_traced"] = traced.get("peak_traced")
            timed["traced_seconds"] = traced.get("seconds")
            timed["traced_killed"] = traced["killed"]
        results.append(timed)
    return results


# ------------------------------------------------------- part 3: error at equal budgets


def rotations_for(n: int, budget: int, most: int = 16) -> int:
    """Rotations per antithetic pair: ``most``, or as many as the budget affords in one group (at least 1)."""
    return int(np.clip((budget - 1) // (2 * n), 1, most))


def our_estimators(with_compressive: bool) -> dict:
    common = dict(progress=False)
    estimators = {
        "permutation": lambda game, budget, seed: permutation_shapley(game, budget, seed, **common),
        "permutation (antithetic)":
            lambda game, budget, seed: permutation_shapley(game, budget, seed, antithetic=True, **common),
        # m rotations per antithetic pair, m = min(16, pairs the budget affords): positions stratified
        "permutation (antithetic, rotations)": lambda game, budget, seed: permutation_shapley(
            game, budget, seed, antithetic=True, rotations=rotations_for(game.n_players, budget), **common),
        # two-way fit (player + position bin) of the antithetic pairs' contributions
        "permutation (antithetic, position-adjusted)": lambda game, budget, seed: permutation_shapley(
            game, budget, seed, antithetic=True, position_adjustment=True, **common),
        "group testing (improved)": lambda game, budget, seed: group_testing_shapley(game, budget, seed, **common),
        "stratified SVARM": lambda game, budget, seed: stratified_svarm_shapley(game, budget, seed, **common),
        # sizes drawn by the Neyman allocation estimated from a pilot of 5 N coalitions
        "stratified SVARM (Neyman)": lambda game, budget, seed: stratified_svarm_shapley(
            game, budget, seed, allocation="neyman", **common),
    }
    if with_compressive:
        estimators["compressive"] = lambda game, budget, seed: compressive_shapley(game, budget, seed, **common)
    return estimators


def pydvl_estimators() -> dict:
    """pyDVL's estimators of Shapley values that take a budget: ``build(utility, stop, seed, budget, n)``."""
    from pydvl.valuation import (AntitheticOwenSampler, AntitheticPermutationSampler, OwenSampler,
                                 PermutationSampler, RandomIndexIteration, ShapleyValuation,
                                 StratifiedShapleyValuation, TMCShapleyValuation, UniformOwenStrategy,
                                 VRDSSampler)

    def generic(make_sampler):
        def build(utility, stop, seed, budget, n):
            return ShapleyValuation(utility, make_sampler(seed, budget, n), stop, progress=False)
        return build

    owen = lambda cls: generic(lambda seed, budget, n: cls(UniformOwenStrategy(1, seed=seed), n_samples_inner=2,
                                                           index_iteration=RandomIndexIteration, seed=seed))
    return {
        "PermutationSampler": generic(lambda seed, budget, n: PermutationSampler(seed=seed)),
        "AntitheticPermutationSampler": generic(lambda seed, budget, n: AntitheticPermutationSampler(seed=seed)),
        "TMCShapleyValuation (default truncation)": lambda utility, stop, seed, budget, n: TMCShapleyValuation(
            utility, is_done=stop, seed=seed, progress=False),
        "StratifiedShapleyValuation": lambda utility, stop, seed, budget, n: StratifiedShapleyValuation(
            utility, is_done=stop, seed=seed, progress=False),
        "OwenSampler (uniform q)": owen(OwenSampler),
        "AntitheticOwenSampler (uniform q)": owen(AntitheticOwenSampler),
        # finite: budget / (2N) samples per index (2 evaluations each), sizes harmonic (Wu et al. 2023)
        "VRDSSampler": generic(lambda seed, budget, n: VRDSSampler(max(1, budget // (2 * n)), seed=seed)),
    }


def run_pydvl_estimator(build, game, budget: int, seed: int, empty_utility: float) -> tuple[np.ndarray, int, float]:
    counter = Counter()
    utility, _ = pydvl_game_utility(game, counter, empty_utility)
    valuation = build(utility, max_evaluations(counter, budget), seed, budget, game.n_players)
    start = time.perf_counter()
    valuation.fit(pydvl_players(game.n_players))
    return pydvl_values(valuation.result, game.n_players), counter.count, time.perf_counter() - start


def error_game(name, game, truth, permutations, seeds, with_compressive, screen_top=None,
               below=(0.5,)) -> dict:
    """Errors of every estimator of both libraries at budgets ``t * N + 2`` for ``t`` in ``permutations``.

    Our estimators also run at the fractions ``below`` of the smallest budget
    (default: half of it; pyDVL's are not run there: its errors are the
    targets), so that a curve of ours can show that it reaches pyDVL's
    smallest-budget error with half the evaluations (a curve already below
    that error at our smallest budget only gives an upper bound, hence a
    quarter where half is not enough).
    With ``screen_top``, every estimator runs up to the smallest budget both
    libraries run (ours also at half of it), and only the ``screen_top`` best
    of each library (by mean error at that common budget) at
    the others.
    """
    permutations = [permutations[0] * f for f in sorted(below)] + list(permutations)
    n = game.n_players
    budgets = [int(t * n) + 2 for t in permutations]  # our permutation sampling uses t * n + 1 of them
    empty_utility = float(game._evaluate(np.zeros((1, n), dtype=bool))[0])
    norm = np.linalg.norm(truth)
    rows = [{"library": library, "estimator": est_name, "run": run, "errors": [], "evaluations": [], "seconds": []}
            for library, estimators in (("shapley_research", our_estimators(with_compressive)),
                                        ("pyDVL", pydvl_estimators()))
            for est_name, run in estimators.items()]

    def measure(row, budget):
        log(f"part 3: {name}: {row['library']} {row['estimator']}, budget {budget:,} ...")
        errors, evaluations, seconds = [], [], []
        for seed in seeds:
            if row["library"] == "pyDVL":
                values, used, wall = run_pydvl_estimator(row["run"], game, budget - 1, seed, empty_utility)
            else:
                result = row["run"](game, budget, seed)
                values, used, wall = result.values, result.n_evaluations, result.wall_time
            errors.append(float(np.linalg.norm(values - truth) / norm))
            evaluations.append(int(used))
            seconds.append(wall)
        row["errors"].append(errors)
        row["evaluations"].append(evaluations)
        row["seconds"].append(seconds)

    first = {"shapley_research": 0, "pyDVL": len(below)}  # index of each library's smallest budget
    screen_at = max(first.values())  # the smallest budget both run: a fair screen (half a budget is not)
    for i, budget in enumerate(budgets):
        active = []
        for library, start in first.items():
            mine = [r for r in rows if r["library"] == library]
            if i < start:
                for row in mine:  # not run: a placeholder keeps the columns aligned
                    for key in ("errors", "evaluations", "seconds"):
                        row[key].append(None)
                continue
            if screen_top is not None and i > screen_at:
                mine = sorted(mine, key=lambda r: np.mean(r["errors"][screen_at]))[:screen_top]
            active += mine
        for row in active:
            measure(row, budget)
    for row in rows:
        del row["run"]
    return {"name": name, "n": n, "budgets": budgets, "permutations": list(permutations), "seeds": list(seeds),
            "screen_top": screen_top, "rows": rows}


def knn_game_setup(n_test: int, k: int, checks: int, rng) -> tuple:
    """The MNIST KNN game, its exact values, and the cross-checks (ours vs pyDVL, fast vs reference game)."""
    from pydvl.valuation import Dataset, KNNClassifierUtility, KNNShapleyValuation
    from pydvl.valuation.types import Sample
    from shapley_research import KNNUtility
    from sklearn.neighbors import KNeighborsClassifier

    Z_train, y_train, Z_test, y_test, _ = load_mnist()
    Z_test, y_test = Z_test[:n_test], y_test[:n_test]
    game = KNNGame(Z_train, y_train, Z_test, y_test, k)
    start = time.perf_counter()
    exact = knn_shapley(Z_train, y_train, Z_test, y_test, k).values
    t_ours = time.perf_counter() - start
    train, test = Dataset(Z_train, y_train), Dataset(Z_test, y_test)
    start = time.perf_counter()
    theirs = KNNShapleyValuation(KNeighborsClassifier(n_neighbors=k), test, progress=False).fit(train)
    t_theirs = time.perf_counter() - start
    pydvl_exact = pydvl_values(theirs.result, len(y_train))

    masks = draw_masks(rng, checks, len(y_train))
    masks[0] = True
    reference = KNNUtility(Z_train, y_train, Z_test, y_test, k).evaluate(masks)
    fast = game.evaluate(masks)
    # pyDVL's own KNN utility, on the same coalitions
    pydvl_utility = KNNClassifierUtility(KNeighborsClassifier(n_neighbors=k), test).with_dataset(train)
    pydvl_u = np.array([pydvl_utility(Sample(None, np.flatnonzero(mask))) for mask in masks])
    full_utility = float(reference[0])
    checks_out = {
        "n_train": len(y_train), "n_test": n_test, "k": k,
        "exact_max_diff": float(np.abs(exact - pydvl_exact).max()),
        "exact_scale": float(np.abs(exact).max()), "t_exact_ours": t_ours, "t_exact_pydvl": t_theirs,
        "efficiency_gap": float(abs(exact.sum() - full_utility)),
        "fast_vs_reference": float(np.abs(fast - reference).max()), "n_masks": checks,
        "pydvl_utility_max_diff": float(np.abs(pydvl_u - reference).max()),
        "pydvl_utility_n_differ": int((np.abs(pydvl_u - reference) > 1e-12).sum()),
    }
    return game, exact, checks_out


def error_part(quick: bool, rng) -> tuple[list[dict], dict]:
    games = []
    seeds = range(2) if quick else range(4)
    airport = AirportGame(100, seed=1)
    games.append(error_game("airport, N = 100 (closed form)", airport, airport.shapley_values(),
                            [10, 30] if quick else [10, 30, 100, 300], seeds, True, below=(0.25, 0.5)))
    cheap = CheapGame(200, seed=2)
    games.append(error_game("linear + sqrt + unanimity, N = 200 (closed form)", cheap, cheap.shapley_values(),
                            [10, 30] if quick else [10, 30, 100], seeds, True))
    log("part 3: KNN game on MNIST: exact values and cross-checks ...")
    knn, exact, checks = knn_game_setup(20 if quick else 100, 5, 50 if quick else 300, rng)
    games.append(error_game(f"KNN-Shapley, {checks['n_train']:,} MNIST images, K = {checks['k']}, "
                            f"{checks['n_test']} test images (exact)", knn, exact,
                            [6, 10] if quick else [10, 30, 100], range(1) if quick else range(3), not quick,
                            screen_top=2))
    return games, checks


# --------------------------------------------------------------------------- analysis


def our_evaluations_to_reach(rows, target) -> tuple[float, str, str]:
    """Fewest evaluations any of our estimators needs to reach ``target`` error: (value, kind, estimator).

    Measured results (``kind`` "interpolated" or "at most") are preferred; an
    extrapolation is used only when no estimator reaches the target inside
    its measured range.
    """
    options = []
    for r in rows:
        if r["library"] != "shapley_research" or len(r["errors"]) < 2:
            continue
        needed, kind = evaluations_to_reach([np.mean(u) for u in r["evaluations"]],
                                            [np.mean(e) for e in r["errors"]], target)
        if np.isfinite(needed):
            options.append((kind == "extrapolated", needed, kind, r["estimator"]))
    if not options:
        return float("nan"), "not reached", "none"
    _, needed, kind, name = min(options)
    return needed, kind, name


def evaluations_to_reach(budgets, errors, target) -> tuple[float, str]:
    """Budget at which the curve ``errors(budgets)`` (budgets ascending) first reaches ``target``.

    * ``"interpolated"``: log-log interpolation between the last budget above
      the target and the first at or below it;
    * ``"at most"``: the smallest budget is already at or below the target
      (a measured upper bound);
    * ``"extrapolated"``: no budget reaches it; the power law fitted to the
      whole curve is extended (``nan`` if the fit does not decrease).
    """
    x, y = np.log(np.asarray(budgets, float)), np.log(np.asarray(errors, float))
    t = np.log(target)
    below = np.flatnonzero(y <= t)
    if below.size:
        i = below[0]
        if i == 0:
            return float(budgets[0]), "at most"
        return float(np.exp(x[i - 1] + (t - y[i - 1]) * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))), "interpolated"
    slope, intercept = np.polyfit(x, y, 1)
    if slope >= 0:
        return float("nan"), "extrapolated"
    return float(np.exp((t - intercept) / slope)), "extrapolated"


# --------------------------------------------------------------------------- output


def _table(headers, rows, markdown) -> str:
    cells = [[str(c) for c in row] for row in rows]
    if markdown:  # blank lines around: a table cannot interrupt a paragraph
        lines = ["", "| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells] + [""])
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    fmt = lambda row: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in cells])


def _verdict(ok) -> str:
    return "OK" if ok else "MISS"


def _fmt_mib(value) -> str:
    return "n/a" if value is None else f"{value / MIB:,.1f}"


def report(info, load, throughput, explained, gt, gt_tests, errors, checks, wall, quick, markdown) -> str:
    out, goals = [], []
    v = info["versions"]
    out.append(f"Machine: {info['cpu']}, {info['cores']} cores ({info['machine']}), {info['system']}")
    out.append(f"Versions: Python {v['python']}, numpy {v['numpy']}, scikit-learn {v['sklearn']}, "
               f"scipy {v['scipy']}, cvxpy {v['cvxpy']}, pyDVL {v['pydvl']}, "
               f"shapley_research {v['shapley_research']}")
    lib = info["library"]
    out.append(f"shapley_research: git commit {lib['commit']}"
               + (f" with uncommitted changes to {', '.join(lib['modified'])}" if lib["modified"] else "")
               + f" (sources sha256 {lib['sources_sha256']}); worker processes ran a copy taken at start.")
    out.append(f"Date: {info['date']}. Load average (1 min) at start / end: {load[0]:.2f} / {load[1]:.2f}. "
               f"Benchmark wall time: {wall / 60:.1f} min{' (--quick)' if quick else ''}.")
    out.append("BLAS/OpenMP limited to 1 thread (threadpoolctl) on both sides, in every process.")
    out.append("")

    out.append("1. Utility evaluations per second, logistic regression U(S) = -log-loss on a fixed test set, "
               "same random subsets (sizes uniform on 1..N) on both sides.")
    out.append(f"   MNIST: pixels / 255, PCA to 50 components fitted on the 1,000 training images "
               f"({explained:.1%} of the variance), 500 test images; iris: 100 training / 50 test flowers.")
    headers = ["game", "method", "subsets", "seconds", "evals/s", "vs pyDVL"]
    rows = []
    for c in throughput:
        base = c["n_pydvl"] / c["t_pydvl"]
        for label, count, seconds in (
                ("pyDVL ModelUtility(LogisticRegression()), one fit per subset", c["n_pydvl"], c["t_pydvl"]),
                (f"ours LogisticRegressionUtility.evaluate (exact, {c['solver']}, tol 1e-6)", c["n_ours"],
                 c["t_ours"]),
                ("ours ModelUtility(LogisticRegression(), fast='auto') (scikit-learn's tol 1e-4)", c["n_ours"],
                 c["t_routed"]),
                ("ours evaluate_prefixes, prefix_path='exact' (a refit of every prefix of a permutation)",
                 c["n_online"], c["t_exact_prefixes"]),
                ("ours evaluate_prefixes (one-pass APPROXIMATION, reference only)", c["n_online"], c["t_online"])):
            rate = count / seconds
            rows.append([c["name"], label, f"{count:,}", f"{seconds:.2f}", f"{rate:,.1f}", f"{rate / base:,.1f}x"])
    out.append(_table(headers, rows, markdown))
    for c in throughput:
        out.append(f"   {c['name']}: ours vs pyDVL on {c['n_compared']} common subsets holding every class: "
                   f"max |dU| = {c['max_gap']:.2e}, mean {c['mean_gap']:.2e} (pyDVL's scikit-learn stops at "
                   f"tol=1e-4, ours at 1e-6; {c['n_excluded']} subsets missing a class left out); "
                   f"fast='auto' at tol 1e-4: max |dU| = {c['routed_max_gap']:.2e}; its route: {c['route']}")
        ratio = (c["n_ours"] / c["t_ours"]) / (c["n_pydvl"] / c["t_pydvl"])
        goals.append(f"throughput {c['name']}: {ratio:,.1f}x pyDVL (goal >= {THROUGHPUT_GOAL:g}x) "
                     f"{_verdict(ratio >= THROUGHPUT_GOAL)}")
    out.append("")

    out.append(f"2. Group testing, T = {gt_tests:,} tests on both sides, cheap closed-form game (linear + "
               "5 sqrt(|S|) + 10 unanimity terms), each row a fresh process.")
    out.append("   RSS growth = peak resident set during the call minus the resident set before it (includes "
               "the solvers' C memory); traced peak = tracemalloc peak (Python and numpy allocations only), "
               "measured in a second fresh process.")
    headers = ["N", "library / method", "wall s", "RSS growth MiB", "traced peak MiB", "rel. error", "status"]
    rows = []
    for r in gt:
        if r["side"] == "ours":
            label = f"ours group_testing_shapley {r['variant']} / {r['recovery']}"
        else:
            label = f"pyDVL GroupTestingShapleyValuation (epsilon = {r['epsilon']:.3g})"
        if r.get("killed"):
            peak = r["monitor_peak_rss"]
            rows.append([f"{r['n']:,}", label, f"> {r['measured_before_kill']:.0f} (killed)",
                         f">= {peak / MIB:,.0f} (process RSS)", "n/a", "n/a",
                         f"{r['killed']}; reached: {r['last_stage']}"])
            continue
        traced = _fmt_mib(r.get("peak_traced"))
        if r["side"] == "pydvl" and r.get("peak_traced") is None:
            traced = "not measured" if not r.get("traced_killed") else f"n/a ({r['traced_killed']})"
        rows.append([f"{r['n']:,}", label, f"{r['seconds']:.2f}", _fmt_mib(r.get("rss_growth")), traced,
                     f"{r['rel_error']:.3f}", r.get("status") or ""])
    out.append(_table(headers, rows, markdown))
    out.append("   pyDVL stages reached (seconds into the measured call): " + "; ".join(
        f"N={r['n']:,}: " + (", ".join(f"{s['stage']} at {s['at']:.1f} s" for s in r["records"]
                                        if s.get("stage") not in ("started", "done"))
                             or "still sampling tests / computing the N x N differences")
        for r in gt if r["side"] == "pydvl"))
    out.append("   (rel. error against the closed-form values: a sanity check that both sides return estimates; "
               "Algorithm 1 needs far more tests than this for accuracy.)")
    for n in sorted({r["n"] for r in gt}):
        ours = [r for r in gt if r["n"] == n and r["side"] == "ours" and r["recovery"] == "cvxpy"][0]
        theirs = [r for r in gt if r["n"] == n and r["side"] == "pydvl"][0]
        if theirs.get("killed"):
            bound = theirs["measured_before_kill"] / ours["seconds"]
            goals.append(f"group testing time N={n:,}: pyDVL {theirs['killed']} (stage: {theirs['last_stage']}); "
                         f"ours (paper, cvxpy recovery) {ours['seconds']:.2f} s, so > {bound:,.0f}x "
                         f"(a lower bound) (goal >= {GT_TIME_GOAL:g}x) {_verdict(bound >= GT_TIME_GOAL)}")
        else:
            ratio = theirs["seconds"] / ours["seconds"]
            goals.append(f"group testing time N={n:,}: pyDVL {theirs['seconds']:.1f} s, ours (paper, cvxpy "
                         f"recovery) {ours['seconds']:.2f} s: {ratio:,.0f}x (goal >= {GT_TIME_GOAL:g}x) "
                         f"{_verdict(ratio >= GT_TIME_GOAL)}")
    out.append("")

    out.append("3. Relative error ||v_hat - v|| / ||v|| at equal budgets of utility evaluations "
               "(mean over seeds; min-max in brackets).")
    out.append(f"   KNN checks: exact values, ours (knn_shapley, {checks['t_exact_ours']:.2f} s) vs pyDVL "
               f"KNNShapleyValuation ({checks['t_exact_pydvl']:.2f} s): max |diff| = {checks['exact_max_diff']:.2e} "
               f"(largest value {checks['exact_scale']:.2e}); efficiency |sum(v) - U(D)| = "
               f"{checks['efficiency_gap']:.1e}; the benchmark's fast KNN game vs KNNUtility on "
               f"{checks['n_masks']} random coalitions: max |dU| = {checks['fast_vs_reference']:.1e}.")
    out.append(f"   pyDVL's own KNNClassifierUtility differs from the KNN utility on "
               f"{checks['pydvl_utility_n_differ']} of the same {checks['n_masks']} coalitions (max |dU| = "
               f"{checks['pydvl_utility_max_diff']:.3f}): it keeps only the K nearest neighbours of the full "
               "training set that lie in S instead of the K nearest points of S, a different game whose "
               "Shapley values are not KNN-Shapley. So both libraries' samplers value the same utility "
               "function here (the benchmark's KNN game, wrapped for pyDVL).")
    for g in errors:
        out.append("")
        out.append(f"   {g['name']}, seeds {len(g['seeds'])}:")
        budgets = [f"budget {b:,} ({t:g} x N)" for b, t in zip(g["budgets"], g["permutations"])]
        headers = ["library", "estimator"] + budgets + ["s per run (its largest budget run)"]
        rows = []
        for r in g["rows"]:
            cells = []
            for budget, errs, used in zip(g["budgets"], r["errors"], r["evaluations"]):
                if errs is None:
                    cells.append("not run (targets)")
                    continue
                cell = f"{np.mean(errs):.4f} [{np.min(errs):.4f}-{np.max(errs):.4f}]"
                if abs(np.mean(used) - budget) > 0.005 * budget:
                    cell += f" ({np.mean(used):,.0f} evals used)"
                cells.append(cell)
            cells += ["screened out"] * (len(g["budgets"]) - len(cells))
            rows.append([r["library"], r["estimator"], *cells, f"{np.mean(r['seconds'][-1]):.2f}"])
        out.append(_table(headers, rows, markdown))
        out.append("   (\"evals used\": TMC checks its budget after whole truncated permutations; VRDSSampler is "
                   "finite, budget / 2N samples per index, and stops when they are spent)")
        if g["screen_top"]:
            out.append(f"   (screening: every estimator ran at the smallest budget both libraries run (ours also at "
                       f"half of it), the {g['screen_top']} best of each library by mean error there at the larger "
                       "ones)")
        ratios, extrapolated, parts = [], [], []  # extrapolated: the kind of each ratio
        for j in range(len(g["budgets"])):
            ran = [r for r in g["rows"] if r["library"] == "pyDVL" and len(r["errors"]) > j
                   and r["errors"][j] is not None]
            if not ran:  # our extra smaller budgets
                continue
            theirs = min(ran, key=lambda r: np.mean(r["errors"][j]))
            target, spent = float(np.mean(theirs["errors"][j])), float(np.mean(theirs["evaluations"][j]))
            needed, kind, mine = our_evaluations_to_reach(g["rows"], target)
            ratio = needed / spent
            ratios.append(ratio)
            extrapolated.append(kind)
            bound = "<= " if kind == "at most" else ""
            note = {"interpolated": "", "at most": " (reached at our smallest budget: an upper bound)",
                    "extrapolated": " (EXTRAPOLATED: not reached within our budgets)",
                    "not reached": " (not reached, no decreasing fit)"}[kind]
            parts.append(f"error {target:.4f}: pyDVL {theirs['estimator']} {spent:,.0f} evaluations, ours "
                         f"{mine} {bound}{needed:,.0f}{note} -> {bound}{ratio:.2f}x")
        out.append("   Evaluations to reach the error of pyDVL's best estimator at each budget (ours: the estimator "
                   "needing the fewest, by log-log interpolation of its error curve):")
        out += [("   - " if markdown else "     ") + p for p in parts]
        finite = [i for i, r in enumerate(ratios) if np.isfinite(r)]
        worst = max(finite, key=lambda i: ratios[i]) if finite else len(ratios) - 1
        # used at once, in this iteration: the extrapolated it reads is the current one
        tag = lambda i: {"interpolated": "", "at most": " (an upper bound)", "extrapolated": " (extrapolated)",
                         "not reached": " (not reached)"}[extrapolated[i]]  # noqa: B023
        ok = bool(finite) and ratios[worst] <= EVALUATIONS_GOAL
        goals.append(f"equal error, {g['name']}: ours needs {ratios[-1]:.2f}x{tag(len(ratios) - 1)} pyDVL's "
                     f"evaluations at its largest budget, {ratios[worst]:.2f}x{tag(worst)} at worst over its "
                     f"budgets (goal <= {EVALUATIONS_GOAL:g}x) {_verdict(ok)}")
    out.append("")
    out.append("Goals:")
    out += [("- " if markdown else "  ") + g for g in goals]
    return "\n".join(out)


# ----------------------------------------------------------------------------- main


def main(argv=None) -> int:
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
    args = parser.parse_args(argv)
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
        with open(args.from_raw) as f:
            raw = json.load(f)
    else:
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
        shutil.rmtree(_SNAPSHOT["folder"], ignore_errors=True)
        if args.raw:
            with open(args.raw, "w") as f:
                json.dump(raw, f, default=float)
    report_args = [raw[key] for key in ("info", "load", "throughput", "explained", "gt", "gt_tests", "errors",
                                        "checks", "wall", "quick")]
    print(report(*report_args, markdown=False))
    if args.output:
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        with open(args.output, "w") as f:
            f.write("# shapley_research vs pyDVL, side by side\n\n"
                    f"Written by `python benchmarks/pydvl_comparison.py{' --quick' if raw['quick'] else ''}` "
                    "(every number below comes from that run).\n\n"
                    + report(*report_args, markdown=True) + "\n")
        print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
