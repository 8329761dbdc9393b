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

import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._validation import check_choice, check_float, check_int

__all__ = ["ATTACKS", "AdversarialExamples", "train_torch_logistic_regression", "generate_adversarial",
           "check_images", "check_labels", "array_digest", "cache_key", "load_or_generate", "read_cache"]

ATTACKS = ("fgsm", "cw")
_PIXEL_SLACK = 1e-6  # rounding of pixels computed elsewhere (e.g. in float32)
_SIGN_DEAD_ZONE = 1e-9  # FGSM: |gradient| below this fraction of the image's largest counts as zero
_MAX_NEWTON_PARAMETERS = 4000  # the Hessian is dense: (K (d + 1))^2 float64 numbers


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

def check_images(X, bounds=(0.0, 1.0), name: str = "X") -> np.ndarray:
    """Return ``X`` as a C-contiguous float64 array of images within ``bounds``, or raise.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, ...)
        One image (or feature vector) per row; any numeric dtype.
    bounds : (float, float)
        The model's input range, e.g. ``(0, 1)`` for pixels divided by 255.

    Raises
    ------
    TypeError
        If ``X`` is not numeric (strings, objects, complex numbers).
    ValueError
        If it has no rows, fewer than 2 dimensions, NaN or infinite values, or
        values outside ``bounds`` (naming the range found and the one expected).
    """
    lo, hi = _check_bounds(bounds)
    if hasattr(X, "detach") and hasattr(X, "cpu"):  # a torch tensor
        X = X.detach().cpu().numpy()
    array = np.asarray(X)
    if array.dtype == np.bool_ or not (np.issubdtype(array.dtype, np.integer)
                                        or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"{name} must be a numeric (integer or float) array of pixels, got dtype {array.dtype}.")
    if array.ndim < 2:
        raise ValueError(f"{name} must hold one image per row (at least 2-D), got shape {array.shape}.")
    if array.shape[0] == 0 or array.size == 0:
        raise ValueError(f"{name} is empty (shape {array.shape}).")
    array = np.ascontiguousarray(array, dtype=np.float64)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or infinite values.")
    found_lo, found_hi = float(array.min()), float(array.max())
    if found_lo < lo - _PIXEL_SLACK or found_hi > hi + _PIXEL_SLACK:
        hint = " (pixels in 0..255? divide by 255)" if found_hi > 1.5 and hi <= 1.0 else ""
        raise ValueError(f"{name} has values in [{found_lo:g}, {found_hi:g}] but the model's bounds are "
                         f"[{lo:g}, {hi:g}]{hint}.")
    return np.clip(array, lo, hi)


def check_labels(y, n_samples: int, n_classes: int | None = None, name: str = "y") -> np.ndarray:
    """Return ``y`` as int64 class indices in ``[0, n_classes)``, or raise.

    Raises
    ------
    TypeError
        For non-integer labels (strings, fractional floats).
    ValueError
        For a wrong shape or length, or labels outside ``[0, n_classes)``.
    """
    if hasattr(y, "detach") and hasattr(y, "cpu"):
        y = y.detach().cpu().numpy()
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one label per image), got shape {labels.shape}.")
    if labels.shape[0] != n_samples:
        raise ValueError(f"{name} has {labels.shape[0]} labels but there are {n_samples} images.")
    if labels.dtype == np.bool_ or not (np.issubdtype(labels.dtype, np.integer)
                                         or np.issubdtype(labels.dtype, np.floating)):
        raise TypeError(f"{name} must hold integer class indices, got dtype {labels.dtype}.")
    if np.issubdtype(labels.dtype, np.floating):
        if not (np.isfinite(labels).all() and np.all(labels == np.round(labels))):
            raise TypeError(f"{name} must hold integer class indices, got non-integral values.")
    labels = labels.astype(np.int64)
    if labels.size and labels.min() < 0:
        raise ValueError(f"{name} holds negative labels (min {labels.min()}); labels are class indices 0..K-1.")
    if n_classes is not None and labels.size and labels.max() >= n_classes:
        raise ValueError(f"{name} holds label {labels.max()} but the model has {n_classes} classes "
                         f"(labels must be in 0..{n_classes - 1}).")
    return labels


def _check_bounds(bounds) -> tuple[float, float]:
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise TypeError(f"bounds must be a pair of numbers (lo, hi), got {bounds!r}.") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds must be finite with lo < hi, got {bounds!r}.")
    return lo, hi


