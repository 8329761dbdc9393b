"""Data Banzhaf: exact by enumeration against a brute force, and MSR sampling that is unbiased, calibrated,
identical for any n_jobs and after a resume, mergeable, and validated before evaluating."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import shapley_research as sr
from games import (VOTING_NULL_PLAYERS, VOTING_QUOTA, VOTING_WEIGHTS, AdditiveGame, AirportGame, CountingGame,
                   GloveGame, Interrupted, InterruptingGame, MajorityGame, TableGame, WeightedVotingGame,
                   random_unanimity_game, relative_l2)
from shapley_research import exact_banzhaf, msr_banzhaf

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off

VOTING = WeightedVotingGame(VOTING_WEIGHTS, VOTING_QUOTA)
AIRPORT = AirportGame([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0])
UNANIMITY = random_unanimity_game(11, 12, 5, seed=7, null_players=[10])
GAMES = {
    "voting": VOTING,
    "glove_symmetric": GloveGame(4, 4),
    "glove_asymmetric": GloveGame(3, 6),
    "airport": AIRPORT,
    "unanimity": UNANIMITY,
    "majority": MajorityGame(9, 5),
    "additive_offset": AdditiveGame(np.linspace(-1.0, 2.0, 6), offset=1.5),
    "random_table": TableGame(np.random.default_rng(20).normal(size=2**6)),
}


def brute_force_banzhaf(game) -> np.ndarray:
    """The definition, with Python sets: the mean over the other players' subsets S of U(S + i) - U(S)."""
    n = game.n_players
    cache: dict = {}

    def u(coalition: frozenset) -> float:
        if coalition not in cache:
            mask = np.zeros((1, n), dtype=bool)
            mask[0, sorted(coalition)] = True
            cache[coalition] = float(game.evaluate(mask)[0])
        return cache[coalition]

    values = []
    for i in range(n):
        others = [j for j in range(n) if j != i]
        subsets = (frozenset(s) for k in range(n) for s in itertools.combinations(others, k))
        values.append(sum(u(s | {i}) - u(s) for s in subsets) / 2 ** (n - 1))
    return np.array(values)


# --- exact_banzhaf -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(GAMES))
def test_exact_equals_a_brute_force(name):
    game = GAMES[name]
    result = exact_banzhaf(game)
    np.testing.assert_allclose(result.values, brute_force_banzhaf(game), rtol=0, atol=1e-12)
    assert result.method == "exact_banzhaf" and result.n_evaluations == 2**game.n_players


def test_exact_closed_forms():
    # a unanimity term on T with weight w: every member is pivotal only when all of T - i is in, 2^-(t-1)
    truth = np.zeros(UNANIMITY.n_players)
    for members, weight in zip(UNANIMITY.coalitions, UNANIMITY.coefficients):
        truth[members] += weight / 2 ** (members.size - 1)
    np.testing.assert_allclose(exact_banzhaf(UNANIMITY).values, truth, rtol=0, atol=1e-12)
    # symmetric majority: pivotal when exactly q - 1 of the N - 1 others are in
    np.testing.assert_allclose(exact_banzhaf(MajorityGame(9, 5)).values, math.comb(8, 4) / 2**8, atol=1e-15)
    # glove (1 left, 2 right), by hand: the left player gains a pair with any non-empty set of right gloves
    np.testing.assert_allclose(exact_banzhaf(GloveGame(1, 2)).values, [0.75, 0.25, 0.25], atol=1e-15)
    # additive: b_i = w_i whatever U(empty)
    game = GAMES["additive_offset"]
    np.testing.assert_allclose(exact_banzhaf(game).values, game.weights, atol=1e-12)


def test_exact_null_players_and_symmetry():
    values = exact_banzhaf(VOTING).values
    np.testing.assert_array_equal(values[list(VOTING_NULL_PLAYERS)], 0.0)
    np.testing.assert_allclose(values[:3], values[0], atol=1e-15)  # three weight-10 voters
    np.testing.assert_allclose(values[3:5], values[3], atol=1e-15)  # two weight-4 voters
    glove = exact_banzhaf(GloveGame(3, 6)).values
    assert np.ptp(glove[:3]) < 1e-15 and np.ptp(glove[3:]) < 1e-15 and glove[0] > glove[3]
    assert exact_banzhaf(UNANIMITY).values[10] == 0.0


def test_exact_with_a_given_empty_utility_and_in_chunks():
    game = CountingGame(AdditiveGame([1.0, 2.0, 3.0], offset=5.0))
    result = exact_banzhaf(game, empty_utility=0.0, chunk_size=3)
    assert result.n_evaluations == game.rows == 7 and game.empty_rows == 0 and game.calls == 3
    # U(empty) = 0 instead of 5: every S = empty term loses 5, i.e. each value gains 5 / 2^(N-1)
    np.testing.assert_allclose(result.values, np.array([1.0, 2.0, 3.0]) + 5.0 / 4, atol=1e-12)
    assert result.info["empty_utility"] == 0.0 and result.info["full_utility"] == 11.0


