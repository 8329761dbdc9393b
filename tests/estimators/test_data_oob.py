"""Data-OOB (Kwon & Zou, ICML 2023): out-of-bag scores over a bagged ensemble of the user's model.

The values are checked against an independent computation from the same bootstrap samples
(recomputed with ``bootstrap_indices`` and a 1-nearest-neighbour rule written here), and on the
task the method is for: flipped labels get low values, a clean data set's values carry no order.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import KNeighborsClassifier

from shapley_research import LogisticRegressionUtility, data_oob
from shapley_research.estimators import bootstrap_indices


def blobs(n=120, seed=0):
    """Two overlapping Gaussian classes: logistic regression reaches about 97% on the clean labels."""
    X, y = make_classification(n_samples=n, n_features=4, n_informative=3, n_redundant=0, n_clusters_per_class=1,
                               class_sep=0.7, flip_y=0.0, random_state=seed)
    return X, y


def flip(y, fraction, seed):
    """``y`` with a random ``fraction`` of its (binary) labels flipped, and the flipped rows."""
    rng = np.random.default_rng(seed)
    flipped = rng.choice(len(y), size=int(fraction * len(y)), replace=False)
    noisy = y.copy()
    noisy[flipped] = 1 - noisy[flipped]
    return noisy, flipped


def one_nn_predictions(X_fit, y_fit, X_query):
    """1-nearest-neighbour labels by brute force (ties to the lowest row, as in the first argmin)."""
    distances = ((X_query[:, None, :] - X_fit[None, :, :]) ** 2).sum(axis=2)
    return y_fit[np.argmin(distances, axis=1)]


def oob_scores_by_hand(X, y, seed, n_estimators, predict, score):
    """Per estimator, the out-of-bag rows and their scores, recomputed from the bootstrap indices."""
    per_point = [[] for _ in range(len(y))]
    for b in range(n_estimators):
        rows = bootstrap_indices(seed, b, len(y))
        oob = np.setdiff1d(np.arange(len(y)), rows)
        if oob.size:
            for i, s in zip(oob, score(y[oob], predict(X[rows], y[rows], X[oob]))):
                per_point[i].append(float(s))
    return per_point


class RaisingModel:
    """A model whose fit must never be reached: raises if it is."""

    _estimator_type = "classifier"

    def fit(self, X, y):
        raise AssertionError("fit was called")

    def predict(self, X):
        raise AssertionError("predict was called")


class FirstLabelModel:
    """Deterministic: predicts the label of the first training row; refuses a single class like most classifiers."""

    _estimator_type = "classifier"

    def fit(self, X, y):
        if np.unique(y).size < 2:
            raise ValueError("needs two classes")
        self.label_ = y[0]
        return self

    def predict(self, X):
        return np.full(len(X), self.label_)


# ----------------------------------------------------------------------------- the values themselves

def test_values_equal_mean_oob_correctness_computed_by_hand():
    X, y = blobs(40, seed=1)
    y = np.where(y == 1, "spam", "ham")  # string labels go through untouched
    result = data_oob(KNeighborsClassifier(n_neighbors=1), X, y, n_estimators=30, seed=11)
    per_point = oob_scores_by_hand(X, y, 11, 30, one_nn_predictions, lambda t, p: (t == p).astype(float))
    counts = np.array([len(s) for s in per_point])
    assert (counts > 1).all()
    np.testing.assert_array_equal(result.info["oob_counts"], counts)
    np.testing.assert_allclose(result.values, [np.mean(s) for s in per_point], rtol=0, atol=1e-12)
    expected_stderr = [np.std(s, ddof=1) / np.sqrt(len(s)) for s in per_point]
    np.testing.assert_allclose(result.stderr, expected_stderr, rtol=1e-10, atol=1e-12)
    assert result.method == "data_oob" and result.seed == 11
    assert result.n_evaluations == 30 and result.n_samples == 30
    assert result.info["n_never_oob"] == 0 and result.info["n_single_class"] == 0
    assert result.info["score"] == "correctness" and result.info["task"] == "classification"


def test_single_class_bootstrap_predicts_its_class_without_a_fit():
    # one minority point in 6: a bootstrap sample misses it with probability (5/6)^6 ~ 0.33
    X = np.arange(6, dtype=float).reshape(-1, 1)
    y = np.array([0, 0, 0, 0, 0, 1])
    result = data_oob(FirstLabelModel(), X, y, n_estimators=60, seed=4)

    def predict(X_fit, y_fit, X_query):
        return np.full(len(X_query), y_fit[0])  # a single class predicts itself; else the first row's label

    per_point = oob_scores_by_hand(X, y, 4, 60, predict, lambda t, p: (t == p).astype(float))
    single = sum(np.unique(y[bootstrap_indices(4, b, 6)]).size == 1 for b in range(60))
    assert 0 < single < 60
    assert result.info["n_single_class"] == single and result.n_evaluations == 60 - single
    np.testing.assert_allclose(result.values, [np.mean(s) for s in per_point], rtol=0, atol=1e-12)


def test_regression_default_score_is_negative_squared_error():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=50)
    corrupted = np.arange(5)
    y[corrupted] += 6.0  # gross target errors
    result = data_oob(LinearRegression(), X, y, n_estimators=40, seed=5)

    def predict(X_fit, y_fit, X_query):
        design = np.column_stack([np.ones(len(X_fit)), X_fit])
        coef = np.linalg.lstsq(design, y_fit, rcond=None)[0]
        return np.column_stack([np.ones(len(X_query)), X_query]) @ coef

    per_point = oob_scores_by_hand(X, y, 5, 40, predict, lambda t, p: -(p - t) ** 2)
    assert result.info["task"] == "regression" and result.info["score"] == "negative_squared_error"
    np.testing.assert_allclose(result.values, [np.mean(s) for s in per_point], rtol=1e-8, atol=1e-10)
    assert (result.values <= 0).all()
    assert set(np.argsort(result.values)[:5]) == set(corrupted)


def test_custom_score_callable():
    X, y = blobs(40, seed=3)
    y = y.astype(float)

    def absolute_error(y_true, y_pred):
        return -np.abs(y_pred - y_true)

    result = data_oob(LinearRegression(), X, y, n_estimators=20, seed=6, score=absolute_error)
    reference = data_oob(LinearRegression(), X, y, n_estimators=20, seed=6)
    assert result.info["score"] == "absolute_error"
    assert not np.allclose(result.values, reference.values)
    with pytest.raises(ValueError, match="one score per point"):
        data_oob(LinearRegression(), X, y, n_estimators=2, seed=6, score=lambda t, p: np.mean(p - t))


# ----------------------------------------------------------------------------- on the task it is for

def test_flipped_labels_get_low_values():
    X, y = blobs(150, seed=0)
    noisy, flipped = flip(y, 0.15, seed=1)
    result = data_oob(LogisticRegression(), X, noisy, n_estimators=100, seed=0)
    is_flipped = np.isin(np.arange(len(y)), flipped)
    auroc = roc_auc_score(is_flipped, -result.values)  # low value flags a flipped label
    assert auroc > 0.9
    assert result.values[is_flipped].mean() < result.values[~is_flipped].mean() - 0.3


def test_clean_values_are_not_ordered_by_an_arbitrary_subset():
    # the baseline of the previous test: no flipped labels, the "flipped" rows an arbitrary subset
    X, y = blobs(150, seed=0)
    _, arbitrary = flip(y, 0.15, seed=1)
    result = data_oob(LogisticRegression(), X, y, n_estimators=100, seed=0)
    auroc = roc_auc_score(np.isin(np.arange(len(y)), arbitrary), -result.values)
    assert 0.35 < auroc < 0.65


@pytest.mark.slow  # over a second
def test_standard_errors_match_the_spread_over_seeds():
    X, y = blobs(60, seed=4)
    noisy, _ = flip(y, 0.2, seed=2)
    runs = [data_oob(KNeighborsClassifier(n_neighbors=3), X, noisy, n_estimators=40, seed=s) for s in range(24)]
    values = np.array([r.values for r in runs])
    spread = values.std(axis=0, ddof=1)
    reported = np.sqrt(np.mean([r.stderr**2 for r in runs], axis=0))
    moving = spread > 0
    ratio = np.sqrt(np.mean(spread[moving] ** 2) / np.mean(reported[moving] ** 2))
    assert 0.8 < ratio < 1.25


# ----------------------------------------------------------------------------- reproducibility

@pytest.mark.slow  # starts a pool of worker processes (loky)
def test_identical_for_any_n_jobs():
    X, y = blobs(80, seed=5)
    noisy, _ = flip(y, 0.1, seed=3)
    sequential = data_oob(LogisticRegression(), X, noisy, n_estimators=24, seed=8, n_jobs=1)
    parallel = data_oob(LogisticRegression(), X, noisy, n_estimators=24, seed=8, n_jobs=2)
    np.testing.assert_array_equal(sequential.values, parallel.values)
    np.testing.assert_array_equal(sequential.stderr, parallel.stderr)
    np.testing.assert_array_equal(sequential.info["oob_counts"], parallel.info["oob_counts"])


def test_same_seed_same_values_other_seed_other_values():
    X, y = blobs(60, seed=6)
    noisy, _ = flip(y, 0.1, seed=4)
    model = KNeighborsClassifier(n_neighbors=3)
    first = data_oob(model, X, noisy, n_estimators=30, seed=1)
    np.testing.assert_array_equal(first.values, data_oob(model, X, noisy, n_estimators=30, seed=1).values)
    assert not np.array_equal(first.values, data_oob(model, X, noisy, n_estimators=30, seed=2).values)
    drawn = data_oob(model, X, noisy, n_estimators=30)  # no seed: one is drawn and kept on the result
    np.testing.assert_array_equal(drawn.values, data_oob(model, X, noisy, n_estimators=30, seed=drawn.seed).values)
    assert not hasattr(model, "classes_")  # the user's model is never fitted


def test_a_random_model_left_unseeded_is_seeded_per_bag_from_the_seed():
    """A forest at random_state=None drew fresh trees at every call: the same seed gave other values."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = blobs(60, seed=7)
    noisy, _ = flip(y, 0.1, seed=5)
    for model in (RandomForestClassifier(n_estimators=3, max_depth=3),
                  make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=3, max_depth=3))):
        first = data_oob(model, X, noisy, n_estimators=20, seed=3, n_jobs=1)
        np.testing.assert_array_equal(first.values, data_oob(model, X, noisy, n_estimators=20, seed=3, n_jobs=2).values)
        assert not np.array_equal(first.values, data_oob(model, X, noisy, n_estimators=20, seed=4).values)
    # a random_state the user set is kept: every bag's forest is the same forest of its sample
    fixed = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=11)
    rows = bootstrap_indices(3, 0, len(y))
    oob = np.setdiff1d(np.arange(len(y)), rows)
    by_hand = fixed.fit(X[rows], noisy[rows]).predict(X[oob]) == noisy[oob]
    with pytest.warns(RuntimeWarning, match="no out-of-bag prediction"):  # one bag: its sample is never out
        result = data_oob(RandomForestClassifier(n_estimators=3, max_depth=3, random_state=11), X, noisy,
                          n_estimators=1, seed=3)
    np.testing.assert_array_equal(result.values[oob], by_hand.astype(float))


