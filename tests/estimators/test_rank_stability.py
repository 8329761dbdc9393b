"""Stopping by rank stability: ``target_rank_correlation`` and :func:`expected_rank_correlation`.

The criterion is the expected Spearman correlation between the current
estimate ``v`` and a re-estimate ``v + s * z`` of the same precision, over 32
fixed normal draws; a run stops after the first batch (from 30 samples on)
where it reaches the target. It is a pure function of the merged state, so the
stop is the same for any ``n_jobs`` and after a checkpoint/resume.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

import shapley_research as sr
from games import AirportGame, CountingGame, Interrupted, InterruptingGame
from shapley_research.estimators._sampling._loop import (MIN_SAMPLES_FOR_PRECISION, RANK_DRAWS,
                                                         expected_rank_correlation, rank_noise, run_sampling)

AIRPORT = AirportGame(np.arange(1.0, 11.0))  # ten players with distinct, well separated values
N = AIRPORT.n_players
TARGET = 0.95


# --- the criterion itself ---


def brute_force(values, stderr, key):
    """Mean of scipy's Spearman correlation over the same draws, one draw at a time."""
    z = rank_noise(RANK_DRAWS, len(values), key)
    return float(np.mean([spearmanr(values, values + stderr * row).statistic for row in z]))


def test_zero_stderr_gives_one():
    rng = np.random.default_rng(0)
    values = rng.normal(size=25)
    assert expected_rank_correlation(values, np.zeros(25)) == 1.0
    tied = np.array([1.0, 1.0, 2.0, 3.0, 3.0])  # ties in the values change nothing when nothing moves
    assert expected_rank_correlation(tied, np.zeros(5), key=4) == 1.0
    assert expected_rank_correlation(np.ones(4), np.zeros(4)) == 1.0
    assert expected_rank_correlation([3.0], [0.5]) == 1.0  # one player has one ranking


def test_players_with_zero_stderr_keep_their_rank():
    """Only the noisy players can move: a ranking of fixed players plus one noisy one beats all noisy."""
    values = np.arange(12.0)
    some = np.where(np.arange(12) == 5, 3.0, 0.0)
    assert 0.9 < expected_rank_correlation(values, some, key=2) < 1.0
    assert expected_rank_correlation(values, np.full(12, 3.0), key=2) < expected_rank_correlation(
        values, some, key=2)


def test_decreases_as_the_stderr_grows():
    rng = np.random.default_rng(1)
    values = rng.normal(size=30)
    stderr = rng.uniform(0.5, 1.5, size=30)
    scales = [1e-4, 1e-2, 0.1, 0.5, 2.0, 20.0]
    rhos = [expected_rank_correlation(values, scale * stderr, key=9) for scale in scales]
    assert all(a > b for a, b in zip(rhos, rhos[1:])), rhos
    assert rhos[0] > 0.999 and rhos[-1] < 0.3


def test_invariant_to_a_common_shift_and_scale():
    rng = np.random.default_rng(2)
    values = rng.normal(size=40)
    stderr = rng.uniform(0.0, 0.4, size=40)
    reference = expected_rank_correlation(values, stderr, key=17)
    for shift, scale in ((-100.0, 1.0), (0.0, 3.7), (12.5, 1e-3), (-7.0, 250.0)):
        moved = expected_rank_correlation(scale * values + shift, scale * stderr, key=17)
        assert moved == pytest.approx(reference, abs=1e-12)
    assert reference < 1.0  # the invariance is not that of a trivial answer


@pytest.mark.parametrize("values, stderr", [
    (np.array([0.3, -1.2, 0.8, 2.0, 0.1, 0.0, -0.4, 1.1, 0.5]),
     np.array([0.2, 0.5, 0.0, 0.3, 0.4, 0.1, 0.6, 0.2, 0.3])),
    (np.array([1.0, 1.0, 2.0, 2.0, 3.0, 0.5]), np.array([0.0, 0.0, 0.8, 0.0, 0.5, 0.4])),  # ties kept
    (np.array([5.0, 4.0, 3.0]), np.array([1.0, 1.0, 1.0])),
])
def test_matches_scipy_spearman_on_the_same_draws(values, stderr):
    for key in (0, 31, 1000):
        assert expected_rank_correlation(values, stderr, key=key) == pytest.approx(
            brute_force(values, stderr, key), rel=1e-12, abs=1e-12)