class Huge:
    """A game too large to enumerate; evaluating it fails the test."""

    n_players = 21

    def evaluate(self, masks):
        raise AssertionError("must not be evaluated")


@pytest.mark.parametrize("kwargs,error,match", [
    ({}, ValueError, r"N=21 > max_players=20"),
    ({"max_players": 0}, ValueError, "max_players must be >= 1"),
    ({"max_players": "30"}, TypeError, "max_players must be an integer"),
    ({"chunk_size": 0}, ValueError, "chunk_size must be >= 1"),
    ({"max_players": 30, "empty_utility": np.nan}, ValueError, "empty_utility must be finite"),
    ({"max_players": 30, "empty_utility": "0"}, TypeError, "empty_utility must be a real number"),
])
def test_exact_refuses_bad_input_before_evaluating(kwargs, error, match):
    with pytest.raises(error, match=match):
        exact_banzhaf(Huge(), **kwargs)


# --- msr_banzhaf: the estimate ---------------------------------------------------------------------------


@pytest.mark.parametrize("game", [AIRPORT, UNANIMITY], ids=["airport", "unanimity"])
def test_msr_error_falls_like_one_over_sqrt_budget(game):
    truth = exact_banzhaf(game).values

    def mean_error(budget):
        return np.mean([relative_l2(msr_banzhaf(game, budget, seed=s).values, truth) for s in range(8)])

    small, large = mean_error(400), mean_error(25_600)
    assert large < 0.05
    assert 5.0 < small / large < 13.0  # 64x the samples: about 8x smaller


@pytest.mark.slow  # over a second
def test_msr_is_unbiased_over_seeds():
    # A ratio estimator, but conditionally unbiased: given which coalitions hold i, the others are still uniform
    # draws of S + i and of S, so each side's mean is unbiased whenever both sides have a coalition. The only
    # bias is the value 0 given when a side is empty, P = 2^(1 - m): at m = 16 coalitions at most 3e-5 |b_i|,
    # far below the 4-standard-error tolerance over 2,000 seeds (about 0.015 here). m = 16 is where a
    # classical ratio bias (of order 1/m) would show most.
    truth = exact_banzhaf(VOTING).values
    runs = np.array([msr_banzhaf(VOTING, 16, seed=s).values for s in range(2_000)])
    tolerance = 4 * runs.std(axis=0, ddof=1) / np.sqrt(len(runs))
    assert (np.abs(runs.mean(axis=0) - truth) < tolerance).all()


def test_msr_standard_errors_are_honest():
    truth = exact_banzhaf(AIRPORT).values
    runs = [msr_banzhaf(AIRPORT, 2_000, seed=s) for s in range(60)]
    z = np.concatenate([(r.values - truth) / r.stderr for r in runs])
    assert 0.85 < z.std() < 1.15
    assert abs(z.mean()) < 0.15
    # and the reported error is the spread of the estimates over seeds
    spread = np.std([r.values for r in runs], axis=0, ddof=1)
    mean_stderr = np.mean([r.stderr for r in runs], axis=0)
    np.testing.assert_allclose(mean_stderr.mean(), spread.mean(), rtol=0.15)


def test_msr_null_player_is_worth_zero_within_its_error():
    result = msr_banzhaf(VOTING, 20_000, seed=3)
    for player in VOTING_NULL_PLAYERS:
        assert abs(result.values[player]) < 4 * result.stderr[player]
    assert result.stderr.max() < 0.01


def test_msr_counts_evaluations_honestly_and_repeats_with_its_seed():
    game = CountingGame(UNANIMITY)
    result = msr_banzhaf(game, 1_234, seed=0, batch_size=100)
    assert result.n_evaluations == game.rows == result.n_samples == 1_234
    again = msr_banzhaf(UNANIMITY, 1_234, seed=0, batch_size=100)
    np.testing.assert_array_equal(again.values, result.values)
    np.testing.assert_array_equal(again.stderr, result.stderr)
    assert not np.array_equal(msr_banzhaf(UNANIMITY, 1_234, seed=1, batch_size=100).values, result.values)


def test_msr_with_a_given_empty_utility_never_evaluates_the_empty_coalition():
    game = CountingGame(AdditiveGame([1.0, 2.0], offset=5.0))
    result = msr_banzhaf(game, 4_000, seed=1, empty_utility=0.0)
    assert game.empty_rows == 0 and result.n_evaluations == game.rows
    assert 800 < 4_000 - result.n_evaluations < 1_200  # about a quarter of the draws are empty, not evaluated
    exact = exact_banzhaf(AdditiveGame([1.0, 2.0], offset=5.0), empty_utility=0.0).values
    assert (np.abs(result.values - exact) < 4 * result.stderr).all()


