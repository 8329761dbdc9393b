"""Weighted Banzhaf values (Li & Yu, 2023): exact by enumeration against the definition and closed forms, and
MSR sampling with a weight that is unbiased, calibrated, reproducible, resumable, never merged across weights,
and validated before evaluating. At weight 0.5 both are the Banzhaf value."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import shapley_research as sr
from games import (VOTING_NULL_PLAYERS, VOTING_QUOTA, VOTING_WEIGHTS, AdditiveGame, AirportGame, CountingGame,
                   Interrupted, InterruptingGame, MajorityGame, TableGame, WeightedVotingGame,
                   random_unanimity_game)
from shapley_research import exact_banzhaf, msr_banzhaf
from shapley_research.estimators import random_coalitions, weighted_coalitions

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off

VOTING = WeightedVotingGame(VOTING_WEIGHTS, VOTING_QUOTA)
AIRPORT = AirportGame([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0])
UNANIMITY = random_unanimity_game(9, 10, 5, seed=3, null_players=[8])
GAMES = {"voting": VOTING, "airport": AIRPORT, "unanimity": UNANIMITY, "majority": MajorityGame(7, 4),
         "random_table": TableGame(np.random.default_rng(4).normal(size=2**6))}


def brute_force_weighted_banzhaf(game, weight: float) -> np.ndarray:
    """The definition: sum over the other players' subsets S of w^|S| (1 - w)^(N-1-|S|) [U(S + i) - U(S)]."""
    n = game.n_players

    def u(coalition: tuple) -> float:
        mask = np.zeros((1, n), dtype=bool)
        mask[0, list(coalition)] = True
        return float(game.evaluate(mask)[0])

    values = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for k in range(n):
            for s in itertools.combinations(others, k):
                values[i] += weight**k * (1 - weight) ** (n - 1 - k) * (u(s + (i,)) - u(s))
    return values


