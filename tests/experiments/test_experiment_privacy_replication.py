"""privacy_noise's replication over data draws: the claim on synthetic draws, the seeds' checks, a tiny rerun."""

import functools
import math

import numpy as np
import pandas as pd
import pytest

from shapley_research.experiments import set_blas_threads, validate_metrics
from shapley_research.experiments import privacy_noise as pn
from shapley_research.experiments.privacy_noise import _replication  # the cache, for the resume test

# A tiny experiment: two privacy levels, no reference, 20 images, 3 permutations (a fraction of a second a draw)
SETTINGS = dict(epsilons=[1, 1000], delta=1e-5, clip_norm=10.0, clamp=True, n_train=20, n_test=60, n_public=60,
                n_components=8, logistic_C=1.0, n_permutations=3, include_reference=False)


@pytest.fixture(scope="module", autouse=True)
def one_blas_thread():
    limiter = set_blas_threads(1)
    yield
    limiter.restore_original_limits()


@pytest.fixture(scope="module")
def main_levels():
    return pn.run_privacy_noise(**SETTINGS, seed=0)[0]


def synthetic_draws(excess, two_player, spearman=-0.9):
    """A per-draw table as run_replication returns it, the first draw the main one (seeds 0, 1, ...)."""
    n = len(excess)
    rows = []
    for i, (a, b) in enumerate(zip(excess, two_player)):
        rows.append({"seed": i, "main": i == 0, "excess_drop": a, "excess_drop_se": 0.05,
                     "excess_drop_in_se": a / 0.05, "two_player_excess": b, "spearman_noisy_sum": spearman,
                     "spearman_two_player": spearman, "spearman_uniform": -0.5, "drop": a + 0.1, "uniform_drop": 0.1,
                     "two_player_drop": b + 0.05, "uniform_half_drop": 0.05, "paper_criterion_holds": a > 0.1,
                     "two_player_criterion_holds": b > 0.01, "valuation_cpu_seconds": 1.0})
    assert len(rows) == n
    return pd.DataFrame(rows, columns=list(pn.DRAW_COLUMNS))


def never_called(monkeypatch):
    """Replace run_privacy_noise in the replication module by a function that fails if called (same signature)."""
    @functools.wraps(pn.run_privacy_noise)
    def fail(**_):
        raise AssertionError("run_privacy_noise was called")

    monkeypatch.setattr(_replication, "run_privacy_noise", fail)


def judged(draws):
    claim = pn.replication_claim(draws, spearman_threshold=-0.8)
    validate_metrics({"claims": [claim.to_dict()]})
    assert claim.source == "reproduction" and not claim.timing
    assert "data draws" in claim.criterion and "Section 5" in claim.criterion and "Holm" in claim.criterion
    return claim


# --------------------------------------------------------------------------------------------
# The claim
# --------------------------------------------------------------------------------------------

def test_replication_claim_holds_when_both_excess_drops_are_above_their_thresholds_on_every_draw():
    claim = judged(synthetic_draws([0.20, 0.25, 0.22, 0.18, 0.21], [0.10, 0.12, 0.09, 0.11, 0.10]))
    assert claim.verdict == "holds" and claim.holds
    assert claim.value == pytest.approx(0.104)  # the lower mean: (b)'s
    assert "seed 0 (main): (a) +0.200 (4.0 SE), (b) +0.100, Spearman -0.90" in claim.note
    assert "Spearman(sigma, noisy-half SV sum) <= -0.8 on 5 of 5 draws" in claim.note


@pytest.mark.parametrize("case", ["SV sum rises", "two-player within the margin"])
def test_replication_claim_does_not_hold_when_an_excess_drop_is_on_the_wrong_side(case):
    if case == "SV sum rises":  # the noisy half's SV sum drops less than its uniform share on every draw
        draws = synthetic_draws([-0.20, -0.25, -0.22, -0.18, -0.21], [0.10, 0.12, 0.09, 0.11, 0.10])
    else:  # the two-player SV only follows its uniform share down: excess 0 +- 0.001, below the 0.01 margin
        draws = synthetic_draws([0.20, 0.25, 0.22, 0.18, 0.21], [0.001, -0.001, 0.0, 0.0005, -0.0005])
    claim = judged(draws)
    assert claim.verdict == "does not hold" and not claim.holds
    assert "Cause of the miss: " + ("(a)" if case == "SV sum rises" else "(b)") in claim.note


def test_replication_claim_is_inconclusive_when_an_interval_straddles_or_with_too_few_draws():
    straddles = judged(synthetic_draws([0.3, -0.1, 0.2, -0.05, 0.1], [0.10, 0.12, 0.09, 0.11, 0.10]))
    assert straddles.verdict == "inconclusive" and not straddles.holds
    one = judged(synthetic_draws([0.3], [0.2]))  # the main draw alone: no interval
    assert one.verdict == "inconclusive" and one.value == pytest.approx(0.2)
    assert "Too few data draws to decide: 1 < 2" in one.note and "no interval" in one.note
    with pytest.raises(ValueError, match="draws must be run_replication's table"):
        pn.replication_claim(synthetic_draws([0.3], [0.2]).drop(columns="two_player_excess"))


