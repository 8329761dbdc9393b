"""Uniform random subsets of given sizes, drawn fast (the group-testing sampler).

A subset is drawn as its *small side* (the subset or its complement, whichever
has at most half of the players) by Floyd's algorithm, in a compiled loop
(:func:`shapley_research._gt_kernels.fill_small_sides`): one exactly uniform
draw per member, so ``O(min(k, P - k))`` draws per row plus writing the row.
The draws come from an SFC64 generator (numpy's algorithm, run inside the
loop) seeded with 256 bits of the caller's generator, so the same generator
state gives the same subsets.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["random_subsets"]


class SmallSides(NamedTuple):
    """A batch of subsets and their small sides.

    ``masks[t]`` is subset ``t`` (boolean, C-contiguous). Its small side is
    the subset itself, or its complement where ``flip[t]``; the members of
    the small side are ``vals[indptr[t]:indptr[t + 1]]`` (int32, in the
    order they were drawn).
    """

    masks: np.ndarray
    flip: np.ndarray
    indptr: np.ndarray
    vals: np.ndarray


def _sfc64_state(rng: np.random.Generator) -> np.ndarray:
    """State of a numpy SFC64 generator seeded with 256 bits of ``rng`` (for the compiled sampler)."""
    return np.random.SFC64(rng.bit_generator.random_raw(4)).state["state"]["state"].copy()


def draw_small_sides(rng: np.random.Generator, k: np.ndarray, n_drawn: int) -> SmallSides:
    """Rows ``t``: uniform ``k[t]``-subsets of ``n_drawn`` players, independent, drawn by their small sides.

    Floyd's algorithm makes each small side a uniform subset of its size
    (hence each row too), and rows use disjoint stretches of one random
    stream, so they are independent.
    """
    from ._gt_kernels import fill_small_sides  # numba loads on first use: `import shapley_research` stays fast

    k = np.asarray(k, dtype=np.int64)
    flip = k > n_drawn // 2
    small = np.where(flip, n_drawn - k, k)
    indptr = np.zeros(k.size + 1, dtype=np.int64)
    np.cumsum(small, out=indptr[1:])
    vals = np.empty(int(indptr[-1]), dtype=np.int32)
    masks = np.empty((k.size, n_drawn), dtype=bool)
    fill_small_sides(_sfc64_state(rng), masks, small, flip, indptr, vals)
    return SmallSides(masks, flip, indptr, vals)


def random_subsets(rng: np.random.Generator, k: np.ndarray, n_drawn: int) -> np.ndarray:
    """Boolean ``(len(k), n_drawn)`` rows, row ``t`` a uniform subset of size ``k[t]``; rows are independent.

    Each row is drawn as its smaller side (the subset or its complement) by
    :func:`draw_small_sides`: ``O(min(k, P - k))`` uniform draws per row, never
    a shuffle of all ``P`` players.
    """
    return draw_small_sides(rng, k, n_drawn).masks
