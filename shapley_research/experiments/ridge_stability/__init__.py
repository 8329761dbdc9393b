r"""Stable learning algorithms: variance of data values for ridge regression.

Paper: Section 4.4 (Theorem 5) and Section 5, "Stable learning algorithms"
(Fig. 5(a) of the LaTeX source, ``fig:stable_noise``). The paper trains a ridge
regression on scikit-learn's ``diabetes`` data and varies :math:`\lambda` in

.. math:: \min_\theta \frac1N\sum_{i=1}^N (x_i^\top\theta - y_i)^2 + \lambda\|\theta\|^2 .

Its claims: the stability parameter is :math:`\beta \propto \sigma^2/\lambda`
with :math:`\sigma = 2|x_i^\top\theta - y_i|\,\|x_i\|`; while the model fits,
more regularisation lowers the variance of the values; with excessive
regularisation :math:`\sigma` grows, so :math:`\beta` and the variance rise
again. Theorem 5: a learner with uniform stability :math:`\beta = C_{stab}/|S|`
gives :math:`s_i - s_j \le 2C_{stab}(1 + \log(N-1))/(N-1)`. The variance of the
values is the uniform division's error, :math:`\|s - \frac{U(D)}{N}\mathbf 1\|_2
= \sqrt{N\,\mathrm{Var}(s)}` (the values sum to :math:`U(D)`).

Conventions (the paper leaves them open): a random ``n_train``/rest split of the
442 patients, features and target standardised with the training statistics;
:math:`U(S) = M - \text{test MSE}(A(S))`, :math:`M` the test MSE of the empty
set's model (predicting 0), so :math:`U(\emptyset) = 0`. Learners:

* ``"fixed_alpha"`` (main): ``Ridge(alpha = N lambda)`` on every coalition
  (:class:`~shapley_research.RidgeUtility`), intercept fitted and not penalised;
  on :math:`D` this is the paper's objective;
* ``"per_coalition"``: the paper's objective on each coalition,
  ``alpha_S = |S| lambda`` (:class:`CoalitionScaledRidge`), intercept as above;
* ``"no_intercept"``: ``alpha = N lambda`` and all of :math:`\theta` penalised.

The model fitted on all of :math:`D` is the same under the three (the
standardised target has mean 0, so the intercept is 0).

**Where Theorem 5 applies.** Only ``"no_intercept"`` meets its hypotheses. There
:math:`A(S) = \arg\min_\theta F_S(\theta)`, :math:`F_S = \sum_{k\in S} l_k +
\alpha\|\theta\|^2`, :math:`\alpha = N\lambda`, :math:`l_k(\theta) =
(x_k^\top\theta - y_k)^2`, and :math:`A(\emptyset) = 0`, the empty set's model.
For :math:`S' = S\setminus\{i\}` and :math:`\Delta = \theta_S - \theta_{S'}`,
:math:`2\alpha`-strong convexity of :math:`F_{S'}` and :math:`F_S = F_{S'} + l_i`
give :math:`2\alpha\|\Delta\|^2 \le l_i(\theta_{S'}) - l_i(\theta_S)`, and
:math:`|l_z(\theta) - l_z(\theta')| = |x_z^\top(\theta - \theta')|\,|r_z(\theta)
+ r_z(\theta')|` (:math:`r_z` the residual). With :math:`\sigma = 2\sup_{S, z}
|r_z(\theta_S)|\,\|x_z\|` over every coalition's model and every training
*and* test point (training points bound :math:`\|\Delta\| \le \sigma/(2\alpha)`,
test points the change of the utility), the loss at any test point moves by at
most :math:`\beta = \sigma^2/(2N\lambda) \le C_{stab}/|S|` for all
:math:`|S| \le N`, :math:`C_{stab} = \sigma^2/(2\lambda)` (Bousquet & Elisseeff
2002, Thm. 22, with the paper's :math:`\sigma` that contains :math:`\|x\|`). The
supremum over all :math:`2^N` coalitions is bounded rigorously:
:math:`\theta_S = V\,\mathrm{diag}(s/(s^2+\alpha))\,U^\top y_S` and
:math:`s/(s^2+\alpha) \le 1/(2\sqrt\alpha)` give :math:`\|\theta_S\| \le
\Theta = \|y_D\|/(2\sqrt{\alpha})`, so :math:`\sigma \le \bar\sigma = 2\max_z
(|y_z| + \|x_z\|\Theta)\|x_z\|` (:func:`sigma_sup_bound`), with
:math:`\kappa = \max_z\|x_z\|` over train and test. Theorem 5 is checked there
with :math:`\bar\sigma`.

Under ``"fixed_alpha"`` and ``"per_coalition"`` the intercept is not penalised,
so :math:`F_S` is not strongly convex in it and the bound above does not hold:
as :math:`\lambda\to\infty` the learner becomes the coalition mean
:math:`\bar y_S`, whose uniform stability is about :math:`8B^2/|S|`
(:math:`B = \max|y|`) for every :math:`\lambda`, while
:math:`\bar\sigma^2/(2\lambda)\to 0`. The formula's ratio there is reported as
outside the theorem's hypotheses, not as a violation. The paper's own estimate
:math:`\hat\sigma = \max_i 2|x_i^\top\theta_D - y_i|\,\|x_i\|` (full model,
training points: a lower bound on :math:`\sigma`) decides the claims about the
paper's explanation (:math:`\sigma` and :math:`\beta` rising with
:math:`\lambda`).

**The U-shape claims** (the paper's under ``"fixed_alpha"``, this package's
checks under the two others) are decided on an interval, not on the point
estimate of :math:`R = \min(\text{end variance})/\text{minimum variance}`: a
bootstrap over the shared permutations (resampled with replacement, the same
resample at every :math:`\lambda`), the debiased variance recomputed at every
:math:`\lambda` and the minimum re-selected in every resample. "Holds" needs the
95% percentile interval of :math:`R` at or above ``factor`` (2) and a positive
minimum strictly inside the grid in at least 95% of the resamples; "does not
hold", the interval below ``factor`` or an interior minimum in fewer than 5%;
anything else is inconclusive (:mod:`._bootstrap` states the rule and the
alignment of the resamples on the estimate). The variance's standard error and
95% interval come from the same bootstrap: one draw of resamples
(:func:`resample_counts`), whose first ``n_bootstrap`` rows serve the standard
error and first ``n_bootstrap_u_shape`` rows the U-shape claims, each resample's
debiased variance computed by the one function :func:`resampled_variances`.
"""

