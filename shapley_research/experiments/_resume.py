"""Finished parts of a long run, kept on disk until the run ends, so that a stopped run resumes.

An experiment that repeats a costly unit of work (a data draw, a variant of
the protocol) writes each unit's result, as soon as it is done, to a JSON
file named by the unit's label and a fingerprint of everything the result
depends on (:class:`PartCache`); a rerun after a stop reads the finished
units back instead of recomputing them, and the run removes the files once
every unit is done, so a finished run leaves nothing behind. JSON keeps
floats exactly (``repr`` round trip), NaN included, so a resumed run gives
the same bits as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["PartCache"]


class PartCache:
    """Results of finished units as ``FOLDER/PREFIX<label>_<key>.json``, keyed by a fingerprint of the run.

    Parameters
    ----------
    folder : path
        Where the files wait (created on the first write).
    prefix : str
        Start of every file name; :meth:`clear` removes the files it starts.
    fingerprint : dict
        Everything the results depend on (settings, and numbers of the main
        run that a code change would move); its hash ``key`` ends every file
        name, so a file of another run is never read.
    valid : callable, optional
        ``valid(label, value)``: whether a file's content is a result of
        ``label`` (a file that fails is recomputed).
    """

    def __init__(self, folder: str | os.PathLike, prefix: str, fingerprint: dict[str, Any],
                 valid: Callable[[Any, Any], bool] | None = None) -> None:
        self.folder, self.prefix, self.valid = Path(folder), str(prefix), valid
        text = json.dumps(fingerprint, sort_keys=True, default=str)
        self.key = hashlib.sha256(text.encode()).hexdigest()[:16]

    def path(self, label: Any) -> Path:
        """The file of ``label``'s result."""
        return self.folder / f"{self.prefix}{label}_{self.key}.json"

    def read(self, label: Any) -> Any | None:
        """``label``'s result, or None (no file, unreadable, or not valid)."""
        try:
            value = json.loads(self.path(label).read_text())
        except (OSError, ValueError):
            return None
        return value if self.valid is None or self.valid(label, value) else None

    def write(self, label: Any, value: Any) -> None:
        """Write ``label``'s result atomically (a stop mid-write leaves no half file)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.path(label)
        partial = target.with_name(target.name + ".part")
        partial.write_text(json.dumps(value))
        os.replace(partial, target)

    def clear(self) -> None:
        """Remove every file of this prefix (this run's and stale ones), and the folder if that empties it."""
        if not self.folder.is_dir():
            return
        for path in self.folder.glob(f"{self.prefix}*"):
            path.unlink()
        if not any(self.folder.iterdir()):
            self.folder.rmdir()
