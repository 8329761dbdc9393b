"""The general influence function, the Neyman allocation and the bounds given bad input.

Part of the bad-input tables (tests/bad_input/_cases.py: what they check, the shared toys, the timeout).
"""

from __future__ import annotations

import numpy as np
import pytest

from shapley_research import (compressive_sample_size, group_testing_q_tot, group_testing_sample_size,
                              largest_s_influence_general, neyman_allocation, permutation_sample_size,
                              stability_bound, uniform_division_guarantee)
from shapley_research.datasets import (load_diabetes_split, load_iris_binary, load_iris_split,
                                       load_mnist_subset, pca_features)

from bad_input._cases import (assert_raises, Boom, explode, NO_HANG, row, with_nan, X, XT)

pytestmark = NO_HANG

# --------------------------------------------------------------------------------------------
# 6. The general influence function and the Neyman allocation
# --------------------------------------------------------------------------------------------

G = np.ones((3, 2))
GRAD = np.ones(2)


@pytest.mark.parametrize("args,kwargs,error,match", [
    row("gradients_empty", (np.zeros((0, 2)), np.eye(2), GRAD), {}, ValueError, "per_sample_gradients must have shape"),
    row("gradients_1d", (np.ones(3), np.eye(2), GRAD), {}, ValueError, "per_sample_gradients must have shape"),
    row("gradients_nan", (with_nan(G), np.eye(2), GRAD), {}, ValueError, "per_sample_gradients contains NaN"),
    row("gradients_strings", (G.astype(str), np.eye(2), GRAD), {}, TypeError,
        "per_sample_gradients must be an array of real numbers"),
    row("gradients_complex", (G + 1j, np.eye(2), GRAD), {}, TypeError, "per_sample_gradients must be an array of real"),
    row("test_gradient_wrong_length", (G, np.eye(2), np.ones(3)), {}, ValueError, r"test_utility_gradient must have"),
    row("test_gradient_inf", (G, np.eye(2), [np.inf, 0.0]), {}, ValueError, "test_utility_gradient contains NaN"),
    row("test_gradient_strings", (G, np.eye(2), ["a", "b"]), {}, TypeError, "test_utility_gradient must be an array"),
    row("hessian_wrong_shape", (G, np.eye(3), GRAD), {}, ValueError, r"hessian must have shape \(2, 2\)"),
    row("hessian_nan", (G, with_nan(np.eye(2)), GRAD), {}, ValueError, "hessian contains NaN"),
    row("hessian_strings", (G, np.eye(2).astype(str), GRAD), {}, TypeError, "hessian must be an array of real"),
    row("hessian_solve_nan", (G, lambda b: b * np.nan, GRAD), {}, ValueError, r"hessian\(b\) must return a finite"),
    row("hessian_solve_wrong_length", (G, lambda b: np.ones(3), GRAD), {}, ValueError, r"hessian\(b\) must return"),
    row("hessian_solve_dict", (G, lambda b: {}, GRAD), {}, TypeError, r"hessian\(b\) must be an array of real"),
    row("normalize_string", (G, np.eye(2), GRAD), {"normalize": "yes"}, TypeError, "normalize must be True or False"),
    row("normalize_without_utilities", (G, np.eye(2), GRAD), {}, ValueError, "normalize=True needs full_utility"),
    row("full_utility_nan", (G, np.eye(2), GRAD), {"full_utility": np.nan, "empty_utility": 0.0}, ValueError,
        "full_utility must be finite"),
])
def test_largest_s_influence_general_rejects(args, kwargs, error, match):
    assert_raises(lambda: largest_s_influence_general(*args, **kwargs), error, match)


def test_largest_s_influence_general_hessian_error_propagates():
    with pytest.raises(Boom):
        largest_s_influence_general(G, explode, GRAD, normalize=False)


