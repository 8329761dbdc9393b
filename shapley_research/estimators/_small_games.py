r"""Small games: when a sampling budget pays for every coalition, enumerate them once.

A game of :math:`N` players has :math:`2^N` coalitions, and
:func:`~shapley_research.exact_shapley` needs exactly that many evaluations
(:math:`2^N - 1` when ``U(empty)`` is given). A sampling estimator whose
budget covers them would spend the same evaluations, or more, on a noisy
estimate; each sampling estimator therefore returns the exact values instead,
with ``info["stopped_by"] == "enumeration"``, standard errors of 0, no
sample statistics (so :func:`~shapley_research.merge_results` refuses the
result) and no checkpoint written. Every argument is still validated first.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from ..result import ValuationResult

#: Largest game enumerated in place of sampling (2^20 evaluations, as ``exact_shapley``'s default limit).
ENUMERATION_MAX_PLAYERS = 20


#: Set by :func:`sampling_forced` in the context that entered it.
_SAMPLING_FORCED: ContextVar[bool] = ContextVar("shapley_research_sampling_forced", default=False)


def enumeration_affordable(n_players: int, budget, empty_utility) -> bool:
    """Whether ``budget`` evaluations cover every coalition of an ``n_players`` game (never under
    :func:`sampling_forced`)."""
    if budget is None or n_players > ENUMERATION_MAX_PLAYERS or _SAMPLING_FORCED.get():
        return False
    return budget >= (1 << n_players) - (empty_utility is not None)


def enumerated_result(game, *, method: str, seed: int, empty_utility, start: float,
                      info: dict | None = None, exact=None) -> ValuationResult:
    """The exact values of ``game``, reported as the sampling estimator ``method`` would report them.

    ``info`` holds the estimator's own entries (its options), to which
    ``stopped_by="enumeration"`` and the anchors are added. ``exact`` computes
    the values, called as ``exact(game, max_players=N, empty_utility=...)``;
    the default is :func:`~shapley_research.exact_shapley`, and a semivalue's
    sampler passes its own exact enumeration.
    """
    if exact is None:
        from ._exact import exact_shapley as exact

    n = game.n_players
    exact = exact(game, max_players=n, empty_utility=empty_utility)
    return ValuationResult(values=exact.values, n_evaluations=exact.n_evaluations, method=method, seed=seed,
                           wall_time=time.perf_counter() - start, stderr=np.zeros(n), n_samples=0,
                           info={**(info or {}), **exact.info, "stopped_by": "enumeration", "resumed_samples": 0})


@contextmanager
def sampling_forced() -> Iterator[None]:
    """Within the block, sampling estimators sample even where the budget covers every coalition.

    For a study of a sampler itself on a small game (the experiments check a
    theorem's count of samples, which can exceed :math:`2^N`). The switch is a
    context variable: it holds in the thread (or task) that entered the block
    and nowhere else, so concurrent threads neither see it nor undo it; enter
    the block where the estimator runs (in a joblib worker, inside the task).
    """
    token = _SAMPLING_FORCED.set(True)
    try:
        yield
    finally:
        _SAMPLING_FORCED.reset(token)
