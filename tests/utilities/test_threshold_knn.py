"""Threshold KNN-Shapley (TKNN-Shapley): the closed form against enumeration, its properties, the game."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from games import brute_force_shapley
from shapley_research import ThresholdKNNUtility, exact_shapley, permutation_shapley, threshold_knn_shapley
from shapley_research.utilities import _threshold_knn


def make_data(seed, n_train=8, n_test=4, n_classes=3, grid=None, d=2):
    """Continuous features, or small integers (``grid``) whose distances tie, also at the radius."""
    rng = np.random.default_rng(seed)
    if grid is None:
        X_train, X_test = rng.normal(size=(n_train, d)), rng.normal(size=(n_test, d))
    else:
        X_train, X_test = (rng.integers(0, grid, size=(k, d)).astype(float) for k in (n_train, n_test))
    y_train, y_test = rng.integers(0, n_classes, n_train), rng.integers(0, n_classes, n_test)
    y_test[0] = y_train[0]  # at least one label in common
    return X_train, y_train, X_test, y_test


def reference_utility(X_train, y_train, X_test, y_test, tau, n_classes):
    """The paper's Eq. 3 with plain sets and scipy's distances: ``utility(coalition) -> float``."""
    near = cdist(X_test, X_train) <= tau

    def utility(coalition):
        total = 0.0
        for t in range(len(y_test)):
            voters = [j for j in coalition if near[t, j]]
            total += sum(y_train[j] == y_test[t] for j in voters) / len(voters) if voters else 1.0 / n_classes
        return total / len(y_test)
    return utility


CASES = {  # name -> (data, tau): ties at the radius, empty neighbourhoods, one class, many classes
    "continuous": (make_data(0), 1.0),
    "grid_ties_at_radius": (make_data(1, grid=3), 1.0),
    "grid_diagonal_ties": (make_data(2, grid=3), float(np.sqrt(2.0))),
    "empty_neighbourhoods": (make_data(3, n_test=5), 0.3),
    "single_class": (make_data(4, n_classes=1), 1.2),
    "five_classes": (make_data(5, n_classes=5, grid=4), 1.5),
    "radius_covers_all": (make_data(6), 50.0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_game_is_the_documented_utility_and_closed_form_is_exact(case):
    (X_train, y_train, X_test, y_test), tau = CASES[case]
    n_classes = len(set(y_train) | set(y_test))
    game = ThresholdKNNUtility(X_train, y_train, X_test, y_test, tau)
    utility = reference_utility(X_train, y_train, X_test, y_test, tau, n_classes)
    n = len(y_train)
    masks = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(bool)  # every coalition
    expected = [utility(np.flatnonzero(mask)) for mask in masks]
    np.testing.assert_allclose(game.evaluate(masks), expected, rtol=0, atol=1e-15)
    fast = threshold_knn_shapley(X_train, y_train, X_test, y_test, tau)
    np.testing.assert_allclose(fast.values, exact_shapley(game).values, rtol=0, atol=1e-14)
    assert fast.n_evaluations == 0 and fast.method == "threshold_knn_exact" and not fast.stderr.any()
    assert fast.info["n_classes"] == n_classes
    if case == "grid_ties_at_radius":  # some pairs lie exactly at the radius, and count
        assert (cdist(X_test, X_train) == tau).any()


@pytest.mark.parametrize("seed", range(3))
def test_closed_form_against_all_orders(seed):
    """Against the textbook average over all N! orders (shares no code with the package)."""
    data = make_data(10 + seed, n_train=6, n_test=3, grid=3)
    tau = (1.0, 1.5, 2.0)[seed]
    n_classes = len(set(data[1]) | set(data[3])) + seed  # and a C above the labels seen
    brute = brute_force_shapley(reference_utility(*data, tau, n_classes), 6)
    values = threshold_knn_shapley(*data, tau, n_classes=n_classes).values
    np.testing.assert_allclose(values, brute, rtol=0, atol=1e-14)


def test_by_hand():
    # test point 0 (label 1); points 0.5 (label 1), 1.0 (label 0), 3.0 (label 1); tau = 1, C = 2.
    # U(empty) = 1/2, U(a) = 1, U(b) = 0, U(ab) = 1/2: s_a = (1/2 + 1/2) / 2, s_b = -s_a; 3.0 is outside.
    result = threshold_knn_shapley([[0.5], [1.0], [3.0]], [1, 0, 1], [[0.0]], [1], 1.0)
    np.testing.assert_array_equal(result.values, [0.5, -0.5, 0.0])
    assert result.info == {"tau": 1.0, "n_classes": 2, "empty_neighbourhoods": 0}


def test_efficiency_symmetry_and_null_player_at_a_few_hundred_points():
    X_train, y_train, X_test, y_test = make_data(7, n_train=400, n_test=60, n_classes=4, d=3)
    X_train[1], y_train[1] = X_train[0], y_train[0]  # two identical points: symmetric players
    X_train[2] = 100.0  # far from every test point: a null player
    tau = float(np.quantile(cdist(X_test, X_train), 0.05))
    result = threshold_knn_shapley(X_train, y_train, X_test, y_test, tau, block_size=17)
    near = cdist(X_test, X_train) <= tau
    hits = (near & (y_train[None, :] == y_test[:, None])).sum(axis=1)
    counts = near.sum(axis=1)
    full = np.where(counts > 0, hits / np.maximum(counts, 1), 1 / 4).mean()  # U(D), independently
    assert result.values.sum() == pytest.approx(full - 1 / 4, abs=1e-12)
    assert result.values[0] == result.values[1] and result.values[2] == 0.0
    assert result.info["empty_neighbourhoods"] == int((counts == 0).sum()) > 0


def test_deterministic_and_blocks_move_values_by_rounding_only(monkeypatch):
    data = make_data(8, n_train=300, n_test=70, grid=5, d=3)  # many ties at the radius
    a = threshold_knn_shapley(*data, 2.0)
    np.testing.assert_array_equal(a.values, threshold_knn_shapley(*data, 2.0).values)
    for block_size in (1, 13, 1000):
        np.testing.assert_allclose(threshold_knn_shapley(*data, 2.0, block_size=block_size).values, a.values,
                                   rtol=0, atol=1e-15)
    for cells in (1, 1000):
        monkeypatch.setattr(_threshold_knn, "_CHUNK_CELLS", cells)
        np.testing.assert_allclose(threshold_knn_shapley(*data, 2.0).values, a.values, rtol=0, atol=1e-15)


@pytest.mark.parametrize("offset,scale", [(0.0, 1.0), (1e5 / 3, 0.1)], ids=["grid", "shifted_tenths"])
def test_membership_is_that_of_the_pairwise_distance_in_every_block(monkeypatch, offset, scale):
    """The GEMM's distances are rechecked near the radius, where its rounding could decide otherwise."""
    X_train, y_train, X_test, y_test = make_data(9, n_train=200, n_test=50, grid=4, d=3)
    X_train, X_test, tau = X_train * scale + offset, X_test * scale + offset, 2.0 * scale
    direct = ((X_test[:, None, :] - X_train[None, :, :]) ** 2).sum(axis=2) <= tau * tau
    assert np.array_equal(_threshold_knn._within_radius(X_train, X_test, tau), direct)
    assert np.array_equal(ThresholdKNNUtility(X_train, y_train, X_test, y_test, tau)._within, direct.T)
    for lo in range(0, 50, 7):  # blocks of other sizes decide alike
        assert np.array_equal(_threshold_knn._within_radius(X_train, X_test[lo:lo + 7], tau), direct[lo:lo + 7])
    for cells in (1, 450, 10 ** 9):  # and chunks of other sizes
        monkeypatch.setattr(_threshold_knn, "_CHUNK_CELLS", cells)
        assert np.array_equal(_threshold_knn._within_radius(X_train, X_test, tau), direct)
    if offset:  # the GEMM alone would decide some pairs otherwise here
        train_sq = (X_train ** 2).sum(axis=1)
        gemm = (X_test ** 2).sum(axis=1)[:, None] - 2.0 * X_test @ X_train.T + train_sq[None, :]
        assert ((gemm <= tau * tau) != direct).any()


