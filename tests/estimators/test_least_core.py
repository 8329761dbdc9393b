"""The least core (Yan & Procaccia 2021): known games, its constraints, symmetry, and the sampled version."""

from __future__ import annotations

import numpy as np
import pytest

import shapley_research as sr
from games import AdditiveGame, CountingGame, GloveGame, MajorityGame, UnanimityGame, WeightedVotingGame
from shapley_research.estimators import _least_core as lc
from shapley_research.estimators._exact import _coalition_masks


def constraint_slack(game, values: np.ndarray) -> np.ndarray:
    """``x(S) - v(S)`` of every non-empty proper coalition (``v = U - U(empty)``), by brute force."""
    n = game.n_players
    masks = _coalition_masks(1, (1 << n) - 1, n)
    empty = float(game.evaluate(np.zeros((1, n), dtype=bool))[0])
    return masks @ values - (game.evaluate(masks) - empty)


def test_majority_game_splits_evenly_with_a_third_of_subsidy():
    result = sr.exact_least_core(MajorityGame(3, 2))
    np.testing.assert_allclose(result.values, [1 / 3] * 3, atol=1e-6)
    assert result.info["subsidy"] == pytest.approx(1 / 3, abs=1e-9)
    assert result.info["n_constraints"] == 6 and result.info["lp_status"] == "optimal"
    assert result.method == "exact_least_core" and result.n_evaluations == 8


def test_convex_game_has_a_non_empty_core_and_every_constraint_holds():
    # a sum of unanimity games with positive coefficients is convex: its core holds the Shapley value
    game = sr.random_unanimity_sum(8, seed=3)
    result = sr.exact_least_core(game)
    subsidy, scale = result.info["subsidy"], float(np.abs(game.evaluate(np.ones((1, 8), dtype=bool))).max())
    assert subsidy <= 0
    assert constraint_slack(game, result.values).min() >= -subsidy - 2e-6 * scale
    assert constraint_slack(game, game.shapley_values()).min() >= -1e-9  # the Shapley value is in the core too


def test_glove_game_gives_everything_to_the_scarce_side():
    # one left glove, two right: the core is the single allocation (1, 0, 0)
    result = sr.exact_least_core(GloveGame(1, 2))
    np.testing.assert_allclose(result.values, [1.0, 0.0, 0.0], atol=1e-5)
    assert result.info["subsidy"] == pytest.approx(0.0, abs=1e-9)
    # two left, three right: the left gloves share the two pairs
    np.testing.assert_allclose(sr.exact_least_core(GloveGame(2, 3)).values, [1, 1, 0, 0, 0], atol=1e-5)


@pytest.mark.parametrize("game", [MajorityGame(5, 3), GloveGame(3, 4), sr.random_unanimity_sum(7, seed=2),
                                  AdditiveGame([1.0, -2.0, 0.5, 3.0], offset=4.0)], ids=lambda g: type(g).__name__)
def test_efficiency_holds_to_rounding_and_every_constraint_with_the_subsidy(game):
    result = sr.exact_least_core(game)
    n = game.n_players
    full, empty = game.evaluate(np.vstack([np.ones(n, bool), np.zeros(n, bool)]))
    assert result.values.sum() == pytest.approx(full - empty, rel=1e-12, abs=1e-12)
    scale = max(float(np.abs(constraint_slack(game, np.zeros(n))).max()), abs(full - empty))
    assert constraint_slack(game, result.values).min() >= -result.info["subsidy"] - 1.1e-6 * scale


def test_additive_game_has_its_weights_as_the_only_core_point():
    weights = [1.0, -2.0, 0.5, 3.0]
    result = sr.exact_least_core(AdditiveGame(weights, offset=4.0))
    np.testing.assert_allclose(result.values, weights, atol=1e-5)
    assert result.info["subsidy"] == pytest.approx(0.0, abs=1e-9)  # no constraint can be loosened


def test_symmetric_players_get_equal_values():
    # players 0 and 1 are symmetric, so are 2, 3 and 4 (the glove game's two sides)
    values = sr.exact_least_core(GloveGame(2, 3)).values
    assert values[0] == pytest.approx(values[1], abs=1e-7)
    assert np.ptp(values[2:]) < 1e-7
    majority = sr.exact_least_core(MajorityGame(6, 4)).values
    assert np.ptp(majority) < 1e-7


