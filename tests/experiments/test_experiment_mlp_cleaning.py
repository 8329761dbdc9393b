"""Experiment ``mlp_cleaning``: claims (holding, failing, inconclusive), summaries, a quick run through the library."""

import math

import numpy as np
import pytest

from shapley_research.experiments import data_cleaning as dc
from shapley_research.experiments import mlp_cleaning as mc

# --- claims ----------------------------------------------------------------------------------


def fake_detection(aurocs: dict, datasets=("a", "b")) -> list[dict]:
    """Detection rows: ``aurocs[(model, method)]`` is the AUROC per seed (the same on every data set)."""
    return [{"dataset": dataset, "repetition": repetition, "model": model, "method": method, "auroc": auroc,
             "f1": auroc, "wall_time_s": 1.0, "n_evaluations": 100}
            for dataset in datasets for (model, method), per_seed in aurocs.items()
            for repetition, auroc in enumerate(per_seed)]


GOOD = {("mlp", m): [0.80, 0.82, 0.84, 0.81] for m in mc.METHODS}
GOOD.update({("logistic", m): [0.78, 0.81, 0.82, 0.80] for m in mc.METHODS})


def test_above_random_claim_holds_fails_and_is_inconclusive():
    verdict = mc.above_random_claim(fake_detection(GOOD), "msr_banzhaf")
    assert verdict.holds and mc.verdict_of(verdict) == "holds" and verdict.source == "reproduction"
    assert verdict.value == pytest.approx(0.8175)  # the lowest mean over the data sets
    worse = fake_detection({**GOOD, ("mlp", "msr_banzhaf"): [0.40, 0.42, 0.38, 0.41]})  # below random
    verdict = mc.above_random_claim(worse, "msr_banzhaf")
    assert not verdict.holds and mc.verdict_of(verdict) == "does not hold" and "Cause of the miss: a, b" in verdict.note
    straddle = fake_detection({**GOOD, ("mlp", "msr_banzhaf"): [0.30, 0.70, 0.45, 0.65]})
    verdict = mc.above_random_claim(straddle, "msr_banzhaf")
    assert not verdict.holds and mc.verdict_of(verdict) == "inconclusive" and "seeds would decide" in verdict.note
    assert mc.verdict_of(verdict.to_dict()) == "inconclusive"  # read back from metrics.json
    one_seed = fake_detection({("mlp", "msr_banzhaf"): [0.9]})  # no spread: nothing decided
    assert mc.verdict_of(mc.above_random_claim(one_seed, "msr_banzhaf")) == "inconclusive"


def test_above_random_claim_fails_on_one_data_set_or_without_runs():
    table = fake_detection(GOOD)
    for row in table:
        if row["dataset"] == "b" and row["model"] == "mlp" and row["method"] == "data_oob":
            row["auroc"] -= 0.45
    assert mc.verdict_of(mc.above_random_claim(table, "data_oob")) == "does not hold"
    failed = fake_detection({**GOOD, ("mlp", "beta_shapley"): [math.nan] * 4})
    verdict = mc.above_random_claim(failed, "beta_shapley")
    assert mc.verdict_of(verdict) == "does not hold" and "did not run" in verdict.note
    half = fake_detection(GOOD)
    for row in half:  # ran on data set a only: b counts as a miss, as in data_cleaning
        if row["dataset"] == "b" and row["model"] == "mlp" and row["method"] == "beta_shapley":
            row["auroc"] = math.nan
    verdict = mc.above_random_claim(half, "beta_shapley")
    assert mc.verdict_of(verdict) == "does not hold" and "b: did not run" in verdict.note
    assert "Cause of the miss: b " in verdict.note and verdict.value is None  # NaN: a data set did not run


def test_above_random_claim_asks_for_a_margin_and_corrects_for_the_data_sets():
    barely = fake_detection({**GOOD, ("mlp", "msr_banzhaf"): [0.51, 0.52, 0.53, 0.52]})  # above 0.5, not by 0.05
    verdict = mc.above_random_claim(barely, "msr_banzhaf")
    assert mc.verdict_of(verdict) == "does not hold"
    assert "a +0.520 [+0.507, +0.533] (n 4, does not hold)" in verdict.note
    assert "Holm" in verdict.criterion and "at or above 0.55" in verdict.criterion
    table = fake_detection(GOOD)
    for row in table:  # wholly below 0.55 on data set b at 95%, but not after Holm's correction over two
        if row["dataset"] == "b" and row["model"] == "mlp" and row["method"] == "data_oob":
            row["auroc"] = {0: 0.51, 1: 0.54, 2: 0.52, 3: 0.50}[row["repetition"]]
    verdict = mc.above_random_claim(table, "data_oob")
    assert mc.verdict_of(verdict) == "inconclusive" and "not after Holm's correction over 2" in verdict.note
    single = [row for row in table if row["dataset"] == "b"]
    assert mc.verdict_of(mc.above_random_claim(single, "data_oob")) == "does not hold"  # one interval: no correction


def test_auroc_intervals_stay_in_their_range():
    near_one = fake_detection({**GOOD, ("mlp", "data_oob"): [0.99, 0.95, 1.0, 0.99]})
    verdict = mc.above_random_claim(near_one, "data_oob")
    assert verdict.holds and "a +0.982 [+0.947, +1.000]" in verdict.note  # the plain t interval ends at 1.018
    summary = [s for s in mc.summarise_detection(near_one) if s["model"] == "mlp" and s["method"] == "data_oob"]
    assert all(s["auroc_high"] == 1.0 for s in summary)