def test_one_sided_players_get_zero_and_an_infinite_standard_error():
    with pytest.raises(ValueError, match="budget=1 is smaller than one sampled coalition per side"):
        msr_banzhaf(VOTING, 1, seed=0)  # one coalition: every player would be on one side only
    game = random_unanimity_game(30, 10, 3, seed=2)
    with pytest.warns(UserWarning, match=r"msr_banzhaf: \d+ of 30 players were sampled only in"):
        few = msr_banzhaf(game, 4, seed=0)
    n = game.n_players
    held = np.rint(few.state.mean[n:2 * n] * few.state.count)
    one_sided = np.flatnonzero((held == 0) | (held == 4))
    assert one_sided.size > 0 and few.info["one_sided_players"] == one_sided.tolist()
    np.testing.assert_array_equal(few.values[one_sided], 0.0)
    # a finite standard error needs two coalitions on each side: of four, exactly two holding the player
    np.testing.assert_array_equal(np.isinf(few.stderr), held != 2)
    assert few.info["fewest_side_samples"] == 0


# --- msr_banzhaf: the sampling machinery ------------------------------------------------------------------


@pytest.mark.slow  # starts a pool of worker processes (loky)
def test_identical_for_any_n_jobs_and_backend():
    from joblib import parallel_config

    reference = msr_banzhaf(AIRPORT, 5_001, seed=4, batch_size=333)
    with parallel_config(backend="threading"):
        threads = msr_banzhaf(AIRPORT, 5_001, seed=4, batch_size=333, n_jobs=2)
    processes = msr_banzhaf(AIRPORT, 5_001, seed=4, batch_size=333, n_jobs=2)
    for result in (threads, processes):
        np.testing.assert_array_equal(result.values, reference.values)
        np.testing.assert_array_equal(result.stderr, reference.stderr)
        assert (result.n_evaluations, result.n_samples) == (reference.n_evaluations, reference.n_samples)


def test_interrupted_then_resumed_equals_uninterrupted(tmp_path):
    path = tmp_path / "msr.ckpt"
    full = msr_banzhaf(VOTING, 1_000, seed=5, batch_size=25)
    with pytest.raises(Interrupted):
        msr_banzhaf(InterruptingGame(VOTING, after=15), 1_000, seed=5, batch_size=25, checkpoint=path,
                    checkpoint_interval=3600)
    assert path.exists()
    counting = CountingGame(VOTING)
    resumed = msr_banzhaf(counting, 1_000, seed=5, batch_size=25, checkpoint=path)
    assert resumed.info["resumed_samples"] == 14 * 25
    assert counting.rows == 1_000 - 14 * 25  # only the missing batches are evaluated
    np.testing.assert_array_equal(resumed.values, full.values)
    np.testing.assert_array_equal(resumed.stderr, full.stderr)
    assert (resumed.n_evaluations, resumed.n_samples, resumed.seed) == (full.n_evaluations, full.n_samples, 5)
    # a finished run's file continues with a larger budget to the run of that budget
    grown = msr_banzhaf(VOTING, 1_500, seed=5, batch_size=25, checkpoint=path)
    np.testing.assert_array_equal(grown.values, msr_banzhaf(VOTING, 1_500, seed=5, batch_size=25).values)


class Recording(CountingGame):
    """Keeps every coalition evaluated and its utility, in order."""

    def __init__(self, game):
        super().__init__(game)
        self.masks, self.utilities = [], []

    def _evaluate(self, masks):
        utilities = super()._evaluate(masks)
        self.masks.append(masks.copy())
        self.utilities.append(np.asarray(utilities, dtype=float))
        return utilities


def pooled_statistics(masks: np.ndarray, utilities: np.ndarray):
    """Each side's mean utility, and the standard error of their difference, straight from the samples."""
    values, stderr = [], []
    for i in range(masks.shape[1]):
        inside, outside = utilities[masks[:, i]], utilities[~masks[:, i]]
        values.append(inside.mean() - outside.mean())
        stderr.append(np.sqrt(inside.var(ddof=1) / inside.size + outside.var(ddof=1) / outside.size))
    return np.array(values), np.array(stderr)


