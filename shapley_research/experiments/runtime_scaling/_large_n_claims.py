"""Large-N panel: the claims on measured evaluation counts and exponents (:func:`large_n_claims`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._large_n_measure import GROUP_TESTING, MIN_POINTS_FOR_EXPONENT, PLATEAU_SLOPE, PLATEAU_WINDOW, exponent_bracket

if TYPE_CHECKING:
    from collections.abc import Sequence
    from .._common import Claim


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------

_SECTION = "Section 4.1 and Theorem 3 (Section 4.2); Section 5 ('Runtime comparison', Figure 3b, fig:comp)"
ADVANTAGE = 1.0  # group testing needs fewer evaluations: permutation / group testing above this
#: The bound that sets the paper claim's scope: the paper's Theorem 3 (Algorithm 1), not the improved bound.
SCOPE_BOUND = "algorithm_1"


def _record(records, method, game, n, target):
    return next((r for r in records if (r["method"], r["game"], r["n_players"], r["target_relative_error"])
                 == (method, game, n, target)), None)


def _comparison(records, game, n, target):
    """Permutation's record and group testing's best count at N: ``(base, ratio, upper_bound)`` or None."""
    base = _record(records, "permutation", game, n, target)
    variants = [r for m in GROUP_TESTING if (r := _record(records, m, game, n, target)) is not None]
    if base is None or base["evaluations"] is None or not variants:
        return None
    reached = [r["evaluations"] for r in variants if r["evaluations"] is not None]
    if reached:
        return base, base["evaluations"] / min(reached), None
    return base, None, base["evaluations"] / max(r["cap_evaluations"] for r in variants)


def group_testing_advantage(records: Sequence[dict[str, Any]], game: str, target: float) -> dict[str, Any] | None:
    """Permutation sampling's evaluations over group testing's (best variant) at the largest decided N.

    At the largest N where permutation sampling's median reached ``target``
    and group testing ran, the comparison is decided when a group testing
    variant reached the target too (``ratio`` measured) or when every variant
    stopped at a cap that bounds the ratio at or below :data:`ADVANTAGE`
    (``ratio_upper_bound = permutation / cap``, ``ratio`` None). If no N
    decides, the largest N with an upper bound (undecided); None if none.
    """
    undecided = None
    for n in sorted({r["n_players"] for r in records if r["game"] == game}, reverse=True):
        found = _comparison(records, game, n, target)
        if found is None:
            continue
        _, ratio, bound = found
        if ratio is not None or bound <= ADVANTAGE:
            return {"n_players": n, "ratio": ratio, "ratio_upper_bound": bound, "decided": True}
        undecided = undecided or {"n_players": n, "ratio": None, "ratio_upper_bound": bound, "decided": False}
    return undecided


#: ``{method}_status`` of :func:`advantage_table`: why a ``{method}_evaluations`` cell is filled or blank.
REACHED, NOT_REACHED, NOT_RUN = "reached", "not reached within cap", "not run"


def _status(record: dict[str, Any] | None) -> str:
    """:data:`REACHED` (median count measured), :data:`NOT_REACHED` (median seed stopped at its cap) or
    :data:`NOT_RUN`."""
    return NOT_RUN if record is None else REACHED if record["evaluations"] is not None else NOT_REACHED


def advantage_table(records: Sequence[dict[str, Any]], target: float,
                    predicted: dict[int, dict[str, float]] | None = None) -> list[dict[str, Any]]:
    """Every (game, N) where permutation sampling reached ``target``: the measured ratio or its upper bound.

    ``predicted`` (:func:`predicted_ratios`) adds the ratio the theorems
    predict at the same N (Algorithm 1's Theorem 3 and the improved bound).
    A blank ``{method}_evaluations`` cell is told apart by
    ``{method}_status`` (:data:`REACHED`, :data:`NOT_REACHED`: the median
    seed passed ``{method}_cap_evaluations`` without reaching the target,
    :data:`NOT_RUN`: the method was not run at this N), and a blank ratio by
    ``comparison`` (``"measured"``, or ``"upper bound"`` where every variant
    stopped at its cap); these columns follow the others.
    """
    rows = []
    for game, n in sorted({(r["game"], r["n_players"]) for r in records}):
        found = _comparison(records, game, n, target)
        if found is None:
            continue
        base, ratio, bound = found
        row = {"game": game, "n_players": n, "target_relative_error": target,
               "permutation_evaluations": base["evaluations"]}
        variants = {m: _record(records, m, game, n, target) for m in GROUP_TESTING}
        for m, r in variants.items():
            row[f"{m}_evaluations"] = None if r is None else r["evaluations"]
        row.update({"measured_ratio": ratio, "measured_ratio_upper_bound": bound})
        for name, value in ((predicted or {}).get(n) or {}).items():
            row[f"predicted_ratio_{name}"] = value
        row["comparison"] = "measured" if ratio is not None else "upper bound"
        for m, r in variants.items():
            row[f"{m}_status"] = _status(r)
            row[f"{m}_cap_evaluations"] = None if r is None else r["cap_evaluations"]
        rows.append(row)
    return rows


def undecided_above(records: Sequence[dict[str, Any]], game: str, target: float,
                    n_decided: int | None) -> list[dict[str, Any]]:
    """The N above ``n_decided`` where only caps bound the ratio, above :data:`ADVANTAGE`: undecided there.

    Every group testing variant stopped at its cap before reaching ``target``,
    and the cap is below permutation sampling's count, so the measurement
    bounds the ratio only by ``permutation / cap > 1``. Returns
    ``{"n_players", "permutation", "cap", "bound"}`` per such N, increasing.
    """
    out = []
    for n in sorted({r["n_players"] for r in records if r["game"] == game}):
        found = None if n_decided is not None and n <= n_decided else _comparison(records, game, n, target)
        if found is not None and found[1] is None and found[2] > ADVANTAGE:
            base, _, bound = found
            out.append({"n_players": n, "permutation": base["evaluations"],
                        "cap": base["evaluations"] / bound, "bound": bound})
    return out


def _undecided_text(rows: list[dict[str, Any]]) -> str:
    """``; undecided at N >= ...: ...`` for :func:`undecided_above`'s rows ("" if none)."""
    if not rows:
        return ""
    ns = ", ".join(f"{r['n_players']:,}" for r in rows)
    return (f"; undecided at N >= {rows[0]['n_players']:,} (N = {ns}): group testing's caps ("
            + ", ".join(f"{r['cap']:,.0f}" for r in rows) + " evaluations) are below permutation sampling's counts ("
            + ", ".join(f"{r['permutation']:,}" for r in rows) + "), so they bound the ratio only by "
            + ", ".join(f"{r['bound']:.3g}" for r in rows) + f" (> {ADVANTAGE:g})")


def _advantage_claim(records, target: float, predicted: dict | None):
    """The paper's claim judged on measured counts: group testing needs fewer evaluations at large N."""
    from .._common import claim

    games = sorted({r["game"] for r in records})
    advantage = {g: group_testing_advantage(records, g, target) for g in games}

    def value(a):
        return a["ratio"] if a["ratio"] is not None else a["ratio_upper_bound"]

    def predicted_at(n):
        return (predicted or {}).get(n)

    def in_scope(a):  # the paper's own bounds (Section 4.1 over Theorem 3) predict an advantage at the deciding N
        p = predicted_at(a["n_players"])
        return p is None or p[SCOPE_BOUND] > ADVANTAGE

    decided = {g: a for g, a in advantage.items() if a is not None and a["decided"]}
    judged = {g: a for g, a in decided.items() if in_scope(a)}
    failing = [g for g, a in judged.items() if value(a) <= ADVANTAGE]
    # every game decided; those in scope (at least one) all show the advantage: a game outside scope
    # neither confirms nor refutes the claim
    holds = not failing and bool(judged) and len(decided) == len(games)
    undecided = (None if holds or failing else
                 "outside its scope" if len(decided) == len(games) else "inconclusive")
    # the statistic is the worst ratio among the games judged (in scope); among all decided ones if none is
    shown = list(judged.values()) or [a for a in advantage.values() if a is not None]
    worst = min(shown, key=value) if shown else None
    bound = worst is not None and worst["ratio"] is None

    def describe(g, a):
        if a is None:
            return f"{g}: permutation sampling never reached {target:g}"
        p = predicted_at(a["n_players"])
        theory = ("" if p is None else f" (the theorems' counts predict {p[SCOPE_BOUND]:.3g} with Theorem 3"
                  + ("" if in_scope(a) else ": outside the claim's scope")
                  + f"; the improved bound, not the paper's, predicts {p['improved_bound']:.3g} and does not set "
                  "the scope)")
        above = _undecided_text(undecided_above(records, g, target, a["n_players"])) if a["decided"] else ""
        if a["ratio"] is not None:
            return f"{g} at N = {a['n_players']:,}: measured ratio {a['ratio']:.3g}{theory}{above}"
        return (f"{g} at N = {a['n_players']:,}: group testing did not reach {target:g} within its cap, so the "
                f"ratio is at most {a['ratio_upper_bound']:.3g}{theory}{above}")
    note = ("" if undecided is None else f"undecided ({undecided}): ") + "; ".join(
        describe(g, a) for g, a in advantage.items()) + "."
    name = "measured_permutation_over_group_testing" + ("_upper_bound" if bound else "")
    return claim(
        "Group testing needs fewer utility evaluations than permutation sampling for a large number of data "
        "points (measured evaluations to a fixed error, not the theorems' counts)",
        name, value(worst) if worst else np.nan, holds, source="paper", section=_SECTION,
        criterion=(f"on every game, at the largest N where permutation sampling's median reached relative l2 error "
                   f"{target:g} and the comparison is decided (a group testing variant reached it too, or every "
                   f"variant stopped at a cap with permutation / cap <= {ADVANTAGE:g}): permutation's evaluations / "
                   f"group testing's (best variant) > {ADVANTAGE:g}; outside its scope where, at that N, the "
                   "paper's own counts (Section 4.1's for permutation sampling over Theorem 3's) predict a ratio "
                   f"<= {ADVANTAGE:g} (the improved bound, not the paper's, is reported beside it and does not set "
                   "the scope): holds if every game in scope (at least one) shows the advantage, outside its scope "
                   "if none is"),
        note=note, undecided=undecided), advantage


_VARIANT_NAMES = {"group_testing_paper": "group testing Algorithm 1",
                  "group_testing_wang_jia": "Wang & Jia as published",
                  "group_testing_improved": "Wang & Jia + this package's centering"}
_NAMES = {"permutation": "permutation sampling", **_VARIANT_NAMES}


def _shown(exponents, basis, method, game):
    """``"2.12 (extrapolated)"``: an exponent and its basis, or ``"missing"``."""
    value = exponents.get(method, {}).get(game)
    return "missing" if value is None else f"{value:.2f} ({basis[method][game]})"


def exponent_decision(exponents: dict[str, Any], basis: dict[str, Any], game: str) -> dict[str, Any]:
    """One game of the exponent check: the fitted gap and what the measured exponents alone decide.

    ``gap`` is permutation sampling's exponent minus group testing's best
    (every variant with an exponent, measured or extrapolated; None if one
    side has none). ``decided`` is ``"holds"`` where permutation sampling's
    exponent and a group testing variant's below it are both measured,
    ``"does not hold"`` where permutation sampling's and every variant's (all
    of ``GROUP_TESTING``: a variant without an exponent leaves it undecided)
    are measured and none is below, None otherwise. ``extrapolated`` names the
    exponents fitted to extrapolated counts.

    Parameters
    ----------
    exponents : dict
        ``{method: {game: exponent}}`` (:func:`scaling_exponents`).
    basis : dict
        ``{method: {game: "measured" | "extrapolated"}}``: what each exponent was fitted to.
    game : str

    Returns
    -------
    dict
        ``{"gap": float | None, "decided": "holds" | "does not hold" | None, "extrapolated": list[str]}``.
    """
    def get(method):
        return exponents.get(method, {}).get(game), basis.get(method, {}).get(game)

    perm, perm_basis = get("permutation")
    variants = {m: v for m in GROUP_TESTING if (v := get(m))[0] is not None}
    extrapolated = (([] if perm is None or perm_basis == "measured" else ["permutation"])
                    + [m for m, (_, b) in variants.items() if b != "measured"])
    if perm is None or not variants:
        return {"gap": None, "decided": None, "extrapolated": extrapolated}
    gap = perm - min(e for e, _ in variants.values())
    decided = None
    if perm_basis == "measured":
        if any(perm - e > 0 for e, b in variants.values() if b == "measured"):
            decided = "holds"
        elif len(variants) == len(GROUP_TESTING) and all(b == "measured" for _, b in variants.values()) \
                and gap <= 0:
            decided = "does not hold"
    return {"gap": gap, "decided": decided, "extrapolated": extrapolated}


def _deciding_run(records, game, target):
    """``(variant, n, evaluations)``: the cheapest cap that would let a variant reach ``target`` at
    :data:`MIN_POINTS_FOR_EXPONENT` N by its extrapolated counts (None if no variant has them)."""
    options = []
    for m in GROUP_TESTING:
        rows = sorted((r for r in records if (r["method"], r["game"], r["target_relative_error"])
                       == (m, game, target)), key=lambda r: r["n_players"])[:MIN_POINTS_FOR_EXPONENT]
        counts = [(r["evaluations"] if r["evaluations"] is not None else r.get("extrapolated_evaluations"),
                   r["n_players"]) for r in rows]
        if len(counts) == MIN_POINTS_FOR_EXPONENT and all(c is not None for c, _ in counts):
            count, n = max(counts)
            options.append((count, m, n))
    if not options:
        return None
    count, m, n = min(options)
    return m, n, count


def _round(x: float) -> str:
    """``x`` to two significant digits, written out: ``"330,000,000"``."""
    return f"{float(f'{x:.2g}'):,.0f}"


def _extrapolation_text(records, decisions, target):
    """The note's account of an exponent check that rests on extrapolated exponents."""
    games = [g for g, d in decisions.items() if d["decided"] is None and d["gap"] is not None]
    factors = [r["extrapolated_evaluations"] / r["cap_evaluations"] for r in records
               if r["game"] in games and r["method"] in GROUP_TESTING and r["evaluations"] is None
               and r.get("extrapolated_evaluations") is not None and r["target_relative_error"] == target]
    runs = []
    for g in games:
        found = _deciding_run(records, g, target)
        if found is not None:
            m, n, count = found
            runs.append(f"about {_round(count)} evaluations at N = {n:,} on {g} ({_VARIANT_NAMES[m]})")
    return ("undecided (inconclusive): the decision rests on extrapolated exponents ("
            + "; ".join(f"{g}: " + ", ".join(_NAMES[m] for m in decisions[g]["extrapolated"]) for g in games)
            + f"), fitted to B_cap (e / {target:g})^2 where the median seed stopped at its cap"
            + (f", up to {_round(max(factors))} times the cap" if factors else "")
            + ". That assumes the error keeps falling as B^(-1/2) beyond the cap, as an unbiased mean's would and "
            f"a biased estimator's would not (the run checks only that the error's slope over its last "
            f"{PLATEAU_WINDOW} budgets is at most {PLATEAU_SLOPE:g}). Measured exponents would decide it: a run "
            f"whose caps let group testing reach {target:g} at {MIN_POINTS_FOR_EXPONENT} N (every variant, for a "
            "'does not hold')"
            + ("; by the extrapolation the cheapest variant needs " + ", ".join(runs) if runs else "") + ". ")


def _exponent_claim(records, exponents, basis, games, target):
    """The exponent check: decided only by measured exponents, inconclusive where extrapolated ones decide."""
    from .._common import claim

    decisions = {g: exponent_decision(exponents, basis, g) for g in games}
    gap = min([d["gap"] for d in decisions.values() if d["gap"] is not None] or [np.nan])
    fails = any(d["decided"] == "does not hold" for d in decisions.values())
    holds = bool(decisions) and all(d["decided"] == "holds" for d in decisions.values())
    missing = not decisions or any(d["gap"] is None for d in decisions.values())
    prefix = ("" if holds or fails else
              "undecided (inconclusive): an exponent has fewer than "
              f"{MIN_POINTS_FOR_EXPONENT} N where the target was reached. " if missing else
              _extrapolation_text(records, decisions, target))
    text = "; ".join(f"{g}: permutation {_shown(exponents, basis, 'permutation', g)}, "
                     + ", ".join(f"{name} {_shown(exponents, basis, m, g)}" for m, name in _VARIANT_NAMES.items())
                     for g in games)
    return claim(
        "Group testing's evaluations to the target grow more slowly in N than permutation sampling's (the "
        "asymptotic advantage the theorems predict)", "exponent_gap_permutation_minus_group_testing", gap,
        holds, source="reproduction",
        criterion=(f"on every game, fitted exponent of permutation sampling minus that of group testing (best "
                   f"variant) > 0; an exponent is the slope of median evaluations to {target:g} over at least "
                   f"{MIN_POINTS_FOR_EXPONENT} N, measured where that many N reached the target, else fitted to "
                   f"the extrapolated counts B_cap (e / {target:g})^2, which assume a B^(-1/2) decay beyond the cap; "
                   "decided only by measured exponents (holds: on every game a measured group testing exponent "
                   "below permutation sampling's measured one; does not hold: on a game permutation sampling's "
                   "and every group testing variant's exponents measured and none below), inconclusive where the "
                   "decision rests on an extrapolated or missing exponent"),
        note=prefix + f"Exponents: {text}.", undecided=None if holds or fails else "inconclusive")


def large_n_claims(records: Sequence[dict[str, Any]], exponents: dict[str, Any], basis: dict[str, Any],
                   theorem: dict[str, Any], *,
                   target: float, predicted: dict[int, dict[str, float]] | None = None,
                   ) -> tuple[list[Claim], dict[str, Any]]:
    """The paper's claim on measured counts and this package's two exponent checks.

    * P: group testing (best variant) needs fewer evaluations than
      permutation sampling at the largest N decided on every game
      (:func:`group_testing_advantage`), judged only where the paper's own
      counts (``predicted["algorithm_1"]``, Section 4.1 over Theorem 3,
      :func:`predicted_ratios`) predict an advantage at that N ("outside its
      scope" otherwise, whatever the improved bound predicts; "inconclusive"
      where only caps bound the ratio, above 1).
    * R: group testing's exponent is below permutation sampling's on every
      game (the theorems' asymptotic prediction), each exponent from measured
      counts where at least three N reached the target and from the
      extrapolated counts otherwise (:func:`scaling_exponents`); decided only
      by measured exponents (:func:`exponent_decision`), inconclusive where
      the decision rests on an extrapolated or missing exponent.
    * R: permutation sampling's measured exponent is below its theorem's local
      slope on every game (the Hoeffding count is loose in its growth, not
      only in its constant), wherever in their doubling brackets the counts
      lie (:func:`exponent_bracket`).
    """
    games = sorted({r["game"] for r in records})
    first, advantage = _advantage_claim(records, target, predicted)
    claims = [first, _exponent_claim(records, exponents, basis, games, target),
              _theorem_slack_claim(records, exponents, basis, theorem, games, target)]
    return claims, {"group_testing_advantage": advantage}


def _theorem_slack_claim(records, exponents, basis, theorem, games, target):
    """R: permutation sampling's measured exponent, wherever its counts lie in their brackets, below the theorem's."""
    from .._common import claim

    brackets = {g: exponent_bracket(records, target, "permutation", g) for g in games}
    complete = bool(games) and all(b is not None for b in brackets.values())
    slope = theorem["permutation"]
    slack = min([slope - b[1] for b in brackets.values() if b is not None] or [np.nan])  # at the bracket's top
    holds, fails = complete and slack > 0, any(b is not None and slope - b[0] <= 0 for b in brackets.values())
    shown = ", ".join(f"{g} {_shown(exponents, basis, 'permutation', g)}"
                      + (f", {b[0]:.2f}-{b[1]:.2f} over the counts' brackets" if b else "")
                      for g, b in brackets.items())
    prefix = ("" if holds or fails else "undecided (inconclusive): " + (
        "permutation sampling's exponent is not measured on every game. " if not complete else
        "the theorem's slope lies within the exponent's range over the counts' doubling brackets. "))
    return claim(
        "Permutation sampling's measured evaluations grow more slowly in N than its theorem's count "
        "N * T(N) ~ N^2 log N", "permutation_theorem_minus_measured_exponent", slack, holds,
        source="reproduction",
        criterion=(f"on every game, the local log-log slope of the theorem's count over the measured N "
                   f"({slope:.3f}) minus the exponent of measured median evaluations to {target:g} > 0, wherever "
                   "each count lies in its doubling bracket (B/2, B] (the statistic: at the exponent's highest); "
                   "does not hold if the slope is at most the exponent's lowest on some game"),
        note=prefix + "Exponents: " + shown + ".",
        undecided=None if holds or fails else "inconclusive")
