"""The group-testing sampler: exact sizes, uniform subsets, sizes from q(k), exact moments.

``group_testing_shapley`` draws each test's coalition as its *small side* (the
coalition or its complement) with ``draw_small_sides``: Floyd's algorithm for
small sides under a tenth of the players, a coin per player and a uniform
fix-up of the count for larger ones, in a compiled loop on an SFC64 stream run
inside it. These tests check both ways against the distribution they must
have (chi-square over all subsets, plain and complemented), the stream against
numpy's SFC64, and the moment computation (scatter over listed members, dense
pass over coin rows) against the dense formula.
"""

from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np
import pytest
from scipy import stats

from shapley_research import group_testing_shapley
from shapley_research.estimators import group_testing_size_distribution, random_subsets
from shapley_research.estimators._group_testing import _add_small_sides, _contrast_moments, _draw_sizes
from shapley_research.estimators._sampling._loop import evaluate_coalitions
from shapley_research.estimators._sampling._subsets import DENSE_FRACTION, SmallSides, _sfc64_state, draw_small_sides

P_VALUE = 1e-4  # every chi-square test below is run once with a fixed seed
PATHS = {"floyd": 1.0, "coins": 0.0, "mixed": DENSE_FRACTION}  # dense_fraction: which rows take coins


def _subset_codes(masks: np.ndarray) -> np.ndarray:
    return masks.astype(np.int64) @ (1 << np.arange(masks.shape[1]))


def _chi_square_uniform_subsets(masks: np.ndarray, size: int) -> float:
    """p-value of 'every row is a uniform size-``size`` subset' (all subsets enumerated)."""
    n = masks.shape[1]
    assert (masks.sum(axis=1) == size).all()
    codes = {sum(1 << i for i in subset): j for j, subset in enumerate(combinations(range(n), size))}
    counts = np.bincount([codes[c] for c in _subset_codes(masks).tolist()], minlength=len(codes))
    assert counts.size == comb(n, size)
    return stats.chisquare(counts).pvalue


# --- random_subsets (public) ---


@pytest.mark.parametrize("n_drawn", [2, 5, 9, 40, 301])
def test_random_subsets_have_exact_sizes(n_drawn):
    rng = np.random.default_rng(n_drawn)
    k = rng.integers(0, n_drawn + 1, 500)
    k[:2] = 0, n_drawn
    masks = random_subsets(rng, k, n_drawn)
    assert masks.dtype == bool and masks.shape == (500, n_drawn)
    np.testing.assert_array_equal(masks.sum(axis=1), k)


@pytest.mark.parametrize("path", ["floyd", "coins"])
@pytest.mark.parametrize("n_drawn, size", [(6, 1), (6, 2), (6, 3), (6, 4), (6, 5), (8, 4), (9, 7), (17, 3)])
def test_subsets_are_uniform(n_drawn, size, path):
    """Chi-square over all C(n, k) subsets, small sides and complemented (k > n / 2) alike, either way
    of drawing (9 and 17 players: coins for the bytes past the last whole 8-byte word too)."""
    rng = np.random.default_rng(100 * n_drawn + size)
    sides = draw_small_sides(rng, np.full(40 * comb(n_drawn, size) + 2000, size), n_drawn,
                             dense_fraction=PATHS[path])
    assert sides.dense.all() == (path == "coins") and sides.dense.any() == (path == "coins")
    assert _chi_square_uniform_subsets(sides.masks, size) > P_VALUE


def test_random_subsets_take_coins_from_a_tenth_of_the_players():
    rng = np.random.default_rng(2)
    sides = draw_small_sides(rng, np.array([0, 1, 9, 10, 50, 90, 91, 99, 100]), 100)
    np.testing.assert_array_equal(sides.dense, [False, False, False, True, True, True, False, False, False])
    np.testing.assert_array_equal(sides.masks.sum(axis=1), [0, 1, 9, 10, 50, 90, 91, 99, 100])


def test_random_subsets_rows_are_independent():
    """Joint law of two rows of one call: uniform on the 6 x 6 pairs of 2-subsets of 4 players."""
    rng = np.random.default_rng(7)
    codes = {c: j for j, c in enumerate(sorted({(1 << a) | (1 << b) for a, b in combinations(range(4), 2)}))}
    pairs = []
    for _ in range(4000):
        first, second = _subset_codes(random_subsets(rng, np.array([2, 2]), 4)).tolist()
        pairs.append(6 * codes[first] + codes[second])
    assert stats.chisquare(np.bincount(pairs, minlength=36)).pvalue > P_VALUE


def test_random_subsets_same_generator_state_same_subsets():
    k = np.arange(1, 200)
    first = random_subsets(np.random.default_rng(3), k, 200)
    np.testing.assert_array_equal(first, random_subsets(np.random.default_rng(3), k, 200))
    assert not np.array_equal(first, random_subsets(np.random.default_rng(4), k, 200))


# --- draw_small_sides ---


