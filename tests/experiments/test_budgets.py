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
