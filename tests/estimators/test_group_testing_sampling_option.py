"""``group_testing_shapley(sampling=...)``: Algorithm 1's independent tests, or this package's refinement.

``sampling="independent"`` draws every test afresh, as Algorithm 1 of the paper is published: sizes i.i.d. from
:math:`q(k) \\propto 1/k + 1/(P-k)`, each coalition uniform among those of its size and independent of the
others, so coalitions repeat. ``"without_replacement"`` (the default) reads the coalitions of each size along
random orders up to 22 players. These tests check that the independent tests have Algorithm 1's joint law
(chi-square tests, each run once with a fixed seed), that the default is unchanged, and that the option is
validated and recorded.
"""

from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np
import pytest
from scipy import stats

import shapley_research as sr
from shapley_research.estimators import group_testing_size_distribution
from shapley_research.estimators._sampling import _without_replacement as wor
from games import RecordingGame, UnanimityGame, random_unanimity_game

pytestmark = pytest.mark.sampling  # small games, sampled: the exact shortcut stays off

P_VALUE = 1e-4
GAME5 = UnanimityGame(5, [[0, 1], [2], [1, 3, 4]], [1.0, 2.0, 0.5])


def _tests(sampling: str, n_tests: int, seed: int = 0, variant: str = "paper", game=GAME5) -> np.ndarray:
    """The coalitions the tests evaluated, in order (the anchors' call left out)."""
    recording = RecordingGame(game)
    result = sr.group_testing_shapley(recording, 2 + n_tests, seed=seed, variant=variant, sampling=sampling,
                                      batch_size=1000, progress=False)
    assert result.info["sampling"] == sampling
    return np.concatenate(recording.masks[1:])


def _codes(masks: np.ndarray) -> np.ndarray:
    return masks.astype(np.int64) @ (1 << np.arange(masks.shape[1]))


@pytest.mark.parametrize("sampling", ["stratified", "", None, 1, ["independent"], "Independent"])
def test_sampling_is_validated_by_name(sampling):
    game = RecordingGame(GAME5)
    with pytest.raises(ValueError, match=r"sampling must be one of \['independent', 'without_replacement'\]"):
        sr.group_testing_shapley(game, 40, seed=0, sampling=sampling)
    assert game.masks == []  # refused before any evaluation


@pytest.mark.parametrize("variant", ["paper", "improved"])
def test_independent_is_the_with_replacement_path_bit_for_bit(variant, monkeypatch):
    """``"independent"`` at N = 9 draws what every game drew before strata were read without replacement."""
    game = random_unanimity_game(9, n_terms=5, max_size=3, seed=4)
    independent = sr.group_testing_shapley(game, 600, seed=3, variant=variant, sampling="independent")
    assert independent.info["without_replacement"] == []
    default = sr.group_testing_shapley(game, 600, seed=3, variant=variant)
    assert default.info["sampling"] == "without_replacement" and default.info["without_replacement"]
    assert not np.array_equal(default.values, independent.values)
    monkeypatch.setattr(wor, "MAX_STRATUM", 0)
    with_replacement = sr.group_testing_shapley(game, 600, seed=3, variant=variant)
    np.testing.assert_array_equal(independent.values, with_replacement.values)
    np.testing.assert_array_equal(independent.stderr, with_replacement.stderr)


@pytest.mark.parametrize("variant", ["paper", "improved"])
def test_both_options_draw_independently_beyond_22_players(variant):
    game = random_unanimity_game(30, n_terms=5, max_size=3, seed=5)
    a, b = (sr.group_testing_shapley(game, 300, seed=1, variant=variant, sampling=s)
            for s in ("independent", "without_replacement"))
    assert a.info["without_replacement"] == b.info["without_replacement"] == []
    np.testing.assert_array_equal(a.values, b.values)


def test_independent_sizes_follow_q():
    """Algorithm 1 (P = N = 5): the sizes of 20,000 tests against q(k) = (1/k + 1/(N-k)) / Z."""
    tests = _tests("independent", 20_000)
    sizes, q, _ = group_testing_size_distribution(5)
    counts = np.bincount(tests.sum(axis=1), minlength=5)[1:]
    assert counts.sum() == 20_000
    assert stats.chisquare(counts, q * 20_000).pvalue > P_VALUE


