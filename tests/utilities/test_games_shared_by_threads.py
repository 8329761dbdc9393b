"""One game evaluated from several threads at once (joblib's threading backend, a threaded Dask worker) gives the
values it gives alone, to the bit: no state of a call leaks into another's."""

import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sklearn.datasets import load_iris

from shapley_research import LogisticRegressionUtility
from shapley_research._threads import pinned_torch_threads
from shapley_research.utilities.learners import _logistic


def test_a_thread_arriving_during_the_full_data_fit_does_not_start_from_a_half_made_warm_start(monkeypatch):
    """Coalition {8, 10} has a test point about 1e-9 from the boundary: from zeros it scores 0.61, not 0.62."""
    X, y = load_iris(return_X_y=True)
    rows = np.random.default_rng(0).permutation(150)
    game = LogisticRegressionUtility(X[rows[:12]], y[rows[:12]], X[rows[50:]], y[rows[50:]])
    coalition = np.zeros((1, 12), dtype=bool)
    coalition[0, [8, 10]] = True
    alone = LogisticRegressionUtility(X[rows[:12]], y[rows[:12]], X[rows[50:]], y[rows[50:]]).evaluate(coalition)
    fit_thetas = _logistic.LogisticRegressionUtility._fit_thetas

    def slow_full_fit(self, *args, **kwargs):
        if kwargs.get("start"):  # the full-data fit: the second thread arrives meanwhile
            time.sleep(0.3)
        return fit_thetas(self, *args, **kwargs)

    monkeypatch.setattr(_logistic.LogisticRegressionUtility, "_fit_thetas", slow_full_fit)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(game.evaluate, coalition)
        time.sleep(0.1)
        second = pool.submit(game.evaluate, coalition)
        assert first.result().tolist() == second.result().tolist() == alone.tolist()


torch = pytest.importorskip("torch")


def _torch_game(activation, **options):
    from sklearn.datasets import load_breast_cancer

    from shapley_research import TorchModelUtility

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(30, 8), activation, torch.nn.Linear(8, 2))
    return TorchModelUtility(model, X[:60], y[:60], X[100:200], y[100:200], steps=3, **options)


@pytest.mark.slow  # torch.func's first call takes a second
@pytest.mark.parametrize("activation, options", [
    (torch.nn.ReLU(), {}),  # the hand-written MLP gradients (a per-thread cache of the output terms)
    (torch.nn.GELU(), {}),  # torch.func (functional_call swaps a module's parameters while it runs)
    (torch.nn.ReLU(), {"reinitialize": True}),  # initial parameters drawn from torch's one global generator
], ids=["hand-written", "torch.func", "reinitialize"])
def test_a_torch_game_evaluated_from_eight_threads_at_once_gives_its_values_alone(activation, options):
    game = _torch_game(activation, **options)
    masks = np.random.default_rng(0).random((64, 60)) < 0.5
    alone = [game.evaluate(masks[i::8]) for i in range(8)]
    for _ in range(3):  # each round failed several of its eight calls before the fix
        with ThreadPoolExecutor(8) as pool:
            together = list(pool.map(lambda i: game.evaluate(masks[i::8]), range(8)))
        for got, expected in zip(together, alone):
            np.testing.assert_array_equal(got, expected)


@pytest.mark.slow
def test_a_torch_game_pickles_without_its_training_closures_and_gives_the_same_values():
    game = _torch_game(torch.nn.ReLU())
    masks = np.random.default_rng(1).random((6, 60)) < 0.5
    copy = pickle.loads(pickle.dumps(game))
    assert "_gradient" not in game.__getstate__()
    np.testing.assert_array_equal(copy.evaluate(masks), game.evaluate(masks))


def test_the_torch_thread_pin_is_restored_by_the_last_thread_to_leave_not_the_first(monkeypatch):
    """torch's count reaches other threads (MKL's, and OpenMP's outside the main thread): a thread leaving while
    another trains must not set it back under it."""
    before = torch.get_num_threads()
    calls = []
    set_num_threads = torch.set_num_threads

    def recorded(count):
        calls.append((threading.current_thread().name, count))
        set_num_threads(count)

    monkeypatch.setattr(torch, "set_num_threads", recorded)
    inside, may_leave = threading.Event(), threading.Event()

    def long_section():
        with pinned_torch_threads(1):
            inside.set()
            may_leave.wait(10)

    thread = threading.Thread(target=long_section, name="trainer")
    thread.start()
    try:
        assert inside.wait(10)
        with pinned_torch_threads(1):  # enters and leaves while the other thread is still inside
            pass
        assert calls == [("trainer", 1), ("MainThread", 1)]  # no restore while the trainer trains
        may_leave.set()
        thread.join(10)
        assert calls[2:] == [("trainer", before)]  # the last to leave restores the count found by the first
    finally:
        set_num_threads(before)  # the early leaver (this thread) kept the pinned count, as documented


def test_one_copy_of_the_module_per_thread_serves_the_loss_and_the_forward(monkeypatch):
    from shapley_research.utilities import _torch_training

    made = []
    deepcopy = _torch_training.copy.deepcopy
    monkeypatch.setattr(_torch_training.copy, "deepcopy", lambda x: made.append(x) or deepcopy(x))
    template = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))  # torch.func path
    copies = _torch_training.per_thread_copies(template)
    gradient = _torch_training.stacked_gradient(template, "classification", copies)
    forward = _torch_training.stacked_forward(template, copies)
    params = {k: v.detach().unsqueeze(0) for k, v in template.named_parameters()}
    X, y = torch.randn(5, 3), torch.tensor([0, 1, 0, 1, 1])
    gradient(params, {}, torch.ones(1, 5), X, y)
    forward(params, {}, X)
    assert made == [template]  # one copy for both, in this thread
    with ThreadPoolExecutor(1) as pool:
        pool.submit(forward, params, {}, X).result()
    assert made == [template, template] and copies() is not template  # another thread, another copy
