"""One way for the experiments to spread independent tasks over worker processes (joblib).

An experiment's outer loop (data sets x seeds, a grid of settings) is a list
of independent tasks whose seeds derive from the task itself, never from the
order they run in; :func:`parallel_map` runs them in-process (``n_jobs=1``)
or over joblib's workers and returns the results in task order, so a run
gives the same numbers whatever ``n_jobs`` and whatever backend
(``joblib.parallel_config(backend="dask")`` sends the tasks to a cluster).
Each task runs with ``blas_threads`` BLAS (and OpenMP) threads, so that a worker's
floating-point reductions do not depend on how many cores the machine has.

After each task a worker hands the heap memory the task freed back to the
system (:func:`_release_freed_memory`). joblib's default backend (loky) reuses
its workers across calls and retires one whose resident size grew by 300 MB
since its first task, warning "A worker stopped while some jobs were given to
the executor" if tasks are waiting. A large task (SVARM at N = 1,000, permutations
at N = 100,000) frees its arrays, but glibc keeps the pages, so a worker that
began with a small task looked like a leak. No result depended on it (the
retired worker's result had been sent; a new worker takes the waiting tasks).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import numbers
import sys
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


_trim: list[Any] = []  # glibc's malloc_trim, once looked up (None: not glibc)


def _release_freed_memory() -> None:
    """Return the heap pages freed since the last call to the system (glibc's ``malloc_trim``; elsewhere nothing)."""
    if not _trim:
        trim = None
        if sys.platform.startswith("linux"):
            try:
                trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
                trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
            except (OSError, AttributeError):  # musl and other C libraries without it
                trim = None
        _trim.append(trim)
    if _trim[0] is not None:
        _trim[0](0)


def _run_task(function: Callable[..., _Result], task: Sequence[Any], blas_threads: int) -> _Result:
    from .._threads import thread_controller

    with thread_controller().limit(limits=blas_threads):  # BLAS and OpenMP pools
        result = function(*task)
    _release_freed_memory()  # before the worker measures itself (see the module's docstring)
    return result


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
