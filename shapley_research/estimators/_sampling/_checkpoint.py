"""Checkpoint files of the sampling loop: resume a stopped run, lose nothing.

A checkpoint holds what the loop of :mod:`shapley_research.estimators._sampling._loop` needs
to continue: the merged :class:`MeanState` of the batches done, how many
batches and evaluations that took (together a :class:`LoopSnapshot`), and
the run's *context* (utilities of the anchors, evaluated once). Batch ``b`` always draws from the stream
``(seed, b)``, so continuing at batch ``batches`` reproduces the uninterrupted
run bit for bit.

A file is checked before anything is evaluated and never overwritten when it
does not belong to the call:

* it must be an ``.npz`` archive that numpy reads without pickle, of this
  format version, with a SHA-256 of its contents that matches (a truncated or
  edited file is rejected, not half-read);
* its *fingerprint* (estimator, options, players, batch size, seed, and the
  game's own fingerprint where both the file and the call know one,
  :func:`~shapley_research.games.game_identity`) must equal the call's, since
  otherwise its samples would not be the call's samples.

The file is an ``.npz`` archive of three arrays: ``mean`` and ``m2`` (the
state's moments) and ``meta``, a JSON text with ``format`` (:data:`FORMAT`),
``fingerprint``, ``context``, ``count``, ``n_evaluations``, ``batches``,
``closed`` where a run continued a finished one (the samples of each earlier run
that ended on a partial batch: their batches stay as they were) and ``sha256``
(of the other entries and the two arrays' bytes).

Writes are atomic (a temporary file in the same folder, flushed and
``os.replace``-d over the old one), so a run killed while saving leaves the
previous good state in place.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Protocol

import numpy as np

from ._batches import batch_count
from ._replay import BatchLog

FORMAT = 1


class CheckpointError(ValueError):
    """A checkpoint file that is unreadable, corrupted, or from another run."""


def check_checkpoint_path(path: object) -> None:
    """A ``TypeError`` unless ``path`` is a file path (``str`` or ``os.PathLike``): for callers that must refuse a
    bad ``checkpoint`` before work that comes ahead of opening it."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"checkpoint must be a file path (str or os.PathLike), got {type(path).__name__}.")


def _digest(meta: dict, mean: np.ndarray, m2: np.ndarray) -> str:
    blob = json.dumps(meta, sort_keys=True).encode() + mean.tobytes() + m2.tobytes()
    return hashlib.sha256(blob).hexdigest()


@dataclass(frozen=True, eq=False)
class LoopSnapshot:
    """The state of a sampling run after its first ``batches`` batches: what a checkpoint stores.

    Attributes
    ----------
    mean, m2 : numpy.ndarray
        The merged moments (:class:`~._loop.MeanState`'s ``mean`` and ``m2``).
    count : int
        Samples merged.
    n_evaluations : int
        Utility evaluations those batches made.
    batches : int
        Batches merged: the run continues at batch ``batches``.
    closed : tuple of int
        The samples of the finished runs this one continued, each of which
        ended on a partial batch (:func:`~._batches.batch_sizes`); empty for
        one run.
    """

    mean: np.ndarray
    m2: np.ndarray
    count: int
    n_evaluations: int
    batches: int
    closed: tuple[int, ...] = ()

    @classmethod
    def of(cls, state, n_evaluations: int, batches: int, closed: tuple[int, ...] = ()) -> "LoopSnapshot":
        """``state``'s moments now (a :class:`~._loop.MeanState`).

        Held without a copy: a merge replaces the state's arrays by new ones and
        never writes into them, so the snapshot keeps what it was given (a copy
        per batch cost two passes over a state of ``O(N^2)`` entries).
        """
        return cls(state.mean, state.m2, state.count, n_evaluations, batches, closed)

    @classmethod
    def held_by(cls, checkpoint) -> "LoopSnapshot":
        """What a loaded ``checkpoint`` holds (a :class:`Checkpoint`, or an object with its attributes)."""
        return cls(checkpoint.mean, checkpoint.m2, checkpoint.count, checkpoint.n_evaluations, checkpoint.batches,
                   tuple(checkpoint.closed))

    def ended_on_partial_batch(self, batch_size: int) -> bool:
        """Whether the last batch was a partial one: the end of a finished run of ``count`` samples
        (counted from the runs this one continued, whose batches are its ``closed`` segments)."""
        units = self.count - sum(self.closed)
        return units % batch_size != 0 and self.batches == batch_count(self.count, batch_size, self.closed)

    def write(self, checkpoint, force: bool = False) -> bool:
        """``checkpoint.save`` of this state (every ``checkpoint.interval`` seconds, or now with ``force``)."""
        return checkpoint.save(self.mean, self.m2, self.count, self.n_evaluations, self.batches, force=force,
                               closed=self.closed)

    def stop_note(self, checkpoint, batch_size: int, unit: str) -> str:
        """What a run stopped with this state saved keeps: its whole batches, and the batch under way's
        utilities in the batch log (:mod:`._replay`), where the batch ran in this process."""
        where = getattr(checkpoint, "path", "the checkpoint")
        log = getattr(checkpoint, "batch_log", None)
        logged, path = (0, None) if log is None else (log.logged(self.batches), log.path)
        kept = (f"; {logged} utilities of the batch under way are logged in {path}, which a rerun takes "
                "instead of evaluating them again" if logged else
                "; the batch under way had logged no utility (batches run by joblib's workers log none) and is "
                "evaluated again")
        return (f"stopped: {where} holds {self.count} {unit}s ({self.n_evaluations} evaluations, {self.batches} "
                f"whole batches of {batch_size}){kept}. Rerun the same call to resume.")