@pytest.mark.parametrize("path", ["floyd", "coins", "mixed"])
@pytest.mark.parametrize("n_drawn, size", [(6, 1), (6, 5), (10, 5), (9, 4), (30, 2)])
def test_small_sides_are_uniform_in_one_mixed_call(n_drawn, size, path):
    """Rows of many sizes in one call (one stream through rows of every size, and through both ways of
    drawing where mixed): the rows of one size are uniform over all its subsets."""
    rng = np.random.default_rng(n_drawn * size)
    rows = 40 * comb(n_drawn, size) + 2000
    k = rng.integers(0, n_drawn + 1, 2 * rows)
    k[::2] = size
    masks = draw_small_sides(rng, k, n_drawn, dense_fraction=PATHS[path]).masks
    assert _chi_square_uniform_subsets(masks[::2], size) > P_VALUE


@pytest.mark.parametrize("path", ["floyd", "coins", "mixed"])
def test_large_sides_have_uniform_marginals(path):
    """Large small sides (Floyd's select hit often; long fix-ups of the coins): every player is in a row
    of size k with probability k / P, whatever its label, complemented rows included; sizes are exact."""
    rng = np.random.default_rng(3)
    p = 600
    k = rng.integers(1, p, 3000)
    k[:10] = p // 2
    masks = draw_small_sides(rng, k, p, dense_fraction=PATHS[path]).masks
    np.testing.assert_array_equal(masks.sum(axis=1), k)
    for rows in (k <= p // 2, k > p // 2):
        counts = masks[rows].sum(axis=0)
        assert stats.chisquare(counts, np.full(p, k[rows].sum() / p)).pvalue > P_VALUE


@pytest.mark.parametrize("path", ["floyd", "mixed"])
def test_small_sides_list_their_members(path):
    """``vals[indptr[t]:indptr[t + 1]]`` are the distinct members of row t's small side (the row itself,
    or its complement where ``flip``), unless the row was drawn by coins (``dense``), which lists none;
    the masks are C-contiguous booleans."""
    rng = np.random.default_rng(11)
    p = 400
    k = rng.integers(0, p + 1, 800)
    sides = draw_small_sides(rng, k, p, dense_fraction=PATHS[path])
    assert sides.masks.dtype == bool and sides.masks.flags.c_contiguous and sides.masks.shape == (800, p)
    np.testing.assert_array_equal(sides.flip, k > p // 2)
    np.testing.assert_array_equal(sides.dense, (path == "mixed") & (np.minimum(k, p - k) >= DENSE_FRACTION * p))
    np.testing.assert_array_equal(np.diff(sides.indptr), np.where(sides.dense, 0, np.minimum(k, p - k)))
    listed = np.zeros((800, p), dtype=int)
    np.add.at(listed, (np.repeat(np.arange(800), np.diff(sides.indptr)), sides.vals), 1)
    members = sides.masks != sides.flip[:, None]
    np.testing.assert_array_equal(listed[~sides.dense], members[~sides.dense])  # each member once
    np.testing.assert_array_equal(members.sum(axis=1), np.minimum(k, p - k))


def test_stream_is_numpy_sfc64():
    """With P = 2**16, a one-member side is the top 16 bits of a 32-bit half of an SFC64 output (no
    rejection is possible), rows in pairs on the high and low halves of one output: the compiled
    generator is numpy's SFC64, seeded from the caller's generator."""
    raw = np.random.SFC64(np.random.default_rng(5).bit_generator.random_raw(4)).random_raw(500)
    expected = np.empty(1000, dtype=np.uint64)
    expected[0::2], expected[1::2] = raw >> np.uint64(48), (raw & np.uint64(0xFFFFFFFF)) >> np.uint64(16)
    sides = draw_small_sides(np.random.default_rng(5), np.ones(1000, dtype=np.int64), 2**16)
    np.testing.assert_array_equal(sides.vals, expected)
    state = _sfc64_state(np.random.default_rng(5))
    assert state.dtype == np.uint64 and state.shape == (4,)


def test_one_member_sides_are_uniform():
    """Lemire's multiply-shift (with its rejection) gives every player the same chance, P = 3 and 1000."""
    for p in (3, 1000):
        rng = np.random.default_rng(p)
        vals = draw_small_sides(rng, np.ones(200 * p, dtype=np.int64), p, dense_fraction=1.0).vals
        assert stats.chisquare(np.bincount(vals, minlength=p)).pvalue > P_VALUE


# --- sizes ---


@pytest.mark.parametrize("n_drawn", [2, 3, 11, 1001])
def test_draw_sizes_follows_q(n_drawn):
    rng = np.random.default_rng(n_drawn)
    sizes, q, _ = group_testing_size_distribution(n_drawn)
    k = _draw_sizes(rng, 60_000, q)
    assert (np.diff(k) >= 0).all() and k.min() >= 1 and k.max() <= n_drawn - 1
    observed = np.bincount(k, minlength=n_drawn)[1:]
    if n_drawn > 2:
        merged = np.add.reduceat(observed, np.arange(0, n_drawn - 1, max(1, (n_drawn - 1) // 50)))
        expected = np.add.reduceat(q, np.arange(0, n_drawn - 1, max(1, (n_drawn - 1) // 50))) * 60_000
        assert stats.chisquare(merged, expected).pvalue > P_VALUE
    else:
        assert observed.sum() == 60_000


# --- moments ---


def _dense_moments(weight, beta, offset):
    x = weight[:, None] * (beta - offset[:, None])
    mean = x.mean(axis=0)
    return mean, ((x - mean) ** 2).sum(axis=0)


@pytest.mark.parametrize("path", ["floyd", "coins", "mixed"])
@pytest.mark.parametrize("variant", ["improved", "paper"])
def test_contrast_moments_match_the_dense_formula(variant, path):
    """Scatters over the small sides' members (signs for complements), dense passes over coin rows, plus
    the complemented and grand rows' common part give the mean and M2 of x = w (beta - o) of the full
    dense matrix."""
    rng = np.random.default_rng(9)
    n, size = 500, 3000
    in_game = rng.integers(0, n + 1, size)
    in_game[:6] = 0, 0, n, n, 1, n - 1
    drawn = np.flatnonzero((in_game > 0) & (in_game < n))
    sides = draw_small_sides(rng, in_game[drawn], n, dense_fraction=PATHS[path])
    beta = np.empty((size, n))
    beta[:] = (in_game == n)[:, None]
    beta[drawn] = sides.masks
    weight = rng.normal(3.0, 2.0, size)
    offset = (rng.random(size) < 0.4).astype(float) if variant == "improved" else in_game / n
    y = np.column_stack([weight, weight**2 * (1.0 - 2.0 * offset)])
    complement = (in_game == n).astype(float)
    complement[drawn] = sides.flip & ~sides.dense
    sums = np.zeros((n, 2))
    for start, stop in ((0, 1000), (1000, drawn.size)):  # added in two chunks, as a batch's chunks are
        rows = slice(start, stop)
        part = SmallSides(sides.masks[rows], sides.flip[rows], sides.indptr[start:stop + 1] - sides.indptr[start],
                          sides.vals[sides.indptr[start]:], sides.dense[rows])
        _add_small_sides(y, drawn[rows], part, sums)
    state = _contrast_moments(weight, offset, y, complement, sums)
    mean, m2 = _dense_moments(weight, beta, offset)
    assert state.count == size and state.dim == n
    np.testing.assert_allclose(state.mean, mean, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(state.m2, m2, rtol=1e-9)


# --- the estimator ---


@pytest.mark.sampling  # the sampler's own draws, on a small game
@pytest.mark.parametrize("variant", ["improved", "paper"])
def test_estimator_evaluates_each_test_once_with_sizes_from_q(variant):
    """Every test is one evaluation of a coalition of the right law, except U(empty) and U(D),
    and the recorded batches are C-contiguous boolean matrices."""
    n = 7

    class Recorder:
        n_players = n
        batches: list = []

        def evaluate(self, masks):
            assert masks.dtype == bool and masks.flags.c_contiguous and masks.shape[1] == n
            self.batches.append(masks.copy())
            return masks.sum(axis=1).astype(float)

    game = Recorder()
    result = group_testing_shapley(game, 30_002, seed=0, variant=variant, batch_size=1000)
    sizes = np.concatenate([b.sum(axis=1) for b in game.batches[1:]])
    assert result.n_evaluations == sizes.size + 2
    assert sizes.min() >= 1 and sizes.max() <= n - 1
    # coalitions of each size are uniform: every player equally often within a size
    everything = np.concatenate(game.batches[1:])
    for k in range(1, n):
        rows = everything[sizes == k]
        assert stats.chisquare(rows.sum(axis=0)).pvalue > P_VALUE


@pytest.mark.sampling  # the sampler's own draws, on a small game
def test_evaluate_coalitions_is_not_given_known_rows():
    """Empty and grand coalitions (improved variant, k = 1 with the null player, k = N without it)
    are answered by the anchors: the game never sees them, and no mask matrix is copied."""
    n = 3
    seen = []

    class Game:
        n_players = n

        def evaluate(self, masks):
            seen.append(masks)
            return masks.sum(axis=1).astype(float)

    result = group_testing_shapley(Game(), 5002, seed=1, variant="improved", batch_size=500)
    sizes = np.concatenate([m.sum(axis=1) for m in seen[1:]])
    assert sizes.min() >= 1 and sizes.max() <= n - 1
    assert result.n_evaluations == sizes.size + 2 < 5002
    for masks in seen[1:]:
        assert masks.dtype == bool and masks.flags.c_contiguous
    _, evaluations = evaluate_coalitions(Game(), seen[1], 0.0, 3.0)
    assert evaluations == seen[1].shape[0]
