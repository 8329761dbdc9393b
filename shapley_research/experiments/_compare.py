"""Compare two runs of an experiment: every number but the measured times must agree.

Two runs with the same configuration must differ only in measured times and
provenance (the house rule behind ``tests/experiments/test_rerun_determinism.py``),
and a refactor that cannot move a result must leave a quick-profile run
unchanged. Both checks read the same way: ``metrics.json`` once
:func:`without_timings` has set aside the times, every CSV table once its time
columns (:func:`is_timing_key`) are dropped, and every cached ``.npz`` array,
compared exactly. ``run_info.json`` (measured times, and the Python, library
versions and CPU of the run) and the executed notebook are never compared:
:func:`provenance_differences` says how the runs' environments differ, as
information beside the result.

Each difference says how large it is: per differing field (a number, a list of
numbers, a table column, an array) how many entries differ out of how many,
and the largest absolute and relative difference among them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ._common import METRICS_FILE, is_timing_key, verdict_of, without_timings

__all__ = ["compare_runs", "comparison_report", "provenance_differences", "setting_differences",
           "verdict_changes"]


def _files(run_dir: Path, pattern: str) -> list[Path]:
    return sorted(p.relative_to(run_dir) for p in run_dir.rglob(pattern))


def _is_number(value) -> bool:
    """A JSON number, or ``null`` (what :func:`~._common.to_jsonable` writes for NaN)."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _gap(x: np.ndarray, y: np.ndarray) -> str:
    """``max abs diff X, max rel diff Y`` over entries that differ (relative to the larger magnitude)."""
    gap = np.abs(x - y)
    kept = ~np.isnan(gap)  # NaN against a number has no size
    if not kept.any():
        return "NaN against a number"
    gap, scale = gap[kept], np.maximum(np.abs(x), np.abs(y))[kept]
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(scale > 0, gap / scale, 0.0)
    return f"max abs diff {gap.max():.3g}, max rel diff {np.nanmax(relative):.3g}"


def _size(a: np.ndarray, b: np.ndarray) -> str | None:
    """``k of n entries differ, max abs diff X, max rel diff Y`` for two equal-shape arrays; ``None`` if equal."""
    if a.dtype.kind in "biuf" and b.dtype.kind in "biuf":
        x, y = a.astype(float), b.astype(float)
        differ = ~((x == y) | (np.isnan(x) & np.isnan(y)))
        if not differ.any():
            return None
        return f"{int(differ.sum())} of {differ.size} entries differ, {_gap(x[differ], y[differ])}"
    differ = np.asarray(a != b, dtype=bool)
    return f"{int(differ.sum())} of {differ.size} entries differ" if differ.any() else None


def _numbers(value) -> np.ndarray | None:
    """A non-empty (nested, rectangular) list of JSON numbers as a float array (``null`` as NaN), else ``None``."""
    def numeric(v) -> bool:
        return all(map(numeric, v)) if isinstance(v, list) else _is_number(v)

    def nan_for_null(v):
        return [nan_for_null(i) for i in v] if isinstance(v, list) else (np.nan if v is None else v)

    if not isinstance(value, list) or not value or not numeric(value):
        return None
    try:
        return np.array(nan_for_null(value), dtype=float)
    except ValueError:  # ragged
        return None


def _differences(a, b, where: str = "") -> list[str]:
    """Every differing field of two parsed JSON documents, each with the size of its difference."""
    label = where or "top level"
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{label}: keys {sorted(a.keys() ^ b.keys())} in only one run"]
        return [line for key in a for line in _differences(a[key], b[key], f"{where}.{key}" if where else str(key))]
    if _is_number(a) and _is_number(b):
        x, y = (np.array(np.nan if v is None else v, dtype=float) for v in (a, b))
        if type(a) is type(b) and (a == b or (np.isnan(x) and np.isnan(y))):
            return []
        size = _gap(x, y).replace("max ", "")
        return [f"{label}: {a!r} against {b!r}" + (f" ({size})" if x != y else "")]
    p, q = _numbers(a), _numbers(b)
    if p is not None and q is not None and p.shape == q.shape:
        found = _size(p, q)
        return [f"{label}: {found}"] if found else []
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{label}: {len(a)} entries against {len(b)}"]
        return [line for i, (u, v) in enumerate(zip(a, b)) for line in _differences(u, v, f"{where}[{i}]")]
    same = type(a) is type(b) and a == b
    return [] if same else [f"{label}: {a!r} against {b!r}"]


