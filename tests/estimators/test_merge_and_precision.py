"""Merging runs (more samples, smaller error) and stopping at a target standard error."""

from __future__ import annotations

import numpy as np
import pytest

import shapley_research as sr
from games import CountingGame, WeightedVotingGame, relative_l2

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off

GAME = WeightedVotingGame([4, 3, 3, 2, 2, 1, 1, 1], quota=9)
N = GAME.n_players
EXACT = sr.exact_shapley(GAME).values


# --- merging ---

ONE_SAMPLE = {  # budgets that buy exactly one sample, so each run's values are that sample
    "permutation": lambda seed: sr.permutation_shapley(GAME, 1 + N, seed=seed),
    "group_testing[improved]": lambda seed: sr.group_testing_shapley(GAME, 3, seed=seed),
}


@pytest.mark.parametrize("method", sorted(ONE_SAMPLE))
def test_merged_statistics_are_the_pooled_statistics_of_all_samples(method):
    runs = [ONE_SAMPLE[method](seed) for seed in range(40)]
    samples = np.array([run.values for run in runs])
    merged = sr.merge_results(*runs)
    np.testing.assert_allclose(merged.values, samples.mean(axis=0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(merged.stderr, samples.std(axis=0, ddof=1) / np.sqrt(40), rtol=1e-10, atol=1e-15)
    assert merged.n_samples == 40 and merged.n_evaluations == sum(r.n_evaluations for r in runs)
    assert merged.method == method and merged.seed is None and merged.info["seeds"] == list(range(40))
    # merging is associative: two halves merged, then merged, give the same
    halves = sr.merge_results(sr.merge_results(*runs[:20]), sr.merge_results(*runs[20:]))
    np.testing.assert_allclose(halves.values, merged.values, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(halves.stderr, merged.stderr, rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("variant", ["improved", "paper"])
def test_two_half_budget_runs_merge_into_a_full_run(variant):
    """Same statistics as one run over both halves' samples: count, budget, and error of a full run."""
    half = [sr.group_testing_shapley(GAME, 2 + 20_000, seed=s, variant=variant) for s in (1, 2)]
    merged = half[0].merge(half[1])
    state = type(half[0].state)(N)
    for run in half:
        state.merge(run.state)
    np.testing.assert_array_equal(merged.state.mean, state.mean)
    assert merged.n_samples == 40_000 and merged.n_evaluations == half[0].n_evaluations + half[1].n_evaluations
    np.testing.assert_allclose(merged.stderr, half[0].stderr / np.sqrt(2), rtol=0.1)
    full = sr.group_testing_shapley(GAME, 2 + 40_000, seed=3, variant=variant)
    errors = [relative_l2(r.values, EXACT) for r in (merged, full)]
    assert errors[0] < 2.5 * errors[1] + 0.02 and errors[0] < relative_l2(half[0].values, EXACT) * 2
    if variant == "paper":  # recovered from the merged contrasts: efficiency holds
        assert merged.values.sum() == pytest.approx(GAME.evaluate(np.ones((1, N), bool))[0], abs=1e-9)


def test_merge_refuses_what_would_be_wrong():
    a = sr.permutation_shapley(GAME, 1 + 10 * N, seed=1)
    with pytest.raises(ValueError, match="share a seed"):
        sr.merge_results(a, sr.permutation_shapley(GAME, 1 + 10 * N, seed=1))
    with pytest.raises(ValueError, match="options"):
        sr.merge_results(a, sr.permutation_shapley(GAME, 1 + 20 * N, seed=2, antithetic=True))
    with pytest.raises(ValueError, match="is a 'group_testing"):
        sr.merge_results(a, sr.group_testing_shapley(GAME, 100, seed=2))
    with pytest.raises(ValueError, match="different games"):
        sr.merge_results(a, sr.permutation_shapley(GAME, 1 + 10 * N, seed=2, empty_utility=1.0))
    with pytest.raises(ValueError, match="cannot be merged"):
        sr.merge_results(sr.exact_shapley(GAME), sr.exact_shapley(GAME))
    with pytest.raises(ValueError, match="cannot be merged"):
        sr.merge_results(sr.compressive_shapley(GAME, 2 + 10 * N, seed=1),
                         sr.compressive_shapley(GAME, 2 + 10 * N, seed=2))
    with pytest.raises(TypeError, match=r"results\[1\] must be a ValuationResult"):
        sr.merge_results(a, a.values)
    with pytest.raises(ValueError, match="at least one"):
        sr.merge_results()


MERGEABLE = {
    "permutation": lambda game, seed: sr.permutation_shapley(game, 1 + 20 * N, seed=seed),
    "msr_banzhaf": lambda game, seed: sr.msr_banzhaf(game, 200, seed=seed),
    "group_testing": lambda game, seed: sr.group_testing_shapley(game, 200, seed=seed),
    "svarm": lambda game, seed: sr.stratified_svarm_shapley(game, 200, seed=seed),
    "kernel": lambda game, seed: sr.unbiased_kernel_shapley(game, 200, seed=seed),
    "owen": lambda game, seed: sr.owen_shapley(game, 200, seed=seed),
    "kernel_regression": lambda game, seed: sr.kernel_shapley(game, 200, seed=seed),
    "leverage": lambda game, seed: sr.leverage_shapley(game, 200, seed=seed),
    "beta_shapley": lambda game, seed: sr.beta_shapley(game, 300, seed=seed),
}


@pytest.mark.parametrize("name", sorted(MERGEABLE))
def test_runs_of_another_game_with_the_same_anchors_are_refused(name):
    """Two voting games of one size, both with U(empty) = 0 and U(D) = 1: only the games' own fingerprints
    (their weights and quota) tell them apart; the same game built again merges."""
    run = MERGEABLE[name]
    other = WeightedVotingGame([4, 3, 3, 2, 2, 1, 1, 1], quota=12)
    first = run(GAME, 1)
    with pytest.raises(ValueError, match="runs of different games cannot be merged"):
        sr.merge_results(first, run(other, 2))
    rebuilt = WeightedVotingGame([4, 3, 3, 2, 2, 1, 1, 1], quota=9)
    assert sr.merge_results(first, run(rebuilt, 2)).n_samples == first.n_samples + run(GAME, 2).n_samples


def test_model_utilities_differing_only_in_the_model_are_refused():
    """The pair the probe found: one data set, LogisticRegression(C=1) against C=1e-4 (the same U(empty))."""
    from sklearn.linear_model import LogisticRegression

    X, y = np.random.default_rng(0).normal(size=(40, 3)), np.arange(40) % 2
    build = lambda C: sr.ModelUtility(LogisticRegression(C=C), X[:30], y[:30], X[30:], y[30:])  # noqa: E731
    first = sr.permutation_shapley(build(1.0), 301, seed=0)
    with pytest.raises(ValueError, match="runs of different games cannot be merged"):
        sr.merge_results(first, sr.permutation_shapley(build(1e-4), 301, seed=1))
    assert sr.merge_results(first, sr.permutation_shapley(build(1.0), 301, seed=1)).n_samples == 20


# --- stopping at a target standard error ---


@pytest.mark.parametrize("run, fixed, per_sample", [
    (lambda **kw: sr.permutation_shapley(GAME, batch_size=4, **kw), 1, N),
    (lambda **kw: sr.group_testing_shapley(GAME, batch_size=200, **kw), 2, 1),
    (lambda **kw: sr.compressive_shapley(GAME, batch_size=4, **kw), 2, N),
], ids=["permutation", "group_testing", "compressive"])
def test_stops_as_soon_as_the_target_standard_error_is_reached(run, fixed, per_sample):
    loose, tight = (run(budget=None, seed=0, target_stderr=t) for t in (0.02, 0.01))
    for result, target in ((loose, 0.02), (tight, 0.01)):
        assert result.info["stopped_by"] == "target_stderr"
        stderr = result.stderr if result.stderr is not None else result.info["permutation_stderr"]
        assert stderr.max() <= target
    assert loose.n_evaluations < tight.n_evaluations  # roughly four times fewer
    # the stop is at the first batch that reaches the target: one batch less would not
    batch = loose.info["batch_size"]
    fewer = run(budget=fixed + per_sample * (loose.n_samples - batch), seed=0, target_stderr=0.02)
    assert fewer.info["stopped_by"] == "budget"
    estimate = tight.info.get("permutation_values", tight.values)  # compressive: the sampled estimate
    assert np.abs(estimate - EXACT).max() < 5 * 0.01


def test_budget_caps_a_precision_run_and_results_do_not_depend_on_n_jobs():
    from joblib import parallel_config

    capped = sr.permutation_shapley(GAME, 1 + 50 * N, seed=1, target_stderr=1e-6, batch_size=5)
    assert capped.info["stopped_by"] == "budget" and capped.n_samples == 50
    sequential = sr.permutation_shapley(GAME, None, seed=1, target_stderr=0.02, batch_size=5)
    with parallel_config(backend="threading"):
        parallel = sr.permutation_shapley(GAME, None, seed=1, target_stderr=0.02, batch_size=5, n_jobs=2)
    np.testing.assert_array_equal(parallel.values, sequential.values)
    assert parallel.n_evaluations == sequential.n_evaluations


def test_precision_needs_enough_samples_before_stopping():
    """A constant game has zero variance at once; the run still takes 30 samples, not 2."""
    zero = sr.as_game(lambda masks: np.zeros(masks.shape[0]), 5, vectorized=True)
    counting = CountingGame(zero)
    result = sr.permutation_shapley(counting, None, seed=0, target_stderr=0.1, batch_size=1)
    assert result.n_samples == 30 and result.info["stopped_by"] == "target_stderr"


@pytest.mark.parametrize("bad, error, match", [
    (0.0, ValueError, "target_stderr must be > 0"),
    (-1.0, ValueError, "target_stderr must be > 0"),
    (float("nan"), ValueError, "target_stderr must be finite"),
    ("0.1", TypeError, "target_stderr must be a real number"),
])
def test_bad_target_stderr(bad, error, match):
    with pytest.raises(error, match=match):
        sr.permutation_shapley(GAME, 1000, seed=0, target_stderr=bad)


def test_budget_none_needs_a_target():
    with pytest.raises(TypeError, match="budget must be an integer.*only together with target_stderr "
                                        "or target_rank_correlation"):
        sr.group_testing_shapley(GAME, None, seed=0)
    ranked = sr.group_testing_shapley(GAME, None, seed=0, batch_size=200, target_rank_correlation=0.8)
    assert ranked.info["stopped_by"] == "target_rank_correlation"


def _linear_game(weights):
    """A game made by a factory: every game it makes is the same function over other closed-over weights."""
    return sr.as_game(lambda masks: masks @ weights, len(weights), vectorized=True)


@pytest.mark.parametrize("name", ["permutation", "msr_banzhaf"])
def test_function_games_of_one_factory_are_told_apart(name):
    """Permutation and MSR runs record no U(D), so only the function's fingerprint (its code and the values it
    closes over) separates these two games; the same factory call again merges."""
    run = MERGEABLE[name]
    weights = np.arange(8.0)
    first = run(_linear_game(weights), 1)
    with pytest.raises(ValueError, match="runs of different games cannot be merged"):
        sr.merge_results(first, run(_linear_game(weights[::-1].copy()), 2))
    assert sr.merge_results(first, run(_linear_game(weights.copy()), 2)).n_samples > first.n_samples


def test_function_fingerprints_follow_code_and_closed_over_values():
    def scaled(c):
        return sr.as_game(lambda masks: c * masks.sum(axis=1), 6, vectorized=True)

    assert scaled(1.0).fingerprint() == scaled(1.0).fingerprint() != scaled(2.0).fingerprint()
    plain = sr.as_game(lambda masks: masks.sum(axis=1), 6, vectorized=True)
    doubled = sr.as_game(lambda masks: 2.0 * masks.sum(axis=1), 6, vectorized=True)
    assert plain.fingerprint() != doubled.fingerprint()
    # an object without a fingerprint is known by its type only: the digest stays the same across processes
    holder = object()
    opaque = sr.as_game(lambda masks: masks.sum(axis=1) + 0 * id(holder), 6, vectorized=True)
    assert opaque.fingerprint() == sr.as_game(lambda masks: masks.sum(axis=1) + 0 * id(holder), 6,
                                              vectorized=True).fingerprint()


def test_a_function_fingerprint_is_the_same_in_every_process():
    """A set literal compiles to a frozenset constant, whose order follows string hashing (random per process):
    the digest sorts it, or a checkpoint of the game would be refused after a restart."""
    import os
    import subprocess
    import sys

    script = ("import numpy as np\n"
              "from shapley_research.games import as_game  # the games alone: a second, not three\n"
              "w = np.arange(6.0)\n"
              "g = as_game(lambda m: (m @ w) * (1.0 if 'a' in {'a', 'b', 'c', 'dd'} else 2.0), 6, vectorized=True)\n"
              "print(g.fingerprint())\n")
    digests = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
               for seed in (1, 2, 3)}
    assert len(digests) == 1
