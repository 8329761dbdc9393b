"""The ridge_stability experiment: its functions on small inputs, and one quick run end to end."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import Ridge

from shapley_research import RidgeUtility, exact_shapley, stability_bound
from shapley_research.experiments import ridge_stability as rs
from shapley_research.games import prefix_masks
from shapley_research.estimators import random_permutations


@pytest.fixture(scope="module")
def data():
    return rs.load_standardised_diabetes(n_train=40, seed=3)


@pytest.fixture(scope="module")
def tiny():
    """Eight players: exact Shapley values take 256 coalitions."""
    return rs.load_standardised_diabetes(n_train=8, seed=1)


def test_standardised_split(data):
    assert data.X_train.shape == (40, 10) and data.X_test.shape == (402, 10)
    np.testing.assert_allclose(data.X_train.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(data.X_train.std(axis=0), 1, atol=1e-12)
    assert abs(data.y_train.mean()) < 1e-12 and abs(data.y_train.std() - 1) < 1e-12
    assert data.empty_test_mse == pytest.approx(np.mean(data.y_test**2))
    again = rs.load_standardised_diabetes(n_train=40, seed=3)
    np.testing.assert_array_equal(again.X_test, data.X_test)


def test_lambda_grid():
    grid = rs.lambda_grid(1e-4, 1e4, 25)
    assert grid[0] == pytest.approx(1e-4) and grid[-1] == pytest.approx(1e4)
    np.testing.assert_allclose(np.diff(np.log10(grid)), 1 / 3)
    with pytest.raises(ValueError):
        rs.lambda_grid(1.0, 0.5, 5)


def test_alpha_from_lambda_minimises_the_papers_objective(data):
    """Ridge(alpha = N lambda) zeroes the gradient of (1/N) sum (x^T w + b - y)^2 + lambda ||w||^2."""
    lam = 0.37
    model = Ridge(alpha=rs.alpha_from_lambda(lam, data.n_players)).fit(data.X_train, data.y_train)
    residual = model.predict(data.X_train) - data.y_train
    grad_w = 2 * data.X_train.T @ residual / data.n_players + 2 * lam * model.coef_
    np.testing.assert_allclose(grad_w, 0, atol=1e-10)
    assert abs(residual.mean()) < 1e-12  # unpenalised intercept


@pytest.mark.parametrize("lam", [1e-4, 1.0, 1e3])
def test_coalition_scaled_ridge_fits_alpha_size_times_lambda(data, lam):
    game = rs.CoalitionScaledRidge(data.X_train, data.y_train, data.X_test, data.y_test, lam)
    rng = np.random.default_rng(0)
    for m in (1, 5, 23):
        masks = np.zeros((3, data.n_players), dtype=bool)
        for row in masks:
            row[rng.choice(data.n_players, m, replace=False)] = True
        reference = RidgeUtility(data.X_train, data.y_train, data.X_test, data.y_test, alpha=m * lam).evaluate(masks)
        np.testing.assert_allclose(game.evaluate(masks), reference, rtol=1e-9, atol=1e-10)
    mask = masks[0]
    model = Ridge(alpha=23 * lam).fit(data.X_train[mask], data.y_train[mask])
    assert game(mask) == pytest.approx(-np.mean((model.predict(data.X_test) - data.y_test) ** 2), rel=1e-8)
    assert game(np.zeros(data.n_players, dtype=bool)) == pytest.approx(-data.empty_test_mse)
    perms = random_permutations(rng, 5, data.n_players)
    np.testing.assert_allclose(game.evaluate_prefixes(perms), game.evaluate(prefix_masks(perms)).reshape(5, -1),
                               rtol=1e-8, atol=1e-9)


def test_conventions_share_the_full_model_and_the_empty_set(data):
    full = np.ones((1, data.n_players), dtype=bool)
    empty = np.zeros((1, data.n_players), dtype=bool)
    games = [rs.make_game(data, 0.5, c) for c in rs.CONVENTIONS]
    utilities = [g.evaluate(full)[0] for g in games]
    np.testing.assert_allclose(utilities, utilities[0], rtol=1e-9)
    assert rs.full_model_summary(data, 0.5)["u_full"] == pytest.approx(utilities[0] + data.empty_test_mse)
    for g in games:
        assert g.evaluate(empty)[0] == pytest.approx(-data.empty_test_mse)
    with pytest.raises(ValueError):
        rs.make_game(data, 0.5, "nope")


def test_full_model_summary_sigma(data):
    summary = rs.full_model_summary(data, 2.0)
    model = Ridge(alpha=2.0 * data.n_players).fit(data.X_train, data.y_train)
    r = model.predict(data.X_train) - data.y_train
    assert summary["sigma"] == pytest.approx(np.max(2 * np.abs(r) * np.linalg.norm(data.X_train, axis=1)))
    assert summary["train_mse"] <= summary["test_mse"] * 2
    # more regularisation: worse training fit
    assert rs.full_model_summary(data, 100.0)["train_mse"] > summary["train_mse"] > rs.ols_train_mse(data)


@pytest.mark.parametrize("lam", [1e-3, 0.3, 50.0])
def test_sigma_sup_bound_covers_every_coalition_and_the_stability(data, lam):
    """The rigorous sigma bounds 2|x^T theta_S - y| |x| over coalition models (train and test points), and the
    test loss moves by at most sigma^2 / (2 N lambda) when one point leaves a coalition (no intercept)."""
    bound = rs.sigma_sup_bound(data, lam)
    X = np.vstack([data.X_train, data.X_test])
    y = np.r_[data.y_train, data.y_test]
    assert bound["kappa"] == pytest.approx(np.linalg.norm(X, axis=1).max())
    alpha = rs.alpha_from_lambda(lam, data.n_players)
    rng = np.random.default_rng(0)
    beta = bound["sigma_sup"] ** 2 / (2 * alpha)
    for m in (1, 2, 5, 20, 40):
        S = rng.choice(data.n_players, m, replace=False)
        fit = lambda idx: Ridge(alpha=alpha, fit_intercept=False).fit(data.X_train[idx], data.y_train[idx]).coef_ \
            if len(idx) else np.zeros(X.shape[1])
        theta, theta_minus = fit(S), fit(S[1:])
        assert np.linalg.norm(theta) <= bound["theta_bound"] * (1 + 1e-9)
        assert np.max(2 * np.abs(X @ theta - y) * np.linalg.norm(X, axis=1)) <= bound["sigma_sup"]
        change = np.abs((data.X_test @ theta - data.y_test) ** 2 - (data.X_test @ theta_minus - data.y_test) ** 2)
        assert change.max() <= beta * (1 + 1e-9)
    # the paper's estimate (full model, training points) is a lower bound on the supremum
    assert rs.full_model_summary(data, lam)["sigma"] <= bound["sigma_sup"]
    with pytest.raises(ValueError, match="lam"):
        rs.sigma_sup_bound(data, 0.0)


def test_stability_summary():
    out = rs.stability_summary(sigma=3.0, lam=0.5, n_players=50, epsilon=0.1)
    assert out["c_stab"] == pytest.approx(9.0 / (2 * 0.5))
    assert out["beta"] == pytest.approx(out["c_stab"] / 50)
    assert out["pair_bound"] == pytest.approx(stability_bound(out["c_stab"], 50))
    assert out["error_bound"] == pytest.approx(math.sqrt(50) * 49 / 50 * out["pair_bound"])
    assert out["guarantee_threshold"] == pytest.approx(0.1 / (2 * math.sqrt(50))) and not out["guarantee_holds"]
    assert rs.stability_summary(sigma=1e-3, lam=10.0, n_players=50, epsilon=0.1)["guarantee_holds"]


def test_variance_statistics_is_unbiased_and_efficient():
    rng = np.random.default_rng(0)
    s = rng.normal(size=20)
    s -= s.mean() - 0.1  # values sum to 2.0
    debiased, raw = [], []
    for _ in range(300):
        noise = rng.normal(scale=3.0, size=(50, 20))
        noise -= noise.mean(axis=1, keepdims=True)  # every permutation is efficient
        stats = rs.variance_statistics(s + noise, u_total=2.0)
        debiased.append(stats["variance"])
        raw.append(stats["variance_raw"])
        assert stats["uniform_error"] == pytest.approx(math.sqrt(20 * stats["variance_raw"]))
    truth = s.var()
    assert np.mean(raw) > truth + 0.1  # Monte Carlo noise inflates the raw variance
    assert abs(np.mean(debiased) - truth) < 4 * np.std(debiased) / math.sqrt(300)


def test_variance_bootstrap_is_centred_on_the_estimate():
    rng = np.random.default_rng(1)
    phi = rng.normal(size=(200, 10)) + np.arange(10)
    phi -= phi.mean(axis=1, keepdims=True) - 0.5
    weights = rs.bootstrap_weights(rng, 100, 200)
    assert weights.shape == (100, 200) and (weights.sum(axis=1) == 200).all()
    stats = rs.variance_statistics(phi, u_total=5.0, weights=weights)
    assert np.mean(stats["bootstrap"]) == pytest.approx(stats["variance"])
    assert stats["variance_lo"] < stats["variance"] < stats["variance_hi"]
    assert 0 < stats["variance_se"] < stats["variance"]


def test_permutation_values_match_exact_shapley(tiny):
    perms = random_permutations(np.random.default_rng(5), 3000, tiny.n_players)
    for convention in ("fixed_alpha", "per_coalition"):
        stats = rs.value_variance_for_lambda(tiny, 0.3, convention, perms)
        exact = exact_shapley(rs.make_game(tiny, 0.3, convention)).values
        assert np.sum(stats["values"]) == pytest.approx(stats["u_full"])
        assert np.sum(exact) == pytest.approx(stats["u_full"])
        assert np.all(np.abs(stats["values"] - exact) <= 5 * stats["stderr"] + 1e-12)


def test_u_shape_statistics():
    lams = np.logspace(-2, 2, 9)
    u = 1 + (np.log10(lams) - 0.5) ** 2
    shape = rs.u_shape_statistics(lams, u, factor=2.0)
    assert shape["interior"] and shape["holds"] and shape["argmin"] == 5
    assert shape["spearman_left"] == pytest.approx(-1) and shape["spearman_right"] == pytest.approx(1)
    assert shape["left_ratio"] == pytest.approx(u[0] / u[5])
    assert not rs.u_shape_statistics(lams, u, factor=4.0)["holds"]  # right end only 2.56x the minimum
    monotone = rs.u_shape_statistics(lams, 1 / lams)
    assert not monotone["interior"] and not monotone["holds"] and math.isnan(monotone["spearman_right"])
    negative = u.copy()
    negative[4] = -1.0
    assert not rs.u_shape_statistics(lams, negative)["holds"]
    replicates = np.stack([u, 1 / lams, u * 1.1])
    assert rs.u_shape_fraction(lams, replicates) == pytest.approx(2 / 3)


def test_fits_well_mask():
    np.testing.assert_array_equal(rs.fits_well_mask([1.0, 1.05, 1.2], 1.0, 0.1), [True, True, False])


def test_run_grid_tables_and_claims(tiny):
    lams = rs.lambda_grid(1e-3, 1e3, 5)
    rows = rs.run_grid(tiny, lams, 40, seed=2, n_bootstrap=20)
    assert len(rows) == 5 * len(rs.CONVENTIONS)
    again = rs.run_grid(tiny, lams, 40, seed=2, n_bootstrap=20)
    np.testing.assert_array_equal([r["variance"] for r in rows], [r["variance"] for r in again])
    table = rs.grid_table(rows, tiny, epsilon=0.1, fit_tolerance=0.1)
    assert list(table["convention"].unique()) == list(rs.CONVENTIONS)
    assert set(rs.VARIANCE_COLUMNS) <= set(table.columns) and set(rs.THEOREM5_COLUMNS) <= set(table.columns)
    main = table[table["convention"] == "fixed_alpha"]
    assert main["lambda"].is_monotonic_increasing and main["test_mse"].notna().all()
    # identical full model under every convention
    for _, group in table.groupby("lambda"):
        assert group["u_full"].nunique() == 1 or np.ptp(group["u_full"]) < 1e-9
    values = rs.values_table(rows)
    assert len(values) == len(rows) * tiny.n_players
    assert table["theorem5_applies"].tolist() == (table["convention"] == "no_intercept").tolist()
    np.testing.assert_allclose(table["beta"], table["sigma"] ** 2 / (2 * table["lambda"] * tiny.n_players))
    assert (table["sigma_sup"] >= table["sigma"]).all()
    metrics, claims = rs.evaluate_claims(table, rows)
    assert len(claims) == 9 and all(isinstance(c.holds, bool) for c in claims)
    assert [c.source for c in claims] == ["paper"] * 7 + ["reproduction"] * 2
    assert all(c.section and c.criterion for c in claims[:7])
    assert claims[6].holds  # the identity ||s - U(D)/N|| = sqrt(N Var) holds by efficiency
    # Theorem 5 (138x slack on the paper run) and the identity can fail only through a bug: sanity checks
    assert [c.sanity for c in claims] == [False] * 5 + [True, True] + [False] * 2
    # without an intercept every value tends to 0 as lambda grows: that U-shape check fails by construction
    assert [c.by_construction for c in claims] == [False] * 8 + [True]
    assert metrics["n_lambdas"] == 5 and metrics["fixed_alpha"]["argmin"] in range(5)


def synthetic_grid(world: str, conventions=rs.CONVENTIONS):
    """A hand-made grid table and rows on which every claim holds (``"paper"``) or fails (``"broken"``).

    The rows' bootstrap resamples of the variance (``resampled_variance``) scatter 1% about it, so the
    U-shape claims are decided by the same verdict as the point estimate.
    """
    lams = np.logspace(-2, 2, 9)
    n = 10
    if world == "paper":  # U-shaped variance, sigma and sigma^2/lambda rising, range 10x under the bound
        variance, sigma, range_over_bound, gap = 1e-3 * (1 + np.log10(lams) ** 2), lams, 0.1, 0.0
    else:  # zigzag with an interior minimum: ends 1.25x, Spearman -0.5 / 0.5 on its sides; sigma falls
        variance = 1e-3 * np.array([1.0, 1.2, 0.9, 1.1, 0.8, 1.1, 0.9, 1.2, 1.0])
        sigma, range_over_bound, gap = 1 / lams, 3.0, 1e-3
    records, rows = [], []
    rng = np.random.default_rng(0)
    for convention in conventions:
        for lam, v, s in zip(lams, variance, sigma):
            ratio = range_over_bound if convention == "no_intercept" else 40.0 * lam / lams[-1]
            records.append({"convention": convention, "lambda": lam, "variance": v, "variance_se": 1e-5,
                            "variance_raw": v, "uniform_error": math.sqrt(n * v) + gap,
                            "uniform_error_debiased": math.sqrt(n * v), "value_range": ratio * 0.01,
                            "pair_bound": 0.01, "sigma": s, "beta": s**2 / (2 * lam * n), "kappa": 7.0,
                            "fits_well": lam < 1, "test_mse": 0.5 + 0.01 * abs(math.log10(lam)), "epsilon": 0.1,
                            "guarantee_holds": False, "n_permutations": 100})
            rows.append({"convention": convention, "lam": lam, "values": np.zeros(n), "bootstrap": np.zeros(0),
                         "variance": v, "mc_noise": 1e-6, "n_permutations": 100,  # resamples: 1% noise, aligned
                         "resampled_variance": v + 1e-6 + 1e-5 * rng.standard_normal(rs.MIN_BOOTSTRAP)})
    return pd.DataFrame.from_records(records), rows


def test_claims_hold_on_a_hand_made_paper_world():
    table, rows = synthetic_grid("paper")
    metrics, claims = rs.evaluate_claims(table, rows)
    assert [c.holds for c in claims] == [True] * 9
    theorem5 = claims[5]
    assert theorem5.source == "paper" and "Theorem 5" in theorem5.section and theorem5.value == pytest.approx(0.1)
    # the intercept conventions exceed the formula 40x, yet the theorem is not judged there
    assert metrics["max_range_over_formula_fixed_alpha"] == pytest.approx(40.0)
    assert "not a violation" in theorem5.note and "fixed_alpha" in theorem5.note
    assert metrics["n_bound_violations"] == 0


def test_claims_fail_on_a_hand_made_broken_world():
    table, rows = synthetic_grid("broken")
    metrics, claims = rs.evaluate_claims(table, rows)
    assert [c.holds for c in claims] == [False] * 9
    assert all(c.note for c in claims)  # every failing claim says why
    assert claims[0].statistic.startswith("min(end variance") and claims[0].value == pytest.approx(1.0 / 0.8)
    assert claims[1].value == pytest.approx(-0.5) and claims[2].value == pytest.approx(0.5)
    assert claims[5].value == pytest.approx(3.0) and metrics["n_bound_violations"] == 9
    assert claims[6].value == pytest.approx(1e-3) and "saturates" not in claims[4].note


def test_beta_claim_fails_when_sigma_saturates():
    """The paper's explanation: sigma rises but saturates, so sigma^2 / lambda falls (the diabetes case)."""
    table, rows = synthetic_grid("paper")
    table["sigma"] = 22.0 - 10.0 / (1 + table["lambda"])
    table["beta"] = table["sigma"] ** 2 / (2 * table["lambda"] * 10)
    _, claims = rs.evaluate_claims(table, rows)
    assert claims[3].holds and not claims[4].holds
    assert "saturates" in claims[4].note


