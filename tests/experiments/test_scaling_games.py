"""Games with exact values at any size (unanimity sums, the compiled KNN utility) and the counting of
evaluations to a target error in runtime_scaling's measured panel."""

import itertools

import numpy as np
import pandas as pd
import pytest

from shapley_research import (KNNUtility, UnanimitySumGame, ValuationResult, exact_shapley, knn_shapley,
                              random_unanimity_sum)
from shapley_research.experiments.runtime_scaling import large_n as rsl
from shapley_research.games import prefix_masks


def brute_force_banzhaf(game) -> np.ndarray:
    n = game.n_players
    masks = np.array(list(itertools.product([False, True], repeat=n)))
    u = game.evaluate(masks)
    index = {tuple(m): i for i, m in enumerate(masks)}
    values = np.zeros(n)
    for m, value in zip(masks, u):
        for i in np.flatnonzero(~m):
            joined = m.copy()
            joined[i] = True
            values[i] += u[index[tuple(joined)]] - value
    return values / 2 ** (n - 1)


def naive_unanimity(game, masks):
    return np.array([sum(c for c, lo, hi in zip(game.coefficients, game._starts[:-1], game._starts[1:])
                         if row[game._members[lo:hi]].all()) for row in masks])


# ---------------------------------------------------------------------------------- unanimity sums

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unanimity_values_match_enumeration(seed):
    game = random_unanimity_sum(9, 12, max_size=4, seed=seed)
    np.testing.assert_allclose(exact_shapley(game).values, game.shapley_values(), atol=1e-12)
    np.testing.assert_allclose(brute_force_banzhaf(game), game.banzhaf_values(), atol=1e-12)


def test_unanimity_null_players_get_zero_and_values_are_efficient():
    game = UnanimitySumGame(6, [[0, 1], [1, 2, 3], [0]], [1.0, 3.0, -2.0])
    values = game.shapley_values()
    np.testing.assert_allclose(values, [0.5 - 2.0, 0.5 + 1.0, 1.0, 1.0, 0.0, 0.0])
    assert values.sum() == pytest.approx(game(np.ones(6, dtype=bool)) - game(np.zeros(6, dtype=bool)))


@pytest.mark.slow  # over a second
@pytest.mark.parametrize("n", [7, 64, 301])
def test_unanimity_evaluation_from_either_side_matches_the_definition(n):
    game = random_unanimity_sum(n, seed=n)
    rng = np.random.default_rng(n)
    masks = rng.random((200, n)) < rng.random((200, 1))  # sparse and dense rows, both sides of N/2
    masks[0], masks[1] = False, True
    np.testing.assert_allclose(game.evaluate(masks), naive_unanimity(game, masks), atol=1e-9)
    permutations = np.array([rng.permutation(n) for _ in range(5)])
    np.testing.assert_allclose(game.evaluate_prefixes(permutations).ravel(),
                               naive_unanimity(game, prefix_masks(permutations)), atol=1e-9)


@pytest.mark.parametrize("coalitions, coefficients, match", [
    ([[]], [1.0], "non-empty"),
    ([[0, 5]], [1.0], "outside range"),
    ([[0.5]], [1.0], "integer player indices"),
    ([[0], [1]], [1.0], "one per coalition"),
    ([[0]], [np.inf], "finite"),
])
def test_unanimity_rejects_bad_terms(coalitions, coefficients, match):
    with pytest.raises(ValueError, match=match):
        UnanimitySumGame(4, coalitions, coefficients)


def test_random_unanimity_sum_is_seeded_and_checked():
    a, b = random_unanimity_sum(50, seed=3), random_unanimity_sum(50, seed=3)
    assert np.array_equal(a.shapley_values(), b.shapley_values()) and a.coefficients.size == 50
    assert set(a.sizes) <= {1, 2, 3}
    with pytest.raises(ValueError, match="max_size"):
        random_unanimity_sum(2, max_size=3)
    with pytest.raises(TypeError, match="n_terms"):
        random_unanimity_sum(5, n_terms=2.5)


