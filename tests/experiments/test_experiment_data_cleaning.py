"""Experiment ``data_cleaning``: data and flips, detection and curve measures, claims, and one quick end-to-end run."""

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from shapley_research.experiments import data_cleaning as dc
from shapley_research.games import as_game
from shapley_research.games import supports_prefixes

# --- data ------------------------------------------------------------------------------------


@pytest.mark.parametrize("classes", [2, 5])
def test_flip_labels_moves_the_chosen_labels_to_other_classes(classes):
    y = np.arange(200) % classes
    noisy, flipped = dc.flip_labels(y, 0.15, np.random.default_rng(0))
    assert flipped.sum() == 30
    assert (noisy[flipped] != y[flipped]).all() and (noisy[~flipped] == y[~flipped]).all()
    assert set(noisy) <= set(range(classes))
    if classes > 2:  # every other class is reached
        assert len(set(zip(y[flipped], noisy[flipped]))) > classes


def test_make_problem_splits_standardises_and_keeps_the_test_set_clean():
    problem = dc.make_problem("breast_cancer", 60, 40, 0.2, seed=3)
    assert problem["X_train"].shape == (60, 30) and problem["X_test"].shape == (40, 30)
    np.testing.assert_allclose(problem["X_train"].mean(axis=0), 0.0, atol=1e-12)
    assert problem["flipped"].sum() == 12
    assert ((problem["y_train"] != problem["y_clean"]) == problem["flipped"]).all()
    again = dc.make_problem("breast_cancer", 60, 40, 0.2, seed=3)
    np.testing.assert_array_equal(again["y_train"], problem["y_train"])
    digits = dc.make_problem("digits", 50, 30, 0.1, seed=0, digit_classes=(3, 8))
    assert digits["X_train"].shape == (50, 64) and set(digits["y_test"]) == {0, 1}


def test_make_problem_rejects_bad_input():
    with pytest.raises(ValueError, match="name"):
        dc.make_problem("mnist", 50, 30, 0.1, seed=0)
    with pytest.raises(ValueError, match="too many"):
        dc.make_problem("breast_cancer", 500, 100, 0.1, seed=0)
    with pytest.raises(ValueError, match="digit_classes"):
        dc.load_dataset("digits", (3, 3))


# --- detection measures ----------------------------------------------------------------------

def test_detection_auroc_on_hand_made_rankings():
    flipped = np.array([True, False, False, False])
    assert dc.detection_auroc([0.1, 0.5, 0.2, 0.9], flipped) == 1.0   # the flipped point is the lowest
    assert dc.detection_auroc([0.9, 0.5, 0.2, 0.1], flipped) == 0.0   # the highest
    assert dc.detection_auroc([0.3, 0.1, 0.5, 0.9], flipped) == pytest.approx(2 / 3)  # above one of three
    assert dc.detection_auroc([1.0, 1.0, 1.0, 1.0], flipped) == 0.5   # ties count one half
    rows = dc.detection_auroc(np.array([[0.1, 0.5, 0.2, 0.9], [0.9, 0.5, 0.2, 0.1]]), flipped)
    np.testing.assert_array_equal(rows, [1.0, 0.0])


def test_detection_auroc_matches_scikit_learn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    flipped = rng.random(80) < 0.2
    values = np.round(rng.normal(size=80) - flipped, 1)  # rounding makes ties
    assert dc.detection_auroc(values, flipped) == pytest.approx(roc_auc_score(flipped, -values))


def test_detection_f1_flags_the_lowest_k():
    flipped = np.array([True, True, False, False, False])
    assert dc.detection_f1([0.0, 0.1, 0.5, 0.6, 0.7], flipped) == 1.0
    assert dc.detection_f1([0.0, 0.9, 0.5, 0.6, 0.1], flipped) == 0.5
    assert dc.detection_f1([0.9, 0.8, 0.1, 0.2, 0.3], flipped) == 0.0
    assert dc.detection_f1([0.0, 0.9, 0.5, 0.6, 0.1], flipped, k=1) == pytest.approx(2 / 3)  # P 1, R 1/2
    np.testing.assert_array_equal(dc.lowest_k([0.2, 0.1, 0.1, 0.3], 2), [1, 2])  # ties: lower index first


