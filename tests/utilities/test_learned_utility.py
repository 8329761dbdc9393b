"""Data Utility Learning (learn_utility, LearnedUtility): the sample is the game's, the fit is reproducible bit for
bit whatever n_jobs, a regressor that can represent the game gives its exact values, and bad input fails early."""

from __future__ import annotations

import warnings

import joblib
import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

import shapley_research as sr
from games import AdditiveGame, AirportGame, CountingGame
from shapley_research.utilities import (LearnedUtility, UtilityFit, default_utility_regressor, learn_utility,
                                        sample_coalitions)

WEIGHTS = np.array([0.5, -1.0, 2.0, 0.25, 1.5, -0.75, 3.0, 0.1])


def airport():
    return AirportGame(np.random.default_rng(3).uniform(0.0, 1.0, 10))


def same_game(a: LearnedUtility, b: LearnedUtility) -> None:
    np.testing.assert_array_equal(a.masks_, b.masks_)
    np.testing.assert_array_equal(a.utilities_, b.utilities_)
    np.testing.assert_array_equal(a.validation_, b.validation_)
    masks = sample_coalitions(a.n_players, 200, "uniform", seed=9)
    np.testing.assert_array_equal(a.evaluate(masks), b.evaluate(masks))
    assert a.fit_quality == b.fit_quality and a.fingerprint() == b.fingerprint()


def test_the_same_seed_gives_the_same_learned_game_bit_for_bit_whatever_n_jobs():
    game = airport()
    mlp = default_utility_regressor().set_params(regressor__max_iter=100)  # the default, shorter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the MLP stops before converging: the same way every time
        first = learn_utility(game, 120, mlp, seed=4, chunk_size=16)
        again = learn_utility(game, 120, mlp, seed=4, chunk_size=16)
        with joblib.parallel_config(backend="threading"):
            parallel = learn_utility(game, 120, mlp, seed=4, chunk_size=16, n_jobs=2)
        other = learn_utility(game, 120, mlp, seed=5, chunk_size=16)
    same_game(first, again)
    same_game(first, parallel)
    assert not np.array_equal(first.masks_, other.masks_)


@pytest.mark.slow  # starts joblib's worker processes
def test_processes_give_the_same_game_as_this_one():
    game = airport()
    here = learn_utility(game, 100, LinearRegression(), seed=0, chunk_size=10)
    there = learn_utility(game, 100, LinearRegression(), seed=0, chunk_size=10, n_jobs=2)  # loky's processes
    same_game(here, there)


def test_the_sample_is_the_games_own_utilities_counted_once_each():
    counting = CountingGame(airport())
    learned = learn_utility(counting, 150, LinearRegression(), seed=1, chunk_size=32)
    assert counting.rows == learned.n_real_evaluations == 150 and counting.calls == 5  # ceil(150 / 32) chunks
    np.testing.assert_array_equal(learned.utilities_, airport().evaluate(learned.masks_))
    assert len({row.tobytes() for row in learned.masks_}) == 150  # no coalition evaluated twice
    assert not learned.masks_[0].any() and learned.masks_[1].all()  # the empty and full coalitions first


def test_an_additive_game_learned_linearly_has_its_exact_shapley_values():
    game = AdditiveGame(WEIGHTS, offset=0.3)
    learned = learn_utility(game, 60, LinearRegression(), seed=2)
    np.testing.assert_allclose(sr.exact_shapley(learned).values, WEIGHTS, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sr.exact_banzhaf(learned).values, WEIGHTS, rtol=0, atol=1e-10)
    assert learned.fit_quality.r2 == pytest.approx(1.0, abs=1e-12) and learned.fit_quality.rmse < 1e-10


def test_the_fit_report_scores_a_fit_on_the_rest_against_the_held_out_utilities():
    game = airport()
    learned = learn_utility(game, 100, LinearRegression(), seed=3, validation_fraction=0.25)
    held = learned.validation_
    quality = learned.fit_quality
    assert isinstance(quality, UtilityFit) and (quality.n_train, quality.n_validation) == (75, 25)
    model = LinearRegression().fit(learned.masks_[~held].astype(float), learned.utilities_[~held])
    residual = model.predict(learned.masks_[held].astype(float)) - learned.utilities_[held]
    truth = learned.utilities_[held]
    assert quality.rmse == pytest.approx(np.sqrt(np.mean(residual**2)), rel=1e-12)
    assert quality.r2 == pytest.approx(1 - np.sum(residual**2) / np.sum((truth - truth.mean())**2), rel=1e-12)
    assert quality.std == pytest.approx(truth.std(), rel=1e-12)
    final = LinearRegression().fit(learned.masks_.astype(float), learned.utilities_)  # refitted on all of them
    np.testing.assert_allclose(learned.regressor_.coef_, final.coef_, rtol=1e-12, atol=1e-14)
    assert learn_utility(game, 100, LinearRegression(), seed=3, validation_fraction=0.0).fit_quality is None
    assert "held-out R^2" in repr(learned)


