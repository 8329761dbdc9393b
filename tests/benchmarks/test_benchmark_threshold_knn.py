"""The threshold_knn benchmark script runs end to end at a small scale and reports every method."""

from __future__ import annotations

import numpy as np
import pytest

from _benchmark_scripts import load_benchmark

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("threshold_knn")


def test_a_small_run_reports_every_method(bench):
    cells = bench.detection(datasets=("breast_cancer",), repetitions=[0], n_train=60, n_test=40)
    assert len(cells) == 2 + 1 + len(bench.QUANTILES)  # random, knn_shapley, K-matched, the quantiles
    for (name, label), entry in cells.items():
        assert name == "breast_cancer" and 0.0 <= entry["auroc"][0] <= 1.0
        assert np.isnan(entry["tau"][0]) == (not label.startswith("threshold"))
    taus = [e["tau"][0] for (_, label), e in cells.items() if "quantile" in label]
    assert taus == sorted(taus)  # larger quantiles, larger radii
    assert len(bench.detection_table(cells)) == 2 + len(cells)


def test_the_scale_rows_time_both_calls(bench):
    lines = bench.scale_rows([300], repeats=1)
    assert len(lines) == 3 and lines[2].startswith("| 300 | 1,000 |")
