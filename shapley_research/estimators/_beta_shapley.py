r"""Beta Shapley: the Beta(alpha, beta) semivalue (Kwon and Zou, AISTATS 2022).

A *semivalue* weighs the marginal contributions of a player by the size of
the coalition it joins,

.. math::

    \phi_i = \sum_{S \subseteq D \setminus \{i\}} w(|S|)\,\bigl[U(S \cup \{i\}) - U(S)\bigr]
           = \sum_{k=0}^{N-1} p(k)\,\bar\Delta_i(k),
    \qquad p(k) = \binom{N-1}{k} w(k),

with :math:`\bar\Delta_i(k)` the mean marginal contribution of ``i`` to the
coalitions of size ``k`` of the other players. Beta Shapley takes

.. math::

    w(k) = \frac{B(k + \beta,\; N - 1 - k + \alpha)}{B(\alpha, \beta)},

so that :math:`p` is the beta-binomial distribution of :math:`N - 1` trials
with parameters :math:`(\beta, \alpha)`: the size fraction
:math:`k / (N - 1)` is roughly :math:`\mathrm{Beta}(\beta, \alpha)`.
:math:`\alpha = \beta = 1` is the Shapley value (:math:`p` uniform);
:math:`\alpha > \beta` weighs small coalitions, where one point's effect on a
model is largest and least drowned in noise; the authors recommend
:math:`(16, 1)`. A semivalue is not efficient: the values need not sum to
:math:`U(D) - U(\emptyset)`.

:func:`exact_beta_shapley` enumerates the coalitions; :func:`beta_shapley`
samples, giving every player one marginal contribution per sampling unit at
a size drawn from :math:`p`, along chains of nested coalitions that share
their evaluations.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from functools import partial
from typing import Callable, NamedTuple, cast

import numpy as np
from scipy.special import betaln, gammaln

from ._exact import check_enumeration, semivalues_from_table, utility_table
from ._permutation import documents_sampling_options, random_permutations
from ._sampling._driver import Run, Sampler, SamplingOptions, SamplingSpec, drive
from ._sampling._loop import Anchors, MeanState
from .._validation import check_bool, check_float, check_game, check_int, check_utilities
from ..games import PREFIX_MASK_CELLS, GameLike, evaluate_prefixes
from ..result import Finalizer, SamplingRecord, ValuationResult, register_finalizer

__all__ = ["beta_weights", "exact_beta_shapley", "beta_shapley"]


def _check_shape(alpha, beta) -> tuple[float, float]:
    """``alpha`` and ``beta`` as positive finite floats, or raise naming them."""
    return (check_float(alpha, "alpha", minimum=0.0, strict=True),
            check_float(beta, "beta", minimum=0.0, strict=True))


def _log_size_probabilities(n: int, alpha: float, beta: float) -> np.ndarray:
    r""":math:`\log p(k) = \log\binom{N-1}{k} + \log w(k)` for ``k = 0..N-1`` (log space: no overflow)."""
    k = np.arange(n, dtype=float)
    log_binomial = gammaln(n) - gammaln(k + 1) - gammaln(n - k)
    return log_binomial + betaln(k + beta, n - 1 - k + alpha) - betaln(alpha, beta)


def beta_weights(n_players: int, alpha: float, beta: float, *, log: bool = False) -> np.ndarray:
    r"""Weight :math:`w(k)` of one coalition of size ``k`` not containing the player, ``k = 0..N-1``.

    .. math::

        w(k) = \frac{B(k + \beta,\; N - 1 - k + \alpha)}{B(\alpha, \beta)},

    computed in log space with :func:`scipy.special.betaln`, so nothing
    overflows. :math:`\alpha = \beta = 1` gives the Shapley weights
    :math:`1 / (N \binom{N-1}{k})`; for any :math:`\alpha, \beta > 0`,
    :math:`\sum_k \binom{N-1}{k} w(k) = 1` (the beta-binomial distribution
    of the size).

    Parameters
    ----------
    n_players : int
        ``N``, at least 1.
    alpha, beta : float
        Positive shape parameters.
    log : bool, default False
        Return :math:`\log w(k)`. A weight is below
        :math:`1 / \binom{N-1}{k}`, so for thousands of players most of them
        underflow to 0 in floating point; their logarithms do not.

    Returns
    -------
    numpy.ndarray of shape (n_players,)
    """
    n = check_int(n_players, "n_players", minimum=1)
    alpha, beta = _check_shape(alpha, beta)
    log = check_bool(log, "log")
    k = np.arange(n, dtype=float)
    log_weights = betaln(k + beta, n - 1 - k + alpha) - betaln(alpha, beta)
    return log_weights if log else np.exp(log_weights)


def exact_beta_shapley(game: GameLike, alpha: float = 16.0, beta: float = 1.0, *, max_players: int = 20,
                       chunk_size: int = 2**16, empty_utility: float | None = None,
                       progress: bool | None = None) -> ValuationResult:
    r"""Exact Beta(alpha, beta) Shapley values by evaluating all :math:`2^N` coalitions.

    .. math::

        \phi_i = \sum_{S \subseteq D \setminus \{i\}} w(|S|)\,\bigl[U(S \cup \{i\}) - U(S)\bigr],
        \qquad w(k) = \frac{B(k + \beta, N - 1 - k + \alpha)}{B(\alpha, \beta)}

    (:func:`beta_weights`), by the enumeration of
    :func:`~shapley_research.exact_shapley`: ``2^N`` evaluations, ``O(N 2^N)``
    arithmetic. ``alpha = beta = 1`` gives the Shapley value.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    alpha, beta : float, default 16 and 1
        Positive shape parameters; ``alpha > beta`` weighs small coalitions.
    max_players : int, default 20
        Refuse games with more players; raise it deliberately for bigger games.
    chunk_size : int, default 65536
        Coalitions evaluated per call to ``game.evaluate``.
    empty_utility : float, optional
        Use this value as ``U(empty)`` instead of evaluating the game on the
        empty coalition.
    progress : bool, optional
        A progress bar over the utility evaluations (default: in terminals and
        notebooks, and in logs once the run has lasted 30 s; ``False``: none).
        It never changes a number.

    Returns
    -------
    ValuationResult
        ``method="exact_beta_shapley"``; ``n_evaluations`` is ``2^N``
        (``2^N - 1`` with ``empty_utility``); ``info`` holds ``alpha``,
        ``beta`` and the anchors ``empty_utility`` and ``full_utility``.
    """
    start = time.perf_counter()
    n = check_game(game)
    alpha, beta = _check_shape(alpha, beta)
    chunk_size, empty_utility = check_enumeration(
        n, max_players, chunk_size, empty_utility, method="exact_beta_shapley",
        alternative="Use beta_shapley (sampling), or raise max_players deliberately.")
    utilities, n_evaluations = utility_table(game, n, chunk_size, empty_utility, progress, "exact Beta Shapley")
    values = semivalues_from_table(utilities, n, beta_weights(n, alpha, beta))
    return ValuationResult(values=values, n_evaluations=n_evaluations, method="exact_beta_shapley",
                           wall_time=time.perf_counter() - start,
                           info={"alpha": alpha, "beta": beta, "empty_utility": float(utilities[0]),
                                 "full_utility": float(utilities[-1])})


def _mass_scale(n: int) -> int:
    """Integer units per slot of mass: ``2^40``, fewer where ``N`` slots would pass ``2^62``."""
    return min(1 << 40, (1 << 62) // n)


class _Layout:
    r"""The cells from which a sampling unit's ``N`` slots are drawn (step 1 of :func:`beta_shapley`).

    Size ``k`` has mass :math:`H(k) = N p(k)` slots, in integer units of
    ``1 / scale`` that sum to exactly ``N`` (with float masses a unit could
    get ``N - 1`` or ``N + 1`` slots), cut into layers: cell
    :math:`(\ell, k)` holds :math:`\min(1, \max(0, H(k) - \ell))`. Cells lie
    end to end, layer by layer and by size within a layer, up to ``ends``.
    """

    def __init__(self, n: int, alpha: float, beta: float):
        self.n, self.scale = n, _mass_scale(n)
        mass = np.rint(np.exp(_log_size_probabilities(n, alpha, beta)) * n * self.scale).astype(np.int64)
        mass[np.argmax(mass)] += n * self.scale - int(mass.sum())  # rounding: a few units of 2^-40
        self.layers = int(-(-int(mass.max()) // self.scale))
        cells = np.clip(mass[None, :] - self.scale * np.arange(self.layers)[:, None], 0, self.scale)
        self.cell_layer, self.cell_size = np.nonzero(cells)
        self.cell_mass = cells[self.cell_layer, self.cell_size]
        self.ends = np.cumsum(self.cell_mass)
        # one layer of whole cells (the Shapley value): every unit is one permutation, never topped by U(D)
        self.needs_full = bool(self.layers > 1 or (self.cell_mass < self.scale).any())
        self.unit_evaluations = n + _most_extra_evaluations(self)  # the most one unit can cost

    def slots(self, offsets: np.ndarray) -> np.ndarray:
        """``(units, N)`` cells of the points ``offset + j scale``, ``j = 0..N-1`` (increasing along a row)."""
        points = offsets[:, None] + self.scale * np.arange(self.n, dtype=np.int64)[None, :]
        return np.searchsorted(self.ends, points, side="right")


def _most_extra_evaluations(layout: _Layout) -> int:
    r"""The most evaluations beyond ``N`` that one unit can cost, over every offset ``u`` of its slots.

    A unit costs ``N`` plus one per chain that starts above the empty
    coalition and ends below ``D``: per layer,
    ``starts - occupied(N - 1) + [every size occupied]``, ``starts`` counting
    the occupied cells of size ``k > 0`` whose cell of size ``k - 1`` is not.
    A cell of mass :math:`m < 1` beginning at :math:`a` is occupied iff
    :math:`(u - a) \bmod 1 < m`, so it switches at two offsets; this sweeps
    the offsets in order, updating the count locally at each switch and
    taking the maximum once all switches at an offset are made (exact integer
    arithmetic, ``O(cells log cells)``; 0.6 s at ``N = 10^5``).
    """
    n, scale = layout.n, layout.scale
    occupied = np.zeros((layout.layers, n + 1), dtype=bool)  # column n: a sentinel, never occupied
    at_zero = layout.slots(np.zeros(1, dtype=np.int64))[0]
    occupied[layout.cell_layer[at_zero], layout.cell_size[at_zero]] = True
    counts = occupied.sum(axis=1).tolist()
    has_every_size = (np.bincount(layout.cell_layer, minlength=layout.layers) == n).tolist()

    def around(layer: int, k: int) -> int:
        """The terms of ``layer``'s extra cost that involve the cell of size ``k``."""
        row = occupied[layer]
        starts = int(k > 0 and row[k] and not row[k - 1]) + int(row[k + 1] and not row[k])
        return starts - int(k == n - 1 and row[k]) + int(has_every_size[layer] and counts[layer] == n)

    extra = int((occupied[:, 1:n] & ~occupied[:, :n - 1]).sum() - occupied[:, n - 1].sum())
    extra += sum(int(every and count == n) for every, count in zip(has_every_size, counts))
    # single cells are read and set one at a time below: lists are faster (around() reads the list too)
    occupied = occupied.tolist()  # type: ignore[assignment]
    fractional = np.flatnonzero(layout.cell_mass < scale)
    switch_on = (layout.ends - layout.cell_mass)[fractional] % scale
    switch_off = layout.ends[fractional] % scale
    events = sorted([(int(u), True, int(c)) for u, c in zip(switch_on, fractional) if u]
                    + [(int(u), False, int(c)) for u, c in zip(switch_off, fractional) if u])
    most = extra
    for index, (offset, state, cell) in enumerate(events):
        layer, k = int(layout.cell_layer[cell]), int(layout.cell_size[cell])
        if occupied[layer][k] != state:
            extra -= around(layer, k)
            occupied[layer][k] = state
            counts[layer] += 1 if state else -1
            extra += around(layer, k)
        if index + 1 == len(events) or events[index + 1][0] != offset:  # every switch at this offset made
            most = max(most, extra)
    return int(most)


