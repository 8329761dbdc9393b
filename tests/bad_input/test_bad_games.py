"""Every estimator against bad games: wrong outputs, raising games, one-player games.

Part of the bad-input tables (tests/bad_input/_cases.py: what they check, the shared toys, the timeout).
"""

from __future__ import annotations

import numpy as np
import pytest

from shapley_research import (as_game, beta_shapley, compressive_shapley, exact_banzhaf, exact_beta_shapley,
                              exact_least_core, exact_shapley, group_testing_shapley, kernel_shapley, least_core,
                              leave_one_out, leverage_shapley, msr_banzhaf, owen_shapley, permutation_shapley,
                              stratified_svarm_shapley, unbiased_kernel_shapley, uniform_shapley)

from bad_input._cases import (additive, assert_raises, Boom, DuckGame, explode, N, NO_HANG, NoEvaluate, NoPlayers,
                              PrefixGame, row)

pytestmark = NO_HANG

# --------------------------------------------------------------------------------------------
# 1. Estimators x bad games
# --------------------------------------------------------------------------------------------


ESTIMATORS = {
    "exact": lambda g: exact_shapley(g),
    "uniform": lambda g: uniform_shapley(g),
    "permutation": lambda g: permutation_shapley(g, 40, 0),
    "permutation_antithetic": lambda g: permutation_shapley(g, 40, 0, antithetic=True),
    "group_testing_improved": lambda g: group_testing_shapley(g, 40, 0),
    "group_testing_paper": lambda g: group_testing_shapley(g, 40, 0, variant="paper"),
    "compressive": lambda g: compressive_shapley(g, 40, 0),
    "svarm": lambda g: stratified_svarm_shapley(g, 40, 0),
    "kernel": lambda g: unbiased_kernel_shapley(g, 40, 0),
    "owen": lambda g: owen_shapley(g, 40, 0),
    "kernel_regression": lambda g: kernel_shapley(g, 40, 0),
    "leverage": lambda g: leverage_shapley(g, 40, 0),
    "permutation_truncated": lambda g: permutation_shapley(g, 40, 0, truncation=0.2),
    "exact_banzhaf": lambda g: exact_banzhaf(g),
    "msr_banzhaf": lambda g: msr_banzhaf(g, 40, 0),
    "exact_beta_shapley": lambda g: exact_beta_shapley(g),
    "beta_shapley": lambda g: beta_shapley(g, 40, 0),
    "leave_one_out": lambda g: leave_one_out(g),
    "exact_least_core": lambda g: exact_least_core(g),
    "least_core": lambda g: least_core(g, 40, 0),  # N = 3: the budget enumerates
}
GROUP_TESTING = {"group_testing_improved", "group_testing_paper"}

MIN_PLAYERS = r"game.n_players must be >= \d"
BAD_GAMES = [
    # (id, game factory, error, match[, {estimator: why it still fails}])
    ("plain_function", lambda: additive, TypeError, r"game(\.n_players)? must"),
    ("n_players_missing", NoPlayers, TypeError, "game.n_players must be an integer"),
    ("n_players_zero", lambda: DuckGame(0), ValueError, MIN_PLAYERS),
    ("n_players_negative", lambda: DuckGame(-2), ValueError, MIN_PLAYERS),
    ("n_players_fraction", lambda: DuckGame(2.5), TypeError, "game.n_players must be an integer"),
    ("n_players_string", lambda: DuckGame("3"), TypeError, "game.n_players must be an integer"),
    ("n_players_bool", lambda: DuckGame(True), TypeError, "game.n_players must be an integer"),
    ("n_players_nan", lambda: DuckGame(np.nan), TypeError, "game.n_players must be an integer"),
    ("evaluate_missing", NoEvaluate, TypeError, "game.evaluate must be a method"),
    ("returns_nan", lambda: DuckGame(output=lambda m: np.full(len(m), np.nan)), ValueError, "non-finite"),
    ("returns_inf_on_grand_coalition",
     lambda: DuckGame(output=lambda m: np.where(m.all(axis=1), np.inf, additive(m))), ValueError, "non-finite"),
    ("returns_minus_inf_on_empty_coalition",
     lambda: DuckGame(output=lambda m: np.where(m.any(axis=1), additive(m), -np.inf)), ValueError, "non-finite"),
    ("returns_too_few", lambda: DuckGame(output=lambda m: additive(m)[:-1]), ValueError,
     "one utility per coalition"),
    ("returns_too_many", lambda: DuckGame(output=lambda m: np.r_[additive(m), 0.0]), ValueError,
     "one utility per coalition"),
    ("returns_2d", lambda: DuckGame(output=lambda m: np.c_[additive(m), additive(m)]), ValueError,
     "one utility per coalition"),
    ("returns_scalar", lambda: DuckGame(output=lambda m: 1.0), ValueError, "one utility per coalition"),
    ("returns_none", lambda: DuckGame(output=lambda m: None), ValueError, "one utility per coalition"),
    ("returns_dict", lambda: DuckGame(output=lambda m: {}), TypeError, "must return real numbers"),
    ("returns_strings", lambda: DuckGame(output=lambda m: ["1.0"] * len(m)), TypeError,
     "must return real numbers"),
    ("returns_complex", lambda: DuckGame(output=lambda m: additive(m) * (1 + 1j)), TypeError,
     "must return real numbers"),
]


