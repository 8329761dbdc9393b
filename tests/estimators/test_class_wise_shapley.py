"""Class-wise Shapley (Schoch et al. 2022): efficiency within a class, null players, the games it accepts."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.neighbors import KNeighborsClassifier

from games import flipped_label_task, logistic_game_on_cpu_device
from shapley_research import (CheckpointError, KNNUtility, LogisticRegressionUtility, ModelUtility, as_game,
                              class_wise_shapley)
from shapley_research.estimators import class_wise_predictions


def class_wise_utility(model, X, y, X_test, y_test, label) -> float:
    """a_S(T_c) exp(a_S(T_-c)) of ``model`` fitted on (X, y), counted independently of the package."""
    right = model.fit(X, y).predict(X_test) == y_test
    return right[y_test == label].sum() / len(y_test) * np.exp(right[y_test != label].sum() / len(y_test))


def one_context_data():
    """Six class-0 points, one class-1 point (every context of class 0 is that point); the last class-0
    point lies far from every test point, beyond the class-1 point: a 1-NN never predicts from it."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (5, 2)), [[60.0, 60.0]], [[2.5, 2.5]]])
    y = np.array([0, 0, 0, 0, 0, 0, 1])
    X_test = np.vstack([rng.normal(0, 1, (8, 2)), rng.normal(2.5, 0.5, (4, 2))])
    y_test = np.array([0] * 8 + [1] * 4)
    return X, y, X_test, y_test


def nearest_neighbour_game():
    X, y, X_test, y_test = one_context_data()
    return ModelUtility(KNeighborsClassifier(n_neighbors=1), X, y, X_test, y_test, fast=False), X, y, X_test, y_test


def test_efficiency_within_a_class_for_a_fixed_context():
    """The class-0 values sum to U(D_0 | {6}) - U(empty | {6}), computed here by scikit-learn."""
    game, X, y, X_test, y_test = nearest_neighbour_game()
    result = class_wise_shapley(game, 40, seed=0, normalize=False)
    full = class_wise_utility(KNeighborsClassifier(n_neighbors=1), X, y, X_test, y_test, 0)
    alone = 0.0  # U(empty | {6}): the class-1 point alone predicts class 1 everywhere, so no class-0 test point
    assert result.values[y == 0].sum() == pytest.approx(full - alone, abs=1e-12)
    assert result.info["permutations"][0] >= 2 and result.n_evaluations <= 40


def test_a_point_no_prediction_ever_uses_is_a_null_player():
    game, X, y, X_test, y_test = nearest_neighbour_game()
    result = class_wise_shapley(game, 60, seed=1, normalize=False)
    assert result.values[5] == 0.0 and result.stderr[5] == 0.0
    assert np.count_nonzero(result.values[:5]) >= 3  # the property can fail: the other class-0 points matter


def test_normalisation_makes_each_class_sum_to_its_in_class_accuracy():
    """Same samples with and without (the normalising fit aside): a class with a positive sum is scaled to a_D(T_c),
    any other class is left as it is (a negative factor would reverse its ranking)."""
    game, X, y, X_test, y_test = nearest_neighbour_game()
    result = class_wise_shapley(game, 41, seed=2)
    raw = class_wise_shapley(game, 40, seed=2, normalize=False)
    right = KNeighborsClassifier(n_neighbors=1).fit(X, y).predict(X_test) == y_test
    for label in (0, 1):
        members = y == label
        if raw.values[members].sum() > 0:
            assert result.values[members].sum() == pytest.approx(right[y_test == label].sum() / len(y_test))
            np.testing.assert_allclose(result.values[members], raw.values[members] * result.info["factors"][label])
        else:
            np.testing.assert_array_equal(result.values[members], raw.values[members])
    assert result.n_evaluations == raw.n_evaluations + 1


def test_predictions_are_the_games_own():
    """The batched learner's predictions score exactly as the game does (accuracy)."""
    rng = np.random.default_rng(3)
    X, X_test = rng.normal(size=(30, 3)), rng.normal(size=(20, 3))
    y, y_test = (X[:, 0] > 0).astype(int), (X_test[:, 0] > 0).astype(int)
    masks = rng.random((25, 30)) < 0.5
    for game in (LogisticRegressionUtility(X, y, X_test, y_test),
                 ModelUtility(LogisticRegression(), X, y, X_test, y_test, fast=True)):
        predictions = class_wise_predictions(game, masks)
        np.testing.assert_array_equal((predictions == y_test).mean(axis=1), game.evaluate(masks))
    per_fit = ModelUtility(LogisticRegression(), X, y, X_test, y_test, fast=False)
    np.testing.assert_array_equal((class_wise_predictions(per_fit, masks[:5]) == y_test).mean(axis=1),
                                  per_fit.evaluate(masks[:5]))


