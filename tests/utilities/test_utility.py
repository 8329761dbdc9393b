"""ModelUtility: clone-and-fit utilities, degenerate coalitions, memoisation, routing, validation.

Every reference value is computed here directly with scikit-learn (clone, fit,
score with ``sklearn.metrics``), independently of the package's scoring code.
"""

from __future__ import annotations

import inspect
import itertools
import math
import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_diabetes, load_iris
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import accuracy_score, get_scorer, log_loss, mean_absolute_error, mean_squared_error, r2_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from shapley_research import LogisticRegressionUtility, ModelUtility, RidgeUtility, exact_shapley, permutation_shapley
from shapley_research.games import supports_prefixes

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:60], order[60:120]
    return X[train], y[train], X[test], y[test]


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    order = np.random.default_rng(1).permutation(len(y))
    train, test = order[:50], order[50:150]
    return X[train], y[train], X[test], y[test]


def random_masks(rng, m, n, min_size=2):
    sizes = rng.integers(min_size, n + 1, size=m)
    masks = np.zeros((m, n), dtype=bool)
    for row, size in zip(masks, sizes):
        row[rng.choice(n, size, replace=False)] = True
    return masks


def direct_score(model, X_train, y_train, X_test, y_test, mask, metric):
    """Independent reference: clone, fit on the rows of the mask, score with sklearn.metrics."""
    fitted = clone(model).fit(X_train[mask], y_train[mask])
    if metric == "accuracy":
        return accuracy_score(y_test, fitted.predict(X_test))
    if metric == "neg_log_loss":
        labels = np.unique(y_train)
        proba = np.zeros((len(X_test), len(labels)))
        proba[:, np.searchsorted(labels, fitted.classes_)] = fitted.predict_proba(X_test)
        return -log_loss(y_test, proba, labels=labels)
    predictions = fitted.predict(X_test)
    if metric == "neg_mean_squared_error":
        return -mean_squared_error(y_test, predictions)
    if metric == "neg_mean_absolute_error":
        return -mean_absolute_error(y_test, predictions)
    return r2_score(y_test, predictions)


# ---------------------------------------------------------------------------------------------
# Agreement with a direct scikit-learn fit
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model, metric", [
    (LogisticRegression(solver="newton-cholesky"), "accuracy"),
    (LogisticRegression(solver="newton-cholesky"), "neg_log_loss"),
    (DecisionTreeClassifier(random_state=0), "accuracy"),
])
def test_classification_matches_direct_fit(iris, model, metric):
    X_train, y_train, X_test, y_test = iris
    game = ModelUtility(model, X_train, y_train, X_test, y_test, metric, fast=False)
    masks = random_masks(np.random.default_rng(2), 8, len(y_train), min_size=8)
    masks = masks[[len(np.unique(y_train[m])) >= 2 for m in masks]]
    expected = [direct_score(model, X_train, y_train, X_test, y_test, m, metric) for m in masks]
    np.testing.assert_allclose(game.evaluate(masks), expected, rtol=1e-12, atol=1e-12)
    assert game.n_fits == len(masks)


@pytest.mark.parametrize("metric", ["neg_mean_squared_error", "neg_mean_absolute_error", "r2"])
def test_regression_matches_direct_fit(diabetes, metric):
    X_train, y_train, X_test, y_test = diabetes
    model = DecisionTreeRegressor(max_depth=3, random_state=0)
    game = ModelUtility(model, X_train, y_train, X_test, y_test, metric)
    assert game.learner_ is None  # no batched learner for trees
    masks = random_masks(np.random.default_rng(3), 10, len(y_train))
    expected = [direct_score(model, X_train, y_train, X_test, y_test, m, metric) for m in masks]
    np.testing.assert_allclose(game.evaluate(masks), expected, rtol=1e-12)


@pytest.mark.parametrize("model, metric, message", [
    (LogisticRegression(), "r2", "metric='r2' is a regression metric, but LogisticRegression is a classifier; use "
                                 "'accuracy' or 'neg_log_loss'"),
    (KNeighborsClassifier(), "neg_mse", "but KNeighborsClassifier is a classifier"),
    (Ridge(), "accuracy", "metric='accuracy' is a classification metric, but Ridge is a regressor; use 'r2'"),
    (DecisionTreeRegressor(random_state=0), "accuracy", "but DecisionTreeRegressor is a regressor"),
])
def test_a_metric_of_the_other_task_than_the_model_is_refused(iris, model, metric, message):
    """r2 on a classifier scored class labels as numbers, silently; a scorer callable still may, deliberately."""
    X_train, y_train, X_test, y_test = iris
    with pytest.raises(ValueError, match=re.escape(message)):
        ModelUtility(model, X_train, y_train, X_test, y_test, metric)
    scorer = get_scorer("r2" if metric in ("r2", "neg_mse") else "accuracy")
    assert ModelUtility(model, X_train, y_train, X_test, y_test, scorer, task="regression").task == "regression"


