"""Experiment ``sparsity``: its game, statistics and error curves, and one quick end-to-end run."""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from shapley_research import compressive_shapley, exact_shapley, permutation_shapley
from shapley_research.experiments import sparsity as sp
from shapley_research.games import as_game, prefix_masks


def small_problem(n_train=30, n_test=40, d=4, classes=3, seed=0):
    """Gaussian blobs: a few classes, well separated but overlapping."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 2.0, size=(classes, d))
    y_train = np.arange(n_train) % classes
    y_test = np.arange(n_test) % classes
    X_train = centres[y_train] + rng.normal(size=(n_train, d))
    X_test = centres[y_test] + rng.normal(size=(n_test, d))
    return X_train, y_train, X_test, y_test


# --- the game -------------------------------------------------------------------------------

def test_game_matches_scikit_learn_nearest_centroid():
    from sklearn.neighbors import NearestCentroid

    from shapley_research import ModelUtility

    data = small_problem()
    game = sp.NearestCentroidUtility(*data, batch_size=7)
    reference = ModelUtility(NearestCentroid(), *data)
    rng = np.random.default_rng(1)
    masks = rng.random((60, 30)) < rng.uniform(0.05, 0.9, size=(60, 1))
    masks[0] = False
    masks[1] = True
    masks[2] = np.arange(30) % 3 == 0  # a single class: degenerate, predicts that class
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # sklearn's NearestCentroid on tiny coalitions
        expected = reference.evaluate(masks)
    np.testing.assert_array_equal(game.evaluate(masks), expected)


def test_prefix_path_is_exact():
    game = sp.NearestCentroidUtility(*small_problem(), batch_size=3)
    rng = np.random.default_rng(2)
    perms = np.array([rng.permutation(30) for _ in range(8)])
    prefixes = game.evaluate_prefixes(perms)
    assert prefixes.shape == (8, 30)
    np.testing.assert_array_equal(prefixes.reshape(-1), game.evaluate(prefix_masks(perms)))
    assert game.n_prefix_evaluations == 8 * 30


def test_prefix_path_rejects_bad_permutations():
    game = sp.NearestCentroidUtility(*small_problem())
    with pytest.raises(ValueError):
        game.evaluate_prefixes(np.zeros((2, 30), dtype=int))
    with pytest.raises(ValueError):
        game.evaluate_prefixes(np.arange(29)[None, :])


def test_prefix_cache_serves_repeats_and_keeps_values():
    game = sp.NearestCentroidUtility(*small_problem())
    cache = sp.PrefixCache(game)
    rng = np.random.default_rng(3)
    perms = np.array([rng.permutation(30) for _ in range(5)])
    cache.prefill(perms[:3])
    out = cache.evaluate_prefixes(perms)
    np.testing.assert_array_equal(out, game.evaluate_prefixes(perms))
    assert (cache.misses, cache.hits) == (5, 3)
    np.testing.assert_array_equal(cache.evaluate(np.ones((1, 30), bool)), game.evaluate(np.ones((1, 30), bool)))


def test_replayed_permutations_are_those_compressive_shapley_draws():
    game = sp.NearestCentroidUtility(*small_problem())
    cache = sp.PrefixCache(game)
    cache.prefill(sp.compressive_permutations(seed=11, n_permutations=12, n_players=30, batch_size=4))
    computed = cache.misses
    compressive_shapley(cache, 2 + 12 * 30, seed=11, n_measurements=10, batch_size=4)
    assert cache.misses == computed  # every permutation came from the prefilled cache
    assert cache.hits == 12


# --- sparsity statistic ---------------------------------------------------------------------

def test_sparsity_curve_and_k():
    s = np.array([5.0, -1.0, 3.0, 1.0, 2.0])  # sum 10, l1 12
    curve = sp.sparsity_curve(s)
    np.testing.assert_allclose(curve, [1.2, 0.7, 0.4, 0.2, 0.1, 0.0])
    assert sp.sigma_k(s, 2) == pytest.approx(4.0)
    assert sp.smallest_sparse_k(s, 0.5) == 2
    assert sp.smallest_sparse_k(s, 0.0) == 5


def test_equal_values_need_half_the_entries():
    assert sp.smallest_sparse_k(np.full(1000, 0.3), 0.5) == 500
    spiky = np.r_[np.full(10, 1.0), np.full(990, 0.001)]
    assert sp.smallest_sparse_k(spiky, 0.5) < 10


def test_sparsity_curve_rejects_nonpositive_sum():
    with pytest.raises(ValueError):
        sp.sparsity_curve(np.array([1.0, -2.0]))


# --- error curves and their reading ---------------------------------------------------------

def test_relative_error():
    assert sp.relative_error([1.0, 1.0], [1.0, 1.0]) == 0.0
    assert sp.relative_error([0.0, 2.0], [0.0, 1.0]) == pytest.approx(1.0)


def test_permutations_to_reach_interpolates_and_extrapolates_at_the_monte_carlo_rate():
    grid = np.array([10, 100, 1000])
    errors = 1.0 / np.sqrt(grid)
    assert sp.permutations_to_reach(grid, errors, 1 / np.sqrt(100)) == pytest.approx(100)
    assert sp.permutations_to_reach(grid, errors, 1 / np.sqrt(300)) == pytest.approx(300)
    assert sp.permutations_to_reach(grid, errors, 1.0) == pytest.approx(1.0)     # above the grid
    assert sp.permutations_to_reach(grid, errors, 0.01) == pytest.approx(10000)  # below the grid


def test_derive_seeds_is_deterministic_and_tagged():
    assert sp.derive_seeds(0, "a", 3) == sp.derive_seeds(0, "a", 3)
    assert sp.derive_seeds(0, "a", 3) != sp.derive_seeds(0, "b", 3)
    assert sp.derive_seeds(0, "a", 3) != sp.derive_seeds(1, "a", 3)
    assert len(set(sp.derive_seeds(0, "a", 5))) == 5


@pytest.mark.sampling  # the sampled reference, on a small game
def test_reference_values_converge_to_exact_shapley():
    weights = np.array([0.5, 0.1, 0.2, 0.05, 0.15])
    game = as_game(lambda m: m @ weights + 0.3 * m[:, 0] * m[:, 1], 5, vectorized=True)
    exact = exact_shapley(game).values
    ref = sp.reference_values(game, 400, [1, 2])
    assert ref["n_permutations"] == 400
    assert len(ref["parts"]) == 2
    np.testing.assert_allclose(ref["values"], exact, atol=5 * ref["stderr"].max() + 1e-12)
    assert 0 < ref["relative_stderr"] < 0.2


def test_error_curves_share_permutations_and_baseline_matches_permutation_sampling():
    game = sp.NearestCentroidUtility(*small_problem())
    reference = sp.reference_values(game, 200, [5])["values"]
    errors = sp.error_curves(game, reference, [2, 4], [7, 8], [15, 8], solver="SCS", show_progress=False)
    assert len(errors) == 2 * 2 * 3
    assert set(errors["method"]) == {"baseline", "compressive"}
    assert (errors["relative_error"] > 0).all() and np.isfinite(errors["relative_error"]).all()
    # the baseline of T=4 with seed 7 is plain permutation sampling on the same 4 permutations (batches of 2)
    plain = permutation_shapley(game, 1 + 4 * 30, seed=7, batch_size=2)
    row = errors[(errors["seed"] == 7) & (errors["n_permutations"] == 4) & (errors["method"] == "baseline")]
    assert row["relative_error"].iloc[0] == pytest.approx(sp.relative_error(plain.values, reference))
    summary = sp.summarise_errors(errors)
    assert set(summary["n_seeds"]) == {2}
    table = sp.target_table(summary, 15, 1.0, [0.9, 0.5])
    assert list(table["target_error"]) == [0.9, 0.5]
    assert (table["baseline_permutations"] > 0).all()


def _fake_errors(base, comp, grid=(5, 50, 500), m=500):
    rows = []
    for seed in range(2):
        for t, b, c in zip(grid, base, comp):
            rows.append({"seed_index": seed, "n_permutations": t, "method": "baseline", "n_measurements": 0,
                         "relative_error": b})
            rows.append({"seed_index": seed, "n_permutations": t, "method": "compressive", "n_measurements": m,
                         "relative_error": c})
    return pd.DataFrame(rows)


def _table(base, comp, uniform=1.0, fractions=(0.9, 0.7, 0.5, 0.3)):
    return sp.target_table(sp.summarise_errors(_fake_errors(base, comp)), 500, uniform, fractions)


def test_target_table_reads_needs_below_the_uniform_split():
    # baseline at the Monte Carlo rate: 2 / sqrt(T / 5); compressive 0.8, 0.6, 0.45
    base = [2.0, 2.0 / np.sqrt(10), 2.0 / np.sqrt(100)]
    table = _table(base, [0.8, 0.6, 0.45])
    assert list(table["compressive_reaches"]) == [True, True, True, False]
    t = table.set_index("target_fraction")
    assert t.loc[0.7, "baseline_permutations"] == pytest.approx(5 * (2.0 / 0.7) ** 2)
    assert t.loc[0.7, "compressive_permutations"] == pytest.approx(5 * 10 ** (np.log(0.8 / 0.7) / np.log(0.8 / 0.6)))
    assert t.loc[0.9, "compressive_permutations"] == 5  # met at the smallest T: counted as that T
    assert np.isnan(t.loc[0.3, "compressive_permutations"]) and np.isnan(t.loc[0.3, "sample_ratio"])
    with pytest.raises(ValueError, match="fractions"):
        _table(base, [0.8, 0.6, 0.45], fractions=[1.0])
    with pytest.raises(ValueError, match="uniform_error"):
        _table(base, [0.8, 0.6, 0.45], uniform=0.0)


def test_fewer_permutations_claim_fails_when_compressive_is_worse_than_the_uniform_split():
    # the review's case: compressive (0.87 at T=5) beats the baseline (2.3) only above the uniform split (0.748);
    # below it the baseline is faster
    table = _table([2.3, 0.74, 0.23], [0.87, 0.74, 0.646], uniform=0.748)
    claim = sp.fewer_permutations_claim(table)
    assert not claim.holds and claim.source == "paper" and "Figure 4" in claim.section
    assert len(claim.value) == 1 and claim.value[0] < 1 and "baseline" in claim.note
    # compressive never gets below the largest target at all
    claim = sp.fewer_permutations_claim(_table([2.3, 0.74, 0.23], [0.9, 0.8, 0.76], uniform=0.748))
    assert not claim.holds and claim.value == [] and "reaches no error below" in claim.note


def test_fewer_permutations_claim_holds_when_compressive_is_faster_at_every_reached_target():
    claim = sp.fewer_permutations_claim(_table([2.0, 0.7, 0.2], [0.5, 0.3, 0.25]))
    assert claim.holds and len(claim.value) == 4 and min(claim.value) > 1
    # one reached target where the baseline is faster breaks it
    assert not sp.fewer_permutations_claim(_table([2.0, 0.7, 0.2], [0.5, 0.48, 0.29])).holds


def test_large_sample_claim():
    # superior at the large targets, less so at the small ones: holds
    table = _table([2.0, 0.7, 0.2], [0.5, 0.3, 0.25])
    ratios = list(table.loc[table["compressive_reaches"], "sample_ratio"])
    claim = sp.large_sample_claim(table)
    assert claim.holds and claim.value == pytest.approx(ratios) and ratios[-1] < ratios[0]
    # never superior below the uniform split (the review's case): its premise fails, so outside its scope
    claim = sp.large_sample_claim(_table([2.3, 0.74, 0.23], [0.87, 0.74, 0.646], uniform=0.748))
    assert not claim.holds and claim.verdict == "outside its scope" and "never superior" in claim.note
    claim = sp.large_sample_claim(_table([2.3, 0.74, 0.23], [0.9, 0.8, 0.76], uniform=0.748))  # no target reached
    assert claim.verdict == "outside its scope" and claim.value == []
    # superiority growing with the samples: fails
    claim = sp.large_sample_claim(_table([2.0, 0.7, 0.6], [0.65, 0.4, 0.1]))
    assert claim.value[0] > 1 and not claim.holds and "does not shrink" in claim.note
    assert claim.verdict == "does not hold"  # in scope and refuted
    # one reached target: no trend can be read
    claim = sp.large_sample_claim(_table([2.0, 0.7, 0.2], [0.85, 0.8, 0.75]))
    assert not claim.holds and claim.verdict == "inconclusive"


def test_fewer_permutations_claim_reports_the_other_measurement_counts_without_changing_its_verdict():
    held, failed = _table([2.0, 0.7, 0.2], [0.5, 0.3, 0.25]), _table([2.0, 0.7, 0.2], [0.5, 0.48, 0.29])
    claim = sp.fewer_permutations_claim(failed, {1000: held, 250: failed})
    assert not claim.holds
    assert "M = 250: does not hold" in claim.note and "M = 1000: holds" in claim.note
    assert claim.note.index("M = 250") < claim.note.index("M = 1000")
    assert sp.fewer_permutations_claim(held, {250: failed}).holds


def _seeded_errors(base, comp, grid, noise=0.02, m=500):
    """Errors over three seeds, each method's curve scaled by 1 - noise, 1, 1 + noise (opposite signs)."""
    rows = []
    for seed, k in enumerate((-1.0, 0.0, 1.0)):
        for t, b, c in zip(grid, base, comp):
            rows.append({"seed_index": seed, "n_permutations": t, "method": "baseline", "n_measurements": 0,
                         "relative_error": b * (1 + k * noise)})
            rows.append({"seed_index": seed, "n_permutations": t, "method": "compressive", "n_measurements": m,
                         "relative_error": c * (1 - k * noise)})
    return pd.DataFrame(rows)


