r"""Data Banzhaf: exact by enumeration, and by maximum sample reuse (Wang & Jia, AISTATS 2023).

The Banzhaf value weighs every coalition of the other players alike,

.. math::

    b_i = \frac{1}{2^{N-1}} \sum_{S \subseteq D \setminus \{i\}} \bigl[U(S \cup \{i\}) - U(S)\bigr]
        = \mathbb E\,[U(S) \mid i \in S] - \mathbb E\,[U(S) \mid i \notin S],

the second form for a coalition :math:`S` drawn uniformly among all
:math:`2^N` (each player in independently with probability 1/2): given
whether :math:`i` is in, the other players are still fair coins. So one
evaluated coalition is a sample of one of the two means for *every* player,
which is what maximum sample reuse (MSR) exploits. Unlike the Shapley value
it is not efficient: :math:`\sum_i b_i \ne U(D) - U(\emptyset)` in general.
Wang & Jia argue it is the semivalue whose ranking of the points is the most
robust to noise in the utility (e.g. the randomness of training).

*Weighted Banzhaf values* (Li & Yu, "Robust data valuation with weighted
Banzhaf values", NeurIPS 2023) draw each other player with probability
:math:`w` instead of 1/2:

.. math::

    b^w_i = \sum_{S \subseteq D \setminus \{i\}} w^{|S|} (1 - w)^{N-1-|S|}
            \bigl[U(S \cup \{i\}) - U(S)\bigr]
          = \mathbb E_w[U(S) \mid i \in S] - \mathbb E_w[U(S) \mid i \notin S],

so maximum sample reuse estimates them alike (coalitions drawn with
inclusion probability :math:`w`); :math:`w = 1/2` is the Banzhaf value. Li &
Yu find the most robust :math:`w` depends on the noise of the utility; the
subsampled influence of Feldman & Zhang ("What neural networks memorize and
why", NeurIPS 2020), OpenDataVal's ``InfluenceSubsample``, is the same
estimator with :math:`w = 0.7`.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np
from numpy.typing import NDArray

from ._exact import check_enumeration, utility_table
from ._permutation import documents_sampling_options
from ._sampling._driver import Run, Sampler, SamplingOptions, SamplingSpec, drive
from ._sampling._loop import (Anchors, MeanState, coalition_batch_size, evaluate_coalitions, evaluation_chunks,
                             evaluations_text)
from ._small_games import enumeration_affordable
from ..games import GameLike
from .._validation import check_float, check_game, check_int, check_utilities
from ..result import Finalizer, SamplingRecord, ValuationResult, register_finalizer

__all__ = ["exact_banzhaf", "msr_banzhaf", "random_coalitions", "weighted_coalitions"]

#: Smallest budget of msr_banzhaf: two coalitions, so that a player can be seen both in and out of one.
MSR_MIN_BUDGET = 2
#: The inclusion probability of the (unweighted) Banzhaf value.
BANZHAF_WEIGHT = 0.5


def exact_banzhaf(game: GameLike, *, max_players: int = 20, chunk_size: int = 2**16,
                  empty_utility: float | None = None, progress: bool | None = None,
                  weight: float = BANZHAF_WEIGHT) -> ValuationResult:
    r"""Exact (weighted) Banzhaf values by evaluating all :math:`2^N` coalitions.

    .. math::

        b_i = \frac{1}{2^{N-1}} \sum_{S \subseteq I \setminus \{i\}} \bigl[U(S \cup \{i\}) - U(S)\bigr]

    Each coalition is evaluated once (in chunks, vectorised); the table of
    utilities, viewed as an array of shape ``(2,) * N`` (one axis per
    player), gives :math:`b_i` as the mean of its difference along player
    ``i``'s axis: ``O(N 2^N)`` arithmetic, ``2^N`` evaluations.

    With a ``weight`` :math:`w \ne 1/2`, the weighted Banzhaf value (see the
    module): the same differences along player ``i``'s axis, summed with the
    weights :math:`w^{|S|} (1 - w)^{N-1-|S|}` of the other players'
    coalitions :math:`S` instead of averaged (a null player's differences are
    all 0, so its value is exactly 0 at any weight).

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    max_players : int, default 20
        Refuse games with more players (``2^20`` evaluations is about the limit
        of an interactive call); raise it deliberately for bigger games.
    chunk_size : int, default 65536
        Coalitions evaluated per call to ``game.evaluate``.
    empty_utility : float, optional
        Use this value as ``U(empty)`` instead of evaluating the game on the
        empty coalition.
    progress : bool, optional
        A progress bar over the utility evaluations (default: in terminals and
        notebooks, and in logs once the run has lasted 30 s; ``False``: none).
        It never changes a number.
    weight : float, default 0.5
        :math:`w`, each other player's probability of being in the coalitions
        averaged over, strictly between 0 and 1; 0.5 is the Banzhaf value.

    Returns
    -------
    ValuationResult
        ``method="exact_banzhaf"``; ``n_evaluations`` is ``2^N`` (``2^N - 1``
        if ``empty_utility`` is given); ``info`` holds ``U(empty)`` and ``U(D)``,
        and ``weight`` unless it is 0.5.
    """
    start = time.perf_counter()
    n = check_game(game)
    weight = check_weight(weight)
    chunk_size, empty_utility = check_enumeration(
        n, max_players, chunk_size, empty_utility, method="exact_banzhaf",
        alternative="Use the sampling estimator msr_banzhaf, or raise max_players deliberately.")
    utilities, n_evaluations = utility_table(game, n, chunk_size, empty_utility, progress, "exact Banzhaf")
    values = (_banzhaf_from_table(utilities, n) if weight == BANZHAF_WEIGHT
              else _weighted_banzhaf_from_table(utilities, n, weight))
    return ValuationResult(values=values, n_evaluations=n_evaluations, method="exact_banzhaf",
                           wall_time=time.perf_counter() - start,
                           info={"empty_utility": float(utilities[0]), "full_utility": float(utilities[-1]),
                                 **_options(None, weight)})


def check_weight(weight: object) -> float:
    """``weight`` as a float strictly between 0 and 1, or a ``TypeError``/``ValueError`` naming it."""
    weight = check_float(weight, "weight", minimum=0.0, strict=True)
    if weight >= 1.0:
        raise ValueError(f"weight must be < 1 (each player's probability of being in a coalition; 1 would never "
                         f"leave it out), got {weight}.")
    return weight


def _banzhaf_from_table(utilities: np.ndarray, n: int) -> np.ndarray:
    """Banzhaf values from the ``2^N`` utilities indexed by bit code."""
    # in C order the flat index of (i_0, ..., i_{N-1}) is sum_k i_k 2^(N-1-k): axis k is player N-1-k
    table = utilities.reshape((2,) * n)
    values = np.empty(n)
    for player in range(n):
        axis = n - 1 - player
        values[player] = (np.take(table, 1, axis=axis) - np.take(table, 0, axis=axis)).mean()
    return values


def _weighted_banzhaf_from_table(utilities: np.ndarray, n: int, weight: float) -> np.ndarray:
    """Weighted Banzhaf values from the ``2^N`` utilities indexed by bit code (see :func:`exact_banzhaf`)."""
    sizes = np.zeros(1, dtype=np.int8)
    for _ in range(n):  # the sizes of the coalitions by bit code: |T| for T and T with one more player
        sizes = np.concatenate([sizes, sizes + 1])
    others = np.arange(n)  # P(S) of the other players' coalition S, by its size
    probability = weight**others * (1.0 - weight) ** (n - 1 - others)
    table, size_table = utilities.reshape((2,) * n), sizes.reshape((2,) * n)
    values = np.empty(n)
    for player in range(n):
        axis = n - 1 - player
        contributions = np.take(table, 1, axis=axis) - np.take(table, 0, axis=axis)
        values[player] = contributions.ravel() @ probability[np.take(size_table, 0, axis=axis).ravel()]
    return values


def random_coalitions(rng: np.random.Generator, size: int, n_players: int) -> NDArray[np.bool_]:
    """``size`` coalitions, each player in independently with probability 1/2 (uniform over all ``2^N``).

    The bits of uniform random bytes: each is a fair coin, independent of the
    others, and drawing them is several times faster than one draw per cell.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the bits.
    size : int
        Coalitions to draw.
    n_players : int
        ``N``, the number of players.

    Returns
    -------
    numpy.ndarray of bool, shape (size, n_players)
        One coalition per row.
    """
    raw = rng.integers(0, 256, size=(size, (n_players + 7) // 8), dtype=np.uint8)
    return np.unpackbits(raw, axis=1, count=n_players).view(bool)


def weighted_coalitions(rng: np.random.Generator, size: int, n_players: int,
                        weight: float = BANZHAF_WEIGHT) -> NDArray[np.bool_]:
    """``size`` coalitions, each player in independently with probability ``weight``.

    At ``weight = 0.5`` these are :func:`random_coalitions` (the same draws);
    otherwise one uniform number per cell, compared with ``weight``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the draws.
    size : int
        Coalitions to draw.
    n_players : int
        ``N``, the number of players.
    weight : float, default 0.5
        Each player's probability of being in.

    Returns
    -------
    numpy.ndarray of bool, shape (size, n_players)
        One coalition per row.
    """
    if weight == BANZHAF_WEIGHT:
        return random_coalitions(rng, size, n_players)
    return rng.random((size, n_players)) < weight


class _SideSums:
    r"""The sums over a batch's coalitions from which :func:`msr_banzhaf`'s statistics follow.

    Coalition :math:`S_t` with utility :math:`u_t` gives the vector
    :math:`[u_t x_{ti}]_i, [x_{ti}]_i, [u_t (1 - x_{ti})]_i` with
    :math:`x_{ti} = 1(i \in S_t)` (``3N`` entries). Its sums and sums of
    squares follow from :math:`\sum_t u_t x_{ti}`, :math:`\sum_t u_t^2 x_{ti}`,
    :math:`\sum_t x_{ti}` (:math:`x^2 = x`) and the totals :math:`\sum_t u_t`,
    :math:`\sum_t u_t^2`: added chunk by chunk, rows in order, then turned
    into the batch's count, mean and :math:`M_2 = \sum y^2 - (\sum y)^2 / b`
    once (:meth:`state`), without the ``b x 3N`` array.
    """

    def __init__(self, n_players: int) -> None:
        self.moments = np.zeros((3, n_players))  # sums of u, u^2 and 1 over the coalitions holding i
        self.count = 0
        self.total: float | None = None
        self.total_sq: float | None = None

    def add(self, masks: np.ndarray, utilities: np.ndarray) -> None:
        """Add the coalitions ``masks`` (rows in order) with their ``utilities``."""
        from ._sampling._gt_kernels import add_masked_moments  # numba loads on first use

        utilities = np.ascontiguousarray(utilities, dtype=float)
        add_masked_moments(np.ascontiguousarray(masks).view(np.uint8), utilities, self.moments)
        total, total_sq = float(utilities.sum()), float(utilities @ utilities)
        self.total = total if self.total is None else self.total + total
        self.total_sq = total_sq if self.total_sq is None else self.total_sq + total_sq
        self.count += masks.shape[0]

    def state(self) -> MeanState:
        """The batch's count, mean and :math:`M_2` of the ``3N`` vectors (one compiled pass)."""
        from ._sampling._gt_kernels import side_moments

        n = self.moments.shape[1]
        mean, m2 = np.empty(3 * n), np.empty(3 * n)
        side_moments(self.moments, float(self.total or 0.0), float(self.total_sq or 0.0), self.count, mean, m2)
        return MeanState(3 * n, self.count, mean, m2)


