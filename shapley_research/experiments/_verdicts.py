"""Decisions on intervals over repetitions: a claim holds, does not hold or is undecided.

Experiments that repeat a measurement over seeds decide a claim on the
Student-t interval of the mean (:func:`mean_interval`) against the
criterion's threshold (:func:`decide`: ``True``, ``False``, or ``None`` when
the interval straddles the threshold, written as ``claim(...,
undecided="inconclusive")``), with :func:`repetitions_to_decide` saying how
many repetitions would decide it at the observed spread. From samples in
one call: :func:`interval_verdict`; over several data sets or comparisons:
:func:`combine`; in a note: :func:`describe`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterable
    from numpy.typing import ArrayLike

__all__ = ["mean_interval", "decide", "repetitions_to_decide", "interval_verdict", "combine", "describe",
           "VERDICT_WORDS"]

VERDICT_WORDS = {True: "holds", False: "does not hold", None: "inconclusive"}


def mean_interval(samples: ArrayLike, level: float = 0.95) -> tuple[float, float, float]:
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


def decide(low: float, high: float, threshold: float, side: str = "above") -> bool | None:
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


def interval_verdict(samples: ArrayLike, threshold: float, side: str = "above", level: float = 0.95,
                     strict: bool = False) -> dict[str, Any]:
    """``{n, mean, low, high, verdict, seeds_to_decide}`` of the mean of ``samples`` against ``threshold``.

    ``verdict`` is :func:`decide`'s (None: undecided; also with fewer than two
    samples); ``strict`` (side "above" only) asks for ``low > threshold`` and
    calls ``high <= threshold`` a miss, for a claim of a strict gain.
    ``seeds_to_decide`` is the repetitions that would decide an undecided one
    at the observed spread (None if decided or unknown).
    """
    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"n": 0, "mean": float("nan"), "low": float("nan"), "high": float("nan"), "verdict": None,
                "seeds_to_decide": None}
    mean, low, high = mean_interval(x, level)
    verdict = decide(low, high, threshold, side)
    if strict and side == "above" and np.isfinite(low):
        verdict = True if low > threshold else False if high <= threshold else None
    needed = None
    if verdict is None and x.size >= 2:
        needed = repetitions_to_decide(float(x.std(ddof=1)), mean - threshold, level)
    return {"n": int(x.size), "mean": mean, "low": low, "high": high, "verdict": verdict, "seeds_to_decide": needed}


def combine(verdicts: Iterable[bool | None]) -> bool | None:
    """False if any is False, True if all are True, None (inconclusive) otherwise."""
    verdicts = list(verdicts)
    if any(v is False for v in verdicts):
        return False
    return True if verdicts and all(v is True for v in verdicts) else None


def describe(name: str, entry: dict) -> str:
    """``name +0.012 [-0.010, +0.034] (n 8, inconclusive; about 20 seeds would decide)``."""
    if entry["n"] == 0:
        return f"{name}: did not run"
    text = f"{name} {entry['mean']:+.3f} [{entry['low']:+.3f}, {entry['high']:+.3f}] (n {entry['n']}, " \
           f"{VERDICT_WORDS[entry['verdict']]}"
    if entry["verdict"] is None:
        text += (f"; about {entry['seeds_to_decide']} seeds would decide" if entry["seeds_to_decide"]
                 else "; no practical number of seeds would decide")
    return text + ")"
