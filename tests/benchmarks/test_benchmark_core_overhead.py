"""The core-overhead benchmark script runs end to end at a small scale, on a game whose values it knows."""

from __future__ import annotations

import numpy as np
import pytest

from _benchmark_scripts import load_benchmark
from shapley_research import exact_shapley

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("core_overhead")


def test_cheap_game_closed_form_values(bench):
    game = bench.CheapGame(9, n_unanimity=4, seed=2)
    np.testing.assert_allclose(game.shapley_values(), exact_shapley(game).values, atol=1e-10)


def test_small_run_reports_every_estimator_and_the_cvxpy_reference(bench, monkeypatch):
    # the script collects garbage before each timing; in a test session holding thousands of tests' objects
    # that took most of this test's time and steadies no number the test checks
    monkeypatch.setattr(bench.gc, "collect", lambda *args: 0)
    n = 40
    budgets = {"permutation": 40 * n + 1, "group_testing": 2_002, "compressive": 20 * n + 2, "default": 20 * n + 2}
    overhead = bench.overhead_cases(n, budgets, repeats=1)
    names = [r["name"] for r in overhead]
    assert len(names) == len(bench.CASE_NAMES) == 17 and "compressive" in names
    assert "permutation (antithetic, 16 rotations)" in names and "stratified SVARM" in names
    for name in ("Owen (4 bins)", "unbiased KernelSHAP (paired)", "KernelSHAP (paired)", "Leverage SHAP (paired)",
                 "AME (lasso)", "least core"):
        assert name in names
    for r in overhead:
        assert r["n"] == n and r["peak_traced"] > 0
    for r in overhead:
        assert r["estimator"][0] > 0 and r["direct"][0] > 0
        assert np.isfinite(r["rel_rmse"])
    compressive = overhead[names.index("compressive")]
    assert 0 < compressive["recovery"][0] < compressive["estimator"][0]
    assert compressive["cvxpy_agreement"] < 1e-4  # the homotopy and CLARABEL solve the same problem
    scale = [bench.gt_worker({"n": size, "tests": 300, "variant": "paper", "recovery": recovery})
             for recovery in ("closed_form", "cvxpy") for size in (100, 200)]
    jit = {"cached": bench.jit_worker(), "compile": bench.jit_worker()}
    text = bench.report(n, overhead, scale, 1, jit, markdown=True)
    for label in ("permutation", "group testing (paper, closed form)", "compressive, sampling only",
                  "compressive, incl. l1 recovery"):
        assert f"overhead {label}, N={n}: " in text
    assert "cvxpy (CLARABEL) solves the same problem" in text
    assert "group testing N=200 recovery (cvxpy)" in text
    assert f"overhead least core, N={n}: " in text and "no goal: its solve is the method" in text


def test_every_sampling_estimator_of_the_package_is_timed(bench):
    """The package's estimators that sample a game with a budget: each has a case (the others: exact, data-based,
    or the uniform split)."""
    import shapley_research.estimators as estimators

    timed = {"permutation_shapley", "group_testing_shapley", "compressive_shapley", "stratified_svarm_shapley",
             "msr_banzhaf", "beta_shapley", "owen_shapley", "unbiased_kernel_shapley", "kernel_shapley",
             "leverage_shapley", "ame", "least_core"}
    source = open(bench.__file__).read()
    assert all(f"{name}(g, b" in source for name in timed)
    not_sampling = {"exact_shapley", "uniform_shapley", "exact_banzhaf", "exact_beta_shapley", "leave_one_out",
                    "data_oob", "class_wise_shapley", "lava", "exact_least_core"}
    entries = {name for name in estimators.__all__ if name.endswith(("_shapley", "_banzhaf", "_core"))
               or name in ("ame", "leave_one_out", "data_oob", "lava")}
    assert entries - not_sampling == timed


def test_svarm_at_its_largest_size_is_judged_against_issue_35s_goal(bench):
    assert bench._overhead_goal("stratified SVARM", bench.SVARM_LARGE_N) == 3.0
    assert bench._overhead_goal("stratified SVARM", 1000) == bench._overhead_goal("MSR Banzhaf", 2048) == 1.5
    assert all(bench._overhead_goal(name, 1000) is None for name in bench.SOLVER_CASES)