def test_an_unset_random_state_is_seeded_and_a_set_one_kept():
    from sklearn.neural_network import MLPRegressor

    mlp = MLPRegressor(hidden_layer_sizes=(4,), max_iter=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seeded = learn_utility(airport(), 40, mlp, seed=6, validation_fraction=0.0)
        fixed = learn_utility(airport(), 40, MLPRegressor(hidden_layer_sizes=(4,), max_iter=50, random_state=11),
                              seed=6, validation_fraction=0.0)
    assert isinstance(seeded.regressor_.random_state, int) and fixed.regressor_.random_state == 11
    assert mlp.random_state is None  # the caller's regressor is not changed


@pytest.mark.parametrize("distribution", ["uniform", "size_uniform", "shapley_kernel"])
def test_sampled_coalitions_are_distinct_and_of_their_distribution(distribution):
    masks = sample_coalitions(12, 400, distribution, seed=0)
    assert masks.shape == (400, 12) and len({row.tobytes() for row in masks}) == 400
    sizes = masks[2:].sum(axis=1)
    if distribution != "uniform":
        assert sizes.min() >= 1 and sizes.max() <= 11
    if distribution == "shapley_kernel":  # heavier at the extreme sizes than size_uniform
        uniform_sizes = sample_coalitions(12, 400, "size_uniform", seed=0)[2:].sum(axis=1)
        assert np.mean(np.isin(sizes, [1, 11])) > np.mean(np.isin(uniform_sizes, [1, 11]))
    everything = sample_coalitions(4, 16, distribution, seed=1)  # every coalition of a small game
    assert len({row.tobytes() for row in everything}) == 16


def test_learned_utility_is_a_game_from_given_samples():
    masks = sample_coalitions(8, 50, seed=0)
    learned = LearnedUtility(masks, masks @ WEIGHTS, LinearRegression(), validation_fraction=0.0)
    assert isinstance(learned, sr.Game) and learned.n_players == 8 and learned.n_real_evaluations == 50
    np.testing.assert_allclose(learned(np.arange(8)), WEIGHTS.sum(), atol=1e-10)
    assert sr.learn_utility is learn_utility


@pytest.mark.parametrize("kwargs, error, match", [
    ({"n_samples": 1}, ValueError, "n_samples"),
    ({"n_samples": 2**10 + 1}, ValueError, "n_samples"),
    ({"n_samples": 2.5}, TypeError, "n_samples"),
    ({"n_samples": 2, "validation_fraction": 0.5}, ValueError, "n_samples"),
    ({"distribution": "banzhaf"}, ValueError, "distribution"),
    ({"validation_fraction": 1.0}, ValueError, "validation_fraction"),
    ({"validation_fraction": -0.1}, ValueError, "validation_fraction"),
    ({"regressor": LinearRegression}, TypeError, "regressor"),
    ({"regressor": object()}, TypeError, "regressor"),
    ({"n_jobs": 0}, ValueError, "n_jobs"),
    ({"chunk_size": 0}, ValueError, "chunk_size"),
    ({"progress": "yes"}, TypeError, "progress"),
    ({"seed": -1}, ValueError, "seed"),
])
def test_bad_input_is_refused_before_any_evaluation(kwargs, error, match):
    counting = CountingGame(airport())
    arguments = {"n_samples": 20, **kwargs}
    with pytest.raises(error, match=match):
        learn_utility(counting, **arguments)
    assert counting.rows == 0


def test_a_non_game_and_bad_samples_are_refused():
    with pytest.raises(TypeError, match="game"):
        learn_utility(lambda mask: 0.0, 10)
    with pytest.raises(ValueError, match="masks"):
        LearnedUtility(np.zeros((1, 3), dtype=bool), [0.0])
    with pytest.raises(ValueError, match="utilities"):
        LearnedUtility(np.eye(3, dtype=bool), [0.0, 1.0])