def test_merging_two_seeds_gives_the_pooled_statistics():
    recorded = [Recording(AIRPORT) for _ in range(2)]
    runs = [msr_banzhaf(game, budget, seed=seed, batch_size=300)
            for game, budget, seed in zip(recorded, (1_000, 1_700), (1, 2))]
    merged = sr.merge_results(*runs)
    masks = np.concatenate([m for game in recorded for m in game.masks])
    utilities = np.concatenate([u for game in recorded for u in game.utilities])
    assert masks.shape[0] == 2_700 == merged.n_samples == merged.n_evaluations
    values, stderr = pooled_statistics(masks, utilities)
    np.testing.assert_allclose(merged.values, values, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(merged.stderr, stderr, rtol=1e-8)
    assert merged.method == "msr_banzhaf" and merged.info["seeds"] == [1, 2]
    # each run alone: its own samples
    single, single_stderr = pooled_statistics(np.concatenate(recorded[0].masks),
                                              np.concatenate(recorded[0].utilities))
    np.testing.assert_allclose(runs[0].values, single, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(runs[0].stderr, single_stderr, rtol=1e-8)
    with pytest.raises(ValueError, match="share a seed"):
        sr.merge_results(runs[0], msr_banzhaf(AIRPORT, 1_000, seed=1, batch_size=300))
    with pytest.raises(ValueError, match="options"):  # a given U(empty) values another game
        sr.merge_results(runs[0], msr_banzhaf(AIRPORT, 1_000, seed=3, batch_size=300, empty_utility=0.0))


def test_target_stderr_stops_at_the_first_batch_that_meets_it():
    result = msr_banzhaf(AIRPORT, None, seed=0, target_stderr=0.05, batch_size=50)
    assert result.info["stopped_by"] == "target_stderr" and result.stderr.max() <= 0.05
    fewer = msr_banzhaf(AIRPORT, result.n_samples - 50, seed=0, target_stderr=0.05, batch_size=50)
    assert fewer.info["stopped_by"] == "budget" and fewer.stderr.max() > 0.05
    ranked = msr_banzhaf(AIRPORT, None, seed=0, target_rank_correlation=0.9, batch_size=50)
    assert ranked.info["stopped_by"] == "target_rank_correlation"


@pytest.mark.enumeration
def test_a_budget_covering_every_coalition_returns_the_exact_values():
    game = CountingGame(VOTING)
    result = msr_banzhaf(game, 2**7, seed=0)
    np.testing.assert_allclose(result.values, exact_banzhaf(VOTING).values, atol=1e-15)
    assert result.info["stopped_by"] == "enumeration" and game.rows == result.n_evaluations == 2**7
    np.testing.assert_array_equal(result.stderr, 0.0)
    assert msr_banzhaf(VOTING, 2**7 - 1, seed=0).info["stopped_by"] == "budget"


class DuckGame:
    """Counts its calls, so a test can check nothing was evaluated."""

    n_players = 3

    def __init__(self):
        self.calls = 0

    def evaluate(self, masks):
        self.calls += 1
        return np.asarray(masks, dtype=float).sum(axis=1)


@pytest.mark.parametrize("kwargs,error,match", [
    ({"budget": 0}, ValueError, "budget=0 is smaller than one sampled coalition"),
    ({"budget": -1}, ValueError, "budget must be >= 0"),
    ({"budget": 10.5}, TypeError, "budget must be an integer"),
    ({"budget": None}, TypeError, "budget must be an integer"),
    ({"seed": -1}, ValueError, "seed must be >= 0"),
    ({"seed": "7"}, TypeError, "seed must be an integer"),
    ({"batch_size": 0}, ValueError, "batch_size must be >= 1"),
    ({"n_jobs": 0}, ValueError, "n_jobs must be"),
    ({"empty_utility": np.inf}, ValueError, "empty_utility must be finite"),
    ({"target_stderr": 0.0}, ValueError, "target_stderr must be > 0"),
    ({"target_rank_correlation": 1.5}, ValueError, r"target_rank_correlation must be in \(0, 1\]"),
    ({"checkpoint_interval": -1.0}, ValueError, "checkpoint_interval must be >= 0"),
])
def test_msr_refuses_bad_input_before_evaluating(kwargs, error, match, tmp_path):
    game = DuckGame()
    arguments = {"budget": 100, "seed": 0, **kwargs}
    if "checkpoint_interval" in kwargs:
        arguments["checkpoint"] = tmp_path / "run.ckpt"
    with pytest.raises(error, match=match):
        msr_banzhaf(game, **arguments)
    assert game.calls == 0
    with pytest.raises(TypeError, match="game must be an object"):
        msr_banzhaf(lambda masks: 0.0, 100, seed=0)


def test_a_checkpoint_of_another_estimator_is_refused(tmp_path):
    path = tmp_path / "other.ckpt"
    sr.permutation_shapley(VOTING, 1 + 7 * 10, seed=0, checkpoint=path)
    game = DuckGame()
    game.n_players = 7
    with pytest.raises(sr.CheckpointError):
        msr_banzhaf(game, 100, seed=0, checkpoint=path)
    assert game.calls == 0
