"""Helpers every experiment notebook calls to write its results.

An experiment writes into one directory (``results/NAME/`` by default):
figures as PNG and PDF (:mod:`._figures`), the values behind each figure as
tidy CSV (:func:`write_table`), and ``metrics.json`` (:func:`write_metrics`)
with the figures' key numbers and a ``claims`` list, one entry per claim of
the paper that the experiment tests (:func:`claim`).
"""

from __future__ import annotations

import json
import math
import numbers
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from threadpoolctl import threadpool_limits

_Item = TypeVar("_Item")

METRICS_FILE = "metrics.json"
CLAIM_KEYS = ("claim", "statistic", "holds", "source", "criterion")

__all__ = [
    "METRICS_FILE", "CLAIM_SOURCES", "Claim", "claim", "to_jsonable", "validate_metrics", "write_metrics",
    "read_metrics", "experiment_dir", "write_table",
    "set_blas_threads", "progress", "TIMING_WORDS", "is_timing_key", "without_timings", "held_count",
]


def to_jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON types (dict, list, str, int, float, bool, None).

    numpy scalars and arrays become Python numbers and lists, tuples and sets
    become lists, paths become strings. Non-finite floats become ``None``
    because strict JSON has no NaN or infinity.

    Raises
    ------
    TypeError
        For a value with no JSON form (an arbitrary object), naming its type.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, got {key!r} of type {type(key).__name__}.")
            out[key] = to_jsonable(item)
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return [to_jsonable(v) for v in items]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"cannot write a value of type {type(value).__name__} to JSON: {value!r}")


CLAIM_SOURCES = ("paper", "reproduction")
#: What a run can say of a claim. "inconclusive": the statistic's interval straddles the criterion's
#: threshold, so more data (seeds) would be needed to decide; "outside its scope": the run does not meet
#: the claim's premise (a paper's argument for a kind of utility this run does not have). ``holds`` is
#: false for both.
VERDICTS = ("holds", "does not hold", "inconclusive", "outside its scope")


@dataclass(frozen=True)
class Claim:
    """One claim and the verdict an experiment's run gives it.

    A claim is either the paper's (``source="paper"``, with the ``section`` or
    figure that makes it) or a check this reproduction adds
    (``source="reproduction"``). Its ``criterion`` is the decision rule, fixed
    before the run: the report prints it beside the verdict so a reader can
    see what would have made the claim fail.

    Parameters
    ----------
    claim : str
        The claim in one sentence.
    statistic : str
        Name of the statistic computed from the run that decides the claim.
    value : object
        The statistic's value (a number, or a list of numbers).
    holds : bool
        Whether the run supports the claim.
    source : {"paper", "reproduction"}
        Whose claim it is.
    criterion : str
        The rule that decides ``holds``, stated before the run.
    section : str or None
        Where the paper makes the claim (required for ``source="paper"``).
    note : str or None
        Context a referee needs: above all, the cause when the claim does not hold.
    timing : bool
        True when the statistic derives from measured times, so that two runs
        may differ in it (every other number must be the same run to run).
    undecided : str or None
        ``"inconclusive"`` when the run cannot decide (an interval straddles
        the threshold) or ``"outside its scope"`` when the run does not meet
        the claim's premise; ``holds`` is then false. ``None``: decided.
    sanity : bool
        True for a sanity check: a check that can fail only through a bug (an
        identity, arithmetic on the paper's bounds, a bound with a wide slack),
        reported apart and never counted with the empirical verdicts.
    by_construction : bool
        True for a check whose verdict the experiment's design fixes (a
        setting calibrated to make it hold, a learner that cannot meet a
        hypothesis): reported apart, like the sanity checks, and never counted
        as evidence.
    """

    claim: str
    statistic: str
    value: Any
    holds: bool
    source: str
    criterion: str
    section: str | None = None
    note: str | None = None
    timing: bool = False
    undecided: str | None = None
    sanity: bool = False
    by_construction: bool = False

    @property
    def verdict(self) -> str:
        """One of :data:`VERDICTS`."""
        return self.undecided or ("holds" if self.holds else "does not hold")

    def to_dict(self) -> dict:
        """The entry written to ``metrics.json``.

        ``{claim, statistic: {name, value}, holds, verdict, source, criterion,
        timing}`` plus ``section`` and ``note`` where given, ``sanity: true``
        for a sanity check and ``by_construction: true`` for a check that holds
        or fails by construction. ``verdict`` is one of :data:`VERDICTS`:
        ``holds`` is false for "inconclusive" and "outside its scope" too, so a
        reader counting verdicts reads ``verdict``.
        """
        entry = {"claim": self.claim, "statistic": {"name": self.statistic, "value": to_jsonable(self.value)},
                 "holds": bool(self.holds), "verdict": self.verdict, "source": self.source,
                 "criterion": self.criterion, "timing": bool(self.timing)}
        if self.sanity:
            entry["sanity"] = True
        if self.by_construction:
            entry["by_construction"] = True
        if self.section is not None:
            entry["section"] = self.section
        if self.note is not None:
            entry["note"] = self.note
        return entry


