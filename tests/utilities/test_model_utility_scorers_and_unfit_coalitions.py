"""ModelUtility on coalitions a run meets: every scorer, coalitions no model can be fitted on, warnings.

Coalitions that miss a class, classes only the test set holds, models that need
more points than a coalition has, fits that raise, and the warnings of hundreds
of fits: none may kill a run, and real errors must still surface. The inputs
themselves (raw DataFrames, sparse matrices, missing values) are tested in
``test_model_utility_input_data.py``.
"""

from __future__ import annotations

import pickle
import re
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import get_scorer, get_scorer_names, log_loss, top_k_accuracy_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from _model_utility_data import iris_split, two_class_prefixes
from shapley_research import ModelUtility, permutation_shapley


@pytest.fixture(scope="module")
def multiclass():
    return iris_split()


@pytest.fixture(scope="module")
def binary():
    X, y = load_iris(return_X_y=True)
    X, y = X[y > 0], y[y > 0] - 1  # versicolor against virginica: overlapping, so scores are not all 1
    order = np.random.default_rng(1).permutation(len(y))
    train, test = order[:30], order[30:90]
    return X[train], y[train], X[test], y[test]


def masks_missing_a_class(y_train):
    """The full set, then coalitions without the largest, without the smallest, and with one class only."""
    return np.array([np.ones(len(y_train), bool), y_train != y_train.max(), y_train != y_train.min(),
                     y_train == y_train[0]])


# ---------------------------------------------------------------------------------------------
# Every classification scorer of scikit-learn
# ---------------------------------------------------------------------------------------------

def scorer_kind(name):
    """The rule for which scorers are classification scorers: where their score function lives.

    Regression metrics (``sklearn.metrics._regression``) need real-valued
    predictions and clustering metrics (``sklearn.metrics.cluster``) compare
    partitions; every other scorer is scored on a classifier here.
    """
    module = get_scorer(name)._score_func.__module__
    if module.startswith("sklearn.metrics._regression"):
        return "regression"
    if module.startswith("sklearn.metrics.cluster"):
        return "clustering"
    return "classification"


SKIPPED = {
    "regression": {"d2_absolute_error_score", "explained_variance", "neg_max_error", "neg_mean_absolute_error",
                   "neg_mean_absolute_percentage_error", "neg_mean_gamma_deviance", "neg_mean_poisson_deviance",
                   "neg_mean_squared_error", "neg_mean_squared_log_error", "neg_median_absolute_error",
                   "neg_root_mean_squared_error", "neg_root_mean_squared_log_error", "r2"},
    "clustering": {"adjusted_mutual_info_score", "adjusted_rand_score", "completeness_score",
                   "fowlkes_mallows_score", "homogeneity_score", "mutual_info_score",
                   "normalized_mutual_info_score", "rand_score", "v_measure_score"},
}
CLASSIFICATION_SCORERS = [name for name in get_scorer_names() if scorer_kind(name) == "classification"]


def test_only_regression_and_clustering_scorers_are_skipped():
    """A scorer scikit-learn adds is either tested below or must be added here knowingly."""
    names = set(get_scorer_names())
    for kind, expected in SKIPPED.items():
        assert {name for name in names if scorer_kind(name) == kind} == expected & names, kind
    assert {"accuracy", "neg_log_loss", "roc_auc_ovr", "top_k_accuracy"} <= set(CLASSIFICATION_SCORERS)