def _side_statistics(state: MeanState):
    r"""Per player and side (in, out): the count, the sum of the utilities and their sum of squared deviations.

    With :math:`a = u x`, :math:`c = u (1 - x)` and the counts :math:`m_\pm`,
    the cross moment :math:`\sum_t a_t x_t = \sum_t a_t` makes the within-side
    sums of squares exact functions of the state:
    :math:`SS_+ = M_2(a) - A^2 m_- / (m_+ m)` with :math:`A = \sum_t a_t`, and
    likewise :math:`SS_- = M_2(c) - C^2 m_+ / (m_- m)`.
    """
    n, m = state.dim // 3, state.count
    sums = state.mean * m
    sum_in, sum_out = sums[:n], sums[2 * n:]
    count_in = np.rint(sums[n:2 * n])
    count_out = m - count_in
    scale = max(m, 1)
    ss_in = state.m2[:n] - sum_in**2 * count_out / (np.maximum(count_in, 1.0) * scale)
    ss_out = state.m2[2 * n:] - sum_out**2 * count_in / (np.maximum(count_out, 1.0) * scale)
    # an uncentred state: a utility offset c against a spread sigma costs about log10(c^2 / sigma^2) digits
    # here (rounding can make a tiny SS negative), none in the values
    return (count_in, sum_in, np.maximum(ss_in, 0.0)), (count_out, sum_out, np.maximum(ss_out, 0.0))


