r"""One bootstrap over the shared permutations: the variance's standard error and the U-shape claims.

The values at every :math:`\lambda` and under every convention come from the
same :math:`T` permutations :math:`\pi_1, \dots, \pi_T` (common random numbers).
A resample draws :math:`T` of them with replacement, the same draw for every
:math:`\lambda` and convention; with :math:`c_{bt}` the number of times
permutation :math:`t` enters resample :math:`b`, the resample's values and
second moments are

.. math:: \hat s^{*}_{b} = \frac1T\sum_t c_{bt}\,\phi_t, \qquad
          m^{*}_{b} = \frac1T\sum_t c_{bt}\,\phi_t^2 ,

and its debiased variance :math:`D^*_b(\lambda)` is the statistic of
:func:`~._measure.variance_statistics` on them (:func:`resampled_variances`):
:math:`\frac1N\sum_i(\hat s^*_{bi} - \bar s)^2 - \frac1N\sum_i
(m^*_{bi} - \hat s^{*2}_{bi})/(T-1)`. The identity resample (:math:`c_{bt} = 1`)
gives the estimate bit for bit.

**One mechanism.** Every resample of the experiment comes from one draw
(:func:`resample_counts`): row :math:`b` holds :math:`T` indices drawn uniformly
with replacement (``Generator.integers(0, T, size=(B, T))``) from the stream
:func:`u_shape_seed`, counted into :math:`c_{b\cdot}`. numpy fills the array
row by row from one stream, so the first :math:`B'` rows of a draw of
:math:`B \ge B'` rows *are* the draw of :math:`B'` rows: the run draws
:math:`\max(` ``n_bootstrap``, ``n_bootstrap_u_shape`` :math:`)` rows once,
the variance's standard error and interval (:func:`~._measure.variance_statistics`)
use the first ``n_bootstrap`` of them and the U-shape claims the first
``n_bootstrap_u_shape``, both through :func:`resampled_variances`. The two
differ only in how the :math:`D^*_b` are put on the estimate :math:`\hat D`:
the standard error's are recentred on their own mean,
:math:`D^*_b - \overline{D^*} + \hat D`; the U-shape claims' are aligned as
below (both remove the bootstrap world's offset ``mc_noise``, the first up to
its sampling error).

**Alignment.** In the bootstrap world the true values are :math:`\hat s`, so the
resamples' debiased variances centre on :math:`\mathrm{Var}_{pop}(\hat s)` =
``variance_raw`` (:math:`E^*[D^*] = \frac1N\sum_i(\hat s_i - \bar s)^2` exactly),
which exceeds the estimate :math:`\hat D` by its Monte Carlo correction
``mc_noise`` :math:`= \frac1N\sum_i \widehat{\mathrm{Var}}(\phi_i)/T`. Each
:math:`D^*_b(\lambda)` is therefore shifted by :math:`-\,\texttt{mc\_noise}(\lambda)`,
so that the bootstrap world's truth is the estimate itself (the percentile
interval assumes :math:`D^* - \hat D` mimics :math:`\hat D - D`).

**The statistic per resample.** The minimum is re-selected in every resample:
:math:`k_b = \arg\min_\lambda D^*_b`, :math:`R_b = \min(D^*_b(\lambda_1),
D^*_b(\lambda_L)) / D^*_b(\lambda_{k_b})` (:math:`+\infty` where that minimum is
:math:`\le 0` inside the grid with both ends positive; an end minimum, or a
non-positive one with an end as low, gives :math:`R_b = 1`: no U).

**The rule** (:func:`u_shape_verdict`), fixed before the paper profile's
bootstrap was run: with :math:`[R_{lo}, R_{hi}]` the 95% percentile interval
(Efron's: the :math:`\lceil 0.025B\rceil`-th and :math:`\lceil 0.975B\rceil`-th
ordered :math:`R_b`, numpy's ``"inverted_cdf"``) and ``factor`` = 2,

* holds if :math:`R_{lo} \ge` ``factor`` and a positive minimum lies strictly
  inside the grid in at least :data:`LOCATED_TO_HOLD` (95%) of the resamples;
* does not hold if :math:`R_{hi} <` ``factor`` or the minimum lies strictly inside
  the grid in fewer than :data:`INTERIOR_TO_FAIL` (5%) of them;
* inconclusive otherwise.

The percentile interval neither corrects the selection of the minimum (the
minimum of noisy estimates is biased low, the ratio high) nor the ratio's skew;
both are reproduced in every resample, which is why the minimum is re-selected.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._validation import check_float, check_int

__all__ = ["U_SHAPE_LEVEL", "LOCATED_TO_HOLD", "INTERIOR_TO_FAIL", "MIN_BOOTSTRAP", "u_shape_seed", "draw_counts",
           "resample_counts", "resampled_variances", "u_shape_replicates", "u_shape_interval", "u_shape_verdict",
           "permutations_to_decide"]

#: Coverage of the two-sided percentile interval of min(end / minimum).
U_SHAPE_LEVEL = 0.95
#: "Holds" needs a positive minimum strictly inside the grid in at least this fraction of the resamples.
LOCATED_TO_HOLD = 0.95
#: "Does not hold" when the minimum lies strictly inside the grid in fewer than this fraction of them.
INTERIOR_TO_FAIL = 0.05
#: Fewest resamples: the interval's ends are then the 1st and 39th of 40 ordered replicates.
MIN_BOOTSTRAP = 40


def variance_from_moments(mean: np.ndarray, second: np.ndarray, T: int,
                          centre: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Population variance of the values and its unbiased (Monte Carlo noise removed) version."""
    raw = np.mean((mean - centre) ** 2, axis=-1)
    mc_var = np.clip(second - mean**2, 0.0, None) * T / (T - 1) / T  # squared standard errors
    return raw, raw - np.mean(mc_var, axis=-1), np.mean(mc_var, axis=-1)