def test_improved_independent_sizes_follow_q_over_n_plus_one_players():
    """Wang & Jia (P = N + 1 = 6, a null player): a test of size k holds the null player w.p. k / P, so the
    coalition evaluated has j players w.p. q(j)(1 - j/P) + q(j+1)(j+1)/P (j = 1..N-1 are evaluated)."""
    n_tests = 20_000
    tests = _tests("independent", n_tests, variant="improved")
    _, q, _ = group_testing_size_distribution(6)
    q = np.concatenate([[0.0], q, [0.0]])  # q[k] for k = 0..6
    j = np.arange(1, 5)
    law = q[j] * (1 - j / 6) + q[j + 1] * (j + 1) / 6
    counts = np.bincount(tests.sum(axis=1), minlength=5)[1:]
    assert counts.sum() < n_tests  # sizes 0 and N are anchors, not evaluated again
    assert stats.chisquare(counts, law / law.sum() * counts.sum()).pvalue > P_VALUE


@pytest.mark.parametrize("size", [1, 2, 3])
def test_independent_coalitions_are_uniform_within_a_size(size):
    tests = _tests("independent", 20_000)
    codes = _codes(tests[tests.sum(axis=1) == size])
    index = {sum(1 << i for i in c): j for j, c in enumerate(combinations(range(5), size))}
    counts = np.bincount([index[c] for c in codes.tolist()], minlength=comb(5, size))
    assert stats.chisquare(counts).pvalue > P_VALUE


def test_independent_tests_repeat_coalitions_and_pairs_are_independent():
    """Consecutive size-1 tests, paired: uniform over all 5 x 5 pairs, repeats included, when independent;
    without replacement a pass never repeats a coalition, so the diagonal is (nearly) empty and the
    same chi-square rejects."""
    pairs, repeats = {}, {}
    for sampling in ("independent", "without_replacement"):
        tests = _tests(sampling, 20_000)
        ones = _codes(tests[tests.sum(axis=1) == 1])
        player = np.log2(ones).astype(int)[: 2 * (ones.size // 2)].reshape(-1, 2)
        pairs[sampling] = stats.chisquare(np.bincount(5 * player[:, 0] + player[:, 1], minlength=25)).pvalue
        first = ones[:5]  # the first C(5, 1) tests of size 1: one pass without replacement
        repeats[sampling] = 5 - np.unique(first).size
    assert pairs["independent"] > P_VALUE and pairs["without_replacement"] < P_VALUE
    assert repeats["without_replacement"] == 0


def test_independent_coalitions_repeat_within_a_stratum_as_with_replacement_draws_do():
    """Blocks of C(5, 2) = 10 consecutive size-2 tests hold C(1 - (1 - 1/C)^C) = 6.5 distinct coalitions on
    average when drawn independently, all 10 when drawn without replacement."""
    distinct = {}
    for sampling in ("independent", "without_replacement"):
        tests = _tests(sampling, 20_000)
        codes = _codes(tests[tests.sum(axis=1) == 2])
        blocks = codes[: 10 * (codes.size // 10)].reshape(-1, 10)
        distinct[sampling] = np.mean([np.unique(b).size for b in blocks])
    assert abs(distinct["independent"] - 10 * (1 - 0.9**10)) < 0.2
    assert distinct["without_replacement"] == 10


@pytest.mark.parametrize("variant", ["paper", "improved"])
def test_independent_stays_unbiased(variant):
    game = random_unanimity_game(7, n_terms=6, max_size=4, seed=2)
    values = np.array([sr.group_testing_shapley(game, 150, seed=s, variant=variant, sampling="independent").values
                       for s in range(150)])
    error = values.mean(axis=0) - game.shapley_values
    assert (np.abs(error) < 4 * values.std(axis=0) / np.sqrt(len(values))).all()


def test_merged_runs_list_how_each_drew_its_tests():
    game = random_unanimity_game(7, n_terms=6, max_size=4, seed=2)
    a = sr.group_testing_shapley(game, 200, seed=1, sampling="independent")
    b = sr.group_testing_shapley(game, 200, seed=2)
    merged = sr.merge_results(a, b)
    assert merged.info["sampling"] == ["independent", "without_replacement"]
    same = sr.merge_results(a, sr.group_testing_shapley(game, 200, seed=3, sampling="independent"))
    assert same.info["sampling"] == "independent"