# ---------------------------------------------------------------------------------- compiled KNN utility

def neighbour_order(X, Xt):
    """Training indices by squared distance to each test point, ties by index (KNNUtility's rule and formula)."""
    sq = np.einsum("ij,ij->i", Xt, Xt)[:, None] - 2.0 * Xt @ X.T + np.einsum("ij,ij->i", X, X)[None, :]
    return np.argsort(sq, axis=1, kind="stable")


def naive_knn(X, y, Xt, yt, k, masks):
    order = neighbour_order(X, Xt)
    total = np.zeros(masks.shape[0])
    for o, m in zip(order, y[order] == yt[:, None]):
        ranked = masks[:, o]
        total += (ranked & (np.cumsum(ranked, axis=1) <= k) & m).sum(axis=1)
    return total / (k * len(yt))


@pytest.mark.parametrize("n, k", [(30, 3), (200, 5), (12, 20)])
def test_knn_utility_paths_match_the_definition(n, k):
    rng = np.random.default_rng(n)
    X, y = rng.normal(size=(n, 3)), rng.integers(0, 3, n)
    Xt, yt = rng.normal(size=(9, 3)), rng.integers(0, 3, 9)
    game = KNNUtility(X, y, Xt, yt, k)
    masks = rng.random((300, n)) < rng.random((300, 1)) ** 3  # small coalitions select, large ones walk
    assert np.array_equal(game.evaluate(masks), naive_knn(X, y, Xt, yt, k, masks))
    permutations = np.array([rng.permutation(n) for _ in range(6)])
    assert np.array_equal(game.evaluate_prefixes(permutations).ravel(),
                          naive_knn(X, y, Xt, yt, k, prefix_masks(permutations)))
    if n <= 12:
        np.testing.assert_allclose(exact_shapley(game).values, knn_shapley(X, y, Xt, yt, k).values, atol=1e-12)


@pytest.mark.parametrize("permutations, error", [
    (np.array([[0, 1, 1]]), ValueError), (np.array([[0, 1, 3]]), ValueError), (np.array([[0, 1]]), ValueError),
    (np.array([[0.0, 1.0, 2.0]]), TypeError), (np.array([[-1, 0, 1]]), ValueError)])
def test_prefix_paths_reject_non_permutations(permutations, error):
    rng = np.random.default_rng(0)
    knn = KNNUtility(rng.normal(size=(3, 2)), [0, 1, 0], rng.normal(size=(2, 2)), [0, 1], 1)
    for game in (knn, random_unanimity_sum(3, seed=0)):
        with pytest.raises(error, match="permutation"):
            game.evaluate_prefixes(permutations)


# ---------------------------------------------------------------------------------- counting evaluations

def known_decay(c: float):
    """A fake estimator whose relative error is exactly ``c / sqrt(budget)``."""
    def estimate(method, game, budget, seed):
        exact = game.shapley_values()
        direction = np.ones_like(exact) / np.sqrt(exact.size)
        values = exact + c / np.sqrt(budget) * np.linalg.norm(exact) * direction
        return ValuationResult(values=values, n_evaluations=budget, method=method, wall_time=0.0)
    return estimate


def test_error_trace_stops_at_the_first_budget_reaching_the_target():
    game = random_unanimity_sum(10, seed=0)
    # error 40 / sqrt(B) <= 0.1 first at B >= 160,000: budgets 12 * 2^j -> 12 * 2^14 = 196,608
    trace = rsl.error_trace("permutation", game, game.shapley_values(), 0, target=0.1, cap=10 ** 7,
                            estimate=known_decay(40.0))
    assert [row["budget"] for row in trace] == [12 * 2 ** j for j in range(15)]
    assert trace[-1]["relative_error"] <= 0.1 < trace[-2]["relative_error"]
    capped = rsl.error_trace("permutation", game, game.shapley_values(), 0, target=0.1, cap=100_000,
                             estimate=known_decay(40.0))
    assert capped[-1]["budget"] == rsl.largest_budget(10, 100_000) == 12 * 2 ** 13


