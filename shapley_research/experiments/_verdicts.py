"""Decisions on intervals over repetitions: a claim holds, does not hold or is undecided.

Experiments that repeat a measurement over seeds decide a claim on the
Student-t interval of the mean (:func:`mean_interval`) against the
criterion's threshold (:func:`decide`: ``True``, ``False``, or ``None`` when
the interval straddles the threshold, written as ``claim(...,
undecided="inconclusive")``), with :func:`repetitions_to_decide` saying how
many repetitions would decide it at the observed spread. From samples in
one call: :func:`interval_verdict`; over several data sets or comparisons:
:func:`combine`; in a note: :func:`describe`.

A claim decided on ``k`` intervals at once ("does not hold if any lies wholly
on the wrong side") would call a true claim false far more often than one
interval does. :func:`family_verdicts` corrects the family: an interval's
"wrong side" counts only if Holm's step-down procedure (:func:`holm`) on the
one-sided p-values against the claimed side rejects it at family-wise level
``(1 - level) / 2`` (the one-sided level of one two-sided interval; with
``k = 1`` nothing changes). "Holds" needs no correction: every interval
wholly on the claimed side is an intersection-union test, whose level is
that of each interval.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterable
    from numpy.typing import ArrayLike

__all__ = ["mean_interval", "decide", "repetitions_to_decide", "interval_verdict", "combine", "describe",
           "VERDICT_WORDS", "holm", "holm_adjusted", "wrong_side_p", "family_verdicts", "FAMILY_RULE",
           "AUROC_RANGE", "CORRELATION_RANGE", "DIFFERENCE_RANGE", "NONNEGATIVE_RANGE", "rank_correlation",
           "rank_correlation_test", "RANK_DECIMALS"]

VERDICT_WORDS = {True: "holds", False: "does not hold", None: "inconclusive"}
#: Ranges of bounded statistics, for ``bounds``: an AUROC or an accuracy; a correlation; a difference of two
#: AUROCs or accuracies; an error, a distance, a time or a ratio of times.
AUROC_RANGE = (0.0, 1.0)
CORRELATION_RANGE = (-1.0, 1.0)
DIFFERENCE_RANGE = (-1.0, 1.0)
NONNEGATIVE_RANGE = (0.0, math.inf)
#: The multiplicity rule in words, for the criterion of a claim decided on several intervals.
FAMILY_RULE = ("'Does not hold' is corrected for the claim's {k} intervals by Holm's step-down procedure: an "
               "interval counts as wholly on the wrong side only if Holm rejects it at family-wise 2.5% on the "
               "one-sided t-test p-values against the claimed side (the wrong-side level of one 95% interval; the "
               "smallest p-value must be below 0.025/{k}); 'holds' needs every 95% interval wholly on the claimed "
               "side (an intersection-union test: no correction needed).")


def mean_interval(samples: ArrayLike, level: float = 0.95,
                  bounds: tuple[float, float] | None = None) -> tuple[float, float, float]:
    r"""Mean and two-sided t-interval :math:`\bar x \pm t_{(1+\ell)/2,\,n-1}\, s / \sqrt n` of the samples.

    Returns ``(mean, low, high)``; with a single sample the ends are NaN (nothing can be decided).
    ``bounds = (lower, upper)`` is the range the statistic cannot leave
    (:data:`AUROC_RANGE`, :data:`CORRELATION_RANGE`, :data:`NONNEGATIVE_RANGE`,
    ...): the interval is cut to it. The cut keeps the coverage, since the
    mean lies in the range, and changes no decision against a threshold
    strictly inside it (:func:`interval_verdict` refuses any other); it only
    stops a report such as "AUROC 0.98 [0.96, 1.006]".

    Parameters
    ----------
    samples : array-like
        Finite numbers, one per repetition (within ``bounds`` if given).
    level : float
        Coverage of the two-sided interval, in (0, 1).
    bounds : (float, float) or None
        The statistic's range; None: unbounded.

    Returns
    -------
    (float, float, float)
        ``(mean, low, high)``.
    """
    from scipy import stats

    x = np.asarray(samples, dtype=float).ravel()
    if x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"samples must be a non-empty array of finite numbers, got {x!r}.")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}.")
    lower, upper = _checked_bounds(bounds, x)
    mean = float(x.mean())
    if x.size < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf((1 + level) / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return mean, max(mean - half, lower), min(mean + half, upper)


def _checked_bounds(bounds: tuple[float, float] | None, x: np.ndarray) -> tuple[float, float]:
    """``bounds`` as ``(lower, upper)`` (``(-inf, inf)`` for None), refused unless every sample lies in it."""
    if bounds is None:
        return -math.inf, math.inf
    try:
        lower, upper = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise TypeError(f"bounds must be a pair (lower, upper) of numbers or None, got {bounds!r}.") from None
    if not lower < upper:
        raise ValueError(f"bounds must satisfy lower < upper, got {bounds!r}.")
    if ((x < lower) | (x > upper)).any():
        raise ValueError(f"samples must lie within bounds {bounds!r}; got values from {x.min()!r} to {x.max()!r}.")
    return lower, upper


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
                     strict: bool = False, bounds: tuple[float, float] | None = None) -> dict[str, Any]:
    """``{n, mean, low, high, verdict, seeds_to_decide, p_wrong_side}``: the mean of ``samples`` against ``threshold``.

    ``verdict`` is :func:`decide`'s (None: undecided; also with fewer than two
    samples); ``strict`` (side "above" only) asks for ``low > threshold`` and
    calls ``high <= threshold`` a miss, for a claim of a strict gain.
    ``seeds_to_decide`` is the repetitions that would decide an undecided one
    at the observed spread (None if decided or unknown); ``p_wrong_side`` is
    :func:`wrong_side_p` (0 for a miss with no spread; NaN below two samples),
    for :func:`family_verdicts`. ``bounds``: the statistic's range, as in
    :func:`mean_interval`; ``threshold`` must then lie strictly inside it
    (at a bound the cut itself would decide: a "mean >= 0" of a statistic
    that cannot be negative always holds).
    """
    if bounds is not None:
        lower, upper = _checked_bounds(bounds, np.empty(0))  # the pair itself; the samples are checked below
        if not lower < threshold < upper:
            raise ValueError(f"threshold must lie strictly inside bounds {bounds!r}, got {threshold!r}.")
    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"n": 0, "mean": float("nan"), "low": float("nan"), "high": float("nan"), "verdict": None,
                "seeds_to_decide": None, "p_wrong_side": float("nan")}
    mean, low, high = mean_interval(x, level, bounds)
    verdict = decide(low, high, threshold, side)
    if strict and side == "above" and np.isfinite(low):
        verdict = True if low > threshold else False if high <= threshold else None
    needed = None
    if verdict is None and x.size >= 2:
        needed = repetitions_to_decide(float(x.std(ddof=1)), mean - threshold, level)
    p_wrong = 0.0 if verdict is False and x.size >= 2 and x.std() == 0 else wrong_side_p(x, threshold, side)
    return {"n": int(x.size), "mean": mean, "low": low, "high": high, "verdict": verdict, "seeds_to_decide": needed,
            "p_wrong_side": p_wrong}


def wrong_side_p(samples: ArrayLike, threshold: float, side: str = "above") -> float:
    r"""One-sided t-test p-value of "the mean is on the claimed side of ``threshold``" (small: on the wrong side).

    With :math:`t = (\bar x - \text{threshold}) / (s / \sqrt n)`: :math:`P(T_{n-1} \le t)` for
    ``side="above"`` (the claim is mean >= threshold), :math:`P(T_{n-1} \ge t)` for ``"below"``. A
    two-sided interval at level :math:`\ell` lies wholly on the wrong side exactly when this is below
    :math:`(1 - \ell) / 2`. NaN with fewer than two samples; with no spread, 0 on the wrong side and 1 otherwise.
    """
    from scipy import stats

    if side not in ("above", "below"):
        raise ValueError(f"side must be 'above' or 'below', got {side!r}.")
    x = np.asarray(samples, dtype=float).ravel()
    x = x[np.isfinite(x)]
    if x.size < 2:
        return float("nan")
    gap = float(x.mean() - threshold) * (1.0 if side == "above" else -1.0)
    sd = float(x.std(ddof=1))
    if sd == 0.0:
        return 0.0 if gap < 0 else 1.0
    return float(stats.t.cdf(gap / (sd / math.sqrt(x.size)), x.size - 1))


def holm_adjusted(p_values: ArrayLike) -> np.ndarray:
    r"""Holm's step-down adjusted p-values, in the input's order.

    With the :math:`k` p-values sorted, :math:`p_{(1)} \le \dots \le p_{(k)}`:
    :math:`\tilde p_{(j)} = \max_{i \le j} \min\bigl(1, (k - i + 1)\, p_{(i)}\bigr)`
    (Holm, Scand. J. Statist. 1979). NaN p-values (nothing to test) stay NaN
    and do not count in :math:`k`.
    """
    p = np.asarray(p_values, dtype=float).ravel()
    if ((p < 0) | (p > 1)).any():
        raise ValueError(f"p_values must lie in [0, 1] (or be NaN), got {p!r}.")
    out = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    k = order.size
    scaled = np.minimum(1.0, (k - np.arange(k)) * p[order])
    out[order] = np.maximum.accumulate(scaled) if k else scaled
    return out


def holm(p_values: ArrayLike, alpha: float = 0.05) -> np.ndarray:
    """Which hypotheses Holm's step-down procedure rejects at family-wise level ``alpha`` (a bool array).

    Sorted ascending, the ``j``-th smallest p-value (from 1) is rejected while
    every one before it was and it is at most ``alpha / (k - j + 1)``; the
    first that is not stops the procedure. NaN p-values are never rejected.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    adjusted = holm_adjusted(p_values)
    return np.where(np.isnan(adjusted), False, adjusted <= alpha)


