"""Thread pools pinned while a batch is computed, so values do not depend on where it runs.

A BLAS product split over more threads sums in another order, and joblib's
workers, Dask's and the parent each run with their own thread counts. Every
sampling batch therefore runs under :func:`pinned_threads`, with
:data:`BATCH_THREADS` BLAS and OpenMP threads, wherever it runs.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

BATCH_THREADS = 1  # BLAS/OpenMP threads while a batch is computed, wherever it runs

_pin_lock = threading.Lock()
_pin_depth = 0  # pinned sections running in this process (BLAS pools are process-wide)
_pin_blas: Any = None  # the process-wide BLAS limit (a threadpoolctl limiter) while pinned
_pin_local = threading.local()  # pinned sections running in this thread (OpenMP's limit is per thread)


_controller_state: dict[str, Any] = {}


def _controller() -> ThreadpoolController:
    """threadpoolctl's view of the loaded thread pools, rescanned only when a module has been imported since.

    A scan walks every loaded shared library (milliseconds, more with torch
    loaded) and used to run twice per batch. New pools arrive with imports
    (numpy's BLAS, torch, numba's threading layer), so the number of
    imported modules tells when to rescan. Called under ``_pin_lock``
    (:func:`thread_controller` takes it).

    threadpoolctl limits only the pools loaded when a limit is taken, so
    SciPy's own BLAS (its wheels bundle one beside numpy's), which the
    learners' LAPACK calls load on first use, is loaded before the first
    scan: a batch that loaded it inside a pin would run it on all cores.
    """
    import scipy.linalg  # noqa: F401 - see above; importing it again is a dict lookup
    from threadpoolctl import ThreadpoolController

    if _controller_state.get("modules") != len(sys.modules):
        _controller_state["controller"] = ThreadpoolController()
        _controller_state["modules"] = len(sys.modules)
    return _controller_state["controller"]


def thread_controller() -> ThreadpoolController:
    """The shared, current ``threadpoolctl.ThreadpoolController`` (for limits other than the batch pin)."""
    with _pin_lock:
        return _controller()


@contextmanager
def pinned_threads() -> Iterator[None]:
    """Hold the BLAS and OpenMP thread pools at :data:`BATCH_THREADS` threads.

    A matrix product split over more threads sums in another order (OpenBLAS
    at ``(4096 x 1000) @ (1000 x 64)`` moves the result by about 5e-14), and
    joblib's loky workers run with ``cpu_count // n_jobs`` threads, Dask's
    with their own, the parent with all cores. Pinning every batch to the
    same count makes the values bit-identical for any ``n_jobs`` and backend.

    BLAS limits are process-wide, so they are counted per process: batches
    running in several threads of one process (the threading backend, a
    multi-threaded Dask worker) share the limit, and the original limits come
    back when the last one ends. OpenMP's limit belongs to the calling thread,
    so it is set and restored per thread.
    """
    global _pin_depth, _pin_blas
    with _pin_lock:
        controller = _controller()
        if _pin_depth == 0:
            _pin_blas = controller.limit(limits=BATCH_THREADS, user_api="blas")
        _pin_depth += 1
    depth = getattr(_pin_local, "depth", 0)
    if depth == 0:
        _pin_local.openmp = controller.limit(limits=BATCH_THREADS, user_api="openmp")
    _pin_local.depth = depth + 1
    try:
        yield
    finally:
        _pin_local.depth -= 1
        if _pin_local.depth == 0:
            _pin_local.openmp.restore_original_limits()
            del _pin_local.openmp
        with _pin_lock:
            _pin_depth -= 1
            if _pin_depth == 0:
                _pin_blas.restore_original_limits()
                _pin_blas = None


class Pinned:
    """``fn`` called under :func:`pinned_threads` (picklable, for joblib and Dask workers)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with pinned_threads():
            return self.fn(*args, **kwargs)


_torch_pin: dict[str, Any] = {"depth": 0, "before": None}  # pinned torch sections running in this process


@contextmanager
def pinned_torch_threads(count: int) -> Iterator[None]:
    """torch's intra-op threads held at ``count`` while the block runs, counted per process.

    ``torch.set_num_threads`` sets the calling thread's OpenMP count and the
    process's MKL count. Threads training at once (the threading backend)
    each set it on entry, and only the last one to leave restores the count
    found by the first: a thread leaving early must not give the others' MKL
    products more threads, which sum in another order. A thread that leaves
    early keeps ``count`` for its own later OpenMP work.
    """
    import torch

    with _pin_lock:
        if _torch_pin["depth"] == 0:
            _torch_pin["before"] = torch.get_num_threads()
        _torch_pin["depth"] += 1
        torch.set_num_threads(count)
    try:
        yield
    finally:
        with _pin_lock:
            _torch_pin["depth"] -= 1
            if _torch_pin["depth"] == 0:
                torch.set_num_threads(_torch_pin["before"])
