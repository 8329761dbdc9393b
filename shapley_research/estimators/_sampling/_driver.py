"""One driver for every sampling estimator: a specification in, a :class:`~shapley_research.ValuationResult` out.

Every sampling estimator runs the same sequence: validate the shared options,
plan the sampling units the budget pays for, choose the batch size, open the
checkpoint (which fixes the seed), enumerate a game the budget covers,
evaluate the anchors ``U(empty)`` and ``U(D)``, run the batched loop
(:func:`~._loop.run_sampling`) under the stopping rules, and turn the state
into values, standard errors and ``info``. :func:`drive` owns that sequence;
what differs between estimators is a :class:`SamplingSpec`:

* how the budget becomes units (:meth:`SamplingSpec.units`: fixed
  evaluations, evaluations per unit, the unit's name), the state's length
  (:attr:`~SamplingSpec.dim`), the default batch size, the checkpoint's
  fingerprint and the enumeration fallback;
* :meth:`SamplingSpec.start`, called once the anchors are known, which
  returns a :class:`Sampler`: how a batch of coalitions is drawn and reduced
  to per-player statistics (``sample_batch``), what the stopping rules judge,
  the :class:`~shapley_research.result.SamplingRecord` (the
  :class:`~shapley_research.result.Finalizer` turning the state into values)
  and the entries ``info`` reports;
* :meth:`SamplingSpec.estimates` and :meth:`SamplingSpec.report`, the final
  step (by default the record's finalizer).

The shared options are validated once, into a :class:`SamplingOptions`.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar

import numpy as np

from ._loop import (Anchors, MeanState, SamplingOutcome, default_batch_size, evaluate_anchors, open_checkpoint,
                    run_sampling, units_from_budget)
from ._replay import ReplayGame
from .._small_games import enumerated_result, enumeration_affordable
from ..._device import check_game_jobs
from ...games import game_identity
from ..._validation import check_float, check_int, check_progress, check_target, check_target_rank_correlation
from ...result import SamplingRecord, ValuationResult

__all__ = ["SamplingOptions", "SamplingSpec", "Sampler", "Run", "drive"]


@dataclass(frozen=True)
class SamplingOptions:
    """The options every sampling estimator shares, validated once (:meth:`checked`).

    See :func:`~shapley_research.permutation_shapley` for their meaning.
    """

    batch_size: int | None = None
    n_jobs: int | None = None
    progress: bool | None = None
    empty_utility: float | None = None
    target_stderr: float | None = None
    target_rank_correlation: float | None = None
    checkpoint: str | os.PathLike[str] | None = None
    checkpoint_interval: float = 60.0

    @classmethod
    def checked(cls, game: Any, estimator: str, *, batch_size: object = None, n_jobs: object = None,
                progress: bool | None = None, empty_utility: object = None, target_stderr: object = None,
                target_rank_correlation: object = None, checkpoint: str | os.PathLike[str] | None = None,
                checkpoint_interval: object = 60.0) -> SamplingOptions:
        """The options of a call of ``estimator`` on ``game``, or a ``ValueError``/``TypeError`` naming one.

        ``n_jobs`` is checked against the game (:func:`~shapley_research._device.check_game_jobs`);
        ``checkpoint_interval`` only with a ``checkpoint``, as it is used only then.
        """
        jobs = check_game_jobs(game, n_jobs, estimator)
        stderr_target = check_target(target_stderr)
        rank_target = check_target_rank_correlation(target_rank_correlation)
        empty = None if empty_utility is None else check_float(empty_utility, "empty_utility")
        size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        bar = check_progress(progress)
        interval = 60.0 if checkpoint is None else check_float(checkpoint_interval, "checkpoint_interval",
                                                                minimum=0.0)
        return cls(size, jobs, bar, empty, stderr_target, rank_target, checkpoint, interval)

    @property
    def targets(self) -> dict[str, float | None]:
        """The precision targets, as keywords of :func:`~._loop.units_from_budget` and the loop."""
        return {"target_stderr": self.target_stderr, "target_rank_correlation": self.target_rank_correlation}


@dataclass(frozen=True)
class Run:
    """What the driver has fixed before sampling: the seed, the checkpoint, the units and the batches."""

    entropy: int
    checkpoint: Any  # the open Checkpoint, or None
    n_units: int | None
    batch_size: int
    options: SamplingOptions


@dataclass
class Sampler:
    """One run's sampling, ready for the loop: what :meth:`SamplingSpec.start` returns.

    Attributes
    ----------
    sample_batch : callable
        ``sample_batch(rng, size[, planned])``: ``size`` units drawn from ``rng``, as a ``(size, dim)`` array
        or a :class:`~._loop.MeanState`, and the evaluations made (see :func:`~._loop.run_sampling`).
    info : dict
        ``info`` entries listed before the loop's (``stopped_by``, ``resumed_samples``).
    record : SamplingRecord or None
        The final step and merge rules; ``None`` where :meth:`SamplingSpec.estimates` computes the values
        itself (the result then keeps no state).
    info_after : dict
        Entries listed after the loop's.
    evaluations : int
        Evaluations made before the loop besides the anchors (exact strata, a pilot).
    head : MeanState or None
        Statistics merged before the loop's (a pilot); ``pilot`` units of the budget went to it.
    estimates_of, watch, plan
        As in :func:`~._loop.run_sampling`.
    context : dict
        What the final step needs besides the state and the record (e.g. a measurement matrix).
    """

    sample_batch: Callable[..., Any]
    info: dict[str, Any]
    record: SamplingRecord | None = None
    info_after: dict[str, Any] = field(default_factory=dict)
    evaluations: int = 0
    head: MeanState | None = None
    pilot: int = 0
    estimates_of: Callable[[MeanState], tuple[np.ndarray, np.ndarray]] | None = None
    watch: slice = field(default_factory=lambda: slice(None))
    plan: Callable[[int, int], object] | None = None
    context: dict[str, Any] = field(default_factory=dict)

    def merged(self, state: MeanState) -> MeanState:
        """``state`` with :attr:`head` merged before it (a copy; ``state`` itself without a head)."""
        if self.head is None:
            return state
        both = MeanState(state.dim, self.head.count, self.head.mean.copy(), self.head.m2.copy())
        both.merge(state)
        return both


@dataclass(frozen=True, kw_only=True)
class SamplingSpec(ABC):
    """What one sampling estimator is, for :func:`drive`: subclasses add their options and define :meth:`start`.

    Attributes
    ----------
    method : str
        ``ValuationResult.method``, and the checkpoint's ``"method"``.
    n_players : int
        ``N``.
    dim : int
        Length of the state (a sample's statistics).
    per_unit : int
        Evaluations of one sampling unit (at most), for the budget and the progress bar.
    unit_name : str
        A unit, in words, for the budget's messages.
    desc, progress_unit : str
        The progress bar's description and its unit, in one word.
    needs_empty, needs_full : bool
        Whether the run evaluates ``U(empty)`` (unless ``empty_utility`` gives it) and ``U(D)``.
    enumerable : bool (class attribute)
        Whether a budget covering every coalition buys the exact values by enumerating the game; ``False``
        for an estimator whose values are not a function of ``game.evaluate`` (class-wise Shapley).
    replayable : bool (class attribute)
        Whether a run with a checkpoint logs its batches' utilities as they come (:mod:`._replay`: the game's
        ``evaluate`` and ``evaluate_prefixes`` calls); ``False`` for an estimator that asks the game for
        something else (class-wise Shapley's predictions).
    """

    method: str
    n_players: int
    dim: int
    per_unit: int
    unit_name: str
    desc: str
    progress_unit: str
    needs_empty: bool = True
    needs_full: bool = False
    enumerable: ClassVar[bool] = True
    replayable: ClassVar[bool] = True

    def fixed(self, empty_utility: float | None) -> int:
        """Evaluations made once per run: the anchors."""
        return int(self.needs_empty and empty_utility is None) + int(self.needs_full)

    def units(self, budget: object, options: SamplingOptions) -> int | None:
        """Units the budget pays for (``None``: no cap), or a ``ValueError``/``TypeError``; 0 for a budget
        short of one unit that still covers every coalition (:func:`drive` then enumerates the game)."""
        if budget is not None and self.enumerable:
            budget = check_int(budget, "budget", minimum=0)
            one_unit = self.fixed(options.empty_utility) + self.per_unit
            if budget < one_unit and enumeration_affordable(self.n_players, budget, options.empty_utility):
                return 0
        return units_from_budget(budget, self.fixed(options.empty_utility), self.per_unit, self.unit_name,
                                 **options.targets)

    def batch_size(self, batch_size: int | None, n_units: int | None) -> int:
        """Units per batch: ``batch_size`` or the default, about ``2**22`` mask cells."""
        return default_batch_size(self.n_players, self.per_unit) if batch_size is None else batch_size

    def fingerprint(self, batch_size: int, empty_utility: float | None, n_units: int | None) -> dict:
        """What a checkpoint of the run must match: the shared entries and :meth:`fingerprint_options`."""
        return {"method": self.method, "n_players": self.n_players, "batch_size": batch_size,
                "empty_utility": empty_utility, **self.fingerprint_options(n_units)}

    def fingerprint_options(self, n_units: int | None) -> dict:
        """The estimator's own entries of the fingerprint."""
        return {}

    def enumeration_info(self, empty_utility: float | None) -> dict:
        """``info`` entries of a run that enumerates the game (its options)."""
        return {}

    def exact(self) -> Callable[..., ValuationResult] | None:
        """The exact enumeration of the values (``None``: :func:`~shapley_research.exact_shapley`)."""
        return None

    @abstractmethod
    def start(self, game: Any, run: Run, anchors: Anchors | None) -> Sampler:
        """The run's :class:`Sampler`, once the anchors are known (``None`` where none is needed)."""

    def estimates(self, sampler: Sampler, state: MeanState) -> tuple[np.ndarray, np.ndarray | None, dict]:
        """Values, standard errors and ``info`` updates of the final ``state`` (by the record's finalizer)."""
        if sampler.record is None:
            raise NotImplementedError(f"{type(self).__name__} keeps no record: it computes its estimates itself.")
        return sampler.record.estimates(state)

    def report(self, sampler: Sampler, summary: dict, updates: dict) -> dict:
        """The result's ``info``: the sampler's entries, the loop's ``summary``, then the ``updates``."""
        return {**sampler.info, **summary, **sampler.info_after, **updates}

    def samples(self, state: MeanState) -> int:
        """``n_samples`` of the result."""
        return state.count

    def loop(self, sampler: Sampler, run: Run, n_units: int | None, budget: object,
             **sampling: Any) -> SamplingOutcome:
        """The batched loop, :func:`~._loop.run_sampling` (``sampling``: its other keywords); a specification
        whose savings buy more units (truncation) runs it in rounds instead."""
        return run_sampling(sampler.sample_batch, n_units=n_units, checkpoint=run.checkpoint, plan=sampler.plan,
                            **sampling)


def drive(spec: SamplingSpec, game: Any, budget: object, seed: object, options: SamplingOptions) -> ValuationResult:
    """Run the sampling estimator ``spec`` on ``game`` with ``budget`` evaluations and ``seed``.

    Plans the units and batches, opens the checkpoint, enumerates a game the budget covers
    (:mod:`~shapley_research.estimators._small_games`), evaluates the anchors, runs the loop
    (:meth:`SamplingSpec.loop`) and builds the result.
    """
    start = time.perf_counter()
    n_units = spec.units(budget, options)
    batch_size = spec.batch_size(options.batch_size, n_units)
    game_fingerprint = game_identity(game)  # for the checkpoint and the record: digests the game's data once
    fingerprint = {**spec.fingerprint(batch_size, options.empty_utility, n_units), "game": game_fingerprint}
    entropy, checkpoint = open_checkpoint(options.checkpoint, seed, dim=spec.dim, fingerprint=fingerprint,
                                          interval=options.checkpoint_interval)
    if spec.enumerable and enumeration_affordable(spec.n_players, budget, options.empty_utility):
        exact = enumerated_result(game, method=spec.method, seed=entropy, empty_utility=options.empty_utility,
                                  start=start, info=spec.enumeration_info(options.empty_utility), exact=spec.exact())
        exact.info["unspent_evaluations"] = int(budget) - exact.n_evaluations  # type: ignore[call-overload]
        return exact
    anchors = None
    if spec.needs_empty or spec.needs_full:
        anchors = evaluate_anchors(game, options.empty_utility, full=spec.needs_full, checkpoint=checkpoint)
    run = Run(entropy, checkpoint, n_units, batch_size, options)
    if checkpoint is not None and not checkpoint.loaded:  # the seed and anchors on disk before any batch: after
        checkpoint.save(np.zeros(spec.dim), np.zeros(spec.dim), 0, 0, 0, force=True)  # a hard kill, the log serves
    # with a checkpoint the batches' calls go through a ReplayGame, which logs their utilities as they come
    logged = checkpoint is not None and spec.replayable
    sampler = spec.start(ReplayGame(game) if logged else game, run, anchors)
    outcome = _sample(spec, sampler, run, budget)
    state = sampler.merged(outcome.state)
    values, stderr, updates = spec.estimates(sampler, state)
    record = None if sampler.record is None else replace(sampler.record.completed(updates), game=game_fingerprint)
    n_evaluations = outcome.n_evaluations + (anchors.n_evaluations if anchors else 0) + sampler.evaluations
    info = spec.report(sampler, outcome.summary(), updates)
    if budget is not None:  # whole units only: what they leave, said rather than spent silently
        info["unspent_evaluations"] = int(budget) - n_evaluations  # type: ignore[call-overload]
    return ValuationResult(
        values=values, n_evaluations=n_evaluations, method=spec.method, seed=entropy,
        wall_time=time.perf_counter() - start, stderr=stderr, n_samples=spec.samples(state), info=info,
        state=None if record is None else state, record=record)


def _sample(spec: SamplingSpec, sampler: Sampler, run: Run, budget: object) -> SamplingOutcome:
    """The loop of one run (:meth:`SamplingSpec.loop`), over the units the budget leaves after a pilot."""
    options = run.options
    n_units = run.n_units if run.n_units is None else run.n_units - sampler.pilot
    return spec.loop(sampler, run, n_units, budget, dim=spec.dim, batch_size=run.batch_size, entropy=run.entropy,
                     n_jobs=options.n_jobs, progress=options.progress, desc=spec.desc, unit=spec.progress_unit,
                     evaluations_per_unit=spec.per_unit, estimates_of=sampler.estimates_of, watch=sampler.watch,
                     **options.targets)
