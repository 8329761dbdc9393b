"""Experiment iris_accuracy: unit tests of its functions and one end-to-end run of the quick profile."""

import json
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from shapley_research import ValuationResult
from shapley_research.experiments import iris_accuracy as ia
from shapley_research.experiments import verdict_of

pytestmark = pytest.mark.sampling  # the methods must sample on the 8-player game (the module fixtures too)


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
    # empty set, singletons and one-class coalitions are degenerate: U = 0 (U(empty) = 0, as the paper assumes)
    degenerate = masks[:1 + 8 + 2]
    np.testing.assert_allclose(game.evaluate(degenerate), 0.0, atol=1e-12)
    np.testing.assert_allclose(ia.influence_utilities(objective, degenerate), 0.0, atol=1e-12)
    # a fitted model beats the uninformed one on the full set
    assert u_game[1 + 8 + 2] > 0


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
    assert exact.values.sum() == pytest.approx(full, abs=1e-9)
    assert np.all(exact.stderr == 0)
    sampled = ia.reference_values(game, "permutation", n_permutations=200, seed=1)
    assert sampled.n_samples == 200 and np.all(sampled.stderr > 0)
    assert sampled.values.sum() == pytest.approx(exact.values.sum(), abs=1e-9)
    # the sampled reference is within a few standard errors of the exact one
    assert np.all(np.abs(sampled.values - exact.values) <= 5 * sampled.stderr + 1e-12)
    with pytest.raises(ValueError):
        ia.reference_values(game, "kernel")



def test_the_exact_reference_from_the_table_is_exact_shapley_bit_for_bit(small):
    """The notebook enumerates the coalitions once: the reference read from the table is the enumerated one."""
    _, game, _ = small
    table = ia.utility_table(game)
    enumerated, read = ia.reference_values(game), ia.reference_values(game, table=table)
    assert np.array_equal(read.values, enumerated.values) and np.array_equal(read.stderr, enumerated.stderr)
    assert (read.n_evaluations, read.method, read.info) == (enumerated.n_evaluations, "exact", enumerated.info)
    sampled = ia.reference_values(game, "permutation", n_permutations=5, seed=1)
    assert np.array_equal(ia.reference_values(game, "permutation", n_permutations=5, seed=1, table=table).values,
                          sampled.values)  # the sampled reference does not read the table
    with pytest.raises(ValueError, match="utilities of 7 players; the game has 8"):
        ia.reference_values(game, table=table[:2**7])

def test_leave_one_out_normalised_is_the_largest_s_scheme_on_exact_marginals(small):
    data, game, _ = small
    loo = ia.leave_one_out_normalised(game)
    full = float(game.evaluate(np.ones((1, 8), dtype=bool))[0])
    assert loo.values.sum() == pytest.approx(full, rel=1e-9)
    marginals = np.array([full - game.evaluate(~np.eye(8, dtype=bool)[i:i + 1])[0] for i in range(8)])
    np.testing.assert_allclose(loo.info["marginal_estimates"], marginals, rtol=1e-9, atol=1e-12)
    # largest-S influence approximates these marginals (first-order influence, so only roughly)
    largest = ia.run_deterministic(game, data, C=1.0)[0].result
    assert np.corrcoef(largest.info["marginal_estimates"], marginals)[0, 1] > 0.9


