"""ModelUtility on the data a user hands it: raw DataFrames through a Pipeline, frames, lists, sparse matrices,
missing values.

Text columns go to the model's own preprocessing, sparse matrices to the model
as they are, NaN where the model takes it; what cannot work is refused up
front, before any fit. Coalitions and warnings are tested in
``test_model_utility_scorers_and_unfit_coalitions.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import get_scorer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from _model_utility_data import iris_split, two_class_prefixes
from shapley_research import ModelUtility, permutation_shapley


@pytest.fixture(scope="module")
def multiclass():
    return iris_split()


# ---------------------------------------------------------------------------------------------
# Raw data through a Pipeline, and the inputs that already worked
# ---------------------------------------------------------------------------------------------

def raw_frames(multiclass, missing=False):
    X_train, y_train, X_test, y_test = multiclass
    colours = np.array(["red", "green", "blue"])

    def frame(X, y, seed):
        df = pd.DataFrame(X[:, :2], columns=["length", "width"])
        df["colour"] = colours[(y + np.random.default_rng(seed).integers(0, 2, len(y))) % 3]  # text, informative
        if missing:
            df.loc[::7, "length"] = np.nan
        return df

    return frame(X_train, y_train, 0), y_train, frame(X_test, y_test, 1), y_test


def raw_pipeline(missing=False):
    numbers = make_pipeline(SimpleImputer(), StandardScaler()) if missing else StandardScaler()
    columns = ColumnTransformer([("numbers", numbers, ["length", "width"]),
                                 ("text", OneHotEncoder(handle_unknown="ignore"), ["colour"])])
    return make_pipeline(columns, LogisticRegression())


@pytest.mark.slow  # over a second
@pytest.mark.parametrize("missing", [False, True])
def test_a_pipeline_is_valued_on_raw_data_as_scikit_learn_fits_it(multiclass, missing):
    X_train, y_train, X_test, y_test = raw_frames(multiclass, missing)
    model = raw_pipeline(missing)
    game = ModelUtility(model, X_train, y_train, X_test, y_test, fast="auto")
    assert game.learner_ is None and game.X_train is X_train  # given to the model as it is
    assert not game.route_.batched and "DataFrame" in str(game.route_)
    masks = two_class_prefixes(y_train, [10, 20])
    masks = np.vstack([masks, np.ones(len(y_train), bool)])
    expected = [clone(model).fit(X_train[m], y_train[m]).score(X_test, y_test) for m in masks]
    np.testing.assert_array_equal(game.evaluate(masks), expected)
    result = permutation_shapley(game, budget=2 * len(y_train), seed=0)
    assert np.isfinite(result.values).all()


def test_raw_data_refuses_fast_and_mismatched_test_features(multiclass):
    X_train, y_train, X_test, y_test = raw_frames(multiclass)
    model = raw_pipeline()
    with pytest.raises(ValueError, match="fast=True needs numeric features"):
        ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, fast=True)
    with pytest.raises(TypeError, match="X_test must be a DataFrame"):
        ModelUtility(model, X_train, y_train, X_test.to_numpy(), y_test)
    with pytest.raises(ValueError, match="X_test must have the columns of X_train"):
        ModelUtility(model, X_train, y_train, X_test[["width", "length", "colour"]], y_test)
    with pytest.raises(ValueError, match="fast must be 'auto', True or False"):
        ModelUtility(model, X_train, y_train, X_test, y_test, fast="yes")


def test_numeric_frames_series_lists_and_string_labels_give_the_array_values(multiclass):
    """Inputs that worked before go the same way as arrays: the same numbers, bit for bit."""
    X_train, y_train, X_test, y_test = multiclass
    names = np.array(["setosa", "versicolor", "virginica"])
    masks = np.vstack([two_class_prefixes(y_train, [8, 14]), np.ones(len(y_train), bool)])
    for metric in ("accuracy", "neg_log_loss", get_scorer("roc_auc_ovr")):
        reference = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, metric,
                                 fast=False).evaluate(masks)
        frames = ModelUtility(LogisticRegression(), pd.DataFrame(X_train), pd.Series(names[y_train]),
                              pd.DataFrame(X_test), pd.Series(names[y_test]), metric, fast=False)
        assert isinstance(frames.X_train, np.ndarray)
        lists = ModelUtility(LogisticRegression(), X_train.tolist(), y_train.tolist(), X_test.tolist(),
                             y_test.tolist(), metric, fast=False)
        np.testing.assert_array_equal(frames.evaluate(masks), reference)
        np.testing.assert_array_equal(lists.evaluate(masks), reference)

# ---------------------------------------------------------------------------------------------
# Sparse matrices and missing values
# ---------------------------------------------------------------------------------------------

def test_sparse_features_go_to_the_model_as_they_are():
    import scipy.sparse as sp
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression

    from shapley_research import ModelUtility, permutation_shapley

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    X[np.abs(X) < 0.5] = 0.0  # a sparse design, as text features are
    S = sp.csr_matrix(X)
    dense = ModelUtility(LogisticRegression(), X[:30], y[:30], X[100:200], y[100:200], fast=False)
    masks = np.random.default_rng(0).random((12, 30)) < 0.5
    masks[0] = False  # the empty coalition: the constant model's prediction on a sparse X_test
    for fast in ("auto", False):
        game = ModelUtility(LogisticRegression(), S[:30], y[:30], S[100:200], y[100:200], fast=fast)
        assert "sparse" in game.route_.reason and game.learner_ is None
        np.testing.assert_allclose(game.evaluate(masks), dense.evaluate(masks), atol=1e-12)
    run = permutation_shapley(game, 30 * 4, seed=0, progress=False)
    full, empty = game.evaluate(np.array([[True] * 30, [False] * 30]))
    assert np.isclose(run.values.sum(), full - empty)  # efficiency
    changed = S[:30].copy()
    changed[0, 0] = 7.0
    assert ModelUtility(LogisticRegression(), changed, y[:30], S[100:200], y[100:200]).fingerprint() != \
        game.fingerprint()
    with pytest.raises(ValueError, match="fast=True needs numeric features in dense arrays"):
        ModelUtility(LogisticRegression(), S[:30], y[:30], S[100:200], y[100:200], fast=True)
    bad = S[:30].copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="X_train contains NaN"):
        ModelUtility(LogisticRegression(), bad, y[:30], S[100:200], y[100:200])
    with pytest.raises(ValueError, match="X_train has 30 features but X_test has 29"):
        ModelUtility(LogisticRegression(), S[:30], y[:30], S[100:200, :29], y[100:200])
    # a DataFrame of sparse columns is taken as the matrix it holds, never densified
    frames = [pd.DataFrame.sparse.from_spmatrix(part) for part in (S[:30], S[100:200])]
    game = ModelUtility(LogisticRegression(), frames[0], y[:30], frames[1], y[100:200])
    assert "sparse matrices" in game.route_.reason
    np.testing.assert_allclose(game.evaluate(masks), dense.evaluate(masks), atol=1e-12)


def test_the_digest_of_a_sparse_matrix_is_its_values_and_leaves_it_as_it_was():
    import scipy.sparse as sp

    from shapley_research.games import content_digest

    # duplicate entries, unsorted indices and a stored zero: the matrix [[0, 2, 4], [4, 0, 0], [0, 0, 0]]
    messy = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0, 0.0]), np.array([2, 1, 2, 0, 1]),
                           np.array([0, 3, 5, 5])), shape=(3, 3))
    indices, data = messy.indices.copy(), messy.data.copy()
    dense = messy.toarray()
    assert content_digest(messy) == content_digest(sp.csr_matrix(dense)) == content_digest(sp.coo_matrix(dense))
    np.testing.assert_array_equal(messy.indices, indices)  # the caller's matrix untouched
    np.testing.assert_array_equal(messy.data, data)
    assert content_digest(sp.csr_matrix(dense * 2)) != content_digest(messy)


@pytest.mark.parametrize("make, refused", [
    ("GaussianNB", True), ("HistGradientBoostingClassifier", True), ("scaled", True), ("scaled_without_mean", False),
    ("KNeighborsClassifier", False), ("own", False)])
def test_a_model_that_takes_dense_input_only_is_refused_sparse_features_up_front(make, refused):
    """scikit-learn's tags say which of its models refuse sparse input; a user's class keeps the default tags
    (no sparse) whatever it takes, so it is never refused on them."""
    import scipy.sparse as sp
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from shapley_research import ModelUtility, data_oob

    class Majority(ClassifierMixin, BaseEstimator):  # takes sparse input, tags left at scikit-learn's default
        def fit(self, X, y):
            self.classes_ = np.unique(y)
            return self

        def predict(self, X):
            return np.full(X.shape[0], self.classes_[0])

    models = {"GaussianNB": GaussianNB, "HistGradientBoostingClassifier": HistGradientBoostingClassifier,
              "scaled": lambda: make_pipeline(StandardScaler(), LogisticRegression()),
              "scaled_without_mean": lambda: make_pipeline(StandardScaler(with_mean=False), LogisticRegression()),
              "KNeighborsClassifier": lambda: KNeighborsClassifier(3), "own": Majority}
    X = sp.random(60, 8, density=0.3, format="csr", random_state=0)
    y = np.arange(60) % 2
    calls = (lambda: ModelUtility(models[make](), X[:40], y[:40], X[40:], y[40:]),
             lambda: data_oob(models[make](), X, y, n_estimators=20, seed=0, progress=False))
    for call in calls:
        if refused:
            with pytest.raises(TypeError, match="sparse, but .* takes dense input only"):
                call()
        else:
            call()


def test_a_dataframe_with_missing_values_is_refused_up_front_where_the_model_cannot_take_them():
    """A DataFrame with NaN goes to the model as it is: a model whose tags refuse NaN would fail every coalition."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline

    from shapley_research import ModelUtility, data_oob

    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame.iloc[3, 1] = np.nan
    with pytest.raises(ValueError, match="X_train has missing values, but LogisticRegression does not accept them"):
        ModelUtility(LogisticRegression(), frame[:40], y[:40], frame[40:], y[40:])
    with pytest.raises(ValueError, match="X_train has missing values, but LogisticRegression"):
        data_oob(LogisticRegression(), frame, y, n_estimators=20, seed=0, progress=False)
    for model in (make_pipeline(SimpleImputer(), LogisticRegression()),
                  HistGradientBoostingClassifier(max_iter=5, random_state=0)):
        game = ModelUtility(model, frame[:40], y[:40], frame[40:], y[40:])
        assert np.isfinite(game.evaluate(np.ones((1, 40), dtype=bool))).all()


