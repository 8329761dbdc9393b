"""The compiled lasso path and its cross-validated penalty (AME's Lasso) agree with scikit-learn's LARS."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LassoLars, LassoLarsCV

from shapley_research.estimators._lasso_path import lasso_lars_cv, lasso_path


def _problem(m, n, seed=0, support=8):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    weights = np.zeros(n)
    weights[:support] = rng.normal(size=support)
    return X, X @ weights + rng.normal(size=m)


@pytest.mark.parametrize("m, n", [(300, 40), (60, 120)])  # the Gram form (m > n) and the design's own
def test_the_cross_validated_lasso_is_scikit_learns(m, n):
    X, y = _problem(m, n)
    reference = LassoLarsCV(cv=5, max_iter=10_000).fit(X, y - y.mean())
    coef, alpha = lasso_lars_cv(X, y - y.mean(), cv=5)
    assert alpha == pytest.approx(reference.alpha_, rel=1e-9)
    np.testing.assert_allclose(coef, reference.coef_, rtol=0, atol=1e-10)


@pytest.mark.parametrize("m, n", [(300, 40), (60, 120)])
def test_the_path_stops_at_the_penalty_lasso_lars_solves(m, n):
    X, y = _problem(m, n, seed=1)
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    for alpha in (0.5, 0.05, 0.005):
        alphas, coefs = lasso_path(Xc, yc, alpha)
        assert alphas[-1] == pytest.approx(alpha) and np.all(np.diff(alphas) < 0)
        np.testing.assert_allclose(coefs[-1], LassoLars(alpha=alpha).fit(X, y).coef_, rtol=0, atol=1e-10)
    gradient = Xc.T @ (yc - Xc @ coefs[-1]) / m  # optimality: |X^T r| / m <= alpha, equal where active
    active = coefs[-1] != 0
    assert np.abs(gradient).max() <= 0.005 * (1 + 1e-9)
    np.testing.assert_allclose(gradient[active], 0.005 * np.sign(coefs[-1][active]), rtol=1e-8)


def test_a_longer_path_than_the_first_guess_is_followed_to_its_end():
    X, y = _problem(200, 60, seed=2, support=60)  # every feature joins; drops and re-joins lengthen the path
    alphas, coefs = lasso_path(X - X.mean(axis=0), y - y.mean())
    assert 0 < alphas[-1] <= 1e-12 * alphas[0]  # the end, where only rounding is left
    least_squares = np.linalg.lstsq(X - X.mean(axis=0), y - y.mean(), rcond=None)[0]
    np.testing.assert_allclose(coefs[-1], least_squares, rtol=0, atol=1e-9)
    capped_alphas, capped = lasso_path(X - X.mean(axis=0), y - y.mean(), max_knots=5)
    assert capped_alphas.size == 6 and np.count_nonzero(capped[-1]) <= 5  # max_knots steps, like max_iter
