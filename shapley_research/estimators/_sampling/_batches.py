"""Batches of the sampling loop: their sizes, their random streams, their plans, and running them.

The numbers a run draws depend only on the seed and the batch size, never on
how batches are scheduled:

* :func:`batch_sizes`: full batches of ``batch_size`` samples, then the
  remainder (endless without a sample count); a run continued from a
  finished one that ended on a partial batch keeps that run's batches (its
  *closed* segments) and goes on with full batches;
* :func:`batch_rng`: batch ``b`` draws from its own stream
  ``SeedSequence(entropy, spawn_key=(BATCH_STREAM, b))``;
* :func:`batch_jobs`: the batches to run, from the first one a checkpoint has
  not done, each with its *plan*, made in this process for every batch in
  batch order from batch 0 (plans may carry state from batch to batch);
* :func:`evaluate_batches`: runs them, in this process or in joblib's
  workers, and returns their results in batch order;
* :func:`evaluation_chunks`: the rows of a batch that one call to
  ``game.evaluate`` takes, for estimators whose batches are larger than
  that (their per-batch work on the state is then shared by several chunks);
* :func:`ordered_results`: work items drawn ahead of any evaluation (AME,
  class-wise Shapley), evaluated here or by joblib's workers, in order.
"""

from __future__ import annotations

import itertools
from typing import Callable, Iterable, Iterator, NamedTuple

import numpy as np

from ..._ordered import ordered_map
from ..._threads import Pinned
from ..._warnings import collected_warnings
from ._replay import BatchLog

BATCH_STREAM = 0  # spawn_key prefix of the per-batch sample streams
AUX_STREAM = 1  # spawn_key prefix of auxiliary streams (e.g. a measurement matrix)
SIZE_STREAM = 2  # spawn_key prefix of the planned coalition sizes (._without_replacement)
ORDER_STREAM = 3  # spawn_key prefix of the random orders of the size strata (likewise)
MODEL_STREAM = 4  # spawn_key prefix of the random_state given to a model fitted per batch (data_oob's bags)
CHUNK_CELLS = 2**22  # mask cells of one call to game.evaluate, about (4 MiB of booleans)


def batch_rng(entropy: int, batch: int) -> np.random.Generator:
    """Generator of batch ``batch`` of a run with entropy ``entropy``: independent of every other batch.

    Its stream is ``SeedSequence(entropy, spawn_key=(BATCH_STREAM, batch))``, so it depends on the seed and the
    batch's index only, never on the process that runs the batch.
    """
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(BATCH_STREAM, batch)))


def model_seeds(entropy: int, index: int, count: int) -> list[int]:
    """``count`` ``random_state`` values for the model fitted for batch ``index`` (a bag): from the seed and index."""
    words = np.random.SeedSequence(entropy, spawn_key=(MODEL_STREAM, index)).generate_state(count)
    return [int(word >> 1) for word in words]


def aux_rng(entropy: int, index: int = 0) -> np.random.Generator:
    """Generator for draws made once per run rather than per batch."""
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(AUX_STREAM, index)))


def batch_sizes(n_units: int | None, batch_size: int, closed: tuple[int, ...] = ()) -> Iterator[int]:
    """Sizes of batches 0, 1, ...: full batches, then the remainder (endless without ``n_units``).

    ``closed``: the samples of earlier runs continued by this one, each of
    which ended on a partial batch; their batches come first, as they were,
    then this run's ``n_units - sum(closed)`` samples.
    """
    for units in closed:
        yield from batch_sizes(units, batch_size)
    left = None if n_units is None else n_units - sum(closed)
    done = 0
    while left is None or done < left:
        size = batch_size if left is None else min(batch_size, left - done)
        yield size
        done += size