from ._bootstrap import (INTERIOR_TO_FAIL, LOCATED_TO_HOLD, MIN_BOOTSTRAP, U_SHAPE_LEVEL, draw_counts,
                         permutations_to_decide, resample_counts, resampled_variances, u_shape_interval,
                         u_shape_replicates, u_shape_seed, u_shape_verdict)
from ._claims import LABELS, evaluate_claims
from ._data import (CONVENTIONS, CoalitionScaledRidge, RidgeData, alpha_from_lambda, lambda_grid,
                    load_standardised_diabetes, make_game)
from ._figures import plot_theorem5, plot_variance
from ._measure import (bootstrap_weights, run_grid, side_spearman, u_shape_fraction, u_shape_statistics,
                       value_variance_for_lambda, variance_statistics)
from ._stability import fits_well_mask, full_model_summary, ols_train_mse, sigma_sup_bound, stability_summary
from ._tables import (THEOREM5_COLUMNS, THEOREM5_CONVENTION, VARIANCE_COLUMNS, bootstrap_matrix, grid_table,
                      values_table)

__all__ = [
    "CONVENTIONS", "RidgeData", "load_standardised_diabetes", "lambda_grid", "alpha_from_lambda",
    "CoalitionScaledRidge", "make_game", "full_model_summary", "sigma_sup_bound", "stability_summary",
    "bootstrap_weights", "variance_statistics", "value_variance_for_lambda", "u_shape_statistics", "side_spearman",
    "fits_well_mask", "ols_train_mse", "run_grid", "u_shape_fraction", "grid_table", "values_table",
    "bootstrap_matrix", "evaluate_claims", "plot_variance", "plot_theorem5", "VARIANCE_COLUMNS",
    "THEOREM5_COLUMNS", "THEOREM5_CONVENTION", "LABELS", "u_shape_seed", "draw_counts", "resample_counts",
    "resampled_variances", "u_shape_replicates", "u_shape_interval", "u_shape_verdict", "permutations_to_decide",
    "U_SHAPE_LEVEL", "LOCATED_TO_HOLD", "INTERIOR_TO_FAIL", "MIN_BOOTSTRAP",
]
