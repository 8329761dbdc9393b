"""Sample sizes and guarantees of the paper's theorems, against the formula text."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from shapley_research import (compressive_sample_size, group_testing_q_tot, group_testing_sample_size,
                              permutation_sample_size, stability_bound, uniform_division_guarantee)

# --- independent transcriptions of the formulas (plain Python, exact fractions) ---


def z_paper(n: int) -> Fraction:
    """Z = 2 sum_{k=1}^{N-1} 1/k (Algorithm 1)."""
    return 2 * sum(Fraction(1, k) for k in range(1, n))


def q_tot_theorem3(n: int) -> Fraction:
    """q_tot as written in Theorem 3: (N-2)/N q(1) + sum_{k>=2} q(k) [1 + 2k(k-N)/(N(N-1))]."""
    z = z_paper(n)
    q = {k: (Fraction(1, k) + Fraction(1, n - k)) / z for k in range(1, n)}
    return Fraction(n - 2, n) * q[1] + sum(q[k] * (1 + Fraction(2 * k * (k - n), n * (n - 1)))
                                           for k in range(2, n))


def q_tot_from_definition(n: int) -> Fraction:
    """P[beta_i = beta_j]: both in (C(N-2, k-2)/C(N, k)) or both out (C(N-2, k)/C(N, k))."""
    z = z_paper(n)
    total = Fraction(0)
    for k in range(1, n):
        q = (Fraction(1, k) + Fraction(1, n - k)) / z
        both_in = Fraction(math.comb(n - 2, k - 2), math.comb(n, k)) if k >= 2 else Fraction(0)
        both_out = Fraction(math.comb(n - 2, k), math.comb(n, k))
        total += q * (both_in + both_out)
    return total


def h(u: float) -> float:
    return (1 + u) * math.log(1 + u) - u


@pytest.mark.parametrize("n", [2, 3, 4, 7, 10, 25, 60])
def test_q_tot_appendix_identity(n):
    """The appendix shows q_tot = 1 - 2/Z; both transcriptions agree exactly."""
    exact = 1 - 2 / z_paper(n)
    assert q_tot_theorem3(n) == exact
    assert q_tot_from_definition(n) == exact
    assert group_testing_q_tot(n) == pytest.approx(float(exact), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("n", [100, 1000, 10_000])
def test_q_tot_large_n(n):
    z = 2 * sum(1.0 / k for k in range(1, n))
    assert group_testing_q_tot(n) == pytest.approx(1 - 2 / z, rel=1e-12)


def test_permutation_sample_size_by_hand():
    # (2 r^2 N / eps^2) log(2N / delta) = 2000 * log(400) = 11982.93 -> 11983
    assert permutation_sample_size(0.1, 0.05, 10) == 11983
    # r = 2 multiplies by 4: 47931.7 -> 47932
    assert permutation_sample_size(0.1, 0.05, 10, utility_range=2.0) == 47932


@pytest.mark.parametrize("eps,delta,n,r", [(0.1, 0.05, 10, 1.0), (0.5, 0.1, 100, 1.0),
                                           (0.05, 0.01, 50, 2.0), (1.0, 0.2, 1000, 0.5)])
def test_group_testing_sample_size_theorem3(eps, delta, n, r):
    z = float(z_paper(n)) if n <= 100 else 2 * sum(1.0 / k for k in range(1, n))
    q = 1 - 2 / z
    expected = (8 * math.log(n * (n - 1) / (2 * delta))
                / ((1 - q**2) * h(eps / (z * r * math.sqrt(n) * (1 - q**2)))))
    assert group_testing_sample_size(eps, delta, n, r) == math.ceil(expected)
    improved = (math.log(n * (n - 1) / delta)
                / ((1 - q) * h(eps / (2 * z * r * math.sqrt(n) * (1 - q)))))
    assert group_testing_sample_size(eps, delta, n, r, variant="improved") == math.ceil(improved)


def test_group_testing_theorem3_by_hand():
    # N=10: Z = 2 H_9 = 5.657937, q_tot = 0.646511, 1-q^2 = 0.582023,
    # u = 0.1 / (Z sqrt(10) 0.582023) = 0.0096031, h(u) = 4.5966e-5,
    # T = 8 log(900) / (0.582023 h(u)) = 2.0343e6
    assert group_testing_sample_size(0.1, 0.05, 10) == pytest.approx(2.0343e6, rel=5e-4)


def test_improved_bound_is_smaller_than_paper():
    for n in (10, 100, 1000):
        for eps in (0.01, 0.1):
            assert (group_testing_sample_size(eps, 0.05, n, variant="improved")
                    < group_testing_sample_size(eps, 0.05, n, variant="paper"))


def test_compressive_sample_size_theorem4():
    eps, delta, n, k, c = 0.1, 0.05, 1000, 10, 2.0
    m = math.ceil(c * (k * math.log(n / (2 * k)) + math.log(2 / delta)))
    t = math.ceil(2 / eps**2 * math.log(4 * m / delta))
    assert compressive_sample_size(eps, delta, n, k, constant=c) == (t, m) == (1768, 86)
    # range r scales T by r^2 and leaves M alone
    t2, m2 = compressive_sample_size(eps, delta, n, k, utility_range=3.0, constant=c)
    assert m2 == m and t2 == math.ceil(9 * 2 / eps**2 * math.log(4 * m / delta))


@pytest.mark.parametrize("size", [
    lambda eps, delta, n: permutation_sample_size(eps, delta, n),
    lambda eps, delta, n: group_testing_sample_size(eps, delta, n),
    lambda eps, delta, n: group_testing_sample_size(eps, delta, n, variant="improved"),
    lambda eps, delta, n: compressive_sample_size(eps, delta, n, 5)[0],
], ids=["permutation", "gt_paper", "gt_improved", "compressive"])
def test_sample_sizes_are_monotone(size):
    epsilons = [0.01, 0.03, 0.1, 0.3, 1.0]
    deltas = [0.001, 0.01, 0.05, 0.2, 0.5]
    by_eps = [size(e, 0.05, 200) for e in epsilons]
    by_delta = [size(0.1, d, 200) for d in deltas]
    by_n = [size(0.1, 0.05, n) for n in (20, 200, 2000)]
    assert all(a > b for a, b in zip(by_eps, by_eps[1:])), by_eps
    assert all(a > b for a, b in zip(by_delta, by_delta[1:])), by_delta
    assert all(a <= b for a, b in zip(by_n, by_n[1:])), by_n


def test_group_testing_beats_permutation_for_large_n():
    # O(N (log N)^2) tests against N * O(N log N) evaluations
    n = 10_000
    assert group_testing_sample_size(0.1, 0.05, n) < n * permutation_sample_size(0.1, 0.05, n)


def test_stability_bound_formula():
    for c, n in ((1.0, 2), (0.5, 10), (3.0, 1000)):
        assert stability_bound(c, n) == pytest.approx(2 * c * (1 + math.log(n - 1)) / (n - 1))
    bounds = [stability_bound(1.0, n) for n in (10, 100, 1000, 10**6)]
    assert all(a > b for a, b in zip(bounds, bounds[1:])) and bounds[-1] < 1e-4


def test_uniform_division_guarantee_logic():
    g = uniform_division_guarantee(1.0, 100, 0.1)
    assert g.threshold == pytest.approx(0.1 / (2 * math.sqrt(100)))
    assert g.bound == pytest.approx(stability_bound(1.0, 100))
    assert g.holds is False  # 0.113 > 0.005
    assert uniform_division_guarantee(0.0, 100, 0.1).holds is True  # identical values
    # the bound decays like log(N)/N, the threshold like 1/sqrt(N): it holds eventually
    holds = [uniform_division_guarantee(0.1, n, 0.1).holds for n in (10, 100, 10**4, 10**6)]
    assert holds == sorted(holds) and holds[0] is False and holds[-1] is True
    # the decision is exactly bound <= threshold, at the boundary too
    n, eps = 400, 1.0
    c_edge = (eps / (2 * math.sqrt(n))) / (2 * (1 + math.log(n - 1)) / (n - 1))
    assert uniform_division_guarantee(c_edge * (1 - 1e-9), n, eps).holds
    assert not uniform_division_guarantee(c_edge * (1 + 1e-9), n, eps).holds
    # larger epsilon only makes it easier
    flags = [uniform_division_guarantee(0.05, 1000, e).holds for e in (0.01, 0.1, 1.0, 10.0)]
    assert flags == sorted(flags)


@pytest.mark.parametrize("call,error,match", [
    (lambda: permutation_sample_size(0.0, 0.05, 10), ValueError, "epsilon must be > 0"),
    (lambda: permutation_sample_size(0.1, 0.0, 10), ValueError, "delta must be > 0"),
    (lambda: permutation_sample_size(0.1, 1.5, 10), ValueError, "delta must be <= 1"),
    (lambda: permutation_sample_size(0.1, 0.05, 0), ValueError, "n_players must be >= 1"),
    (lambda: permutation_sample_size(0.1, 0.05, 10, utility_range=-1), ValueError, "utility_range"),
    (lambda: group_testing_sample_size(0.1, 0.05, 1), ValueError, "n_players must be >= 2"),
    (lambda: group_testing_sample_size(0.1, 0.05, 10, variant="x"), ValueError, "variant"),
    (lambda: group_testing_q_tot(1), ValueError, "n_players must be >= 2"),
    (lambda: compressive_sample_size(0.1, 0.05, 10, 0), ValueError, "sparsity must be >= 1"),
    (lambda: compressive_sample_size(0.1, 0.05, 10, 2, constant=0), ValueError, "constant must be > 0"),
    (lambda: stability_bound(-1.0, 10), ValueError, "c_stab must be >= 0"),
    (lambda: uniform_division_guarantee(1.0, 10, 0.0), ValueError, "epsilon must be > 0"),
    (lambda: permutation_sample_size("0.1", 0.05, 10), TypeError, "epsilon must be a real number"),
    (lambda: permutation_sample_size(0.1, 0.05, 10.5), TypeError, "n_players must be an integer"),
])
def test_bounds_reject_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
