r"""Estimators of the Shapley value: a game in, one :class:`~shapley_research.ValuationResult` out.

One private module per family of the paper, over the shared sampling driver
and loop in :mod:`._sampling` (each sampling estimator is a specification that
:func:`._sampling._driver.drive` runs):

* :func:`exact_shapley`: enumeration of all :math:`2^N` coalitions (the
  table of every coalition's utility, :func:`coalition_utilities`, and the
  values from it, :func:`shapley_from_table`, are its two halves);
* :func:`permutation_shapley`: the Monte Carlo baseline (Algorithm 3),
  plain, antithetic or rotated, with an optional position adjustment;
* :func:`group_testing_shapley`: Algorithm 1 (paper) and the improved
  sampler of the appendix;
* :func:`compressive_shapley`: Algorithm 2, for approximately sparse values;
* :func:`stratified_svarm_shapley`: stratified SVARM (Kolpaczki et al. 2024),
  a post-2019 method;
* :func:`unbiased_kernel_shapley`: KernelSHAP's regression with its exact
  Gram matrix (Covert & Lee 2021), unbiased, ``O(N)`` per sample;
* :func:`owen_shapley`: Owen sampling (Okhrati & Lipani 2021), the integral
  over the inclusion probability, one random q per bin, unbiased;
* :func:`kernel_shapley`: classic KernelSHAP (Lundberg & Lee 2017), its
  Gram matrix estimated too: biased but consistent, ``O(N^2)`` per sample;
* :func:`leverage_shapley`: Leverage SHAP (Musco & Witter 2025), the same
  regression on coalitions drawn by their leverage scores (uniform sizes);
* :func:`uniform_shapley`: the uniform split of the total utility
  (Section 4.4), the trivial baseline;
* beyond the Shapley value, the semivalues the field moved to after 2019:
  :func:`exact_banzhaf` and :func:`msr_banzhaf` (Data Banzhaf, Wang & Jia
  2023), :func:`exact_beta_shapley` and :func:`beta_shapley` (Kwon & Zou
  2022); truncated Monte Carlo (``permutation_shapley(..., truncation=t)``,
  Ghorbani & Zou 2019); :func:`leave_one_out`; and :func:`data_oob`
  (Kwon & Zou 2023), which values points from a bagged model, not a game;
* the peers' methods: :func:`ame` (Average Marginal Effect, Lin et al.
  2022), :func:`class_wise_shapley` (CS-Shapley, Schoch et al. 2022), for
  games that train a classifier, and :func:`lava` (Just et al. 2023), an
  optimal-transport value that trains no model; :func:`dvrl` (Yoon et al.
  2020), selection probabilities learned by REINFORCE on coalitions;
* not a semivalue: :func:`exact_least_core` and :func:`least_core` (Yan &
  Procaccia 2021), the stable allocation that needs the least subsidy;
* the sample sizes of the paper's theorems (:func:`permutation_sample_size`,
  :func:`group_testing_sample_size`, ...).

Every sampling estimator takes a budget in utility evaluations, a seed, and
``n_jobs``, ``checkpoint``, ``target_stderr`` and ``target_rank_correlation``;
the same seed gives bit-identical values for any ``n_jobs`` or backend.
"""

from ._ame import ame, ame_coalitions
from ._banzhaf import exact_banzhaf, msr_banzhaf, random_coalitions, weighted_coalitions
from ._beta_shapley import beta_shapley, beta_weights, exact_beta_shapley
from ._bounds import (UniformDivisionGuarantee, compressive_sample_size, group_testing_q_tot,
                      group_testing_sample_size, permutation_sample_size, stability_bound,
                      uniform_division_guarantee)
from ._class_wise import class_wise_minimum_budget, class_wise_predictions, class_wise_shapley
from ._compressive import bernoulli_matrix, compressive_shapley, l1_recovery
from ._data_oob import bootstrap_indices, data_oob
from ._dvrl import dvrl, dvrl_features
from ._exact import coalition_utilities, exact_shapley, shapley_from_table
from ._small_games import sampling_forced
from ._group_testing import (FeasibilityError, group_testing_shapley, group_testing_size_distribution,
                             random_subsets, recover_from_differences)
from ._lava import label_distances, lava
from ._kernel_shapley import shapley_kernel_sizes, unbiased_kernel_shapley
from ._least_core import exact_least_core, least_core, least_core_coalitions
from ._kernel_regression import kernel_shapley
from ._leverage import leverage_shapley
from ._leave_one_out import leave_one_out
from ._owen import owen_shapley
from ._permutation import marginal_contributions, permutation_shapley, random_permutations
from ._sampling._batches import batch_rng
from ._sampling._checkpoint import CheckpointError
from ._sampling._progress import PROGRESS_ENV, progress_bar
from ._svarm import neyman_size_probabilities, stratified_svarm_shapley, svarm_size_probabilities
from ._truncation import truncated_contributions
from ._uniform import uniform_shapley

__all__ = [
    "exact_shapley", "permutation_shapley", "group_testing_shapley", "compressive_shapley",
    "stratified_svarm_shapley", "unbiased_kernel_shapley", "shapley_kernel_sizes", "uniform_shapley",
    "FeasibilityError", "CheckpointError",
    "permutation_sample_size", "group_testing_sample_size", "group_testing_q_tot", "compressive_sample_size",
    "stability_bound", "uniform_division_guarantee", "UniformDivisionGuarantee",
    "random_permutations", "marginal_contributions", "group_testing_size_distribution", "random_subsets",
    "recover_from_differences", "bernoulli_matrix", "l1_recovery", "neyman_size_probabilities",
    "svarm_size_probabilities", "truncated_contributions",
    "exact_banzhaf", "msr_banzhaf", "random_coalitions", "weighted_coalitions", "exact_beta_shapley", "beta_shapley",
    "beta_weights",
    "leave_one_out", "data_oob", "bootstrap_indices", "batch_rng", "PROGRESS_ENV", "progress_bar",
    "ame", "ame_coalitions", "class_wise_shapley", "class_wise_predictions", "class_wise_minimum_budget",
    "lava", "label_distances", "coalition_utilities", "shapley_from_table", "sampling_forced",
    "owen_shapley",
    "exact_least_core", "least_core", "least_core_coalitions",
    "kernel_shapley",
    "leverage_shapley",
    "dvrl", "dvrl_features",
]