@pytest.mark.slow  # over a second
@pytest.mark.parametrize("data", ["binary", "multiclass"])
@pytest.mark.parametrize("name", CLASSIFICATION_SCORERS)
def test_every_classification_scorer_survives_coalitions_missing_a_class(request, data, name):
    """Finite utilities, the direct score on the full set; a scorer that does not apply fails as sklearn does."""
    X_train, y_train, X_test, y_test = request.getfixturevalue(data)
    scorer, model = get_scorer(name), LogisticRegression()
    masks = masks_missing_a_class(y_train)
    game = ModelUtility(model, X_train, y_train, X_test, y_test, scorer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UndefinedMetricWarning of one-class predictions
        try:
            direct = scorer(clone(model).fit(X_train, y_train), X_test, y_test)
        except ValueError as error:  # a binary-only or multilabel scorer on these labels: every coalition fails
            with pytest.raises(ValueError, match=re.escape(str(error).splitlines()[0][:40])):
                game.evaluate(masks)
            return
        values = game.evaluate(masks)
    assert np.isfinite(values).all()
    assert values[0] == pytest.approx(direct, rel=1e-12, abs=1e-12)


def test_neg_log_loss_scorer_follows_the_string_metric_convention(multiclass):
    """A class the coalition never saw has probability 0, clipped at machine epsilon, for both."""
    X_train, y_train, X_test, y_test = multiclass
    masks = masks_missing_a_class(y_train)
    scorer = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, get_scorer("neg_log_loss"))
    string = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, "neg_log_loss", fast=False)
    np.testing.assert_allclose(scorer.evaluate(masks), string.evaluate(masks), rtol=1e-10)


def test_classes_a_coalition_missed_rank_last(multiclass):
    """With two of three classes fitted, the top-2 classes are those two: top-2 accuracy is their test share."""
    X_train, y_train, X_test, y_test = multiclass
    seen = y_train != 2
    for response in ("decision_function", "predict_proba"):
        def top2(model, X, y, response=response):
            assert list(model.classes_) == [0, 1, 2]
            scores = getattr(model, response)(X)
            assert scores.shape == (len(X), 3) and np.isfinite(scores).all()
            np.testing.assert_array_equal(model.classes_[np.argmax(scores, axis=1)], model.predict(X))
            return top_k_accuracy_score(y, scores, k=2, labels=model.classes_)

        game = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, top2)
        assert game(seen) == pytest.approx(np.mean(y_test != 2))


def test_a_coalition_that_holds_every_class_gets_the_fitted_model_itself(multiclass):
    X_train, y_train, X_test, y_test = multiclass
    types = []
    game = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test,
                        lambda model, X, y: types.append(type(model)) or 0.0)
    game.evaluate(masks_missing_a_class(y_train)[:2])
    assert types[0] is LogisticRegression and types[1] is not LogisticRegression
    assert game.n_fits == 2


def test_a_scikit_learn_scorer_name_is_that_scorer():
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import get_scorer

    from shapley_research import LogisticRegressionUtility, ModelUtility

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    masks = np.random.default_rng(0).random((12, 30)) < 0.5
    for name in ("roc_auc", "f1_macro", "balanced_accuracy"):
        by_name = ModelUtility(LogisticRegression(), X[:30], y[:30], X[100:200], y[100:200], metric=name)
        scorer = ModelUtility(LogisticRegression(), X[:30], y[:30], X[100:200], y[100:200], metric=get_scorer(name))
        np.testing.assert_array_equal(by_name.evaluate(masks), scorer.evaluate(masks))
    # the batched learners compute their own metrics: the name is refused with the way out
    with pytest.raises(ValueError, match="scorer 'roc_auc' needs ModelUtility"):
        LogisticRegressionUtility(X[:30], y[:30], X[100:200], y[100:200], metric="roc_auc")
    with pytest.raises(ValueError, match="get_scorer_names"):
        ModelUtility(LogisticRegression(), X[:30], y[:30], X[100:200], y[100:200], metric="roc_auk")


