"""Pipelines of per-coalition scalers and a linear model on the batched learners, against scikit-learn's Pipeline.

Each coalition's learner model must equal ``clone(pipeline).fit(X_S, y_S)``:
the scaler fitted on ``S`` alone. Coefficients are compared in the original
features (the fitted pipeline is affine in ``x``, so its decision function at
``0`` and at the unit vectors gives them). Tolerances as in ``test_learners``:
logistic coefficients and probabilities 1e-6 for Newton, 1e-4 for L-BFGS
(relative to the largest coefficient / absolute) against newton-cg at
``tol=1e-12``, ridge 1e-8
relative; utilities through ``ModelUtility`` within the issue's 0.02 in
accuracy of default-tolerance Pipeline fits. Every data set has a feature
that is constant on the first half of the training rows, and some coalitions
lie inside that half (zero spread: scale 1, as scikit-learn).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler

from shapley_research import LogisticRegressionUtility, ModelUtility, RidgeUtility
from shapley_research.utilities.learners import CoalitionScaling, ScalerStep, scaler_step, unsupported_reason
from shapley_research.games import supports_prefixes

SCALERS = {
    "standard": [StandardScaler()],
    "minmax": [MinMaxScaler(feature_range=(-1.0, 2.0))],
    "maxabs": [MaxAbsScaler()],
    "standard-no-mean": [StandardScaler(with_mean=False)],
    "standard-no-std": [StandardScaler(with_std=False)],
    "chained": [StandardScaler(), "passthrough", MaxAbsScaler()],
}


def with_half_constant_feature(X, n_train, seed):
    """``X`` with one more column: 0 on the first half of the training rows, spread elsewhere."""
    column = np.random.default_rng(seed).normal(3.0, 5.0, len(X))
    column[: n_train // 2] = 0.0
    return np.column_stack([X, column])


def split(X, y, n_train, n_test, seed):
    order = np.random.default_rng(seed).permutation(len(y))[: n_train + n_test]
    X = with_half_constant_feature(X[order], n_train, seed)
    return X[:n_train], y[order][:n_train], X[n_train:], y[order][n_train:]


@pytest.fixture(scope="module")
def binary():
    X, y = load_breast_cancer(return_X_y=True)
    return split(X[:, :8], y, 80, 60, 0)  # raw features of very different scales


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return split(X, y, 90, 60, 1)


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return split(X, y, 80, 60, 2)


def coalitions(y, m, seed, min_classes):
    """Masks: half inside the first half of the rows (the constant feature), half anywhere; enough classes."""
    rng, n, masks = np.random.default_rng(seed), len(y), []
    while len(masks) < m:
        pool = np.arange(n // 2) if len(masks) % 2 == 0 else np.arange(n)
        mask = np.zeros(n, dtype=bool)
        mask[rng.choice(pool, rng.integers(max(6, len(pool) // 3), len(pool) + 1), replace=False)] = True
        if len(np.unique(y[mask])) >= min_classes:
            masks.append(mask)
    return np.array(masks)


def affine_parts(pipeline, d, function):
    """``(coef, intercept)`` in the original features of a fitted affine pipeline, from ``function`` at 0 and e_j."""
    values = np.asarray(getattr(pipeline, function)(np.vstack([np.zeros(d), np.eye(d)])))
    return values[1:] - values[0], values[0]


def reference_logistic():
    return LogisticRegression(solver="newton-cg", tol=1e-12, max_iter=1000)


@pytest.mark.parametrize("kind", list(SCALERS))
def test_binary_logistic_coalitions_equal_the_pipeline(binary, kind):
    X_train, y_train, X_test, y_test = binary
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, tol=1e-10, scalers=SCALERS[kind])
    masks = coalitions(y_train, 6, 3, min_classes=2)
    coef, intercept = game.fit_subsets(masks)
    proba = game.predict_proba(masks)
    for row, mask in enumerate(masks):
        pipeline = make_pipeline(*SCALERS[kind], reference_logistic()).fit(X_train[mask], y_train[mask])
        expected_coef, expected_intercept = affine_parts(pipeline, X_train.shape[1], "decision_function")
        scale = np.abs(expected_coef).max()
        np.testing.assert_allclose(coef[row], expected_coef, rtol=0, atol=1e-6 * scale)
        np.testing.assert_allclose(intercept[row], expected_intercept, rtol=0, atol=1e-6 * max(scale, 1.0))
        np.testing.assert_allclose(proba[row], pipeline.predict_proba(X_test), rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", ["standard", "minmax", "maxabs"])
@pytest.mark.parametrize("solver", ["newton", "lbfgs"])
def test_multiclass_logistic_coalitions_equal_the_pipeline(wine, kind, solver):
    X_train, y_train, X_test, y_test = wine
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, tol=1e-10, solver=solver,
                                     scalers=SCALERS[kind])
    masks = coalitions(y_train, 4, 4, min_classes=3)
    coef, intercept = game.fit_subsets(masks)
    proba = game.predict_proba(masks)
    assert game.last_fit_info_["n_not_converged"] == 0
    tolerance = 1e-6 if solver == "newton" else 1e-4  # as test_learners: L-BFGS stops less sharply
    for row, mask in enumerate(masks):
        pipeline = make_pipeline(*SCALERS[kind], reference_logistic()).fit(X_train[mask], y_train[mask])
        expected_coef, expected_intercept = affine_parts(pipeline, X_train.shape[1], "decision_function")
        scale = np.abs(expected_coef).max()
        np.testing.assert_allclose(coef[row], expected_coef.T, rtol=0, atol=tolerance * scale)
        np.testing.assert_allclose(intercept[row], expected_intercept, rtol=0, atol=tolerance * max(scale, 1.0))
        np.testing.assert_allclose(proba[row], pipeline.predict_proba(X_test), rtol=0, atol=tolerance)


@pytest.mark.slow  # seconds: torch's first calls
@pytest.mark.parametrize("solver", ["newton", "lbfgs"])
def test_the_torch_backend_computes_the_same_pipeline_fits(wine, solver):
    pytest.importorskip("torch")
    X_train, y_train, X_test, y_test = wine
    masks = coalitions(y_train, 4, 11, min_classes=2)
    # float64 throughout: mixed precision's float32 phase rounds differently in numpy and torch
    games = [LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", solver=solver,
                                       scalers=[StandardScaler()], device=device, mixed_precision=False)
             for device in (None, "cpu")]
    numpy_values, torch_values = (game.evaluate(masks) for game in games)
    np.testing.assert_allclose(torch_values, numpy_values, rtol=1e-9)


@pytest.mark.parametrize("kind", list(SCALERS))
def test_ridge_coalitions_equal_the_pipeline(diabetes, kind):
    X_train, y_train, X_test, y_test = diabetes
    game = RidgeUtility(X_train, y_train, X_test, y_test, "r2", alpha=3.0, scalers=SCALERS[kind])
    masks = coalitions(y_train, 6, 5, min_classes=1)
    coef, intercept = game.fit_subsets(masks)
    predictions = game.predict(masks)
    values = game.evaluate(masks)
    for row, mask in enumerate(masks):
        pipeline = make_pipeline(*SCALERS[kind], Ridge(alpha=3.0)).fit(X_train[mask], y_train[mask])
        expected_coef, expected_intercept = affine_parts(pipeline, X_train.shape[1], "predict")
        np.testing.assert_allclose(coef[row], expected_coef, rtol=1e-8, atol=1e-8 * np.abs(expected_coef).max())
        np.testing.assert_allclose(intercept[row], expected_intercept, rtol=1e-8)
        np.testing.assert_allclose(predictions[row], pipeline.predict(X_test), rtol=1e-8)
        assert values[row] == pytest.approx(pipeline.score(X_test, y_test), rel=1e-8)


def test_ridge_without_intercept_and_a_scale_only_scaler(diabetes):
    X_train, y_train, X_test, y_test = diabetes
    game = RidgeUtility(X_train, y_train, X_test, y_test, fit_intercept=False, scalers=[MaxAbsScaler()])
    mask = coalitions(y_train, 1, 6, min_classes=1)[0]
    pipeline = make_pipeline(MaxAbsScaler(), Ridge(fit_intercept=False)).fit(X_train[mask], y_train[mask])
    np.testing.assert_allclose(game.predict(mask[None])[0], pipeline.predict(X_test), rtol=1e-8)


@pytest.mark.parametrize("kind", list(SCALERS))
def test_coalition_scales_equal_the_fitted_scalers(binary, kind):
    X_train = binary[0]
    steps = [scaler_step(f"s{i}", s) for i, s in enumerate(SCALERS[kind]) if not isinstance(s, str)]
    scaling = CoalitionScaling(steps, X_train)
    masks = coalitions(binary[1], 6, 7, min_classes=1)
    counts = np.random.default_rng(8).integers(0, 3, (3, len(X_train)))  # bootstrap-like integer weights
    for weights, scales in zip(np.vstack([masks, counts]), scaling.scales(np.vstack([masks, counts]))):
        rows = np.repeat(X_train, weights.astype(int), axis=0)  # a weight counts as repeated rows
        expected = np.ones(X_train.shape[1])
        for step in (s for s in SCALERS[kind] if not isinstance(s, str)):
            fitted = clone(step).fit(rows)
            factor = fitted.scale_ if type(step) is MinMaxScaler else 1.0 / (
                fitted.scale_ if fitted.scale_ is not None else 1.0)
            expected, rows = expected * factor, fitted.transform(rows)
        np.testing.assert_allclose(scales, expected, rtol=1e-12)


def test_a_constant_feature_in_the_coalition_gets_scale_one(binary):
    X_train = binary[0]
    inside = np.zeros(len(X_train), dtype=bool)
    inside[:10] = True  # the last feature is 0 on these rows
    for scaler in (StandardScaler(), MaxAbsScaler()):
        scales = CoalitionScaling([scaler_step("s", scaler)], X_train).scales(inside[None])[0]
        assert scales[-1] == 1.0
    minmax = CoalitionScaling([scaler_step("s", MinMaxScaler((-1.0, 2.0)))], X_train).scales(inside[None])[0]
    assert minmax[-1] == 3.0  # (b - a) / 1 for a zero range, as scikit-learn


# --------------------------------------------------------------------------------- through ModelUtility

@pytest.mark.parametrize("model, data", [
    (make_pipeline(StandardScaler(), LogisticRegression()), "binary"),
    (make_pipeline(MinMaxScaler(), LogisticRegression()), "wine"),
    (make_pipeline(StandardScaler(), Ridge()), "diabetes"),
])
def test_model_utility_routes_a_pipeline_and_agrees_with_per_subset_fits(model, data, request):
    X_train, y_train, X_test, y_test = request.getfixturevalue(data)
    metric = "r2" if data == "diabetes" else "accuracy"
    fast = ModelUtility(model, X_train, y_train, X_test, y_test, metric=metric, fast="auto")
    slow = ModelUtility(model, X_train, y_train, X_test, y_test, metric=metric, fast=False)
    assert fast.route_.batched and "Pipeline scalers fitted per coalition" in str(fast.route_)
    assert fast.learner_.scaling is not None
    assert not supports_prefixes(fast)  # the learner has no one-pass path with scalers: refits
    masks = coalitions(y_train, 6, 9, min_classes=3 if data == "wine" else 1)
    values = fast.evaluate(masks)
    assert np.abs(values - slow.evaluate(masks)).max() <= (0.02 if metric == "accuracy" else 1e-8)
    assert np.array_equal(values, fast.evaluate(masks))  # deterministic: the same bits again


@pytest.mark.parametrize("model, reason", [
    (make_pipeline(PCA(2, random_state=0), LogisticRegression()),
     "step 'pca' (PCA) is not a per-coalition scaler the batched learners can express"),
    (make_pipeline(MinMaxScaler(clip=True), LogisticRegression()),
     "step 'minmaxscaler' (MinMaxScaler) has clip=True, which is not affine on the test set"),
    (make_pipeline(StandardScaler(), LogisticRegression(fit_intercept=False)),
     "step 'standardscaler' shifts the features, which a final estimator with fit_intercept=False cannot absorb"),
    (make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced")),
     "final step 'logisticregression' (LogisticRegression): class_weight is not supported"),
])
def test_route_names_the_step_that_falls_back(binary, model, reason):
    X_train, y_train, X_test, y_test = binary
    game = ModelUtility(model, X_train, y_train, X_test, y_test, fast="auto")
    assert game.learner_ is None
    assert str(game.route_) == f"per-subset fits: Pipeline has no batched learner ({reason})"
    with pytest.raises(ValueError, match="fast=True but Pipeline has no batched learner: " + reason.split(" (")[0]):
        ModelUtility(model, X_train, y_train, X_test, y_test, fast=True)


def test_a_pipeline_ending_in_passthrough_has_no_learner():
    model = Pipeline([("scale", StandardScaler()), ("last", "passthrough")])
    assert unsupported_reason(model, "accuracy") == "the final step 'last' is 'passthrough', not an estimator"


def test_a_pipeline_subclass_and_fast_false_fit_the_pipeline_itself(binary):
    X_train, y_train, X_test, y_test = binary

    class MyPipeline(Pipeline):
        pass

    sub = ModelUtility(MyPipeline([("s", StandardScaler()), ("lr", LogisticRegression())]),
                       X_train, y_train, X_test, y_test, fast="auto")
    assert sub.learner_ is None and "only sklearn.linear_model.LogisticRegression and Ridge" in str(sub.route_)
    off = ModelUtility(make_pipeline(StandardScaler(), LogisticRegression()), X_train, y_train, X_test, y_test,
                       fast=False)
    assert off.learner_ is None and str(off.route_).startswith("per-subset fits: fast=False")


def test_a_ridge_pipeline_without_intercept_and_maxabs_is_batched(diabetes):
    X_train, y_train, X_test, y_test = diabetes
    game = ModelUtility(make_pipeline(MaxAbsScaler(), Ridge(fit_intercept=False)), X_train, y_train, X_test,
                        y_test, metric="r2", fast=True)
    assert isinstance(game.learner_, RidgeUtility) and not game.learner_.design.fit_intercept


def test_prefixes_refit_exactly_with_scalers(binary):
    X_train, y_train, X_test, y_test = binary
    game = LogisticRegressionUtility(X_train, y_train, X_test, y_test, scalers=[StandardScaler()])
    assert game.exact_prefixes
    permutation = np.random.default_rng(10).permutation(len(y_train))[None]
    prefixes = np.zeros((len(y_train), len(y_train)), dtype=bool)
    for k in range(len(y_train)):
        prefixes[k, permutation[0, : k + 1]] = True
    np.testing.assert_array_equal(game.evaluate_prefixes(permutation)[0], game.evaluate(prefixes))


# --------------------------------------------------------------------------------- bad input

def test_bad_scalers_and_options_are_refused(binary):
    X_train, y_train, X_test, y_test = binary
    with pytest.raises(TypeError, match="scalers must be a sequence of scikit-learn scalers"):
        LogisticRegressionUtility(X_train, y_train, X_test, y_test, scalers=StandardScaler())
    with pytest.raises(ValueError, match=r"scalers: step 'scalers\[0\]' \(PCA\) is not a per-coalition scaler"):
        LogisticRegressionUtility(X_train, y_train, X_test, y_test, scalers=[PCA(2)])
    with pytest.raises(ValueError, match="feature_range"):
        RidgeUtility(X_train, y_train.astype(float), X_test, y_test.astype(float), scalers=[MinMaxScaler((1, 0))])
    with pytest.raises(ValueError, match="fit_intercept=False cannot absorb"):
        LogisticRegressionUtility(X_train, y_train, X_test, y_test, fit_intercept=False, scalers=[MinMaxScaler()])
    with pytest.raises(ValueError, match="prefix_path='exact' cannot be combined with scalers"):
        LogisticRegressionUtility(X_train, y_train, X_test, y_test, prefix_path="exact", scalers=[MaxAbsScaler()])
    with pytest.raises(ValueError, match="at least one ScalerStep"):
        CoalitionScaling([], X_train)
    with pytest.raises(ValueError, match="warm_prefixes=True cannot be used with a Pipeline"):
        ModelUtility(make_pipeline(StandardScaler(), LogisticRegression()), X_train, y_train, X_test, y_test,
                     fast="auto", warm_prefixes=True)
    assert ScalerStep("s", "maxabs").shifts is False
