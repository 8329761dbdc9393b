"""Data-OOB's batched path: the bagged models trained a chunk at a time by a batched learner.

The batched path draws the same bootstrap samples as the per-fit path (``bootstrap_indices``), so the
out-of-bag sets are identical; the learners fit scikit-learn's ``sample_weight`` objective with the
bootstrap counts as weights, so the out-of-bag predictions agree wherever the per-fit model is solved
tightly (``tol=1e-8``; at scikit-learn's default ``tol=1e-4`` a few points near the decision boundary
flip) and the values are then equal. Ridge agrees to rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler

from shapley_research import LogisticRegressionUtility, RidgeUtility, data_oob

QUIET = {"progress": False}
OLD_OPTIONS = {"n_estimators", "task", "score"}


def breast_cancer(n=300):
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X)[:n], y[:n]


def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def assert_same_run(per_fit, batched):
    """Identical out-of-bag sets, values, standard errors and counts of fitted / single-class samples."""
    np.testing.assert_array_equal(per_fit.info["oob_counts"], batched.info["oob_counts"])
    np.testing.assert_array_equal(per_fit.values, batched.values)
    np.testing.assert_allclose(per_fit.stderr, batched.stderr, rtol=1e-12, atol=1e-15)
    assert per_fit.n_evaluations == batched.n_evaluations
    assert per_fit.info["n_single_class"] == batched.info["n_single_class"]
    assert per_fit.seed == batched.seed and per_fit.n_samples == batched.n_samples


# ----------------------------------------------------------------------------- same results as per fit

@pytest.mark.slow  # over a second
@pytest.mark.parametrize("data, model", [
    (breast_cancer, LogisticRegression(tol=1e-8)),
    (iris, LogisticRegression(tol=1e-8, max_iter=1000)),  # three classes: multinomial and binary samples
])
def test_logistic_batched_equals_per_fit_at_a_tight_tolerance(data, model):
    X, y = data()
    per_fit = data_oob(model, X, y, n_estimators=50, seed=3, **QUIET)
    batched = data_oob(model, X, y, n_estimators=50, seed=3, fast=True, **QUIET)
    assert_same_run(per_fit, batched)
    assert per_fit.info["route"] == "per-fit"
    assert batched.info["route"].startswith("batched: LogisticRegressionUtility(n_players=")
    assert batched.info["options"]["route"] == batched.info["route"]


def test_logistic_at_the_default_tolerance_differs_only_near_the_boundary():
    # scikit-learn stops at tol=1e-4, the learner at 1e-6: a handful of out-of-bag predictions may differ
    X, y = breast_cancer()
    per_fit = data_oob(LogisticRegression(), X, y, n_estimators=40, seed=0, **QUIET)
    batched = data_oob(LogisticRegression(), X, y, n_estimators=40, seed=0, fast="auto", **QUIET)
    np.testing.assert_array_equal(per_fit.info["oob_counts"], batched.info["oob_counts"])
    # each differing prediction moves one value by 1/B_i; the total moved is at most a few predictions
    moved = np.sum(np.abs(per_fit.values - batched.values) * per_fit.info["oob_counts"])
    assert moved <= 0.002 * per_fit.info["oob_counts"].sum()


def test_ridge_batched_equals_per_fit_to_rounding():
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:200], y[:200]
    per_fit = data_oob(Ridge(alpha=0.1), X, y, n_estimators=40, seed=2, **QUIET)
    batched = data_oob(Ridge(alpha=0.1), X, y, n_estimators=40, seed=2, fast=True, **QUIET)
    np.testing.assert_array_equal(per_fit.info["oob_counts"], batched.info["oob_counts"])
    np.testing.assert_allclose(batched.values, per_fit.values, rtol=1e-8)
    np.testing.assert_allclose(batched.stderr, per_fit.stderr, rtol=1e-6)
    assert batched.info["task"] == "regression" and batched.info["score"] == "negative_squared_error"
    assert batched.n_evaluations == 40 and batched.info["route"].startswith("batched: RidgeUtility(")


def test_single_class_samples_are_counted_and_predict_their_class():
    # one minority point in 6: about a third of the samples hold a single class
    X = np.arange(6, dtype=float).reshape(-1, 1)
    y = np.array([0, 0, 0, 0, 0, 1])
    model = LogisticRegression(tol=1e-8)
    per_fit = data_oob(model, X, y, n_estimators=60, seed=4, **QUIET)
    batched = data_oob(model, X, y, n_estimators=60, seed=4, fast=True, **QUIET)
    assert 0 < batched.info["n_single_class"] < 60
    assert_same_run(per_fit, batched)


@pytest.mark.filterwarnings("ignore:data_oob:RuntimeWarning")
def test_auto_runs_unsupported_models_per_fit():
    X, y = iris()
    model = RandomForestClassifier(n_estimators=3, random_state=0)
    auto = data_oob(model, X, y, n_estimators=5, seed=1, fast="auto", **QUIET)
    default = data_oob(model, X, y, n_estimators=5, seed=1, **QUIET)
    np.testing.assert_array_equal(auto.values, default.values)
    assert auto.info["route"] == default.info["route"] == "per-fit"


@pytest.mark.filterwarnings("ignore:data_oob:RuntimeWarning")
def test_default_path_keeps_its_options():
    # committed results of the per-fit path compare info["options"]: no new key there
    X, y = iris()
    result = data_oob(LogisticRegression(), X, y, n_estimators=3, seed=0, **QUIET)
    assert set(result.info["options"]) == OLD_OPTIONS and result.info["route"] == "per-fit"


# ----------------------------------------------------------------------------- reproducibility

def test_same_seed_bit_identical_other_seed_other_values():
    X, y = breast_cancer(200)
    first = data_oob(LogisticRegression(), X, y, n_estimators=30, seed=7, fast=True, **QUIET)
    again = data_oob(LogisticRegression(), X, y, n_estimators=30, seed=7, fast=True, **QUIET)
    np.testing.assert_array_equal(first.values, again.values)
    np.testing.assert_array_equal(first.stderr, again.stderr)
    other = data_oob(LogisticRegression(), X, y, n_estimators=30, seed=8, fast=True, **QUIET)
    assert not np.array_equal(first.values, other.values)


def test_n_jobs_is_ignored_on_the_numpy_batched_path():
    X, y = breast_cancer(120)
    one = data_oob(LogisticRegression(), X, y, n_estimators=20, seed=1, fast=True, **QUIET)
    two = data_oob(LogisticRegression(), X, y, n_estimators=20, seed=1, fast=True, n_jobs=2, **QUIET)
    np.testing.assert_array_equal(one.values, two.values)


# ----------------------------------------------------------------------------- a learner as the model

def test_learner_instance_runs_its_own_recipe():
    X, y = breast_cancer(150)
    learner = LogisticRegressionUtility(X, y, X[:10], y[:10], tol=1e-8)
    direct = data_oob(learner, X, y, n_estimators=30, seed=5, **QUIET)
    routed = data_oob(LogisticRegression(tol=1e-8), X, y, n_estimators=30, seed=5, fast=True, **QUIET)
    np.testing.assert_array_equal(direct.values, routed.values)
    assert direct.info["task"] == "classification" and direct.info["route"] == f"batched: {learner!r}"


def test_ridge_learner_instance_decides_regression():
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:80], y[:80]
    result = data_oob(RidgeUtility(X, y, X[:5], y[:5]), X, y, n_estimators=20, seed=0, **QUIET)
    assert result.info["task"] == "regression" and (result.values <= 0).all()


@pytest.mark.parametrize("change, match", [
    ({"n": 50}, "n_players=50, but X_train has 100 points"),
    ({"labels": True}, "built on another y_train"),
    ({"device": "cpu"}, "runs on its own device"),
    ({"task": "regression"}, "is a classification learner"),
])
def test_learner_instance_mismatches_are_refused(change, match):
    X, y = breast_cancer(100)
    n = change.get("n", 100)
    y_built = 1 - y if change.get("labels") else y
    learner = LogisticRegressionUtility(X[:n], y_built[:n], X[:5], y[:5])
    kwargs = {key: change[key] for key in ("device", "task") if key in change}
    with pytest.raises(ValueError, match=match):
        data_oob(learner, X, y, n_estimators=3, seed=0, **kwargs)


@pytest.mark.slow  # over a second
def test_torch_model_utility_runs_through_data_oob():
    torch = pytest.importorskip("torch")
    from torch import nn

    from shapley_research import TorchModelUtility

    X, y = iris()
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    game = TorchModelUtility(mlp, X, y, X[:5], y[:5], steps=20, learning_rate=0.05)
    result = data_oob(game, X, y, n_estimators=20, seed=0, **QUIET)
    assert np.isfinite(result.values).mean() > 0.95 and result.info["task"] == "classification"
    assert result.n_evaluations == 20 and result.info["route"].startswith("batched: TorchModelUtility(")
    np.testing.assert_array_equal(result.values, data_oob(game, X, y, n_estimators=20, seed=0, **QUIET).values)
    np.testing.assert_array_equal(result.values, data_oob(game, X, y, n_estimators=20, seed=0, n_jobs=2,
                                                          **QUIET).values)  # one thread on torch's CPU device
    game.device = "cuda:0"  # an accelerator (refused on the attribute, before anything runs on it)
    with pytest.raises(ValueError, match="n_jobs=2 with TorchModelUtility on device 'cuda:0'"):
        data_oob(game, X, y, n_estimators=2, seed=0, n_jobs=2)


# ----------------------------------------------------------------------------- routing errors, before any fit

class NoFit(LogisticRegression):
    """Not routed (not exactly LogisticRegression) and must never be fitted."""

    def fit(self, X, y, sample_weight=None):
        raise AssertionError("fit was called")


def test_fast_true_with_an_unsupported_model_names_the_reason():
    X, y = iris()
    with pytest.raises(ValueError, match="fast=True but RandomForestClassifier has no batched learner: only "
                                         "sklearn.linear_model.LogisticRegression and Ridge"):
        data_oob(RandomForestClassifier(), X, y, n_estimators=3, seed=0, fast=True)
    with pytest.raises(ValueError, match="only the L2 penalty"):
        data_oob(LogisticRegression(penalty="l1", solver="saga"), X, y, n_estimators=3, seed=0, fast=True)
    with pytest.raises(ValueError, match="task='regression', but its batched learner is for classification"):
        data_oob(LogisticRegression(), X, y.astype(float), n_estimators=3, seed=0, fast=True, task="regression")


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the refusal on a machine without CUDA")
@pytest.mark.parametrize("model, fast", [(LogisticRegression(), True), (NoFit(), "auto"), (NoFit(), False)])
def test_cuda_without_a_gpu_is_refused_before_any_fit(model, fast):
    X, y = iris()
    with pytest.raises(ValueError, match="asks for CUDA"):
        data_oob(model, X, y, n_estimators=3, seed=0, fast=fast, device="cuda")


@pytest.mark.parametrize("model, fast, match", [
    (LogisticRegression(), False, "fast=False fits LogisticRegression itself"),
    (NoFit(), "auto", "needs a model with a batched learner, but NoFit has none"),
])
def test_a_device_needs_the_batched_path(model, fast, match):
    X, y = iris()
    with pytest.raises(ValueError, match=match):
        data_oob(model, X, y, n_estimators=3, seed=0, fast=fast, device="cpu")


def test_torch_cpu_device_runs_the_learner_there_and_refuses_workers():
    pytest.importorskip("torch")
    X, y = breast_cancer(150)
    model = LogisticRegression(tol=1e-8)
    on_torch = data_oob(model, X, y, n_estimators=20, seed=2, fast="auto", device="cpu", **QUIET)
    on_numpy = data_oob(model, X, y, n_estimators=20, seed=2, fast=True, **QUIET)
    assert "device='cpu'" in on_torch.info["route"]
    np.testing.assert_array_equal(on_torch.values, on_numpy.values)
    np.testing.assert_array_equal(on_torch.values, data_oob(model, X, y, n_estimators=20, seed=2, fast="auto",
                                                            device="cpu", n_jobs=2, **QUIET).values)


@pytest.mark.parametrize("fast", ["yes", 1, None])
def test_bad_fast_is_refused(fast):
    X, y = iris()
    with pytest.raises(ValueError, match="fast must be 'auto', True or False"):
        data_oob(NoFit(), X, y, n_estimators=3, seed=0, fast=fast)


@pytest.mark.filterwarnings("ignore:data_oob:RuntimeWarning")
def test_progress_bar_moves_by_chunks(monkeypatch):
    import tqdm.auto

    updates = []

    class Recording(tqdm.auto.tqdm):
        def update(self, n=1):
            updates.append(n)
            return super().update(n)

    monkeypatch.setattr(tqdm.auto, "tqdm", Recording)
    X, y = breast_cancer(100)
    result = data_oob(LogisticRegression(), X, y, n_estimators=10, seed=0, fast=True, progress=False)
    assert updates == [10] and result.n_evaluations == 10  # one chunk: the 10 estimators at once
    updates.clear()
    data_oob(LogisticRegression(), X, y, n_estimators=4, seed=0, progress=False)
    assert updates == [1, 1, 1, 1]  # per fit


def test_several_chunks_give_the_same_values(monkeypatch):
    from shapley_research.estimators import _data_oob_batched

    X, y = breast_cancer(150)
    whole = data_oob(LogisticRegression(tol=1e-8), X, y, n_estimators=20, seed=9, fast=True, **QUIET)
    monkeypatch.setattr(_data_oob_batched, "MAX_CHUNK", 7)
    chunked = data_oob(LogisticRegression(tol=1e-8), X, y, n_estimators=20, seed=9, fast=True, **QUIET)
    assert_same_run(whole, chunked)