def test_a_scorer_name_carries_its_task_and_must_suit_the_problem():
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LinearRegression, LogisticRegression

    from shapley_research import ModelUtility

    X, y = load_iris(return_X_y=True)
    data = (X[::3], y[::3], X[1::3], y[1::3])
    assert ModelUtility(LogisticRegression(), *data, metric="roc_auc_ovr").task == "classification"
    assert ModelUtility(LinearRegression(), *data, metric="neg_root_mean_squared_error").task == "regression"
    with pytest.raises(ValueError, match="'explained_variance' is a regression metric, but LogisticRegression"):
        ModelUtility(LogisticRegression(), *data, metric="explained_variance")
    with pytest.raises(ValueError, match="'roc_auc' is a classification metric, but LinearRegression"):
        ModelUtility(LinearRegression(), *data, metric="roc_auc")
    for binary in ("roc_auc", "f1"):  # three classes: refused when built, not at every coalition
        with pytest.raises(ValueError, match=f"metric='{binary}' cannot score this problem"):
            ModelUtility(LogisticRegression(), *data, metric=binary)


# ---------------------------------------------------------------------------------------------
# Coalitions a model cannot be fitted on
# ---------------------------------------------------------------------------------------------

class NeedsPoints(ClassifierMixin, BaseEstimator):
    """A classifier whose fit raises below ``minimum`` points (a model's own limit, unknown to the utility)."""

    def __init__(self, minimum=6):
        self.minimum = minimum

    def fit(self, X, y):
        if len(X) < self.minimum:
            raise ValueError(f"NeedsPoints needs {self.minimum} points, got {len(X)}")
        self.classes_ = np.unique(y)
        self.majority_ = self.classes_[np.argmax([np.sum(y == c) for c in self.classes_])]
        return self

    def predict(self, X):
        return np.full(len(X), self.majority_)


def fit_warnings(record):
    return [w for w in record if "min_samples" in str(w.message)]


