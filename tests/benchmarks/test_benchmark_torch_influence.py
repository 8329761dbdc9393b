"""The torch_influence benchmark script runs end to end at a small scale and reports every method."""

from __future__ import annotations

import pytest

from _benchmark_scripts import load_benchmark

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("torch")
    return load_benchmark("torch_influence")


def test_a_small_run_reports_every_method(bench):
    cells = bench.detection(problems=[0], n_train=64)
    assert set(cells) == set(bench.ESTIMATORS)
    for entry in cells.values():
        if entry["auroc"]:
            assert 0.0 <= entry["auroc"][0] <= 1.0
        else:  # only a refusal leaves no AUROC, and it says why
            assert entry["notes"] and "refused" in entry["notes"][0]
    assert cells["torch_influence direct, damping 0.1 (default)"]["fits"] == [1]
    assert cells["msr_banzhaf, 4 N coalitions"]["fits"] == [256]
    assert len(bench.table(cells)) == 2 + len(bench.ESTIMATORS)
