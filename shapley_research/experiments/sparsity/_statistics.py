"""Approximate sparsity: the best K-term approximation error, dense nulls, and the relative error."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._validation import check_float, check_int

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def sparsity_curve(values: ArrayLike) -> np.ndarray:
    r"""``sigma_K(s) / sum(s)`` for ``K = 0, ..., N``.

    :math:`\sigma_K(s)` is the l1 norm of ``s`` without its ``K``
    largest-magnitude entries (the best ``K``-term approximation error).

    ``values`` of shape (N,) gives a curve of shape (N + 1,), non-increasing and ending at 0.
    """
    s = np.asarray(values, dtype=float)
    total = s.sum()
    if s.ndim != 1 or s.size == 0 or not np.isfinite(s).all():
        raise ValueError("values must be a non-empty 1-D finite array.")
    if total <= 0:
        raise ValueError(f"the ratio needs a positive sum of values, got {total}.")
    magnitudes = np.sort(np.abs(s))[::-1]
    tails = np.concatenate([[magnitudes.sum()], magnitudes.sum() - np.cumsum(magnitudes)])
    return np.maximum(tails, 0.0) / total


def sigma_k(values: ArrayLike, k: int) -> float:
    """Best ``k``-term approximation error in l1: the sum of all but the ``k`` largest ``|s_i|``."""
    s = np.abs(np.asarray(values, dtype=float))
    k = check_int(k, "k", minimum=0)
    return float(np.sort(s)[::-1][k:].sum())


def smallest_sparse_k(values: ArrayLike, level: float = 0.5) -> int:
    """Smallest ``K`` with ``sigma_K(s) / sum(s) <= level`` (the paper reports 367 of 1,000 at 0.5)."""
    level = check_float(level, "level", minimum=0.0)
    curve = sparsity_curve(values)
    return int(np.argmax(curve <= level + 1e-12))


def dense_nulls(values: ArrayLike, n_draws: int, seed: int) -> dict[str, np.ndarray]:
    r"""Dense values with the mean and standard deviation of ``values``: Gaussian and uniform draws.

    Each draw :math:`x` is standardised exactly, :math:`\bar s + \mathrm{sd}(s)
    (x - \bar x)/\mathrm{sd}(x)`, so that only the shape differs from ``values``.

    Returns
    -------
    dict
        ``{"gaussian": (n_draws, N), "uniform": (n_draws, N)}`` arrays.
    """
    s = np.asarray(values, dtype=float)
    if s.ndim != 1 or s.size < 2 or not np.isfinite(s).all():
        raise ValueError("values must be a 1-D finite array of at least two entries.")
    n_draws = check_int(n_draws, "n_draws", minimum=1)
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0))
    out = {}
    for name, draws in (("gaussian", rng.standard_normal((n_draws, s.size))),
                        ("uniform", rng.uniform(-1.0, 1.0, (n_draws, s.size)))):
        z = (draws - draws.mean(axis=1, keepdims=True)) / draws.std(axis=1, keepdims=True)
        out[name] = s.mean() + s.std() * z
    return out


def null_k_fractions(nulls: dict, level: float = 0.5) -> dict:
    """``K/N`` of :func:`smallest_sparse_k` for every draw of every null."""
    return {name: np.array([smallest_sparse_k(x, level) / x.size for x in draws]) for name, draws in nulls.items()}


def relative_error(estimate: ArrayLike, reference: ArrayLike) -> float:
    """Relative l2 error ``||estimate - reference|| / ||reference||``."""
    estimate, reference = np.asarray(estimate, dtype=float), np.asarray(reference, dtype=float)
    return float(np.linalg.norm(estimate - reference) / np.linalg.norm(reference))
