"""Truncated Monte Carlo (``permutation_shapley(..., truncation=t)``, Ghorbani and Zou 2019).

A permutation stops being evaluated at the first prefix within ``t |U(D)|`` of ``U(D)``; the players after it
get 0. The tests check the values against a brute force of that definition over all orders, the bias it
brings (and where it vanishes), the evaluations it saves and the budget they buy, and that it keeps the
sampling loop's guarantees (identical for any ``n_jobs``, after a resume, mergeable).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import shapley_research as sr
from games import (AdditiveGame, AirportGame, CountingGame, CountingPrefixGame, Interrupted, InterruptingGame,
                   MajorityGame, SizeAdditiveGame, random_unanimity_game)
from shapley_research.estimators import (marginal_contributions, permutation_shapley, random_permutations,
                                         truncated_contributions)
from shapley_research.estimators._truncation import prefix_chunks
from shapley_research.games import Game

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off


class NoisyOrGame(Game):
    r"""``U(S) = 1 - prod_{i in S} (1 - p_i)``: the chance that one member of ``S`` succeeds.

    It saturates: once a few strong players are in, the utility is close to ``U(D)`` and the later marginal
    contributions are small but not 0, where truncation is biased.
    """

    def __init__(self, p):
        self.log_miss = np.log1p(-np.asarray(p, dtype=float))
        self.n_players = self.log_miss.size

    def _evaluate(self, masks):
        return 1.0 - np.exp(masks @ self.log_miss)


class KeyPlayerGame(Game):
    """``U(S) = c [0 in S] + sum_{i in S} w_i``, ``c`` much larger than the small weights ``w``.

    With ``sum(w) < t U(D) < c``, every permutation stops right after player 0 joins: the players before it
    get ``w_i``, player 0 ``c + w_0``, the players after it 0. So the truncated estimate converges to
    ``w_i / 2`` for ``i != 0`` (player 0 precedes ``i`` half of the time) and ``c + w_0`` for player 0,
    while the Shapley values are ``w_i`` and ``c + w_0``.
    """

    def __init__(self, key: float, weights):
        self.key, self.weights = float(key), np.asarray(weights, dtype=float)
        self.n_players = self.weights.size

    def _evaluate(self, masks):
        return self.key * masks[:, 0] + masks @ self.weights

    @property
    def truncated_values(self) -> np.ndarray:
        return np.r_[self.key + self.weights[0], self.weights[1:] / 2]


KEY_GAME = KeyPlayerGame(10.0, np.linspace(0.01, 0.02, 10))
SATURATING = NoisyOrGame([0.6, 0.5, 0.45, 0.3, 0.2, 0.1])


def brute_force_truncated_values(game, t: float) -> np.ndarray:
    """The mean truncated contributions over all ``N!`` orders, written from the definition with Python sets."""
    n = game.n_players
    cache: dict = {}

    def u(players) -> float:
        key = frozenset(players)
        if key not in cache:
            cache[key] = game(sorted(key))
        return cache[key]

    full = u(range(n))
    totals = np.zeros(n)
    for order in itertools.permutations(range(n)):
        before = u(())
        for k, player in enumerate(order):
            if abs(full - before) < t * abs(full):
                break  # this player and all after it get 0
            after = u(order[:k + 1])
            totals[player] += after - before
            before = after
    return totals / math.factorial(n)


def assert_same_run(a, b) -> None:
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.stderr, b.stderr)
    assert (a.n_evaluations, a.n_samples, a.seed) == (b.n_evaluations, b.n_samples, b.seed)


OPTIONS = [{}, {"antithetic": True}, {"rotations": 3}, {"position_adjustment": True}, {"batch_size": 7}]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_truncation_none_is_the_run_without_it(options):
    game = random_unanimity_game(9, 8, 4, seed=1)
    plain = permutation_shapley(game, 3000, seed=2, **options)
    explicit = permutation_shapley(game, 3000, seed=2, truncation=None, **options)
    assert_same_run(explicit, plain)
    assert explicit.info == plain.info and "truncation" not in plain.info


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_truncation_zero_is_the_untruncated_run(options):
    game = CountingGame(random_unanimity_game(9, 8, 4, seed=1))
    plain = permutation_shapley(game, 3000, seed=2, **options)
    zero = permutation_shapley(game, 3000, seed=2, truncation=0, **options)
    assert_same_run(zero, plain)  # the same permutations, values and evaluations: nothing can stop
    assert game.rows == 2 * plain.n_evaluations  # no U(D) anchor either
    assert zero.info["truncation"] == 0.0 and zero.info["evaluations_saved"] == 0
    assert zero.info["mean_truncation_position"] == 9.0


def test_truncation_zero_keeps_the_one_pass_prefixes():
    game = CountingPrefixGame(SizeAdditiveGame(np.arange(6.0), np.sqrt(np.arange(7.0))))
    zero = permutation_shapley(game, 600, seed=1, truncation=0.0)
    np.testing.assert_array_equal(zero.values, permutation_shapley(game, 600, seed=1).values)
    assert game.prefix_rows == 2 * zero.n_samples * 6


def test_zero_tolerance_contributions_equal_the_plain_ones():
    """The chunked evaluation itself: with tolerance 0 nothing stops, and every prefix but D is evaluated."""
    game = CountingGame(NoisyOrGame(np.linspace(0.05, 0.4, 37)))
    perms = random_permutations(np.random.default_rng(0), 25, 37)
    full = game(np.ones(37, bool))
    game.calls = game.rows = 0
    phi, stops, evaluations = truncated_contributions(game, perms, 0.0, full, 0.0)
    assert (game.calls, game.rows) == (len(prefix_chunks(37)) - 1, 25 * 36)  # one call per chunk, D never
    assert (stops == 37).all() and (evaluations == 36).all()
    np.testing.assert_array_equal(phi, marginal_contributions(game, perms, 0.0))


def test_players_after_the_stop_get_zero():
    n = KEY_GAME.n_players
    perms = random_permutations(np.random.default_rng(1), 200, n)
    full = KEY_GAME(np.ones(n, bool))
    phi, stops, evaluations = truncated_contributions(KEY_GAME, perms, 0.0, full, 0.05 * full)
    key_position = np.argmax(perms == 0, axis=1)
    position = np.argsort(perms, axis=1)  # position of each player in each permutation
    before = position < key_position[:, None]
    expected = np.where(before, KEY_GAME.weights, 0.0)
    expected[:, 0] = KEY_GAME.key + KEY_GAME.weights[0]
    np.testing.assert_allclose(phi, expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(stops, key_position + 1)
    # evaluated up to the end of the chunk where player 0 joins (never D itself): no more
    chunk_end = np.array(prefix_chunks(n))[np.searchsorted(prefix_chunks(n), key_position, side="right")]
    np.testing.assert_array_equal(evaluations, np.minimum(chunk_end, n - 1))
    assert evaluations.mean() < 0.75 * (n - 1)


def test_one_truncated_permutation_through_the_estimator():
    """A budget of one permutation: the values are its contributions, 0 for every player after player 0."""
    n = KEY_GAME.n_players
    for seed in range(5):
        result = permutation_shapley(KEY_GAME, 2 + n, seed=seed, truncation=0.05, batch_size=1)
        assert result.n_samples == 1 and result.n_evaluations <= 2 + n
        assert result.values[0] == pytest.approx(KEY_GAME.key + KEY_GAME.weights[0], abs=1e-12)
        joined_before = np.abs(result.values[1:] - KEY_GAME.weights[1:]) < 1e-12
        assert (joined_before | (result.values[1:] == 0.0)).all()
        assert result.info["mean_truncation_position"] == 1 + joined_before.sum()


@pytest.mark.parametrize("options", [{}, {"antithetic": True}, {"rotations": 2}, {"position_adjustment": True}],
                         ids=str)
def test_converges_to_the_brute_force_of_the_truncated_contributions(options):
    t = 0.08
    truth = brute_force_truncated_values(SATURATING, t)
    result = permutation_shapley(SATURATING, 40_000, seed=3, truncation=t, batch_size=256, **options)
    z = (result.values - truth) / result.stderr
    assert np.abs(z).max() < 4.5, z  # unbiased for the truncated target; the standard error is honest
    assert result.info["mean_truncation_position"] < 6


def test_the_truncated_target_is_biased_away_from_the_shapley_values():
    t = 0.08
    exact = sr.exact_shapley(SATURATING).values
    truth = brute_force_truncated_values(SATURATING, t)
    result = permutation_shapley(SATURATING, 200_000, seed=4, truncation=t, batch_size=1024)
    assert np.abs(truth - exact).max() > 0.01  # the weak players lose what they add after the stop
    assert (truth[-3:] < exact[-3:]).all()
    assert (np.abs(result.values - exact) / result.stderr).max() > 8  # far beyond the noise (measured 14)
    # and on the key-player game the bias is the closed form: -w_i / 2
    key = permutation_shapley(KEY_GAME, 20_000, seed=4, truncation=0.05, batch_size=256)
    z = (key.values - KEY_GAME.truncated_values)[1:] / key.stderr[1:]
    assert np.abs(z).max() < 4.5
    assert key.values[0] == pytest.approx(KEY_GAME.key + KEY_GAME.weights[0], abs=1e-12)  # every sample
    assert key.stderr[0] < 1e-12


@pytest.mark.parametrize("game, t", [(MajorityGame(10, 4), 0.5),
                                     (AirportGame([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0]), 0.1)],
                         ids=["majority", "airport"])
def test_no_bias_where_the_truncated_contributions_are_zero(game, t):
    """Once within the tolerance these games stay at U(D): truncation drops only zeros, saving evaluations.

    The truncated run, and an untruncated run of the same permutations (its batches are those of the
    budget that buys them), give bit-identical values.
    """
    n = game.n_players
    counting = CountingGame(game)
    truncated = permutation_shapley(counting, 6000, seed=5, truncation=t, batch_size=32)
    assert counting.rows == truncated.n_evaluations <= 6000
    plain = permutation_shapley(game, 1 + n * truncated.n_samples, seed=5, batch_size=32)
    assert plain.n_samples == truncated.n_samples
    np.testing.assert_array_equal(truncated.values, plain.values)
    np.testing.assert_array_equal(truncated.stderr, plain.stderr)
    assert truncated.n_evaluations < 0.75 * plain.n_evaluations
    z = (truncated.values - game.shapley_values) / np.where(truncated.stderr > 0, truncated.stderr, 1.0)
    assert np.abs(z).max() < 4.5


def test_saved_evaluations_buy_more_permutations_within_the_budget():
    game = CountingGame(MajorityGame(12, 4))
    budget = 12_000
    plain = permutation_shapley(game, budget, seed=6, batch_size=50)
    game.rows = 0
    truncated = permutation_shapley(game, budget, seed=6, truncation=0.5, batch_size=50)
    assert game.rows == truncated.n_evaluations <= budget
    assert truncated.n_samples > 2 * plain.n_samples
    info = truncated.info
    prefix_evaluations = truncated.n_evaluations - 2  # U(empty) and the anchor U(D)
    assert info["evaluations_saved"] == 12 * truncated.n_samples - prefix_evaluations
    assert info["mean_truncation_position"] == 4.0  # every permutation stops when the 4th player joins
    assert info["truncation"] == 0.5 and info["full_utility"] == 1.0 and info["stopped_by"] == "budget"
    # what is left of the budget is less than one more batch of permutations at full cost would save
    assert budget - truncated.n_evaluations < 50 * 12


def test_default_batches_are_small_enough_for_the_savings_to_buy_permutations():
    """A budget below one default batch: plain sampling draws one partial batch; truncation splits it."""
    game = MajorityGame(60, 5)
    plain = permutation_shapley(game, 3000, seed=6)
    assert plain.info["batch_size"] > plain.n_samples == 49  # a single, partial batch
    truncated = permutation_shapley(game, 3000, seed=6, truncation=0.5)
    assert truncated.info["batch_size"] == 49 // 32
    assert truncated.n_evaluations <= 3000 and truncated.n_samples > 5 * plain.n_samples
    assert permutation_shapley(game, 3000, seed=6, truncation=0.0).info["batch_size"] == plain.info["batch_size"]


@pytest.mark.slow  # starts a pool of worker processes (loky)
def test_identical_for_one_and_two_jobs():
    game = NoisyOrGame(np.linspace(0.02, 0.3, 14))
    runs = [permutation_shapley(game, 4000, seed=7, truncation=0.05, antithetic=True, batch_size=4, n_jobs=jobs)
            for jobs in (1, 2)]
    assert_same_run(runs[1], runs[0])
    assert runs[1].info == runs[0].info
    assert runs[0].n_samples > 4000 // (2 * 14) * 2  # the savings bought more pairs than at full cost


@pytest.mark.parametrize("share", [0.3, 0.95])  # in the first round, in one of the last
def test_interrupted_then_resumed_equals_uninterrupted(share, tmp_path):
    game = NoisyOrGame(np.linspace(0.05, 0.5, 8))
    run = dict(seed=8, truncation=0.1, batch_size=3, antithetic=True)
    calls = CountingGame(game)
    full = permutation_shapley(calls, 1500, **run)
    path = tmp_path / "tmc.ckpt"
    with pytest.raises(Interrupted):
        permutation_shapley(InterruptingGame(game, after=int(share * calls.calls)), 1500, checkpoint=path,
                            checkpoint_interval=3600, **run)
    counting = CountingGame(game)
    resumed = permutation_shapley(counting, 1500, checkpoint=path, **run)
    assert resumed.info["resumed_samples"] > 0
    assert_same_run(resumed, full)
    assert resumed.info == full.info | {"resumed_samples": resumed.info["resumed_samples"]}
    assert 0 < counting.rows < full.n_evaluations - 2  # neither the anchors nor a batch evaluated twice


def test_a_finished_run_continues_with_a_larger_budget(tmp_path):
    game = NoisyOrGame(np.linspace(0.05, 0.5, 8))
    path = tmp_path / "grow.ckpt"
    small = permutation_shapley(game, 700, seed=9, truncation=0.1, batch_size=1, checkpoint=path)
    counting = CountingGame(game)
    again = permutation_shapley(counting, 700, seed=9, truncation=0.1, batch_size=1, checkpoint=path)
    assert counting.rows == 0
    assert_same_run(again, small)
    grown = permutation_shapley(game, 1400, seed=9, truncation=0.1, batch_size=1, checkpoint=path)
    assert_same_run(grown, permutation_shapley(game, 1400, seed=9, truncation=0.1, batch_size=1))


def test_a_run_ended_on_a_partial_batch_is_finished_for_its_budget(tmp_path):
    game = NoisyOrGame(np.linspace(0.05, 0.5, 8))
    path = tmp_path / "partial.ckpt"
    first = permutation_shapley(game, 700, seed=10, truncation=0.1, batch_size=8, checkpoint=path)
    assert first.n_samples % 8 != 0  # the budget left after the whole batches paid for a partial one
    counting = CountingGame(game)
    assert_same_run(permutation_shapley(counting, 700, seed=10, truncation=0.1, batch_size=8, checkpoint=path), first)
    assert counting.rows == 0
    # a larger budget keeps its batches and spends the rest in whole batches (test_checkpoint.py), a smaller one
    # is refused
    with pytest.raises(sr.CheckpointError, match="smaller budget"):
        permutation_shapley(game, 350, seed=10, truncation=0.1, batch_size=8, checkpoint=path)
    grown = permutation_shapley(game, 1400, seed=10, truncation=0.1, batch_size=8, checkpoint=path)
    assert grown.info["resumed_samples"] == first.n_samples < grown.n_samples
    with pytest.raises(sr.CheckpointError, match="truncation"):  # another t: another run
        permutation_shapley(game, 700, seed=10, truncation=0.2, batch_size=8, checkpoint=path)


def test_merged_runs_pool_samples_and_savings():
    game = MajorityGame(10, 4)
    a = permutation_shapley(game, 3000, seed=11, truncation=0.5, batch_size=16)
    b = permutation_shapley(game, 5000, seed=12, truncation=0.5, batch_size=16)
    merged = sr.merge_results(a, b)
    weights = np.array([a.n_samples, b.n_samples]) / (a.n_samples + b.n_samples)
    np.testing.assert_allclose(merged.values, weights[0] * a.values + weights[1] * b.values, atol=1e-12)
    assert merged.info["evaluations_saved"] == a.info["evaluations_saved"] + b.info["evaluations_saved"]
    assert merged.info["mean_truncation_position"] == pytest.approx(4.0)
    with pytest.raises(ValueError, match="options"):
        sr.merge_results(a, permutation_shapley(game, 3000, seed=13, batch_size=16))


def test_precision_target_judges_the_values_only():
    """The state's extra coordinates (stop position, evaluations) vary a lot; they must not hold up the stop."""
    game = NoisyOrGame(np.linspace(0.05, 0.5, 8))
    result = permutation_shapley(game, None, seed=14, truncation=0.1, target_stderr=0.01, batch_size=64)
    assert result.info["stopped_by"] == "target_stderr"
    assert result.stderr.shape == (8,) and result.stderr.max() <= 0.01
    assert result.n_samples < 20_000