# the committed paper run (M = 500): compressive lower only while both are above the uniform split (0.748)
REVIEW_GRID = (5, 10, 20, 50, 500)
REVIEW_BASE, REVIEW_COMP = [2.30, 1.64, 1.14, 0.7407, 0.234], [0.871, 0.817, 0.781, 0.7410, 0.646]


def test_ratio_table_pairs_seeds_and_marks_the_region_above_the_trivial_error():
    ratios = sp.ratio_table(_seeded_errors(REVIEW_BASE, REVIEW_COMP, REVIEW_GRID), 500, 0.748)
    assert list(ratios["n_permutations"]) == list(REVIEW_GRID) and set(ratios["n_seeds"]) == {3}
    assert list(ratios["above_trivial"]) == [True, True, True, False, False]
    np.testing.assert_allclose(ratios["mean_ratio"], np.divide(REVIEW_COMP, REVIEW_BASE))
    row = ratios.iloc[0]
    seed_ratios = [0.871 * (1 + 0.02) / (2.30 * (1 - 0.02)), 0.871 / 2.30, 0.871 * (1 - 0.02) / (2.30 * (1 + 0.02))]
    assert row["seed_ratios"] == pytest.approx(seed_ratios) and row["ratio"] == pytest.approx(np.mean(seed_ratios))
    assert row["ratio_low"] < row["ratio"] < row["ratio_high"]
    with pytest.raises(ValueError, match="M = 250"):
        sp.ratio_table(_seeded_errors(REVIEW_BASE, REVIEW_COMP, REVIEW_GRID), 250, 0.748)


