"""One way for the experiments to spread independent tasks over worker processes (joblib).

An experiment's outer loop (data sets x seeds, a grid of settings) is a list
of independent tasks whose seeds derive from the task itself, never from the
order they run in; :func:`parallel_map` runs them in-process (``n_jobs=1``)
or over joblib's workers and returns the results in task order, so a run
gives the same numbers whatever ``n_jobs`` and whatever backend
(``joblib.parallel_config(backend="dask")`` sends the tasks to a cluster).
Each task runs with ``blas_threads`` BLAS (and OpenMP) threads, so that a worker's
floating-point reductions do not depend on how many cores the machine has.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from .._ordered import ordered_map

__all__ = ["check_n_jobs", "parallel_map"]

_Result = TypeVar("_Result")


def check_n_jobs(n_jobs: Any, name: str = "n_jobs") -> int:
    """``n_jobs`` as joblib reads it: an integer >= 1, or -1 for every core (else ``ValueError``)."""
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or not (int(n_jobs) >= 1 or n_jobs == -1):
        raise ValueError(f"{name} must be an integer >= 1, or -1 for every core, got {n_jobs!r}.")
    return int(n_jobs)


def _run_task(function: Callable[..., _Result], task: Sequence[Any], blas_threads: int) -> _Result:
    from .._threads import thread_controller

    with thread_controller().limit(limits=blas_threads):  # BLAS and OpenMP pools
        return function(*task)


def parallel_map(function: Callable[..., _Result], tasks: Iterable[Sequence[Any]], *, n_jobs: int = 1,
                 progress: Callable[..., Iterable[Any]] | None = None, desc: str = "",
                 blas_threads: int = 1) -> list[_Result]:
    """``[function(*task) for task in tasks]``, over ``n_jobs`` joblib workers, in task order.

    Parameters
    ----------
    function : callable
        A module-level function (workers receive it by pickling).
    tasks : iterable of tuples
        The positional arguments of each call.
    n_jobs : int
        Worker processes: 1 runs in this process, -1 uses every core.
    progress : callable, optional
        ``progress(iterable, desc=..., total=...)``, fed the results as they
        arrive (in order).
    desc : str
        The progress label.
    blas_threads : int
        BLAS and OpenMP threads of each task (in this process too).
    """
    n_jobs = check_n_jobs(n_jobs)
    if isinstance(blas_threads, bool) or not isinstance(blas_threads, numbers.Integral) or blas_threads < 1:
        raise ValueError(f"blas_threads must be an integer >= 1, got {blas_threads!r}.")
    tasks = [tuple(task) for task in tasks]
    results: Iterable[_Result]
    results = ordered_map(_run_task, ((function, task, blas_threads) for task in tasks), n_jobs)
    if progress is not None:
        results = progress(results, desc=desc, total=len(tasks))
    return list(results)