@pytest.mark.parametrize("args,kwargs,error,match", [
    row("std_empty", ([], 10), {}, ValueError, "std must be a non-empty array"),
    row("std_nan", ([np.nan, 1.0], 10), {}, ValueError, "std must be a non-empty array of finite"),
    row("std_negative", ([-1.0, 1.0], 10), {}, ValueError, "std must be a non-empty array of finite, non-negative"),
    row("std_strings", (["a", "b"], 10), {}, TypeError, "std must be an array of real numbers"),
    row("budget_negative", ([1.0, 1.0], -1), {}, ValueError, "budget must be >= 0"),
    row("budget_fraction", ([1.0, 1.0], 1.5), {}, TypeError, "budget must be an integer"),
    row("budget_below_lower", ([1.0, 1.0], 3), {"lower": [2, 2]}, ValueError,
        "budget=3 is smaller than the sum of the lower bounds"),
    row("coverage_zero", ([1.0, 1.0], 10), {"coverage": [0.0, 1.0]}, ValueError,
        "coverage must hold 2 finite, positive"),
    row("coverage_nan", ([1.0, 1.0], 10), {"coverage": [np.nan, 1.0]}, ValueError, "coverage must hold 2 finite"),
    row("coverage_wrong_length", ([1.0, 1.0], 10), {"coverage": [1.0]}, ValueError, "coverage must hold 2"),
    row("lower_fraction", ([1.0, 1.0], 10), {"lower": [0.5, 0]}, ValueError, "lower must hold whole numbers"),
    row("upper_nan", ([1.0, 1.0], 10), {"upper": [np.nan, 5]}, ValueError, "upper must hold whole numbers"),
    row("upper_below_lower", ([1.0, 1.0], 10), {"lower": [3, 0], "upper": [2, 9]}, ValueError,
        "lower and upper must be K integers with 0 <= lower <= upper"),
])
def test_neyman_allocation_rejects(args, kwargs, error, match):
    assert_raises(lambda: neyman_allocation(*args, **kwargs), error, match)


def test_neyman_allocation_conventions():
    np.testing.assert_array_equal(neyman_allocation([0.0, 0.0], 10), [5, 5])  # no variance: spread evenly
    np.testing.assert_array_equal(neyman_allocation([1.0, 1.0], 10, upper=[1, 2]), [1, 2])  # capped at upper
    np.testing.assert_array_equal(neyman_allocation([1.0, 3.0], 0), [0, 0])


# --------------------------------------------------------------------------------------------
# 7. Bounds
# --------------------------------------------------------------------------------------------

BOUND_FUNCTIONS = {
    "permutation_sample_size": (permutation_sample_size, {"epsilon": 0.1, "delta": 0.05, "n_players": 10}),
    "group_testing_sample_size[paper]": (group_testing_sample_size,
                                         {"epsilon": 0.1, "delta": 0.05, "n_players": 10}),
    "group_testing_sample_size[improved]": (group_testing_sample_size,
                                            {"epsilon": 0.1, "delta": 0.05, "n_players": 10, "variant": "improved"}),
    "compressive_sample_size": (compressive_sample_size,
                                {"epsilon": 0.1, "delta": 0.05, "n_players": 10, "sparsity": 2}),
}
BOUND_CASES = [
    ("epsilon_zero", {"epsilon": 0.0}, ValueError, "epsilon must be > 0"),
    ("epsilon_negative", {"epsilon": -0.1}, ValueError, "epsilon must be > 0"),
    ("epsilon_nan", {"epsilon": np.nan}, ValueError, "epsilon must be finite"),
    ("epsilon_inf", {"epsilon": np.inf}, ValueError, "epsilon must be finite"),
    ("epsilon_string", {"epsilon": "0.1"}, TypeError, "epsilon must be a real number"),
    ("epsilon_bool", {"epsilon": True}, TypeError, "epsilon must be a real number"),
    ("epsilon_underflows", {"epsilon": 1e-200}, ValueError, "epsilon=1e-200 is too small"),
    ("delta_zero", {"delta": 0.0}, ValueError, "delta must be > 0"),
    ("delta_above_one", {"delta": 1.5}, ValueError, "delta must be <= 1"),
    ("delta_nan", {"delta": np.nan}, ValueError, "delta must be finite"),
    ("delta_string", {"delta": "0.05"}, TypeError, "delta must be a real number"),
    ("n_players_zero", {"n_players": 0}, ValueError, "n_players must be >= "),
    ("n_players_fraction", {"n_players": 2.5}, TypeError, "n_players must be an integer"),
    ("n_players_none", {"n_players": None}, TypeError, "n_players must be an integer"),
    ("n_players_string", {"n_players": "10"}, TypeError, "n_players must be an integer"),
    ("utility_range_zero", {"utility_range": 0.0}, ValueError, "utility_range must be > 0"),
    ("utility_range_nan", {"utility_range": np.nan}, ValueError, "utility_range must be finite"),
    ("utility_range_overflows", {"utility_range": 1e200}, ValueError, "is too small for utility_range=1e"),
]
SPECIFIC_BOUND_CASES = {
    "group_testing_sample_size[paper]": [
        ("variant_unknown", {"variant": "foo"}, ValueError, "variant must be one of"),
        ("variant_list", {"variant": ["paper"]}, ValueError, "variant must be one of"),
        ("n_players_one", {"n_players": 1}, ValueError, "n_players must be >= 2"),
    ],
    "compressive_sample_size": [
        ("sparsity_zero", {"sparsity": 0}, ValueError, "sparsity must be >= 1"),
        ("sparsity_fraction", {"sparsity": 1.5}, TypeError, "sparsity must be an integer"),
        ("sparsity_above_n", {"sparsity": 11}, ValueError, "sparsity must be <= n_players"),
        ("constant_zero", {"constant": 0.0}, ValueError, "constant must be > 0"),
        ("constant_nan", {"constant": np.nan}, ValueError, "constant must be finite"),
    ],
}


