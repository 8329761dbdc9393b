"""runtime_scaling's measured panel: the paper's claim on counts, the plateau rule, the published variant."""

import math

import numpy as np
import pandas as pd
import pytest

from shapley_research.experiments.runtime_scaling import large_n as rsl

PREDICTED_LARGE = {n: {"algorithm_1": 5.0, "improved_bound": 20.0} for n in (100, 1000, 10000)}
PREDICTED_SMALL = {n: {"algorithm_1": 0.2, "improved_bound": 0.8} for n in (100, 1000, 10000)}


def records_for(perm, gt, cap=10 ** 6, ns=(1000, 10000)):
    """Permutation needs ``perm(n)``; every group testing variant ``gt(n)`` (None: stopped at ``cap``)."""
    out = []
    for game in ("knn", "unanimity"):
        for n in ns:
            out.append({"method": "permutation", "game": game, "n_players": n, "target_relative_error": 0.1,
                        "evaluations": perm(n), "cap_evaluations": 10 ** 9})
            for m in rsl.GROUP_TESTING:
                out.append({"method": m, "game": game, "n_players": n, "target_relative_error": 0.1,
                            "evaluations": gt(n), "cap_evaluations": cap})
    return out


BASIS = {m: {"knn": "measured", "unanimity": "measured"} for m in rsl.SCALING_METHODS}


def judge(records, predicted=PREDICTED_LARGE, exponents=None):
    exponents = exponents or {"permutation": {"knn": 2.0, "unanimity": 2.0},
                              "group_testing_paper": {"knn": 1.0, "unanimity": 1.0}}
    claims, stats = rsl.large_n_claims(records, exponents, BASIS, {"permutation": 2.2}, target=0.1,
                                       predicted=predicted)
    return claims[0], stats


# ---------------------------------------------------------------------------------- the paper's claim on counts

def test_advantage_holds_when_group_testing_needs_fewer_evaluations_where_the_theorems_predict_it():
    c, stats = judge(records_for(lambda n: 3 * n, lambda n: n))
    assert c.holds and c.verdict == "holds" and c.source == "paper"
    assert c.statistic == "measured_permutation_over_group_testing" and c.value == pytest.approx(3.0)
    assert stats["group_testing_advantage"]["knn"]["n_players"] == 10000  # the largest decided N
    assert "predict 5 with Theorem 3" in c.note


def test_advantage_does_not_hold_when_group_testing_needs_more():
    c, _ = judge(records_for(lambda n: n, lambda n: 4 * n))
    assert not c.holds and c.verdict == "does not hold" and c.value == pytest.approx(0.25)


def test_advantage_does_not_hold_when_a_cap_bounds_the_ratio_at_or_below_one():
    # permutation 10^4 at N = 10^4; group testing passed its cap 2 * 10^4 without reaching: ratio <= 0.5
    c, stats = judge(records_for(lambda n: n, lambda n: None, cap=2 * 10 ** 4))
    assert c.verdict == "does not hold" and c.statistic.endswith("_upper_bound") and c.value == pytest.approx(0.5)
    assert "at most 0.5" in c.note and stats["group_testing_advantage"]["knn"]["ratio"] is None


def test_advantage_is_inconclusive_when_caps_only_bound_the_ratio_above_one():
    # group testing stopped at 1,000 evaluations; permutation needed 10^3 N: the ratio is at most 10^3 or 10^4
    c, _ = judge(records_for(lambda n: 1000 * n, lambda n: None, cap=1000))
    assert c.verdict == "inconclusive" and not c.holds
    # reported at the largest N with a bound: N = 10^4
    assert c.statistic == "measured_permutation_over_group_testing_upper_bound" and c.value == pytest.approx(1e4)


