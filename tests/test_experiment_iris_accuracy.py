"""Experiment iris_accuracy: unit tests of its functions and one end-to-end run of the quick profile."""

import json
import math
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from shapley_research import ValuationResult
from shapley_research.experiments import iris_accuracy as ia


@pytest.fixture(scope="module")
def small():
    """Eight versicolor/virginica players, the game and the influence module's model of it."""
    data = ia.load_iris_pair((1, 2), n_train=8, n_test=20, seed=3)
    return data, ia.make_game(*data, C=1.0), ia.make_objective(*data, C=1.0)


@pytest.fixture(scope="module")
def small_runs(small):
    data, game, _ = small
    reference = ia.reference_values(game)
    runs = ia.run_deterministic(game, data, C=1.0)
    for repetition, seed in enumerate(ia.repetition_seeds(0, 2)):
        runs += ia.run_methods(game, data, C=1.0, budget=400, seed=seed, repetition=repetition)
    return reference, runs


def test_load_iris_pair_is_balanced_standardised_and_reproducible():
    X_train, y_train, X_test, y_test = ia.load_iris_pair((1, 2), n_train=10, n_test=20, seed=5)
    assert X_train.shape == (10, 4) and X_test.shape == (20, 4)
    assert np.bincount(y_train, minlength=3).tolist() == [0, 5, 5]
    assert np.bincount(y_test, minlength=3).tolist() == [0, 10, 10]
    np.testing.assert_allclose(X_train.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X_train.std(axis=0), 1.0, atol=1e-12)
    again = ia.load_iris_pair((1, 2), n_train=10, n_test=20, seed=5)
    assert all(np.array_equal(a, b) for a, b in zip((X_train, y_train, X_test, y_test), again))
    other = ia.load_iris_pair((1, 2), n_train=10, n_test=20, seed=6)
    assert not np.array_equal(X_train, other[0])
    raw = ia.load_iris_pair((0, 1), n_train=4, n_test=4, seed=0, standardize=False)
    assert set(raw[1]) == {0, 1} and raw[0].min() > 0  # centimetres


@pytest.mark.parametrize("kwargs", [{"classes": (1, 1)}, {"classes": (0, 3)}, {"n_train": 7},
                                    {"n_train": 60, "n_test": 60}])
def test_load_iris_pair_refuses_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        ia.load_iris_pair(**kwargs)


def test_game_and_influence_module_value_the_same_utility(small):
    """The crucial alignment: same U on random coalitions and on every kind of degenerate one."""
    data, game, objective = small
    masks = ia.degenerate_and_random_masks(8, data[1], 40, seed=1)
    assert masks.shape == (1 + 8 + 2 + 1 + 40, 8)
    u_game = game.evaluate(masks)
    u_influence = ia.influence_utilities(objective, masks)
    np.testing.assert_allclose(u_game, u_influence, atol=1e-6)
    assert ia.utility_mismatch(game, objective, masks) < 1e-6
    # empty set, singletons and one-class coalitions are degenerate: -log 2 in both
    degenerate = masks[:1 + 8 + 2]
    np.testing.assert_allclose(game.evaluate(degenerate), -math.log(2))
    np.testing.assert_allclose(ia.influence_utilities(objective, degenerate), -math.log(2))
    # a fitted model beats the uninformed one on the full set
    assert u_game[1 + 8 + 2] > -math.log(2)


def test_game_refuses_three_classes():
    X_train, y_train, X_test, y_test = ia.load_iris_pair((1, 2), n_train=6, n_test=4, seed=0)
    y_train = y_train.copy()
    y_train[0] = 0
    with pytest.raises(ValueError, match="two classes"):
        ia.make_game(X_train, y_train, X_test, y_test)
    with pytest.raises(ValueError, match="two classes"):
        ia.make_objective(X_train, y_train, X_test, y_test)


def test_references_satisfy_efficiency(small):
    _, game, _ = small
    exact = ia.reference_values(game)
    full = float(game.evaluate(np.ones((1, 8), dtype=bool))[0])
    assert exact.n_evaluations == 2**8
    assert exact.values.sum() == pytest.approx(full + math.log(2), abs=1e-9)
    assert np.all(exact.stderr == 0)
    sampled = ia.reference_values(game, "permutation", n_permutations=200, seed=1)
    assert sampled.n_samples == 200 and np.all(sampled.stderr > 0)
    assert sampled.values.sum() == pytest.approx(exact.values.sum(), abs=1e-9)
    # the sampled reference is within a few standard errors of the exact one
    assert np.all(np.abs(sampled.values - exact.values) <= 5 * sampled.stderr + 1e-12)
    with pytest.raises(ValueError):
        ia.reference_values(game, "kernel")