def test_run_methods_uses_the_budget_and_is_reproducible(small):
    data, game, _ = small
    first = ia.run_methods(game, data, C=1.0, budget=240, seed=7)
    again = ia.run_methods(game, data, C=1.0, budget=240, seed=7)
    assert [r.key for r in first] == ["permutation", "gt_paper", "gt_paper_wor", "gt_improved", "all_s"]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.result.values, b.result.values)
        assert a.n_model_fits <= 240 and a.cpu_time >= 0
    by_key = {r.key: r.result for r in first}
    assert by_key["permutation"].n_samples == (240 - 1) // 8
    assert by_key["all_s"].n_samples <= 240
    # (b) is Algorithm 1 as published: independent tests; (b*) and (b') draw them without replacement
    assert by_key["gt_paper"].info["sampling"] == "independent" and by_key["gt_paper"].info["without_replacement"] == []
    for key in ("gt_paper_wor", "gt_improved"):
        assert by_key[key].info["sampling"] == "without_replacement" and by_key[key].info["without_replacement"]
    assert by_key["gt_paper"].info["centering"] == "none" and by_key["gt_improved"].info["centering"] == "linear"
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
    assert set(table.method) == {"largest_s", "loo_exact", "permutation", "gt_paper", "gt_paper_wor", "gt_improved",
                                 "all_s"}
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
    assert len(distances) == 15  # 6 main methods, every unordered pair once
    assert (distances.rel_distance > 0).all()
    assert (distances.ci_low <= distances.rel_distance).all() and (distances.rel_distance <= distances.ci_high).all()
    assert summary.loc["permutation", "spearman_ci_low"] <= summary.loc["permutation", "spearman"]
    assert np.isnan(summary.loc["largest_s", "rel_l2_error_ci_low"])
    assert distances.set_index(["method_a", "method_b"]).loc[("permutation", "largest_s"), "n_repetitions"] == 2


def test_pairwise_distance_is_zero_between_identical_estimates():
    reference = ValuationResult(values=np.array([1.0, 2.0]), n_evaluations=0, method="exact")
    runs = [ia.MethodRun(key, ValuationResult(values=np.array([1.0, 3.0]), n_evaluations=1, method=key), 0.0)
            for key in ("permutation", "all_s", "largest_s")]
    distances = ia.pairwise_distances(runs, reference, methods=("permutation", "all_s", "largest_s"))
    assert distances.rel_distance.tolist() == [0.0, 0.0, 0.0]


def test_mean_interval_is_the_t_interval():
    mean, low, high = ia.mean_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and high - mean == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6) and low == 4 - high
    assert ia.mean_interval([1.0, 2.0, 3.0], level=0.5)[2] < high
    single = ia.mean_interval([0.7])
    assert single[0] == 0.7 and np.isnan(single[1]) and np.isnan(single[2])
    for bad in ([], [1.0, np.nan]):
        with pytest.raises(ValueError, match="samples"):
            ia.mean_interval(bad)
    with pytest.raises(ValueError, match="level"):
        ia.mean_interval([1.0, 2.0], level=1.0)


def test_decide_is_three_valued():
    assert ia.decide(0.81, 0.9, 0.8) is True and ia.decide(0.7, 0.79, 0.8) is False
    assert ia.decide(0.79, 0.81, 0.8) is None and ia.decide(np.nan, np.nan, 0.8) is None
    assert ia.decide(0.1, 0.2, 0.25, "below") is True and ia.decide(0.3, 0.4, 0.25, "below") is False
    assert ia.decide(0.2, 0.3, 0.25, "below") is None
    with pytest.raises(ValueError, match="side"):
        ia.decide(0.1, 0.2, 0.3, "left")


def test_repetitions_to_decide_makes_the_half_width_smaller_than_the_distance():
    from scipy import stats

    n = ia.repetitions_to_decide(0.1, 0.04)
    assert stats.t.ppf(0.975, n - 1) * 0.1 / math.sqrt(n) < 0.04 <= stats.t.ppf(0.975, n - 2) * 0.1 / math.sqrt(n - 1)
    assert ia.repetitions_to_decide(0.1, -0.04) == n and ia.repetitions_to_decide(0.1, 0.0) is None


def test_uniform_split_and_mean_estimate_errors():
    reference = np.array([1.0, 2.0, 3.0])
    assert ia.uniform_split_error(reference) == pytest.approx(math.sqrt(2 / 14))
    ref = ValuationResult(values=reference, n_evaluations=0, method="exact")
    runs = [ia.MethodRun("permutation", ValuationResult(values=reference + d, n_evaluations=1, method="p"), 0.0)
            for d in (np.array([1.0, 0, 0]), np.array([-1.0, 0, 0]))]
    assert ia.mean_estimate_error(runs, ref) == {"permutation": 0.0}


def test_run_all_refuses_bad_all_s_repetitions(small):
    data, game, _ = small
    with pytest.raises(ValueError, match="n_repetitions_all_s"):
        ia.run_all(game, data, C=1.0, budget=100, seed=0, n_repetitions=2, n_repetitions_all_s=3)


