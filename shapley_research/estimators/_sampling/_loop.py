"""The sampling loop shared by every Monte Carlo estimator.

Every sampling estimator of the paper is the mean of an i.i.d. per-sample
vector: the marginal contributions along a permutation (baseline), the
weighted utility of a random test (group testing), or those plus their
Bernoulli projections (compressive sampling). So one loop serves them all:

* samples are drawn in batches of a fixed size; batch ``b`` draws from its own
  stream ``SeedSequence(entropy, spawn_key=(0, b))``, so the numbers depend only
  on the seed and the batch size, never on how batches are scheduled (a batch
  may also take a *plan* made in this process in batch order, e.g. where it
  starts in each stratum's order of coalitions, replayed from batch 0 on a
  resume): :mod:`._batches` plans and runs them;
* each batch is reduced to ``(count, mean, M2)`` and merged, in batch order
  (:func:`merged_in_order`), into a :class:`MeanState` (Chan et al.'s
  parallel Welford update), which is O(dimension) memory whatever the number
  of samples; a checkpoint stores it as a :class:`~._checkpoint.LoopSnapshot`;
* every batch runs with :data:`BATCH_THREADS` BLAS/OpenMP threads, in the
  parent and in every worker (:func:`pinned_threads`): a BLAS product's
  rounding depends on how many threads split it, and joblib's workers would
  otherwise run with fewer threads than the parent;
* a run stops at its budget or, after a whole batch, at a precision target:
  the largest standard error (``target_stderr``) or the stability of the
  ranking (``target_rank_correlation``, :func:`expected_rank_correlation`):
  the rules of :mod:`._stopping`. All are pure functions of the merged state,
  so a stop happens at the same batch for any ``n_jobs`` and after a
  checkpoint/resume.

:func:`run_sampling` wires these units together.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Protocol

import numpy as np

# the streams and MIN_SAMPLES_FOR_PRECISION are re-exported: estimators and tests import them from here
from ._batches import (AUX_STREAM, BATCH_STREAM, CHUNK_CELLS, ORDER_STREAM, SIZE_STREAM, aux_rng,  # noqa: F401
                       batch_count, batch_jobs, batch_rng, chunk_rows, close_batches, evaluate_batches,
                       evaluation_chunks, samples_in_batches)
from ._checkpoint import Checkpoint, LoopSnapshot, LoopStore, terminated_as_exit
from ._progress import expected_evaluations, progress_bar, show_batch
from ._stopping import MIN_SAMPLES_FOR_PRECISION, StateEstimates, first_reached, stopping_rules  # noqa: F401
from ...games import reporting_to
from ..._threads import BATCH_THREADS, Pinned, pinned_threads  # noqa: F401 - re-exported to the estimators
from ..._validation import check_float, check_int, check_seed, check_utilities

MAX_BATCH_EVALUATIONS = 4096  # evaluations of a default batch, at most
LARGE_STATE_PLAYERS = 1024  # beyond, a batch with O(N^2) statistics holds a multiple of N coalitions
COMPILED_MERGE_DIM = 2**14  # states at least this long merge in one compiled pass (numba loads once, ~0.3 s)


@dataclass
class MeanState:
    """Running count, mean and sum of squared deviations of sample vectors."""

    dim: int
    count: int = 0
    # None (the default) becomes zeros in __post_init__, so the moments are arrays once built
    mean: np.ndarray = field(default=None)  # type: ignore[arg-type]
    m2: np.ndarray = field(default=None)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        if self.mean is None:
            self.mean = np.zeros(self.dim)
        if self.m2 is None:
            self.m2 = np.zeros(self.dim)

    def add_batch(self, samples: np.ndarray) -> None:
        """Merge a ``(b, dim)`` batch of samples."""
        n_b = samples.shape[0]
        if n_b == 0:
            return
        mean_b = samples.mean(axis=0)
        m2_b = ((samples - mean_b) ** 2).sum(axis=0)
        self.merge(MeanState(self.dim, n_b, mean_b, m2_b))

    def merge(self, other: "MeanState") -> None:
        """Combine with the statistics of independent samples (Chan et al. 1979).

        The merged moments are new arrays: the old ones, which a
        :class:`~._checkpoint.LoopSnapshot` may hold, are never written to.
        """
        if other.dim != self.dim:
            raise ValueError(f"cannot merge states of dimension {self.dim} and {other.dim}.")
        if other.count == 0:
            return
        if self.count == 0:
            self.count, self.mean, self.m2 = other.count, other.mean.copy(), other.m2.copy()
            return
        total = self.count + other.count
        weight, cross = self.merge_weights(other.count)
        if self.dim >= COMPILED_MERGE_DIM:  # one compiled pass, bit-identical to the expressions below
            from ._gt_kernels import merge_moments

            mean, m2 = np.empty(self.dim), np.empty(self.dim)
            merge_moments(np.ascontiguousarray(self.mean, dtype=float), np.ascontiguousarray(self.m2, dtype=float),
                          np.ascontiguousarray(other.mean, dtype=float), np.ascontiguousarray(other.m2, dtype=float),
                          weight, cross, mean, m2)
            self.mean, self.m2 = mean, m2
        else:
            delta = other.mean - self.mean
            self.mean = self.mean + delta * weight
            self.m2 = self.m2 + other.m2 + delta**2 * cross
        self.count = total

    def merge_weights(self, count: int) -> tuple[float, float]:
        """Chan et al.'s weights for ``count`` more samples: ``count / total`` and ``self.count * count / total``."""
        total = self.count + count
        return count / total, self.count * count / total

    @property
    def variance(self) -> np.ndarray:
        """Unbiased sample variance (NaN with fewer than two samples)."""
        if self.count < 2:
            return np.full(self.dim, np.nan)
        return self.m2 / (self.count - 1)

    @property
    def stderr(self) -> np.ndarray:
        """Standard error of the mean."""
        return np.sqrt(self.variance / max(self.count, 1))


