"""The skeleton that ``kernel_shapley.py``, ``owen_sampling.py`` and ``leverage_shapley.py`` share.

Not a script: its siblings import it by name (``benchmarks/`` is first on
``sys.path`` when one of them runs, as ``gpu_sweep.py`` imports
``device_throughput.py``). It holds, once:

- **the reference games with exact values**: the airport game (N = 100,
  ``AirportGame(100, seed=1)``, values in closed form), the linear + sqrt +
  unanimity game (N = 200, ``CheapGame(200, seed=2)``, values in closed form)
  and the KNN utility on 1,000 PCA-50 MNIST images (K = 5, the first 100 test
  images, or 20 with ``--quick``; exact values by ``knn_shapley``);
- **the error tables' frame**: one header for the closed-form games, a blank
  line, the KNN game's own table;
- **the timers**: best of ``k`` wall times, the peak memory ``tracemalloc``
  traces, an estimator's cost against ``msr_banzhaf`` on the cheap game (both
  evaluate ``N`` cells a mask, so the ratio is the estimators' own work), and
  two estimators' time and peak memory side by side;
- **the report**: the command line (``--quick``, ``--output PATH``), the
  machine line, the ``mean ± standard error [min, max]`` cell over seeds,
  and the markdown file with the total wall time (the report alone also
  serves ``least_core.py``, ``dvrl.py``, ``torch_influence.py``,
  ``weighted_banzhaf.py`` and ``data_utility_learning.py``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import tracemalloc

import numpy as np

import shapley_research
from _games import AirportGame, CheapGame, KNNGame, load_mnist  # sibling: the games with exact values
from shapley_research import knn_shapley, msr_banzhaf

K_NEIGHBOURS = 5


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- games


def closed_form_games() -> list[tuple[str, AirportGame | CheapGame]]:
    r"""``(row name, game)`` of the games whose Shapley values ``game.shapley_values()`` gives in closed form.

    The airport game :math:`U(S) = \max_{i \in S} c_i`, :math:`c_i \sim U(0, 1)`, and
    :math:`U(S) = \sum_{i \in S} w_i + 5 \sqrt{|S|} + \sum_j a_j [T_j \subseteq S]` (10 unanimity terms).
    """
    return [("airport, N = 100", AirportGame(100, seed=1)),
            ("linear + sqrt + unanimity, N = 200", CheapGame(200, seed=2))]


def knn_reference(quick: bool) -> tuple[str, KNNGame, np.ndarray]:
    """``(row name, game, exact values)`` of the KNN utility on 1,000 MNIST images (20 test images if quick)."""
    log("  KNN game on MNIST: exact values ...")
    Z_train, y_train, Z_test, y_test, _ = load_mnist()
    n_test = 20 if quick else 100
    knn = KNNGame(Z_train, y_train, Z_test[:n_test], y_test[:n_test], K_NEIGHBOURS)
    exact = knn_shapley(Z_train, y_train, Z_test[:n_test], y_test[:n_test], K_NEIGHBOURS).values
    return f"KNN, {len(y_train):,} MNIST images", knn, exact


def error_tables(rows_of, quick: bool, multiples, seeds, knn_multiples, knn_seeds) -> list[str]:
    """Markdown: ``rows_of(name, game, truth, multiples, seeds)`` (a header, then rows) on the closed-form games
    under one header, then a blank line and the KNN game's table at ``knn_multiples`` over ``knn_seeds``."""
    lines: list[str] = []
    for name, game in closed_form_games():
        table = rows_of(name, game, game.shapley_values(), multiples, seeds)
        lines += table[1:] if lines else table
    name, knn, exact = knn_reference(quick)
    return lines + ["", *rows_of(name, knn, exact, knn_multiples, knn_seeds)]


def table_header(multiples, first: str = "| game | estimator | ", last: str = "") -> str:
    """A markdown header: the ``first`` columns, one ``t N`` column per budget multiple, then ``last`` if any."""
    columns = [f"{t} N" for t in multiples] + ([last] if last else [])
    return first + " | ".join(columns) + " |\n" + "|---" * (first.count("|") - 1 + len(columns)) + "|"


# --------------------------------------------------------------------------- timers


