"""The sampling loop shared by every Monte Carlo estimator.

Every sampling estimator of the paper is the mean of an i.i.d. per-sample
vector: the marginal contributions along a permutation (baseline), the
weighted utility of a random test (group testing), or those plus their
Bernoulli projections (compressive sampling). So one loop serves them all:

* samples are drawn in batches of a fixed size; batch ``b`` draws from its own
  stream ``SeedSequence(entropy, spawn_key=(0, b))``, so the numbers depend only
  on the seed and the batch size, never on how batches are scheduled;
* each batch is reduced to ``(count, mean, M2)`` and merged, in batch order,
  into a :class:`MeanState` (Chan et al.'s parallel Welford update), which is
  O(dimension) memory whatever the number of samples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ._validation import check_int, check_utilities

BATCH_STREAM = 0  # spawn_key prefix of the per-batch sample streams
AUX_STREAM = 1  # spawn_key prefix of auxiliary streams (e.g. a measurement matrix)


def batch_rng(entropy: int, batch: int) -> np.random.Generator:
    """Generator of batch ``batch``: independent of every other batch."""
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(BATCH_STREAM, batch)))


def aux_rng(entropy: int, index: int = 0) -> np.random.Generator:
    """Generator for draws made once per run rather than per batch."""
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(AUX_STREAM, index)))


@dataclass
class MeanState:
    """Running count, mean and sum of squared deviations of sample vectors."""

    dim: int
    count: int = 0
    mean: np.ndarray = field(default=None)
    m2: np.ndarray = field(default=None)

    def __post_init__(self):
        if self.mean is None:
            self.mean = np.zeros(self.dim)
        if self.m2 is None:
            self.m2 = np.zeros(self.dim)

    def add_batch(self, samples: np.ndarray) -> None:
        """Merge a ``(b, dim)`` batch of samples."""
        n_b = samples.shape[0]
        if n_b == 0:
            return
        mean_b = samples.mean(axis=0)
        m2_b = ((samples - mean_b) ** 2).sum(axis=0)
        self.merge(MeanState(self.dim, n_b, mean_b, m2_b))

    def merge(self, other: "MeanState") -> None:
        """Combine with the statistics of independent samples (Chan et al. 1979)."""
        if other.dim != self.dim:
            raise ValueError(f"cannot merge states of dimension {self.dim} and {other.dim}.")
        if other.count == 0:
            return
        if self.count == 0:
            self.count, self.mean, self.m2 = other.count, other.mean.copy(), other.m2.copy()
            return
        total = self.count + other.count
        delta = other.mean - self.mean
        self.mean = self.mean + delta * (other.count / total)
        self.m2 = self.m2 + other.m2 + delta**2 * (self.count * other.count / total)
        self.count = total

    @property
    def variance(self) -> np.ndarray:
        """Unbiased sample variance (NaN with fewer than two samples)."""
        if self.count < 2:
            return np.full(self.dim, np.nan)
        return self.m2 / (self.count - 1)

    @property
    def stderr(self) -> np.ndarray:
        """Standard error of the mean."""
        return np.sqrt(self.variance / max(self.count, 1))


def evaluate_coalitions(game, masks: np.ndarray, empty_utility: float,
                        full_utility: float | None = None,
                        sizes: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Utilities of ``masks`` without re-evaluating the known anchors.

    Rows equal to the empty coalition get ``empty_utility`` and, when
    ``full_utility`` is given, rows equal to the grand coalition get it.
    ``sizes`` (the row sums, when the caller knows them) saves a pass.
    Returns the utilities and the number of evaluations actually made.
    """
    counts = masks.sum(axis=1) if sizes is None else sizes
    known = counts == 0
    if full_utility is not None:
        known |= counts == masks.shape[1]
    if not known.any():
        return check_utilities(game.evaluate(masks), masks.shape[0]), masks.shape[0]
    values = np.where(counts == 0, float(empty_utility), np.nan if full_utility is None else full_utility)
    rows = masks[~known]
    if rows.shape[0]:
        values[~known] = check_utilities(game.evaluate(rows), rows.shape[0])
    return values, int(rows.shape[0])


