"""Planning and memory stay O(N) at the sizes the package is for (issue 25, item 1).

The planner of the without-replacement strata once computed ``math.comb(N, k)``
for every size ``k``: about N^3 work (19 s at N = 10,000, hours at 10^5) before
any coalition was evaluated. These tests count operations rather than time
them: the binomials computed, and the mask cells handed to one ``evaluate``.
"""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

import shapley_research as sr
from shapley_research.estimators import _beta_shapley
from shapley_research.estimators._sampling import _without_replacement as wor
from shapley_research.games import _base, evaluate_prefixes

from games import random_unanimity_game


class CountingComb:
    """Stands in for ``math.comb`` in a module and counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, n, k):
        self.calls += 1
        return comb(n, k)


class CellRecordingGame(sr.Game):
    """A game that records the shape of every mask matrix it evaluates.

    Each row is reduced on its own (no BLAS product, whose rounding may depend
    on how many rows one call holds), so chunked and whole evaluations agree
    bit for bit.
    """

    def __init__(self, n_players: int, seed: int = 0):
        self.n_players = n_players
        self.weights = np.random.default_rng(seed).normal(size=n_players)
        self.shapes: list[tuple[int, int]] = []

    def _evaluate(self, masks):
        self.shapes.append(masks.shape)
        return (masks * self.weights).sum(axis=1) + np.sqrt(masks.sum(axis=1))


@pytest.mark.parametrize("n", [*range(0, 48), 100, 1447, 1448, 1449, 1450, 3000])
def test_the_small_strata_are_those_of_at_most_max_stratum_coalitions(n):
    levels = list(range(-2, n + 3))
    expected = [k for k in levels if 0 <= k <= n and comb(n, k) <= wor.MAX_STRATUM]
    assert wor.without_replacement_sizes(n, levels) == expected


def test_switching_the_strata_off_leaves_none(monkeypatch):
    monkeypatch.setattr(wor, "MAX_STRATUM", 0)
    assert wor.without_replacement_sizes(10, range(11)) == []


def test_choosing_the_strata_at_a_hundred_thousand_players_computes_no_binomial(monkeypatch):
    counter = CountingComb()
    monkeypatch.setattr(wor, "comb", counter)
    n = 100_000
    assert wor.without_replacement_sizes(n, np.arange(n + 1)) == [0, 1, n - 1, n]
    assert counter.calls == 0
    assert wor.small_stratum_reach(n) == 1 and wor.small_stratum_reach(10**12) == 0


@pytest.mark.parametrize("variant", ["improved", "paper"])
def test_group_testing_at_a_hundred_thousand_players_plans_with_a_few_binomials(variant, monkeypatch):
    counter = CountingComb()
    monkeypatch.setattr(wor, "comb", counter)
    game = CellRecordingGame(100_000)
    result = sr.group_testing_shapley(game, 62, seed=0, variant=variant, progress=False)
    assert result.n_evaluations == 62
    assert counter.calls <= 8  # the few small strata (sizes 1 and N - 1 here), not one per size
    assert sum(rows for rows, _ in game.shapes) == 62


def test_permutation_prefixes_are_evaluated_a_bounded_block_at_a_time(monkeypatch):
    monkeypatch.setattr(_base, "PREFIX_MASK_CELLS", 64 * 64)
    n = 200
    game = CellRecordingGame(n)
    chunked = sr.permutation_shapley(game, 3 * n + 1, seed=4, progress=False)
    assert max(rows * cols for rows, cols in game.shapes) <= 64 * 64
    monkeypatch.setattr(_base, "PREFIX_MASK_CELLS", 2**40)
    whole = sr.permutation_shapley(CellRecordingGame(n), 3 * n + 1, seed=4, progress=False)
    np.testing.assert_array_equal(chunked.values, whole.values)


def test_small_permutations_are_grouped_into_one_call(monkeypatch):
    monkeypatch.setattr(_base, "PREFIX_MASK_CELLS", 3 * 20 * 20)
    game = CellRecordingGame(20)
    values = evaluate_prefixes(game, np.array([np.random.default_rng(s).permutation(20) for s in range(7)]))
    assert [rows for rows, _ in game.shapes] == [60, 60, 20]
    monkeypatch.setattr(_base, "PREFIX_MASK_CELLS", 2**40)
    reference = CellRecordingGame(20)
    expected = evaluate_prefixes(reference, np.array([np.random.default_rng(s).permutation(20) for s in range(7)]))
    np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize("alpha, beta", [(16.0, 1.0), (4.0, 4.0), (1.0, 16.0)])
def test_beta_shapley_chains_are_evaluated_a_bounded_block_at_a_time(alpha, beta, monkeypatch):
    n = 150
    monkeypatch.setattr(_beta_shapley, "PREFIX_MASK_CELLS", 10 * n)
    game = CellRecordingGame(n)
    chunked = sr.beta_shapley(game, 8 * n, seed=2, alpha=alpha, beta=beta, progress=False)
    assert max(rows for rows, _ in game.shapes) <= max(10, n)  # whole permutations go through the prefix path
    monkeypatch.setattr(_beta_shapley, "PREFIX_MASK_CELLS", 2**40)
    whole = sr.beta_shapley(CellRecordingGame(n), 8 * n, seed=2, alpha=alpha, beta=beta, progress=False)
    np.testing.assert_array_equal(chunked.values, whole.values)
    assert chunked.n_evaluations == whole.n_evaluations


def test_compressive_sampling_refuses_a_measurement_matrix_beyond_its_cap_before_evaluating():
    game = CellRecordingGame(10_000)
    with pytest.raises(ValueError, match="n_measurements=5000 x 10000 players"):
        sr.compressive_shapley(game, 30_000, seed=0, progress=False)
    assert game.shapes == []


def test_stratified_svarm_refuses_an_o_n_squared_state_before_evaluating():
    game = CellRecordingGame(5_000)
    with pytest.raises(ValueError, match="O\\(N\\^2\\) memory"):
        sr.stratified_svarm_shapley(game, 30_000, seed=0, progress=False)
    assert game.shapes == []


@pytest.mark.parametrize("cells", [64 * 64, 10 * 200, 150])
def test_truncated_permutations_are_evaluated_a_bounded_block_at_a_time(cells, monkeypatch):
    n = 200
    monkeypatch.setattr(_base, "PREFIX_MASK_CELLS", cells)  # truncation evaluates its chunks through prefix_utilities
    game = CellRecordingGame(n)
    chunked = sr.permutation_shapley(game, 12 * n, seed=3, truncation=0.05, progress=False)
    assert max(rows * cols for rows, cols in game.shapes[1:]) <= max(cells, n)  # the first calls: U(empty), U(D)
    monkeypatch.setattr(_base, "PREFIX_MASK_CELLS", 2**40)
    whole = sr.permutation_shapley(CellRecordingGame(n), 12 * n, seed=3, truncation=0.05, progress=False)
    np.testing.assert_array_equal(chunked.values, whole.values)
    assert chunked.n_evaluations == whole.n_evaluations


@pytest.mark.parametrize("counts", [(1, 1), (4096, 41), (7, 123_456)])
def test_the_compiled_merge_of_long_states_is_numpys_bit_for_bit(counts, monkeypatch):
    from shapley_research.estimators._sampling import _loop

    rng = np.random.default_rng(sum(counts))
    dim = _loop.COMPILED_MERGE_DIM + 5
    first = [rng.normal(size=dim) * 1e3, rng.random(dim) * 1e5]
    second = _loop.MeanState(dim, counts[1], rng.normal(size=dim), rng.random(dim))
    compiled = _loop.MeanState(dim, counts[0], first[0].copy(), first[1].copy())
    compiled.merge(second)
    monkeypatch.setattr(_loop, "COMPILED_MERGE_DIM", 2**62)
    plain = _loop.MeanState(dim, counts[0], first[0].copy(), first[1].copy())
    plain.merge(second)
    np.testing.assert_array_equal(compiled.mean, plain.mean)
    np.testing.assert_array_equal(compiled.m2, plain.m2)
    assert compiled.count == plain.count == sum(counts)


@pytest.mark.parametrize("allocation", ["svarm", "neyman"])
def test_svarm_batches_merge_in_one_pass_bit_for_bit(allocation, monkeypatch):
    """A batch's sums merge straight into the state (one compiled pass) as its moments would, then ``merge``."""
    from shapley_research.estimators import _svarm_strata

    game = random_unanimity_game(80, 30, 6, seed=4)  # 3 (N + 1)^2 entries: above the compiled merge's length
    run = lambda: sr.stratified_svarm_shapley(game, 6_000, seed=2, batch_size=700, allocation=allocation,
                                              progress=False)
    fused = run()
    monkeypatch.setattr(_svarm_strata, "COMPILED_MERGE_DIM", 2**62)  # every batch through moments() and merge
    plain = run()
    for a, b in ((fused.values, plain.values), (fused.stderr, plain.stderr), (fused.state.mean, plain.state.mean),
                 (fused.state.m2, plain.state.m2)):
        np.testing.assert_array_equal(a, b)