def _bound_rows():
    for name, (fn, good) in BOUND_FUNCTIONS.items():
        for case_id, change, error, match in BOUND_CASES + SPECIFIC_BOUND_CASES.get(name, []):
            yield row(f"{name}-{case_id}", fn, {**good, **change}, error, match)
    others = [
        ("group_testing_q_tot-n_players_one", group_testing_q_tot, {"n_players": 1}, ValueError,
         "n_players must be >= 2"),
        ("group_testing_q_tot-n_players_fraction", group_testing_q_tot, {"n_players": 2.5}, TypeError,
         "n_players must be an integer"),
        ("stability_bound-c_stab_negative", stability_bound, {"c_stab": -1.0, "n_players": 10}, ValueError,
         "c_stab must be >= 0"),
        ("stability_bound-c_stab_nan", stability_bound, {"c_stab": np.nan, "n_players": 10}, ValueError,
         "c_stab must be finite"),
        ("stability_bound-c_stab_string", stability_bound, {"c_stab": "1", "n_players": 10}, TypeError,
         "c_stab must be a real number"),
        ("stability_bound-n_players_one", stability_bound, {"c_stab": 1.0, "n_players": 1}, ValueError,
         "n_players must be >= 2"),
        ("uniform_division_guarantee-epsilon_zero", uniform_division_guarantee,
         {"c_stab": 1.0, "n_players": 10, "epsilon": 0.0}, ValueError, "epsilon must be > 0"),
        ("uniform_division_guarantee-n_players_one", uniform_division_guarantee,
         {"c_stab": 1.0, "n_players": 1, "epsilon": 0.1}, ValueError, "n_players must be >= 2"),
        ("uniform_division_guarantee-c_stab_negative", uniform_division_guarantee,
         {"c_stab": -1.0, "n_players": 10, "epsilon": 0.1}, ValueError, "c_stab must be >= 0"),
    ]
    for case_id, fn, kwargs, error, match in others:
        yield row(case_id, fn, kwargs, error, match)


@pytest.mark.parametrize("fn,kwargs,error,match", list(_bound_rows()))
def test_bound_rejects(fn, kwargs, error, match):
    assert_raises(lambda: fn(**kwargs), error, match)


@pytest.mark.parametrize("variant", ["paper", "improved"])
def test_group_testing_sample_size_at_tiny_epsilon_is_accurate(variant):
    """T ~ 1/epsilon^2 as epsilon -> 0: no cancellation garbage in h(u) (it was 1e-4 off here)."""
    coarse = group_testing_sample_size(1e-10, 0.05, 10, variant=variant)
    fine = group_testing_sample_size(1e-11, 0.05, 10, variant=variant)
    assert fine / coarse == pytest.approx(100.0, rel=1e-8)