def test_pattern_note_says_where_the_pattern_holds_and_where_it_stops():
    ratios = sp.ratio_table(_seeded_errors(REVIEW_BASE, REVIEW_COMP, REVIEW_GRID), 500, 0.748)
    info = sp.pattern_summary(ratios)
    assert info["compressive_lower_T"] == [5, 10, 20] and info["above_trivial_T"] == [5, 10, 20]
    assert info["baseline_lower_from_T"] == 50 and info["first_T_below_trivial"] == 50 and info["only_above_trivial"]
    note = sp.pattern_note(ratios)
    assert "below the baseline's at T = 5, 10, 20" in note and "from T = 50 on the baseline's" in note
    assert note.endswith("appears only above the trivial error, where the uniform split's error is lower than both.")
    # P2 keeps its criterion (targets below the uniform split): it does not hold, and its note says where it would
    table = _table([2.3, 0.7407, 0.234], [0.871, 0.741, 0.646], uniform=0.748)
    claim = sp.large_sample_claim(table, ratios)
    assert not claim.holds and "never superior" in claim.note and "appears only above the trivial error" in claim.note
    # compressive lower also below the trivial error: said so
    other = sp.ratio_table(_seeded_errors([2.0, 1.0, 0.5], [0.9, 0.6, 0.4], (5, 50, 500)), 500, 0.748)
    assert sp.pattern_summary(other)["baseline_lower_from_T"] is None
    assert "also below the trivial error" in sp.pattern_note(other)


