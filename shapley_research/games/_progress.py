"""Progress from inside a game: :func:`report_evaluated`, for utilities slow per coalition.

An estimator's progress bar moves once per batch of coalitions it hands to
``game.evaluate`` (up to 4,096 of them), which for a model refitted per
coalition can be minutes. A game that evaluates its rows one at a time may
call :func:`report_evaluated` after each row (or every few rows); the
estimator that is evaluating it (:func:`reporting_to`, set around its
evaluations by the sampling loop) moves its bar by that many evaluations at
once, and at the end of the batch only by the evaluations not reported yet.

Reporting never changes what a game is asked: the rows of an ``evaluate``
call, and so every utility and every value, are the same with and without a
bar. Reports count only in the thread that set the reporter, so they are
ignored in joblib's worker processes and threads (``n_jobs > 1``), where the
bar moves once per batch; outside an estimator they cost one context lookup.
"""

from __future__ import annotations

import contextvars
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

__all__ = ["report_evaluated", "reporting_to"]

# (thread id, callback) of the estimator evaluating, or None
_REPORTER: contextvars.ContextVar[tuple[int, Callable[[int], object]] | None] = contextvars.ContextVar(
    "shapley_research_reporter", default=None)


def report_evaluated(n: int = 1) -> None:
    """Tell the running estimator's progress bar that ``n`` more coalitions were evaluated.

    For games that evaluate the rows of one ``evaluate`` call one at a time
    (e.g. a model fitted per coalition): call it after each row, or every
    few rows, with the rows done since the last call. A no-op outside an
    estimator, in worker processes and threads, and with the bar off.

    Parameters
    ----------
    n : int, default 1
        Coalitions evaluated since the last report (of this ``evaluate`` call).
    """
    reporter = _REPORTER.get()
    if reporter is not None and reporter[0] == threading.get_ident():
        reporter[1](n)


@contextmanager
def reporting_to(callback: Callable[[int], object] | None) -> Iterator[None]:
    """Within the block, :func:`report_evaluated` calls ``callback(n)`` (in this thread only).

    ``None`` silences reports within the block (e.g. an estimator whose bar
    is off, or one nested inside another estimator's game).
    """
    token = _REPORTER.set(None if callback is None else (threading.get_ident(), callback))
    try:
        yield
    finally:
        _REPORTER.reset(token)