def test_detection_measures_reject_bad_input():
    with pytest.raises(ValueError, match="both"):
        dc.detection_auroc([0.1, 0.2], [False, False])
    with pytest.raises(ValueError, match="shape"):
        dc.detection_auroc([0.1, 0.2, 0.3], [True, False])
    with pytest.raises(ValueError, match="finite"):
        dc.detection_f1([0.1, np.nan], [True, False])


# --- removal and addition curves -------------------------------------------------------------

def test_removal_and_addition_masks():
    values = np.array([0.5, -1.0, 2.0, 0.0, 1.0, 3.0, -2.0, 0.2, 0.1, 0.4])
    masks, removed = dc.removal_masks(values, [0.0, 0.1, 0.3])
    np.testing.assert_array_equal(removed, [0, 1, 3])
    assert masks[0].all()
    np.testing.assert_array_equal(np.flatnonzero(~masks[2]), [1, 3, 6])
    masks, removed = dc.removal_masks(values, [0.2], highest=True)
    np.testing.assert_array_equal(np.flatnonzero(~masks[0]), [2, 5])
    masks, kept = dc.addition_masks(values, [0.05, 0.3, 1.0])
    np.testing.assert_array_equal(kept, [1, 3, 10])
    np.testing.assert_array_equal(np.flatnonzero(masks[1]), [2, 4, 5])
    with pytest.raises(ValueError, match="fractions"):
        dc.removal_masks(values, [1.0])


def test_task_curves_evaluate_every_coalition_on_the_game():
    weights = np.array([1.0, -2.0, 3.0, 0.5, -0.5, 2.0, 0.0, 1.5])
    game = as_game(lambda masks: masks @ weights, 8, vectorized=True)
    curves = dc.task_curves(game, weights, [0.0, 0.25], [0.25, 1.0])
    counts, accuracy = curves["remove_lowest"]
    np.testing.assert_array_equal(counts, [0, 2])
    np.testing.assert_allclose(accuracy, [weights.sum(), weights.sum() + 2.5])  # -2 and -0.5 removed
    np.testing.assert_allclose(curves["remove_highest"][1], [weights.sum(), weights.sum() - 5.0])
    np.testing.assert_allclose(curves["add_highest"][1], [5.0, weights.sum()])


def test_mean_interval_and_summarise():
    mean, low, high = dc.mean_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and high - mean == pytest.approx(4.302652729911275 / math.sqrt(3))  # t(0.975, 2)
    assert dc.mean_interval([4.0]) == (4.0, 4.0, 4.0)
    assert all(math.isnan(x) for x in dc.mean_interval([np.nan]))
    table = pd.DataFrame({"g": ["a", "a", "b"], "x": [1.0, 3.0, 5.0]})
    summary = dc.summarise(table, ["g"], ["x"]).set_index("g")
    assert summary.loc["a", "x_mean"] == 2.0 and summary.loc["b", "n_repetitions"] == 1


# --- methods ---------------------------------------------------------------------------------

def test_truncation_runs_on_the_routed_game_or_a_wrapper():
    problem = dc.make_problem("breast_cancer", 30, 40, 0.15, seed=0)
    game = dc.make_game(problem)
    target, how = dc.truncation_game(game)
    assert target is game and "routed" in how  # the routed logistic game has no evaluate_prefixes

    class WithPrefixes:
        n_players = 3

        def evaluate(self, masks):
            return masks.sum(axis=1).astype(float)

        def evaluate_prefixes(self, permutations):
            return np.tile(np.arange(1.0, 4.0), (len(permutations), 1))

    target, how = dc.truncation_game(WithPrefixes())
    assert not supports_prefixes(target) and "wrapper" in how
    np.testing.assert_array_equal(target.evaluate(np.array([[True, False, True]])), [2.0])


