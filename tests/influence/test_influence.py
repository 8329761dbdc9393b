"""Influence-function heuristics (paper Section 4.5): largest-S and all-S influence.

Ground truth comes from scikit-learn: leave-one-out refits of
``LogisticRegression`` for the influence updates, and exact Shapley values of
a small game that fits ``LogisticRegression`` on every coalition.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from shapley_research import (LogisticObjective, all_s_influence, exact_shapley, largest_s_influence,
                              largest_s_influence_general, neyman_allocation)
from shapley_research.games import Game


def relative_l2(estimate, truth) -> float:
    return float(np.linalg.norm(np.asarray(estimate) - truth) / np.linalg.norm(truth))


def blobs(n, d, seed, separation=1.5, n_classes=2):
    """Balanced classes (labels cycle 0..K-1) around well separated means."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    if n_classes == 2:
        means = separation * np.outer([-1.0, 1.0], np.ones(d) / np.sqrt(d))
    else:
        angles = 2 * np.pi * np.arange(n_classes) / n_classes
        means = np.zeros((n_classes, d))
        means[:, 0], means[:, 1] = separation * np.cos(angles), separation * np.sin(angles)
    return rng.normal(size=(n, d)) + means[y], y


def sklearn_fit(X, y, C):
    return LogisticRegression(C=C, tol=1e-12, max_iter=10_000).fit(X, y)


def sklearn_theta(model):
    """scikit-learn's coefficients in LogisticObjective's layout (rows [w_k, b_k])."""
    return np.hstack([model.coef_, model.intercept_[:, None]]).reshape(-1)


class LogisticGame(Game):
    """U(S) = minus the test log-loss of LogisticRegression(C) fitted on S.

    Convention shared with the estimators: a coalition that misses a class
    (the empty set, every single point) scores the uniform prediction, -log K.
    """

    def __init__(self, X, y, X_test, y_test, C):
        self.X, self.y, self.X_test, self.y_test, self.C = X, y, X_test, y_test, C
        self.n_classes = np.unique(y).size
        self.n_players = len(y)

    def _evaluate(self, masks):
        out = np.empty(masks.shape[0])
        with threadpool_limits(1):
            for r, mask in enumerate(masks):
                if np.unique(self.y[mask]).size < self.n_classes:
                    out[r] = -np.log(self.n_classes)
                    continue
                proba = sklearn_fit(self.X[mask], self.y[mask], self.C).predict_proba(self.X_test)
                out[r] = np.log(proba[np.arange(len(self.y_test)), self.y_test]).mean()
        return out


# ----------------------------------------------------------------------------- (a) influence vs refit

@pytest.fixture(scope="module")
def loo_problem():
    """Strongly convex: 500 points, 3 features, C = 0.05."""
    X, y = blobs(500, 3, seed=0, separation=1.0)
    X_test, y_test = blobs(500, 3, seed=1, separation=1.0)
    obj = LogisticObjective(X, y, X_test, y_test, C=0.05)
    return obj, X, y


def test_newton_fit_matches_sklearn(loo_problem):
    obj, X, y = loo_problem
    theta = obj.fit()
    np.testing.assert_allclose(theta, sklearn_theta(sklearn_fit(X, y, obj.C)), atol=1e-7)
    assert np.abs(obj.gradient(theta)).max() < 1e-9


@pytest.mark.parametrize("approximation, utility_change, tol", [
    ("influence", "linear", 0.05),  # the paper's formula and first-order utility change
    ("newton", "evaluate", 0.02),   # updated Hessian, utility evaluated at the new parameters
])
def test_removal_influence_matches_leave_one_out_refit(loo_problem, approximation, utility_change, tol):
    obj, X, y = loo_problem
    theta = obj.fit()
    everyone = np.arange(len(y))
    grad_u = obj.utility_gradient(theta)
    steps = obj.newton_steps(theta, everyone, everyone, direction="remove", approximation=approximation)
    # the 8 points whose removal moves the test utility most (by the approximation): the
    # hardest cases (high leverage) and the ones where a relative error is meaningful
    points = np.argsort(-np.abs(steps @ grad_u))[:8]
    u_full = obj.utility(theta)
    for i in points:
        refit = sklearn_theta(sklearn_fit(np.delete(X, i, 0), np.delete(y, i), obj.C))
        true_step, true_du = refit - theta, obj.utility(refit) - u_full
        assert np.linalg.norm(steps[i] - true_step) / np.linalg.norm(true_step) < tol
        du = steps[i] @ grad_u if utility_change == "linear" else obj.utility(theta + steps[i]) - u_full
        assert abs(du - true_du) / abs(true_du) < tol