@pytest.mark.slow
def test_same_seed_same_bits_any_chunk_size():
    game = nearest_neighbour_game()[0]
    first = class_wise_shapley(game, 40, seed=4)
    np.testing.assert_array_equal(first.values, class_wise_shapley(game, 40, seed=4).values)
    np.testing.assert_array_equal(first.values, class_wise_shapley(game, 40, seed=4, chunk_size=3).values)
    assert not np.array_equal(first.values, class_wise_shapley(game, 40, seed=5).values)


def test_the_progress_bar_counts_every_evaluation_and_changes_no_number(capsys):
    game = nearest_neighbour_game()[0]
    shown = class_wise_shapley(game, 40, seed=4, chunk_size=3, progress=True)
    err = capsys.readouterr().err
    rounds = shown.n_evaluations - 1  # the rounds' fits; the normalising fit is made before them
    assert "class-wise Shapley: 100%" in err and f"{rounds}/{rounds}" in err and "rounds=4" in err
    np.testing.assert_array_equal(shown.values, class_wise_shapley(game, 40, seed=4, progress=False).values)
    assert capsys.readouterr().err == ""


class StoppedKNN(KNeighborsClassifier):
    """A 1-NN whose fits stop (as by Ctrl-C) once ``fits_left`` reaches 0; ``fits`` counts the fits made."""

    fits_left: int | None = None
    fits = 0

    def fit(self, X, y):
        if StoppedKNN.fits_left is not None:
            if StoppedKNN.fits_left == 0:
                raise KeyboardInterrupt
            StoppedKNN.fits_left -= 1
        StoppedKNN.fits += 1
        return super().fit(X, y)


def three_class_game():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    rows = np.random.default_rng(1).permutation(150)
    train, test = rows[:30], rows[30:60]
    return ModelUtility(StoppedKNN(n_neighbors=1), X[train], y[train], X[test], y[test], fast=False)


def test_an_interrupted_run_resumes_from_its_checkpoint_to_the_same_values(tmp_path):
    """Three rounds of 33 fits, one per batch, stopped within the second: the file keeps the first."""
    game, path = three_class_game(), tmp_path / "cs.ckpt"
    StoppedKNN.fits_left = None
    whole = class_wise_shapley(game, 110, seed=7, chunk_size=5, batch_size=1)
    StoppedKNN.fits_left = 45  # the normalising fit, 33 of the first round, 11 of the second
    with pytest.raises(KeyboardInterrupt):
        class_wise_shapley(game, 110, seed=7, chunk_size=5, batch_size=1, checkpoint=path, checkpoint_interval=3600)
    StoppedKNN.fits_left, StoppedKNN.fits = None, 0
    resumed = class_wise_shapley(game, 110, seed=None, batch_size=1, checkpoint=path)  # the file's seed
    assert resumed.seed == 7 and resumed.info["resumed_samples"] == 3 and sum(whole.info["permutations"]) == 9
    assert StoppedKNN.fits == 1 + 2 * 33  # the normalising fit and the two rounds the file did not hold
    np.testing.assert_array_equal(resumed.values, whole.values)
    np.testing.assert_array_equal(resumed.stderr, whole.stderr)
    assert resumed.info["model_fits"] == whole.info["model_fits"]
    StoppedKNN.fits = 0
    again = class_wise_shapley(game, 110, seed=7, batch_size=1, checkpoint=path)  # finished: the normalising fit
    assert StoppedKNN.fits == 1 and np.array_equal(again.values, whole.values)


def test_the_same_bits_for_any_n_jobs():
    game = nearest_neighbour_game()[0]
    alone = class_wise_shapley(game, 60, seed=2, batch_size=1)
    parallel = class_wise_shapley(game, 60, seed=2, batch_size=1, n_jobs=2)  # batches run by joblib's workers
    for key in ("values", "stderr"):
        np.testing.assert_array_equal(getattr(parallel, key), getattr(alone, key))
    assert parallel.info == alone.info


