"""Exact KNN-Shapley against enumeration of the KNN utility, efficiency and speed."""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from games import brute_force_shapley
from shapley_research import KNNUtility, exact_shapley, knn_shapley
from shapley_research.utilities import _knn


def random_data(n_train, n_test, seed, n_classes=3, grid=None, d=2):
    """Continuous features, or small integers (``grid``) to force exact distance ties."""
    rng = np.random.default_rng(seed)
    if grid is None:
        X_train, X_test = rng.normal(size=(n_train, d)), rng.normal(size=(n_test, d))
    else:
        X_train = rng.integers(0, grid, size=(n_train, d)).astype(float)
        X_test = rng.integers(0, grid, size=(n_test, d)).astype(float)
    return X_train, rng.integers(0, n_classes, n_train), X_test, rng.integers(0, n_classes, n_test)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 12])
@pytest.mark.parametrize("grid", [None, 3], ids=["continuous", "ties"])
def test_knn_shapley_matches_exact_enumeration(k, grid):
    data = random_data(10, 4, seed=k, grid=grid)
    if grid is not None:  # the integer grid really has ties in distance
        distances = cdist(data[2], data[0])
        assert any(np.unique(row).size < row.size for row in distances)
    fast = knn_shapley(*data, k)
    exact = exact_shapley(KNNUtility(*data, k))
    np.testing.assert_allclose(fast.values, exact.values, rtol=0, atol=1e-10)
    assert fast.n_evaluations == 0 and fast.method == "knn_exact"
    np.testing.assert_array_equal(fast.stderr, exact.stderr)  # both exact: zeros, as the sampling estimators' fallback


def test_knn_utility_is_the_documented_utility():
    """U(S) = mean over test points of (matching labels among the min(K,|S|) nearest of S) / K."""
    X_train, y_train, X_test, y_test = random_data(7, 3, seed=0)
    k = 3
    game = KNNUtility(X_train, y_train, X_test, y_test, k)
    distances = cdist(X_test, X_train)

    def utility(coalition):
        members = sorted(coalition)
        if not members:
            return 0.0
        total = 0.0
        for t in range(X_test.shape[0]):
            nearest = sorted(members, key=lambda j: (distances[t, j], j))[:k]
            total += sum(y_train[j] == y_test[t] for j in nearest) / k
        return total / X_test.shape[0]

    masks = ((np.arange(2 ** 7)[:, None] >> np.arange(7)) & 1).astype(bool)  # every coalition
    expected = [utility(set(np.flatnonzero(mask))) for mask in masks]
    np.testing.assert_allclose(game.evaluate(masks), expected, atol=1e-12)
    brute = brute_force_shapley(utility, 7)
    np.testing.assert_allclose(knn_shapley(X_train, y_train, X_test, y_test, k).values, brute, atol=1e-10)


def test_knn_shapley_by_hand():
    # 1-D, test point at 0.1 with label 1; training points 0, 1, 2 with labels 1, 0, 1; K = 1.
    # Recursion: s_3 = 1/3, s_2 = 1/3 - 1/2 = -1/6, s_1 = -1/6 + 1 = 5/6.
    values = knn_shapley([[0.0], [1.0], [2.0]], [1, 0, 1], [[0.1]], [1], 1).values
    np.testing.assert_allclose(values, [5 / 6, -1 / 6, 1 / 3], atol=1e-15)


def test_block_size_does_not_change_values():
    """Blocks are summed before the total: another block size moves values by rounding only."""
    data = random_data(50, 37, seed=4)
    a = knn_shapley(*data, 3).values
    b = knn_shapley(*data, 3, block_size=5).values
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)