@overload
def _non_empty(name: str, value: Any, optional: Literal[False] = False) -> str: ...
@overload
def _non_empty(name: str, value: Any, optional: bool) -> str | None: ...
def _non_empty(name: str, value: Any, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}.")
    return " ".join(value.split())


def claim(text: str, statistic_name: str, value: Any, holds: Any, *, source: str, criterion: str,
          section: str | None = None, note: str | None = None, timing: bool = False,
          undecided: str | None = None, sanity: bool = False, by_construction: bool = False) -> Claim:
    """Build a :class:`Claim`, coercing numpy types to plain Python.

    ``holds`` is usually a numpy comparison (``np.bool_``); it is converted
    with ``bool``. Arrays are refused for ``holds`` because their truth value
    is ambiguous: reduce them with ``.all()`` or ``.any()`` first.

    Parameters
    ----------
    text, statistic_name, value, holds
        As in :class:`Claim`.
    source : {"paper", "reproduction"}
        ``"paper"`` for a claim the paper makes (then ``section`` says where),
        ``"reproduction"`` for a check this package adds.
    criterion : str
        The decision rule, fixed before the run.
    section : str, optional
        The paper's section or figure; required when ``source="paper"``.
    note : str, optional
        Context; the cause when the claim does not hold.
    timing : bool
        Whether the statistic derives from measured times.
    undecided : {"inconclusive", "outside its scope"}, optional
        The verdict when the run does not decide the claim (see
        :func:`~._verdicts.interval_verdict`); ``holds`` must then be false.
    sanity : bool
        Whether this is a sanity check (it can fail only through a bug); it is
        reported apart and not counted with the empirical verdicts.
    by_construction : bool
        Whether the experiment's design fixes the verdict (a calibrated
        setting, a learner outside a theorem's hypotheses); reported apart and
        not counted with the empirical verdicts.

    Raises
    ------
    ValueError
        If a text argument is empty, ``source`` is not one of
        ``"paper"``/``"reproduction"``, or a paper claim has no ``section``.
    TypeError
        If ``holds`` or ``timing`` is not a scalar truth value or ``value`` has no JSON form.
    """
    text = _non_empty("claim text", text)
    statistic_name = _non_empty("statistic_name", statistic_name)
    criterion = _non_empty("criterion", criterion)
    note = _non_empty("note", note, optional=True)
    if source not in CLAIM_SOURCES:
        raise ValueError(f"source must be one of {CLAIM_SOURCES}, got {source!r}.")
    section = _non_empty("section", section, optional=source == "reproduction")
    if isinstance(holds, np.ndarray) and holds.ndim > 0:
        raise TypeError("holds must be a single truth value; reduce arrays with .all() or .any().")
    for name, flag in (("holds", holds), ("timing", timing), ("sanity", sanity),
                       ("by_construction", by_construction)):
        if not isinstance(flag, (bool, np.bool_, numbers.Integral)):
            raise TypeError(f"{name} must be a boolean, got {flag!r} of type {type(flag).__name__}.")
    if undecided is not None and undecided not in VERDICTS[2:]:
        raise ValueError(f"undecided must be None or one of {VERDICTS[2:]}, got {undecided!r}.")
    if undecided is not None and bool(holds):
        raise ValueError(f"a claim whose verdict is {undecided!r} cannot hold: pass holds=False.")
    return Claim(text, statistic_name, to_jsonable(value), bool(holds), source, criterion, section, note,
                 bool(timing), undecided, bool(sanity), bool(by_construction))


