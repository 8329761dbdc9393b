"""One source per rule: the weight check, the routing refusals, the constant model, the degenerate split."""

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression, Ridge

from shapley_research.utilities import TargetInfo
from shapley_research.utilities.learners import LogisticRegressionUtility, RidgeUtility, route_decision
# Internal, no public call returns what these tests check: the shared weight check (the array it returns, and
# TorchModelUtility's wording without the optional torch), split_degenerate's triple, a softmax chunk's take()
from shapley_research._validation import check_weights
from shapley_research.utilities._model_data import split_degenerate
from shapley_research.utilities.learners._softmax import _SoftmaxChunk

X, Y = load_iris(return_X_y=True)
X, Y = X[::3], Y[::3]  # 50 points, 3 classes
N = len(Y)


@pytest.mark.parametrize("weights, error", [
    (np.full((1, N), 0.5), ValueError),
    (np.full((1, N), np.nan), ValueError),
    (np.full((1, N), np.inf), ValueError),
    (-np.ones((1, N), dtype=int), ValueError),
    (np.array([["a"] * N]), TypeError),
    (np.ones((1, N), dtype=complex), TypeError),
    (np.ones((1, N + 1), dtype=bool), ValueError),
])
def test_one_weight_convention_for_learners_and_torch(weights, error):
    learners = [LogisticRegressionUtility(X, Y, X, Y).predict, RidgeUtility(X, Y * 1.0, X, Y * 1.0).predict]
    messages = set()
    for predict in learners:
        with pytest.raises(error) as caught:
            predict(weights)
        messages.add(str(caught.value))
    assert len(messages) == 1  # one wording, named after the argument "masks"
    with pytest.raises(error) as caught:
        check_weights(weights, N, "weights", "TorchModelUtility")
    assert str(caught.value) == "TorchModelUtility: " + messages.pop().replace("masks", "weights", 1)


def test_check_weights_keeps_masks_and_converts_counts():
    masks = np.zeros((2, N), dtype=bool)
    assert check_weights(masks, N) is masks
    counts = check_weights(np.full((2, N), 2.0), N)
    assert counts.dtype == np.int64 and (counts == 2).all()
    assert check_weights(np.ones((2, N), dtype=np.uint8), N).dtype == np.int64


def test_torch_model_utility_uses_the_shared_check():
    pytest.importorskip("torch")
    from torch import nn

    from shapley_research import TorchModelUtility

    game = TorchModelUtility(nn.Linear(4, 3), X, Y, X, Y, steps=2)
    with pytest.raises(ValueError, match="TorchModelUtility: weights must contain only booleans"):
        game.predict(np.full((1, N), 0.5))
    with pytest.raises(TypeError, match="TorchModelUtility: weights must be boolean masks or integer"):
        game.predict(np.array([["a"] * N]))
    empty = np.zeros((2, N), dtype=int)
    empty[1, :3] = 2  # one class only: degenerate, the constant model's label
    np.testing.assert_array_equal(game.predict(empty)[:, 0], [np.bincount(Y).argmax(), Y[0]])


@pytest.mark.parametrize("unit", ["coalition", "bootstrap sample"])
def test_routing_refusals_name_the_unit(unit):
    device = __import__("torch").device("cpu") if pytest.importorskip("torch") else None
    with pytest.raises(ValueError, match=f"fast=False fits LogisticRegression itself on every {unit}"):
        route_decision(LogisticRegression(), "accuracy", False, 10, 4, 3, device=device, unit=unit)
    with pytest.raises(ValueError, match="needs a model with a batched learner, but RandomForestClassifier has none"):
        route_decision(RandomForestClassifier(), "accuracy", "auto", 10, 4, 3, device=device, unit=unit)
    with pytest.raises(ValueError, match=f"has no batched learner: .* to fit Ridge itself on every {unit}"):
        route_decision(Ridge(positive=True), "r2", True, 10, 4, unit=unit)


def test_always_batched_and_task():
    # the cost model sends digits-sized multinomial problems per subset; always_batched does not ask it
    decision = route_decision(LogisticRegression(), None, "auto", 300, 64, 10, always_batched=True,
                              task="classification")
    assert decision.batched and "every coalition" in decision.reason
    decision = route_decision(LogisticRegression(), None, "auto", 300, 64, 10, task="regression")
    assert not decision.batched and "its batched learner is for classification" in decision.reason
    decision = route_decision(LogisticRegression(penalty="l1", solver="saga"), None, "auto", 30, 4, 3,
                              task="regression")
    assert "only the L2 penalty" in decision.reason  # checked with the model's own metric first
    assert not route_decision(Ridge(), "r2", False, 10, 4, always_batched=True).batched


def test_constant_models_match_the_conventions():
    info = TargetInfo(Y, Y, "classification")
    weights = np.zeros((2, N), dtype=int)  # class counts (0, 0, 0) and (2, 1, 1); both rows under min_samples
    weights[1, [np.flatnonzero(Y == k)[0] for k in range(3)]] = (2, 1, 1)
    logistic = LogisticRegressionUtility(X, Y, X, Y, min_samples=5)
    np.testing.assert_array_equal(logistic.predict_proba(weights)[:, 0], [info.prior, [0.5, 0.25, 0.25]])
    Xd, yd = load_diabetes(return_X_y=True)
    weights = np.zeros((2, 10), dtype=int)
    weights[1, :2] = (1, 3)
    ridge = RidgeUtility(Xd[:10], yd[:10], Xd[10:20], yd[10:20], min_samples=5)
    np.testing.assert_array_equal(ridge.predict(weights)[:, 0], [0.0, (yd[0] + 3 * yd[1]) / 4])


def test_split_degenerate_fills_only_degenerate_rows():
    info = TargetInfo(Y, Y, "classification")
    masks = np.zeros((3, N), dtype=bool)
    masks[1, :2] = True
    masks[2] = True
    values, degenerate, counts = split_degenerate(masks, info, "accuracy", "default", 0.25, 1)
    np.testing.assert_array_equal(degenerate, [True, (counts[1] > 0).sum() < 2, False])
    assert values[0] == 0.25 and counts.shape == (3, 3)


def test_take_keeps_all_present_and_the_same_objective():
    """take() never reads ``present`` back (a device wait): a chunk with an absent class keeps its offsets,
    which are 0 on present classes, so the taken chunk's objective is that of a chunk built from its rows."""
    game = LogisticRegressionUtility(X, Y, X, Y)
    masks = np.ones((4, N), dtype=bool)
    masks[3, Y == 2] = False
    counts = game.targets.class_counts(masks)
    chunk = _SoftmaxChunk.from_masks(game._softmax_data, masks, counts, 1.0)
    full = _SoftmaxChunk.from_masks(game._softmax_data, masks[:3], counts[:3], 1.0)
    assert not chunk.all_present and full.all_present
    taken = chunk.take(np.arange(3))
    assert not taken.all_present  # inherited, not recomputed
    assert full.take(np.array([0, 2])).all_present
    theta = np.random.default_rng(0).normal(size=(3, 3, X.shape[1] + 1))
    for mine, fresh in zip(taken.objective(theta), full.objective(theta)):
        assert mine.tobytes() == fresh.tobytes()