def test_an_array_with_missing_values_goes_to_a_model_that_takes_them():
    """NaN in a numpy array passes where the estimator receiving the features takes it (scikit-learn's tags),
    as in a DataFrame; infinities never do, nor NaN for a model that takes none."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline

    from shapley_research import ModelUtility, data_oob

    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    X[3, 1] = np.nan
    for model in (make_pipeline(SimpleImputer(), LogisticRegression()),
                  HistGradientBoostingClassifier(max_iter=5, random_state=0)):
        game = ModelUtility(model, X[:40], y[:40], X[40:], y[40:])
        framed = ModelUtility(model, pd.DataFrame(X[:40]), y[:40], pd.DataFrame(X[40:]), y[40:])
        masks = np.random.default_rng(0).random((4, 40)) < 0.7
        np.testing.assert_array_equal(game.evaluate(masks), framed.evaluate(masks))
        assert np.isfinite(data_oob(model, X, y, n_estimators=20, seed=0, progress=False).values).any()
    with pytest.raises(ValueError, match="X_train contains NaN or infinite values"):
        ModelUtility(LogisticRegression(), X[:40], y[:40], X[40:], y[40:])
    X[4, 0] = np.inf
    with pytest.raises(ValueError, match="X_train contains NaN or infinite values"):
        ModelUtility(HistGradientBoostingClassifier(random_state=0), X[:40], y[:40], X[40:], y[40:])
