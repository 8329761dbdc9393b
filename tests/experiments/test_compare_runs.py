"""``compare_runs`` finds every difference but measured times, and only those."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from shapley_research.cli import main
from shapley_research.experiments import compare_runs


@pytest.fixture
def run(tmp_path):
    first = tmp_path / "first"
    first.mkdir()
    metrics = {"n": 3, "error": 0.25, "fit_seconds": 1.5, "missing": float("nan"),
               "claims": [{"claim": "c", "statistic": 1.0, "holds": True, "source": "paper",
                           "criterion": "x > 0"}]}
    (first / "metrics.json").write_text(json.dumps(metrics))
    pd.DataFrame({"n": [1, 2], "value": [0.5, 0.25], "seconds": [0.1, 0.2]}).to_csv(first / "t.csv", index=False)
    np.savez(first / "cache.npz", images=np.arange(6.0))
    second = tmp_path / "second"
    shutil.copytree(first, second)
    return first, second


def _edit_metrics(run_dir, **changes):
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics.update(changes)
    (run_dir / "metrics.json").write_text(json.dumps(metrics))


def test_identical_runs_and_runs_differing_in_times_agree(run, capsys):
    first, second = run
    assert compare_runs(first, second) == []
    _edit_metrics(second, fit_seconds=99.0)
    pd.DataFrame({"n": [1, 2], "value": [0.5, 0.25], "seconds": [9, 9]}).to_csv(second / "t.csv", index=False)
    assert compare_runs(first, second) == []
    assert main(["compare", str(first), str(second)]) == 0


def test_a_changed_number_is_found(run):
    first, second = run
    changed = float(np.nextafter(0.25, 1.0))  # one unit in the last place
    _edit_metrics(second, error=changed)
    assert compare_runs(first, second) == [
        f"metrics.json: error: 0.25 against {changed!r} (abs diff 5.55e-17, rel diff 2.22e-16)"]
    assert main(["compare", str(first), str(second)]) == 1


def test_a_changed_table_or_array_or_missing_file_is_found(run):
    first, second = run
    pd.DataFrame({"n": [1, 2], "value": [0.5, 0.3], "seconds": [0.1, 0.2]}).to_csv(second / "t.csv", index=False)
    np.savez(second / "cache.npz", images=np.arange(6.0) + 1)
    (first / "extra.csv").write_text("a\n1\n")
    found = compare_runs(first, second)
    assert found == ["extra.csv: only in the first run",
                     "t.csv: column value: 1 of 2 entries differ, max abs diff 0.05, max rel diff 0.167",
                     "cache.npz:images: 6 of 6 entries differ, max abs diff 1, max rel diff 1"]


def test_a_directory_without_metrics_is_rejected(run, tmp_path):
    with pytest.raises(ValueError, match="second: expected an experiment's output directory"):
        compare_runs(run[0], tmp_path / "first" / "nothing")


def test_the_output_dir_given_to_run_names_its_one_run(run, tmp_path, capsys):
    """``run NAME output_dir=DIR`` writes DIR/NAME: DIR names that run, where it holds one."""
    first, second = run
    (tmp_path / "out_a").mkdir()
    (tmp_path / "out_b").mkdir()
    shutil.move(first, tmp_path / "out_a" / "sparsity")
    shutil.move(second, tmp_path / "out_b" / "sparsity")
    assert compare_runs(tmp_path / "out_a", tmp_path / "out_b") == []
    assert main(["compare", str(tmp_path / "out_a"), str(tmp_path / "out_b" / "sparsity")]) == 0
    assert "agree on every number" in capsys.readouterr().out
    shutil.copytree(tmp_path / "out_b" / "sparsity", tmp_path / "out_b" / "iris_accuracy")
    assert compare_runs(tmp_path / "out_a", tmp_path / "out_b") == []  # the run of the other side's name
    shutil.move(tmp_path / "out_a" / "sparsity", tmp_path / "out_a" / "other")
    with pytest.raises(ValueError, match=r"second: .* It holds several runs; name one: .*iris_accuracy, .*sparsity\."):
        compare_runs(tmp_path / "out_a", tmp_path / "out_b")


def test_runs_of_two_experiments_are_not_compared(run):
    first, second = run
    for folder, name in ((first, "sparsity"), (second, "iris_accuracy")):
        (folder / "run_info.json").write_text(json.dumps({"experiment": name}))
    with pytest.raises(ValueError, match="first is a run of sparsity, second of iris_accuracy"):
        compare_runs(first, second)


def test_every_differing_field_is_sized(run, capsys):
    """Per field: how many entries differ, and the largest absolute and relative difference (issue 34)."""
    first, second = run
    _edit_metrics(first, values=[1.0, 2.0, 3.0, 4.0], nested={"grid": [[1, 2], [3, 4]], "name": "a"})
    _edit_metrics(second, n=4, values=[1.0, 2.5, 3.0, 8.0], nested={"grid": [[1, 2], [3, 5]], "name": "b"})
    pd.DataFrame({"n": [1, 3], "value": [0.5, 0.25], "seconds": [0.1, 0.2]}).to_csv(second / "t.csv", index=False)
    found = compare_runs(first, second)
    assert found == ["metrics.json: n: 3 against 4 (abs diff 1, rel diff 0.25)",
                     "metrics.json: values: 2 of 4 entries differ, max abs diff 4, max rel diff 0.5",
                     "metrics.json: nested.grid: 1 of 4 entries differ, max abs diff 1, max rel diff 0.2",
                     "metrics.json: nested.name: 'a' against 'b'",
                     "t.csv: column n: 1 of 2 entries differ, max abs diff 1, max rel diff 0.333"]
    assert main(["compare", str(first), str(second)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("settings unknown for ") and out[1:] == found  # no executed notebooks here


def test_tables_of_other_shapes_and_nan_are_reported(run):
    first, second = run
    pd.DataFrame({"n": [1, 2, 3], "value": [0.5, 0.25, 1], "seconds": [0, 0, 0]}).to_csv(second / "t.csv",
                                                                                       index=False)
    assert compare_runs(first, second) == ["t.csv: 2 rows against 3"]
    pd.DataFrame({"n": [1, 2], "value": [0.5, np.nan], "seconds": [0, 0]}).to_csv(second / "t.csv", index=False)
    assert compare_runs(first, second) == ["t.csv: column value: 1 of 2 entries differ, NaN against a number"]
    pd.DataFrame({"n": [1, 2], "other": [0.5, 0.25], "seconds": [0, 0]}).to_csv(second / "t.csv", index=False)
    assert compare_runs(first, second) == ["t.csv: columns differ (other, value in only one run)"]


def test_run_info_is_provenance_not_a_result(run, capsys):
    """Two runs differing in run_info.json only (times, versions, CPU) agree; the CLI names the provenance."""
    first, second = run
    info = {"experiment": "x", "profile": "quick", "wall_seconds": 1.0, "cpu_seconds": 1.0, "python": "3.11.7",
            "libraries": {"numpy": "2.0.0", "torch": None}, "cpu": {"model": "A", "logical_cores": 2}}
    (first / "run_info.json").write_text(json.dumps(info))
    (second / "run_info.json").write_text(json.dumps(dict(info, wall_seconds=9.0, libraries={
        "numpy": "2.1.0", "torch": None}, cpu={"model": "B", "logical_cores": 2})))
    assert compare_runs(first, second) == []
    assert main(["compare", str(first), str(second)]) == 0
    out = capsys.readouterr().out
    assert "agree on every number but measured times" in out
    assert "libraries.numpy: '2.0.0' against '2.1.0'" in out and "cpu.model: 'A' against 'B'" in out


def _executed_notebook(run_dir, **parameters):
    """A run's executed notebook holding papermill's injected cell (``output_dir`` first, as papermill writes)."""
    source = "# Parameters\n" + "".join(f"{key} = {value!r}\n" for key, value in parameters.items())
    cells = [{"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": "budget = 1\n"},
             {"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source": source}]
    (run_dir / "x.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                 "nbformat_minor": 5}))


def test_the_headline_names_the_settings_and_verdicts_that_differ(run, capsys):
    first, second = run
    _executed_notebook(first, output_dir="/a", profile="paper", budget=3000, seeds=[0, 1])
    _executed_notebook(second, output_dir="/b", profile="custom", budget=100, seeds=[0, 1], extra=True)
    claim = dict(json.loads((first / "metrics.json").read_text())["claims"][0], verdict="holds")
    _edit_metrics(first, claims=[claim])
    _edit_metrics(second, claims=[dict(claim, holds=False, verdict="does not hold")])
    from shapley_research.experiments import setting_differences, verdict_changes

    assert setting_differences(first, second) == ["profile: 'paper' against 'custom'", "budget: 3000 against 100",
                                                  "extra: only in the second run"]  # output_dir left out
    assert verdict_changes(first, second) == ["c: holds -> does not hold"]
    assert main(["compare", str(first), str(second)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:6] == ["settings that differ (3):", "  profile: 'paper' against 'custom'",
                       "  budget: 3000 against 100", "  extra: only in the second run",
                       "verdicts that differ (1):", "  c: holds -> does not hold"]
    assert "metrics.json: claims[0].verdict: 'holds' against 'does not hold'" in out  # then every difference


def test_runs_without_executed_notebooks_or_claims_in_common_have_no_headline(run):
    from shapley_research.experiments import setting_differences, verdict_changes

    first, second = run
    assert setting_differences(first, second) == [] and verdict_changes(first, second) == []
    _executed_notebook(first, budget=1)
    assert setting_differences(first, second) == []  # the second run has none: nothing to set beside
    _edit_metrics(second, claims=[{"claim": "other", "holds": False}])
    assert verdict_changes(first, second) == []


def test_a_run_whose_settings_are_unknown_is_named_in_the_headline(run, capsys):
    first, second = run
    _executed_notebook(first, budget=1)
    assert main(["compare", str(first), str(second)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"settings unknown for {second} (no executed notebook with papermill's parameters cell): " \
                     "not compared"
    _executed_notebook(second, budget=1)
    assert main(["compare", str(first), str(second)]) == 0
    assert "settings unknown" not in capsys.readouterr().out
