"""LAVA (Just et al. 2023): duplicates get equal values, a flipped label the lowest; POT solves the transport."""

from __future__ import annotations

import numpy as np
import pytest

from shapley_research import lava
from shapley_research.estimators import label_distances
from shapley_research.estimators._lava import annealed_potentials, annealing_schedule


def blobs(seed: int = 0, n: int = 20, n_test: int = 30):
    """Two well separated classes in the plane, for training and test."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(-3, 0.7, (n, 2)), rng.normal(3, 0.7, (n, 2))])
    X_test = np.vstack([rng.normal(-3, 0.7, (n_test, 2)), rng.normal(3, 0.7, (n_test, 2))])
    return X, np.repeat([0, 1], n), X_test, np.repeat([0, 1], n_test)


@pytest.mark.parametrize("solver", ["annealed", "sinkhorn", "emd"])
def test_flipped_labels_get_the_lowest_values(solver):
    """One label flipped each way (the class masses stay balanced: a surplus of one class would shift the
    exact potentials of its whole class, which is the transport's answer, not label noise)."""
    X, y, X_test, y_test = blobs()
    y[7], y[27] = 1, 0
    result = lava(X, y, X_test, y_test, solver=solver)
    assert set(np.argsort(result.values)[:2]) == {7, 27}
    assert result.method == "lava" and result.n_evaluations == 0 and result.seed is None


@pytest.mark.parametrize("solver", ["annealed", "sinkhorn", "emd"])
def test_duplicated_points_get_equal_values(solver):
    X, y, X_test, y_test = blobs(1)
    X, y = np.vstack([X, X[3:4], X[25:26]]), np.append(y, [y[3], y[25]])
    values = lava(X, y, X_test, y_test, solver=solver).values
    assert values[3] == values[-2] and values[25] == values[-1]
    assert values[3] != values[4]  # the property can fail: distinct points get distinct values


@pytest.mark.parametrize("solver", ["annealed", "emd"])
def test_the_calibrated_gradients_sum_to_zero_and_ignore_a_translation(solver):
    X, y, X_test, y_test = blobs(2)
    values = lava(X, y, X_test, y_test, solver=solver).values
    assert values.sum() == pytest.approx(0.0, abs=1e-9)
    moved = lava(X + 5.0, y, X_test + 5.0, y_test, solver=solver).values
    np.testing.assert_allclose(moved, values, atol=1e-8)


def test_the_annealing_schedule_is_geomloss_s():
    """From diameter^2 down by scaling^2 a step (blur radii by scaling), ending at reg."""
    schedule = annealing_schedule(10.0, 0.1, scaling=0.5)
    assert schedule[0] == 100.0 and schedule[-1] == 0.1
    np.testing.assert_allclose(np.array(schedule[2:-1]) / np.array(schedule[1:-2]), 0.25)
    assert schedule[1] == pytest.approx(100.0) and schedule[-2] > 0.1 >= schedule[-2] * 0.25


def test_annealed_potentials_price_a_single_pair_at_its_cost():
    """One point on each side: every averaged update keeps f + g = C, the transport's cost."""
    f, g = annealed_potentials(np.ones(1), np.ones(1), np.array([[3.5]]), annealing_schedule(4.0, 0.1))
    assert f[0] + g[0] == pytest.approx(3.5, abs=1e-12)


def test_annealed_potentials_reach_the_sinkhorn_fixed_point_at_a_fixed_temperature():
    """Held at one temperature, the averaged updates converge to Sinkhorn's potentials: the plan has the marginals."""
    rng = np.random.default_rng(0)
    cost = rng.random((6, 4))
    a, b = np.full(6, 1 / 6), np.full(4, 1 / 4)
    f, g = annealed_potentials(a, b, cost, [1.0] + [0.2] * 400)
    plan = a[:, None] * b[None, :] * np.exp((f[:, None] + g[None, :] - cost) / 0.2)
    np.testing.assert_allclose(plan.sum(axis=1), a, atol=1e-9)
    np.testing.assert_allclose(plan.sum(axis=0), b, atol=1e-9)
    f_short, g_short = annealed_potentials(a, b, cost, [1.0, 0.2])  # the property can fail: too few updates
    short_plan = a[:, None] * b[None, :] * np.exp((f_short[:, None] + g_short[None, :] - cost) / 0.2)
    assert np.abs(short_plan.sum(axis=0) - b).max() > 1e-6


def test_label_distances_vanish_between_a_class_and_itself():
    X, y, _, _ = blobs(3)
    W = label_distances(X, y, X, y)
    np.testing.assert_allclose(np.diag(W), 0.0, atol=1e-12)
    assert W[0, 1] == pytest.approx(W[1, 0]) and W[0, 1] > 10  # the classes are 6 apart: about 6**2
    result = lava(X, y, X, y, solver="emd")
    np.testing.assert_array_equal(result.info["label_distances"], W)


@pytest.mark.parametrize("change, message", [
    (lambda X, y: (X, y[:-1]), "train_index must be a 1-D integer array with one class index per row"),
    (lambda X, y: (X, y.astype(float)), "train_index must be a 1-D integer array"),
    (lambda X, y: (X, np.where(y == 0, 2, y)), r"train_index must hold the class indices 0..K-1, each at least once"),
    (lambda X, y: (np.where(X > 0, np.nan, X), y), "X_train contains NaN"),
    (lambda X, y: (__import__("scipy.sparse").sparse.csr_matrix(X), y), "sparse matrices are not supported"),
])
def test_label_distances_checks_its_arguments(change, message):
    X, y, _, _ = blobs(5)
    X_bad, y_bad = change(X, y)
    with pytest.raises((TypeError, ValueError), match=message):
        label_distances(X_bad, y_bad, X, y)


def test_labels_of_any_kind():
    X, y, X_test, y_test = blobs(4)
    names = np.array(["cat", "dog"])
    values = lava(X, names[y], X_test, names[y_test], solver="emd").values
    np.testing.assert_array_equal(values, lava(X, y, X_test, y_test, solver="emd").values)


def test_same_inputs_same_bits():
    X, y, X_test, y_test = blobs(5)
    np.testing.assert_array_equal(lava(X, y, X_test, y_test).values, lava(X, y, X_test, y_test).values)


@pytest.mark.parametrize("kwargs, name, error", [
    ({"X_test": np.zeros((4, 3))}, "X_test", ValueError),
    ({"y_train": np.zeros(5)}, "y_train", ValueError),
    ({"y_test": np.zeros((2, 2))}, "y_test", ValueError),
    ({"X_train": np.array([[np.nan, 0.0]] * 40)}, "X_train", ValueError),
    ({"solver": "exact"}, "solver", ValueError),
    ({"reg": 0.0}, "reg", ValueError),
    ({"lam_x": -1.0}, "lam_x", ValueError),
    ({"lam_x": 0.0, "lam_y": 0.0}, "lam_x and lam_y", ValueError),
    ({"max_iter": 0}, "max_iter", ValueError),
    ({"tol": "small"}, "tol", TypeError),
])
def test_bad_inputs_are_refused(kwargs, name, error):
    X, y, X_test, y_test = blobs()
    arguments = {"X_train": X, "y_train": y, "X_test": X_test, "y_test": y_test, **kwargs}
    with pytest.raises(error, match=name):
        lava(**arguments)


def test_one_training_point_has_no_calibrated_gradient():
    X, y, X_test, y_test = blobs()
    with pytest.raises(ValueError, match="X_train"):
        lava(X[:1], y[:1], X_test, y_test)