def verdict_of(entry: Claim | Mapping[str, Any]) -> str:
    """The verdict (one of :data:`VERDICTS`) of a :class:`Claim` or of its ``metrics.json`` entry."""
    if isinstance(entry, Claim):
        return entry.verdict
    return entry.get("verdict") or ("holds" if entry["holds"] else "does not hold")


def counts_as_evidence(entry: Mapping[str, Any]) -> bool:
    """Whether a ``metrics.json`` claim is evidence: neither a sanity check nor decided by construction."""
    return not (entry.get("sanity", False) or entry.get("by_construction", False))


def held_count(claims: Iterable[Mapping[str, Any]], source: str) -> tuple[int, int]:
    """``(claims that hold, claims)`` among the ``metrics.json`` claims of ``source`` that are evidence.

    Sanity checks and checks decided by construction are left aside (:func:`counts_as_evidence`).
    """
    picked = [c for c in claims if c.get("source") == source and counts_as_evidence(c)]
    return sum(bool(c["holds"]) for c in picked), len(picked)


def undecided_count(claims: Iterable[Mapping[str, Any]], source: str) -> dict[str, int]:
    """How many evidence claims of ``source`` (:func:`counts_as_evidence`) are inconclusive or outside their scope."""
    verdicts = [verdict_of(c) for c in claims if c.get("source") == source and counts_as_evidence(c)]
    return {v: verdicts.count(v) for v in VERDICTS[2:] if v in verdicts}


def _claim_problems(entry: Any, index: int) -> list[str]:
    where = f"claims[{index}]"
    if not isinstance(entry, dict):
        return [f"{where} must be an object with keys {', '.join(CLAIM_KEYS)}, got {type(entry).__name__}."]
    problems = [f"{where} lacks the key {key!r}." for key in CLAIM_KEYS if key not in entry]
    for key in ("claim", "criterion"):
        if key in entry and not (isinstance(entry[key], str) and entry[key].strip()):
            problems.append(f"{where}.{key} must be a non-empty string.")
    if "holds" in entry and not isinstance(entry["holds"], bool):
        problems.append(f"{where}.holds must be true or false, got {entry['holds']!r}.")
    for key in ("timing", "sanity", "by_construction"):
        if key in entry and not isinstance(entry[key], bool):
            problems.append(f"{where}.{key} must be true or false, got {entry[key]!r}.")
    verdict = entry.get("verdict")
    if verdict is not None and verdict not in VERDICTS:
        problems.append(f"{where}.verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}.")
    elif verdict is not None and isinstance(entry.get("holds"), bool) and (verdict == "holds") != entry["holds"]:
        problems.append(f"{where}.verdict {verdict!r} contradicts holds={entry['holds']}.")
    if "source" in entry and entry["source"] not in CLAIM_SOURCES:
        problems.append(f"{where}.source must be one of {', '.join(CLAIM_SOURCES)}, got {entry['source']!r}.")
    if entry.get("source") == "paper" and not (isinstance(entry.get("section"), str) and entry["section"].strip()):
        problems.append(f"{where} is the paper's claim: its 'section' must name where the paper makes it.")
    if "statistic" in entry:
        stat = entry["statistic"]
        if not (isinstance(stat, dict) and isinstance(stat.get("name"), str) and stat["name"].strip()
                and "value" in stat):
            problems.append(f"{where}.statistic must be an object {{\"name\": str, \"value\": ...}}, got {stat!r}.")
    return problems


def validate_metrics(metrics: Any) -> None:
    """Check the structure of a ``metrics.json`` document.

    It must be an object with a non-empty ``claims`` list whose entries are
    ``{"claim": str, "statistic": {"name": str, "value": ...}, "holds": bool,
    "source": "paper" | "reproduction", "criterion": str}``, a paper claim
    also naming its ``section``.

    Raises
    ------
    ValueError
        Listing every problem found.
    """
    if not isinstance(metrics, dict):
        raise ValueError(f"metrics must be a JSON object, got {type(metrics).__name__}.")
    claims = metrics.get("claims")
    if not isinstance(claims, list) or not claims:
        raise ValueError("metrics must hold a non-empty 'claims' list: every experiment tests a claim of the paper.")
    problems = [p for i, entry in enumerate(claims) for p in _claim_problems(entry, i)]
    if problems:
        raise ValueError("invalid claims in metrics:\n  " + "\n  ".join(problems))


