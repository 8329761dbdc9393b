"""Overhead of the core estimators, and group-testing recovery time and memory at scale.

Run ``python benchmarks/core_overhead.py`` (``--quick`` for a smoke run,
``--output PATH`` to also write the tables as markdown). Two measurements,
side by side in one run:

1. **Overhead on a cheap vectorised game, at N = 1,000 and at scale.** Each
   estimator is run once on a recording wrapper of the game that keeps every
   mask matrix passed to ``evaluate``; it is then timed on the plain game (same
   seed, so the same masks are drawn; the values are checked to be identical),
   and the recorded matrices are timed through ``game.evaluate`` directly. The
   ratio ``estimator time / direct evaluation time`` is what the estimator
   costs on top of the utility evaluations it needs (goal: <= 1.5x), and one
   more run under ``tracemalloc`` gives its peak memory. Every sampling
   estimator (permutation sampling plain, antithetic, with rotations, with
   position adjustment and truncated; both group testing variants;
   compressive sampling with M = 500 measurements, with and without its l1
   recovery, a fixed cost; stratified SVARM; MSR Banzhaf; Beta(16, 1) Shapley;
   Owen sampling; unbiased KernelSHAP) runs at N = 1,000 with 10^6 evaluations
   and, but for SVARM, at N = 20,000 with 4N + 2 (Owen: one sweep, 4(N + 1));
   SVARM, whose state is O(N^2), at its largest size, N = 2,048;
   the estimators whose solve is the method (KernelSHAP and Leverage SHAP,
   100N + 2; AME's lasso and the least core's interior-point method, 10N + 2)
   at N = 1,000 only, with no overhead goal;
   group testing and MSR at N = 100,000 with 20,002 evaluations (the direct
   side keeps every mask: 1.6 and 2 GB). The time cvxpy takes for the
   compressive l1 problem is printed beside it at N = 1,000.

2. **Group testing at N = 10,000.** Sampling and recovery (closed form and the
   O(N)-constraint cvxpy problem) are timed separately and the peak memory of
   the whole estimator is measured with ``tracemalloc`` (numpy buffers are
   traced) and as the growth of the peak resident set, each configuration in a
   fresh subprocess. N = 2,500 and 5,000 with the same number of tests, and
   twice the tests at N = 10,000, show how the peak grows with N and T; it is
   compared with an N x N float64 matrix and with the T x N mask matrix that
   the estimator never materialises.

BLAS/OpenMP pools are limited to one thread (``threadpoolctl``) for the
estimators and the direct evaluations alike, so both sides of each ratio use
the same resources.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

import shapley_research
from shapley_research import (Game, ame, beta_shapley, compressive_shapley, group_testing_shapley, kernel_shapley,
                              least_core, leverage_shapley, msr_banzhaf, owen_shapley, permutation_shapley,
                              stratified_svarm_shapley, unbiased_kernel_shapley)
from shapley_research.estimators import _compressive
from shapley_research.estimators import _group_testing

OVERHEAD_GOAL = 1.5
SVARM_LARGE_N_GOAL = 3.0  # issue 35: its O(N^2) statistics at N = 2,048, formed once per batch of 32 N coalitions
CVXPY_MAX_PLAYERS = 2_000  # the cvxpy reference of compressive sampling's l1 problem: only this small
RECOVERY_GOAL_S = 10.0  # "seconds": we read it as under ten seconds at N = 10,000
SEED = 20240601
MIB = 2.0**20
LOAD_AT_START = float("nan")


# --------------------------------------------------------------------------- games


class CheapGame(Game):
    r"""A cheap vectorised game with closed-form Shapley values.

    .. math::

        U(S) = \sum_{i \in S} w_i + c\sqrt{|S|} + \sum_j a_j [T_j \subseteq S]

    (a linear part, a concave symmetric part and a few unanimity terms on
    three-player sets). ``evaluate`` costs one ``(m, N) @ (N, 2)`` product plus
    a gather of ``3K`` columns: about a nanosecond per mask cell.
    """

    def __init__(self, n_players: int, n_unanimity: int = 10, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.n_players = n_players
        self.weights = rng.normal(0.0, 1.0, n_players)
        self.concave = 5.0
        self.sets = np.stack([rng.choice(n_players, 3, replace=False) for _ in range(n_unanimity)])
        self.set_weights = rng.normal(0.0, 2.0, n_unanimity)
        self._linear = np.column_stack([self.weights, np.ones(n_players)])

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        scores = masks @ self._linear
        unanimity = masks[:, self.sets].all(axis=2) @ self.set_weights
        return scores[:, 0] + self.concave * np.sqrt(scores[:, 1]) + unanimity

    def shapley_values(self) -> np.ndarray:
        values = self.weights + self.concave * np.sqrt(self.n_players) / self.n_players
        for members, weight in zip(self.sets, self.set_weights):
            values[members] += weight / len(members)
        return values


class RecordingGame:
    """Forwards ``evaluate`` to a game and keeps every mask matrix it was given.

    The matrices are kept by reference (the estimators never write to a matrix
    after evaluating it), so the direct evaluation later sees the very arrays,
    with the very memory layout, that the estimator passed.
    """

    def __init__(self, game):
        self.game = game
        self.n_players = game.n_players
        self.recorded: list[np.ndarray] = []

    def evaluate(self, masks):
        self.recorded.append(masks)
        return self.game.evaluate(masks)


class RecoveryTimer:
    """Times a module-level function that an estimator looks up at call time."""

    def __init__(self, module, name: str):
        self.module, self.name = module, name
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.last_call = None  # (args, kwargs, result) of the latest call

    def __enter__(self):
        self.original = getattr(self.module, self.name)

        def timed(*args, **kwargs):
            start, start_cpu = time.perf_counter(), time.process_time()
            try:
                result = self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self.cpu_seconds += time.process_time() - start_cpu
            self.last_call = (args, kwargs, result)
            return result

        setattr(self.module, self.name, timed)
        return self

    def __exit__(self, *exc):
        setattr(self.module, self.name, self.original)


# ------------------------------------------------------------------ part 1: overhead


def _clock():
    return time.perf_counter(), time.process_time()


def overhead_case(name: str, run, game: CheapGame, repeats: int, recovery=None) -> dict:
    """Time ``run(game)`` against a direct evaluation of the very masks it evaluates.

    Each repeat times the estimator and then, right after, the direct
    evaluation, so that a ratio is taken between two measurements made under
    the same machine load. ``recovery=(module, function_name)`` also times the
    recovery step inside the estimator, so that sampling can be reported alone.
    """
    recorder = RecordingGame(game)
    reference = run(recorder)
    recorded = recorder.recorded
    rows = sum(m.shape[0] for m in recorded)
    if rows != reference.n_evaluations:
        raise AssertionError(f"{name}: recorded {rows} evaluations, the result says "
                             f"{reference.n_evaluations}.")

    def direct():
        for masks in recorded:
            game.evaluate(masks)

    times = {key: [] for key in ("estimator", "estimator_cpu", "recovery", "recovery_cpu", "direct",
                                 "direct_cpu")}
    for _ in range(repeats):
        timer = RecoveryTimer(*recovery) if recovery is not None else None
        gc.collect()
        if timer is not None:
            timer.__enter__()
        try:
            wall, cpu = _clock()
            result = run(game)
            wall2, cpu2 = _clock()
        finally:
            if timer is not None:
                timer.__exit__(None, None, None)
        times["estimator"].append(wall2 - wall)
        times["estimator_cpu"].append(cpu2 - cpu)
        times["recovery"].append(timer.seconds if timer is not None else 0.0)
        times["recovery_cpu"].append(timer.cpu_seconds if timer is not None else 0.0)
        if not np.array_equal(result.values, reference.values):
            raise AssertionError(f"{name}: the timed run differs from the recorded run.")
        gc.collect()
        wall, cpu = _clock()
        direct()
        wall2, cpu2 = _clock()
        times["direct"].append(wall2 - wall)
        times["direct_cpu"].append(cpu2 - cpu)
    gc.collect()
    tracemalloc.start()
    run(game)
    peak_traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rmse = float(np.sqrt(np.mean((reference.values - game.shapley_values()) ** 2)))
    scale = float(np.sqrt(np.mean(game.shapley_values() ** 2)))
    extra = {}
    if recovery == (_compressive, "l1_recovery") and game.n_players <= CVXPY_MAX_PLAYERS:
        extra = cvxpy_reference(*timer.last_call)
    return {
        "name": name, "evaluations": reference.n_evaluations, "calls": len(recorded),
        "batch_size": reference.info.get("batch_size"), **times, "rel_rmse": rmse / scale,
        "peak_traced": peak_traced, **extra,
    }


def cvxpy_reference(args, kwargs, result) -> dict:
    """Solve the compressive l1 problem of the last timed run again with cvxpy (CLARABEL), once.

    For reference only: the time of the cone program the homotopy replaces,
    and how closely the two solutions agree (max abs difference / max abs value).
    """
    import cvxpy  # noqa: F401  (import time is not solve time)

    start = time.perf_counter()
    values, status = _compressive.l1_recovery(*args, **{**kwargs, "method": "cvxpy", "solver": "CLARABEL"})
    seconds = time.perf_counter() - start
    agreement = float(np.abs(values - result[0]).max() / np.abs(values).max())
    return {"cvxpy_s": seconds, "cvxpy_status": status, "cvxpy_agreement": agreement}


def _case_runs(common: dict) -> dict:
    """Every sampling estimator, by name: ``(family, run(game, budget), recovery to time or None)``."""
    return {
        "permutation": ("permutation", lambda g, b: permutation_shapley(g, b, **common), None),
        "permutation (antithetic)":
            ("permutation", lambda g, b: permutation_shapley(g, b, antithetic=True, **common), None),
        "permutation (antithetic, rotations)":  # 16 rotations (32 N evaluations a unit), 2 at large N
            ("permutation", lambda g, b: permutation_shapley(g, b, antithetic=True, rotations=_rotations(g), **common),
             None),
        "permutation (antithetic, position-adjusted)":
            ("permutation", lambda g, b: permutation_shapley(g, b, antithetic=True, position_adjustment=True,
                                                             **common), None),
        "permutation (truncated, 0.1)":
            ("permutation", lambda g, b: permutation_shapley(g, b, truncation=0.1, **common), None),
        "group testing (improved)":
            ("group_testing", lambda g, b: group_testing_shapley(g, b, **common), None),
        "group testing (paper, closed form)":
            ("group_testing", lambda g, b: group_testing_shapley(g, b, variant="paper", **common),
             (_group_testing, "recover_from_differences")),
        "compressive": ("compressive", lambda g, b: compressive_shapley(g, b, n_measurements=_measurements(g),
                                                                        **common),
                        (_compressive, "l1_recovery")),
        "stratified SVARM": ("svarm", lambda g, b: stratified_svarm_shapley(g, b, **common), None),
        "MSR Banzhaf": ("msr", lambda g, b: msr_banzhaf(g, b, **common), None),
        "Beta Shapley (16, 1)": ("beta", lambda g, b: beta_shapley(g, b, **common), None),
        "Owen (4 bins)": ("owen", lambda g, b: owen_shapley(g, b, **common), None),
        "unbiased KernelSHAP (paired)": ("unbiased_kernel", lambda g, b: unbiased_kernel_shapley(g, b, **common),
                                         None),
        "KernelSHAP (paired)": ("regression", lambda g, b: kernel_shapley(g, b, **common), None),
        "Leverage SHAP (paired)": ("regression", lambda g, b: leverage_shapley(g, b, **common), None),
        "AME (lasso)": ("ame", lambda g, b: ame(g, b, **common), None),
        "least core": ("least_core", lambda g, b: least_core(g, b, **common), None),
    }


def _measurements(game) -> int:
    """M = min(500, N / 2): the default at N <= 1,000; at large N the default N / 2 is refused (O(M N))."""
    return min(500, -(-game.n_players // 2))


def _rotations(game) -> int:
    """Rotations of the rotated antithetic case: 16, or 2 where 16 would take 32 N of a few-N budget."""
    return 16 if game.n_players <= 1000 else 2


CASE_NAMES = tuple(_case_runs({}))
SVARM_LARGE_N = 2048  # stratified SVARM's O(N^2) state refuses larger games (estimators._svarm.MAX_PLAYERS)
#: Estimators whose own solve is the method, with no overhead goal: KernelSHAP and Leverage SHAP update an
#: N x N system per coalition, AME fits a cross-validated lasso, the least core an interior-point method of
#: O(m N^2) a step. None of them runs at N = 20,000 (an N x N float64 matrix: 3.2 GB).
SOLVER_CASES = ("KernelSHAP (paired)", "Leverage SHAP (paired)", "AME (lasso)", "least core")
LARGE_N_CASES = tuple(name for name in CASE_NAMES if name != "stratified SVARM" and name not in SOLVER_CASES)
SCALE_CASES = ("group testing (improved)", "group testing (paper, closed form)", "MSR Banzhaf")


def overhead_cases(n: int, budgets, repeats: int, names=CASE_NAMES) -> list[dict]:
    """Time the estimators ``names`` at ``n`` players; ``budgets``: an int, or a dict by family (``"default"``)."""
    game = CheapGame(n)
    runs = _case_runs(dict(seed=SEED, progress=False))
    results = []
    for name in names:
        family, run, recovery = runs[name]
        budget = budgets if isinstance(budgets, int) else budgets.get(family, budgets.get("default"))
        print(f"  timing {name} at N={n:,} ({budget:,} evaluations) ...", file=sys.stderr, flush=True)
        row = overhead_case(name, lambda g, run=run, budget=budget: run(g, budget), game, repeats, recovery)
        label = name.replace("rotations", f"{_rotations(game)} rotations")
        results.append({**row, "name": label, "n": n})
    return results


# ------------------------------------------------ part 2: group testing at N = 10,000


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak_rss() -> bool:
    """Reset the kernel's resident-set high-water mark (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def gt_worker(config: dict) -> dict:
    """One group-testing run at scale, in a fresh process: time, then memory."""
    n, tests = config["n"], config["tests"]
    variant, recovery = config["variant"], config["recovery"]
    kwargs = dict(seed=SEED, variant=variant, recovery=recovery, progress=False)
    with threadpool_limits(1):
        game = CheapGame(n)
        # warm-up at a small size: lazy imports (tqdm, cvxpy and its solver, the numba loops) are not measured
        group_testing_shapley(CheapGame(50), 500, **kwargs)
        gc.collect()
        rss_before = _rss_bytes()
        hwm_reset = _reset_peak_rss()
        with RecoveryTimer(_group_testing, "recover_from_differences") as timer:
            start, start_cpu = time.perf_counter(), time.process_time()
            result = group_testing_shapley(game, tests + 2, **kwargs)
            total, total_cpu = time.perf_counter() - start, time.process_time() - start_cpu
        peak_rss = _peak_rss_bytes()

        gc.collect()
        tracemalloc.start()
        traced_before = tracemalloc.get_traced_memory()[0]
        traced = group_testing_shapley(game, tests + 2, **kwargs)
        peak_traced = tracemalloc.get_traced_memory()[1] - traced_before
        tracemalloc.stop()
        if not np.allclose(traced.values, result.values, rtol=1e-6, atol=1e-9):
            raise AssertionError("the traced run differs from the timed run")

        # the game's own share of the peak: one evaluate on a batch of masks
        batch = result.info["batch_size"]
        masks = np.random.default_rng(0).random((batch, n)) < 0.5
        tracemalloc.start()
        game.evaluate(masks)
        peak_game = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    truth = game.shapley_values()
    return {
        **config, "total": total, "recovery_s": timer.seconds, "sampling": total - timer.seconds,
        "sampling_cpu": total_cpu - timer.cpu_seconds,
        "peak_traced": peak_traced, "peak_game": peak_game, "batch_size": batch,
        "peak_rss_growth": (peak_rss - rss_before) if hwm_reset else None,
        "rel_rmse": float(np.sqrt(np.mean((result.values - truth) ** 2) / np.mean(truth**2))),
        "status": result.info.get("status", ""),
    }