def test_null_player_gets_nothing_where_the_core_is_a_point():
    # U = 1 if player 0 and player 1 are both in; player 2 is null. The core (x0 + x1 = 1, x0, x1, x2 >= 0,
    # x0 + x2 >= 0 ...) holds every split of 1 between 0 and 1 with x2 = 0; minimal norm: (1/2, 1/2, 0)
    game = UnanimityGame(3, [(0, 1)], [1.0])
    result = sr.exact_least_core(game)
    np.testing.assert_allclose(result.values, [0.5, 0.5, 0.0], atol=1e-5)
    assert result.info["subsidy"] == pytest.approx(0.0, abs=1e-9)


def test_the_least_core_of_a_shifted_game_is_the_same():
    game = sr.random_unanimity_sum(6, seed=5)
    shifted = sr.as_game(lambda m: game.evaluate(m) + 10.0, 6, vectorized=True)
    a, b = sr.exact_least_core(game), sr.exact_least_core(shifted)
    np.testing.assert_allclose(a.values, b.values, atol=1e-5)
    assert a.info["subsidy"] == pytest.approx(b.info["subsidy"], abs=1e-6)


def test_constraint_generation_equals_the_full_quadratic_program():
    game = GloveGame(4, 5)
    n = game.n_players
    masks = _coalition_masks(1, (1 << n) - 1, n)
    from scipy import sparse

    rows = sparse.csr_matrix(masks, dtype=float)
    bounds = game.evaluate(masks) / 4.0
    subsidy, tight, _ = lc._minimal_subsidy(rows, bounds, 1.0)
    relaxed = bounds - subsidy - 1e-6
    generated, _, active, rounds = lc._minimal_norm(rows, relaxed, 1.0, tight, "CLARABEL", 1e-8)
    full, _ = lc._quadratic_program(rows, relaxed, 1.0, n, "CLARABEL")
    np.testing.assert_allclose(generated, full, atol=1e-7)
    assert active < rows.shape[0]


@pytest.mark.parametrize("game", [GloveGame(3, 4), sr.random_unanimity_sum(7, seed=2), MajorityGame(5, 3)],
                         ids=lambda g: type(g).__name__)
def test_the_interior_point_method_agrees_with_highs_and_cvxpy(game):
    ipm, reference = sr.exact_least_core(game), sr.exact_least_core(game, method="highs")
    assert ipm.info["subsidy"] == pytest.approx(reference.info["subsidy"], abs=1e-7)
    np.testing.assert_allclose(ipm.values, reference.values, atol=1e-5)


def test_the_interior_point_method_converges_where_a_ridge_once_stalled_it():
    """A ridge scaled to the largest weight swamped the small ones near the solution (dual residual stalled)."""
    game = sr.random_unanimity_sum(8, seed=5)
    ipm, reference = sr.least_core(game, 64, 5), sr.least_core(game, 64, 5, method="highs")
    assert ipm.info["method"] == "ipm" and "fallback" not in ipm.info
    assert ipm.info["subsidy"] == pytest.approx(reference.info["subsidy"], abs=1e-7)
    # the minimal-norm point moves with the subsidy's last digits (least_core's "Sensitivity to tau")
    np.testing.assert_allclose(ipm.values, reference.values, atol=1e-3)


_VOTES = np.random.default_rng(0).integers(1, 10, 100).astype(float)


@pytest.mark.parametrize("game, seed", [(MajorityGame(100, 51), 1), (WeightedVotingGame(_VOTES, _VOTES.sum() / 2), 0)],
                         ids=["majority", "weighted_voting"])
def test_the_interior_point_method_converges_on_degenerate_games_where_its_directions_once_stalled(game, seed):
    """Tied coalitions: the normal equations' condition passed 1e14 and the dual residual stalled above the tolerance
    (both fell back to HiGHS before the directions were refined and the dual residual measured against its terms)."""
    ipm, reference = (sr.least_core(game, 402, seed, method=m, progress=False) for m in ("ipm", "highs"))
    assert ipm.info["method"] == "ipm" and "fallback" not in ipm.info
    assert ipm.info["subsidy"] == pytest.approx(reference.info["subsidy"], abs=1e-7)
    np.testing.assert_allclose(ipm.values, reference.values, atol=1e-3)


