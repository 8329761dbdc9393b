"""Cheap checks of ``benchmarks/mlp_cpu.py``: its recipe and a tiny run that prints every line."""

from __future__ import annotations

import numpy as np
import pytest

from _benchmark_scripts import load_benchmark

pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("mlp_cpu")


def test_the_recipe_is_the_issue_s(bench):
    X_train, y_train, X_test, y_test = bench.breast_cancer()
    assert X_train.shape == (200, 30) and X_test.shape == (200, 30)
    np.testing.assert_allclose(X_train.mean(axis=0), 0.0, atol=1e-12)  # standardised on the training points
    masks = bench.coalitions(50, y_train)
    assert all(np.unique(y_train[mask]).size == 2 for mask in masks) and masks.shape[0] <= 50
    assert [type(layer).__name__ for layer in bench.mlp()] == ["Linear", "ReLU", "Linear"]
    assert bench.FLOPS_PER_ROW_STEP == 4224


def test_quick_run_prints_the_ratios_and_the_goals(bench, capsys):
    assert bench.main(["--quick", "--coalitions", "12"]) == 0
    out = capsys.readouterr().out
    assert "load average at start" in out and "load average at end" in out
    assert "ratio" in out and "GFlop/s wall" in out and "scikit-learn MLPClassifier" in out
    assert "float64 0.00e+00" in out  # the loop and TorchModelUtility train the same models
    assert out.count("not judged (--quick)") == 2