def test_advantage_is_outside_its_scope_where_the_theorems_predict_permutation_cheaper():
    # N = 100, the committed data's case: 6,501 against 416,980 evaluations; the theorems predict 0.24 / 0.82
    records = records_for(lambda n: 6501, lambda n: 416980, ns=(100,))
    c, _ = judge(records, predicted=PREDICTED_SMALL)
    assert c.verdict == "outside its scope" and not c.holds
    assert c.value == pytest.approx(6501 / 416980) and "outside the claim's scope" in c.note
    # the same data where the theorems predict an advantage: judged, and it fails
    c, _ = judge(records, predicted=PREDICTED_LARGE)
    assert c.verdict == "does not hold"


def test_advantage_scope_is_set_by_theorem_3_not_by_the_improved_bound():
    """The committed KNN case: at N = 300 Theorem 3 predicts 0.555 and the improved bound (not the paper's) 1.95.
    A case in scope only by the improved bound is outside the paper's claim's scope."""
    only_improved = {n: {"algorithm_1": 0.555, "improved_bound": 1.95} for n in (1000, 10000)}
    c, _ = judge(records_for(lambda n: n, lambda n: 4 * n), predicted=only_improved)
    assert c.verdict == "outside its scope" and not c.holds
    assert "predict 0.555 with Theorem 3: outside the claim's scope" in c.note
    assert "the improved bound, not the paper's, predicts 1.95 and does not set the scope" in c.note
    assert "Theorem 3's) predict a ratio <= 1" in c.criterion and "does not set the scope" in c.criterion
    # the same data with Theorem 3 predicting an advantage: judged, and it fails
    c, _ = judge(records_for(lambda n: n, lambda n: 4 * n),
                 predicted={n: {"algorithm_1": 1.47, "improved_bound": 0.5} for n in (1000, 10000)})
    assert c.verdict == "does not hold"


def test_advantage_does_not_hold_on_the_game_in_scope_and_reports_its_ratio():
    """The committed data's shape: KNN decided at N = 300 (outside the scope by Theorem 3), unanimity at N = 3,000
    (Theorem 3 predicts 3.7) with a cap bounding the ratio by 0.5: the claim does not hold, on unanimity's ratio."""
    records = []
    for game, n, perm, cap in (("knn", 300, 77101, 309248), ("unanimity", 3000, 192001, 384256)):
        records.append({"method": "permutation", "game": game, "n_players": n, "target_relative_error": 0.1,
                        "evaluations": perm, "cap_evaluations": 10 ** 9})
        records += [{"method": m, "game": game, "n_players": n, "target_relative_error": 0.1,
                     "evaluations": None, "cap_evaluations": cap} for m in rsl.GROUP_TESTING]
    predicted = {300: {"algorithm_1": 0.555, "improved_bound": 1.95},
                 3000: {"algorithm_1": 3.70, "improved_bound": 13.4}}
    c, _ = judge(records, predicted=predicted)
    assert c.verdict == "does not hold"
    assert c.statistic.endswith("_upper_bound") and c.value == pytest.approx(192001 / 384256)
    assert "knn at N = 300" in c.note and "outside the claim's scope" in c.note
    # the same shape with unanimity showing the advantage: the game outside the scope does not keep it from holding
    for r in records:
        if r["game"] == "unanimity" and r["method"] in rsl.GROUP_TESTING:
            r["evaluations"] = 64000
    c, _ = judge(records, predicted=predicted)
    assert c.verdict == "holds" and c.value == pytest.approx(192001 / 64000)


def test_advantage_table_puts_measured_beside_predicted_ratios():
    records = records_for(lambda n: 3 * n, lambda n: None if n > 1000 else n, cap=10 ** 6)
    rows = rsl.advantage_table(records, 0.1, PREDICTED_LARGE)
    by = {(r["game"], r["n_players"]): r for r in rows}
    assert by["knn", 1000]["measured_ratio"] == pytest.approx(3.0)
    assert by["knn", 10000]["measured_ratio"] is None
    assert by["knn", 10000]["measured_ratio_upper_bound"] == pytest.approx(3 * 10000 / 10 ** 6)
    assert by["knn", 1000]["predicted_ratio_algorithm_1"] == 5.0
    assert by["knn", 1000]["group_testing_wang_jia_evaluations"] == 1000


