"""When the sampling loop stops: small rules behind one protocol, judged after every merged batch.

A rule (:class:`StoppingRule`) has a ``name``, the run's ``stopped_by``, and
says from the merged state whether the run may stop: :class:`SampleCap` (the
budget's sample count), :class:`TargetStderr` (the largest standard error)
and :class:`TargetRankCorrelation` (the stability of the ranking). The loop
asks them in that order, after the whole of each batch, and stops at the
first met (:func:`first_reached`). The precision rules judge
:class:`StateEstimates`, computed once per merged state, and wait for
:data:`MIN_SAMPLES_FOR_PRECISION` samples. Every decision is a pure function
of the merged state, so a run stops at the same batch for any ``n_jobs`` and
after a checkpoint/resume. A new rule is one more small class and one more
line in :func:`stopping_rules`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Protocol, Sequence

import numpy as np

MIN_SAMPLES_FOR_PRECISION = 30  # a standard error from fewer samples is too noisy to stop on


class Judged(Protocol):
    """What a rule looks at: the merged sample count and the precision of the estimates."""

    @property
    def count(self) -> int: ...

    def max_stderr(self) -> float: ...

    def rank_correlation(self) -> float: ...


class StoppingRule(Protocol):
    """A reason to stop: ``name`` is what ``stopped_by`` reports once ``reached`` holds."""

    @property
    def name(self) -> str: ...

    def reached(self, judged: Judged) -> bool: ...


@dataclass(frozen=True)
class SampleCap:
    """Stop once ``n_units`` samples are merged: what the budget pays for, or a precision run's cap."""

    n_units: int
    name: ClassVar[str] = "budget"

    def reached(self, judged: Judged) -> bool:
        return judged.count >= self.n_units


@dataclass(frozen=True)
class TargetStderr:
    """Stop once the largest standard error of the watched coordinates is at most ``target``."""

    target: float
    name: ClassVar[str] = "target_stderr"

    def reached(self, judged: Judged) -> bool:
        return judged.count >= MIN_SAMPLES_FOR_PRECISION and judged.max_stderr() <= self.target


@dataclass(frozen=True)
class TargetRankCorrelation:
    """Stop once the expected rank correlation with a re-estimate is at least ``target``."""

    target: float
    name: ClassVar[str] = "target_rank_correlation"

    def reached(self, judged: Judged) -> bool:
        return judged.count >= MIN_SAMPLES_FOR_PRECISION and judged.rank_correlation() >= self.target


def stopping_rules(n_units: int | None, target_stderr: float | None,
                   target_rank_correlation: float | None) -> tuple[StoppingRule, ...]:
    """The rules of a run, in the order they are asked (``None`` leaves a rule out)."""
    rules: list[StoppingRule] = []
    if n_units is not None:
        rules.append(SampleCap(n_units))
    if target_stderr is not None:
        rules.append(TargetStderr(target_stderr))
    if target_rank_correlation is not None:
        rules.append(TargetRankCorrelation(target_rank_correlation))
    return tuple(rules)


def first_reached(rules: Sequence[StoppingRule], judged: Judged) -> str | None:
    """The name of the first rule met (later rules are not judged), or ``None``."""
    for rule in rules:
        if rule.reached(judged):
            return rule.name
    return None


class StateEstimates:
    """The values and standard errors of a merged state, and their precision, computed once per state.

    Parameters
    ----------
    state : MeanState
        The loop's state; it grows in place, and every merge changes its
        ``count``, which invalidates what was computed.
    estimates_of : callable, optional
        ``estimates_of(state) -> (values, stderr)``; default the sample mean
        and its standard error.
    watch : slice
        The coordinates judged.
    rank_correlation_of : callable
        ``rank_correlation_of(values, stderr, key=count) -> float``
        (:func:`~._loop.expected_rank_correlation`).
    """

    def __init__(self, state, *, estimates_of: Callable | None = None, watch: slice = slice(None),
                 rank_correlation_of: Callable[..., float]):
        self.state = state
        self.estimates_of = estimates_of
        self.watch = watch
        self.rank_correlation_of = rank_correlation_of
        self._cache: dict = {}

    @property
    def count(self) -> int:
        return self.state.count

    def _once(self, name: str, compute: Callable[[], object]):
        """``compute()``, evaluated once per merged state (the count grows with every merge)."""
        if self._cache.get("count") != self.state.count:
            self._cache.clear()
            self._cache["count"] = self.state.count
        if name not in self._cache:
            self._cache[name] = compute()
        return self._cache[name]

    def estimates(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, stderr)`` of every coordinate."""
        state = self.state
        return self._once("estimates", lambda: (state.mean, state.stderr) if self.estimates_of is None
                          else self.estimates_of(state))

    def max_stderr(self) -> float:
        """The largest standard error of the watched coordinates (NaNs aside); ``inf`` below two samples."""
        if self.state.count < 2:
            return np.inf
        return self._once("precision", lambda: float(np.nanmax(self.estimates()[1][self.watch])))

    def rank_correlation(self) -> float:
        """The expected rank correlation of the watched coordinates, keyed by the count; NaN below two samples."""
        def compute() -> float:
            values, stderr = self.estimates()
            return self.rank_correlation_of(values[self.watch], stderr[self.watch], key=self.state.count)

        if self.state.count < 2:
            return float("nan")
        return self._once("rank_correlation", compute)