def test_the_interior_point_method_stops_on_the_total_duality_gap_not_its_mean():
    """Stopped when the mean gap over the rows fell below 1e-10, the subsidy sat up to ``m`` times that above its
    minimum and the values 3.3e-5 off (100 rows here); the total gap leaves 1.7e-6 and 3e-10 of the subsidy."""
    majority = MajorityGame(10, 6)
    result = sr.least_core(majority, 102, 1, progress=False)
    masks = lc.least_core_coalitions(1, 50, 10)
    masks = masks[(masks.sum(axis=1) > 0) & (masks.sum(axis=1) < 10)]
    # the equal split meets every sampled row with the relaxed subsidy, so it is the point of minimal norm
    relaxed = majority.evaluate(masks) - result.info["subsidy"] - 1e-6
    assert (masks @ np.full(10, 0.1) >= relaxed + 1e-7).all()
    np.testing.assert_allclose(result.values, 0.1, atol=5e-6)
    glove = GloveGame(4, 6)
    ipm, reference = (sr.least_core(glove, 102, 1, method=m, progress=False) for m in ("ipm", "highs"))
    assert ipm.info["method"] == "ipm" and ipm.info["subsidy"] == pytest.approx(reference.info["subsidy"], abs=2e-9)


def test_a_stalled_interior_point_method_falls_back_to_highs_and_says_so(monkeypatch):
    from shapley_research.estimators import _least_core_ipm

    monkeypatch.setattr(_least_core_ipm, "IPM_MAX_STEPS", 1)
    game = GloveGame(2, 3)
    result, reference = sr.exact_least_core(game), sr.exact_least_core(game, method="highs")
    assert result.info["method"] == "highs" and "did not converge" in result.info["fallback"]
    np.testing.assert_array_equal(result.values, reference.values)


def test_sampling_every_coalition_gives_the_exact_least_core():
    game = GloveGame(2, 3)
    exact = sr.exact_least_core(game)
    with sr.estimators.sampling_forced():  # 400 pairs of 32 coalitions: each one drawn (p > 1 - 1e-20)
        sampled = sr.least_core(game, 802, seed=1)
    assert 2 * 400 - 100 <= sampled.info["n_constraints"] < 2 * 400  # pairs (empty, D) (1 in 16) are dropped
    np.testing.assert_allclose(sampled.values, exact.values, atol=1e-6)
    assert sampled.info["subsidy"] == pytest.approx(exact.info["subsidy"], abs=1e-8)
    assert sampled.method == "least_core" and sampled.n_evaluations == 802 and sampled.n_samples == 800


def test_a_budget_covering_every_coalition_enumerates():
    game = CountingGame(MajorityGame(4, 3))
    result = sr.least_core(game, 16, seed=0)
    assert result.info["stopped_by"] == "enumeration" and result.n_evaluations == 16 == game.rows
    np.testing.assert_array_equal(result.values, sr.exact_least_core(MajorityGame(4, 3)).values)


def test_same_seed_same_bits_and_any_chunking():
    game = sr.random_unanimity_sum(30, seed=4)
    a = sr.least_core(game, 302, seed=7)
    b = sr.least_core(game, 302, seed=7, chunk_size=13)
    c = sr.least_core(game, 302, seed=8)
    np.testing.assert_array_equal(a.values, b.values)
    assert a.info["subsidy"] == b.info["subsidy"] and a.seed == 7
    assert not np.array_equal(a.values, c.values)
    assert a.n_evaluations == 302 and a.info["unspent_evaluations"] == 0


def test_coalitions_come_in_complementary_pairs():
    masks = sr.estimators.least_core_coalitions(3, 50, 9)
    np.testing.assert_array_equal(masks[0::2], ~masks[1::2])
    np.testing.assert_array_equal(masks, sr.estimators.least_core_coalitions(3, 50, 9))


def test_sampled_values_satisfy_the_sampled_constraints_and_efficiency():
    game = sr.random_unanimity_sum(40, seed=6)
    result = sr.least_core(game, 2 + 2 * 200, seed=2, empty_utility=0.0)
    masks = sr.estimators.least_core_coalitions(2, 200, 40)
    slack = masks @ result.values - game.evaluate(masks)
    proper = (masks.sum(axis=1) > 0) & (masks.sum(axis=1) < 40)
    scale = float(np.abs(game.evaluate(np.vstack([masks, np.ones((1, 40), bool)]))).max())
    assert slack[proper].min() >= -result.info["subsidy"] - 1.1e-6 * scale
    assert result.values.sum() == pytest.approx(float(game.evaluate(np.ones((1, 40), bool))[0]), rel=1e-12)
    assert result.n_evaluations == 401 and result.info["unspent_evaluations"] == 1