class BatchMoments(Protocol):
    """A batch's result that merges itself into a :class:`MeanState`, as ``state.merge`` would merge its moments.

    For states too large to write out per batch: Stratified SVARM's sums
    (:class:`~shapley_research.estimators._svarm_strata.SizedBatch`) and
    position adjustment's binned samples
    (:class:`~shapley_research.estimators._position_effects.PositionBatch`)
    form each entry's batch moments where they merge them.
    """

    count: int

    def merge_into(self, state: MeanState) -> None:
        """Merge into ``state``."""


def evaluate_coalitions(game, masks: np.ndarray, empty_utility: float,
                        full_utility: float | None = None,
                        sizes: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Utilities of ``masks`` without re-evaluating the known anchors.

    Rows equal to the empty coalition get ``empty_utility`` and, when
    ``full_utility`` is given, rows equal to the grand coalition get it.
    ``sizes`` (the row sums, when the caller knows them) saves a pass.
    Returns the utilities and the number of evaluations actually made.
    """
    counts = masks.sum(axis=1) if sizes is None else sizes
    known = counts == 0
    if full_utility is not None:
        known |= counts == masks.shape[1]
    if not known.any():
        return check_utilities(game.evaluate(masks), masks.shape[0]), masks.shape[0]
    values = np.where(counts == 0, float(empty_utility), np.nan if full_utility is None else full_utility)
    rows = masks[~known]
    if rows.shape[0]:
        values[~known] = check_utilities(game.evaluate(rows), rows.shape[0])
    return values, int(rows.shape[0])


@dataclass
class Anchors:
    """Utilities of the empty and the grand coalition, evaluated once per run."""

    empty: float
    full: float
    n_evaluations: int


def evaluate_anchors(game, empty_utility: float | None, *, full: bool = True,
                     checkpoint: Checkpoint | None = None) -> Anchors:
    """Evaluate ``U(D)`` (unless ``full=False``) and, unless ``empty_utility`` fixes it, ``U(empty)``.

    ``U(empty)`` is evaluated rather than assumed zero (the paper's convention
    ``U(empty) = 0`` is what most utilities satisfy, but e.g. accuracy of a
    default prediction does not); passing ``empty_utility`` overrides it.
    A run resumed from a ``checkpoint`` takes the anchors stored there, so it
    neither re-evaluates them nor depends on a noisy game giving them again.
    """
    if checkpoint is not None and "anchors" in checkpoint.context:
        return Anchors(**checkpoint.context["anchors"])
    if empty_utility is not None:
        empty_utility = check_float(empty_utility, "empty_utility")
    masks = np.zeros((int(empty_utility is None) + int(full), game.n_players), dtype=bool)
    if full:
        masks[-1] = True
    u = check_utilities(game.evaluate(masks), masks.shape[0]) if masks.shape[0] else np.empty(0)
    empty = float(u[0]) if empty_utility is None else empty_utility
    anchors = Anchors(empty, float(u[-1]) if full else float("nan"), masks.shape[0])
    if checkpoint is not None:
        checkpoint.context["anchors"] = {"empty": anchors.empty, "full": anchors.full,
                                         "n_evaluations": anchors.n_evaluations}
    return anchors


def default_batch_size(n_players: int, evaluations_per_unit: int) -> int:
    """Units per batch: about ``2**22`` mask cells, at most 4096 evaluations.

    Large enough that per-batch costs (a seed stream, a merge) are small next
    to the evaluations, small enough to keep memory at a few MiB. Depends only
    on the problem size, never on ``n_jobs``, so that results are identical
    however batches are scheduled.
    """
    target_evaluations = int(np.clip(CHUNK_CELLS // max(n_players, 1), 1, MAX_BATCH_EVALUATIONS))
    return max(1, target_evaluations // max(evaluations_per_unit, 1))


def coalition_batch_size(n_players: int, per_player: int = 0) -> int:
    """Coalitions per batch of an estimator that evaluates each sampled coalition once.

    :data:`MAX_BATCH_EVALUATIONS`, or ``per_player * N`` beyond
    :data:`LARGE_STATE_PLAYERS` players where that is more (an estimator
    whose batch statistics are ``O(N^2)``, Stratified SVARM, passes 32). Such
    a batch is evaluated in chunks of about ``2**22`` mask cells
    (:func:`~._batches.evaluation_chunks`) and reduced to its statistics
    once: the batch's own work on the state (forming and merging its
    moments) is shared by all its chunks, which at ``N = 10^5`` (41
    coalitions a chunk) cost more than the evaluations of a cheap game when
    every chunk was a batch. Up to ``N = 1,024`` a chunk holds the whole
    batch.
    """
    if n_players > LARGE_STATE_PLAYERS:
        return max(MAX_BATCH_EVALUATIONS, per_player * n_players)
    return MAX_BATCH_EVALUATIONS


def units_from_budget(budget, fixed: int, per_unit: int, what: str, *,
                      target_stderr: float | None = None,
                      target_rank_correlation: float | None = None) -> int | None:
    """Whole sampling units affordable with ``budget`` evaluations, or raise.

    With a ``target_stderr`` or a ``target_rank_correlation`` the budget is a
    cap and may be ``None`` (no cap): the result is then ``None``.
    """
    if budget is None and (target_stderr is not None or target_rank_correlation is not None):
        return None
    if budget is None:
        raise TypeError("budget must be an integer number of utility evaluations, got None "
                        "(None is allowed only together with target_stderr or target_rank_correlation).")
    budget = check_int(budget, "budget", minimum=0)
    n_units = (budget - fixed) // per_unit if budget >= fixed else 0
    if n_units < 1:
        parts = f"{fixed} fixed + {per_unit} per {what}" if fixed else f"{per_unit} per {what}"
        raise ValueError(f"budget={budget} is smaller than one {what}: it needs at least "
                         f"{evaluations_text(fixed + per_unit)} ({parts}).")
    return n_units


def evaluations_text(count: int) -> str:
    """``"1 utility evaluation"``, ``"2 utility evaluations"``: a count of evaluations for a message."""
    return f"{count} utility evaluation{'' if count == 1 else 's'}"


def open_checkpoint(checkpoint, seed, *, fingerprint: dict, dim: int,
                    interval) -> tuple[int, Checkpoint | None]:
    """Resolve the seed and open the run's checkpoint (``None`` without one).

    Without a seed, a run resumed from a file adopts the file's seed; a new
    run draws one (stored in the file, so the same call continues it).
    """
    if checkpoint is None:
        return check_seed(seed), None
    interval = check_float(interval, "checkpoint_interval", minimum=0.0)
    ckpt = Checkpoint(checkpoint, {**fingerprint, "seed": None if seed is None else check_seed(seed)},
                      dim, interval)
    if ckpt.fingerprint["seed"] is None:
        ckpt.fingerprint["seed"] = check_seed(None)
    return ckpt.fingerprint["seed"], ckpt


RANK_DRAWS = 32  # parametric-bootstrap draws of the rank-stability criterion
RANK_ENTROPY = 0x5A4B_2019  # fixed entropy of its draws: the criterion is a pure function of the state
RANK_CHUNK_CELLS = 2**21  # draws are ranked in chunks of about this many cells (bounded memory)


def rank_noise(n_draws: int, n_players: int, key: int = 0) -> np.ndarray:
    """The ``(n_draws, n_players)`` standard normal draws ``z_r`` of :func:`expected_rank_correlation`.

    They come from ``SeedSequence(RANK_ENTROPY, spawn_key=(key,))``: fixed
    for a given ``key`` (:func:`run_sampling` passes the sample count), never
    from the run's own streams.
    """
    return _rank_generator(key).standard_normal((n_draws, n_players))


def _rank_generator(key: int) -> np.random.Generator:
    key = check_int(key, "key", minimum=0)
    return np.random.default_rng(np.random.SeedSequence(RANK_ENTROPY, spawn_key=(key,)))


def expected_rank_correlation(values, stderr, n_draws: int = RANK_DRAWS, *, key: int = 0) -> float:
    r"""Expected Spearman correlation between an estimate and a re-estimate of the same precision.

    With estimates :math:`v \in \mathbb R^N` and their standard errors
    :math:`s`, a re-estimate is modelled as :math:`v + s \odot z` with
    :math:`z \sim \mathcal N(0, I)` (a parametric bootstrap), and

    .. math::

        \bar\rho = \frac1R \sum_{r=1}^{R} \rho_S\!\left(v,\; v + s \odot z_r\right),

    where :math:`\rho_S` is Spearman's correlation: the Pearson correlation
    of the (average, for ties) ranks. :math:`\bar\rho` is close to 1 when the
    ranking of the players is settled at the current precision, whatever the
    scale of the values: it is invariant to a common shift of ``values`` and to
    a common positive scaling of ``values`` and ``stderr``.

    The draws :math:`z_r` are :func:`rank_noise` ``(n_draws, N, key)``, from a
    fixed generator, so the result is a deterministic function of the
    arguments. Conventions: a player with :math:`s_i = 0` keeps its value (and
    so its rank); with every :math:`s_i = 0`, or fewer than two players, the
    result is 1; a draw whose ranks equal those of ``v`` (ties included)
    counts 1, and a draw where only one side is all ties counts 0 (the
    correlation is undefined there and no ranking is shared). Non-finite
    ``values`` or ``stderr`` give NaN (a run never stops on it). Costs
    :math:`O(R N \log N)`, in chunks of about :data:`RANK_CHUNK_CELLS` cells:
    measured here about 6 ms at ``N = 1,000`` and 0.8-1.2 s at ``N = 100,000``,
    once per batch when a run has a rank target (then prefer large batches).

    Parameters
    ----------
    values, stderr : array_like
        Estimates and their standard errors (``stderr >= 0``), same length.
    n_draws : int, default 32
        ``R``, the number of bootstrap draws.
    key : int, default 0
        Selects the fixed draws (``>= 0``).

    Returns
    -------
    float
        :math:`\bar\rho \in [-1, 1]`.
    """
    from scipy.stats import rankdata

    values = np.asarray(values, dtype=float).reshape(-1)
    stderr = np.asarray(stderr, dtype=float).reshape(-1)
    if values.shape != stderr.shape:
        raise ValueError(f"values and stderr must have the same length, got {values.size} and {stderr.size}.")
    n_draws = check_int(n_draws, "n_draws", minimum=1)
    if not (np.isfinite(values).all() and np.isfinite(stderr).all()):
        return float("nan")
    if (stderr < 0).any():
        raise ValueError("stderr must be >= 0.")
    n = values.size
    if n < 2 or not (stderr > 0).any():
        return 1.0
    base = rankdata(values)
    centre = 0.5 * (n + 1)  # the mean of average ranks, ties or not
    base_c = base - centre
    base_norm = float(np.sqrt(base_c @ base_c))
    rng = _rank_generator(key)
    chunk = max(1, RANK_CHUNK_CELLS // n)
    total, done = 0.0, 0
    while done < n_draws:
        rows = min(chunk, n_draws - done)
        ranks = rankdata(values + stderr * rng.standard_normal((rows, n)), axis=1)
        same = (ranks == base).all(axis=1)
        ranks -= centre
        norms = np.sqrt(np.einsum("ij,ij->i", ranks, ranks)) * base_norm
        defined = norms > 0  # else one side is all ties: 0 unless the ranks are the same
        rho = np.where(defined, (ranks @ base_c) / np.where(defined, norms, 1.0), 0.0)
        rho = np.where(same, 1.0, np.clip(rho, -1.0, 1.0))
        total += float(rho.sum())
        done += rows
    return total / n_draws


@dataclass
class SamplingOutcome:
    """What :func:`run_sampling` returns."""

    state: MeanState
    n_evaluations: int
    stopped_by: str  # "budget", "target_stderr" or "target_rank_correlation"
    resumed_samples: int = 0  # samples taken over from a checkpoint

    def summary(self) -> dict:
        """Entries for ``ValuationResult.info``."""
        return {"stopped_by": self.stopped_by, "resumed_samples": self.resumed_samples}


def merge_batch(state: MeanState, samples) -> None:
    """Merge one batch's result: a ``(size, dim)`` array of samples, their :class:`MeanState`, or a
    :class:`BatchMoments` (a batch that merges itself)."""
    if isinstance(samples, MeanState):
        state.merge(samples)
    elif isinstance(samples, np.ndarray):
        state.add_batch(samples)
    else:  # a BatchMoments (a Protocol's isinstance check would cost more than a small batch)
        samples.merge_into(state)


def merged_in_order(results: Iterable[tuple[object, int]], state: MeanState,
                    start: LoopSnapshot) -> Iterator[LoopSnapshot]:
    """Merge ``(samples, evaluations)`` of the batches from ``start.batches`` on into ``state``, in batch order.

    Yields the run's state after each batch (a snapshot of its moments, for a
    checkpoint). Merging in batch order makes the sums, and so every value,
    the same for any ``n_jobs``.
    """
    n_evaluations, batches = start.n_evaluations, start.batches
    for samples, evaluations in results:
        merge_batch(state, samples)
        n_evaluations += evaluations
        batches += 1
        yield LoopSnapshot.of(state, n_evaluations, batches, start.closed)


def resumed_state(checkpoint: LoopStore | None, dim: int, n_units: int | None,
                  batch_size: int, unit: str = "sample") -> tuple[MeanState, LoopSnapshot]:
    """The state a run starts from: empty, or the one a loaded ``checkpoint`` holds, if it fits this call.

    A file resumes where its batches hold the samples this call plans in as
    many batches: the run then gives the bits of an uninterrupted one. A
    finished run that ended on a partial batch, continued with a larger
    budget (or a precision target), keeps its batches as they were and goes
    on with full batches from the next stream: its samples are *closed*
    (:func:`~._batches.batch_sizes`). A file holding more samples than this
    call plans (a smaller budget) is refused.
    """
    if checkpoint is None or not checkpoint.loaded:
        state = MeanState(dim)
        return state, LoopSnapshot.of(state, 0, 0)
    held = LoopSnapshot.held_by(checkpoint)
    closed = held.closed
    planned = samples_in_batches(n_units, batch_size, held.batches, closed)
    if planned != held.count and held.ended_on_partial_batch(batch_size) and (n_units is None
                                                                               or n_units > held.count):
        closed = closed + (held.count - sum(closed),)
        planned = held.count
    if planned != held.count:
        raise checkpoint.refuse(
            f"holds {held.count} {unit}s in {held.batches} batches, but this call's budget plans "
            f"{planned} {unit}s in its first {held.batches} batches (a smaller budget than the file's run)")
    state = MeanState(dim, held.count, held.mean, held.m2)
    return state, LoopSnapshot.of(state, held.n_evaluations, held.batches, closed)


def run_sampling(
    sample_batch: Callable[..., tuple[np.ndarray | MeanState | BatchMoments, int]],
    *,
    dim: int,
    n_units: int | None,
    batch_size: int,
    entropy: int,
    n_jobs: int | None = None,
    progress: bool | None = None,
    desc: str = "sampling",
    unit: str = "sample",
    checkpoint: LoopStore | None = None,
    target_stderr: float | None = None,
    watch: slice = slice(None),
    target_rank_correlation: float | None = None,
    estimates_of: Callable[[MeanState], tuple[np.ndarray, np.ndarray]] | None = None,
    plan: Callable[[int, int], object] | None = None,
    evaluations_per_unit: float | None = None,
) -> SamplingOutcome:
    """Draw samples in batches and accumulate their mean.

    ``sample_batch(rng, size)`` draws ``size`` samples from ``rng`` and returns
    them, as a ``(size, dim)`` array or already reduced to a :class:`MeanState`,
    with the number of utility evaluations it made. Batches are merged in
    order, so the result is bit-identical for any ``n_jobs`` (joblib; use
    ``joblib.parallel_config`` to pick a backend such as Dask).

    Stops after ``n_units`` samples, or, with ``target_stderr``, as soon as
    (after a whole batch, and from :data:`MIN_SAMPLES_FOR_PRECISION` samples
    on) the largest standard error of the coordinates ``watch`` is at most
    ``target_stderr``; ``n_units`` is then a cap (``None``: none). The
    decision is taken in batch order, so it is the same for any ``n_jobs``
    (parallel workers may compute a few batches past it, which are discarded).
    The progress bar then estimates the samples needed from
    ``stderr ~ 1/sqrt(count)``.

    With ``target_rank_correlation`` it stops, under the same rules (after a
    whole batch, in batch order, from :data:`MIN_SAMPLES_FOR_PRECISION`
    samples on), once the ranking is stable: once
    :func:`expected_rank_correlation` of the values and their standard errors
    (those of ``target_stderr``) is at least the target. Its draws are keyed by the
    sample count, so the decision is a pure function of the merged state
    (identical for any ``n_jobs`` and across checkpoint/resume). With both
    targets the run stops at the first batch meeting either; ``stopped_by``
    names the one met (``"target_stderr"`` when both are met at once). The
    progress bar shows the current expected correlation; without
    ``target_stderr`` its total is ``n_units`` (unknown when ``None``).

    Both targets judge ``estimates_of(state)``, the values and their standard
    errors (default: the sample mean and its standard error), for estimators
    whose values are not the sample mean itself; it is computed once per
    merged state, so one fit serves both targets and the progress bar.

    With a ``checkpoint``, batches already in the file are skipped and the
    state is written there every ``checkpoint.interval`` seconds, at the end,
    and when the run is interrupted (``KeyboardInterrupt``, or SIGTERM: :func:`~._checkpoint.terminated_as_exit`).
    Where it has a ``batch_log`` (:class:`~._replay.BatchLog`), the batches
    run in this process log their utilities as they are computed, and a
    resumed batch takes those logged instead of evaluating them again
    (through the game :class:`~._replay.ReplayGame` that ``sample_batch``
    evaluates): the batch under way is not lost.

    ``plan(batch, size)``, when given, is called in this process for every
    batch in batch order, from batch 0 (also for the batches a checkpoint
    skips, whose plans are discarded), and its result is passed to
    ``sample_batch(rng, size, planned)``. It lets a batch depend on what
    earlier batches drew (e.g. where they left each stratum's order of
    coalitions, :mod:`shapley_research.estimators._sampling._without_replacement`) without running
    them: plans are cheap, so replaying them keeps every batch the same for
    any ``n_jobs`` and after a resume.

    *Progress* (``progress``: :func:`~._progress.progress_bar`) counts
    utility evaluations, so that its rate and time left are those of the
    evaluations; ``unit`` names the samples, whose count is shown beside it.
    Its total is the samples planned times ``evaluations_per_unit`` (the
    nominal cost of a sample) until a batch has measured the cost. It moves
    after every batch and, in this process (``n_jobs`` of ``None`` or 1),
    whenever the game reports rows evaluated within a batch
    (:func:`~shapley_research.games.report_evaluated`, e.g. a model
    fitted per coalition); a batch's update adds only the evaluations not
    reported yet. Batches run by workers (``n_jobs > 1``) move it once per
    batch. Reports never change what ``game.evaluate`` is asked, so neither
    does the bar change any number.
    """

    state, snapshot = resumed_state(checkpoint, dim, n_units, batch_size, unit)
    judged = StateEstimates(state, estimates_of=estimates_of, watch=watch,
                            rank_correlation_of=expected_rank_correlation)
    rules = stopping_rules(n_units, target_stderr, target_rank_correlation)
    targets = dict(target_stderr=target_stderr, target_rank_correlation=target_rank_correlation)

    def total(n_evaluations: int) -> int | None:
        return expected_evaluations(judged, n_evaluations, n_units=n_units, target_stderr=target_stderr,
                                    evaluations_per_unit=evaluations_per_unit)

    if n_units is not None and batch_count(n_units, batch_size, snapshot.closed) - snapshot.batches <= 1:
        n_jobs = None  # one batch left: workers would add their start-up and nothing else (same bits either way)
    bar = progress_bar(progress, total=total(snapshot.n_evaluations), initial=snapshot.n_evaluations, desc=desc)
    start, stopped_by = snapshot, first_reached(rules, judged)
    # this thread holds the pin from before any worker starts, over the merges and stopping rules too: the
    # threading backend's batches rely on it, as OpenBLAS (pthreads) ignores a limit set in a worker thread
    log = getattr(checkpoint, "batch_log", None)  # a Checkpoint's (or a round's) within-batch log
    with pinned_threads(), terminated_as_exit(saving=checkpoint is not None):
        results = iter(()) if stopped_by is not None else evaluate_batches(
            sample_batch, batch_jobs(n_units, batch_size, first=start.batches, closed=start.closed, plan=plan),
            entropy, n_jobs, log)
        try:
            with bar, reporting_to(None if bar.disable else bar.update):
                for snapshot in merged_in_order(results, state, start):
                    if checkpoint is not None:
                        snapshot.write(checkpoint)
                    show_batch(bar, judged, snapshot.n_evaluations, total=total(snapshot.n_evaluations),
                               unit=unit, **targets)
                    stopped_by = first_reached(rules, judged)
                    if stopped_by is not None:
                        break
        except BaseException as stop:
            if checkpoint is not None:  # keep every batch merged before the interruption
                snapshot.write(checkpoint, force=True)
                if isinstance(stop, (KeyboardInterrupt, SystemExit)):
                    print(snapshot.stop_note(checkpoint, batch_size, unit), file=sys.stderr, flush=True)
            raise
        finally:
            close_batches(results)  # stops joblib from dispatching batches past the stopping point
            if log is not None:
                log.close()
    if checkpoint is not None:
        snapshot.write(checkpoint, force=True)
    return SamplingOutcome(state, snapshot.n_evaluations, stopped_by or "budget", start.count)
