"""Stratified SVARM: exact where every stratum is exact, consistent, calibrated, mergeable."""

import numpy as np
import pytest

import shapley_research as sr
from shapley_research.estimators._sampling import _without_replacement
from shapley_research.estimators import svarm_size_probabilities
from games import AirportGame, TableGame, random_unanimity_game, relative_l2

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off

AIRPORT = AirportGame(np.random.default_rng(0).uniform(0.0, 1.0, 12))
UNANIMITY = random_unanimity_game(10, n_terms=6, max_size=4, seed=1, null_players=(9,))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_exact_when_every_stratum_is_exact(n):
    # with N <= 3 every size is 0, 1, N-2 or N-1: the 2N + 2 exact evaluations are the whole estimate
    game = TableGame(np.random.default_rng(n).normal(size=2**n))
    result = sr.stratified_svarm_shapley(game, 2 * n + 2, seed=0)
    np.testing.assert_allclose(result.values, game.shapley_values, atol=1e-12)
    np.testing.assert_array_equal(result.stderr, 0.0)
    assert result.n_samples == 0 and result.n_evaluations == 2 * n + 2


def test_size_probabilities_favour_the_ends():
    p = svarm_size_probabilities(10)
    assert p.shape == (7,) and np.isclose(p.sum(), 1.0)  # sizes 2..8
    np.testing.assert_allclose(p, p[::-1])
    assert p[0] == p.max() and p[3] == p.min()
    assert svarm_size_probabilities(3).size == 0


@pytest.mark.parametrize("game", [AIRPORT, UNANIMITY], ids=["airport", "unanimity"])
def test_error_falls_like_one_over_sqrt_budget(game, monkeypatch):
    # the rate of sampling with replacement: without it (the default on games this small) the error falls
    # faster, to 0 once every stratum is complete (tests/estimators/test_without_replacement.py)
    monkeypatch.setattr(_without_replacement, "MAX_STRATUM", 0)
    truth = game.shapley_values
    n = game.n_players

    def mean_error(budget):
        return np.mean([relative_l2(sr.stratified_svarm_shapley(game, budget, seed=s).values, truth)
                        for s in range(8)])

    small, large = mean_error(2 * n + 2 + 400), mean_error(2 * n + 2 + 25_600)
    assert large < 0.03
    assert 4.0 < small / large < 16.0  # 64x the samples: about 8x smaller


def test_standard_errors_are_calibrated():
    truth = AIRPORT.shapley_values
    z = np.concatenate([(r.values - truth) / r.stderr for r in
                        (sr.stratified_svarm_shapley(AIRPORT, 5_000, seed=s) for s in range(40))])
    assert 0.8 < z.std() < 1.2
    assert abs(z.mean()) < 0.15  # unbiased once every stratum is sampled


def test_null_player_is_worth_zero_within_its_error():
    result = sr.stratified_svarm_shapley(UNANIMITY, 20_000, seed=4)
    assert abs(result.values[9]) < 4 * result.stderr[9]
    assert result.stderr[9] < 0.02


def test_same_seed_same_numbers_and_seeds_differ():
    a, b = (sr.stratified_svarm_shapley(UNANIMITY, 3_000, seed=7) for _ in range(2))
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.stderr, b.stderr)
    assert not np.array_equal(a.values, sr.stratified_svarm_shapley(UNANIMITY, 3_000, seed=8).values)


def test_counts_evaluations_honestly():
    calls = []

    class Counted(type(UNANIMITY)):
        def evaluate(self, masks):
            calls.append(np.asarray(masks).shape[0])
            return super().evaluate(masks)

    game = Counted(UNANIMITY.n_players, UNANIMITY.coalitions, UNANIMITY.coefficients)
    result = sr.stratified_svarm_shapley(game, 1_234, seed=0)
    assert result.n_evaluations == sum(calls) == 1_234
    assert result.n_samples == 1_234 - (2 * game.n_players + 2)


def test_unsampled_strata_borrow_the_nearest_size():
    game = AirportGame(np.random.default_rng(3).uniform(0.0, 1.0, 60))
    result = sr.stratified_svarm_shapley(game, 2 * 60 + 2 + 30, seed=0)
    assert result.info["empty_strata"] > 0
    assert np.isfinite(result.values).all() and np.isfinite(result.stderr).all()


def test_merging_pools_the_strata_of_both_runs():
    a = sr.stratified_svarm_shapley(UNANIMITY, 2_000, seed=1)
    b = sr.stratified_svarm_shapley(UNANIMITY, 3_000, seed=2)
    merged = sr.merge_results(a, b)
    np.testing.assert_allclose(merged.state.mean * merged.state.count,
                               a.state.mean * a.state.count + b.state.mean * b.state.count, atol=1e-9)
    assert merged.n_samples == a.n_samples + b.n_samples
    truth = UNANIMITY.shapley_values
    errors = [relative_l2(sr.merge_results(sr.stratified_svarm_shapley(UNANIMITY, 2_000, seed=2 * s + 1),
                                           sr.stratified_svarm_shapley(UNANIMITY, 2_000, seed=2 * s + 2)).values,
                          truth) for s in range(6)]
    single = [relative_l2(sr.stratified_svarm_shapley(UNANIMITY, 2_000, seed=s).values, truth) for s in range(6)]
    assert np.mean(errors) < np.mean(single)


def test_target_stderr_stops_when_reached():
    result = sr.stratified_svarm_shapley(AIRPORT, None, seed=0, target_stderr=0.01, batch_size=100)
    assert result.info["stopped_by"] == "target_stderr"
    assert result.stderr.max() <= 0.01


def test_too_many_players_is_refused_before_evaluating():
    class Huge:
        n_players = 2048 + 1  # one more than the limit the message names

        def evaluate(self, masks):
            raise AssertionError("must not be evaluated")

    with pytest.raises(ValueError, match="at most 2048 players"):
        sr.stratified_svarm_shapley(Huge(), 10**7, seed=0)
