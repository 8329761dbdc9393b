r"""Experiment ``iris_accuracy``: how closely the approximation methods recover the Shapley value.

Paper, Section 5, "Comparing Approximation Accuracy" and Figure 3(a)
(``fig:comp``, "the data values produced by them"; the text cites the figure
as ``fig:adv``(d), whose caption has no panel (d)): on a small iris task with a regularised logistic regression,
compare (a) permutation sampling, (b) group testing, (c) all-S influence and
(d) largest-S influence against a precise reference. The paper's claims:
"(a)-(c) are closest to each other; largest-S is correlated with the others
although it cannot recover the true SV".

The game
--------
Players are ``n_train`` iris flowers of two classes (default versicolor vs
virginica, the overlapping pair), features standardised with the training
mean and standard deviation. The utility of a coalition ``S`` is the authors'
``ln 2 - test log-loss`` of scikit-learn's ``LogisticRegression(C=C)`` (L2
penalty, unpenalised intercept) fitted on ``S``:

.. math:: U(S) = \ln 2 + \frac1T \sum_t \log p_{\hat\theta_S}(y_t \mid x_t).

A coalition that misses a class (the empty set, every single point, every
one-class subset) cannot be fitted; it gets the uninformed model (probability
1/2), so :math:`U = 0` there and :math:`U(\emptyset) = 0` as the paper assumes
(Section 3). The shift by ``ln 2`` changes no Shapley value, but it does change
the variance of Algorithm 1 (group testing, ``variant="paper"``), which
averages raw utilities. Every method values this one game:

* :func:`make_game` (:class:`~shapley_research.ModelUtility` with
  ``degenerate="default", default_utility=-log 2``, plus ``ln 2``) for the
  exact reference, permutation sampling and group testing, and
* the influence module's fixed convention (:class:`~shapley_research.LogisticObjective`:
  a subset missing a class has :math:`\theta = 0`, utility :math:`-\log 2`),
  for all-S and largest-S influence; both only use utility differences and
  :math:`U(I) - U(\emptyset)`, so the constant does not enter,

and :func:`utility_mismatch` checks that the two agree up to the constant.
The authors clip ``U`` at 0; that clip is dropped (it would make ``U``
non-smooth, and influence functions need a smooth utility).

Methods and budgets
-------------------
Every sampling method gets the same budget ``B = budget_permutations * N``:
utility evaluations for permutation sampling (``budget_permutations - 1``
whole permutations of ``N`` evaluations, after one of the empty coalition)
and group testing (``B`` tests), model fits for all-S influence (``B``
sampled base coalitions, each fitted once; the influence-approximated
marginal contributions derived from a fit are not counted, as in the paper).
Largest-S influence fits one model.

Group testing runs three ways (:func:`~shapley_research.group_testing_shapley`):
(b) Algorithm 1 as published, every test drawn independently
(``variant="paper", sampling="independent"``), on which the paper's claim is
judged; (b*) the same estimator on this package's refinement of the sampler
(``sampling="without_replacement"``: at ``N = 16`` the tests of each size are
read along random orders of its coalitions, which at this budget nearly
enumerates the likely sizes); (b') Wang & Jia's null player plus this
package's linear centering, on the tests drawn without replacement (the
library's defaults). (b*) and (b') are this package's own checks.

Verdicts
--------
Claims on a mean over repetitions are decided on its 95% t-interval
(:func:`mean_interval`), fixed before the run: a bound holds if the whole
interval is on the claimed side, fails if the whole interval is on the other
side, and is undecided otherwise (:func:`decide`). Accuracy is also compared
with the trivial uniform split :math:`U(I)/N` (:func:`uniform_split_error`).
"""

from ._agreement import (MAIN_METHODS, METHODS, RANDOM_METHODS, agreement, agreement_table, decide,
                         mean_estimate_error, mean_interval, pairwise_distances, repetitions_to_decide, summarise,
                         uniform_split_error, values_table)
from ._claims import CLOSE_METHODS, RECOVERY_METHODS, evaluate_claims
from ._data import (LN2, degenerate_and_random_masks, influence_utilities, load_iris_pair, make_game, make_objective,
                    size_problems, utility_mismatch)
from ._figures import IRIS_CLASSES, SHORT_NAMES, plot_comparison
from ._methods import (THEOREM_KEY, MethodRun, leave_one_out_normalised, reference_values, repetition_seeds,
                       run_all, run_deterministic, run_methods, table_game, theorem3_runs, theorem3_summary,
                       theorem3_tests, utility_table)

__all__ = [
    "LN2", "METHODS", "MAIN_METHODS", "CLOSE_METHODS", "RECOVERY_METHODS", "RANDOM_METHODS", "SHORT_NAMES",
    "IRIS_CLASSES", "MethodRun", "THEOREM_KEY", "utility_table", "table_game", "theorem3_tests", "theorem3_runs",
    "theorem3_summary",
    "load_iris_pair", "size_problems", "make_game", "make_objective", "influence_utilities",
    "degenerate_and_random_masks",
    "utility_mismatch", "reference_values", "leave_one_out_normalised", "run_methods", "run_deterministic",
    "run_all", "repetition_seeds", "agreement", "agreement_table", "values_table", "uniform_split_error",
    "mean_estimate_error", "mean_interval", "decide", "repetitions_to_decide", "pairwise_distances", "summarise",
    "evaluate_claims", "plot_comparison",
]