def test_advantage_table_tells_not_run_from_not_reached():
    """A blank count is explained beside it: the variant was not run at that N, or its median seed stopped at its
    cap without reaching the target; a blank ratio by whether the comparison is measured or an upper bound."""
    records = records_for(lambda n: 3 * n, lambda n: None if n > 1000 else n, cap=10 ** 6)
    records = [r for r in records if not (r["method"] == "group_testing_wang_jia" and r["n_players"] > 1000)]
    by = {(r["game"], r["n_players"]): r for r in rsl.advantage_table(records, 0.1, PREDICTED_LARGE)}
    small, large = by["knn", 1000], by["knn", 10000]
    assert small["comparison"] == "measured" and large["comparison"] == "upper bound"
    assert all(small[f"{m}_status"] == rsl.REACHED for m in rsl.GROUP_TESTING)
    assert large["group_testing_paper_status"] == large["group_testing_improved_status"] == rsl.NOT_REACHED
    assert large["group_testing_paper_evaluations"] is None and large["group_testing_paper_cap_evaluations"] == 10 ** 6
    assert large["group_testing_wang_jia_status"] == rsl.NOT_RUN
    assert large["group_testing_wang_jia_evaluations"] is None
    assert large["group_testing_wang_jia_cap_evaluations"] is None
    # the new columns follow the existing ones, which keep their order
    columns = list(small)
    assert columns[:11] == ["game", "n_players", "target_relative_error", "permutation_evaluations",
                            *(f"{m}_evaluations" for m in rsl.GROUP_TESTING), "measured_ratio",
                            "measured_ratio_upper_bound", "predicted_ratio_algorithm_1",
                            "predicted_ratio_improved_bound"]
    assert columns.index("comparison") > columns.index("predicted_ratio_improved_bound")


def test_advantage_note_says_undecided_where_caps_are_below_permutations_counts():
    """The committed KNN case: decided at N = 300 (caps bound the ratio below 1), while at N >= 1,000 the caps are
    below permutation sampling's counts: the bound exceeds 1 there and the note says the claim is undecided."""
    perm = {300: 77101, 1000: 1026001, 3000: 6147001}
    caps = {300: 309248, 1000: 256512, 3000: 384256}
    records = []
    for game in ("knn", "unanimity"):
        for n in perm:
            records.append({"method": "permutation", "game": game, "n_players": n, "target_relative_error": 0.1,
                            "evaluations": perm[n], "cap_evaluations": 10 ** 9})
            records += [{"method": m, "game": game, "n_players": n, "target_relative_error": 0.1,
                         "evaluations": None, "cap_evaluations": caps[n]} for m in rsl.GROUP_TESTING]
    c, stats = judge(records)
    assert c.verdict == "does not hold" and stats["group_testing_advantage"]["knn"]["n_players"] == 300
    assert "knn at N = 300: group testing did not reach 0.1 within its cap, so the ratio is at most 0.249" in c.note
    assert "undecided at N >= 1,000 (N = 1,000, 3,000)" in c.note
    assert "caps (256,512, 384,256 evaluations) are below permutation sampling's counts (1,026,001, 6,147,001)" \
        in c.note
    above = rsl.undecided_above(records, "knn", 0.1, 300)
    assert [r["n_players"] for r in above] == [1000, 3000] and above[0]["bound"] == pytest.approx(1026001 / 256512)
    assert rsl.undecided_above(records, "knn", 0.1, 3000) == []
    # decided at the largest N: nothing is undecided above it
    decided, _ = judge(records_for(lambda n: n, lambda n: 4 * n))
    assert "undecided" not in decided.note


