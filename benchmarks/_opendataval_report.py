"""The report of ``opendataval_comparison.py``: per data set a table of the methods, notes, and the goal lines.

Not a script: ``opendataval_comparison.py`` imports :func:`report`, which
renders the raw record (what ``--raw`` saves) as aligned text or markdown.
Time is compared per real fit; detection by the paired AUROC gap over seeds,
against the larger of two standard errors (over the seeds, and a paired
bootstrap of the training points).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from _opendataval_task import ALPHA, BETA, K_NEIGHBOURS, METHODS, NOISE_SE, SAMPLED, TASK, TIME_GOAL, TRUNCATION
from _peer_common import _table, _verdict, commit_text, date_line, machine_line
from cleaning_comparison import bootstrap_gaps  # the paired bootstrap of the detection scores


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
    out = [machine_line(info),
           f"Ours: Python {v['python']}, numpy {v['numpy']}, scikit-learn {v['sklearn']}, shapley_research "
           f"{v['shapley_research']} at {commit_text(lib)}.",
           f"OpenDataVal {peer['opendataval']} in its own environment: Python {peer['python']}, torch {peer['torch']}, "
           f"numpy {peer['numpy']}, scikit-learn {peer['sklearn']}.",
           date_line(info, raw["load"], raw["wall"], f" (`{raw['command']}`)"),
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
    """The whole report from the raw record (``--raw``'s), as text or markdown."""
    measured = raw["measured"]
    rows, methods = measured["rows"], measured["methods"]
    out = header_lines(raw)
    for dataset in measured["datasets"]:
        out += ["", f"{dataset}:", dataset_table(rows, dataset, methods, markdown)]
        out += sampling_notes(rows, dataset, measured["sizes"][dataset])
    out += ["", "Goals:"]
    out += [("- " if markdown else "  ") + g for g in goal_lines(rows, measured["datasets"], methods)]
    return "\n".join(out)
