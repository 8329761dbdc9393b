"""The KernelSHAP benchmark script runs end to end at a small scale, on games whose values it knows."""

from __future__ import annotations

import pytest

from _benchmark_scripts import load_benchmark

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


def test_error_rows_cover_every_estimator_at_every_budget():
    bench = load_benchmark("kernel_shapley")
    game = bench.CheapGame(12, n_unanimity=3, seed=1)
    header, *rows = bench.error_rows("cheap", game, game.shapley_values(), [3, 6], range(2))
    assert header.startswith("| game | estimator | 3 N | 6 N | z spread |")
    assert [row.split(" | ")[1] for row in rows] == list(bench.ESTIMATORS)
    for row in rows:
        errors = [float(cell) for cell in row.strip("| ").split(" | ")[2:4]]
        assert all(0 <= error < 10 for error in errors)
    assert all(float(row.strip("| ").split(" | ")[-1]) > 0 for row in rows if "unbiased Kernel" in row)
    # the classic estimator's standard errors need two groups of 10 N pairs: none at these budgets
    assert all(row.strip("| ").split(" | ")[-1] == "n/a" for row in rows if "classic" in row)


def test_cost_rows_time_both_estimators():
    lines = load_benchmark("kernel_shapley").cost_part(quick=True, cases=((30, 602),))
    assert len(lines) == 3 and lines[2].startswith("| 30 | 602 |") and lines[2].endswith("x |")
