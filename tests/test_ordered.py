"""``ordered_map``: every joblib loop's results, lazily and in order, whatever the backend."""

import itertools

import pytest
from joblib import parallel_config

from shapley_research._ordered import _in_groups, ordered_map


def test_groups_keep_the_order_and_a_bounded_look_ahead_and_close_early():
    consumed = []

    def calls():
        for i in itertools.count():  # endless: only a bounded look-ahead can serve it
            consumed.append(i)
            yield (i,)

    with parallel_config(backend="threading"):
        results = _in_groups(lambda i: -i, calls(), 2)
        assert [next(results) for _ in range(5)] == [0, -1, -2, -3, -4]
        assert len(consumed) <= 8  # groups of 2 * n_jobs calls
        results.close()  # leaves the pool's context


def test_a_real_error_of_joblib_is_not_taken_for_a_backend_that_cannot_stream():
    with pytest.raises(ValueError, match="batch_size"):
        ordered_map(abs, [(1,)], 2, batch_size=0)
    assert list(ordered_map(abs, [(-1,), (-2,)], None)) == [1, 2]