def test_run_method_records_a_failure_instead_of_raising():
    problem = dc.make_problem("breast_cancer", 30, 40, 0.15, seed=0)
    row = dc.run_method("permutation", problem, 2, seed=0)  # cannot afford one permutation of 30 players
    assert row["values"] is None and row["error"].startswith("ValueError")
    row = dc.run_method("random", problem, 100, seed=0)
    assert row["error"] is None and row["values"].shape == (30,) and row["n_evaluations"] == 0


def test_run_data_cleaning_tables():
    detection, curves, values, info = dc.run_data_cleaning(
        datasets=["breast_cancer"], n_train=24, n_test=40, flip_fraction=0.25, n_seeds=2, budgets=[60, 120],
        removal_fractions=[0.0, 0.1], addition_fractions=[0.5, 1.0],
        methods=("random", "knn_shapley", "permutation", "leave_one_out"), seed=1)
    assert len(detection) == 2 * (1 + 1 + 2 + 1)  # permutation at both budgets
    assert detection["error"].isna().all() and detection["auroc"].between(0, 1).all()
    assert set(detection.loc[detection["method"] == "permutation", "budget"]) == {60, 120}
    main = detection[detection["main"]]
    assert len(main) == 2 * 4 and (main.loc[main["method"] == "leave_one_out", "n_evaluations"] == 25).all()
    assert len(curves) == 2 * 5 * (2 + 2 + 2)  # every run that ran, permutation at both budgets
    assert len(curves[curves["main"]]) == 2 * 4 * (2 + 2 + 2)
    assert set(curves.loc[curves["method"] == "permutation", "budget"]) == {60, 120}
    full = curves[(curves["curve"] == "remove_lowest") & (curves["fraction"] == 0.0)]["accuracy"]
    assert full.nunique() == 2  # one U(D) per seed, whatever the ranking
    assert len(values) == 2 * 4 * 24 and values["flipped"].sum() == 2 * 4 * 6
    assert 0 < info["breast_cancer"]["full_accuracy"] <= 1


# --- claims ----------------------------------------------------------------------------------

def fake_detection(aurocs: dict, datasets=("a", "b"), wall=None, budget=100) -> pd.DataFrame:
    """A detection table: ``aurocs[method]`` is the AUROC per seed (the same on every data set).

    ``wall[method]``: a wall time, or one per seed.
    """
    rows = []
    for dataset in datasets:
        for method, per_seed in aurocs.items():
            for repetition, auroc in enumerate(per_seed):
                time = np.broadcast_to((wall or {}).get(method, 1.0), len(per_seed))[repetition]
                rows.append({"dataset": dataset, "repetition": repetition, "method": method, "budget": budget,
                             "main": True, "auroc": auroc, "f1": auroc, "wall_time_s": float(time),
                             "n_evaluations": budget, "error": None})
    return pd.DataFrame(rows)


GOOD = {"random": [0.5, 0.52, 0.48], "permutation": [0.8, 0.82, 0.78], "truncated_permutation": [0.8, 0.8, 0.8],
        "msr_banzhaf": [0.85, 0.84, 0.83], "beta_shapley": [0.9, 0.88, 0.86], "data_oob": [0.95, 0.93, 0.94]}


def test_interval_verdict_and_combine():
    held = dc.interval_verdict([0.1, 0.1, 0.1], 0.0)
    assert held["verdict"] is True and held["seeds_to_decide"] is None
    assert dc.interval_verdict([-0.1, -0.1, -0.1], 0.0)["verdict"] is False
    straddle = dc.interval_verdict([-0.02, 0.02, -0.04], -0.02)
    assert straddle["verdict"] is None and straddle["seeds_to_decide"] > 3
    assert dc.interval_verdict([0.4], 0.5, side="below")["verdict"] is None  # one seed decides nothing
    assert dc.interval_verdict([0.0, 0.0], 0.0, strict=True)["verdict"] is False  # no gain is not a gain
    assert dc.interval_verdict([], 0.0)["n"] == 0
    assert dc.combine([True, True]) is True and dc.combine([True, None]) is None
    assert dc.combine([None, False, True]) is False and dc.combine([]) is None


