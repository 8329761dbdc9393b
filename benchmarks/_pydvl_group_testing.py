"""Part 2 of ``pydvl_comparison.py``: group testing at scale, each run in a fresh process under limits.

Not a script: ``pydvl_comparison.py`` imports it, and starts itself again with
``--_gt-worker CONFIG`` to run :func:`gt_worker` in a new interpreter, which
prints ``@@{json}`` records as it goes (the stages pyDVL reaches, then the
measurements). :func:`run_gt_worker` watches that process's resident set and
kills it past a wall-time or memory limit, keeping the last stage reached.
The workers run a copy of the library and of the benchmark scripts taken at
start (:func:`snapshot_for_workers`), so that edits to the working tree during
the run do not change what is measured.
"""

from __future__ import annotations

import gc
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

import shapley_research
from _games import CheapGame
from _peer_common import START, log, quiet_warnings
from _probes import reset_peak_rss, rss_bytes, status_kib
from _pydvl_adapters import pydvl_game_utility, pydvl_players, pydvl_values
from shapley_research import group_testing_shapley

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "pydvl_comparison.py")  # what the workers run
GT_SEED = 20240601
GIB = 2.0**30


_SNAPSHOT: dict = {}


def snapshot_for_workers() -> None:
    """Copy the loaded library and the benchmark scripts to a temporary folder that the worker processes run from.

    Other people may edit the working tree while the benchmark runs; the
    workers then still run the very code the main process loaded at start.
    """
    folder = tempfile.mkdtemp(prefix="pydvl_comparison_")
    package = os.path.dirname(os.path.abspath(shapley_research.__file__))
    shutil.copytree(package, os.path.join(folder, "shapley_research"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for script in sorted(glob.glob(os.path.join(HERE, "*.py"))):  # the script and every sibling it imports
        shutil.copy(script, os.path.join(folder, os.path.basename(script)))
    env = dict(os.environ)
    env["PYTHONPATH"] = folder + os.pathsep + env.get("PYTHONPATH", "")
    _SNAPSHOT.update(folder=folder, script=os.path.join(folder, "pydvl_comparison.py"), env=env)


def remove_snapshot() -> None:
    """Delete the folder of :func:`snapshot_for_workers`."""
    shutil.rmtree(_SNAPSHOT["folder"], ignore_errors=True)


def _emit(record: dict) -> None:
    print("@@" + json.dumps(record), flush=True)


def _our_run(config: dict, game: CheapGame, tests: int):
    """Ours: ``group_testing_shapley`` with the config's variant and recovery, warmed up on a small game."""
    kwargs = dict(seed=GT_SEED, variant=config["variant"], recovery=config["recovery"], progress=False)
    group_testing_shapley(CheapGame(50), 500, **kwargs)  # warm-up: imports, solver
    return lambda: group_testing_shapley(game, tests + 2, **kwargs)


def _pydvl_run(config: dict, game: CheapGame, n: int, tests: int):
    """pyDVL's ``GroupTestingShapleyValuation``, warmed up on a small game; the measured run emits its stages."""
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

    return run


def gt_worker(config: dict) -> None:
    """One group-testing run in a fresh process; prints ``@@{json}`` records as it goes.

    Parameters
    ----------
    config : dict
        ``side`` (``"ours"`` or ``"pydvl"``), ``n`` players, ``tests``; ours: ``variant`` and ``recovery``;
        pyDVL: ``epsilon``; ``traced``: under ``tracemalloc``.
    """
    quiet_warnings()
    n, tests, side = config["n"], config["tests"], config["side"]
    traced = config.get("traced", False)
    with threadpool_limits(1):
        game = CheapGame(n)
        run = _our_run(config, game, tests) if side == "ours" else _pydvl_run(config, game, n, tests)
        gc.collect()
        rss_before = rss_bytes()
        hwm_reset = reset_peak_rss()
        _emit({"stage": "started", "at": 0.0, "rss_before": rss_before, "since_launch": time.perf_counter() - START})
        if traced:
            tracemalloc.start()
        start = time.perf_counter()
        result = run()
        seconds = time.perf_counter() - start
        peak_traced = tracemalloc.get_traced_memory()[1] if traced else None
        if traced:
            tracemalloc.stop()
        peak_rss = (status_kib("self", "VmHWM") or 0) * 1024
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
    script = _SNAPSHOT.get("script", SCRIPT)
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
        rss = (status_kib(proc.pid, "VmRSS") or 0) * 1024
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
    """Part 2: at each of ``sizes``, our three configurations (timed, then traced) and pyDVL's, each run fresh.

    Parameters
    ----------
    sizes : sequence of int
        Players.
    tests : int
        Tests T on both sides.
    timeout, rss_limit : float
        Limits of one run: seconds, resident bytes.
    pydvl_traced_max_s : float
        pyDVL's run is repeated under ``tracemalloc`` only if it took at most this long.

    Returns
    -------
    list of dict
        :func:`run_gt_worker`'s answers, ours before pyDVL's at each size.
    """
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