def test_a_model_that_draws_fresh_randomness_at_each_fit_is_named_in_a_warning(iris):
    """Its utility is no function of the coalition, and no estimator's seed repeats it."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X_train, y_train, X_test, y_test = iris
    for model, name in [(RandomForestClassifier(), "RandomForestClassifier"),
                        (make_pipeline(StandardScaler(), DecisionTreeClassifier()), "DecisionTreeClassifier"),
                        (LogisticRegression(solver="saga"), "LogisticRegression"),
                        (SVC(probability=True), "SVC")]:
        with pytest.warns(UserWarning, match=f"^{name} has random_state=None: each fit may draw fresh randomness"):
            ModelUtility(model, X_train, y_train, X_test, y_test, fast=False)
    class MyLogisticRegression(LogisticRegression):  # a subclass follows its base's rule
        pass

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for quiet in (RandomForestClassifier(random_state=0), LogisticRegression(), SVC(), KNeighborsClassifier(),
                      make_pipeline(StandardScaler(), LogisticRegression()), MyLogisticRegression()):
            ModelUtility(quiet, X_train, y_train, X_test, y_test, fast=False)


def test_the_randomness_check_never_stops_a_game_from_being_built(iris):
    """A wrapper whose get_params names a nested key without its parent is named by that key."""
    class Flat:
        _estimator_type = "regressor"

        def __init__(self, **params):
            self.params = params

        def get_params(self, deep=True):
            return {"booster__random_state": None}

        def fit(self, X, y):
            self.mean_ = float(np.mean(y))
            return self

        def predict(self, X):
            return np.full(len(X), self.mean_)

    X_train, y_train, X_test, y_test = iris
    with pytest.warns(UserWarning, match="^booster__random_state has random_state=None"):
        game = ModelUtility(Flat(), X_train, y_train.astype(float), X_test, y_test.astype(float), "r2")
    assert np.isfinite(game.evaluate(np.ones((1, len(y_train)), dtype=bool))).all()


def test_the_metric_advice_suits_the_model_and_an_explicit_task_is_honoured(iris):
    from sklearn.linear_model import RidgeClassifier

    X_train, y_train, X_test, y_test = iris
    with pytest.raises(ValueError, match="RidgeClassifier is a classifier; use 'accuracy', or pass task='regression'"):
        ModelUtility(RidgeClassifier(), X_train, y_train, X_test, y_test, "r2")
    game = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, "r2", task="regression", fast=False)
    assert game.task == "regression"  # labels scored as numbers, deliberately


def test_metric_aliases_and_callable_scorer(iris, diabetes):
    X_train, y_train, X_test, y_test = diabetes
    a = ModelUtility(Ridge(), X_train, y_train, X_test, y_test, "neg_mse", fast=False)
    b = ModelUtility(Ridge(), X_train, y_train, X_test, y_test, "neg_mean_squared_error", fast=False)
    mask = np.ones(len(y_train), dtype=bool)
    assert a(mask) == b(mask)

    X_train, y_train, X_test, y_test = iris
    scorer = get_scorer("balanced_accuracy")
    game = ModelUtility(LogisticRegression(solver="newton-cholesky"), X_train, y_train, X_test, y_test, scorer)
    assert game.task == "classification" and game.learner_ is None  # callables use the estimator itself
    masks = random_masks(np.random.default_rng(4), 4, len(y_train), min_size=10)
    expected = [scorer(clone(game.model).fit(X_train[m], y_train[m]), X_test, y_test) for m in masks]
    np.testing.assert_allclose(game.evaluate(masks), expected)


def test_string_labels(iris):
    X_train, y_train, X_test, y_test = iris
    names = np.array(["setosa", "versicolor", "virginica"])
    model = LogisticRegression(solver="newton-cholesky")
    game = ModelUtility(model, X_train, names[y_train], X_test, names[y_test], "neg_log_loss", fast=False)
    numeric = ModelUtility(model, X_train, y_train, X_test, y_test, "neg_log_loss", fast=False)
    masks = random_masks(np.random.default_rng(5), 5, len(y_train), min_size=10)
    np.testing.assert_allclose(game.evaluate(masks), numeric.evaluate(masks))


# ---------------------------------------------------------------------------------------------
# Degenerate coalitions
# ---------------------------------------------------------------------------------------------

def test_degenerate_constant_convention_classification(iris):
    X_train, y_train, X_test, y_test = iris
    n = len(y_train)
    for metric in ("accuracy", "neg_log_loss"):
        game = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, metric, fast=False)
        empty = np.zeros(n, dtype=bool)
        one_point = empty.copy()
        one_point[0] = True
        one_class = y_train == y_train[0]
        values = game.evaluate(np.array([empty, one_point, one_class]))
        assert game.n_fits == 0  # nothing was fitted, nothing crashed
        prior = np.bincount(y_train, minlength=3) / n
        majority = np.argmax(prior)
        if metric == "accuracy":
            np.testing.assert_allclose(values, [np.mean(y_test == majority), np.mean(y_test == y_train[0]),
                                                np.mean(y_test == y_train[0])])
        else:
            point_mass = np.eye(3)[[y_train[0]] * len(y_test)]
            np.testing.assert_allclose(values, [-log_loss(y_test, np.tile(prior, (len(y_test), 1))),
                                                -log_loss(y_test, point_mass, labels=[0, 1, 2]),
                                                -log_loss(y_test, point_mass, labels=[0, 1, 2])])


def test_degenerate_constant_convention_regression(diabetes):
    X_train, y_train, X_test, y_test = diabetes
    game = ModelUtility(DecisionTreeRegressor(random_state=0), X_train, y_train, X_test, y_test, "neg_mse",
                        min_samples=3)
    masks = np.zeros((3, len(y_train)), dtype=bool)
    masks[1, 0] = True
    masks[2, :2] = True
    values = game.evaluate(masks)
    assert game.n_fits == 0
    expected = [-np.mean(y_test**2), -np.mean((y_test - y_train[0]) ** 2),
                -np.mean((y_test - y_train[:2].mean()) ** 2)]
    np.testing.assert_allclose(values, expected)


@pytest.mark.parametrize("task, scorer_name, metric", [
    ("classification", "accuracy", "accuracy"),
    ("classification", "neg_log_loss", "neg_log_loss"),
    ("classification", "roc_auc_ovr", None),  # needs predict_proba and the classifier tag
    ("regression", "neg_mean_squared_error", "neg_mse"),
    ("regression", "r2", "r2"),
])
def test_scorer_objects_score_degenerate_coalitions(iris, diabetes, task, scorer_name, metric):
    """A scikit-learn scorer object scores the constant model of the empty set and of one-class coalitions.

    Scorers ask the estimator's tags whether it is a classifier; the constant model must answer. Every
    estimator evaluates the empty coalition, so without tags every estimator failed with a scorer.
    """
    X_train, y_train, X_test, y_test = iris if task == "classification" else diabetes
    model = LogisticRegression() if task == "classification" else Ridge()
    scorer = get_scorer(scorer_name)
    game = ModelUtility(model, X_train, y_train, X_test, y_test, scorer, min_samples=3)
    masks = np.zeros((3, len(y_train)), dtype=bool)
    masks[1, 0] = True
    masks[2] = y_train == y_train[0] if task == "classification" else np.arange(len(y_train)) < 2
    values = game.evaluate(masks)
    assert np.isfinite(values).all()
    if metric is not None:  # the same numbers as the built-in metric of the same name
        reference = ModelUtility(model, X_train, y_train, X_test, y_test, metric, min_samples=3, fast=False)
        np.testing.assert_allclose(values, reference.evaluate(masks), rtol=1e-12)
    else:  # a constant model ranks nothing: chance-level AUC
        np.testing.assert_allclose(values, 0.5)
    if scorer_name in ("accuracy", "r2"):  # the others need every class in a fitted coalition (scikit-learn's rule)
        result = permutation_shapley(game, budget=2 * len(y_train), seed=0)  # the estimators' U(empty) call
        assert np.isfinite(result.values).all()


def test_degenerate_default_and_raise(iris):
    X_train, y_train, X_test, y_test = iris
    empty = np.zeros((1, len(y_train)), dtype=bool)
    game = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, degenerate="default",
                        default_utility=-1.5, fast=False)
    assert game.evaluate(empty)[0] == -1.5
    strict = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, degenerate="raise", fast=False)
    with pytest.raises(ValueError, match="degenerate coalition"):
        strict.evaluate(empty)


def test_models_that_cannot_fit_a_small_coalition_get_the_degenerate_utility_with_a_warning(iris):
    """k-NN needs n_neighbors points: smaller coalitions are never fitted, get the constant model and a warning."""
    X_train, y_train, X_test, y_test = iris
    mask = np.zeros(len(y_train), dtype=bool)
    mask[np.flatnonzero(y_train == 0)[:2]] = True
    mask[np.flatnonzero(y_train == 1)[:1]] = True  # 3 points, 2 classes: not degenerate by default
    knn = KNeighborsClassifier(n_neighbors=5)
    game = ModelUtility(knn, X_train, y_train, X_test, y_test)
    with pytest.warns(UserWarning, match="min_samples=5") as record:
        value = game(mask)
    assert value == np.mean(y_test == 0)  # constant model: majority label of S
    assert game.n_fits == 0 and len([w for w in record if "min_samples" in str(w.message)]) == 1
    quiet = ModelUtility(knn, X_train, y_train, X_test, y_test, min_samples=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert quiet(mask) == value
    with pytest.raises(ValueError, match="n_neighbors=5"):
        ModelUtility(knn, X_train, y_train, X_test, y_test, degenerate="raise")(mask)


# ---------------------------------------------------------------------------------------------
# Exact Shapley values of a small model game against brute force
# ---------------------------------------------------------------------------------------------

def brute_force_shapley(X_train, y_train, X_test, y_test, model, metric):
    """Shapley values over all subsets, scikit-learn called directly, constant model when degenerate.

    Scores are plain numpy here (sklearn.metrics' validation would dominate 1024 evaluations):
    accuracy, and log-loss with probabilities clipped at machine epsilon as sklearn's log_loss does.
    """
    n = len(y_train)
    labels = np.unique(y_train)
    test_index = np.searchsorted(labels, y_test)
    eps = np.finfo(float).eps

    def score(proba):  # proba: (n_test, n_labels) over `labels`
        if metric == "accuracy":
            return np.mean(labels[np.argmax(proba, axis=1)] == y_test)
        return np.mean(np.log(np.clip(proba[np.arange(len(y_test)), test_index], eps, 1 - eps)))

    utility = {}
    for size in range(n + 1):
        for subset in itertools.combinations(range(n), size):
            mask = np.zeros(n, dtype=bool)
            mask[list(subset)] = True
            if len(np.unique(y_train[mask])) >= 2:
                fitted = clone(model).fit(X_train[mask], y_train[mask])
                proba = np.zeros((len(y_test), len(labels)))
                if metric == "accuracy":  # hard predictions, as the model makes them
                    proba[np.arange(len(y_test)), np.searchsorted(labels, fitted.predict(X_test))] = 1.0
                else:
                    proba[:, np.searchsorted(labels, fitted.classes_)] = fitted.predict_proba(X_test)
            else:  # constant model: label frequencies of S (the training prior when S is empty)
                counted = y_train[mask] if size else y_train
                freq = np.bincount(np.searchsorted(labels, counted), minlength=len(labels)) / len(counted)
                proba = np.tile(freq, (len(y_test), 1))
            utility[subset] = score(proba)
    values = np.zeros(n)
    for i in range(n):
        for subset, u in utility.items():
            if i in subset:
                continue
            s = len(subset)
            weight = math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n)
            values[i] += weight * (utility[tuple(sorted(subset + (i,)))] - u)
    return values


def ten_point_game_data(iris):
    X, y, X_test, y_test = iris
    rng = np.random.default_rng(6)
    train = np.concatenate([rng.choice(np.flatnonzero(y == c), 4 if c < 2 else 2, replace=False) for c in range(3)])
    return X[train], y[train], X_test, y_test  # 10 points, 3 classes


@pytest.mark.slow  # over a second
def test_exact_shapley_of_clone_and_fit_game_equals_brute_force(iris):
    X_train, y_train, X_test, y_test = ten_point_game_data(iris)
    model = DecisionTreeClassifier(max_depth=2, random_state=0)
    expected = brute_force_shapley(X_train, y_train, X_test, y_test, model, "accuracy")
    game = ModelUtility(model, X_train, y_train, X_test, y_test, "accuracy")
    result = exact_shapley(game)
    np.testing.assert_allclose(result.values, expected, atol=1e-12)
    assert np.isclose(result.values.sum(), result.info["full_utility"] - result.info["empty_utility"])


@pytest.mark.slow  # over a second
def test_exact_shapley_of_logistic_game_equals_brute_force(iris):
    X_train, y_train, X_test, y_test = ten_point_game_data(iris)
    model = LogisticRegression(C=0.5, solver="newton-cholesky", tol=1e-10, max_iter=1000)
    expected = brute_force_shapley(X_train, y_train, X_test, y_test, model, "neg_log_loss")
    game = ModelUtility(model, X_train, y_train, X_test, y_test, "neg_log_loss", fast="auto")  # batched
    assert isinstance(game.learner_, LogisticRegressionUtility)
    np.testing.assert_allclose(exact_shapley(game).values, expected, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# Memoisation
# ---------------------------------------------------------------------------------------------

def test_cache_returns_identical_values_and_saves_fits(iris):
    X_train, y_train, X_test, y_test = iris
    masks = random_masks(np.random.default_rng(7), 6, len(y_train), min_size=10)
    plain = ModelUtility(DecisionTreeClassifier(random_state=0), X_train, y_train, X_test, y_test)
    cached = ModelUtility(DecisionTreeClassifier(random_state=0), X_train, y_train, X_test, y_test, cache=True)
    batch = np.concatenate([masks, masks[:3]])  # repeats inside one call are fitted once
    first = cached.evaluate(batch)
    assert cached.n_fits == 6 and cached.cache_.hits == 3 and cached.cache_.misses == 6
    again = cached.evaluate(masks[::-1])
    assert cached.n_fits == 6 and cached.cache_.hits == 9
    np.testing.assert_array_equal(first, plain.evaluate(batch))
    np.testing.assert_array_equal(again, first[:6][::-1])


def test_cache_is_bounded(iris):
    X_train, y_train, X_test, y_test = iris
    game = ModelUtility(DecisionTreeClassifier(random_state=0), X_train, y_train, X_test, y_test,
                        cache=True, cache_size=3)
    masks = random_masks(np.random.default_rng(8), 5, len(y_train), min_size=10)
    game.evaluate(masks)
    assert len(game.cache_) == 3
    game.evaluate(masks[:1])  # evicted (least recently used): fitted again
    assert game.n_fits == 6


# ---------------------------------------------------------------------------------------------
# Routing to the batched learners
# ---------------------------------------------------------------------------------------------

def test_fast_routing_agrees_with_clone_and_fit(iris, diabetes):
    X_train, y_train, X_test, y_test = diabetes
    masks = random_masks(np.random.default_rng(9), 8, len(y_train))
    ridge = Ridge(alpha=0.1, solver="cholesky")
    fast = ModelUtility(ridge, X_train, y_train, X_test, y_test, "r2", fast="auto")
    slow = ModelUtility(ridge, X_train, y_train, X_test, y_test, "r2", fast=False)
    assert isinstance(fast.learner_, RidgeUtility) and slow.learner_ is None
    np.testing.assert_allclose(fast.evaluate(masks), slow.evaluate(masks), rtol=1e-8)
    assert fast.n_fits == len(masks)
    assert supports_prefixes(fast)  # exact one-pass path exposed

    X_train, y_train, X_test, y_test = iris
    model = LogisticRegression(C=2.0, solver="newton-cg", tol=1e-10, max_iter=1000)
    fast = ModelUtility(model, X_train, y_train, X_test, y_test, "neg_log_loss", fast="auto")
    slow = ModelUtility(model, X_train, y_train, X_test, y_test, "neg_log_loss", fast=False)
    assert isinstance(fast.learner_, LogisticRegressionUtility)
    assert not supports_prefixes(fast)  # the approximate online path is never implied
    masks = random_masks(np.random.default_rng(10), 8, len(y_train), min_size=6)
    np.testing.assert_allclose(fast.evaluate(masks), slow.evaluate(masks), rtol=1e-6)


def test_warm_prefixes_give_the_values_of_refitting_every_prefix(iris):
    """The exact warm-started prefix path changes how prefixes are fitted, not the utilities (to the tolerance)."""
    X_train, y_train, X_test, y_test = iris
    model = LogisticRegression(C=1.0, tol=1e-8)
    refit = ModelUtility(model, X_train, y_train, X_test, y_test, "neg_log_loss", fast="auto")
    warm = ModelUtility(model, X_train, y_train, X_test, y_test, "neg_log_loss", fast="auto", warm_prefixes=True)
    assert not supports_prefixes(refit) and supports_prefixes(warm)
    budget = 4 * (len(y_train) + 1)
    a = permutation_shapley(refit, budget, seed=3, progress=False)
    b = permutation_shapley(warm, budget, seed=3, progress=False)
    assert warm.learner_.last_prefix_info_["passes"] > 0  # the warm path ran
    assert a.n_evaluations == b.n_evaluations
    np.testing.assert_allclose(b.values, a.values, atol=1e-5)
    assert abs(a.values).max() > 1e-2  # not trivially equal


@pytest.mark.parametrize("model, fast", [(LogisticRegression(), False), (Ridge(), "auto"),
                                         (LogisticRegression(class_weight="balanced"), "auto")])
def test_warm_prefixes_need_a_routed_logistic_regression(iris, model, fast):
    X_train, y_train, X_test, y_test = iris
    metric = "r2" if isinstance(model, Ridge) else "accuracy"
    with pytest.raises(ValueError, match="warm_prefixes=True needs a LogisticRegression"):
        ModelUtility(model, X_train, y_train.astype(float) if metric == "r2" else y_train, X_test,
                     y_test.astype(float) if metric == "r2" else y_test, metric, fast=fast, warm_prefixes=True)


def test_the_default_is_auto():
    assert inspect.signature(ModelUtility).parameters["fast"].default == "auto"


def test_a_default_logistic_game_on_iris_is_batched_and_agrees_with_scikit_learn(iris):
    """fast="auto" (the default) routes iris batched: the forced learner's bits, scikit-learn's to its tolerance.

    The learner is solved to ``min(tol, 1e-6)``; against a tightly converged
    scikit-learn fit the docstring promises probabilities to about 1e-4, so
    the mean test log-likelihood agrees to 1e-4 relative.
    """
    X_train, y_train, X_test, y_test = iris
    masks = random_masks(np.random.default_rng(11), 12, len(y_train), min_size=6)
    default = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test)
    assert isinstance(default.learner_, LogisticRegressionUtility)
    assert default.route_.batched and str(default.route_).startswith("batched: predicted")
    forced = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, fast=True)
    np.testing.assert_array_equal(default.evaluate(masks), forced.evaluate(masks))

    tight = LogisticRegression(tol=1e-10, max_iter=10_000)
    routed = ModelUtility(tight, X_train, y_train, X_test, y_test, "neg_log_loss")
    exact = ModelUtility(tight, X_train, y_train, X_test, y_test, "neg_log_loss", fast=False)
    assert routed.route_.batched and exact.learner_ is None
    np.testing.assert_allclose(routed.evaluate(masks), exact.evaluate(masks), rtol=1e-4)


@pytest.mark.parametrize("model, reason", [
    (LogisticRegression(solver="liblinear", random_state=0), "liblinear penalises the intercept"),
    (LogisticRegression(l1_ratio=0.5), "only the L2 penalty is supported"),
    (LogisticRegression(class_weight="balanced"), "class_weight is not supported"),
    (DecisionTreeClassifier(random_state=0),
     "only sklearn.linear_model.LogisticRegression and Ridge have batched learners"),
])
def test_unsupported_models_are_fitted_themselves(iris, model, reason):
    X_train, y_train, X_test, y_test = iris
    game = ModelUtility(model, X_train, y_train, X_test, y_test)  # the default, fast="auto"
    assert game.learner_ is None and not game.route_.batched
    assert str(game.route_).startswith(f"per-subset fits: {type(model).__name__} has no batched learner ({reason}")
    with pytest.raises(ValueError, match="fast=True"):
        ModelUtility(model, X_train, y_train, X_test, y_test, fast=True)


def test_a_default_tree_game_fits_the_tree_on_every_coalition(iris):
    """An unsupported model under the default: scikit-learn's own fit per coalition, bit for bit."""
    X_train, y_train, X_test, y_test = iris
    model = DecisionTreeClassifier(random_state=0)
    game = ModelUtility(model, X_train, y_train, X_test, y_test)
    masks = random_masks(np.random.default_rng(12), 4, len(y_train), min_size=10)
    expected = [direct_score(model, X_train, y_train, X_test, y_test, m, "accuracy") for m in masks]
    np.testing.assert_array_equal(game.evaluate(masks), expected)
    assert game.n_fits == len(masks)


# ---------------------------------------------------------------------------------------------
# Validation at the boundary
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("change, error, match", [
    (dict(X_train=np.empty((0, 4))), ValueError, "X_train is empty"),
    (dict(X_test=np.full((3, 4), np.nan)), ValueError, "X_test contains NaN"),
    (dict(X_train=np.full((60, 4), np.inf)), ValueError, "X_train contains NaN or infinite"),
    (dict(y_train=np.zeros(59)), ValueError, "y_train has 59 targets"),
    (dict(X_train=np.zeros(60)), ValueError, "X_train must be 2-D"),
    (dict(X_test=np.zeros((5, 3)), y_test=np.zeros(5)), ValueError, "X_train has 4 features but X_test has 3"),
    (dict(y_test=np.zeros((60, 2))), ValueError, "y_test must be 1-D"),
    (dict(metric="f_one"), ValueError, "metric must be one of"),
    (dict(metric=3), TypeError, "metric must be a string or a callable"),
    (dict(X_train=[["a"] * 4] * 60), TypeError, "X_train must be a numeric array"),
    (dict(degenerate="ignore"), ValueError, "degenerate must be one of"),
    (dict(degenerate="default"), ValueError, "needs a number as default_utility"),
    (dict(default_utility=0.0), ValueError, "only used with degenerate='default'"),
    (dict(min_samples=0), ValueError, "min_samples must be >= 1"),
    (dict(cache_size=0, cache=True), ValueError, "cache_size must be >= 1"),
    (dict(fast="yes"), ValueError, "fast must be"),
    (dict(task="ranking"), ValueError, "task must be one of"),
    (dict(task="regression"), ValueError, "is a classification metric but task='regression'"),
])
def test_bad_inputs_name_the_argument(iris, change, error, match):
    X_train, y_train, X_test, y_test = iris
    arguments = dict(model=LogisticRegression(), X_train=X_train, y_train=y_train, X_test=X_test,
                     y_test=y_test, metric="accuracy")
    arguments.update(change)
    with pytest.raises(error, match=match):
        ModelUtility(**arguments)


def test_bad_models(iris):
    X_train, y_train, X_test, y_test = iris
    with pytest.raises(TypeError, match="model must be an estimator"):
        ModelUtility(object(), X_train, y_train, X_test, y_test)

    class NoProba:
        def fit(self, X, y):
            return self

        def predict(self, X):
            return np.zeros(len(X))

    with pytest.raises(TypeError, match="needs a model with predict_proba"):
        ModelUtility(NoProba(), X_train, y_train, X_test, y_test, "neg_log_loss")
    # a plain fit/predict object works (deep-copied per coalition)
    game = ModelUtility(NoProba(), X_train, y_train, X_test, y_test, "accuracy")
    assert game(np.ones(len(y_train), dtype=bool)) == np.mean(y_test == 0)


def test_masks_are_validated(iris):
    X_train, y_train, X_test, y_test = iris
    game = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, fast=False)
    with pytest.raises(ValueError, match="masks must have shape"):
        game.evaluate(np.ones((2, 5), dtype=bool))


@pytest.mark.parametrize("build", [
    lambda X, y, Xt, yt: ModelUtility(LogisticRegression(), X, y, Xt, yt, fast=True),
    lambda X, y, Xt, yt: LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs"),
    lambda X, y, Xt, yt: RidgeUtility(X, y.astype(float), Xt, yt.astype(float)),
], ids=["routed ModelUtility", "LogisticRegressionUtility", "RidgeUtility"])
def test_games_pickle_with_the_standard_library(build):
    """Saving a game by hand (plain pickle, not joblib's cloudpickle) keeps every utility."""
    import pickle

    X, y = load_iris(return_X_y=True)
    game = build(X[::2], y[::2], X[1::2], y[1::2])
    masks = np.random.default_rng(0).random((6, 75)) < 0.6
    expected = game.evaluate(masks)
    assert pickle.loads(pickle.dumps(game)).evaluate(masks).tobytes() == expected.tobytes()