def gt_scale_cases(configs: list[dict]) -> list[dict]:
    results = []
    for config in configs:
        print(f"  group testing N={config['n']:,} T={config['tests']:,} {config['variant']}/"
              f"{config['recovery']} (fresh process) ...", file=sys.stderr, flush=True)
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--_gt-worker", json.dumps(config)],
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"worker {config} failed:\n{out.stderr}")
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return results


# ------------------------------------------- one-off cost of the compiled group-testing loops


def jit_worker() -> dict:
    """First and second calls in a fresh process: the first loads (or compiles) the numba loops.

    Group testing (its sampler) and compressive sampling (its l1 homotopy), on
    small games so that the difference of the two calls is the loops' cost.
    """
    import cvxpy  # noqa: F401  (compressive_shapley checks its solver argument with cvxpy: not numba's cost)

    game = CheapGame(50)
    out = {}
    for name, run in (("group_testing", lambda: group_testing_shapley(game, 502, seed=SEED, progress=False)),
                      ("compressive", lambda: compressive_shapley(game, 502, seed=SEED, progress=False))):
        times = []
        for _ in range(2):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        out[name] = times[0] - times[1]
    return out


def jit_cases() -> dict:
    """The numba loops' one-off cost per process: compiled into an empty cache, then loaded from it.

    Each case is a fresh process with ``NUMBA_CACHE_DIR`` set to one new
    temporary folder, so the first compiles the loops and the second finds
    them on disk (what every later process does). The overhead ratios never
    include it: each timed estimator run follows an untimed one in the same
    process.
    """
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for case in ("compile", "cached"):
            print(f"  numba loops, {case} (fresh process) ...", file=sys.stderr, flush=True)
            run = subprocess.run([sys.executable, os.path.abspath(__file__), "--_jit-worker"], env=env,
                                 capture_output=True, text=True, check=False)
            if run.returncode != 0:
                raise RuntimeError(f"jit worker failed:\n{run.stderr}")
            out[case] = json.loads(run.stdout.strip().splitlines()[-1])
    return out


