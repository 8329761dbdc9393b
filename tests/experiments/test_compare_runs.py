"""``compare_runs`` finds every difference but measured times, and only those."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from shapley_research.cli import main
from shapley_research.experiments._compare import compare_runs


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
    assert compare_runs(first, second) == [f"metrics.json: error: 0.25 against {changed!r}"]
    assert main(["compare", str(first), str(second)]) == 1


def test_a_changed_table_or_array_or_missing_file_is_found(run):
    first, second = run
    pd.DataFrame({"n": [1, 2], "value": [0.5, 0.3], "seconds": [0.1, 0.2]}).to_csv(second / "t.csv", index=False)
    np.savez(second / "cache.npz", images=np.arange(6.0) + 1)
    (first / "extra.csv").write_text("a\n1\n")
    found = compare_runs(first, second)
    assert len(found) == 3
    assert found[0] == "extra.csv: only in the first run"
    assert "t.csv" in found[1] and found[2] == "cache.npz:images differs"


def test_a_directory_without_metrics_is_rejected(run, tmp_path):
    with pytest.raises(ValueError, match="second: expected an experiment's output directory"):
        compare_runs(run[0], tmp_path)