# --- exact -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("weight", [0.1, 0.3, 0.7, 0.95])
@pytest.mark.parametrize("name", sorted(GAMES))
def test_exact_equals_the_definition(name, weight):
    game = GAMES[name]
    np.testing.assert_allclose(exact_banzhaf(game, weight=weight).values,
                               brute_force_weighted_banzhaf(game, weight), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("weight", [0.2, 0.5, 0.8])
def test_exact_closed_forms(weight):
    # unanimity game u_T: a member's marginal contribution is 1 exactly when the rest of T is in S,
    # probability w^(|T| - 1); outsiders are null players
    expected = np.zeros(UNANIMITY.n_players)
    for members, c in zip(UNANIMITY.coalitions, UNANIMITY.coefficients):
        expected[members] += c * weight ** (members.size - 1)
    np.testing.assert_allclose(exact_banzhaf(UNANIMITY, weight=weight).values, expected, rtol=1e-12)
    # an additive game: every player's own worth, whatever the weight
    worths = np.linspace(-1.0, 2.0, 7)
    np.testing.assert_allclose(exact_banzhaf(AdditiveGame(worths, offset=1.5), weight=weight).values, worths,
                               rtol=1e-12, atol=1e-13)


def test_half_weight_is_the_banzhaf_value_by_either_formula():
    from shapley_research.estimators._banzhaf import _banzhaf_from_table, _weighted_banzhaf_from_table

    utilities = np.random.default_rng(0).normal(size=2**8)
    np.testing.assert_allclose(_weighted_banzhaf_from_table(utilities, 8, 0.5),
                               _banzhaf_from_table(utilities, 8), rtol=1e-12, atol=1e-14)
    plain, half = exact_banzhaf(AIRPORT), exact_banzhaf(AIRPORT, weight=0.5)
    np.testing.assert_array_equal(plain.values, half.values)
    assert "weight" not in half.info and exact_banzhaf(AIRPORT, weight=0.7).info["weight"] == 0.7


# --- coalitions ----------------------------------------------------------------------------------------------


def test_weighted_coalitions_include_each_player_with_its_probability():
    masks = weighted_coalitions(np.random.default_rng(1), 40_000, 5, 0.7)
    assert masks.dtype == bool and masks.shape == (40_000, 5)
    np.testing.assert_allclose(masks.mean(axis=0), 0.7, atol=4 * np.sqrt(0.21 / 40_000))
    correlation = np.corrcoef(masks, rowvar=False)[np.triu_indices(5, 1)]
    assert np.abs(correlation).max() < 0.03  # independent players
    np.testing.assert_array_equal(weighted_coalitions(np.random.default_rng(2), 50, 13, 0.5),
                                  random_coalitions(np.random.default_rng(2), 50, 13))


# --- msr_banzhaf with a weight -------------------------------------------------------------------------------


@pytest.mark.slow  # over a second
def test_msr_is_unbiased_over_seeds_at_any_weight():
    # given which coalitions hold i, the other players are still independent draws with probability w: each
    # side's mean is unbiased; the value 0 of a one-sided player (probability 0.8^16 + 0.2^16 = 2.8% per
    # player at m = 16) is the only bias, so m = 40 (1.3e-4) keeps it far below the tolerance
    truth = exact_banzhaf(VOTING, weight=0.8).values
    runs = np.array([msr_banzhaf(VOTING, 40, seed=s, weight=0.8).values for s in range(2_000)])
    tolerance = 4 * runs.std(axis=0, ddof=1) / np.sqrt(len(runs))
    assert (np.abs(runs.mean(axis=0) - truth) < tolerance).all()


def test_msr_standard_errors_are_honest_at_a_weight():
    truth = exact_banzhaf(AIRPORT, weight=0.3).values
    runs = [msr_banzhaf(AIRPORT, 2_000, seed=s, weight=0.3) for s in range(60)]
    z = np.concatenate([(r.values - truth) / r.stderr for r in runs])
    assert 0.85 < z.std() < 1.15 and abs(z.mean()) < 0.15


def test_msr_null_players_and_the_weight_on_the_result():
    result = msr_banzhaf(VOTING, 20_000, seed=3, weight=0.7)
    for player in VOTING_NULL_PLAYERS:
        assert abs(result.values[player]) < 4 * result.stderr[player]
    assert result.info["weight"] == 0.7 and result.info["options"] == {"weight": 0.7}
    assert "weight" not in msr_banzhaf(VOTING, 100, seed=3).info


def test_the_weight_moves_the_values_as_the_definition_says():
    # the airport game's weighted values differ enough between weights that the samples must tell them apart
    low, high = (msr_banzhaf(AIRPORT, 40_000, seed=5, weight=w) for w in (0.2, 0.8))
    gap = exact_banzhaf(AIRPORT, weight=0.2).values - exact_banzhaf(AIRPORT, weight=0.8).values
    assert np.abs(gap).max() > 10 * max(low.stderr.max(), high.stderr.max())
    z = (low.values - high.values - gap) / np.hypot(low.stderr, high.stderr)
    assert np.abs(z).max() < 4.5


def test_identical_for_its_seed_and_any_n_jobs():
    game = CountingGame(UNANIMITY)
    first = msr_banzhaf(game, 3_000, seed=11, weight=0.65, batch_size=700)
    again = msr_banzhaf(UNANIMITY, 3_000, seed=11, weight=0.65, batch_size=700, n_jobs=2)
    np.testing.assert_array_equal(first.values, again.values)
    np.testing.assert_array_equal(first.stderr, again.stderr)
    assert first.n_evaluations == game.rows == 3_000


def test_interrupted_then_resumed_equals_uninterrupted(tmp_path):
    path = tmp_path / "weighted.ckpt"
    full = msr_banzhaf(AIRPORT, 3_000, seed=2, weight=0.35, batch_size=500)
    with pytest.raises(Interrupted):
        msr_banzhaf(InterruptingGame(AIRPORT, after=3), 3_000, seed=2, weight=0.35, batch_size=500,
                    checkpoint=path, checkpoint_interval=0.0)
    resumed = msr_banzhaf(AIRPORT, 3_000, seed=2, weight=0.35, batch_size=500, checkpoint=path)
    np.testing.assert_array_equal(resumed.values, full.values)
    assert resumed.info["resumed_samples"] > 0
    with pytest.raises(sr.CheckpointError):  # another weight values something else: never resumed into
        msr_banzhaf(AIRPORT, 3_000, seed=2, weight=0.5, batch_size=500, checkpoint=path)


def test_runs_with_different_weights_never_merge():
    first = msr_banzhaf(AIRPORT, 1_000, seed=1, weight=0.7)
    merged = sr.merge_results(first, msr_banzhaf(AIRPORT, 1_000, seed=2, weight=0.7))
    assert merged.n_samples == 2_000 and merged.info["options"] == {"weight": 0.7}
    with pytest.raises(ValueError, match="options"):
        sr.merge_results(first, msr_banzhaf(AIRPORT, 1_000, seed=2))
    with pytest.raises(ValueError, match="options"):
        sr.merge_results(first, msr_banzhaf(AIRPORT, 1_000, seed=2, weight=0.6))


@pytest.mark.enumeration
def test_a_budget_covering_every_coalition_returns_the_exact_weighted_values():
    game = CountingGame(VOTING)
    result = msr_banzhaf(game, 2**7, seed=0, weight=0.25)
    np.testing.assert_allclose(result.values, exact_banzhaf(VOTING, weight=0.25).values, atol=1e-15)
    assert result.info["stopped_by"] == "enumeration" and result.info["options"] == {"weight": 0.25}


def test_one_sided_players_warn_with_the_weighted_probability():
    with pytest.warns(UserWarning, match=r"probability 0.9\^budget \+ 0.1\^budget"):
        msr_banzhaf(AIRPORT, 3, seed=0, weight=0.9)


@pytest.mark.parametrize("function", [msr_banzhaf, exact_banzhaf])
@pytest.mark.parametrize("weight,error,match", [
    (0.0, ValueError, "weight must be > 0"),
    (1.0, ValueError, "weight must be < 1"),
    (-0.5, ValueError, "weight must be > 0"),
    (np.nan, ValueError, "weight must be finite"),
    ("0.7", TypeError, "weight must be a real number"),
    (True, TypeError, "weight must be a real number"),
])
def test_a_weight_outside_zero_one_is_refused_before_evaluating(function, weight, error, match):
    game = CountingGame(AIRPORT)
    with pytest.raises(error, match=match):
        function(game, 100, seed=0, weight=weight) if function is msr_banzhaf else function(game, weight=weight)
    assert game.rows == 0
