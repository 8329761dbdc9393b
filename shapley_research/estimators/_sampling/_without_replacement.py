r"""Coalitions of one size drawn without replacement, the same for any schedule of the batches.

A sampler that draws a size ``k`` and then a uniform coalition of that size
samples the *stratum* of the :math:`C = \binom Nk` coalitions of size ``k``
with replacement: on a small game the strata are drawn several times over
and coalitions repeat (at ``N = 10``, 978 draws of Stratified SVARM cover
about half of the 1,002 coalitions of sizes 2 to 8). Here a stratum of at
most :data:`MAX_STRATUM` coalitions is read along random orders instead:

* pass ``r`` of stratum ``k`` is a uniformly random permutation of its
  coalitions (stream ``SeedSequence(entropy, spawn_key=(ORDER_STREAM, k, r))``),
  a coalition being its rank in the colexicographic order (the combinatorial
  number system, :func:`unrank`);
* the stratum's draw number ``j`` (its *offset*) is position ``j mod C`` of
  pass ``j div C``: the first ``C`` draws take every coalition once, the next
  ``C`` take them again in a fresh order, and so on.

Within a pass, ``m`` draws are a simple random sample without replacement:
each coalition is in it with probability ``m / C``, so a mean over them is
unbiased, with the with-replacement variance times the finite-population
correction :math:`1 - m/C` (0 once the pass is complete).

A batch must know its draws' offsets without running the batches before it.
:class:`StratumPlan` therefore plans the sizes and offsets of every draw in
the parent process, in batch order (``run_sampling``'s ``plan`` hook): sizes
cost nothing next to evaluations, and a resumed run replays the plans of the
batches it skips. The sizes of batch ``b`` come from their own stream
(:func:`size_rng`), the coalitions from the stratum orders, and only the
with-replacement rows from the batch's stream, so the draws are the same for
any ``n_jobs`` and after a checkpoint/resume.

*Which strata.* A stratum is drawn without replacement when
:math:`\binom Nk \le` :data:`MAX_STRATUM` :math:`= 2^{20}`: every size up to
``N = 22`` players, beyond that only sizes near 0 and ``N`` (``k <= 3`` and
``k >= N - 3`` at ``N = 100``, ``k = 2`` and ``N - 2`` up to ``N = 1,448``,
none beyond). That is where it can matter: the
variance falls by the share ``m / C`` of the stratum drawn, negligible unless
a budget draws a sizeable share of it, which happens for the small strata
(the sampling estimators favour the small and large sizes, whose strata are
the smallest). Orders are materialised (4 bytes per coalition, cached per
process), which the cap bounds.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from math import comb

import numpy as np

from ._loop import ORDER_STREAM, SIZE_STREAM
from ._subsets import random_subsets

__all__ = ["MAX_STRATUM", "StratumPlan", "draw_coalitions", "pass_remainder", "size_rng", "small_stratum_reach",
           "stratum_coalitions", "unrank", "without_replacement_sizes"]

MAX_STRATUM = 2**20  # largest stratum (coalitions of one size) drawn without replacement
ORDER_CACHE_ENTRIES = 2**23  # cached order entries per process (int32: 32 MiB); every stratum of N = 22 fits
MAIN_PHASE, PILOT_PHASE = 0, 1  # size streams of the sampling batches and of a pilot's batches

_orders: OrderedDict = OrderedDict()
_orders_held = [0]  # entries held by _orders, kept as a running count (summing them per insert is quadratic)
_orders_lock = threading.Lock()  # batches of the threading backend share the cache


def small_stratum_reach(n_players: int, limit: int | None = None) -> int:
    r"""The largest :math:`s \le N/2` with :math:`\binom Ns \le` ``limit`` (``-1`` if none).

    ``limit`` defaults to :data:`MAX_STRATUM`, read at call time.
    :math:`\binom Nk` rises with ``k`` up to :math:`N/2` and is symmetric, so
    the strata of at most ``limit`` coalitions are exactly the sizes
    :math:`k \le s` and :math:`k \ge N - s`. The ratio
    :math:`\binom N{k+1} / \binom Nk = (N-k)/(k+1)` is at least 2 below
    :math:`N/3`, so the exact integer walk takes at most about
    :math:`\log_2` ``limit`` + 1 steps past the first, whatever ``N``: no
    binomial of ``N`` is ever computed in full.
    """
    limit = MAX_STRATUM if limit is None else limit  # tests switch the strata off by setting it to 0
    reach, count = -1, 1  # count = C(N, reach + 1)
    while reach + 1 <= n_players // 2 and count <= limit:
        reach += 1
        count = count * (n_players - reach) // (reach + 1)
    return reach


def without_replacement_sizes(n_players: int, levels) -> list[int]:
    r"""The sizes among ``levels`` whose strata are drawn without replacement: :math:`\binom Nk \le` ``MAX_STRATUM``.

    ``O(len(levels))`` after :func:`small_stratum_reach`'s few steps.
    """
    n_players = int(n_players)
    reach = small_stratum_reach(n_players)
    k = np.asarray(levels, dtype=np.int64).ravel()
    chosen = (k >= 0) & (k <= n_players) & ((k <= reach) | (k >= n_players - reach))
    return k[chosen].tolist()


def size_rng(entropy: int, batch: int, phase: int = MAIN_PHASE) -> np.random.Generator:
    """Generator of the planned sizes of batch ``batch`` (``phase``: the sampling loop's or a pilot's)."""
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(SIZE_STREAM, phase, batch)))


@lru_cache(maxsize=256)
def _binomial_column(n: int, j: int) -> np.ndarray:
    """``C(c, j)`` for ``c = 0..n-1``, capped at ``2**62`` (larger values exceed every rank unranked here)."""
    return np.array([min(comb(c, j), 2**62) for c in range(n)], dtype=np.int64)


def unrank(ranks, n_players: int, k: int) -> np.ndarray:
    r"""Boolean ``(len(ranks), N)`` rows: the ``k``-subsets of colexicographic rank ``ranks``.

    The combinatorial number system writes a rank as
    :math:`r = \sum_{j=1}^{s} \binom{c_j}{j}` with :math:`c_s > \dots > c_1 \ge 0`,
    the members of the subset; greedily, :math:`c_j` is the largest ``c`` with
    :math:`\binom cj \le r`, then :math:`r \mathrel{-}= \binom{c_j}{j}`. The
    rows are unranked on their small side, :math:`s = \min(k, N - k)`
    (complemented where ``k > N // 2``, as :mod:`shapley_research.estimators._sampling._subsets`
    does), so ``ranks`` range over :math:`[0, \binom Nk)` and each is a
    distinct subset: a uniform rank is a uniform subset.
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    total = comb(n_players, k)
    if ranks.size and (ranks.min() < 0 or ranks.max() >= total):
        raise ValueError(f"ranks of {k}-subsets of {n_players} players must be in [0, {total}).")
    flip = k > n_players // 2
    masks = np.zeros((ranks.size, n_players), dtype=bool)
    rest, rows = ranks.copy(), np.arange(ranks.size)
    for j in range(n_players - k if flip else k, 0, -1):
        column = _binomial_column(n_players, j)
        members = np.searchsorted(column, rest, side="right") - 1
        rest -= column[members]
        masks[rows, members] = True
    return ~masks if flip else masks


