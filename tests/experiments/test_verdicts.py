"""Verdicts beyond holds / does not hold: inconclusive intervals, claims outside their scope, sanity checks."""

import numpy as np
import pytest

from shapley_research.experiments import claim, held_count, undecided_count, validate_metrics, verdict_of
from shapley_research.experiments._report import _claims_table


def _claim(holds=True, **kwargs):
    return claim("a claim", "a statistic", 1.0, holds, source="reproduction", criterion="a rule", **kwargs)


def test_undecided_claims_do_not_hold_and_say_why():
    entry = _claim(False, undecided="inconclusive").to_dict()
    assert entry["holds"] is False and entry["verdict"] == "inconclusive" and verdict_of(entry) == "inconclusive"
    with pytest.raises(ValueError, match="cannot hold"):
        _claim(True, undecided="inconclusive")
    with pytest.raises(ValueError, match="undecided must be None or one of"):
        _claim(False, undecided="maybe")
    # every entry names its verdict (holds is false for the undecided ones too); older files without it still read
    assert _claim(True).to_dict()["verdict"] == "holds" and _claim(False).to_dict()["verdict"] == "does not hold"
    assert verdict_of({"holds": True}) == "holds" and verdict_of({"holds": False}) == "does not hold"
    assert "sanity" not in _claim(True).to_dict() and _claim(True, sanity=True).to_dict()["sanity"] is True


def test_sanity_checks_are_not_counted_with_the_evidence():
    claims = [_claim(True).to_dict(), _claim(False).to_dict(), _claim(True, sanity=True).to_dict(),
              _claim(False, undecided="outside its scope").to_dict(),
              _claim(False, undecided="inconclusive").to_dict()]
    assert held_count(claims, "reproduction") == (1, 4)
    assert undecided_count(claims, "reproduction") == {"inconclusive": 1, "outside its scope": 1}
    validate_metrics({"claims": claims})
    evidence, sanity = _claims_table(claims, "reproduction"), _claims_table(claims, "reproduction", group="sanity")
    assert sum(line.startswith("| R") for line in evidence) == 4 and "*inconclusive*" in "\n".join(evidence)
    assert [line[:5] for line in sanity if line.startswith("| R")] == ["| R3 "]  # keeps its number
    assert sanity[0].startswith("Sanity checks")


def test_checks_decided_by_construction_are_listed_apart_and_not_counted():
    claims = [_claim(True).to_dict(), _claim(False, by_construction=True).to_dict(),
              _claim(True, by_construction=True).to_dict(), _claim(False).to_dict()]
    assert claims[1]["by_construction"] is True and "by_construction" not in claims[0]
    assert held_count(claims, "reproduction") == (1, 2)
    validate_metrics({"claims": claims})
    built = _claims_table(claims, "reproduction", group="by_construction")
    assert built[0].startswith("Checks of this reproduction that hold or fail by construction")
    assert [line[:5] for line in built if line.startswith("| R")] == ["| R2 ", "| R3 "]
    assert "by construction" not in "\n".join(_claims_table(claims, "reproduction"))
    bad = dict(claims[1], by_construction="yes")
    with pytest.raises(ValueError, match="by_construction"):
        validate_metrics({"claims": [bad]})
    with pytest.raises(TypeError, match="by_construction"):
        _claim(True, by_construction="yes")


def test_contradicting_verdicts_are_refused():
    entry = _claim(True).to_dict()
    entry["verdict"] = "does not hold"
    with pytest.raises(ValueError, match="contradicts"):
        validate_metrics({"claims": [entry]})


# --- multiplicity: Holm's correction over a claim's intervals ----------------------------------

