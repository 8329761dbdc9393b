"""Replications of a long run: their seeds, checked at the boundary, and their finished parts, kept on disk.

:func:`check_replication_seeds` refuses a bad list of extra data draws before
any work.

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
import numbers
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["PartCache", "check_replication_seeds"]


def check_replication_seeds(replication_seeds: Any, seed: int) -> list[int]:
    """The extra data draws' seeds as a list of ints, refused before any work if they are not usable.

    Parameters
    ----------
    replication_seeds : list or tuple of int, or None
        Distinct non-negative integers, without the main run's ``seed`` (its
        draw is the first); empty or None (the configuration's ``null``): no
        extra draw.
    seed : int
        The main run's seed.

    Returns
    -------
    list of int

    Raises
    ------
    TypeError
        If ``replication_seeds`` is not a list or tuple of integers.
    ValueError
        If a seed is negative, repeated, or the main seed.
    """
    if replication_seeds is None:
        return []
    if not isinstance(replication_seeds, (list, tuple)):
        raise TypeError(f"replication_seeds must be a list of integers, got {replication_seeds!r} of type "
                        f"{type(replication_seeds).__name__}.")
    bad = [s for s in replication_seeds if isinstance(s, bool) or not isinstance(s, numbers.Integral)]
    if bad:
        raise TypeError(f"replication_seeds must hold integers only, got {bad!r} in {replication_seeds!r}.")
    seeds = [int(s) for s in replication_seeds]
    negative = [i for i, s in enumerate(seeds) if s < 0]
    if negative:
        raise ValueError(f"replication_seeds must be >= 0: replication_seeds[{negative[0]}] is "
                         f"{seeds[negative[0]]} in {replication_seeds!r}.")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"replication_seeds must hold distinct values, got {replication_seeds!r}.")
    if isinstance(seed, numbers.Integral) and int(seed) in seeds:
        raise ValueError(f"replication_seeds must not hold the main run's seed {int(seed)}: the main seed "
                         f"{int(seed)}'s draw is already the first, got {replication_seeds!r}.")
    return seeds


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
