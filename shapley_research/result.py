"""The one result type returned by every estimator."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["ValuationResult", "merge_results"]

# method name -> function(state, info) -> (values, stderr, info updates), registered by the
# sampling estimators: the one code path that turns sample statistics into values.
_FINALIZERS: dict[str, Callable] = {}

# info entries that merge_results sums over the runs (arrays of one shape), for their finalizers
SUMMED_INFO = ("pass_remainders",)


def register_finalizer(*methods: str):
    def register(function):
        for method in methods:
            _FINALIZERS[method] = function
        return function
    return register


@dataclass
class ValuationResult:
    """Values of the players of a game, with how they were obtained.

    Attributes
    ----------
    values : ndarray of shape (n_players,)
        Estimated (or exact) Shapley values.
    n_evaluations : int
        Utility evaluations actually made (coalitions whose utility was
        computed), including fixed ones such as ``U(D)`` and ``U(empty)``.
    method : str
        Name of the estimator, e.g. ``"permutation"`` or ``"group_testing[improved]"``.
    seed : int or None
        Entropy of the random streams; passing it as ``seed`` repeats the run.
        ``None`` for deterministic methods.
    wall_time : float
        Seconds spent in the estimator.
    stderr : ndarray of shape (n_players,) or None
        Standard error of each value where the method gives one.
    n_samples : int
        Monte Carlo samples drawn (permutations or tests); 0 for exact methods.
    info : dict
        Method-specific details (recovery status, epsilon used, ...).
    state : MeanState or None
        For sampling estimators, the running statistics of the samples
        (count, mean, sum of squared deviations) the values were computed
        from; :func:`merge_results` combines them.
    """

    values: np.ndarray
    n_evaluations: int
    method: str
    seed: int | None = None
    wall_time: float = 0.0
    stderr: np.ndarray | None = None
    n_samples: int = 0
    info: dict = field(default_factory=dict)
    state: object = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        self.values = np.asarray(self.values, dtype=float)
        if self.stderr is not None:
            self.stderr = np.asarray(self.stderr, dtype=float)

    @property
    def n_players(self) -> int:
        return self.values.shape[0]

    def __len__(self) -> int:
        return self.n_players

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)

    def ranking(self) -> np.ndarray:
        """Player indices from most to least valuable (ties by index)."""
        return np.argsort(-self.values, kind="stable")

    def to_dataframe(self):
        """Tidy table: one row per player with value and standard error."""
        import pandas as pd

        frame = pd.DataFrame({"player": np.arange(self.n_players), "value": self.values})
        if self.stderr is not None:
            frame["stderr"] = self.stderr
        frame["method"] = self.method
        return frame

    def merge(self, *others: "ValuationResult") -> "ValuationResult":
        """This run merged with ``others``: see :func:`merge_results`."""
        return merge_results(self, *others)

    def __repr__(self) -> str:
        head = np.array2string(self.values[:5], precision=4, separator=", ")
        more = ", ..." if self.n_players > 5 else ""
        return (f"ValuationResult(method={self.method!r}, n_players={self.n_players}, "
                f"n_evaluations={self.n_evaluations}, values={head[:-1]}{more}], "
                f"wall_time={self.wall_time:.3g}s)")


def merge_results(*results: ValuationResult) -> ValuationResult:
    r"""Combine independent runs of one sampling estimator into one estimate.

    The runs' sample statistics are merged exactly (Chan et al.'s update of
    count, mean and sum of squared deviations), so the merged values and
    standard errors are those of a single run over the union of their samples:
    more samples, smaller error (strata drawn without replacement keep each
    run's finite-population term, summed from ``info["pass_remainders"]``:
    the runs' draws are independent, not one sequence). The values are then
    computed from the merged statistics by the estimator's own final step
    (e.g. the feasibility recovery of ``group_testing[paper]``).

    Parameters
    ----------
    *results : ValuationResult
        At least one result of the same sampling estimator (same method and
        options, same game, different seeds). Runs with the same seed hold the
        same samples and are refused, as are runs without sample statistics
        (exact methods) and compressive runs (each seed draws its own
        measurement matrix; continue one run with a larger budget and its
        ``checkpoint`` instead).

    Returns
    -------
    ValuationResult
        ``n_evaluations``, ``n_samples`` and ``wall_time`` are the sums,
        ``seed`` is ``None`` and ``info["seeds"]`` lists the runs' seeds.
    """
    if not results:
        raise ValueError("merge_results needs at least one result.")
    for i, result in enumerate(results):
        if not isinstance(result, ValuationResult):
            raise TypeError(f"results[{i}] must be a ValuationResult, got {type(result).__name__}.")
    first = results[0]
    finalize = _FINALIZERS.get(first.method)
    if finalize is None or any(r.state is None for r in results):
        mergeable = ", ".join(sorted(_FINALIZERS))
        raise ValueError(f"results of method {first.method!r} cannot be merged: only sampling runs that carry "
                         f"their sample statistics can ({mergeable}).")
    for i, result in enumerate(results[1:], start=1):
        if result.method != first.method:
            raise ValueError(f"results[{i}] is a {result.method!r} run, results[0] a {first.method!r} run.")
        if result.n_players != first.n_players:
            raise ValueError(f"results[{i}] has {result.n_players} players, results[0] {first.n_players}.")
        if result.info.get("options") != first.info.get("options"):
            raise ValueError(f"results[{i}] was run with options {result.info.get('options')}, "
                             f"results[0] with {first.info.get('options')}.")
        for anchor in ("empty_utility", "full_utility"):
            a, b = first.info.get(anchor), result.info.get(anchor)
            if a is not None and b is not None and not np.isclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True):
                raise ValueError(f"results[{i}] has {anchor}={b!r}, results[0] {a!r}: runs of different games "
                                 "cannot be merged.")
    seeds = [seed for r in results for seed in (r.info.get("seeds") or [r.seed])]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"results share a seed ({seeds}): runs with one seed draw the same samples, so "
                         "merging them would count those samples twice.")
    state = type(first.state)(first.state.dim)
    for result in results:
        state.merge(result.state)
    per_run = ("stopped_by", "resumed_samples", "batch_size")
    info = {**{k: v for k, v in first.info.items() if k not in per_run}, "seeds": seeds}
    # how the samples were drawn may differ between runs that estimate the same strata (SVARM's allocation)
    for key in ("allocation", "pilot", "size_probabilities", "without_replacement"):
        if any(r.info.get(key) != first.info.get(key) for r in results[1:]):
            info[key] = [r.info.get(key) for r in results]
    # per-run terms of the variance that the merged state cannot give (SVARM's strata drawn without
    # replacement): additive over independent runs, kept only where every run drew the same way
    for key in SUMMED_INFO:
        parts = [r.info.get(key) for r in results]
        info.pop(key, None)
        same = all(r.info.get("without_replacement") == first.info.get("without_replacement") for r in results)
        if same and all(p is not None and np.shape(p) == np.shape(parts[0]) for p in parts):
            info[key] = np.sum([np.asarray(p, dtype=float) for p in parts], axis=0)
    values, stderr, updates = finalize(state, info)
    info.update(updates)
    return ValuationResult(values=values, n_evaluations=sum(r.n_evaluations for r in results),
                           method=first.method, seed=None, wall_time=sum(r.wall_time for r in results),
                           stderr=stderr, n_samples=sum(r.n_samples for r in results), info=info, state=state)
