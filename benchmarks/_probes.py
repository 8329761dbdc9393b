"""Measurements beside the wall clock that the benchmarks share: the resident set, and a timer inside a call.

Not a script: ``core_overhead.py`` and ``pydvl_comparison.py`` (and their
worker processes) import it by name. The resident-set probes read Linux's
``/proc``: the resident set now, its high-water mark, and the reset of that
mark, so that one call's peak can be told from the process's earlier ones.
"""

from __future__ import annotations

import os
import resource
import time


def status_kib(pid: int | str, field: str) -> int | None:
    """A field of ``/proc/<pid>/status`` in KiB (``VmRSS``, ``VmHWM``, ...), or None where it cannot be read.

    Parameters
    ----------
    pid : int or str
        A process id, or ``"self"``.
    field : str
        The field's name, without its colon.

    Returns
    -------
    int or None
        Its value in KiB.
    """
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def rss_bytes() -> int:
    """This process's resident set now, in bytes (``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak_rss() -> bool:
    """Reset the kernel's resident-set high-water mark (Linux >= 4.0); whether it could."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int:
    """This process's resident-set high-water mark in bytes (``VmHWM``; ``ru_maxrss`` where there is none)."""
    kib = status_kib("self", "VmHWM")
    if kib is not None:
        return kib * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class RecoveryTimer:
    """Times a module-level function that an estimator looks up at call time.

    Used as a context manager: inside it, ``getattr(module, name)`` is a wrapper
    that adds each call's wall and CPU time to ``seconds`` and ``cpu_seconds``
    and keeps the latest call's ``(args, kwargs, result)`` in ``last_call``.

    Parameters
    ----------
    module : module
        The module whose attribute is wrapped.
    name : str
        The function's name in ``module``.
    """

    def __init__(self, module, name: str):
        self.module, self.name = module, name
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.last_call = None  # (args, kwargs, result) of the latest call

    def __enter__(self):
        self.original = getattr(self.module, self.name)

        def timed(*args, **kwargs):
            start, start_cpu = time.perf_counter(), time.process_time()
            try:
                result = self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self.cpu_seconds += time.process_time() - start_cpu
            self.last_call = (args, kwargs, result)
            return result

        setattr(self.module, self.name, timed)
        return self

    def __exit__(self, *exc):
        setattr(self.module, self.name, self.original)