def test_theorem5_is_not_judged_without_the_fully_penalised_convention():
    table, rows = synthetic_grid("paper", conventions=("fixed_alpha", "per_coalition"))
    _, claims = rs.evaluate_claims(table, rows)
    assert len(claims) == 8 and not claims[5].holds and "Not checked" in claims[5].note
    assert claims[5].verdict == "outside its scope" and claims[5].sanity


def test_quick_run_end_to_end(quick_run):
    proc, tmp_path = quick_run("ridge_stability")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = tmp_path / "ridge_stability"
    for name in ("ridge_variance", "ridge_theorem5"):
        assert (run_dir / f"{name}.png").stat().st_size > 10_000
        assert (run_dir / f"{name}.pdf").exists()
        table = pd.read_csv(run_dir / f"{name}.csv")
        assert len(table) == 9 * len(rs.CONVENTIONS)
    assert (run_dir / "ridge_values.csv").exists() and (run_dir / "ridge_stability.ipynb").exists()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["profile"] == "quick" and metrics["n_permutations"] == 300
    claims = metrics["claims"]
    assert len(claims) == 9
    for entry in claims:
        assert {"claim", "statistic", "holds", "source", "criterion", "timing"} <= set(entry)
        assert isinstance(entry["holds"], bool) and entry["claim"] and entry["statistic"]["name"]
        assert entry["source"] == "reproduction" or entry["section"]
        assert entry["holds"] or entry.get("note")
    assert [c["source"] for c in claims] == ["paper"] * 7 + ["reproduction"] * 2
    assert [c.get("sanity", False) for c in claims] == [False] * 5 + [True, True] + [False] * 2
    assert [c.get("by_construction", False) for c in claims] == [False] * 8 + [True]
    assert 1e-4 <= metrics["lambda_argmin"] <= 1e4
    assert 0 < metrics["min_variance"] < 1e-2
    assert 0.4 < metrics["best_test_mse"] < 0.7  # standardised target: about half the variance explained
    assert metrics["max_identity_gap"] < 1e-9
    assert 0 < metrics["max_range_over_bound"] <= 1  # Theorem 5 under no_intercept, where it applies
    assert metrics["kappa"] == pytest.approx(7.66, abs=0.01)
