"""Integer columns stay integers in the CSV tables, also where some rows lack them (issue 25).

pandas has no integer NaN: a column of integers with a missing cell is held as float64, so a seed was
written as ``736450847.0``. ``write_table`` writes such a column as integers with empty cells.
"""

import numpy as np
import pandas as pd
import pytest

from shapley_research.experiments import write_table


def _lines(path):
    return path.read_text().splitlines()


def test_a_seed_missing_for_a_deterministic_method_keeps_the_others_integer(tmp_path):
    rows = [{"method": "largest_s", "seed": None, "error": 2.5},
            {"method": "permutation", "seed": 736450847, "error": 0.07}]
    frame = pd.DataFrame(rows)  # as an experiment builds it: the seed column is float64
    assert frame["seed"].dtype == np.float64
    for table in (frame, rows):
        path = write_table(table, tmp_path, "agreement")
        assert _lines(path) == ["method,seed,error", "largest_s,,2.5", "permutation,736450847,0.07"]
        assert pd.read_csv(path)["seed"].iloc[1] == 736450847


def test_a_column_missing_from_one_frame_of_a_concat_stays_integer(tmp_path):
    errors = pd.DataFrame({"source": "permutation", "seed": [3, 4], "n_permutations": [5, 10], "error": [0.5, 0.25]})
    levels = pd.DataFrame({"source": ["uniform"], "error": [1.0]})
    path = write_table(pd.concat([errors, levels], ignore_index=True), tmp_path, "approximation_errors")
    assert _lines(path) == ["source,seed,n_permutations,error", "permutation,3,5,0.5", "permutation,4,10,0.25",
                            "uniform,,,1.0"]


@pytest.mark.parametrize("column", [
    [1.0, 3.0],  # floats without a missing cell are floats, whole or not
    [0.5, np.nan],  # a fraction: not an integer column
    [np.inf, np.nan],  # infinite: not an integer
    [2.0**60, np.nan],  # beyond 2**53 a float no longer tells every integer apart
    [np.nan, np.nan],  # nothing to tell
])
def test_float_columns_stay_float(tmp_path, column):
    frame = pd.DataFrame({"i": [0, 1], "x": column})
    assert write_table(frame, tmp_path, "t").read_text() == frame.to_csv(index=False)


def test_integer_and_nullable_columns_are_written_unchanged(tmp_path):
    frame = pd.DataFrame({"n": [1, 2], "k": pd.array([None, 7], dtype="Int64"), "flag": [True, False]})
    path = write_table(frame, tmp_path, "t")
    assert _lines(path) == ["n,k,flag", "1,,True", "2,7,False"]
    assert frame["k"].dtype == "Int64" and frame["n"].dtype == np.int64  # the caller's frame is not modified
