"""The group-testing sampler: exact sizes, uniform subsets, sizes from q(k), exact moments.

``group_testing_shapley`` draws each test's coalition as its *small side* (the
coalition or its complement) through ``_draw_small_sides``: listed rows player
by player, Bernoulli rows from thresholded random bytes, both topped up until
they have their exact size. These tests check every path of that sampler
against the distribution it must have, and the sparse/dense moment
computation against the dense formula.
"""

from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np
import pytest
from scipy import stats

from shapley_research import group_testing_shapley
from shapley_research._sampling import evaluate_coalitions
from shapley_research._subsets import (_TAG_CAP, _bernoulli_cells, _draw_small_sides, _listed_up_to, _top_up,
                                       _uniform_ints, random_subsets)
from shapley_research.group_testing import (_contrast_moments, _draw_sizes, _game_masks, _group_rows,
                                            group_testing_size_distribution)

P_VALUE = 1e-4  # every chi-square test below is run once with a fixed seed


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


@pytest.mark.parametrize("n_drawn, size", [(6, 1), (6, 2), (6, 3), (6, 4), (6, 5), (8, 4), (9, 7)])
def test_random_subsets_are_uniform(n_drawn, size):
    """Chi-square over all C(n, k) subsets, small sides and complemented (k > n / 2) alike."""
    rng = np.random.default_rng(100 * n_drawn + size)
    masks = random_subsets(rng, np.full(40 * comb(n_drawn, size) + 2000, size), n_drawn)
    assert _chi_square_uniform_subsets(masks, size) > P_VALUE


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


# --- _draw_small_sides: every path ---


@pytest.mark.parametrize("n_drawn, size", [(6, 2), (8, 3), (8, 4), (10, 5)])
def test_bernoulli_rows_are_uniform(n_drawn, size):
    """All rows Bernoulli (``n_listed=0``): thresholds, redraws and top-up rounds, exhaustively."""
    rng = np.random.default_rng(size * n_drawn)
    rows = 40 * comb(n_drawn, size) + 2000
    sides = _draw_small_sides(rng, np.full(rows, size), n_drawn, 0)
    assert _chi_square_uniform_subsets(sides.cells != 0, size) > P_VALUE


