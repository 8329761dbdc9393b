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
