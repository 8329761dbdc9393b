"""Uniform division of the total utility (paper Section 4.4)."""

from __future__ import annotations

import time

import numpy as np

from ._sampling._loop import evaluate_anchors
from .._validation import check_game
from ..games import GameLike
from ..result import ValuationResult

__all__ = ["uniform_shapley"]


def uniform_shapley(game: GameLike, *, empty_utility: float | None = None) -> ValuationResult:
    r"""Give every player the same share :math:`(U(D) - U(\emptyset)) / N`.

    For a uniformly stable learner the Shapley values of all points are close
    (Theorem 5: :math:`s_i - s_j \le 2C_{stab}(1 + \log(N-1))/(N-1)`), so the
    uniform split is an :math:`(\epsilon, 0)`-approximation when that bound is
    below :math:`\epsilon / (2\sqrt N)`; see :func:`uniform_division_guarantee`.
    The paper writes :math:`U(D)/N` under its convention
    :math:`U(\emptyset) = 0`; pass ``empty_utility=0`` to use that literally.

    Returns
    -------
    ValuationResult
        Two utility evaluations (one with ``empty_utility``).
    """
    start = time.perf_counter()
    n = check_game(game)
    anchors = evaluate_anchors(game, empty_utility)
    values = np.full(n, (anchors.full - anchors.empty) / n)
    return ValuationResult(values=values, n_evaluations=anchors.n_evaluations, method="uniform",
                           wall_time=time.perf_counter() - start,
                           info={"empty_utility": anchors.empty, "full_utility": anchors.full})
