"""The attacks: FGSM and Carlini-Wagner L2 in torch float64, and :func:`generate_adversarial` running them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_choice, check_float, check_int
from ._checks import _check_bounds, _deterministic_torch, check_images, check_labels

ATTACKS = ("fgsm", "cw")
_SIGN_DEAD_ZONE = 1e-9  # FGSM: |gradient| below this fraction of the image's largest counts as zero


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