def test_above_random_claim():
    verdict = dc.above_random_claim(fake_detection(GOOD))
    assert verdict.holds and verdict.verdict == "holds"
    bad = dc.above_random_claim(fake_detection({**GOOD, "leave_one_out": [0.5, 0.52, 0.48]}))
    assert bad.verdict == "does not hold" and "leave_one_out" in bad.note
    unsure = dc.above_random_claim(fake_detection({**GOOD, "leave_one_out": [0.52, 0.5, 0.51]}))
    assert unsure.verdict == "inconclusive" and "seeds would decide" in unsure.note
    failed = fake_detection(GOOD)
    failed.loc[failed["method"] == "beta_shapley", ["auroc", "error"]] = [np.nan, "ValueError: boom"]
    verdict = dc.above_random_claim(failed)
    assert verdict.holds and "beta_shapley" in verdict.note  # failed methods are named, not counted


def test_a_ranking_reversed_by_its_normalisation_is_named_as_the_cause():
    """Largest-S divides by C_U; where C_U < 0 its values flip: a bimodal AUROC, whose mean mixes the two modes."""
    detection = fake_detection({**GOOD, "largest_s_influence": [0.97, 0.02, 0.94],
                                "leave_one_out": [0.52, 0.5, 0.51]})  # undecided, not reversed
    detection["note"] = None
    flipped = (detection["method"] == "largest_s_influence") & (detection["repetition"] == 1)
    detection.loc[flipped, "note"] = ("UserWarning: C_U = -735 < 0: the marginal contributions sum to the opposite "
                                      "sign of U(I) - U(empty), so normalising reverses the ranking of the points.")
    verdict = dc.above_random_claim(detection)
    assert verdict.verdict != "holds"
    assert ("Reversed rankings (a normalising constant C_U < 0 flips the values, so the AUROC is bimodal: its mean "
            "weighs the reversed runs against the others, and more seeds would estimate how often C_U < 0, not how "
            "well the method detects): largest_s_influence on a: 1 of 3 runs (AUROC 0.02-0.02 there, 0.94-0.97 in "
            "the others)") in verdict.note
    # the reversed entry gives no count of seeds (its interval cut to the range of an AUROC difference); the
    # undecided one that is not reversed keeps its count
    assert ("largest_s_influence on a +0.143 [-1.000, +1.000] (n 3, inconclusive; bimodal (reversed rankings in "
            "some runs): its mean mixes the two modes, so no count of seeds is given)") in verdict.note
    assert re.search(r"leave_one_out on a [^;]*inconclusive; about \d+ seeds would decide\)", verdict.note)
    assert "Reversed" not in dc.above_random_claim(fake_detection(GOOD)).note


def test_banzhaf_claim_is_outside_its_scope_on_a_deterministic_utility():
    verdict = dc.banzhaf_claim(fake_detection(GOOD))
    assert verdict.verdict == "outside its scope" and not verdict.holds and "deterministic" in verdict.note
    assert verdict.value == pytest.approx(0.04)  # the measurement is still reported
    assert dc.banzhaf_claim(fake_detection(GOOD), noisy_utility=True).verdict == "holds"


@pytest.mark.parametrize("claim_fn, method", [(lambda t: dc.banzhaf_claim(t, noisy_utility=True), "msr_banzhaf"),
                                              (dc.beta_claim, "beta_shapley")])
