"""The privacy_noise experiment: the Gaussian mechanism, the valuation helpers, and one quick end-to-end run."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad
from scipy.stats import norm

from shapley_research import LogisticRegressionUtility
from shapley_research.experiments import privacy_noise as pn
from shapley_research.experiments import set_blas_threads
from shapley_research.games import as_game


@pytest.fixture(scope="module", autouse=True)
def one_blas_thread():
    """Many tiny fits: one BLAS thread is much faster on a shared machine (as in the notebook)."""
    limiter = set_blas_threads(1)
    yield
    limiter.restore_original_limits()


# --------------------------------------------------------------------------------------------
# The Gaussian mechanism
# --------------------------------------------------------------------------------------------


def hockey_stick_delta(sigma, epsilon, sensitivity):
    """delta(epsilon) = integral of max(0, p(x) - e^eps q(x)) for N(0, sigma^2) vs N(sensitivity, sigma^2).

    An independent numerical check of Balle & Wang's closed form (the worst case of the
    mechanism is one dimensional, along the difference of the two inputs).
    """
    p = norm(0.0, sigma).pdf
    q = norm(sensitivity, sigma).pdf
    # p > e^eps q left of this point
    cut = sensitivity / 2 - epsilon * sigma**2 / sensitivity
    value, _ = quad(lambda x: p(x) - math.exp(epsilon) * q(x), -np.inf, cut, epsabs=1e-13, epsrel=1e-10)
    return value


@pytest.mark.parametrize("sigma,epsilon,sensitivity", [(1.0, 0.5, 1.0), (3.0, 1.0, 2.0), (0.5, 2.0, 1.0),
                                                       (10.0, 3.0, 20.0)])
def test_privacy_profile_matches_numerical_hockey_stick_divergence(sigma, epsilon, sensitivity):
    assert pn.gaussian_privacy_profile(sigma, epsilon, sensitivity) == pytest.approx(
        hockey_stick_delta(sigma, epsilon, sensitivity), rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 3.0, 10.0, 100.0, 1e4])
@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_analytic_sigma_is_the_smallest_noise_meeting_delta(epsilon, delta):
    sigma = pn.analytic_gaussian_sigma(epsilon, delta, 20.0)
    assert pn.gaussian_privacy_profile(sigma, epsilon, 20.0) == pytest.approx(delta, rel=1e-8)
    assert pn.gaussian_privacy_profile(sigma * 0.999, epsilon, 20.0) > delta  # less noise breaks the guarantee


def test_analytic_sigma_scales_with_sensitivity_and_falls_with_epsilon():
    a = pn.analytic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert pn.analytic_gaussian_sigma(1.0, 1e-5, 7.0) == pytest.approx(7 * a, rel=1e-10)
    sigmas = [pn.analytic_gaussian_sigma(e, 1e-5, 1.0) for e in (0.1, 1, 10, 100, 1000)]
    assert all(np.diff(sigmas) < 0)
    assert pn.analytic_gaussian_sigma(math.inf, 1e-5, 1.0) == 0.0


@pytest.mark.parametrize("epsilon", [0.05, 0.3, 0.9])
def test_classic_calibration_formula_and_analytic_never_larger(epsilon):
    classic = pn.classic_gaussian_sigma(epsilon, 1e-5, 3.0)
    assert classic == pytest.approx(3.0 * math.sqrt(2 * math.log(1.25e5)) / epsilon)
    assert pn.analytic_gaussian_sigma(epsilon, 1e-5, 3.0) <= classic
    assert pn.gaussian_privacy_profile(classic, epsilon, 3.0) <= 1e-5  # the classic sigma is also private


def test_sensitivity_is_twice_the_clip_norm_capped_by_the_pixel_cube():
    assert pn.l2_sensitivity(10.0, 784) == 20.0
    assert pn.l2_sensitivity(20.0, 784) == pytest.approx(28.0)
    assert pn.l2_sensitivity(1.0, 4, pixel_max=0.25) == pytest.approx(0.5)


def test_clip_l2_scales_only_long_rows_down_to_the_clip_norm():
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    out = pn.clip_l2(X, 1.0)
    assert np.allclose(np.linalg.norm(out, axis=1), [1.0, 0.5, 0.0])
    assert np.allclose(out[0], [0.6, 0.8]) and np.array_equal(out[1:], X[1:])


def test_privatized_noise_has_the_calibrated_std_and_clipped_mean():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(200, 784))  # norms about 16 > C: every row is clipped
    out, sigma = pn.privatize_images(X, 30.0, 1e-5, 10.0, 1, clamp=False)
    assert sigma == pytest.approx(pn.analytic_gaussian_sigma(30.0, 1e-5, 20.0))
    noise = out - pn.clip_l2(X, 10.0)
    assert noise.std() == pytest.approx(sigma, rel=0.01)  # 156,800 draws: relative error of the std ~ 0.2%
    assert abs(noise.mean()) < 4 * sigma / math.sqrt(noise.size)


def test_privatize_clamps_and_is_reproducible_with_common_noise():
    X = np.random.default_rng(1).uniform(0, 1, size=(5, 16))
    a, sa = pn.privatize_images(X, 10.0, 1e-5, 2.0, 7)
    b, _ = pn.privatize_images(X, 10.0, 1e-5, 2.0, np.random.default_rng(7))
    c, _ = pn.privatize_images(X, 10.0, 1e-5, 2.0, 8)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.min() >= 0.0 and a.max() <= 1.0
    # the same seed draws the same standard normals at every epsilon: only the scale changes
    lo, s_lo = pn.privatize_images(X, 10.0, 1e-5, 2.0, 7, clamp=False)
    hi, s_hi = pn.privatize_images(X, 1000.0, 1e-5, 2.0, 7, clamp=False)
    base = pn.clip_l2(X, 2.0)
    assert np.allclose((lo - base) / s_lo, (hi - base) / s_hi)
    free, s_free = pn.privatize_images(X, math.inf, 1e-5, 2.0, 7)
    assert s_free == 0.0 and np.allclose(free, base)


@pytest.mark.parametrize("kwargs,error", [
    ({"epsilon": 0.0}, ValueError), ({"epsilon": -1.0}, ValueError), ({"epsilon": float("nan")}, ValueError),
    ({"epsilon": "1"}, TypeError), ({"delta": 0.0}, ValueError), ({"delta": 1.0}, ValueError),
    ({"delta": -1e-5}, ValueError), ({"clip_norm": 0.0}, ValueError), ({"X": [[0.5, 1.5]]}, ValueError),
    ({"X": [[-0.1, 0.5]]}, ValueError), ({"X": [[np.nan, 0.5]]}, ValueError), ({"X": [0.1, 0.2]}, ValueError),
])
def test_privatize_rejects_bad_input(kwargs, error):
    args = {"X": [[0.1, 0.2]], "epsilon": 1.0, "delta": 1e-5, "clip_norm": 1.0, "rng": 0} | kwargs
    with pytest.raises(error):
        pn.privatize_images(**args)


def test_classic_calibration_refuses_epsilon_of_one_or_more():
    with pytest.raises(ValueError, match="epsilon < 1"):
        pn.classic_gaussian_sigma(1.0, 1e-5, 1.0)


# --------------------------------------------------------------------------------------------
# Halves and valuation
# --------------------------------------------------------------------------------------------

def test_split_halves_balances_every_class_and_is_seeded():
    y = np.repeat(np.arange(5), [4, 5, 6, 2, 3])
    noisy = pn.split_halves(y, 3)
    assert noisy.sum() == len(y) // 2
    for c in range(5):
        k = (y == c).sum()
        assert noisy[y == c].sum() in (k // 2, (k + 1) // 2)
    assert np.array_equal(noisy, pn.split_halves(y, 3))


def test_two_half_values_is_the_two_player_shapley_value():
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    game = as_game(lambda m: np.sqrt(m.astype(float) @ weights), 4, vectorized=True)  # not additive
    noisy = np.array([False, True, False, True])
    out = pn.two_half_values(game, noisy)
    u_c, u_n, u_all = math.sqrt(4.0), math.sqrt(6.0), math.sqrt(10.0)
    assert out["sv_noisy"] == pytest.approx(0.5 * (u_n + u_all - u_c))
    assert out["sv_clean"] + out["sv_noisy"] == pytest.approx(u_all)
    assert (out["u_empty"], out["u_clean"], out["u_noisy"]) == pytest.approx((0.0, u_c, u_n))


def test_permutation_group_values_on_an_additive_game_are_exact():
    weights = np.array([0.5, -1.0, 2.0, 0.25, 1.0])
    game = as_game(lambda m: m.astype(float) @ weights, 5, vectorized=True)
    groups = np.array([[True, True, False, False, False], [False, False, True, True, True]])
    out = pn.permutation_group_values(game, groups, 7, seed=0, batch_size=3)
    assert np.allclose(out["values"], weights) and np.allclose(out["stderr"], 0.0)
    assert np.allclose(out["group_sums"], [-0.5, 3.25]) and np.allclose(out["group_stderr"], 0.0)
    assert out["group_sums_per_permutation"].shape == (7, 2)


def test_permutation_group_standard_error_uses_per_permutation_sums():
    # U(S) = 1 if {0, 1} subset of S: players 0 and 1 share the value 1/2 each, perfectly anticorrelated per draw
    game = as_game(lambda m: (m[:, 0] & m[:, 1]).astype(float), 3, vectorized=True)
    out = pn.permutation_group_values(game, np.array([[True, True, False]]), 50, seed=1)
    assert out["group_sums"][0] == pytest.approx(1.0) and out["group_stderr"][0] == pytest.approx(0.0)
    assert (out["stderr"][:2] > 0).all()


def small_levels(seed=0):
    return pn.run_privacy_noise(epsilons=[1, 1000], delta=1e-5, clip_norm=10.0, clamp=True, n_train=20,
                                n_test=60, n_public=60, n_components=8, logistic_C=1.0, n_permutations=3, seed=seed)


@pytest.fixture(scope="module")
def small_run():
    return small_levels()


@pytest.fixture(scope="module")
def small_data():
    return pn.load_privacy_data(20, 60, 60, 5)


@pytest.mark.slow  # over a second
def test_run_privacy_noise_tables_are_tidy_and_efficient(small_run):
    levels, points, info = small_run
    assert list(levels["epsilon"].unique()) == [1.0, 1000.0, math.inf]
    assert len(levels) == 6 and len(points) == 3 * 20
    assert info["n_noisy"] == info["n_clean"] == 10 and info["sensitivity"] == 20.0
    by_level = levels.groupby("epsilon")
    # efficiency: the two-player values add up to U(all) - U(empty) exactly; the permutation sums up to the
    # one-pass path's approximation of U(all) (its last prefix), within a few test points of accuracy
    gain = by_level["accuracy_all"].first() - by_level["accuracy_empty"].first()
    assert np.allclose(by_level["two_player_sv"].sum(), gain)
    assert np.allclose(by_level["sv_sum"].sum(), gain, atol=0.05)
    assert np.allclose(points.groupby(["epsilon", "half"])["sv"].sum().to_numpy(),
                       levels.sort_values(["epsilon", "half"])["sv_sum"].to_numpy())
    sigmas = by_level["sigma"].first()
    assert sigmas[1.0] > sigmas[1000.0] > sigmas[math.inf] == 0.0


@pytest.mark.slow  # over a second
def test_value_privacy_level_is_reproducible_and_levels_share_the_noise(small_data):
    noisy = pn.split_halves(small_data["y_train"], 0)
    proj = pn.fit_projection(small_data["X_public"], 8)
    options = dict(delta=1e-5, clip_norm=10.0, clamp=True, logistic_C=1.0, n_permutations=3, noise_seed=4,
                   permutation_seed=5)
    a = pn.value_privacy_level(small_data, proj, noisy, 30.0, **options)
    b = pn.value_privacy_level(small_data, proj, noisy, 30.0, **options)
    c = pn.value_privacy_level(small_data, proj, noisy, 30.0, **(options | {"permutation_seed": 6}))
    assert np.array_equal(a["perm"]["values"], b["perm"]["values"]) and a["two"] == b["two"]
    assert not np.array_equal(a["perm"]["values"], c["perm"]["values"]) and a["two"] == c["two"]
    assert a["sigma"] == pytest.approx(pn.analytic_gaussian_sigma(30.0, 1e-5, 20.0))


def synthetic_levels(noisy_sums, accuracy_all, se=0.05):
    """A hand-made ``levels`` table: epsilon 1, 10, 100, 1000 (sigma 10, 3, 1, 0.3) and the reference.

    ``noisy_sums`` and ``accuracy_all`` are given from the most to the least noise (five entries, the last
    for the noise-free reference); halves of 10 points each, U(empty) = 0.1, the clean half gets the rest.
    """
    rows = []
    for eps, sigma, value, acc in zip((1, 10, 100, 1000, math.inf), (10.0, 3.0, 1.0, 0.3, 0.0), noisy_sums,
                                      accuracy_all):
        common = {"epsilon": eps, "sigma": sigma, "reference": math.isinf(eps), "sv_sum_se": se, "n_points": 10,
                  "accuracy_all": acc, "accuracy_empty": 0.1}
        rows.append(common | {"half": "noisy", "sv_sum": value, "two_player_sv": value / 2})
        rows.append(common | {"half": "clean", "sv_sum": acc - 0.1 - value, "two_player_sv": 0.25})
    return pd.DataFrame(rows)


def test_privacy_summary_on_a_synthetic_table():
    levels = synthetic_levels((-0.2, 0.0, 0.1, 0.3, 0.31), (0.61, 0.6, 0.6, 0.6, 0.6))
    out = pn.privacy_summary(levels)
    assert out["spearman_sigma_vs_noisy_sum"] == pytest.approx(-1.0)
    assert out["noisy_sum_least_noise"] == 0.3 and out["noisy_sum_most_noise"] == -0.2  # reference excluded
    assert out["drop"] == pytest.approx(0.5) and out["drop_combined_se"] == pytest.approx(0.05 * math.sqrt(2))
    # the uniform split gives the noisy half 10/20 of U(D) - U(empty): 0.25 at the least noise, 0.255 at the most
    assert out["uniform_drop"] == pytest.approx(-0.005) and out["excess_drop"] == pytest.approx(0.505)
    assert out["monotone_holds"] and out["drop_holds"] and out["two_player_holds"] and out["excess_drop_holds"]
    assert out["prefix_path_efficiency_gap_max"] == pytest.approx(0.0)


def _verdicts(levels):
    from shapley_research.experiments import validate_metrics

    claims, summary = pn.privacy_claims(levels, spearman_threshold=-0.8, excess_drop_min_se=2.0)
    validate_metrics({"claims": [c.to_dict() for c in claims]})
    assert [c.source for c in claims] == ["paper", "reproduction"]
    assert "fig:stable_noise" in claims[0].section and not any(c.timing for c in claims)
    assert "one draw of the data" in claims[0].criterion  # the SE is Monte Carlo precision, not data variation
    assert claims[0].value == {"spearman": summary["spearman_sigma_vs_noisy_sum"],
                               "excess_drop_in_se": summary["excess_drop_in_se"]}
    return claims, [c.holds for c in claims]


def test_privacy_claims_hold_when_the_noisy_half_loses_its_value():
    claims, verdicts = _verdicts(synthetic_levels((-0.2, 0.0, 0.1, 0.3, 0.31), (0.61, 0.6, 0.6, 0.6, 0.6)))
    assert verdicts == [True, True]
    assert "uniform split" in claims[0].note and "Cause" not in claims[0].note


def test_privacy_claims_fail_when_the_value_rises_with_the_noise():
    claims, verdicts = _verdicts(synthetic_levels((0.3, 0.1, 0.0, -0.2, -0.2), (0.6, 0.6, 0.6, 0.6, 0.6)))
    assert verdicts == [False, False]
    assert all("Cause of the miss" in c.note for c in claims)
    assert "the Spearman part fails: it rises by 0.2 from sigma = 0.3 to 1" in claims[0].note
    assert "the baseline comparison fails: the SV lowers the noisy half no more" in claims[0].note


def test_paper_claim_fails_on_the_spearman_alone():
    # the noisy half loses 0.5 (7 SE beyond its uniform share) from the least to the most noise, but not
    # monotonically: Spearman -0.4
    claims, verdicts = _verdicts(synthetic_levels((-0.2, 0.35, 0.0, 0.3, 0.31), (0.61, 0.6, 0.6, 0.6, 0.6)))
    assert verdicts[0] is False
    assert claims[0].value["spearman"] == pytest.approx(-0.4) and claims[0].value["excess_drop_in_se"] > 7
    assert "the Spearman part fails" in claims[0].note and "baseline comparison fails" not in claims[0].note


@pytest.mark.parametrize("case", ["uniform share", "within the error"])
def test_paper_claim_fails_when_the_sv_drop_does_not_beat_the_uniform_split(case):
    if case == "uniform share":
        # the SV of the noisy half only follows U(D) down (exactly its uniform share): Spearman -1, no excess
        acc = (0.3, 0.4, 0.5, 0.6, 0.6)
        levels, cause = synthetic_levels([0.5 * (a - 0.1) for a in acc], acc), "no more than the uniform split"
    else:
        # the SV falls monotonically and beyond its uniform share, but by 1.8 SE only
        levels = synthetic_levels((-0.2, 0.0, 0.1, 0.3, 0.31), (0.61, 0.6, 0.6, 0.6, 0.6), se=0.2)
        cause = "within the Monte Carlo error"
    claims, verdicts = _verdicts(levels)
    assert verdicts[0] is False
    assert claims[0].value["spearman"] == pytest.approx(-1.0) and claims[0].value["excess_drop_in_se"] < 2
    assert f"the baseline comparison fails: the {'SV lowers' if case == 'uniform share' else 'excess'}" in \
        claims[0].note and cause in claims[0].note and "Spearman part fails" not in claims[0].note
    assert pn.privacy_summary(levels)["monotone_holds"]


def test_two_player_check_fails_when_it_only_follows_the_uniform_split_down():
    # the two-player SV of the noisy half falls with U(D) (Spearman -1) but only as fast as half of U(D) - U(empty)
    acc = (0.3, 0.4, 0.5, 0.6, 0.6)
    levels = synthetic_levels([0.5 * (a - 0.1) for a in acc], acc)
    levels.loc[levels["half"] == "noisy", "two_player_sv"] = (levels["accuracy_all"] - 0.1) / 2
    claims, verdicts = _verdicts(levels)
    summary = pn.privacy_summary(levels)
    assert summary["two_player_holds"] and not summary["two_player_excess_holds"]
    assert verdicts[1] is False and claims[1].value["spearman"] == pytest.approx(-1.0)
    assert claims[1].value["excess_drop"] == pytest.approx(0.0)
    assert "the baseline comparison fails: the two-player SV drops no more than 0.01 beyond the uniform share" in \
        claims[1].note
    assert "Spearman part fails" not in claims[1].note
    noisy = levels["half"] == "noisy"
    levels.loc[noisy, "two_player_sv"] += np.array([-0.005, 0, 0, 0, 0])  # 0.005 more: within one point of accuracy
    assert _verdicts(levels)[1][1] is False
    levels.loc[noisy, "two_player_sv"] += np.array([-0.095, 0, 0, 0, 0])  # 0.1 more
    assert _verdicts(levels)[1][1] is True


@pytest.mark.slow  # over a second
def test_learner_utility_is_accuracy_on_clean_test_images(small_run, small_data):
    levels, _, _ = small_run
    assert ((levels["accuracy_all"] >= 0) & (levels["accuracy_all"] <= 1)).all()
    data = small_data
    assert data["X_train"].shape == (20, 784) and data["X_public"].shape == (60, 784)
    assert 0.0 <= data["X_test"].min() and data["X_test"].max() <= 1.0
    proj = pn.fit_projection(data["X_public"], 8)
    game = LogisticRegressionUtility(proj.transform(data["X_train"]), data["y_train"],
                                     proj.transform(data["X_test"]), data["y_test"], "accuracy")
    assert 0.0 < game(list(range(20))) <= 1.0


# --------------------------------------------------------------------------------------------
# End to end
# --------------------------------------------------------------------------------------------

def test_quick_profile_end_to_end(quick_run):
    proc, tmp_path = quick_run("privacy_noise")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = tmp_path / "privacy_noise"
    metrics = json.loads((out / "metrics.json").read_text())
    assert len(metrics["claims"]) == 3
    assert [entry["source"] for entry in metrics["claims"]] == ["paper", "reproduction", "reproduction"]
    for entry in metrics["claims"]:
        assert isinstance(entry["holds"], bool) and entry["claim"] and entry["statistic"]["name"]
        assert entry["criterion"] and entry["timing"] is False
        assert entry["holds"] or entry["verdict"] == "inconclusive" or "Cause of the miss" in entry["note"]
    paper, two_player, replication = (entry["statistic"]["value"] for entry in metrics["claims"])
    assert paper == {"spearman": metrics["spearman_sigma_vs_noisy_sum"],
                     "excess_drop_in_se": metrics["excess_drop_in_se"]}
    assert metrics["claims"][0]["holds"] == (metrics["monotone_holds"] and metrics["excess_drop_holds"])
    assert all(math.isfinite(v) for v in two_player.values())
    assert metrics["claims"][1]["holds"] == (metrics["two_player_holds"] and metrics["two_player_excess_holds"])
    assert math.isfinite(metrics["uniform_drop"]) and math.isfinite(metrics["excess_drop_in_se"])
    assert -1.0 <= metrics["spearman_sigma_vs_noisy_sum"] <= 1.0
    assert len(metrics["sigma"]) == len(metrics["epsilon"]) == 9 and math.isfinite(metrics["reference_noisy_sv_sum"])
    assert np.all(np.diff(metrics["sigma"]) < 0) and metrics["sensitivity"] == 20.0
    assert all(math.isfinite(v) for v in metrics["noisy_sv_sum"] + metrics["noisy_sv_sum_se"])
    for name in ("privacy_value_vs_epsilon.png", "privacy_value_vs_epsilon.pdf", "privacy_point_values.png",
                 "privacy_point_values.pdf", "privacy_values.csv", "point_values.csv", "privacy_noise.ipynb",
                 "privacy_replication.png", "privacy_replication.pdf", "privacy_replication.csv"):
        assert (out / name).stat().st_size > 0, name
    table = pd.read_csv(out / "privacy_values.csv")
    assert set(table["half"]) == {"clean", "noisy"} and len(table) == 2 * 10
    # the replication over data draws: the main draw (seed 0) and the quick profile's replication seeds
    draws = pd.read_csv(out / "privacy_replication.csv")
    assert list(draws.columns) == list(pn.DRAW_COLUMNS) and list(draws["seed"]) == [0, 1, 2]
    assert draws.loc[0, "excess_drop"] == pytest.approx(metrics["excess_drop"])
    assert metrics["replication"]["seeds"] == [0, 1, 2] and math.isfinite(replication)
    assert replication == pytest.approx(min(metrics["replication"]["excess_drop_mean"],
                                            metrics["replication"]["two_player_excess_mean"]))
    assert not (out / "cache").exists()  # the finished draws' cache is removed at the end