def test_parallel_evaluation_gives_the_same_bits():
    from joblib import parallel_config

    game = sr.random_unanimity_sum(25, seed=1)
    serial = sr.least_core(game, 252, seed=3)
    with parallel_config(backend="threading"):
        parallel = sr.least_core(game, 252, seed=3, n_jobs=2)
    np.testing.assert_array_equal(serial.values, parallel.values)


def test_interrupted_then_resumed_equals_uninterrupted(tmp_path):
    from games import Interrupted, InterruptingGame

    game = sr.random_unanimity_sum(20, seed=2)
    path = tmp_path / "least_core.ckpt"
    with pytest.raises(Interrupted):
        sr.least_core(InterruptingGame(game, after=3), 202, seed=5, chunk_size=20, checkpoint=path)
    counting = CountingGame(game)
    resumed = sr.least_core(counting, 202, chunk_size=20, checkpoint=path)
    whole = sr.least_core(game, 202, seed=5)
    np.testing.assert_array_equal(resumed.values, whole.values)
    assert resumed.seed == 5 and counting.rows < 202 and resumed.info["resumed_samples"] > 0


def test_one_player_gets_the_whole_game_and_an_unbounded_subsidy():
    game = sr.as_game(lambda m: 5.0 + 2.0 * m.sum(axis=1), 1, vectorized=True)
    result = sr.exact_least_core(game)
    np.testing.assert_allclose(result.values, [2.0])
    assert result.info["subsidy"] == -np.inf and result.info["lp_status"] == "unconstrained"


@pytest.mark.parametrize("call,error,match", [
    (lambda g: sr.least_core(g, 3, 0), ValueError, "budget=3 does not pay for"),
    (lambda g: sr.least_core(g, -1, 0), ValueError, "budget must be >= 0"),
    (lambda g: sr.least_core(g, 10.5, 0), TypeError, "budget must be an integer"),
    (lambda g: sr.least_core(g, 100, -1), ValueError, "seed must be >= 0"),
    (lambda g: sr.least_core(g, 100, 0, tolerance=0.0), ValueError, "tolerance must be > 0"),
    (lambda g: sr.least_core(g, 100, 0, tolerance="1e-6"), TypeError, "tolerance must be a real number"),
    (lambda g: sr.least_core(g, 100, 0, solver="FOO"), ValueError, "solver must be one of"),
    (lambda g: sr.least_core(g, 100, 0, chunk_size=0), ValueError, "chunk_size must be >= 1"),
    (lambda g: sr.least_core(g, 100, 0, n_jobs=0), ValueError, "n_jobs must be"),
    (lambda g: sr.least_core(g, 100, 0, empty_utility=np.nan), ValueError, "empty_utility must be finite"),
    (lambda g: sr.least_core(g, 100, 0, progress="yes"), TypeError, "progress must be True, False or None"),
    (lambda g: sr.least_core(g, 100, 0, checkpoint="x.ckpt", checkpoint_interval=-1), ValueError,
     "checkpoint_interval must be >= 0"),
    (lambda g: sr.exact_least_core(g, max_players=10), ValueError, "exact_least_core enumerates 2.N coalitions.*"
                                                                   "least_core"),
    (lambda g: sr.exact_least_core(g, tolerance=-1.0), ValueError, "tolerance must be > 0"),
    (lambda g: sr.exact_least_core(g, solver=3), TypeError, "solver must be the name"),
    (lambda g: sr.exact_least_core(g, chunk_size=1.5), TypeError, "chunk_size must be an integer"),
    (lambda g: sr.exact_least_core(g, method="simplex"), ValueError, "method must be one of"),
    (lambda g: sr.least_core(g, 100, 0, method=None), ValueError, "method must be one of"),
])
def test_bad_input_is_refused_before_any_evaluation(call, error, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    game = CountingGame(sr.random_unanimity_sum(12, seed=0))
    with pytest.raises(error, match=match):
        call(game)
    assert game.rows == 0


def test_a_large_solve_is_announced_before_any_evaluation():
    """50,000 coalitions of 5,000 players: a dense solve of about half an hour is announced, not started blind."""
    import warnings

    game = CountingGame(sr.random_unanimity_sum(5_000, seed=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(UserWarning, match=r"50,000 sampled coalitions of 5,000 players .* minutes"):
            sr.least_core(game, 50_002, seed=0)
    assert game.calls == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        lc.warn_if_the_solve_is_large(10_000, 1_000, "ipm")  # N = 1,000 at 10 N: about 30 s, silent
        lc.warn_if_the_solve_is_large(50_000, 5_000, "highs")  # the reference solver has no such model
