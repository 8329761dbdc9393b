"""Values by permutation sampling, the variance of the values, the shape of the curve and the whole grid."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_float, check_int
from ...estimators import marginal_contributions, random_permutations
from .._parallel import check_n_jobs, parallel_map
from .._verdicts import rank_correlation
from ._bootstrap import MIN_BOOTSTRAP, resample_counts, resampled_variances, variance_from_moments
from ._data import CONVENTIONS, RidgeData, make_game

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence


# --------------------------------------------------------------------------------------------
# Values by permutation sampling, and the variance of the values
# --------------------------------------------------------------------------------------------

def bootstrap_weights(rng: np.random.Generator, n_bootstrap: int, n_permutations: int) -> np.ndarray:
    """Resampling counts (B, T): row ``b`` says how often each permutation enters replicate ``b``."""
    n_bootstrap = check_int(n_bootstrap, "n_bootstrap", minimum=0)
    T = check_int(n_permutations, "n_permutations", minimum=2)
    if n_bootstrap == 0:
        return np.zeros((0, T))
    return rng.multinomial(T, np.full(T, 1.0 / T), size=n_bootstrap).astype(float)


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
    * with bootstrap ``weights`` (B, T) over permutations: ``variance_se`` (bootstrap standard error
      of ``variance``), ``variance_lo``/``variance_hi`` (2.5/97.5 percentiles) and ``bootstrap`` (the B
      replicates of ``variance``, recentred on the estimate: in the bootstrap world the "true" values
      are :math:`\hat s`, so raw replicates of the debiased statistic centre on ``variance_raw``).

    Parameters
    ----------
    phi : ndarray (T, N)
        Marginal contributions, one row per permutation.
    u_total : float
        :math:`U(D) - U(\emptyset)`, the total the values share.
    weights : ndarray (B, T), optional
        Bootstrap resampling counts (:func:`bootstrap_weights`), each row summing to ``T``.
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
        means = weights @ phi / T
        seconds = weights @ (phi**2) / T
        _, boot, _ = variance_from_moments(means, seconds, T, centre)
        # In the bootstrap world the "true" values are hat s, so the replicates centre on variance_raw;
        # recentre them on the estimate (the usual bootstrap bias correction) and keep their spread.
        boot = boot - boot.mean() + debiased
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
    the grid are not blurred by independent sampling noise. With resampling ``counts`` (B, T)
    (:func:`~._bootstrap.resample_counts`) the result also holds ``resampled_variance``, the
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
    """Values and their variance at every ``lam`` under every convention.

    The same ``n_permutations`` random permutations (and bootstrap resamples) are used for every
    lambda and convention; they are drawn from ``numpy.random.default_rng([seed, 1])`` (a stream
    apart from the split's ``default_rng(seed)``), so results depend on ``seed`` only (never on
    ``n_jobs``). The ``n_bootstrap`` resamples give each variance's standard error and interval;
    the ``n_bootstrap_u_shape`` resamples, from a stream of their own
    (:func:`~._bootstrap.resample_counts`, which leaves the first unchanged), decide the U-shape
    claims (:func:`~._bootstrap.u_shape_interval`).

    Parameters
    ----------
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
    # a stream of its own: the train/test split is drawn from default_rng(seed) itself
    rng = np.random.default_rng([check_int(seed, "seed", minimum=0), 1])
    permutations = random_permutations(rng, T, data.n_players)
    weights = bootstrap_weights(rng, n_bootstrap, T)
    counts = resample_counts(seed, n_u_shape, T)
    tasks = [(convention, float(lam)) for convention in conventions for lam in np.asarray(lams)]
    return parallel_map(value_variance_for_lambda,
                        [(data, lam, c, permutations, weights, counts) for c, lam in tasks],
                        n_jobs=n_jobs, progress=progress, desc="lambda grid")