#: Words that mark a metrics key or table column as a measured time (or derived from one).
TIMING_WORDS = ("time", "second", "cpu", "wall", "cost", "crossover", "speedup")


def is_timing_key(key: str) -> bool:
    """Whether a metrics key or table column holds a measured time or a number derived from one.

    By convention such names contain one of :data:`TIMING_WORDS`; every other
    number an experiment writes must be the same, bit for bit, in every run of
    the same seed on the same machine.
    """
    lowered = key.lower()
    return any(word in lowered for word in TIMING_WORDS)


def without_timings(document: Any) -> Any:
    """``document`` (a parsed ``metrics.json``) with everything that may differ between runs removed.

    Keys named as measured times (:func:`is_timing_key`) are dropped at every
    level; a claim marked ``timing`` keeps its text, source and criterion but
    loses its statistic's value and its verdict (``holds`` and the undecided
    word ``verdict``, both read off measured times). What is left must be identical
    in two runs of an experiment with the same configuration.
    """
    if isinstance(document, dict):
        if document.get("timing") is True and "statistic" in document:
            kept = {k: v for k, v in document.items() if k not in ("holds", "note", "verdict")}
            kept["statistic"] = {"name": document["statistic"]["name"]}
            return kept
        return {k: without_timings(v) for k, v in document.items() if not is_timing_key(k)}
    if isinstance(document, list):
        return [without_timings(v) for v in document]
    return document


def write_metrics(output_dir: str | os.PathLike, metrics: Mapping[str, Any],
                  claims: Iterable[Claim | Mapping[str, Any]]) -> Path:
    """Write ``output_dir/metrics.json``: the key numbers plus the ``claims`` list.

    Parameters
    ----------
    output_dir : path
        The experiment's result directory (created if missing).
    metrics : mapping
        Key numbers of the figures, by name; numpy values are converted.
        Must not contain ``"claims"``.
    claims : iterable of Claim or dict
        The verdicts, built with :func:`claim`.

    Returns
    -------
    pathlib.Path
        The file written (keys sorted, indented, so diffs stay readable).
    """
    if not isinstance(metrics, Mapping):
        raise TypeError(f"metrics must be a mapping, got {type(metrics).__name__}.")
    if "claims" in metrics:
        raise ValueError("pass the claims through the 'claims' argument, not inside metrics.")
    document = to_jsonable(dict(metrics))
    document["claims"] = [c.to_dict() if isinstance(c, Claim) else to_jsonable(c) for c in claims]
    validate_metrics(document)
    path = experiment_dir(output_dir) / METRICS_FILE
    path.write_text(json.dumps(document, sort_keys=True, indent=2, allow_nan=False) + "\n")
    return path


def read_metrics(output_dir: str | os.PathLike) -> dict:
    """Load and validate ``output_dir/metrics.json``.

    Raises
    ------
    FileNotFoundError
        If the file is missing.
    ValueError
        If it is not valid JSON or breaks the structure of :func:`validate_metrics`.
    """
    path = Path(output_dir) / METRICS_FILE
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON: {err}") from None
    validate_metrics(document)
    return document


def experiment_dir(output_dir: str | os.PathLike, name: str | None = None) -> Path:
    """Return ``output_dir`` (or ``output_dir/name``), creating it if needed."""
    path = Path(output_dir) if name is None else Path(output_dir) / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def _check_stem(stem: str) -> str:
    if not isinstance(stem, str) or not stem or Path(stem).name != stem or stem.startswith("."):
        raise ValueError(f"a file stem must be a plain file name without directories, got {stem!r}.")
    return stem


