"""A warning before any evaluation where an estimator's own work (not the game's) will be long or large.

The estimators whose cost grows faster than their budget (an ``N x N`` matrix
per sample, a dense program over every sampled coalition) estimate it from
cost models measured on this project's machine, and say so up front instead
of starting an hour's work blind.
"""

from __future__ import annotations

import warnings

#: Work expected to take longer than this, or to hold more memory than this, is announced first.
LONG_SECONDS, LARGE_BYTES = 600.0, 4 * 2**30


def announce_large_work(method: str, what: str, seconds: float | None, memory: float, advice: str, *,
                        stacklevel: int = 3) -> None:
    """A ``UserWarning`` where ``seconds`` (``None``: unknown) exceeds :data:`LONG_SECONDS` or ``memory``
    (bytes) exceeds :data:`LARGE_BYTES`: "``method``: ``what`` make ... about M minutes and G GiB; ``advice``"."""
    if (seconds is None or seconds <= LONG_SECONDS) and memory <= LARGE_BYTES:
        return
    duration = "" if seconds is None else f"about {seconds / 60:,.0f} minutes and "
    warnings.warn(f"{method}: {what} make {duration}{memory / 2**30:,.1f} GiB of its own work; {advice}",
                  UserWarning, stacklevel=stacklevel + 1)