def test_holm_on_known_examples():
    import numpy as np

    from shapley_research.experiments import holm, holm_adjusted

    # Wikipedia's example ("Holm-Bonferroni method"): at 0.05 Holm rejects H1 (0.01) and H4 (0.005) only
    p = [0.01, 0.04, 0.03, 0.005]
    np.testing.assert_array_equal(holm(p, 0.05), [True, False, False, True])
    np.testing.assert_allclose(holm_adjusted(p), [0.03, 0.06, 0.06, 0.02])
    # R: p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), "holm") gives 0.05 0.08 0.09 0.09 0.09
    np.testing.assert_allclose(holm_adjusted([0.01, 0.02, 0.03, 0.04, 0.05]), [0.05, 0.08, 0.09, 0.09, 0.09])
    assert holm([0.01, 0.02, 0.03, 0.04, 0.05], 0.05).tolist() == [True, False, False, False, False]
    # step-down: Holm rejects all three where Bonferroni (0.05 / 3 each) rejects two
    p = [0.001, 0.0126, 0.02]
    assert holm(p, 0.05).all() and int((np.array(p) <= 0.05 / 3).sum()) == 2
    # NaN: nothing to test, not counted in k, never rejected
    np.testing.assert_allclose(holm_adjusted([0.01, np.nan, 0.02]), [0.02, np.nan, 0.02])
    assert holm([0.01, np.nan], 0.05).tolist() == [True, False] and holm([], 0.05).size == 0
    with pytest.raises(ValueError, match="p_values"):
        holm_adjusted([0.5, 1.5])
    with pytest.raises(ValueError, match="alpha"):
        holm([0.5], 0.0)


def test_wrong_side_p_agrees_with_the_interval():
    import numpy as np

    from shapley_research.experiments import interval_verdict, wrong_side_p

    rng = np.random.default_rng(0)
    for _ in range(200):
        x = rng.normal(rng.normal(0, 0.05), 0.05, size=int(rng.integers(2, 9)))
        for side in ("above", "below"):
            entry = interval_verdict(x, 0.0, side)
            assert (entry["verdict"] is False) == (entry["p_wrong_side"] < 0.025)
            assert entry["p_wrong_side"] == wrong_side_p(x, 0.0, side)
    assert np.isnan(wrong_side_p([0.3], 0.0)) and wrong_side_p([-1.0, -1.0], 0.0) == 0.0
    assert wrong_side_p([1.0, 1.0], 0.0) == 1.0
    assert interval_verdict([0.0, 0.0], 0.0, strict=True)["p_wrong_side"] == 0.0  # no gain, no spread: a miss
    with pytest.raises(ValueError, match="side"):
        wrong_side_p([0.1, 0.2], 0.0, "left")


def test_family_correction_turns_a_marginal_miss_inconclusive():
    import numpy as np

    from shapley_research.experiments import combine, describe, family_verdicts, interval_verdict

    marginal = [-0.05, -0.01, -0.03, -0.02, -0.04, 0.0]  # wholly below 0 at 95%, but p above 0.025 / 3
    entry = interval_verdict(marginal, 0.0)
    assert entry["verdict"] is False and 0.025 / 3 < entry["p_wrong_side"] < 0.025
    held = interval_verdict([0.1, 0.12, 0.11], 0.0)
    family = {"a": entry, "b": held, "c": held}
    corrected = family_verdicts(family)
    assert combine(e["verdict"] for e in family.values()) is False  # uncorrected: does not hold
    assert combine(e["verdict"] for e in corrected.values()) is None  # after Holm: inconclusive
    assert corrected["a"]["uncorrected"] is False and corrected["a"]["family"] == 3
    assert corrected["a"]["holm_p"] == pytest.approx(3 * entry["p_wrong_side"])
    assert "not after Holm's correction over 3" in describe("a", corrected["a"])
    assert family_verdicts({"a": entry})["a"]["verdict"] is False  # one interval: nothing to correct
    clear = interval_verdict([-0.3, -0.31, -0.29, -0.3], 0.0)  # far on the wrong side: still a miss
    assert family_verdicts({"a": clear, "b": held, "c": held})["a"]["verdict"] is False
    assert np.isnan(family_verdicts({"a": interval_verdict([], 0.0)})["a"]["holm_p"])


