"""The Owen-sampling benchmark script runs end to end at a small scale, on games whose values it knows."""

from __future__ import annotations

import pytest

from _benchmark_scripts import load_benchmark

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


def test_error_rows_cover_every_estimator_at_every_budget():
    bench = load_benchmark("owen_sampling")
    game = bench.CheapGame(12, n_unanimity=3, seed=1)
    header, *rows = bench.error_rows("cheap", game, game.shapley_values(), [10, 60], range(2))
    assert header.startswith("| game | estimator | 10 N | 60 N | variance ratio |")
    assert [row.split(" | ")[1] for row in rows] == list(bench.ESTIMATORS)
    for row in rows:
        cells = row.strip("| ").split(" | ")[2:4]
        if "16 bins" in row:  # 10 N pays for no two sweeps of 16 (N + 1)
            assert cells[0] == "-"
            cells = cells[1:]
        for cell in cells:
            mean, spread = (float(x) for x in cell.split(" ± "))
            assert 0 <= mean < 10 and spread >= 0
    assert all(float(row.strip("| ").split(" | ")[-1]) > 0 for row in rows if "4 bins" in row)


def test_cost_rows_time_both_estimators():
    lines = load_benchmark("owen_sampling").cost_part(quick=True, cases=((30, 4 * 31 * 3),))
    assert len(lines) == 3 and lines[2].startswith("| 30 | 372 |") and lines[2].endswith("x |")
