"""Within-batch replay logs: a stopped run keeps the utilities its unfinished batch had computed.

A checkpoint (:mod:`._checkpoint`) holds whole batches, and a batch of a slow
utility (a model fitted per coalition) can take minutes. While a batch runs in
this process, its utilities are appended to a *batch log*, a sidecar file next
to the checkpoint (``<checkpoint>.batches``); a resumed run draws the same
batch again (its draws are the stream ``(seed, batch)``), and takes the logged
utilities instead of evaluating their coalitions again. The values are those
of the uninterrupted run, bit for bit.

What is logged are the calls the estimator makes to the game, through the
proxy :class:`ReplayGame` that the driver hands to the estimator: for the
``k``-th call of batch ``b``, the kind (``evaluate`` or
``evaluate_prefixes``), a SHA-256 of its masks (or permutations) and the
utilities returned. On a resume, call ``k`` of batch ``b`` takes the logged
utilities only when the digest of its own masks is the logged one; the first
call that differs ends the replay with a :class:`ReplayWarning` (the calls
before it were of the very same coalitions). A game whose rows are
independent (``game.independent_rows``: a model fitted per coalition, a
function of one mask) has each call split into parts of about
:data:`LOG_SECONDS` and logged part by part, so even one large call keeps what
it computed; other games are logged call by call (a chunk of about ``2**22``
mask cells, :func:`~._batches.evaluation_chunks`).

The file: a magic line, then records ``(json length, data length,
SHA-256 of json and data, json, data)``: a header naming the run (a digest of
the checkpoint's fingerprint: estimator, options, batch size, seed, game),
then per batch a ``batch`` record, and per call a ``call`` record and its
``rows`` records (float64 utilities). A record cut short at the end (a killed
process) ends the log quietly; a record whose checksum fails, or a log of
another run, is ignored whole with a :class:`ReplayWarning`, never used.
Records are flushed as they are written and synced to disk every
:data:`SYNC_SECONDS`. A batch's records are dropped once the checkpoint file
holds that batch (:meth:`BatchLog.saved`), and the file is removed once it
holds no batch.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import struct
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ...games import evaluate_prefixes
from ..._validation import check_utilities

__all__ = ["BatchLog", "ReplayGame", "ReplayWarning", "LOG_SECONDS", "SYNC_SECONDS"]

LOG_SECONDS = 2.0  # a call of a game with independent rows is evaluated and logged in parts of about this long
SYNC_SECONDS = 5.0  # the log is synced to disk at most this often (it is flushed at every record)
_MAGIC = b"shapley_research batch log 1\n"
_HEAD = struct.Struct("<IQ32s")  # json length, data length, SHA-256 of json + data

# (thread id, recorder) of the batch being evaluated in this thread, or None
_ACTIVE: contextvars.ContextVar[tuple[int, "_Recorder"] | None] = contextvars.ContextVar(
    "shapley_research_batch_log", default=None)


class ReplayWarning(UserWarning):
    """A batch log that is not used: corrupted, of another run, or not matching the batch drawn again."""


def array_digest(array: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and contents (a boolean array's packed bits)."""
    array = np.ascontiguousarray(array)
    digest = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    digest.update((np.packbits(array, axis=-1) if array.dtype == np.bool_ else array).tobytes())
    return digest.hexdigest()


class ReplayGame:
    """The game an estimator evaluates while a run keeps a batch log: ``game`` itself, its calls logged.

    Outside a logged batch (no checkpoint, joblib's workers, the anchors) it
    passes every call through unchanged. Other attributes are the game's.
    """

    def __init__(self, game: Any) -> None:
        self.game = game

    @property
    def n_players(self) -> int:
        return self.game.n_players

    def evaluate(self, masks: Any) -> Any:
        recorder = _recorder()
        return self.game.evaluate(masks) if recorder is None else recorder.evaluate(self.game, masks)

    @property
    def evaluate_prefixes(self) -> Any:
        """The game's own ``evaluate_prefixes`` (an ``AttributeError`` where it has none), logged."""
        own = self.game.evaluate_prefixes  # raises AttributeError without one: supports_prefixes stays as it was

        def logged(permutations: Any) -> Any:
            recorder = _recorder()
            return own(permutations) if recorder is None else recorder.prefixes(self.game, permutations)

        return logged

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "game":  # no recursion while unpickling, before ``game`` is set
            raise AttributeError(name)
        return getattr(self.game, name)

    def __reduce__(self) -> tuple:
        return ReplayGame, (self.game,)

    def __repr__(self) -> str:
        return repr(self.game)