def test_semivalue_claims_hold_fail_and_are_inconclusive(claim_fn, method):
    verdict = claim_fn(fake_detection(GOOD))
    assert verdict.holds and verdict.source == "paper" and verdict.section
    verdict = claim_fn(fake_detection({**GOOD, method: [0.7, 0.72, 0.68]}))
    assert verdict.verdict == "does not hold" and "Cause of the miss" in verdict.note
    assert verdict.value == pytest.approx(-0.1)
    within = fake_detection({**GOOD, method: [0.79, 0.81, 0.77]})  # 0.01 below: within the tolerance
    assert claim_fn(within).holds
    unsure = claim_fn(fake_detection({**GOOD, method: [0.78, 0.84, 0.74]}))
    assert unsure.verdict == "inconclusive" and not unsure.holds and "seeds would decide" in unsure.note


def test_semivalue_claim_fails_on_one_data_set():
    table = fake_detection(GOOD)
    table.loc[(table["dataset"] == "b") & (table["method"] == "beta_shapley"), "auroc"] = 0.6
    assert dc.beta_claim(table).verdict == "does not hold"


def test_claims_are_decided_at_the_largest_budget_with_the_sweep_in_the_note():
    small = fake_detection({**GOOD, "beta_shapley": [0.7, 0.72, 0.68]}, budget=100).assign(main=True)
    large = fake_detection(GOOD, budget=400).assign(main=False)
    table = pd.concat([small, large[large["method"].isin(dc.SWEPT)]], ignore_index=True)
    assert dc.claim_budget(table, ("beta_shapley", "permutation")) == 400
    verdict = dc.beta_claim(table)
    assert verdict.holds and "400" in verdict.claim
    assert "100 does not hold" in verdict.note and "400 holds" in verdict.note
    assert dc.beta_claim(table, budget=100).verdict == "does not hold"
    sweep = dc.comparison_table(table)
    assert set(sweep["budget"]) == {100, 400} and set(sweep["verdict"]) <= {"holds", "does not hold", "inconclusive"}


def test_oob_detection_claim():
    assert dc.oob_detection_claim(fake_detection(GOOD)).holds
    verdict = dc.oob_detection_claim(fake_detection({**GOOD, "data_oob": [0.8, 0.78, 0.76]}))
    assert verdict.verdict == "does not hold" and "beta_shapley" in verdict.note
    unsure = dc.oob_detection_claim(fake_detection({**GOOD, "data_oob": [0.88, 0.90, 0.82]}))
    assert unsure.verdict == "inconclusive"


def test_oob_wall_time_claim_is_timed():
    fast = dc.oob_wall_time_claim(fake_detection(GOOD, wall={"data_oob": 0.1}))
    assert fast.holds and fast.timing and fast.value == pytest.approx(0.1) and "Equal footing" in fast.note
    slow = dc.oob_wall_time_claim(fake_detection(GOOD, wall={"data_oob": 3.0}), same_learner=False)
    assert slow.verdict == "does not hold" and slow.value == pytest.approx(3.0) and "Unequal" in slow.note
    unsure = dc.oob_wall_time_claim(fake_detection(GOOD, wall={"data_oob": [0.3, 0.7, 0.5]}))
    assert unsure.verdict == "inconclusive"


def fake_curves(gain) -> pd.DataFrame:
    gains = np.broadcast_to(gain, 3)
    rows = []
    for dataset in ("a", "b"):
        for repetition in range(3):
            for method, accuracy in (("random", 0.8), ("permutation", 0.8 + gains[repetition])):
                rows.append({"dataset": dataset, "repetition": repetition, "method": method,
                             "curve": "remove_lowest", "fraction": 0.1, "n_points": 10, "accuracy": accuracy})
    return pd.DataFrame(rows)


def test_removal_claim():
    verdict = dc.removal_claim(fake_curves(0.05))
    assert verdict.holds and verdict.value == pytest.approx(0.05)
    verdict = dc.removal_claim(fake_curves(-0.02))
    assert verdict.verdict == "does not hold" and "Cause of the miss" in verdict.note
    assert dc.removal_claim(fake_curves(0.0)).verdict == "does not hold"
    assert dc.removal_claim(fake_curves([0.05, -0.03, 0.01])).verdict == "inconclusive"
    assert not dc.removal_claim(fake_curves(0.05), fraction=0.2).holds  # no curve at that fraction


