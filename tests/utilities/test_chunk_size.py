"""How many coalitions a batched learner trains together: the memory budget, a default cap, and ``batch_size``."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from shapley_research.utilities.learners import LogisticRegressionUtility, RidgeUtility


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    return X[order][:100], y[order][:100], X[order][100:], y[order][100:]


@pytest.mark.parametrize("learner", [LogisticRegressionUtility, RidgeUtility])
def test_a_batch_size_replaces_the_default_cap_within_the_memory_budget(iris, learner):
    X, y, Xt, yt = iris
    tiny_row, budget = 1.0, 48 * 2**20  # bytes a coalition takes, the CPU's working memory
    assert learner(X, y, Xt, yt)._chunk_size(tiny_row) == 4096  # the default cap
    assert learner(X, y, Xt, yt, batch_size=10_000)._chunk_size(tiny_row) == 10_000  # above it
    assert learner(X, y, Xt, yt, batch_size=7)._chunk_size(tiny_row) == 7  # below it
    assert learner(X, y, Xt, yt, batch_size=10_000)._chunk_size(budget / 10) == 10  # memory still bounds it
    assert learner(X, y, Xt, yt)._chunk_size(2 * budget) == 1  # never below one coalition


def test_a_device_caps_chunks_higher_and_logistic_fits_highest(iris):
    """On a device the default cap is 4x the CPU's, and the logistic fit path's 65,536 (launch-bound L-BFGS)."""
    pytest.importorskip("torch")
    from shapley_research.utilities.learners._logistic import DEVICE_FIT_CAP

    X, y, Xt, yt = iris
    game = LogisticRegressionUtility(X, y, Xt, yt, device="cpu")
    assert game._chunk_size(1.0) == 4 * 4096
    assert game._chunk_size(1.0, device_cap=DEVICE_FIT_CAP) == DEVICE_FIT_CAP == 65_536
    sized = LogisticRegressionUtility(X, y, Xt, yt, device="cpu", batch_size=100)
    assert sized._chunk_size(1.0, device_cap=DEVICE_FIT_CAP) == 100  # a batch_size still replaces every cap


def test_fits_do_not_depend_on_the_batch_size(iris):
    """Bit for bit on the CPU's L-BFGS (coalition by coalition); to rounding on Newton (chunk-wide products)."""
    X, y, Xt, yt = iris
    masks = np.random.default_rng(1).random((40, len(y))) < 0.6
    for solver in ("lbfgs", "newton"):
        values = [LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", solver=solver,
                                            batch_size=size).evaluate(masks) for size in (None, 3, 10_000)]
        if solver == "lbfgs":
            assert values[0].tobytes() == values[1].tobytes() == values[2].tobytes()
        np.testing.assert_allclose(values[1], values[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(values[2], values[0], rtol=0, atol=1e-12)


class _FakeCudaMemory:
    """``torch.cuda.mem_get_info`` of a 30 GiB card with ``free`` bytes free."""

    def __init__(self, free: int):
        self.free, self.total = free, 30 * 2**30

    def __call__(self, device=None):
        return self.free, self.total


def test_a_gpu_plans_its_chunks_from_its_total_memory_and_warns_where_they_do_not_fit(monkeypatch):
    """Free memory varies between runs; the chunks, whose company can move the last bits, do not follow it."""
    torch = pytest.importorskip("torch")
    from shapley_research._device import chunk_capacity  # Internal: no GPU here to reach it through a learner

    cuda, item = torch.device("cuda"), 2**20  # a coalition of 1 MiB
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 0)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 0)
    for free in (29 * 2**30, 21 * 2**30):  # a free card, and one with a third of it taken: the same plan
        monkeypatch.setattr(torch.cuda, "mem_get_info", _FakeCudaMemory(free))
        assert chunk_capacity(cuda, item, 100_000, "owner") == 10 * 1024  # a third of 30 GiB
        assert list(chunk_capacity(cuda, np.array([item, 4 * item]), 100_000, "owner")) == [10 * 1024, 2560]
        assert chunk_capacity(cuda, item, 16, "owner") == 16  # the cap
    monkeypatch.setattr(torch.cuda, "mem_get_info", _FakeCudaMemory(8 * 2**30))  # others hold 22 GiB
    with pytest.warns(RuntimeWarning, match="owner: memory held elsewhere on cuda leaves room for 4096 items a chunk "
                                            "where this card plans 10240"):
        assert chunk_capacity(cuda, item, 100_000, "owner") == 4096  # half the free memory
        # several sizes: the numbers are those of an item whose chunks shrank
        sizes = chunk_capacity(cuda, np.array([20 * 2**30, item]), 100_000, "owner")
    assert list(sizes) == [1, 4096]
    assert chunk_capacity(cuda, item, 4096, "owner") == 4096  # a cap that fits: nothing changes, no warning
    # what this process's allocator caches unused (earlier chunks') is room, not memory held elsewhere
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 14 * 2**30)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 2**30)
    assert chunk_capacity(cuda, item, 100_000, "owner") == 10 * 1024
    assert chunk_capacity(torch.device("cpu"), item, 100_000, "owner") == 256  # torch's CPU device: 256 MiB


def test_a_call_collects_garbage_only_where_it_left_device_memory_allocated(monkeypatch):
    """A full collection is a fixed cost of every call (tenths of a second in a large process): paid only where
    memory that only a collection can free may remain; the cache is emptied after every call."""
    torch = pytest.importorskip("torch")
    import shapley_research._device as device_module

    allocated, calls = [100], []
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: allocated[0])
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append("empty_cache"))
    monkeypatch.setattr(device_module.gc, "collect", lambda: calls.append("collect"))
    cuda = torch.device("cuda")
    with device_module.released(cuda):
        pass  # freed everything it allocated
    assert calls == ["empty_cache"]
    calls.clear()
    with device_module.released(cuda):
        allocated[0] += 64  # a cycle holding a tensor, or a first call's caches
    assert calls == ["collect", "empty_cache"]
    calls.clear()
    with pytest.raises(RuntimeError), device_module.released(cuda):
        raise RuntimeError("a failed call lets its memory go too")
    assert calls == ["empty_cache"]
    with device_module.released(torch.device("cpu")), device_module.released(None):
        pass  # nothing to give back off a GPU
    assert calls == ["empty_cache"]
