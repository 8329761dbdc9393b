"""The Gaussian mechanism (local DP) that releases the noisy half: calibration of sigma, clipping, release.

The privacy mechanism and what it protects are described in the package docstring.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import numpy as np

from ..._validation import check_float, check_int

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def _check_epsilon(epsilon) -> float:
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, numbers.Real):
        raise TypeError(f"epsilon must be a real number, got {epsilon!r}.")
    epsilon = float(epsilon)
    if math.isnan(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be > 0 (math.inf for no privacy), got {epsilon}.")
    return epsilon


def _check_delta(delta) -> float:
    delta = check_float(delta, "delta")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must lie strictly between 0 and 1, got {delta}.")
    return delta


def _log_privacy_profile(sigma: float, epsilon: float, sensitivity: float) -> float:
    """``log delta(epsilon)`` of the Gaussian mechanism, computed in log space (no overflow of ``e^eps``)."""
    from scipy.special import log_ndtr

    mu = sensitivity / sigma
    log_a = log_ndtr(mu / 2.0 - epsilon / mu)
    log_b = epsilon + log_ndtr(-mu / 2.0 - epsilon / mu)
    with np.errstate(divide="ignore"):
        return float(log_a + np.log(-np.expm1(min(log_b - log_a, 0.0))))


def gaussian_privacy_profile(sigma: float, epsilon: float, sensitivity: float) -> float:
    r"""The smallest ``delta`` for which the Gaussian mechanism is ``(epsilon, delta)``-DP.

    For a query of L2 sensitivity :math:`\Delta` released with noise
    :math:`N(0, \sigma^2 I)` (Balle & Wang 2018, Theorem 8),

    .. math:: \delta(\epsilon) = \Phi\Bigl(\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Bigr)
              - e^{\epsilon}\,\Phi\Bigl(-\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Bigr).

    Parameters
    ----------
    sigma : float
        Noise standard deviation, ``> 0``.
    epsilon : float
        ``> 0``.
    sensitivity : float
        L2 sensitivity :math:`\Delta`, ``> 0``.

    Returns
    -------
    float
        ``delta`` in ``[0, 1]``.
    """
    sigma = check_float(sigma, "sigma", minimum=0.0, strict=True)
    epsilon = _check_epsilon(epsilon)
    if math.isinf(epsilon):
        return 0.0
    sensitivity = check_float(sensitivity, "sensitivity", minimum=0.0, strict=True)
    return math.exp(_log_privacy_profile(sigma, epsilon, sensitivity))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    r"""Noise scale of the analytic Gaussian mechanism (Balle & Wang 2018).

    The smallest :math:`\sigma` such that adding :math:`N(0, \sigma^2 I)` to a
    query of L2 sensitivity ``sensitivity`` is ``(epsilon, delta)``-DP, i.e.
    ``gaussian_privacy_profile(sigma, epsilon, sensitivity) == delta``; found by
    bracketing and Brent's method on :math:`\log\sigma` (relative accuracy
    about 1e-12). Valid for every ``epsilon > 0``, unlike the classic
    calibration.

    Parameters
    ----------
    epsilon : float
        Privacy loss, ``> 0``; ``math.inf`` gives ``0.0`` (no noise).
    delta : float
        In ``(0, 1)``.
    sensitivity : float
        L2 sensitivity, ``> 0``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For ``epsilon <= 0``, ``delta`` outside ``(0, 1)`` or ``sensitivity <= 0``.
    """
    from scipy.optimize import brentq

    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta)
    sensitivity = check_float(sensitivity, "sensitivity", minimum=0.0, strict=True)
    if math.isinf(epsilon):
        return 0.0
    target = math.log(delta)

    def excess(log_sigma: float) -> float:  # decreasing in sigma
        return _log_privacy_profile(math.exp(log_sigma), epsilon, sensitivity) - target

    lo = hi = math.log(sensitivity)
    while excess(lo) <= 0:
        lo -= 2.0
    while excess(hi) > 0:
        hi += 2.0
    return math.exp(brentq(excess, lo, hi, xtol=1e-14, rtol=1e-13))


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    r"""The classic calibration :math:`\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\epsilon` (Dwork & Roth, Thm A.1).

    Proven only for ``0 < epsilon < 1``; kept to compare with
    :func:`analytic_gaussian_sigma`, which is exact and never larger there.

    Raises
    ------
    ValueError
        For ``epsilon`` outside ``(0, 1)``, ``delta`` outside ``(0, 1)`` or ``sensitivity <= 0``.
    """
    epsilon = _check_epsilon(epsilon)
    if epsilon >= 1.0:
        raise ValueError(f"the classic Gaussian calibration holds only for epsilon < 1, got {epsilon}; "
                         "use analytic_gaussian_sigma.")
    delta = _check_delta(delta)
    sensitivity = check_float(sensitivity, "sensitivity", minimum=0.0, strict=True)
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def l2_sensitivity(clip_norm: float, n_features: int, pixel_max: float = 1.0) -> float:
    r"""L2 sensitivity of releasing one clipped image, under replacement of the image.

    Clipped images lie in the ball of radius ``clip_norm`` and (since clipping
    only scales down) in the cube ``[0, pixel_max]^d``, so two of them differ
    by at most :math:`\min(2C, \text{pixel\_max}\sqrt d)`.

    Parameters
    ----------
    clip_norm : float
        ``C > 0``.
    n_features : int
        Number of pixels ``d >= 1``.
    pixel_max : float, default 1.0
        Upper end of the pixel range ``[0, pixel_max]``.
    """
    clip_norm = check_float(clip_norm, "clip_norm", minimum=0.0, strict=True)
    n_features = check_int(n_features, "n_features", minimum=1)
    pixel_max = check_float(pixel_max, "pixel_max", minimum=0.0, strict=True)
    return min(2.0 * clip_norm, pixel_max * math.sqrt(n_features))


def _check_images(X, pixel_max: float) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be a non-empty 2-D array (n_images, n_pixels), got shape {X.shape}.")
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinite values.")
    if X.min() < 0.0 or X.max() > pixel_max:
        raise ValueError(f"pixels must lie in [0, {pixel_max}] (the domain the sensitivity is computed on), "
                         f"got values in [{X.min():.4g}, {X.max():.4g}].")
    return X


def clip_l2(X: ArrayLike, clip_norm: float) -> np.ndarray:
    """Scale every row of ``X`` whose L2 norm exceeds ``clip_norm`` down to that norm (others unchanged).

    ``X`` of shape (n, d) gives a float array of the same shape.
    """
    clip_norm = check_float(clip_norm, "clip_norm", minimum=0.0, strict=True)
    X = np.asarray(X, dtype=float)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    scale = np.minimum(1.0, clip_norm / np.maximum(norms, np.finfo(float).tiny))
    return X * scale


def privatize_images(X: ArrayLike, epsilon: float, delta: float, clip_norm: float, rng: int | np.random.Generator, *,
                     pixel_max: float = 1.0, clamp: bool = True) -> tuple[np.ndarray, float]:
    """Release every image (row of ``X``) through the Gaussian mechanism; see the package docstring.

    ``clip_l2`` to ``clip_norm``, add ``N(0, sigma^2)`` to every pixel with
    ``sigma = analytic_gaussian_sigma(epsilon, delta, l2_sensitivity(clip_norm, d, pixel_max))``,
    then (``clamp``) clamp to ``[0, pixel_max]``. Each row is ``(epsilon, delta)``-DP
    with respect to replacing that image by any image in ``[0, pixel_max]^d``.

    Parameters
    ----------
    X : array of shape (n, d)
        Images with pixels in ``[0, pixel_max]``.
    epsilon : float
        ``> 0``; ``math.inf`` releases the clipped (and clamped) images without noise.
    delta : float
        In ``(0, 1)``.
    clip_norm : float
        ``C > 0``.
    rng : numpy.random.Generator or int
        Source of the noise: one ``standard_normal((n, d))`` draw, scaled by
        ``sigma``. The same seed gives the same standard-normal draw at every
        ``epsilon`` (common random numbers).
    pixel_max : float, default 1.0
    clamp : bool, default True
        Clamp the noisy images to ``[0, pixel_max]`` (post-processing).

    Returns
    -------
    X_private : ndarray of shape (n, d)
    sigma : float
        The per-pixel noise standard deviation used.

    Raises
    ------
    ValueError
        For bad ``epsilon``/``delta``/``clip_norm`` or pixels outside ``[0, pixel_max]``.
    """
    pixel_max = check_float(pixel_max, "pixel_max", minimum=0.0, strict=True)
    X = _check_images(X, pixel_max)
    sensitivity = l2_sensitivity(clip_norm, X.shape[1], pixel_max)
    sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    rng = np.random.default_rng(rng)
    noise = rng.standard_normal(X.shape)
    out = clip_l2(X, clip_norm) + sigma * noise
    if clamp:
        np.clip(out, 0.0, pixel_max, out=out)
    return out, sigma
