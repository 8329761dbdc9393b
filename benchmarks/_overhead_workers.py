"""The measurements of ``core_overhead.py`` that each need a fresh process: group testing at scale, numba's cost.

Not a script: ``core_overhead.py`` imports it, and starts itself again with
``--_gt-worker CONFIG`` or ``--_jit-worker`` to run :func:`gt_worker` or
:func:`jit_worker` in a new interpreter, whose JSON answer is the last line of
its standard output.

- :func:`gt_worker`: one ``group_testing_shapley`` run at N players and T
  tests: sampling and recovery time, the ``tracemalloc`` peak of the whole
  call, the growth of the resident set's peak, the game's own share;
- :func:`jit_worker`: the difference between a first and a second call of
  group testing and of compressive sampling, the cost of their numba loops.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from _games import CheapGame
from _probes import RecoveryTimer, peak_rss_bytes, reset_peak_rss, rss_bytes
from shapley_research import compressive_shapley, group_testing_shapley
from shapley_research.estimators import _group_testing

SEED = 20240601  # every estimator run of the benchmark, in its own process and in these workers
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "core_overhead.py")  # what the workers run


# ------------------------------------------------ part 2: group testing at N = 10,000


def gt_worker(config: dict) -> dict:
    """One group-testing run at scale, in a fresh process: time, then memory.

    Parameters
    ----------
    config : dict
        ``n`` players, ``tests`` (the budget is ``tests + 2``), ``variant`` and
        ``recovery`` of ``group_testing_shapley``.

    Returns
    -------
    dict
        ``config`` and the measurements: ``total``, ``sampling`` (and its CPU
        time) and ``recovery_s`` seconds, ``peak_traced`` and ``peak_game``
        bytes, ``peak_rss_growth`` (None where the peak cannot be reset), the
        batch size, the relative RMSE against the closed-form values.
    """
    n, tests = config["n"], config["tests"]
    variant, recovery = config["variant"], config["recovery"]
    kwargs = dict(seed=SEED, variant=variant, recovery=recovery, progress=False)
    with threadpool_limits(1):
        game = CheapGame(n)
        # warm-up at a small size: lazy imports (tqdm, cvxpy and its solver, the numba loops) are not measured
        group_testing_shapley(CheapGame(50), 500, **kwargs)
        gc.collect()
        rss_before = rss_bytes()
        hwm_reset = reset_peak_rss()
        with RecoveryTimer(_group_testing, "recover_from_differences") as timer:
            start, start_cpu = time.perf_counter(), time.process_time()
            result = group_testing_shapley(game, tests + 2, **kwargs)
            total, total_cpu = time.perf_counter() - start, time.process_time() - start_cpu
        peak_rss = peak_rss_bytes()

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
    """:func:`gt_worker` on each of ``configs``, each in a fresh process; their answers in order."""
    results = []
    for config in configs:
        print(f"  group testing N={config['n']:,} T={config['tests']:,} {config['variant']}/"
              f"{config['recovery']} (fresh process) ...", file=sys.stderr, flush=True)
        out = subprocess.run([sys.executable, SCRIPT, "--_gt-worker", json.dumps(config)],
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

    Returns
    -------
    dict
        Seconds of the first call over the second, by ``"group_testing"`` and ``"compressive"``.
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

    Returns
    -------
    dict
        :func:`jit_worker`'s answer by ``"compile"`` and ``"cached"``.
    """
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for case in ("compile", "cached"):
            print(f"  numba loops, {case} (fresh process) ...", file=sys.stderr, flush=True)
            run = subprocess.run([sys.executable, SCRIPT, "--_jit-worker"], env=env,
                                 capture_output=True, text=True, check=False)
            if run.returncode != 0:
                raise RuntimeError(f"jit worker failed:\n{run.stderr}")
            out[case] = json.loads(run.stdout.strip().splitlines()[-1])
    return out
