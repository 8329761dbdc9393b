"""Stratified allocation of all-S influence: Neyman allocation and the per-stratum statistics.

:func:`neyman_allocation` spreads an integer budget over strata
(water-filling, bounds, largest remainders); :class:`_Stratum` keeps the
running per-player statistics of one coalition size, :func:`_stratum_std`
their (shrunk) standard deviations, and :func:`_draw_subsets` draws new base
sets of a stratum uniformly without replacement.
"""

from __future__ import annotations

import itertools
import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_int, check_real_array

PRIOR_SETS = 4.0  # base sets' worth of weight of the pooled variance in each stratum's estimate
_BIG = 2**50  # stand-in for subset counts too large to matter (sums stay within int64)


def _real_vector(values: ArrayLike, name: str) -> NDArray[np.float64]:
    """``values`` as a flat float array, or a TypeError naming ``name``."""
    return check_real_array(values, name).reshape(-1)


def _integer_vector(values: ArrayLike, name: str) -> NDArray[np.int64]:
    """``values`` as a flat int64 array of whole numbers (never truncated), or raise naming ``name``."""
    if np.asarray(values).dtype.kind in "biu":
        return np.asarray(values, dtype=np.int64).reshape(-1)
    array = _real_vector(values, name)
    if not (np.isfinite(array) & (array == np.round(array))).all():
        raise ValueError(f"{name} must hold whole numbers, got {array[:5].tolist()}.")
    return array.astype(np.int64)


def neyman_allocation(std: ArrayLike, budget: int, *, coverage: ArrayLike | None = None, lower: ArrayLike | None = None,
                      upper: ArrayLike | None = None) -> NDArray[np.int64]:
    r"""Integer Neyman allocation of ``budget`` samples over strata.

    Minimises :math:`\sum_k \sigma_k^2 / (c_k n_k)` subject to
    :math:`\sum_k n_k = B` and :math:`l_k \le n_k \le u_k`: the variance of a
    sum of stratum means when a sample of stratum ``k`` yields :math:`c_k`
    (coverage) useful observations with standard deviation :math:`\sigma_k`.
    The continuous solution is :math:`n_k = \operatorname{clip}(\lambda
    \sigma_k / \sqrt{c_k}, l_k, u_k)` (water-filling on :math:`\lambda`);
    it is rounded by largest remainders. If every stratum has zero weight the
    remainder is spread evenly. If :math:`\sum_k u_k \le B` the result is ``upper``.

    Parameters
    ----------
    std : array of shape (K,)
        Non-negative standard deviations :math:`\sigma_k`.
    budget : int
        Total samples :math:`B \ge \sum_k l_k`.
    coverage : array of shape (K,), optional
        Positive :math:`c_k` (default 1).
    lower, upper : arrays of shape (K,), optional
        Integer bounds (default 0 and unbounded).

    Returns
    -------
    ndarray of int, shape (K,)
    """
    std = _real_vector(std, "std")
    K = std.size
    if K == 0 or not np.isfinite(std).all() or (std < 0).any():
        raise ValueError("std must be a non-empty array of finite, non-negative numbers.")
    budget = check_int(budget, "budget", minimum=0)
    coverage = np.ones(K) if coverage is None else _real_vector(coverage, "coverage")
    if coverage.shape != (K,) or not (np.isfinite(coverage) & (coverage > 0)).all():
        raise ValueError(f"coverage must hold {K} finite, positive numbers.")
    lower = np.zeros(K, dtype=np.int64) if lower is None else _integer_vector(lower, "lower")
    upper = np.full(K, _BIG) if upper is None else _integer_vector(upper, "upper")
    if lower.shape != (K,) or upper.shape != (K,) or (lower < 0).any() or (upper < lower).any():
        raise ValueError("lower and upper must be K integers with 0 <= lower <= upper.")
    if lower.sum() > budget:
        raise ValueError(f"budget={budget} is smaller than the sum of the lower bounds ({lower.sum()}).")
    if upper.sum() <= budget:
        return upper.copy()
    weight = std / np.sqrt(coverage)
    open_ = upper > lower
    if not (weight[open_] > 0).any():
        weight = open_.astype(float)

    def total(lam: float) -> float:
        return np.clip(lam * weight, lower, upper).sum()

    lo, hi = 0.0, 1.0
    while total(hi) < budget:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if total(mid) < budget else (lo, mid)
    target = np.clip(hi * weight, lower, upper)
    alloc = np.floor(target).astype(np.int64)
    alloc = np.clip(alloc, lower, upper)
    remainder = budget - int(alloc.sum())
    while remainder < 0:  # only after float round-off: take back from the largest allocations
        k = int(np.argmax(np.where(alloc > lower, alloc, -1)))
        alloc[k] -= 1
        remainder += 1
    order = np.argsort(-(target - np.floor(target)), kind="stable")
    for k in itertools.cycle(order):
        if remainder <= 0:
            break
        if alloc[k] < upper[k]:
            alloc[k] += 1
            remainder -= 1
    return alloc


