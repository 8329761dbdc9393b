"""Uniform random subsets of given sizes, drawn fast (the group-testing sampler).

A subset is drawn as its *small side* (the subset or its complement, whichever
has at most half of the players), in a compiled loop
(:func:`shapley_research.estimators._sampling._gt_kernels.fill_small_sides`). Small sides of fewer
than ``DENSE_FRACTION`` of the players are drawn by Floyd's algorithm, one
exactly uniform draw per member (``O(min(k, P - k))`` draws per row plus
writing the row), and their members are listed; larger ones by a coin per
player and a uniform fix-up of the count (from about a tenth of the players
on, a random byte per player is cheaper than Floyd's draw per member; see
:mod:`shapley_research.estimators._sampling._gt_kernels`). The draws come from an SFC64 generator
(numpy's algorithm, run inside the loop) seeded with 256 bits of the caller's
generator, so the same generator state gives the same subsets.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

__all__ = ["random_subsets"]

DENSE_FRACTION = 0.1  # small sides of at least this share of the players are drawn by coins (measured break-even)


class SmallSides(NamedTuple):
    """A batch of subsets and their small sides.

    ``masks[t]`` is subset ``t`` (boolean, C-contiguous). Its small side is
    the subset itself, or its complement where ``flip[t]``. Unless
    ``dense[t]``, the members of the small side are
    ``vals[indptr[t]:indptr[t + 1]]`` (int32, in the order they were drawn);
    dense rows list none (``indptr[t] == indptr[t + 1]``).
    """

    masks: np.ndarray
    flip: np.ndarray
    indptr: np.ndarray
    vals: np.ndarray
    dense: np.ndarray


def _sfc64_state(rng: np.random.Generator) -> np.ndarray:
    """State of a numpy SFC64 generator seeded with 256 bits of ``rng`` (for the compiled sampler)."""
    return np.random.SFC64(rng.bit_generator.random_raw(4)).state["state"]["state"].copy()


def draw_small_sides(rng: np.random.Generator, k: np.ndarray, n_drawn: int, *,
                     dense_fraction: float = DENSE_FRACTION) -> SmallSides:
    """Rows ``t``: uniform ``k[t]``-subsets of ``n_drawn`` players, independent, drawn by their small sides.

    Both ways of drawing make each small side a uniform subset of its size
    (hence each row too), and rows use disjoint stretches of one random
    stream, so they are independent. Small sides of at least
    ``dense_fraction * n_drawn`` players are drawn by coins and not listed
    (``dense_fraction > 0.5``: every row by Floyd's algorithm).
    """
    from ._gt_kernels import fill_small_sides  # numba loads on first use: `import shapley_research` stays fast

    k = np.asarray(k, dtype=np.int64)
    flip = k > n_drawn // 2
    small = np.where(flip, n_drawn - k, k)
    dense = (small > 0) & (small >= dense_fraction * n_drawn)
    indptr = np.zeros(k.size + 1, dtype=np.int64)
    np.cumsum(np.where(dense, 0, small), out=indptr[1:])
    vals = np.empty(int(indptr[-1]), dtype=np.int32)
    masks = np.empty((k.size, n_drawn), dtype=bool)
    fill_small_sides(_sfc64_state(rng), masks.view(np.uint8), small, flip, np.flatnonzero(~dense),
                     np.flatnonzero(dense), indptr, vals)
    return SmallSides(masks, flip, indptr, vals, dense)


def small_sides_of(masks: np.ndarray) -> SmallSides:
    """The :class:`SmallSides` of given subsets (the rows of ``masks``), every member listed.

    For subsets drawn elsewhere (e.g. along a stratum's order,
    :mod:`shapley_research.estimators._sampling._without_replacement`): the same convention as
    :func:`draw_small_sides` (a row is flipped where its size exceeds half
    the players), no dense row, members in increasing order.
    """
    masks = np.ascontiguousarray(masks, dtype=bool)
    flip = masks.sum(axis=1) > masks.shape[1] // 2
    side = masks ^ flip[:, None]
    indptr = np.zeros(masks.shape[0] + 1, dtype=np.int64)
    np.cumsum(side.sum(axis=1), out=indptr[1:])
    return SmallSides(masks, flip, indptr, np.nonzero(side)[1].astype(np.int32), np.zeros(masks.shape[0], dtype=bool))


def random_subsets(rng: np.random.Generator, k: NDArray[np.integer], n_drawn: int) -> NDArray[np.bool_]:
    """Boolean ``(len(k), n_drawn)`` rows, row ``t`` a uniform subset of size ``k[t]``; rows are independent.

    Each row is drawn as its smaller side (the subset or its complement) by
    :func:`draw_small_sides`: ``O(min(k, P - k))`` uniform draws per row below
    a tenth of the players, a random byte per player above, never a shuffle of
    all ``P`` players.
    """
    return draw_small_sides(rng, k, n_drawn).masks
