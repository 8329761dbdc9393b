"""``fast="auto"`` routes by predicted cost per coalition (learners/_cost.py); no timings are asserted here.

Speed itself is measured in ``benchmarks/``; these tests pin the decisions
on representative shapes, the routes of the experiments that use
``fast="auto"`` (their committed results must not move), and the refusals.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from sklearn.datasets import load_digits, load_iris
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.tree import DecisionTreeClassifier

from shapley_research import LogisticRegressionUtility, ModelUtility
from shapley_research.utilities.learners import RouteDecision, route_by_cost, route_decision
# Internal: the cost formula's own max_iter check, which no public call reaches (route_by_cost costs a model whose
# max_iter is not a positive integer at 100 iterations)
from shapley_research.utilities.learners._cost import logistic_costs

CONF = Path(__file__).resolve().parents[2] / "conf"
#: Batched must be predicted this many times faster than one fit per subset: route_by_cost's default margin.
SAFETY_MARGIN = inspect.signature(route_by_cost).parameters["margin"].default


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:300], y[:300], X[300:400], y[300:400]


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X[::2], y[::2], X[1::2], y[1::2]


# --------------------------------------------------------------------------- decisions on shapes


@pytest.mark.parametrize("model, shape, batched, solver", [
    (LogisticRegression(), (100, 4, 3), True, "newton"),                    # iris
    (LogisticRegression(), (300, 30, 2), True, "newton"),                   # breast cancer (binary Newton)
    (LogisticRegression(), (300, 64, 10), True, "lbfgs"),                   # digits, 10 classes
    (LogisticRegression(max_iter=1000), (300, 64, 10), True, "lbfgs"),
    (LogisticRegression(), (1000, 50, 10), True, "lbfgs"),                  # MNIST after PCA
    (LogisticRegression(solver="newton-cholesky", max_iter=1000), (10, 4, 3), True, "newton"),
    (Ridge(), (221, 10, None), True, "ridge"),                              # diabetes
    (Ridge(), (300, 400, None), False, "ridge"),                            # more features than points
])
def test_decision_on_representative_shapes(model, shape, batched, solver):
    decision = route_by_cost(model, *shape)
    assert isinstance(decision, RouteDecision)
    assert decision.batched is batched and decision.solver == solver
    ratio = decision.per_subset_seconds / decision.batched_seconds
    assert (ratio >= SAFETY_MARGIN) is batched
    assert ("batched:" if batched else "per-subset fits:") in str(decision)
    assert f"{ratio:.2f}x" in decision.reason


def test_costs_grow_with_the_problem():
    small = route_by_cost(LogisticRegression(), 300, 64, 10)
    big = route_by_cost(LogisticRegression(), 3000, 64, 10)
    assert big.batched_seconds > small.batched_seconds and big.per_subset_seconds > small.per_subset_seconds
    capped = route_by_cost(LogisticRegression(max_iter=5), 300, 64, 10)
    assert capped.per_subset_seconds < small.per_subset_seconds  # a capped scikit-learn fit is cheaper
    ridge = route_by_cost(Ridge(), 300, 400)
    assert ridge.solver == "ridge" and ridge.batched_seconds > ridge.per_subset_seconds


@pytest.mark.parametrize("N, d, K", [(100, 4, 3), (300, 30, 2), (300, 64, 10), (200, 64, 2), (1000, 20, 5),
                                     (300, 160, 2), (300, 159, 2), (40, 39, 4), (40, 40, 4), (6000, 60, 2)])
def test_solver_prediction_matches_the_learner(N, d, K):
    rng = np.random.default_rng(0)
    y = np.arange(N) % K
    learner = LogisticRegressionUtility(rng.normal(size=(N, d)), y, rng.normal(size=(5, d)), y[:5])
    assert route_by_cost(LogisticRegression(), N, d, K).solver == ("newton" if learner._use_newton() else "lbfgs")


# --------------------------------------------------------------------------- through ModelUtility


def test_digits_and_iris_go_batched(digits, iris):
    game = ModelUtility(LogisticRegression(), *digits, fast="auto")
    assert isinstance(game.learner_, LogisticRegressionUtility) and game.route_.solver == "lbfgs"
    assert game.learner_.tol == LogisticRegression().tol  # L-BFGS stops at scikit-learn's own tolerance
    game = ModelUtility(LogisticRegression(), *iris, fast="auto")
    assert isinstance(game.learner_, LogisticRegressionUtility) and game.route_.batched


def test_fast_true_forces_and_fast_false_refuses_the_batched_learner(digits):
    forced = ModelUtility(LogisticRegression(), *digits, fast=True)
    assert isinstance(forced.learner_, LogisticRegressionUtility) and "fast=True" in str(forced.route_)
    plain = ModelUtility(LogisticRegression(), *digits, fast=False)
    assert plain.learner_ is None and "fast=False" in str(plain.route_)


def test_warm_prefixes_keep_auto_on_the_learner(digits):
    game = ModelUtility(LogisticRegression(), *digits, fast="auto", warm_prefixes=True)
    assert game.learner_.prefix_path == "exact" and "warm_prefixes" in str(game.route_)


def test_unsupported_model_states_its_reason(iris):
    game = ModelUtility(DecisionTreeClassifier(random_state=0), *iris, fast="auto")
    assert game.learner_ is None and "no batched learner" in str(game.route_)


def test_decision_depends_on_shapes_not_values(digits):
    X_train, y_train, X_test, y_test = digits
    a = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, fast="auto").route_
    b = ModelUtility(LogisticRegression(), X_train / 16.0, y_train, X_test / 16.0, y_test, fast="auto").route_
    assert a == b


# --------------------------------------------------------------------------- experiments keep their routes


@pytest.mark.parametrize("profile", ["paper", "quick"])
def test_data_cleaning_games_stay_batched(profile):
    """data_cleaning pins the batched Newton route its committed results were made with (fast="auto"'s)."""
    import shapley_research.experiments.data_cleaning as dc

    options = yaml.safe_load((CONF / "experiment" / "data_cleaning.yaml").read_text())
    options.update(yaml.safe_load((CONF / "experiment_profile" / "data_cleaning" / f"{profile}.yaml").read_text())
                   or {})
    for name in options["datasets"]:
        for seed in range(2):
            problem = dc.make_problem(name, options["n_train"], options["n_test"], options["flip_fraction"], seed,
                                      tuple(options["digit_classes"]))
            game = dc.make_game(problem, options["logistic_C"], options["max_iter"])
            assert isinstance(game.learner_, LogisticRegressionUtility), (name, str(game.route_))
            assert "fast=True" in str(game.route_)  # pinned: the route cannot depend on the machine
            auto = route_by_cost(game.model, game.n_players, game.X_train.shape[1], 2)
            assert auto.batched and auto.solver == "newton"  # the pin is the route "auto" took
            assert auto.per_subset_seconds >= 3 * auto.batched_seconds  # far from the margin


def test_cleaning_comparison_shape_stays_batched():
    """benchmarks/cleaning_comparison.py: 300 breast cancer points, 30 features, 2 classes, fast="auto"."""
    import shapley_research.experiments.data_cleaning as dc

    decision = route_by_cost(dc.make_model(), 300, 30, 2)
    assert decision.batched and decision.solver == "newton"


# --------------------------------------------------------------------------- invalid inputs


@pytest.mark.parametrize("call, error, match", [
    (lambda: route_by_cost(LogisticRegression(), 0, 4, 3), ValueError, "n_samples must be >= 1"),
    (lambda: route_by_cost(LogisticRegression(), 10, 4.0, 3), TypeError, "n_features must be an integer"),
    (lambda: route_by_cost(LogisticRegression(), 10, 4, 1), ValueError, "n_classes must be >= 2"),
    (lambda: route_by_cost(LogisticRegression(), 10, 4, True), TypeError, "n_classes must be an integer"),
    (lambda: logistic_costs(10, 4, 3, max_iter=0), ValueError, "max_iter must be >= 1"),
    (lambda: route_by_cost(Ridge(), -1, 4), ValueError, "n_samples must be >= 1"),
    (lambda: route_by_cost(LogisticRegression(), 10, 4), ValueError, "n_classes is needed"),
    (lambda: route_by_cost(DecisionTreeClassifier(), 10, 4, 2), TypeError, "model must be a LogisticRegression"),
    (lambda: route_by_cost(Ridge(), 10, 4, margin=0.0), ValueError, "margin must be a finite positive"),
    (lambda: route_by_cost(Ridge(), 10, 4, margin=math.nan), ValueError, "margin must be a finite positive"),
    (lambda: route_by_cost(Ridge(), 10, 4, margin=True), ValueError, "margin must be a finite positive"),
    (lambda: route_decision(Ridge(), "r2", "yes", 10, 4), ValueError, "fast must be 'auto', True or False"),
    (lambda: route_decision(Ridge(), "r2", 1, 10, 4), ValueError, "fast must be 'auto', True or False"),
    (lambda: route_decision(Ridge(positive=True), "r2", True, 10, 4), ValueError,
     "fast=True but Ridge has no batched learner"),
])
def test_invalid_inputs_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_single_class_labels_route_batched():
    decision = route_decision(LogisticRegression(), "accuracy", "auto", 10, 4, n_classes=1)
    assert decision.batched and "one class" in decision.reason