def _order(entropy: int, n_players: int, k: int, pass_: int) -> np.ndarray:
    """Pass ``pass_`` of stratum ``k``: a uniformly random permutation of its ranks (cached per process)."""
    key = (entropy, n_players, k, pass_)
    with _orders_lock:
        if key in _orders:
            _orders.move_to_end(key)
            return _orders[key]
    rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(ORDER_STREAM, k, pass_)))
    order = rng.permutation(comb(n_players, k)).astype(np.int32)
    with _orders_lock:
        if key not in _orders:  # another thread may have drawn the same order meanwhile
            _orders[key] = order
            _orders_held[0] += order.size
        while _orders_held[0] > ORDER_CACHE_ENTRIES and len(_orders) > 1:
            _orders_held[0] -= _orders.popitem(last=False)[1].size
    return order


def stratum_coalitions(entropy: int, n_players: int, k: int, offsets) -> np.ndarray:
    """The coalitions at ``offsets`` of stratum ``k``'s sequence: position ``j mod C`` of pass ``j div C``."""
    offsets = np.asarray(offsets, dtype=np.int64)
    total = comb(n_players, k)
    passes, positions = np.divmod(offsets, total)
    ranks = np.empty(offsets.size, dtype=np.int64)
    for pass_ in np.unique(passes).tolist():
        chosen = passes == pass_
        ranks[chosen] = _order(entropy, n_players, k, pass_)[positions[chosen]]
    return unrank(ranks, n_players, k)


def draw_coalitions(rng: np.random.Generator, sizes: np.ndarray, offsets: np.ndarray, n_players: int,
                    entropy: int) -> np.ndarray:
    """Boolean rows of the planned draws: a stratum's coalition where ``offsets >= 0``, else uniform from ``rng``."""
    sizes, offsets = np.asarray(sizes, dtype=np.int64), np.asarray(offsets, dtype=np.int64)
    masks = np.empty((sizes.size, n_players), dtype=bool)
    free = offsets < 0
    if free.any():
        masks[free] = random_subsets(rng, sizes[free], n_players)
    for k in np.unique(sizes[~free]).tolist():
        rows = np.flatnonzero(~free & (sizes == k))
        masks[rows] = stratum_coalitions(entropy, n_players, k, offsets[rows])
    return masks