# --------------------------------------------------------------------------- output


def _table(headers, rows, markdown=False) -> str:
    cells = [[str(c) for c in row] for row in rows]
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    fmt = lambda row: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in cells])


def _verdict(ok: bool) -> str:
    return "OK" if ok else "MISS"


def _overhead_goal(name: str, n: int) -> float | None:
    """The goal of a case: :data:`OVERHEAD_GOAL`, but :data:`SVARM_LARGE_N_GOAL` for SVARM at its largest size,
    and none for :data:`SOLVER_CASES`."""
    if name in SOLVER_CASES:
        return None
    return SVARM_LARGE_N_GOAL if name == "stratified SVARM" and n == SVARM_LARGE_N else OVERHEAD_GOAL


def report(n, overhead, scale, repeats, jit, markdown=False) -> str:
    med = statistics.median
    out = []
    out.append(f"shapley_research {shapley_research.__version__} | Python {platform.python_version()} | "
               f"numpy {np.__version__} | {os.cpu_count()} CPUs | {platform.machine()}")
    out.append("BLAS/OpenMP limited to 1 thread (threadpoolctl) for estimators and direct evaluations alike.")
    out.append("Load average (1 min) at start / end: {:.2f} / {:.2f} (other processes share the machine when "
               "it exceeds 0).".format(LOAD_AT_START, os.getloadavg()[0]))
    out.append("")
    sizes = sorted({r.get("n", n) for r in overhead})
    out.append("1. Overhead on a cheap vectorised game, N = " + ", ".join(f"{s:,}" for s in sizes) + " players "
               "(U = linear + c*sqrt(|S|) + 10 unanimity terms; ~1 ns per mask cell).")
    out.append("   ratio = estimator wall time / wall time of game.evaluate on the same recorded mask matrices,")
    out.append(f"   each repeat timing both sides back to back; median of the {repeats} per-repeat ratios "
               "(ratio of the best times in brackets);")
    out.append("   seconds: median (best). ratio (CPU): the same with process CPU time, less sensitive to other load.")
    out.append("   traced peak: tracemalloc peak of one more run (numpy buffers included; the game's own "
               "temporaries are part of it).")
    headers = ["N", "estimator", "evaluations", "evaluate calls", "batch", "estimator s", "direct eval s",
               "ratio (wall)", "ratio (CPU)", "traced peak MiB", "rel. RMSE"]
    rows, goals = [], []
    for r in overhead:
        n_row = r.get("n", n)
        est, rec, direct = r["estimator"], r["recovery"], r["direct"]
        est_cpu, direct_cpu = r["estimator_cpu"], r["direct_cpu"]
        variants = [(r["name"], est, est_cpu)]
        if r["name"] == "compressive":
            variants = [("compressive, sampling only", [e - c for e, c in zip(est, rec)],
                         [e - c for e, c in zip(est_cpu, r["recovery_cpu"])]),
                        ("compressive, incl. l1 recovery", est, est_cpu)]
        for label, wall, cpu in variants:
            ratio = med([a / b for a, b in zip(wall, direct)])
            best = min(wall) / min(direct)
            ratio_cpu = med([a / b for a, b in zip(cpu, direct_cpu)])
            peak = r.get("peak_traced")
            rows.append([f"{n_row:,}", label, f"{r['evaluations']:,}", f"{r['calls']:,}", r["batch_size"],
                         f"{med(wall):.3f} ({min(wall):.3f})", f"{med(direct):.3f} ({min(direct):.3f})",
                         f"{ratio:.2f}x ({best:.2f}x)", f"{ratio_cpu:.2f}x",
                         "n/a" if peak is None else f"{peak / MIB:.1f}", f"{r['rel_rmse']:.3f}"])
            goal = _overhead_goal(r["name"], n_row)
            goals.append(f"overhead {label}, N={n_row:,}: {ratio:.2f}x " + (
                f"(goal <= {goal}x) {_verdict(ratio <= goal)}" if goal is not None else
                "(no goal: its solve is the method, its time grows with N, not with the evaluations)"))
        if r["name"] == "compressive":
            goals[-1] += (f"  [the l1 recovery (lasso homotopy) takes {med(rec):.2f} s of {med(est):.2f} s, a fixed "
                          "cost that does not grow with the budget")
            if "cvxpy_s" in r:
                goals[-1] += (f"; cvxpy (CLARABEL) solves the same problem in {r['cvxpy_s']:.2f} s, "
                              f"{r['cvxpy_status']}, agreeing to {r['cvxpy_agreement']:.1e} of the largest value")
            goals[-1] += "]"
    out.append(_table(headers, rows, markdown))
    out.append("   Group testing (its sampler) and compressive sampling (its l1 homotopy) run numba loops, a one-off "
               "cost per process that no ratio includes (each timed run follows an untimed one); extra time of a "
               "first call over a second, fresh processes, loading from numba's on-disk cache / compiling the first "
               f"time on a machine: group testing {jit['cached']['group_testing']:.2f} s / "
               f"{jit['compile']['group_testing']:.2f} s, compressive {jit['cached']['compressive']:.2f} s / "
               f"{jit['compile']['compressive']:.2f} s.")
    out.append("")

    out.append("2. Group testing at scale: sampling and recovery time, peak memory (each row a fresh process).")
    out.append("   traced peak = tracemalloc peak over the whole estimator call (numpy buffers included);")
    out.append("   RSS growth = peak resident set during the call minus resident set before it;")
    out.append("   game share = traced peak of one game.evaluate on one batch of masks (part of the traced peak).")
    headers = ["N", "tests T", "variant / recovery", "batch", "sampling s", "sampling CPU s", "recovery s",
               "traced peak MiB", "game share MiB", "bytes/player", "RSS growth MiB", "N x N f64 MiB",
               "T x N bool MiB", "rel. RMSE"]
    rows = []
    for r in scale:
        n_, t_ = r["n"], r["tests"]
        rss = "n/a" if r["peak_rss_growth"] is None else f"{r['peak_rss_growth'] / MIB:.1f}"
        rows.append([f"{n_:,}", f"{t_:,}", f"{r['variant']} / {r['recovery']}", r["batch_size"],
                     f"{r['sampling']:.2f}", f"{r['sampling_cpu']:.2f}", f"{r['recovery_s']:.3f}",
                     f"{r['peak_traced'] / MIB:.1f}", f"{r['peak_game'] / MIB:.1f}",
                     f"{r['peak_traced'] / n_:,.0f}", rss, f"{n_ * n_ * 8 / MIB:,.0f}",
                     f"{t_ * n_ / MIB:,.0f}", f"{r['rel_rmse']:.3f}"])
    out.append(_table(headers, rows, markdown))
    out.append("   The traced peak is set by the per-chunk buffers: a batch is drawn and evaluated about 2**22")
    out.append("   mask cells at a time whatever N, so the peak is flat in N and in T; what grows with N is the")
    out.append("   running (mean, M2) state, 16 bytes per player.")
    out.append("   (rel. RMSE = RMSE against the closed-form values / RMS of the values: a sanity check that")
    out.append("   every run is a real estimate, not the subject of this benchmark.)")
    out.append("")

    n_max = max(r["n"] for r in scale)
    for rec in ("closed_form", "cvxpy"):
        at = [r for r in scale if r["recovery"] == rec and r["variant"] == "paper"]
        top = [r for r in at if r["n"] == n_max]
        if top:
            r = top[0]
            goals.append(f"group testing N={n_max:,} recovery ({rec}): {r['recovery_s']:.3f} s, "
                         f"sampling {r['sampling']:.2f} s for T={r['tests']:,} tests "
                         f"(goal: seconds, recovery <= {RECOVERY_GOAL_S:g} s) "
                         f"{_verdict(r['recovery_s'] <= RECOVERY_GOAL_S)}")
        if len(at) >= 2:
            lo, hi = min(at, key=lambda r: r["n"]), max(at, key=lambda r: r["n"])
            growth, linear = hi["peak_traced"] / lo["peak_traced"], hi["n"] / lo["n"]
            square = hi["n"] ** 2 * 8  # bytes of an N x N float64 matrix
            ok = growth <= 1.1 * linear and hi["peak_traced"] < square / 10
            goals.append(f"group testing N={hi['n']:,} peak memory ({rec}): {hi['peak_traced'] / MIB:.1f} MiB "
                         f"traced, x{growth:.2f} from N={lo['n']:,} (linear growth: x{linear:.2f}; "
                         f"N x N float64: {square / MIB:,.0f} MiB) (goal O(N): growth <= 1.1 x linear and "
                         f"peak < 1/10 of N x N) {_verdict(ok)}")
    more_tests = [r for r in scale if r["n"] == n_max and r["variant"] == "paper"
                  and r["recovery"] == "closed_form"]
    if len({r["tests"] for r in more_tests}) >= 2:
        lo, hi = min(more_tests, key=lambda r: r["tests"]), max(more_tests, key=lambda r: r["tests"])
        goals.append(f"group testing N={n_max:,} peak memory vs tests: {lo['peak_traced'] / MIB:.1f} MiB at "
                     f"T={lo['tests']:,}, {hi['peak_traced'] / MIB:.1f} MiB at T={hi['tests']:,} "
                     f"(T x N bool: {hi['tests'] * n_max / MIB:,.0f} MiB) (goal: independent of T) "
                     f"{_verdict(hi['peak_traced'] <= 1.1 * lo['peak_traced'])}")
    out.append("Goals:")
    out += [("- " if markdown else "  ") + g for g in goals]
    return "\n".join(out)