@register_finalizer("msr_banzhaf")
@dataclass(frozen=True)
class BanzhafFinalizer(Finalizer):
    """The final step of :func:`msr_banzhaf`: the statistics alone give the values."""

    def finalize(self, state: MeanState, record: SamplingRecord) -> tuple[np.ndarray, np.ndarray, dict]:
        return _finalize(state)


def _finalize(state: MeanState) -> tuple[np.ndarray, np.ndarray, dict]:
    r"""Values :math:`\bar u_{i,+} - \bar u_{i,-}` and standard errors :math:`\sqrt{s_+^2/m_+ + s_-^2/m_-}`.

    A player without a sampled coalition on one side (never, or always, in so
    far) gets the value 0, no evidence of a difference, and an infinite
    standard error; one with a single coalition on a side has its value but
    an infinite standard error (no variance to estimate). ``info`` gets
    ``one_sided_players`` (the indices of the first kind) and
    ``fewest_side_samples`` (the smallest :math:`\min(m_{i,+}, m_{i,-})`).
    """
    (m_in, sum_in, ss_in), (m_out, sum_out, ss_out) = _side_statistics(state)
    both = (m_in > 0) & (m_out > 0)
    values = np.where(both, sum_in / np.maximum(m_in, 1.0) - sum_out / np.maximum(m_out, 1.0), 0.0)
    spread = (m_in > 1) & (m_out > 1)
    variance = (ss_in / np.maximum(m_in - 1.0, 1.0) / np.maximum(m_in, 1.0)
                + ss_out / np.maximum(m_out - 1.0, 1.0) / np.maximum(m_out, 1.0))
    stderr = np.where(spread, np.sqrt(variance), np.inf)
    fewest = int(np.minimum(m_in, m_out).min()) if m_in.size else 0
    return values, stderr, {"one_sided_players": np.flatnonzero(~both).tolist(), "fewest_side_samples": fewest}


