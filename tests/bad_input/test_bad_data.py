"""Bad data for every data-taking callable, and the conventions documented instead of errors.

Part of the bad-input tables (tests/bad_input/_cases.py: what they check, the shared toys, the timeout).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from sklearn.linear_model import LogisticRegression, Ridge

from shapley_research import (all_s_influence, data_oob, exact_shapley, knn_shapley, KNNUtility, largest_s_influence,
                              LogisticObjective, LogisticRegressionUtility, ModelUtility, RidgeUtility,
                              threshold_knn_shapley)
from shapley_research.datasets import (pca_features)

from bad_input._cases import (assert_raises, NO_HANG, row, with_nan, X, XT, Y, YR, YT, YTR)

pytestmark = NO_HANG

# --------------------------------------------------------------------------------------------
# 4. Data x every data-taking callable
# --------------------------------------------------------------------------------------------

CLASSIFIERS = {
    "ModelUtility": lambda X, y, Xt, yt: ModelUtility(LogisticRegression(), X, y, Xt, yt),
    "LogisticRegressionUtility": lambda X, y, Xt, yt: LogisticRegressionUtility(X, y, Xt, yt),
    "KNNUtility": lambda X, y, Xt, yt: KNNUtility(X, y, Xt, yt, k=2),
    "knn_shapley": lambda X, y, Xt, yt: knn_shapley(X, y, Xt, yt, k=2),
    "threshold_knn_shapley": lambda X, y, Xt, yt: threshold_knn_shapley(X, y, Xt, yt, tau=1.0),
    "LogisticObjective": lambda X, y, Xt, yt: LogisticObjective(X, y, Xt, yt),
    "largest_s_influence": lambda X, y, Xt, yt: largest_s_influence(X, y, Xt, yt),
    "all_s_influence": lambda X, y, Xt, yt: all_s_influence(X, y, Xt, yt, 40, 0),
}
REGRESSORS = {
    "ModelUtility[Ridge]": lambda X, y, Xt, yt: ModelUtility(Ridge(), X, y, Xt, yt, metric="neg_mse"),
    "RidgeUtility": lambda X, y, Xt, yt: RidgeUtility(X, y, Xt, yt),
}
FEATURES_ONLY = {"pca_features": lambda X, y, Xt, yt: pca_features(X, Xt, 1)}


def object_array(values):
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


# change(X, y, Xt, yt) -> the four arguments; applies to every callable that takes that argument
FEATURE_CASES = [
    ("X_train_empty", lambda X, y, Xt, yt: (X[:0], y[:0], Xt, yt), ValueError, "X_train is empty"),
    ("X_test_empty", lambda X, y, Xt, yt: (X, y, Xt[:0], yt[:0]), ValueError, "X_test is empty"),
    ("X_train_no_features", lambda X, y, Xt, yt: (X[:, :0], y, Xt, yt), ValueError, "X_train has no features"),
    ("X_train_1d", lambda X, y, Xt, yt: (X[:, 0], y, Xt, yt), ValueError, "X_train must be 2-D"),
    ("X_train_3d", lambda X, y, Xt, yt: (X[:, :, None], y, Xt, yt), ValueError, "X_train must be 2-D"),
    ("X_test_1d", lambda X, y, Xt, yt: (X, y, Xt[:, 0], yt), ValueError, "X_test must be 2-D"),
    ("X_train_nan", lambda X, y, Xt, yt: (with_nan(X), y, Xt, yt), ValueError, "X_train contains NaN or inf"),
    ("X_train_plus_inf", lambda X, y, Xt, yt: (with_nan(X, np.inf), y, Xt, yt), ValueError,
     "X_train contains NaN or infinite"),
    ("X_train_minus_inf", lambda X, y, Xt, yt: (with_nan(X, -np.inf), y, Xt, yt), ValueError,
     "X_train contains NaN or infinite"),
    ("X_test_nan", lambda X, y, Xt, yt: (X, y, with_nan(Xt), yt), ValueError, "X_test contains NaN or inf"),
    ("X_test_inf", lambda X, y, Xt, yt: (X, y, with_nan(Xt, np.inf), yt), ValueError, "X_test contains NaN"),
    ("X_test_other_columns", lambda X, y, Xt, yt: (X, y, Xt[:, :1], yt), ValueError,
     "X_train has 2 features but X_test has 1"),
    ("X_test_frame_columns_reordered",
     lambda X, y, Xt, yt: (pd.DataFrame(X, columns=["a", "b"]), y, pd.DataFrame(Xt, columns=["b", "a"]), yt),
     ValueError, re.escape("X_test must have the columns of X_train in the same order; got ['b', 'a']")),
    ("X_train_numeric_strings", lambda X, y, Xt, yt: (X.astype(str), y, Xt, yt), TypeError,
     "X_train must be a numeric array, got strings"),
    ("X_train_objects", lambda X, y, Xt, yt: (np.array([["a", None]] * len(X), dtype=object), y, Xt, yt),
     TypeError, "X_train must be a numeric array"),
    ("X_train_complex", lambda X, y, Xt, yt: (X + 1j, y, Xt, yt), TypeError, "X_train must be a real numeric"),
    ("X_test_complex", lambda X, y, Xt, yt: (X, y, Xt * (1 + 0j), yt), TypeError, "X_test must be a real numeric"),
    ("X_train_sparse", lambda X, y, Xt, yt: (scipy.sparse.csr_matrix(X), y, Xt, yt), TypeError,
     "X_train must be a dense array"),
    ("X_train_sparse_frame", lambda X, y, Xt, yt: (pd.DataFrame(X).astype(pd.SparseDtype(float, 0.0)), y, Xt, yt),
     TypeError, "X_train must be a dense array; DataFrames of sparse columns are not supported"),
    ("X_train_ragged", lambda X, y, Xt, yt: ([[1.0, 2.0], [3.0]] + X[2:].tolist(), y, Xt, yt), TypeError,
     "X_train must be a numeric array"),
]
TARGET_CASES = [
    ("y_train_too_short", lambda X, y, Xt, yt: (X, y[:-1], Xt, yt), ValueError, "y_train has 5"),
    ("y_test_too_long", lambda X, y, Xt, yt: (X, y, Xt, np.r_[yt, yt[:1]]), ValueError, "y_test has 5"),
    ("y_train_2_columns", lambda X, y, Xt, yt: (X, np.c_[y, y], Xt, yt), ValueError, "y_train must be 1-D"),
    ("y_train_scalar", lambda X, y, Xt, yt: (X, y[0], Xt, yt), ValueError, "y_train must be 1-D"),
    ("y_train_none", lambda X, y, Xt, yt: (X, None, Xt, yt), ValueError, "y_train must be 1-D"),
]
LABEL_CASES = [
    ("y_train_nan", lambda X, y, Xt, yt: (X, np.where(np.arange(6) == 1, np.nan, y), Xt, yt), ValueError,
     "y_train contains NaN or infinite labels"),
    ("y_test_inf", lambda X, y, Xt, yt: (X, y, Xt, np.where(np.arange(4) == 1, np.inf, yt)), ValueError,
     "y_test contains NaN or infinite labels"),
    ("y_train_object_nan", lambda X, y, Xt, yt: (X, object_array([np.nan, 1, 0, 1, 0, 1]), Xt, yt), ValueError,
     "y_train contains NaN or infinite labels"),
    ("y_train_complex", lambda X, y, Xt, yt: (X, y + 0j, Xt, yt), TypeError, "y_train must hold class labels"),
    ("y_strings_vs_numbers", lambda X, y, Xt, yt: (X, np.array(["a", "b"] * 3), Xt, yt), TypeError,
     "y_test holds numbers .* but y_train holds strings"),
    ("y_train_continuous", lambda X, y, Xt, yt: (X, y + 0.25, Xt, yt), ValueError,
     "y_train holds continuous values .* needs a regression utility"),
    ("y_test_no_label_in_common", lambda X, y, Xt, yt: (X, y, Xt, yt + 10), ValueError,
     "y_test shares no label with y_train"),
    ("y_test_other_spelling",
     lambda X, y, Xt, yt: (X, np.where(y == 0, "no", "yes"), Xt, np.where(yt == 0, "No", "Yes")),
     ValueError, "y_test shares no label with y_train"),
]
UNSORTABLE_LABELS = [  # labels must be sortable (classes are sorted) except for the KNN utility
    ("y_train_mixed_objects", lambda X, y, Xt, yt: (X, object_array([None, 1, "a", 1, 0, 1]), Xt, yt), TypeError,
     "y_train labels must be mutually comparable"),
]
REGRESSION_TARGET_CASES = [
    ("y_train_nan", lambda X, y, Xt, yt: (X, with_nan(np.c_[y])[:, 0], Xt, yt), ValueError,
     "y_train contains NaN or infinite"),
    ("y_test_inf", lambda X, y, Xt, yt: (X, y, Xt, np.r_[yt[:-1], np.inf]), ValueError, "y_test contains NaN"),
    ("y_train_strings", lambda X, y, Xt, yt: (X, y.astype(str), Xt, yt), TypeError,
     "y_train must be real numbers for a regression metric"),
    ("y_train_words", lambda X, y, Xt, yt: (X, object_array(["a"] * 6), Xt, yt), TypeError,
     "y_train must be numeric for a regression metric"),
    ("y_train_complex", lambda X, y, Xt, yt: (X, y + 1j, Xt, yt), TypeError, "y_train must be real numbers"),
]


def _feature_cases(name: str) -> list:
    """ModelUtility gives sparse features to the model as they are (tests/utilities: robustness)."""
    return [case for case in FEATURE_CASES
            if not (name.startswith("ModelUtility") and case[0] in ("X_train_sparse", "X_train_sparse_frame"))]


def _data_rows():
    for name in CLASSIFIERS:
        cases = _feature_cases(name) + TARGET_CASES + LABEL_CASES
        if "knn" not in name.lower():  # the KNN utilities compare labels for equality only
            cases = cases + UNSORTABLE_LABELS
        for case_id, change, error, match in cases:
            yield row(f"{name}-{case_id}", CLASSIFIERS[name], (X, Y, XT, YT), change, error, match)
    for name in REGRESSORS:
        for case_id, change, error, match in _feature_cases(name) + TARGET_CASES + REGRESSION_TARGET_CASES:
            yield row(f"{name}-{case_id}", REGRESSORS[name], (X, YR, XT, YTR), change, error, match)
    for name in FEATURES_ONLY:
        for case_id, change, error, match in FEATURE_CASES:
            yield row(f"{name}-{case_id}", FEATURES_ONLY[name], (X, Y, XT, YT), change, error, match)


@pytest.mark.parametrize("build,data,change,error,match", list(_data_rows()))
def test_bad_data_is_rejected(build, data, change, error, match):
    assert_raises(lambda: build(*change(*data)), error, match)


# --- documented conventions instead of errors -----------------------------------------------

ONE_CLASS = np.zeros(6, dtype=int)


@pytest.mark.parametrize("build", [
    pytest.param(lambda y, **kw: ModelUtility(LogisticRegression(), X[:len(y)], y, XT, YT, **kw), id="ModelUtility"),
    pytest.param(lambda y, **kw: ModelUtility(LogisticRegression(), X[:len(y)], y, XT, YT, fast=False, **kw),
                 id="ModelUtility-per-clone"),
    pytest.param(lambda y, **kw: LogisticRegressionUtility(X[:len(y)], y, XT, YT, **kw),
                 id="LogisticRegressionUtility"),
    pytest.param(lambda y, **kw: data_oob(LogisticRegression(), X[:len(y)], y, n_estimators=3, seed=0),
                 id="data_oob"),
])
@pytest.mark.parametrize("y_train", [pytest.param(ONE_CLASS, id="one_class"), pytest.param(Y[:1], id="one_point")])
def test_a_classifier_refuses_labels_of_one_class(build, y_train):
    """A classifier needs two classes (issue 34): one class (also a single training point) is refused by name.

    Before, every coalition fell under the degenerate convention and every value was about 0 (``data_oob``: all
    1.0), silently; the influence functions refuse one class too (test_influence_needs_two_classes).
    """
    message = re.escape(f"y_train holds a single class ({y_train[0].item()!r}) in all its {len(y_train)} labels")
    assert_raises(lambda: build(y_train), ValueError, message)


def test_one_training_point_regression():
    ridge = RidgeUtility(X[:1], YR[:1], XT, YTR, alpha=1.0)
    reference = ModelUtility(Ridge(alpha=1.0), X[:1], YR[:1], XT, YTR, metric="neg_mse", fast=False)  # scikit-learn
    full = np.ones((1, 1), bool)
    np.testing.assert_allclose(ridge.evaluate(full), reference.evaluate(full), rtol=1e-10)
    # the empty set predicts 0 (module docstring), so U(empty) = -mean(y_test^2)
    np.testing.assert_allclose(ridge.evaluate(~full), -np.mean(YTR**2))


@pytest.mark.parametrize("y_train,k", [
    pytest.param(Y[:1], 1, id="one_point"), pytest.param(ONE_CLASS, 2, id="one_class"),
    pytest.param(Y, 50, id="k_above_n"),
])
def test_knn_conventions_agree_with_the_game(y_train, k):
    X_train = X[: len(y_train)]
    values = knn_shapley(X_train, y_train, XT, YT, k).values
    exact = exact_shapley(KNNUtility(X_train, y_train, XT, YT, k)).values
    np.testing.assert_allclose(values, exact, atol=1e-12)
    game = KNNUtility(X_train, y_train, XT, YT, k)
    full = game(np.ones(len(y_train), bool))
    np.testing.assert_allclose(values.sum(), full, atol=1e-12)  # efficiency, U(empty) = 0
    if len(np.unique(y_train)) == 1:
        np.testing.assert_allclose(values, values[0])  # one class: all points alike


def test_influence_needs_two_classes():
    for build in (CLASSIFIERS["LogisticObjective"], CLASSIFIERS["largest_s_influence"],
                  CLASSIFIERS["all_s_influence"]):
        message = "y_train must contain at least two classes"
        assert_raises(lambda build=build: build(X, ONE_CLASS, XT, YT), ValueError, message)
        assert_raises(lambda build=build: build(X[:1], Y[:1], XT, YT), ValueError, message)


def test_influence_with_one_point_per_class():
    """Removing either point leaves a class empty: both get U(I) - U_0 (degenerate convention)."""
    result = largest_s_influence(X[:2], Y[:2], XT, YT)
    total = result.info["full_utility"] - result.info["empty_utility"]
    np.testing.assert_allclose(result.values, [total / 2, total / 2])
    assert np.isfinite(all_s_influence(X[:2], Y[:2], XT, YT, 2, 0).values).all()
