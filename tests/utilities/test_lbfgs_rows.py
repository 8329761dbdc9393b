"""The CPU's per-coalition L-BFGS on each coalition's own rows takes the chunked path's iterates, to rounding.

Both executors run one algorithm (:mod:`shapley_research.utilities.learners._lbfgs` and
``._lbfgs_rows``): the same iteration counts, convergence flags and parameters, for every initial
inverse Hessian, classes missing from a coalition, integer sample weights, per-coalition penalties
and stalls under a strict test.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_wine
from sklearn.preprocessing import StandardScaler

from shapley_research.utilities.learners import LogisticRegressionUtility
# Internal kernels that public calls reach only through whole fits: both L-BFGS executors on one chunk, the exp
from shapley_research.utilities.learners._lbfgs import _lbfgs
from shapley_research.utilities.learners._lbfgs_rows import _exp_in_place, lbfgs_own_rows
from shapley_research.utilities.learners._softmax import _SoftmaxChunk


def _data(loader, n_train, standardise=True):
    X, y = loader(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    if standardise:
        X = StandardScaler().fit_transform(X)
    return X[:n_train], y[:n_train], X[n_train:n_train + 60], y[n_train:n_train + 60]


def _masks(n, m, seed=1):
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((m, n)), axis=1) < rng.integers(8, n + 1, m)[:, None]


def _both(learner, masks, data=None, tol=1e-7, strict=False, precondition=True):
    """``(chunked, compiled)`` results on one chunk of ``masks`` from the full-data solution."""
    data = learner._softmax_data if data is None else data
    counts = learner.targets.class_counts(masks)
    chunk = _SoftmaxChunk.from_masks(data, masks, counts, learner.C, learner._coalition_penalty(masks))
    start = (np.zeros((len(masks),) + learner._warm_start().shape) + learner._warm_start()) * chunk.present[:, :, None]
    start = start.astype(data.X.dtype)
    runs = []
    for solver in (_lbfgs, lbfgs_own_rows):
        pre = learner._preconditioner(chunk) if precondition else None
        runs.append(solver(chunk, start.copy(), tol, 500, strict=strict, precondition=pre))
    return runs


#: The compiled path applies the low-rank initial inverse Hessian's correction in float32 (the chunked path in
#: float64): iterates then agree to that rounding, about 1e-7 of a step, not to float64's.
LOW_RANK_ATOL = 1e-6


def _assert_same_iterates(chunked, compiled, atol):
    np.testing.assert_array_equal(compiled[1], chunked[1])  # iterations
    np.testing.assert_array_equal(compiled[2], chunked[2])  # converged
    np.testing.assert_allclose(compiled[0], chunked[0], rtol=0, atol=atol)


@pytest.mark.parametrize("precondition", [False, True])
def test_the_same_iterates_as_the_chunked_path(precondition):
    X, y, Xt, yt = _data(load_wine, 120)
    learner = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", mixed_precision=False)
    masks = _masks(len(y), 40)
    masks[:5] &= (y != 0)[None, :]  # classes missing: a two-class coalition of a three-class problem
    chunked, compiled = _both(learner, masks, precondition=precondition)
    assert compiled[2].all() and compiled[1].min() > 1
    _assert_same_iterates(chunked, compiled, atol=LOW_RANK_ATOL if precondition else 1e-10)


def test_the_same_iterates_with_sample_weights():
    X, y, Xt, yt = _data(load_digits, 200)
    learner = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", mixed_precision=False)
    weights = np.random.default_rng(2).multinomial(200, np.full(200, 1 / 200), size=12).astype(float)
    chunked, compiled = _both(learner, weights)  # bootstrap counts, as Data-OOB fits them
    _assert_same_iterates(chunked, compiled, atol=LOW_RANK_ATOL)


def test_the_same_iterates_under_per_coalition_penalties():
    X, y, Xt, yt = _data(load_wine, 120, standardise=False)
    learner = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", mixed_precision=False,
                                        scalers=[StandardScaler()])
    chunked, compiled = _both(learner, _masks(len(y), 20))  # the diagonal initial inverse Hessian
    _assert_same_iterates(chunked, compiled, atol=1e-9)


def test_stalls_at_rounding_end_both_paths_alike():
    X, y, Xt, yt = _data(load_digits, 200)
    learner = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", mixed_precision=False)
    chunked, compiled = _both(learner, _masks(len(y), 16), tol=1e-13, strict=True)  # below rounding: stalls
    assert not compiled[2].any() and not chunked[2].any()
    # the last steps turn on rounding-level decreases, which the two sums round differently: a few more or
    # fewer steps, each moving the parameters by rounding only
    np.testing.assert_allclose(compiled[0], chunked[0], rtol=0, atol=1e-5)


def test_only_float64_chunks_are_compiled():
    X, y, Xt, yt = _data(load_wine, 120)
    learner = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs")
    masks = _masks(len(y), 3)
    chunk = _SoftmaxChunk.from_masks(learner._softmax_data32, masks, learner.targets.class_counts(masks), 1.0)
    with pytest.raises(TypeError, match="float64"):
        lbfgs_own_rows(chunk, np.zeros((3,) + learner._warm_start().shape, np.float32), 1e-6, 10)


@pytest.mark.parametrize("warm_start", [False, True])
def test_a_coalition_is_fitted_alone_as_in_company(warm_start):
    """The same bits whatever chunk a coalition is fitted in (with ``warm_start``, its own low-rank directions)."""
    X, y, Xt, yt = _data(load_digits, 200)
    learner = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", mixed_precision=False, warm_start=warm_start)
    masks = _masks(len(y), 6)
    together = _both(learner, masks)[1]
    for row in range(len(masks)):
        alone = _both(learner, masks[row:row + 1])[1]
        np.testing.assert_array_equal(alone[0][0], together[0][row])


def test_the_public_utility_of_a_coalition_does_not_depend_on_its_batch():
    X, y, Xt, yt = _data(load_digits, 200)
    game = LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", solver="lbfgs")
    masks = _masks(len(y), 8)
    batch = game.evaluate(masks)
    singles = np.concatenate([game.evaluate(masks[row:row + 1]) for row in range(len(masks))])
    assert batch.tobytes() == singles.tobytes()


def test_the_vectorised_exp_is_libm_to_a_few_ulp():
    rng = np.random.default_rng(3)
    x = np.concatenate([-np.abs(rng.normal(scale=s, size=2000)) for s in (1e-8, 0.3, 3.0, 60.0)]
                       + [np.array([0.0, -0.0, -np.log(2) / 2, -np.log(2), -700.0, -708.0])])
    out, bits = x.copy(), np.empty(x.shape, np.int64)
    _exp_in_place(out, bits)
    np.testing.assert_allclose(out, np.exp(x), rtol=4 * np.finfo(float).eps, atol=0)
    below = np.array([-708.5, -745.0, -1e6, -708.0])  # beyond the normal range: the floor's value, not 0 or garbage
    _exp_in_place(below, np.empty(4, np.int64))
    np.testing.assert_array_equal(below[:3], below[3])


@pytest.mark.parametrize("min_curvature", [1e-3, 0.3])
def test_the_same_iterates_with_class_blocks(monkeypatch, min_curvature):
    from shapley_research.utilities.learners import _precondition

    X, y, Xt, yt = _data(load_wine, 120)
    learner = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", mixed_precision=False)
    masks = _masks(len(y), 40)
    masks[:5] &= (y != 0)[None, :]
    monkeypatch.setattr(_precondition, "PRECONDITION_MIN_CURVATURE", min_curvature)  # more directions than q
    counts = learner.targets.class_counts(masks)
    pre = learner._preconditioner(_SoftmaxChunk.from_masks(learner._softmax_data, masks, counts, learner.C))
    assert pre.all_blocks if min_curvature < 0.01 else pre.some_blocks and not pre.all_blocks  # all, or a mix
    chunked, compiled = _both(learner, masks)
    assert compiled[2].all() and compiled[1].min() > 1
    _assert_same_iterates(chunked, compiled, atol=LOW_RANK_ATOL)  # the compiled path applies them in float32
