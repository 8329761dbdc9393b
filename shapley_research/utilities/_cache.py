"""Memoisation of a game's utilities by coalition: a bounded least-recently-used map (``ModelUtility(cache=True)``)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["CoalitionCache"]


class CoalitionCache:
    """Bounded least-recently-used map from coalitions to utilities.

    Keys are the packed bits of a mask (``N/8`` bytes), so a cache of
    ``maxsize`` entries costs about ``maxsize * (N/8 + 100)`` bytes.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._store: OrderedDict[bytes, float] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._store)

    def evaluate(self, masks: NDArray[np.bool_],
                 compute: Callable[[NDArray[np.bool_]], ArrayLike]) -> NDArray[np.float64]:
        """Utilities ``(m,)`` of boolean ``(m, N)`` masks, computing only coalitions not seen before (once each)."""
        packed = np.packbits(masks, axis=1)
        keys = [row.tobytes() for row in packed]
        values = np.empty(len(keys))
        missing: dict[bytes, list[int]] = {}
        for row, key in enumerate(keys):
            value = self._store.get(key)
            if value is None:
                missing.setdefault(key, []).append(row)
            else:
                self._store.move_to_end(key)
                values[row] = value
                self.hits += 1
        if missing:
            first_rows = [rows[0] for rows in missing.values()]
            computed = np.asarray(compute(masks[first_rows]), dtype=float)
            for (key, rows), value in zip(missing.items(), computed):
                values[rows] = value
                self.misses += 1
                self.hits += len(rows) - 1
                self._store[key] = float(value)
            while len(self._store) > self.maxsize:
                self._store.popitem(last=False)
        return values

    def clear(self) -> None:
        """Forget every coalition and reset the counters."""
        self._store.clear()
        self.hits = self.misses = 0
