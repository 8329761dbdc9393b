r"""Truncated Monte Carlo (Ghorbani & Zou, ICML 2019) for :func:`~shapley_research.permutation_shapley`.

A permutation stops being evaluated once its prefix utility is within
``truncation * |U(D)|`` of ``U(D)``; its remaining players get contribution 0.
The prefixes of the permutations still running are evaluated a chunk of
positions at a time (:func:`prefix_chunks`), and since truncated permutations
cost fewer evaluations than the budget reckons, a run samples in rounds
(:func:`_rounds_within_budget`) so that the savings buy more permutations,
with the batches, and so the values, of one run of the final size.
"""

from __future__ import annotations

import math

import numpy as np

from ._sampling._checkpoint import LoopSnapshot
from ._sampling._loop import MeanState, SamplingOutcome, run_sampling
from .._validation import check_float
from ..games import GameLike, prefix_positions, prefix_utilities, supports_prefixes

__all__ = ["truncated_contributions", "prefix_chunks"]


FIRST_CHUNK_SHARE = 32  # truncation evaluates positions 0..ceil(N/32)-1 first, ...
CHUNK_GROWTH = 1.5  # ... then chunks that end at 1.5x the position reached: at most a third of the work is overshoot
TRUNCATED_BATCHES = 32  # truncated runs default to batches of at most 1/32 of the units the budget pays for
TALLY = 2  # coordinates a truncated run appends to each sample: its mean stop position and its evaluations