def test_above_trivial_claim_holds_fails_and_is_undecided():
    grid = (5, 10, 20, 50)
    # the committed paper run: lower at every T above the trivial error, the ratio rising 0.38 -> 0.68
    claim = sp.above_trivial_claim(sp.ratio_table(_seeded_errors(REVIEW_BASE, REVIEW_COMP, REVIEW_GRID), 500, 0.748))
    assert claim.holds and claim.source == "reproduction" and claim.verdict == "holds"
    assert claim.value[:3] == pytest.approx(np.divide(REVIEW_COMP[:3], REVIEW_BASE[:3]), rel=1e-3)
    # the constant U(D)/N, compressive's starting point, passes too: set aside, not evidence
    assert claim.by_construction and "uniform split's error over the baseline's is 0.325-0.656" in claim.note
    # compressive higher than the baseline above the trivial error: does not hold
    worse = sp.ratio_table(_seeded_errors([1.0, 0.9, 0.85, 0.5], [1.3, 1.2, 1.1, 0.6], grid), 500, 0.748)
    claim = sp.above_trivial_claim(worse)
    assert not claim.holds and claim.verdict == "does not hold" and "ratio at T = 5" in claim.note
    # lower, but the advantage grows with T: does not hold
    growing = sp.ratio_table(_seeded_errors([2.0, 1.8, 1.7, 0.5], [1.2, 0.95, 0.8, 0.6], grid), 500, 0.748)
    claim = sp.above_trivial_claim(growing)
    assert not claim.holds and claim.verdict == "does not hold" and "rise of the ratio" in claim.note
    # a ratio within noise of 1 at one T: inconclusive, with the seeds that would decide it
    close = sp.ratio_table(_seeded_errors([2.0, 1.5, 1.0, 0.5], [0.8, 0.9, 1.0, 0.6], grid, noise=0.05), 500, 0.748)
    claim = sp.above_trivial_claim(close)
    assert not claim.holds and claim.verdict == "inconclusive" and "ratio at T = 20" in claim.note
    # only one T above the trivial error: no trend to read, outside its scope
    one = sp.ratio_table(_seeded_errors([2.0, 0.7, 0.5, 0.3], [0.8, 0.65, 0.6, 0.55], grid), 500, 0.748)
    claim = sp.above_trivial_claim(one)
    assert not claim.holds and claim.verdict == "outside its scope" and "only 1 grid T lies" in claim.note


