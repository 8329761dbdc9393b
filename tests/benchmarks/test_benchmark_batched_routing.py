"""benchmarks/batched_routing.py: its verdict lines can fail, and its measurement runs on a small case."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

from _benchmark_scripts import load_benchmark
from shapley_research.utilities.learners import RouteDecision

bench = load_benchmark("batched_routing")


def _result(batched_ms, sklearn_ms, routed, max_du=0.0, spread=1.0):
    ratio = sklearn_ms / batched_ms
    return {"route": RouteDecision(routed, "test", batched_ms / 1e3, sklearn_ms / 1e3, "lbfgs"),
            "batched": batched_ms / 1e3, "sklearn": sklearn_ms / 1e3, "ratio": ratio,
            "ratio_min": ratio / spread, "ratio_max": ratio * spread, "max_du": max_du, "solver": "lbfgs"}


def test_goal_lines_hold_and_fail():
    fast = bench.report({"digits": _result(1.0, 12.0, True)}, ["digits"])
    assert any(line.startswith("OK: digits") for line in fast)
    slow = bench.report({"digits": _result(1.0, 8.0, True)}, ["digits"])
    assert any(line.startswith("MISS: digits") for line in slow)
    noisy = bench.report({"digits": _result(1.0, 11.0, True, spread=1.2)}, ["digits"])  # the range's low end
    assert any(line.startswith("MISS: digits") for line in noisy)
    off = bench.report({"digits": _result(1.0, 12.0, True, max_du=0.05)}, ["digits"])
    assert any(line.startswith("MISS: digits") for line in off)


def test_a_route_to_the_slower_path_is_a_miss():
    lines = bench.report({"a": _result(1.0, 5.0, True), "b": _result(3.0, 2.0, True)}, [])
    assert lines[-1].startswith("MISS") and "b" in lines[-1] and "NO" in lines[3]
    assert bench.report({"b": _result(3.0, 2.0, False)}, [])[-1].startswith("OK")


def test_measure_on_iris():
    X, y = load_iris(return_X_y=True)
    case = bench.Case("iris", LogisticRegression(), bench._split(X, y, 100, 50))
    result = bench.measure(case, n_batched=12, n_sklearn=3, rounds=1)
    assert result["max_du"] <= 0.02 and result["batched"] > 0 and np.isfinite(result["ratio"])