def test_n_classes_sets_the_empty_utility():
    data, tau = CASES["empty_neighbourhoods"]
    game = ThresholdKNNUtility(*data, tau, n_classes=7)
    assert game(np.zeros(len(data[1]), bool)) == pytest.approx(1 / 7)
    values = threshold_knn_shapley(*data, tau, n_classes=7).values
    np.testing.assert_allclose(values, exact_shapley(game).values, rtol=0, atol=1e-14)
    assert values.sum() == pytest.approx(game(np.ones(len(data[1]), bool)) - 1 / 7, abs=1e-14)
    with pytest.raises(ValueError, match="n_classes must be at least the 3 distinct labels"):
        threshold_knn_shapley(*data, tau, n_classes=2)


def test_prefixes_are_evaluate_on_the_prefix_masks_bit_for_bit():
    X_train, y_train, X_test, y_test = make_data(11, n_train=30, n_test=9, grid=3)
    game = ThresholdKNNUtility(X_train, y_train, X_test, y_test, 1.0)
    permutations = np.stack([np.random.default_rng(s).permutation(30) for s in range(4)])
    prefixes = game.evaluate_prefixes(permutations)
    for order, row in zip(permutations, prefixes):
        masks = np.zeros((30, 30), bool)
        for j in range(30):
            masks[j:, order[j]] = True
        assert np.array_equal(row, game.evaluate(masks))
    assert game.fingerprint() == ThresholdKNNUtility(X_train, y_train, X_test, y_test, 1.0).fingerprint()
    assert game.fingerprint() != ThresholdKNNUtility(X_train, y_train, X_test, y_test, 1.5).fingerprint()


@pytest.mark.sampling
def test_a_permutation_estimator_runs_on_the_game():
    data = make_data(12, n_train=16, n_test=6, grid=3)
    game = ThresholdKNNUtility(*data, 1.0)
    exact = threshold_knn_shapley(*data, 1.0).values
    estimate = permutation_shapley(game, 16 * 400, 0, progress=False).values
    assert estimate.sum() == pytest.approx(exact.sum(), abs=1e-12)  # each permutation is efficient
    np.testing.assert_allclose(estimate, exact, atol=0.05)