def test_draws_are_fixed_per_key_and_ranked_in_chunks(monkeypatch):
    values, stderr = np.linspace(0, 1, 50), np.full(50, 0.05)
    first = expected_rank_correlation(values, stderr, key=3)
    assert expected_rank_correlation(values, stderr, key=3) == first  # a pure function
    assert not np.array_equal(rank_noise(4, 5, key=1), rank_noise(4, 5, key=2))
    import shapley_research.estimators._sampling._loop as sampling

    monkeypatch.setattr(sampling, "RANK_CHUNK_CELLS", 120)  # 2 draws per chunk instead of all 32
    assert expected_rank_correlation(values, stderr, key=3) == pytest.approx(first, abs=1e-12)


def test_all_tied_values_and_bad_arguments():
    # a ranking of all-tied values shares nothing with a draw that breaks the ties
    assert expected_rank_correlation(np.ones(6), np.full(6, 0.1)) == 0.0
    assert np.isnan(expected_rank_correlation([1.0, 2.0], [np.nan, 0.1]))  # never reaches a target
    assert np.isnan(expected_rank_correlation([np.inf, 2.0], [0.1, 0.1]))
    with pytest.raises(ValueError, match="same length"):
        expected_rank_correlation([1.0, 2.0], [0.1])
    with pytest.raises(ValueError, match="stderr must be >= 0"):
        expected_rank_correlation([1.0, 2.0], [0.1, -0.1])
    with pytest.raises(ValueError, match="n_draws must be >= 1"):
        expected_rank_correlation([1.0, 2.0], [0.1, 0.1], n_draws=0)


# --- runs that stop on it ---

# name -> (call(game, budget, **kwargs), fixed evaluations, evaluations per sample, batch size)
ESTIMATORS = {
    "permutation": (lambda g, b, **kw: sr.permutation_shapley(g, b, batch_size=1, **kw), 1, N, 1),
    "group_testing": (lambda g, b, **kw: sr.group_testing_shapley(g, b, batch_size=25, **kw), 2, 1, 25),
    "group_testing_paper": (lambda g, b, **kw: sr.group_testing_shapley(g, b, batch_size=25, variant="paper",
                                                                        **kw), 2, 1, 25),
    "compressive": (lambda g, b, **kw: sr.compressive_shapley(g, b, batch_size=1, **kw), 2, N, 1),
    "svarm": (lambda g, b, **kw: sr.stratified_svarm_shapley(g, b, batch_size=5, **kw), 2 * N + 2, 1, 5),
    "kernel": (lambda g, b, **kw: sr.unbiased_kernel_shapley(g, b, batch_size=5, **kw), 2, 2, 5),
    "owen": (lambda g, b, **kw: sr.owen_shapley(g, b, batch_size=5, n_bins=2, antithetic=True, **kw), 0, 2 * (N + 1),
             5),
    "kernel_regression": (lambda g, b, **kw: sr.kernel_shapley(g, b, batch_size=20, **kw), 2, 2, 20),
    "leverage": (lambda g, b, **kw: sr.leverage_shapley(g, b, batch_size=20, **kw), 2, 2, 20),
}


def criterion(result: sr.ValuationResult) -> float:
    """The expected rank correlation a run judged after its last batch."""
    if result.method == "compressive":  # judged on the sampled permutation estimate
        values, stderr = result.info["permutation_values"], result.info["permutation_stderr"]
    else:  # group testing 'paper': the closed-form recovery, which is what result.values holds here
        values, stderr = result.values, result.stderr
    count = result.state.count if result.state is not None else result.n_samples
    return expected_rank_correlation(values, stderr, key=count)


