"""Large-N panel: the claims on measured evaluation counts and exponents (:func:`large_n_claims`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._large_n_measure import GROUP_TESTING, MIN_POINTS_FOR_EXPONENT

if TYPE_CHECKING:
    from collections.abc import Sequence
    from .._common import Claim


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------

_SECTION = "Section 4.1 and Theorem 3 (Section 4.2); Section 5 ('Runtime comparison', Figure 3b, fig:comp)"
ADVANTAGE = 1.0  # group testing needs fewer evaluations: permutation / group testing above this


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

    def in_scope(a):  # the theorems themselves predict an advantage at the deciding N (the better bound)
        p = predicted_at(a["n_players"])
        return p is None or max(p.values()) > ADVANTAGE

    decided = {g: a for g, a in advantage.items() if a is not None and a["decided"]}
    judged = {g: a for g, a in decided.items() if in_scope(a)}
    failing = [g for g, a in judged.items() if value(a) <= ADVANTAGE]
    holds = not failing and len(judged) == len(games)
    undecided = (None if holds or failing else
                 "outside its scope" if len(decided) == len(games) else "inconclusive")
    shown = [a for a in advantage.values() if a is not None]
    worst = min(shown, key=value) if shown else None
    bound = worst is not None and worst["ratio"] is None

    def describe(g, a):
        if a is None:
            return f"{g}: permutation sampling never reached {target:g}"
        p = predicted_at(a["n_players"])
        theory = ("" if p is None else f" (the theorems' counts predict {p['algorithm_1']:.3g} with Theorem 3, "
                  f"{p['improved_bound']:.3g} with the improved bound"
                  + ("" if in_scope(a) else ": outside the claim's scope") + ")")
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
                   "bounds' own counts (Section 4.1's for permutation sampling over Theorem 3's or the improved "
                   "bound's, the larger) predict a "
                   f"ratio <= {ADVANTAGE:g}"),
        note=note, undecided=undecided), advantage


def large_n_claims(records: Sequence[dict[str, Any]], exponents: dict[str, Any], basis: dict[str, Any],
                   theorem: dict[str, Any], *,
                   target: float, predicted: dict[int, dict[str, float]] | None = None,
                   ) -> tuple[list[Claim], dict[str, Any]]:
    """The paper's claim on measured counts and this package's two exponent checks.

    * P: group testing (best variant) needs fewer evaluations than
      permutation sampling at the largest N decided on every game
      (:func:`group_testing_advantage`), judged only where the theorems'
      counts (``predicted``, :func:`predicted_ratios`) predict an advantage
      at that N ("outside its scope" otherwise; "inconclusive" where only
      caps bound the ratio, above 1).
    * R: group testing's exponent is below permutation sampling's on every
      game (the theorems' asymptotic prediction), each exponent from measured
      counts where at least three N reached the target and from the
      extrapolated counts otherwise (:func:`scaling_exponents`); undecided
      where an exponent is missing.
    * R: permutation sampling's measured exponent is below its theorem's local
      slope on every game (the Hoeffding count is loose in its growth, not
      only in its constant).
    """
    from .._common import claim

    games = sorted({r["game"] for r in records})
    first, advantage = _advantage_claim(records, target, predicted)
    claims = [first]

    def exponent(method, game):
        return exponents.get(method, {}).get(game)

    pairs = {g: (exponent("permutation", g),
                 min([e for m in GROUP_TESTING if (e := exponent(m, g)) is not None], default=None)) for g in games}
    measurable = all(p is not None and gt is not None for p, gt in pairs.values())
    gap = min([p - gt for p, gt in pairs.values() if p is not None and gt is not None] or [np.nan])

    def shown(method, game):
        value = exponent(method, game)
        return "missing" if value is None else f"{value:.2f} ({basis[method][game]})"

    text = "; ".join(f"{g}: permutation {shown('permutation', g)}, group testing Algorithm 1 "
                     f"{shown('group_testing_paper', g)}, Wang & Jia as published {shown('group_testing_wang_jia', g)}"
                     f", Wang & Jia + this package's centering {shown('group_testing_improved', g)}"
                     for g in games)
    claims.append(claim(
        "Group testing's evaluations to the target grow more slowly in N than permutation sampling's (the "
        "asymptotic advantage the theorems predict)", "exponent_gap_permutation_minus_group_testing", gap,
        measurable and gap > 0, source="reproduction",
        criterion=(f"on every game, fitted exponent of permutation sampling minus that of group testing (best "
                   f"variant) > 0; an exponent is the slope of median evaluations to {target:g} over at least "
                   f"{MIN_POINTS_FOR_EXPONENT} N, from the extrapolated counts B_cap (e / target)^2 when fewer N "
                   "reached the target"),
        note=("" if measurable else "undecided (inconclusive): an exponent has fewer than "
              f"{MIN_POINTS_FOR_EXPONENT} N where the target was reached. ") + f"Exponents: {text}.",
        undecided=None if measurable or gap <= 0 else "inconclusive"))

    slack = min([theorem["permutation"] - e for g in games if (e := exponent("permutation", g)) is not None]
                or [np.nan])
    complete = all(basis.get("permutation", {}).get(g) == "measured" for g in games)
    claims.append(claim(
        "Permutation sampling's measured evaluations grow more slowly in N than its theorem's count "
        "N * T(N) ~ N^2 log N", "permutation_theorem_minus_measured_exponent", slack, complete and slack > 0,
        source="reproduction",
        criterion=(f"on every game, the local log-log slope of the theorem's count over the measured N "
                   f"({theorem['permutation']:.3f}) minus the exponent of measured median evaluations to "
                   f"{target:g} > 0"),
        note=("" if complete else "undecided (inconclusive): permutation sampling's exponent is not measured on "
              "every game. ")
        + "Exponents: " + ", ".join(f"{g} {shown('permutation', g)}" for g in games) + ".",
        undecided=None if complete or slack <= 0 else "inconclusive"))
    return claims, {"group_testing_advantage": advantage}
