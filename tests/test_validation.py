"""Bad input fails early, with an error that names the argument."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from games import AdditiveGame, MajorityGame
from shapley_research import (as_game, compressive_shapley, exact_shapley, group_testing_shapley,
                              permutation_shapley, uniform_shapley)
from shapley_research.games import Game

N = 5
GAME = AdditiveGame(np.arange(1.0, N + 1))

# estimator(game, budget, seed) and the smallest budget that affords one sample
SAMPLERS = {
    "permutation": (lambda g, b, s=0: permutation_shapley(g, b, s), N + 1, "permutation"),
    "antithetic": (lambda g, b, s=0: permutation_shapley(g, b, s, antithetic=True), 2 * N + 1,
                   "antithetic pair"),
    "gt_improved": (lambda g, b, s=0: group_testing_shapley(g, b, s), 3, "test"),
    "gt_paper": (lambda g, b, s=0: group_testing_shapley(g, b, s, variant="paper"), 3, "test"),
    "compressive": (lambda g, b, s=0: compressive_shapley(g, b, s), N + 2, "permutation"),
}


@pytest.fixture(params=sorted(SAMPLERS))
def sampler(request):
    return SAMPLERS[request.param]


# --- budget ---

@pytest.mark.parametrize("budget", [10.5, "100", None, [100], np.nan, True])
def test_budget_must_be_an_integer(sampler, budget):
    estimator, _, _ = sampler
    with pytest.raises(TypeError, match="budget must be an integer"):
        estimator(GAME, budget)


def test_budget_must_be_non_negative(sampler):
    estimator, _, _ = sampler
    with pytest.raises(ValueError, match="budget must be >= 0"):
        estimator(GAME, -10)


def test_budget_must_afford_one_sample(sampler):
    estimator, minimum, what = sampler
    for budget in (0, minimum - 1):
        with pytest.raises(ValueError, match=rf"budget={budget} is smaller than one {what}"):
            estimator(GAME, budget)
    assert estimator(GAME, minimum).n_samples >= 1  # the minimum itself is fine
    # integral floats and numpy integers are accepted as budgets
    assert estimator(GAME, float(minimum)).n_evaluations == estimator(GAME, np.int64(minimum)).n_evaluations


# --- seed ---

@pytest.mark.parametrize("seed,error,match", [
    (-1, ValueError, "seed must be >= 0"),
    (1.5, TypeError, "seed must be an integer"),
    ("7", TypeError, "seed must be an integer"),
    (np.random.default_rng(0), TypeError, "seed must be an integer"),
])
def test_bad_seed(sampler, seed, error, match):
    estimator, minimum, _ = sampler
    with pytest.raises(error, match=match):
        estimator(GAME, 4 * minimum, seed)


# --- choices ---

def test_invalid_choices():
    with pytest.raises(ValueError, match="variant must be one of"):
        group_testing_shapley(GAME, 100, 0, variant="fast")
    with pytest.raises(ValueError, match="recovery must be one of"):
        group_testing_shapley(GAME, 100, 0, variant="paper", recovery="lp")
    with pytest.raises(ValueError, match="centering must be one of"):
        group_testing_shapley(GAME, 100, 0, centering="quadratic")
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        group_testing_shapley(GAME, 100, 0, variant="paper", epsilon=-1.0)
    with pytest.raises(ValueError, match="n_measurements must be >= 1"):
        compressive_shapley(GAME, 100, 0, n_measurements=0)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        permutation_shapley(GAME, 100, 0, batch_size=0)


def test_group_testing_needs_two_players():
    with pytest.raises(ValueError, match="game.n_players must be >= 2"):
        group_testing_shapley(AdditiveGame([1.0]), 100, 0)


# --- games ---

def test_as_game_rejects_bad_arguments():
    with pytest.raises(TypeError, match="fn must be callable"):
        as_game(42, 3)
    with pytest.raises(ValueError, match="n_players must be >= 1"):
        as_game(lambda m: 0.0, 0)
    with pytest.raises(TypeError, match="n_players must be an integer"):
        as_game(lambda m: 0.0, 2.5)
    with pytest.raises(TypeError, match="n_players must be an integer"):
        as_game(lambda m: 0.0, "3")


@pytest.mark.parametrize("masks,error,match", [
    (np.ones((2, N + 1), bool), ValueError, r"masks must have shape \(m, n_players\)"),
    (np.ones(N, bool), ValueError, "masks must have shape"),
    (np.ones((1, 2, N), bool), ValueError, "masks must have shape"),
    (np.array([["a"] * N]), TypeError, "masks must be a boolean array"),
    (np.full((1, N), 0.5), ValueError, "masks must contain only booleans"),
    (np.full((1, N), 2), ValueError, "masks must contain only booleans"),
])
def test_evaluate_rejects_bad_masks(masks, error, match):
    with pytest.raises(error, match=match):
        GAME.evaluate(masks)


def test_evaluate_accepts_zero_one_masks():
    np.testing.assert_allclose(GAME.evaluate(np.eye(N, dtype=int)), np.arange(1.0, N + 1))


class BadGame(Game):
    """Returns whatever it is told to."""

    def __init__(self, n_players, output):
        self.n_players, self.output = n_players, output

    def _evaluate(self, masks):
        return self.output(masks)


@pytest.mark.parametrize("output,match", [
    (lambda m: np.full(m.shape[0], np.nan), "non-finite utilities"),
    (lambda m: np.where(m.sum(axis=1) >= 2, np.inf, 1.0), "non-finite utilities"),
    (lambda m: np.zeros(m.shape[0] + 1), "one utility per coalition"),
    (lambda m: np.zeros((m.shape[0], 2)), "one utility per coalition"),
    (lambda m: 1.0, "one utility per coalition"),
])
def test_bad_game_output_is_caught_by_every_estimator(output, match):
    game = BadGame(4, output)
    with pytest.raises(ValueError, match=match):
        game.evaluate(np.tri(4, dtype=bool))  # coalitions of sizes 1..4
    for run in (exact_shapley, uniform_shapley, lambda g: permutation_shapley(g, 100, 0),
                lambda g: group_testing_shapley(g, 100, 0), lambda g: compressive_shapley(g, 100, 0)):
        with pytest.raises(ValueError, match=match):
            run(game)


def test_non_numeric_game_output():
    game = BadGame(3, lambda m: ["x"] * m.shape[0])
    with pytest.raises(TypeError, match="must return real numbers"):
        game.evaluate(np.ones((2, 3), bool))


def test_function_game_returning_nan():
    game = as_game(lambda mask: np.nan if mask.all() else 0.0, 3)
    with pytest.raises(ValueError, match="non-finite"):
        exact_shapley(game)


class PlainGame:
    """A duck-typed game (not a Game subclass): estimators must still check its output."""

    def __init__(self, n_players, output):
        self.n_players, self.output = n_players, output

    def evaluate(self, masks):
        return self.output(masks)


def test_duck_typed_game_output_is_checked():
    short = PlainGame(4, lambda m: np.zeros(max(m.shape[0] - 1, 0)))
    nan = PlainGame(4, lambda m: np.full(m.shape[0], np.nan))
    for game, match in ((short, "one utility per coalition"), (nan, "non-finite")):
        for run in (exact_shapley, uniform_shapley, lambda g: permutation_shapley(g, 100, 0),
                    lambda g: group_testing_shapley(g, 100, 0, variant="paper"),
                    lambda g: compressive_shapley(g, 100, 0)):
            with pytest.raises(ValueError, match=match):
                run(game)


@pytest.mark.sampling  # the sampling path itself, on a small game
def test_bad_prefix_path_output_is_caught():
    class BadPrefixes(AdditiveGame):
        def evaluate_prefixes(self, permutations):
            return np.full(np.asarray(permutations).shape, np.inf)

    with pytest.raises(ValueError, match="BadPrefixes.evaluate_prefixes returned non-finite"):
        permutation_shapley(BadPrefixes([1.0, 2.0]), 10, 0)


@pytest.mark.parametrize("n_players", [0, -1, 2.5, None, "3"])
def test_games_with_bad_n_players(n_players):
    game = PlainGame(n_players, lambda m: np.zeros(m.shape[0]))
    error = ValueError if isinstance(n_players, int) else TypeError
    for run in (exact_shapley, uniform_shapley, lambda g: permutation_shapley(g, 100, 0),
                lambda g: group_testing_shapley(g, 100, 0), lambda g: compressive_shapley(g, 100, 0)):
        with pytest.raises(error, match="game.n_players"):
            run(game)


def test_exact_refuses_large_games():
    with pytest.raises(ValueError, match="max_players"):
        exact_shapley(MajorityGame(25, 13))
    with pytest.raises(ValueError, match="max_players must be >= 1"):
        exact_shapley(GAME, max_players=0)
    with pytest.raises(ValueError, match="chunk_size must be >= 1"):
        exact_shapley(GAME, chunk_size=0)


def test_empty_utility_must_be_finite():
    with pytest.raises(ValueError, match="empty_utility must be finite"):
        permutation_shapley(GAME, 100, 0, empty_utility=np.inf)
    with pytest.raises(TypeError, match="empty_utility must be a real number"):
        exact_shapley(GAME, empty_utility="0")


def test_whole_number_labels_that_look_like_a_quantity_are_taken_as_classes_with_a_warning():
    """Counts or prices stored as integers would be valued as hundreds of classes: said, at the user's line."""
    from sklearn.linear_model import LogisticRegression

    from shapley_research import ModelUtility

    rng = np.random.default_rng(0)
    X, X_test = rng.normal(size=(100, 3)), rng.normal(size=(40, 3))
    prices = rng.integers(0, 1000, 100)
    with pytest.warns(UserWarning, match=r"y_train has \d+ distinct numeric labels among 100 points") as caught:
        ModelUtility(LogisticRegression(), X, prices, X_test, prices[:40])
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ModelUtility(LogisticRegression(), X, prices % 10, X_test, prices[:40] % 10)  # ten classes: no warning
