"""Fits chained along prefixes (``chain_prefixes``): each still a minimiser, fewer iterations, the same bits
whatever the chunks, and off where a utility must be a function of its coalition alone."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from shapley_research import LogisticRegressionUtility, ModelUtility
# Internal: which rows of a chunk chain (PrefixLinks.of); public calls show chaining only in whole fits' bits
from shapley_research.utilities.learners._lbfgs_rows import PrefixLinks


def digits_task():
    X, y = load_digits(return_X_y=True)
    X, y = X[:260].astype(float), y[:260]
    return X[:200], y[:200], X[200:], y[200:]


def prefixes(n: int, first: int, seed: int = 1) -> np.ndarray:
    """Masks of a random permutation's prefixes of sizes ``first .. n``, in order."""
    order = np.random.default_rng(seed).permutation(n)
    position = np.empty(n, dtype=int)
    position[order] = np.arange(n)
    return position[None, :] < np.arange(first, n + 1)[:, None]


def gradient_ratio(coef, intercept, X, y, mask, tol: float) -> float:
    """Largest entry of the gradient of ``sum_S log-loss + |W|^2 / 2`` (C = 1), over ``tol |S|``, by numpy."""
    Z = X[mask] @ coef.T + intercept
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    R = P - np.eye(coef.shape[0])[y[mask]]
    return max(np.abs(R.T @ X[mask] + coef).max(), np.abs(R.sum(axis=0)).max()) / (tol * mask.sum())


def test_chained_fits_are_minimisers_like_independent_ones_in_fewer_iterations():
    X, y, X_test, y_test = digits_task()
    masks = prefixes(200, 60)
    ratios, iterations = {}, {}
    for chain in (False, True):
        game = LogisticRegressionUtility(X, y, X_test, y_test, tol=1e-4, solver="lbfgs", chain_prefixes=chain)
        coef, intercept = game.fit_subsets(masks)
        ratios[chain] = max(gradient_ratio(coef[r], intercept[r], X, y, m, 1e-4) for r, m in enumerate(masks))
        iterations[chain] = game.last_fit_info_["n_iter_mean"]
        assert game.last_fit_info_["n_not_converged"] == 0
    # the learner's test is in its own coordinates; in the original ones both meet the same bound
    assert ratios[True] <= 1.5 * ratios[False]
    assert iterations[True] < 0.5 * iterations[False]


def test_a_chained_fit_does_not_depend_on_where_chunks_are_cut():
    X, y, X_test, y_test = digits_task()
    masks = prefixes(200, 40)
    values = [LogisticRegressionUtility(X, y, X_test, y_test, solver="lbfgs", batch_size=size).evaluate(masks)
              for size in (None, 7, 1)]
    np.testing.assert_array_equal(values[0], values[1])
    np.testing.assert_array_equal(values[0], values[2])


def test_without_chains_a_fit_is_a_function_of_its_coalition_alone():
    X, y, X_test, y_test = digits_task()
    masks = prefixes(200, 150)
    game = LogisticRegressionUtility(X, y, X_test, y_test, metric="neg_log_loss", solver="lbfgs", chain_prefixes=False)
    together = game.evaluate(masks)
    alone = np.array([game.evaluate(mask[None])[0] for mask in masks[::-1]])[::-1]
    np.testing.assert_array_equal(together, alone)
    chained = LogisticRegressionUtility(X, y, X_test, y_test, metric="neg_log_loss", solver="lbfgs").evaluate(masks)
    assert not np.array_equal(chained, together)  # the property can fail: chained fits start elsewhere


def test_links_are_rows_that_add_one_point_to_the_row_before():
    masks = np.array([[0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 1, 1, 1], [1, 1, 1, 1],
                      [1, 1, 1, 1]], dtype=bool)
    np.testing.assert_array_equal(PrefixLinks.of(masks), [False, True, True, False, True, True, False])
    weights = np.array([[1, 0, 2], [1, 1, 2], [2, 1, 2], [2, 1, 1]])  # integer sample weights: one more draw
    np.testing.assert_array_equal(PrefixLinks.of(weights), [False, True, True, False])
    assert PrefixLinks.of(masks[:1]).tolist() == [False]


def test_a_cached_model_utility_does_not_chain():
    X, y, X_test, y_test = digits_task()
    cached = ModelUtility(LogisticRegression(), X, y, X_test, y_test, fast=True, cache=True)
    assert cached.learner_.chain_prefixes is False
    assert ModelUtility(LogisticRegression(), X, y, X_test, y_test, fast=True).learner_.chain_prefixes is True


def test_chain_prefixes_must_be_a_bool():
    X, y, X_test, y_test = digits_task()
    with pytest.raises(TypeError, match="chain_prefixes"):
        LogisticRegressionUtility(X, y, X_test, y_test, chain_prefixes="yes")


def test_the_exact_prefix_path_refits_along_chains_where_fits_chain():
    """With more than two classes on L-BFGS, prefix_path="exact" is evaluate on the prefix masks, chained."""
    from shapley_research.games import prefix_masks

    X, y, X_test, y_test = digits_task()
    permutations = np.stack([np.random.default_rng(seed).permutation(200) for seed in (2, 3)])
    exact = LogisticRegressionUtility(X, y, X_test, y_test, solver="lbfgs", prefix_path="exact")
    values = exact.evaluate_prefixes(permutations)
    refits = LogisticRegressionUtility(X, y, X_test, y_test, solver="lbfgs").evaluate(prefix_masks(permutations))
    np.testing.assert_array_equal(values.reshape(-1), refits)
    assert exact.last_prefix_info_ == {}  # the warm prefix path did not run