class _Stratum:
    """Running per-player statistics of the marginal contributions of one coalition size."""

    def __init__(self, k: int, n: int) -> None:
        self.k = k
        # Add to size-k sets, or remove from size-(k+1) sets: whichever covers more players per fit.
        self.direction: Literal["add", "remove"] = "add" if n - k >= k + 1 else "remove"
        self.base_size = k if self.direction == "add" else k + 1
        self.coverage = (n - k) / n if self.direction == "add" else (k + 1) / n
        self.population = math.comb(n, self.base_size)  # exact Python int, may be huge
        self.drawn: set[tuple[int, ...]] = set()
        self.count = np.zeros(n, dtype=np.int64)
        self.mean = np.zeros(n)
        self.m2 = np.zeros(n)
        self.n_fits = 0

    def add(self, players: np.ndarray, values: np.ndarray) -> None:
        self.count[players] += 1
        delta = values - self.mean[players]
        self.mean[players] += delta / self.count[players]
        self.m2[players] += delta * (values - self.mean[players])

    def pooled_variance(self) -> float:
        """Within-player variance pooled over players (NaN without degrees of freedom)."""
        dof = np.maximum(self.count - 1, 0).sum()
        if dof == 0:
            return float("nan")
        return float(self.m2.sum() / dof)

    def total_variance(self) -> float:
        """Variance of all observations, players pooled (a conservative fallback)."""
        n_obs = self.count.sum()
        if n_obs < 2:
            return float("nan")
        grand = (self.count * self.mean).sum() / n_obs
        return float((self.m2.sum() + (self.count * (self.mean - grand) ** 2).sum()) / (n_obs - 1))


def _stratum_std(strata: list[_Stratum], prior_sets: float = 0.0) -> NDArray[np.float64]:
    r"""Within-player standard deviation of each stratum, optionally shrunk.

    With ``prior_sets`` :math:`n_0 > 0` the variance of a stratum whose
    estimate rests on :math:`b_k` base sets becomes
    :math:`(b_k\hat\sigma_k^2 + n_0ar\sigma^2)/(b_k + n_0)`, with
    :math:`ar\sigma^2` the base-set-weighted mean over strata: marginal
    contributions are heavy-tailed (a few coalitions move the model a lot), so
    a two-set pilot often reads a near-zero variance, and plain Neyman
    allocation then starves that stratum.
    """
    variances = np.array([st.pooled_variance() for st in strata])
    fallback = np.array([st.total_variance() for st in strata])
    variances = np.where(np.isnan(variances), fallback, variances)
    if np.isnan(variances).all():
        return np.ones(len(strata))
    variances = np.where(np.isnan(variances), np.nanmax(variances), variances)
    if prior_sets > 0:
        sets = np.array([len(st.drawn) for st in strata], dtype=float)
        pooled = np.average(variances, weights=np.maximum(sets, 1.0))
        variances = (sets * variances + prior_sets * pooled) / (sets + prior_sets)
    return np.sqrt(variances)


def _draw_subsets(stratum: _Stratum, n: int, size: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """``size`` new distinct base sets of the stratum, uniform without replacement."""
    size = min(size, stratum.population - len(stratum.drawn))
    if size <= 0:
        return []
    m = stratum.base_size
    if 2 * (len(stratum.drawn) + size) > stratum.population:
        # Dense draw (small population): enumerate the undrawn sets and choose among them.
        pool = [c for c in itertools.combinations(range(n), m) if c not in stratum.drawn]
        chosen = [pool[j] for j in np.sort(rng.choice(len(pool), size=size, replace=False))]
    else:
        chosen = []
        while len(chosen) < size:  # rejection: at most half the population is taken
            c = tuple(np.sort(rng.choice(n, size=m, replace=False)).tolist())
            if c not in stratum.drawn:
                stratum.drawn.add(c)
                chosen.append(c)
        return chosen
    stratum.drawn.update(chosen)
    return chosen
