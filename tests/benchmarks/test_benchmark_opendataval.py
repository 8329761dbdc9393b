"""Cheap checks of ``benchmarks/opendataval_comparison.py`` and its siblings: parsing, AUROC, fit counting, report.

OpenDataVal lives in a virtual environment of its own that CI does not have:
the one end-to-end run skips when its interpreter is absent; the others check,
without it, the script's own logic on small synthetic tasks.
"""

from __future__ import annotations

import argparse
import copy
import os

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from _benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("opendataval_comparison")


@pytest.fixture(scope="module")
def layout():
    return load_benchmark("_opendataval_report")  # the report: detection gaps, time ratios, goals, tables


@pytest.fixture(scope="module")
def definitions():
    return load_benchmark("_opendataval_task")  # the task, methods, budgets and tolerances


@pytest.fixture(scope="module")
def peer():
    return load_benchmark("_opendataval_peer")  # numpy only at import: OpenDataVal is imported inside functions


def _task(n=40, classes=2, seed=0):
    """A small separable task in the layout the peer writes (``noisy``: flipped indices)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    X = rng.normal(size=(n, 3)) + 2.0 * y[:, None]
    y_valid = np.arange(20) % classes
    X_valid = rng.normal(size=(20, 3)) + 2.0 * y_valid[:, None]
    noisy = np.sort(rng.choice(n, n // 5, replace=False))
    y_noisy = y.copy()
    y_noisy[noisy] = (y[noisy] + 1) % classes
    return {"x_train": X, "y_train": y_noisy, "x_valid": X_valid, "y_valid": y_valid, "noisy": noisy}


def test_selections_keep_the_order_given_drop_repeats_and_name_the_option(bench):
    assert bench.names("loo, tmc,loo", bench.METHODS, "methods") == ["loo", "tmc"]
    with pytest.raises(argparse.ArgumentTypeError, match="--datasets: expected .*breast_cancer, digits"):
        bench.names("iris", bench.DATASETS, "datasets")
    with pytest.raises(argparse.ArgumentTypeError, match="--methods"):
        bench.names(" , ", bench.METHODS, "methods")
    with pytest.raises(SystemExit):
        bench.parse_arguments(["--seeds", "0"])
    args = bench.parse_arguments(["--quick", "--methods", "knn,oob", "--datasets", "digits"])
    assert args.methods == ["knn", "oob"] and args.datasets == ["digits"]
    assert bench.command_line(args) == ("python benchmarks/opendataval_comparison.py --quick --methods knn,oob "
                                        "--datasets digits")
    assert bench.command_line(bench.parse_arguments([])) == "python benchmarks/opendataval_comparison.py"


def test_peer_budgets_give_every_method_its_parameters(bench):
    budgets = bench.peer_budgets(bench.FULL_BUDGETS)
    for dataset, sizes in bench.FULL_BUDGETS.items():
        assert set(budgets[dataset]) == set(bench.METHODS)
        assert budgets[dataset]["tmc"]["permutations"] == sizes["permutations"]
        assert budgets[dataset]["beta"] == {"permutations": sizes["permutations"], "alpha": 16.0, "beta": 1.0}
        assert budgets[dataset]["oob"]["models"] == sizes["oob_models"]


def test_a_saved_task_loads_with_its_flipped_mask(bench, tmp_path):
    task = _task()
    np.savez(tmp_path / "data_digits_7.npz", **task)
    loaded = bench.load_task(str(tmp_path), "digits", 7)
    np.testing.assert_array_equal(loaded["x_train"], task["x_train"])
    np.testing.assert_array_equal(np.flatnonzero(loaded["flipped"]), task["noisy"])


def test_auroc_of_the_rows_is_scikit_learns_and_identical_values_have_no_gap(bench, layout):
    rng = np.random.default_rng(3)
    rows = []
    for seed in range(3):
        values = rng.integers(0, 5, 30).astype(float)  # ties
        flipped = np.sort(rng.choice(30, 6, replace=False))
        mask = np.zeros(30, dtype=bool)
        mask[flipped] = True
        auroc = bench.detection(values, mask)[0]
        assert auroc == pytest.approx(roc_auc_score(mask, -values), abs=1e-12)
        side = {"values": values.tolist(), "auroc": auroc}
        rows.append({"seed": seed, "flipped": flipped.tolist(), "ours": side, "peer": dict(side)})
    assert layout.detection_gap(rows) == {"gap": 0.0, "se_seeds": 0.0, "se_bootstrap": 0.0, "se": 0.0}


def test_the_peer_counter_counts_calls_of_every_copy(peer):
    class Model:
        def fit(self, X):
            return self

    counter = peer.FitCounter()
    Model.fit = counter._counting(Model.fit, "real_fits")
    model = Model()
    copy.deepcopy(model).fit(1)
    model.fit(2)
    assert (counter.real_fits, counter.wrapper_fits) == (2, 0)
    counter.reset()
    assert counter.real_fits == 0


@pytest.mark.slow  # each runs our estimator a few times
@pytest.mark.parametrize("method", ["banzhaf", "beta", "tmc", "oob", "ame", "cs"])
def test_our_fits_match_the_target_or_one_unit(bench, definitions, method):
    task = _task()
    target = 90
    run = bench.ours_matched(method, task, 0, target)
    tried = [fits for _, fits in run["attempts"]]
    assert abs(run["fits"] - target) == min(abs(fits - target) for fits in tried)  # the closest run is kept
    assert (run["budget"], run["fits"]) in run["attempts"]
    if run["floored"]:  # one permutation or Beta unit costs more than the target
        assert run["fits"] > target
    elif method in ("banzhaf", "oob", "ame"):  # one fit per coalition or bag: the target is met
        assert abs(run["fits"] - target) <= definitions.FIT_TOLERANCE * target
    else:  # permutations, Beta units and class permutations are indivisible: within one unit of N = 40
        assert abs(run["fits"] - target) <= 40
    assert run["values"].shape == (40,) and np.isfinite(run["values"]).all()
    again = bench.ours_matched(method, task, 0, target)
    np.testing.assert_array_equal(again["values"], run["values"])  # same seed, same bits


@pytest.mark.slow
def test_fixed_cost_methods_and_the_report(bench, layout):
    task = _task()
    rows = []
    for method in ("loo", "knn", "banzhaf"):
        for seed in (0, 1):
            mine = bench.ours_matched(method, task, seed, 60)
            flipped = np.zeros(40, dtype=bool)
            flipped[task["noisy"]] = True
            theirs = {"values": np.where(flipped, -1.0, 1.0).tolist(), "seconds": 1.0 + mine["seconds"],
                      "real_fits": 60 if method == "banzhaf" else mine["fits"], "wrapper_fits": 61, "auroc": 1.0}
            rows.append({"dataset": "digits", "seed": seed, "method": method, "flipped": task["noisy"].tolist(),
                         "peer": theirs, "ours": {**mine, "values": mine["values"].tolist(),
                                                  "auroc": bench.detection(mine["values"], flipped)[0]}})
    assert [r["ours"]["fits"] for r in rows[:4]] == [41, 41, 0, 0]  # N + 1 fits, none
    goals = layout.goal_lines(rows, ["digits"], ["loo", "knn", "banzhaf"])
    assert len(goals) == 4 and goals[2].startswith("time digits Banzhaf")  # speed: sampled methods only
    assert all(g.endswith((" OK", " MISS")) for g in goals)
    table = layout.dataset_table(rows, "digits", ["loo", "knn", "banzhaf"], markdown=True)
    assert table.count("\n| ") == 4  # header and three methods


@pytest.mark.slow
def test_end_to_end_knn_against_opendataval(bench, tmp_path):
    python = os.environ.get("OPENDATAVAL_PYTHON", bench.DEFAULT_PEER_PYTHON)
    if not os.path.exists(python):
        pytest.skip("OpenDataVal's virtual environment is absent (see benchmarks/README.md)")
    output = tmp_path / "out.md"
    assert bench.main(["--quick", "--methods", "knn", "--datasets", "breast_cancer", "--peer-python", python,
                       "--output", str(output)]) == 0
    text = output.read_text()
    assert "detection breast_cancer KNN-Shapley (K = 10)" in text and "OpenDataVal 1.3.0" in text


def test_time_is_compared_per_real_fit_and_undefined_without_peer_fits(layout):
    def runs(peer_fits, my_fits):
        return [{"peer": {"seconds": 20.0, "real_fits": peer_fits}, "ours": {"seconds": 1.0, "fits": my_fits}}]

    assert layout.time_ratios(runs(100, 100)) == (20.0, 20.0)
    assert layout.time_ratios(runs(100, 50)) == (20.0, 10.0)  # ours made half the fits: half the credit
    assert layout.time_goal("digits", "tmc", runs(100, 50)).endswith("(goal >= 10x per fit) OK")
    wall, per_fit = layout.time_ratios(runs(0, 300))
    assert wall == 20.0 and np.isnan(per_fit)
    assert "UNDEFINED" in layout.time_goal("digits", "tmc", runs(0, 300))
    assert layout.time_goal("digits", "tmc", runs(0, 300)).endswith(" MISS")
