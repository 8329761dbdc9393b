"""The estimators' progress bars: live in terminals and notebooks, plain lines in logs.

:func:`progress_bar` picks by where the bar would be seen:

* in a Jupyter kernel (with ``ipywidgets``), ``tqdm.auto``'s notebook widget;
* on an interactive terminal, tqdm's live bar, redrawn in place;
* anywhere else (stderr redirected to a log file or a pipe, a CI job, a
  papermill run without widgets), one plain line every :data:`LOG_INTERVAL`
  seconds and a last one at the end, never carriage returns. With
  ``progress=None`` (the default) such lines start only once a run has taken
  :data:`LOG_INTERVAL` seconds, so quick runs print nothing; ``progress=True``
  prints a line from the start.

``progress=False`` shows nothing anywhere, and so does ``progress=None``
where the environment variable :data:`PROGRESS_ENV` is ``off``:
``shapley-research run`` sets it for the notebooks it executes, whose
outputs are committed results (a bar there would be a widget or a line per
estimator call, and differ from run to run); their own progress lines, one
per step of an experiment, go to papermill's log as before. The bars count utility
evaluations, so tqdm's rate and time left are evaluations per second and the
time the remaining evaluations take at that rate.

The sampling loop's bar is sized by :func:`expected_evaluations` and moved
after every batch by :func:`show_batch`; both read the precision from the
loop's :class:`~._stopping.StateEstimates`, so they compute nothing that
the stopping rules would not, and never change a number.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import IO, Any, Callable, Iterator

import numpy as np

from ..._validation import PROGRESS_ENV
from ._stopping import MIN_SAMPLES_FOR_PRECISION, Judged
from ...games import reporting_to

#: Seconds between two lines of a bar written to a log (a file or a pipe rather than a terminal).
LOG_INTERVAL = 30.0


class LineWriter:
    """A file for tqdm that turns each redraw into one plain line (no carriage returns)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        line = str(text).replace("\r", "").rstrip()
        if line:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        getattr(self.stream, "flush", lambda: None)()


def _interactive(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def progress_bar(progress: bool | None, *, total: float | None, desc: str, unit: str = "eval",
                 initial: float = 0, file: IO[str] | None = None) -> Any:
    """A tqdm bar for ``progress`` (``None``: as the module describes; ``False``: disabled).

    Parameters
    ----------
    progress : bool or None
        Whether to show it; ``None`` shows it in terminals and notebooks, and
        in logs once the run has lasted :data:`LOG_INTERVAL` seconds.
    total, desc, unit, initial
        As in ``tqdm``.
    file : file-like, optional
        Where a text bar goes (default ``sys.stderr``).

    Returns
    -------
    tqdm.tqdm
        Use it as a context manager; ``bar.disable`` tells whether it shows.
    """
    import tqdm.auto
    from tqdm.std import tqdm as text_tqdm

    common = dict(total=total, initial=initial, desc=desc, unit=unit)
    if progress is None and os.environ.get(PROGRESS_ENV, "").strip().lower() == "off":
        progress = False
    if progress is not None and not progress:
        return text_tqdm(disable=True, **common)
    if getattr(tqdm.auto, "notebook_tqdm", text_tqdm) is not text_tqdm:  # a Jupyter kernel with widgets
        return tqdm.auto.tqdm(leave=False, disable=False, **common)
    stream = sys.stderr if file is None else file
    if _interactive(stream):
        return text_tqdm(leave=False, disable=False, file=stream, **common)
    return text_tqdm(leave=True, disable=False, file=LineWriter(stream), mininterval=LOG_INTERVAL,
                     maxinterval=LOG_INTERVAL, miniters=1, delay=LOG_INTERVAL if progress is None else 0.0,
                     **common)


@contextmanager
def evaluation_bar(progress: bool | None, total: int, desc: str) -> Iterator[Callable[[int], None]]:
    """A bar over ``total`` utility evaluations, for estimators that call ``game.evaluate`` a chunk at a time.

    The game's own reports (:func:`~shapley_research.games.report_evaluated`)
    move it as coalitions are evaluated; the yielded ``advance(rows)``, called
    at the end of each chunk of ``rows`` evaluations, moves it by those not
    reported yet. It never changes a number.
    """
    bar = progress_bar(progress, total=total, desc=desc)
    done = 0

    def advance(rows: int) -> None:
        nonlocal done
        done += rows
        if done > bar.n:
            bar.update(done - bar.n)

    with bar, reporting_to(None if bar.disable else bar.update):
        yield advance


def set_total(bar, total: float | None) -> None:
    """Change ``bar``'s total (a notebook widget's length too) without redrawing it."""
    if total == bar.total:
        return
    widget = getattr(bar, "container", None)  # tqdm.notebook's bar: its length is the widget's maximum
    if widget is not None and total is not None and not bar.disable:
        meter = widget.children[1]
        meter.max = total
        meter.bar_style = ""
        if not bar.total:
            meter.layout.width = None
    bar.total = total


def expected_samples(judged: Judged, *, n_units: int | None, target_stderr: float | None) -> int | None:
    """Samples a run will take: ``n_units``, or, with ``target_stderr``, those it needs at ``stderr ~ 1/sqrt(n)``.

    ``None`` when unknown (no cap, and no standard error to extrapolate: none yet, or not finite).
    """
    count = judged.count
    if target_stderr is None or count < 2 or not np.isfinite(judged.max_stderr()):
        return n_units
    needed = int(np.ceil(count * max(judged.max_stderr() / max(target_stderr, 1e-300), 1.0) ** 2))
    needed = max(needed, MIN_SAMPLES_FOR_PRECISION, count)
    return needed if n_units is None else min(needed, n_units)


def expected_evaluations(judged: Judged, n_evaluations: int, *, n_units: int | None, target_stderr: float | None,
                         evaluations_per_unit: float | None) -> int | None:
    """The bar's total: :func:`expected_samples` times the cost of a sample, at least ``n_evaluations``.

    The cost is the one measured so far, or ``evaluations_per_unit`` before a
    batch has measured it; ``None`` when either is unknown.
    """
    units = expected_samples(judged, n_units=n_units, target_stderr=target_stderr)
    count = judged.count
    per_unit = n_evaluations / count if count and n_evaluations else evaluations_per_unit
    if units is None or per_unit is None:
        return None
    return max(int(round(units * per_unit)), n_evaluations)


def show_batch(bar, judged: Judged, n_evaluations: int, *, total: int | None, unit: str,
               target_stderr: float | None, target_rank_correlation: float | None) -> None:
    """Move ``bar`` to ``n_evaluations`` (the rows a game reported within the batch counted once) and label it.

    The label shows the samples (named ``unit``), the largest standard error
    with ``target_stderr``, and the expected rank correlation with
    ``target_rank_correlation`` (computed only when the bar shows).
    """
    set_total(bar, total)
    bar.update(n_evaluations - bar.n)  # only what the game has not reported within the batch
    postfix: dict[str, object] = {f"{unit}s": judged.count}
    if target_stderr is not None:
        postfix.update(stderr=f"{judged.max_stderr():.3g}", target=f"{target_stderr:.3g}")
    if target_rank_correlation is not None and not bar.disable:
        postfix.update(rank_corr=f"{judged.rank_correlation():.4g}",
                       rank_target=f"{target_rank_correlation:.4g}")
    bar.set_postfix(postfix, refresh=False)
