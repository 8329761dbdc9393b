"""AME (Lin et al. 2022): a Lasso of U(S) on random inclusion indicators; exact on additive games as alpha -> 0."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from games import (AdditiveGame, CountingGame, Interrupted, InterruptingGame, flipped_label_task,
                   logistic_game_on_cpu_device)
from shapley_research import CheckpointError, LogisticRegressionUtility, ame, as_game
from shapley_research.estimators import ame_coalitions


def sparse_weights(n: int = 30) -> np.ndarray:
    weights = np.zeros(n)
    weights[[2, 5, 9, 17]] = [1.0, -0.5, 2.0, 0.75]
    return weights


def test_least_squares_recovers_an_additive_game_exactly():
    """alpha = 0: the regression of c + sum_{i in S} w_i on the indicators is exact, offset aside."""
    weights = sparse_weights()
    result = ame(AdditiveGame(weights, offset=0.3), 300, seed=1, alpha=0.0)
    np.testing.assert_allclose(result.values, weights, rtol=0, atol=1e-10)
    assert result.method == "ame" and result.n_evaluations == result.n_samples == 300
    assert result.seed == 1 and result.stderr is None and result.info["alpha"] == 0.0


@pytest.mark.parametrize("solver", ["lars", "coordinate_descent"])
def test_the_lasso_shrinks_towards_zero_and_finds_the_support(solver):
    weights = sparse_weights()
    result = ame(AdditiveGame(weights), 400, seed=2, solver=solver)  # cross-validated penalty
    assert result.info["solver"] == solver
    assert result.info["alpha"] > 0  # noiseless utilities: the least error is at the path's end, 1e-12 of its start
    support = weights != 0
    np.testing.assert_allclose(result.values[~support], 0.0, rtol=0, atol=1e-12)  # zero to rounding
    np.testing.assert_allclose(result.values[support], weights[support], atol=0.05)
    assert np.all(np.abs(result.values[support]) <= np.abs(weights[support]) + 1e-9)  # shrunk, not grown


@pytest.mark.parametrize("solver", ["lars", "coordinate_descent"])
def test_a_large_penalty_sets_every_value_to_zero(solver):
    result = ame(AdditiveGame(sparse_weights()), 200, seed=3, alpha=1e3, solver=solver)
    np.testing.assert_array_equal(result.values, 0.0)


def test_the_exact_path_and_coordinate_descent_solve_the_same_lasso():
    """At one penalty both solvers minimise the same objective: the same values to coordinate descent's tolerance."""
    game = as_game(lambda m: (m[:, 0] & m[:, 1]).astype(float) + m[:, 2] + 0.1 * m[:, 3:].sum(axis=1), 12,
                   vectorized=True)
    path, grid = (ame(game, 600, seed=6, alpha=0.01, solver=solver, max_iter=100_000)
                  for solver in ("lars", "coordinate_descent"))
    np.testing.assert_allclose(path.values, grid.values, rtol=0, atol=1e-4)
    assert np.all(path.values[3:] < path.values[2])  # not vacuous: the values differ from player to player


def test_a_pair_interaction_gets_its_average_marginal_effect():
    """U(S) = 1[0 and 1 in S] + 1[2 in S]: the AME of player 0 is E_p[p] = 0.5 on the default grid, of player 2 is 1."""
    game = as_game(lambda m: (m[:, 0] & m[:, 1]).astype(float) + m[:, 2], 6, vectorized=True)
    result = ame(game, 2000, seed=4, alpha=0.0)
    np.testing.assert_allclose(result.values[:3], [0.5, 0.5, 1.0], atol=0.05)
    np.testing.assert_allclose(result.values[3:], 0.0, atol=0.05)


def test_the_opendataval_design_ranks_the_heavy_players_first():
    weights = sparse_weights()
    result = ame(AdditiveGame(weights), 400, seed=5, design="opendataval")
    assert set(np.argsort(-result.values)[:3]) == {2, 9, 17}
    assert result.values[5] < 0 and result.info["design"] == "opendataval"


@pytest.mark.parametrize("solver", ["lars", "coordinate_descent"])
def test_a_constant_game_has_only_null_players(solver):
    result = ame(AdditiveGame(np.zeros(30), offset=0.5), 200, seed=0, solver=solver)  # no utility varies
    np.testing.assert_array_equal(result.values, 0.0)


def test_same_seed_same_bits_any_chunk_size():
    game = AdditiveGame(sparse_weights())
    first = ame(game, 200, seed=7)
    np.testing.assert_array_equal(first.values, ame(game, 200, seed=7).values)
    np.testing.assert_array_equal(first.values, ame(game, 200, seed=7, chunk_size=13).values)
    assert not np.array_equal(first.values, ame(game, 200, seed=8).values)


def test_the_same_bits_for_any_n_jobs_and_a_checkpointed_parallel_run_resumes(tmp_path):
    game = AdditiveGame(sparse_weights())
    alone = ame(game, 240, seed=4)
    parallel = ame(game, 240, seed=4, n_jobs=2)  # about four chunks per worker, evaluated by joblib's workers
    np.testing.assert_array_equal(parallel.values, alone.values)
    path = tmp_path / "ame.ckpt"
    with pytest.raises(Interrupted):
        ame(InterruptingGame(game, after=3), 240, seed=4, chunk_size=40, checkpoint=path)
    resumed = ame(game, 240, seed=4, chunk_size=40, checkpoint=path, n_jobs=2)
    assert resumed.info["resumed_samples"] == 80
    np.testing.assert_array_equal(resumed.values, alone.values)


