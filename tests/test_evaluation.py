"""Point removal: the curves' exact utilities on an additive game, the random baseline, the plot, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import shapley_research as sr
from shapley_research.evaluation import ORDERS, removal_masks

WEIGHTS = np.array([1.0, -2.0, 3.0, 0.5, -0.5, 2.0, 0.0, 1.5])
GAME = sr.as_game(lambda masks: masks @ WEIGHTS, 8, vectorized=True)


def test_additive_game_curves_are_the_sums_left():
    curves = sr.point_removal(GAME, WEIGHTS, [0.0, 0.25, 0.5], n_random=3)
    assert list(curves["order"].unique()) == list(ORDERS)
    lowest = curves[curves["order"] == "lowest first"]
    highest = curves[curves["order"] == "highest first"]
    ascending = np.sort(WEIGHTS)
    np.testing.assert_array_equal(lowest["n_removed"], [0, 2, 4])
    np.testing.assert_allclose(lowest["utility"], [WEIGHTS.sum() - ascending[:k].sum() for k in (0, 2, 4)])
    np.testing.assert_allclose(highest["utility"], [WEIGHTS.sum() - ascending[::-1][:k].sum() for k in (0, 2, 4)])
    assert (highest["utility_sd"] == 0).all() and (lowest["utility_sd"] == 0).all()


def test_exact_values_beat_random_values_and_random_sits_between():
    curves = sr.point_removal(GAME, sr.exact_shapley(GAME), [0.25, 0.5], n_random=20, seed=3)
    by_order = {order: curves[curves["order"] == order]["utility"].to_numpy() for order in ORDERS}
    assert np.all(by_order["highest first"] < by_order["random"])
    assert np.all(by_order["random"] < by_order["lowest first"])


def test_random_baseline_is_the_mean_over_seeded_random_rankings():
    first = sr.point_removal(GAME, WEIGHTS, [0.5], n_random=50, seed=1)
    again = sr.point_removal(GAME, WEIGHTS, [0.5], n_random=50, seed=1)
    assert first.equals(again)
    random = first[first["order"] == "random"].iloc[0]
    # removing 4 of 8 uniformly at random leaves half the total in expectation
    assert random["utility"] == pytest.approx(WEIGHTS.sum() / 2, abs=4 * random["utility_sd"] / np.sqrt(50))
    assert random["utility_sd"] > 0


def test_ties_are_removed_in_index_order():
    masks, removed = removal_masks([1.0, 0.0, 0.0, 0.0], [0.5])
    np.testing.assert_array_equal(masks[0], [True, False, False, True])
    assert removed.tolist() == [2]


def test_plot_draws_three_lines_and_a_band():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    curves = sr.point_removal(GAME, WEIGHTS, [0.0, 0.25, 0.5], n_random=4)
    figure = sr.plot_point_removal(curves, ylabel="sum of weights")
    ax = figure.axes[0]
    assert len(ax.lines) == 3 and len(ax.collections) == 1 and ax.get_ylabel() == "sum of weights"
    with pytest.raises(ValueError, match="lacks the columns"):
        sr.plot_point_removal(curves.drop(columns="utility_sd"))


@pytest.mark.parametrize("call, error, message", [
    (lambda: sr.point_removal(GAME, WEIGHTS[:5]), ValueError, "one value per player of the game \\(8\\), got 5"),
    (lambda: sr.point_removal(GAME, np.r_[WEIGHTS[:7], np.nan]), ValueError, "NaN or infinite"),
    (lambda: sr.point_removal(GAME, WEIGHTS, [0.0, 1.0]), ValueError, "fractions must be one or more numbers in"),
    (lambda: sr.point_removal(GAME, WEIGHTS, [np.nan]), ValueError, "fractions must be one or more numbers in"),
    (lambda: sr.point_removal(GAME, WEIGHTS, []), ValueError, "fractions must be one or more numbers in"),
    (lambda: sr.point_removal(GAME, WEIGHTS, n_random=0), ValueError, "n_random"),
    (lambda: sr.point_removal(GAME, WEIGHTS, ["a"]), TypeError, "fractions"),
])
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