def test_replication_summary_reports_the_draws_and_their_intervals():
    draws = synthetic_draws([0.20, 0.25, 0.22], [0.10, 0.12, 0.09], spearman=-0.7)
    out = pn.replication_summary(draws, spearman_threshold=-0.8)
    assert out["seeds"] == [0, 1, 2] and out["n_draws"] == 3 and out["excess_drop"] == [0.20, 0.25, 0.22]
    assert out["excess_drop_mean"] == pytest.approx(0.67 / 3)
    assert out["excess_drop_low"] < out["excess_drop_mean"] < out["excess_drop_high"]
    assert out["n_spearman_holds"] == 0 and out["n_paper_criterion_holds"] == 3
    assert not any("cpu" in key for key in out)  # a summary of numbers, no measured times
    one = pn.replication_summary(draws.iloc[:1])
    assert math.isnan(one["excess_drop_low"]) and one["n_draws"] == 1


# --------------------------------------------------------------------------------------------
# The seeds and settings, refused before any work
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seeds,error,match", [
    ("1, 2", TypeError, "be a list"), (3, TypeError, "be a list"), ([1.5], TypeError, "integers only"),
    ([True], TypeError, "integers only"), ([-1, 2], ValueError, ">= 0"), ([1, 1], ValueError, "distinct"),
    ([2, 0], ValueError, "main seed 0"),
])
def test_bad_replication_seeds_are_refused_naming_the_argument(seeds, error, match):
    with pytest.raises(error, match=f"replication_seeds must.*{match}"):
        pn.check_replication_seeds(seeds, 0)
    with pytest.raises(error, match="replication_seeds"):  # main_levels is never read: refused first
        pn.run_replication(None, seed=0, replication_seeds=seeds, **SETTINGS)


def test_replication_seeds_may_be_empty_or_none():
    assert pn.check_replication_seeds([], 0) == [] and pn.check_replication_seeds(None, 0) == []
    assert pn.check_replication_seeds((np.int64(3), 1), 0) == [3, 1]


def test_settings_must_be_those_of_run_privacy_noise(main_levels):
    with pytest.raises(TypeError, match=r"keyword arguments of run_privacy_noise.*\['n_trian'\]"):
        pn.run_replication(main_levels, seed=0, replication_seeds=[1], **SETTINGS, n_trian=5)
    with pytest.raises(TypeError, match=r"missing \['delta'\]"):
        pn.run_replication(main_levels, seed=0, replication_seeds=[1],
                           **{k: v for k, v in SETTINGS.items() if k != "delta"})


# --------------------------------------------------------------------------------------------
# A tiny replication: determinism, the empty list, the resume
# --------------------------------------------------------------------------------------------

def test_run_replication_is_deterministic_and_its_first_row_is_the_main_draw(main_levels):
    a = pn.run_replication(main_levels, seed=0, replication_seeds=[1, 2], **SETTINGS)
    b = pn.run_replication(main_levels, seed=0, replication_seeds=[1, 2], **SETTINGS)
    numbers = [c for c in pn.DRAW_COLUMNS if "cpu" not in c]
    pd.testing.assert_frame_equal(a[numbers], b[numbers])
    assert list(a["seed"]) == [0, 1, 2] and list(a["main"]) == [True, False, False]
    main = pn.privacy_summary(main_levels)
    assert a.loc[0, "excess_drop"] == main["excess_drop"]
    assert a.loc[0, "two_player_excess"] == main["two_player_drop"] - main["uniform_half_drop"]
    assert a.loc[1, "excess_drop"] != a.loc[2, "excess_drop"]  # other draws, other numbers
    fig = pn.plot_replication(a)
    assert len(fig.axes) == 2
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_an_empty_replication_runs_nothing_and_leaves_the_claim_inconclusive(main_levels, monkeypatch):
    never_called(monkeypatch)
    draws = pn.run_replication(main_levels, seed=0, replication_seeds=[], **SETTINGS)
    assert len(draws) == 1 and judged(draws).verdict == "inconclusive"


def test_a_rerun_after_a_stop_reads_the_finished_draws_back(main_levels, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    from shapley_research.experiments._resume import PartCache

    monkeypatch.setattr(PartCache, "clear", lambda self: None)  # as if stopped before the end
    first = pn.run_replication(main_levels, seed=0, replication_seeds=[1], cache_dir=cache, **SETTINGS)
    assert len(list(cache.glob("privacy_replication_seed1_*.json"))) == 1
    monkeypatch.undo()
    never_called(monkeypatch)  # every draw must come from the cache
    again = pn.run_replication(main_levels, seed=0, replication_seeds=[1], cache_dir=cache, **SETTINGS)
    pd.testing.assert_frame_equal(first, again)
    assert not cache.exists()  # all done: the cache is removed
