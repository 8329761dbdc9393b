"""Adversarial examples against a PyTorch logistic regression, in float64, and a file cache for them.

* :func:`train_torch_logistic_regression` fits a multinomial logistic
  regression in PyTorch (optionally on a fixed linear projection of the
  pixels, such as PCA), minimising scikit-learn's objective
  :math:`C\\sum_i \\ell_i + \\frac12\\|W\\|^2` with damped Newton steps run
  until the step is at the level of float64 rounding.
* :func:`generate_adversarial` runs foolbox 3's ``FGSM`` (:math:`L_\\infty`,
  fixed ``epsilon``; Goodfellow et al. 2015) or ``L2CarliniWagnerAttack``
  (Carlini & Wagner 2017) on it, on float64 tensors, which foolbox keeps in
  float64: inputs are checked first and errors say what is wrong in words;
  success is measured on the model's own predictions; where Carlini-Wagner
  finds no adversarial the original image is returned (foolbox returns a
  blank one).
* :func:`load_or_generate` caches generated arrays in a ``.npz`` file that
  records the parameters and a hash of the inputs; it regenerates only when
  they change.

Reproducibility
---------------
Every torch computation runs in float64 on the CPU, on ``threads``
intra-op threads (default 1) with ``torch.use_deterministic_algorithms(True)``,
and nothing is random (FGSM without random start, Carlini-Wagner and the
Newton fit are deterministic), so one machine gives bit-identical images
run after run (foolbox passes Carlini-Wagner's constants :math:`c` as
float32 numbers; pixels, logits and gradients stay float64). Another
machine's BLAS may round differently (about 1e-16 relative per operation).
Simulated on the paper profile, 2 torch threads instead of 1 moved the
model's weights by 2e-15 relative and CW pixels by at most 2e-14; PCA
loadings multiplied by ``1 + 1e-15 N(0, 1)`` moved the weights by 5e-10
relative (a change of the problem, which the fit amplifies) and CW pixels by at most 5e-9, as
much as for the torch copy of CW these attacks replaced. Both left every
FGSM image bit-identical: FGSM changes only a pixel whose gradient is
within rounding of zero, and pixels the model ignores have exactly zero
gradient and stay put (the experiment's PCA sets the loadings of constant
pixels to exactly 0 for that reason). A CW image changes by more only
where a binary-search or best-image decision is within rounding of its
boundary.

torch and foolbox are imported inside the functions that need them (torch
takes seconds to import; foolbox is the optional ``attacks`` extra), so
importing this module is cheap and a valid cache is read without them.
"""

from __future__ import annotations

from ._cache import array_digest, cache_key, load_or_generate, read_cache
from ._checks import check_images, check_labels
from ._generate import ATTACKS, FOOLBOX_VERSION, AdversarialExamples, generate_adversarial
from ._model import train_torch_logistic_regression

__all__ = ["ATTACKS", "FOOLBOX_VERSION", "AdversarialExamples", "train_torch_logistic_regression",
           "generate_adversarial", "check_images", "check_labels", "array_digest", "cache_key", "load_or_generate",
           "read_cache"]