def reference_knn_shapley(X_train, y_train, X_test, y_test, k, block_size=256):
    """The straightforward implementation the chunked one replaced: every step on a whole block."""
    n = X_train.shape[0]
    ranks = np.arange(1, n + 1)
    step = np.minimum(k, ranks[:-1]) / (k * ranks[:-1])
    totals = np.zeros(n)
    for lo in range(0, X_test.shape[0], block_size):
        block = X_test[lo:lo + block_size]
        sq = (np.einsum("ij,ij->i", block, block)[:, None] - 2.0 * block @ X_train.T
              + np.einsum("ij,ij->i", X_train, X_train)[None, :])
        order = np.argsort(sq, axis=1, kind="stable")
        match = (y_train[order] == y_test[lo:lo + block_size, None]).astype(float)
        last = match[:, -1:] * (min(k, n) / (k * n))
        increments = (match[:, :-1] - match[:, 1:]) * step
        sorted_values = np.hstack([np.cumsum(increments[:, ::-1], axis=1)[:, ::-1] + last, last])
        totals += np.bincount(order.ravel(), weights=sorted_values.ravel(), minlength=n)
    return totals / X_test.shape[0], order


def tied_data(n_train, n_test, seed, kind, n_classes=4, d=3):
    """Training and test points whose distances tie: a small integer grid, or duplicated rows."""
    rng = np.random.default_rng(seed)
    if kind == "grid":
        X_train, X_test = (rng.integers(0, 3, size=(m, d)).astype(float) for m in (n_train, n_test))
    else:
        base = rng.normal(size=(max(1, n_train // 5), d))
        X_train = base[rng.integers(0, len(base), n_train)]
        X_test = np.vstack([X_train[rng.integers(0, n_train, n_test // 2)], rng.normal(size=(n_test - n_test // 2, d))])
    y_train, y_test = rng.integers(0, n_classes, n_train), rng.integers(0, n_classes, n_test)
    y_test[0] = y_train[0]
    return X_train, y_train, X_test, y_test


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["continuous", "grid", "duplicates"])
def test_values_are_bit_identical_to_the_whole_block_implementation(seed, kind):
    """Chunked sorting and valuation change no bit: same order, same sums in the same order."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.choice([1, 2, 9, 300, 1500])), int(rng.choice([1, 3, 40, 300]))
    data = random_data(n, m, seed, n_classes=5, d=8) if kind == "continuous" else tied_data(n, m, seed, kind)
    for k in (1, 3, 10):
        expected, _ = reference_knn_shapley(*data, k)
        assert np.array_equal(knn_shapley(*data, k).values, expected)
    expected, _ = reference_knn_shapley(*data, 3, block_size=7)
    assert np.array_equal(knn_shapley(*data, 3, block_size=7).values, expected)


@pytest.mark.parametrize("kind", ["continuous", "grid", "duplicates"])
def test_values_do_not_depend_on_the_chunk_of_rows(monkeypatch, kind):
    """_CHUNK_CELLS sizes the steps after the distances; the values are the same bits at any size."""
    data = random_data(700, 300, seed=5, d=6) if kind == "continuous" else tied_data(700, 300, 5, kind)
    expected = knn_shapley(*data, 5).values
    game_order = KNNUtility(*data, 5)._order
    for cells in (1, 701, 3 * 700 + 1, 10 ** 9):
        monkeypatch.setattr(_knn, "_CHUNK_CELLS", cells)
        assert np.array_equal(knn_shapley(*data, 5).values, expected)
        assert np.array_equal(KNNUtility(*data, 5)._order, game_order)


def test_knn_utility_order_is_the_stable_order_of_the_distances():
    X_train, y_train, X_test, y_test = tied_data(400, 30, 2, "duplicates")
    _, order = reference_knn_shapley(X_train, y_train, X_test, y_test, 3)
    game = KNNUtility(X_train, y_train, X_test, y_test, 3)
    assert game._order.dtype == np.int32 and np.array_equal(game._order, order)


def tie_rows(rng, n):
    """Rows of squared distances full of ties: small integers, +-0.0, values apart by one ulp, infinities."""
    ulps = 1.0 + rng.integers(0, 2 ** 20, n) * 2.0 ** -52  # differ below the bits an index takes
    specials = rng.choice([0.0, -0.0, 5e-324, -5e-324, 1.0, np.nextafter(1.0, 2.0), -1.0, np.inf, -np.inf], n)
    return np.stack([rng.integers(0, 4, n).astype(float), ulps, specials, np.where(rng.random(n) < 0.5, 0.0, -0.0),
                     np.full(n, 2.5), -np.abs(rng.normal(size=n)).round(1), rng.normal(size=n) ** 2])


@pytest.mark.parametrize("n", [1, 2, 3, 16, 17, 1000, 2 ** 12, 2 ** 12 + 1, 70_000])
def test_stable_order_equals_a_stable_argsort(n):
    sq = tie_rows(np.random.default_rng(n), n)
    assert np.array_equal(_knn._stable_order(sq.copy()), np.argsort(sq, axis=1, kind="stable"))
    sq[:, ::3] = np.nan  # only from overflow; NaNs sort last, in index order
    assert np.array_equal(_knn._stable_order(sq.copy()), np.argsort(sq, axis=1, kind="stable"))


def test_efficiency_at_two_thousand_points():
    X_train, y_train, X_test, y_test = random_data(2000, 100, seed=1, d=5)
    k = 5
    values = knn_shapley(X_train, y_train, X_test, y_test, k).values
    # U(D), computed independently: K nearest by scipy distances (no ties in continuous data)
    nearest = np.argsort(cdist(X_test, X_train), axis=1)[:, :k]
    utility = np.mean((y_train[nearest] == y_test[:, None]).sum(axis=1) / k)
    assert values.sum() == pytest.approx(utility, abs=1e-10)


def test_fast_at_a_few_thousand_points():
    data = random_data(5000, 300, seed=2, d=10)
    knn_shapley(*data, 5)  # warm-up
    start = time.perf_counter()
    result = knn_shapley(*data, 5)
    assert time.perf_counter() - start < 5.0
    assert result.values.shape == (5000,)


@pytest.mark.parametrize("args,error,match", [
    ((np.zeros((3, 2)), [0, 1, 0], np.zeros((2, 3)), [0, 1], 1), ValueError, "features"),
    ((np.zeros((3, 2)), [0, 1], np.zeros((2, 2)), [0, 1], 1), ValueError, "y_train has 2 labels"),
    ((np.zeros((3, 2)), [0, 1, 0], np.zeros((2, 2)), [0], 1), ValueError, "y_test"),
    ((np.zeros(3), [0, 1, 0], np.zeros((2, 2)), [0, 1], 1), ValueError, "X_train must be 2-D"),
    ((np.zeros((0, 2)), [], np.zeros((2, 2)), [0, 1], 1), ValueError, "at least one sample"),
    ((np.full((3, 2), np.nan), [0, 1, 0], np.zeros((2, 2)), [0, 1], 1), ValueError, "NaN"),
    ((np.zeros((3, 2)), [0, 1, 0], np.zeros((2, 2)), [0, 1], 0), ValueError, "k must be >= 1"),
    ((np.zeros((3, 2)), [0, 1, 0], np.zeros((2, 2)), [0, 1], 1.5), TypeError, "k must be an integer"),
    (([["a", "b"]], [0], np.zeros((2, 2)), [0, 1], 1), TypeError, "X_train must be a numeric array"),
])
def test_knn_rejects_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        knn_shapley(*args)


def test_k_larger_than_training_set():
    """With K > N every point of S counts, so U is additive: s_i = mean_t 1[y_i = y_t] / K.

    (Regression: the recursion's start s_{alpha_N} = 1[match] / N holds only for
    K <= N; in general it is 1[match] min(K, N) / (K N).)
    """
    X_train, y_train, X_test, y_test = random_data(6, 5, seed=3)
    for k in (6, 7, 20):
        expected = (y_train[None, :] == y_test[:, None]).mean(axis=0) / k
        np.testing.assert_allclose(knn_shapley(X_train, y_train, X_test, y_test, k).values, expected,
                                   atol=1e-15)
        np.testing.assert_allclose(exact_shapley(KNNUtility(X_train, y_train, X_test, y_test, k)).values,
                                   expected, atol=1e-15)