class _Chains(NamedTuple):
    """The chains of a batch of units: runs of slots of one layer at consecutive sizes.

    Chain ``c`` covers slots ``heads[c] .. heads[c] + lengths[c] - 1`` (players
    ``members[slot]`` join it in that order), starts from a base of ``low[c]``
    players and belongs to unit ``unit[c]``.
    """

    heads: np.ndarray
    lengths: np.ndarray
    low: np.ndarray
    unit: np.ndarray
    members: np.ndarray
    n: int


def _chains(perms: np.ndarray, layer: np.ndarray, chain_size: np.ndarray) -> _Chains:
    """Cut the units' slots into chains (every unit's first slot starts one)."""
    n = perms.shape[1]
    first = np.ones(layer.size, dtype=bool)
    first[1:] = (layer[1:] != layer[:-1]) | (chain_size[1:] != chain_size[:-1] + 1)
    first[::n] = True
    heads = np.flatnonzero(first)
    lengths = np.diff(np.append(heads, layer.size))
    return _Chains(heads, lengths, chain_size[heads], heads // n, perms.ravel(), n)


def _segments(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For runs of ``counts`` entries: each entry's run and its position within the run."""
    owner = np.repeat(np.arange(counts.size), counts)
    return owner, np.arange(owner.size) - np.repeat(np.cumsum(counts) - counts, counts)


def _chain_ranks(chains: _Chains, which: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``(len(which), N)`` ranks: 0 in the base of chain ``c``, ``j`` if a player joins it ``j``-th, else ``N + 1``.

    The base of a chain of first size ``s`` is the ``s`` players after it in
    its unit's permutation (cyclically); ``positions[u, i]`` is player
    ``i``'s place in unit ``u``'s permutation (:func:`_positions`). Built for
    the chains ``which`` only, so the buffer is as large as the masks
    evaluated from it.
    """
    from ._sampling._gt_kernels import fill_chain_ranks  # numba loads on first use

    n = chains.n
    dtype = np.int16 if n + 1 <= np.iinfo(np.int16).max else np.int32  # fill_chain_masks sweeps rows x N of them
    rank = np.empty((which.size, n), dtype=dtype)
    unit = chains.unit[which]
    fill_chain_ranks(positions, unit, chains.heads[which] - unit * n, chains.lengths[which], chains.low[which], rank)
    return rank


def _positions(chains: _Chains) -> np.ndarray:
    """``(units, N)`` int32: ``positions[u, i]`` is player ``i``'s place in unit ``u``'s permutation."""
    perms = chains.members.reshape(-1, chains.n)
    positions = np.empty(perms.shape, dtype=np.int32)
    np.put_along_axis(positions, perms, np.arange(chains.n, dtype=np.int32)[None, :], axis=1)
    return positions


def _evaluate_chain_rows(game, chains: _Chains, row_chain: np.ndarray, row_step: np.ndarray) -> np.ndarray:
    """Utilities of coalition ``row_step`` of chain ``row_chain`` (rows ordered by chain), about
    ``PREFIX_MASK_CELLS`` mask cells per ``game.evaluate`` call: memory ``O(N)`` per row at any ``N``."""
    from ._sampling._gt_kernels import fill_chain_masks  # numba loads on first use

    step = max(1, PREFIX_MASK_CELLS // chains.n)
    positions = _positions(chains)  # once per batch: each chunk's ranks are a sweep of it per chain
    utilities = np.empty(row_chain.size)
    built, rank = row_chain[:0], np.empty((0, chains.n))  # the chains whose ranks were built last
    for first in range(0, row_chain.size, step):
        rows = slice(first, first + step)
        which, local = np.unique(row_chain[rows], return_inverse=True)
        if not np.array_equal(which, built):  # a long chain spans many chunks: built once, not once a chunk
            built, rank = which, _chain_ranks(chains, which, positions)
        steps = row_step[rows]
        masks = np.empty((steps.size, chains.n), dtype=bool)
        fill_chain_masks(rank, local.astype(np.int64), steps.astype(np.int64), masks)
        utilities[rows] = check_utilities(game.evaluate(masks), masks.shape[0])
    return utilities


def _unit_samples(game, rng: np.random.Generator, size: int, *, layout: _Layout,
                  anchors) -> tuple[np.ndarray, int]:
    """``(size, N)`` samples, one marginal contribution per player and unit, and the evaluations made.

    Draws the units' permutations, then their slot offsets (see
    :func:`beta_shapley`); evaluates the chains' coalitions through
    ``game.evaluate`` (whole permutations through ``evaluate_prefixes``).
    """
    n = layout.n
    perms = random_permutations(rng, size, n)
    cells = layout.slots(rng.integers(layout.scale, size=size, dtype=np.int64)).ravel()
    chains = _chains(perms, layout.cell_layer[cells], layout.cell_size[cells])
    # coalition j of chain c (j = 0..length): its base and first j joiners; known at the empty set and at D
    row_chain, row_step = _segments(chains.lengths + 1)
    row_size = chains.low[row_chain] + row_step
    utilities = np.where(row_size == 0, anchors.empty, anchors.full)
    whole = (chains.low == 0) & (chains.low + chains.lengths == n)
    in_whole = whole[row_chain] & (row_step > 0)
    made = 0
    if whole.any():  # whole permutations: the game's prefix path
        utilities[in_whole] = evaluate_prefixes(game, perms[chains.unit[whole]]).ravel()
        made += int(in_whole.sum())
    todo = ~in_whole & (row_size > 0) & (row_size < n)
    if todo.any():
        utilities[todo] = _evaluate_chain_rows(game, chains, row_chain[todo], row_step[todo])
        made += int(todo.sum())
    gains = np.diff(utilities)[row_step[1:] > 0]  # U(coalition j) - U(coalition j - 1), slot by slot
    samples = np.bincount((np.arange(cells.size) // n) * n + chains.members, weights=gains,
                          minlength=size * n)
    return samples.reshape(size, n), made


@partial(documents_sampling_options, exact="exact_beta_shapley")
def beta_shapley(game: GameLike, budget: int | None, seed: int | np.random.SeedSequence | None = None,
                 alpha: float = 16.0, beta: float = 1.0, *,
                 batch_size: int | None = None, n_jobs: int | None = None, progress: bool | None = None,
                 empty_utility: float | None = None, target_stderr: float | None = None,
                 target_rank_correlation: float | None = None, checkpoint: str | os.PathLike[str] | None = None,
                 checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""Beta(alpha, beta) Shapley values by sampling, one contribution per player and unit.

    The value is an expectation over sizes,
    :math:`\phi_i = \sum_k p(k) \bar\Delta_i(k)`
    (:mod:`shapley_research.estimators._beta_shapley`). A
    sampling *unit* gives every player exactly one marginal contribution, to
    a coalition whose size is drawn from :math:`p` and which, given its size,
    is a uniform random subset of the other players; the unit's sample
    :math:`X_i` is that contribution, unbiased for :math:`\phi_i` without any
    importance weight (an additive game is exact from one unit). The
    contributions are strung along chains of nested coalitions, each
    evaluation ending one contribution and starting the next:

    1. *Sizes.* Size ``k`` has mass :math:`H(k) = N p(k)`, cut into layers
       (cell :math:`(\ell, k)` holds :math:`\min(1, \max(0, H(k) - \ell))`)
       laid end to end, layer by layer and by size within a layer. The
       points :math:`u + j`, :math:`j = 0..N-1`, with one uniform offset
       :math:`u`, pick ``N`` cells (systematic sampling): ``N`` slots, size
       ``k`` taken :math:`H(k)` times on average. A whole cell is always
       taken, so a layer's slots form runs of consecutive sizes, the chains.
    2. *Players.* A uniform random permutation :math:`\pi` hands the
       players to the slots in order. A chain whose first size is ``s`` adds
       its players one by one to a base: the ``s`` players that follow the
       chain in :math:`\pi`, cyclically (the empty set if ``s = 0``, all
       other players if the chain ends at ``D``).
    3. The unit is a function of the positions in :math:`\pi` only, so
       relabelling the players leaves its law unchanged: given that player
       ``i`` takes a slot of size ``k`` (probability :math:`H(k) / N = p(k)`,
       as its position in :math:`\pi` is uniform), its predecessors, the
       base and the chain's earlier players, are a uniform ``k``-subset of
       :math:`D \setminus \{i\}`. So :math:`E X_i = \phi_i`. Units are
       i.i.d. and the standard error is that of their mean (players' samples
       within a unit are dependent, which does not enter it). Sizes' masses
       are rounded to multiples of :math:`2^{-40}` slots: probabilities
       below about :math:`10^{-12}/N` count as 0.

    A unit costs ``N`` evaluations plus one per chain that neither starts at
    the empty set nor ends at ``D`` (``U(empty)`` and ``U(D)`` are evaluated
    once per run). Chains break only at fractional cells: Beta(16, 1) gives
    one chain from the empty set per layer (about 16) plus scattered slots
    where :math:`H < 1`. The extra evaluations depend on :math:`u`; the
    budget is charged the most a unit can cost, over every :math:`u`
    (``info["unit_evaluations"]``: ``N + 6`` at ``N = 100``, ``N + 22`` at
    300, :math:`1.08 N` at :math:`10^5` for Beta(16, 1); flat weights cost
    more, :math:`1.3 N` for Beta(2, 2), whose second layer of mass 1/2 per
    size breaks at every other slot), and ``n_evaluations`` is what was
    spent. With ``alpha = beta = 1`` every unit is one permutation through the
    game's ``evaluate_prefixes`` and the values are those of
    :func:`~shapley_research.permutation_shapley` with the same seed and
    ``batch_size``.

    *Why not importance-weighted permutations.* In a uniform permutation a
    player's predecessors are a uniform subset of a uniform size, so
    :math:`N p(k) \Delta` is unbiased too, but for Beta(16, 1) that weight is
    about 16 at small sizes and nearly 0 past a fifth of the players: most
    of a permutation's evaluations buy contributions that barely count, and
    the weight multiplies the contributions' mean as well as their spread.
    Measured (relative squared error at ``100 N`` evaluations, 40 seeds,
    Beta(16, 1), the unanimity, airport, size-additive and glove games of
    ``tests/games.py``, 9 to 60 players): weighted permutations had 1.9 to
    215 times this estimator's error (0.99 times on an 11-player unanimity
    game), and a size from :math:`p` and a random coalition per player (two
    evaluations per contribution) 1.7 to 2.0 times. Drawing sizes from
    :math:`p` is not always best: where the contributions spread most at
    sizes :math:`p` neglects, uniform positions can win (weighted
    permutations had 0.2 to 0.7 times the error with Beta(2, 2) on the
    airport and unanimity games, 0.28 with Beta(4, 1) on the 11-player
    unanimity game).

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)`` (and optionally
        ``evaluate_prefixes(permutations)``, used for whole permutations
        only: other chains are evaluated as masks, which on games with a
        cheap prefix path, such as KNN utilities, costs more wall time per
        evaluation than permutation sampling).
    budget : int or None
        Utility evaluations allowed: ``U(empty)`` (unless ``empty_utility``
        gives it), ``U(D)`` (unless :math:`p` is uniform, ``alpha = beta =
        1``) and units charged ``info["unit_evaluations"]`` each. Must afford
        one unit. ``None`` (no cap) only with a ``target_stderr`` or
        ``target_rank_correlation``.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the random streams; ``None`` draws one (kept on the result).
    alpha, beta : float, default 16 and 1
        Positive shape parameters of :func:`beta_weights`.
    batch_size : int, optional
        Units per batch; by default about ``2**22`` mask cells. Results
        depend on it (it fixes the seed streams), never on ``n_jobs``.
    n_jobs, progress, empty_utility
        As in :func:`~shapley_research.permutation_shapley`.
{sampling}

    Returns
    -------
    ValuationResult
        ``method="beta_shapley"``; ``n_samples`` counts units, ``stderr`` is
        over units. ``info`` holds ``alpha``, ``beta``, ``options`` (both:
        runs merge only with equal ones), ``layers``, ``unit_evaluations``,
        ``batch_size``, ``empty_utility``, ``full_utility`` (unless
        ``alpha = beta = 1``), ``stopped_by`` and ``resumed_samples``. Runs
        with different seeds combine with
        :func:`~shapley_research.merge_results`.
    """
    n = check_game(game)
    alpha, beta = _check_shape(alpha, beta)
    options = SamplingOptions.checked(
        game, "beta_shapley", batch_size=batch_size, n_jobs=n_jobs, progress=progress, empty_utility=empty_utility,
        target_stderr=target_stderr, target_rank_correlation=target_rank_correlation, checkpoint=checkpoint,
        checkpoint_interval=checkpoint_interval)
    return drive(BetaShapleySpec.of(_Layout(n, alpha, beta), alpha, beta), game, budget, seed, options)


@dataclass(frozen=True, kw_only=True)
class BetaShapleySpec(SamplingSpec):
    """:func:`beta_shapley` for :func:`~._sampling._driver.drive`: a unit gives every player one contribution,
    at sizes from the ``layout``'s cells, charged the most a unit can cost."""

    layout: _Layout
    alpha: float
    beta: float

    @classmethod
    def of(cls, layout: _Layout, alpha: float, beta: float) -> BetaShapleySpec:
        """The specification of a run on ``layout`` (U(D) tops the chains that end at D without starting at the
        empty coalition; Shapley's have none)."""
        return cls(method="beta_shapley", n_players=layout.n, dim=layout.n, per_unit=layout.unit_evaluations,
                   unit_name="unit (one contribution per player)", desc="Beta Shapley sampling", progress_unit="unit",
                   needs_full=layout.needs_full, layout=layout, alpha=alpha, beta=beta)

    def fingerprint_options(self, n_units: int | None) -> dict:
        return {"alpha": self.alpha, "beta": self.beta}

    def enumeration_info(self, empty_utility: float | None) -> dict:
        options = {"alpha": self.alpha, "beta": self.beta}
        return {"options": options, **options, "unit_evaluations": self.per_unit, "layers": self.layout.layers}

    def exact(self) -> Callable[..., ValuationResult]:
        return partial(exact_beta_shapley, alpha=self.alpha, beta=self.beta)

    def start(self, game: GameLike, run: Run, anchors: Anchors | None) -> Sampler:
        anchors = cast(Anchors, anchors)  # U(empty) is always needed
        info = {**self.enumeration_info(None), "batch_size": run.batch_size, "empty_utility": anchors.empty}
        record = SamplingRecord(BetaShapleyFinalizer(), {"alpha": self.alpha, "beta": self.beta},
                                empty_utility=anchors.empty, full_utility=anchors.full if self.needs_full else None,
                                seeds=(run.entropy,))
        return Sampler(partial(_unit_samples, game, layout=self.layout, anchors=anchors), info, record,
                       info_after={"full_utility": anchors.full} if self.needs_full else {})


@register_finalizer("beta_shapley")
@dataclass(frozen=True)
class BetaShapleyFinalizer(Finalizer):
    """The final step of :func:`beta_shapley`: the values are the mean of the units' samples (one marginal
    contribution per player and unit)."""

    def finalize(self, state: MeanState, record: SamplingRecord) -> tuple[np.ndarray, np.ndarray, dict]:
        return state.mean.copy(), state.stderr, {}