def _warn_one_sided(players: list, n: int, m: int,
                    weight: float = BANZHAF_WEIGHT) -> None:  # stacklevel 5: the caller of msr_banzhaf
    """Warn when some player was sampled only in, or only out, of the ``m`` coalitions (value 0 by convention)."""
    if not players:
        return
    if weight == BANZHAF_WEIGHT:
        chance = "2^(1-budget)"
        enough = MSR_MIN_BUDGET + int(np.ceil(np.log2(max(n, 1)))) + 10  # then P(any one-sided) <= N 2^(1-m) < 0.1%
    else:  # w^m + (1-w)^m <= 2 max(w, 1-w)^m: below 0.1% / N
        chance = f"{weight:g}^budget + {1 - weight:g}^budget"
        enough = int(np.ceil(np.log(2000 * max(n, 1)) / -np.log(max(weight, 1.0 - weight))))
    warnings.warn(f"msr_banzhaf: {len(players)} of {n} players were sampled only in, or only out of, all {m} "
                  "coalitions, so their values are 0 with an infinite standard error "
                  f"(info['one_sided_players']). A player is one-sided with probability {chance}: a budget of "
                  f"{enough} or more makes it unlikely for any of the {n}.", UserWarning, stacklevel=5)


@partial(documents_sampling_options, exact="exact_banzhaf")
def msr_banzhaf(game: GameLike, budget: int | None, seed: int | np.random.SeedSequence | None = None, *,
                batch_size: int | None = None, n_jobs: int | None = None,
                progress: bool | None = None, empty_utility: float | None = None,
                target_stderr: float | None = None, target_rank_correlation: float | None = None,
                checkpoint: str | os.PathLike[str] | None = None, checkpoint_interval: float = 60.0,
                weight: float = BANZHAF_WEIGHT) -> ValuationResult:
    r"""Banzhaf values by maximum sample reuse (Wang & Jia, "Data Banzhaf", AISTATS 2023).

    Draws coalitions :math:`S_1, \dots, S_m` uniformly among all :math:`2^N`
    (each player in independently with probability 1/2), evaluates each once,
    and uses every evaluation for every player:

    .. math::

        \hat b_i = \frac{1}{m_{i,+}} \sum_{t:\, i \in S_t} U(S_t)
                 - \frac{1}{m_{i,-}} \sum_{t:\, i \notin S_t} U(S_t),

    with :math:`m_{i,+}` and :math:`m_{i,-} = m - m_{i,+}` the coalitions
    holding and lacking :math:`i`. With a ``weight`` :math:`w`, each player is
    in with probability :math:`w` and the same estimator gives the weighted
    Banzhaf value :math:`b^w_i` (module docstring); everything below holds
    with :math:`2^{1-m}` replaced by :math:`w^m + (1 - w)^m`.

    *Bias.* :math:`\hat b_i` is a ratio estimator (its denominators are
    random), yet given which coalitions hold :math:`i` the others are still
    i.i.d. uniform draws of :math:`S \cup \{i\}` and of :math:`S`
    (:math:`S \subseteq D \setminus \{i\}` uniform): each side's mean is an
    unbiased mean of :math:`m_{i,\pm}` samples, so
    :math:`\mathbb E[\hat b_i \mid m_{i,+}, m_{i,-}] = b_i` whenever both are
    positive. The only bias is from a side without any coalition
    (probability :math:`2^{1-m}`), where :math:`\hat b_i = 0` by convention:
    at most :math:`2^{1-m} |b_i|`.

    *Standard error.* :math:`\sqrt{s_{i,+}^2 / m_{i,+} + s_{i,-}^2 / m_{i,-}}`
    with :math:`s^2_{i,\pm}` the unbiased variances of each side's
    utilities: the delta-method variance of the ratio estimator, whose two
    residuals :math:`x(u - \bar u_+)` and :math:`(1 - x)(u - \bar u_-)`
    never overlap (no covariance term); given the counts it is the exact
    variance of a difference of two independent means. It is infinite for a
    player with fewer than two coalitions on a side, so ``target_stderr``
    never stops before every player has two on each.

    *State.* Per coalition the ``3N`` vector
    :math:`[U(S) 1(i \in S)]_i, [1(i \in S)]_i, [U(S) 1(i \notin S)]_i`
    (running means and sums of squared deviations): the counts, sums and
    within-side sums of squares are exact functions of it, so merged or
    resumed states give the same values. The sums of squares are formed
    without centring: a utility offset ``c`` against a spread ``sigma``
    between coalitions costs about :math:`\log_{10}(c^2/\sigma^2)` of the 16
    digits of the standard errors (not of the values).

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    budget : int or None
        Utility evaluations allowed: one per sampled coalition, no fixed ones
        (``U(empty)`` and ``U(D)`` are not needed; they are drawn like any
        coalition, with probability :math:`2^{-N}` each). At least 2 (one
        coalition holds or lacks every player alike, which estimates nothing;
        a ``ValueError`` says so), unless it pays for enumerating the game.
        A player still sampled on one side only after the run (probability
        :math:`2^{1-m}` each, so likely below about :math:`\log_2 N` coalitions)
        gets the value 0 and a ``UserWarning`` names how many. ``None`` (no
        cap) only with a ``target_stderr`` or ``target_rank_correlation``.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the random streams; ``None`` draws one (kept on the result).
    batch_size, n_jobs, progress
        As in :func:`~shapley_research.permutation_shapley`; a batch holds
        sampled coalitions, 4096 by default, evaluated about ``2**22`` mask
        cells at a time (one call to ``game.evaluate`` up to ``N = 1,024``).
    empty_utility : float, optional
        Use this value as ``U(empty)`` whenever the empty coalition is drawn,
        instead of evaluating it (``n_evaluations`` then counts only the
        coalitions evaluated).
{sampling}
        Both targets judge the values and standard errors this function
        returns, recomputed from the state after each batch (``O(N)``).
    weight : float, default 0.5
        :math:`w`, each player's probability of being in a sampled coalition,
        strictly between 0 and 1: 0.5 gives the Banzhaf value, any other the
        weighted Banzhaf value of Li & Yu (0.7: Feldman & Zhang's subsampled
        influence). Runs with different weights value different things and
        never merge.

    Returns
    -------
    ValuationResult
        ``method="msr_banzhaf"``; ``n_samples`` is the number of sampled
        coalitions; ``info["one_sided_players"]`` lists the players never (or
        always) sampled in so far, whose value is 0 and standard error
        infinite, and ``info["fewest_side_samples"]`` is the smallest number
        of coalitions on either side of any player. Runs with different
        seeds combine with :func:`~shapley_research.merge_results`.
    """
    n = check_game(game)
    options = SamplingOptions.checked(
        game, "msr_banzhaf", batch_size=batch_size, n_jobs=n_jobs, progress=progress, empty_utility=empty_utility,
        target_stderr=target_stderr, target_rank_correlation=target_rank_correlation, checkpoint=checkpoint,
        checkpoint_interval=checkpoint_interval)
    weight = check_weight(weight)
    return drive(BanzhafSpec(method="msr_banzhaf", n_players=n, dim=3 * n, per_unit=1, unit_name="sampled coalition",
                             desc="MSR Banzhaf", progress_unit="coalition", needs_empty=False, weight=weight),
                 game, budget, seed, options)