def test_addition_newton_step_matches_refit(loo_problem):
    """The all-S direction: theta_{S+i} from the model fitted on S (|S| = 100)."""
    obj, X, y = loo_problem
    base = np.arange(100)
    theta = obj.fit(base)
    points = np.arange(100, 110)
    steps = obj.newton_steps(theta, base, points, direction="add", approximation="newton")
    for step, i in zip(steps, points):
        true_step = obj.fit(np.r_[base, i], theta0=theta) - theta
        assert np.linalg.norm(step - true_step) / np.linalg.norm(true_step) < 0.1


def test_softmax_removal_newton_step_matches_refit():
    X, y = blobs(150, 2, seed=2, separation=2.0, n_classes=3)
    X_test, y_test = blobs(200, 2, seed=3, separation=2.0, n_classes=3)
    obj = LogisticObjective(X, y, X_test, y_test, C=0.1)
    theta = obj.fit()
    model = sklearn_fit(X, y, 0.1)
    np.testing.assert_allclose(obj.utility(theta), np.log(model.predict_proba(X_test)[np.arange(200), y_test]).mean(),
                               rtol=1e-8)
    points = np.arange(6)
    steps = obj.newton_steps(theta, np.arange(150), points, direction="remove", approximation="newton")
    for step, i in zip(steps, points):
        true_step = obj.fit(np.delete(np.arange(150), i), theta0=theta) - theta
        # softmax intercepts are defined up to a common shift: compare predictions' parameters
        diff = (step - true_step).reshape(3, 3)
        diff[:, -1] -= diff[:, -1].mean()
        ref = true_step.reshape(3, 3).copy()
        ref[:, -1] -= ref[:, -1].mean()
        assert np.linalg.norm(diff) / np.linalg.norm(ref) < 0.05


# ----------------------------------------------------------------------------- (b) largest-S

@pytest.fixture(scope="module")
def largest_s_problem():
    X, y = blobs(120, 3, seed=4, separation=1.0)
    X_test, y_test = blobs(400, 3, seed=5, separation=1.0)
    return X, y, X_test, y_test


def test_largest_s_sums_to_utility_gain_and_ranks_like_leave_one_out(largest_s_problem):
    X, y, X_test, y_test = largest_s_problem
    res = largest_s_influence(X, y, X_test, y_test, C=0.1)
    assert res.method == "largest_s_influence" and res.n_evaluations == 1 and res.stderr is None
    u_full, u_empty = res.info["full_utility"], res.info["empty_utility"]
    assert u_empty == pytest.approx(-np.log(2))
    assert res.values.sum() == pytest.approx(u_full - u_empty, rel=1e-10)
    np.testing.assert_allclose(res.values, res.info["normalization_constant"] * res.info["marginal_estimates"])

    obj = LogisticObjective(X, y, X_test, y_test, C=0.1)
    theta = res.info["theta"]
    loo = np.array([u_full - obj.utility(obj.fit(np.delete(np.arange(len(y)), i), theta0=theta))
                    for i in range(len(y))])
    assert spearmanr(res.values, loo)[0] > 0.9
    assert relative_l2(res.info["marginal_estimates"], loo) < 0.1
    newton = largest_s_influence(X, y, X_test, y_test, C=0.1, approximation="newton",
                                 utility_change="evaluate")
    assert relative_l2(newton.info["marginal_estimates"], loo) < 0.03