@pytest.mark.slow  # over a second
@pytest.mark.sampling  # a stopping rule watches the sampling, on a small game
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_stops_at_the_first_batch_that_reaches_the_target(name):
    call, fixed, per_sample, batch = ESTIMATORS[name]
    stopped = call(AIRPORT, None, seed=5, target_rank_correlation=TARGET)
    assert stopped.info["stopped_by"] == "target_rank_correlation"
    assert criterion(stopped) >= TARGET
    count = stopped.n_samples
    assert count >= MIN_SAMPLES_FOR_PRECISION + batch  # so the batch before could have stopped the run
    # the same run one batch shorter (a budget cap) has the same samples but a correlation below the target
    before = call(AIRPORT, fixed + per_sample * (count - batch), seed=5, target_rank_correlation=TARGET)
    assert before.info["stopped_by"] == "budget" and before.n_samples == count - batch
    assert criterion(before) < TARGET
    # a generous cap changes nothing: the run still stops on the ranking, with the same values
    capped = call(AIRPORT, fixed + per_sample * 10 * count, seed=5, target_rank_correlation=TARGET)
    assert capped.info["stopped_by"] == "target_rank_correlation"
    np.testing.assert_array_equal(capped.values, stopped.values)
    assert capped.n_evaluations == stopped.n_evaluations


def test_a_looser_target_stops_sooner_and_the_ranking_is_right():
    loose = sr.permutation_shapley(AIRPORT, None, seed=1, batch_size=1, target_rank_correlation=0.9)
    tight = sr.permutation_shapley(AIRPORT, None, seed=1, batch_size=1, target_rank_correlation=0.99)
    assert loose.n_samples < tight.n_samples
    assert spearmanr(tight.values, AIRPORT.shapley_values).statistic > 0.95


def test_either_target_stops_the_run():
    kwargs = dict(seed=2, batch_size=1)
    rank_only = sr.permutation_shapley(AIRPORT, None, target_rank_correlation=TARGET, **kwargs)
    both = sr.permutation_shapley(AIRPORT, None, target_rank_correlation=TARGET, target_stderr=1e-9, **kwargs)
    assert both.info["stopped_by"] == "target_rank_correlation"
    np.testing.assert_array_equal(both.values, rank_only.values)
    stderr_only = sr.permutation_shapley(AIRPORT, None, target_stderr=1.0, **kwargs)
    both = sr.permutation_shapley(AIRPORT, None, target_rank_correlation=0.99999, target_stderr=1.0, **kwargs)
    assert both.info["stopped_by"] == "target_stderr" and stderr_only.info["stopped_by"] == "target_stderr"
    assert both.n_samples == stderr_only.n_samples


def test_needs_enough_samples_before_stopping():
    """Zero variance gives a correlation of 1 at once; the run still takes 30 samples."""
    zero = sr.as_game(lambda masks: np.zeros(masks.shape[0]), 5, vectorized=True)
    result = sr.permutation_shapley(zero, None, seed=0, batch_size=1, target_rank_correlation=1.0)
    assert result.n_samples == MIN_SAMPLES_FOR_PRECISION
    assert result.info["stopped_by"] == "target_rank_correlation"


@pytest.mark.parametrize("name", ["permutation", "group_testing"])
def test_same_stop_for_any_n_jobs(name):
    from joblib import parallel_config

    call = ESTIMATORS[name][0]
    sequential = call(AIRPORT, None, seed=7, target_rank_correlation=TARGET)
    with parallel_config(backend="threading"):
        parallel = call(AIRPORT, None, seed=7, target_rank_correlation=TARGET, n_jobs=2)
    np.testing.assert_array_equal(parallel.values, sequential.values)
    np.testing.assert_array_equal(parallel.stderr, sequential.stderr)
    assert (parallel.n_evaluations, parallel.n_samples) == (sequential.n_evaluations, sequential.n_samples)
    assert parallel.info["stopped_by"] == sequential.info["stopped_by"] == "target_rank_correlation"