def _row(spearman, error, n=30):
    """A summary row: each of ``spearman``, ``error`` is (mean, CI low, CI high)."""
    return {"spearman": spearman[0], "spearman_ci_low": spearman[1], "spearman_ci_high": spearman[2],
            "spearman_sd": 0.05, "spearman_p": 1e-4, "rel_l2_error": error[0], "rel_l2_error_ci_low": error[1],
            "rel_l2_error_ci_high": error[2], "rel_l2_error_sd": 0.02, "n_repetitions": n}


GOOD = ((0.95, 0.93, 0.97), (0.1, 0.09, 0.11))


def _summary(overrides=None, largest=(0.6, 1e-3, 1.5)):
    rows = {key: _row(*(overrides or {}).get(key, GOOD)) for key in ia.RECOVERY_METHODS}
    rows["largest_s"] = _row((largest[0],) * 3, (largest[2],) * 3, n=1)
    rows["largest_s"]["spearman_p"] = largest[1]
    return pd.DataFrame.from_dict(rows, orient="index")


def _distances(within=(0.2, 0.15, 0.25), to_largest=(1.4, 1.35, 1.45)):
    keys = ("rel_distance", "ci_low", "ci_high")
    rows = [{"method_a": a, "method_b": b, **dict(zip(keys, within)), "n_repetitions": 30}
            for i, a in enumerate(ia.CLOSE_METHODS) for b in ia.CLOSE_METHODS[i + 1:]]
    rows += [{"method_a": a, "method_b": "largest_s", **dict(zip(keys, to_largest)), "n_repetitions": 30}
             for a in ia.CLOSE_METHODS]
    return pd.DataFrame(rows)


# --- (b) at Theorem 3's count of tests --------------------------------------------------------------------------

def test_the_table_game_is_the_game(small):
    _, game, _ = small
    table = ia.utility_table(game)
    lookup = ia.table_game(table)
    masks = np.random.default_rng(0).random((50, 8)) < 0.5
    np.testing.assert_array_equal(lookup.evaluate(masks), game.evaluate(masks))
    np.testing.assert_allclose(ia.reference_values(lookup).values, ia.reference_values(game).values, atol=1e-15)
    for bad in (table[:-1], table[:2], table.reshape(2, -1)):
        with pytest.raises(ValueError, match="2\\^N utilities of a game of N >= 2 players"):
            ia.table_game(bad)
    with pytest.raises(ValueError, match="2\\^N utilities"):
        ia.theorem3_runs(table[:-1], epsilon=0.5, delta=0.2, seed=0, n_repetitions=2)


def test_theorem3_runs_sample_the_theorems_count_reproducibly(small):
    from shapley_research import group_testing_sample_size

    _, game, _ = small
    table = ia.utility_table(game)
    tests = ia.theorem3_tests(table, 0.5, 0.2)
    assert tests == group_testing_sample_size(0.5, 0.2, 8, float(np.ptp(table)), variant="paper") and tests > 2**8
    runs = ia.theorem3_runs(table, epsilon=0.5, delta=0.2, seed=1, n_repetitions=2)
    again = ia.theorem3_runs(table, epsilon=0.5, delta=0.2, seed=1, n_repetitions=2, n_jobs=2)
    assert [r.key for r in runs] == [ia.THEOREM_KEY] * 2 and runs[0].seed != runs[1].seed
    for run, rerun in zip(runs, again):
        assert run.result.values.tobytes() == rerun.result.values.tobytes()
        assert run.result.n_evaluations == tests + 2  # sampled, although the count exceeds the 2^N coalitions
        assert run.result.info.get("stopped_by") != "enumeration"
    reference = ia.reference_values(game)
    summary = ia.theorem3_summary(runs, reference, table, epsilon=0.5, delta=0.2, budget=100)
    errors = [np.linalg.norm(r.result.values - reference.values) for r in runs]
    assert summary["within_epsilon"] == sum(e <= 0.5 for e in errors) and summary["max_l2_error"] == max(errors)
    assert summary["times_common_budget"] == tests / 100
    with pytest.raises(ValueError, match="n_repetitions"):
        ia.theorem3_runs(table, epsilon=0.5, delta=0.2, seed=1, n_repetitions=1)