def test_leave_one_out_normalised_is_the_largest_s_scheme_on_exact_marginals(small):
    data, game, _ = small
    loo = ia.leave_one_out_normalised(game)
    full = float(game.evaluate(np.ones((1, 8), dtype=bool))[0])
    assert loo.values.sum() == pytest.approx(full + math.log(2), rel=1e-9)
    marginals = np.array([full - game.evaluate(~np.eye(8, dtype=bool)[i:i + 1])[0] for i in range(8)])
    np.testing.assert_allclose(loo.info["marginal_estimates"], marginals, rtol=1e-9, atol=1e-12)
    # largest-S influence approximates these marginals (first-order influence, so only roughly)
    largest = ia.run_deterministic(game, data, C=1.0)[0].result
    assert np.corrcoef(largest.info["marginal_estimates"], marginals)[0, 1] > 0.9


def test_run_methods_uses_the_budget_and_is_reproducible(small):
    data, game, _ = small
    first = ia.run_methods(game, data, C=1.0, budget=240, seed=7)
    again = ia.run_methods(game, data, C=1.0, budget=240, seed=7)
    assert [r.key for r in first] == ["permutation", "gt_paper", "gt_improved", "all_s"]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.result.values, b.result.values)
        assert a.n_model_fits <= 240 and a.cpu_time >= 0
    by_key = {r.key: r.result for r in first}
    assert by_key["permutation"].n_samples == (240 - 1) // 8
    assert by_key["all_s"].n_samples <= 240
    with pytest.raises(ValueError, match="unknown methods"):
        ia.run_methods(game, data, C=1.0, budget=240, seed=7, methods=("kernel_shap",))


def test_repetition_seeds_are_distinct_and_reproducible():
    seeds = ia.repetition_seeds(0, 5)
    assert len(set(seeds)) == 5 and seeds == ia.repetition_seeds(0, 5) and seeds != ia.repetition_seeds(1, 5)


def test_agreement_metrics():
    reference = np.array([1.0, 2.0, 3.0, 4.0])
    perfect = ia.agreement(reference, reference)
    assert perfect["spearman"] == pytest.approx(1) and perfect["rel_l2_error"] == 0 and perfect["spearman_p"] < 0.5
    scaled = ia.agreement(2 * reference, reference)
    assert scaled["spearman"] == pytest.approx(1) and scaled["rel_l2_error"] == pytest.approx(1.0)
    reversed_ = ia.agreement(reference[::-1], reference)
    assert reversed_["spearman"] == pytest.approx(-1) and reversed_["spearman_p"] > 0.5
    assert ia.agreement([1.0, 2.0, 3.0, 5.0], reference)["max_abs_error"] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        ia.agreement([1.0, 2.0], reference)


def test_tables_and_distances(small, small_runs):
    data, _, _ = small
    reference, runs = small_runs
    table = ia.agreement_table(runs, reference)
    assert set(table.method) == {"largest_s", "loo_exact", "permutation", "gt_paper", "gt_improved", "all_s"}
    assert (table.groupby("method").size()[["permutation", "all_s"]] == 2).all()
    assert np.isfinite(table[["spearman", "pearson", "rel_l2_error"]].to_numpy()).all()
    summary = ia.summarise(table)
    assert summary.loc["permutation", "n_repetitions"] == 2 and summary.loc["largest_s", "n_repetitions"] == 1
    values = ia.values_table(runs, reference, data[1])
    assert len(values) == 8 * (1 + len(runs))
    ref_rows = values[values.method == "reference"]
    np.testing.assert_allclose(ref_rows.value, ref_rows.reference_value)
    assert sorted(ref_rows.reference_rank) == list(range(8))
    assert np.all(np.diff(ref_rows.sort_values("reference_rank").value) >= 0)
    distances = ia.pairwise_distances(runs, reference)
    assert len(distances) == 10  # 5 main methods, every unordered pair once
    assert (distances.rel_distance > 0).all()
    assert distances.set_index(["method_a", "method_b"]).loc[("permutation", "largest_s"), "n_repetitions"] == 2


