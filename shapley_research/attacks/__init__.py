"""Adversarial examples against a PyTorch logistic regression, in float64, and a file cache for them.

* :func:`train_torch_logistic_regression` fits a multinomial logistic
  regression in PyTorch (optionally on a fixed linear projection of the
  pixels, such as PCA), minimising scikit-learn's objective
  :math:`C\\sum_i \\ell_i + \\frac12\\|W\\|^2` with damped Newton steps run
  until the step is at the level of float64 rounding.
* :func:`generate_adversarial` runs FGSM (:math:`L_\\infty`, fixed
  ``epsilon``; Goodfellow et al. 2015) or Carlini-Wagner :math:`L_2`
  (Carlini & Wagner 2017, as foolbox 3 implements it) on it. Both are
  written here in torch float64 (foolbox computes in the input's float32):
  inputs are checked first and errors say what is wrong in words; success
  is measured on the model's own predictions; where Carlini-Wagner finds no
  adversarial the original image is returned.
* :func:`load_or_generate` caches generated arrays in a ``.npz`` file that
  records the parameters and a hash of the inputs; it regenerates only when
  they change.

Reproducibility
---------------
Every torch computation runs in float64 on ``threads`` intra-op threads
(default 1) with ``torch.use_deterministic_algorithms(True)``, and nothing
is random (both attacks and the Newton fit are deterministic), so one
machine gives bit-identical images run after run. Another machine's BLAS
may round differently (about 1e-16 relative per operation). Simulating
that (PCA loadings perturbed by 1e-15 relative, or 2 threads instead of
1) moved the model's weights by 2e-15 relative (Newton converges to
rounding, not to a tolerance), left every FGSM image bit-identical and
moved CW pixels by at most 5e-14. Larger changes need a decision within
rounding of its threshold: an FGSM gradient component within ``1e-9`` of
the image's largest one (treated as zero, so exact zeros such as pixels
the model ignores are never pushed by rounding noise; foolbox pushed them
by the sign of that noise) or a CW binary-search or best-image decision
at its boundary. The tolerance across machines is thus about 1e-13 in any
pixel, barring such ties.

torch is imported inside the functions that need it (it takes seconds to
import), so importing this module is cheap and a valid cache is read
without importing it.
"""

from __future__ import annotations

from ._cache import array_digest, cache_key, load_or_generate, read_cache
from ._checks import check_images, check_labels
from ._generate import ATTACKS, AdversarialExamples, generate_adversarial
from ._model import train_torch_logistic_regression

__all__ = ["ATTACKS", "AdversarialExamples", "train_torch_logistic_regression", "generate_adversarial",
           "check_images", "check_labels", "array_digest", "cache_key", "load_or_generate", "read_cache"]
