"""The least-core benchmark script runs end to end at a small scale and reports what it measured."""

from __future__ import annotations

import numpy as np
import pytest

from _benchmark_scripts import load_benchmark

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


def _cells(row: str) -> list[str]:
    return row.strip("| ").split(" | ")


def test_rank_rows_cover_every_estimator_and_spend_at_most_the_budget():
    bench = load_benchmark("least_core")
    games = [bench.CheapGame(8, n_unanimity=2, seed=s) for s in range(2)]
    references = [bench.exact_references(g) for g in games]
    for game, ref in zip(games, references):  # the references are the package's exact values, efficient
        total = game.evaluate(np.ones((1, 8), bool))[0] - game.evaluate(np.zeros((1, 8), bool))[0]
        assert ref["shapley"].sum() == pytest.approx(total) and ref["core"].sum() == pytest.approx(total)
        assert ref["ipm_gap"] is not None and ref["ipm_gap"] < 1e-4
    rows = bench.rank_rows("cheap", games, references, [4, 8], range(2))
    labels = [_cells(row)[1] for row in rows]
    assert labels == ["least_core (ipm)"] * 2 + ["permutation (antithetic)"] * 2 + ["random values"]
    for row in rows:
        _, label, budget, spent, with_shapley, with_core, failed = _cells(row)
        if label != "random values":
            assert int(spent.split("-")[1]) <= int(budget.split()[0]) * 8
        assert failed == "0/4"
        for cell in (with_shapley, with_core):
            mean = float(cell.split(" ± ")[0])
            assert -1 <= mean <= 1


def test_rank_of_identical_orders_is_one_and_constant_is_nan():
    bench = load_benchmark("least_core")
    assert bench.rank(np.arange(5.0), np.arange(5.0) ** 3) == pytest.approx(1.0)
    assert np.isnan(bench.rank(np.ones(5), np.arange(5.0)))
    assert bench.mean_cell([np.nan, 1.0, 3.0]) == "2.000 ± 1.000 [1.000, 3.000]"
    assert bench.mean_cell([np.nan]) == "-"


def test_detection_and_solve_rows():
    bench = load_benchmark("least_core")
    lines = bench.detection_part(quick=True, n_train=40, problems=range(2), multiples=[4])
    table, paired = [x for x in lines if x.startswith("|")], [x for x in lines if x.startswith("- ")]
    assert len(table) == 2 + len(bench.DETECTION_ESTIMATORS) and len(paired) == len(bench.DETECTION_ESTIMATORS) - 2
    for line in paired:  # a difference of two AUROCs over the same two problems
        assert "(2 problems)" in line and -1 <= float(line.split(": ")[-1].split(" ± ")[0]) <= 1
    for row in table[2:]:
        label, _, spent, auroc, _, failed = _cells(row)
        assert failed == "0/2" and 0 <= float(auroc.split(" ± ")[0]) <= 1
        if label in ("least_core (ipm)", "msr_banzhaf"):
            assert spent == "160-160"  # these two spend the whole budget
    solve = bench.solve_part(quick=True, sizes=(20,), highs_sizes=(20,))
    assert len(solve) == 3 and solve[2].startswith("| 20 | 200 |")
    assert float(_cells(solve[2])[5]) < 1e-3  # ipm and HiGHS agree