def test_pairwise_distance_is_zero_between_identical_estimates():
    reference = ValuationResult(values=np.array([1.0, 2.0]), n_evaluations=0, method="exact")
    runs = [ia.MethodRun(key, ValuationResult(values=np.array([1.0, 3.0]), n_evaluations=1, method=key), 0.0)
            for key in ("permutation", "all_s", "largest_s")]
    distances = ia.pairwise_distances(runs, reference, methods=("permutation", "all_s", "largest_s"))
    assert distances.rel_distance.tolist() == [0.0, 0.0, 0.0]


def _summary(errors, spearman=0.95, largest=(0.6, 1e-3, 1.5)):
    rows = {key: {"spearman": spearman, "spearman_p": 1e-4, "rel_l2_error": err, "n_repetitions": 3}
            for key, err in zip(ia.CLOSE_METHODS, errors)}
    rows["largest_s"] = {"spearman": largest[0], "spearman_p": largest[1], "rel_l2_error": largest[2],
                         "n_repetitions": 1}
    return pd.DataFrame.from_dict(rows, orient="index")


def _distances(within, to_largest):
    rows = [{"method_a": a, "method_b": b, "rel_distance": within}
            for i, a in enumerate(ia.CLOSE_METHODS) for b in ia.CLOSE_METHODS[i + 1:]]
    rows += [{"method_a": a, "method_b": "largest_s", "rel_distance": to_largest} for a in ia.CLOSE_METHODS]
    return pd.DataFrame(rows)


def test_claims_follow_the_stated_thresholds():
    claims = ia.evaluate_claims(_summary([0.1, 0.2, 0.1, 0.05]), _distances(0.2, 1.4))
    assert len(claims) == 7 and all(c.holds for c in claims)
    assert "0.25" in claims[0].claim and "0.8" in claims[0].claim
    failing = ia.evaluate_claims(_summary([0.1, 0.3, 0.1, 0.05], largest=(0.2, 0.2, 0.5)), _distances(0.5, 0.4))
    assert [c.holds for c in failing] == [True, False, True, True, False, False, False]
    low_rank = ia.evaluate_claims(_summary([0.1, 0.1, 0.1, 0.1], spearman=0.7), _distances(0.2, 1.4))
    assert not any(c.holds for c in low_rank[:4])
    # largest-S error large but not 2x the worst of (a)-(c)
    close_call = ia.evaluate_claims(_summary([0.1, 0.4, 0.1, 0.1], largest=(0.6, 1e-3, 0.7)), _distances(0.2, 1.4))
    assert close_call[-1].holds is False


def test_plot_comparison_draws_four_panels(small_runs, small):
    reference, runs = small_runs
    values = ia.values_table(runs, reference, small[0][1])
    fig = ia.plot_comparison(values, ia.agreement_table(runs, reference), error_threshold=0.25, title="t")
    assert len(fig.axes) == 4
    assert len(fig.axes[3].patches) == 6  # one bar per method run
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_quick_profile_end_to_end(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "shapley_research.cli", "run", "iris_accuracy", "profile=quick",
                           f"output_dir={tmp_path}"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = tmp_path / "iris_accuracy"
    for name in ("comparison.png", "comparison.pdf", "values.csv", "agreement.csv", "pairwise_distances.csv",
                 "iris_accuracy.ipynb", "metrics.json"):
        assert (out / name).is_file(), name
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["profile"] == "quick" and metrics["n_train"] == 10 and metrics["reference"] == "exact"
    assert metrics["utility_mismatch"] < 1e-5
    claims = metrics["claims"]
    assert len(claims) == 7
    for entry in claims:
        assert isinstance(entry["claim"], str) and entry["claim"]
        assert isinstance(entry["holds"], bool)
        assert all(np.isfinite(entry["statistic"]["value"]))
    for key in ia.MAIN_METHODS:
        method = metrics["methods"][key]
        assert -1 <= method["spearman"] <= 1 and 0 <= method["rel_l2_error"] < 10
    assert metrics["methods"]["all_s"]["n_evaluations"] <= metrics["budget"]
    values = pd.read_csv(out / "values.csv")
    assert {"method", "repetition", "point", "value", "reference_value"} <= set(values.columns)
    reference = values[values.method == "reference"]
    assert reference.value.sum() == pytest.approx(metrics["full_utility"] - metrics["empty_utility"], rel=1e-6)