def test_predicted_ratios_are_the_packages_bounds():
    ratios = rsl.predicted_ratios([3000, 10000], 0.1, 0.05, math.log(2))
    assert ratios[3000]["algorithm_1"] == pytest.approx(3.7, abs=0.05)
    assert ratios[3000]["improved_bound"] == pytest.approx(13.4, abs=0.1)
    assert ratios[10000]["algorithm_1"] == pytest.approx(10.5, abs=0.05)
    assert ratios[10000]["improved_bound"] == pytest.approx(38.5, abs=0.1)


def test_exponent_claim_is_inconclusive_without_exponents_and_uses_every_group_testing_variant():
    records = records_for(lambda n: 3 * n, lambda n: n)
    exponents = {"permutation": {"knn": 2.0, "unanimity": 2.0},
                 "group_testing_wang_jia": {"knn": 1.5, "unanimity": 1.5}}
    claims, _ = rsl.large_n_claims(records, exponents, BASIS, {"permutation": 2.2}, target=0.1,
                                   predicted=PREDICTED_LARGE)
    assert claims[1].holds and claims[1].value == pytest.approx(0.5)
    assert "as published 1.50" in claims[1].note
    claims, _ = rsl.large_n_claims(records, {"permutation": {"knn": 2.0, "unanimity": 2.0}}, BASIS,
                                   {"permutation": 2.2}, target=0.1, predicted=PREDICTED_LARGE)
    assert claims[1].verdict == "inconclusive"
    # one variant measured above permutation sampling: the others, without exponents, could still be below it
    one_variant = {"permutation": {"knn": 2.0, "unanimity": 2.0}, "group_testing_paper": {"knn": 2.5, "unanimity": 2.5}}
    claims, _ = rsl.large_n_claims(records, one_variant, BASIS, {"permutation": 2.2}, target=0.1,
                                   predicted=PREDICTED_LARGE)
    assert claims[1].verdict == "inconclusive"
    every_variant = {**one_variant, "group_testing_wang_jia": {"knn": 2.4, "unanimity": 2.4},
                     "group_testing_improved": {"knn": 2.3, "unanimity": 2.3}}
    claims, _ = rsl.large_n_claims(records, every_variant, BASIS, {"permutation": 2.2}, target=0.1,
                                   predicted=PREDICTED_LARGE)
    assert claims[1].verdict == "does not hold"


def test_exponent_claim_without_any_game_is_undecided():
    claims, _ = rsl.large_n_claims([], {}, {}, {"permutation": 2.2}, target=0.1)
    assert claims[1].verdict == "inconclusive" and not claims[1].holds


EXPONENTS = {"permutation": {"knn": 1.9, "unanimity": 1.0},
             "group_testing_paper": {"knn": 2.1, "unanimity": 2.1},
             "group_testing_improved": {"knn": 2.5, "unanimity": 2.0}}


def exponent_claim(basis, exponents=EXPONENTS, records=None):
    records = records or records_for(lambda n: 3 * n, lambda n: n)
    claims, _ = rsl.large_n_claims(records, exponents, basis, {"permutation": 2.2}, target=0.1,
                                   predicted=PREDICTED_LARGE)
    return claims[1]


def with_basis(**bases):
    """Permutation measured; each group testing variant's basis on both games as given."""
    return {"permutation": {"knn": "measured", "unanimity": "measured"},
            **{m: {"knn": b, "unanimity": b} for m, b in bases.items()}}


def test_exponent_claim_does_not_hold_where_measured_exponents_decide():
    every = {**EXPONENTS, "group_testing_wang_jia": {"knn": 2.6, "unanimity": 2.2}}
    measured = dict(group_testing_paper="measured", group_testing_improved="measured",
                    group_testing_wang_jia="measured")
    c = exponent_claim(with_basis(**measured), every)
    assert c.verdict == "does not hold" and not c.holds and c.value == pytest.approx(1.0 - 2.0)
    assert "undecided" not in c.note
    # one game decided by measured exponents suffices, whatever the other game's basis
    basis = with_basis(**{m: "extrapolated" for m in measured})
    for m in measured:
        basis[m]["knn"] = "measured"
    assert exponent_claim(basis, every).verdict == "does not hold"
    # a variant without an exponent could be below permutation sampling's: undecided
    assert exponent_claim(with_basis(**measured)).verdict == "inconclusive"