def test_every_unseeded_member_of_an_ensemble_gets_its_own_seed(monkeypatch):
    """One seed for every random_state key made a voting ensemble's two unseeded members one model."""
    from sklearn.ensemble import VotingClassifier

    X, y = blobs(40, seed=2)
    members = [("a", RandomForestClassifier(n_estimators=2)), ("b", RandomForestClassifier(n_estimators=2))]
    seen, original = [], VotingClassifier.fit

    def fit(self, X, y, **kw):
        seen.append((self.estimators[0][1].random_state, self.estimators[1][1].random_state))
        return original(self, X, y, **kw)

    monkeypatch.setattr(VotingClassifier, "fit", fit)
    first = data_oob(VotingClassifier(members), X, y, n_estimators=20, seed=1)
    np.testing.assert_array_equal(first.values, data_oob(VotingClassifier(members), X, y, n_estimators=20,
                                                         seed=1).values)
    assert all(a is not None and b is not None and a != b for a, b in seen)
    assert seen[:20] == seen[20:] and len(set(seen[:20])) == 20  # repeated by the seed, one pair per bag


def test_a_model_without_set_params_is_fitted_as_it_is():
    class NoSetParams:  # cloneable (its parameters are its constructor's), without set_params
        def __init__(self, random_state=None):
            self.random_state = random_state

        def get_params(self, deep=True):
            return {"random_state": self.random_state}

        def fit(self, X, y):
            self.mean_ = float(np.mean(y))
            return self

        def predict(self, X):
            return np.full(len(X), self.mean_)

    X, y = blobs(40, seed=2)
    assert np.isfinite(data_oob(NoSetParams(), X, y, n_estimators=20, seed=0).values).any()


