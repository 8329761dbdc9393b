"""TorchModelUtility: a torch module trained on a chunk of coalitions at once.

The central property: a coalition trained in a chunk is the model trained on
that coalition alone (``chunk_size=1``, and ``torch.optim`` on its own rows),
to rounding; reruns are bit-identical. Small data and tiny MLPs keep the file
at a few seconds on a CPU.
"""

from __future__ import annotations

import copy
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from shapley_research import TorchModelUtility  # noqa: E402
from shapley_research.games import reporting_to  # noqa: E402
from shapley_research.utilities import TargetInfo, constant_utilities  # noqa: E402
# Internal: the batch order of one epoch (to replay a coalition's training by hand; no public attribute holds it)
from shapley_research.utilities._torch_training import epoch_batches  # noqa: E402

pytestmark = pytest.mark.slow  # trains torch models: seconds a test on CPU


def make_classification(n_train: int = 48, n_test: int = 30, d: int = 4, k: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(k, d))
    y = rng.integers(0, k, size=n_train + n_test)
    X = centres[y] + rng.normal(size=(n_train + n_test, d))
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def mlp(d: int = 4, k: int = 3, hidden: int = 8, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, hidden), nn.Tanh(), nn.Linear(hidden, k))


def random_masks(m: int, n: int, seed: int = 1) -> np.ndarray:
    masks = np.random.default_rng(seed).random((m, n)) < 0.5
    masks[:, :6] = True  # every class present: none degenerate
    return masks


DATA = make_classification()
OPTIONS = dict(steps=25, learning_rate=0.05)


def game(model=None, data=DATA, **options) -> TorchModelUtility:
    return TorchModelUtility(mlp() if model is None else model, *data, **{**OPTIONS, **options})


# ----------------------------------------------------------------------------- chunk = alone

