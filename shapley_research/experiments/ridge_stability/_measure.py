"""Values by permutation sampling, the variance of the values, the shape of the curve and the whole grid."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_float, check_int
from ...estimators import marginal_contributions, random_permutations
from .._parallel import check_n_jobs, parallel_map
from .._verdicts import rank_correlation
from ._bootstrap import MIN_BOOTSTRAP, draw_counts, resample_counts, resampled_variances, variance_from_moments
from ._data import CONVENTIONS, RidgeData, make_game

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence


# --------------------------------------------------------------------------------------------
# Values by permutation sampling, and the variance of the values
# --------------------------------------------------------------------------------------------

def bootstrap_weights(rng: np.random.Generator, n_bootstrap: int, n_permutations: int) -> np.ndarray:
    """Resampling counts (B, T) as floats: row ``b`` says how often each permutation enters replicate ``b``.

    The one resampling draw, :func:`~._bootstrap.draw_counts`, from ``rng`` (``B`` = 0 gives an empty
    (0, T) array). :func:`run_grid` does not call it: it takes the first ``n_bootstrap`` rows of
    :func:`~._bootstrap.resample_counts`, the draw that also decides the U-shape claims, which equal
    ``bootstrap_weights(numpy.random.default_rng(u_shape_seed(seed)), n_bootstrap, T)``.
    """
    return draw_counts(rng, n_bootstrap, n_permutations).astype(float)


def variance_statistics(phi: np.ndarray, u_total: float, weights: np.ndarray | None = None) -> dict:
    r"""Variance of the estimated values from marginal contributions ``phi`` (T permutations, N points).

    The values are :math:`\hat s = \frac1T\sum_t\phi_t`; their mean is exactly
    :math:`\bar s = U_{tot}/N` (every permutation is efficient). Reported:

    * ``variance_raw`` :math:`= \frac1N\sum_i(\hat s_i - \bar s)^2` (population variance);
    * ``variance`` = ``variance_raw`` minus the mean squared standard error
      :math:`\frac1N\sum_i \widehat{\mathrm{Var}}(\phi_i)/T`: unbiased for the variance of the true
      values (``E[variance_raw] = Var(s) + mean_i Var(hat s_i)``);
    * ``uniform_error`` = :math:`\|\hat s - \bar s\mathbf 1\|_2` (equals ``sqrt(N variance_raw)``) and
      ``uniform_error_debiased`` = :math:`\sqrt{N\max(\text{variance}, 0)}`;
    * ``value_range`` = :math:`\max_i\hat s_i - \min_i\hat s_i`, ``mean_abs_value``;
    * with bootstrap ``weights`` :math:`c` (B, T) over permutations: the replicates
      :math:`D^*_b` = :func:`~._bootstrap.resampled_variances` (the debiased variance of each resample,
      the computation the U-shape claims use), recentred on the estimate,
      :math:`\tilde D_b = D^*_b - \frac1B\sum_{b'} D^*_{b'} + \text{variance}` (in the bootstrap world
      the "true" values are :math:`\hat s`, so the :math:`D^*_b` centre on ``variance_raw``; the
      recentring is the usual bootstrap bias correction and keeps their spread): ``bootstrap`` (the B
      :math:`\tilde D_b`), ``variance_se`` (their standard deviation, ``ddof=1``) and
      ``variance_lo``/``variance_hi`` (their 2.5/97.5 percentiles, numpy's default ``"linear"``).

    Parameters
    ----------
    phi : ndarray (T, N)
        Marginal contributions, one row per permutation.
    u_total : float
        :math:`U(D) - U(\emptyset)`, the total the values share.
    weights : ndarray (B, T), optional
        Bootstrap resampling counts (:func:`~._bootstrap.resample_counts` or :func:`bootstrap_weights`),
        each row summing to ``T``; None or no rows: ``bootstrap`` empty and the three others NaN.
    """
    phi = np.asarray(phi, dtype=float)
    T, N = phi.shape
    if T < 2:
        raise ValueError("need at least two permutations to estimate the Monte Carlo error.")
    centre = float(u_total) / N
    values = phi.mean(axis=0)
    raw, debiased, mc = variance_from_moments(values, np.mean(phi**2, axis=0), T, centre)
    out = {"values": values, "stderr": np.sqrt(np.clip(phi.var(axis=0, ddof=1), 0, None) / T),
           "variance_raw": float(raw), "variance": float(debiased), "mc_noise": float(mc),
           "uniform_error": float(np.linalg.norm(values - centre)),
           "uniform_error_debiased": float(np.sqrt(N * max(debiased, 0.0))),
           "value_range": float(values.max() - values.min()), "mean_abs_value": float(np.mean(np.abs(values)))}
    if weights is not None and len(weights):
        boot = resampled_variances(phi, u_total, weights)
        boot = boot - boot.mean() + debiased  # they centre on variance_raw: recentre on the estimate
        out.update(bootstrap=boot, variance_se=float(np.std(boot, ddof=1)),
                   variance_lo=float(np.percentile(boot, 2.5)), variance_hi=float(np.percentile(boot, 97.5)))
    else:
        out.update(bootstrap=np.zeros(0), variance_se=float("nan"), variance_lo=float("nan"),
                   variance_hi=float("nan"))
    return out


def value_variance_for_lambda(data: RidgeData, lam: float, convention: str, permutations: np.ndarray,
                              weights: np.ndarray | None = None, counts: np.ndarray | None = None) -> dict:
    """Permutation-sampling values at one lambda and the statistics of :func:`variance_statistics`.

    The marginal contributions come from
    :func:`shapley_research.estimators.marginal_contributions` (the estimator of
    :func:`~shapley_research.permutation_shapley`, through the game's one-pass prefix path) on the
    given ``permutations``, shared across lambdas (common random numbers) so that differences along
    the grid are not blurred by independent sampling noise. ``weights`` (the first ``n_bootstrap``
    rows of the run's resamples) give the standard error (:func:`variance_statistics`); with
    resampling ``counts`` (B, T) (:func:`~._bootstrap.resample_counts`, the first
    ``n_bootstrap_u_shape`` rows of the same draw) the result also holds ``resampled_variance``, the
    debiased variance of every resample (:func:`~._bootstrap.resampled_variances`, not aligned;
    empty without ``counts``), from which the U-shape claims are decided.
    """
    game = make_game(data, lam, convention)
    u_empty = -data.empty_test_mse  # U(empty) of -MSE: the empty set predicts 0
    phi = marginal_contributions(game, np.asarray(permutations), u_empty)
    u_full = float(game.evaluate(np.ones((1, data.n_players), dtype=bool))[0])
    stats = variance_statistics(phi, u_full - u_empty, weights)
    stats.update(lam=float(lam), convention=convention, u_full=u_full - u_empty,
                 n_permutations=int(phi.shape[0]),
                 resampled_variance=np.zeros(0) if counts is None else resampled_variances(phi, u_full - u_empty,
                                                                                            counts))
    return stats


# --------------------------------------------------------------------------------------------
# The shape of the curve
# --------------------------------------------------------------------------------------------

def _spearman(x, y) -> float:
    """:func:`~.._verdicts.rank_correlation`, NaN below three points (two always rank alike)."""
    return float("nan") if len(x) < 3 else rank_correlation(x, y)


def side_spearman(lams: np.ndarray, variance: np.ndarray) -> tuple[float, float]:
    """Spearman correlation of the variance with lambda left of its minimum and right of it.

    Each side includes the minimum; a side with fewer than three points gives NaN.
    """
    lams, variance = np.asarray(lams, dtype=float), np.asarray(variance, dtype=float)
    k = int(np.argmin(variance))
    return _spearman(lams[:k + 1], variance[:k + 1]), _spearman(lams[k:], variance[k:])


def u_shape_statistics(lams: np.ndarray, variance: np.ndarray, factor: float = 2.0) -> dict[str, Any]:
    """Is the curve U-shaped: minimum strictly inside the grid, both ends ``factor`` times above it?

    Returns
    -------
    dict
        ``argmin`` (index), ``lambda_argmin``, ``min_variance``, ``interior`` (bool),
        ``left_ratio`` and ``right_ratio`` (end over minimum), ``min_end_ratio``, ``holds``,
        ``spearman_left`` and ``spearman_right`` (:func:`side_spearman`).
    """
    lams, variance = np.asarray(lams, dtype=float), np.asarray(variance, dtype=float)
    if lams.shape != variance.shape or lams.size < 3:
        raise ValueError("need matching lambda and variance arrays with at least three points.")
    factor = check_float(factor, "factor", minimum=1.0)
    k = int(np.argmin(variance))
    low = variance[k]
    with np.errstate(divide="ignore", invalid="ignore"):
        left, right = (variance[0] / low, variance[-1] / low) if low > 0 else (float("inf"), float("inf"))
    interior = 0 < k < lams.size - 1
    rho_left, rho_right = side_spearman(lams, variance)
    return {"argmin": k, "lambda_argmin": float(lams[k]), "min_variance": float(low), "interior": bool(interior),
            "left_ratio": float(left), "right_ratio": float(right), "min_end_ratio": float(min(left, right)),
            "holds": bool(interior and low > 0 and min(left, right) >= factor),
            "spearman_left": rho_left, "spearman_right": rho_right}


def u_shape_fraction(lams: np.ndarray, replicates: np.ndarray, factor: float = 2.0) -> float:
    """Fraction of bootstrap replicates (rows, one variance per lambda) whose curve is U-shaped."""
    replicates = np.asarray(replicates, dtype=float)
    if replicates.size == 0:
        return float("nan")
    return float(np.mean([u_shape_statistics(lams, row, factor)["holds"] for row in replicates]))


# --------------------------------------------------------------------------------------------
# The whole grid
# --------------------------------------------------------------------------------------------

def run_grid(data: RidgeData, lams: Sequence[float], n_permutations: int, seed: int,
             conventions: Sequence[str] = CONVENTIONS, n_bootstrap: int = 200, n_jobs: int = 1,
             progress: Callable[..., Iterable[Any]] | None = None,
             n_bootstrap_u_shape: int = 2000) -> list[dict[str, Any]]:
    r"""Values and their variance at every ``lam`` under every convention.

    The same ``n_permutations`` random permutations (and bootstrap resamples) are used for every
    lambda and convention; the permutations are drawn from ``numpy.random.default_rng([seed, 1])``
    (a stream apart from the split's ``default_rng(seed)``), so results depend on ``seed`` only
    (never on ``n_jobs``). The resamples are one draw of :math:`\max(` ``n_bootstrap``,
    ``n_bootstrap_u_shape`` :math:`)` rows (:func:`~._bootstrap.resample_counts`, from a child of
    that seed which leaves the permutations unchanged): its first ``n_bootstrap`` rows give each
    variance's standard error and interval (:func:`variance_statistics`), its first
    ``n_bootstrap_u_shape`` rows decide the U-shape claims (:func:`~._bootstrap.u_shape_interval`).
    A prefix of the draw does not depend on the number of rows drawn, so each set of resamples
    depends on its own count only, and the smaller is a subset of the larger.

    Parameters
    ----------
    n_bootstrap : int
        Resamples of the permutations for each variance's standard error and interval, >= 0
        (0: none, NaN).
    progress : callable, optional
        ``progress(iterable, desc=..., total=...)`` wrapper for the loop (e.g.
        :func:`shapley_research.experiments.progress`).
    n_bootstrap_u_shape : int
        Resamples of the permutations for the U-shape claims' interval, >= 40.

    Returns
    -------
    rows : list of dict
        One per (convention, lambda), from :func:`value_variance_for_lambda` (including the values
        and ``resampled_variance``).
    """

    T = check_int(n_permutations, "n_permutations", minimum=2)
    n_jobs = check_n_jobs(n_jobs)
    n_u_shape = check_int(n_bootstrap_u_shape, "n_bootstrap_u_shape", minimum=MIN_BOOTSTRAP)
    n_se = check_int(n_bootstrap, "n_bootstrap", minimum=0)
    # a stream of its own: the train/test split is drawn from default_rng(seed) itself
    rng = np.random.default_rng([check_int(seed, "seed", minimum=0), 1])
    permutations = random_permutations(rng, T, data.n_players)
    draw = resample_counts(seed, max(n_se, n_u_shape), T)  # one draw: every resample of the run
    weights, counts = draw[:n_se], draw[:n_u_shape]
    tasks = [(convention, float(lam)) for convention in conventions for lam in np.asarray(lams)]
    return parallel_map(value_variance_for_lambda,
                        [(data, lam, c, permutations, weights, counts) for c, lam in tasks],
                        n_jobs=n_jobs, progress=progress, desc="lambda grid")

