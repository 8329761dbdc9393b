"""DVRL (Yoon, Arik & Pfister 2020): selection probabilities learned by REINFORCE on the game's coalitions."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from games import AdditiveGame, CountingGame, Interrupted, InterruptingGame, flipped_label_task
from shapley_research import CheckpointError, ModelUtility, as_game, dvrl
from shapley_research.estimators import dvrl_features
from shapley_research.estimators._dvrl import _Network

# 8 helpful players, 8 null players, 8 harmful ones
WEIGHTS = np.r_[np.full(8, 0.1), np.zeros(8), np.full(8, -0.1)]
HELPFUL, NULL, HARMFUL = slice(0, 8), slice(8, 16), slice(16, 24)


def additive() -> AdditiveGame:
    return AdditiveGame(WEIGHTS, offset=0.5)


def test_the_same_seed_gives_the_same_bits_and_another_seed_other_values():
    game = additive()
    first, again = (dvrl(game, 640, seed=3, progress=False) for _ in range(2))
    np.testing.assert_array_equal(first.values, again.values)
    np.testing.assert_array_equal(first.info["logits"], again.info["logits"])
    assert first.seed == 3 and first.method == "dvrl" and first.stderr is None
    assert not np.array_equal(first.values, dvrl(game, 640, seed=4, progress=False).values)


def test_the_same_seed_gives_the_same_bits_on_a_model_utility_with_a_network():
    X, y, X_test, y_test, _ = flipped_label_task(1.0)
    game = ModelUtility(LogisticRegression(), X, y, X_test, y_test, metric="neg_log_loss", fast=True)
    runs = [dvrl(game, 320, seed=1, progress=False).values for _ in range(2)]
    np.testing.assert_array_equal(*runs)


def test_helpful_players_rise_harmful_ones_fall_and_null_players_stay_between():
    """On U(S) = c + sum w_i the expected gradient in logit i is p_i (1 - p_i) w_i."""
    result = dvrl(additive(), 3200, seed=0, progress=False)
    values = result.values
    assert result.info["features"] == "players (one logit each)"  # a game without data: a table of logits
    assert values[HELPFUL].min() > values[NULL].max()
    assert values[NULL].min() > values[HARMFUL].max()
    assert np.all(np.abs(values[NULL] - 0.5) < 0.15)  # moved by noise only
    assert values[HELPFUL].min() > 0.6 and values[HARMFUL].max() < 0.4
    assert result.n_evaluations == result.n_samples == 3200 and result.info["steps"] == 100


@pytest.mark.parametrize("baseline", ["batch", "moving_average"])
def test_a_game_where_no_player_matters_leaves_every_probability_at_one_half(baseline):
    """Every reward is 0 (the batch baseline, or a moving average of a constant): no step moves anything."""
    game = as_game(lambda masks: np.full(len(masks), 0.7), 12, vectorized=True)
    result = dvrl(game, 320, seed=0, baseline=baseline, progress=False)
    np.testing.assert_array_equal(result.values, 0.5)


def test_the_exploration_penalty_keeps_the_mean_selection_probability_below_the_threshold():
    """U(S) = |S|: every player helps, so every p_i rises; the penalty stops the mean at eta (0.9 by default)."""
    game = as_game(lambda masks: masks.sum(axis=1).astype(float), 20, vectorized=True)
    held = dvrl(game, 6400, seed=0, progress=False, learning_rate=0.05)
    free = dvrl(game, 6400, seed=0, progress=False, learning_rate=0.05, threshold=1.0)  # 1: no penalty
    assert 0.8 < held.values.mean() < 0.93
    assert free.values.mean() > 0.97
    assert held.info["selection_trace"].max() < 0.93  # never left the band by more than a step


def test_flipped_labels_get_lower_values_than_clean_ones():
    """Logistic regression on two Gaussian classes, 4 of 80 labels flipped, negative log-loss on clean test data."""
    X, y, X_test, y_test, flipped = flipped_label_task(1.0)
    game = ModelUtility(LogisticRegression(), X, y, X_test, y_test, metric="neg_log_loss", fast=True)
    is_flipped = np.isin(np.arange(80), flipped)
    result = dvrl(game, 1600, seed=0, progress=False)
    assert result.info["features"] == "x (2) + one-hot y (2) + marginal |y - f_val(x)| (2)"
    assert roc_auc_score(is_flipped, -result.values) > 0.9
    # without the marginal signal the reward alone must teach the network the x-y interaction
    alone = dvrl(game, 1600, seed=0, progress=False, marginal=False)
    assert alone.info["features"] == "x (2) + one-hot y (2)"
    assert roc_auc_score(is_flipped, -alone.values) > 0.85


def test_each_step_is_one_call_of_evaluate():
    game = CountingGame(additive())
    result = dvrl(game, 330, seed=0, batch_size=32, progress=False)  # 10 steps; the remainder is not spent
    assert game.calls == 10 and game.rows == 320 == result.n_evaluations
    assert result.info["utility_trace"].shape == result.info["selection_trace"].shape == (10,)


def test_given_features_are_standardised_and_used():
    """Features that tell the harmful players apart: a logistic estimator on them separates the three groups."""
    features = np.repeat(np.array([[1.0], [0.0], [-1.0]]) * 50.0, 8, axis=0) + 7.0  # scale and offset drop out
    values = dvrl(additive(), 1600, seed=0, features=features, hidden=(), progress=False).values
    assert values[HELPFUL].min() > values[NULL].max() >= values[NULL].min() > values[HARMFUL].max()
    np.testing.assert_allclose(values[NULL], values[NULL][0])  # one feature value: one probability


def test_the_default_features_of_a_model_utility():
    X, y, X_test, y_test, _ = flipped_label_task(1.0)
    game = ModelUtility(LogisticRegression(), X, y, X_test, y_test)
    F = dvrl_features(game)
    assert F.shape == (80, 6)
    np.testing.assert_allclose(F.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(F.std(axis=0), 1.0)
    assert dvrl_features(game, marginal=False).shape == (80, 4)
    assert dvrl_features(additive()) is None


@pytest.mark.parametrize("sizes, table", [((5, 7, 3, 1), False), ((6, 1), False), ((9, 1), True)])
def test_the_hand_written_gradient_matches_finite_differences(sizes, table):
    net = _Network(sizes, table=table)
    rng = np.random.default_rng(0)
    theta = rng.normal(size=net.n_params)
    F = None if table else rng.normal(size=(9, sizes[0]))
    weights = rng.normal(size=9)

    def loss(t):
        return float(weights @ np.tanh(net.forward(t, F)[0]))

    logits, inputs = net.forward(theta, F)
    grad = net.backward(theta, inputs, weights * (1 - np.tanh(logits) ** 2))
    step = 1e-6
    numeric = np.array([(loss(theta + step * e) - loss(theta - step * e)) / (2 * step) for e in np.eye(theta.size)])
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)


def test_an_interrupted_run_resumes_from_its_checkpoint_to_the_same_bits(tmp_path):
    game = additive()
    whole = dvrl(game, 640, seed=5, progress=False)
    path = tmp_path / "dvrl.ckpt"
    stopped = InterruptingGame(game, after=8)
    with pytest.raises(Interrupted):
        dvrl(stopped, 640, seed=5, checkpoint=path, checkpoint_interval=3600, progress=False)
    assert path.is_file() and stopped.rows == 7 * 32  # written at the interruption, whatever the interval
    resumed_game = CountingGame(game)
    resumed = dvrl(resumed_game, 640, seed=None, checkpoint=path, progress=False)  # the file's seed
    assert resumed.seed == 5 and resumed.info["resumed_steps"] == 7 and resumed_game.rows == 13 * 32
    np.testing.assert_array_equal(resumed.values, whole.values)
    np.testing.assert_array_equal(resumed.info["utility_trace"], whole.info["utility_trace"])
    for baseline in ("moving_average",):  # the moving average is part of the state
        path2 = tmp_path / "ma.ckpt"
        with pytest.raises(Interrupted):
            dvrl(InterruptingGame(game, after=5), 640, seed=5, baseline=baseline, checkpoint=path2, progress=False)
        np.testing.assert_array_equal(dvrl(game, 640, seed=5, baseline=baseline, checkpoint=path2,
                                           progress=False).values,
                                      dvrl(game, 640, seed=5, baseline=baseline, progress=False).values)


def test_a_checkpoint_of_another_call_is_refused_before_any_evaluation(tmp_path):
    path = tmp_path / "dvrl.ckpt"
    dvrl(additive(), 320, seed=0, checkpoint=path, progress=False)
    written = path.read_bytes()
    for kwargs in ({"learning_rate": 0.02}, {"seed": 1}, {"batch_size": 16}, {"features": np.eye(24)[:, :3]}):
        game = CountingGame(additive())
        with pytest.raises(CheckpointError, match="different run"):
            dvrl(game, **{"budget": 320, "seed": 0, **kwargs}, checkpoint=path, progress=False)
        assert game.rows == 0 and path.read_bytes() == written


def test_the_progress_bar_counts_every_evaluation_and_changes_no_number(capsys):
    shown = dvrl(additive(), 320, seed=0, progress=True)
    err = capsys.readouterr().err
    assert "DVRL: 100%" in err and "320/320" in err
    np.testing.assert_array_equal(shown.values, dvrl(additive(), 320, seed=0, progress=False).values)


@pytest.mark.parametrize("kwargs, name, error", [
    ({"budget": 0}, "budget", ValueError),
    ({"budget": 31}, "budget", ValueError),  # less than one step of 32
    ({"budget": 64.5}, "budget", TypeError),
    ({"batch_size": 1}, "batch_size", ValueError),  # the batch baseline needs two coalitions
    ({"batch_size": "8"}, "batch_size", TypeError),
    ({"hidden": 100}, "hidden", TypeError),
    ({"hidden": "100"}, "hidden", TypeError),
    ({"hidden": (100, 0)}, "hidden", ValueError),
    ({"learning_rate": 0.0}, "learning_rate", ValueError),
    ({"learning_rate": np.nan}, "learning_rate", ValueError),
    ({"threshold": 0.5}, "threshold", ValueError),
    ({"threshold": 1.2}, "threshold", ValueError),
    ({"exploration_weight": -1.0}, "exploration_weight", ValueError),
    ({"baseline": "mean"}, "baseline", ValueError),
    ({"baseline": "moving_average", "window": 0}, "window", ValueError),
    ({"features": np.ones((5, 2))}, "features", ValueError),
    ({"features": np.full((24, 2), np.nan)}, "features", ValueError),
    ({"features": [["a"]] * 24}, "features", TypeError),
    ({"features": np.ones((24, 2)), "marginal": False}, "marginal", ValueError),
    ({"marginal": "yes"}, "marginal", TypeError),
    ({"marginal": True}, "marginal", ValueError),  # an additive game has no data to fit
    ({"seed": -1}, "seed", ValueError),
    ({"progress": "yes"}, "progress", TypeError),
    ({"checkpoint": 3}, "checkpoint", TypeError),
    ({"checkpoint": "x.ckpt", "checkpoint_interval": -1}, "checkpoint_interval", ValueError),
])
def test_bad_inputs_are_refused_before_any_evaluation(kwargs, name, error):
    game = CountingGame(additive())
    with pytest.raises(error, match=name):
        dvrl(game, **{"budget": 320, "progress": False, **kwargs})
    assert game.rows == 0


def test_the_game_s_own_error_comes_out_and_the_steps_before_it_are_kept(tmp_path):
    class Boom(RuntimeError):
        pass

    class FailsOnce(CountingGame):
        def _evaluate(self, masks):
            if self.calls == 2 and not self.failed:
                self.failed = True
                raise Boom("the game's own error")
            return super()._evaluate(masks)

    game = FailsOnce(additive())
    game.failed = False
    path = tmp_path / "dvrl.ckpt"
    with pytest.raises(Boom, match="own error"):
        dvrl(game, 320, seed=0, checkpoint=path, checkpoint_interval=3600, progress=False)
    resumed = dvrl(game, 320, seed=0, checkpoint=path, progress=False)
    assert resumed.info["resumed_steps"] == 2 and game.rows == 320
    np.testing.assert_array_equal(resumed.values, dvrl(additive(), 320, seed=0, progress=False).values)


def test_a_function_is_no_game():
    with pytest.raises(TypeError, match="game"):
        dvrl(lambda mask: 0.0, 320)