@pytest.mark.parametrize("name", ["permutation", "group_testing_paper", "svarm"])
def test_interrupted_then_resumed_equals_uninterrupted(name, tmp_path):
    call = ESTIMATORS[name][0]
    path = tmp_path / "rank.ckpt"
    full_game = CountingGame(AIRPORT)
    full = call(full_game, None, seed=3, target_rank_correlation=TARGET)
    after = min(15, full_game.calls - 2)  # before the last batch, however soon the run meets the target
    with pytest.raises(Interrupted):
        call(InterruptingGame(AIRPORT, after=after), None, seed=3, target_rank_correlation=TARGET,
             checkpoint=path, checkpoint_interval=3600)
    counting = CountingGame(AIRPORT)
    resumed = call(counting, None, seed=3, target_rank_correlation=TARGET, checkpoint=path)
    assert 0 < resumed.info["resumed_samples"] < full.n_samples
    np.testing.assert_array_equal(resumed.values, full.values)
    np.testing.assert_array_equal(resumed.stderr, full.stderr)
    assert (resumed.n_evaluations, resumed.n_samples) == (full.n_evaluations, full.n_samples)
    assert resumed.info["stopped_by"] == full.info["stopped_by"] == "target_rank_correlation"
    # the finished file is a stopped run: calling again evaluates nothing and stops at once
    again = CountingGame(AIRPORT)
    done = call(again, None, seed=3, target_rank_correlation=TARGET, checkpoint=path)
    assert again.rows == 0 and done.info["stopped_by"] == "target_rank_correlation"
    np.testing.assert_array_equal(done.values, full.values)


def test_run_sampling_judges_estimates_of():
    """The criterion ranks the values of ``estimates_of(state)`` (default: the mean) with the standard errors."""
    def batch(rng, size):
        return rng.normal(loc=0.1 * np.arange(6), scale=0.5, size=(size, 6)), size

    common = dict(dim=6, n_units=None, batch_size=10, entropy=1, progress=False, target_rank_correlation=0.99)
    plain = run_sampling(batch, **common)
    assert plain.stopped_by == "target_rank_correlation"
    assert expected_rank_correlation(plain.state.mean, plain.state.stderr, key=plain.state.count) >= 0.99
    assert plain.state.count > 100
    seen = []

    def spread(state):  # values far apart next to their errors: stable from the first allowed batch
        seen.append(state.count)
        return 100.0 * np.arange(6)

    estimates_of = lambda state: (spread(state), state.stderr)
    assert run_sampling(batch, estimates_of=estimates_of, **common).state.count == MIN_SAMPLES_FOR_PRECISION
    assert seen == [MIN_SAMPLES_FOR_PRECISION], "judged once per batch, and only from 30 samples on"


def test_progress_bar_shows_the_expected_correlation(capsys):
    import time

    def slow(rng, size):
        time.sleep(0.12)  # past tqdm's minimum refresh interval
        return rng.normal(size=(size, 4)), size

    run_sampling(slow, dim=4, n_units=4, batch_size=1, entropy=0, progress=True, target_rank_correlation=0.9)
    assert "rank_corr=" in capsys.readouterr().err


def test_budget_none_is_allowed_with_a_rank_target_only():
    uncapped = sr.permutation_shapley(AIRPORT, None, seed=0, batch_size=1, target_rank_correlation=0.9)
    assert uncapped.info["stopped_by"] == "target_rank_correlation"
    with pytest.raises(TypeError, match="only together with target_stderr or target_rank_correlation"):
        sr.permutation_shapley(AIRPORT, None, seed=0, batch_size=1)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("bad, error, match", [
    (0.0, ValueError, r"target_rank_correlation must be in \(0, 1\]"),
    (-0.5, ValueError, r"target_rank_correlation must be in \(0, 1\]"),
    (1.0001, ValueError, r"target_rank_correlation must be in \(0, 1\]"),
    (float("nan"), ValueError, "target_rank_correlation must be finite"),
    (float("inf"), ValueError, "target_rank_correlation must be finite"),
    (True, TypeError, "target_rank_correlation must be a real number"),
    ("0.9", TypeError, "target_rank_correlation must be a real number"),
    ([0.9], TypeError, "target_rank_correlation must be a real number"),
])
def test_bad_target_is_rejected_before_evaluating(name, bad, error, match):
    counting = CountingGame(AIRPORT)
    with pytest.raises(error, match=match):
        ESTIMATORS[name][0](counting, None, seed=0, target_rank_correlation=bad)
    assert counting.rows == 0