# (estimator, case) pairs where the bad output is never asked for: nothing to reject
NEVER_EVALUATED = {("leave_one_out", "returns_minus_inf_on_empty_coalition")}  # U(D) and U(D - i) only


def _game_rows():
    for case_id, factory, error, match in BAD_GAMES:
        for name in ESTIMATORS:
            if (name, case_id) not in NEVER_EVALUATED:
                yield row(f"{name}-{case_id}", name, factory, error, match)


@pytest.mark.parametrize("estimator,factory,error,match", list(_game_rows()))
def test_estimator_rejects_bad_game(estimator, factory, error, match):
    assert_raises(lambda: ESTIMATORS[estimator](factory()), error, match)


@pytest.mark.parametrize("estimator,case_id", sorted(NEVER_EVALUATED))
def test_a_bad_output_never_asked_for_is_no_error(estimator, case_id):
    factory = next(f for c, f, *_ in BAD_GAMES if c == case_id)
    assert np.isfinite(ESTIMATORS[estimator](factory()).values).all()


PREFIX_OUTPUTS = [
    ("prefix_nan", lambda p: np.full(p.shape, np.nan), ValueError, "evaluate_prefixes returned non-finite"),
    ("prefix_wrong_shape", lambda p: np.zeros((p.shape[0], p.shape[1] + 1)), ValueError,
     "evaluate_prefixes must return one utility per coalition"),
    ("prefix_dict", lambda p: {}, TypeError, "evaluate_prefixes must return real numbers"),
    ("prefix_complex", lambda p: np.ones(p.shape, complex), TypeError, "evaluate_prefixes must return real"),
]


@pytest.mark.sampling  # the sampling path itself, on a small game
@pytest.mark.parametrize("estimator", ["permutation", "permutation_antithetic", "compressive"])
@pytest.mark.parametrize("output,error,match", [row(c[0], *c[1:]) for c in PREFIX_OUTPUTS])
def test_bad_prefix_path_output(estimator, output, error, match):
    assert_raises(lambda: ESTIMATORS[estimator](PrefixGame(output)), error, match)


@pytest.mark.sampling  # the sampling path itself, on a small game
@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
@pytest.mark.parametrize("where", ["evaluate", "evaluate_prefixes", "function_game"])
def test_game_that_raises_propagates(estimator, where):
    """The game's own exception comes out unchanged (never swallowed, never re-typed)."""
    if where == "evaluate":
        game = DuckGame(output=explode)
    elif where == "evaluate_prefixes":
        game = PrefixGame(explode)
    else:
        game = as_game(lambda mask: explode() if mask.any() else 0.0, N)
    if where == "evaluate_prefixes" and estimator not in {"permutation", "permutation_antithetic", "compressive"}:
        game = DuckGame(output=explode)  # these estimators never take the prefix path
    with pytest.raises(Boom, match="the game's own error"):
        ESTIMATORS[estimator](game)


@pytest.mark.sampling  # the sampling path itself, on a small game
@pytest.mark.parametrize("estimator", ["permutation", "group_testing_improved", "compressive"])
def test_game_that_raises_in_a_worker_propagates(estimator):
    from joblib import parallel_config

    run = {"permutation": lambda g: permutation_shapley(g, 40, 0, n_jobs=2, batch_size=2),
           "group_testing_improved": lambda g: group_testing_shapley(g, 40, 0, n_jobs=2, batch_size=2),
           "compressive": lambda g: compressive_shapley(g, 40, 0, n_jobs=2, batch_size=2)}[estimator]
    # the anchors (empty and grand coalition) are evaluated in this thread; every other coalition raises
    game = DuckGame(output=lambda m: explode() if ((m.sum(axis=1) > 0) & (m.sum(axis=1) < N)).any()
                    else additive(m))
    with parallel_config(backend="threading"), pytest.raises(Boom, match="the game's own error"):
        run(game)


@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
def test_one_player_game(estimator):
    """One player: the value is U({0}) - U(empty) (efficiency); group testing needs two players."""
    game = as_game(lambda m: 5.0 + 2.0 * m.sum(axis=1), 1, vectorized=True)
    run = {"permutation": lambda g: permutation_shapley(g, 2, 0),
           "permutation_antithetic": lambda g: permutation_shapley(g, 3, 0, antithetic=True),
           "compressive": lambda g: compressive_shapley(g, 3, 0)}.get(estimator, ESTIMATORS[estimator])
    if estimator in GROUP_TESTING:
        assert_raises(lambda: run(game), ValueError, "game.n_players must be >= 2")
    else:
        np.testing.assert_allclose(run(game).values, [2.0], atol=1e-6)


# DVRL learns selection probabilities, not a semivalue (no efficiency on one player): the bad games only.
# Its parameters are checked in tests/estimators/test_dvrl.py.
@pytest.mark.parametrize("factory,error,match", [row(case[0], *case[1:4]) for case in BAD_GAMES])
def test_dvrl_rejects_bad_game(factory, error, match):
    from shapley_research import dvrl

    assert_raises(lambda: dvrl(factory(), 64, 0, progress=False), error, match)  # 64 draws: empty and full too