THEOREM = {"tests": 5_713_675, "n_coalitions": 65_536, "epsilon": 0.0625, "delta": 0.05, "utility_range": 0.704,
           "times_common_budget": 357.1, "n_repetitions": 20, "within_epsilon": 20, "max_l2_error": 0.002}


@pytest.mark.parametrize("row, verdict", [(GOOD, "holds"), (((0.7, 0.68, 0.72), GOOD[1]), "does not hold"),
                                          (((0.81, 0.78, 0.84), GOOD[1]), "inconclusive")])
def test_theorem3_claim_is_decided_by_the_recovery_rule(row, verdict):
    summary = _summary()
    summary.loc[ia.THEOREM_KEY] = _row(*row, n=20)
    claims = ia.evaluate_claims(summary, _distances(), uniform_error=0.4, theorem=THEOREM)
    check = claims[-1]
    assert len(claims) == 10 and verdict_of(check) == verdict and check.source == "reproduction"
    assert check.claim.endswith("at Theorem 3's count of tests recovers the reference Shapley values by the "
                                "recovery rule of (a)-(c).")
    assert "T = 5,713,675 tests" in check.note and "occurred in 20 of 20 repetitions" in check.note
    assert "(87x the 65,536 coalitions)" in check.note
    assert len(ia.evaluate_claims(summary, _distances(), uniform_error=0.4)) == 9  # no theorem: no check
    with pytest.raises(ValueError, match="theorem is given but summary has no 'gt_paper_theorem3' row"):
        ia.evaluate_claims(_summary(), _distances(), uniform_error=0.4, theorem=THEOREM)


def _claims(summary=None, distances=None, uniform_error=0.4):
    return ia.evaluate_claims(_summary() if summary is None else summary,
                              _distances() if distances is None else distances, uniform_error=uniform_error)


def test_every_claim_holds_on_clear_data():
    claims = _claims()
    assert len(claims) == 9 and all(c.holds for c in claims)
    assert [c.source for c in claims] == (["paper", "paper", "reproduction", "reproduction", "paper", "reproduction"]
                                          + ["paper"] * 3)
    assert [c.claim.split()[0] for c in claims[:6]] == ["(a)", "(b)", "(b')", "(b*)", "(c)", "(c')"]
    assert all(c.section and "Comparing Approximation Accuracy" in c.section for c in claims if c.source == "paper")
    assert "0.8" in claims[0].criterion and "0.25" in claims[0].criterion and "uniform" in claims[0].criterion


@pytest.mark.parametrize("spearman, error, uniform, word", [
    ((0.75, 0.73, 0.77), GOOD[1], 0.4, "< 0.8"),                      # rank agreement wholly below 0.8
    (GOOD[0], (0.3, 0.28, 0.32), 0.4, "> 0.25"),                      # error wholly above 0.25
    (GOOD[0], (0.1, 0.09, 0.11), 0.05, "> the uniform split"),        # no better than the trivial baseline
    ((0.81, 0.78, 0.84), GOOD[1], 0.4, "undecided"),                  # interval straddles the threshold
])
def test_accuracy_claim_fails_or_is_undecided(spearman, error, uniform, word):
    claims = _claims(_summary({"gt_paper": (spearman, error)}), uniform_error=uniform)
    assert claims[1].holds is False and word in claims[1].note
    if word == "undecided":
        assert "repetitions would decide" in claims[1].note and verdict_of(claims[1]) == "inconclusive"
    else:
        assert "undecided" not in claims[1].note and verdict_of(claims[1]) == "does not hold"