@contextmanager
def _deterministic_torch(threads: int | None):
    """torch on ``threads`` intra-op threads (None: as is) with deterministic algorithms; restored afterwards."""
    import torch

    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    if threads is not None:
        torch.set_num_threads(check_int(threads, "threads", minimum=1))
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])


# --------------------------------------------------------------------------------------------
# The attacked model
# --------------------------------------------------------------------------------------------

def _logistic_module(n_inputs: int, n_classes: int, projection):
    """A float64 ``torch.nn.Module``: optional fixed affine projection, then one linear layer (the logits)."""
    import torch

    class LogisticRegressionModule(torch.nn.Module):
        """Logits ``W ((x - mean) P^T) + b`` (``P``, ``mean`` fixed buffers), or ``W x + b``."""

        def __init__(self):
            super().__init__()
            if projection is None:
                self.register_buffer("components", None)
                self.register_buffer("center", None)
                n_features = n_inputs
            else:
                components, center = projection
                self.register_buffer("components", torch.as_tensor(components, dtype=torch.float64))
                self.register_buffer("center", torch.as_tensor(center, dtype=torch.float64))
                n_features = self.components.shape[0]
            self.linear = torch.nn.Linear(n_features, n_classes, dtype=torch.float64)

        def features(self, x):
            x = x.reshape(x.shape[0], -1)
            if self.components is None:
                return x
            return (x - self.center) @ self.components.T

        def forward(self, x):
            return self.linear(self.features(x))

    return LogisticRegressionModule()


def _check_projection(projection, n_inputs: int):
    if projection is None:
        return None
    try:
        components, center = projection
    except (TypeError, ValueError):
        raise TypeError("projection must be a pair (components, mean) of arrays, e.g. "
                        "(pca.components_, pca.mean_).") from None
    components = np.asarray(components, dtype=np.float64)
    center = np.asarray(center, dtype=np.float64).reshape(-1)
    if components.ndim != 2 or components.shape[1] != n_inputs or center.shape != (n_inputs,):
        raise ValueError(f"projection components must have shape (d, {n_inputs}) and the mean ({n_inputs},); "
                         f"got {components.shape} and {center.shape}.")
    return components, center


def _newton_multinomial(F, labels, n_classes: int, C: float, max_iter: int):
    r"""Minimise :math:`\frac1n\sum_i \ell_i + \frac{1}{2Cn}\|W\|_F^2` over ``(W, b)`` by damped Newton steps.

    ``F`` (n, d) float64 tensor of features. The intercept of the last class
    is held at 0 (softmax is invariant to a common shift of the intercepts,
    which the penalty leaves free), so the Hessian is positive definite.
    Steps are halved until the objective decreases (Armijo); iteration
    stops once a step moves no parameter by more than ``1e-12`` (relative),
    i.e. at the optimum up to float64 rounding, whatever the path there.
    Returns ``W`` (K, d) and the intercepts ``b`` (K,) centred to sum 0.
    """
    import torch

    n, d = F.shape
    Z = torch.cat([F, torch.ones(n, 1, dtype=F.dtype)], dim=1)
    Y = torch.nn.functional.one_hot(torch.as_tensor(labels), n_classes).to(F.dtype)
    penalty = torch.ones(n_classes, d + 1, dtype=F.dtype)
    penalty[:, d] = 0.0
    penalty /= C * n
    free = torch.ones(n_classes * (d + 1), dtype=torch.bool)
    free[-1] = False  # the last class's intercept

    def objective(theta):
        logits = Z @ theta.T
        return (torch.logsumexp(logits, 1) - (logits * Y).sum(1)).mean() + 0.5 * (penalty * theta.square()).sum()

    theta = torch.zeros(n_classes, d + 1, dtype=F.dtype)
    for _ in range(max_iter):
        P = torch.softmax(Z @ theta.T, dim=1)
        gradient = ((P - Y).T @ Z / n + penalty * theta).reshape(-1)
        ZP = (P[:, :, None] * Z[:, None, :]).reshape(n, -1)
        hessian = torch.block_diag(*[(Z * P[:, k:k + 1]).T @ Z for k in range(n_classes)]) - ZP.T @ ZP
        hessian = hessian / n + torch.diag(penalty.reshape(-1))
        step = torch.zeros_like(gradient)
        step[free] = torch.linalg.solve(hessian[free][:, free], gradient[free])
        step = step.reshape(n_classes, d + 1)
        current, t, decrease = objective(theta), 1.0, float(gradient @ step.reshape(-1))
        while t > 1e-10 and objective(theta - t * step) > current - 1e-4 * t * decrease:
            t *= 0.5
        theta = theta - t * step
        if float((t * step).abs().max()) <= 1e-12 * max(1.0, float(theta.abs().max())):
            break
    W, b = theta[:, :d], theta[:, d]
    return W, b - b.mean()