def test_a_marginal_miss_on_one_of_two_data_sets_is_inconclusive_after_holm():
    table = fake_detection(GOOD)
    # beta - permutation on data set b: -0.02 + (-0.045, -0.035, -0.02): wholly below -0.02 at 95%, p in (0.0125, 0.025)
    table.loc[(table["dataset"] == "b") & (table["method"] == "beta_shapley"), "auroc"] = [0.735, 0.765, 0.74]
    entry = dc.budget_sweep(table, "beta_shapley", "permutation", -dc.DETECTION_TOLERANCE)[100]["b"]
    assert entry["verdict"] is False and 0.0125 < entry["p_wrong_side"] < 0.025
    verdict = dc.beta_claim(table)
    assert verdict.verdict == "inconclusive" and "not after Holm's correction over 2" in verdict.note
    assert "Holm" in verdict.criterion and "2 intervals" in verdict.criterion
    assert dc.beta_claim(table[table["dataset"] == "b"]).verdict == "does not hold"  # alone: no family to correct
    sweep = dc.comparison_table(table)
    row = sweep[(sweep["claim"] == "beta") & (sweep["dataset"] == "b")].iloc[0]
    assert row["verdict"] == "does not hold" and row["family_verdict"] == "inconclusive" and row["family"] == 2


def _two_budgets(small: dict, large: dict, wall_small=None, wall_large=None) -> pd.DataFrame:
    """Budget 100 (not the common one) for the budgeted methods, then the common budget 400 for every method."""
    first = fake_detection(small, wall=wall_small, budget=100).assign(main=False)
    first = first[first["method"].isin(dc.BUDGETED)]
    return pd.concat([first, fake_detection(large, wall=wall_large, budget=400)], ignore_index=True)


def test_above_random_claim_reports_every_budget():
    table = _two_budgets({**GOOD, "msr_banzhaf": [0.5, 0.52, 0.48]}, GOOD)
    verdict = dc.above_random_claim(table)
    assert verdict.holds and "100 does not hold" in verdict.note and "400 holds" in verdict.note
    assert "common budget (400)" in verdict.criterion
    failing = dc.above_random_claim(_two_budgets(GOOD, {**GOOD, "msr_banzhaf": [0.5, 0.52, 0.48]}))
    assert failing.verdict == "does not hold" and "100 holds" in failing.note  # decided at the common budget


def test_oob_wall_time_claim_reports_every_budget():
    table = _two_budgets(GOOD, GOOD, wall_small={"data_oob": 3.0}, wall_large={"data_oob": 0.1})
    verdict = dc.oob_wall_time_claim(table)
    assert verdict.holds and "100 does not hold" in verdict.note and "400 holds" in verdict.note
    table = _two_budgets(GOOD, GOOD, wall_small={"data_oob": 0.1}, wall_large={"data_oob": 3.0})
    verdict = dc.oob_wall_time_claim(table)
    assert verdict.verdict == "does not hold" and "100 holds" in verdict.note


def test_removal_claim_reports_every_budget():
    small = fake_curves(-0.02).assign(budget=100, main=False)
    large = fake_curves(0.05).assign(budget=400, main=True)
    curves = pd.concat([small[small["method"] != "random"], large], ignore_index=True)
    verdict = dc.removal_claim(curves)
    assert verdict.holds and verdict.value == pytest.approx(0.05)
    assert "100 does not hold" in verdict.note and "400 holds" in verdict.note
    curves = pd.concat([fake_curves(0.05).assign(budget=100, main=False).query("method != 'random'"),
                        fake_curves(-0.02).assign(budget=400, main=True)], ignore_index=True)
    assert dc.removal_claim(curves).verdict == "does not hold"
    table = dc.comparison_table(_two_budgets(GOOD, GOOD), curves=curves)
    assert {"above_random", "removal", "oob_detection", "beta"} <= set(table["claim"])
    assert "oob_wall_time" not in set(table["claim"])  # measured times: apart, in wall_time_table
    timed = dc.wall_time_table(_two_budgets(GOOD, GOOD))
    assert set(timed["claim"]) == {"oob_wall_time"} and set(timed["budget"]) == {100, 400}
    assert set(table.loc[table["claim"] == "removal", "budget"]) == {100, 400}