@pytest.mark.slow  # starts a pool of worker processes (loky)
@pytest.mark.parametrize("model, limit", [
    (KNeighborsClassifier(n_neighbors=5), 5),
    (make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=4)), 4),  # the limit of the final step
    (NeedsPoints(minimum=6), 6),  # caught at the fit
])
@pytest.mark.parametrize("n_jobs", [None, 2])
def test_small_coalitions_get_the_degenerate_utility_and_one_warning(multiclass, model, limit, n_jobs):
    X_train, y_train, X_test, y_test = multiclass
    masks = two_class_prefixes(y_train, range(2, 12))
    game = ModelUtility(model, X_train, y_train, X_test, y_test, n_jobs=n_jobs)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        values = game.evaluate(masks)
    (warning,) = fit_warnings(record)  # one per game
    n_small = limit - 2
    assert f"{n_small} of 10 coalition(s)" in str(warning.message)
    assert f"min_samples={limit}" in str(warning.message)
    constant = ModelUtility(model, X_train, y_train, X_test, y_test, min_samples=limit, n_jobs=n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # min_samples as the warning says: no warning
        expected = constant.evaluate(masks)
    np.testing.assert_array_equal(values, expected)
    assert game.n_fits == 10 - n_small + isinstance(model, NeedsPoints)  # + one fit of the full training set


def test_the_unfit_warning_points_at_the_callers_line_through_an_estimator(multiclass):
    X_train, y_train, X_test, y_test = multiclass
    game = ModelUtility(KNeighborsClassifier(n_neighbors=5), X_train, y_train, X_test, y_test, fast=False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        permutation_shapley(game, 1 + len(y_train), seed=0)
    (warning,) = fit_warnings(record)
    assert warning.filename == __file__  # this line, not the library's internals


def test_unfit_coalitions_follow_default_and_raise(multiclass):
    X_train, y_train, X_test, y_test = multiclass
    masks = two_class_prefixes(y_train, [3, 8])
    game = ModelUtility(NeedsPoints(), X_train, y_train, X_test, y_test, degenerate="default", default_utility=-2.0)
    with pytest.warns(UserWarning, match="min_samples=4"):
        values = game.evaluate(masks)
    assert values[0] == -2.0 and values[1] != -2.0
    strict = ModelUtility(NeedsPoints(), X_train, y_train, X_test, y_test, degenerate="raise")
    with pytest.raises(ValueError, match="needs 6 points") as info:
        strict.evaluate(masks)
    assert any("degenerate='raise'" in note for note in getattr(info.value, "__notes__", []))


def test_a_model_that_fails_on_the_full_training_set_raises(multiclass):
    """Failing everywhere is the user's bug, never silently a degenerate utility."""
    X_train, y_train, X_test, y_test = multiclass
    game = ModelUtility(NeedsPoints(minimum=1000), X_train, y_train, X_test, y_test)
    with pytest.raises(ValueError, match="needs 1000 points") as info:
        game.evaluate(two_class_prefixes(y_train, [4, 8]))
    assert any("full training set" in note for note in getattr(info.value, "__notes__", []))
    with pytest.raises(ValueError, match="n_neighbors=50"):  # known before any fit
        ModelUtility(KNeighborsClassifier(n_neighbors=50), X_train, y_train, X_test, y_test)


def test_a_run_with_a_model_that_needs_points_finishes(multiclass):
    X_train, y_train, X_test, y_test = multiclass
    game = ModelUtility(KNeighborsClassifier(n_neighbors=5), X_train, y_train, X_test, y_test, cache=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = permutation_shapley(game, budget=4 * len(y_train), seed=0)
    assert np.isfinite(result.values).all()


# ---------------------------------------------------------------------------------------------
# Warnings of coalition fits: once per kind, with a count
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow  # starts a pool of worker processes (loky)
@pytest.mark.parametrize("n_jobs", [None, 2])
def test_convergence_warnings_are_reported_once_with_their_count(multiclass, n_jobs):
    X_train, y_train, X_test, y_test = multiclass
    masks = two_class_prefixes(y_train, range(6, 26, 2))
    game = ModelUtility(LogisticRegression(max_iter=1), X_train, y_train, X_test, y_test, n_jobs=n_jobs, fast=False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        game.evaluate(masks)
    convergence = [w for w in record if issubclass(w.category, ConvergenceWarning)]
    assert len(convergence) == 1
    assert f"raised {game.n_fits} time(s)" in str(convergence[0].message) and game.n_fits == len(masks)
    assert "max_iter" in str(convergence[0].message)  # the first message itself, in full
    game = ModelUtility(LogisticRegression(max_iter=1), X_train, y_train, X_test, y_test, n_jobs=n_jobs, fast=False)
    with warnings.catch_warnings(record=True) as record:  # the user's filters apply to the summary
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        game.evaluate(masks)
    assert not [w for w in record if issubclass(w.category, ConvergenceWarning)]


def test_collecting_warnings_in_threads_counts_each_thread_and_restores_the_filters(multiclass):
    X_train, y_train, X_test, y_test = multiclass
    masks = two_class_prefixes(y_train, range(6, 14))
    games = [ModelUtility(LogisticRegression(max_iter=1), X_train, y_train, X_test, y_test, fast=False)
             for _ in range(5)]  # four games of a call each, and one that all eight threads share
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        before = list(warnings.filters), warnings.showwarning, warnings._showwarnmsg
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: games[min(i, 4)].evaluate(masks), range(12)))
        assert (list(warnings.filters), warnings.showwarning, warnings._showwarnmsg) == before
    counts = [int(re.search(r"raised (\d+) time", str(w.message)).group(1)) for w in record
              if issubclass(w.category, ConvergenceWarning)]
    assert counts == [len(masks)] * 5  # each thread counts its own call; each game shows it once


# ---------------------------------------------------------------------------------------------
# Classes only the test set holds, and warnings once per game
# ---------------------------------------------------------------------------------------------

def without_class_2(multiclass):
    """The split with class 2 left out of the training set only: y_test holds a class y_train lacks."""
    X_train, y_train, X_test, y_test = multiclass
    return X_train[y_train != 2], y_train[y_train != 2], X_test, y_test


class FitsNothing(LogisticRegression):
    def fit(self, X, y):
        raise AssertionError("no fit may run before the check")


@pytest.mark.parametrize("name", ["neg_log_loss", "roc_auc_ovr", "average_precision", "top_k_accuracy"])
def test_a_scorer_of_scores_is_refused_when_y_test_holds_a_class_y_train_lacks(multiclass, name):
    X_train, y_train, X_test, y_test = without_class_2(multiclass)
    rows = int(np.sum(y_test == 2))
    with pytest.raises(ValueError, match=rf"^metric=make_scorer.*y_test holds class\(es\) 2 \({rows} row\(s\)\) "
                                         r"that y_train lacks.*string metric.*drop the rows"):
        ModelUtility(FitsNothing(), X_train, y_train, X_test, y_test, get_scorer(name))


def test_string_metrics_and_scorers_of_predict_still_score_a_class_only_y_test_holds(multiclass):
    X_train, y_train, X_test, y_test = without_class_2(multiclass)
    masks = np.vstack([np.ones(len(y_train), bool), two_class_prefixes(y_train, [6, 12])])
    accuracy = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, fast=False).evaluate(masks)
    scorer = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, get_scorer("accuracy"))
    np.testing.assert_array_equal(scorer.evaluate(masks), accuracy)
    log_loss = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, "neg_log_loss", fast=False)
    assert np.isfinite(log_loss.evaluate(masks)).all()


