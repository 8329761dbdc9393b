r"""Experiment ``data_cleaning``: data values at work on mislabeled data, every method side by side.

Since 2019 data values are judged by what they do: find mislabeled training
points, and tell which points to remove or add. This experiment runs the
Shapley value's estimators and their successors on that task, through the
package's public API, at one common budget of utility evaluations.

Protocol (every open choice is a parameter of ``conf/experiment/data_cleaning.yaml``):

* **Data.** Two data sets that ship with scikit-learn: breast cancer (30
  features) and the digits ``digit_classes`` (64 pixels), each split
  stratified into ``n_train`` training and ``n_test`` test points,
  standardised on the training features; ``flip_fraction`` of the training
  labels flipped to another class at random (:func:`make_problem`); ``n_seeds``
  repetitions of split and flips.
* **Game.** ``ModelUtility(LogisticRegression(C), ..., metric="accuracy",
  fast=True)``: test accuracy, fitted by the package's batched learner (the
  route ``fast="auto"`` takes here, pinned: :func:`make_game`).
* **Methods** (:data:`METHODS`): exact KNN-Shapley, permutation Shapley (plain;
  antithetic with position adjustment; truncated Monte Carlo), group testing
  (Wang & Jia's estimator, variant ``"improved"``, with this package's linear
  centering: "group testing (Wang & Jia + centering)"), compressive,
  stratified SVARM, Data Banzhaf (MSR), Beta(16, 1),
  leave-one-out, Data-OOB (``min(budget, oob_max_estimators)`` fits), all-S and
  largest-S influence (accuracy utility), OpenDataVal's AME, class-wise
  Shapley and LAVA, and random values as the floor. A method that fails is
  recorded with its error, not hidden. The (data set, repetition) problems run
  over ``n_jobs`` worker processes (:func:`~shapley_research.experiments.parallel_map`);
  no number depends on it.
* **Tasks** (:mod:`._measure`): detection AUROC of ranking by lowest value and
  F1 of flagging the lowest ``k`` (``k`` = number flipped); test accuracy after
  removing the lowest / highest-valued 5-30% and after adding points from the
  highest value; wall time. Mean and Student-t 95% interval over seeds.
* **Budgets.** The methods the claims compare (:data:`SWEPT`) run at every
  budget of the sweep; the other budgeted methods up to the common budget;
  all-S influence at the common budget only. Data-OOB's bagged models are
  trained by the same batched learner as the games (``fast=True``,
  :data:`EXPERIMENT_OPTIONS`), so wall times compare at equal footing.
* **Claims** (:mod:`._claims`): criteria fixed as module constants, each
  comparing methods on the same (data set, seed), decided on 95% intervals
  over seeds (holds, does not hold, inconclusive), "does not hold" corrected
  by Holm over a claim's intervals; the papers' detection claims at the
  largest budget of the sweep, the others at the common budget, each with
  the verdict at every budget (:mod:`._sweeps`).
* **Noisy utility** (:mod:`._noisy`): Data Banzhaf's claim decided where
  Wang & Jia make it, on a utility trained by minibatch SGD from a random
  initialisation per coalition (MSR Banzhaf and permutation Shapley on the
  first ``noisy_seeds`` problems, at ``noisy_budget``); its deterministic
  measurement reported beside it, outside its scope.
* **Budget probe** (:mod:`._probe`): the semivalues at ``probe_budgets`` past
  the sweep on its first ``probe_seeds`` repetitions (same problems and
  streams): where their AUROC stops moving (the package's own claim
  :func:`settled_claim`), and the papers' comparisons there (in the notes).
"""

from ._claims import (ABOVE_RANDOM_MARGIN, DETECTION_TOLERANCE, LEVEL, REMOVAL_FRACTION, REMOVAL_METHOD,
                      SETTLED_TOLERANCE, WALL_TIME_RATIO, above_random_claim, banzhaf_claim, beta_claim, budget_sweep,
                      claim_budget, combine, comparison_table, data_cleaning_claims, interval_verdict,
                      noisy_banzhaf_claim, oob_detection_claim, oob_wall_time_claim, paired_difference,
                      paired_samples, removal_claim, removal_gain, removal_samples, settled_claim, wall_time_ratios,
                      wall_time_table)
from ._data import DATASETS, flip_labels, load_dataset, make_game, make_model, make_problem
from ._figures import plot_curves, plot_detection, plot_detection_vs_evaluations
from ._sweeps import above_random_sweep, removal_sweep, sweep_note, wall_time_sweep
from ._measure import (EXPERIMENT_OPTIONS, addition_masks, detection_auroc, detection_f1, lowest_k, mean_interval,
                       problem_seed, removal_masks, run_data_cleaning, summarise, task_curves)
from ._methods import (BUDGETED, COMMON_BUDGET_ONLY, DEFAULT_OPTIONS, LABELS, METHODS, RANDOM, SEMIVALUES, SWEPT,
                       method_budgets, method_seed, run_method, run_methods, truncation_game)
from ._noisy import (NOISY_DEFAULTS, NOISY_METHODS, NOISY_UTILITY, make_noisy_game, run_noisy_utility,
                     utility_noise)
from ._probe import (PROBE_METHODS, probe_comparison_note, probe_summary, rise_past_sweep, run_budget_probe,
                     trajectory_note)

__all__ = [
    "DATASETS", "load_dataset", "flip_labels", "make_problem", "make_model", "make_game",
    "METHODS", "BUDGETED", "SEMIVALUES", "SWEPT", "COMMON_BUDGET_ONLY", "RANDOM", "LABELS", "DEFAULT_OPTIONS",
    "EXPERIMENT_OPTIONS", "method_seed", "method_budgets", "truncation_game",
    "run_method", "run_methods", "detection_auroc", "detection_f1", "lowest_k", "removal_masks", "addition_masks",
    "task_curves", "problem_seed", "run_data_cleaning", "mean_interval", "summarise",
    "ABOVE_RANDOM_MARGIN", "DETECTION_TOLERANCE", "WALL_TIME_RATIO", "REMOVAL_FRACTION", "REMOVAL_METHOD", "LEVEL",
    "paired_samples", "paired_difference", "interval_verdict", "combine", "claim_budget", "budget_sweep",
    "comparison_table", "wall_time_ratios", "removal_samples", "removal_gain", "above_random_claim", "banzhaf_claim",
    "beta_claim", "oob_detection_claim", "oob_wall_time_claim", "removal_claim", "data_cleaning_claims",
    "plot_detection", "plot_detection_vs_evaluations", "plot_curves",
    "PROBE_METHODS", "run_budget_probe", "probe_summary", "rise_past_sweep", "probe_comparison_note", "trajectory_note",
    "SETTLED_TOLERANCE", "settled_claim",
    "NOISY_METHODS", "NOISY_DEFAULTS", "NOISY_UTILITY", "make_noisy_game", "utility_noise", "run_noisy_utility",
    "noisy_banzhaf_claim", "wall_time_table", "above_random_sweep", "wall_time_sweep", "removal_sweep", "sweep_note",
]