def test_algorithm_1_as_published_does_not_hold_beside_a_refinement_that_does():
    """The situation of the paper run: (b), independent tests, wholly below 0.8, from variance (its mean over the
    repetitions is accurate); (b*), the same estimator without replacement, above. (b) does not hold, its note
    names the sampler, the cause and (b*)'s interval; (b*) is this package's own check, apart."""
    summary = _summary({"gt_paper": ((0.763, 0.748, 0.778), (0.224, 0.219, 0.230)),
                        "gt_paper_wor": ((0.831, 0.821, 0.841), (0.168, 0.164, 0.173))})
    summary["rel_l2_error_of_mean"] = 0.015
    claims = _claims(summary, uniform_error=0.409)
    paper, own = claims[1], claims[3]
    assert paper.holds is False and verdict_of(paper) == "does not hold" and paper.source == "paper"
    assert "0.763 [0.748, 0.778] < 0.8" in paper.note and "Cause: variance at the common budget" in paper.note
    assert "independent" in paper.note and "(b*), has mean Spearman 0.831 [0.821, 0.841]" in paper.note
    assert "as published" in paper.claim
    assert own.holds is True and own.source == "reproduction" and own.section is None
    assert "without replacement" in own.claim and "Not the algorithm as published" in own.note


def test_all_s_as_published_does_not_hold_beside_the_newton_update_that_does():
    """The situation of the paper run: the paper's influence function, (c), far from the reference (bias: its mean
    over the repetitions is as wrong), and this package's Newton update, (c'), accurate. (c) is the paper's claim
    and does not hold, its note naming the formula and (c')'s interval; (c') is this package's own check."""
    summary = _summary({"all_s_first_order": ((0.185, 0.18, 0.19), (2.41, 2.40, 2.42)),
                        "all_s": ((0.994, 0.987, 1.0), (0.037, 0.036, 0.039))})
    summary["rel_l2_error_of_mean"] = 0.5
    summary.loc["all_s_first_order", "rel_l2_error_of_mean"] = 2.41
    claims = _claims(summary, uniform_error=0.409)
    paper, own = claims[4], claims[5]
    assert paper.holds is False and verdict_of(paper) == "does not hold" and paper.source == "paper"
    assert "Cause: bias" in paper.note and "influence function with the base set's Hessian" in paper.note
    assert "(c'), has mean Spearman 0.994 [0.987, 1.000]" in paper.note
    assert own.holds is True and own.source == "reproduction" and "Not the paper's formula" in own.note
    # the paper's update with the utility evaluated, (c''), splits the error: reported in (c)'s note, no claim
    summary.loc["all_s_influence_evaluated"] = _row((0.5, 0.45, 0.55), (1.2, 1.1, 1.3), n=4)
    claims = _claims(summary, uniform_error=0.409)
    assert len(claims) == 9 and "instead of linearised, (c''), has mean Spearman 0.500" in claims[4].note
    assert claims[4].note.index("(c'')") < claims[4].note.index("(c'),")


@pytest.mark.parametrize("key, index", [("gt_paper_wor", 3), ("gt_improved", 2), ("all_s", 5)])
def test_the_refinements_checks_fail_on_false_data(key, index):
    claims = _claims(_summary({key: ((0.7, 0.68, 0.72), (0.3, 0.28, 0.32))}))
    assert claims[index].holds is False and verdict_of(claims[index]) == "does not hold"
    assert claims[index].source == "reproduction" and "< 0.8" in claims[index].note
    assert all(c.holds for i, c in enumerate(claims) if i != index)


def test_labels_name_the_sampler_and_the_centering():
    assert "as published" in ia.METHODS["gt_paper"] and "independent" in ia.METHODS["gt_paper"]
    assert "without replacement" in ia.METHODS["gt_paper_wor"]
    assert "this package's centering" in ia.METHODS["gt_improved"]
    assert not any("improved" in label for label in (*ia.METHODS.values(), *ia.SHORT_NAMES.values()))


def test_closeness_claim_fails_or_is_undecided():
    far = _claims(distances=_distances(within=(1.0, 0.9, 1.1), to_largest=(0.5, 0.45, 0.55)))[6]
    assert far.holds is False and verdict_of(far) == "does not hold"
    # closer to each other than to largest-S, but farther apart than a constant lies from the exact values
    loose = _claims(distances=_distances(within=(1.0, 0.9, 1.1), to_largest=(1.4, 1.35, 1.45)))[6]
    assert verdict_of(loose) == "does not hold" and "farther than the uniform split lies" in loose.note
    assert "uniform split's relative error" in loose.criterion
    undecided = _claims(distances=_distances(within=(0.35, 0.3, 0.45), to_largest=(1.4, 1.35, 1.45)))[6]
    assert undecided.holds is False and "undecided" in undecided.note and verdict_of(undecided) == "inconclusive"
    # the family is the paper's (a), (b), (c): this package's refinements do not decide the paper's claim
    assert ia.CLOSE_METHODS == ("permutation", "gt_paper", "all_s_first_order")