# --------------------------------------------------------------------------------------------
# 8. Dataset helpers
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,kwargs,error,match", [
    row("iris-n_train_zero", load_iris_split, {"n_train": 0}, ValueError, "n_train must be >= 1"),
    row("iris-n_train_negative", load_iris_split, {"n_train": -5}, ValueError, "n_train must be >= 1"),
    row("iris-n_train_fraction", load_iris_split, {"n_train": 2.5}, TypeError, "n_train must be an integer"),
    row("iris-n_train_string", load_iris_split, {"n_train": "10"}, TypeError, "n_train must be an integer"),
    row("iris-n_train_all_no_test_left", load_iris_split, {"n_train": 150}, ValueError,
        "n_train=150 leaves no test samples"),
    row("iris-n_train_above_all", load_iris_split, {"n_train": 200}, ValueError, "n_train=200 leaves no test samples"),
    row("iris-sizes_above_all", load_iris_split, {"n_train": 100, "n_test": 51}, ValueError,
        "n_train \\+ n_test = 151 exceeds the 150 available"),
    row("iris-n_test_zero", load_iris_split, {"n_test": 0}, ValueError, "n_test must be >= 1"),
    row("iris-n_test_fraction", load_iris_split, {"n_test": 0.5}, TypeError, "n_test must be an integer"),
    row("iris-seed_negative", load_iris_split, {"seed": -1}, ValueError, "seed must be >= 0"),
    row("iris-seed_fraction", load_iris_split, {"seed": 1.5}, TypeError, "seed must be an integer"),
    row("iris-seed_none", load_iris_split, {"seed": None}, TypeError, "seed must be an integer"),
    row("iris_binary-sizes_above_all", load_iris_binary, {"n_train": 80, "n_test": 21}, ValueError,
        "exceeds the 100 available"),
    row("diabetes-n_train_all_no_test_left", load_diabetes_split, {"n_train": 442}, ValueError,
        "n_train=442 leaves no test samples"),
    row("mnist-n_train_zero", load_mnist_subset, {"n_train": 0}, ValueError, "n_train must be >= 1"),
    row("mnist-sizes_above_all", load_mnist_subset, {"n_train": 4000, "n_test": 1001}, ValueError,
        "exceeds the 5000 available"),
    row("mnist-seed_string", load_mnist_subset, {"seed": "0"}, TypeError, "seed must be an integer"),
    row("mnist-scale_string", load_mnist_subset, {"scale": "no"}, TypeError, "scale must be True or False"),
    row("pca-n_components_zero", pca_features, {"n_components": 0}, ValueError, "n_components must be >= 1"),
    row("pca-n_components_above_features", pca_features, {"n_components": 3}, ValueError,
        r"n_components=3 exceeds min\(n_samples, n_features\) = 2"),
    row("pca-n_components_string", pca_features, {"n_components": "1"}, TypeError, "n_components must be an integer"),
    row("pca-seed_negative", pca_features, {"seed": -1}, ValueError, "seed must be >= 0"),
    row("pca-seed_string", pca_features, {"seed": "a"}, TypeError, "seed must be an integer"),
])
def test_dataset_helper_rejects(fn, kwargs, error, match):
    if fn is pca_features:
        kwargs = {"X_train": X, "X_test": XT, "n_components": 1, **kwargs}
    assert_raises(lambda: fn(**kwargs), error, match)


def test_dataset_split_sizes_at_the_limit():
    X_train, y_train, X_test, y_test = load_iris_split(149)
    assert X_train.shape == (149, 4) and X_test.shape == (1, 4)
    assert len(y_train) == 149 and len(y_test) == 1


@pytest.mark.parametrize("kwargs,error,match", [
    row("values-2d", {"values": [[1.0, 2.0]]}, ValueError, "values must be 1-D"),
    row("stderr-length", {"values": [1.0, 2.0], "stderr": [1.0, 2.0, 3.0]}, ValueError,
        r"stderr must have the shape of values \(2,\)"),
])
def test_valuation_result_rejects_mismatched_arrays(kwargs, error, match):
    from shapley_research import ValuationResult

    assert_raises(lambda: ValuationResult(**{"n_evaluations": 0, "method": "mine", **kwargs}), error, match)


def test_unanimity_coefficients_name_the_non_finite_one():
    from shapley_research.games import UnanimitySumGame

    assert_raises(lambda: UnanimitySumGame(3, [[0], [1]], [1.0, np.nan]), ValueError,
                  r"coefficients must be finite, got \[nan\] at positions \[1\]")
    assert_raises(lambda: UnanimitySumGame(3, [[0]], [1.0, 2.0]), ValueError,
                  r"coefficients must be 1 numbers \(one per coalition\), got shape \(2,\)")


@pytest.mark.parametrize("kwargs,error,match", [
    row("plot_values-lengths", {"results": {"a": [1.0, 2.0], "b": [1.0]}}, ValueError, r"results\['b'\] has 1 values"),
    row("plot_values-highlight", {"results": [1.0, 2.0], "highlight": [2]}, ValueError, "highlight indices must be"),
    row("plot_values-level", {"results": [1.0, 2.0], "level": 0}, ValueError, r"level must be in \(0, 1\)"),
    row("plot_values-top", {"results": [1.0, 2.0], "top": -1}, ValueError, "top must be >= 1"),
])
def test_plot_values_rejects_before_drawing(kwargs, error, match):
    from shapley_research import plot_values

    assert_raises(lambda: plot_values(**kwargs), error, match)