def _recorder() -> "_Recorder | None":
    active = _ACTIVE.get()
    return active[1] if active is not None and active[0] == threading.get_ident() else None


@dataclass
class _Call:
    """One logged call: its kind, the digest of its input, its rows, and the utilities logged so far."""

    kind: str
    digest: str
    rows: int
    parts: list[np.ndarray] = field(default_factory=list)

    @property
    def done(self) -> int:
        return sum(part.size for part in self.parts)


def _record(meta: dict, data: bytes = b"") -> bytes:
    text = json.dumps(meta, sort_keys=True).encode()
    return _HEAD.pack(len(text), len(data), hashlib.sha256(text + data).digest()) + text + data


class _Corrupted(ValueError):
    pass


def _read_records(blob: bytes) -> Iterator[tuple[dict, bytes, int, int]]:
    """``(meta, data, start, end)`` of every record of a log's bytes (after the magic line).

    A record cut short at the end (a killed process) ends them quietly; one that fails its checksum raises.
    """
    at = len(_MAGIC)
    while at + _HEAD.size <= len(blob):
        n_text, n_data, digest = _HEAD.unpack_from(blob, at)
        end = at + _HEAD.size + n_text + n_data
        if end > len(blob):
            return  # cut short: what follows was never written
        body = blob[at + _HEAD.size:end]
        if hashlib.sha256(body).digest() != digest:
            raise _Corrupted(f"the record at byte {at} does not match its checksum")
        yield json.loads(body[:n_text]), body[n_text:], at, end
        at = end


@dataclass
class _Parsed:
    """A log's batches (``batch -> (size, calls)``), where its whole records end, and each record's batch."""

    batches: dict[int, tuple[int, list[_Call]]]
    end: int
    spans: list[tuple[int | None, int, int]]  # (batch or None for the header, start, end) of every record


def _parse(blob: bytes, fingerprint: dict) -> _Parsed:
    """Read a log, or raise :class:`_Corrupted` (saying why). Of two groups of one batch (written again as it
    was replayed) the one holding more utilities is kept: both are the start of the same calls."""
    if not blob.startswith(_MAGIC):
        raise _Corrupted("it is not a batch log of this package")
    records = _read_records(blob)
    head = next(records, None)
    if head is None or head[0].get("type") != "run":
        raise _Corrupted("it has no header")
    if not _same_run(head[0].get("fingerprint"), fingerprint):
        raise _Corrupted("it was written by another run (other estimator, options, seed or game)")
    batches: dict[int, tuple[int, list[_Call]]] = {}
    spans: list[tuple[int | None, int, int]] = [(None, head[2], head[3])]
    group: tuple[int, int, list[_Call]] | None = None
    for meta, data, start, end in records:
        kind = meta.get("type")
        if kind == "batch":
            _keep(batches, group)
            group = (int(meta["batch"]), int(meta["size"]), [])
        elif kind == "call" and group is not None:
            group[2].append(_Call(str(meta["kind"]), str(meta["digest"]), int(meta["rows"])))
        elif kind == "rows" and group is not None and group[2] and meta.get("start") == group[2][-1].done:
            group[2][-1].parts.append(np.frombuffer(data, dtype="<f8").astype(float))
            if group[2][-1].done > group[2][-1].rows:
                raise _Corrupted("a call holds more utilities than rows")
        else:
            raise _Corrupted(f"a {kind!r} record is out of place")
        spans.append((group[0], start, end))
    _keep(batches, group)
    return _Parsed(batches, spans[-1][2], spans)


def _same_run(theirs: object, ours: dict) -> bool:
    """Whether a log's fingerprint is the checkpoint's: the game's compared only where both know it, as the
    checkpoint compares it (:class:`~._checkpoint.Checkpoint`)."""
    if not isinstance(theirs, dict):
        return False
    theirs, ours = dict(theirs), dict(ours)
    if theirs.get("game") is None or ours.get("game") is None:
        theirs.pop("game", None)
        ours.pop("game", None)
    return theirs == ours


