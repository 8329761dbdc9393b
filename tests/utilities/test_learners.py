"""Batched learners against scikit-learn fitted on the same coalitions, and their one-pass paths.

Tolerances: ridge coefficients/utilities 1e-8 relative (normal equations vs
sklearn's Cholesky of the centred problem); logistic probabilities and
coefficients 1e-6 relative against scikit-learn's newton-cg at tol=1e-12
(its lbfgs stops at about 1e-6 even with a tiny tol, so it is not the reference).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris
from sklearn.linear_model import LogisticRegression, Ridge

from shapley_research import (LogisticRegressionUtility, ModelUtility, RidgeUtility, as_game,
                              permutation_shapley)
from shapley_research.games import prefix_masks
# Internal: Newton's iterates on the binary and the softmax chunk, which public calls reach only through whole fits
from shapley_research.utilities.learners._binary import _BinaryChunk
from shapley_research.utilities.learners._newton import _newton
from shapley_research.utilities.learners._softmax import _SoftmaxChunk


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:90], order[90:]
    return X[train], y[train], X[test], y[test]


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    order = np.random.default_rng(1).permutation(len(y))
    train, test = order[:120], order[120:220]
    return X[train], y[train], X[test], y[test]


@pytest.fixture(scope="module")
def four_classes():
    """Synthetic 4-class data: coalitions often miss a class."""
    rng = np.random.default_rng(2)
    centres = rng.normal(scale=2.0, size=(4, 3))
    y = rng.integers(0, 4, 70)
    X = centres[y] + rng.normal(size=(70, 3))
    return X[:40], y[:40], X[40:], y[40:]


def random_masks(rng, m, n, min_size=1):
    masks = np.zeros((m, n), dtype=bool)
    for row in masks:
        row[rng.choice(n, rng.integers(min_size, n + 1), replace=False)] = True
    return masks


def reference_logistic(X, y, mask, C=1.0, fit_intercept=True):
    return LogisticRegression(C=C, solver="newton-cg", tol=1e-12, max_iter=1000,
                              fit_intercept=fit_intercept).fit(X[mask], y[mask])


def full_proba(model, X, labels):
    proba = np.zeros((len(X), len(labels)))
    proba[:, np.searchsorted(labels, model.classes_)] = model.predict_proba(X)
    return proba


# ---------------------------------------------------------------------------------------------
# Ridge
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fit_intercept", [True, False])
def test_ridge_agrees_with_sklearn(diabetes, fit_intercept):
    X_train, y_train, X_test, y_test = diabetes
    game = RidgeUtility(X_train, y_train, X_test, y_test, "r2", alpha=0.05, fit_intercept=fit_intercept)
    masks = random_masks(np.random.default_rng(3), 25, len(y_train))
    coef, intercept = game.fit_subsets(masks)
    predictions = game.predict(masks)
    for r, mask in enumerate(masks):
        model = Ridge(alpha=0.05, fit_intercept=fit_intercept, solver="cholesky").fit(X_train[mask], y_train[mask])
        np.testing.assert_allclose(coef[r], model.coef_, rtol=1e-8, atol=1e-8 * (1 + np.abs(model.coef_).max()))
        np.testing.assert_allclose(intercept[r], model.intercept_, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(predictions[r], model.predict(X_test), rtol=1e-8)
    reference = ModelUtility(Ridge(alpha=0.05, fit_intercept=fit_intercept, solver="cholesky"), X_train, y_train,
                             X_test, y_test, "r2", fast=False)
    np.testing.assert_allclose(game.evaluate(masks), reference.evaluate(masks), rtol=1e-8)


def test_ridge_prefix_path_equals_batch_evaluation(diabetes):
    X_train, y_train, X_test, y_test = diabetes
    game = RidgeUtility(X_train, y_train, X_test, y_test, "neg_mse", alpha=0.01, refresh_every=50)
    rng = np.random.default_rng(4)
    permutations = np.array([rng.permutation(len(y_train)) for _ in range(4)])
    one_pass = game.evaluate_prefixes(permutations)
    batch = game.evaluate(prefix_masks(permutations)).reshape(permutations.shape)
    np.testing.assert_allclose(one_pass, batch, rtol=1e-8)


def test_permutation_shapley_uses_the_exact_ridge_prefix_path(diabetes):
    X_train, y_train, X_test, y_test = diabetes
    X_train, y_train = X_train[:30], y_train[:30]
    game = RidgeUtility(X_train, y_train, X_test, y_test, "r2", alpha=0.1)
    without_prefix_path = as_game(game.evaluate, game.n_players, vectorized=True)
    a = permutation_shapley(game, 30 * 20 + 1, seed=5)
    b = permutation_shapley(without_prefix_path, 30 * 20 + 1, seed=5)
    np.testing.assert_allclose(a.values, b.values, rtol=1e-8, atol=1e-12)


def test_ridge_degenerate_coalitions(diabetes):
    X_train, y_train, X_test, y_test = diabetes
    game = RidgeUtility(X_train, y_train, X_test, y_test, "neg_mse", min_samples=3)
    masks = np.zeros((3, len(y_train)), dtype=bool)
    masks[1, 0] = True
    masks[2, :2] = True
    expected = [-np.mean(y_test**2), -np.mean((y_test - y_train[0]) ** 2),
                -np.mean((y_test - y_train[:2].mean()) ** 2)]
    np.testing.assert_allclose(game.evaluate(masks), expected)
    assert game.n_fits == 0
    coef, _ = game.fit_subsets(masks)
    assert np.isnan(coef).all()


# ---------------------------------------------------------------------------------------------
# Logistic regression
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("solver", ["newton", "lbfgs"])
def test_binary_logistic_agrees_with_sklearn(iris, solver):
    X_train, y_train, X_test, y_test = iris
    y_train, y_test = (y_train == 2).astype(int), (y_test == 2).astype(int)
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", C=2.0, tol=1e-10,
                                     solver=solver, max_iter=2000)
    masks = random_masks(np.random.default_rng(6), 20, len(y_train), min_size=4)
    masks = masks[[len(np.unique(y_train[m])) == 2 for m in masks]]
    coef, intercept = game.fit_subsets(masks)
    proba = game.predict_proba(masks)
    rtol = 1e-6 if solver == "newton" else 1e-4
    for r, mask in enumerate(masks):
        model = reference_logistic(X_train, y_train, mask, C=2.0)
        np.testing.assert_allclose(coef[r], model.coef_[0], rtol=rtol, atol=rtol * np.abs(model.coef_).max())
        np.testing.assert_allclose(intercept[r], model.intercept_[0], rtol=rtol, atol=rtol)
        np.testing.assert_allclose(proba[r], model.predict_proba(X_test), rtol=rtol, atol=1e-10)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_binary_newton_takes_the_steps_of_the_two_class_softmax(iris, fit_intercept):
    """Newton on the binary objective and on the symmetric softmax at C/2: same iterations, same fits."""
    X_train, y_train, X_test, y_test = iris
    y_train, y_test = (y_train == 2).astype(int), (y_test == 2).astype(int)
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, C=3.0, fit_intercept=fit_intercept)
    masks = random_masks(np.random.default_rng(16), 40, len(y_train), min_size=6)
    masks = masks[[len(np.unique(y_train[m])) == 2 for m in masks]]
    counts = game.targets.class_counts(masks)
    start = np.zeros((len(masks), 2, game.design.q)) + game._warm_start()
    softmax = _SoftmaxChunk.from_masks(game._softmax_data, masks, counts, game.C)
    theta, iterations, converged = _newton(softmax, start.copy(), game.tol, game.max_iter)  # it works in place
    binary = _BinaryChunk.from_masks(game._softmax_data, masks, game.C)
    v, binary_iterations, binary_converged = _newton(binary, _BinaryChunk.binary_parameters(start), game.tol,
                                                     game.max_iter)
    assert converged.all() and binary_converged.all()
    np.testing.assert_array_equal(binary_iterations, iterations)
    scale = np.abs(theta).max()
    np.testing.assert_allclose(_BinaryChunk.softmax_parameters(v), theta, rtol=0, atol=1e-12 * scale)
    # and the learner's fits are the binary path's
    np.testing.assert_allclose(game._fit_thetas(masks, counts), _BinaryChunk.softmax_parameters(v), rtol=0,
                               atol=1e-15 * scale)


@pytest.mark.slow  # over a second
@pytest.mark.parametrize("n_classes,solver", [(2, "newton"), (3, "lbfgs")])
def test_auto_counts_the_unknowns_of_the_newton_system(n_classes, solver):
    """99 features: 100 unknowns for two classes (binary objective), 300 for three; the threshold is 160."""
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(60, 99)), np.arange(60) % n_classes
    game = LogisticRegressionUtility(X[:40], y[:40], X[40:], y[40:])
    assert game.n_params == (100 if n_classes == 2 else 300)
    game.evaluate(np.ones((1, 40), dtype=bool))
    assert game.last_fit_info_["solver"] == solver


@pytest.mark.parametrize("solver", ["newton", "lbfgs"])
def test_multinomial_logistic_agrees_with_sklearn(iris, solver):
    X_train, y_train, X_test, y_test = iris
    labels = np.unique(y_train)
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", tol=1e-10, solver=solver,
                                     max_iter=3000)
    masks = random_masks(np.random.default_rng(7), 24, len(y_train), min_size=3)
    masks = masks[[len(np.unique(y_train[m])) >= 2 for m in masks]]
    two_class = np.zeros((2, len(y_train)), dtype=bool)  # coalitions with exactly two of the three classes
    two_class[0, np.flatnonzero(y_train != 1)[:20]] = True
    two_class[1, np.flatnonzero(y_train != 0)[::2]] = True
    masks = np.concatenate([masks, two_class])
    coef, intercept = game.fit_subsets(masks)
    proba = game.predict_proba(masks)
    rtol = 1e-6 if solver == "newton" else 1e-4
    for r, mask in enumerate(masks):
        model = reference_logistic(X_train, y_train, mask)
        np.testing.assert_allclose(proba[r], full_proba(model, X_test, labels), rtol=rtol, atol=1e-9)
        present = np.searchsorted(labels, model.classes_)
        if len(present) == 2:  # sklearn's binary model: coef_ = coef[c1] - coef[c0]
            ours = coef[r, present[1]] - coef[r, present[0]]
            ours_b = intercept[r, present[1]] - intercept[r, present[0]]
            np.testing.assert_allclose(ours, model.coef_[0], rtol=rtol, atol=rtol * np.abs(model.coef_).max())
            np.testing.assert_allclose(ours_b, model.intercept_[0], rtol=rtol, atol=rtol)
        else:
            np.testing.assert_allclose(coef[r], model.coef_, rtol=rtol, atol=rtol * np.abs(model.coef_).max())
            np.testing.assert_allclose(intercept[r], model.intercept_, rtol=rtol, atol=rtol)
    assert game.last_fit_info_["n_not_converged"] == 0


def test_missing_classes_get_zero_probability(four_classes):
    X_train, y_train, X_test, y_test = four_classes
    labels = np.arange(4)
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", C=0.7, tol=1e-10)
    masks = np.stack([np.isin(y_train, [0, 1, 3]), np.isin(y_train, [1, 2]), np.isin(y_train, [0, 2, 3])])
    masks[:, ::3] = False
    proba = game.predict_proba(masks)
    reference = ModelUtility(LogisticRegression(C=0.7, solver="newton-cg", tol=1e-12, max_iter=1000),
                             X_train, y_train, X_test, y_test, "neg_log_loss", fast=False)
    for r, mask in enumerate(masks):
        expected = full_proba(reference_logistic(X_train, y_train, mask, C=0.7), X_test, labels)
        np.testing.assert_allclose(proba[r], expected, rtol=1e-6, atol=1e-10)
        assert (proba[r][:, ~np.isin(labels, y_train[mask])] == 0).all()
    np.testing.assert_allclose(game.evaluate(masks), reference.evaluate(masks), rtol=1e-6)


@pytest.mark.parametrize("metric", ["accuracy", "neg_log_loss"])
def test_logistic_utilities_equal_clone_and_fit(iris, metric):
    X_train, y_train, X_test, y_test = iris
    model = LogisticRegression(C=0.3, solver="newton-cg", tol=1e-12, max_iter=1000)
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, metric, C=0.3, tol=1e-10)
    reference = ModelUtility(model, X_train, y_train, X_test, y_test, metric, fast=False)
    masks = random_masks(np.random.default_rng(8), 15, len(y_train))
    masks[0] = False  # empty
    masks[1] = y_train == 0  # one class
    masks[2] = False
    masks[2, 5] = True  # one point
    np.testing.assert_allclose(game.evaluate(masks), reference.evaluate(masks), rtol=1e-6, atol=1e-12)
    assert game.n_fits == reference.n_fits


def test_logistic_without_intercept(iris):
    X_train, y_train, X_test, y_test = iris
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, fit_intercept=False, tol=1e-10)
    masks = random_masks(np.random.default_rng(9), 6, len(y_train), min_size=20)
    coef, intercept = game.fit_subsets(masks)
    assert (intercept == 0).all()
    for r, mask in enumerate(masks):
        model = reference_logistic(X_train, y_train, mask, fit_intercept=False)
        np.testing.assert_allclose(coef[r], model.coef_, rtol=1e-6, atol=1e-6 * np.abs(model.coef_).max())


def test_logistic_prefix_path_approximates_refits(iris):
    """One online pass: exact at refit sizes, close elsewhere (what the docstring promises)."""
    X_train, y_train, X_test, y_test = iris
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", tol=1e-9)
    rng = np.random.default_rng(10)
    permutations = np.array([rng.permutation(len(y_train)) for _ in range(12)])
    online = game.evaluate_prefixes(permutations)
    exact = game.evaluate(prefix_masks(permutations)).reshape(permutations.shape)
    gap = np.abs(online - exact)
    refit_sizes = game._refit_sizes(len(y_train))
    at_grid = gap[:, refit_sizes[refit_sizes <= len(y_train)] - 1]
    assert at_grid.max() < 1e-6  # refitted prefixes are exact to the solver tolerance
    assert np.median(gap) < 1e-3 and gap.mean() < 5e-3  # measured: median ~1e-4, mean ~3e-4
    assert np.abs(online[:, -1] - exact[:, -1]).max() < 1e-2
    # every refit off: pure chord steps from the class-change refits still stay close on average
    drift = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", prefix_refit_ratio=None)
    assert np.mean(np.abs(drift.evaluate_prefixes(permutations) - exact)) < 0.05


def test_logistic_degenerate_prefixes_and_conventions(iris):
    X_train, y_train, X_test, y_test = iris
    order = np.argsort(y_train, kind="stable")  # the first third of the prefixes hold one class
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "accuracy")
    online = game.evaluate_prefixes(order[None, :])
    single = (y_train[order] == y_train[order][0]).sum()
    np.testing.assert_allclose(online[0, :single], np.mean(y_test == y_train[order][0]))
    default = LogisticRegressionUtility(X_train, y_train, X_test, y_test, degenerate="default", default_utility=0.25)
    assert default(np.zeros(len(y_train), dtype=bool)) == 0.25


def test_convergence_warning_when_the_cap_is_hit(iris):
    from sklearn.exceptions import ConvergenceWarning

    X_train, y_train, X_test, y_test = iris
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, solver="lbfgs", max_iter=2, warm_start=False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            game.evaluate(np.ones((1, len(y_train)), dtype=bool))
    (shown,) = [w for w in record if issubclass(w.category, ConvergenceWarning)]  # once per game
    assert "1 of 1 coalitions did not reach" in str(shown.message) and "do not repeat it" in str(shown.message)
    assert game.last_fit_info_["n_not_converged"] == 1  # each batch's count, after the warning stopped


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------

def test_learner_arguments_are_validated(iris, diabetes):
    X_train, y_train, X_test, y_test = iris
    with pytest.raises(ValueError, match="C must be > 0"):
        LogisticRegressionUtility(X_train, y_train, X_test, y_test, C=0.0)
    with pytest.raises(ValueError, match="needs a classification metric"):
        LogisticRegressionUtility(X_train, y_train, X_test, y_test, "r2")
    with pytest.raises(TypeError, match="takes a metric name"):
        LogisticRegressionUtility(X_train, y_train, X_test, y_test, lambda model, X, y: 0.0)
    with pytest.raises(ValueError, match="solver must be one of"):
        LogisticRegressionUtility(X_train, y_train, X_test, y_test, solver="sag")
    with pytest.raises(ValueError, match="X_test contains NaN"):
        LogisticRegressionUtility(X_train, y_train, np.full_like(X_test, np.nan), y_test)
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test)
    with pytest.raises(ValueError, match="permutation of range"):
        game.evaluate_prefixes(np.zeros((1, len(y_train)), dtype=int))
    with pytest.raises(ValueError, match="X has 3 features"):
        game.predict_proba(np.ones((1, len(y_train)), dtype=bool), X=np.zeros((2, 3)))

    X_train, y_train, X_test, y_test = diabetes
    with pytest.raises(ValueError, match="alpha must be > 0"):
        RidgeUtility(X_train, y_train, X_test, y_test, alpha=0.0)
    with pytest.raises(ValueError, match="needs a regression metric"):
        RidgeUtility(X_train, y_train, X_test, y_test, "accuracy")
    with pytest.raises(ValueError, match="y_train has 10 targets"):
        RidgeUtility(X_train, y_train[:10], X_test, y_test)
    with pytest.raises(ValueError, match=r"permutations must have shape"):
        RidgeUtility(X_train, y_train, X_test, y_test).evaluate_prefixes(np.arange(5)[None, :])
