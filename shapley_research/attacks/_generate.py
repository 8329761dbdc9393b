"""The attacks: foolbox 3's FGSM and L2 Carlini-Wagner on a float64 torch model, run by :func:`generate_adversarial`."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_choice, check_float, check_int
from ._checks import _check_bounds, _deterministic_torch, check_images, check_labels

if TYPE_CHECKING:
    import torch

ATTACKS = ("fgsm", "cw")
FOOLBOX_VERSION = "3.3.4"  # the release pyproject's `attacks` extra pins (the cached images depend on it)


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
        """The fraction of images the model now misclassifies."""
        return float(self.success.mean())


def _foolbox() -> Any:
    """foolbox, imported on first use (the core package runs without it), with a clear error where it is absent."""
    try:
        with warnings.catch_warnings():  # foolbox 3.3.4 imports a scipy namespace that scipy deprecates
            warnings.filterwarnings("ignore", "Please import `gaussian_filter`", DeprecationWarning)
            import foolbox
    except ImportError as exc:
        raise ImportError("the adversarial attacks need foolbox: pip install 'shapley-research[attacks]' "
                          f"(foolbox=={FOOLBOX_VERSION})") from exc
    if foolbox.__version__ != FOOLBOX_VERSION:
        warnings.warn(f"foolbox {foolbox.__version__} is installed, the images were calibrated and cached with "
                      f"{FOOLBOX_VERSION}; they may differ.", RuntimeWarning, stacklevel=3)
    return foolbox


def _fgsm(fmodel: Any, x: torch.Tensor, labels: torch.Tensor, epsilon: float) -> torch.Tensor:
    r"""foolbox's ``FGSM``: :math:`\mathrm{clip}(x + \epsilon\,\mathrm{sign}\,\nabla_x \ell(f(x), y))`."""
    _, clipped, _ = _foolbox().attacks.FGSM()(fmodel, x, labels, epsilons=epsilon)
    return clipped


def _carlini_wagner(fmodel: Any, x: torch.Tensor, labels: torch.Tensor, *, steps: int, stepsize: float,
                    binary_search_steps: int, confidence: float) -> torch.Tensor:
    r"""foolbox's ``L2CarliniWagnerAttack`` without early abort; the original image where it found none.

    It minimises :math:`\|x(w) - x\|_2^2 + c\,\max(z_y - \max_{j\ne y} z_j +
    \kappa, 0)` over :math:`w` (``steps`` Adam steps of ``stepsize``; pixels
    :math:`x(w)` through tanh, so within bounds), :math:`\kappa` being
    ``confidence``, searching the constant :math:`c` per image over
    ``binary_search_steps`` rounds, and returns the smallest adversarial
    (margin :math:`\kappa`) it met. Early abort is off so that every image
    gets all ``steps`` (the calibration of ``confidence`` assumed them).
    foolbox returns an all-zero image where it found no adversarial (its
    best images start at zeros); a found one is never exactly zero in every
    pixel, so those rows get the original image back rather than a blank
    one. Every operation is per image, so images do not influence each other.
    """
    import torch

    attack = _foolbox().attacks.L2CarliniWagnerAttack(
        binary_search_steps=binary_search_steps, steps=steps, stepsize=stepsize, confidence=confidence,
        abort_early=False)
    raw, _, _ = attack(fmodel, x, labels, epsilons=None)
    found = (raw != 0).reshape(len(raw), -1).any(dim=1)
    return torch.where(found.reshape((-1,) + (1,) * (x.ndim - 1)), raw, x)


def generate_adversarial(model: torch.nn.Module, X: ArrayLike | torch.Tensor, y: ArrayLike | torch.Tensor,
                         attack: Literal["fgsm", "cw"] = "fgsm", *, epsilon: float = 0.1, steps: int = 100,
                         stepsize: float = 0.01, binary_search_steps: int = 9, confidence: float = 0.0,
                         bounds: Iterable[float] = (0.0, 1.0), batch_size: int = 1024,
                         threads: int | None = 1) -> AdversarialExamples:
    """Untargeted adversarial examples for ``model`` by foolbox 3's attacks, computed in float64.

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
        ``"fgsm"``: foolbox's ``FGSM``, the fast gradient sign method
        :math:`x + \\epsilon\\,\\mathrm{sign}\\nabla_x\\ell` clipped to
        ``bounds`` (Goodfellow et al. 2015). ``"cw"``: foolbox's
        ``L2CarliniWagnerAttack`` (Carlini & Wagner 2017), the minimum-norm
        attack with ``binary_search_steps`` searches of ``steps`` Adam steps of
        ``stepsize``, requiring a logit margin ``confidence``, without early
        abort (see :func:`_carlini_wagner`).
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
    ImportError
        If foolbox is not installed (``pip install 'shapley-research[attacks]'``).
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
    settings: dict[str, Any]  # the chosen attack's keyword arguments
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
        # on the CPU, where the float64 kernels (and so the cached images) are the same run after run
        fmodel = _foolbox().PyTorchModel(model, bounds=(lo, hi), device="cpu")
        images = np.empty_like(X)
        for start in range(0, X.shape[0], batch_size):
            rows = slice(start, start + batch_size)
            x, t = torch.from_numpy(X[rows]), torch.from_numpy(labels[rows])
            if attack == "fgsm":
                out = _fgsm(fmodel, x, t, settings["epsilon"])
            else:
                out = _carlini_wagner(fmodel, x, t, **settings)
            images[rows] = out.detach().numpy()
        with torch.no_grad():
            predictions = np.concatenate([model(torch.from_numpy(images[s:s + batch_size])).argmax(1).numpy()
                                          for s in range(0, len(images), batch_size)])
    delta = (images - X).reshape(len(X), -1)
    return AdversarialExamples(images=images, success=predictions != labels, predictions=predictions,
                               l2=np.linalg.norm(delta, axis=1), linf=np.abs(delta).max(axis=1))
