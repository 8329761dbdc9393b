"""Marginal contributions of players to one fitted base set, from influence updates.

:func:`_marginals` gives, for a fitted base set, the influence-approximated
marginal contribution of each player added to it or removed from it, with the
exact convention utility :math:`U_0` for coalitions that miss a class; both
largest-S (the whole set, ``"remove"``) and all-S influence (sampled base
sets) use it.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._objective import LogisticObjective

UTILITY_CHANGES = ("linear", "evaluate")


def _marginals(obj: LogisticObjective, theta: NDArray[np.float64], base: NDArray[np.intp], points: ArrayLike,
               direction: Literal["add", "remove"], approximation: Literal["newton", "influence"],
               utility_change: str, u_base: float, H_inv: NDArray[np.float64] | None = None
               ) -> tuple[NDArray[np.float64], NDArray[np.float64], dict[str, Any]]:
    """Marginal contributions of ``points`` to (``"add"``) or within (``"remove"``) ``base``.

    ``"add"``: :math:`U(S\\cup\\{i\\}) - U(S)`; ``"remove"``:
    :math:`U(T) - U(T\\setminus\\{j\\})`. Coalitions that miss a class have the
    exact utility :math:`U_0`; all others are influence approximations.
    Returns the marginals, the parameter steps (NaN rows where not used) and
    counters: ``n_influence_updates``, and ``n_out_of_range`` with ``largest``,
    the approximated marginals beyond :attr:`LogisticObjective.utility_range`
    and the largest magnitude among them (:func:`warn_out_of_range`).
    """
    points = np.asarray(points, dtype=np.intp)
    m = points.size
    out = np.zeros(m)
    steps = np.full((m, obj.n_params), np.nan)
    u0 = obj.degenerate_utility
    counts = np.bincount(obj.codes[base], minlength=obj.n_classes)
    base_degenerate = bool((counts == 0).any())
    if direction == "add":
        missing = np.flatnonzero(counts == 0)
        # S + i has every class iff S misses none, or only the class of i.
        if missing.size == 0:
            target_ok = np.ones(m, dtype=bool)
        elif missing.size == 1:
            target_ok = obj.codes[points] == missing[0]
        else:
            target_ok = np.zeros(m, dtype=bool)
    else:
        if base_degenerate:  # T and every T - j miss a class: both utilities are U_0
            return out, steps, {"n_influence_updates": 0, "n_out_of_range": 0, "largest": 0.0}
        # T - j misses a class iff j is the only member of its class in T.
        target_ok = counts[obj.codes[points]] > 1
    approx = np.flatnonzero(target_ok)
    u_target = np.full(m, u0)
    if approx.size:
        if H_inv is None:
            H_inv = obj.inverse_hessian(obj.hessian(theta, base))
        d_theta = obj.newton_steps(theta, base, points[approx], direction=direction,
                                   approximation=approximation, H_inv=H_inv)
        steps[approx] = d_theta
        if utility_change == "linear":
            u_target[approx] = u_base + d_theta @ obj.utility_gradient(theta)
        else:
            u_target[approx] = obj.utilities(theta[None, :] + d_theta)
    out = u_target - u_base if direction == "add" else u_base - u_target
    magnitudes = np.abs(out[approx])
    return out, steps, {"n_influence_updates": int(approx.size),
                        "n_out_of_range": int((magnitudes > obj.utility_range).sum()),
                        "largest": float(magnitudes.max(initial=0.0))}


def warn_out_of_range(owner: str, obj: LogisticObjective, meta: dict[str, Any]) -> None:
    """One warning where approximated marginals left the utility's range: the influence step broke down.

    With features on scales far from the L2 penalty's (raw breast-cancer
    features reach 4,000), one point's Newton step moves the weights along
    directions its coalition does not pin down by thousands, and the test
    logits by up to 10^6: marginal contributions of thousands where the
    utility can change by 36 at most.
    """
    if meta["n_out_of_range"]:
        warnings.warn(f"{owner}: {meta['n_out_of_range']} of {meta['n_influence_updates']} influence-approximated "
                      f"marginal contributions lie outside +-{obj.utility_range:.4g}, beyond any change of "
                      f"{obj.utility_name} between two models (largest {meta['largest']:.3g}): the one-step "
                      "approximation is far outside its regime and the values are not meaningful. Standardise "
                      "the features (e.g. StandardScaler) or regularise more (a smaller C).",
                      RuntimeWarning, stacklevel=3)