def best_seconds(repeats: int, run, *args, **kwargs) -> float:
    """The best wall time of ``repeats`` calls of ``run(*args, **kwargs)``."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        run(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best


def seconds_and_peak(run, game, budget: int, quick: bool) -> tuple[float, float]:
    """The best wall time of ``run(game, budget, 0)`` over 3 calls (1 if quick), then the peak memory in MiB
    that ``tracemalloc`` traces over one more call (numpy's buffers are traced)."""
    best = best_seconds(1 if quick else 3, run, game, budget, 0, progress=False)
    tracemalloc.start()
    run(game, budget, 0, progress=False)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return best, peak


def traced_cost_rows(first: tuple, second: tuple, cases, quick: bool, ratio_digits: int,
                     what: str = "cost") -> list[str]:
    """Markdown rows: best-of-3 wall time and peak traced memory of two estimators on the cheap game, ``first``
    and ``second``: ``(column name, estimator)``, ``cases``: ``(N, budget)``; the time ratio first / second."""
    (a, _), (b, _) = first, second
    lines = [f"| N | evaluations | {a} s | {a} peak MiB | {b} s | {b} peak MiB | time ratio |",
             "|---|---|---|---|---|---|---|"]
    for n, budget in cases:
        game, cells = CheapGame(n), []
        for label, run in (first, second):
            log(f"  {what}: {label.lower()} at N = {n:,} ...")
            cells.append(seconds_and_peak(run, game, budget, quick))
        (ta, ma), (tb, mb) = cells
        ratio = f"{ta / tb:.{ratio_digits}f}x"
        lines.append(f"| {n:,} | {budget:,} | {ta:.2f} | {ma:.0f} | {tb:.2f} | {mb:.0f} | {ratio} |")
    return lines


def cost_against_msr(name: str, estimator, cases, quick: bool) -> list[str]:
    """Markdown rows: best-of-3 wall time of ``estimator`` and of MSR Banzhaf on the cheap game, ``cases``:
    ``(N, budget)``; ``name`` heads the estimator's column."""
    lines = [f"| N | evaluations | {name} s | MSR Banzhaf s | ratio |", "|---|---|---|---|---|"]
    for n, budget in cases:
        game = CheapGame(n)
        times = {}
        for label, run in ((name, estimator), ("MSR Banzhaf", msr_banzhaf)):
            log(f"  cost: {label} at N = {n:,} ...")
            times[label] = best_seconds(1 if quick else 3, run, game, budget, 0, progress=False)
        ours, msr = times[name], times["MSR Banzhaf"]
        lines.append(f"| {n:,} | {budget:,} | {ours:.3f} | {msr:.3f} | {ours / msr:.2f}x |")
    return lines


# --------------------------------------------------------------------------- report


def parse_arguments(doc: str, default_output: str, argv=None) -> argparse.Namespace:
    """``--quick`` and ``--output PATH``, the scripts' whole command line; ``doc``'s first paragraph describes it."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small budgets, fewer seeds")
    parser.add_argument("--output", metavar="PATH", default=default_output, help="markdown output file")
    return parser.parse_args(argv)


def mean_cell(samples, digits: int = 3) -> str:
    """``mean ± standard error [min, max]`` of the finite samples ("-" if none)."""
    samples = np.asarray([s for s in samples if np.isfinite(s)], dtype=float)
    if samples.size == 0:
        return "-"
    spread = samples.std(ddof=1) / np.sqrt(samples.size) if samples.size > 1 else 0.0
    return f"{samples.mean():.{digits}f} ± {spread:.{digits}f} [{samples.min():.{digits}f}, {samples.max():.{digits}f}]"


def report_head(title: str, quick: bool) -> list[str]:
    """The report's first lines: its title and the machine it ran on."""
    return [f"# {title}", "",
            f"shapley_research {shapley_research.__version__} | Python {platform.python_version()} | "
            f"numpy {np.__version__} | {os.cpu_count()} CPUs | one BLAS thread" + (" | --quick" if quick else "")]


def write_report(lines: list[str], start: float, output: str) -> int:
    """Print ``lines`` and the wall time since ``start``, and write them to ``output`` (markdown); 0."""
    text = "\n".join([*lines, f"Total wall time: {time.perf_counter() - start:.0f} s.", ""])
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "w") as handle:
        handle.write(text)
    return 0
