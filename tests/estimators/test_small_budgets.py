"""The smallest budget of every sampling estimator: refused one evaluation below it, working at it.

The rule (``SAMPLING_PARAMETERS``): a budget must pay for the estimator's
fixed evaluations and one sample; ``msr_banzhaf`` needs two coalitions, so
that a player can be sampled both in and out. The error names ``budget`` and
the minimum, in correct English ("1 utility evaluation", "2 ... evaluations").
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from shapley_research import (as_game, beta_shapley, compressive_shapley, group_testing_shapley, msr_banzhaf,
                              permutation_shapley, stratified_svarm_shapley, unbiased_kernel_shapley)
from shapley_research import owen_shapley
from shapley_research.estimators._sampling._loop import evaluations_text, units_from_budget
from shapley_research.estimators import kernel_shapley
from shapley_research.estimators import leverage_shapley

N = 12  # 2^12 coalitions: no budget here pays for enumerating the game


def additive(masks):
    masks = np.asarray(masks, dtype=bool)
    return masks @ np.linspace(-1.0, 2.0, masks.shape[1]) + 0.1 * np.sqrt(masks.sum(axis=1))


GAME = as_game(additive, N, vectorized=True)

ESTIMATORS = {
    "permutation": lambda g, b: permutation_shapley(g, b, seed=0),
    "permutation_antithetic": lambda g, b: permutation_shapley(g, b, seed=0, antithetic=True),
    "permutation_rotations": lambda g, b: permutation_shapley(g, b, seed=0, rotations=3),
    "permutation_truncated": lambda g, b: permutation_shapley(g, b, seed=0, truncation=0.2),
    "group_testing_improved": lambda g, b: group_testing_shapley(g, b, seed=0),
    "group_testing_paper": lambda g, b: group_testing_shapley(g, b, seed=0, variant="paper"),
    "compressive": lambda g, b: compressive_shapley(g, b, seed=0),
    "svarm": lambda g, b: stratified_svarm_shapley(g, b, seed=0),
    "svarm_neyman": lambda g, b: stratified_svarm_shapley(g, b, seed=0, allocation="neyman"),
    "msr_banzhaf": lambda g, b: msr_banzhaf(g, b, seed=0),
    "kernel": lambda g, b: unbiased_kernel_shapley(g, b, seed=0),
    "kernel_unpaired": lambda g, b: unbiased_kernel_shapley(g, b, seed=0, paired=False),
    "owen": lambda g, b: owen_shapley(g, b, seed=0),
    "owen_antithetic": lambda g, b: owen_shapley(g, b, seed=0, antithetic=True),
    "kernel_regression": lambda g, b: kernel_shapley(g, b, seed=0),
    "kernel_regression_unpaired": lambda g, b: kernel_shapley(g, b, seed=0, paired=False),
    "leverage": lambda g, b: leverage_shapley(g, b, seed=0),
    "leverage_unpaired": lambda g, b: leverage_shapley(g, b, seed=0, paired=False),
    "beta_shapley": lambda g, b: beta_shapley(g, b, seed=0),
    "beta_shapley_4_1": lambda g, b: beta_shapley(g, b, seed=0, alpha=4, beta=1),
}

MINIMUM = re.compile(r"it needs at least (\d+) utility evaluations?\b")


def smallest_budget(name: str) -> int:
    with pytest.raises(ValueError, match="budget=0 is smaller than") as caught:
        ESTIMATORS[name](GAME, 0)
    return int(MINIMUM.search(str(caught.value)).group(1))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_one_below_the_smallest_budget_is_refused_naming_it(name):
    minimum = smallest_budget(name)
    with pytest.raises(ValueError, match=rf"budget={minimum - 1} is smaller than .*at least {minimum} utility "):
        ESTIMATORS[name](GAME, minimum - 1)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_the_smallest_budget_estimates_every_player(name):
    minimum = smallest_budget(name)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "msr_banzhaf: .* players were sampled only in", UserWarning)
        result = ESTIMATORS[name](GAME, minimum)
    assert result.n_samples >= 1 and result.n_evaluations <= minimum
    assert result.values.shape == (N,) and np.isfinite(result.values).all()


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_messages_count_evaluations_in_good_english(name):
    with pytest.raises(ValueError) as caught:
        ESTIMATORS[name](GAME, 0)
    message = str(caught.value)
    assert "1 utility evaluations" not in message and "0 fixed +" not in message


def test_evaluations_text_and_the_singular():
    assert evaluations_text(1) == "1 utility evaluation"
    assert evaluations_text(2) == "2 utility evaluations" and evaluations_text(0) == "0 utility evaluations"
    with pytest.raises(ValueError, match=r"it needs at least 1 utility evaluation \(1 per test\)\.$"):
        units_from_budget(0, 0, 1, "test")
    with pytest.raises(ValueError, match=r"at least 12 utility evaluations \(2 fixed \+ 10 per permutation\)"):
        units_from_budget(11, 2, 10, "permutation")


def test_msr_banzhaf_refuses_one_coalition():
    with pytest.raises(ValueError, match=r"budget=1 is smaller than one sampled coalition per side: it needs at "
                                         r"least 2 utility evaluations \(1 per sampled coalition\), so that "
                                         r"msr_banzhaf can sample a player both in and out"):
        msr_banzhaf(GAME, 1, seed=0)  # it used to return all zeros without a word


def test_msr_banzhaf_warns_when_a_player_is_sampled_on_one_side_only():
    with pytest.warns(UserWarning, match=r"msr_banzhaf: \d+ of 12 players were sampled only in, or only out of, "
                                         r"all 3 coalitions.*a budget of 16 or more"):
        few = msr_banzhaf(GAME, 3, seed=0)
    assert few.info["one_sided_players"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        many = msr_banzhaf(GAME, 200, seed=0)
    assert many.info["one_sided_players"] == []


@pytest.mark.enumeration
def test_msr_banzhaf_enumerates_a_one_player_game_on_one_evaluation():
    game = as_game(additive, 1, vectorized=True)
    result = msr_banzhaf(game, 1, seed=0, empty_utility=0.0)  # pays for every coalition: no refusal
    assert result.info["stopped_by"] == "enumeration"
    np.testing.assert_allclose(result.values, additive(np.ones((1, 1))))


def test_svarm_of_three_players_needs_one_pass_over_its_exact_strata():
    game = as_game(additive, 3, vectorized=True)
    with pytest.raises(ValueError, match=r"budget=7 is smaller than one pass over the exact strata of a "
                                         r"3-player game: it needs 8 utility evaluations\.$"):
        stratified_svarm_shapley(game, 7, seed=0)


@pytest.mark.enumeration
def test_sampling_forced_holds_in_its_own_thread_only():
    """A study of the sampler on a small game samples inside the block; other threads, and the code after it,
    keep enumerating (a module-wide switch would leak across threads)."""
    import threading

    from shapley_research.estimators._small_games import sampling_forced

    small = as_game(additive, 4, vectorized=True)
    seen = {}

    def other_thread():
        seen["other"] = permutation_shapley(small, 500, seed=0).info["stopped_by"]

    with sampling_forced():
        inside = permutation_shapley(small, 500, seed=0)
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
    assert inside.info["stopped_by"] != "enumeration" and inside.n_evaluations > 2 ** 4
    assert seen["other"] == "enumeration"
    assert permutation_shapley(small, 500, seed=0).info["stopped_by"] == "enumeration"


def test_coalition_utilities_are_the_table_exact_shapley_enumerates():
    from shapley_research import exact_shapley
    from shapley_research.estimators import coalition_utilities

    small = as_game(additive, 5, vectorized=True)
    table = coalition_utilities(small, chunk_size=7)
    codes = np.arange(32)
    masks = ((codes[:, None] >> np.arange(5)) & 1).astype(bool)
    np.testing.assert_array_equal(table, additive(masks))
    info = exact_shapley(small).info
    assert table[0] == info["empty_utility"] and table[-1] == info["full_utility"]
    with pytest.raises(ValueError, match="max_players"):
        coalition_utilities(GAME, max_players=10)