def train_torch_logistic_regression(X, y, *, n_classes: int | None = None, C: float = 1.0,
                                    projection=None, max_iter: int = 100, bounds=(0.0, 1.0),
                                    threads: int | None = 1):
    """Fit a multinomial logistic regression in PyTorch (float64); return it in eval mode.

    Minimises scikit-learn's objective :math:`C\\sum_i \\ell_i(W, b) +
    \\frac12\\|W\\|_F^2` (intercepts unpenalised) exactly: damped Newton
    steps from zero until the step is at float64 rounding, so the weights do
    not depend on a tolerance or on the path of the optimiser (see the
    module's Reproducibility section).

    Parameters
    ----------
    X : array (n, ...)
        Training images within ``bounds`` (any numeric dtype).
    y : array (n,)
        Integer labels ``0..n_classes-1``.
    n_classes : int, optional
        Number of outputs; default ``max(y) + 1``.
    C : float, default 1.0
        Inverse L2 penalty, as in ``sklearn.linear_model.LogisticRegression``.
    projection : (components, mean), optional
        A fixed affine map applied to the flattened pixels before the linear
        layer, ``(x - mean) @ components.T`` (e.g. a PCA's ``components_`` and
        ``mean_``): the model is then a logistic regression on those features,
        still differentiable with respect to the pixels, so attacks work on
        pixels.
    max_iter : int
        Cap on Newton steps (20 or so suffice).
    bounds : (float, float)
        Input range (checked).
    threads : int or None, default 1
        torch intra-op threads while fitting (None: leave as is).

    Returns
    -------
    torch.nn.Module
        Maps a float64 batch (n, ...) to logits (n, n_classes); in eval mode.

    Raises
    ------
    ValueError
        Bad images or labels, a single class, or more than 4,000 parameters
        ``K (d + 1)`` (the dense Hessian; use a projection).
    """
    import torch

    X = check_images(X, bounds)
    labels = check_labels(y, X.shape[0], n_classes)
    n_classes = int(labels.max()) + 1 if n_classes is None else check_int(n_classes, "n_classes", minimum=2)
    if n_classes < 2:
        raise ValueError("y holds a single class; a classifier needs at least two.")
    C = check_float(C, "C", minimum=0.0, strict=True)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    n_inputs = int(np.prod(X.shape[1:]))
    projection = _check_projection(projection, n_inputs)
    n_features = n_inputs if projection is None else projection[0].shape[0]
    if n_classes * (n_features + 1) > _MAX_NEWTON_PARAMETERS:
        raise ValueError(f"the model has {n_classes * (n_features + 1)} parameters; Newton's method here takes "
                         f"at most {_MAX_NEWTON_PARAMETERS}: pass a projection (e.g. PCA) to fewer features.")
    with _deterministic_torch(threads), torch.no_grad():
        model = _logistic_module(n_inputs, n_classes, projection)
        W, b = _newton_multinomial(model.features(torch.from_numpy(X)), labels, n_classes, C, max_iter)
        model.linear.weight.copy_(W)
        model.linear.bias.copy_(b)
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model


# --------------------------------------------------------------------------------------------
# Attacks
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AdversarialExamples:
    """Output of :func:`generate_adversarial`.

    Attributes
    ----------
    images : ndarray, float64, the inputs' shape
        The adversarial images (the original image where Carlini-Wagner found
        none).
    success : ndarray of bool
        Whether the model misclassifies the returned image.
    predictions : ndarray of int
        The model's predicted class of each returned image.
    l2, linf : ndarray of float
        Norms of the perturbation ``images - X``, per image.
    """

    images: np.ndarray
    success: np.ndarray
    predictions: np.ndarray
    l2: np.ndarray
    linf: np.ndarray

    @property
    def success_rate(self) -> float:
        return float(self.success.mean())