def _keep(batches: dict[int, tuple[int, list[_Call]]], group: tuple[int, int, list[_Call]] | None) -> None:
    if group is None:
        return
    batch, size, calls = group
    if batch not in batches or _logged(calls) >= _logged(batches[batch][1]):
        batches[batch] = (size, calls)


def _logged(calls: list[_Call]) -> int:
    return sum(call.done for call in calls)


class BatchLog:
    """The batch log of one checkpoint: replays a resumed batch's utilities and logs new ones.

    Parameters
    ----------
    path : pathlib.Path
        The sidecar file.
    fingerprint : dict
        The checkpoint's fingerprint (with its seed): the run the log belongs to.
    resumed : bool
        Whether the checkpoint file was read: a log without one (its run was
        never saved) is not used.
    """

    def __init__(self, path: Path, fingerprint: dict, resumed: bool) -> None:
        self.path = path
        self.fingerprint = json.loads(json.dumps(fingerprint, default=str))  # as the header holds it
        self._handle: Any = None
        self._synced = time.monotonic()
        self._held: dict[int, tuple[int, list[_Call]]] = {}  # logged batches not replayed yet
        self._in_file: set[int] = set()  # batches with records in the file
        self._logged: dict[int, int] = {}  # utilities logged by this process, by batch
        if path.exists():
            self._adopt(resumed)

    def _adopt(self, resumed: bool) -> None:
        """Take over the file left by an earlier process, or remove it with a warning saying why."""
        try:
            if not resumed:
                raise _Corrupted("no checkpoint file holds the run it continues")
            blob = self.path.read_bytes()
            parsed = _parse(blob, self.fingerprint)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            why = str(exc) if isinstance(exc, _Corrupted) else f"it could not be read ({type(exc).__name__}: {exc})"
            warnings.warn(f"the batch log {str(self.path)!r} is ignored: {why}. The utilities it logged are "
                          "evaluated again.", ReplayWarning, stacklevel=2)
            self._unlink()
            return
        if parsed.end < len(blob):  # a record cut short: appended records must follow whole ones
            with open(self.path, "r+b") as handle:
                handle.truncate(parsed.end)
        self._held = parsed.batches
        self._in_file = {batch for batch, _, _ in parsed.spans if batch is not None}

    def logged(self, batch: int) -> int:
        """Utilities of ``batch`` this process has logged (those replayed included)."""
        return self._logged.get(batch, 0)

    def holds(self, batch: int) -> bool:
        """Whether utilities of ``batch`` are logged, to be replayed when it runs again."""
        return batch in self._held

    @contextmanager
    def recording(self, batch: int, size: int) -> Iterator[None]:
        """While the block evaluates ``batch`` (of ``size`` units) in this thread, log its calls and replay
        those the log holds."""
        held_size, calls = self._held.pop(batch, (size, []))
        if held_size != size:
            warnings.warn(f"the batch log {str(self.path)!r} holds batch {batch} with {held_size} units but it "
                          f"runs with {size}: its utilities are ignored and evaluated again.", ReplayWarning,
                          stacklevel=3)
            calls = []
        self._open()
        self._in_file.add(batch)
        self.write(_record({"type": "batch", "batch": batch, "size": size}))
        token = _ACTIVE.set((threading.get_ident(), _Recorder(self, batch, calls)))
        try:
            yield
        finally:
            _ACTIVE.reset(token)
            self._sync()

    def _open(self) -> None:
        if self._handle is not None:
            return
        if self.path.exists():  # a log taken over, or rewritten by saved()
            self._handle = open(self.path, "ab")
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "wb")
        self._handle.write(_MAGIC + _record({"type": "run", "fingerprint": self.fingerprint}))

    def write(self, record: bytes) -> None:
        """Append ``record``, flushed (synced to disk every :data:`SYNC_SECONDS`)."""
        self._handle.write(record)
        self._handle.flush()
        if time.monotonic() - self._synced >= SYNC_SECONDS:
            self._sync()

    def _sync(self) -> None:
        if self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
        self._synced = time.monotonic()

    def saved(self, batches: int) -> None:
        """The checkpoint file now holds batches ``0 .. batches - 1``: drop their records (the file, if none left)."""
        self._held = {batch: held for batch, held in self._held.items() if batch >= batches}
        self._logged = {batch: rows for batch, rows in self._logged.items() if batch >= batches}
        merged = {batch for batch in self._in_file if batch < batches}
        if not merged:
            return
        if merged == self._in_file:
            self._unlink()
            return
        self.close()
        blob = self.path.read_bytes()
        kept = b"".join(blob[start:end] for batch, start, end in _parse(blob, self.fingerprint).spans
                        if batch is None or batch >= batches)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as handle:
            handle.write(_MAGIC + kept)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        self._in_file -= merged

    def _unlink(self) -> None:
        self.close()
        self._in_file = set()
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        """Close the file (kept on disk while it holds batches the checkpoint does not)."""
        if self._handle is not None:
            self._sync()
            self._handle.close()
            self._handle = None