@pytest.mark.parametrize("n_listed", [0, 1500, 3000])
def test_large_sides_have_uniform_marginals(n_listed):
    """Large players counts (listed rows past the 254-draw cap, Bernoulli rows): every player is in a
    row of size m with probability m / P, whatever its label; and the sizes are exact."""
    rng = np.random.default_rng(n_listed)
    p = 600
    m = rng.integers(1, p // 2 + 1, 3000)
    m[:10] = p // 2
    sides = _draw_small_sides(rng, m, p, n_listed)
    cells = sides.cells != 0
    np.testing.assert_array_equal(cells.sum(axis=1), m)
    if n_listed:
        assert (m[:n_listed] > _TAG_CAP).any()  # listed rows that need more than one round of draws
    counts = cells.sum(axis=0)
    assert stats.chisquare(counts, np.full(p, m.sum() / p)).pvalue > P_VALUE


def test_listed_members_match_cells():
    """The listed rows' entries (round one, minus repeats, plus the top-up's) are exactly their cells."""
    rng = np.random.default_rng(11)
    p = 400
    m = rng.integers(1, 300, 800)
    sides = _draw_small_sides(rng, m, p, 500)
    rows = np.repeat(np.arange(500), np.diff(sides.indptr))
    kept = sides.vals < p
    listed = np.zeros((500, p + 1), dtype=int)
    np.add.at(listed, (rows[kept], sides.vals[kept]), 1)
    np.add.at(listed, (sides.extra_rows, sides.extra_vals), 1)
    np.testing.assert_array_equal(listed[:, :p], sides.cells[:500] != 0)  # each member once
    assert listed[:, p].sum() == 0


def test_bernoulli_cells_never_exceed_the_size():
    rng = np.random.default_rng(2)
    for p in (64, 1000, 5000):
        m = rng.integers(max(1, p // 10), p // 2 + 1, 200)
        cells = np.zeros((200, p), dtype=np.uint8)
        sizes = _bernoulli_cells(rng, cells, m)
        np.testing.assert_array_equal(sizes, cells.sum(axis=1))
        assert (sizes <= m).all() and (sizes >= 0).all()
        assert (m - sizes).mean() < np.sqrt(m).mean()  # the two thresholds leave little to top up


def test_top_up_completes_rows_and_reports_listed_additions():
    rng = np.random.default_rng(5)
    p, rows = 50, 300
    cells = np.zeros((rows, p), dtype=np.uint8)
    cells[:, :5] = 1  # every row starts with players 0..4
    m = rng.integers(5, 46, rows)
    extra_rows, extra_vals = _top_up(rng, cells.reshape(-1), p, m, m - 5, 120)
    np.testing.assert_array_equal((cells != 0).sum(axis=1), m)
    assert (cells[:, :5] != 0).all()
    assert (extra_rows < 120).all()
    added = np.zeros((rows, p), dtype=bool)
    added[extra_rows, extra_vals] = True
    np.testing.assert_array_equal(added[:120], (cells[:120] != 0) & (np.arange(p) >= 5))


# --- sizes, grouping, masks ---


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


def test_group_rows_and_game_masks():
    rng = np.random.default_rng(1)
    n = 300
    in_game = rng.integers(0, n + 1, 2000)
    in_game[:4] = 0, n, 1, n - 1
    order, ends = _group_rows(in_game, n)
    g = in_game[order]
    flip = g > n // 2
    small = np.where(flip, n - g, g)
    listed = _listed_up_to(n)
    assert (small[:ends[0]] == 0).all() and (small[ends[0]:] > 0).all()
    assert (~flip[ends[0]:ends[1]]).all() and flip[ends[1]:ends[2]].all()
    assert (~flip[ends[2]:ends[3]]).all() and flip[ends[3]:ends[4]].all()
    assert (small[:ends[2]] <= listed).all() and (small[ends[2]:] > listed).all()
    assert ends[4] == in_game.size
    sides = _draw_small_sides(rng, small, n, int(ends[2]))
    expected = (sides.cells != 0) != flip[:, None]
    masks = _game_masks(sides.cells, ends)
    assert masks.dtype == bool and masks.flags.c_contiguous
    np.testing.assert_array_equal(masks, expected[ends[0]:])
    np.testing.assert_array_equal(masks.sum(axis=1), g[ends[0]:])


# --- moments ---


def _dense_moments(weight, beta, offset):
    x = weight[:, None] * (beta - offset[:, None])
    mean = x.mean(axis=0)
    return mean, ((x - mean) ** 2).sum(axis=0)


@pytest.mark.parametrize("variant", ["improved", "paper"])
def test_contrast_moments_match_the_dense_formula(variant):
    """Sparse products over the listed rows' entries (signs for complements) plus dense blocks over
    the Bernoulli rows give the mean and M2 of x = w (beta - o) of the full dense matrix."""
    rng = np.random.default_rng(9)
    n, size = 500, 3000
    in_game = rng.integers(0, n + 1, size)
    in_game[:6] = 0, 0, n, n, 1, n - 1
    order, ends = _group_rows(in_game, n)
    g = in_game[order]
    flip = g > n // 2
    sides = _draw_small_sides(rng, np.where(flip, n - g, g), n, int(ends[2]))
    known = int(ends[0])
    masks = _game_masks(sides.cells, ends)
    beta = np.empty((size, n))
    beta[:known] = (g[:known] == n)[:, None]
    beta[known:] = masks
    weight = rng.normal(3.0, 2.0, size)
    offset = (rng.random(size) < 0.4).astype(float) if variant == "improved" else g / n
    state = _contrast_moments(weight, offset, flip, sides, masks[int(ends[2]) - known:])
    mean, m2 = _dense_moments(weight, beta, offset)
    assert state.count == size and state.dim == n
    np.testing.assert_allclose(state.mean, mean, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(state.m2, m2, rtol=1e-9)


# --- exact uniform integers ---


@pytest.mark.parametrize("high", [1, 2, 7, 1000, 65536, 70_000])
def test_uniform_ints(high):
    rng = np.random.default_rng(high)
    values = _uniform_ints(rng, high, 200_000)
    assert values.dtype == np.int32 and values.min() >= 0 and values.max() < high
    if 1 < high <= 1000:
        assert stats.chisquare(np.bincount(values, minlength=high)).pvalue > P_VALUE


# --- the estimator ---


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
        assert masks.base is not None  # a view of the batch's cell buffer
    _, evaluations = evaluate_coalitions(Game(), seen[1], 0.0, 3.0)
    assert evaluations == seen[1].shape[0]