def test_the_coalitions_use_the_grid_in_equal_shares():
    masks, p = ame_coalitions(0, 4000, 50)
    assert masks.dtype == bool and masks.shape == (4000, 50)
    for q in (0.2, 0.4, 0.6, 0.8):
        assert (p == q).sum() == 1000
        assert masks[p == q].mean() == pytest.approx(q, abs=0.01)


def test_the_progress_bar_counts_every_evaluation_and_changes_no_number(capsys):
    game = AdditiveGame(sparse_weights())
    shown = ame(game, 250, seed=0, chunk_size=100, progress=True)
    err = capsys.readouterr().err
    assert "AME: 100%" in err and "250/250" in err
    np.testing.assert_array_equal(shown.values, ame(game, 250, seed=0, progress=False).values)
    assert capsys.readouterr().err == ""


def test_an_interrupted_run_resumes_from_its_checkpoint_to_the_same_values(tmp_path):
    game = AdditiveGame(sparse_weights())
    whole = ame(game, 250, seed=3, chunk_size=50)
    path = tmp_path / "ame.ckpt"
    stopped = InterruptingGame(game, after=3)
    with pytest.raises(Interrupted):
        ame(stopped, 250, seed=3, chunk_size=50, checkpoint=path, checkpoint_interval=3600)
    assert stopped.rows == 100 and path.is_file()  # written at the interruption, whatever the interval
    resumed_game = CountingGame(game)
    resumed = ame(resumed_game, 250, seed=None, checkpoint=path, alpha=0.0)  # the file's seed; another Lasso
    assert resumed_game.rows == 150 and resumed.seed == 3 and resumed.info["resumed_samples"] == 100
    np.testing.assert_array_equal(resumed.values, ame(game, 250, seed=3, alpha=0.0).values)
    again = ame(CountingGame(game), 250, seed=3, checkpoint=path)  # finished: nothing left to evaluate
    np.testing.assert_array_equal(again.values, whole.values)


def test_a_checkpoint_of_another_call_is_refused_before_any_evaluation(tmp_path):
    path = tmp_path / "ame.ckpt"
    ame(AdditiveGame(sparse_weights()), 100, seed=0, checkpoint=path)
    written = path.read_bytes()
    for kwargs in ({"budget": 120}, {"probabilities": [0.5]}, {"seed": 1}):
        game = CountingGame(AdditiveGame(sparse_weights()))
        with pytest.raises(CheckpointError, match="different run"):
            ame(game, **{"budget": 100, "seed": 0, **kwargs}, checkpoint=path)
        assert game.rows == 0 and path.read_bytes() == written


def test_evaluations_are_batched_through_evaluate():
    game = CountingGame(AdditiveGame(sparse_weights()))
    ame(game, 250, seed=0, chunk_size=100)
    assert game.rows == 250 and game.calls == 3


@pytest.mark.parametrize("kwargs, name, error", [
    ({"budget": 1}, "budget", ValueError),
    ({"budget": 2.5}, "budget", TypeError),
    ({"probabilities": [0.0, 0.5]}, "probabilities", ValueError),
    ({"probabilities": []}, "probabilities", ValueError),
    ({"probabilities": "ab"}, "probabilities", TypeError),
    ({"alpha": -1.0}, "alpha", ValueError),
    ({"cv": 1}, "cv", ValueError),
    ({"budget": 3, "cv": 5}, "budget", ValueError),
    ({"design": "rows"}, "design", ValueError),
    ({"solver": "cd"}, "solver", ValueError),
    ({"chunk_size": 0}, "chunk_size", ValueError),
    ({"n_jobs": 0}, "n_jobs", ValueError),
    ({"n_jobs": 1.5}, "n_jobs", TypeError),
    ({"seed": -1}, "seed", ValueError),
    ({"progress": "yes"}, "progress", TypeError),
    ({"checkpoint": 3}, "checkpoint", TypeError),
    ({"checkpoint": "x.ckpt", "checkpoint_interval": -1}, "checkpoint_interval", ValueError),
])
def test_bad_inputs_are_refused_before_any_evaluation(kwargs, name, error):
    game = CountingGame(AdditiveGame(sparse_weights()))
    arguments = {"budget": 100, **kwargs}
    with pytest.raises(error, match=name):
        ame(game, **arguments)
    assert game.rows == 0


def test_a_function_is_no_game():
    with pytest.raises(TypeError, match="game"):
        ame(lambda mask: 0.0, 10)


@pytest.mark.slow
def test_flipped_labels_get_the_lowest_values_on_a_separable_task():
    X, y_noisy, X_test, y_test, flipped = flipped_label_task(2.0)
    game = LogisticRegressionUtility(X, y_noisy, X_test, y_test, metric="neg_log_loss")
    values = ame(game, 2000, seed=0).values
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(np.isin(np.arange(80), flipped), -values) > 0.9


def test_a_game_on_a_device_is_refused_workers():
    game = logistic_game_on_cpu_device()
    game.device = "cuda:0"  # an accelerator (refused on the attribute, before anything runs on it)
    with pytest.raises(ValueError, match="ame: n_jobs=2 with LogisticRegressionUtility on device 'cuda:0'"):
        ame(game, 100, seed=0, n_jobs=2)


def test_fewer_coalitions_than_players_warn_that_most_values_are_zero():
    game = AdditiveGame(np.linspace(-1.0, 1.0, 60))
    with pytest.warns(UserWarning, match=r"budget=40 coalitions for 60 players: the Lasso gives at most 39"):
        ame(game, 40, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        ame(game, 60, seed=0)  # one coalition per player: no warning