def _fgsm(model, x, labels, epsilon: float, lo: float, hi: float):
    r""":math:`\mathrm{clip}(x + \epsilon\,\mathrm{sign}\,\nabla_x \ell(f(x), y))`, components of the gradient
    below ``_SIGN_DEAD_ZONE`` times the image's largest counting as zero (they are zero up to rounding)."""
    import torch

    x = x.clone().requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(model(x), labels, reduction="sum")
    (gradient,) = torch.autograd.grad(loss, x)
    scale = gradient.abs().reshape(len(x), -1).amax(dim=1).reshape((-1,) + (1,) * (x.ndim - 1))
    sign = torch.where(gradient.abs() > _SIGN_DEAD_ZONE * scale, gradient.sign(), torch.zeros_like(gradient))
    return torch.clamp(x.detach() + epsilon * sign, lo, hi)


def _carlini_wagner(model, x, labels, *, steps: int, stepsize: float, binary_search_steps: int,
                    confidence: float, lo: float, hi: float, initial_const: float = 1e-3):
    r"""Carlini-Wagner :math:`L_2`, untargeted, following foolbox 3's ``L2CarliniWagnerAttack`` without early abort.

    For each image, minimise over :math:`w` (with Adam, ``steps`` steps of
    ``stepsize``) :math:`\|x(w) - x\|_2^2 + c\,\max(z_y - \max_{j\ne y} z_j
    + \kappa, 0)` where :math:`x(w) = \frac{hi+lo}2 + \frac{hi-lo}2\tanh w`
    keeps pixels in bounds and :math:`\kappa` is ``confidence``; the constant
    :math:`c` starts at ``initial_const`` and is searched per image (times 10
    until an adversarial with margin :math:`\kappa` is found, then bisected)
    over ``binary_search_steps`` rounds. Returns the smallest such adversarial
    (the original image where none was found) and whether one was found.
    Every operation is per image, so images do not influence each other.
    """
    import torch

    n = len(x)
    rows = torch.arange(n)
    center, half = (hi + lo) / 2, (hi - lo) / 2
    w0 = torch.atanh((x - center) / half * 0.999999)  # squeezed into the open interval, as foolbox does
    x0 = torch.tanh(w0) * half + center
    shape = (-1,) + (1,) * (x.ndim - 1)
    consts = torch.full((n,), initial_const, dtype=x.dtype)
    lower, upper = torch.zeros(n, dtype=x.dtype), torch.full((n,), float("inf"), dtype=x.dtype)
    best, best_norm = x.clone(), torch.full((n,), float("inf"), dtype=x.dtype)
    beta1, beta2, adam_eps = 0.9, 0.999, 1e-8
    for _ in range(binary_search_steps):
        delta = torch.zeros_like(w0)
        m, v = torch.zeros_like(w0), torch.zeros_like(w0)
        found = torch.zeros(n, dtype=torch.bool)
        for t in range(1, steps + 1):
            delta.requires_grad_(True)
            perturbed = torch.tanh(w0 + delta) * half + center
            logits = model(perturbed)
            other = logits.masked_fill(torch.nn.functional.one_hot(labels, logits.shape[1]).bool(), float("-inf"))
            margin = logits[rows, labels] - other.amax(dim=1) + confidence
            loss = (perturbed - x0).square().reshape(n, -1).sum(1) + consts * torch.clamp(margin, min=0.0)
            (gradient,) = torch.autograd.grad(loss.sum(), delta)
            with torch.no_grad():
                m = beta1 * m + (1 - beta1) * gradient
                v = beta2 * v + (1 - beta2) * gradient.square()
                m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
                delta = delta.detach() - stepsize * m_hat / (torch.sqrt(v_hat) + adam_eps)
                # the image scored at this step: adversarial with margin kappa, and closer than the best so far
                is_adv = margin.detach() <= 0
                found |= is_adv
                norm = (perturbed.detach() - x).reshape(n, -1).norm(dim=1)
                better = is_adv & (norm < best_norm)
                best = torch.where(better.reshape(shape), perturbed.detach(), best)
                best_norm = torch.where(better, norm, best_norm)
        upper = torch.where(found, consts, upper)
        lower = torch.where(found, lower, consts)
        consts = torch.where(torch.isinf(upper), consts * 10, (lower + upper) / 2)
    return torch.clamp(best, lo, hi), torch.isfinite(best_norm)


