"""The attacked model: a float64 torch multinomial logistic regression fitted exactly by Newton's method."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_float, check_int
from ._checks import _deterministic_torch, check_images, check_labels

if TYPE_CHECKING:
    import torch

_MAX_NEWTON_PARAMETERS = 4000  # the Hessian is dense: (K (d + 1))^2 float64 numbers


# --------------------------------------------------------------------------------------------
# The attacked model
# --------------------------------------------------------------------------------------------

def _logistic_module(n_inputs: int, n_classes: int,
                     projection: tuple[NDArray[np.float64], NDArray[np.float64]] | None) -> torch.nn.Module:
    """A float64 ``torch.nn.Module``: optional fixed affine projection, then one linear layer (the logits)."""
    import torch

    class LogisticRegressionModule(torch.nn.Module):
        """Logits ``W ((x - mean) P^T) + b`` (``P``, ``mean`` fixed buffers), or ``W x + b``."""

        def __init__(self) -> None:
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

        def features(self, x: torch.Tensor) -> torch.Tensor:
            x = x.reshape(x.shape[0], -1)
            if self.components is None:
                return x
            return (x - self.center) @ self.components.T

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.linear(self.features(x))

    return LogisticRegressionModule()


def _check_projection(projection: Any, n_inputs: int) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
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


def _newton_multinomial(F: torch.Tensor, labels: NDArray[np.int64], n_classes: int, C: float,
                        max_iter: int) -> tuple[torch.Tensor, torch.Tensor]:
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

    def objective(theta: torch.Tensor) -> torch.Tensor:
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


def train_torch_logistic_regression(X: ArrayLike | torch.Tensor, y: ArrayLike | torch.Tensor, *,
                                    n_classes: int | None = None, C: float = 1.0,
                                    projection: tuple[ArrayLike, ArrayLike] | None = None, max_iter: int = 100,
                                    bounds: Iterable[float] = (0.0, 1.0),
                                    threads: int | None = 1) -> torch.nn.Module:
    """Fit a multinomial logistic regression in PyTorch (float64); return it in eval mode.

    Minimises scikit-learn's objective :math:`C\\sum_i \\ell_i(W, b) +
    \\frac12\\|W\\|_F^2` (intercepts unpenalised) exactly: damped Newton
    steps from zero until the step is at float64 rounding, so the weights do
    not depend on a tolerance or on the path of the optimiser (see the
    Reproducibility section of the package docstring).

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