def test_a_callable_that_fails_on_a_class_only_y_test_holds_is_told_why(multiclass):
    X_train, y_train, X_test, y_test = without_class_2(multiclass)
    game = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test,
                        lambda model, X, y: -log_loss(y, model.predict_proba(X)))
    with pytest.raises(ValueError, match="different number of classes") as info:
        game.evaluate(two_class_prefixes(y_train, [8]))
    assert any("y_test holds class(es) 2" in note and "string metric" in note for note in info.value.__notes__)


class PickyAboutSeven(NeedsPoints):
    """Two causes of failure: fewer than 6 points, and exactly 7."""

    def fit(self, X, y):
        if len(X) == 7:
            raise RuntimeError("PickyAboutSeven refuses 7 points")
        return super().fit(X, y)


@pytest.mark.parametrize("model", [KNeighborsClassifier(n_neighbors=5), PickyAboutSeven()])
def test_coalitions_that_cannot_be_fitted_warn_once_per_game_and_cause(multiclass, model):
    X_train, y_train, X_test, y_test = multiclass
    game = ModelUtility(model, X_train, y_train, X_test, y_test)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for sizes in ([2, 3, 8], [4, 8], [3, 4, 8]):
            game.evaluate(two_class_prefixes(y_train, sizes))
        shown = fit_warnings(record)
        game = pickle.loads(pickle.dumps(game))  # what it has shown travels with it
        game.evaluate(two_class_prefixes(y_train, [7, 8]))
    assert len(shown) == 1 and "2 of 3 coalition(s) of this evaluate call" in str(shown[0].message)
    assert "do not repeat it" in str(shown[0].message)
    assert game.n_unfit == 5 + isinstance(model, PickyAboutSeven)
    new_cause = [str(w.message) for w in fit_warnings(record)[1:]]  # 7 points: KNN fits them, Picky... fails
    assert [("PickyAboutSeven refuses" in text) for text in new_cause] == [True] * isinstance(model, PickyAboutSeven)


def test_convergence_warnings_are_shown_once_per_game(multiclass):
    X_train, y_train, X_test, y_test = multiclass
    masks = two_class_prefixes(y_train, [8, 12])
    game = ModelUtility(LogisticRegression(max_iter=1), X_train, y_train, X_test, y_test, fast=False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            game.evaluate(masks)
    (shown,) = [w for w in record if issubclass(w.category, ConvergenceWarning)]
    assert "raised 2 time(s)" in str(shown.message) and "do not repeat it" in str(shown.message)