def generate_adversarial(model, X, y, attack: str = "fgsm", *, epsilon: float = 0.1, steps: int = 100,
                         stepsize: float = 0.01, binary_search_steps: int = 9, confidence: float = 0.0,
                         bounds=(0.0, 1.0), batch_size: int = 1024,
                         threads: int | None = 1) -> AdversarialExamples:
    """Untargeted adversarial examples for ``model``, computed in torch float64.

    Parameters
    ----------
    model : torch.nn.Module
        Maps a float64 batch to logits (e.g. from
        :func:`train_torch_logistic_regression`); put in eval mode here.
    X : array (n, ...)
        Images within ``bounds``; any numeric dtype (computed in float64).
    y : array (n,)
        True integer labels, ``0 <= y < n_classes``.
    attack : {"fgsm", "cw"}
        ``"fgsm"``: fast gradient sign method, :math:`x + \\epsilon\\,
        \\mathrm{sign}\\nabla_x\\ell` clipped to ``bounds`` (Goodfellow et al.
        2015), gradient components within rounding of zero left unperturbed.
        ``"cw"``: Carlini-Wagner :math:`L_2` minimum-norm attack (2017) with
        ``binary_search_steps`` searches of ``steps`` Adam steps of ``stepsize``,
        requiring a logit margin ``confidence`` (foolbox 3's algorithm, see
        :func:`_carlini_wagner`).
    epsilon : float
        FGSM's perturbation size (ignored by ``"cw"``).
    steps, stepsize, binary_search_steps, confidence
        Carlini-Wagner's settings (ignored by ``"fgsm"``).
    bounds : (float, float)
        The model's input range; ``X`` must lie within it.
    batch_size : int
        Images attacked at once. The attacks treat images independently; keep
        the default for bit-identical results (matrix kernels may sum in
        another order for other batch sizes).
    threads : int or None, default 1
        torch intra-op threads during the attack (fix it for bit-identical results).

    Returns
    -------
    AdversarialExamples

    Raises
    ------
    TypeError
        Non-numeric images, non-integer labels, a model that is not a torch module.
    ValueError
        Pixels outside ``bounds`` (naming both ranges), labels out of range,
        shapes that do not match, unknown attack, bad settings.
    """
    import torch

    check_choice(attack, "attack", ATTACKS)
    lo, hi = _check_bounds(bounds)
    X = check_images(X, (lo, hi))
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}.")
    if attack == "fgsm":
        settings = {"epsilon": check_float(epsilon, "epsilon", minimum=0.0, strict=True)}
    else:
        settings = {"steps": check_int(steps, "steps", minimum=1),
                    "stepsize": check_float(stepsize, "stepsize", minimum=0.0, strict=True),
                    "binary_search_steps": check_int(binary_search_steps, "binary_search_steps", minimum=1),
                    "confidence": check_float(confidence, "confidence", minimum=0.0)}
    model.eval()
    with _deterministic_torch(threads):
        with torch.no_grad():
            try:
                logits = model(torch.from_numpy(X[:1]))
            except Exception as exc:
                raise ValueError(f"the model cannot take float64 inputs of shape {X.shape[1:]}: {exc}") from exc
        if logits.ndim != 2:
            raise ValueError(f"the model must return logits of shape (n, n_classes), got {tuple(logits.shape)}.")
        labels = check_labels(y, X.shape[0], int(logits.shape[1]))
        images = np.empty_like(X)
        for start in range(0, X.shape[0], batch_size):
            rows = slice(start, start + batch_size)
            x, t = torch.from_numpy(X[rows]), torch.from_numpy(labels[rows])
            if attack == "fgsm":
                out = _fgsm(model, x, t, settings["epsilon"], lo, hi)
            else:
                out, _ = _carlini_wagner(model, x, t, lo=lo, hi=hi, **settings)
            images[rows] = out.detach().numpy()
        with torch.no_grad():
            predictions = np.concatenate([model(torch.from_numpy(images[s:s + batch_size])).argmax(1).numpy()
                                          for s in range(0, len(images), batch_size)])
    delta = (images - X).reshape(len(X), -1)
    return AdversarialExamples(images=images, success=predictions != labels, predictions=predictions,
                               l2=np.linalg.norm(delta, axis=1), linf=np.abs(delta).max(axis=1))