def chunk_rows(n_players: int) -> int:
    """Coalitions of ``n_players`` that one call to ``game.evaluate`` takes: about :data:`CHUNK_CELLS` cells."""
    return max(1, CHUNK_CELLS // max(n_players, 1))


def evaluation_chunks(size: int, n_players: int) -> Iterator[slice]:
    """Rows ``start:stop`` of a batch of ``size`` coalitions, about :data:`CHUNK_CELLS` mask cells each.

    A batch whose coalitions are drawn, evaluated and reduced chunk by chunk,
    in row order, holds one chunk's masks at a time; a batch of at most
    ``CHUNK_CELLS // N`` coalitions is one chunk.
    """
    rows = chunk_rows(n_players)
    for start in range(0, size, rows):
        yield slice(start, min(size, start + rows))


def batch_count(n_units: int, batch_size: int, closed: tuple[int, ...] = ()) -> int:
    """Batches of a run of ``n_units`` (:func:`batch_sizes`), counted without listing them."""
    return sum(-(-units // batch_size) for units in (*closed, n_units - sum(closed)))


def samples_in_batches(n_units: int | None, batch_size: int, batches: int, closed: tuple[int, ...] = ()) -> int:
    """Samples that the first ``batches`` batches of a run of ``n_units`` hold (fewer if the run has fewer)."""
    return sum(itertools.islice(batch_sizes(n_units, batch_size, closed), batches))


class BatchJob(NamedTuple):
    """One batch to run: its index (which selects its stream), its size, and ``(plan,)`` or ``()``."""

    index: int  # type: ignore[assignment]  # shadows tuple.index on purpose: the batch's index reads best
    size: int
    planned: tuple


def batch_jobs(n_units: int | None, batch_size: int, *, first: int = 0, closed: tuple[int, ...] = (),
               plan: Callable[[int, int], object] | None = None) -> Iterator[BatchJob]:
    """The batches from ``first`` on, lazily; ``plan(batch, size)`` is called for every batch from 0, in order.

    The plans of the batches before ``first`` (done before a resume) are made
    and discarded, so that a plan carrying state from the batches before it
    is the same as in an uninterrupted run.
    """
    for index, size in enumerate(batch_sizes(n_units, batch_size, closed)):
        planned = () if plan is None else (plan(index, size),)
        if index >= first:
            yield BatchJob(index, size, planned)


def evaluate_batches(sample_batch: Callable, jobs: Iterable[BatchJob], entropy: int,
                     n_jobs: int | None, log: BatchLog | None = None) -> Iterator:
    """``sample_batch(batch_rng(entropy, index), size, *planned)`` of every job, lazily, in batch order.

    With ``n_jobs`` of ``None`` or 1 each batch runs in this process when its
    result is asked for (the caller holds the thread pin). Otherwise joblib's
    workers run them, one batch per task and a short queue, so that little
    work is wasted past a precision stop; each worker pins its own threads
    (:class:`~shapley_research._threads.Pinned`). Pass the result to
    :func:`close_batches` when done, to stop joblib dispatching more.

    With a batch ``log`` (:class:`~._replay.BatchLog`), the batches run in this
    process log their utilities as they are computed, and replay what the log
    holds; the batches it holds run in this process before the workers start.
    """
    if log is None:
        return _in_order(sample_batch, ((batch_rng(entropy, job.index), job.size, *job.planned) for job in jobs),
                         n_jobs)
    return _logged_batches(sample_batch, iter(jobs), entropy, n_jobs, log)


def _logged_batches(sample_batch: Callable, jobs: Iterator[BatchJob], entropy: int, n_jobs: int | None,
                    log: BatchLog) -> Iterator:
    """:func:`evaluate_batches` with a log: here while the batches are here or logged, then the workers'."""
    for job in jobs:
        if n_jobs not in (None, 1) and not log.holds(job.index):
            jobs = itertools.chain([job], jobs)
            break
        with log.recording(job.index, job.size):
            result = sample_batch(batch_rng(entropy, job.index), job.size, *job.planned)
        yield result  # out of the recording: the caller merges it and may save the checkpoint
    else:
        return
    rest = evaluate_batches(sample_batch, jobs, entropy, n_jobs)
    try:
        yield from rest
    finally:
        close_batches(rest)


def ordered_results(fn: Callable, game: object, inputs: Iterable, n_jobs: int | None) -> Iterator:
    """``fn(game, x)`` of every input, lazily and in input order: in this process, or by joblib's workers.

    For estimators whose work items are drawn before any evaluation (AME's
    chunks of coalitions, class-wise Shapley's chunks of permutations): with
    ``n_jobs`` of ``None`` or 1 each runs here when its result is asked for;
    otherwise joblib's workers run them, one item per task and a short queue,
    each pinning its own threads. Pass the result to :func:`close_batches` when done.
    """
    return _in_order(fn, ((game, item) for item in inputs), n_jobs)


def _in_order(fn: Callable, calls: Iterable[tuple], n_jobs: int | None) -> Iterator:
    """``fn(*args)`` of every argument tuple, lazily and in order: here when asked for (``n_jobs`` None or 1), or
    by joblib's workers, one call per task and a short queue, each pinning its own threads."""
    return ordered_map(fn if n_jobs in (None, 1) else Pinned(fn), calls, n_jobs, batch_size=1)


def items_per_worker(n_items: int, n_jobs: int | None, per_worker: int = 4) -> int | None:
    """The most items of one task that give every one of ``n_jobs`` workers ``per_worker`` tasks (None: serial)."""
    if n_jobs in (None, 1):
        return None
    from joblib import effective_n_jobs

    return max(1, -(-n_items // (per_worker * effective_n_jobs(n_jobs))))


def close_batches(results: Iterator) -> None:
    """Stop the batches of :func:`evaluate_batches` not asked for yet (joblib's warning about them dropped).

    joblib warns about the batches discarded past a stop. The warning is collected
    and dropped through :func:`~shapley_research._warnings.collected_warnings`,
    which threads share safely: a ``warnings.catch_warnings`` here could be undone
    by a worker thread leaving its own (the threading backend's model fits).
    """
    if hasattr(results, "close"):
        with collected_warnings():
            results.close()
