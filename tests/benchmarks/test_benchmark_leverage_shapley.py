"""The Leverage SHAP benchmark script runs end to end at a small scale, on games whose values it knows."""

from __future__ import annotations

import numpy as np
import pytest

from _benchmark_scripts import load_benchmark

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


def test_error_and_versus_rows_cover_every_estimator_at_every_budget():
    bench = load_benchmark("leverage_shapley")
    game = bench.CheapGame(12, n_unanimity=3, seed=1)
    table = bench.errors_of(game, game.shapley_values(), [4, 8], range(3))
    assert list(table) == list(bench.ESTIMATORS) and all(errors.shape == (2, 3) for errors in table.values())
    rows = bench.error_rows("cheap", table)
    assert [row.split(" | ")[1] for row in rows] == list(bench.ESTIMATORS)
    for row in rows:
        for cell in row.strip("| ").split(" | ")[2:]:
            mean, spread = (float(x) for x in cell.split(" ± "))
            assert 0 <= mean < 10 and spread >= 0
    (versus,) = bench.versus_rows("cheap", table, [4, 8])
    ours, theirs = table[bench.LEVERAGE], table[bench.CLASSIC]
    first = versus.split(" | ")[1]
    assert first == f"{ours[0].mean() / theirs[0].mean():.2f} ({int((ours[0] < theirs[0]).sum())}/3)"
    assert bench.table_header([4, 8]).splitlines() == ["| game | estimator | 4 N | 8 N |", "|---|---|---|---|"]


def test_the_leverage_row_is_leverage_shapley_on_the_same_seeds():
    bench = load_benchmark("leverage_shapley")
    game = bench.CheapGame(10, n_unanimity=2, seed=3)
    truth = game.shapley_values()
    table = bench.errors_of(game, truth, [5], range(2))
    direct = [np.linalg.norm(bench.leverage_shapley(game, 52, s, progress=False).values - truth)
              / np.linalg.norm(truth) for s in range(2)]
    np.testing.assert_array_equal(table[bench.LEVERAGE][0], direct)


def test_cost_rows_time_both_estimators():
    lines = load_benchmark("leverage_shapley").cost_part(quick=True, cases=((30, 602),))
    assert len(lines) == 3 and lines[2].startswith("| 30 | 602 |") and lines[2].endswith("x |")
