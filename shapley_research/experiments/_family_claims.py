"""A claim decided on a family of intervals: every interval on the claimed side, with Holm's correction on a miss.

Experiments that decide one claim on several t-intervals (a method per data
set, several methods) build it here, so that they agree on what a missing
run, a miss that Holm's correction undoes and a long note mean:

* the verdict is :func:`~._verdicts.combine` over the Holm-corrected
  entries (:func:`~._verdicts.family_verdicts`), an entry that did not run
  counting as a miss;
* the statistic is the worst mean (``worst=min`` for a claim of "at least",
  ``max`` for "at most"; NaN if an entry did not run);
* the note describes every entry (:func:`~._verdicts.describe`), or, with
  more than :data:`SHOWN` of them, those not holding and the worst that does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._verdicts import combine, describe, family_verdicts

if TYPE_CHECKING:
    from collections.abc import Callable
    from ._common import Claim

__all__ = ["family_claim", "SHOWN"]

#: Most entries a note describes one by one.
SHOWN = 8


def _shown(entries: dict[str, dict[str, Any]], worst: Callable) -> dict[str, dict[str, Any]]:
    """The entries the note describes: all, or those not holding (the nearest the wrong side) and the worst holding."""
    if len(entries) <= SHOWN:
        return entries
    shown = {k: e for k, e in entries.items() if e["verdict"] is not True}
    best = {k: e for k, e in entries.items() if e["verdict"] is True}
    if best and any(e["n"] for e in entries.values()):
        key = (min if worst is min else max)(best, key=lambda k: best[k]["mean"])
        shown = {key: best[key], **shown}
    if len(shown) > SHOWN:
        order = sorted(shown, key=lambda k: shown[k]["mean"] if np.isfinite(shown[k]["mean"]) else -np.inf,
                       reverse=worst is not min)
        shown = {k: shown[k] for k in order[:SHOWN]}
    return shown


def _family_note(entries: dict[str, dict[str, Any]], verdict: bool | None, worst: Callable) -> str:
    """The entries described, then the cause of a miss or why the claim is undecided."""
    shown = _shown(entries, worst)
    body = "; ".join(describe(k, e) for k, e in shown.items()) + "."
    if len(shown) < len(entries):
        holding = sum(e["verdict"] is True for k, e in entries.items() if k not in shown)
        body += (f" ({len(entries) - len(shown)} more: {holding} hold, the others are undecided or missed by "
                 "less.)")
    if verdict is False:
        failing = [k for k, e in entries.items() if e["verdict"] is False or not e["n"]]
        return body + (" Cause of the miss: " + ", ".join(failing) + " (interval wholly on the wrong side after "
                       "Holm's correction, or did not run).")
    if verdict is None:
        return ("Inconclusive: an interval straddles the threshold (or lies on the wrong side only before Holm's "
                "correction). " + body)
    return body


def family_claim(text: str, statistic: str, entries: dict[str, dict[str, Any]], *, source: str, criterion: str,
                 section: str | None = None, note: str = "", worst: Callable = min, timing: bool = False,
                 undecided: str | None = None, level: float = 0.95) -> Claim:
    """A claim from ``{label: interval_verdict(...)}``: Holm-corrected combined verdict, worst mean as statistic.

    Parameters
    ----------
    text, statistic, source, criterion, section, timing
        As :func:`~._common.claim`.
    entries : dict
        One :func:`~._verdicts.interval_verdict` per interval of the family (``n`` 0: did not run, a miss).
    note : str
        Written before the entries' description.
    worst : callable
        ``min`` (the claim is "at least") or ``max`` ("at most"): which mean is the statistic.
    undecided : str or None
        A verdict that overrides the intervals' (such as ``"outside its scope"``).
    level : float
        The intervals' level; Holm's correction runs at ``(1 - level) / 2``.

    Returns
    -------
    Claim
    """
    from ._common import claim

    entries = family_verdicts(entries, level)
    verdict = combine(e["verdict"] if e["n"] else False for e in entries.values())
    means = [e["mean"] for e in entries.values() if e["n"]]
    value = float(worst(means)) if means and len(means) == len(entries) else float("nan")
    full_note = " ".join(part for part in (note, _family_note(entries, verdict, worst)) if part)
    return claim(text, statistic, value, verdict is True and not undecided, source=source, criterion=criterion,
                 section=section, note=full_note, timing=timing,
                 undecided=undecided if undecided else ("inconclusive" if verdict is None else None))