@dataclass(frozen=True, kw_only=True)
class BanzhafSpec(SamplingSpec):
    """:func:`msr_banzhaf` for :func:`~._sampling._driver.drive`: a unit is one coalition (each player in with
    probability ``weight``), reduced to the ``3N`` statistics of :class:`_SideSums`; no anchors (``U(empty)``
    and ``U(D)`` are drawn like any)."""

    weight: float = BANZHAF_WEIGHT

    def batch_size(self, batch_size: int | None, n_units: int | None) -> int:
        return coalition_batch_size(self.n_players) if batch_size is None else batch_size

    def units(self, budget: object, options: SamplingOptions) -> int | None:
        n, empty_utility = self.n_players, options.empty_utility
        if (budget is not None and check_int(budget, "budget", minimum=0) < MSR_MIN_BUDGET
                and not enumeration_affordable(n, budget, empty_utility)):
            raise ValueError(f"budget={budget} is smaller than one sampled coalition per side: it needs at least "
                             f"{evaluations_text(MSR_MIN_BUDGET)} (1 per sampled coalition), so that msr_banzhaf "
                             "can sample a player both in and out of a coalition (one coalition says nothing about "
                             "any player).")
        return super().units(budget, options)

    def fingerprint_options(self, n_units: int | None) -> dict:
        return _options(None, self.weight)

    def enumeration_info(self, empty_utility: float | None) -> dict:
        return {"n_players": self.n_players, "options": _options(empty_utility, self.weight)}

    def exact(self) -> Callable[..., ValuationResult]:
        return exact_banzhaf if self.weight == BANZHAF_WEIGHT else partial(exact_banzhaf, weight=self.weight)

    def start(self, game: GameLike, run: Run, anchors: Anchors | None) -> Sampler:
        empty_utility = run.options.empty_utility
        options = _options(empty_utility, self.weight)
        info = {"n_players": self.n_players, "options": options, "batch_size": run.batch_size,
                "empty_utility": empty_utility, **_options(None, self.weight)}
        record = SamplingRecord(BanzhafFinalizer(), options, empty_utility=empty_utility, seeds=(run.entropy,))
        return Sampler(partial(_coalition_batch, game, empty_utility, self.weight), info, record,
                       estimates_of=lambda state: _finalize(state)[:2])

    def estimates(self, sampler: Sampler, state: MeanState) -> tuple[np.ndarray, np.ndarray | None, dict]:
        values, stderr, updates = super().estimates(sampler, state)
        _warn_one_sided(updates["one_sided_players"], self.n_players, state.count, self.weight)
        return values, stderr, updates