def family_verdicts(entries: dict[str, dict[str, Any]], level: float = 0.95) -> dict[str, dict[str, Any]]:
    """The entries of :func:`interval_verdict` with Holm's correction over the family applied to "does not hold".

    An entry keeps ``verdict`` False only if Holm's procedure on the
    entries' ``p_wrong_side`` rejects it at family-wise ``(1 - level) / 2``;
    otherwise a False becomes None (inconclusive). True and None are kept.
    Each returned entry is a copy with ``uncorrected`` (its own interval's
    verdict), ``family`` (``k``, the entries with a p-value) and ``holm_p``
    (its Holm-adjusted p-value) added.
    """
    names = list(entries)
    p = np.array([entries[name].get("p_wrong_side", np.nan) for name in names], dtype=float)
    adjusted = holm_adjusted(p)
    rejected = holm(p, (1 - level) / 2)
    k = int((~np.isnan(p)).sum())
    out = {}
    for name, adj, reject in zip(names, adjusted, rejected):
        entry = entries[name]
        verdict = entry["verdict"]
        corrected = None if verdict is False and not reject else verdict
        out[name] = {**entry, "verdict": corrected, "uncorrected": verdict, "family": k, "holm_p": float(adj)}
    return out


def combine(verdicts: Iterable[bool | None]) -> bool | None:
    """False if any is False, True if all are True, None (inconclusive) otherwise."""
    verdicts = list(verdicts)
    if any(v is False for v in verdicts):
        return False
    return True if verdicts and all(v is True for v in verdicts) else None


