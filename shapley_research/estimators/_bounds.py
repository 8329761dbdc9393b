r"""Sample sizes and guarantees from the paper's theorems.

Each function returns what a theorem requires for an :math:`(\epsilon, \delta)`
approximation in l2 norm, :math:`P[\|\hat s - s\|_2 \le \epsilon] \ge 1 - \delta`,
for a utility with range ``utility_range`` (``r``). The runtime experiment
multiplies these counts by the measured cost of one utility evaluation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

from .._validation import check_choice, check_float, check_int

__all__ = [
    "permutation_sample_size", "group_testing_sample_size", "group_testing_q_tot",
    "compressive_sample_size", "stability_bound", "uniform_division_guarantee",
    "UniformDivisionGuarantee",
]


def _check_common(epsilon: float, delta: float, n_players: int, utility_range: float,
                  min_players: int = 1) -> tuple[float, float, int, float]:
    return (check_float(epsilon, "epsilon", minimum=0.0, strict=True),
            check_float(delta, "delta", minimum=0.0, strict=True, maximum=1.0),
            check_int(n_players, "n_players", minimum=min_players),
            check_float(utility_range, "utility_range", minimum=0.0, strict=True))


def _sample_count(compute: Callable[[], float], epsilon: float, utility_range: float) -> int:
    """``ceil(compute())``, or a ValueError when the count overflows floating point.

    Happens only for absurdly small ``epsilon / utility_range`` (about 1e-150
    and below), where ``epsilon**2`` or ``h(u)`` underflows to 0.
    """
    try:
        value = compute()
    except (ZeroDivisionError, OverflowError):
        value = math.inf
    if not math.isfinite(value):
        raise ValueError(f"epsilon={epsilon:g} is too small for utility_range={utility_range:g}: the required "
                         "sample size overflows floating point; use a larger epsilon.")
    return math.ceil(value)


def _bennett_h(u: float) -> float:
    r""":math:`h(u) = (1+u)\log(1+u) - u`.

    For small ``u`` the two terms cancel (relative error about ``1e-16 / u**2``,
    2% at ``u = 1e-14``), so there the Taylor series
    :math:`u^2/2 - u^3/6 + u^4/12 - u^5/20` is used, exact to rounding below ``1e-4``.
    """
    if u < 1e-4:
        return u * u * (0.5 - u * (1.0 / 6.0 - u * (1.0 / 12.0 - u / 20.0)))
    return (1.0 + u) * math.log1p(u) - u


def permutation_sample_size(epsilon: float, delta: float, n_players: int, utility_range: float = 1.0) -> int:
    r"""Permutations for the baseline (appendix theorem, Hoeffding + union bound).

    :math:`T \ge \frac{2 r^2 N}{\epsilon^2} \log\frac{2N}{\delta}`; the number
    of utility evaluations is ``N * T``.

    Parameters
    ----------
    epsilon : float
        Error allowed on every value (``> 0``).
    delta : float
        Probability, in ``(0, 1]``, that the error may exceed ``epsilon``.
    n_players : int
        ``N``, the number of players.
    utility_range : float, default 1.0
        ``r``, the range of the utility (``> 0``).

    Returns
    -------
    int
        ``T``, the permutations required.
    """
    epsilon, delta, n, r = _check_common(epsilon, delta, n_players, utility_range)
    return _sample_count(lambda: 2 * r**2 * n / epsilon**2 * math.log(2 * n / delta), epsilon, r)


def group_testing_q_tot(n_players: int) -> float:
    r""":math:`q_{tot} = P[\beta_i = \beta_j]` of Theorem 3 (equals ``1 - 2/Z``).

    :math:`q_{tot} = \frac{N-2}{N} q(1) + \sum_{k=2}^{N-1} q(k)\bigl[1 + \frac{2k(k-N)}{N(N-1)}\bigr]`.

    Parameters
    ----------
    n_players : int
        ``N``, the number of players (at least 2).

    Returns
    -------
    float
        :math:`q_{tot}`.
    """
    n = check_int(n_players, "n_players", minimum=2)
    k = np.arange(1, n, dtype=float)
    weights = 1.0 / k + 1.0 / (n - k)
    q = weights / weights.sum()
    return float((n - 2) / n * q[0] + np.dot(q[1:], 1 + 2 * k[1:] * (k[1:] - n) / (n * (n - 1))))


def group_testing_sample_size(epsilon: float, delta: float, n_players: int, utility_range: float = 1.0,
                              variant: Literal["paper", "improved"] = "paper") -> int:
    r"""Tests required by group testing.

    ``variant="paper"`` is Theorem 3:

    .. math::

        T \ge 8 \log\frac{N(N-1)}{2\delta} \Big/ \Bigl((1 - q_{tot}^2)\,
        h\Bigl(\frac{\epsilon}{Z r \sqrt N (1 - q_{tot}^2)}\Bigr)\Bigr),
        \quad h(u) = (1+u)\log(1+u) - u.

    ``variant="improved"`` is the refined bound of Wang & Jia (2023), as
    transcribed by pyDVL for unit range (``epsilon`` is divided by ``r``):

    .. math::

        T \ge \log\frac{N(N-1)}{\delta} \Big/ \Bigl((1 - q_{tot})\,
        h\Bigl(\frac{\epsilon}{2 Z r \sqrt N (1 - q_{tot})}\Bigr)\Bigr).

    Parameters
    ----------
    epsilon : float
        Error allowed on every value (``> 0``).
    delta : float
        Probability, in ``(0, 1]``, that the error may exceed ``epsilon``.
    n_players : int
        ``N``, the number of players (at least 2).
    utility_range : float, default 1.0
        ``r``, the range of the utility (``> 0``).
    variant : {"paper", "improved"}, default "paper"
        Which bound, as above.

    Returns
    -------
    int
        ``T``, the tests required.
    """
    epsilon, delta, n, r = _check_common(epsilon, delta, n_players, utility_range, min_players=2)
    check_choice(variant, "variant", ("paper", "improved"))
    z = 2.0 * float(np.sum(1.0 / np.arange(1, n)))
    q_tot = group_testing_q_tot(n)
    if variant == "paper":
        spread = 1.0 - q_tot**2
        return _sample_count(lambda: 8 * math.log(n * (n - 1) / (2 * delta))
                             / (spread * _bennett_h(epsilon / (z * r * math.sqrt(n) * spread))), epsilon, r)
    spread = 1.0 - q_tot
    return _sample_count(lambda: math.log(n * (n - 1) / delta)
                         / (spread * _bennett_h(epsilon / (2 * z * r * math.sqrt(n) * spread))), epsilon, r)


def compressive_sample_size(epsilon: float, delta: float, n_players: int, sparsity: int, utility_range: float = 1.0,
                            constant: float = 1.0) -> tuple[int, int]:
    r"""Permutations ``T`` and measurements ``M`` of Theorem 4.

    :math:`T \ge \frac{2r^2}{\epsilon^2}\log\frac{4M}{\delta}` and
    :math:`M \ge C'(K \log\frac{N}{2K} + \log\frac2\delta)`. The theorem leaves
    the universal constant :math:`C'` unspecified: pass it as ``constant``.
    For ``K > N / 2`` the logarithm :math:`\log\frac{N}{2K}` would be negative
    (the theorem's regime is sparse values): it is taken as 0, so ``M`` is then
    :math:`C'\log\frac2\delta` whatever ``K``. Returns ``(T, M)``; utility
    evaluations are ``N * T``.

    Parameters
    ----------
    epsilon : float
        Error allowed on every value (``> 0``).
    delta : float
        Probability, in ``(0, 1]``, that the error may exceed ``epsilon``.
    n_players : int
        ``N``, the number of players.
    sparsity : int
        ``K``, the non-zero entries assumed of the values (``1 <= K <= N``).
    utility_range : float, default 1.0
        ``r``, the range of the utility (``> 0``).
    constant : float, default 1.0
        The theorem's :math:`C'` (``> 0``).

    Returns
    -------
    tuple of (int, int)
        ``(T, M)``.
    """
    epsilon, delta, n, r = _check_common(epsilon, delta, n_players, utility_range)
    k = check_int(sparsity, "sparsity", minimum=1)
    if k > n:
        raise ValueError(f"sparsity must be <= n_players: the values cannot have {k} non-zero entries "
                         f"among {n} players.")
    constant = check_float(constant, "constant", minimum=0.0, strict=True)
    m = max(1, math.ceil(constant * (k * math.log(max(n / (2 * k), 1.0)) + math.log(2 / delta))))
    t = _sample_count(lambda: 2 * r**2 / epsilon**2 * math.log(4 * m / delta), epsilon, r)
    return t, m


def stability_bound(c_stab: float, n_players: int) -> float:
    r"""Theorem 5: :math:`s_i - s_j \le 2 C_{stab} \frac{1 + \log(N-1)}{N-1}`.

    For a learner with uniform stability :math:`\beta = C_{stab}/|S|` and a
    utility ``M - test loss`` with loss in ``[0, M]``.

    Parameters
    ----------
    c_stab : float
        :math:`C_{stab}` (``>= 0``).
    n_players : int
        ``N``, the number of players (at least 2).

    Returns
    -------
    float
        The bound on every :math:`s_i - s_j`.
    """
    c_stab = check_float(c_stab, "c_stab", minimum=0.0)
    n = check_int(n_players, "n_players", minimum=2)
    return 2.0 * c_stab * (1.0 + math.log(n - 1)) / (n - 1)


@dataclass(frozen=True)
class UniformDivisionGuarantee:
    """Outcome of :func:`uniform_division_guarantee`."""

    bound: float  #: Theorem 5's bound on every pairwise difference s_i - s_j
    threshold: float  #: epsilon / (2 sqrt(N)), what Lemma 2 needs
    holds: bool  #: whether uniform division is an (epsilon, 0)-approximation


def uniform_division_guarantee(c_stab: float, n_players: int, epsilon: float) -> UniformDivisionGuarantee:
    r"""Whether the uniform split is an :math:`(\epsilon, 0)`-approximation.

    By Lemma 2 it is when Theorem 5's bound on :math:`|s_i - s_j|` is at most
    :math:`\epsilon / (2\sqrt N)` (the uniform split satisfies efficiency and
    has all pairwise differences 0).

    Parameters
    ----------
    c_stab : float
        :math:`C_{stab}` of :func:`stability_bound`.
    n_players : int
        ``N``, the number of players (at least 2).
    epsilon : float
        Error allowed (``> 0``).

    Returns
    -------
    UniformDivisionGuarantee
        The bound, the threshold and whether the guarantee holds.
    """
    n = check_int(n_players, "n_players", minimum=2)
    epsilon = check_float(epsilon, "epsilon", minimum=0.0, strict=True)
    bound = stability_bound(c_stab, n)
    threshold = epsilon / (2.0 * math.sqrt(n))
    return UniformDivisionGuarantee(bound=bound, threshold=threshold, holds=bound <= threshold)