class LoopStore(Protocol):
    """Where a sampling run resumes from and saves to: a :class:`Checkpoint`, or an object with its attributes."""

    @property
    def loaded(self) -> bool: ...
    @property
    def mean(self) -> np.ndarray | None: ...
    @property
    def m2(self) -> np.ndarray | None: ...
    @property
    def count(self) -> int: ...
    @property
    def n_evaluations(self) -> int: ...
    @property
    def batches(self) -> int: ...
    @property
    def closed(self) -> tuple[int, ...]: ...

    def save(self, mean: np.ndarray, m2: np.ndarray, count: int, n_evaluations: int, batches: int,
             force: bool = False, closed: tuple[int, ...] = ()) -> bool: ...

    def refuse(self, why: str) -> Exception: ...


class Checkpoint:
    """The running state of one sampling run, kept in a file.

    Parameters
    ----------
    path : str or os.PathLike
        The file. If it exists it is read and validated at once.
    fingerprint : dict
        JSON-serialisable description of the call; a file written by a call
        with another fingerprint is refused. Its ``"seed"`` entry may be
        ``None`` (the caller passed no seed): the file's seed is then adopted.
    dim : int
        Dimension of the sample vectors.
    interval : float
        Minimum seconds between two writes during the run (the final state is
        always written).
    """

    def __init__(self, path: str | os.PathLike[str], fingerprint: dict, dim: int, interval: float) -> None:
        check_checkpoint_path(path)
        self.path = Path(path)
        if self.path.is_dir():
            raise ValueError(f"checkpoint={str(self.path)!r} is a directory; pass a file path.")
        self.fingerprint = dict(fingerprint)
        self.dim = dim
        self.interval = interval
        self.context: dict = {}
        self.mean: np.ndarray | None = None
        self.m2: np.ndarray | None = None
        self.count = self.n_evaluations = self.batches = 0
        self.closed: tuple[int, ...] = ()
        self.loaded = self.path.exists()
        self._last_save = time.monotonic()
        self._log: BatchLog | None = None
        if self.loaded:
            self._load()

    @property
    def batch_log(self) -> BatchLog:
        """The run's within-batch log (:mod:`._replay`), the sidecar ``<path>.batches``: opened when first asked
        for, once the fingerprint holds the run's seed."""
        if self._log is None:
            self._log = BatchLog(self.path.with_name(self.path.name + ".batches"), self.fingerprint, self.loaded)
        return self._log

    @property
    def snapshot(self) -> LoopSnapshot:
        """The state the file held when it was opened (``None`` moments for a new file)."""
        return LoopSnapshot.held_by(self)

    @property
    def seed(self):
        return self.fingerprint.get("seed")

    def refuse(self, why: str) -> CheckpointError:
        return CheckpointError(
            f"checkpoint={str(self.path)!r} {why}. The file was left untouched; delete it or "
            "pass another checkpoint path to start a new run."
        )

    def _load(self) -> None:
        try:
            with np.load(self.path, allow_pickle=False) as archive:
                meta = json.loads(str(archive["meta"][()]))
                mean, m2 = np.array(archive["mean"], dtype=float), np.array(archive["m2"], dtype=float)
        except OSError as exc:  # permissions, a folder: the file may hold a good run, so no advice to delete it
            raise CheckpointError(f"checkpoint={str(self.path)!r} could not be read ({type(exc).__name__}: "
                                  f"{exc.strerror or exc}). Nothing was changed.") from exc
        except zipfile.BadZipFile as exc:
            raise self.refuse(f"is damaged or not a checkpoint (BadZipFile: {exc})") from exc
        except (KeyError, json.JSONDecodeError) as exc:
            raise self.refuse(f"is an .npz archive but not a checkpoint of this package ({type(exc).__name__}: "
                              f"{exc})") from exc
        except Exception as exc:  # numpy's refusals (no archive, pickled data): its advice on pickles does not apply
            raise self.refuse(f"is not a checkpoint file (not an .npz archive this package wrote: "
                              f"{type(exc).__name__})") from exc
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise self.refuse(f"has an unknown format (expected format {FORMAT})")
        digest = meta.pop("sha256", None)
        if digest != _digest(meta, mean, m2):
            raise self.refuse("is corrupted (its checksum does not match its contents)")
        theirs = dict(meta["fingerprint"])
        if self.fingerprint.get("seed") is None:
            self.fingerprint["seed"] = theirs.get("seed")
        ours = dict(self.fingerprint)
        if theirs.get("game") is None or ours.get("game") is None:
            # a game unknown on one side (no fingerprint, e.g. a wrapper counting calls, or a file written before
            # games had fingerprints) is not compared
            theirs.pop("game", None)
            ours.pop("game", None)
        if theirs != ours:
            keys = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
            detail = ", ".join(f"{k}: file {theirs.get(k)!r} vs call {ours.get(k)!r}" for k in keys)
            raise self.refuse(f"was written by a different run ({detail})")
        if mean.shape != (self.dim,) or m2.shape != (self.dim,):
            raise self.refuse(f"holds statistics of dimension {mean.shape}, expected ({self.dim},)")
        self.count, self.n_evaluations, self.batches = meta["count"], meta["n_evaluations"], meta["batches"]
        self.context = meta["context"]
        self.closed = tuple(int(units) for units in meta.get("closed", ()))
        self.mean, self.m2 = mean, m2

    def save(self, mean: np.ndarray, m2: np.ndarray, count: int, n_evaluations: int, batches: int,
             force: bool = False, closed: tuple[int, ...] = ()) -> bool:
        """Write the state atomically (unless the interval has not passed); return whether it wrote."""
        if not force and time.monotonic() - self._last_save < self.interval:
            return False
        meta = {"format": FORMAT, "fingerprint": self.fingerprint, "context": self.context,
                "count": int(count), "n_evaluations": int(n_evaluations), "batches": int(batches)}
        if closed:  # absent for one run, so its files read as before
            meta["closed"] = [int(units) for units in closed]
        mean, m2 = np.ascontiguousarray(mean, dtype=float), np.ascontiguousarray(m2, dtype=float)
        meta_text = json.dumps({**meta, "sha256": _digest(meta, mean, m2)}, sort_keys=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as handle:
                np.savez(handle, meta=np.array(meta_text), mean=mean, m2=m2)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        finally:
            if tmp.exists():
                tmp.unlink()
        self._last_save = time.monotonic()
        if self._log is not None:  # the batches the file holds need no log
            self._log.saved(int(batches))
        return True


@contextmanager
def terminated_as_exit(saving: bool = True) -> Iterator[None]:
    """While the block runs, SIGTERM raises ``SystemExit(128 + SIGTERM)`` instead of ending the process at once.

    Only when ``saving`` (a run with a checkpoint): without one there is nothing to save.

    ``kill``, ``timeout`` and batch schedulers (SLURM, at the end of a job's
    time) stop a run with SIGTERM, whose default action gives Python no chance
    to save; as an exception it reaches the sampling loop's handler, which
    writes the checkpoint as on Ctrl-C, and the process then exits with the
    status the signal would have given (143; an interactive shell or a notebook kernel catches
    ``SystemExit`` and lives on, the state saved). Installed only in the main
    thread (where Python runs signal handlers) and only over SIGTERM's default
    action: a handler someone else installed (a notebook kernel, a Dask
    worker) is left alone.
    """
    if (not saving or threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return

    def exit_on_terminate(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the save short
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, exit_on_terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