def test_largest_s_correlation_claim_fails():
    claims = _claims(_summary(largest=(0.3, 0.12, 1.5)))
    assert claims[7].holds is False and "p = 0.12" in claims[7].note
    assert _claims(_summary(largest=(-0.6, 1e-3, 1.5)))[7].holds is False


def test_largest_s_not_recovering_claim_holds_where_it_fails_the_recovery_rule():
    """Largest-S "cannot recover" where its error is above the recovery threshold or no better than a constant."""
    accurate = _claims(_summary(largest=(0.6, 1e-3, 0.2)), uniform_error=0.4)[8]  # would pass (a)-(c)'s rule
    assert accurate.holds is False and verdict_of(accurate) == "does not hold"
    assert "meets the recovery criterion" in accurate.note
    assert _claims(_summary(largest=(0.6, 1e-3, 0.3)), uniform_error=0.4)[8].holds  # above 0.25
    assert _claims(_summary(largest=(0.6, 1e-3, 0.2)), uniform_error=0.15)[8].holds  # worse than a constant
    far = _claims(_summary(largest=(0.6, 1e-3, 2.45)), uniform_error=0.409)[8]
    assert far.holds and far.value == [2.45, 0.409] and "a constant is closer to the exact values" in far.note


@pytest.mark.slow  # draws with matplotlib (its first import takes seconds)
def test_plot_comparison_draws_four_panels(small_runs, small):
    reference, runs = small_runs
    values = ia.values_table(runs, reference, small[0][1])
    fig = ia.plot_comparison(values, ia.agreement_table(runs, reference), error_threshold=0.25, title="t")
    assert len(fig.axes) == 4
    assert len(fig.axes[3].patches) == 7  # one bar per method run
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_quick_profile_end_to_end(quick_run):
    proc, tmp_path = quick_run("iris_accuracy")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = tmp_path / "iris_accuracy"
    for name in ("comparison.png", "comparison.pdf", "values.csv", "agreement.csv", "pairwise_distances.csv",
                 "iris_accuracy.ipynb", "metrics.json"):
        assert (out / name).is_file(), name
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["profile"] == "quick" and metrics["n_train"] == 10 and metrics["reference"] == "exact"
    assert metrics["empty_utility"] == 0 and metrics["n_repetitions"] == 10 and metrics["n_repetitions_all_s"] == 2
    assert 0 < metrics["uniform_split_rel_l2_error"] < 10
    assert metrics["utility_mismatch"] < 1e-5
    claims = metrics["claims"]
    assert len(claims) == 10 and claims[-1]["claim"].startswith("(b#)")
    theorem = metrics["theorem3"]
    assert theorem["n_repetitions"] == 4 and theorem["tests"] > 2**10 and 0 <= theorem["within_epsilon"] <= 4
    for entry in claims:
        assert isinstance(entry["claim"], str) and entry["claim"]
        assert isinstance(entry["holds"], bool) and entry["source"] in ("paper", "reproduction")
        assert entry["criterion"] and (entry["source"] == "reproduction" or entry["section"])
        assert all(np.isfinite(entry["statistic"]["value"]))
    for key in ia.MAIN_METHODS:
        method = metrics["methods"][key]
        assert -1 <= method["spearman"] <= 1 and 0 <= method["rel_l2_error"] < 10
        if key != "largest_s":
            assert method["rel_l2_error_ci_low"] <= method["rel_l2_error"] <= method["rel_l2_error_ci_high"]
    assert metrics["methods"]["all_s"]["n_evaluations"] <= metrics["budget"]
    values = pd.read_csv(out / "values.csv")
    assert {"method", "repetition", "point", "value", "reference_value"} <= set(values.columns)
    reference = values[values.method == "reference"]
    assert reference.value.sum() == pytest.approx(metrics["full_utility"] - metrics["empty_utility"], rel=1e-6)
