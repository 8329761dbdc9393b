"""Decisions on intervals over repetitions: a claim holds, does not hold or is undecided.

Experiments that repeat a measurement over seeds decide a claim on the
Student-t interval of the mean (:func:`mean_interval`) against the
criterion's threshold (:func:`decide`: ``True``, ``False``, or ``None`` when
the interval straddles the threshold, written as ``claim(...,
undecided="inconclusive")``), with :func:`repetitions_to_decide` saying how
many repetitions would decide it at the observed spread.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["mean_interval", "decide", "repetitions_to_decide"]


def mean_interval(samples, level: float = 0.95) -> tuple[float, float, float]:
    r"""Mean and two-sided t-interval :math:`\bar x \pm t_{(1+\ell)/2,\,n-1}\, s / \sqrt n` of the samples.

    Returns ``(mean, low, high)``; with a single sample the ends are NaN (nothing can be decided).
    """
    from scipy import stats

    x = np.asarray(samples, dtype=float).ravel()
    if x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"samples must be a non-empty array of finite numbers, got {x!r}.")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}.")
    mean = float(x.mean())
    if x.size < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf((1 + level) / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return mean, mean - half, mean + half


def decide(low: float, high: float, threshold: float, side: str = "above"):
    """Verdict on ``mean >= threshold`` (``side="above"``) or ``mean <= threshold`` (``"below"``).

    True if the whole interval ``[low, high]`` is on the claimed side, False
    if it is wholly on the other side, None (undecided) if it straddles the
    threshold or is NaN.
    """
    if side == "above":
        return True if low >= threshold else False if high < threshold else None
    if side == "below":
        return True if high <= threshold else False if low > threshold else None
    raise ValueError(f"side must be 'above' or 'below', got {side!r}.")


def repetitions_to_decide(sd: float, distance: float, level: float = 0.95, n_max: int = 10**7) -> int | None:
    r"""Smallest ``n`` whose t-interval half-width :math:`t_{n-1}\,\mathrm{sd}/\sqrt n` is below ``|distance|``.

    ``distance`` is the mean's distance from the threshold (None if 0 or more than ``n_max`` are needed).
    """
    from scipy import stats

    distance = abs(float(distance))
    if distance == 0 or not np.isfinite(sd):
        return None
    n = max(2, math.ceil((stats.norm.ppf((1 + level) / 2) * sd / distance) ** 2))
    while n <= n_max and stats.t.ppf((1 + level) / 2, n - 1) * sd / math.sqrt(n) >= distance:
        n += max(1, n // 50)
    return n if n <= n_max else None
