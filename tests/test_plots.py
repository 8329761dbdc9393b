"""plot_values: the curves, bands and marks read back from the Axes' artists, and bad input refused before drawing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import shapley_research as sr
from shapley_research import ValuationResult

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the headless backend)

VALUES = np.array([0.3, -1.0, 2.0, 0.0, -0.5, 1.0, 0.7, -2.0])
STDERR = np.array([0.1, 0.2, 0.05, 0.0, 0.3, np.nan, 0.1, 0.2])  # one NaN: no band at that point
RESULT = ValuationResult(values=VALUES, n_evaluations=0, method="mine", stderr=STDERR)
ASCENDING = np.argsort(VALUES, kind="stable")  # points 7, 1, 4, 3, 0, 6, 5, 2
Z = {0.95: 1.959963984540054, 0.9: 1.6448536269514722}  # standard normal quantiles 0.975 and 0.95


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def artist(ax, gid: str):
    found = [child for child in ax.get_children() if child.get_gid() == gid]
    assert len(found) == 1, f"{len(found)} artists with gid {gid!r}"
    return found[0]


def band_bounds(band) -> dict[float, tuple[float, float]]:
    """x -> (lower, upper) of a fill_between band: its polygons hold (x, lower) and (x, upper) at every x."""
    vertices = np.vstack([path.vertices for path in band.get_paths()])
    return {x: (vertices[vertices[:, 0] == x, 1].min(), vertices[vertices[:, 0] == x, 1].max())
            for x in np.unique(vertices[:, 0])}


@pytest.mark.parametrize("level", [0.95, 0.9])
def test_the_curve_is_the_sorted_values_and_the_band_the_normal_interval(level):
    ax = sr.plot_values(RESULT, level=level)
    x, y = artist(ax, "values:mine").get_data()
    np.testing.assert_array_equal(x, np.arange(1, 9))
    np.testing.assert_array_equal(y, np.sort(VALUES))
    bounds = band_bounds(artist(ax, "band:mine"))
    se = STDERR[ASCENDING]
    assert set(bounds) == {rank for rank, s in zip(x, se) if np.isfinite(s)}  # none at the NaN stderr
    for rank, value, s in zip(x, y, se):
        if np.isfinite(s):
            np.testing.assert_allclose(bounds[rank], (value - Z[level] * s, value + Z[level] * s), rtol=1e-12)
    assert f"mine ({level * 100:g}% interval)" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(list(line.get_ydata()) == [0, 0] for line in ax.lines)  # the zero line


@pytest.mark.parametrize("results", [VALUES, ValuationResult(VALUES, 0, "values"),
                                     ValuationResult(VALUES, 0, "values", stderr=np.full(8, np.nan))])
def test_no_band_without_standard_errors_and_a_plain_array_works(results):
    ax = sr.plot_values(results)
    np.testing.assert_array_equal(artist(ax, "values:values").get_ydata(), np.sort(VALUES))
    assert not [c for c in ax.collections if str(c.get_gid()).startswith("band:")]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["values"]


def test_an_exact_result_has_a_band_of_zero_width_and_no_interval_in_its_legend():
    ax = sr.plot_values(ValuationResult(VALUES, 0, "exact", stderr=np.zeros(8)))
    assert all(low == high for low, high in band_bounds(artist(ax, "band:exact")).values())
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["exact"]


def test_highlighted_points_are_marked_at_their_ranks():
    for highlight in ([7, 2, 3], np.isin(np.arange(8), [2, 3, 7])):
        ax = sr.plot_values(RESULT, highlight=highlight, highlight_label="flipped")
        marks = artist(ax, "highlight")
        # point 7 is the lowest (rank 1), point 3 the fourth, point 2 the highest (rank 8)
        np.testing.assert_array_equal(marks.get_offsets(), [[1, -2.0], [4, 0.0], [8, 2.0]])
        assert "flipped (3)" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_top_shows_the_lowest_and_highest_with_a_gap():
    ax = sr.plot_values(RESULT, top=2, highlight=[7, 3])  # point 3 (rank 4) is not shown
    x, y = artist(ax, "values:mine").get_data()
    np.testing.assert_array_equal(x, [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(y, [-2.0, -1.0, np.nan, 1.0, 2.0])  # NaN: the line breaks between the groups
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "7", "8"]
    assert set(band_bounds(artist(ax, "band:mine"))) == {1, 2, 5}  # point 5 (rank 7) has no stderr
    np.testing.assert_array_equal(artist(ax, "highlight").get_offsets(), [[1, -2.0]])
    assert "highlighted (1 of 2 shown)" in [t.get_text() for t in ax.get_legend().get_texts()]
    everything = sr.plot_values(RESULT, top=4)  # 2 top >= N: every point, no gap
    np.testing.assert_array_equal(artist(everything, "values:mine").get_ydata(), np.sort(VALUES))


def test_comparing_results_sorts_every_curve_by_the_first():
    other = VALUES[::-1] * 2
    ax = sr.plot_values({"a": RESULT, "b": other})
    np.testing.assert_array_equal(artist(ax, "values:a").get_ydata(), VALUES[ASCENDING])
    np.testing.assert_array_equal(artist(ax, "values:b").get_ydata(), other[ASCENDING])
    assert "value of a" in ax.get_xlabel()
    flipped = sr.plot_values({"b": other, "a": RESULT}, top=1)
    order = np.argsort(other, kind="stable")
    np.testing.assert_array_equal(artist(flipped, "values:a").get_ydata(),
                                  [VALUES[order[0]], np.nan, VALUES[order[-1]]])


def test_labels_sort_false_and_a_given_axes():
    _, given = plt.subplots()
    ax = sr.plot_values(RESULT, given, labels=pd.Series(0, index=[f"p{i}" for i in range(8)]), top=1)
    assert ax is given
    assert [t.get_text() for t in ax.get_xticklabels()] == ["p7", "p2"]
    unsorted = sr.plot_values(RESULT, sort=False)
    np.testing.assert_array_equal(artist(unsorted, "values:mine").get_data(), [np.arange(8), VALUES])


@pytest.mark.parametrize("kwargs, error, match", [
    ({"results": {}}, ValueError, "results must hold at least one result"),
    ({"results": {"a": VALUES, "b": VALUES[:5]}}, ValueError, r"results\['b'\] has 5 values, results\['a'\] 8"),
    ({"results": np.r_[VALUES[:7], np.nan]}, ValueError, "results has 1 non-finite values"),
    ({"results": {"a": VALUES, "b": np.r_[np.inf, VALUES[1:]]}}, ValueError, r"results\['b'\] has 1 non-finite"),
    ({"results": np.ones((2, 4))}, ValueError, r"results must hold one value per point"),
    ({"results": "values"}, TypeError, "results must be a ValuationResult"),
    ({"results": ["a", "b"]}, TypeError, "results must be an array of real numbers"),
    ({"highlight": [0, 8]}, ValueError, r"highlight indices must be in \[0, 8\), got \[8\]"),
    ({"highlight": [-1]}, ValueError, r"highlight indices must be in \[0, 8\)"),
    ({"highlight": np.ones(7, dtype=bool)}, ValueError, r"highlight as a boolean mask must have one entry per point"),
    ({"highlight": [0.5]}, TypeError, "highlight must be a boolean mask or a 1-D array of point indices"),
    ({"highlight_label": 3}, TypeError, "highlight_label must be a string"),
    ({"level": 1.0}, ValueError, r"level must be in \(0, 1\)"),
    ({"level": np.nan}, ValueError, r"level must be in \(0, 1\)"),
    ({"level": "0.9"}, TypeError, "level must be a real number"),
    ({"top": 0}, ValueError, "top must be >= 1"),
    ({"top": 1.5}, TypeError, "top must be an integer"),
    ({"top": True}, TypeError, "top must be an integer"),
    ({"top": 2, "sort": False}, ValueError, "top .* needs sort=True"),
    ({"sort": "yes"}, TypeError, "sort must be True or False"),
    ({"labels": ["a"]}, ValueError, r"labels must hold one label per point \(8\)"),
    ({"ax": "axes"}, TypeError, "ax must be a matplotlib Axes"),
    ({"results": ValuationResult(VALUES, 0, "m", stderr=-np.ones(8))}, ValueError, "stderr must be >= 0"),
])
def test_bad_input_is_refused_before_drawing(kwargs, error, match):
    with pytest.raises(error, match=match):
        sr.plot_values(**{"results": RESULT, **kwargs})
    assert plt.get_fignums() == []  # nothing drawn