@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_a_chunk_trains_each_coalition_as_alone_float64(optimizer):
    masks = random_masks(7, DATA[0].shape[0])
    options = dict(dtype="float64", optimizer=optimizer, weight_decay=1e-3)
    together = game(**options).trained_outputs(masks)
    alone = game(chunk_size=1, **options).trained_outputs(masks)
    np.testing.assert_allclose(together, alone, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(game(**options).evaluate(masks), game(chunk_size=1, **options).evaluate(masks))


def test_a_chunk_trains_each_coalition_as_alone_float32():
    masks = random_masks(7, DATA[0].shape[0])
    together = game(chunk_size=4).trained_outputs(masks)  # chunks of 4 and 3
    alone = game(chunk_size=1).trained_outputs(masks)
    np.testing.assert_allclose(together, alone, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("optimizer, weight_decay", [("adam", 0.0), ("adam", 1e-2), ("sgd", 1e-2)])
def test_each_model_is_torch_optim_on_its_own_rows(optimizer, weight_decay):
    """Full batch: ``torch.optim`` on the coalition's rows alone, mean cross-entropy, gives the same model."""
    X_train, y_train, X_test, _ = DATA
    mask = random_masks(1, X_train.shape[0], seed=3)[0]
    utility = game(dtype="float64", optimizer=optimizer, weight_decay=weight_decay)
    model = mlp().double()
    optim_class = torch.optim.Adam if optimizer == "adam" else torch.optim.SGD
    opt = optim_class(model.parameters(), lr=OPTIONS["learning_rate"], weight_decay=weight_decay, foreach=False)
    X, y = torch.as_tensor(X_train[mask]), torch.as_tensor(y_train[mask])
    for _ in range(OPTIONS["steps"]):
        opt.zero_grad()
        nn.functional.cross_entropy(model(X), y).backward()
        opt.step()
    expected = model(torch.as_tensor(X_test)).detach().numpy()
    np.testing.assert_allclose(utility.trained_outputs(mask[None])[0], expected, rtol=1e-9, atol=1e-11)


def test_minibatches_follow_the_shared_schedule_and_skip_batches_without_the_coalition():
    X_train, y_train, X_test, _ = DATA
    masks = random_masks(5, X_train.shape[0], seed=4)
    masks[0] = False
    masks[0, [0, 1, 2, 3, 4, 5, 30]] = True  # a small coalition: most batches hold none of it
    options = dict(dtype="float64", batch_size=5, steps=None, epochs=2, seed=7)
    utility = game(**options)
    assert utility.n_steps == 2 * 10
    together = utility.trained_outputs(masks)
    np.testing.assert_allclose(together, game(chunk_size=1, **options).trained_outputs(masks), rtol=1e-10,
                               atol=1e-12)
    model = mlp().double()
    opt = torch.optim.Adam(model.parameters(), lr=OPTIONS["learning_rate"], foreach=False)
    for rows in epoch_batches(utility._plan, X_train.shape[0]):
        rows = rows[(rows >= 0)]
        rows = rows[masks[0, rows]]
        if rows.size == 0:
            continue  # the coalition skips this batch (no step, no Adam state change)
        opt.zero_grad()
        nn.functional.cross_entropy(model(torch.as_tensor(X_train[rows])), torch.as_tensor(y_train[rows])).backward()
        opt.step()
    np.testing.assert_allclose(together[0], model(torch.as_tensor(X_test)).detach().numpy(), rtol=1e-9, atol=1e-11)


def test_the_schedule_depends_on_the_seed_only():
    a = game(batch_size=8, steps=9, seed=1)
    b = game(batch_size=8, steps=9, seed=1, chunk_size=3)
    np.testing.assert_array_equal(a._schedule.numpy(), b._schedule.numpy())
    assert a._schedule.shape == (9, 8)
    schedule = a._schedule.numpy()[:6]  # one epoch of 48 rows: a permutation
    np.testing.assert_array_equal(np.sort(schedule.ravel()), np.arange(48))
    assert not np.array_equal(schedule, game(batch_size=8, steps=9, seed=2)._schedule.numpy()[:6])


# ----------------------------------------------------------------------------- reproducibility

def test_reruns_and_fresh_objects_are_bit_identical():
    masks = random_masks(9, DATA[0].shape[0])
    first = game(chunk_size=4, metric="neg_log_loss")
    values = first.evaluate(masks)
    np.testing.assert_array_equal(values, first.evaluate(masks))
    np.testing.assert_array_equal(values, game(chunk_size=4, metric="neg_log_loss").evaluate(masks))
    assert first.n_fits == 18


def test_joblib_workers_on_the_cpu_give_the_same_bits():
    """On torch's CPU device a game trains on one thread, so n_jobs runs it in workers as any other game."""
    from shapley_research import msr_banzhaf

    one = msr_banzhaf(game(), 48, seed=0, batch_size=16)
    np.testing.assert_array_equal(msr_banzhaf(game(), 48, seed=0, batch_size=16, n_jobs=2).values, one.values)


@pytest.mark.parametrize("dtype, rtol, atol", [("float64", 1e-10, 1e-12), ("float32", 1e-4, 1e-5)])
def test_reinitialize_is_noisy_yet_a_function_of_the_coalition(dtype, rtol, atol):
    """float32 too: the module's own dtype, where each draw must be copied out of the re-initialised module."""
    masks = random_masks(6, DATA[0].shape[0])
    fixed = game(dtype=dtype).trained_outputs(masks)
    redrawn = game(dtype=dtype, reinitialize=True, seed=3)
    outputs = redrawn.trained_outputs(masks)
    assert not np.allclose(outputs, fixed)
    # same seed: the same values on a fresh object, in another order and chunk size
    again = game(dtype=dtype, reinitialize=True, seed=3, chunk_size=1).trained_outputs(masks[::-1])
    np.testing.assert_allclose(again[::-1], outputs, rtol=rtol, atol=atol)
    other_seed = game(dtype=dtype, reinitialize=True, seed=4).trained_outputs(masks)
    assert not np.allclose(other_seed, outputs)
    twice = redrawn.trained_outputs(np.repeat(masks[:1], 2, axis=0))
    np.testing.assert_array_equal(twice[0], twice[1])  # a repeated coalition: the same draw
    # another chunk pads its rows to another width: the same model to rounding
    np.testing.assert_allclose(twice[0], outputs[0], rtol=rtol, atol=atol)


def test_each_coalition_of_a_chunk_gets_its_own_draw():
    """Three coalitions of one chunk on the same rows in the same order (of a training set held twice): their
    models differ by their initial parameters alone."""
    X_train, y_train, X_test, y_test = DATA
    n = X_train.shape[0]
    twice = (np.vstack([X_train, X_train]), np.concatenate([y_train, y_train]), X_test, y_test)
    masks = np.zeros((3, 2 * n), dtype=bool)
    masks[0, :n] = masks[1, n:] = True  # the first copy, the second one
    masks[2, :n // 2] = masks[2, n + n // 2:] = True  # half of each
    utility = game(data=twice, reinitialize=True)  # float32, the module's own dtype, as torch makes it
    outputs = utility.trained_outputs(masks)
    assert len(utility._chunks(masks, X_test.shape[0])) == 1
    assert len({row.tobytes() for row in outputs}) == 3


def test_the_model_and_the_global_random_state_are_left_alone():
    model = mlp()
    model.train()
    before = copy.deepcopy(model.state_dict())
    torch.manual_seed(123)
    state = torch.get_rng_state()
    utility = game(model, reinitialize=True, dtype="float64")
    utility.evaluate(random_masks(3, DATA[0].shape[0]))
    assert all(torch.equal(before[name], value) for name, value in model.state_dict().items())
    assert model.training and next(model.parameters()).dtype == torch.float32
    assert torch.equal(torch.get_rng_state(), state)


# ----------------------------------------------------------------------------- degenerate coalitions

def test_degenerate_coalitions_follow_the_convention_untrained():
    X_train, y_train, X_test, y_test = DATA
    n = X_train.shape[0]
    one_class = y_train == y_train[0]
    masks = np.vstack([np.zeros(n, bool), one_class, random_masks(1, n)[0]])
    utility = game(metric="neg_log_loss")
    values = utility.evaluate(masks)
    info = TargetInfo(y_train, y_test, "classification")
    np.testing.assert_allclose(values[:2], constant_utilities(masks[:2], info, "neg_log_loss"))
    assert utility.n_fits == 1
    defaulted = game(degenerate="default", default_utility=-1.0, min_samples=40).evaluate(masks)
    assert defaulted[0] == defaulted[1] == -1.0 and (defaulted[2] == -1.0) == (masks[2].sum() < 40)
    with pytest.raises(ValueError, match="degenerate coalition"):
        game(degenerate="raise").evaluate(masks[:1])


# ----------------------------------------------------------------------------- sample weights

def test_integer_weights_are_repeated_rows():
    """Weight 2 on a row is that row twice: the loss is sum w_i l_i / sum w_i."""
    X_train, y_train, X_test, y_test = DATA
    counts = np.random.default_rng(5).integers(0, 3, size=X_train.shape[0])
    counts[:6] = 1
    repeated = (np.repeat(X_train, counts, axis=0), np.repeat(y_train, counts), X_test, y_test)
    by_weights = game(dtype="float64").trained_outputs(counts[None])
    by_rows = game(data=repeated, dtype="float64").trained_outputs(np.ones((1, counts.sum()), dtype=bool))
    np.testing.assert_allclose(by_weights, by_rows, rtol=1e-9, atol=1e-11)


def test_predict_labels_constant_models_and_other_rows():
    X_train, y_train, X_test, _ = DATA
    labels = np.array(["a", "b", "c"])[y_train]
    utility = game(data=(X_train, labels, X_test, np.array(["a", "b", "c"])[DATA[3]]))
    n = X_train.shape[0]
    weights = np.zeros((3, n), dtype=np.int64)
    weights[1, y_train == 2] = 3  # one class: degenerate, predicts it
    weights[2] = np.random.default_rng(0).integers(0, 3, size=n)
    weights[2, :6] += 1
    predictions = utility.predict(weights)
    assert predictions.shape == (3, X_test.shape[0]) and utility.n_fits == 1
    majority = np.array(["a", "b", "c"])[np.argmax(np.bincount(y_train, minlength=3))]
    assert (predictions[0] == majority).all() and (predictions[1] == "c").all()
    logits = utility.trained_outputs(weights[2:])[0]
    np.testing.assert_array_equal(predictions[2], np.array(["a", "b", "c"])[logits.argmax(axis=1)])
    assert utility.predict(weights[2:].astype(bool), X_train[:5]).shape == (1, 5)


@pytest.mark.parametrize("weights, error, match", [
    (np.ones((2, 5), dtype=int), ValueError, "shape"),
    (np.full((1, 48), 0.5), ValueError, "non-negative integers"),
    (-np.ones((1, 48), dtype=int), ValueError, "non-negative"),
])
def test_bad_weights_are_refused(weights, error, match):
    with pytest.raises(error, match=match):
        game().predict(weights)


def test_metrics_come_from_the_trained_logits_with_unseen_test_labels_wrong():
    from scipy.special import log_softmax

    X_train, y_train, X_test, y_test = DATA
    y_test = y_test.copy()
    y_test[:3] = 7  # a label no training point has
    masks = random_masks(3, X_train.shape[0])
    accuracy = game(data=(X_train, y_train, X_test, y_test), dtype="float64")
    logits = accuracy.trained_outputs(masks)
    np.testing.assert_array_equal(accuracy.evaluate(masks), np.mean(logits.argmax(axis=2) == y_test, axis=1))
    log_p = log_softmax(logits, axis=2)[:, np.arange(len(y_test)), np.minimum(y_test, 2)]
    log_p[:, :3] = np.log(np.finfo(float).eps)  # clipped like sklearn's log_loss
    log_loss = game(data=(X_train, y_train, X_test, y_test), dtype="float64", metric="neg_log_loss")
    np.testing.assert_allclose(log_loss.evaluate(masks), log_p.mean(axis=1), rtol=1e-12)


def test_steps_and_epochs():
    assert game().n_steps == 25 and game(steps=None).n_steps == 300
    assert game(steps=None, epochs=3).n_steps == 3  # full batch: one step per epoch
    assert game(steps=None, epochs=3, batch_size=10).n_steps == 15  # 48 rows: 5 batches per epoch
    assert "steps=25" in repr(game())


# ----------------------------------------------------------------------------- regression

@pytest.mark.parametrize("width", [None, 1])
def test_regression_scores_the_trained_values(width):
    X_train, _, X_test, _ = DATA
    rng = np.random.default_rng(2)
    coef = rng.normal(size=4)
    data = (X_train, X_train @ coef, X_test, X_test @ coef + 0.1)
    layers = [nn.Linear(4, 1)] + ([nn.Flatten(0)] if width is None else [])
    torch.manual_seed(0)
    utility = game(nn.Sequential(*layers), data=data, metric="neg_mse", dtype="float64", steps=40)
    masks = random_masks(3, X_train.shape[0])
    predictions = utility.predict(masks)
    np.testing.assert_allclose(utility.evaluate(masks), -np.mean((predictions - data[3]) ** 2, axis=1))
    np.testing.assert_allclose(predictions, utility.trained_outputs(masks))


# ----------------------------------------------------------------------------- checks before training

@pytest.fixture
def no_training(monkeypatch):
    # internal: the training seam (no public hook shows that a model was trained before the checks)
    import shapley_research.utilities._torch_model as module

    def fail(*args, **kwargs):
        raise AssertionError("trained before the arguments were checked")

    monkeypatch.setattr(module, "train_chunk", fail)


class _BranchOnData(nn.Module):
    """Python control flow on the input: runs alone, cannot be batched over coalitions' own rows by vmap."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        return self.linear(x) if x.sum() > 0 else -self.linear(x)


@pytest.mark.usefixtures("no_training")
@pytest.mark.parametrize("model, options, error, match", [
    (lambda: _BranchOnData(), {}, ValueError, "cannot be trained batched by torch.func"),
    ("not a module", {}, TypeError, "torch.nn.Module"),
    (nn.Linear, {}, TypeError, "the class Linear"),
    (lambda: mlp(k=2), {}, ValueError, "model outputs 2 values per row but y_train has 3 classes"),
    (lambda: mlp(d=5), {}, ValueError, "fails on rows of X_train"),
    (None, {"dtype": "float16"}, ValueError, "dtype must be"),
    (None, {"learning_rate": -0.1}, ValueError, "learning_rate"),
    (None, {"steps": 0}, ValueError, "steps"),
    (None, {"steps": 5, "epochs": 2}, ValueError, "not both"),
    (None, {"optimizer": "lbfgs"}, ValueError, "optimizer"),
    (None, {"metric": "neg_mse"}, ValueError, "regression metric needs one value per row"),
    (None, {"reinitialize": "yes"}, TypeError, "reinitialize"),
])
def test_bad_arguments_fail_before_training(model, options, error, match):
    model = model() if callable(model) and not isinstance(model, type) else model
    with pytest.raises(error, match=match):
        TorchModelUtility(mlp() if model is None else model, *DATA, **options)


@pytest.mark.usefixtures("no_training")
@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_refused():
    with pytest.raises(ValueError, match="sees no GPU"):
        game(device="cuda")
    assert game(device="auto").device == torch.device("cpu") == game().device


def test_torch_is_not_imported_with_the_package():
    code = ("import sys\n"
            "import shapley_research as m\n"
            "utility = m.TorchModelUtility  # the first public name loads the whole library\n"
            "print('torch' in sys.modules)\n"
            "sys.modules['torch'] = None  # as if it were not installed\n"
            "try:\n    utility(None, [[0.0]], [0], [[0.0]], [0])\n"
            "except ImportError as e:\n    print('needs torch' if 'install' in str(e) else e)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["False", "needs", "torch"], result.stderr


# ----------------------------------------------------------------------------- chunks, progress and memory

def test_progress_is_reported_chunk_by_chunk():
    masks = random_masks(5, DATA[0].shape[0])
    masks[4] = False  # degenerate: reported at once, untrained
    reports: list[int] = []
    with reporting_to(reports.append):
        game(chunk_size=2).evaluate(masks)
    assert reports == [1, 2, 2]


def test_chunk_size_follows_memory_and_the_cap():
    utility = game()
    automatic = utility._chunk_rows(DATA[2].shape[0])
    assert 256 <= automatic <= 4096  # a tiny MLP: thousands fit in the CPU budget
    assert game(chunk_size=3)._chunk_rows(30) == 3
    assert game(chunk_size=10**6)._chunk_rows(30) == automatic


def _live_tensor_bytes() -> int:
    import gc

    gc.collect()
    # type(), not isinstance: the latter reads __class__, which warns on torch's deprecated module attributes
    return sum(obj.numel() * obj.element_size() for obj in gc.get_objects() if issubclass(type(obj), torch.Tensor))


def test_nothing_of_a_chunk_stays_held_after_evaluate():
    """The MLP kernels' cached output-gradient terms leave with their chunk (on a GPU: memory held between calls)."""
    utility = game()
    assert utility._hand_written  # the path with the cache
    utility.evaluate(random_masks(4, DATA[0].shape[0]))
    after_small = _live_tensor_bytes()
    utility.evaluate(random_masks(400, DATA[0].shape[0]))
    assert _live_tensor_bytes() == after_small
