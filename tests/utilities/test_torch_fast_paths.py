"""TorchModelUtility's fast paths: own rows in size-ordered chunks, hand-written MLP gradients, fused Adam, threads.

Each must change the speed only: the same models as the generic path (vmap of
grad on all rows, Adam written out) to rounding in float64, values in the
caller's order, and the caller's torch thread count left as it was.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from shapley_research import TorchModelUtility  # noqa: E402
# Internal kernels of the fast paths (no public path reaches them one by one), and the training seam patched below
from shapley_research.utilities import _torch_model  # noqa: E402
from shapley_research.utilities._torch_mlp import mlp_gradient, mlp_layers  # noqa: E402
from shapley_research.utilities._torch_training import (StackedOptimizer, own_rows, per_model_loss,  # noqa: E402
                                                        size_ordered_chunks, stacked_copies, stacked_gradient)

pytestmark = pytest.mark.slow  # torch.func's first call takes seconds; the rest train small torch models

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}


def classification_data(n_train: int = 40, n_test: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(3, 4))
    y = rng.integers(0, 3, size=n_train + n_test)
    X = centres[y] + rng.normal(size=(n_train + n_test, 4))
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def masks_of_sizes(sizes, n: int, seed: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    masks = np.zeros((len(sizes), n), dtype=bool)
    for row, size in enumerate(sizes):
        masks[row, rng.choice(n, size=size, replace=False)] = True
    masks[:, :6] = True  # every class present: none degenerate
    return masks


# ----------------------------------------------------------------------------- hand-written MLP gradients

@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("own", [True, False])
def test_hand_written_gradients_are_autograd_s(activation, task, own):
    torch.manual_seed(0)
    act = ACTIVATIONS[activation]
    out = 3 if task == "classification" else 1
    model = nn.Sequential(nn.Linear(4, 6), act(), nn.Linear(6, 5, bias=False), act(), nn.Linear(5, out))
    model = model.double().eval().requires_grad_(False)
    initial = {name: value.detach() for name, value in model.named_parameters()}
    layers = mlp_layers(model, list(initial))
    assert layers is not None and [layer.activation for layer in layers] == [act.__name__] * 2 + [None]
    count, rows = 5, 11
    params = {key: value + 0.3 * torch.randn_like(value) for key, value in stacked_copies(initial, count).items()}
    X = torch.randn(count, rows, 4, dtype=torch.float64) if own else torch.randn(rows, 4, dtype=torch.float64)
    shape = X.shape[:-1]
    y = torch.randint(0, 3, shape) if task == "classification" else torch.randn(shape, dtype=torch.float64)
    weights = torch.randint(0, 3, (count, rows)).double()
    weights[0] = 0.0  # no row at all: a zero gradient, as the generic loss clamps the total weight to 1
    expected = stacked_gradient(model, task)(params, {}, weights, X, y)
    got = mlp_gradient(layers, task)(params, {}, weights, X, y)
    assert sorted(got) == sorted(expected)
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=1e-12, atol=1e-14)
    assert not got["0.weight"][0].any()


class MySequential(nn.Sequential):
    pass


def frozen_first_bias() -> nn.Module:
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    model[0].bias.requires_grad_(False)
    return model


def shared_activation() -> nn.Module:
    relu = nn.ReLU()
    return nn.Sequential(nn.Linear(4, 6), relu, nn.Linear(6, 6), relu, nn.Linear(6, 3))


@pytest.mark.parametrize("build", [
    lambda: MySequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3)),  # a subclass may change forward
    lambda: nn.Sequential(nn.Linear(4, 6), nn.LeakyReLU(), nn.Linear(6, 3)),
    lambda: nn.Sequential(nn.Linear(4, 6), nn.ReLU(inplace=True), nn.Linear(6, 3)),
    lambda: nn.Sequential(nn.Linear(4, 6), nn.ReLU()),  # ends with an activation
    lambda: nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 3)),
    shared_activation, frozen_first_bias,
])
def test_other_modules_keep_the_generic_path(build):
    model = build()
    trained = [name for name, value in model.named_parameters() if value.requires_grad]
    assert mlp_layers(model, trained) is None


def test_the_fast_path_is_chosen_for_plain_mlps_only():
    data = classification_data()
    plain = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    assert TorchModelUtility(plain, *data, steps=2)._hand_written
    assert not TorchModelUtility(nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Linear(6, 3)), *data,
                                 steps=2)._hand_written


# ----------------------------------------------------------------------------- own rows and chunks by size

def test_own_rows_gathers_each_row_s_entries_in_order_padded_at_weight_zero():
    weights = np.array([[0, 2, 0, 1, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 3]])
    index, gathered = own_rows(weights)
    np.testing.assert_array_equal(index, [[1, 3, 0, 0, 0], [0, 1, 2, 3, 4], [4, 0, 0, 0, 0]])
    np.testing.assert_array_equal(gathered, [[2, 1, 0, 0, 0], [1, 1, 1, 1, 1], [3, 0, 0, 0, 0]])
    index, gathered = own_rows(np.array([[False, True, True]]))
    np.testing.assert_array_equal(index, [[1, 2]])
    np.testing.assert_array_equal(gathered, [[True, True]])


def brute_force_cost(sizes: np.ndarray, cap: int, overhead: float) -> float:
    """The least sum over chunks of overhead + count * largest size, over every cut of the sorted sizes."""
    ordered, m, best = np.sort(sizes), len(sizes), np.inf
    for cuts in itertools.product([False, True], repeat=m - 1):
        bounds = [0, *[i + 1 for i, cut in enumerate(cuts) if cut], m]
        chunks = [ordered[a:b] for a, b in zip(bounds, bounds[1:])]
        if max(len(chunk) for chunk in chunks) <= cap:
            best = min(best, sum(overhead + len(chunk) * chunk[-1] for chunk in chunks))
    return best


@pytest.mark.parametrize("overhead, cap", [(0.0, 9), (5.0, 9), (30.0, 3), (1e9, 9)])
def test_size_ordered_chunks_are_an_optimal_partition_within_the_capacity(overhead, cap):
    sizes = np.random.default_rng(0).integers(1, 40, size=9)
    chunks = size_ordered_chunks(sizes, lambda rows: np.full(rows.shape, cap), overhead)
    order = np.concatenate(chunks)
    np.testing.assert_array_equal(np.sort(order), np.arange(sizes.size))  # every coalition once
    assert np.all(np.diff(sizes[order]) >= 0) and max(chunk.size for chunk in chunks) <= cap
    cost = sum(overhead + chunk.size * sizes[chunk].max() for chunk in chunks)
    assert cost == pytest.approx(brute_force_cost(sizes, cap, overhead))
    if overhead == 1e9:
        assert len(chunks) == 1


def test_the_capacity_can_follow_the_chunk_s_largest_size():
    sizes = np.arange(1, 31)
    chunks = size_ordered_chunks(sizes, lambda rows: 60 // rows, 0.0)
    assert all(chunk.size <= 60 // sizes[chunk].max() for chunk in chunks)


@pytest.mark.parametrize("hidden_activation", [nn.ReLU, nn.GELU])  # the hand-written path and the generic one
def test_values_come_back_in_the_caller_s_order_whatever_the_chunks(hidden_activation):
    data = classification_data()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), hidden_activation(), nn.Linear(8, 3))
    masks = masks_of_sizes([30, 7, 40, 12, 25, 9, 33, 18], data[0].shape[0])
    options = dict(steps=20, learning_rate=0.05, dtype="float64")
    game = TorchModelUtility(model, *data, chunk_size=3, **options)
    assert len(game._chunks(masks, 20)) == 3  # chunks by size, out of the caller's order
    outputs = game.trained_outputs(masks)
    alone = TorchModelUtility(model, *data, chunk_size=1, **options).trained_outputs(masks)
    np.testing.assert_allclose(outputs, alone, rtol=1e-10, atol=1e-12)
    permutation = np.random.default_rng(0).permutation(masks.shape[0])
    np.testing.assert_allclose(game.trained_outputs(masks[permutation]), outputs[permutation], rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_array_equal(game.evaluate(masks), game.evaluate(masks))  # reruns: the same bits


def test_the_hand_written_path_trains_the_generic_path_s_models():
    data = classification_data()
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.Sigmoid(), nn.Linear(8, 3))
    masks = masks_of_sizes([10, 22, 35, 40], data[0].shape[0])
    options = dict(steps=25, learning_rate=0.05, dtype="float64", weight_decay=1e-3)
    fast = TorchModelUtility(model, *data, **options)
    generic = TorchModelUtility(model, *data, **options)
    generic._gradient, generic._hand_written = stacked_gradient(generic._template, "classification"), False
    np.testing.assert_allclose(fast.trained_outputs(masks), generic.trained_outputs(masks), rtol=1e-10,
                               atol=1e-12)


# ----------------------------------------------------------------------------- fused Adam, threads

def test_fused_adam_is_adam_written_out():
    torch.manual_seed(0)
    flat = torch.randn(3, 32, dtype=torch.float64)
    fused, written = StackedOptimizer("adam", 0.01, 1e-2, flat), StackedOptimizer("adam", 0.01, 1e-2, flat)
    assert fused.fused
    written.fused = False
    a, b = flat.clone(), flat.clone()
    for _ in range(30):
        gradient = torch.randn_like(flat)
        fused.step(a, gradient)
        written.step(b, gradient)
    torch.testing.assert_close(a, b, rtol=1e-13, atol=1e-15)


def test_training_runs_on_one_torch_thread_and_restores_the_caller_s(monkeypatch):
    seen = []
    train = _torch_model.train_chunk

    def recording(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return train(*args, **kwargs)

    monkeypatch.setattr(_torch_model, "train_chunk", recording)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        game = TorchModelUtility(nn.Sequential(nn.Linear(4, 3)), *classification_data(), steps=2)
        game.evaluate(masks_of_sizes([20, 30], 40))
        assert seen and set(seen) == {1} and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_per_model_loss_is_unchanged_by_padding_rows_at_weight_zero():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3)).double()
    params = {name: value.detach() for name, value in model.named_parameters()}
    X, y = torch.randn(5, 4, dtype=torch.float64), torch.tensor([0, 1, 2, 1, 0])
    loss = per_model_loss(model, "classification")
    padded = loss(params, {}, torch.tensor([1.0, 1, 1, 0, 0], dtype=torch.float64), X, y)
    assert padded.item() == pytest.approx(loss(params, {}, torch.ones(3, dtype=torch.float64), X[:3], y[:3]).item(),
                                          rel=1e-15)