def test_exponent_claim_is_inconclusive_where_only_extrapolated_exponents_would_decide():
    """The committed data's case: permutation measured, every group testing exponent extrapolated and above it."""
    records = records_for(lambda n: 3 * n, lambda n: None, cap=1000, ns=(100, 300, 1000))
    for r in records:
        if r["method"] in rsl.GROUP_TESTING:
            r["extrapolated_evaluations"] = r["n_players"] ** 2 * (10 if r["method"] == "group_testing_paper" else 3)
    c = exponent_claim(with_basis(group_testing_paper="extrapolated", group_testing_improved="extrapolated"),
                       records=records)
    assert c.verdict == "inconclusive" and not c.holds and c.value == pytest.approx(1.0 - 2.0)
    assert c.note.startswith("undecided (inconclusive): the decision rests on extrapolated exponents (knn: group "
                             "testing Algorithm 1, Wang & Jia + this package's centering")
    assert "B^(-1/2) beyond the cap" in c.note and "up to 10,000 times the cap" in c.note
    assert "the cheapest variant needs about 3,000,000 evaluations at N = 1,000 on knn" in c.note
    assert "decided only by measured exponents" in c.criterion
    # a measured variant above permutation does not decide while an extrapolated one might be below it
    mixed = exponent_claim(with_basis(group_testing_paper="measured", group_testing_improved="extrapolated"))
    assert mixed.verdict == "inconclusive"
    # an advantage resting on extrapolated exponents is inconclusive too
    below = {"permutation": {"knn": 2.0, "unanimity": 2.0}, "group_testing_paper": {"knn": 1.2, "unanimity": 1.2}}
    assert exponent_claim(with_basis(group_testing_paper="extrapolated"), below).verdict == "inconclusive"
    assert exponent_claim(with_basis(group_testing_paper="measured"), below).verdict == "holds"


def test_exponent_decision_per_game():
    basis = with_basis(group_testing_paper="measured", group_testing_improved="extrapolated")
    d = rsl.exponent_decision(EXPONENTS, basis, "unanimity")
    assert d["decided"] is None and d["gap"] == pytest.approx(-1.0) and d["extrapolated"] == ["group_testing_improved"]
    # a measured variant below permutation decides "holds" whatever the others' basis
    d = rsl.exponent_decision({**EXPONENTS, "group_testing_paper": {"knn": 1.5}}, basis, "knn")
    assert d["decided"] == "holds" and d["gap"] == pytest.approx(0.4)
    basis["permutation"]["knn"] = "extrapolated"
    d = rsl.exponent_decision({**EXPONENTS, "group_testing_paper": {"knn": 1.5}}, basis, "knn")
    assert d["decided"] is None and d["extrapolated"] == ["permutation", "group_testing_improved"]


def test_exponent_bracket_spans_where_the_doubling_counts_may_lie():
    """Counts known within (B/2, B]: on N = 100, 1,000, 10,000 the slope can move by log 2 / (2 log 10) either way."""
    records = records_for(lambda n: n ** 1.5, lambda n: None, ns=(100, 1000, 10000))
    low, high = rsl.exponent_bracket(records, 0.1, "permutation", "knn")
    half = np.log(2) / (2 * np.log(10))
    assert (low, high) == pytest.approx((1.5 - half, 1.5 + half))
    assert rsl.exponent_bracket(records_for(lambda n: n, lambda n: None), 0.1, "permutation", "knn") is None


