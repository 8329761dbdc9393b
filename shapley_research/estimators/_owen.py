r"""Owen sampling: the Shapley value as an integral over the inclusion probability (Okhrati & Lipani 2021).

Owen's multilinear extension writes the Shapley value as an integral over a
probability :math:`q` with which every other player joins (Okhrati & Lipani,
"A Multilinear Sampling Algorithm to Estimate Shapley Values", ICPR 2021):

.. math::

    \phi_i = \int_0^1 f_i(q)\,dq, \qquad
    f_i(q) = \mathbb E\bigl[U(S_q \cup \{i\}) - U(S_q)\bigr],

with :math:`S_q \subseteq D \setminus \{i\}` holding each other player
independently with probability :math:`q`. Writing :math:`m_{i,s}` for the
mean marginal contribution of :math:`i` over the coalitions of size
:math:`s`, :math:`f_i(q) = \sum_{s=0}^{N-1} \binom{N-1}{s} q^s (1-q)^{N-1-s}
m_{i,s}`, and each Bernstein polynomial integrates to :math:`1/N`, so
:math:`\int_0^1 f_i = \frac1N \sum_s m_{i,s} = \phi_i`.

**The integral: one random q per bin.** :math:`[0, 1]` is cut into ``Q``
equal bins and a *sweep* draws one :math:`q_k = (k + V_k)/Q` per bin,
:math:`V_k \sim U(0, 1)`: :math:`\mathbb E f_i(q_k) = Q \int_{k/Q}^{(k+1)/Q}
f_i`, so the sweep's mean :math:`\frac1Q \sum_k f_i(q_k)` is unbiased for
:math:`\phi_i` (stratified sampling, never worse than one uniform ``q`` per
coalition). A fixed grid (pyDVL's ``GridOwenStrategy`` takes ``linspace(0, 1,
Q)`` with equal weights; ``q_points="midpoint"`` here takes the midpoints
:math:`(k + \tfrac12)/Q`) is a quadrature of the degree-``N-1`` polynomial
:math:`f_i`: its error does not average away with more samples.

**Reuse: one coalition, a marginal for every player.** A sweep draws, in
bin :math:`k`, one coalition :math:`S \subseteq D` holding *every* player
with probability :math:`q_k`, and evaluates :math:`U(S)`, :math:`U(S \cup
\{i\})` for :math:`i \notin S` and :math:`U(S \setminus \{i\})` for
:math:`i \in S`: ``N + 1`` evaluations. Player :math:`i`'s sample is
:math:`U(T_i \cup \{i\}) - U(T_i)` with :math:`T_i = S \setminus \{i\}`
(:math:`T_i = S` when :math:`i \notin S`). The coordinates of :math:`S` are
independent, so :math:`T_i` is Bernoulli(:math:`q_k`) on
:math:`D \setminus \{i\}` whatever :math:`i`'s own coordinate: each sample
is an unbiased draw of :math:`f_i(q_k)`, for all ``N`` players at once. The
players' samples within a coalition are dependent, the sweeps independent:
a sweep gives the vector :math:`x_i = \frac1Q \sum_k \bigl(U(T_{ik} \cup
\{i\}) - U(T_{ik})\bigr)`, the values are the sweeps' mean and the standard
errors the sweeps' (per player, honest for any dependence within a sweep).

**Antithetic sweeps** (``antithetic=True``, ``Q`` even): bin :math:`k <
Q/2` draws :math:`q_k` and :math:`S_k`, and its mirror bin :math:`Q-1-k`
takes :math:`1 - q_k` (uniform in the mirror bin) with the complement
:math:`D \setminus S_k` (each player in with probability :math:`1 - q_k`:
player :math:`j \in S_k` iff :math:`u_j < q_k`, so :math:`j \notin S_k` iff
:math:`1 - u_j \le 1 - q_k`). Every bin still holds one coalition of its
law, so the sweep stays unbiased at the same cost; the pair's marginals are
correlated, which helps where a player's marginal against a coalition and
against its complement move in opposite directions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import NDArray

from ._permutation import documents_sampling_options
from ._sampling._driver import Run, Sampler, SamplingOptions, SamplingSpec, drive
from ._sampling._loop import Anchors, MeanState, evaluate_coalitions, evaluation_chunks
from ..games import GameLike
from .._validation import check_bool, check_choice, check_game, check_int, check_utilities
from ..result import Finalizer, SamplingRecord, ValuationResult, register_finalizer

__all__ = ["owen_shapley", "owen_coalitions", "flip_marginals"]

#: Bins of q per sweep by default (see ``n_bins`` of :func:`owen_shapley`).
DEFAULT_BINS = 4
#: How the q of a bin is chosen: uniformly at random in it (unbiased), or its midpoint (a quadrature).
Q_POINTS = ("stratified", "midpoint")


def owen_coalitions(rng: np.random.Generator, size: int, n_players: int, n_bins: int,
                    q_points: str = "stratified", antithetic: bool = False) -> NDArray[np.bool_]:
    r"""The coalitions of ``size`` sweeps: row ``t * Q + k`` holds each player with probability :math:`q_{tk}`.

    :math:`q_{tk} = (k + V_{tk}) / Q` with :math:`V_{tk} \sim U(0, 1)` (``"stratified"``) or
    :math:`V_{tk} = \tfrac12` (``"midpoint"``); player ``j`` is in iff :math:`u_{tkj} < q_{tk}`,
    :math:`u_{tkj} \sim U(0, 1)`. With ``antithetic`` (``Q`` even) only bins :math:`k < Q/2` are drawn, and
    bin :math:`Q - 1 - k` holds the complement of bin :math:`k`'s coalition (law: :math:`q = 1 - q_{tk}`).
    Draws, in order: the ``V`` (if stratified), then the ``u``.

    Returns
    -------
    numpy.ndarray of bool, shape (size * n_bins, n_players)
    """
    drawn = n_bins // 2 if antithetic else n_bins
    offsets = rng.random((size, drawn)) if q_points == "stratified" else np.full((size, drawn), 0.5)
    q = (np.arange(drawn) + offsets) / n_bins
    members = rng.random((size, drawn, n_players)) < q[:, :, None]
    if antithetic:  # mirror bins in reverse order: bin Q-1-k is the complement of bin k
        members = np.concatenate([members, ~members[:, ::-1]], axis=1)
    return members.reshape(size * n_bins, n_players)


def flip_marginals(game: GameLike, coalitions: NDArray[np.bool_],
                   empty_utility: float | None = None) -> tuple[NDArray[np.float64], int]:
    r"""Every player's marginal contribution at each coalition, from ``N + 1`` evaluations per coalition.

    For a coalition :math:`S`, player :math:`i`'s entry is
    :math:`U(S \cup \{i\}) - U(S)` if :math:`i \notin S` and :math:`U(S) - U(S \setminus \{i\})` if
    :math:`i \in S`, that is :math:`\sigma_i\,(U(S \triangle \{i\}) - U(S))` with
    :math:`\sigma_i = 1 - 2\cdot 1(i \in S)`. The ``c (N + 1)`` coalitions (:math:`S`, then its ``N``
    one-player flips) are built and evaluated about ``2**22`` mask cells at a time. With ``empty_utility``
    the empty coalition is not evaluated (:func:`~._sampling._loop.evaluate_coalitions`).

    Returns
    -------
    (numpy.ndarray of shape (c, N), int)
        The marginals and the evaluations made.
    """
    count, n = coalitions.shape
    per = n + 1
    utilities, made = np.empty(count * per), 0
    for rows in evaluation_chunks(count * per, n):
        owner, flip = np.divmod(np.arange(rows.start, rows.stop), per)
        masks = coalitions[owner]  # a copy: row r is coalition r // (N + 1) ...
        flipped = np.flatnonzero(flip)
        masks[flipped, flip[flipped] - 1] ^= True  # ... with player r % (N + 1) - 1 flipped (none at 0)
        if empty_utility is None:
            utilities[rows], evaluated = check_utilities(game.evaluate(masks), masks.shape[0]), masks.shape[0]
        else:
            utilities[rows], evaluated = evaluate_coalitions(game, masks, empty_utility)
        made += evaluated
    table = utilities.reshape(count, per)
    return (1.0 - 2.0 * coalitions) * (table[:, 1:] - table[:, :1]), made


def _owen_batch(game: GameLike, empty_utility: float | None, n_bins: int, q_points: str, antithetic: bool,
                rng: np.random.Generator, size: int) -> tuple[NDArray[np.float64], int]:
    """The ``sample_batch`` of :func:`owen_shapley`: ``size`` sweeps, each reduced to its mean marginals."""
    coalitions = owen_coalitions(rng, size, game.n_players, n_bins, q_points, antithetic)
    marginals, made = flip_marginals(game, coalitions, empty_utility)
    return marginals.reshape(size, n_bins, game.n_players).mean(axis=1), made


@register_finalizer("owen_shapley")
@dataclass(frozen=True)
class OwenFinalizer(Finalizer):
    """The final step of :func:`owen_shapley`: the values are the sweeps' mean."""

    def finalize(self, state: MeanState, record: SamplingRecord) -> tuple[np.ndarray, np.ndarray, dict]:
        return state.mean.copy(), state.stderr, {}