def _compare_tables(first: Path, second: Path, table: Path) -> list[str]:
    import pandas as pd

    frames = [pd.read_csv(run / table) for run in (first, second)]
    if list(frames[0].columns) != list(frames[1].columns):
        only = sorted(set(frames[0].columns) ^ set(frames[1].columns))
        return [f"{table}: columns differ" + (f" ({', '.join(map(str, only))} in only one run)" if only
                                              else " in order")]
    if len(frames[0]) != len(frames[1]):
        return [f"{table}: {len(frames[0])} rows against {len(frames[1])}"]
    lines = []
    for column in frames[0].columns:
        if is_timing_key(column):
            continue
        a, b = (frame[column].to_numpy() for frame in frames)
        if a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
            a, b = a.astype(str), b.astype(str)  # text, or a number column that is empty in one run
        found = _size(a, b)
        if found:
            lines.append(f"{table}: column {column}: {found}")
    return lines


def _compare_arrays(first: Path, second: Path, path: Path) -> list[str]:
    with np.load(first / path) as a, np.load(second / path) as b:
        if sorted(a.files) != sorted(b.files):
            return [f"{path}: arrays {sorted(set(a.files) ^ set(b.files))} in only one run"]
        lines = []
        for key in a.files:
            x, y = a[key], b[key]
            if x.shape != y.shape:
                lines.append(f"{path}:{key}: shape {x.shape} against {y.shape}")
            else:
                found = _size(x, y)
                lines += [f"{path}:{key}: {found}"] if found else []
        return lines


def provenance_differences(first: str | os.PathLike, second: str | os.PathLike) -> list[str]:
    """How two runs' ``run_info.json`` provenance differs (Python, library versions, CPU): information only.

    Empty when either run has no ``run_info.json`` or they agree. Measured
    times are left out; they always differ.
    """
    from ._notebook import PROVENANCE_KEYS
    from ._report import RUN_INFO_FILE

    infos = []
    for run in (Path(first), Path(second)):
        try:
            infos.append(json.loads((run / RUN_INFO_FILE).read_text()))
        except (OSError, ValueError):
            return []
    first_kept, second_kept = ({key: info.get(key) for key in PROVENANCE_KEYS} for info in infos)
    return _differences(first_kept, second_kept)


def _run_settings(run_dir: Path) -> dict | None:
    """The parameters papermill injected into the run's executed notebook (``output_dir`` aside), or None."""
    from ._notebook import PAPERMILL_HEADER, _parse_parameters

    for path in sorted(run_dir.glob("*.ipynb")):
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for cell in cells:
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            if cell.get("cell_type") == "code" and source.startswith(PAPERMILL_HEADER):
                try:
                    values = _parse_parameters(source)
                except ValueError:
                    return None
                values.pop("output_dir", None)
                return values
    return None


def setting_differences(first: str | os.PathLike, second: str | os.PathLike) -> list[str]:
    """The parameters two runs were given that differ, one line each: ``budget: 3000 against 100``.

    Read from each run's executed notebook (the cell papermill injected:
    every value the run got, after profiles and overrides); ``output_dir`` is
    left out. Empty when either run has no executed notebook with such a cell,
    or when they agree.
    """
    a, b = (_run_settings(Path(run)) for run in (first, second))
    if a is None or b is None:
        return []
    lines = []
    for key in list(a) + [key for key in b if key not in a]:
        if key not in a or key not in b:
            lines.append(f"{key}: only in the {'first' if key in a else 'second'} run")
        elif a[key] != b[key]:
            lines.append(f"{key}: {a[key]!r} against {b[key]!r}")
    return lines


def verdict_changes(first: str | os.PathLike, second: str | os.PathLike) -> list[str]:
    """The claims whose verdict differs between two runs, one line each: ``CLAIM: holds -> does not hold``.

    Claims are matched by their ``claim`` text; a claim in one run only is
    left out (:func:`compare_runs` reports the lists' lengths).
    """
    claims = []
    for run in (Path(first), Path(second)):
        entries = json.loads((run / METRICS_FILE).read_text()).get("claims", [])
        claims.append({entry["claim"]: verdict_of(entry) for entry in entries
                       if isinstance(entry, dict) and "claim" in entry})
    return [f"{text}: {verdict} -> {claims[1][text]}" for text, verdict in claims[0].items()
            if text in claims[1] and claims[1][text] != verdict]