@pytest.mark.parametrize("slope, verdict", [(2.0, "holds"), (1.6, "inconclusive"), (1.3, "does not hold")])
def test_theorem_slack_claim_is_decided_over_the_counts_brackets(slope, verdict):
    """Permutation's exponent 1.5, within 1.35-1.65 over the brackets: the theorem's slope must clear the top."""
    records = records_for(lambda n: n ** 1.5, lambda n: None, ns=(100, 1000, 10000))
    claims, _ = rsl.large_n_claims(records, {"permutation": {"knn": 1.5, "unanimity": 1.5}}, BASIS,
                                   {"permutation": slope}, target=0.1, predicted=PREDICTED_LARGE)
    c = claims[2]
    assert c.verdict == verdict and c.holds == (verdict == "holds")
    assert c.value == pytest.approx(slope - 1.5 - np.log(2) / (2 * np.log(10)))
    assert "1.35-1.65 over the counts' brackets" in c.note and "doubling bracket (B/2, B]" in c.criterion
    two_ns = records_for(lambda n: n ** 1.5, lambda n: None)  # two N: no exponent
    claims, _ = rsl.large_n_claims(two_ns, {}, {}, {"permutation": 2.0}, target=0.1)
    assert claims[2].verdict == "inconclusive" and "not measured on every game" in claims[2].note


# ---------------------------------------------------------------------------------- the plateau rule

def _runs(method, budgets, errors, seed=0):
    return pd.DataFrame([{"method": method, "game": "knn", "n_players": 10000, "seed": seed,
                          "cap_evaluations": budgets[-1], "budget": b, "evaluations": b, "relative_error": e}
                         for b, e in zip(budgets, errors)])


BUDGETS = [10002 * 2 ** j for j in range(5)]


def test_a_real_plateau_is_not_extrapolated():
    # compressive sampling's l1 recovery on the committed data: the error stays near 0.5 whatever the budget
    record, = rsl.summarise_scaling(_runs("compressive", BUDGETS, [0.51, 0.504, 0.5, 0.501, 0.502]), [0.1])
    assert record["extrapolated_evaluations"] is None
    assert rsl.error_slope(BUDGETS, [0.51, 0.504, 0.5, 0.501, 0.502]) > rsl.PLATEAU_SLOPE


def test_a_non_monotone_but_falling_error_is_extrapolated():
    # the centred improved variant on the committed data (KNN, N = 10,000, seed 1): the last doubling raised
    # the error (42.2 -> 52.5; the old last-step rule dropped it), but the trend falls as about B^-0.36
    errors = [128.573, 83.428, 59.364, 42.228, 52.519]
    assert rsl.error_slope(BUDGETS, errors) == pytest.approx(-0.36, abs=0.01)
    record, = rsl.summarise_scaling(_runs("group_testing_improved", BUDGETS, errors), [0.1])
    assert record["extrapolated_evaluations"] == round(BUDGETS[-1] * (52.519 / 0.1) ** 2)


def test_too_few_runs_give_no_trend():
    assert rsl.error_slope([10, 20], [1.0, 0.7]) is None
    record, = rsl.summarise_scaling(_runs("svarm", [10, 20], [1.0, 0.7]), [0.1])
    assert record["extrapolated_evaluations"] is None


# ---------------------------------------------------------------------------------- the published variant

def test_published_variant_runs_beside_the_centred_one_up_to_its_limit():
    methods, limits = rsl.with_published_variant(["permutation", "group_testing_improved", "svarm"],
                                                 {"svarm": 500})
    assert methods == ["permutation", "group_testing_improved", "group_testing_wang_jia", "svarm"]
    assert limits == {"svarm": 500, "group_testing_wang_jia": rsl.PUBLISHED_MAX_PLAYERS}
    assert rsl.with_published_variant(["permutation"]) == (["permutation"], {})


def test_published_variant_is_the_estimator_without_centering():
    from shapley_research import random_unanimity_sum

    game = random_unanimity_sum(30, seed=0)
    published = rsl.scaling_estimate("group_testing_wang_jia", game, 2000, 0)
    centred = rsl.scaling_estimate("group_testing_improved", game, 2000, 0)
    assert published.info["centering"] == "none" and centred.info["centering"] == "linear"
    assert published.info["variant"] == centred.info["variant"] == "improved"
    assert not np.allclose(published.values, centred.values)