def test_group_testing_label_names_its_centering():
    assert dc.LABELS["group_testing"] == "group testing (Wang & Jia + centering)"


def test_method_budgets():
    assert dc.method_budgets("permutation", [50, 100, 400], 100) == [50, 100, 400]   # swept: every budget
    assert dc.method_budgets("svarm", [50, 100, 400], 100) == [50, 100]               # up to the common one
    assert dc.method_budgets("all_s_influence", [50, 100, 400], 100) == [100]
    assert dc.method_budgets("knn_shapley", [50, 100, 400], 100) == [100]


@pytest.mark.slow  # draws with matplotlib (its first import takes seconds)
def test_plots_draw(tmp_path):
    from shapley_research.experiments import save_figure, setup_matplotlib

    setup_matplotlib()
    import matplotlib.pyplot as plt

    detection = fake_detection(GOOD)
    detection["n_evaluations"] = 100
    curves = pd.concat([fake_curves(0.05), fake_curves(0.05).assign(curve="add_highest", fraction=0.5)])
    for stem, fig in (("detection", dc.plot_detection(detection)),
                      ("evaluations", dc.plot_detection_vs_evaluations(detection)), ("curves", dc.plot_curves(curves))):
        save_figure(fig, tmp_path, stem, pdf=False)
        assert (tmp_path / f"{stem}.png").stat().st_size > 0
    plt.close("all")


# --- end to end ------------------------------------------------------------------------------

def test_quick_run_end_to_end(quick_run):
    proc, tmp_path = quick_run("data_cleaning")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = tmp_path / "data_cleaning"
    metrics = json.loads((out / "metrics.json").read_text())
    claims = metrics["claims"]
    assert len(claims) == 8  # the papers' and own claims, then the budget probe's
    assert claims[1]["verdict"] != "outside its scope" and "noisy utility" in claims[1]["claim"]  # decided on noise
    assert claims[2]["verdict"] == "outside its scope"  # Banzhaf on the deterministic utility: reported beside it
    assert all("Holm" in entry["criterion"] for entry in claims)
    assert metrics["noisy_utility"]["budget"] and set(metrics["noisy_utility"]["auroc"]) == {"breast_cancer", "digits"}
    assert (out / "noisy_utility.csv").exists()
    assert {"above_random", "removal"} <= {row["claim"] for row in metrics["comparisons_by_budget"]}
    assert {row["claim"] for row in metrics["wall_time_ratio_by_budget"]} == {"oob_wall_time"}
    assert metrics["probe"]["budgets"] and set(metrics["probe"]["auroc"]) == {"breast_cancer", "digits"}
    assert metrics["comparisons_by_budget"] and max(metrics["budgets"]) > metrics["budget"]
    for entry in claims:
        assert isinstance(entry["holds"], bool) and entry["criterion"] and entry["statistic"]["name"]
        assert entry["source"] == "reproduction" or entry["section"]
    assert metrics["profile"] == "quick" and metrics["n_train"] == 40
    assert set(metrics["auroc"]) == {"breast_cancer", "digits"}
    for _dataset, by_method in metrics["auroc"].items():
        assert set(by_method) == set(dc.METHODS) - set(metrics["failed_methods"])
        assert by_method["knn_shapley"] > by_method["random"]
    for stem in ("detection", "detection_vs_evaluations", "removal_addition"):
        assert (out / f"{stem}.png").exists() and (out / f"{stem}.pdf").exists()
    detection = pd.read_csv(out / "detection.csv")
    assert set(detection["method"]) == set(dc.METHODS)
    for table in ("curves", "values", "detection_summary", "budget_probe"):
        assert len(pd.read_csv(out / f"{table}.csv")) > 0