def write_table(df: pd.DataFrame | Mapping[str, Any] | list[dict[str, Any]], output_dir: str | os.PathLike,
                name: str) -> Path:
    """Write the values behind a figure as a tidy CSV ``output_dir/name.csv``.

    Tidy: one row per observation, one column per variable, no index. A dict
    of columns or a list of row dicts is accepted and turned into a DataFrame.
    A column of integers with missing cells, which pandas holds as floats, is
    written as integers (:func:`_integers_kept`).

    Raises
    ------
    ValueError
        If the columns are not unique, non-empty strings (a MultiIndex is not tidy).
    """
    import pandas as pd

    name = _check_stem(name.removesuffix(".csv") if isinstance(name, str) else name)
    if not isinstance(df, pd.DataFrame):
        df = pd.DataFrame(df)
    columns = list(df.columns)
    if isinstance(df.columns, pd.MultiIndex) or not all(isinstance(c, str) and c for c in columns):
        raise ValueError(f"a tidy table needs non-empty string column names, got {columns!r}.")
    if len(set(columns)) != len(columns):
        raise ValueError(f"a tidy table needs unique column names, got {columns!r}.")
    path = experiment_dir(output_dir) / f"{name}.csv"
    _integers_kept(df).to_csv(path, index=False)
    return path


# Floats above 2**53 are not all integers that a float can tell apart: such a column stays float.
_EXACT_INTEGER_LIMIT = 2.0**53


def _integers_kept(df):
    """``df`` with each float column that is integers with missing cells as pandas' nullable ``Int64``.

    pandas has no integer NaN: a column of integers with one missing cell (a
    row without a seed, a frame without that column in a ``pd.concat``) is
    stored as float64, and CSV would show ``seed`` as ``736450847.0``. Such a
    column (finite whole numbers below 2**53 beside at least one missing cell)
    is written as integers with empty cells. A float column without missing
    cells is left alone, so a measured ``1.0`` stays ``1.0``.
    """
    converted = {}
    for column in df.columns:
        if df[column].dtype.kind != "f":
            continue
        values = df[column].to_numpy(dtype=float, na_value=np.nan)
        present = values[~np.isnan(values)]
        whole = bool(np.all(np.abs(present) < _EXACT_INTEGER_LIMIT) and np.all(present == np.trunc(present)))
        if whole and 0 < present.size < values.size:
            converted[column] = df[column].astype("Int64")
    return df.assign(**converted) if converted else df


def set_blas_threads(n: int = 1) -> threadpool_limits:
    """Limit BLAS/OpenMP threads for the rest of the process.

    On small machines, many tiny model fits run far faster on one BLAS thread
    than on several competing ones; batched linear algebra is where threads pay.

    Returns
    -------
    threadpoolctl.threadpool_limits
        The limiter; call its ``restore_original_limits()`` to undo.
    """
    from threadpoolctl import threadpool_limits

    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}.")
    return threadpool_limits(limits=int(n))


def progress(iterable: Iterable[_Item], desc: str = "", total: int | None = None, steps: int = 10,
             file: IO[str] | None = None) -> Iterator[_Item]:
    """Yield from ``iterable``, printing a line at every ``1/steps`` of the way.

    Plain lines (no carriage returns) read well both in a terminal and in
    papermill's streamed log, which is how long runs show progress.

    Parameters
    ----------
    iterable : iterable
        The work items.
    desc : str
        A label for the lines.
    total : int, optional
        Number of items; taken from ``len(iterable)`` when possible.
    steps : int
        How many progress lines to print over the whole run.
    file : file-like, optional
        Where to print (default: standard output).
    """
    if total is None:
        total = len(cast(Sized, iterable)) if hasattr(iterable, "__len__") else None
    out = sys.stdout if file is None else file
    label = f"{desc}: " if desc else ""
    start = time.perf_counter()
    next_mark = 1
    done = 0
    for done, item in enumerate(iterable, start=1):
        yield item
        elapsed = time.perf_counter() - start
        if total:
            if done * steps >= next_mark * total or done == total:
                eta = elapsed / done * (total - done)
                print(f"{label}{done}/{total} ({100 * done // total}%) {elapsed:.1f} s elapsed, ~{eta:.0f} s left",
                      file=out, flush=True)
                next_mark = done * steps // total + 1
        elif done & (done - 1) == 0:  # unknown length: print at powers of two
            print(f"{label}{done} done, {elapsed:.1f} s elapsed", file=out, flush=True)