def describe(name: str, entry: dict) -> str:
    """``name +0.012 [-0.010, +0.034] (n 8, inconclusive; about 20 seeds would decide)``.

    An entry whose ``undecidable`` names why more seeds would not decide it
    (a bimodal statistic, say) gives that reason instead of the count.
    """
    if entry["n"] == 0:
        return f"{name}: did not run"
    text = f"{name} {entry['mean']:+.3f} [{entry['low']:+.3f}, {entry['high']:+.3f}] (n {entry['n']}, " \
           f"{VERDICT_WORDS[entry['verdict']]}"
    if entry.get("uncorrected") is False and entry["verdict"] is None:
        return text + f": wholly on the wrong side at 95%, not after Holm's correction over {entry['family']} " \
                      f"intervals, adjusted one-sided p {entry['holm_p']:.3f} > 0.025)"
    if entry["verdict"] is None and entry.get("undecidable"):
        text += f"; {entry['undecidable']}"
    elif entry["verdict"] is None:
        text += (f"; about {entry['seeds_to_decide']} seeds would decide" if entry["seeds_to_decide"]
                 else "; no practical number of seeds would decide")
    return text + ")"


#: Decimals a rank correlation keeps (:func:`rank_correlation`).
RANK_DECIMALS = 12


def rank_correlation(x: ArrayLike, y: ArrayLike) -> float:
    r"""Spearman's :math:`\rho` of ``x`` and ``y``, exact where a criterion compares it with a threshold.

    Over :math:`n` untied points :math:`\rho = 1 - 6\sum_i d_i^2 / (n(n^2 - 1))`
    is a rational number, and a criterion's threshold (-0.8, 0.8) can be one
    of its values: computed in floating point, -0.8 came out as
    -0.7999999999999999 and failed ":math:`\rho \le -0.8`". Rounding to
    :data:`RANK_DECIMALS` decimals removes that error (about :math:`10^{-16}`);
    without ties two distinct values at :math:`n \le 10^3` differ by more than
    :math:`10^{-9}`, so it merges none (with ties a value may move by up to
    :math:`5 \cdot 10^{-13}`, far below any threshold's meaning). The
    coefficient of :func:`rank_correlation_test`, without its p-value.

    Parameters
    ----------
    x, y : array-like
        Two 1-D series of one length.

    Returns
    -------
    float
        NaN below two points, or if either series is constant (no ranking).

    Raises
    ------
    ValueError
        If ``x`` and ``y`` are not 1-D of one length.
    """
    return rank_correlation_test(x, y)[0]


def rank_correlation_test(x: ArrayLike, y: ArrayLike, alternative: str = "two-sided") -> tuple[float, float]:
    r"""Spearman's :math:`\rho` of ``x`` and ``y`` as :func:`rank_correlation` gives it, and its p-value.

    The coefficient is rounded to :data:`RANK_DECIMALS` decimals (see
    :func:`rank_correlation`); the p-value is SciPy's (Student's t with
    :math:`n - 2` degrees of freedom), of the unrounded coefficient.

    Parameters
    ----------
    x, y : array-like
        Two 1-D series of one length.
    alternative : {"two-sided", "greater", "less"}
        The alternative hypothesis: :math:`\rho \ne 0`, :math:`\rho > 0` or :math:`\rho < 0`.

    Returns
    -------
    (float, float)
        ``(rho, p_value)``; both NaN below two points, or if either series is constant (no ranking).

    Raises
    ------
    ValueError
        If ``x`` and ``y`` are not 1-D of one length, or ``alternative`` is none of the three.
    """
    from scipy.stats import spearmanr

    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}.")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D of one length, got shapes {x.shape} and {y.shape}.")
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan, math.nan
    result = spearmanr(x, y, alternative=alternative)
    return round(float(result.statistic), RANK_DECIMALS), float(result.pvalue)