def test_general_version_agrees_with_logistic_version(largest_s_problem):
    X, y, X_test, y_test = largest_s_problem
    res = largest_s_influence(X, y, X_test, y_test, C=0.1)
    obj = LogisticObjective(X, y, X_test, y_test, C=0.1)
    theta = obj.fit()
    kwargs = {"full_utility": res.info["full_utility"], "empty_utility": res.info["empty_utility"]}
    H = obj.hessian(theta)
    general = largest_s_influence_general(obj.per_sample_gradients(theta), H, obj.utility_gradient(theta),
                                          **kwargs)
    np.testing.assert_allclose(general.values, res.values, rtol=1e-8, atol=1e-12)
    via_solver = largest_s_influence_general(obj.per_sample_gradients(theta), lambda b: np.linalg.solve(H, b),
                                             obj.utility_gradient(theta), **kwargs)
    np.testing.assert_allclose(via_solver.values, res.values, rtol=1e-8, atol=1e-12)
    raw = largest_s_influence_general(obj.per_sample_gradients(theta), H, obj.utility_gradient(theta),
                                      normalize=False)
    np.testing.assert_allclose(raw.values, res.info["marginal_estimates"], rtol=1e-8, atol=1e-14)


def test_largest_s_accuracy_utility_and_multiclass_sum():
    X, y = blobs(90, 2, seed=6, separation=2.0, n_classes=3)
    X_test, y_test = blobs(150, 2, seed=7, separation=2.0, n_classes=3)
    for utility, u0 in (("neg_log_loss", -np.log(3)), ("accuracy", 1 / 3)):
        res = largest_s_influence(X, y, X_test, y_test, C=0.5, utility=utility)
        assert res.info["empty_utility"] == pytest.approx(u0)
        assert res.values.sum() == pytest.approx(res.info["full_utility"] - u0, rel=1e-9)


# ----------------------------------------------------------------------------- (c) all-S vs exact

@pytest.fixture(scope="module")
def small_game():
    X, y = blobs(8, 2, seed=0)
    X_test, y_test = blobs(200, 2, seed=100)
    game = LogisticGame(X, y, X_test, y_test, C=0.3)
    return X, y, X_test, y_test, exact_shapley(game).values


@pytest.mark.slow  # over a second
def test_all_s_is_close_to_exact_and_closer_than_largest_s(small_game):
    X, y, X_test, y_test, exact = small_game
    largest = largest_s_influence(X, y, X_test, y_test, C=0.3)
    sampled = all_s_influence(X, y, X_test, y_test, budget=120, seed=0, C=0.3)
    err_all, err_largest = relative_l2(sampled.values, exact), relative_l2(largest.values, exact)
    assert err_all < 0.15
    assert err_all < 0.5 * err_largest
    assert sampled.method == "all_s_influence" and sampled.seed == 0
    assert sampled.n_evaluations == sampled.info["n_fits"] <= sampled.n_samples == 120
    assert sampled.stderr.shape == (8,) and (sampled.stderr > 0).all()
    # every stratum drawn exhaustively: only the influence approximation is left
    full = all_s_influence(X, y, X_test, y_test, budget=10_000, seed=0, C=0.3)
    assert full.info["exhausted"].all() and full.n_samples < 10_000
    assert relative_l2(full.values, exact) < 0.05
    np.testing.assert_allclose(full.stderr, 0.0, atol=1e-15)


def test_all_s_is_deterministic_for_a_seed(small_game):
    X, y, X_test, y_test, _ = small_game
    a = all_s_influence(X, y, X_test, y_test, budget=60, seed=7, C=0.3)
    b = all_s_influence(X, y, X_test, y_test, budget=60, seed=7, C=0.3)
    c = all_s_influence(X, y, X_test, y_test, budget=60, seed=8, C=0.3)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.stderr, b.stderr)
    np.testing.assert_array_equal(a.info["allocation"], b.info["allocation"])
    assert not np.array_equal(a.values, c.values)
    d = all_s_influence(X, y, X_test, y_test, budget=60, C=0.3)
    np.testing.assert_array_equal(d.values, all_s_influence(X, y, X_test, y_test, budget=60, seed=d.seed,
                                                            C=0.3).values)