def prefix_chunks(n_players: int) -> list[int]:
    """Boundaries ``0 = b_0 < b_1 < ... = N`` of the chunks of positions that truncation evaluates together.

    ``b_1 = ceil(N / 32)``, then ``b_{j+1} = max(b_j + b_1, ceil(1.5 b_j))``: about
    ``log(32) / log(1.5) + 1 = 9`` calls of the game per batch whatever ``N``, and
    a permutation that stops at position ``k`` evaluates at most about ``1.5 k``
    (and ``k + N/32``) prefixes.
    """
    first = -(-n_players // FIRST_CHUNK_SHARE)
    bounds = [0]
    while bounds[-1] < n_players:
        bounds.append(min(n_players, max(bounds[-1] + first, math.ceil(bounds[-1] * CHUNK_GROWTH))))
    return bounds


def truncated_contributions(game: GameLike, permutations: np.ndarray, empty_utility: float, full_utility: float,
                            tolerance: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Marginal contributions along permutations that stop once the utility is within ``tolerance`` of ``U(D)``.

    Along each permutation the prefix utilities :math:`u_k = U(\{\pi_0..\pi_k\})`
    are evaluated until the first :math:`k` with :math:`|U(D) - u_k| < \text{tolerance}`
    (``k = -1``, the empty prefix, included); the players after that position
    get contribution 0, the others :math:`u_k - u_{k-1}` as without truncation.
    The last prefix is :math:`D` itself, whose utility ``full_utility`` is known
    and never evaluated. The prefixes of the permutations still running are
    evaluated through ``game.evaluate``, a chunk of positions at a time
    (:func:`prefix_chunks`); the values do not depend on the chunks, only the
    evaluations made past a stop within its chunk do.

    Returns
    -------
    phi : ndarray (m, n)
        Row ``t``: the contribution of each player (indexed by player) along permutation ``t``.
    stops : ndarray (m,)
        How many leading players of each permutation got a computed contribution (``n``: not truncated).
    evaluations : ndarray (m,)
        Utilities each permutation evaluated.
    """
    m, n = permutations.shape
    positions = prefix_positions(permutations)
    gains = np.zeros((m, n))
    evaluations = np.zeros(m, dtype=np.int64)
    previous = np.full(m, float(empty_utility))
    stops = np.full(m, 0 if abs(full_utility - empty_utility) < tolerance else n)
    running = np.flatnonzero(stops == n)
    bounds = prefix_chunks(n)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if running.size == 0:
            break
        evaluated = np.arange(lo, min(hi, n - 1), dtype=positions.dtype)  # prefix n - 1 is D: its utility is known
        utilities = np.empty((running.size, hi - lo))
        if evaluated.size:
            utilities[:, :evaluated.size] = prefix_utilities(game, positions[running], evaluated)
            evaluations[running] += evaluated.size
        if hi == n:
            utilities[:, -1] = full_utility
        close = np.abs(full_utility - utilities) < tolerance
        stopped = close.any(axis=1)
        last = np.where(stopped, close.argmax(axis=1), hi - lo - 1)  # last position of the chunk that counts
        chunk_gains = np.diff(utilities, axis=1, prepend=previous[running][:, None])
        gains[running, lo:hi] = np.where(np.arange(hi - lo)[None, :] <= last[:, None], chunk_gains, 0.0)
        stops[running[stopped]] = lo + last[stopped] + 1
        previous[running] = utilities[:, -1]
        running = running[~stopped]
    phi = np.empty_like(gains)
    np.put_along_axis(phi, permutations, gains, axis=1)
    return phi, stops, evaluations


def append_tally(samples, stops: np.ndarray, made: np.ndarray):
    """Each sample with its stop position and its evaluations appended (:data:`TALLY` coordinates).

    ``samples`` is a ``(size, dim)`` array, a batch already reduced to a :class:`MeanState`, or one that
    carries extra coordinates to its merge (``with_extra``: a position-adjusted batch,
    :class:`~._position_effects.PositionBatch`); the result is of the same kind, ``TALLY`` longer.
    """
    extra = np.column_stack([stops, made]).astype(float)
    if isinstance(samples, np.ndarray):
        return np.column_stack([samples, extra])
    if not isinstance(samples, MeanState):
        return samples.with_extra(extra)
    mean = extra.mean(axis=0)
    return MeanState(samples.dim + TALLY, samples.count, np.concatenate([samples.mean, mean]),
                     np.concatenate([samples.m2, ((extra - mean) ** 2).sum(axis=0)]))


def split_tally(state: MeanState, evaluations_per_unit: int) -> tuple[MeanState, dict]:
    """The state without its :data:`TALLY`, and the ``info`` entries the tally gives.

    ``mean_truncation_position`` is the mean stop position per sample, ``evaluations_saved`` the evaluations
    not made next to ``evaluations_per_unit`` per sample.
    """
    tally = state.mean[-TALLY:]
    updates = {"mean_truncation_position": float(tally[0]),
               "evaluations_saved": state.count * evaluations_per_unit - int(round(tally[1] * state.count))}
    return MeanState(state.dim - TALLY, state.count, state.mean[:-TALLY], state.m2[:-TALLY]), updates


def sample_in_rounds(sample_batch, *, budget, fixed: int, per_unit: int, checkpoint, **sampling) -> SamplingOutcome:
    """:func:`run_sampling` of ``sample_batch`` in the rounds of :func:`_rounds_within_budget`.

    ``sampling`` holds the other arguments of :func:`run_sampling` (``dim``, ``batch_size``, ``n_jobs``...).
    A round of one batch has nothing to share out: it runs without the workers' overhead (same values).
    """
    batch_size, n_jobs = sampling["batch_size"], sampling["n_jobs"]

    def run_round(units: int | None, resume: _Resume):
        alone = units is not None and units - resume.count <= batch_size
        return run_sampling(sample_batch, n_units=units, checkpoint=resume,
                            **{**sampling, "n_jobs": None if alone else n_jobs})

    return _rounds_within_budget(run_round, budget=budget, fixed=fixed, per_unit=per_unit,
                                 batch_size=batch_size, dim=sampling["dim"], checkpoint=checkpoint)


def _check_truncation(truncation, game) -> float | None:
    """``None`` or a share in ``[0, 1)``; a positive one not on a game with a one-pass ``evaluate_prefixes``."""
    if truncation is None:
        return None
    truncation = check_float(truncation, "truncation", minimum=0.0)
    if truncation >= 1.0:
        raise ValueError(f"truncation must be in [0, 1) (a share of |U(D)|), got {truncation}.")
    if truncation > 0 and supports_prefixes(game):
        # a ModelUtility has the one-pass path through its routed learner (Ridge, or warm_prefixes=True)
        own = ("ModelUtility(..., warm_prefixes=False)" if getattr(game, "warm_prefixes", False)
               else "ModelUtility(..., fast=False), a clone fitted per coalition")
        raise ValueError(
            f"truncation={truncation} cannot save evaluations on {type(game).__name__}: its evaluate_prefixes "
            "computes every prefix of a permutation in one pass, the evaluations truncation skips. Use "
            f"truncation=None, or a game without evaluate_prefixes (e.g. {own}, "
            "or as_game(game.evaluate, game.n_players, vectorized=True) to evaluate prefixes as masks).")
    return truncation


class _Resume:
    """Where a run sampled in rounds stands: :func:`run_sampling` resumes each round from it as from a file.

    It keeps the state of every merged batch (what :meth:`Checkpoint.save` is given) and passes the writes
    on to the run's checkpoint file, if any, so an interruption in any round leaves the file as usual.
    """

    def __init__(self, file, dim: int):
        self.file = file
        self.loaded = file is not None and file.loaded
        self.batch_log = getattr(file, "batch_log", None)  # the file's within-batch log, shared by the rounds
        self.path = getattr(file, "path", "the checkpoint")  # named by a stop's note
        self.closed: tuple[int, ...] = tuple(file.closed) if self.loaded else ()
        if self.loaded:
            self.mean, self.m2, self.count = file.mean, file.m2, file.count
            self.n_evaluations, self.batches = file.n_evaluations, file.batches
        else:
            self.mean, self.m2, self.count, self.n_evaluations, self.batches = np.zeros(dim), np.zeros(dim), 0, 0, 0

    def save(self, mean, m2, count: int, n_evaluations: int, batches: int, force: bool = False,
             closed: tuple[int, ...] = ()) -> bool:
        self.mean, self.m2, self.count, self.n_evaluations, self.batches = mean, m2, count, n_evaluations, batches
        self.closed, self.loaded = closed, True
        if self.file is None:
            return False
        return self.file.save(mean, m2, count, n_evaluations, batches, force=force, closed=closed)

    def ended_on_partial_batch(self, batch_size: int) -> bool:
        """Whether the last round ended on a partial batch (:meth:`LoopSnapshot.ended_on_partial_batch`)."""
        return LoopSnapshot.held_by(self).ended_on_partial_batch(batch_size)

    def refuse(self, why: str) -> Exception:
        if self.file is not None:
            return self.file.refuse(why)
        return RuntimeError(f"truncated permutation sampling lost track of its rounds: the state {why}.")


def _rounds_within_budget(run_round, *, budget, fixed: int, per_unit: int, batch_size: int, dim: int, checkpoint):
    """Run ``run_round(n_units, resume)`` until the evaluations left pay for no further unit.

    A truncated unit costs at most ``per_unit`` evaluations. Each round runs
    the whole batches the evaluations left pay for at that cost or, when they
    pay for none, one final partial batch of the units they pay for; the next
    round reckons again from the evaluations made. Every round but the last
    ends on a whole batch, so the batches are those of one run of the final
    ``n_units`` (the same seed streams), and the rounds are a function of the
    batches' evaluations: the same for any ``n_jobs`` and after a resume. When
    the permutations save a share ``1 - c`` of their evaluations, each round
    spends about ``c`` of what is left: about ``log(B / batch cost) / c``
    rounds (a round costs a call of :func:`run_sampling`; with ``n_jobs``,
    the last rounds have fewer batches than workers). The
    checkpoint's context keeps the budget: a run that ended on a partial batch
    is finished for that budget; continued with a larger one, it keeps its
    batches and goes on with full batches (:func:`~._sampling._loop.resumed_state`),
    and a smaller one is refused. ``budget=None``: one round, stopped by a
    precision target.
    """
    resume = _Resume(checkpoint, dim)
    if budget is None:
        return run_round(None, resume)
    # a file of another budget is planned afresh in the first round, even if it ended on a partial batch
    # (run_sampling continues a finished run with whole batches, and refuses a smaller budget); the rounds after
    # it are this budget's
    other_budget = checkpoint is not None and checkpoint.context.get("budget", budget) != budget
    if checkpoint is not None:
        checkpoint.context["budget"] = budget

    # a unit is reckoned at least one evaluation, so that a run whose permutations stop before evaluating
    # anything (U(empty) already within the tolerance of U(D), or N = 1) still ends
    most = budget - fixed

    def units_paid(finished_if_partial: bool = True) -> int:
        if finished_if_partial and resume.ended_on_partial_batch(batch_size):  # this budget's last round
            return resume.count
        left = budget - fixed - resume.n_evaluations
        whole = min(left // (batch_size * per_unit), (most - resume.count) // batch_size)
        return resume.count + (whole * batch_size if whole > 0 else min(left // per_unit, most - resume.count))

    first = outcome = run_round(units_paid(finished_if_partial=not other_budget), resume)
    while outcome.stopped_by == "budget" and units_paid() > resume.count:
        outcome = run_round(units_paid(), resume)
    outcome.resumed_samples = first.resumed_samples
    return outcome