@dataclass(frozen=True, kw_only=True)
class OwenSpec(SamplingSpec):
    """:func:`owen_shapley` for :func:`~._sampling._driver.drive`: a unit is one sweep of ``n_bins``
    coalitions, reduced to its ``N`` mean marginals; no anchors (the empty and grand coalitions are drawn
    like any)."""

    n_bins: int
    q_points: str
    antithetic: bool
    empty_utility: float | None = None

    def options(self) -> dict:
        """The options of the estimate: runs merge, and checkpoints continue, only with equal ones."""
        options = {"n_bins": self.n_bins, "q_points": self.q_points, "antithetic": self.antithetic}
        return options if self.empty_utility is None else {**options, "empty_utility": self.empty_utility}

    def fingerprint_options(self, n_units: int | None) -> dict:
        return self.options()

    def enumeration_info(self, empty_utility: float | None) -> dict:
        return {"options": self.options(), "n_bins": self.n_bins}

    def start(self, game: GameLike, run: Run, anchors: Anchors | None) -> Sampler:
        options = self.options()
        info = {"options": options, "n_bins": self.n_bins, "q_points": self.q_points,
                "antithetic": self.antithetic, "batch_size": run.batch_size, "empty_utility": self.empty_utility}
        record = SamplingRecord(OwenFinalizer(), options, empty_utility=self.empty_utility, seeds=(run.entropy,))
        sample = partial(_owen_batch, game, self.empty_utility, self.n_bins, self.q_points, self.antithetic)
        return Sampler(sample, info, record)


