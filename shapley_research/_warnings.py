"""Warnings collected per thread instead of shown: a thread-safe ``warnings.catch_warnings``.

``warnings.catch_warnings`` saves and restores the process-wide filters and
display hooks, so two threads using it at once can restore each other's state
(a worker thread's exit drops a filter or hook the main thread set meanwhile).
:func:`collected_warnings` is the one mechanism the package uses instead: the
first collection in the process installs a hook, the last one restores it, and
each thread collects into its own :class:`WarningTally`. The hook replaces
``warnings._showwarnmsg``, through which every shown warning passes and which
``catch_warnings`` neither saves nor restores: a third-party
``catch_warnings`` left in another thread meanwhile (scikit-learn runs each
of its joblib tasks in one) cannot undo it.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
import warnings
from typing import Any, Iterator


#: A number in a message (counted alike whatever its value).
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_modules_by_file: dict[str, str | None] = {}


def _module_of(filename: str) -> str | None:
    """The imported module that ``filename`` is (so that filters by module still match a summary)."""
    if filename not in _modules_by_file:
        _modules_by_file[filename] = next((name for name, module in list(sys.modules.items())
                                           if getattr(module, "__file__", None) == filename), None)
    return _modules_by_file[filename]


class WarningTally:
    """Warnings counted by kind: category and message text with its numbers replaced by ``#``."""

    def __init__(self) -> None:
        # key -> [category, first text, filename, lineno, module, count]
        self.kinds: dict[tuple[str, str, str], list[Any]] = {}

    def add(self, message: Warning | str, category: type[Warning], filename: str, lineno: int) -> None:
        text = str(message)
        key = (category.__module__, category.__qualname__, NUMBER.sub("#", text))
        if key in self.kinds:
            self.kinds[key][-1] += 1
        else:
            self.kinds[key] = [category, text, filename, lineno, _module_of(filename), 1]

    def merge(self, other: WarningTally) -> None:
        for key, (category, text, filename, lineno, module, count) in other.kinds.items():
            if key in self.kinds:
                self.kinds[key][-1] += count
            else:
                self.kinds[key] = [category, text, filename, lineno, module, count]

    def emit(self, n_coalitions: int, where: str = "ModelUtility: raised {count} time(s) while fitting and scoring "
             "{n} coalition(s) of one evaluate call") -> None:
        """One warning per kind, of its category and at its first place, so the user's filters apply.

        ``where`` says what raised it, formatted with the kind's ``count`` and ``n`` = ``n_coalitions``.
        """
        for category, text, filename, lineno, module, count in self.kinds.values():
            summary = f"{text}\n[{where.format(count=count, n=n_coalitions)}; shown once, with the first message.]"
            warnings.warn_explicit(summary, category, filename, lineno, module=module, registry=None)


_lock = threading.Lock()
# collections running; the hook they replaced; the display functions when the first began
_active: dict[str, Any] = {"depth": 0, "context": None, "shown_by": None, "display": None}
_local = threading.local()
_SHOWN_BY = warnings._showwarnmsg  # type: ignore[attr-defined]  # how the warnings module shows one


def _display() -> tuple[Any, Any]:
    """The functions a ``catch_warnings(record=True)`` (or numpy's ``suppress_warnings``) replaces to record."""
    return warnings.showwarning, warnings._showwarnmsg_impl  # type: ignore[attr-defined]


def _collect_or_show(message: warnings.WarningMessage) -> None:
    """The hook: a warning of a collecting thread goes to its tally, any other is shown as it would have been.

    So does a warning raised inside a recording ``catch_warnings(record=True)``
    entered within the collection (the display functions differ from those
    found when it began): that block asked to see it.
    """
    tally = getattr(_local, "tally", None)
    if tally is not None and _display() == _active["display"]:
        tally.add(message.message, message.category, message.filename, message.lineno)
    else:
        (_active["shown_by"] or _SHOWN_BY)(message)  # the hook restored meanwhile: the original


@contextlib.contextmanager
def collected_warnings() -> Iterator[WarningTally]:
    """Collect every warning raised in this thread into a :class:`WarningTally` instead of showing it.

    Thread-safe: the first collection in the process installs the hook (every
    warning recorded, ``"always"``) and the last one restores the filters and
    the hook; a thread collects into its own tally.
    """
    tally, outer = WarningTally(), getattr(_local, "tally", None)
    with _lock:
        if _active["depth"] == 0:
            context = warnings.catch_warnings()
            context.__enter__()
            _active["context"] = context
            warnings.simplefilter("always")
            _active["shown_by"], _active["display"] = warnings._showwarnmsg, _display()  # type: ignore[attr-defined]
            warnings._showwarnmsg = _collect_or_show  # type: ignore[attr-defined]
        _active["depth"] += 1
    _local.tally = tally
    try:
        yield tally
    finally:
        _local.tally = outer
        with _lock:
            _active["depth"] -= 1
            if _active["depth"] == 0:
                warnings._showwarnmsg = _active["shown_by"]  # type: ignore[attr-defined]
                _active["context"].__exit__(None, None, None)
                _active["context"] = _active["shown_by"] = _active["display"] = None