def test_runs_whose_permutations_evaluate_nothing_still_end():
    """A unit is reckoned at least one evaluation: N = 1 (the only prefix is D) and U(empty) within tolerance."""
    one = permutation_shapley(AdditiveGame([2.0], offset=1.0), 50, seed=1, truncation=0.1)
    assert one.values.tolist() == [2.0] and one.n_evaluations == 2 and one.n_samples == 48
    flat = CountingGame(AdditiveGame(np.full(20, 0.01), offset=1.0))  # U(D) - U(empty) = 0.2 < 0.5 |U(D)|
    result = permutation_shapley(flat, 3000, seed=1, truncation=0.5, batch_size=100)
    assert flat.rows == result.n_evaluations == 2  # the anchors only: every permutation stops at once
    assert result.n_samples == 3000 - 2 and result.info["mean_truncation_position"] == 0.0
    np.testing.assert_array_equal(result.values, 0.0)


@pytest.mark.enumeration
def test_a_budget_for_every_coalition_buys_the_exact_values():
    game = MajorityGame(6, 3)
    result = permutation_shapley(game, 2**6, seed=1, truncation=0.5)
    np.testing.assert_allclose(result.values, game.shapley_values)
    assert result.info["stopped_by"] == "enumeration" and result.info["truncation"] == 0.5


