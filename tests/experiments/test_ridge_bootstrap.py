"""ridge_stability's bootstrap over the shared permutations: one draw, the U-shape claims and the standard error."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from shapley_research.estimators import random_permutations
from shapley_research.experiments import ridge_stability as rs

LAMS = np.logspace(-2, 2, 9)


@pytest.fixture(scope="module")
def tiny():
    """Eight players: a run of the grid takes a fraction of a second."""
    return rs.load_standardised_diabetes(n_train=8, seed=1)


def efficient_phi(rng: np.random.Generator, T: int = 200, N: int = 10, total: float = 5.0,
                  spread: float = 1.0) -> np.ndarray:
    """Marginal contributions of ``T`` permutations, each row summing to ``total`` (efficient)."""
    phi = rng.normal(size=(T, N)) + spread * np.arange(N)
    return phi - phi.mean(axis=1, keepdims=True) + total / N


# --------------------------------------------------------------------------------------------
# The identity resample reproduces the estimate, bit for bit
# --------------------------------------------------------------------------------------------

def test_identity_resample_reproduces_the_debiased_variance():
    phi = efficient_phi(np.random.default_rng(0))
    stats = rs.variance_statistics(phi, u_total=5.0)
    replicates = rs.resampled_variances(phi, 5.0, np.ones((3, len(phi)), dtype=np.int32))
    assert (replicates == stats["variance"]).all()  # exactly, not approximately


def test_identity_resample_reproduces_the_point_statistic(tiny):
    """Through the experiment's own path: every row's resample of ones is its variance, and the ratio is the claim's."""
    perms = random_permutations(np.random.default_rng(4), 30, tiny.n_players)
    identity = np.ones((rs.MIN_BOOTSTRAP, 30), dtype=np.int32)
    lams = rs.lambda_grid(1e-3, 1e3, 5)
    rows = [rs.value_variance_for_lambda(tiny, lam, "fixed_alpha", perms, counts=identity) for lam in lams]
    variance = np.array([row["variance"] for row in rows])
    replicates = np.stack([row["resampled_variance"] for row in rows], axis=1)
    assert (replicates == variance).all()
    shape = rs.u_shape_statistics(lams, variance)
    per = rs.u_shape_replicates(replicates)
    assert (per["ratio"] == shape["min_end_ratio"]).all() and (per["argmin"] == shape["argmin"]).all()
    interval = rs.u_shape_interval(lams, variance, replicates, np.zeros(len(lams)), 30)
    assert interval["point"] == interval["low"] == interval["high"] == shape["min_end_ratio"]


def test_aligned_resamples_centre_on_the_estimate():
    """E*[D*] is the population variance of the estimates: minus mc_noise, the resamples centre on the estimate."""
    phi = efficient_phi(np.random.default_rng(1), T=100, spread=0.1)  # Monte Carlo noise ~ the values' spread
    stats = rs.variance_statistics(phi, u_total=5.0)
    replicates = rs.resampled_variances(phi, 5.0, rs.resample_counts(0, 4000, len(phi)))
    aligned = replicates - stats["mc_noise"]
    assert abs(aligned.mean() - stats["variance"]) < 4 * aligned.std() / math.sqrt(len(aligned))
    assert stats["mc_noise"] > 4 * aligned.std() / math.sqrt(len(aligned))  # the alignment matters here


# --------------------------------------------------------------------------------------------
# Determinism and the one draw of resamples
# --------------------------------------------------------------------------------------------

def test_resample_counts_are_deterministic_and_whole_resamples():
    counts = rs.resample_counts(7, 50, 30)
    assert counts.shape == (50, 30) and (counts.sum(axis=1) == 30).all() and (counts >= 0).all()
    np.testing.assert_array_equal(counts, rs.resample_counts(7, 50, 30))
    assert not np.array_equal(counts, rs.resample_counts(8, 50, 30))


@pytest.mark.parametrize("T", [2, 3, 40, 4000])
def test_a_prefix_of_the_draw_does_not_depend_on_how_many_rows_are_drawn(T):
    """numpy fills integers(0, T, size=(B, T)) row by row: the first rows are the same for every B."""
    def rng():
        return np.random.default_rng(rs.u_shape_seed(3))

    full = rng().integers(0, T, size=(300, T))
    for B in (1, 7, 40, 200, 299):
        np.testing.assert_array_equal(rng().integers(0, T, size=(B, T)), full[:B])
    counts = rs.resample_counts(3, 300, T)
    for B in (40, 41, 200):
        np.testing.assert_array_equal(rs.resample_counts(3, B, T), counts[:B])
        np.testing.assert_array_equal(rs.draw_counts(rng(), B, T), counts[:B])
        np.testing.assert_array_equal(rs.bootstrap_weights(rng(), B, T), counts[:B])  # same draw, as floats
    assert rs.bootstrap_weights(rng(), 0, T).shape == (0, T)


