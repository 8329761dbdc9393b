"""The shared sampling machinery: running statistics, seeding, sample distributions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from games import CountingGame, MajorityGame, UnanimityGame
from shapley_research import group_testing_shapley
from shapley_research.estimators import batch_rng
from shapley_research.estimators._sampling._loop import (MeanState, aux_rng, default_batch_size, evaluate_coalitions,
                                                         run_sampling, units_from_budget)
from shapley_research.games import prefix_masks
from shapley_research.estimators import group_testing_size_distribution
from shapley_research.estimators import random_permutations

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off

# --- MeanState ---


def test_mean_state_matches_numpy():
    rng = np.random.default_rng(0)
    sizes = [1, 7, 0, 30, 2, 1, 64]
    batches = [rng.normal(3.0, 2.0, size=(b, 4)) for b in sizes]
    state = MeanState(4)
    for batch in batches:
        state.add_batch(batch)
    everything = np.concatenate(batches)
    assert state.count == everything.shape[0]
    np.testing.assert_allclose(state.mean, everything.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(state.variance, everything.var(axis=0, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(state.stderr, np.sqrt(everything.var(axis=0, ddof=1) / everything.shape[0]),
                               rtol=1e-12)


def test_merge_of_separate_states():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(13, 3)), rng.normal(5.0, 0.1, size=(29, 3))
    left, right, whole = MeanState(3), MeanState(3), MeanState(3)
    left.add_batch(a)
    right.add_batch(b)
    whole.add_batch(np.concatenate([a, b]))
    left.merge(right)
    np.testing.assert_allclose(left.mean, whole.mean, rtol=1e-13)
    np.testing.assert_allclose(left.m2, whole.m2, rtol=1e-12)
    assert left.count == 42


def test_merge_with_empty_states_and_no_aliasing():
    rng = np.random.default_rng(2)
    full = MeanState(2)
    full.add_batch(rng.normal(size=(5, 2)))
    empty = MeanState(2)
    empty.merge(full)  # copies
    full.add_batch(rng.normal(size=(5, 2)))
    assert empty.count == 5 and full.count == 10
    before = empty.mean.copy()
    empty.merge(MeanState(2))  # merging nothing changes nothing
    np.testing.assert_array_equal(empty.mean, before)
    with pytest.raises(ValueError, match="dimension"):
        empty.merge(MeanState(3))


def test_variance_needs_two_samples():
    state = MeanState(2)
    assert np.isnan(state.variance).all()
    state.add_batch(np.ones((1, 2)))
    assert np.isnan(state.variance).all()
    state.add_batch(np.zeros((1, 2)))
    np.testing.assert_allclose(state.variance, 0.5)


def test_mean_state_is_stable_with_a_large_offset():
    rng = np.random.default_rng(3)
    data = 1e9 + rng.normal(size=(10_000, 1))
    state = MeanState(1)
    for chunk in np.array_split(data, 37):
        state.add_batch(chunk)
    np.testing.assert_allclose(state.variance, (data - 1e9).var(ddof=1), rtol=1e-6)


# --- seeding ---

def test_batch_streams():
    draw = lambda rng: rng.random(5)  # noqa: E731
    np.testing.assert_array_equal(draw(batch_rng(42, 3)), draw(batch_rng(42, 3)))
    assert not np.array_equal(draw(batch_rng(42, 3)), draw(batch_rng(42, 4)))
    assert not np.array_equal(draw(batch_rng(42, 3)), draw(batch_rng(43, 3)))
    assert not np.array_equal(draw(batch_rng(42, 0)), draw(aux_rng(42, 0)))
    assert not np.array_equal(draw(aux_rng(42, 0)), draw(aux_rng(42, 1)))


def _uniform_batch(rng, size):
    return rng.random((size, 3)), 2 * size


def test_run_sampling_is_the_mean_of_the_batch_streams():
    outcome = run_sampling(_uniform_batch, dim=3, n_units=10, batch_size=4, entropy=7, progress=False)
    state, evaluations = outcome.state, outcome.n_evaluations
    manual = np.concatenate([batch_rng(7, b).random((size, 3)) for b, size in enumerate([4, 4, 2])])
    assert state.count == 10 and evaluations == 20
    np.testing.assert_allclose(state.mean, manual.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(state.variance, manual.var(axis=0, ddof=1), rtol=1e-12)


def test_run_sampling_independent_of_n_jobs():
    """Batches are merged in batch order whatever finishes first. (Threads keep this
    cheap; test_estimators runs the estimators on joblib's default process backend.)"""
    from joblib import parallel_config

    kwargs = dict(dim=3, n_units=50, batch_size=6, entropy=11, progress=False)
    one = run_sampling(_uniform_batch, n_jobs=1, **kwargs).state
    with parallel_config(backend="threading"):
        two = run_sampling(_uniform_batch, n_jobs=2, **kwargs).state
    np.testing.assert_array_equal(one.mean, two.mean)
    np.testing.assert_array_equal(one.m2, two.m2)


def test_default_batch_size_and_units():
    for n in (1, 10, 1000, 10**6):
        for per in (1, n, 2 * n):
            size = default_batch_size(n, per)
            assert 1 <= size and size * per <= max(4096, per)
    assert units_from_budget(101, 1, 10, "permutation") == 10
    assert units_from_budget(110, 1, 10, "permutation") == 10
    with pytest.raises(ValueError, match="budget=10 is smaller than one permutation"):
        units_from_budget(10, 1, 10, "permutation")


def test_evaluate_coalitions_skips_known_anchors():
    game = CountingGame(MajorityGame(4, 2))
    masks = np.array([[0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], dtype=bool)
    values, made = evaluate_coalitions(game, masks, empty_utility=-1.0, full_utility=7.0)
    np.testing.assert_array_equal(values, [-1.0, 1.0, 7.0, 0.0])
    assert made == game.rows == 2 and game.empty_rows == 0 and game.full_rows == 0
    values, made = evaluate_coalitions(game, masks, empty_utility=-1.0)
    np.testing.assert_array_equal(values, [-1.0, 1.0, 1.0, 0.0])
    assert made == 3


# --- sample distributions ---

def test_random_permutations_are_uniform():
    perms = random_permutations(np.random.default_rng(0), 6000, 4)
    assert (np.sort(perms, axis=1) == np.arange(4)).all()
    # all 24 orders about equally often
    _, counts = np.unique(perms @ (4 ** np.arange(4)), return_counts=True)
    assert counts.size == 24
    assert stats.chisquare(counts).pvalue > 1e-3


def test_prefix_masks():
    perms = np.array([[2, 0, 1], [1, 2, 0]])
    expected = np.array([[0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 0], [0, 1, 1], [1, 1, 1]], dtype=bool)
    np.testing.assert_array_equal(prefix_masks(perms), expected)


def test_group_testing_size_distribution():
    for p in (2, 5, 40):
        sizes, q, z = group_testing_size_distribution(p)
        np.testing.assert_array_equal(sizes, np.arange(1, p))
        assert z == pytest.approx(2 * sum(1 / k for k in range(1, p)))
        np.testing.assert_allclose(q, (1 / sizes + 1 / (p - sizes)) / z)
        assert q.sum() == pytest.approx(1.0)


class SizeRecorder(CountingGame):
    def __init__(self, game):
        super().__init__(game)
        self.sizes = []

    def _evaluate(self, masks):
        self.sizes.append(masks.sum(axis=1))
        return super()._evaluate(masks)


@pytest.mark.parametrize("variant", ["paper", "improved"])
def test_group_testing_draws_sizes_from_q(variant):
    """Algorithm 1 evaluates coalitions of size k ~ q(k), k = 1..N-1. The improved
    variant draws k ~ q among N+1 players, so the evaluated coalition has size k,
    or k-1 when the null player is drawn (probability k/(N+1)); sizes 0 and N are
    the anchors U(empty), U(D) and are not evaluated again."""
    n, tests = 8, 20_000
    recorder = SizeRecorder(UnanimityGame(n, [[0, 1]], [1.0]))
    group_testing_shapley(recorder, tests + 2, seed=0, variant=variant)
    observed = np.bincount(np.concatenate(recorder.sizes[1:]), minlength=n + 1)  # after the anchors
    expected = np.zeros(n + 1)
    if variant == "paper":
        k, q, _ = group_testing_size_distribution(n)
        expected[k] = q
    else:
        k, q, _ = group_testing_size_distribution(n + 1)
        expected[k] += q * (1 - k / (n + 1))
        expected[k - 1] += q * k / (n + 1)
    assert observed[0] == observed[n] == 0
    skipped = tests - observed.sum()  # tests answered by an anchor
    assert skipped == pytest.approx(tests * (expected[0] + expected[n]), rel=0.15, abs=0)
    inner = expected[1:n] / expected[1:n].sum()
    assert stats.chisquare(observed[1:n], inner * observed.sum()).pvalue > 1e-3
