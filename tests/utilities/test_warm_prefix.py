"""The exact warm-started prefix path of LogisticRegressionUtility (``prefix_path="exact"``).

Each prefix must be an exact fit: the same utilities as the batched learner
on the prefix masks and as scikit-learn (newton-cg, tol=1e-12) fitted on the
prefix, to the solver tolerance, on real data (iris; digits after PCA, 10
classes, fitted by L-BFGS), with the degenerate convention of the learner.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression

from shapley_research import LogisticRegressionUtility, ModelUtility, as_game, permutation_shapley
from shapley_research.games import prefix_masks

pytestmark = pytest.mark.slow  # exact prefix fits of logistic models: seconds a test


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    return X[order[:90]], y[order[:90]], X[order[90:]], y[order[90:]]


@pytest.fixture(scope="module")
def digits():
    """10 classes, PCA to 12 components: K q = 130 parameters, fitted by L-BFGS (solver='lbfgs')."""
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(1).permutation(len(y))
    train, test = order[:150], order[150:350]
    pca = PCA(12, random_state=0).fit(X[train] / 16.0)
    return pca.transform(X[train] / 16.0), y[train], pca.transform(X[test] / 16.0), y[test]


def permutations_of(n, m, seed):
    rng = np.random.default_rng(seed)
    return np.array([rng.permutation(n) for _ in range(m)])


def sklearn_utilities(X_train, y_train, X_test, y_test, masks, C=1.0):
    model = LogisticRegression(C=C, solver="newton-cg", tol=1e-12, max_iter=2000)
    return ModelUtility(model, X_train, y_train, X_test, y_test, "neg_log_loss", fast=False).evaluate(masks)


def test_exact_prefixes_equal_batched_refits_and_sklearn_on_iris(iris):
    X_train, y_train, X_test, y_test = iris
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", tol=1e-10,
                                     prefix_path="exact")
    assert game.exact_prefixes
    permutations = permutations_of(len(y_train), 6, 0)
    values = game.evaluate_prefixes(permutations)
    masks = prefix_masks(permutations)
    batched = game.evaluate(masks).reshape(permutations.shape)
    np.testing.assert_allclose(values, batched, rtol=1e-7, atol=1e-9)
    rows = np.random.default_rng(1).choice(masks.shape[0], 40, replace=False)
    np.testing.assert_allclose(values.reshape(-1)[rows], sklearn_utilities(*iris, masks[rows]), rtol=1e-6,
                               atol=1e-9)


def test_exact_prefixes_at_the_default_tolerance_match_the_batched_learner(iris):
    """At tol=1e-6 both are fits to the same test from different starts: equal to the batched learner's own spread."""
    X_train, y_train, X_test, y_test = iris
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", prefix_path="exact")
    permutations = permutations_of(len(y_train), 4, 2)
    gap = np.abs(game.evaluate_prefixes(permutations).reshape(-1) - game.evaluate(prefix_masks(permutations)))
    assert gap.max() < 1e-4  # measured about 3e-6 (the batched learner vs sklearn at tol=1e-4: about 1e-3)


def test_exact_prefixes_on_ten_classes_with_lbfgs(digits):
    X_train, y_train, X_test, y_test = digits
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", tol=1e-9,
                                     solver="lbfgs", prefix_path="exact")
    permutations = permutations_of(len(y_train), 2, 3)
    values = game.evaluate_prefixes(permutations)
    masks = prefix_masks(permutations)
    rows = np.random.default_rng(4).choice(masks.shape[0], 30, replace=False)
    np.testing.assert_allclose(values.reshape(-1)[rows], game.evaluate(masks[rows]), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(values.reshape(-1)[rows], sklearn_utilities(*digits, masks[rows]), rtol=1e-5,
                               atol=1e-7)


def test_degenerate_and_two_class_prefixes_follow_the_learner(iris):
    """Sorted by class: one-class prefixes (degenerate convention), then binary, then multinomial."""
    X_train, y_train, X_test, y_test = iris
    order = np.argsort(y_train, kind="stable")
    permutations = np.stack([order, order[::-1], permutations_of(len(y_train), 1, 5)[0]])
    for metric, options in [("neg_log_loss", {}), ("accuracy", {"min_samples": 5}),
                            ("neg_log_loss", {"degenerate": "default", "default_utility": -2.0})]:
        game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, metric, C=0.5, tol=1e-10,
                                         prefix_path="exact", **options)
        values = game.evaluate_prefixes(permutations)
        expected = game.evaluate(prefix_masks(permutations)).reshape(permutations.shape)
        np.testing.assert_allclose(values, expected, rtol=1e-7, atol=1e-9)
    single = (y_train[order] == y_train[order][0]).sum()
    np.testing.assert_allclose(values[0, :single], -2.0)


def test_permutation_shapley_through_the_exact_prefix_path(iris):
    X_train, y_train, X_test, y_test = iris
    X_train, y_train = X_train[:30], y_train[:30]
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", tol=1e-10,
                                     prefix_path="exact")
    refits = as_game(game.evaluate, game.n_players, vectorized=True)
    a = permutation_shapley(game, 30 * 10 + 1, seed=6)
    b = permutation_shapley(refits, 30 * 10 + 1, seed=6)
    np.testing.assert_allclose(a.values, b.values, rtol=1e-6, atol=1e-8)


def test_prefix_path_is_validated_and_online_stays_the_default(iris):
    game = LogisticRegressionUtility(*iris)
    assert game.prefix_path == "online" and not game.exact_prefixes
    with pytest.raises(ValueError, match="prefix_path must be one of"):
        LogisticRegressionUtility(*iris, prefix_path="warm")
