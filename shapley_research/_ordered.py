"""Results of many calls, lazily and in order, from joblib's workers under whatever backend is active.

Every parallel loop of the package (sampling batches, Data-OOB's bags, SVARM's
pilot, ModelUtility's chunks of coalitions, the experiments' tasks) goes through :func:`ordered_map`, so a user
switches engines with ``joblib.parallel_config`` alone (loky, threads, a Dask
cluster, joblib's ``multiprocessing``) and gets the same numbers: results are
consumed in call order whatever order the workers finish in.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Iterator, Literal

__all__ = ["ordered_map"]


def ordered_map(fn: Callable[..., Any], calls: Iterable[tuple], n_jobs: int | None, *,
                batch_size: int | Literal["auto"] = "auto", pre_dispatch: str = "2*n_jobs") -> Iterator[Any]:
    """``fn(*args)`` for every ``args`` of ``calls``, lazily and in order.

    With ``n_jobs`` of ``None`` or 1 each call runs in this process when its
    result is asked for. Otherwise joblib's workers run them under the active
    backend, ``pre_dispatch`` calls ahead of the consumer, streamed as they
    finish (``return_as="generator"``). A backend that cannot stream results
    (joblib's ``multiprocessing``) gets the calls in groups of
    ``2 * effective_n_jobs`` through one pool, so the look-ahead stays bounded
    and an endless ``calls`` works there too.

    Close the returned iterator (``.close()``) to stop the calls not asked for yet.

    Parameters
    ----------
    fn : callable
        Picklable for process-based backends (wrap it in
        :class:`~shapley_research._threads.Pinned` to pin each call's threads).
    calls : iterable of tuple
        Positional arguments of each call, consumed lazily.
    n_jobs : int or None
        joblib's ``n_jobs``.
    batch_size, pre_dispatch
        joblib's, for backends that stream.
    """
    if n_jobs in (None, 1):
        return (fn(*args) for args in calls)
    from joblib import Parallel, delayed

    try:
        parallel = Parallel(n_jobs=n_jobs, return_as="generator", batch_size=batch_size, pre_dispatch=pre_dispatch)
    except ValueError as exc:
        if "return_as" not in str(exc):  # not "... does not support return_as=generator": a real error
            raise
        return _in_groups(fn, iter(calls), n_jobs)
    return parallel(delayed(fn)(*args) for args in calls)


def _in_groups(fn: Callable[..., Any], calls: Iterator[tuple], n_jobs: int) -> Iterator[Any]:
    """:func:`ordered_map` for backends without streaming: one pool, a list of results per group of calls."""
    from joblib import Parallel, delayed, effective_n_jobs, wrap_non_picklable_objects

    size = 2 * effective_n_jobs(n_jobs)
    fn = wrap_non_picklable_objects(fn)  # such backends pickle with pickle, which refuses closures: cloudpickle it
    with Parallel(n_jobs=n_jobs, batch_size=1) as parallel:
        while group := list(itertools.islice(calls, size)):
            yield from parallel(delayed(fn)(*args) for args in group)