def u_shape_seed(seed: int) -> np.random.SeedSequence:
    """The resamples' stream (every bootstrap of the run): child 0 of ``SeedSequence([seed, 1])``.

    ``SeedSequence([seed, 1])`` itself seeds the permutations' generator, which spawning a child leaves untouched.
    """
    return np.random.SeedSequence([check_int(seed, "seed", minimum=0), 1]).spawn(1)[0]


def draw_counts(rng: np.random.Generator, n_bootstrap: int, n_permutations: int) -> np.ndarray:
    r"""The one resampling draw: counts :math:`c_{bt}` (B, T) of ``T`` indices drawn with replacement per row.

    Row ``b`` takes :math:`T` indices :math:`j_{b1}, \dots, j_{bT}` uniform on :math:`\{0, \dots, T-1\}`
    (``rng.integers(0, T, size=(B, T))``) and counts them, :math:`c_{bt} = \#\{k : j_{bk} = t\}`, so
    :math:`\sum_t c_{bt} = T` and :math:`c_{b\cdot} \sim \mathrm{Multinomial}(T, \mathbf 1/T)`. The array is
    filled row by row from the stream, so from the same state the first ``B'`` rows do not depend on ``B >= B'``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Advanced by the draw.
    n_bootstrap : int
        ``B`` >= 0.
    n_permutations : int
        ``T`` >= 2.

    Returns
    -------
    ndarray of int32, shape (B, T)
    """
    B = check_int(n_bootstrap, "n_bootstrap", minimum=0)
    T = check_int(n_permutations, "n_permutations", minimum=2)
    picks = rng.integers(0, T, size=(B, T))
    flat = (np.arange(B)[:, None] * T + picks).ravel()
    return np.bincount(flat, minlength=B * T).reshape(B, T).astype(np.int32)


def resample_counts(seed: int, n_bootstrap: int, n_permutations: int) -> np.ndarray:
    r"""The run's resamples: :func:`draw_counts` from ``numpy.random.default_rng(u_shape_seed(seed))``.

    Counts :math:`c_{bt}` (B, T): how often permutation ``t`` enters resample ``b``, each row summing
    to ``T``; the same counts serve every lambda and convention (the resample is of whole
    permutations). A prefix of rows is a smaller call's draw: ``resample_counts(seed, B, T)[:B']``
    equals ``resample_counts(seed, B', T)``, which is how one draw serves both the standard error
    (``n_bootstrap`` rows) and the U-shape claims (``n_bootstrap_u_shape`` rows).

    Parameters
    ----------
    seed : int
        The run's seed (:func:`u_shape_seed` derives the stream).
    n_bootstrap : int
        ``B`` >= :data:`MIN_BOOTSTRAP`.
    n_permutations : int
        ``T`` >= 2.

    Returns
    -------
    ndarray of int32, shape (B, T)
    """
    B = check_int(n_bootstrap, "n_bootstrap", minimum=MIN_BOOTSTRAP)
    return draw_counts(np.random.default_rng(u_shape_seed(seed)), B, n_permutations)


