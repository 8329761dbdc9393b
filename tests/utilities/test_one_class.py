"""A one-class training set is refused by name for a classifier, accepted for a regressor (issue 34, item 12)."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression

from shapley_research import ModelUtility, data_oob

rng = np.random.default_rng(0)
X = rng.normal(size=(20, 3))
ZEROS = np.zeros(20)


def test_model_utility_refuses_a_single_class_naming_it():
    with pytest.raises(ValueError, match=r"y_train holds a single class \(0\.0\) in all its 20 labels: a "
                                         "classifier needs at least two classes"):
        ModelUtility(LogisticRegression(), X, ZEROS, X, np.array([0, 1] * 10))
    with pytest.raises(ValueError, match=r"y_train holds a single class \('spam'\)"):
        ModelUtility(LogisticRegression(), X, ["spam"] * 20, X, ["spam", "ham"] * 10)


def test_data_oob_refuses_a_single_class():
    with pytest.raises(ValueError, match=r"y_train holds a single class \(0\.0\)"):
        data_oob(LogisticRegression(), X, ZEROS, n_estimators=5, seed=0)


def test_constant_regression_targets_are_accepted():
    game = ModelUtility(LinearRegression(), X, ZEROS, X, ZEROS, metric="neg_mean_squared_error")
    assert game(list(range(20))) == 0.0
    assert data_oob(LinearRegression(), X, ZEROS, n_estimators=30, seed=0).values.shape == (20,)


def test_two_classes_still_pass():
    y = np.array([0, 1] * 10)
    assert ModelUtility(LogisticRegression(), X, y, X, y, fast=False).n_players == 20


class TestTorch:
    torch = pytest.importorskip("torch")

    def test_a_single_label_is_named(self):
        from shapley_research import TorchModelUtility

        with pytest.raises(ValueError, match=r"y_train holds a single class \('cat'\)"):
            TorchModelUtility(self.torch.nn.Linear(3, 2), X, ["cat"] * 20, X, ["cat", "dog"] * 10)

    def test_the_output_shape_message_names_the_labels_in_unit_order(self):
        from shapley_research import TorchModelUtility

        y = np.array(["dog", "cat", "emu"] * 6 + ["dog", "cat"])
        with pytest.raises(ValueError, match=r"y_train has 3 classes \('cat', 'dog', 'emu', in the sorted order "
                                             r"of the output units\)"):
            TorchModelUtility(self.torch.nn.Linear(3, 2), X, y, X, y)

    def test_output_unit_k_is_the_kth_sorted_label(self):
        """A module whose unit 0 always wins predicts the smallest label, whatever order the labels come in."""
        from shapley_research import TorchModelUtility

        module = self.torch.nn.Linear(3, 2)
        with self.torch.no_grad():
            module.weight.zero_()
            module.bias.copy_(self.torch.tensor([50.0, -50.0]))
        y = np.array(["dog", "cat"] * 10)  # "dog" first
        game = TorchModelUtility(module, X, y, X, y, steps=1, learning_rate=1e-9, optimizer="sgd")
        assert set(game.predict(np.ones((1, 20)))[0]) == {"cat"}