# --------------------------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------------------------

_PARAMS_FIELD, _KEY_FIELD, _INPUTS_FIELD = "__params__", "__key__", "__inputs_sha256__"


def array_digest(arrays: Mapping[str, Any]) -> str:
    """SHA-256 of named arrays: their names, dtypes, shapes and bytes (order of names does not matter)."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(np.asarray(arrays[name]))
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _json_default(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    if isinstance(value, (tuple, set, frozenset)):
        return sorted(value) if not isinstance(value, tuple) else list(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"params must hold JSON values (numbers, strings, lists, dicts), got {type(value).__name__}.")


def _params_json(params: Mapping[str, Any]) -> str:
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping of JSON values, got {type(params).__name__}.")
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"), default=_json_default,
                      allow_nan=False)


def cache_key(params: Mapping[str, Any], inputs_sha256: str = "") -> str:
    """The key a cache entry is valid for: SHA-256 of the canonical JSON of ``params`` and the inputs' hash."""
    return hashlib.sha256((_params_json(params) + "|" + inputs_sha256).encode()).hexdigest()


def read_cache(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Arrays and metadata (``params``, ``key``, ``inputs_sha256``) of a cache file.

    Raises
    ------
    FileNotFoundError, ValueError
        If the file is missing, or is not a cache file written by :func:`load_or_generate`.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except FileNotFoundError:
        raise
    except Exception as exc:  # noqa: BLE001 - zip, pickle and format errors alike
        raise ValueError(f"{path} is not a readable .npz cache file: {exc}") from None
    try:
        meta = {"params": json.loads(str(arrays.pop(_PARAMS_FIELD))), "key": str(arrays.pop(_KEY_FIELD)),
                "inputs_sha256": str(arrays.pop(_INPUTS_FIELD))}
    except (KeyError, ValueError) as exc:
        raise ValueError(f"{path} lacks the cache metadata ({exc}); it was not written by load_or_generate.") from None
    return arrays, meta


def load_or_generate(cache_path: str | os.PathLike | None, params: Mapping[str, Any],
                     generate: Callable[[], Mapping[str, Any]], *, inputs: Mapping[str, Any] | None = None,
                     ) -> tuple[dict[str, np.ndarray], bool]:
    """Arrays from ``cache_path`` if it was made with these ``params`` and ``inputs``; else generate and save.

    The file (``.npz``, compressed) stores the arrays that ``generate()``
    returns together with ``params`` as JSON, the SHA-256 of ``inputs``
    (:func:`array_digest`) and the key combining both (:func:`cache_key`).
    It is regenerated only when that key differs, or the file is missing or
    unreadable. It is written to a temporary file first and renamed, so an
    interrupted run never leaves a truncated cache.

    Parameters
    ----------
    cache_path : path or None
        The ``.npz`` file; ``None`` disables caching (always generate).
    params : mapping
        Everything that determines the result (JSON values).
    generate : callable
        ``() -> {name: array}``; names must not start with ``__``.
    inputs : mapping of arrays, optional
        The data the arrays are computed from (hashed, not stored).

    Returns
    -------
    (dict of arrays, bool)
        The arrays, and whether they were generated now.
    """
    inputs_sha = array_digest(inputs) if inputs else ""
    key = cache_key(params, inputs_sha)
    path = None if cache_path is None else Path(cache_path)
    if path is not None and path.is_file():
        try:
            arrays, meta = read_cache(path)
        except ValueError as exc:
            warnings.warn(f"regenerating the cache: {exc}", RuntimeWarning, stacklevel=2)
        else:
            if meta["key"] == key:
                return arrays, False
    arrays = {name: np.asarray(value) for name, value in dict(generate()).items()}
    bad = [name for name in arrays if name.startswith("__")]
    if bad:
        raise ValueError(f"generated array names must not start with '__': {bad}.")
    if any(a.dtype == object for a in arrays.values()):
        raise TypeError("generated arrays must have a numeric, boolean or string dtype (no objects).")
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".npz", dir=path.parent)
        os.close(fd)
        try:
            np.savez_compressed(tmp, **arrays, **{_PARAMS_FIELD: np.array(_params_json(params)),
                                                  _KEY_FIELD: np.array(key), _INPUTS_FIELD: np.array(inputs_sha)})
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return arrays, True
