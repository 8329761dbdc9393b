"""Bad parameters of the utilities, KNN and the influence heuristics.

Part of the bad-input tables (tests/bad_input/_cases.py: what they check, the shared toys, the timeout).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge, RidgeClassifier
from sklearn.metrics import get_scorer
from sklearn.tree import DecisionTreeClassifier

from shapley_research import (all_s_influence, knn_shapley, KNNUtility, largest_s_influence,
                              LogisticRegressionUtility, ModelUtility, RidgeUtility, threshold_knn_shapley,
                              ThresholdKNNUtility)

from bad_input._cases import (assert_raises, Boom, explode, NO_HANG, row, with_nan, X, XT, Y, YR, YT, YTR)

pytestmark = NO_HANG

# --------------------------------------------------------------------------------------------
# 5. Parameters of the utilities, KNN and influence
# --------------------------------------------------------------------------------------------

class FitOnly:
    def fit(self, X, y):
        return self


def utility_row(case_id, kwargs, error, match, build="ModelUtility"):
    return row(f"{build}-{case_id}", build, kwargs, error, match)


BUILDERS = {
    "ModelUtility": lambda **kw: ModelUtility(**{"model": LogisticRegression(), "X_train": X, "y_train": Y,
                                                 "X_test": XT, "y_test": YT, **kw}),
    "LogisticRegressionUtility": lambda **kw: LogisticRegressionUtility(X, Y, XT, YT, **kw),
    "RidgeUtility": lambda **kw: RidgeUtility(X, YR, XT, YTR, **kw),
    "KNNUtility": lambda **kw: KNNUtility(X, Y, XT, YT, **{"k": 2, **kw}),
    "knn_shapley": lambda **kw: knn_shapley(X, Y, XT, YT, **{"k": 2, **kw}),
    "ThresholdKNNUtility": lambda **kw: ThresholdKNNUtility(X, Y, XT, YT, **{"tau": 1.0, **kw}),
    "threshold_knn_shapley": lambda **kw: threshold_knn_shapley(X, Y, XT, YT, **{"tau": 1.0, **kw}),
    "largest_s_influence": lambda **kw: largest_s_influence(X, Y, XT, YT, **kw),
    "all_s_influence": lambda **kw: all_s_influence(X, Y, XT, YT, **{"budget": 40, "seed": 0, **kw}),
}

PARAMETER_ROWS = [
    utility_row("model_none", {"model": None}, TypeError, "model must be an estimator"),
    utility_row("model_class", {"model": LogisticRegression}, TypeError, "model must be an estimator instance"),
    utility_row("model_without_predict", {"model": FitOnly()}, TypeError, "model must be an estimator"),
    utility_row("metric_unknown", {"metric": "f_one"}, ValueError, "metric must be one of"),
    utility_row("metric_number", {"metric": 3}, TypeError, "metric must be a string or a callable"),
    utility_row("metric_none", {"metric": None}, TypeError, "metric must be a string or a callable"),
    utility_row("metric_of_other_task", {"metric": "r2", "task": "classification"}, ValueError,
                "is a regression metric but task='classification'"),
    utility_row("log_loss_without_predict_proba", {"model": Ridge(), "metric": "neg_log_loss",
                                                   "task": "classification"}, TypeError,
                "needs a model with predict_proba"),
    utility_row("scorer_without_predict_proba", {"model": RidgeClassifier(), "metric": get_scorer("neg_log_loss")},
                TypeError, "needs a model with predict_proba; RidgeClassifier has none"),
    utility_row("task_unknown", {"task": "ranking"}, ValueError, "task must be one of"),
    utility_row("degenerate_unknown", {"degenerate": "ignore"}, ValueError, "degenerate must be one of"),
    utility_row("degenerate_list", {"degenerate": ["raise"]}, ValueError, "degenerate must be one of"),
    utility_row("default_utility_missing", {"degenerate": "default"}, ValueError, "needs a number as default_utility"),
    utility_row("default_utility_nan", {"degenerate": "default", "default_utility": np.nan}, ValueError,
                "default_utility must be finite"),
    utility_row("default_utility_string", {"degenerate": "default", "default_utility": "0"}, TypeError,
                "default_utility must be a real number"),
    utility_row("default_utility_unused", {"default_utility": 0.0}, ValueError, "only used with degenerate='default'"),
    utility_row("min_samples_zero", {"min_samples": 0}, ValueError, "min_samples must be >= 1"),
    utility_row("min_samples_fraction", {"min_samples": 1.5}, TypeError, "min_samples must be an integer"),
    utility_row("min_samples_above_n", {"min_samples": 10 ** 6}, ValueError,
                "min_samples=1000000 exceeds the .* training points"),
    utility_row("cache_string", {"cache": "yes"}, TypeError, "cache must be True or False"),
    utility_row("cache_int", {"cache": 1}, TypeError, "cache must be True or False"),
    utility_row("cache_size_zero", {"cache": True, "cache_size": 0}, ValueError, "cache_size must be >= 1"),
    utility_row("fast_string", {"fast": "yes"}, ValueError, "fast must be 'auto', True or False"),
    utility_row("fast_int", {"fast": 1}, ValueError, "fast must be 'auto', True or False"),
    utility_row("fast_none", {"fast": None}, ValueError, "fast must be 'auto', True or False"),
    utility_row("fast_true_unsupported", {"model": Ridge(positive=True), "metric": "r2", "fast": True}, ValueError,
                "fast=True but Ridge has no batched learner"),
    utility_row("warm_prefixes_int", {"warm_prefixes": 1}, TypeError, "warm_prefixes must be True or False"),
    utility_row("warm_prefixes_not_routed", {"warm_prefixes": True, "fast": False}, ValueError,
                "warm_prefixes=True needs a LogisticRegression routed"),
    utility_row("warm_prefixes_unsupported_model", {"model": DecisionTreeClassifier(), "warm_prefixes": True},
                ValueError, "warm_prefixes=True needs a LogisticRegression routed"),
    utility_row("blas_threads_zero", {"blas_threads": 0}, ValueError, "blas_threads must be >= 1"),
    utility_row("blas_threads_string", {"blas_threads": "1"}, TypeError, "blas_threads must be an integer"),
    # the batched learners
    *[utility_row(case_id, kwargs, error, match, "LogisticRegressionUtility") for case_id, kwargs, error, match in [
        ("C_zero", {"C": 0}, ValueError, "C must be > 0"),
        ("C_inf", {"C": np.inf}, ValueError, "C must be finite"),
        ("C_string", {"C": "1"}, TypeError, "C must be a real number"),
        ("tol_zero", {"tol": 0.0}, ValueError, "tol must be > 0"),
        ("max_iter_zero", {"max_iter": 0}, ValueError, "max_iter must be >= 1"),
        ("max_iter_fraction", {"max_iter": 2.5}, TypeError, "max_iter must be an integer"),
        ("solver_unknown", {"solver": "sag"}, ValueError, "solver must be one of"),
        ("newton_max_params_zero", {"newton_max_params": 0}, ValueError, "newton_max_params must be >= 1"),
        ("metric_regression", {"metric": "r2"}, ValueError, "needs a classification metric"),
        ("metric_callable", {"metric": lambda m, X, y: 0.0}, TypeError, "takes a metric name, not a callable"),
        ("fit_intercept_string", {"fit_intercept": "no"}, TypeError, "fit_intercept must be True or False"),
        ("warm_start_string", {"warm_start": "no"}, TypeError, "warm_start must be True or False"),
        ("prefix_refit_ratio_one", {"prefix_refit_ratio": 1.0}, ValueError, "prefix_refit_ratio must be > 1"),
        ("prefix_refit_ratio_nan", {"prefix_refit_ratio": np.nan}, ValueError, "prefix_refit_ratio must be finite"),
        ("prefix_steps_zero", {"prefix_steps": 0}, ValueError, "prefix_steps must be >= 1"),
        ("batch_size_zero", {"batch_size": 0}, ValueError, "batch_size must be >= 1"),
        ("batch_size_fraction", {"batch_size": 1.5}, TypeError, "batch_size must be an integer"),
        ("degenerate_unknown", {"degenerate": "skip"}, ValueError, "degenerate must be one of"),
        ("min_samples_zero", {"min_samples": 0}, ValueError, "min_samples must be >= 1"),
        ("min_samples_above_n", {"min_samples": 10 ** 6}, ValueError, "exceeds the .* training points"),
    ]],
    *[utility_row(case_id, kwargs, error, match, "RidgeUtility") for case_id, kwargs, error, match in [
        ("alpha_zero", {"alpha": 0.0}, ValueError, "alpha must be > 0"),
        ("alpha_negative", {"alpha": -1.0}, ValueError, "alpha must be > 0"),
        ("alpha_nan", {"alpha": np.nan}, ValueError, "alpha must be finite"),
        ("alpha_string", {"alpha": "1"}, TypeError, "alpha must be a real number"),
        ("alpha_bool", {"alpha": True}, TypeError, "alpha must be a real number"),
        ("metric_classification", {"metric": "accuracy"}, ValueError, "needs a regression metric"),
        ("refresh_every_zero", {"refresh_every": 0}, ValueError, "refresh_every must be >= 1"),
        ("fit_intercept_int", {"fit_intercept": 1}, TypeError, "fit_intercept must be True or False"),
        ("batch_size_zero", {"batch_size": 0}, ValueError, "batch_size must be >= 1"),
    ]],
    *[utility_row(case_id, kwargs, error, match, build) for build in ("KNNUtility", "knn_shapley")
      for case_id, kwargs, error, match in [
          ("k_zero", {"k": 0}, ValueError, "k must be >= 1"),
          ("k_negative", {"k": -1}, ValueError, "k must be >= 1"),
          ("k_fraction", {"k": 2.5}, TypeError, "k must be an integer"),
          ("k_string", {"k": "3"}, TypeError, "k must be an integer"),
          ("k_bool", {"k": True}, TypeError, "k must be an integer"),
          ("k_nan", {"k": np.nan}, TypeError, "k must be an integer"),
          ("k_none", {"k": None}, TypeError, "k must be an integer"),
      ]],
    utility_row("block_size_zero", {"block_size": 0}, ValueError, "block_size must be >= 1", "knn_shapley"),
    utility_row("block_size_fraction", {"block_size": 1.5}, TypeError, "block_size must be an integer", "knn_shapley"),
    *[utility_row(case_id, kwargs, error, match, build) for build in ("ThresholdKNNUtility", "threshold_knn_shapley")
      for case_id, kwargs, error, match in [
          ("tau_zero", {"tau": 0.0}, ValueError, "tau must be > 0"),
          ("tau_inf", {"tau": np.inf}, ValueError, "tau must be finite"),
          ("tau_string", {"tau": "1"}, TypeError, "tau must be a real number"),
          ("n_classes_below_labels", {"n_classes": 1}, ValueError, "n_classes must be at least the 2 distinct"),
      ]],
    utility_row("block_size_zero", {"block_size": 0}, ValueError, "block_size must be >= 1", "threshold_knn_shapley"),
    *[utility_row(case_id, kwargs, error, match, build) for build in ("largest_s_influence", "all_s_influence")
      for case_id, kwargs, error, match in [
          ("C_zero", {"C": 0.0}, ValueError, "C must be > 0"),
          ("C_inf", {"C": np.inf}, ValueError, "C must be finite"),
          ("C_string", {"C": "1"}, TypeError, "C must be a real number"),
          ("fit_intercept_string", {"fit_intercept": "yes"}, TypeError, "fit_intercept must be True or False"),
          ("utility_unknown", {"utility": "r2"}, ValueError, "utility must be one of"),
          ("utility_list", {"utility": ["accuracy"]}, ValueError, "utility must be one of"),
          ("approximation_unknown", {"approximation": "exact"}, ValueError, "approximation must be one of"),
          ("utility_change_unknown", {"utility_change": "quadratic"}, ValueError, "utility_change must be one of"),
      ]],
    utility_row("normalize_string", {"normalize": "yes"}, TypeError, "normalize must be True or False",
                "largest_s_influence"),
    utility_row("empty_utility_nan", {"empty_utility": np.nan}, ValueError, "empty_utility must be finite",
                "largest_s_influence"),
    utility_row("empty_utility_string", {"empty_utility": "0"}, TypeError, "empty_utility must be a real number",
                "largest_s_influence"),
    *[utility_row(case_id, kwargs, error, match, "all_s_influence") for case_id, kwargs, error, match in [
        ("budget_negative", {"budget": -1}, ValueError, "budget must be >= 0"),
        ("budget_below_pilot", {"budget": 8}, ValueError, "budget=8 is too small: the pilot round alone needs 9"),
        ("budget_fraction", {"budget": 10.5}, TypeError, "budget must be an integer"),
        ("budget_nan", {"budget": np.nan}, TypeError, "budget must be an integer"),
        ("budget_string", {"budget": "40"}, TypeError, "budget must be an integer"),
        ("seed_negative", {"seed": -1}, ValueError, "seed must be >= 0"),
        ("seed_fraction", {"seed": 1.5}, TypeError, "seed must be an integer"),
        ("seed_string", {"seed": "0"}, TypeError, "seed must be an integer"),
        ("n_pilot_one", {"n_pilot": 1}, ValueError, "n_pilot must be >= 2"),
        ("n_pilot_fraction", {"n_pilot": 2.5}, TypeError, "n_pilot must be an integer"),
    ]],
]


@pytest.mark.parametrize("build,kwargs,error,match", PARAMETER_ROWS)
def test_bad_parameter_is_rejected(build, kwargs, error, match):
    assert_raises(lambda: BUILDERS[build](**kwargs), error, match)


@pytest.mark.parametrize("scorer,error,match", [
    row("string", lambda model, X, y: "0.5", TypeError, "metric: the scorer must return one real number"),
    row("array", lambda model, X, y: np.ones(3), TypeError, "metric: the scorer must return one real number"),
    row("none", lambda model, X, y: None, TypeError, "metric: the scorer must return one real number"),
    row("nan", lambda model, X, y: np.nan, ValueError, "ModelUtility._evaluate returned non-finite"),
])
def test_model_utility_checks_the_scorer_output(scorer, error, match):
    game = ModelUtility(LogisticRegression(), X, Y, XT, YT, metric=scorer)
    assert_raises(lambda: game.evaluate(np.ones((1, 6), bool)), error, match)


def test_model_utility_refuses_a_scorer_of_probabilities_for_a_class_only_y_test_holds():
    from sklearn.metrics import get_scorer

    y_test = np.r_[YT[:-1], 2]  # class 2: in y_test, not in y_train
    assert_raises(lambda: ModelUtility(LogisticRegression(), X, Y, XT, y_test, metric=get_scorer("neg_log_loss")),
                  ValueError, r"^metric=make_scorer\(log_loss.*y_test holds class\(es\) 2 \(1 row\(s\)\)")
    ModelUtility(LogisticRegression(), X, Y, XT, y_test, metric=get_scorer("accuracy"))  # predict: no columns


def test_model_utility_fit_error_propagates_with_a_note():
    class Failing:
        def fit(self, X, y):
            raise Boom("fit failed")

        def predict(self, X):
            return np.zeros(len(X))

    game = ModelUtility(Failing(), X, Y, XT, YT)
    with pytest.raises(Boom, match="fit failed") as info:
        game.evaluate(np.ones((1, 6), bool))
    assert any("ModelUtility" in note and "6 points" in note for note in getattr(info.value, "__notes__", []))
    # degenerate coalitions never reach fit: no error
    assert game.evaluate(np.eye(6, dtype=bool)).shape == (6,)


def test_model_utility_scorer_error_propagates():
    game = ModelUtility(LogisticRegression(), X, Y, XT, YT, metric=lambda model, X, y: explode())
    with pytest.raises(Boom):
        game.evaluate(np.ones((1, 6), bool))


@pytest.mark.parametrize("call,error,match", [
    row("fit_subsets_wrong_columns", lambda g: g.fit_subsets(np.ones((1, 5), bool)), ValueError, "masks must have"),
    row("predict_proba_other_columns", lambda g: g.predict_proba(np.ones((1, 6), bool), XT[:, :1]), ValueError,
        "X has 1 features; the game was built with 2"),
    row("predict_proba_nan_X", lambda g: g.predict_proba(np.ones((1, 6), bool), with_nan(XT)), ValueError,
        "X contains NaN"),
    row("prefixes_not_permutations", lambda g: g.evaluate_prefixes(np.zeros((1, 6), int)), ValueError,
        "each row of permutations must be a permutation"),
    row("prefixes_wrong_shape", lambda g: g.evaluate_prefixes(np.arange(5)[None]), ValueError,
        "permutations must have shape"),
    row("prefixes_float", lambda g: g.evaluate_prefixes(np.arange(6.0)[None]), TypeError,
        "permutations must be integers"),
])
def test_logistic_learner_methods_reject_bad_input(call, error, match):
    assert_raises(lambda: call(LogisticRegressionUtility(X, Y, XT, YT)), error, match)


@pytest.mark.parametrize("call,error,match", [
    row("predict_other_columns", lambda g: g.predict(np.ones((1, 6), bool), XT[:, :1]), ValueError,
        "X has 1 features"),
    row("predict_bad_masks", lambda g: g.predict(np.full((1, 6), 0.5)), ValueError, "masks must contain only"),
    row("prefixes_repeated_player", lambda g: g.evaluate_prefixes([[0, 0, 1, 2, 3, 4]]), ValueError,
        "each row of permutations must be a permutation"),
])
def test_ridge_learner_methods_reject_bad_input(call, error, match):
    assert_raises(lambda: call(RidgeUtility(X, YR, XT, YTR)), error, match)