def test_a_parallel_run_stopped_with_batches_in_flight_resumes_to_the_same_values(tmp_path, monkeypatch):
    """Stopped (as by Ctrl-C) just after its second batch is merged, while two worker threads hold the next
    ones: the checkpoint keeps the two merged batches, and the resumed run gives the uninterrupted values."""
    from joblib import parallel_config

    from shapley_research.estimators._sampling import _loop

    game, path = three_class_game(), tmp_path / "cs.ckpt"
    StoppedKNN.fits_left = None
    whole = class_wise_shapley(game, 200, seed=7, batch_size=1)
    merged_in_order = _loop.merged_in_order

    def merge_two_then_stop(*args):
        for taken, snapshot in enumerate(merged_in_order(*args), start=1):
            yield snapshot
            if taken == 2:
                raise KeyboardInterrupt

    monkeypatch.setattr(_loop, "merged_in_order", merge_two_then_stop)
    with parallel_config(backend="threading"), pytest.raises(KeyboardInterrupt):
        class_wise_shapley(game, 200, seed=7, batch_size=1, checkpoint=path, checkpoint_interval=3600, n_jobs=2)
    monkeypatch.undo()
    resumed = class_wise_shapley(game, 200, seed=None, batch_size=1, checkpoint=path)
    assert resumed.info["resumed_samples"] == 2 * 3 and sum(whole.info["permutations"]) == 6 * 3
    np.testing.assert_array_equal(resumed.values, whole.values)
    assert resumed.info["model_fits"] == whole.info["model_fits"]


def test_a_checkpoint_of_another_call_is_refused_before_any_fit(tmp_path):
    game, path = three_class_game(), tmp_path / "cs.ckpt"
    StoppedKNN.fits_left = None
    class_wise_shapley(game, 100, seed=0, checkpoint=path)  # three rounds in one batch
    written = path.read_bytes()
    for kwargs in ({"budget": 60}, {"normalize": False}, {"seed": 1}, {"batch_size": 1}):
        StoppedKNN.fits = 0
        with pytest.raises(CheckpointError, match="different run|plans 1 rounds"):
            class_wise_shapley(game, **{"budget": 100, "seed": 0, **kwargs}, checkpoint=path)
        assert StoppedKNN.fits == 0 and path.read_bytes() == written


def test_a_larger_budget_continues_a_finished_run(tmp_path):
    game, path = three_class_game(), tmp_path / "cs.ckpt"
    StoppedKNN.fits_left = None
    class_wise_shapley(game, 100, seed=0, batch_size=1, checkpoint=path)
    StoppedKNN.fits = 0
    longer = class_wise_shapley(game, 200, seed=0, batch_size=1, checkpoint=path)
    assert StoppedKNN.fits == 1 + 3 * 33 and longer.info["resumed_samples"] == 9
    np.testing.assert_array_equal(longer.values, class_wise_shapley(game, 200, seed=0, batch_size=1).values)


def test_a_run_ended_on_a_partial_batch_grows_in_whole_batches(tmp_path):
    """Three rounds in one partial batch (the default batch size), then a larger budget: those rounds stay."""
    game, path = three_class_game(), tmp_path / "cs.ckpt"
    StoppedKNN.fits_left = None
    assert class_wise_shapley(game, 100, seed=0, checkpoint=path).info["permutations"] == [3, 3, 3]
    StoppedKNN.fits = 0
    longer = class_wise_shapley(game, 200, seed=0, checkpoint=path)
    assert longer.info["permutations"] == [6, 6, 6] and longer.info["resumed_samples"] == 9
    assert StoppedKNN.fits == 1 + 3 * 33  # three more rounds of 33 fits, and the normalising fit
    np.testing.assert_array_equal(class_wise_shapley(game, 200, seed=0, checkpoint=path).values, longer.values)


def test_a_precision_target_stops_the_run_at_its_first_batch_meeting_it():
    """A loose target stops at the 30 rounds a standard error needs; a tight one runs to the budget's cap."""
    game = nearest_neighbour_game()[0]
    loose = class_wise_shapley(game, None, seed=3, batch_size=1, target_stderr=1.0)
    assert loose.info["stopped_by"] == "target_stderr" and loose.info["permutations"] == [30, 30]
    assert np.nanmax(loose.stderr) <= 1.0
    tight = class_wise_shapley(game, 1 + 9 * 40, seed=3, batch_size=1, target_stderr=1e-9)
    assert tight.info["stopped_by"] == "budget" and tight.info["permutations"] == [40, 40]
    np.testing.assert_array_equal(class_wise_shapley(game, 1 + 9 * 30, seed=3, batch_size=1).values, loose.values)
    stable = class_wise_shapley(game, 1 + 9 * 200, seed=3, batch_size=10, target_rank_correlation=0.5)
    assert stable.info["stopped_by"] == "target_rank_correlation" and stable.info["permutations"][0] < 200