def resampled_variances(phi: np.ndarray, u_total: float, counts: np.ndarray) -> np.ndarray:
    r"""The debiased variance :math:`D^*_b` of every resample (not aligned; see the module docstring).

    The one computation of a resample's statistic: the U-shape claims use it directly, and
    :func:`~._measure.variance_statistics` recentres it for the standard error and interval.
    The resample's moments are computed as the full sample's plus a correction,
    :math:`\hat s^*_b = \hat s + \frac1T\sum_t (c_{bt} - 1)\phi_t` (and likewise the second
    moments), so that a row of ones reproduces :func:`~._measure.variance_statistics`'s
    ``variance`` bit for bit (the correction is exactly 0) while one matrix product serves all
    ``B`` resamples.

    Parameters
    ----------
    phi : ndarray (T, N)
        Marginal contributions, one row per permutation.
    u_total : float
        :math:`U(D) - U(\emptyset)`.
    counts : ndarray (B, T)
        Resampling counts (:func:`resample_counts`, :func:`draw_counts`), non-negative integers
        (integral floats, as :func:`~._measure.bootstrap_weights` returns, give the same result).

    Returns
    -------
    ndarray (B,)
    """
    phi = np.asarray(phi, dtype=float)
    counts = np.asarray(counts)
    if phi.ndim != 2 or phi.shape[0] < 2:
        raise ValueError(f"phi must be a (T, N) array with T >= 2, got shape {phi.shape}.")
    T, N = phi.shape
    if counts.ndim != 2 or counts.shape[1] != T:
        raise ValueError(f"counts must be a (B, {T}) array (one column per permutation), got shape {counts.shape}.")
    if (counts < 0).any():
        raise ValueError("counts must be non-negative.")
    centre = float(u_total) / N
    values, second = phi.mean(axis=0), np.mean(phi**2, axis=0)  # as variance_statistics computes them
    extra = counts.astype(float) - 1.0
    means = values + extra @ phi / T
    seconds = second + extra @ (phi**2) / T
    return variance_from_moments(means, seconds, T, centre)[1]


def u_shape_replicates(replicates: np.ndarray) -> dict[str, np.ndarray]:
    """Per resample (rows of ``replicates``, one variance per lambda): argmin, its value, the ratio, interior.

    Returns
    -------
    dict
        ``argmin`` (B,) ints, ``minimum``, ``ratio`` = min(end / minimum) (where the minimum is
        <= 0: ``inf`` if it lies inside the grid and both ends are positive, else 1, no U),
        ``interior`` (argmin strictly inside the grid) and ``located`` (interior and positive).
    """
    reps = np.asarray(replicates, dtype=float)
    if reps.ndim != 2 or reps.shape[1] < 3:
        raise ValueError(f"replicates must be a (B, n_lambdas) array with n_lambdas >= 3, got shape {reps.shape}.")
    k = np.argmin(reps, axis=1)
    low = reps[np.arange(reps.shape[0]), k]
    positive = low > 0
    safe = np.where(positive, low, 1.0)
    interior = (k > 0) & (k < reps.shape[1] - 1)
    # a non-positive minimum: a U (ends infinitely far above it) only inside the grid with both ends positive;
    # at an end, or with an end as low, there is no U (ratio 1, as for a positive minimum at an end)
    u_floor = interior & (reps[:, 0] > 0) & (reps[:, -1] > 0)
    ratio = np.where(positive, np.minimum(reps[:, 0] / safe, reps[:, -1] / safe), np.where(u_floor, np.inf, 1.0))
    return {"argmin": k, "minimum": low, "ratio": ratio, "interior": interior, "located": interior & positive}