def test_dense_nulls_match_mean_and_std_and_are_seeded():
    s = np.random.default_rng(0).gamma(2.0, 1.0, size=300)
    nulls = sp.dense_nulls(s, 5, seed=3)
    assert set(nulls) == {"gaussian", "uniform"}
    for draws in nulls.values():
        assert draws.shape == (5, 300)
        np.testing.assert_allclose(draws.mean(axis=1), s.mean())
        np.testing.assert_allclose(draws.std(axis=1), s.std())
    np.testing.assert_array_equal(sp.dense_nulls(s, 5, seed=3)["uniform"], nulls["uniform"])
    fractions = sp.null_k_fractions(nulls)
    assert all(f.shape == (5,) and ((f > 0) & (f < 0.5)).all() for f in fractions.values())
    with pytest.raises(ValueError, match="values"):
        sp.dense_nulls([1.0], 5, seed=0)


def test_sparsity_claim_fails_for_gaussian_values_and_holds_for_sparse_ones():
    rng = np.random.default_rng(1)
    # Gaussian values with the review's mean and spread: K/N ~ 0.32 < 0.5, yet no sparser than the null
    gaussian = rng.normal(0.744e-3, 0.839e-3, size=1000)
    k = sp.smallest_sparse_k(gaussian) / 1000
    assert k < 0.5
    claim = sp.sparsity_claim(k, sp.null_k_fractions(sp.dense_nulls(gaussian, 200, seed=2)))
    assert not claim.holds and claim.source == "paper" and "Figure 2" in claim.section
    assert "no sparser" in claim.note
    # a few large values on a small dense background
    sparse = np.r_[rng.uniform(5.0, 10.0, 30), rng.uniform(0.0, 0.1, 970)]
    k = sp.smallest_sparse_k(sparse) / 1000
    claim = sp.sparsity_claim(k, sp.null_k_fractions(sp.dense_nulls(sparse, 200, seed=2)))
    assert claim.holds and claim.value[0] == k and claim.value[0] < min(claim.value[1:])
    with pytest.raises(ValueError, match="null_fractions"):
        sp.sparsity_claim(0.3, {})


