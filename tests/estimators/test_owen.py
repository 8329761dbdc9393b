"""Owen sampling: the marginals of one coalition, the exact expectation of a sweep, unbiasedness, calibration."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest
from games import AdditiveGame, AirportGame, CountingGame, assert_same_run, random_unanimity_game

import shapley_research as sr
from shapley_research.estimators import sampling_forced
from shapley_research.estimators._owen import flip_marginals, owen_coalitions

GAME = random_unanimity_game(7, 6, 4, seed=3)
AIRPORT = AirportGame([0.3, 1.0, 0.1, 0.7, 0.7, 0.45])


def all_coalitions(n: int) -> np.ndarray:
    """The 2^N coalitions, one per row."""
    return np.array(list(product([False, True], repeat=n)))


def bin_expectation(n_bins: int, bin_index: int, weight) -> float:
    r"""``Q * integral over bin k of weight(q) dq``: :math:`\mathbb E\,weight(q)` for q uniform in the bin.

    ``weight`` is a polynomial of degree at most N <= 8 in q: Gauss-Legendre with 8 nodes is exact.
    """
    nodes, weights = np.polynomial.legendre.leggauss(8)
    low, high = bin_index / n_bins, (bin_index + 1) / n_bins
    q = low + (nodes + 1.0) * (high - low) / 2.0
    return float(sum(w * weight(x) for w, x in zip(weights, q)) / 2.0)


def sweep_expectation(game, n_bins: int, q_points: str = "stratified", antithetic: bool = False) -> np.ndarray:
    """The exact expectation of one sweep's vector: over q in every bin, then over the coalitions' law.

    A bin drawn with probability q holds coalition S with probability q^|S| (1-q)^(N-|S|); an antithetic
    mirror bin holds the complement of the coalition of its partner bin (whose q it draws).
    """
    n = game.n_players
    masks = all_coalitions(n)
    sizes = masks.sum(axis=1)
    marginals, _ = flip_marginals(game, masks)  # the estimator's own reduction, on every coalition
    complements, _ = flip_marginals(game, ~masks)
    expected = np.zeros(n)
    for k in range(n_bins):
        drawn, rows = k, marginals
        if antithetic and k >= n_bins // 2:
            drawn, rows = n_bins - 1 - k, complements  # the complement of the partner bin's coalition
        if q_points == "midpoint":
            q = (drawn + 0.5) / n_bins
            probabilities = q**sizes * (1 - q) ** (n - sizes)
        else:
            probabilities = np.array([bin_expectation(n_bins, drawn, lambda q, s=s: q**s * (1 - q) ** (n - s))
                                      for s in sizes])
        expected += probabilities @ rows / n_bins
    return expected


# --- the reduction of one coalition ---


def test_flip_marginals_are_each_players_marginal_contribution():
    rng = np.random.default_rng(0)
    coalitions = rng.random((9, 7)) < 0.5
    marginals, made = flip_marginals(GAME, coalitions)
    assert made == 9 * 8
    for row, coalition in zip(marginals, coalitions):
        for i in range(7):
            with_i, without_i = coalition.copy(), coalition.copy()
            with_i[i], without_i[i] = True, False
            utilities = GAME.evaluate(np.array([with_i, without_i]))
            assert row[i] == pytest.approx(utilities[0] - utilities[1], abs=1e-12)


def test_flip_marginals_do_not_depend_on_the_chunks(monkeypatch):
    from shapley_research.estimators._sampling import _batches

    coalitions = np.random.default_rng(1).random((5, 7)) < 0.3
    whole, _ = flip_marginals(GAME, coalitions)
    monkeypatch.setattr(_batches, "CHUNK_CELLS", 7 * 3)  # 3 coalitions a call: chunks split coalitions' rows
    counting = CountingGame(GAME)
    chunked, made = flip_marginals(counting, coalitions)
    assert np.array_equal(whole, chunked) and made == counting.rows == 5 * 8 and counting.calls == 14


def test_a_given_empty_utility_spares_the_empty_coalition():
    counting = CountingGame(GAME)
    coalitions = np.zeros((3, 7), dtype=bool)
    coalitions[1, 2] = True  # one flip of it is the empty coalition too
    u0 = float(GAME.evaluate(np.zeros((1, 7), dtype=bool))[0])
    marginals, made = flip_marginals(counting, coalitions, empty_utility=u0)
    assert counting.empty_rows == 0 and made == counting.rows == 3 * 8 - 3
    np.testing.assert_allclose(marginals, flip_marginals(GAME, coalitions)[0], atol=1e-12)


# --- the draws ---


@pytest.mark.parametrize("q_points", ["stratified", "midpoint"])
@pytest.mark.parametrize("antithetic", [False, True])
def test_each_bin_draws_its_coalition_with_a_q_in_the_bin(q_points, antithetic):
    n, n_bins = 40_000, 4
    rows = owen_coalitions(np.random.default_rng(2), 6, n, n_bins, q_points, antithetic)
    assert rows.shape == (6 * n_bins, n) and rows.dtype == bool
    share = rows.mean(axis=1).reshape(6, n_bins)  # about q, within 0.003 (3 sigma at q = 1/2)
    k = np.arange(n_bins)
    assert np.all(share > k / n_bins - 0.01) and np.all(share < (k + 1) / n_bins + 0.01)
    if q_points == "midpoint":
        np.testing.assert_allclose(share, np.broadcast_to((k + 0.5) / n_bins, share.shape), atol=0.01)
    if antithetic:
        sweeps = rows.reshape(6, n_bins, n)
        assert np.array_equal(sweeps[:, 3], ~sweeps[:, 0]) and np.array_equal(sweeps[:, 2], ~sweeps[:, 1])


# --- the exact expectation ---


@pytest.mark.parametrize("n_bins, antithetic", [(1, False), (3, False), (4, False), (2, True), (6, True)])
@pytest.mark.parametrize("game", [GAME, AIRPORT], ids=["unanimity", "airport"])
def test_the_exact_expectation_of_a_sweep_is_the_shapley_value(game, n_bins, antithetic):
    np.testing.assert_allclose(sweep_expectation(game, n_bins, antithetic=antithetic), sr.exact_shapley(game).values,
                               atol=1e-12)


def test_the_expectation_is_the_shapley_value_by_the_beta_integral():
    """The same identity from the closed form: the Bernstein weights of each size integrate to 1/N."""
    n = 7
    for s in range(n):
        integral = sum(bin_expectation(5, k, lambda q, s=s: math.comb(n - 1, s) * q**s * (1 - q) ** (n - 1 - s))
                       for k in range(5)) / 5
        assert integral == pytest.approx(1 / n, abs=1e-14)


def test_the_midpoint_grid_is_biased():
    exact = sr.exact_shapley(GAME).values
    biased = sweep_expectation(GAME, 4, q_points="midpoint")
    assert np.abs(biased - exact).max() > 1e-3  # a quadrature error no number of sweeps removes
    assert biased.sum() == pytest.approx(exact.sum(), abs=0.05)


# --- the estimator ---


def test_counts_and_determinism():
    with sampling_forced():
        result = sr.owen_shapley(GAME, 4 * 8 * 5 + 7, seed=3, progress=False)
        again = sr.owen_shapley(GAME, 4 * 8 * 5 + 7, seed=3, progress=False)
    assert result.n_samples == 5 and result.n_evaluations == 4 * 8 * 5 and result.info["unspent_evaluations"] == 7
    assert_same_run(result, again)
    assert result.method == "owen_shapley"
    assert result.info["options"] == {"n_bins": 4, "q_points": "stratified", "antithetic": False}


def test_an_additive_game_is_exact_with_zero_standard_errors():
    game = AdditiveGame(np.linspace(-1.0, 2.0, 30))
    result = sr.owen_shapley(game, 4 * 31 * 3, seed=0)
    np.testing.assert_allclose(result.values, game.shapley_values, atol=1e-12)
    np.testing.assert_allclose(result.stderr, 0.0, atol=1e-12)


def test_a_one_player_game_is_exact():
    game = sr.as_game(lambda m: 5.0 + 2.0 * m.sum(axis=1), 1, vectorized=True)
    with sampling_forced():
        result = sr.owen_shapley(game, 16, seed=0)
    assert result.n_samples == 2 and result.info["stopped_by"] == "budget"
    np.testing.assert_allclose(result.values, [2.0], atol=1e-12)


@pytest.mark.parametrize("antithetic", [False, True])
def test_unbiased_efficient_in_expectation_and_calibrated(antithetic):
    exact = sr.exact_shapley(GAME).values
    total = GAME.evaluate(np.ones((1, 7), bool))[0] - GAME.evaluate(np.zeros((1, 7), bool))[0]
    with sampling_forced():
        runs = [sr.owen_shapley(GAME, 4 * 8 * 30, seed=seed, antithetic=antithetic) for seed in range(300)]
    values = np.array([r.values for r in runs])
    errors_of_mean = values.std(axis=0, ddof=1) / np.sqrt(len(runs))
    assert np.all(np.abs(values.mean(axis=0) - exact) <= 4 * errors_of_mean + 1e-12)  # null players: 0 <= 0
    sums = values.sum(axis=1)
    assert abs(sums.mean() - total) < 4 * sums.std(ddof=1) / np.sqrt(len(runs))
    assert sums.std() > 1e-6  # efficient only in expectation
    live = values.std(axis=0) > 1e-9  # not null players, nor those antithetic sweeps make exact (rounding / rounding)
    z = (values - exact)[:, live] / np.array([r.stderr for r in runs])[:, live]
    assert 0.9 < z.std() < 1.15  # the standard errors match the spread (t with 29 degrees of freedom: 1.04)


@pytest.mark.parametrize("antithetic", [False, True])
def test_the_squared_standard_errors_are_unbiased_with_few_sweeps(antithetic):
    """E[stderr^2] = Var(value) at two sweeps: the sweep is the i.i.d. unit, with ddof=1.

    A variance over the ``n_bins * sweeps`` bin draws (as if independent), or with ``ddof=0`` (a ratio of
    sweeps / (sweeps - 1): 2 at two sweeps), fails. The z-scores themselves are t-like with ``sweeps - 1``
    degrees of freedom (no finite variance below four sweeps): the calibration test above takes 30.
    """
    exact = sr.exact_shapley(AIRPORT).values
    with sampling_forced():
        runs = [sr.owen_shapley(AIRPORT, 2 * 4 * 7, seed=seed, antithetic=antithetic) for seed in range(300)]
    assert all(r.n_samples == 2 for r in runs)
    squared_errors = (np.array([r.values for r in runs]) - exact) ** 2
    squared_stderr = np.array([r.stderr for r in runs]) ** 2
    assert 0.8 < squared_errors.sum() / squared_stderr.sum() < 1.25  # 1.07 and 0.98 over these seeds


def test_the_midpoint_grid_converges_to_its_biased_expectation():
    biased = sweep_expectation(GAME, 4, q_points="midpoint")
    with sampling_forced():
        runs = [sr.owen_shapley(GAME, 4 * 8 * 30, seed=seed, q_points="midpoint") for seed in range(200)]
    values = np.array([r.values for r in runs])
    assert np.all(np.abs(values.mean(axis=0) - biased) <= 4 * values.std(axis=0, ddof=1) / np.sqrt(len(runs)) + 1e-12)


def test_any_n_jobs_gives_the_same_bits():
    from joblib import parallel_config

    game = random_unanimity_game(25, 12, 5, seed=2)
    one = sr.owen_shapley(game, 4 * 26 * 40, seed=9, batch_size=3)
    with parallel_config(backend="threading"):
        two = sr.owen_shapley(game, 4 * 26 * 40, seed=9, batch_size=3, n_jobs=2)
    assert_same_run(one, two)


def test_seeds_merge_and_other_options_are_refused():
    with sampling_forced():
        first, second = (sr.owen_shapley(GAME, 4 * 8 * 5, seed=seed) for seed in (1, 2))
        other = sr.owen_shapley(GAME, 2 * 8 * 10, seed=3, n_bins=2)
    merged = sr.merge_results(first, second)
    np.testing.assert_allclose(merged.values, (first.values + second.values) / 2, atol=1e-12)
    assert merged.n_samples == 10
    with pytest.raises(ValueError, match="was run with options"):
        sr.merge_results(first, other)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"n_bins": 0}, ValueError, "n_bins must be >= 1"),
    ({"n_bins": 2.5}, TypeError, "n_bins must be an integer"),
    ({"n_bins": True}, TypeError, "n_bins must be an integer"),
    ({"q_points": "grid"}, ValueError, "q_points must be one of"),
    ({"antithetic": "yes"}, TypeError, "antithetic must be True or False"),
    ({"antithetic": True, "n_bins": 3}, ValueError, "n_bins must be even, got n_bins=3"),
])
def test_bad_options_are_refused_before_any_evaluation(kwargs, error, message):
    counting = CountingGame(GAME)
    with pytest.raises(error, match=message):
        sr.owen_shapley(counting, 100, seed=0, **kwargs)
    assert counting.calls == 0


def test_a_budget_below_one_sweep_names_the_minimum():
    with pytest.raises(ValueError, match=r"budget=31 is smaller than one sweep: it needs at least 32 utility "):
        sr.owen_shapley(GAME, 31, seed=0)