class StratumPlan:
    r"""The sizes and stratum offsets of the draws, planned in order (in the parent process).

    Parameters
    ----------
    n_players : int
        Players the coalitions are drawn from.
    levels : array_like of int
        The sizes that may be drawn (``probabilities`` are over them, in this order).
    without_replacement : list of int
        The sizes drawn without replacement (their draws get offsets; the
        others get ``-1`` and are drawn uniformly by the batch).

    Notes
    -----
    :meth:`draw` draws sizes from ``probabilities`` restricted to the *open*
    strata: those, among the sizes of positive probability, that have
    completed the fewest passes (a with-replacement stratum never completes
    one). A stratum that has given every coalition once is thus skipped, its
    mean exact, until every other stratum has too (the "border trick" of
    Fumagalli et al. 2023, found as the budget goes rather than planned from
    it, so it needs no budget); only then does a second pass begin. The sizes
    depend on nothing but their streams, so each stratum's draws stay a
    uniform sample without replacement and a stratum mean stays unbiased; the
    share of the draws each size gets is no longer ``probabilities``, which
    suits estimators of per-size means (Stratified SVARM), not those whose
    mean over all draws needs sizes from a fixed law (group testing, which
    plans with :meth:`offsets` instead).
    """

    def __init__(self, n_players: int, levels, without_replacement):
        self.n_players = int(n_players)
        self.levels = np.asarray(levels, dtype=np.int64)
        self.index = np.full(self.n_players + 1, -1, dtype=np.int64)  # size -> position in levels
        self.index[self.levels] = np.arange(self.levels.size)
        self.population = np.zeros(self.levels.size, dtype=np.int64)  # 0: with replacement
        chosen = np.flatnonzero(np.isin(self.levels, np.asarray(list(without_replacement), dtype=np.int64)))
        self.population[chosen] = [comb(self.n_players, int(k)) for k in self.levels[chosen]]  # the few small ones
        self.counts = np.zeros(self.levels.size, dtype=np.int64)  # draws so far, per size

    def _take(self, positions: np.ndarray) -> np.ndarray:
        """Offsets of draws at ``positions`` (indices into ``levels``, in draw order); counts them."""
        offsets = self.counts[positions] + _rank_within(positions)
        np.add.at(self.counts, positions, 1)
        return np.where(self.population[positions] > 0, offsets, -1)

    def offsets(self, sizes) -> np.ndarray:
        """Offsets of draws of the given ``sizes`` (in order): ``-1`` for sizes drawn with replacement."""
        sizes = np.asarray(sizes, dtype=np.int64)
        return self._take(self.index[sizes])

    def draw(self, rng: np.random.Generator, size: int, probabilities) -> tuple[np.ndarray, np.ndarray]:
        """``size`` sizes from ``probabilities`` restricted to the open strata, and their offsets."""
        probabilities = np.asarray(probabilities, dtype=float)
        live = probabilities > 0
        sizes, offsets = [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.int64)]
        left = int(size)
        while left > 0:
            passes = np.where(self.population > 0, self.counts // np.maximum(self.population, 1), 0)
            open_ = live & (passes == passes[live].min())
            weights = np.where(open_, probabilities, 0.0)
            room = np.where(self.population > 0, (passes + 1) * self.population - self.counts, left)
            # some open stratum closes its pass within sum(room) draws: draw no further ahead
            ahead = int(min(left, room[open_].sum()))
            candidates = rng.choice(self.levels.size, size=ahead, p=weights / weights.sum())
            closing = _rank_within(candidates) + 1 >= room[candidates]
            taken = candidates[:int(np.argmax(closing)) + 1 if closing.any() else ahead]  # to the first closing
            offsets.append(self._take(taken))
            sizes.append(self.levels[taken])
            left -= taken.size
        return np.concatenate(sizes), np.concatenate(offsets)


def _rank_within(groups: np.ndarray) -> np.ndarray:
    """For each entry, how many earlier entries share its value (``[3, 1, 3, 3] -> [0, 0, 1, 2]``)."""
    order = np.argsort(groups, kind="stable")
    grouped = groups[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]]) if groups.size else np.empty(0, np.int64)
    ranks = np.empty(groups.size, dtype=np.int64)
    ranks[order] = np.arange(groups.size) - np.repeat(starts, np.diff(np.r_[starts, groups.size]))
    return ranks


def pass_remainder(count, passes, population) -> np.ndarray:
    r"""The term :math:`c_r (1 - c_r / M)` of the variance of a stratum mean drawn without replacement.

    A sub-stratum of ``population`` coalitions (``M``; e.g. those of one size
    that contain a given player) whose size stratum completed ``passes``
    passes (``q``) holds ``count`` draws (``c``): ``q M`` from the complete
    passes, each coalition ``q`` times, and :math:`c_r = c - qM` from the
    current pass, a simple random sample without replacement (given
    :math:`c_r`, uniform among the ``M``). Their mean
    :math:`(qM\mu + \sum_{c_r} x) / c` is unbiased, with variance

    .. math::

        \frac{c_r}{c^2}\left(1 - \frac{c_r}{M}\right) S^2
        \quad\left(S^2 = \tfrac{1}{M-1} \textstyle\sum (x - \mu)^2\right),

    that is :math:`(1 - c/M)\,S^2/c` within the first pass (the
    finite-population correction) and 0 when the last pass is complete.
    Returns :math:`c_r (1 - c_r/M)`: additive over independent runs, whose
    pooled mean has the sum over the squared total count.
    """
    count, passes, population = (np.asarray(a, dtype=float) for a in (count, passes, population))
    current = count - passes * population
    return current * (1.0 - current / population)
