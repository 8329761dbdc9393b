"""The multinomial L-BFGS path: mixed precision, the low-rank preconditioner, and the tolerance it is routed with.

Mixed precision runs on torch devices (``DEVICE``: torch on this CPU); on the CPU's numpy path L-BFGS runs in
compiled ``float64`` loops (``tests/utilities/test_lbfgs_rows.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from shapley_research import ModelUtility
from shapley_research.utilities.learners import LogisticRegressionUtility
# Internal kernels that public calls reach only through whole fits: the softmax chunk's float64 gradient test, the
# preconditioners' matrices and eigendecomposition, and the chunk-wide L-BFGS call the float32 phase is spied on at
from shapley_research.utilities.learners import _logistic, _precondition
from shapley_research.utilities.learners._softmax import _SoftmaxChunk


def _split(loader, n_train):
    X, y = loader(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X = StandardScaler().fit_transform(X[order])
    return X[:n_train], y[order][:n_train], X[n_train:n_train + 100], y[order][n_train:n_train + 100]


def _masks(n, m, seed=3):
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((m, n)), axis=1) < rng.integers(20, n + 1, m)[:, None]


DEVICE = "cpu"  # torch on the CPU: the chunk-wide path that mixed precision belongs to


@pytest.fixture(scope="module")
def wine():
    return _split(load_wine, 120)


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def test_mixed_precision_meets_the_tolerance_in_float64(wine, torch):
    X, y, Xt, yt = wine
    masks = _masks(len(y), 40)
    mixed = LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", solver="lbfgs", tol=1e-6, device=DEVICE)
    assert mixed._mixed
    counts = mixed.targets.class_counts(masks)
    theta = mixed._fit_thetas(masks, counts)
    chunk = _SoftmaxChunk.from_masks(mixed._softmax_data, masks, counts, mixed.C)
    _, gradient = chunk.objective(theta)
    assert bool(torch.all(chunk.converged(gradient, 1e-6)))  # the float64 gradient test, at the float32 phase's end


def test_mixed_and_float64_agree_to_the_solver_tolerance(wine, torch):
    X, y, Xt, yt = wine
    masks = _masks(len(y), 40)
    mixed = LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", solver="lbfgs", tol=1e-8, device=DEVICE)
    full = LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", solver="lbfgs", tol=1e-8)  # the CPU's float64
    np.testing.assert_allclose(mixed.evaluate(masks), full.evaluate(masks), rtol=0, atol=1e-6)
    coef_mixed, _ = mixed.fit_subsets(masks[:10])
    coef_full, _ = full.fit_subsets(masks[:10])
    np.testing.assert_allclose(coef_mixed, coef_full, rtol=0, atol=1e-5)


@pytest.mark.parametrize("device", [None, DEVICE])
def test_l_bfgs_is_deterministic(wine, device):
    if device is not None:
        pytest.importorskip("torch")
    X, y, Xt, yt = wine
    masks = _masks(len(y), 30)
    first = LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", solver="lbfgs", device=device).evaluate(masks)
    second = LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", solver="lbfgs", device=device).evaluate(masks)
    assert first.tobytes() == second.tobytes()


def test_float32_learners_and_the_cpu_path_skip_the_float32_phase(wine, torch):
    X, y, Xt, yt = wine
    learner = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", dtype="float32", device=DEVICE)
    assert not learner._mixed and LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", device=DEVICE)._mixed
    assert not LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs")._mixed  # numpy: compiled float64 loops


@pytest.mark.parametrize("capability, mixed", [((9, 0), False), ((8, 0), False), ((8, 9), True), ((12, 0), True)])
def test_auto_skips_the_float32_phase_on_gpus_with_full_rate_float64(wine, torch, monkeypatch, capability, mixed):
    """H100/H200/A100-class cards run float64 at half the float32 rate, where the float32 phase measured slower."""
    X, y, Xt, yt = wine
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    auto = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", device=DEVICE)
    forced = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", device=DEVICE, mixed_precision=True)
    assert auto.mixed_precision == "auto" and auto._mixed  # torch's CPU device: float64 is slow there
    auto.device = forced.device = torch.device("cuda", 0)  # the card the capability describes
    assert auto._mixed is mixed and forced._mixed


def test_the_low_rank_preconditioner_is_the_full_one_at_full_rank(wine, monkeypatch):
    X, y, Xt, yt = wine
    learner = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", mixed_precision=False)
    masks = _masks(len(y), 8)
    counts = learner.targets.class_counts(masks)
    chunk = _SoftmaxChunk.from_masks(learner._softmax_data, masks, counts, learner.C)
    monkeypatch.setattr(_precondition, "PRECONDITION_MIN_CURVATURE", 0.0)  # every direction kept
    eigenvalues, vectors, _ = learner._full_curvature(learner._backend)
    apply = _precondition.low_rank_inverse(eigenvalues, vectors, chunk, learner.n_players)  # no class blocks
    r = np.random.default_rng(0).normal(size=(8,) + learner._full_theta.shape) * chunk.present[:, :, None]
    K, q = learner._full_theta.shape
    weight = chunk.C * chunk.size / learner.n_players
    for b in range(8):
        expected = vectors @ ((vectors.T @ r[b].ravel()) / (weight[b] * eigenvalues + 1.0))
        # the eigenvectors come from float32 LAPACK, orthonormal to about 1e-6: the two forms agree to 1e-5
        np.testing.assert_allclose(apply(r, np.arange(8))[b], expected.reshape(K, q) * chunk.present[b, :, None],
                                   rtol=0, atol=1e-5)


def test_coalitions_past_q_directions_take_the_class_blocks_of_the_scaled_hessian(wine, monkeypatch):
    X, y, Xt, yt = wine
    learner = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", mixed_precision=False)
    masks = _masks(len(y), 8)
    masks[:2] &= (y != 0)[None, :]  # a class absent: the mean runs over the classes present
    counts = learner.targets.class_counts(masks)
    chunk = _SoftmaxChunk.from_masks(learner._softmax_data, masks, counts, learner.C)
    K, q = learner.targets.n_classes, learner.design.q
    monkeypatch.setattr(_precondition, "PRECONDITION_MIN_CURVATURE", 1e-3)  # most directions: past q
    apply = learner._preconditioner(chunk)
    assert apply.all_blocks and (np.asarray(apply.use_blocks) == (apply.ranks > 0)).all()
    theta = learner._warm_start()
    Z = theta @ learner._softmax_data.X.T
    P = np.exp(Z - Z.max(axis=0))
    P /= P.sum(axis=0)
    Xd = learner._softmax_data.X
    weight = chunk.C * chunk.size / learner.n_players
    r = np.random.default_rng(0).normal(size=(8, K, q)) * chunk.present[:, :, None]
    got = apply(r, np.arange(8))
    for b in range(8):
        present = chunk.present[b]
        mean = r[b][present].mean(axis=0)  # the class-sum directions pass as under the penalty I
        expected = np.zeros((K, q))
        for k in np.flatnonzero(present):
            block = weight[b] * (Xd.T * (P[k] * (1 - P[k]))) @ Xd + np.eye(q)  # the penalty taken as I
            expected[k] = np.linalg.solve(block, r[b, k] - mean)
        expected[present] += mean - expected[present].mean(axis=0)
        np.testing.assert_allclose(got[b], expected, rtol=0, atol=1e-10)
    monkeypatch.setattr(_precondition, "PRECONDITION_MIN_CURVATURE", 1e9)  # one direction: the low rank
    assert not learner._preconditioner(chunk).some_blocks


@pytest.mark.parametrize("device", [None, DEVICE])
def test_the_class_blocks_leave_the_class_sum_directions_to_the_penalty(device):
    """Unscaled wine, C=100, no intercept: blocks applied to the class mean too left 2-3 of 8 coalitions short of
    tol in 500 iterations (the iterates drifted off sum_k theta_k = 0); on the centred part alone every one meets
    tol, in fewer iterations than from the low-rank preconditioner."""
    if device is not None:
        pytest.importorskip("torch")
    X, y = load_wine(return_X_y=True)
    masks = np.random.default_rng(0).random((8, len(y))) < 0.7
    learner = LogisticRegressionUtility(X, y, X, y, C=100.0, fit_intercept=False, solver="lbfgs", device=device,
                                        mixed_precision=False)
    with pytest.warns(ConvergenceWarning, match="the full-data fit every coalition starts from"):  # not theirs
        coef, _ = learner.fit_subsets(masks)
    assert learner.last_fit_info_["n_not_converged"] == 0 and learner.last_fit_info_["n_iter_max"] < 250
    assert np.abs(np.asarray(coef).sum(axis=1)).max() < 1e-3 * np.abs(np.asarray(coef)).max()


@pytest.mark.parametrize("newton, model_tol, expected", [(True, 1e-4, 1e-6), (True, 1e-8, 1e-8),
                                                         (False, 1e-4, 1e-4), (False, 1e-7, 1e-7)])
def test_routed_tolerance(wine, newton, model_tol, expected):
    X, y, Xt, yt = wine if newton else _split(load_digits, 300)  # 3 x 14 unknowns: Newton; 10 x 65: L-BFGS
    game = ModelUtility(LogisticRegression(tol=model_tol), X, y, Xt, yt, fast=True)
    assert game.learner_.tol == expected
    game.evaluate(np.ones((1, len(y)), dtype=bool))
    assert game.learner_.last_fit_info_["solver"] == ("newton" if newton else "lbfgs")


@pytest.mark.parametrize("model_max_iter, expected", [(100, 500), (499, 500), (10_000, 10_000)])
def test_a_routed_model_keeps_a_larger_max_iter(wine, model_max_iter, expected):
    X, y, Xt, yt = wine
    game = ModelUtility(LogisticRegression(max_iter=model_max_iter), X, y, Xt, yt, fast=True)
    assert game.learner_.max_iter == expected


@pytest.mark.slow
def test_routed_digits_agree_with_scikit_learn_within_its_tolerance():
    X, y, Xt, yt = _split(load_digits, 300)
    Xt, yt = Xt[:100], yt[:100]
    masks = _masks(300, 12)
    batched = ModelUtility(LogisticRegression(max_iter=1000), X, y, Xt, yt, fast="auto")
    plain = ModelUtility(LogisticRegression(max_iter=1000), X, y, Xt, yt, fast=False)
    assert batched.learner_ is not None and batched.learner_.tol == 1e-4
    assert np.max(np.abs(batched.evaluate(masks) - plain.evaluate(masks))) <= 0.02


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_mixed_precision_must_be_a_boolean_or_auto(wine, value):
    X, y, Xt, yt = wine
    with pytest.raises(ValueError, match="mixed_precision must be 'auto', True or False"):
        LogisticRegressionUtility(X, y, Xt, yt, mixed_precision=value)


def test_float32_gradient_test_is_trusted_only_at_loose_tolerances(wine, torch, monkeypatch):
    """Above FLOAT32_MIN_TOL only stalled coalitions get float64 steps; below, every coalition is checked in float64."""
    X, y, Xt, yt = wine
    masks = _masks(len(y), 30)
    calls = []
    original = _logistic._lbfgs  # the chunk-wide path of devices

    def spy(chunk, theta, *args, **kwargs):
        calls.append((chunk.data.backend.dtype_name, len(chunk)))
        return original(chunk, theta, *args, **kwargs)

    monkeypatch.setattr(_logistic, "_lbfgs", spy)
    LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", tol=1e-8, device=DEVICE).evaluate(masks)
    assert ("float64", len(masks)) in calls  # every coalition refined
    calls.clear()
    LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", tol=1e-4, device=DEVICE).evaluate(masks)
    assert all(size < len(masks) for kind, size in calls if kind == "float64" and size > 1)


def test_the_eigendecomposition_is_the_same_bits_under_any_thread_limit():
    """LAPACK's rounding depends on its threads; the call holds its own, so a pin taken before scipy loaded, or
    none, gives the same preconditioner (a re-run of an experiment once differed at 1e-11 without it)."""
    from threadpoolctl import threadpool_limits

    from shapley_research.utilities.learners._array import ArrayBackend
    from shapley_research.utilities.learners._precondition import symmetric_eigen

    A = np.random.default_rng(0).normal(size=(300, 400))
    H, backend = A @ A.T, ArrayBackend(None, "float64")
    results = []
    for threads in (1, 2, None):
        with threadpool_limits(limits=threads):
            results.append(symmetric_eigen(H, backend))
    for values, vectors in results[1:]:
        np.testing.assert_array_equal(values, results[0][0])
        np.testing.assert_array_equal(vectors, results[0][1])
