"""Two runs of an experiment with the same configuration differ only in measured times.

Each experiment's quick profile runs twice, in two output directories, one
after the other (``conftest.quick_run`` and ``quick_rerun``), through the command
line as `dvc repro` runs it: the first on every core (``n_jobs=-1``, the
default), the second in one process (``n_jobs=1``) and without figures
(``--no-figures``), so the comparison also shows that no number depends on
``n_jobs`` or on drawing. Then every number must agree exactly:
``metrics.json`` once the measured times are set aside (keys named as times,
and the statistic and verdict of a claim marked ``timing``; see
``shapley_research.experiments.without_timings``), every CSV table once its
time columns are dropped, and every cached array (the adversarial images); see
``shapley_research.experiments.compare_runs``.
"""

import pytest

from shapley_research.experiments import EXPERIMENT_NAMES
from shapley_research.experiments import compare_runs


def _run_dir(proc, root, name):
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root / name


def _files(run_dir, pattern):
    return sorted(p.relative_to(run_dir) for p in run_dir.rglob(pattern))


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPERIMENT_NAMES)
def test_two_quick_runs_agree_on_every_number_but_measured_times(name, quick_run, quick_rerun):
    first = _run_dir(*quick_run(name), name)  # the run the experiment's end-to-end test reads too
    second = _run_dir(*quick_rerun(name), name)
    assert _files(first, "*.csv"), "every experiment writes the values behind its figures"
    assert compare_runs(first, second) == []
    assert _files(first, "*.png") and not _files(second, "*.png") and not _files(second, "*.pdf")