def _check_owen_options(n_bins: object, q_points: object, antithetic: object) -> tuple[int, str, bool]:
    """``n_bins``, ``q_points`` and ``antithetic``, or a ``ValueError``/``TypeError`` naming the argument."""
    bins = check_int(n_bins, "n_bins", minimum=1)
    points = check_choice(q_points, "q_points", Q_POINTS)
    mirrored = check_bool(antithetic, "antithetic")
    if mirrored and bins % 2:
        raise ValueError(f"antithetic=True pairs bin k with bin n_bins - 1 - k, so n_bins must be even, got "
                         f"n_bins={bins}.")
    return bins, points, mirrored


@documents_sampling_options
def owen_shapley(game: GameLike, budget: int | None, seed: int | np.random.SeedSequence | None = None, *,
                 n_bins: int = DEFAULT_BINS, q_points: str = "stratified", antithetic: bool = False,
                 batch_size: int | None = None, n_jobs: int | None = None, progress: bool | None = None,
                 empty_utility: float | None = None, target_stderr: float | None = None,
                 target_rank_correlation: float | None = None, checkpoint: str | os.PathLike[str] | None = None,
                 checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""Shapley values by Owen sampling (Okhrati & Lipani 2021): a random q per bin, one coalition for all.

    .. math::

        \phi_i = \int_0^1 \mathbb E\bigl[U(S_q \cup \{i\}) - U(S_q)\bigr]\,dq,

    :math:`S_q` holding each other player with probability :math:`q`. A
    *sweep* cuts :math:`[0, 1]` into ``n_bins`` equal bins, draws one
    :math:`q` uniformly in each and one coalition :math:`S` holding every
    player with probability :math:`q`, and evaluates :math:`U(S)` and the
    ``N`` coalitions :math:`S` with one player added or removed: each player
    gets one marginal contribution per bin (against :math:`S \setminus \{i\}`,
    again Bernoulli(:math:`q`) on the others). The sweep's mean marginals are
    unbiased for the values; the estimate is the mean over sweeps, its
    standard error the sweeps' (see :mod:`shapley_research.estimators._owen`
    for the derivation). Efficiency holds in expectation only.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    budget : int or None
        Utility evaluations allowed: ``n_bins * (N + 1)`` per sweep (fewer
        where ``empty_utility`` spares the empty coalition), no fixed ones.
        ``None`` (no cap) only with a ``target_stderr`` or
        ``target_rank_correlation``. A standard error needs two sweeps.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the random streams; ``None`` draws one (kept on the result).
    n_bins : int, default 4
        Bins of :math:`q` per sweep. More bins remove more of the variance
        due to :math:`q` but make a sweep cost more, and the standard error
        needs sweeps; it is fixed rather than derived from the budget, so
        that runs of different budgets merge and a checkpoint continues.
        With budgets of 50 x N or more, 16 bins gave about 1.5x lower error
        than 4 on the KNN game of ``benchmarks/results/owen_sampling.md``.
    q_points : {"stratified", "midpoint"}, default "stratified"
        ``"stratified"``: :math:`q` uniform at random within its bin
        (unbiased). ``"midpoint"``: the bins' midpoints
        :math:`(k + \tfrac12)/Q`, a deterministic grid like pyDVL's: a
        quadrature of a degree ``N - 1`` polynomial, biased by an amount that
        no number of sweeps removes (for comparisons only).
    antithetic : bool, default False
        Pair bin ``k`` with bin ``n_bins - 1 - k``: the mirror bin takes
        :math:`1 - q` and the complement of the coalition, at no extra cost;
        ``n_bins`` must be even.
    batch_size, n_jobs, progress
        As in :func:`~shapley_research.permutation_shapley`; a batch holds
        sweeps, about ``4096`` evaluations by default, evaluated about
        ``2**22`` mask cells at a time.
    empty_utility : float, optional
        Use this value as ``U(empty)`` wherever the empty coalition comes up,
        instead of evaluating it.
{sampling}
    Returns
    -------
    ValuationResult
        ``method="owen_shapley"``; ``n_samples`` counts sweeps, ``stderr`` the
        standard error of each value (NaN from a single sweep; from a few, its
        square is unbiased for the variance but noisy: a value's error over
        its standard error spreads like a t with ``sweeps - 1`` degrees of
        freedom, wider on sparse games such as KNN's). Runs with different
        seeds and the same options combine with
        :func:`~shapley_research.merge_results`.
    """
    n = check_game(game)
    bins, points, mirrored = _check_owen_options(n_bins, q_points, antithetic)
    options = SamplingOptions.checked(
        game, "owen_shapley", batch_size=batch_size, n_jobs=n_jobs, progress=progress, empty_utility=empty_utility,
        target_stderr=target_stderr, target_rank_correlation=target_rank_correlation, checkpoint=checkpoint,
        checkpoint_interval=checkpoint_interval)
    return drive(OwenSpec(method="owen_shapley", n_players=n, dim=n, per_unit=bins * (n + 1), unit_name="sweep",
                          desc="Owen sampling", progress_unit="sweep", needs_empty=False, n_bins=bins,
                          q_points=points, antithetic=mirrored, empty_utility=options.empty_utility),
                 game, budget, seed, options)
