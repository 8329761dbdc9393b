"""The one result type returned by every estimator, and what merges sampling runs."""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, ClassVar, TypeVar

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pandas as pd
    from numpy.typing import ArrayLike

__all__ = ["ValuationResult", "merge_results", "SamplingRecord", "Finalizer"]

# method name -> its Finalizer class, registered by the sampling estimators: the methods whose runs merge
_FINALIZERS: dict[str, type] = {}

_Registered = TypeVar("_Registered", bound=Callable[..., Any])


def register_finalizer(*methods: str) -> Callable[[_Registered], _Registered]:
    """Class decorator: ``methods`` are sampling methods whose runs :func:`merge_results` merges."""
    def register(finalizer: _Registered) -> _Registered:
        for method in methods:
            _FINALIZERS[method] = finalizer  # type: ignore[assignment]
        return finalizer
    return register


class Finalizer(ABC):
    """How one sampling method turns sample statistics into values, and how its runs merge.

    Each sampling estimator defines one, a frozen dataclass holding what its
    final step needs besides the statistics (its options, utilities it
    evaluated exactly...): the one code path from statistics to values, for a
    run and for merged runs alike.

    Attributes
    ----------
    listed : tuple of str
        Entries of :attr:`SamplingRecord.drawn` (how a run drew its samples)
        that :func:`merge_results` lists run by run where the runs differ.
    summed : tuple of str
        Per-run terms of the variance (:attr:`SamplingRecord.terms`) that the
        merged statistics cannot give: :func:`merge_results` sums them over
        the runs (additive over independent runs).
    summed_alike : tuple of str
        Entries of ``drawn`` the runs must share for ``summed`` to be summed.
    """

    listed: ClassVar[tuple[str, ...]] = ()
    summed: ClassVar[tuple[str, ...]] = ()
    summed_alike: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def finalize(self, state: Any, record: SamplingRecord) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Values, their standard errors and the entries it reports in ``info``, from ``state`` (a ``MeanState``)."""


@dataclass(frozen=True)
class SamplingRecord:
    """What the library reads back from a sampling run: typed, apart from ``info`` (which only reports).

    Attributes
    ----------
    finalizer : Finalizer
        The method's final step and merge rules, with the state it needs.
    options : dict
        Options of the estimate: runs merge only with equal ones (``info["options"]``).
    empty_utility, full_utility : float or None
        The anchors ``U(empty)`` and ``U(D)`` where the run has them: runs of
        different games (different anchors) do not merge.
    seeds : tuple of int
        Seeds of the runs whose samples the state holds (one for a single run).
    drawn : dict
        How the samples were drawn, as ``info`` reports it (e.g. SVARM's allocation).
    terms : dict of str to ndarray
        Per-run terms of the variance that the state cannot give (:attr:`Finalizer.summed`).
    game : str or None
        The fingerprint of the game the run valued (:func:`~shapley_research.games.game_identity`): runs of
        games with different fingerprints do not merge. ``None`` where the game has none.
    """

    finalizer: Finalizer
    options: dict[str, Any] = field(default_factory=dict)
    empty_utility: float | None = None
    full_utility: float | None = None
    seeds: tuple[int, ...] = ()
    drawn: dict[str, Any] = field(default_factory=dict)
    terms: dict[str, np.ndarray] = field(default_factory=dict, compare=False)  # arrays: no truth value
    game: str | None = None

    def anchors(self) -> tuple[float, float]:
        """``(U(empty), U(D))``, for a method that evaluates both (a ``ValueError`` if one is missing)."""
        if self.empty_utility is None or self.full_utility is None:
            raise ValueError(f"this {type(self.finalizer).__name__} run has no U(empty) or U(D) on record.")
        return self.empty_utility, self.full_utility

    def estimates(self, state: Any) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Values, standard errors and ``info`` entries of ``state``, by the method's :class:`Finalizer`."""
        return self.finalizer.finalize(state, self)

    def completed(self, updates: dict[str, Any]) -> SamplingRecord:
        """This record with the per-run terms among ``updates`` (what :meth:`estimates` reported)."""
        terms = {key: updates[key] for key in self.finalizer.summed if key in updates}
        return replace(self, terms={**self.terms, **terms}) if terms else self


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
        Standard error of each value where the method gives one: zeros for
        exact computations (exact values, KNN-Shapley, leave-one-out: no
        sampling error), ``None`` for approximations without an error
        estimate (the uniform split, the influence heuristics, LAVA).
    n_samples : int
        Monte Carlo samples drawn (permutations or tests); 0 for exact methods.
    info : dict
        Method-specific details (recovery status, epsilon used, ...), for
        reporting: no computation reads them back (that is ``record``'s).
    state : MeanState or None
        For sampling estimators, the running statistics of the samples
        (count, mean, sum of squared deviations) the values were computed
        from; :func:`merge_results` combines them.
    record : SamplingRecord or None
        For sampling estimators, what :func:`merge_results` reads back: the
        options, the anchors, the seeds and the method's final step.
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
    record: SamplingRecord | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        self.values = np.asarray(self.values, dtype=float)
        if self.values.ndim != 1:
            raise ValueError(f"values must be 1-D, one value per player, got shape {self.values.shape}.")
        if self.stderr is not None:
            self.stderr = np.asarray(self.stderr, dtype=float)
            if self.stderr.shape != self.values.shape:
                raise ValueError(f"stderr must have the shape of values {self.values.shape}, got "
                                 f"{self.stderr.shape}.")

    @property
    def n_players(self) -> int:
        return self.values.shape[0]

    def __len__(self) -> int:
        return self.n_players

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)

    def __getitem__(self, index: Any) -> float | np.ndarray:
        """``values[index]``: one player's value as a float, several (a slice, indices, a mask) as an array."""
        value = self.values[index]
        return float(value) if np.ndim(value) == 0 else value

    def __iter__(self) -> Iterator[float]:
        """The players' values, in player order."""
        return iter(self.values.tolist())

    def ranking(self) -> np.ndarray:
        """Player indices from most to least valuable (ties by index).

        Players without an estimate (``NaN``: Data-OOB's points never out of
        bag, say) come last, with a ``RuntimeWarning``: they are not the least
        valuable, so drop or estimate them before removing the lowest-ranked.
        """
        missing = int(np.isnan(self.values).sum())
        if missing:
            warnings.warn(f"{missing} of {self.n_players} players have no value (NaN) and rank last; they are not "
                          f"the least valuable: drop or estimate them before acting on the lowest ranks.",
                          RuntimeWarning, stacklevel=2)
        return np.argsort(-self.values, kind="stable")

    def to_dataframe(self, labels: ArrayLike | None = None) -> pd.DataFrame:
        """Tidy table: one row per player with value and standard error (NaN for methods without one).

        The columns are the same for every method (``player``, ``value``,
        ``stderr``, ``method``), so the tables of several methods concatenate.
        ``player`` numbers the players 0 to N-1, or holds ``labels``: one per
        player, in player order (the index of the training DataFrame, say:
        ``result.to_dataframe(labels=X_train.index)``; a pandas DataFrame or
        Series stands for its index, so ``labels=X_train`` does the same).
        """
        import pandas as pd

        if isinstance(labels, (pd.DataFrame, pd.Series)):
            labels = labels.index
        players = np.arange(self.n_players) if labels is None else np.asarray(labels)
        if players.shape != (self.n_players,):
            raise ValueError(f"labels must hold one label per player ({self.n_players}), got shape "
                             f"{players.shape}.")
        stderr = np.full(self.n_players, np.nan) if self.stderr is None else self.stderr
        return pd.DataFrame({"player": players, "value": self.values, "stderr": stderr, "method": self.method})

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
    (e.g. the feasibility recovery of ``group_testing[paper]``): the
    :class:`Finalizer` of the runs' :class:`SamplingRecord`, which also says
    which of its per-run terms to sum and which entries to list run by run.

    Parameters
    ----------
    *results : ValuationResult
        At least one result of the same sampling estimator (same method and
        options, same game, different seeds). Games are told apart by their
        type, size and anchors, and by their ``fingerprint()`` where they
        define one (the model utilities digest their data, model and metric;
        a subclass of :class:`~shapley_research.games.Game` may define its
        own). Runs with the same seed hold the
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
    records = _mergeable_records(results)
    first = results[0]
    seeds = [seed for record in records for seed in record.seeds]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"results share a seed ({seeds}): runs with one seed draw the same samples, so "
                         "merging them would count those samples twice.")
    template: Any = first.state  # a MeanState (estimators' layer): a fresh one of its length
    state = type(template)(template.dim)
    for result in results:
        state.merge(result.state)
    finalizer = records[0].finalizer
    listed = _listed_draws(finalizer, records)
    terms = _summed_terms(finalizer, records)
    record = replace(records[0], seeds=tuple(seeds), drawn={**records[0].drawn, **listed}, terms=terms)
    per_run = ("stopped_by", "resumed_samples", "batch_size")
    info = {**{k: v for k, v in first.info.items() if k not in per_run}, "seeds": seeds, **listed}
    for key in finalizer.summed:
        info.pop(key, None)
    info.update(terms)
    values, stderr, updates = record.estimates(state)
    info.update(updates)
    return ValuationResult(values=values, n_evaluations=sum(r.n_evaluations for r in results),
                           method=first.method, seed=None, wall_time=sum(r.wall_time for r in results),
                           stderr=stderr, n_samples=sum(r.n_samples for r in results), info=info, state=state,
                           record=record.completed(updates))