def u_shape_verdict(low: float, high: float, located_fraction: float, interior_fraction: float,
                    factor: float = 2.0) -> bool | None:
    """The rule of the module docstring: True (holds), False (does not hold) or None (inconclusive)."""
    if low >= factor and located_fraction >= LOCATED_TO_HOLD:
        return True
    if high < factor or interior_fraction < INTERIOR_TO_FAIL:
        return False
    return None


def permutations_to_decide(point: float, low: float, high: float, factor: float, n_permutations: int) -> int | None:
    r"""Permutations at which the interval would clear ``factor``, if it narrowed as :math:`1/\sqrt T` about ``point``.

    With the half-width on the threshold's side :math:`h` (``point - low`` above the threshold,
    ``high - point`` below) and the distance :math:`d = |\text{point} - \text{factor}|`:
    :math:`\lceil T (h/d)^2 \rceil`. None when ``point`` equals ``factor`` or the width is not finite.
    """
    width = point - low if point > factor else high - point
    gap = abs(point - factor)
    if gap == 0 or not (math.isfinite(width) and math.isfinite(gap)):
        return None
    return max(int(n_permutations), math.ceil(int(n_permutations) * (width / gap) ** 2))


def u_shape_interval(lams: np.ndarray, variance: np.ndarray, replicates: np.ndarray, shift: np.ndarray,
                     n_permutations: int, factor: float = 2.0, level: float = U_SHAPE_LEVEL) -> dict[str, Any]:
    r"""The bootstrap interval of min(end / minimum) and the verdict of the rule (module docstring).

    Parameters
    ----------
    lams : ndarray (L,)
        The grid, increasing.
    variance : ndarray (L,)
        The estimate :math:`\hat D(\lambda)` (gives the point ratio, as :func:`~._measure.u_shape_statistics`).
    replicates : ndarray (B, L)
        :math:`D^*_b(\lambda)` from :func:`resampled_variances`, not aligned.
    shift : ndarray (L,)
        Subtracted from every replicate: the estimate's ``mc_noise`` (alignment; zeros: none).
    n_permutations : int
        ``T``, for :func:`permutations_to_decide`.
    factor, level : float
        The threshold on the ratio and the interval's coverage.

    Returns
    -------
    dict
        ``n_bootstrap``, ``point``, ``low``, ``high``, ``interior_fraction``, ``located_fraction``,
        ``nonpositive_minimum_fraction``, ``argmin_fractions`` (lambda -> fraction of resamples,
        nonzero ones), ``verdict`` (True, False or None) and ``permutations_to_decide``.
    """
    lams, variance = np.asarray(lams, dtype=float), np.asarray(variance, dtype=float)
    reps = np.asarray(replicates, dtype=float) - np.asarray(shift, dtype=float)
    if reps.ndim != 2 or reps.shape[1] != lams.size or variance.shape != lams.shape:
        raise ValueError(f"replicates must be (B, {lams.size}) and variance ({lams.size},), got {reps.shape} and "
                         f"{variance.shape}.")
    B = check_int(reps.shape[0], "n_bootstrap (rows of replicates)", minimum=MIN_BOOTSTRAP)
    factor = check_float(factor, "factor", minimum=1.0)
    level = check_float(level, "level", minimum=0.0, strict=True, maximum=1.0)
    point = float(u_shape_replicates(variance[None, :])["ratio"][0])
    per = u_shape_replicates(reps)
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = (float(q) for q in np.percentile(per["ratio"], [tail, 100.0 - tail], method="inverted_cdf"))
    interior, located = float(per["interior"].mean()), float(per["located"].mean())
    verdict = u_shape_verdict(low, high, located, interior, factor)
    counts = np.bincount(per["argmin"], minlength=lams.size) / B
    return {"n_bootstrap": B, "point": point, "low": low, "high": high, "interior_fraction": interior,
            "located_fraction": located, "nonpositive_minimum_fraction": float(np.mean(per["minimum"] <= 0)),
            "argmin_fractions": {f"{lam:.6g}": float(f) for lam, f in zip(lams, counts) if f > 0},
            "verdict": verdict,  # more permutations can decide a ratio whose interval straddles the factor
            "permutations_to_decide": permutations_to_decide(point, low, high, factor, n_permutations)
            if verdict is None and low < factor <= high else None}
