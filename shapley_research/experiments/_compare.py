"""Compare two runs of an experiment: every number but the measured times must agree.

Two runs with the same configuration must differ only in measured times (the
house rule behind ``tests/experiments/test_rerun_determinism.py``), and a refactor that
cannot move a result must leave a quick-profile run unchanged. Both checks read
the same way: ``metrics.json`` once :func:`without_timings` has set aside the
times, every CSV table once its time columns (:func:`is_timing_key`) are
dropped, and every cached ``.npz`` array, compared exactly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ._common import METRICS_FILE, is_timing_key, without_timings

__all__ = ["compare_runs"]


def _files(run_dir: Path, pattern: str) -> list[Path]:
    return sorted(p.relative_to(run_dir) for p in run_dir.rglob(pattern))


def _first_difference(a, b, where: str = "") -> str | None:
    """Where two parsed JSON documents first differ (``None`` if they are equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where or 'top level'}: keys {sorted(a.keys() ^ b.keys())} in only one run"
        for key in a:
            found = _first_difference(a[key], b[key], f"{where}.{key}" if where else str(key))
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} entries against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            found = _first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    same = type(a) is type(b) and (a == b or (isinstance(a, float) and np.isnan(a) and np.isnan(b)))
    return None if same else f"{where}: {a!r} against {b!r}"


def _compare_tables(first: Path, second: Path, table: Path) -> str | None:
    import pandas as pd

    frames = [pd.read_csv(run / table) for run in (first, second)]
    if list(frames[0].columns) != list(frames[1].columns):
        return f"{table}: columns differ"
    kept = [c for c in frames[0].columns if not is_timing_key(c)]
    try:
        pd.testing.assert_frame_equal(frames[0][kept], frames[1][kept], check_exact=True, obj=str(table))
    except AssertionError as err:
        return " ".join(str(err).split())[:500]
    return None


def _compare_arrays(first: Path, second: Path, path: Path) -> list[str]:
    with np.load(first / path) as a, np.load(second / path) as b:
        if sorted(a.files) != sorted(b.files):
            return [f"{path}: arrays {sorted(set(a.files) ^ set(b.files))} in only one run"]
        return [f"{path}:{key} differs" for key in a.files if not np.array_equal(a[key], b[key])]


def compare_runs(first: str | os.PathLike, second: str | os.PathLike) -> list[str]:
    """The differences, measured times aside, between two output directories of one experiment.

    Parameters
    ----------
    first, second : path-like
        Directories an experiment wrote (``OUTPUT_DIR/NAME``), each with a
        ``metrics.json``.

    Returns
    -------
    list of str
        One line per difference: the first differing entry of ``metrics.json``,
        a table or cached array that differs or exists in one run only. Empty
        when the runs agree on every number but measured times.

    Raises
    ------
    ValueError
        If either directory has no ``metrics.json``.
    """
    runs = [Path(first), Path(second)]
    for name, run in zip(("first", "second"), runs):
        if not (run / METRICS_FILE).is_file():
            raise ValueError(f"{name}: expected an experiment's output directory with a {METRICS_FILE}, "
                             f"got {str(run)!r}")
    metrics = [without_timings(json.loads((run / METRICS_FILE).read_text())) for run in runs]
    found = _first_difference(*metrics)
    differences = [f"{METRICS_FILE}: {found}"] if found else []
    for pattern in ("*.csv", "*.npz"):
        files = [set(_files(run, pattern)) for run in runs]
        differences += [f"{path}: only in the {which} run" for which, only in
                        (("first", files[0] - files[1]), ("second", files[1] - files[0])) for path in sorted(only)]
        for path in sorted(files[0] & files[1]):
            if pattern == "*.csv":
                found = _compare_tables(runs[0], runs[1], path)
                differences += [found] if found else []
            else:
                differences += _compare_arrays(runs[0], runs[1], path)
    return differences