@pytest.mark.slow  # draws with matplotlib (its first import takes seconds)
def test_plots_draw(tmp_path):
    from shapley_research.experiments import save_figure, setup_matplotlib

    setup_matplotlib()
    import matplotlib.pyplot as plt

    values = np.random.default_rng(0).gamma(2.0, 1e-3, size=200)
    fig = sp.plot_value_distribution(values, nulls=sp.dense_nulls(values, 10, seed=0))
    save_figure(fig, tmp_path, "values", pdf=False)
    summary = sp.summarise_errors(_fake_errors([2.0, 0.7, 0.2], [0.7, 0.6, 0.5]))
    fig = sp.plot_error_curves(summary, {500: sp.target_table(summary, 500, 0.75, [0.9, 0.7])}, 0.75, 0.05)
    save_figure(fig, tmp_path, "errors")
    assert (tmp_path / "values.png").stat().st_size > 0 and (tmp_path / "errors.pdf").stat().st_size > 0
    plt.close("all")


# --- end to end -----------------------------------------------------------------------------

def test_quick_run_end_to_end(quick_run):
    proc, tmp_path = quick_run("sparsity")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = tmp_path / "sparsity"
    metrics = json.loads((out / "metrics.json").read_text())
    claims = metrics["claims"]
    assert len(claims) == 4 and not any(c.get("sanity") for c in claims)  # all four can fail on data
    for entry in claims:
        assert isinstance(entry["holds"], bool) and entry["claim"] and entry["statistic"]["name"]
    assert metrics["profile"] == "quick" and metrics["n_players"] == 200
    assert 0 < metrics["sparsity_k"] < metrics["n_players"]
    assert 0 < metrics["sparsity_k_fraction"] < 1
    assert 0 < metrics["empty_utility"] < metrics["full_utility"] <= 1
    assert metrics["sum_of_values"] == pytest.approx(metrics["full_utility"] - metrics["empty_utility"], abs=1e-9)
    assert 0 < metrics["reference_relative_stderr"] < 0.5
    assert metrics["n_not_optimal"] == 0
    for value in (metrics["uniform_split_error"], metrics["baseline_error_T_min"], metrics["baseline_error_T_max"]):
        assert math.isfinite(value) and value > 0
    assert metrics["baseline_error_T_max"] < metrics["baseline_error_T_min"]
    for stem in ("value_distribution", "approximation_error"):
        assert (out / f"{stem}.png").exists() and (out / f"{stem}.pdf").exists()
    for table in ("values", "approximation_errors", "sample_ratios", "sparsity_curves"):
        assert len(pd.read_csv(out / f"{table}.csv")) > 0
    assert [c["source"] for c in claims] == ["paper"] * 3 + ["reproduction"]
    assert all(c["section"] and c["criterion"] for c in claims[:3]) and claims[3]["criterion"]
    pattern = metrics["pattern_above_trivial"]
    assert set(pattern["above_trivial_T"]) <= set(metrics["permutation_grid"])
    assert pattern["uniform_error"] == pytest.approx(metrics["uniform_split_error"])
    assert len(metrics["compressive"]["M100"]["ratios_by_T"]) == len(metrics["permutation_grid"])
    targets = pd.read_csv(out / "sample_ratios.csv")
    assert (targets["target_error"] < metrics["uniform_split_error"]).all()
    assert set(metrics["null_k_fraction_quantile"]) == {"gaussian", "uniform"}
    values = pd.read_csv(out / "values.csv")
    assert len(values) == 200 and values["value"].sum() == pytest.approx(metrics["sum_of_values"])
