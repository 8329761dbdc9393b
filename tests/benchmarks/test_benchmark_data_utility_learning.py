"""The Data Utility Learning benchmark script runs end to end at a small scale, at equal real evaluations."""

from __future__ import annotations

import numpy as np
import pytest

from _benchmark_scripts import load_benchmark

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


def test_every_method_spends_the_same_real_evaluations_and_rows_cover_every_budget():
    bench = load_benchmark("data_utility_learning")
    game = bench.AirportGame(12, seed=1)
    task = {"name": "airport", "game": game, "shapley": game.shapley_values(), "flipped": None}
    table = bench.measure(task, [30, 60], range(2), methods=("real", "DUL (ridge)"))
    assert set(table) == {(label, method) for label in bench.ESTIMATORS for method in ("real", "DUL (ridge)")}
    for (_label, method), cells in table.items():
        assert cells["error"].shape == (2, 2) and np.isfinite(cells["error"]).all()
        spent = cells["real"]
        assert (spent <= np.array([[30], [60]])).all()  # never more real evaluations than the budget
        if method != "real":
            np.testing.assert_array_equal(spent, [[30, 30], [60, 60]])  # the learned game's whole sample
            assert np.isfinite(cells["r2"]).all()
    rows = bench.rows("airport", table, "error", [30, 60])
    assert len(rows) == 4 and all(row.count(" | ") == 4 for row in rows)
    assert bench.header([30, 60])[0] == "| game | estimator | method | 30 real evaluations | 60 real evaluations |"


def test_the_learned_row_is_the_estimator_on_learn_utility_with_the_same_seed():
    bench = load_benchmark("data_utility_learning")
    game = bench.AirportGame(10, seed=2)
    values, seen = bench.values_of("DUL (ridge)", bench.permutation_shapley, game, 40, 3)
    learned = bench.learn_utility(game, 40, bench.ridge(), seed=3, progress=False)
    direct = bench.permutation_shapley(learned, bench.LEARNED_MULTIPLE * 10, 3, progress=False).values
    np.testing.assert_array_equal(values, direct)
    assert seen["real"] == 40


def test_the_quick_run_writes_its_report(tmp_path):
    output = tmp_path / "dul.md"
    assert load_benchmark("data_utility_learning").main(["--quick", "--output", str(output)]) == 0
    text = output.read_text()
    for needle in ("KNN, breast cancer N = 60", "logistic regression, breast cancer N = 60", "airport, N = 30",
                   "random values (trivial)", "DUL (MLP)", "Held-out R^2", "Total wall time"):
        assert needle in text
