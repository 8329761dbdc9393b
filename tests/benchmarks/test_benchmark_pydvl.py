"""Cheap checks of the helpers of ``benchmarks/pydvl_comparison.py``, in the siblings that hold them.

pyDVL is an optional benchmark dependency that CI does not install: the tests
that need it skip through ``pytest.importorskip``; the others check the games
and the analysis the benchmark relies on, without pyDVL.
"""

from __future__ import annotations

import numpy as np
import pytest

from _benchmark_scripts import load_benchmark
from shapley_research import KNNUtility, exact_shapley, knn_shapley

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


@pytest.fixture(scope="module")
def games():
    return load_benchmark("_games")  # the games with exact values


@pytest.fixture(scope="module")
def part3():
    return load_benchmark("_pydvl_errors")  # errors at equal budgets, evaluations to reach an error


@pytest.fixture(scope="module")
def adapters():
    return load_benchmark("_pydvl_adapters")  # pyDVL's side: the game as its utility, its estimators


def _knn_data(seed=0, n_train=80, n_test=9, d=3, classes=3):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n_train, d)), rng.integers(0, classes, n_train),
            rng.normal(size=(n_test, d)), rng.integers(0, classes, n_test))


def test_closed_form_games_match_exact_enumeration(games):
    for game in (games.CheapGame(9, n_unanimity=3, seed=1), games.AirportGame(9, seed=2)):
        np.testing.assert_allclose(game.shapley_values(), exact_shapley(game).values, rtol=1e-10, atol=1e-12)


def test_knn_game_equals_knn_utility_on_small_and_large_coalitions(games):
    X_train, y_train, X_test, y_test = _knn_data()
    n = len(y_train)
    # heads and threshold small enough that every path (members, first head, further heads, all) is used
    game = games.KNNGame(X_train, y_train, X_test, y_test, k=3, heads=(4, 16), small=6)
    rng = np.random.default_rng(1)
    sizes = np.concatenate([np.arange(0, 12), rng.integers(1, n + 1, 60), [n]])
    masks = np.zeros((sizes.size, n), dtype=bool)
    for row, size in enumerate(sizes):
        masks[row, rng.choice(n, size, replace=False)] = True
    reference = KNNUtility(X_train, y_train, X_test, y_test, 3).evaluate(masks)
    np.testing.assert_array_equal(game.evaluate(masks), reference)
    # the exact values the benchmark compares with satisfy efficiency on this game
    exact = knn_shapley(X_train, y_train, X_test, y_test, 3).values
    assert exact.sum() == pytest.approx(game.evaluate(np.ones((1, n), dtype=bool))[0], abs=1e-12)


def test_evaluations_to_reach(part3):
    budgets, errors = [1000, 3000, 10000], [1.0, 0.5, 0.25]
    value, kind = part3.evaluations_to_reach(budgets, errors, 0.5)
    assert kind == "interpolated" and value == pytest.approx(3000)
    value, kind = part3.evaluations_to_reach(budgets, errors, np.sqrt(0.5 * 0.25))  # log-log midpoint
    assert kind == "interpolated" and value == pytest.approx(np.sqrt(3000 * 10000))
    assert part3.evaluations_to_reach(budgets, errors, 2.0) == (1000.0, "at most")
    value, kind = part3.evaluations_to_reach([100, 400], [1.0, 0.5], 0.25)  # error ~ budget^-1/2
    assert kind == "extrapolated" and value == pytest.approx(1600)
    assert np.isnan(part3.evaluations_to_reach([100, 400], [0.5, 0.6], 0.1)[0])


def test_pydvl_adapter_counts_evaluations_and_values_the_same_game(games, adapters):
    pytest.importorskip("pydvl")
    game = games.CheapGame(8, n_unanimity=3, seed=3)
    truth = game.shapley_values()
    build = adapters.pydvl_estimators()["PermutationSampler"]
    budget = 40 * 8 + 1  # 40 permutations and the empty set
    values, used, _ = adapters.run_pydvl_estimator(build, game, budget, seed=0, empty_utility=0.0)
    assert used == budget
    assert values.shape == (8,) and np.isfinite(values).all()
    # every permutation is efficient: the values sum to U(D) - U(empty) exactly
    assert values.sum() == pytest.approx(game.evaluate(np.ones((1, 8), dtype=bool))[0], rel=1e-9)
    assert np.linalg.norm(values - truth) / np.linalg.norm(truth) < 0.5


def test_the_script_loads_without_pydvl_and_keeps_its_command_line():
    bench = load_benchmark("pydvl_comparison")
    args = bench.parse_arguments(["--quick", "--gt-timeout", "30"])
    assert args.quick and args.gt_timeout == 30.0 and args.gt_rss_limit_gib == 6.0
    assert args.output == bench.DEFAULT_OUTPUT and args.output.endswith("results/pydvl_comparison.md")
