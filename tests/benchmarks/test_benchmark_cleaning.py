"""Cheap checks of ``benchmarks/cleaning_comparison.py``: its data, its detection scores, a tiny run.

pyDVL is an optional benchmark dependency that CI does not install: the run
with both libraries skips through ``pytest.importorskip``; the others check,
without pyDVL, the corrupted data set and the scores the benchmark reports.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from _benchmark_scripts import load_benchmark
from shapley_research import ModelUtility

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("cleaning_comparison")


def test_corrupted_data_flips_exactly_the_share_and_standardises_on_the_training_points(bench):
    data = bench.corrupted_breast_cancer(3)
    assert data["X_train"].shape == (300, 30) and data["X_test"].shape == (269, 30)
    np.testing.assert_allclose(data["X_train"].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(data["X_train"].std(axis=0), 1.0, atol=1e-12)
    assert data["flipped"].sum() == 45
    np.testing.assert_array_equal(data["y_train"] != data["y_clean"], data["flipped"])
    again = bench.corrupted_breast_cancer(3)
    np.testing.assert_array_equal(again["flipped"], data["flipped"])
    assert not np.array_equal(bench.corrupted_breast_cancer(4)["flipped"], data["flipped"])


def test_pydvl_default_score_is_our_empty_coalition_utility(bench):
    # pyDVL scores the empty set with its scorer's default: the benchmark sets it to our U(empty)
    data = bench.corrupted_breast_cancer(0, n_train=40)
    game = ModelUtility(bench.make_model(), data["X_train"], data["y_train"], data["X_test"], data["y_test"],
                        metric="accuracy", fast="auto")
    assert game.evaluate(np.zeros((1, 40), dtype=bool))[0] == pytest.approx(bench.prior_accuracy(data), abs=1e-15)


def test_detection_scores_match_a_brute_force(bench):
    rng = np.random.default_rng(0)
    values = rng.integers(0, 6, size=(5, 40)).astype(float)  # many ties
    flipped = np.zeros((5, 40), dtype=bool)
    for row in flipped:
        row[rng.choice(40, rng.integers(1, 12), replace=False)] = True
    auroc, f1 = bench.detection_scores(values, flipped)
    for b in range(5):
        assert auroc[b] == pytest.approx(roc_auc_score(flipped[b], -values[b]), abs=1e-12)
        k = flipped[b].sum()
        flagged = sorted(range(40), key=lambda i: (values[b, i], i))[:k]  # lowest k, ties by index
        hits = flipped[b, flagged].sum()
        precision = recall = hits / k
        assert f1[b] == pytest.approx(2 * precision * recall / (precision + recall) if hits else 0.0, abs=1e-12)
    perfect = np.where(flipped[0], -1.0, 1.0)
    assert bench.detection(perfect, flipped[0]) == (1.0, 1.0)


def test_bootstrap_gaps_vanish_for_identical_values_and_favour_the_better_ranking(bench):
    rng = np.random.default_rng(1)
    flipped = np.zeros(100, dtype=bool)
    flipped[:15] = True
    noise = rng.normal(size=100)
    assert np.all(bench.bootstrap_gaps(noise, noise, flipped, resamples=50) == 0.0)
    good = noise - 3.0 * flipped
    gaps = bench.bootstrap_gaps(good, noise, flipped, resamples=200)
    assert gaps.shape == (200, 2) and gaps[:, 0].mean() > 0.3 and gaps[:, 1].mean() > 0.3


def test_within_noise_and_command_line(bench):
    assert bench.within_noise({"gap": -0.02, "se": 0.011})
    assert not bench.within_noise({"gap": -0.03, "se": 0.01})
    assert bench.command_line(["--quick", "--output", "x.md", "--raw=r.json", "--seeds", "2"]) == (
        "python benchmarks/cleaning_comparison.py --quick --seeds 2")


def test_tiny_run_of_both_libraries(bench):
    pytest.importorskip("pydvl")
    measured = bench.measure([0], budget=150, n_estimators=10, n_train=40)
    runs = measured["runs"]
    assert {(r["method"], r["package"]) for r in runs} == {(m, p) for m in bench.METHODS for p in bench.PACKAGES}
    assert all(r["finite"] and len(r["values"]) == 40 for r in runs)
    fits = {(r["method"], r["package"]): r["fits"] for r in runs}
    for method in bench.SAMPLING:  # pyDVL gets the fits ours made, and stops after the unit that reaches them
        assert 0 < fits[method, "shapley_research"] <= 150 <= fits[method, "shapley_research"] + 40 + 2
        assert fits[method, "pyDVL"] >= fits[method, "shapley_research"]
    assert fits["leave-one-out", "shapley_research"] == fits["leave-one-out", "pyDVL"] == 41
    assert fits["Data-OOB", "shapley_research"] == fits["Data-OOB", "pyDVL"] == 10
    info = {"cpu": "cpu", "cores": 1, "machine": "m", "system": "s", "date": "today",
            "versions": dict.fromkeys(("python", "numpy", "sklearn", "scipy", "pydvl", "shapley_research"), "0"),
            "library": {"commit": "abc", "modified": [], "sources_sha256": "0"}}
    text = bench.report(info, (0.0, 0.0), measured, 1.0, "python benchmarks/cleaning_comparison.py", markdown=True)
    for method in bench.METHODS:
        assert f"detection {method}: " in text
    for method in bench.SAMPLING:
        assert f"wall time {method}: " in text
