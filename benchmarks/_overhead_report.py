"""The report of ``core_overhead.py``: its two tables, the numba line and the goal lines, as text or markdown.

Not a script: ``core_overhead.py`` imports :func:`render` and passes it its
measurements and how they are judged (the overhead goal of each case, the
recovery goal, the load average at start), so that this module holds the
layout alone.
"""

from __future__ import annotations

import os
import platform
import statistics
from typing import Callable

import numpy as np

import shapley_research

MIB = 2.0**20


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


def _overhead_rows(n, overhead, goal_of) -> tuple[list, list[str]]:
    """Part 1's table rows and goal lines; compressive sampling gets two rows, without and with its recovery."""
    med = statistics.median
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
            goal = goal_of(r["name"], n_row)
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
    return rows, goals


def _overhead_part(n, overhead, repeats, jit, markdown, goal_of) -> tuple[list[str], list[str]]:
    """Part 1: its explanation, table and numba line; and its goal lines."""
    sizes = sorted({r.get("n", n) for r in overhead})
    out = ["1. Overhead on a cheap vectorised game, N = " + ", ".join(f"{s:,}" for s in sizes) + " players "
           "(U = linear + c*sqrt(|S|) + 10 unanimity terms; ~1 ns per mask cell).",
           "   ratio = estimator wall time / wall time of game.evaluate on the same recorded mask matrices,",
           f"   each repeat timing both sides back to back; median of the {repeats} per-repeat ratios "
           "(ratio of the best times in brackets);",
           "   seconds: median (best). ratio (CPU): the same with process CPU time, less sensitive to other load.",
           "   traced peak: tracemalloc peak of one more run (numpy buffers included; the game's own "
           "temporaries are part of it)."]
    headers = ["N", "estimator", "evaluations", "evaluate calls", "batch", "estimator s", "direct eval s",
               "ratio (wall)", "ratio (CPU)", "traced peak MiB", "rel. RMSE"]
    rows, goals = _overhead_rows(n, overhead, goal_of)
    out.append(_table(headers, rows, markdown))
    out.append("   Group testing (its sampler) and compressive sampling (its l1 homotopy) run numba loops, a one-off "
               "cost per process that no ratio includes (each timed run follows an untimed one); extra time of a "
               "first call over a second, fresh processes, loading from numba's on-disk cache / compiling the first "
               f"time on a machine: group testing {jit['cached']['group_testing']:.2f} s / "
               f"{jit['compile']['group_testing']:.2f} s, compressive {jit['cached']['compressive']:.2f} s / "
               f"{jit['compile']['compressive']:.2f} s.")
    return out, goals


def _scale_part(scale, markdown) -> list[str]:
    """Part 2: its explanation, the table of group testing at scale, and the notes below it."""
    out = ["2. Group testing at scale: sampling and recovery time, peak memory (each row a fresh process).",
           "   traced peak = tracemalloc peak over the whole estimator call (numpy buffers included);",
           "   RSS growth = peak resident set during the call minus resident set before it;",
           "   game share = traced peak of one game.evaluate on one batch of masks (part of the traced peak)."]
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
    return out


def _scale_goals(scale, recovery_goal_s: float) -> list[str]:
    """Part 2's goal lines: recovery time at the largest N, memory linear in N and independent of T."""
    goals = []
    n_max = max(r["n"] for r in scale)
    for rec in ("closed_form", "cvxpy"):
        at = [r for r in scale if r["recovery"] == rec and r["variant"] == "paper"]
        top = [r for r in at if r["n"] == n_max]
        if top:
            r = top[0]
            goals.append(f"group testing N={n_max:,} recovery ({rec}): {r['recovery_s']:.3f} s, "
                         f"sampling {r['sampling']:.2f} s for T={r['tests']:,} tests "
                         f"(goal: seconds, recovery <= {recovery_goal_s:g} s) "
                         f"{_verdict(r['recovery_s'] <= recovery_goal_s)}")
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
    return goals


def render(n: int, overhead: list[dict], scale: list[dict], repeats: int, jit: dict, markdown: bool, *,
           goal_of: Callable[[str, int], float | None], recovery_goal_s: float, load_at_start: float) -> str:
    """The whole report: machine line, part 1 (overhead), part 2 (group testing at scale), goal lines.

    Parameters
    ----------
    n : int
        Players of the overhead rows that do not state their own ``n``.
    overhead, scale : list of dict
        The rows of ``core_overhead.overhead_cases`` and of ``gt_worker``.
    repeats : int
        Timed repeats per estimator.
    jit : dict
        ``jit_cases``' answer: the numba loops' one-off cost.
    markdown : bool
        Markdown tables and goal list, else aligned text.
    goal_of : callable
        ``goal_of(case name, N)``: the overhead goal of a case, None for none.
    recovery_goal_s : float
        Goal for group testing's recovery at the largest N, seconds.
    load_at_start : float
        The one-minute load average when the run started.

    Returns
    -------
    str
        The report; the load average at its end is read now.
    """
    out = [f"shapley_research {shapley_research.__version__} | Python {platform.python_version()} | "
           f"numpy {np.__version__} | {os.cpu_count()} CPUs | {platform.machine()}",
           "BLAS/OpenMP limited to 1 thread (threadpoolctl) for estimators and direct evaluations alike.",
           "Load average (1 min) at start / end: {:.2f} / {:.2f} (other processes share the machine when "
           "it exceeds 0).".format(load_at_start, os.getloadavg()[0]),
           ""]
    part1, goals = _overhead_part(n, overhead, repeats, jit, markdown, goal_of)
    out += part1 + [""] + _scale_part(scale, markdown) + [""]
    goals += _scale_goals(scale, recovery_goal_s)
    out.append("Goals:")
    out += [("- " if markdown else "  ") + g for g in goals]
    return "\n".join(out)
