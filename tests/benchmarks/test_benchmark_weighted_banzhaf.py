"""The weighted Banzhaf benchmark: its noisy utility is a function of the coalition, and its tables run small."""

from __future__ import annotations

import numpy as np
import pytest

from _benchmark_scripts import load_benchmark

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


class Additive:
    n_players = 12

    def evaluate(self, masks):
        return np.asarray(masks, dtype=float) @ np.arange(1.0, 13.0)


def test_the_noisy_utility_is_a_function_of_the_coalition_with_its_spread():
    bench = load_benchmark("weighted_banzhaf")
    game = bench.NoisyUtility(Additive(), sigma=0.1, seed=3)
    masks = np.random.default_rng(0).random((4_000, 12)) < 0.5
    whole = game.evaluate(masks)
    in_pieces = np.concatenate([game.evaluate(masks[2_000:]), game.evaluate(masks[:2_000])])
    np.testing.assert_array_equal(whole, np.roll(in_pieces, 2_000))  # any grouping, any order: the same noise
    noise = whole - Additive().evaluate(masks)
    distinct = np.unique(np.packbits(masks, axis=1), axis=0, return_index=True)[1]
    assert 0.09 < noise[distinct].std() < 0.11 and abs(noise[distinct].mean()) < 0.01
    other_seed = bench.NoisyUtility(Additive(), sigma=0.1, seed=4).evaluate(masks)
    assert not np.array_equal(whole, other_seed)


def test_the_tables_cover_every_weight_and_column(monkeypatch):
    bench = load_benchmark("weighted_banzhaf")
    monkeypatch.setattr(bench, "WEIGHTS", (0.3, 0.5))
    small = bench.logistic_task("breast_cancer", 40, 200)
    lines = bench.auroc_table(small, {"5 N": (5, 0.0), "noisy": (5, 0.05)}, range(2))
    assert lines[0] == "| weight | 5 N | noisy |"
    assert [line.split(" | ")[0] for line in lines if line.startswith("| 0.")] == ["| 0.3", "| 0.5", "| 0.3"]
    assert sum(line.startswith("| Shapley (antithetic permutation) |") for line in lines) == 2
    assert any(line.startswith("| random values |") for line in lines)
    stability = bench.stability_table(range(2), 5, small)
    assert len(stability) == 4 and all(" ± " in line for line in stability[2:])


def test_each_other_task_gets_its_table_and_a_summary_row(monkeypatch):
    """Section 4: KNN on both data sets, logistic regression on digits, the MLP; each run is computed once."""
    bench = load_benchmark("weighted_banzhaf")
    monkeypatch.setattr(bench, "WEIGHTS", (0.1, 0.5))
    tasks = [(bench.knn_task("digits", 40, 40), (5, 20)), (bench.logistic_task("digits", 40, 40), (20,))]
    lines, summary = bench.task_sections(tasks, range(2))
    assert [line for line in lines if line.startswith("**")] == [
        "**digits 3 vs 8, KNN (K = 10)**, 40 training points.",
        "**digits 3 vs 8, logistic regression**, 40 training points."]
    assert [row.split(" | ")[0] for row in summary] == ["| digits 3 vs 8, KNN (K = 10)",
                                                         "| digits 3 vs 8, logistic regression"]
    assert all(row.count(" ± ") == 6 for row in summary)
    cached = len(bench._VALUES)
    bench.task_sections(tasks[:1], range(2))  # the same runs again: read back, none recomputed
    assert len(bench._VALUES) == cached
    assert [task.label for task, _ in bench.other_tasks(quick=True)] == [
        "breast cancer, KNN (K = 10)", "digits 3 vs 8, KNN (K = 10)", "digits 3 vs 8, logistic regression",
        "breast cancer, MLP (mlp_cleaning's)"]