def test_a_budget_covering_every_coalition_still_samples():
    """Enumerating the game would value it by its own metric, not by class-wise utilities: never done."""
    game = nearest_neighbour_game()[0]
    result = class_wise_shapley(game, 2**7 + 100, seed=0, normalize=False)
    assert result.info["stopped_by"] == "budget" and result.info["permutations"] == [(2**7 + 100) // 9] * 2


class CountingClassifier(BaseEstimator, ClassifierMixin):
    fits = 0

    def fit(self, X, y):
        CountingClassifier.fits += 1
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


@pytest.mark.parametrize("kwargs, name, error", [
    ({"budget": 5}, "budget", ValueError),
    ({"budget": 9}, "budget", ValueError),  # 7 + 2 fits for one permutation of each class, + 1 to normalise
    ({"budget": 1.5}, "budget", TypeError),
    ({"normalize": "yes"}, "normalize", TypeError),
    ({"chunk_size": 0}, "chunk_size", ValueError),
    ({"seed": -2}, "seed", ValueError),
    ({"progress": 1}, "progress", TypeError),
    ({"checkpoint": 3}, "checkpoint", TypeError),
    ({"checkpoint": "x.ckpt", "checkpoint_interval": -1}, "checkpoint_interval", ValueError),
    ({"n_jobs": 0}, "n_jobs", ValueError),
    ({"n_jobs": "all"}, "n_jobs", TypeError),
    ({"batch_size": 0}, "batch_size", ValueError),
    ({"target_stderr": -1.0}, "target_stderr", ValueError),
    ({"target_rank_correlation": 1.5}, "target_rank_correlation", ValueError),
    ({"budget": None}, "budget", TypeError),
])
def test_bad_inputs_are_refused_before_any_fit(kwargs, name, error):
    X, y, X_test, y_test = one_context_data()
    game = ModelUtility(CountingClassifier(), X, y, X_test, y_test, fast=False)
    CountingClassifier.fits = 0
    with pytest.raises(error, match=name):
        class_wise_shapley(game, **{"budget": 100, **kwargs})
    assert CountingClassifier.fits == 0


def test_games_that_train_no_classifier_are_refused():
    X, y, X_test, y_test = one_context_data()
    for game in (as_game(lambda m: float(m.sum()), 7), KNNUtility(X, y, X_test, y_test, 1)):
        with pytest.raises(TypeError, match="game must be a ModelUtility"):
            class_wise_shapley(game, 100)
    regression = ModelUtility(Ridge(), X, y.astype(float), X_test, y_test.astype(float), metric="r2", fast=False)
    with pytest.raises(ValueError, match="classification"):
        class_wise_shapley(regression, 100)


@pytest.mark.slow
def test_flipped_labels_get_low_values():
    X, y, X_test, y_test, flipped = flipped_label_task(2.5)
    game = LogisticRegressionUtility(X, y, X_test, y_test)
    values = class_wise_shapley(game, 4000, seed=0).values
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(np.isin(np.arange(80), flipped), -values) > 0.8


@pytest.mark.slow
def test_a_torch_utility_predicts_as_it_scores():
    torch = pytest.importorskip("torch")
    from shapley_research import TorchModelUtility

    X, y, X_test, y_test = one_context_data()
    game = TorchModelUtility(torch.nn.Linear(2, 2), X, y, X_test, y_test, steps=20)
    masks = np.random.default_rng(6).random((6, 7)) < 0.6
    np.testing.assert_array_equal((class_wise_predictions(game, masks) == y_test).mean(axis=1), game.evaluate(masks))
    result = class_wise_shapley(game, 20, seed=0, normalize=False)
    assert np.isfinite(result.values).all() and result.n_evaluations <= 20


def test_a_game_on_a_device_is_refused_workers():
    game = logistic_game_on_cpu_device()
    game.device = "cuda:0"  # an accelerator (refused on the attribute, before anything runs on it)
    with pytest.raises(ValueError, match="class_wise_shapley: n_jobs=2 with LogisticRegressionUtility on device"):
        class_wise_shapley(game, 200, seed=0, n_jobs=2)
