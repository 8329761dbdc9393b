"""Budgets are checked against the data before a kernel starts (issue 34): the smallest budgets are the estimators'."""

import numpy as np
import pytest

import shapley_research as sr
from shapley_research.experiments import all_s_minimum, budget_problems, method_names, smallest_budget

#: The estimators that take a game and a budget (the registry's; what :func:`smallest_budget` accepts).
GAME_ESTIMATORS = method_names(needs="game", budgeted=True)
#: Those a stand-in game can probe: class-wise Shapley refuses any game but a classifier's (its own rule, checked
#: on data_cleaning's game below).
STAND_IN_ESTIMATORS = tuple(m for m in GAME_ESTIMATORS if m != "class_wise_shapley")


def _additive(n):
    weights = np.arange(1.0, n + 1)
    return sr.as_game(lambda masks: masks.astype(float) @ weights, n, vectorized=True)


@pytest.mark.filterwarnings("ignore:msr_banzhaf:UserWarning")  # one-sided players at a tiny budget
def test_the_smallest_budgets_are_those_the_estimators_accept():
    from shapley_research.experiments import MethodCall, get_method, method_defaults

    options = {"truncation": 0.01, "beta_alpha": 16.0, "beta_beta": 1.0}
    for method in STAND_IN_ESTIMATORS:
        need = smallest_budget(method, 6, options)

        def call(budget, method=method):
            on = MethodCall({}, budget, 0, {**method_defaults([method]), **options}, make_game=lambda: _additive(6))
            return get_method(method).call(on)[0]

        with pytest.raises(ValueError):
            call(need - 1)
        assert call(need).values.shape == (6,), method


def test_the_smallest_all_s_budget_is_the_pilot_round():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 2))
    y = np.array([0, 1] * 4)
    need = all_s_minimum(8)
    with pytest.raises(ValueError, match="too small"):
        sr.all_s_influence(X, y, X, y, need - 1, 0, progress=False)
    assert sr.all_s_influence(X, y, X, y, need, 0, progress=False).values.shape == (8,)


@pytest.mark.slow  # a few model fits per method
def test_data_cleaning_runs_each_method_at_its_smallest_budget_and_fails_below():
    """The stand-in calls of _budgets are data_cleaning's own: its run_method agrees on every budgeted method."""
    from shapley_research.experiments import data_cleaning as dc

    problem = dc.make_problem("breast_cancer", 12, 40, 0.15, seed=0)
    options = {"truncation": 0.01, "beta_alpha": 16.0, "beta_beta": 1.0}
    for method in GAME_ESTIMATORS:
        need = smallest_budget(method, 12, options)
        assert dc.run_method(method, problem, need - 1, 0)["error"] is not None, method
        assert dc.run_method(method, problem, need, 0)["error"] is None, method
    assert smallest_budget("class_wise_shapley", 12) == 12 + 2 + 1  # a permutation of each class, + 1 to normalise
    assert smallest_budget("all_s_influence", 12) == all_s_minimum(12)


PARAMS = {"truncation": 0.01, "beta_alpha": 16.0, "beta_beta": 1.0}


def test_a_budget_too_small_names_the_parameter_and_the_minimum():
    found = budget_problems("mlp_cleaning", dict(PARAMS, n_train=30, budget=20))
    assert found == ["experiment.budget=20 is too small for n_train=30: at least 35 utility evaluations are "
                     "needed (by method: beta_shapley 35, truncated_permutation 32)."]
    assert budget_problems("mlp_cleaning", dict(PARAMS, n_train=30, budget=35)) == []


def test_data_cleaning_checks_the_common_budget_the_grid_and_the_probe():
    params = dict(PARAMS, n_train=40, budget=200, budget_grid=[30, 400], probe_budgets=[40])
    found = budget_problems("data_cleaning", params)
    assert [line.split(" is too small")[0] for line in found] == ["experiment.budget_grid[0]=30",
                                                                   "experiment.probe_budgets[0]=40"]
    assert "at least 83 utility evaluations" in found[0] and "svarm 83" in found[0]
    assert budget_problems("data_cleaning", dict(params, budget_grid=[100, 400], probe_budgets=[800])) == []
    assert "experiment.budget=60" in budget_problems("data_cleaning", dict(params, budget=60, budget_grid=[],
                                                                           probe_budgets=[800]))[0]
    assert budget_problems("iris_accuracy", {"n_train": 16}) == []  # no budget of this kind


@pytest.mark.parametrize("n_train, n_test, reference, expected", [
    (16, 40, "exact", []),
    (13, 40, "exact", ["experiment.n_train=13: expected an even number"]),
    (60, 42, "permutation", ["experiment.n_train + experiment.n_test = 102: expected at most the 100 flowers"]),
    (24, 40, "exact", ["experiment.n_train=24: the exact reference enumerates 2^n_train coalitions, at most "
                       "n_train = 20"]),
    (24, 40, "permutation", []),
])
def test_iris_sizes_are_checked_before_the_kernel_as_its_loader_checks_them(n_train, n_test, reference, expected):
    """A size the two iris classes cannot give failed cells into the notebook, after the earlier run was cleared."""
    from shapley_research.experiments.iris_accuracy import load_iris_pair

    found = budget_problems("iris_accuracy", {"n_train": n_train, "n_test": n_test, "reference": reference})
    assert len(found) == len(expected) and all(line.startswith(start) for line, start in zip(found, expected))
    data_problems = [line for line in found if "exact reference" not in line]
    if data_problems:
        with pytest.raises(ValueError, match="expected"):
            load_iris_pair(n_train=n_train, n_test=n_test)
    else:
        assert len(load_iris_pair(n_train=n_train, n_test=n_test)[1]) == n_train


def test_one_permutation_of_budget_buys_none_and_is_refused():
    from shapley_research.experiments._schema import parameter_problems

    assert parameter_problems("iris_accuracy", {"budget_permutations": 1}) == [
        "experiment.budget_permutations=1: expected an integer >= 2."]
    assert parameter_problems("iris_accuracy", {"budget_permutations": 2}) == []
