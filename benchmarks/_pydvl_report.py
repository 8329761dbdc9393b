"""The report of ``pydvl_comparison.py``: its three parts' tables, the checks, and the goal lines.

Not a script: ``pydvl_comparison.py`` imports :func:`report`, which renders
the raw measurements (what ``--raw`` saves) as aligned text or as markdown.
"""

from __future__ import annotations

import numpy as np

from _peer_common import _table, _verdict, commit_text, date_line, machine_line
from _pydvl_errors import our_evaluations_to_reach

THROUGHPUT_GOAL = 100.0  # x pyDVL evaluations per second
GT_TIME_GOAL = 100.0  # x pyDVL group testing wall time
EVALUATIONS_GOAL = 0.5  # our evaluations / pyDVL's at the same error
MIB = 2.0**20


def _fmt_mib(value) -> str:
    return "n/a" if value is None else f"{value / MIB:,.1f}"


def _header(info, load, wall, quick) -> list[str]:
    """The machine, the versions, the library's provenance, the date, load and wall time."""
    v = info["versions"]
    return [machine_line(info),
            f"Versions: Python {v['python']}, numpy {v['numpy']}, scikit-learn {v['sklearn']}, "
            f"scipy {v['scipy']}, cvxpy {v['cvxpy']}, pyDVL {v['pydvl']}, "
            f"shapley_research {v['shapley_research']}",
            f"shapley_research: {commit_text(info['library'])}; worker processes ran a copy taken at start.",
            date_line(info, load, wall, " (--quick)" if quick else ""),
            "BLAS/OpenMP limited to 1 thread (threadpoolctl) on both sides, in every process.",
            ""]


def _throughput_part(throughput, explained, markdown) -> tuple[list[str], list[str]]:
    """Part 1: evaluations per second of both libraries and their agreement; one goal line per game."""
    out, goals = [], []
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
    return out, goals


def _gt_part(gt, gt_tests, markdown) -> tuple[list[str], list[str]]:
    """Part 2: group testing's time and memory on both sides, pyDVL's stages; one goal line per N."""
    out, goals = [], []
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
    return out, goals


def _knn_checks(checks) -> list[str]:
    """Part 3's head: the exact KNN values cross-checked, and why pyDVL's own KNN utility is not used."""
    out = []
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
    return out


def _error_table(g, markdown) -> list[str]:
    """One game of part 3: the error of every estimator at every budget, mean [min-max] over seeds."""
    out = []
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
    return out


def _equal_error(g, markdown) -> tuple[list[str], str]:
    """One game of part 3: the evaluations ours needs to reach pyDVL's best error at each budget; its goal line."""
    out = []
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
    tag = lambda i: {"interpolated": "", "at most": " (an upper bound)", "extrapolated": " (extrapolated)",
                     "not reached": " (not reached)"}[extrapolated[i]]
    ok = bool(finite) and ratios[worst] <= EVALUATIONS_GOAL
    goal = (f"equal error, {g['name']}: ours needs {ratios[-1]:.2f}x{tag(len(ratios) - 1)} pyDVL's "
            f"evaluations at its largest budget, {ratios[worst]:.2f}x{tag(worst)} at worst over its "
            f"budgets (goal <= {EVALUATIONS_GOAL:g}x) {_verdict(ok)}")
    return out, goal


def report(info, load, throughput, explained, gt, gt_tests, errors, checks, wall, quick, markdown) -> str:
    """The whole report from the raw measurements (``--raw``'s keys, in order), as text or markdown."""
    out = _header(info, load, wall, quick)
    lines, goals = _throughput_part(throughput, explained, markdown)
    out += lines
    lines, more = _gt_part(gt, gt_tests, markdown)
    out += lines
    goals += more
    out += _knn_checks(checks)
    for g in errors:
        out.append("")
        out += _error_table(g, markdown)
        lines, goal = _equal_error(g, markdown)
        out += lines
        goals.append(goal)
    out.append("")
    out.append("Goals:")
    out += [("- " if markdown else "  ") + g for g in goals]
    return "\n".join(out)