# ----------------------------------------------------------------------------- never out of bag

def test_points_never_out_of_bag_get_nan_with_a_warning():
    X, y = blobs(40, seed=7)
    with pytest.warns(RuntimeWarning, match="no out-of-bag prediction"):
        result = data_oob(KNeighborsClassifier(n_neighbors=1), X, y, n_estimators=2, seed=3)
    rows = [bootstrap_indices(3, b, 40) for b in range(2)]
    in_every = np.intersect1d(*rows)
    assert in_every.size > 0
    np.testing.assert_array_equal(result.info["never_oob"], in_every)
    assert result.info["n_never_oob"] == in_every.size
    np.testing.assert_array_equal(np.flatnonzero(np.isnan(result.values)), in_every)
    once = result.info["oob_counts"] == 1
    assert np.isnan(result.stderr[once]).all() and not np.isnan(result.values[once]).any()


# ----------------------------------------------------------------------------- bad input, before any fit

X_OK, Y_OK = blobs(20, seed=8)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"X_train": X_OK[:, 0]}, ValueError, "X_train must be 2-D"),
    ({"X_train": np.where(X_OK > 1, np.nan, X_OK)}, ValueError, "X_train contains NaN"),
    ({"X_train": X_OK.astype(str)}, TypeError, "X_train must be a numeric array"),
    ({"X_train": X_OK + 1j}, TypeError, "X_train must be a real"),
    ({"y_train": Y_OK[:-1]}, ValueError, "y_train has 19 targets but X_train has 20"),
    ({"y_train": np.tile(Y_OK, (2, 1))}, ValueError, "y_train must be 1-D"),
    ({"y_train": np.where(Y_OK > 0, np.nan, 0.0)}, ValueError, "y_train contains NaN"),
    ({"y_train": Y_OK.astype(str), "task": "regression"}, TypeError, "y_train must be real numbers"),
    ({"n_estimators": 0}, ValueError, "n_estimators must be >= 1"),
    ({"n_estimators": 2.5}, TypeError, "n_estimators must be an integer"),
    ({"n_estimators": True}, TypeError, "n_estimators must be an integer"),
    ({"seed": -1}, ValueError, "seed must be >= 0"),
    ({"task": "ranking"}, ValueError, "task must be one of"),
    ({"score": "accuracy"}, TypeError, "score must be a callable"),
    ({"n_jobs": 0}, ValueError, "n_jobs must be"),
    ({"progress": "yes"}, TypeError, "progress must be True, False or None"),
    ({"model": object()}, TypeError, "model must be an estimator with fit and predict"),
    ({"model": RaisingModel}, TypeError, "model must be an estimator instance"),
])
def test_bad_input_is_rejected_before_any_fit(kwargs, error, match):
    arguments = {"model": RaisingModel(), "X_train": X_OK, "y_train": Y_OK, "n_estimators": 3, "seed": 0,
                 **kwargs}
    with pytest.raises(error, match=match):
        data_oob(**arguments)