def _options(empty_utility: float | None, weight: float = BANZHAF_WEIGHT) -> dict:
    """The options of the estimate: a given U(empty) or a weight changes the values estimated, so runs with and
    without one must not merge (the Banzhaf value's weight, 0.5, is left out: runs made before weights existed
    merge with today's)."""
    options = {} if empty_utility is None else {"empty_utility": empty_utility}
    return options if weight == BANZHAF_WEIGHT else {**options, "weight": weight}


def _coalition_batch(game: GameLike, empty_utility: float | None, weight: float, rng: np.random.Generator,
                     size: int) -> tuple[MeanState, int]:
    """The ``sample_batch`` of :func:`msr_banzhaf`: ``size`` coalitions (each player in with probability
    ``weight``), reduced to their statistics.

    Drawn, evaluated and added chunk by chunk (:func:`~._sampling._batches.evaluation_chunks`).
    """
    sums, made = _SideSums(game.n_players), 0
    for rows in evaluation_chunks(size, game.n_players):
        masks = weighted_coalitions(rng, rows.stop - rows.start, game.n_players, weight)
        if empty_utility is None:
            utilities, evaluated = check_utilities(game.evaluate(masks), masks.shape[0]), masks.shape[0]
        else:
            utilities, evaluated = evaluate_coalitions(game, masks, empty_utility)
        sums.add(masks, utilities)
        made += evaluated
    return sums.state(), made