def _mergeable_records(results: tuple[ValuationResult, ...]) -> list[SamplingRecord]:
    """The runs' records, or a ``TypeError``/``ValueError`` saying why the runs cannot be merged."""
    if not results:
        raise ValueError("merge_results needs at least one result.")
    for i, result in enumerate(results):
        if not isinstance(result, ValuationResult):
            raise TypeError(f"results[{i}] must be a ValuationResult, got {type(result).__name__}.")
    first = results[0]
    records = [r.record for r in results]
    mergeable = ", ".join(sorted(_FINALIZERS))
    for i, result in enumerate(results):
        if result.method not in _FINALIZERS:
            raise ValueError(f"results[{i}] is a {result.method!r} run, which cannot be merged: only sampling runs "
                             f"that carry their sample statistics can ({mergeable}).")
        if result.state is None or result.record is None:
            raise ValueError(f"results[{i}] (a {result.method!r} run) carries no sample statistics (it enumerated "
                             "every coalition, or was built by hand), so it cannot be merged: only sampling runs "
                             f"that carry them can ({mergeable}).")
    known = [record for record in records if record is not None]
    for i, (result, record) in enumerate(zip(results[1:], known[1:]), start=1):
        if result.method != first.method:
            raise ValueError(f"results[{i}] is a {result.method!r} run, results[0] a {first.method!r} run.")
        if result.n_players != first.n_players:
            raise ValueError(f"results[{i}] has {result.n_players} players, results[0] {first.n_players}.")
        if record.options != known[0].options:
            raise ValueError(f"results[{i}] was run with options {record.options}, "
                             f"results[0] with {known[0].options}.")
        if known[0].game is not None and record.game is not None and record.game != known[0].game:
            raise ValueError(f"results[{i}] valued a game of fingerprint {record.game}, results[0] one of "
                             f"{known[0].game}: runs of different games cannot be merged.")
        for anchor in ("empty_utility", "full_utility"):
            a, b = getattr(known[0], anchor), getattr(record, anchor)
            if a is not None and b is not None and not np.isclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True):
                raise ValueError(f"results[{i}] has {anchor}={b!r}, results[0] {a!r}: runs of different games "
                                 "cannot be merged.")
    return known


def _listed_draws(finalizer: Finalizer, records: list[SamplingRecord]) -> dict[str, list[Any]]:
    """The entries of ``drawn`` in :attr:`Finalizer.listed` that differ between the runs, run by run.

    How the samples were drawn may differ between runs that estimate the same
    quantities (e.g. SVARM's allocation), and the merge keeps it on record.
    """
    first = records[0].drawn
    return {key: [record.drawn.get(key) for record in records] for key in finalizer.listed
            if any(record.drawn.get(key) != first.get(key) for record in records[1:])}


def _summed_terms(finalizer: Finalizer, records: list[SamplingRecord]) -> dict[str, np.ndarray]:
    """The runs' :attr:`Finalizer.summed` terms, summed where every run has one, of one shape, drawn alike."""
    first = records[0].drawn
    alike = all(record.drawn.get(key) == first.get(key) for record in records for key in finalizer.summed_alike)
    terms = {}
    for key in finalizer.summed:
        parts = [part for part in (record.terms.get(key) for record in records) if part is not None]
        if alike and len(parts) == len(records) and all(np.shape(p) == np.shape(parts[0]) for p in parts):
            terms[key] = np.sum([np.asarray(p, dtype=float) for p in parts], axis=0)
    return terms