def test_bounded_intervals_stay_in_the_statistics_range():
    import numpy as np

    from shapley_research.experiments import interval_verdict, mean_interval

    auroc = [0.99, 0.95, 1.0, 0.99]  # the plain t-interval reaches past 1
    mean, low, high = mean_interval(auroc)
    assert high > 1.0
    cut = mean_interval(auroc, bounds=(0.0, 1.0))
    assert cut == (mean, low, 1.0)  # only the end outside the range moves
    assert mean_interval([0.01, 0.0, 0.02], bounds=(0.0, np.inf))[1] == 0.0
    assert mean_interval([0.5], bounds=(0.0, 1.0))[1:] != mean_interval([0.5], bounds=(0.0, 1.0))[1:]  # NaN ends
    # the cut moves no decision against a threshold inside the range
    for threshold in (0.5, 0.97, 0.99):
        plain, bounded = interval_verdict(auroc, threshold), interval_verdict(auroc, threshold, bounds=(0.0, 1.0))
        assert plain["verdict"] is bounded["verdict"] and plain["p_wrong_side"] == bounded["p_wrong_side"]
    assert interval_verdict(auroc, 0.5, bounds=(0.0, 1.0))["high"] == 1.0
    with pytest.raises(ValueError, match="within bounds"):
        mean_interval([0.5, 1.2], bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="lower < upper"):
        mean_interval([0.5, 0.6], bounds=(1.0, 0.0))
    with pytest.raises(TypeError, match="bounds must be a pair"):
        mean_interval([0.5, 0.6], bounds=0.0)
    # at a bound the cut itself would decide: "mean >= 0" of a statistic that cannot be negative
    with pytest.raises(ValueError, match="strictly inside"):
        interval_verdict([0.0, 0.1, 0.0], 0.0, bounds=(0.0, np.inf))


def test_rank_correlation_at_a_threshold_is_exact():
    """-0.8 is a value Spearman's rho takes on 9 points; scipy computes it as -0.7999999999999999."""
    from scipy.stats import spearmanr

    from shapley_research.experiments._verdicts import rank_correlation

    x, y = np.arange(9.0), np.array([6.0, 8, 7, 5, 1, 3, 4, 0, 2])
    assert spearmanr(x, y).statistic > -0.8  # the floating-point error the rounding removes
    assert rank_correlation(x, y) == -0.8 and rank_correlation(x, -y) == 0.8
    assert rank_correlation(x, x) == 1.0 and rank_correlation(x[:2], y[:2]) == 1.0
    assert np.isnan(rank_correlation(x, np.ones(9))) and np.isnan(rank_correlation(x[:1], y[:1]))
    with pytest.raises(ValueError, match="x and y must be 1-D of one length"):
        rank_correlation(x, y[:5])


def test_rank_correlation_test_is_rank_correlation_with_scipys_p_value():
    from scipy.stats import spearmanr

    from shapley_research.experiments._verdicts import rank_correlation, rank_correlation_test

    x, y = np.arange(9.0), np.array([6.0, 8, 7, 5, 1, 3, 4, 0, 2])
    for a, b in ((x, y), (x, -y), (x, np.sin(x)), (x, x)):
        rho, p = rank_correlation_test(a, b)
        assert rho == rank_correlation(a, b) and p == spearmanr(a, b).pvalue
        for alternative in ("greater", "less"):
            assert rank_correlation_test(a, b, alternative) == (rho, spearmanr(a, b, alternative=alternative).pvalue)
    assert rank_correlation_test(x, y) == (-0.8, pytest.approx(spearmanr(x, y).pvalue))
    assert rank_correlation_test(x, -y, "greater")[1] < 0.05 < rank_correlation_test(x, y, "greater")[1]
    assert all(np.isnan(rank_correlation_test(x, np.ones(9)))) and all(np.isnan(rank_correlation_test(x[:1], y[:1])))
    with pytest.raises(ValueError, match="alternative must be"):
        rank_correlation_test(x, y, "positive")
    with pytest.raises(ValueError, match="x and y must be 1-D of one length"):
        rank_correlation_test(x, y[:5], "greater")
