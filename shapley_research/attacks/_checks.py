"""Checks of the attacks' inputs (images, labels, bounds) and the deterministic torch context."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    import torch

from .._validation import check_int

_PIXEL_SLACK = 1e-6  # rounding of pixels computed elsewhere (e.g. in float32)


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

def check_images(X: ArrayLike | torch.Tensor, bounds: Iterable[float] = (0.0, 1.0),
                 name: str = "X") -> NDArray[np.float64]:
    """Return ``X`` as a C-contiguous float64 array of images within ``bounds``, or raise.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, ...)
        One image (or feature vector) per row; any numeric dtype.
    bounds : (float, float)
        The model's input range, e.g. ``(0, 1)`` for pixels divided by 255.
    name : str, default "X"
        The argument's name, for the messages.

    Returns
    -------
    ndarray of float64, shape (n, ...)
        C-contiguous, clipped to ``bounds`` (values within ``1e-6`` outside are accepted).

    Raises
    ------
    TypeError
        If ``X`` is not numeric (strings, objects, complex numbers).
    ValueError
        If it has no rows, fewer than 2 dimensions, NaN or infinite values, or
        values outside ``bounds`` (naming the range found and the one expected).
    """
    lo, hi = _check_bounds(bounds)
    if hasattr(X, "detach") and hasattr(X, "cpu"):  # a torch tensor
        X = X.detach().cpu().numpy()
    array = np.asarray(X)
    if array.dtype == np.bool_ or not (np.issubdtype(array.dtype, np.integer)
                                        or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"{name} must be a numeric (integer or float) array of pixels, got dtype {array.dtype}.")
    if array.ndim < 2:
        raise ValueError(f"{name} must hold one image per row (at least 2-D), got shape {array.shape}.")
    if array.shape[0] == 0 or array.size == 0:
        raise ValueError(f"{name} is empty (shape {array.shape}).")
    array = np.ascontiguousarray(array, dtype=np.float64)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or infinite values.")
    found_lo, found_hi = float(array.min()), float(array.max())
    if found_lo < lo - _PIXEL_SLACK or found_hi > hi + _PIXEL_SLACK:
        hint = " (pixels in 0..255? divide by 255)" if found_hi > 1.5 and hi <= 1.0 else ""
        raise ValueError(f"{name} has values in [{found_lo:g}, {found_hi:g}] but the model's bounds are "
                         f"[{lo:g}, {hi:g}]{hint}.")
    return np.clip(array, lo, hi)


def check_labels(y: ArrayLike | torch.Tensor, n_samples: int, n_classes: int | None = None,
                 name: str = "y") -> NDArray[np.int64]:
    """Return ``y`` as int64 class indices in ``[0, n_classes)``, shape ``(n_samples,)``, or raise.

    Raises
    ------
    TypeError
        For non-integer labels (strings, fractional floats).
    ValueError
        For a wrong shape or length, or labels outside ``[0, n_classes)``.
    """
    if hasattr(y, "detach") and hasattr(y, "cpu"):
        y = y.detach().cpu().numpy()
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one label per image), got shape {labels.shape}.")
    if labels.shape[0] != n_samples:
        raise ValueError(f"{name} has {labels.shape[0]} labels but there are {n_samples} images.")
    if labels.dtype == np.bool_ or not (np.issubdtype(labels.dtype, np.integer)
                                         or np.issubdtype(labels.dtype, np.floating)):
        raise TypeError(f"{name} must hold integer class indices, got dtype {labels.dtype}.")
    if np.issubdtype(labels.dtype, np.floating):
        if not (np.isfinite(labels).all() and np.all(labels == np.round(labels))):
            raise TypeError(f"{name} must hold integer class indices, got non-integral values.")
    labels = labels.astype(np.int64)
    if labels.size and labels.min() < 0:
        raise ValueError(f"{name} holds negative labels (min {labels.min()}); labels are class indices 0..K-1.")
    if n_classes is not None and labels.size and labels.max() >= n_classes:
        raise ValueError(f"{name} holds label {labels.max()} but the model has {n_classes} classes "
                         f"(labels must be in 0..{n_classes - 1}).")
    return labels


def _check_bounds(bounds: Iterable[float]) -> tuple[float, float]:
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise TypeError(f"bounds must be a pair of numbers (lo, hi), got {bounds!r}.") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds must be finite with lo < hi, got {bounds!r}.")
    return lo, hi


@contextmanager
def _deterministic_torch(threads: int | None) -> Iterator[None]:
    """torch on ``threads`` intra-op threads (None: as is) with deterministic algorithms; restored afterwards."""
    import torch

    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    if threads is not None:
        torch.set_num_threads(check_int(threads, "threads", minimum=1))
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])
