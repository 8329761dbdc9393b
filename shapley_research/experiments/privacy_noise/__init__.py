r"""Value for privacy-preserving data (paper Section 5, Figure 5b of the LaTeX source, ``fig:stable_noise``).

The paper builds an MNIST training set of two halves, one of normal images and
one of noisy ones, values the points with the Shapley value (SV) of the test
accuracy on normal images, and reports that "the SV decreases as data becomes
noisier": a tradeoff between privacy and data value. This module makes the
noise an actual differential-privacy mechanism and measures that tradeoff.

Privacy mechanism (what is protected)
-------------------------------------
Each contributor of the noisy half releases its image through the **Gaussian
mechanism in the local model**: the image ``x`` (784 pixels in ``[0, 1]``) is
clipped to L2 norm ``C`` (``clip_l2``), Gaussian noise ``N(0, sigma^2 I)`` is
added, and the result is clamped back to the pixel range ``[0, 1]``
(post-processing, which never weakens differential privacy). The release is
``(epsilon, delta)``-differentially private **with respect to replacing the
contributor's image by any other image** in ``[0, 1]^784``: the L2 sensitivity
of the clipped image is ``min(2 C, sqrt(784))`` (two clipped images lie in the
ball of radius ``C`` and in the unit cube; :func:`l2_sensitivity`). The
**labels are released in the clear** (not protected), as in the paper, where
only the images are noisy. Each image is released once.

``sigma`` is calibrated with the **analytic Gaussian mechanism** of Balle &
Wang (ICML 2018, Theorem 8): the smallest ``sigma`` with

.. math:: \Phi\Bigl(\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Bigr)
          - e^{\epsilon}\,\Phi\Bigl(-\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Bigr) \le \delta,

an exact condition valid for every ``epsilon > 0``. The classic calibration
``sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork & Roth, Theorem A.1)
is only proven for ``epsilon < 1`` and is kept for comparison
(:func:`classic_gaussian_sigma`); where both apply the analytic one adds less
noise. ``epsilon = inf`` means no noise (clip and clamp only): the reference.

Valuation
---------
Players: ``n_train`` MNIST images (class balanced), split into a clean half and
a noisy half with the same number of images of each digit. Features: the
images projected on the top ``n_components`` principal axes of a separate
*public* pool of clean images (never valued, so the feature map does not
depend on any coalition nor on the noise). Utility: accuracy on clean test
images of L2 logistic regression (``LogisticRegression(C)``, via the batched
:class:`~shapley_research.LogisticRegressionUtility`). Two valuations per
privacy level:

* per-point SVs by permutation sampling (paper Algorithm 3) on the learner's
  one-pass prefix path (:meth:`LogisticRegressionUtility.evaluate_prefixes`,
  the paper's "incrementally trainable" approximation of refitting every
  prefix), summed per half; the standard error of a half's sum is computed from
  the per-permutation sums, so it accounts for the covariance between points;
* the exact SV of the **two halves as two players** (4 coalitions, exact
  refits).

Common random numbers: every privacy level uses the same images, the same
halves, the same standard-normal noise draw (scaled by its ``sigma``) and the
same permutations, so levels differ only in the noise scale.

Replication over data draws
---------------------------
One run rests on one draw of the data (training set, halves, noise, test
set): its standard errors are Monte Carlo errors on that draw.
:func:`run_replication` reruns the experiment on further seeds
(``replication_seeds``) and :func:`replication_claim` decides this package's
own check of the Section 5 claim on Student-t intervals over the draws
(:mod:`._replication` states the criterion).
"""

from ._claims import SECTION, privacy_claims, privacy_summary
from ._data import fit_projection, load_privacy_data, split_halves
from ._figures import plot_point_values, plot_privacy_values, plot_replication
from ._measure import HALVES, permutation_group_values, run_privacy_noise, two_half_values, value_privacy_level
from ._mechanism import (analytic_gaussian_sigma, classic_gaussian_sigma, clip_l2, gaussian_privacy_profile,
                         l2_sensitivity, privatize_images)
from ._replication import (DRAW_COLUMNS, REPLICATION_TABLE, check_replication_seeds, draw_statistics,
                           replication_claim, replication_summary, run_replication)

__all__ = [
    "gaussian_privacy_profile", "analytic_gaussian_sigma", "classic_gaussian_sigma", "l2_sensitivity",
    "clip_l2", "privatize_images", "split_halves", "load_privacy_data", "fit_projection",
    "two_half_values", "permutation_group_values", "value_privacy_level", "run_privacy_noise",
    "privacy_summary", "privacy_claims", "plot_privacy_values", "plot_point_values", "HALVES", "SECTION",
    "check_replication_seeds", "draw_statistics", "run_replication", "replication_summary", "replication_claim",
    "plot_replication", "DRAW_COLUMNS", "REPLICATION_TABLE",
]