def test_all_s_multiclass_matches_exact():
    X, y = blobs(6, 2, seed=0, separation=2.0, n_classes=3)
    X_test, y_test = blobs(150, 2, seed=1, separation=2.0, n_classes=3)
    exact = exact_shapley(LogisticGame(X, y, X_test, y_test, C=0.3)).values
    res = all_s_influence(X, y, X_test, y_test, budget=1_000, seed=0, C=0.3)
    assert relative_l2(res.values, exact) < 0.1


# ----------------------------------------------------------------------------- (d) allocation

def test_neyman_allocation_follows_the_standard_deviations():
    alloc = neyman_allocation([1.0, 2.0, 4.0], 70)
    np.testing.assert_array_equal(alloc, [10, 20, 40])
    # coverage c_k: n_k proportional to sigma_k / sqrt(c_k)
    np.testing.assert_array_equal(neyman_allocation([1.0, 1.0], 30, coverage=[1.0, 0.25]), [10, 20])
    # caps and floors, and the budget is always met exactly
    alloc = neyman_allocation([1.0, 5.0, 10.0, 0.0], 100, lower=[2, 2, 2, 2], upper=[100, 100, 20, 100])
    assert alloc.sum() == 100 and alloc[2] == 20 and alloc[3] == 2 and alloc[1] > alloc[0] >= 2
    np.testing.assert_array_equal(neyman_allocation([1.0, 1.0], 50, upper=[3, 4]), [3, 4])
    with pytest.raises(ValueError, match="budget"):
        neyman_allocation([1.0, 1.0], 3, lower=[2, 2])


def test_all_s_gives_more_samples_to_higher_variance_strata():
    X, y = blobs(10, 2, seed=0)
    X_test, y_test = blobs(200, 2, seed=100)
    res = all_s_influence(X, y, X_test, y_test, budget=150, seed=0, C=0.3)
    info = res.info
    open_ = ~info["exhausted"]
    assert open_.sum() >= 4
    weight = info["stratum_std"][open_] / np.sqrt(info["coverage"][open_])
    alloc = info["allocation"][open_]
    assert spearmanr(weight, alloc)[0] > 0.7
    assert alloc[np.argmax(weight)] > 2 * alloc[np.argmin(weight)]
    assert info["allocation"].sum() == 150


# ----------------------------------------------------------------------------- (e) input validation

@pytest.fixture
def data():
    X, y = blobs(12, 2, seed=0)
    X_test, y_test = blobs(20, 2, seed=1)
    return X, y, X_test, y_test


@pytest.mark.parametrize("change, error, match", [
    (lambda X, y, Xt, yt: (np.where(np.arange(24).reshape(12, 2) == 3, np.nan, X), y, Xt, yt), ValueError, "X_train"),
    (lambda X, y, Xt, yt: (X, y, np.full_like(Xt, np.inf), yt), ValueError, "X_test"),
    (lambda X, y, Xt, yt: (X[:, 0], y, Xt, yt), ValueError, "X_train"),
    (lambda X, y, Xt, yt: (X, y[:-1], Xt, yt), ValueError, "y_train"),
    (lambda X, y, Xt, yt: (X, y, Xt[:, :1], yt), ValueError, "features"),
    (lambda X, y, Xt, yt: (X, np.zeros(12, dtype=int), Xt, yt), ValueError, "two classes"),
    (lambda X, y, Xt, yt: (X, y, Xt, yt + 5), ValueError, "y_test"),
    (lambda X, y, Xt, yt: (X, y.astype(float) * np.nan, Xt, yt), ValueError, "y_train"),
    (lambda X, y, Xt, yt: ([["a", "b"]] * 12, y, Xt, yt), TypeError, "X_train"),
])
def test_bad_data_is_rejected(data, change, error, match):
    args = change(*data)
    with pytest.raises(error, match=match):
        largest_s_influence(*args)
    with pytest.raises(error, match=match):
        all_s_influence(*args, budget=100, seed=0)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"C": 0.0}, ValueError, "C"), ({"C": -1.0}, ValueError, "C"), ({"C": np.nan}, ValueError, "C"),
    ({"C": "1"}, TypeError, "C"), ({"utility": "r2"}, ValueError, "utility"),
    ({"approximation": "exact"}, ValueError, "approximation"),
    ({"utility_change": "quadratic"}, ValueError, "utility_change"),
    ({"fit_intercept": 1}, TypeError, "fit_intercept"),
])
def test_bad_options_are_rejected(data, kwargs, error, match):
    with pytest.raises(error, match=match):
        largest_s_influence(*data, **kwargs)
    with pytest.raises(error, match=match):
        all_s_influence(*data, budget=100, seed=0, **kwargs)


