"""Devices and floating-point types of the torch paths, checked at the boundary.

Torch is an optional dependency (``pip install "shapley-research[torch]"``):
nothing here imports it before a device is asked for, so the core imports
without it. ``device=None`` everywhere means the numpy path; ``"auto"`` means
``"cuda"`` when torch sees a GPU, else ``None``.

A device belongs to one process: a game on a device is refused by
estimators run with ``n_jobs > 1`` (:func:`check_game_jobs`), since
workers would each initialise CUDA, copy the data and compete for one
card's memory; a GPU already runs a chunk of coalitions in parallel.
"""

from __future__ import annotations

import gc
import os
import warnings
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ._validation import check_n_jobs

DTYPES = ("float64", "float32")
# working memory for a chunk of coalitions on the CPU, where no free-memory query is portable
CPU_CHUNK_BYTES = 256 * 2**20


def import_torch(owner: str) -> Any:
    """The ``torch`` module, or an ``ImportError`` that says how to install it."""
    try:
        import torch
    except ImportError as error:  # pragma: no cover - torch is installed wherever the tests run
        raise ImportError(f"{owner} needs torch for a device (or a torch module); install it with "
                          f'pip install "shapley-research[torch]".') from error
    return torch


def resolve_device(device: Any, owner: str) -> Any:
    """``None`` (the numpy path) or a ``torch.device`` that exists, from ``device``.

    Accepts ``None``, ``"auto"``, a device string (``"cpu"``, ``"cuda"``,
    ``"cuda:1"``) or a ``torch.device``. Asking for CUDA where torch sees no
    GPU raises a ``ValueError`` that names the device.
    """
    if device is None:
        return None
    if isinstance(device, str) and device == "auto":
        try:
            import torch
        except ImportError:
            return None
        return torch.device("cuda") if torch.cuda.is_available() else None
    torch = import_torch(owner)
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"{owner}: device must be None, 'auto', a device string such as 'cpu' or 'cuda:0', "
                        f"or a torch.device; got {device!r} of type {type(device).__name__}.")
    try:
        resolved = torch.device(device)
    except (RuntimeError, ValueError) as error:
        raise ValueError(f"{owner}: device={device!r} is not a torch device ({error}).") from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{owner}: device={device!r} asks for CUDA, but torch {torch.__version__} sees no GPU "
                             f"(built with CUDA {torch.version.cuda}); pass device='cpu' or device=None.")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(f"{owner}: device={device!r} does not exist; torch sees "
                             f"{torch.cuda.device_count()} GPU(s).")
    elif resolved.type not in ("cpu", "mps"):
        raise ValueError(f"{owner}: device={device!r} is not supported; use 'cpu', 'cuda' or 'mps'.")
    elif resolved.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{owner}: device={device!r} asks for MPS, which this machine does not have.")
    return resolved


def check_dtype(dtype: Any, owner: str) -> str:
    """``"float64"`` or ``"float32"`` from a name, a numpy dtype or a torch dtype; else ``ValueError``."""
    name = getattr(dtype, "name", None) or str(dtype).replace("torch.", "")
    if name not in DTYPES:
        raise ValueError(f"{owner}: dtype must be 'float64' or 'float32', got {dtype!r}.")
    return name


def torch_dtype(name: str) -> Any:
    """The torch dtype of ``"float64"`` or ``"float32"``."""
    import torch

    return torch.float64 if name == "float64" else torch.float32


# CUDA compute capabilities whose float64 runs at half the float32 rate (P100, V100, A100, H100/H200); the
# others run it at 1/32-1/64, where float32 iterations pay
FULL_RATE_FLOAT64 = frozenset({(6, 0), (7, 0), (8, 0), (9, 0)})


def fast_float64(device: Any) -> bool:
    """Whether ``device`` is a GPU with full-rate ``float64`` (:data:`FULL_RATE_FLOAT64`), by compute capability."""
    if device is None or device.type != "cuda":
        return False
    import torch

    return tuple(torch.cuda.get_device_capability(device)) in FULL_RATE_FLOAT64


