"""Position-adjusted permutation sampling: exact where its model holds, efficient, consistent, and a real
variance reduction where marginal contributions depend on the position a player joins at."""

import numpy as np
import pytest

import shapley_research as sr
from shapley_research.estimators import _position_effects, random_permutations
from shapley_research.estimators._position_effects import PositionBatch
from shapley_research.estimators._sampling._loop import COMPILED_MERGE_DIM, MeanState, merge_batch
from shapley_research.estimators._truncation import append_tally
from games import (AirportGame, SizeAdditiveGame, UnanimityGame, relative_l2)

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off


def size_additive(n: int, seed: int = 0) -> SizeAdditiveGame:
    rng = np.random.default_rng(seed)
    return SizeAdditiveGame(rng.normal(size=n), 4.0 * np.sqrt(np.arange(n + 1)))


class NoisyLearningCurve(sr.games.Game):
    """Additive + concave size term + a few 3-player unanimity terms (values in closed form)."""

    def __init__(self, n: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.n_players = n
        self.weights = rng.normal(size=n)
        self.sets = np.stack([rng.choice(n, 3, replace=False) for _ in range(4)])
        self.set_weights = rng.normal(0.0, 2.0, len(self.sets))

    def _evaluate(self, masks):
        return (masks @ self.weights + 5.0 * np.sqrt(masks.sum(axis=1))
                + masks[:, self.sets].all(axis=2) @ self.set_weights)

    @property
    def shapley_values(self):
        values = self.weights + 5.0 * np.sqrt(self.n_players) / self.n_players
        for members, weight in zip(self.sets, self.set_weights):
            values[members] += weight / 3
        return values


@pytest.mark.parametrize("antithetic", [False, True])
@pytest.mark.parametrize("n", [5, 8])
def test_exact_when_contributions_are_player_plus_position_effects(n, antithetic):
    # one bin per position for N <= 8, so the two-way model holds exactly for U = sum w + g(|S|)
    game = size_additive(n, seed=n)
    result = sr.permutation_shapley(game, 1 + 2 * 6 * n, seed=1, antithetic=antithetic, position_adjustment=True)
    np.testing.assert_allclose(result.values, game.shapley_values, atol=1e-10)


@pytest.mark.parametrize("antithetic", [False, True])
def test_efficiency_holds_exactly(antithetic):
    game = AirportGame(np.random.default_rng(3).uniform(1, 10, 30))
    result = sr.permutation_shapley(game, 1 + 2 * 30 * 7, seed=2, antithetic=antithetic, position_adjustment=True)
    full = game.evaluate(np.ones((1, 30), bool))[0] - game.evaluate(np.zeros((1, 30), bool))[0]
    assert result.values.sum() == pytest.approx(full, abs=1e-9)


def test_the_state_holds_the_plain_estimate_of_the_same_permutations():
    game = NoisyLearningCurve(40)
    plain = sr.permutation_shapley(game, 1 + 40 * 25, seed=4, batch_size=5)
    adjusted = sr.permutation_shapley(game, 1 + 40 * 25, seed=4, batch_size=5, position_adjustment=True)
    cells = 40 * (adjusted.state.dim // 80)
    shares = adjusted.state.mean[:cells].reshape(40, -1)
    np.testing.assert_allclose(shares.sum(axis=1), 1.0)
    np.testing.assert_allclose(adjusted.state.mean[cells:].reshape(40, -1).sum(axis=1), plain.values, atol=1e-12)
    assert adjusted.n_evaluations == plain.n_evaluations and adjusted.n_samples == plain.n_samples
    assert adjusted.info["position_adjustment"] is True and "position_adjustment" not in plain.info["options"]


@pytest.mark.parametrize("antithetic", [False, True])
def test_converges_to_the_exact_values(antithetic):
    game = NoisyLearningCurve(40, seed=1)
    errors = [relative_l2(sr.permutation_shapley(game, 1 + 40 * t, seed=0, antithetic=antithetic,
                                                 position_adjustment=True).values, game.shapley_values)
              for t in (20, 200, 2000)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.03


@pytest.mark.parametrize("antithetic", [False, True])
def test_smaller_error_than_plain_sampling_at_equal_budget(antithetic):
    game = NoisyLearningCurve(60, seed=2)
    truth = game.shapley_values

    def mse(adjust):
        return np.mean([np.mean((sr.permutation_shapley(game, 1 + 60 * 40, seed=s, antithetic=antithetic,
                                                        position_adjustment=adjust).values - truth) ** 2)
                        for s in range(8)])

    assert mse(True) < 0.7 * mse(False)


def test_standard_errors_match_the_observed_error():
    game = NoisyLearningCurve(40, seed=3)
    runs = [sr.permutation_shapley(game, 1 + 2 * 40 * 30, seed=s, antithetic=True, position_adjustment=True)
            for s in range(12)]
    mse = np.mean([np.mean((r.values - game.shapley_values) ** 2) for r in runs])
    mean_variance = np.mean([np.mean(r.stderr**2) for r in runs])
    assert 0.5 < mean_variance / mse < 2.0


def test_symmetric_game_needs_no_samples_beyond_its_positions():
    # U depends on |S| only: every contribution is a position effect, the values are U(D) / N
    game = UnanimityGame(6, [range(6)], [1.0])
    result = sr.permutation_shapley(game, 1 + 6 * 4, seed=0, position_adjustment=True)
    np.testing.assert_allclose(result.values, np.full(6, 1 / 6), atol=1e-12)


def test_merge_equals_the_fit_on_the_union_of_the_samples():
    game = NoisyLearningCurve(30)
    a = sr.permutation_shapley(game, 1 + 30 * 10, seed=1, position_adjustment=True, antithetic=True)
    b = sr.permutation_shapley(game, 1 + 30 * 20, seed=2, position_adjustment=True, antithetic=True)
    merged = sr.merge_results(a, b)
    state = type(a.state)(a.state.dim)
    state.merge(a.state)
    state.merge(b.state)
    bins, n_bins = _position_effects.position_bins(30, antithetic=True)
    values, stderr = _position_effects.fit(state, bins, n_bins)
    np.testing.assert_allclose(merged.values, values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(merged.stderr, stderr, rtol=0, atol=1e-12)
    assert merged.n_samples == a.n_samples + b.n_samples
    with pytest.raises(ValueError, match="options"):
        sr.merge_results(a, sr.permutation_shapley(game, 1 + 30 * 10, seed=3, antithetic=True))


@pytest.mark.parametrize("target", [{"target_stderr": 0.05}, {"target_rank_correlation": 0.95}])
def test_stops_on_the_adjusted_estimates_precision(target):
    game = NoisyLearningCurve(30, seed=4)
    result = sr.permutation_shapley(game, None, seed=0, batch_size=5, position_adjustment=True, **target)
    assert result.info["stopped_by"] == next(iter(target))
    if "target_stderr" in target:
        assert np.nanmax(result.stderr) <= 0.05


def test_bins_are_single_positions_near_both_ends_and_logarithmic_in_number():
    bins, n_bins = _position_effects.position_bins(1000, antithetic=False)
    assert len(set(bins[:4])) == 4 and len(set(bins[-4:])) == 4 and not set(bins[:4]) & set(bins[-4:])
    assert np.all(np.diff(bins[:500]) >= 0) and n_bins <= 40
    folded, n_folded = _position_effects.position_bins(1000, antithetic=True)
    np.testing.assert_array_equal(folded, folded[::-1])
    assert n_folded == n_bins // 2
    for n in (100_000, 1_000_000):  # widths grow faster at large N, down to the exact bins and one more per end
        big, n_big = _position_effects.position_bins(n, antithetic=False)
        minimum = 2 * (_position_effects.EXACT_POSITIONS + 1)
        assert big.size * n_big <= _position_effects.MAX_CELLS or n_big == minimum


def test_cannot_combine_with_rotations_and_must_be_a_bool():
    game = size_additive(6)
    with pytest.raises(ValueError, match="position_adjustment and rotations"):
        sr.permutation_shapley(game, 100, seed=0, rotations=2, position_adjustment=True)
    with pytest.raises(TypeError, match="position_adjustment"):
        sr.permutation_shapley(game, 100, seed=0, position_adjustment="yes")


LONG = 600  # players whose antithetic state (2 N B entries) is long enough for the compiled one-pass merge


def position_batch(seed: int, size: int, n: int, antithetic: bool, tally: bool) -> PositionBatch:
    """``size`` units of random samples along random permutations, as the sampler hands them to the loop."""
    rng = np.random.default_rng(seed)
    bins, n_bins = _position_effects.position_bins(n, antithetic)
    values = rng.normal(size=(size, n)) * 10.0 ** rng.integers(-3, 4, size=(size, n))  # roundings that differ
    batch = _position_effects.reduce_by_position(values, random_permutations(rng, size, n), bins, n_bins)
    return append_tally(batch, rng.integers(1, n + 1, size), rng.integers(1, 2 * n, size)) if tally else batch


@pytest.mark.parametrize("n", [30, LONG])
@pytest.mark.parametrize("antithetic", [False, True])
@pytest.mark.parametrize("tally", [False, True])
def test_a_batch_merges_as_its_moments_would_bit_for_bit(n, antithetic, tally):
    # units of 1 (the default batch beyond ~1,450 players) to 7, so that some (player, bin) cells get several
    batches = [position_batch(seed, size, n, antithetic, tally) for seed, size in enumerate((3, 1, 7, 1, 2))]
    dim = batches[0].dim
    assert (dim >= COMPILED_MERGE_DIM) == (n == LONG)
    direct, merged = MeanState(dim), MeanState(dim)
    for batch in batches:
        direct.merge(batch.moments())
        before = merged.mean
        merge_batch(merged, batch)
        assert merged.count == direct.count and merged.mean is not before  # new arrays: snapshots keep theirs
        np.testing.assert_array_equal(merged.mean, direct.mean)
        np.testing.assert_array_equal(merged.m2, direct.m2)


def test_a_batchs_moments_are_batch_state_and_the_tally_appended():
    rng = np.random.default_rng(5)
    perms, values = random_permutations(rng, 4, LONG), rng.normal(size=(4, LONG))
    stops, made = np.array([3, 600, 17, 250]), np.array([5, 600, 30, 400])
    bins, n_bins = _position_effects.position_bins(LONG, True)
    batch = append_tally(_position_effects.reduce_by_position(values, perms, bins, n_bins), stops, made)
    reference = append_tally(_position_effects.batch_state(values, _position_effects.player_positions(perms),
                                                           bins, n_bins), stops, made)
    moments = batch.moments()
    assert batch.count == moments.count == reference.count == 4 and batch.dim == moments.dim == reference.dim
    np.testing.assert_array_equal(moments.mean, reference.mean)
    np.testing.assert_array_equal(moments.m2, reference.m2)


def test_a_batch_of_another_length_is_refused_and_an_empty_one_changes_nothing():
    batch = position_batch(0, 2, LONG, True, False)
    with pytest.raises(ValueError, match="cannot merge states of dimension"):
        batch.merge_into(MeanState(batch.dim + 1))
    state = MeanState(batch.dim)
    batch.merge_into(state)
    mean, m2 = state.mean, state.m2
    empty = PositionBatch(0, batch.values[:0], batch.binned[:0], batch.n_bins, batch.extra[:0])
    empty.merge_into(state)
    assert state.count == 2 and state.mean is mean and state.m2 is m2


@pytest.mark.parametrize("kwargs", [{"antithetic": True}, {"antithetic": False, "batch_size": 3},
                                    {"antithetic": True, "truncation": 0.05, "batch_size": 2}])
def test_runs_give_the_bits_of_merging_each_batchs_moments(monkeypatch, kwargs):
    game = NoisyLearningCurve(LONG, seed=5)  # masks only: truncation may skip prefixes

    def run():
        return sr.permutation_shapley(game, 1 + 2 * LONG * 9, seed=3, position_adjustment=True, **kwargs)

    fast = run()
    monkeypatch.setattr(PositionBatch, "merge_into", lambda self, state: state.merge(self.moments()))
    slow = run()
    assert fast.state.dim >= COMPILED_MERGE_DIM and fast.n_samples == slow.n_samples
    for a, b in ((fast.values, slow.values), (fast.stderr, slow.stderr), (fast.state.mean, slow.state.mean),
                 (fast.state.m2, slow.state.m2)):
        np.testing.assert_array_equal(a, b)