def compare_runs(first: str | os.PathLike, second: str | os.PathLike) -> list[str]:
    """The differences, measured times aside, between two output directories of one experiment.

    Parameters
    ----------
    first, second : path-like
        Directories an experiment wrote (``OUTPUT_DIR/NAME``), each with a
        ``metrics.json``, or ``OUTPUT_DIR`` holding one (:func:`run_directory`).

    Returns
    -------
    list of str
        One line per difference: each differing field of ``metrics.json``
        (a number: both values; a list of numbers: how many entries differ),
        each differing column of a table and each differing cached array (how
        many entries differ, the largest absolute and relative difference), a
        file in one run only. Empty when the runs agree on every number but
        measured times. ``run_info.json`` (times and provenance) is not
        compared; see :func:`provenance_differences`.

    Raises
    ------
    ValueError
        If either argument names no run (:func:`run_directory`).
    """
    runs = _same_experiment(first, second)
    metrics = [without_timings(json.loads((run / METRICS_FILE).read_text())) for run in runs]
    differences = [f"{METRICS_FILE}: {line}" for line in _differences(*metrics)]
    for pattern in ("*.csv", "*.npz"):
        files = [set(_files(run, pattern)) for run in runs]
        differences += [f"{path}: only in the {which} run" for which, only in
                        (("first", files[0] - files[1]), ("second", files[1] - files[0])) for path in sorted(only)]
        for path in sorted(files[0] & files[1]):
            if pattern == "*.csv":
                differences += _compare_tables(runs[0], runs[1], path)
            else:
                differences += _compare_arrays(runs[0], runs[1], path)
    return differences


def run_directory(path: str | os.PathLike, name: str, experiment: str | None = None) -> Path:
    """The experiment directory ``path`` names: itself, or the one experiment directory in an ``output_dir``.

    A run writes ``OUTPUT_DIR/NAME/metrics.json``; given ``OUTPUT_DIR``
    holding one such directory (or one named ``experiment``), that one is
    meant. ``name`` ("first", "second") labels the argument in errors.

    Raises
    ------
    ValueError
        If ``path`` holds no ``metrics.json`` and not exactly one directory
        with one (several are listed, to choose from).
    """
    path = Path(path)
    if (path / METRICS_FILE).is_file():
        return path
    inside = sorted(child for child in path.glob(f"*/{METRICS_FILE}")) if path.is_dir() else []
    named = [run for run in inside if run.parent.name == experiment]
    if len(inside) == 1 or named:
        return (named or inside)[0].parent
    hint = (" It holds several runs; name one: " + ", ".join(str(run.parent) for run in inside) + "."
            if inside else "")
    raise ValueError(f"{name}: expected an experiment's output directory with a {METRICS_FILE} (OUTPUT_DIR/NAME, "
                     f"or an OUTPUT_DIR holding one run), got {str(path)!r}.{hint}")


def _experiment_of(run: Path) -> str | None:
    """The experiment a run directory holds, by its ``run_info.json`` (None without one)."""
    from ._report import RUN_INFO_FILE

    try:
        return str(json.loads((run / RUN_INFO_FILE).read_text())["experiment"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _same_experiment(first: str | os.PathLike, second: str | os.PathLike) -> list[Path]:
    """The two run directories (:func:`run_directory`), refused when they hold runs of different experiments.

    An ``output_dir`` holding several runs stands for the one named as the
    other side's run.
    """
    try:
        first_run = run_directory(first, "first")
    except ValueError as err:
        try:
            second_run = run_directory(second, "second")
        except ValueError:
            raise err from None
        first_run = run_directory(first, "first", second_run.name)
    else:
        second_run = run_directory(second, "second", first_run.name)
    found = [first_run, second_run]
    experiments = [_experiment_of(run) for run in found]
    if None not in experiments and experiments[0] != experiments[1]:
        raise ValueError(f"first is a run of {experiments[0]}, second of {experiments[1]}: compare two runs of "
                         f"one experiment ({found[0]}, {found[1]}).")
    return found


def comparison_report(first: str | os.PathLike, second: str | os.PathLike) -> tuple[list[str], bool]:
    """What ``shapley-research compare`` prints, and whether the runs differ in any number but measured times.

    First the headline: a line naming a run whose settings are unknown (no
    executed notebook to read them from), the settings that differ
    (:func:`setting_differences`) and the verdicts that moved (:func:`verdict_changes`), each under a title
    with its count, where there are any; then every difference
    (:func:`compare_runs`), or a line saying the runs agree; last, as
    information, how their provenance differs (:func:`provenance_differences`).

    Raises
    ------
    ValueError
        If either argument names no run (:func:`run_directory`).
    """
    first, second = _same_experiment(first, second)
    differences = compare_runs(first, second)
    unknown = [str(run) for run in (first, second) if _run_settings(Path(run)) is None]
    lines = [f"settings unknown for {' and '.join(unknown)} (no executed notebook with papermill's parameters "
             "cell): not compared"] if unknown else []
    for title, found in (("settings that differ", setting_differences(first, second)),
                         ("verdicts that differ", verdict_changes(first, second))):
        if found:
            lines += [f"{title} ({len(found)}):"] + [f"  {line}" for line in found]
    lines += differences or [f"{first} and {second} agree on every number but measured times"]
    environment = provenance_differences(first, second)
    if environment:  # information: the runs ran in different environments, which may move the last digits
        lines.append("the runs' provenance (run_info.json; not compared) differs: " + "; ".join(environment))
    return lines, bool(differences)