def test_bad_budget_seed_and_pilot_are_rejected(data):
    with pytest.raises(TypeError, match="budget"):
        all_s_influence(*data, budget=100.5, seed=0)
    with pytest.raises(ValueError, match="budget"):
        all_s_influence(*data, budget=10, seed=0)  # the pilot needs 2 sets for each of 11 sizes
    with pytest.raises(ValueError, match="budget"):
        all_s_influence(*data, budget=-1, seed=0)
    with pytest.raises(ValueError, match="n_pilot"):
        all_s_influence(*data, budget=100, seed=0, n_pilot=1)
    with pytest.raises(ValueError, match="seed"):
        all_s_influence(*data, budget=100, seed=-3)


def test_general_version_rejects_bad_shapes():
    G, H, g = np.ones((5, 3)), np.eye(3), np.ones(3)
    with pytest.raises(ValueError, match="per_sample_gradients"):
        largest_s_influence_general(np.ones(5), H, g, normalize=False)
    with pytest.raises(ValueError, match="hessian"):
        largest_s_influence_general(G, np.eye(2), g, normalize=False)
    with pytest.raises(ValueError, match="test_utility_gradient"):
        largest_s_influence_general(G, H, np.ones(4), normalize=False)
    with pytest.raises(ValueError, match="NaN"):
        largest_s_influence_general(G * np.nan, H, g, normalize=False)
    with pytest.raises(ValueError, match="full_utility"):
        largest_s_influence_general(G, H, g)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="C_U"):
            largest_s_influence_general(np.array([[1.0], [-1.0]]), np.eye(1), np.ones(1),
                                        full_utility=1.0, empty_utility=0.0)


def _breast_cancer(n_train: int, standardise: bool):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    if standardise:
        X = (X - X[:n_train].mean(axis=0)) / X[:n_train].std(axis=0)
    return X[:n_train], y[:n_train], X[n_train:n_train + 100], y[n_train:n_train + 100]


def test_all_s_warns_where_its_influence_steps_leave_the_utilitys_range():
    """Raw breast-cancer features (up to 4,000) against the L2 penalty: single points' Newton steps move test
    logits by up to 10^6, marginals reach thousands where the log-loss can change by 36; standardised, none do."""
    with pytest.warns(RuntimeWarning, match=r"outside \+-36.04.*Standardise the features"):
        raw = all_s_influence(*_breast_cancer(14, standardise=False), budget=300, seed=0, progress=False)
    assert raw.info["n_out_of_range"] > 0 and abs(raw.values.sum()) > 100  # against U(D) - U(empty) below 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        scaled = all_s_influence(*_breast_cancer(14, standardise=True), budget=300, seed=0, progress=False)
        largest = largest_s_influence(*_breast_cancer(14, standardise=True))
    assert scaled.info["n_out_of_range"] == largest.info["n_out_of_range"] == 0


def test_the_out_of_range_warning_names_the_count_and_the_utility():
    from shapley_research.influence._marginals import warn_out_of_range

    obj = LogisticObjective(*_breast_cancer(14, standardise=True), utility="accuracy")
    assert obj.utility_range == 1.0
    with pytest.warns(RuntimeWarning, match=r"largest_s_influence: 3 of 14 .* outside \+-1, .*accuracy"):
        warn_out_of_range("largest_s_influence", obj, {"n_out_of_range": 3, "n_influence_updates": 14,
                                                       "largest": 2.5})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_out_of_range("largest_s_influence", obj, {"n_out_of_range": 0, "n_influence_updates": 14,
                                                       "largest": 0.5})