def test_mlp_vs_logistic_claim_holds_fails_and_is_inconclusive():
    verdict = mc.mlp_vs_logistic_claim(fake_detection(GOOD), "beta_shapley")
    assert verdict.holds and verdict.value == pytest.approx(0.015)
    worse = fake_detection({**GOOD, ("mlp", "beta_shapley"): [0.68, 0.70, 0.71, 0.69]})  # 0.11 below logistic
    verdict = mc.mlp_vs_logistic_claim(worse, "beta_shapley")
    assert mc.verdict_of(verdict) == "does not hold"
    assert "a -0.108 [-0.115, -0.100] (n 4, does not hold)" in verdict.note
    assert verdict.value < -mc.DIFFERENCE_MARGIN and "Cause of the miss: a, b" in verdict.note
    noisy = fake_detection({**GOOD, ("mlp", "beta_shapley"): [0.60, 0.95, 0.70, 0.90]})
    assert mc.verdict_of(mc.mlp_vs_logistic_claim(noisy, "beta_shapley")) == "inconclusive"
    within = fake_detection({**GOOD, ("mlp", "beta_shapley"): [0.76, 0.79, 0.80, 0.78]})  # 0.02 below: a tie
    assert mc.mlp_vs_logistic_claim(within, "beta_shapley").holds


def test_claims_cover_every_method_twice():
    claims = mc.mlp_cleaning_claims(fake_detection(GOOD))
    assert len(claims) == 2 * len(mc.METHODS) and all(c.holds for c in claims)
    assert all(c.source == "reproduction" and "own check" in c.claim for c in claims)


def test_summaries_pair_by_seed():
    rows = fake_detection({("mlp", "data_oob"): [0.9, 0.8, math.nan], ("logistic", "data_oob"): [0.7, 0.7, 0.7]},
                          datasets=("a",))
    summary, logistic = mc.summarise_detection(rows)
    assert summary["model"] == "mlp" and logistic["auroc_high"] == pytest.approx(0.7)
    assert summary["n_repetitions"] == 2 and summary["auroc_mean"] == pytest.approx(0.85)
    assert summary["auroc_low"] < 0.85 < summary["auroc_high"]
    difference, = mc.paired_differences(rows)
    assert difference["n_pairs"] == 2 and difference["difference_mean"] == pytest.approx(0.15)


@pytest.mark.slow  # draws with matplotlib (its first import takes seconds)
def test_plot_draws(tmp_path):
    from shapley_research.experiments import save_figure, setup_matplotlib

    setup_matplotlib()
    import matplotlib.pyplot as plt

    save_figure(mc.plot_detection(fake_detection(GOOD)), tmp_path, "detection", pdf=False)
    assert (tmp_path / "detection.png").stat().st_size > 0
    plt.close("all")


# --- data and games --------------------------------------------------------------------------

@pytest.mark.slow  # over a second
def test_problems_are_data_cleanings_and_the_mlp_is_seeded():
    problem = mc.make_problem("breast_cancer", 40, 30, 0.15, seed=5)
    expected = dc.make_problem("breast_cancer", 40, 30, 0.15, seed=5)
    for key in ("X_train", "y_train", "flipped", "X_test"):
        np.testing.assert_array_equal(problem[key], expected[key])
    import torch

    state = torch.random.get_rng_state()
    first, second = mc.make_mlp(30, 8, 2, seed=3), mc.make_mlp(30, 8, 2, seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global generator is untouched
    assert all(torch.equal(a, b) for a, b in zip(first.parameters(), second.parameters()))
    with pytest.raises(ValueError, match="name"):
        mc.make_problem("cifar", 40, 30, 0.15, seed=0)


# --- end to end, through the library (the quick profile's sizes) -----------------------------

QUICK = {"datasets": ["breast_cancer"], "n_train": 30, "n_test": 60, "flip_fraction": 0.15, "n_seeds": 2,
         "budget": 60, "options": {"hidden": 8, "steps": 20, "oob_estimators": 30}}


@pytest.fixture(scope="module")
def quick_runs():
    return mc.run_mlp_cleaning(**QUICK, seed=0), mc.run_mlp_cleaning(**QUICK, seed=0)


@pytest.mark.slow  # two quick runs of the experiment, in process
def test_quick_run_shapes_and_finite_numbers(quick_runs):
    (detection, values, info), _ = quick_runs
    assert len(detection) == 2 * len(mc.MODELS) * len(mc.METHODS)
    assert all(row["error"] is None for row in detection), [row["error"] for row in detection]
    assert all(0 <= row["auroc"] <= 1 and math.isfinite(row["wall_time_s"]) for row in detection)
    assert {row["n_evaluations"] for row in detection if row["method"] == "data_oob"} == {30}
    assert len(values) == len(detection)
    assert all(entry["values"].shape == (30,) and np.isfinite(entry["values"]).all() for entry in values)
    assert info["breast_cancer"]["n_flipped"] == 4
    assert all(0 < v <= 1 for k, v in info["breast_cancer"].items() if k != "n_flipped")
    assert len(mc.values_rows(values)) == len(values) * 30
    assert len(mc.mlp_cleaning_claims(detection)) == 2 * len(mc.METHODS)


@pytest.mark.slow  # two quick runs of the experiment, in process
def test_quick_run_repeats_exactly_for_a_seed(quick_runs):
    (first, first_values, first_info), (second, second_values, second_info) = quick_runs
    strip = [{k: v for k, v in row.items() if k != "wall_time_s"} for row in first]
    assert strip == [{k: v for k, v in row.items() if k != "wall_time_s"} for row in second]
    for a, b in zip(first_values, second_values):
        np.testing.assert_array_equal(a["values"], b["values"])
    assert first_info == second_info
