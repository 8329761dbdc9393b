"""VolumeUtility: the (robust) volume of a coalition's features against a plain per-coalition computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import shapley_research as sr
from shapley_research.utilities import _volume


def reference_volume(X, mask, robust, omega=0.05, beta=10.0):
    """Xu et al.'s (robust) volume of one coalition, point by point and cube by cube."""
    S = X[mask]
    if not robust:
        return math.sqrt(np.linalg.det(S.T @ S)) if len(S) >= X.shape[1] else 0.0
    groups: dict = {}
    for key, x in zip(map(tuple, np.floor((S - X.min(axis=0)) / omega).astype(int)), S):
        groups.setdefault(key, []).append(x)
    if len(groups) < X.shape[1]:
        return 0.0
    means = np.array([np.mean(points, axis=0) for points in groups.values()])
    alpha = 1.0 / (beta * len(groups))
    factor = np.prod([(1 - alpha ** (len(points) + 1)) / (1 - alpha) for points in groups.values()])
    return math.sqrt(np.linalg.det(means.T @ means)) * factor


@pytest.fixture
def points():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    X[5], X[6] = X[4], X[4] + 0.001  # a replicated point and a near copy: one cube
    return X


@pytest.mark.parametrize("robust", [True, False])
def test_volumes_match_the_definition(points, robust):
    masks = np.random.default_rng(1).random((200, 12)) < 0.6
    masks[0], masks[1] = False, True
    game = sr.VolumeUtility(points, robust=robust, omega=0.5)
    expected = [reference_volume(points, mask, robust, omega=0.5) for mask in masks]
    np.testing.assert_allclose(game.evaluate(masks), expected, rtol=1e-10, atol=1e-12)
    assert game.evaluate(masks[:1])[0] == 0.0  # the empty coalition spans nothing


def test_chunks_give_the_same_bits(points, monkeypatch):
    masks = np.random.default_rng(2).random((50, 12)) < 0.5
    game = sr.VolumeUtility(points, omega=0.5)
    whole = game.evaluate(masks)
    monkeypatch.setattr(_volume, "CHUNK_FLOATS", 1)  # one coalition a chunk
    np.testing.assert_array_equal(game.evaluate(masks), whole)


def test_replicating_a_point_gains_little_robust_volume(points):
    copies = np.vstack([points[:6], np.repeat(points[:1], 20, axis=0)])
    plain, robust = sr.VolumeUtility(copies, robust=False), sr.VolumeUtility(copies, omega=0.01)
    base, grown = np.zeros((2, 26), dtype=bool)
    base[:6] = True
    grown[:] = True
    gain = {name: game.evaluate(np.array([grown, base])) for name, game in (("plain", plain), ("robust", robust))}
    assert gain["plain"][0] / gain["plain"][1] > 2.0  # 20 copies of one point inflate the plain volume
    assert gain["robust"][0] / gain["robust"][1] < 1.05  # and barely the robust one


def test_values_are_efficient_and_a_copy_shares_its_original_value(points):
    game = sr.VolumeUtility(points, omega=0.5)
    values = sr.exact_shapley(game).values
    full = game.evaluate(np.ones((1, 12), dtype=bool))[0]
    assert values.sum() == pytest.approx(full)
    assert values[4] == pytest.approx(values[5])  # points 4 and 5 are identical: symmetric players


def test_options_change_the_fingerprint(points):
    prints = {sr.VolumeUtility(points, **kw).fingerprint() for kw in
              ({}, {"robust": False}, {"omega": 0.5}, {"beta": 5.0})}
    assert len(prints) == 4


@pytest.mark.parametrize("kwargs, error, message", [
    ({"X": np.zeros(5)}, ValueError, "X must be a 2-D array"),
    ({"X": np.array([[0.0, np.nan]])}, ValueError, "X must be finite"),
    ({"X": np.ones((3, 2)), "omega": 0.0}, ValueError, "omega must be > 0"),
    ({"X": np.ones((3, 2)), "beta": 1.0}, ValueError, "beta must be > 1"),
    ({"X": np.ones((3, 2)), "robust": 1}, TypeError, "robust must be True or False"),
])
def test_bad_input_names_the_argument(kwargs, error, message):
    with pytest.raises(error, match=message):
        sr.VolumeUtility(**kwargs)