def test_error_trace_skips_budgets_below_a_methods_minimum():
    game = random_unanimity_sum(20, seed=0)
    trace = rsl.error_trace("permutation_antithetic", game, game.shapley_values(), 0, target=1e-9, cap=200)
    assert trace[0]["budget"] == 44  # 22 affords no antithetic pair (2N + 1 = 41 evaluations)


def _runs(rows):
    return pd.DataFrame(rows, columns=["method", "game", "n_players", "seed", "cap_evaluations", "budget",
                                       "evaluations", "relative_error"])


def test_summary_takes_the_median_over_seeds_with_unreached_seeds_infinite():
    rows = []
    for seed, errors in enumerate([(0.5, 0.2, 0.05), (0.5, 0.4, 0.3), (0.9, 0.8, 0.6)]):
        rows += [("permutation", "knn", 10, seed, 400, b, b, e) for b, e in zip((100, 200, 400), errors)]
    records = rsl.summarise_scaling(_runs(rows), [0.3, 0.1])
    by_target = {r["target_relative_error"]: r for r in records}
    # 0.3: seeds reach at 200, 400, never -> median 400; 0.1: only seed 0 (400) -> median infinite
    assert by_target[0.3]["evaluations"] == 400 and by_target[0.3]["reached_fraction"] == pytest.approx(2 / 3)
    assert by_target[0.1]["evaluations"] is None and by_target[0.1]["reached_fraction"] == pytest.approx(1 / 3)
    # extrapolation for seeds 1 and 2 at 0.1: 400 (0.3 / 0.1)^2 = 3,600 and 400 * 36 = 14,400; median 3,600
    assert by_target[0.1]["extrapolated_evaluations"] == 3600 and by_target[0.1]["seeds"] == 3


def test_no_extrapolation_from_an_error_that_stopped_falling():
    # a biased estimator's plateau: the last doubling shrank the error by 0.97 > DECAY_RATIO
    rows = [("compressive", "knn", 10, 0, 400, b, b, e) for b, e in zip((100, 200, 400), (0.6, 0.58, 0.565))]
    record, = rsl.summarise_scaling(_runs(rows), [0.1])
    assert record["evaluations"] is None and record["extrapolated_evaluations"] is None


def test_exponents_recover_a_known_power_law_and_name_their_basis():
    records = [{"method": "permutation", "game": "knn", "n_players": n, "target_relative_error": 0.1,
                "evaluations": int(3 * n ** 1.5), "extrapolated_evaluations": int(3 * n ** 1.5)} for n in
               (100, 1000, 10000)]
    records += [{"method": "group_testing_paper", "game": "knn", "n_players": n, "target_relative_error": 0.1,
                 "evaluations": None, "extrapolated_evaluations": int(n ** 2.0)} for n in (100, 1000, 10000)]
    exponents, basis = rsl.scaling_exponents(records, 0.1)
    assert exponents["permutation"]["knn"] == pytest.approx(1.5, abs=1e-3)
    assert exponents["group_testing_paper"]["knn"] == pytest.approx(2.0, abs=1e-3)
    assert basis == {"permutation": {"knn": "measured"}, "group_testing_paper": {"knn": "extrapolated"}}
    assert rsl.fit_exponents(records[:2], 0.1) == {"permutation": {"knn": None}}  # two points: no exponent


def test_theorem_exponents_are_the_bounds_slopes():
    slopes = rsl.theorem_exponents([100, 1000, 10000], 0.1, 0.05, 1.0)
    assert 2.0 < slopes["permutation"] < 2.3 and slopes["permutation_antithetic"] == slopes["permutation"]
    assert 1.0 < slopes["group_testing_paper"] < 1.6 and slopes["svarm"] is None and slopes["compressive"] is None