def test_the_standard_error_recentres_the_u_shape_statistic():
    """One computation of a resample's debiased variance: variance_statistics recentres resampled_variances."""
    phi = efficient_phi(np.random.default_rng(2), T=120)
    counts = rs.resample_counts(5, 300, len(phi))
    stats = rs.variance_statistics(phi, u_total=5.0, weights=counts[:100])
    replicates = rs.resampled_variances(phi, 5.0, counts)[:100]
    np.testing.assert_array_equal(stats["bootstrap"], replicates - replicates.mean() + stats["variance"])
    assert stats["variance_se"] == np.std(stats["bootstrap"], ddof=1)
    floats = rs.variance_statistics(phi, u_total=5.0, weights=counts[:100].astype(float))
    np.testing.assert_array_equal(floats["bootstrap"], stats["bootstrap"])


@pytest.mark.parametrize(("n_se", "n_u"), [(20, 40), (20, 80), (60, 40), (0, 40)])
def test_run_grid_draws_every_resample_once(tiny, n_se, n_u):
    """Both bootstraps are prefixes of one draw, resample_counts(seed, max(n_se, n_u), T), after the permutations."""
    lams = rs.lambda_grid(1e-3, 1e3, 3)
    rows = rs.run_grid(tiny, lams, 40, seed=2, n_bootstrap=n_se, n_bootstrap_u_shape=n_u)
    perms = random_permutations(np.random.default_rng([2, 1]), 40, tiny.n_players)  # drawn as always
    draw = rs.resample_counts(2, max(n_se, n_u), 40)
    for row in rows:
        expected = rs.value_variance_for_lambda(tiny, row["lam"], row["convention"], perms, draw[:n_se], draw[:n_u])
        for key in ("values", "variance", "bootstrap", "variance_se", "variance_lo", "variance_hi", "mc_noise",
                    "resampled_variance"):
            np.testing.assert_array_equal(row[key], expected[key])
        assert len(row["bootstrap"]) == n_se and len(row["resampled_variance"]) == n_u
        assert math.isnan(row["variance_se"]) == (n_se == 0)


def test_each_bootstrap_depends_on_its_own_count_only(tiny):
    lams = rs.lambda_grid(1e-3, 1e3, 3)
    rows = rs.run_grid(tiny, lams, 40, seed=2, n_bootstrap=20, n_bootstrap_u_shape=40)
    more = rs.run_grid(tiny, lams, 40, seed=2, n_bootstrap=20, n_bootstrap_u_shape=80)
    wider = rs.run_grid(tiny, lams, 40, seed=2, n_bootstrap=60, n_bootstrap_u_shape=40)
    for row, other, third in zip(rows, more, wider):
        for key in ("values", "variance", "bootstrap", "variance_se", "variance_lo", "variance_hi"):
            np.testing.assert_array_equal(row[key], other[key])
        np.testing.assert_array_equal(row["resampled_variance"], third["resampled_variance"])
        # the first 40 of 80 resamples are the 40 (a larger product may round differently in the last bit)
        np.testing.assert_allclose(other["resampled_variance"][:40], row["resampled_variance"], rtol=1e-12, atol=0)


@pytest.mark.parametrize("bad", [0, 39, -1])
def test_a_bad_n_bootstrap_is_refused(tiny, bad):
    with pytest.raises(ValueError, match="n_bootstrap"):
        rs.resample_counts(0, bad, 30)
    with pytest.raises(ValueError, match="n_bootstrap_u_shape"):
        rs.run_grid(tiny, [1.0], 10, 0, n_bootstrap_u_shape=bad)
    with pytest.raises(ValueError, match="n_bootstrap"):
        rs.u_shape_interval(LAMS, np.ones(9), np.ones((max(bad, 1), 9)), np.zeros(9), 30)


def test_a_non_integer_n_bootstrap_is_refused():
    with pytest.raises(TypeError, match="n_bootstrap"):
        rs.resample_counts(0, 100.5, 30)
    with pytest.raises(TypeError, match="n_bootstrap_u_shape"):
        rs.run_grid(None, [1.0], 10, 0, n_bootstrap_u_shape=True)


