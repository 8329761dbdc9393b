"""The batched learners' torch path: the same objective and solvers as numpy, on a device.

Runs on torch's CPU device (CI has no GPU); the GPU script in
``benchmarks/gpu_check.py`` runs the same comparisons on CUDA.
"""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris, load_wine
from sklearn.linear_model import LogisticRegression, Ridge

from shapley_research import LogisticRegressionUtility, ModelUtility, RidgeUtility, msr_banzhaf

pytestmark = pytest.mark.slow  # the torch path: several seconds a test on CPU

torch = pytest.importorskip("torch")


def _split(loader, n_train=90, n_test=50, seed=0):
    X, y = loader(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    order = np.random.default_rng(seed).permutation(len(y))
    train, test = order[:n_train], order[n_train:n_train + n_test]
    return X[train], y[train], X[test], y[test]


def _masks(n, m=120, seed=1):
    rng = np.random.default_rng(seed)
    masks = rng.random((m, n)) < rng.uniform(0.05, 1.0, (m, 1))
    masks[:3] = False
    masks[3, :2] = True  # tiny coalitions, often one class
    return masks


def _without_class(y, masks, label):
    """Coalitions that miss one class (three or more classes left only two)."""
    return masks & (y != label)[None, :]


DATA = {"iris": load_iris, "wine": load_wine, "breast_cancer": load_breast_cancer}


@pytest.mark.parametrize("name", sorted(DATA))
@pytest.mark.parametrize("solver", ["newton", "lbfgs"])
def test_torch_path_equals_numpy_path(name, solver, metric="neg_log_loss"):
    X, y, Xt, yt = _split(DATA[name])
    masks = _masks(len(y), m=60)
    if len(np.unique(y)) > 2:
        masks = np.vstack([masks, _without_class(y, masks[:20], y[0])])
    # float64 throughout: the float32 phase of mixed precision rounds differently in the two libraries
    numpy_game = LogisticRegressionUtility(X, y, Xt, yt, metric, solver=solver, mixed_precision=False)
    torch_game = LogisticRegressionUtility(X, y, Xt, yt, metric, solver=solver, device="cpu", mixed_precision=False)
    np.testing.assert_allclose(torch_game.evaluate(masks), numpy_game.evaluate(masks), rtol=0, atol=1e-9)
    coef_numpy, intercept_numpy = numpy_game.fit_subsets(masks[:30])
    coef_torch, intercept_torch = torch_game.fit_subsets(masks[:30])
    np.testing.assert_allclose(coef_torch, coef_numpy, rtol=0, atol=1e-8)
    np.testing.assert_allclose(intercept_torch, intercept_numpy, rtol=0, atol=1e-8)
    # held to the parameters' 1e-8: the libraries' roundings build up over the iterations, which left
    # probabilities 1.1e-9 apart on ill-conditioned breast cancer (torch 2.13 on an AMD EPYC)
    np.testing.assert_allclose(torch_game.predict_proba(masks[:30]), numpy_game.predict_proba(masks[:30]),
                               rtol=0, atol=1e-8)


def test_torch_path_scores_accuracy_like_numpy():
    X, y, Xt, yt = _split(load_wine)
    masks = _masks(len(y), m=60)
    expected = LogisticRegressionUtility(X, y, Xt, yt).evaluate(masks)
    np.testing.assert_array_equal(LogisticRegressionUtility(X, y, Xt, yt, device="cpu").evaluate(masks), expected)


@pytest.mark.parametrize("name", ["iris", "breast_cancer"])
def test_torch_path_agrees_with_scikit_learn(name):
    X, y, Xt, yt = _split(DATA[name])
    masks = _masks(len(y), m=12, seed=3)[4:]
    game = LogisticRegressionUtility(X, y, Xt, yt, device="cpu", tol=1e-10, max_iter=1000)
    coef, intercept = game.fit_subsets(masks)
    for row, mask in enumerate(masks):
        if len(np.unique(y[mask])) != len(game.classes_):
            continue
        model = LogisticRegression(tol=1e-12, max_iter=10_000).fit(X[mask], y[mask])
        np.testing.assert_allclose(coef[row].reshape(model.coef_.shape), model.coef_, rtol=1e-5, atol=1e-6)


def test_float32_agrees_with_float64():
    X, y, Xt, yt = _split(load_wine)
    masks = _masks(len(y))
    exact = LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", device="cpu")
    single = LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", device="cpu", dtype="float32", tol=1e-4)
    np.testing.assert_allclose(single.evaluate(masks), exact.evaluate(masks), rtol=0, atol=2e-3)


def test_torch_path_is_deterministic():
    X, y, Xt, yt = _split(load_iris)
    masks = _masks(len(y))
    first = LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", device="cpu").evaluate(masks)
    second = LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", device="cpu").evaluate(masks)
    assert first.tobytes() == second.tobytes()


def test_ridge_torch_path_equals_numpy_and_scikit_learn():
    X, y, Xt, yt = _split(load_diabetes, n_train=120, n_test=80)
    masks = _masks(len(y))
    numpy_game = RidgeUtility(X, y, Xt, yt, alpha=0.7)
    torch_game = RidgeUtility(X, y, Xt, yt, alpha=0.7, device="cpu")
    expected = numpy_game.evaluate(masks)
    np.testing.assert_allclose(torch_game.evaluate(masks), expected, rtol=1e-10)
    coef, intercept = torch_game.fit_subsets(masks[5:8])
    for row, mask in enumerate(masks[5:8]):
        model = Ridge(alpha=0.7).fit(X[mask], y[mask])
        np.testing.assert_allclose(coef[row], model.coef_, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(intercept[row], model.intercept_, rtol=1e-8)


@pytest.mark.parametrize("device", [None, "cpu"])
def test_integer_weights_are_sample_weights(device):
    """Bootstrap counts fit scikit-learn's sample_weight objective, which equals repeating the rows."""
    X, y, Xt, yt = _split(load_iris)
    rng = np.random.default_rng(5)
    counts = rng.multinomial(len(y), np.full(len(y), 1 / len(y)), size=3)
    game = LogisticRegressionUtility(X, y, Xt, yt, device=device, tol=1e-10, max_iter=1000)
    coef, intercept = game.fit_subsets(counts)
    for row, weight in enumerate(counts):
        model = LogisticRegression(tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=weight)
        np.testing.assert_allclose(coef[row], model.coef_, rtol=1e-5, atol=1e-6)
        repeated = np.repeat(np.arange(len(y)), weight)
        np.testing.assert_array_equal(game.predict(counts[row:row + 1], Xt)[0],
                                      LogisticRegression(tol=1e-12, max_iter=10_000)
                                      .fit(X[repeated], y[repeated]).predict(Xt))
    ridge = RidgeUtility(X, y.astype(float), Xt, yt.astype(float), device=device)
    ridge_coef, _ = ridge.fit_subsets(counts)
    np.testing.assert_allclose(ridge_coef[0], Ridge().fit(X, y, sample_weight=counts[0]).coef_, rtol=1e-8)


def test_prefixes_on_a_device_refit_every_prefix():
    X, y, Xt, yt = _split(load_iris, n_train=30)
    game = LogisticRegressionUtility(X, y, Xt, yt, "neg_log_loss", device="cpu")
    assert game.exact_prefixes
    permutations = np.array([np.random.default_rng(s).permutation(30) for s in range(2)])
    masks = np.array([[np.isin(np.arange(30), p[:k + 1]) for k in range(30)] for p in permutations])
    np.testing.assert_allclose(game.evaluate_prefixes(permutations), game.evaluate(masks.reshape(-1, 30))
                               .reshape(2, 30), rtol=0, atol=1e-12)


def test_model_utility_routes_to_the_device():
    X, y, Xt, yt = _split(load_iris)
    game = ModelUtility(LogisticRegression(), X, y, Xt, yt, fast="auto", device="cpu")
    assert game.learner_.device.type == "cpu" and "device" in game.route_.reason
    reference = ModelUtility(LogisticRegression(), X, y, Xt, yt, fast=True)
    masks = _masks(len(y), m=20)
    np.testing.assert_allclose(game.evaluate(masks), reference.evaluate(masks), atol=1e-9)


def test_bad_devices_and_dtypes_fail_before_any_work():
    X, y, Xt, yt = _split(load_iris)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device='cuda' asks for CUDA"):
            LogisticRegressionUtility(X, y, Xt, yt, device="cuda")
        with pytest.raises(ValueError, match="'cuda:1' asks for CUDA"):
            RidgeUtility(X, y.astype(float), Xt, yt.astype(float), device="cuda:1")
    with pytest.raises(ValueError, match="dtype must be 'float64' or 'float32'"):
        LogisticRegressionUtility(X, y, Xt, yt, device="cpu", dtype="float16")
    with pytest.raises(TypeError, match="device must be None, 'auto'"):
        LogisticRegressionUtility(X, y, Xt, yt, device=0)
    with pytest.raises(ValueError, match="not a torch device"):
        LogisticRegressionUtility(X, y, Xt, yt, device="gpu")
    with pytest.raises(ValueError, match="fast=False fits LogisticRegression itself on every coalition"):
        ModelUtility(LogisticRegression(), X, y, Xt, yt, fast=False, device="cpu")
    game = LogisticRegressionUtility(X, y, Xt, yt, device="cpu")
    with pytest.raises(ValueError, match="non-negative integers"):
        game.predict(-np.ones((1, len(y)), dtype=int))
    # torch's CPU device trains on one thread: workers share the cores, with the same bits
    np.testing.assert_array_equal(msr_banzhaf(game, 400, seed=0, n_jobs=2, batch_size=100).values,
                                  msr_banzhaf(game, 400, seed=0, batch_size=100).values)
    game.device = "cuda:0"  # an accelerator (refused on the attribute, before anything runs on it)
    with pytest.raises(ValueError, match="n_jobs=2 with LogisticRegressionUtility on device 'cuda:0'"):
        msr_banzhaf(game, 50, seed=0, n_jobs=2)


def test_auto_device_is_numpy_without_a_gpu():
    X, y, Xt, yt = _split(load_iris)
    game = LogisticRegressionUtility(X, y, Xt, yt, device="auto")
    assert (game.device is None) == (not torch.cuda.is_available())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_backend_starts_from_the_numpy_paths_full_data_fit(dtype):
    """One full-data problem is launch-bound on a device: it is solved once on the numpy path, to its bits."""
    X, y, Xt, yt = _split(load_wine)
    numpy_game = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs")
    torch_game = LogisticRegressionUtility(X, y, Xt, yt, solver="lbfgs", device="cpu", dtype=dtype)
    start = torch_game._warm_start()
    assert isinstance(start, torch.Tensor) and start.dtype == getattr(torch, dtype)
    assert start.numpy().tobytes() == numpy_game._warm_start().astype(dtype).tobytes()
    assert torch_game._backend.dtype_name == dtype and torch_game.device is not None  # the learner stays on torch
    assert "_full_theta" not in numpy_game._on_numpy().__dict__  # a numpy twin starts without backend caches