def test_plan_applies_caps_work_limits_and_player_limits():
    plan = rsl.scaling_plan(["permutation", "group_testing_paper", "svarm"], ["knn", "unanimity"], [100, 1000],
                            permutation_ns=[10000], caps={"permutation": 10 ** 8, "group_testing_paper": 10 ** 6,
                                                          "svarm": 10 ** 6},
                            max_work={"group_testing_paper": 2 * 10 ** 8}, max_players={"svarm": 500})
    assert ("permutation", "unanimity", 10000, 10 ** 8) in plan and ("permutation", "knn", 10000, 10 ** 8) not in plan
    assert ("group_testing_paper", "knn", 1000, 2 * 10 ** 5) in plan
    assert ("group_testing_paper", "knn", 100, 10 ** 6) in plan
    assert {n for m, _, n, _ in plan if m == "svarm"} == {100}


# ---------------------------------------------------------------------------------- claims

from test_runtime_scaling_claims import records_for  # noqa: E402  (one builder of scaling records)


BASIS = {m: {"knn": "measured", "unanimity": "measured"} for m in rsl.SCALING_METHODS}


def judge(records, exponents, theorem=2.2):
    claims, _ = rsl.large_n_claims(records, exponents, BASIS, {"permutation": theorem}, target=0.1)
    return claims


def exps(perm, gt):
    return {"permutation": {"knn": perm, "unanimity": perm}, "group_testing_paper": {"knn": gt, "unanimity": gt},
            "group_testing_improved": {"knn": None, "unanimity": None}}


NS = (100, 1000, 10000)  # three N: permutation sampling's exponent over its counts' brackets (R4)


def test_paper_claim_holds_when_group_testing_wins_by_two_orders():
    claims = judge(records_for(lambda n: n ** 2, lambda n: n, ns=NS), exps(2.0, 1.0))
    assert [c.holds for c in claims] == [True, True, True]
    assert claims[0].source == "paper" and claims[0].value == pytest.approx(10000.0)  # at N = 10^4


def test_paper_claim_fails_when_group_testing_is_slower():
    claims = judge(records_for(lambda n: 10 * n, lambda n: 50 * n), exps(1.0, 1.0))
    assert not claims[0].holds and claims[0].value == pytest.approx(0.2)
    assert not claims[1].holds  # equal exponents: no asymptotic advantage


def test_paper_claim_fails_when_group_testing_stops_at_a_cap_above_permutations_count():
    # permutation needs 10^7 at N = 10^4; group testing passed 2 * 10^7 without reaching: ratio <= 0.5
    # (the criterion is ratio > 1 since issue 27; tests/experiments/test_runtime_scaling_claims.py covers it in full)
    claims = judge(records_for(lambda n: 1000 * n, lambda n: None, cap=2 * 10 ** 7), exps(1.0, 2.0))
    assert not claims[0].holds and "did not reach" in claims[0].note and not claims[0].note.startswith("undecided")


def test_paper_claim_is_undecided_when_the_cap_is_too_small_to_tell():
    claims = judge(records_for(lambda n: 1000 * n, lambda n: None, cap=1000), exps(1.0, 2.0))
    assert not claims[0].holds and claims[0].note.startswith("undecided")


def test_exponent_claims_fail_or_stay_undecided_on_adverse_data():
    claims = judge(records_for(lambda n: n ** 2.5, lambda n: n, ns=NS), exps(2.5, 1.0), theorem=2.2)
    assert claims[1].holds and not claims[2].holds  # permutation grows faster than its theorem's count
    claims = judge(records_for(lambda n: n ** 2, lambda n: n), exps(2.0, None))
    assert not claims[1].holds and claims[1].note.startswith("undecided")