# --------------------------------------------------------------------------------------------
# The rule: holds, does not hold, inconclusive
# --------------------------------------------------------------------------------------------

def noisy(curve: np.ndarray, scale: float, B: int = 400, seed: int = 0) -> np.ndarray:
    """``B`` resamples of a variance curve, each point with Gaussian noise of relative size ``scale``."""
    return curve * (1 + scale * np.random.default_rng(seed).standard_normal((B, curve.size)))


def test_a_deep_u_with_tiny_noise_holds():
    curve = 1e-3 * (1 + np.log10(LAMS) ** 2)  # ends 5x the minimum
    out = rs.u_shape_interval(LAMS, curve, noisy(curve, 0.01), np.zeros(9), 1000)
    assert out["verdict"] is True and out["low"] >= 2 and out["located_fraction"] == 1.0
    assert out["low"] <= out["point"] <= out["high"] and out["point"] == pytest.approx(5.0)
    assert out["argmin_fractions"] == {"1": 1.0} and out["permutations_to_decide"] is None


def test_a_flat_curve_does_not_hold():
    curve = 1e-3 * (1 + 0.05 * np.log10(LAMS) ** 2)  # ends 1.2x the minimum
    out = rs.u_shape_interval(LAMS, curve, noisy(curve, 0.01), np.zeros(9), 1000)
    assert out["verdict"] is False and out["high"] < 2


def test_an_edge_minimum_does_not_hold():
    curve = 1e-3 / LAMS  # falls all the way: the minimum is the right end
    out = rs.u_shape_interval(LAMS, curve, noisy(curve, 0.01), np.zeros(9), 1000)
    assert out["verdict"] is False and out["interior_fraction"] == 0.0 and out["point"] == 1.0


def test_a_ratio_near_the_factor_with_noise_is_inconclusive():
    curve = 1e-3 * (1 + np.log10(LAMS) ** 2 / 4.1)  # ends 2.0x the minimum (at 1: 1e-3)
    out = rs.u_shape_interval(LAMS, curve, noisy(curve, 0.1), np.zeros(9), 1000)
    assert out["verdict"] is None and out["low"] < 2 <= out["high"]
    # the interval narrows as 1/sqrt(T): T (half-width / distance)^2 permutations would decide it
    width = out["point"] - out["low"] if out["point"] > 2 else out["high"] - out["point"]
    assert out["permutations_to_decide"] == math.ceil(1000 * (width / abs(out["point"] - 2)) ** 2)


def test_a_positive_interior_minimum_in_too_few_resamples_is_inconclusive():
    curve = 1e-3 * (1 + np.log10(LAMS) ** 2)
    reps = noisy(curve, 0.01)
    reps[:40, 4] = -1e-4  # 10% of the resamples: a debiased minimum below 0 (ratio +inf)
    out = rs.u_shape_interval(LAMS, curve, reps, np.zeros(9), 1000)
    assert out["low"] >= 2 and out["located_fraction"] == pytest.approx(0.9)
    assert out["nonpositive_minimum_fraction"] == pytest.approx(0.1)
    assert out["verdict"] is None and out["permutations_to_decide"] is None


def test_the_shift_is_subtracted():
    curve = 1e-3 * (1 + np.log10(LAMS) ** 2)
    out = rs.u_shape_interval(LAMS, curve, noisy(curve, 0.0) + 5e-4, np.full(9, 5e-4), 1000)
    assert out["low"] == out["high"] == pytest.approx(5.0)


def test_verdict_and_permutations_to_decide():
    assert rs.u_shape_verdict(2.0, 3.0, 0.95, 0.95) is True
    assert rs.u_shape_verdict(1.99, 3.0, 1.0, 1.0) is None
    assert rs.u_shape_verdict(2.5, 3.0, 0.94, 1.0) is None
    assert rs.u_shape_verdict(1.0, 1.99, 1.0, 1.0) is False
    assert rs.u_shape_verdict(1.0, 5.0, 0.04, 0.04) is False
    assert rs.permutations_to_decide(2.2, 1.9, 2.5, 2.0, 1000) == 2250
    assert rs.permutations_to_decide(1.9, 1.6, 2.3, 2.0, 1000) == 16000
    assert rs.permutations_to_decide(2.0, 1.9, 2.1, 2.0, 1000) is None


# --------------------------------------------------------------------------------------------
# The claims
# --------------------------------------------------------------------------------------------

