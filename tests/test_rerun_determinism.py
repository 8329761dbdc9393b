"""Two runs of an experiment with the same configuration differ only in measured times.

Each experiment's quick profile runs twice, in two output directories, through
the command line as `dvc repro` runs it. Then every number must agree exactly:
``metrics.json`` once the measured times are set aside (keys named as times,
and the statistic and verdict of a claim marked ``timing``; see
``shapley_research.experiments.without_timings``), every CSV table once its
time columns are dropped, and every cached array (the adversarial images).
"""

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_quick_profile

from shapley_research.experiments import EXPERIMENT_NAMES, is_timing_key, without_timings


def _run_dir(proc, root, name):
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root / name


def _files(run_dir, pattern):
    return sorted(p.relative_to(run_dir) for p in run_dir.rglob(pattern))


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPERIMENT_NAMES)
def test_two_quick_runs_agree_on_every_number_but_measured_times(name, quick_run, tmp_path):
    first = _run_dir(*quick_run(name), name)  # the run the experiment's end-to-end test reads too
    second = _run_dir(run_quick_profile(name, tmp_path), tmp_path, name)

    metrics = [json.loads((run / "metrics.json").read_text()) for run in (first, second)]
    assert without_timings(metrics[0]) == without_timings(metrics[1])

    tables = _files(first, "*.csv")
    assert tables and tables == _files(second, "*.csv")
    for table in tables:
        frames = [pd.read_csv(run / table) for run in (first, second)]
        kept = [c for c in frames[0].columns if not is_timing_key(c)]
        assert list(frames[1].columns) == list(frames[0].columns), table
        pd.testing.assert_frame_equal(frames[0][kept], frames[1][kept], check_exact=True, obj=str(table))

    arrays = _files(first, "*.npz")
    assert arrays == _files(second, "*.npz")
    for path in arrays:
        with np.load(first / path) as a, np.load(second / path) as b:
            assert sorted(a.files) == sorted(b.files), path
            for key in a.files:
                np.testing.assert_array_equal(a[key], b[key], err_msg=f"{path}:{key}")