@dataclass
class Anchors:
    """Utilities of the empty and the grand coalition, evaluated once per run."""

    empty: float
    full: float
    n_evaluations: int


def evaluate_anchors(game, empty_utility: float | None) -> Anchors:
    """Evaluate ``U(D)`` and, unless ``empty_utility`` fixes it, ``U(empty)``.

    ``U(empty)`` is evaluated rather than assumed zero (the paper's convention
    ``U(empty) = 0`` is what most utilities satisfy, but e.g. accuracy of a
    default prediction does not); passing ``empty_utility`` overrides it.
    """
    n = game.n_players
    if empty_utility is None:
        masks = np.zeros((2, n), dtype=bool)
        masks[1] = True
        u = check_utilities(game.evaluate(masks), 2)
        return Anchors(float(u[0]), float(u[1]), 2)
    from ._validation import check_float

    empty_utility = check_float(empty_utility, "empty_utility")
    full = check_utilities(game.evaluate(np.ones((1, n), dtype=bool)), 1)
    return Anchors(empty_utility, float(full[0]), 1)


def default_batch_size(n_players: int, evaluations_per_unit: int) -> int:
    """Units per batch: about ``2**22`` mask cells, at most 4096 evaluations.

    Large enough that per-batch costs (a seed stream, a merge) are small next
    to the evaluations, small enough to keep memory at a few MiB. Depends only
    on the problem size, never on ``n_jobs``, so that results are identical
    however batches are scheduled.
    """
    target_evaluations = int(np.clip(2**22 // max(n_players, 1), 1, 4096))
    return max(1, target_evaluations // max(evaluations_per_unit, 1))


def units_from_budget(budget, fixed: int, per_unit: int, what: str) -> int:
    """Whole sampling units affordable with ``budget`` evaluations, or raise."""
    budget = check_int(budget, "budget", minimum=0)
    n_units = (budget - fixed) // per_unit if budget >= fixed else 0
    if n_units < 1:
        raise ValueError(
            f"budget={budget} is smaller than one {what}: it needs at least "
            f"{fixed + per_unit} utility evaluations ({fixed} fixed + {per_unit} per {what})."
        )
    return n_units


def run_sampling(
    sample_batch: Callable[[np.random.Generator, int], tuple[np.ndarray, int]],
    *,
    dim: int,
    n_units: int,
    batch_size: int,
    entropy: int,
    n_jobs: int | None = None,
    progress: bool | None = None,
    desc: str = "sampling",
    unit: str = "sample",
) -> tuple[MeanState, int]:
    """Draw ``n_units`` samples in batches and accumulate their mean.

    ``sample_batch(rng, size)`` draws ``size`` samples from ``rng`` and returns
    them, as a ``(size, dim)`` array or already reduced to a :class:`MeanState`,
    with the number of utility evaluations it made. Batches are merged in order, so the result is bit-identical for any
    ``n_jobs`` (joblib; use ``joblib.parallel_config`` to pick a backend such as
    Dask).
    """
    from tqdm.auto import tqdm

    sizes = [batch_size] * (n_units // batch_size)
    if n_units % batch_size:
        sizes.append(n_units % batch_size)
    state = MeanState(dim)
    n_evaluations = 0
    bar = tqdm(total=n_units, desc=desc, unit=unit, disable=None if progress is None else not progress,
               leave=False)

    def run_one(b: int, size: int):
        return sample_batch(batch_rng(entropy, b), size)

    if n_jobs in (None, 1):
        results = (run_one(b, size) for b, size in enumerate(sizes))
    else:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(sample_batch)(batch_rng(entropy, b), size) for b, size in enumerate(sizes)
        )
    with bar:
        for samples, evaluations in results:
            if isinstance(samples, MeanState):
                state.merge(samples)
                bar.update(samples.count)
            else:
                state.add_batch(samples)
                bar.update(samples.shape[0])
            n_evaluations += evaluations
    return state, n_evaluations
