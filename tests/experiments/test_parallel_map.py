"""The experiments' one way to spread tasks over workers: results in task order, the same numbers for any n_jobs."""

import sys

import numpy as np
import pytest

from shapley_research.experiments import check_n_jobs, parallel_map


def _draw(seed, n):
    """A task whose result depends on its own seed only, with a BLAS reduction in it."""
    x = np.random.default_rng(seed).normal(size=(n, n))
    return seed, float((x @ x.T).sum())


def test_in_process_results_come_in_task_order():
    tasks = [(seed, 8) for seed in (5, 3, 9, 1)]
    assert [seed for seed, _ in parallel_map(_draw, tasks)] == [5, 3, 9, 1]


@pytest.mark.slow  # starts joblib's worker processes
@pytest.mark.parametrize("n_jobs", [2, -1])
def test_workers_give_the_same_bits_in_the_same_order(n_jobs):
    tasks = [(seed, 64) for seed in range(6)]
    assert parallel_map(_draw, tasks, n_jobs=n_jobs) == parallel_map(_draw, tasks, n_jobs=1)


def test_progress_sees_every_result_and_the_total():
    seen = {}

    def progress(iterable, desc, total):
        seen.update(desc=desc, total=total)
        return iterable

    out = parallel_map(_draw, [(1, 4), (2, 4)], progress=progress, desc="tasks")
    assert len(out) == 2 and seen == {"desc": "tasks", "total": 2}


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2", None])
def test_a_bad_n_jobs_is_refused_before_any_task_runs(bad):
    calls = []
    with pytest.raises(ValueError, match="n_jobs must be an integer >= 1, or -1"):
        parallel_map(calls.append, [(1,)], n_jobs=bad)
    assert calls == []
    with pytest.raises(ValueError, match="n_workers must be"):
        check_n_jobs(bad, "n_workers")


@pytest.mark.parametrize("bad", [0, 2.0, False])
def test_a_bad_blas_threads_is_refused(bad):
    with pytest.raises(ValueError, match="blas_threads must be an integer >= 1"):
        parallel_map(_draw, [(1, 4)], blas_threads=bad)


def test_the_experiments_accept_every_core_and_refuse_zero():
    from shapley_research.experiments import ridge_stability as rs

    with pytest.raises(ValueError, match="n_jobs must be"):
        rs.run_grid(None, [1.0], 2, 0, n_jobs=0)


def _fragment_heap(n_blocks):
    """Free ~190 MB of heap blocks below the result: glibc keeps such pages unless trimmed."""
    blocks = [np.ones(12_000) for _ in range(n_blocks)]  # 96 kB each, under glibc's mmap threshold
    result = np.ones(12_000)  # allocated last, it holds the heap's top
    del blocks
    return result


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; malloc_trim is glibc's")
def test_a_task_returns_the_heap_it_freed():
    """loky retires a reused worker whose size grew 300 MB since its first task ("A worker stopped while some
    jobs were given to the executor"): memory a task freed must not count."""
    import os

    from shapley_research.experiments._parallel import _release_freed_memory, _trim

    _release_freed_memory()
    if _trim[0] is None:
        pytest.skip("no malloc_trim in this C library")

    def rss():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    parallel_map(_fragment_heap, [(1,)])  # imports and thread-pool scans done
    before = rss()
    kept = parallel_map(_fragment_heap, [(2_000,)])
    assert rss() - before < 50 * 2**20
    assert kept[0].sum() == 12_000