def grid(curve: np.ndarray, scale: float | None) -> tuple[pd.DataFrame, list[dict]]:
    """A hand-made table and rows: every convention has ``curve``; resamples with noise ``scale`` (None: none)."""
    reps = None if scale is None else noisy(curve, scale)
    records, rows = [], []
    for convention in rs.CONVENTIONS:
        for j, (lam, v) in enumerate(zip(LAMS, curve)):
            records.append({"convention": convention, "lambda": lam, "variance": v, "variance_se": 1e-5,
                            "variance_raw": v, "uniform_error": math.sqrt(10 * v),
                            "uniform_error_debiased": math.sqrt(10 * v), "value_range": 1e-3, "pair_bound": 0.01,
                            "sigma": lam, "beta": lam / 20, "kappa": 7.0, "fits_well": lam < 1, "test_mse": 0.5,
                            "epsilon": 0.1, "guarantee_holds": False, "n_permutations": 1000})
            rows.append({"convention": convention, "lam": lam, "values": np.zeros(10), "bootstrap": np.zeros(0),
                         "variance": v, "mc_noise": 0.0, "n_permutations": 1000,
                         "resampled_variance": np.zeros(0) if reps is None else reps[:, j]})
    return pd.DataFrame.from_records(records), rows


U_CLAIMS = (0, 7, 8)  # the paper's U shape (fixed_alpha), per_coalition's and no_intercept's


@pytest.mark.parametrize(("curve", "scale", "verdict"), [
    (1e-3 * (1 + np.log10(LAMS) ** 2), 0.01, "holds"),
    (1e-3 * (1 + 0.05 * np.log10(LAMS) ** 2), 0.01, "does not hold"),
    (1e-3 * (1 + np.log10(LAMS) ** 2 / 4.1), 0.1, "inconclusive"),
    (1e-3 * (1 + np.log10(LAMS) ** 2), None, "inconclusive"),  # no resamples: nothing decides it
])
def test_u_shape_claims_follow_the_rule(curve, scale, verdict):
    metrics, claims = rs.evaluate_claims(*grid(curve, scale))
    for k in U_CLAIMS:
        assert claims[k].verdict == verdict and claims[k].holds == (verdict == "holds")
        assert claims[k].value == pytest.approx(curve[0] / curve.min())  # the point estimate, as before
        assert "percentile interval" in claims[k].criterion and "inconclusive otherwise" in claims[k].criterion
        if scale is not None:
            entry = metrics["u_shape_bootstrap"][rs.CONVENTIONS[U_CLAIMS.index(k)]]
            assert entry["verdict"] == verdict
            assert f"[{entry['low']:.4g}, {entry['high']:.4g}]" in claims[k].note
    if verdict == "inconclusive":
        assert all("Undecided (inconclusive)" in claims[k].note for k in U_CLAIMS)
    if verdict == "inconclusive" and scale is not None:
        assert "permutations (now 1000) would decide" in claims[0].note
    assert metrics["fixed_alpha"]["min_end_ratio"] == claims[0].value  # the existing metrics keep their values


def test_a_non_positive_minimum_is_a_u_only_inside_the_grid_with_positive_ends():
    """A resample whose end drops to <= 0 has no U: it must not land in the interval's upper tail (ratio +inf)."""
    reps = np.array([[-0.01, 0.5, 1.0, 2.0],   # the minimum, non-positive, at an end: no U
                     [1.0, -0.01, 0.5, 2.0],   # inside the grid, ends positive: a U over a floor at or below 0
                     [-0.02, -0.03, 0.5, 2.0],  # inside, but an end as low: no U
                     [4.0, 1.0, 2.0, 3.0]])     # positive minimum inside: min(4, 3) / 1
    per = rs.u_shape_replicates(reps)
    assert per["ratio"].tolist() == [1.0, math.inf, 1.0, 3.0]
    assert per["located"].tolist() == [False, False, False, True]
    # many end-minimum resamples make the interval reach 1: no longer "holds"
    good = np.tile([4.0, 1.0, 2.0, 4.0], (96, 1))
    edge = np.tile([-0.01, 1.0, 2.0, 4.0], (4, 1))
    lams = np.array([1e-3, 1e-2, 1e-1, 1.0])
    interval = rs.u_shape_interval(lams, good[0], np.vstack([good, edge]), np.zeros(4), 30)
    assert interval["low"] == 1.0 and interval["verdict"] != "holds"