class _Recorder:
    """The calls of one batch: replayed from the log while they match it, then evaluated and logged."""

    def __init__(self, log: BatchLog, batch: int, calls: list[_Call]) -> None:
        self.log, self.batch, self.held, self.position = log, batch, calls, 0

    def _replayed(self, kind: str, digest: str, rows: int) -> _Call | None:
        """The logged call matching the next call, or None (a mismatch ends the replay, with a warning)."""
        if self.position >= len(self.held):
            return None
        call = self.held[self.position]
        self.position += 1
        if (call.kind, call.digest, call.rows) == (kind, digest, rows):
            return call
        warnings.warn(f"the batch log {str(self.log.path)!r} does not match batch {self.batch} as drawn again "
                      f"(call {self.position} differs): its remaining utilities are ignored and evaluated "
                      "again.", ReplayWarning, stacklevel=5)
        self.held = []
        return None

    def _begin(self, kind: str, digest: str, rows: int, partial: bool) -> list[np.ndarray]:
        """Log the start of a call; the utilities the log holds for it (written again): all of them, or with
        ``partial`` (a game whose rows are independent) the first rows."""
        call = self._replayed(kind, digest, rows)
        self.log.write(_record({"type": "call", "kind": kind, "digest": digest, "rows": rows}))
        parts = [] if call is None or (call.done < rows and not partial) else call.parts
        done = 0
        for part in parts:
            self._rows(done, part)
            done += part.size
        return list(parts)

    def _rows(self, start: int, values: np.ndarray) -> None:
        self.log._logged[self.batch] = self.log._logged.get(self.batch, 0) + values.size
        self.log.write(_record({"type": "rows", "start": start}, np.ascontiguousarray(values, dtype="<f8").tobytes()))

    def evaluate(self, game: Any, masks: Any) -> np.ndarray:
        """``game.evaluate(masks)``: replayed, or evaluated (in parts where the rows are independent) and logged.

        A part of ``k`` rows is followed by one of about :data:`LOG_SECONDS` at the rate measured (at most
        ``4 k`` rows, at least four per worker of a game that fits in parallel).
        """
        masks = np.asarray(masks)
        rows = masks.shape[0] if masks.ndim else 0
        alone = bool(getattr(game, "independent_rows", False))
        parts = self._begin("evaluate", array_digest(masks), rows, alone)
        done = sum(part.size for part in parts)
        step, floor = 1, _parallel_rows(game)
        while done < rows:
            stop = min(rows, done + max(step, floor)) if alone else rows
            began = time.perf_counter()
            values = check_utilities(game.evaluate(masks if (done, stop) == (0, rows) else masks[done:stop]),
                                     stop - done)
            self._rows(done, values)
            parts.append(values)
            elapsed = time.perf_counter() - began
            step = max(1, min(4 * (stop - done), int((stop - done) * LOG_SECONDS / max(elapsed, 1e-9))))
            done = stop
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.empty(0)

    def prefixes(self, game: Any, permutations: Any) -> np.ndarray:
        """``game.evaluate_prefixes(permutations)``: replayed, or evaluated and logged (one call)."""
        permutations = np.asarray(permutations)
        m, n = permutations.shape
        parts = self._begin("prefixes", array_digest(permutations), m * n, False)
        if parts:
            return np.concatenate(parts).reshape(m, n)
        values = evaluate_prefixes(game, permutations)
        self._rows(0, values.reshape(-1))
        return values


def _parallel_rows(game: Any) -> int:
    """The fewest rows of one part of a call: four per worker of a game that fits a call's rows in parallel."""
    jobs = getattr(game, "n_jobs", None)
    if jobs in (None, 1) or not isinstance(jobs, int):
        return 1
    from joblib import effective_n_jobs

    return 4 * effective_n_jobs(jobs)