def test_a_failing_fit_names_the_bootstrap_sample():
    with pytest.raises(AssertionError, match="fit was called") as caught:
        data_oob(RaisingModel(), X_OK, Y_OK, n_estimators=3, seed=0)
    assert any("bootstrap sample 0" in note for note in getattr(caught.value, "__notes__", []))


def test_wrong_shaped_predictions_are_refused():
    class TwoColumns(FirstLabelModel):
        def predict(self, X):
            return np.zeros((len(X), 2))

    with pytest.raises(ValueError, match="TwoColumns.predict must return one prediction per out-of-bag point"):
        data_oob(TwoColumns(), X_OK, Y_OK, n_estimators=3, seed=0)


def test_a_raw_table_goes_to_the_model_as_it_is():
    """A DataFrame with a text column and a ColumnTransformer pipeline: the values of the same model on the
    one-hot encoded array (the encoder learns the same columns from every bootstrap sample that holds the three
    categories), flipped labels low, and fast=True refused by name."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    X, y = blobs(n=120, seed=3)
    y, flipped = flip(y, 0.15, seed=3)
    category = np.array(["a", "b", "c"])[np.arange(120) % 3]
    table = pd.DataFrame({**{f"x{j}": X[:, j] for j in range(4)}, "kind": category})
    encoded = np.column_stack([X, category[:, None] == np.array(["a", "b", "c"])]).astype(float)
    on_table = make_pipeline(ColumnTransformer([("num", StandardScaler(), ["x0", "x1", "x2", "x3"]),
                                                ("cat", OneHotEncoder(), ["kind"])]), LogisticRegression())
    on_array = make_pipeline(ColumnTransformer([("num", StandardScaler(), [0, 1, 2, 3]),
                                                ("cat", "passthrough", [4, 5, 6])]), LogisticRegression())
    result = data_oob(on_table, table, y, n_estimators=60, seed=1)
    np.testing.assert_allclose(result.values, data_oob(on_array, encoded, y, n_estimators=60, seed=1,
                                                       fast=False).values, rtol=0, atol=1e-12)
    assert result.info["route"] == "per-fit"
    assert roc_auc_score(np.isin(np.arange(120), flipped), -result.values) > 0.8
    with pytest.raises(ValueError, match="fast=True needs numeric features"):
        data_oob(on_table, table, y, n_estimators=5, seed=1, fast=True)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_warning_of_every_fit_is_shown_once_with_its_count(n_jobs):
    import warnings

    from joblib import parallel_config
    from sklearn.exceptions import ConvergenceWarning

    X, y = make_classification(n_samples=60, n_features=5, random_state=0)
    with warnings.catch_warnings(record=True) as caught, parallel_config(backend="threading"):
        warnings.simplefilter("always")
        data_oob(LogisticRegression(max_iter=1), X, y, n_estimators=8, seed=0, n_jobs=n_jobs)
    converge = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(converge) == 1
    assert "data_oob: raised 8 time(s) while fitting 8 bootstrap models" in str(converge[0].message)


def test_sparse_features_go_to_the_model_as_they_are():
    import scipy.sparse as sp

    X, y = make_classification(n_samples=80, n_features=6, random_state=1)
    X[np.abs(X) < 0.7] = 0.0
    dense = data_oob(LogisticRegression(), X, y, n_estimators=30, seed=3)
    sparse = data_oob(LogisticRegression(), sp.csr_matrix(X), y, n_estimators=30, seed=3, fast="auto")
    np.testing.assert_array_equal(sparse.values, dense.values)
    assert sparse.info["options"].get("route") is None  # per-fit: the batched learners take dense arrays
    with pytest.raises(ValueError, match="X_train is a sparse matrix"):
        data_oob(LogisticRegression(), sp.csr_matrix(X), y, fast=True)
    # a batched learner takes dense features: its sparse X_train is refused as sparse, not as other data
    learner = LogisticRegressionUtility(X, y, X, y)
    with pytest.raises(TypeError, match="X_train must be a dense array; sparse matrices are not supported"):
        data_oob(learner, sp.csr_matrix(X), y)


def test_a_dataframe_of_sparse_columns_stays_sparse():
    """pandas' sparse frames convert to a dense array without a word; here they go to the model as CSR."""
    import pandas as pd
    import scipy.sparse as sp

    X, y = make_classification(n_samples=80, n_features=6, random_state=1)
    X[np.abs(X) < 0.7] = 0.0
    frame = pd.DataFrame.sparse.from_spmatrix(sp.csr_matrix(X))
    result = data_oob(LogisticRegression(), frame, y, n_estimators=30, seed=3)
    np.testing.assert_array_equal(result.values, data_oob(LogisticRegression(), X, y, n_estimators=30, seed=3).values)
    assert result.info["options"].get("route") is None  # per fit, as for a sparse matrix