# ----------------------------------------------------------------------------- main


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small budgets: a smoke run of about a minute")
    parser.add_argument("--output", metavar="PATH", help="also write the tables as markdown to PATH")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per estimator")
    parser.add_argument("--_gt-worker", dest="gt_worker", help=argparse.SUPPRESS)
    parser.add_argument("--_jit-worker", dest="jit_worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.gt_worker:
        print(json.dumps(gt_worker(json.loads(args.gt_worker))))
        return 0
    if args.jit_worker:
        print(json.dumps(jit_worker()))
        return 0

    n = 1000
    if args.quick:
        plan = [(n, {"permutation": 40 * n + 1, "group_testing": 20_000 + 2, "compressive": 10 * n + 2,
                     "ame": 4 * n + 2, "least_core": 4 * n + 2, "default": 20 * n + 2}, CASE_NAMES),
                (4_000, {"owen": 4 * 4_001, "default": 4 * 4_000 + 2}, LARGE_N_CASES),
                (SVARM_LARGE_N, 4 * SVARM_LARGE_N + 2, ("stratified SVARM",)),
                (20_000, 4_002, SCALE_CASES)]
        repeats, tests, sizes = args.repeats or 1, 2_000, (2_500, 5_000, 10_000)
    else:
        # one budget for all at N = 1,000: 10^6 evaluations (the recovery of compressive sampling is a fixed
        # cost, so its ratio depends on the budget; the goal line states that cost). At N = 20,000 and 10^5
        # a few N evaluations: every mask matrix is kept for the direct side (1.6 GB and 2 GB of masks). The
        # solvers (SOLVER_CASES) at budgets they finish in seconds to a minute: their time is the solve.
        solvers = {"regression": 100 * n + 2, "ame": 10 * n + 2, "least_core": 10 * n + 2}
        plan = [(n, {**solvers, "default": 1000 * n + 2}, CASE_NAMES),
                (20_000, {"owen": 4 * 20_001, "default": 4 * 20_000 + 2}, LARGE_N_CASES),
                (SVARM_LARGE_N, 100 * SVARM_LARGE_N + 2, ("stratified SVARM",)),
                (100_000, 20_002, SCALE_CASES)]
        repeats, tests, sizes = args.repeats or 3, 20_000, (2_500, 5_000, 10_000)
    configs = [{"n": s, "tests": tests, "variant": "paper", "recovery": rec}
               for rec in ("closed_form", "cvxpy") for s in sizes]
    configs.append({"n": sizes[-1], "tests": 2 * tests, "variant": "paper", "recovery": "closed_form"})
    configs.append({"n": sizes[-1], "tests": tests, "variant": "improved", "recovery": "closed_form"})

    global LOAD_AT_START
    LOAD_AT_START = os.getloadavg()[0]
    start = time.perf_counter()
    with threadpool_limits(1):
        overhead = [row for n_, budgets, names in plan for row in overhead_cases(n_, budgets, repeats, names)]
    scale = gt_scale_cases(configs)
    jit = jit_cases()
    text = report(n, overhead, scale, repeats, jit)
    print(text)
    print(f"\n(benchmark wall time {time.perf_counter() - start:.0f} s{', --quick' if args.quick else ''})")
    if args.output:
        with open(args.output, "w") as f:
            f.write("# Core estimator overhead\n\n" + report(n, overhead, scale, repeats, jit, markdown=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
