r"""Runtime scaling, measured: utility evaluations to a target error as N grows to 10,000 and beyond.

The paper's headline (Section 4.1 and Theorem 3 of Section 4.2; Section 5, Figure 3b) compares
*bounds*: permutation sampling needs :math:`O(N^2 \log N)` evaluations for an
:math:`(\epsilon, \delta)` approximation, group testing
:math:`O(N (\log N)^2)`. This module measures the behaviour instead: for each
estimator, the evaluations it actually spends before its relative l2 error

.. math:: e(B) = \frac{\lVert \hat s_B - s \rVert_2}{\lVert s \rVert_2}

against exact values first falls below a target, on games whose exact values
are cheap at any size:

* ``knn``: the K-nearest-neighbour utility on MNIST features
  (:class:`~shapley_research.KNNUtility`, exact values by
  :func:`~shapley_research.knn_shapley`), with a one-pass prefix path;
* ``unanimity``: a sum of ``N`` unanimity games on random sets of 1-3
  players (:func:`~shapley_research.random_unanimity_sum`), values in closed
  form.

Group testing runs as Algorithm 1 (``group_testing_paper``), as this
package's variant of Wang & Jia's improved estimator (``group_testing_improved``:
their null player plus this package's linear centering, the estimators'
default, which cuts the error 3-5x at N = 100) and, beside it up to
:data:`PUBLISHED_MAX_PLAYERS`, as Wang & Jia published it
(``group_testing_wang_jia``: no centering).

**Protocol (fixed before the run).** Budgets double, ``B_j = 2^j (N + 2)``,
each a fresh call of the public estimator with the same seed (with the
estimators' fixed batch layout the samples of ``B_j`` extend those of
``B_{j-1}``), until the error is at most the smallest target or the method's
cap is passed. The evaluations to a target are the ``n_evaluations`` of the
first budget whose error is at most the target (first passage; resolution a
factor 2); the median is over seeds, a seed that never reached counting as
infinite, and ``None`` when the median is. The exponent is the least-squares
slope of log(median evaluations) on log N over the N where the median was
reached (at least :data:`MIN_POINTS_FOR_EXPONENT` of them). Where a run
stopped at its cap, ``B_cap (e(B_cap) / target)^2`` (the ``1/sqrt(B)`` decay
of an unbiased Monte Carlo mean) is reported beside it as an extrapolation,
unless its error had reached a plateau (slope of log error on log budget over
its last :data:`PLATEAU_WINDOW` runs above :data:`PLATEAU_SLOPE`). The
exponent check (group testing's exponent below permutation sampling's) fits
the extrapolated counts where fewer than :data:`MIN_POINTS_FOR_EXPONENT` N
reached the target and says so (``basis``), but only measured exponents decide
it: where the decision rests on an extrapolated exponent it is inconclusive,
its note naming the extrapolation and the run that would measure it
(:func:`exponent_decision`). The paper's claim on counts uses measured counts
only; a cap gives an upper bound on the ratio, named as such
(``..._upper_bound``). Its scope is set by the paper's own counts (Section
4.1's over Theorem 3's, :data:`SCOPE_BOUND`); the improved bound's prediction
is reported beside it. Where the caps are
below permutation sampling's counts (at N above the deciding one), the bound
exceeds 1 and decides nothing: the claim's note says "undecided at N >= ..."
(:func:`undecided_above`), and ``permutation_over_group_testing.csv`` tells a
blank count of a variant that was not run from one that did not reach the
target within its cap (``{method}_status``, ``{method}_cap_evaluations``).
"""

from ._large_n_claims import (ADVANTAGE, NOT_REACHED, NOT_RUN, REACHED, SCOPE_BOUND, advantage_table,
                              exponent_decision, group_testing_advantage, large_n_claims, undecided_above)
from ._large_n_figure import LABELS, STYLE, plot_measured_scaling
from ._large_n_games import SCALING_GAMES, knn_master_set, scaling_game
from ._large_n_measure import (DECAY_RATIO, GROUP_TESTING, MIN_POINTS_FOR_EXPONENT, PLATEAU_SLOPE, PLATEAU_WINDOW,
                               PUBLISHED_MAX_PLAYERS, SCALING_METHODS, error_slope, error_trace, exponent_bracket,
                               fit_exponents,
                               largest_budget, learner_seconds, measure_scaling, predicted_ratios, relative_error,
                               scaling_estimate, scaling_exponents, scaling_plan, summarise_scaling,
                               theorem_exponents, uniform_split_errors, with_published_variant)

__all__ = ["SCALING_METHODS", "SCALING_GAMES", "knn_master_set", "scaling_game", "error_trace",
           "scaling_plan", "uniform_split_errors", "measure_scaling", "summarise_scaling", "fit_exponents",
           "scaling_exponents", "theorem_exponents", "learner_seconds", "large_n_claims", "plot_measured_scaling",
           "MIN_POINTS_FOR_EXPONENT", "LABELS", "STYLE", "relative_error", "largest_budget", "DECAY_RATIO",
           "ADVANTAGE", "group_testing_advantage", "advantage_table", "GROUP_TESTING", "PLATEAU_SLOPE",
           "PLATEAU_WINDOW", "PUBLISHED_MAX_PLAYERS", "error_slope", "predicted_ratios", "with_published_variant",
           "undecided_above", "REACHED", "NOT_REACHED", "NOT_RUN", "scaling_estimate", "SCOPE_BOUND",
           "exponent_bracket", "exponent_decision"]