def available_bytes(device: Any) -> int:
    """Working memory a chunk may plan on ``device``: a third of a GPU's total memory, or a fixed CPU budget.

    A GPU's budget follows its total memory, not its free memory, so that the
    default chunk sizes, and with them the utilities' last bits, repeat from
    run to run on one card (:func:`chunk_capacity` takes less, with a
    warning, where memory held elsewhere leaves no room for it).
    """
    if device is not None and device.type == "cuda":
        import torch

        return int(torch.cuda.mem_get_info(device)[1] // 3)
    return CPU_CHUNK_BYTES


def _room_bytes(device: Any) -> int | None:
    """Half the memory of a GPU free for this process (the headroom the per-item estimates need), None elsewhere.

    Free memory, plus what this process's allocator caches unused (earlier
    chunks'): only memory other processes hold can shrink the chunks.
    """
    if device is None or device.type != "cuda":
        return None
    import torch

    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return int((torch.cuda.mem_get_info(device)[0] + max(cached, 0)) // 2)


def chunk_capacity(device: Any, item_bytes: Any, cap: int, owner: str) -> np.ndarray:
    """Items (coalitions, models) a chunk holds on ``device``: ``available_bytes // item_bytes``, in ``[1, cap]``.

    ``item_bytes`` may be an array (one capacity each). Where a GPU's free
    memory is short of the planned chunks (memory held by other processes),
    the chunks shrink to what fits and a ``RuntimeWarning`` says that the
    utilities may then differ in their last bits from a run on a free card,
    and which fixed chunk size would repeat them.
    """
    item_bytes = np.maximum(np.asarray(item_bytes, dtype=np.float64), 1.0)
    planned = np.clip(available_bytes(device) // item_bytes, 1, cap).astype(np.int64)
    room = _room_bytes(device)
    if room is None:
        return planned
    fits = np.clip(room // item_bytes, 1, cap).astype(np.int64)
    shrunk = np.flatnonzero(np.atleast_1d(fits < planned))
    if shrunk.size:
        first = shrunk[0]
        warnings.warn(f"{owner}: memory held elsewhere on {device} leaves room for "
                      f"{int(np.atleast_1d(fits)[first])} items a chunk where this card plans "
                      f"{int(np.atleast_1d(planned)[first])}; the chunks shrink, so the utilities can differ in "
                      "their last bits from a run on a free card. Pass a chunk size (batch_size or chunk_size) "
                      "that fits both for reruns that repeat.", RuntimeWarning, stacklevel=3)
    return np.minimum(planned, fits)


@contextmanager
def released(device: Any) -> Iterator[None]:
    """Give cached GPU memory back to the driver after the block, so no memory stays held between calls.

    The garbage collector runs only where the block left more memory allocated
    than it found (tensors kept alive by reference cycles, or what a game
    caches on its first call), before the cache is emptied: a full collection
    took 0.13-0.17 s in a process holding torch, scikit-learn and this package
    (280,000 objects, this project's 2-core machine, quiet), a fixed cost that
    every call of a batched learner or torch model would otherwise pay.
    """
    if device is None or device.type != "cuda":
        yield
        return
    import torch

    allocated = torch.cuda.memory_allocated(device)
    try:
        yield
    finally:
        if torch.cuda.memory_allocated(device) > allocated:
            gc.collect()
        torch.cuda.empty_cache()


def check_game_jobs(game: object, n_jobs: object, owner: str) -> int | None:
    """``n_jobs`` checked (:func:`~._validation.check_n_jobs`), refusing ``n_jobs > 1`` for a game on an accelerator.

    One process owns a GPU: joblib workers would each copy the data to it and
    compete for its memory, while one chunk already trains many coalitions
    in parallel on it. A game on torch's CPU device trains on one thread, so
    workers share the cores as they do for any other game.
    """
    jobs = check_n_jobs(n_jobs)
    device = getattr(game, "device", None)
    on_cpu = device is None or str(device) == "cpu"
    if on_cpu or jobs is None or jobs == 1 or (jobs < 0 and (os.cpu_count() or 1) + 1 + jobs <= 1):
        return jobs
    raise ValueError(f"{owner}: n_jobs={jobs} with {type(game).__name__} on device {str(device)!r}; a game on a "
                     "device runs in one process (its chunks of coalitions already run in parallel there). "
                     "Pass n_jobs=None.")


def cpu_model() -> str | None:
    """The processor's model name (Linux: ``/proc/cpuinfo``; macOS: sysctl), else ``platform``'s guess.

    What ``run_info.json`` records and what keys the routing calibration's cache.
    """
    import platform
    import subprocess

    try:
        with open("/proc/cpuinfo") as info:
            lines = info.read().splitlines()
        for line in lines:
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                return " ".join(value.split())
    except OSError:
        pass
    if platform.system() == "Darwin":
        try:
            found = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True,
                                   timeout=5).stdout.strip()
            if found:
                return found
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or None
