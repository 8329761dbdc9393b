"""data_cleaning's noisy utility: Data Banzhaf's claim decided where Wang & Jia make it, its twin beside."""

import numpy as np
import pandas as pd
import pytest

from shapley_research.experiments import data_cleaning as dc

pytest.importorskip("torch")

GOOD = {"random": [0.5, 0.52, 0.48], "permutation": [0.8, 0.82, 0.78], "truncated_permutation": [0.8, 0.8, 0.8],
        "msr_banzhaf": [0.85, 0.84, 0.83], "beta_shapley": [0.9, 0.88, 0.86], "data_oob": [0.95, 0.93, 0.94]}


def fake_detection(aurocs: dict, budget: int = 100, datasets=("a", "b")) -> pd.DataFrame:
    """A detection table: ``aurocs[method]`` is the AUROC per seed (the same on every data set)."""
    return pd.DataFrame([{"dataset": d, "repetition": r, "method": m, "budget": budget, "main": True, "auroc": a,
                          "f1": a, "wall_time_s": 1.0, "n_evaluations": budget, "error": None}
                         for d in datasets for m, per_seed in aurocs.items() for r, a in enumerate(per_seed)])


def fake_noisy(banzhaf, permutation=(0.8, 0.82, 0.78), budget=3000) -> pd.DataFrame:
    table = fake_detection({"msr_banzhaf": list(banzhaf), "permutation": list(permutation)}, budget=budget)
    return table.assign(epochs=5, batch_size=32, learning_rate=0.1)


NOISE = {"a": {"full_mean": 0.9, "full_sd": 0.03, "half_sd": 0.07}, "b": {"full_mean": 0.9, "full_sd": 0.02,
                                                                        "half_sd": 0.05}}


def test_noisy_banzhaf_claim_holds_fails_and_is_inconclusive():
    verdict = dc.noisy_banzhaf_claim(fake_noisy([0.85, 0.84, 0.83]), noise=NOISE)
    assert verdict.holds and verdict.source == "paper" and "Wang & Jia" in verdict.section
    assert "noisy utility" in verdict.claim and "3000" in verdict.claim and "on the noisy utility" in verdict.criterion
    assert "epochs=5" in verdict.note and "+- 0.030" in verdict.note and "Holm" in verdict.criterion
    failing = dc.noisy_banzhaf_claim(fake_noisy([0.7, 0.72, 0.68]))
    assert failing.verdict == "does not hold" and failing.value == pytest.approx(-0.1)
    assert "Cause of the miss" in failing.note
    unsure = dc.noisy_banzhaf_claim(fake_noisy([0.78, 0.84, 0.74]))
    assert unsure.verdict == "inconclusive" and "seeds would decide" in unsure.note


def test_noisy_claim_reports_the_deterministic_comparison_and_comes_first():
    detection = fake_detection({**GOOD, "msr_banzhaf": [0.7, 0.72, 0.68]}, budget=3000)
    noisy = fake_noisy([0.85, 0.84, 0.83])
    verdict = dc.noisy_banzhaf_claim(noisy, detection, NOISE)
    assert verdict.holds and "on the deterministic utility at 3000 evaluations" in verdict.note
    assert "-0.100" in verdict.note  # the deterministic measurement, beside the decided one
    curves = pd.DataFrame({"dataset": ["a"], "repetition": [0], "method": ["random"], "curve": ["remove_lowest"],
                           "fraction": [0.1], "n_points": [1], "accuracy": [0.8]})
    claims = dc.data_cleaning_claims(detection, curves, noisy=noisy, noise=NOISE)
    assert len(claims) == 7 and claims[1].holds and "noisy utility" in claims[1].claim
    deterministic = claims[2]
    assert deterministic.verdict == "outside its scope" and "deterministic utility" in deterministic.claim
    assert "measured at 3000" in deterministic.claim and "entry before this one" in deterministic.note
    assert [c.source for c in claims].count("paper") == 5
    assert len(dc.data_cleaning_claims(detection, curves)) == 6  # without the noisy run: as before


def test_noisy_game_draws_a_fresh_start_per_seed_and_repeats_it():
    problem = dc.make_problem("breast_cancer", 24, 40, 0.25, seed=0)
    coalitions = np.random.default_rng(0).random((6, 24)) < 0.6
    first = dc.make_noisy_game(problem, seed=1, epochs=2).evaluate(coalitions)
    again = dc.make_noisy_game(problem, seed=1, epochs=2).evaluate(coalitions)
    other = dc.make_noisy_game(problem, seed=2, epochs=2).evaluate(coalitions)
    np.testing.assert_array_equal(first, again)  # same seed, same bits
    assert not np.array_equal(first, other)  # another draw of the noise
    with pytest.raises(ValueError, match="batch_size"):
        dc.make_noisy_game(problem, seed=1, batch_size=0)


def test_run_noisy_utility_small():
    kwargs = dict(datasets=["breast_cancer"], n_train=24, n_test=40, flip_fraction=0.25, n_seeds=2, budget=40,
                  options={"epochs": 2, "noise_draws": 2}, seed=3)
    table, noise = dc.run_noisy_utility(**kwargs)
    assert len(table) == 2 * 2 and set(table["method"]) == set(dc.NOISY_METHODS)
    assert table["error"].isna().all() and table["auroc"].between(0, 1).all() and table["main"].all()
    assert (table["n_evaluations"] <= 40).all() and (table["epochs"] == 2).all()
    assert set(noise["breast_cancer"]) == {"full_mean", "full_sd", "half_sd"}
    again, _ = dc.run_noisy_utility(**kwargs)
    pd.testing.assert_series_equal(table["auroc"], again["auroc"])  # same seed, same values
    with pytest.raises(ValueError, match="budget"):
        dc.run_noisy_utility(**{**kwargs, "budget": 0})