@pytest.mark.parametrize("bad, error, match", [
    (-0.1, ValueError, "truncation must be >= 0"),
    (1.0, ValueError, r"truncation must be in \[0, 1\)"),
    (2, ValueError, r"truncation must be in \[0, 1\)"),
    (float("nan"), ValueError, "truncation must be finite"),
    (float("inf"), ValueError, "truncation must be finite"),
    ("0.1", TypeError, "truncation must be a real number"),
    (True, TypeError, "truncation must be a real number"),
    ([0.1], TypeError, "truncation must be a real number"),
])
def test_bad_truncation_is_refused_before_any_evaluation(bad, error, match):
    game = CountingGame(MajorityGame(6, 3))
    with pytest.raises(error, match=match):
        permutation_shapley(game, 500, seed=0, truncation=bad)
    assert game.calls == 0


def test_truncation_is_refused_on_one_pass_prefix_games():
    game = CountingPrefixGame(SizeAdditiveGame(np.arange(6.0), np.sqrt(np.arange(7.0))))
    with pytest.raises(ValueError, match="evaluate_prefixes computes every prefix"):
        permutation_shapley(game, 500, seed=0, truncation=0.1)
    assert game.calls == 0 and game.prefix_rows == 0


def test_budget_below_one_permutation_counts_the_anchor():
    with pytest.raises(ValueError, match="at least 8 utility evaluations \\(2 fixed"):
        permutation_shapley(MajorityGame(6, 3), 7, seed=0, truncation=0.1)
    permutation_shapley(MajorityGame(6, 3), 8, seed=0, truncation=0.1)  # U(empty), U(D) and one permutation
