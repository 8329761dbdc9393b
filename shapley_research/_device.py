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
from typing import Any

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


def available_bytes(device: Any) -> int:
    """Working memory a chunk may take on ``device``: half the free GPU memory, or a fixed CPU budget."""
    if device is not None and device.type == "cuda":
        import torch

        free, _ = torch.cuda.mem_get_info(device)
        return int(free // 2)
    return CPU_CHUNK_BYTES


def release(device: Any) -> None:
    """Give cached GPU memory back to the driver (after a run), so no memory stays held."""
    if device is not None and device.type == "cuda":
        import torch

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
