"""The DVRL benchmark script runs end to end at a small scale and reports every method."""

from __future__ import annotations

import numpy as np
import pytest

from _benchmark_scripts import load_benchmark

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("dvrl")


def test_a_small_run_reports_every_method_with_the_fits_it_was_given(bench):
    cells = bench.detection(problems=[0], multiples=[1], n_train=64)
    assert {label for label, _ in cells} == set(bench.ESTIMATORS)
    for (label, _), entry in cells.items():
        assert 0.0 <= entry["auroc"][0] <= 1.0
        assert entry["spent"] == [0 if label in bench.NO_BUDGET else 64]  # dvrl: two steps of 32
    rows = bench.table(cells)
    assert len(rows) == 2 + len(bench.ESTIMATORS)
    lines = bench.paired(cells, [1])
    assert len(lines) == 4 and all(np.isfinite(float(line.split(": ")[-1].split(" ")[0])) for line in lines)
