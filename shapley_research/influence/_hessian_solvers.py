r"""Inverse-Hessian-vector products from Hessian-vector products alone: LiSSA and Arnoldi (:func:`torch_influence`).

Both approximate :math:`s = A^{-1} g` for the damped Hessian
:math:`A = \bar H + \mu I`, :math:`\bar H = \frac1N \sum_j \nabla^2 \ell_j(\hat\theta)`
the mean Hessian of the training losses and :math:`\mu = \lambda + \delta`
the weight decay plus the damping, given only products
:math:`v \mapsto \bar H v` (forward-over-reverse, one per call).

**LiSSA** (Agarwal, Bullins & Hazan, JMLR 2017; the recursion of Koh &
Liang, ICML 2017). For a scale :math:`\sigma` with
:math:`0 < \operatorname{eig}(A) < 2\sigma`, the Neumann series
:math:`A^{-1} = \sigma^{-1} \sum_{k \ge 0} (I - A/\sigma)^k` converges, and
its partial sums are the recursion

.. math:: h_0 = g, \qquad h_{t+1} = g + \bigl(I - (\bar H_{B_t} + \mu I)/\sigma\bigr) h_t,
          \qquad s \approx h_T / \sigma,

with :math:`h_T/\sigma - A^{-1} g = -(I - A/\sigma)^{T+1} A^{-1} g` when
:math:`\bar H_{B_t} = \bar H` (all rows): the error shrinks like
:math:`(1 - \mu_{\min}/\sigma)^{T}`, :math:`\mu_{\min}` the smallest
eigenvalue of :math:`A`. With minibatches, :math:`\bar H_{B_t}` is the mean
Hessian of ``batch_size`` rows drawn without replacement at each step from a
seeded generator; each step's product is unbiased and independent of
:math:`h_t`, so :math:`\mathbb E[h_T]` is the full-batch partial sum, and
``repetitions`` independent recursions are averaged to cut the variance.
The default scale is the largest eigenvalue of :math:`A` from
:data:`POWER_ITERATIONS` power iterations times :data:`LISSA_SCALE_MARGIN`
(room for a minibatch Hessian's larger eigenvalues).

**Arnoldi** (Schioppa, Zablotskaia, Vilar & Sokolov, AAAI 2022). ``m``
steps of the Arnoldi iteration on :math:`\bar H` from a seeded random unit
vector, each new vector orthogonalised twice against all earlier ones
(classical Gram-Schmidt, twice), give an orthonormal basis :math:`Q_m` of
the Krylov subspace and :math:`T_m = Q_m^\top \bar H Q_m` (tridiagonal for
a symmetric :math:`\bar H`: Lanczos with full re-orthogonalisation). The
``rank`` Ritz pairs :math:`(\lambda_j, u_j)` of largest
:math:`\lvert\lambda_j\rvert` (eigenpairs of :math:`T_m`, :math:`u_j = Q_m y_j`)
approximate the top of :math:`\bar H`'s spectrum, :math:`\bar H \approx U \Lambda U^\top`,
and

.. math:: s = U (\Lambda + \mu I)^{-1} U^\top g + \frac{1}{\mu} (I - U U^\top) g

is the exact inverse of :math:`U \Lambda U^\top + \mu I` (``complement="damping"``:
outside the top eigenspace :math:`\bar H` counts as 0, so only the damping
acts), or without its last term (``complement="zero"``: Schioppa et al.'s
projection onto the top eigenspace). The iteration stops early when the
Krylov subspace is invariant (:math:`\bar H` of rank below ``m``); with
``complement="damping"`` the result is then exact for a Hessian of rank at
most ``rank``, and with ``rank = m = p`` it is the exact solve.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .._validation import check_choice, check_float, check_int
from ..estimators import progress_bar

__all__ = ["LissaSettings", "ArnoldiSettings", "check_lissa", "check_arnoldi", "lissa_solve", "arnoldi_solve"]

_OWNER = "torch_influence"
COMPLEMENTS = ("damping", "zero")
POWER_ITERATIONS = 20  # products for LiSSA's default scale
#: LiSSA's default scale over the power iteration's estimate of the largest eigenvalue of the damped Hessian;
#: the recursion stays stable while each step's Hessian has eigenvalues below twice the scale.
LISSA_SCALE_MARGIN = 1.5
BREAKDOWN = 1e-12  # Arnoldi stops once a new direction's norm is below this times the largest product's norm
Tensor = Any  # a torch.Tensor
Product = Callable[[Tensor], Tensor]  # v -> mean Hessian times v
RowsProduct = Callable[[Tensor, Tensor], Tensor]  # (row indices, v) -> mean Hessian of those rows times v


@dataclass(frozen=True)
class LissaSettings:
    """LiSSA's checked options: recursion ``depth``, ``scale`` (``None``: estimated), ``repetitions``,
    ``batch_size`` (``None``: every training row at every step, a deterministic series)."""

    depth: int
    scale: float | None
    repetitions: int
    batch_size: int | None


@dataclass(frozen=True)
class ArnoldiSettings:
    """Arnoldi's checked options: the ``rank`` kept, the Krylov ``iterations`` (``None``: chosen from the rank
    and the number of parameters) and what acts off the top eigenspace (``complement``)."""

    rank: int
    iterations: int | None
    complement: str


def check_lissa(depth: Any, scale: Any, repetitions: Any, batch_size: Any, n_rows: int) -> LissaSettings:
    """LiSSA's options checked (TypeError / ValueError naming each) against ``n_rows`` training rows."""
    depth = check_int(depth, "lissa_depth", minimum=1)
    scale = None if scale is None else check_float(scale, "lissa_scale", minimum=0.0, strict=True)
    repetitions = check_int(repetitions, "lissa_repetitions", minimum=1)
    if batch_size is not None:
        batch_size = check_int(batch_size, "lissa_batch_size", minimum=1)
        if batch_size > n_rows:
            raise ValueError(f"lissa_batch_size must be at most the game's {n_rows} training points, got "
                             f"{batch_size}.")
    elif repetitions > 1:
        raise ValueError(f"lissa_repetitions={repetitions} repeats a deterministic recursion: without "
                         f"lissa_batch_size every step uses all training points. Pass lissa_batch_size, or "
                         f"lissa_repetitions=1.")
    return LissaSettings(depth, scale, repetitions, batch_size)


def check_arnoldi(rank: Any, iterations: Any, complement: Any, n_parameters: int | None,
                  shift: float) -> ArnoldiSettings:
    """Arnoldi's options checked; against the ``n_parameters`` trained parameters and the diagonal shift
    (weight decay plus damping) only when Arnoldi is the method (``n_parameters`` given)."""
    rank = check_int(rank, "arnoldi_rank", minimum=1)
    iterations = None if iterations is None else check_int(iterations, "arnoldi_iterations", minimum=1)
    complement = check_choice(complement, "arnoldi_complement", COMPLEMENTS)
    if iterations is not None and iterations < rank:
        raise ValueError(f"arnoldi_iterations must be at least arnoldi_rank={rank} (the Krylov subspace holds "
                         f"the eigenvectors kept), got {iterations}.")
    if n_parameters is not None:
        if rank > n_parameters or (iterations or 0) > n_parameters:
            name, value = ("arnoldi_rank", rank) if rank > n_parameters else ("arnoldi_iterations", iterations)
            raise ValueError(f"{name} must be at most the model's {n_parameters} trained parameters, got {value}.")
        if complement == "damping" and shift == 0.0:
            raise ValueError("arnoldi_complement='damping' divides the part of the gradient outside the top "
                             "eigenspace by weight decay + damping, which is 0 here: pass damping > 0, or "
                             "arnoldi_complement='zero' (the projection onto the top eigenspace).")
    return ArnoldiSettings(rank, iterations, complement)


def default_iterations(rank: int, n_parameters: int) -> int:
    """Arnoldi's Krylov dimension unless given: twice the rank plus 20 (the top Ritz pairs converge first),
    at most the number of parameters."""
    return min(n_parameters, 2 * rank + 20)


def relative_residual(product: Product, solution: Tensor, g: Tensor, shift: float) -> float:
    """:math:`\\lVert (\\bar H + \\mu I) s - g \\rVert / \\lVert g \\rVert` (one more product; 0 if ``g`` is 0)."""
    import torch

    norm = float(torch.linalg.vector_norm(g))
    if norm == 0.0:
        return 0.0
    return float(torch.linalg.vector_norm(product(solution) + shift * solution - g)) / norm


def _random_unit_vector(rng: np.random.Generator, like: Tensor) -> Tensor:
    """A standard normal direction from ``rng`` (numpy: the same numbers on every device), normalised."""
    import torch

    vector = torch.as_tensor(rng.standard_normal(like.numel()), dtype=like.dtype, device=like.device)
    return vector / torch.linalg.vector_norm(vector)


# --------------------------------------------------------------------------------------------
# LiSSA
# --------------------------------------------------------------------------------------------

def estimated_scale(product: Product, shift: float, rng: np.random.Generator, like: Tensor) -> float:
    """LiSSA's default :math:`\\sigma`: :data:`LISSA_SCALE_MARGIN` times the Rayleigh quotient of the damped
    Hessian after :data:`POWER_ITERATIONS` power iterations from a random direction."""
    import torch

    vector = _random_unit_vector(rng, like)
    rayleigh = 0.0
    for _ in range(POWER_ITERATIONS):
        image = product(vector) + shift * vector
        rayleigh = float(vector @ image)
        norm = torch.linalg.vector_norm(image)
        if float(norm) == 0.0:
            break
        vector = image / norm
    if not rayleigh > 0.0:
        raise ValueError(f"{_OWNER}: the damped Hessian's dominant eigenvalue is not positive (power iteration: "
                         f"{rayleigh:.3g}); LiSSA's series needs it positive definite. Increase damping, or use "
                         f"method='direct'.")
    return LISSA_SCALE_MARGIN * rayleigh


def _lissa_recursion(product: Product, rows_product: RowsProduct, g: Tensor, shift: float, scale: float,
                     settings: LissaSettings, rng: np.random.Generator, n_rows: int, bar: Any) -> Tensor:
    """One run of :math:`h_{t+1} = g + (1 - \\mu/\\sigma) h_t - \\bar H_{B_t} h_t / \\sigma` from
    :math:`h_0 = g`, ``depth`` steps; returns :math:`h_T`."""
    import torch

    estimate = g.clone()
    keep = 1.0 - shift / scale
    for _ in range(settings.depth):
        if settings.batch_size is None:
            image = product(estimate)
        else:
            rows = torch.as_tensor(rng.choice(n_rows, size=settings.batch_size, replace=False), device=g.device)
            image = rows_product(rows, estimate)
        estimate = g + keep * estimate - image / scale
        bar.update(1)
    return estimate


def lissa_solve(product: Product, rows_product: RowsProduct, g: Tensor, shift: float, settings: LissaSettings,
                rng: np.random.Generator, n_rows: int, progress: bool | None, info: dict[str, Any]) -> Tensor:
    """:math:`(\\bar H + \\mu I)^{-1} g` by LiSSA (module docstring), averaged over ``repetitions`` runs.

    Raises ValueError when the series diverged to non-finite values, and warns
    when the estimate's relative residual is at least 1 (that of :math:`s = 0`:
    the damped Hessian is indefinite, or the scale below half its largest
    eigenvalue).
    """
    import torch

    scale = settings.scale if settings.scale is not None else estimated_scale(product, shift, rng, g)
    total = torch.zeros_like(g)
    steps = settings.depth * settings.repetitions
    with progress_bar(progress, total=steps, desc=f"{_OWNER}: LiSSA", unit="step") as bar:
        for _ in range(settings.repetitions):
            total += _lissa_recursion(product, rows_product, g, shift, scale, settings, rng, n_rows, bar)
    solution = total / (settings.repetitions * scale)
    if not bool(torch.isfinite(solution).all()):
        raise ValueError(f"{_OWNER}: LiSSA's series diverged (lissa_scale={scale:.3g}): the damped Hessian is not "
                         f"positive definite, or the scale is below half its largest eigenvalue. Increase damping "
                         f"or lissa_scale.")
    residual = relative_residual(product, solution, g, shift)
    if residual >= 1.0:
        warnings.warn(f"{_OWNER}: LiSSA's estimate has relative residual {residual:.3g} >= 1 (worse than 0): the "
                      f"series diverges (an indefinite damped Hessian, or lissa_scale={scale:.3g} below half its "
                      f"largest eigenvalue). Increase damping or lissa_scale.", RuntimeWarning, stacklevel=4)
    info.update(solver="lissa", lissa_scale=scale, lissa_depth=settings.depth,
                lissa_repetitions=settings.repetitions, lissa_batch_size=settings.batch_size or n_rows,
                lissa_relative_residual=residual)
    return solution


# --------------------------------------------------------------------------------------------
# Arnoldi
# --------------------------------------------------------------------------------------------

def top_eigenpairs(product: Product, rank: int, iterations: int, rng: np.random.Generator, like: Tensor,
                   bar: Any) -> tuple[Tensor, Tensor, int]:
    """The ``rank`` Ritz pairs of largest magnitude of ``iterations`` Arnoldi steps (module docstring).

    Returns
    -------
    eigenvalues : Tensor of shape (k,)
        In decreasing magnitude, ``k = min(rank, steps)``.
    vectors : Tensor of shape (k, p)
        Orthonormal rows, the matching Ritz vectors.
    steps : int
        Arnoldi steps taken (fewer than ``iterations`` once the Krylov subspace is invariant).
    """
    import torch

    p = like.numel()
    basis = torch.zeros((iterations + 1, p), dtype=like.dtype, device=like.device)
    hessenberg = torch.zeros((iterations + 1, iterations), dtype=like.dtype, device=like.device)
    basis[0] = _random_unit_vector(rng, like)
    largest = 0.0
    steps = iterations
    for j in range(iterations):
        image = product(basis[j])
        largest = max(largest, float(torch.linalg.vector_norm(image)))
        earlier = basis[:j + 1]
        for _ in range(2):  # classical Gram-Schmidt, twice: orthogonal to rounding
            coefficients = earlier @ image
            image = image - coefficients @ earlier
            hessenberg[:j + 1, j] += coefficients
        bar.update(1)
        norm = float(torch.linalg.vector_norm(image))
        if norm <= BREAKDOWN * largest:  # the Krylov subspace is invariant: its Ritz pairs are eigenpairs
            steps = j + 1
            break
        hessenberg[j + 1, j] = norm
        basis[j + 1] = image / norm
    square = hessenberg[:steps, :steps]
    eigenvalues, eigenvectors = torch.linalg.eigh((square + square.T) / 2)
    order = torch.argsort(eigenvalues.abs(), descending=True, stable=True)[:rank]
    return eigenvalues[order], eigenvectors[:, order].T @ basis[:steps], steps


def arnoldi_solve(product: Product, g: Tensor, shift: float, settings: ArnoldiSettings, rng: np.random.Generator,
                  progress: bool | None, info: dict[str, Any]) -> Tensor:
    """:math:`(U \\Lambda U^\\top + \\mu I)^{-1} g` from the top Ritz pairs of :math:`\\bar H` (module
    docstring), or its projection onto their span (``complement="zero"``).

    Warns when a kept eigenvalue plus the shift is not positive (an indefinite
    approximation: its inverse is still applied, as ``"direct"``'s LU does),
    and raises ValueError where one is exactly 0.
    """

    iterations = settings.iterations or default_iterations(settings.rank, g.numel())
    with progress_bar(progress, total=iterations, desc=f"{_OWNER}: Arnoldi", unit="iteration") as bar:
        eigenvalues, vectors, steps = top_eigenpairs(product, settings.rank, iterations, rng, g, bar)
    shifted = eigenvalues + shift
    if bool((shifted == 0).any()):
        raise ValueError(f"{_OWNER}: a kept Hessian eigenvalue is -(weight decay + damping) = {-shift:.3g}: the "
                         f"low-rank approximation is singular. Change damping.")
    if bool((shifted < 0).any()):
        smallest = float(shifted.min())
        warnings.warn(f"{_OWNER}: the damped low-rank Hessian is not positive definite (smallest kept eigenvalue "
                      f"{smallest:.3g}): the model is not at a minimum of its objective. A larger damping "
                      f"(> {-smallest:.3g} more) makes it positive definite.", RuntimeWarning, stacklevel=4)
    coefficients = vectors @ g
    solution = (coefficients / shifted) @ vectors
    if settings.complement == "damping":
        solution = solution + (g - coefficients @ vectors) / shift
    info.update(solver="arnoldi", arnoldi_rank=int(eigenvalues.numel()), arnoldi_iterations=steps,
                arnoldi_complement=settings.complement, arnoldi_eigenvalues=eigenvalues.cpu().numpy(),
                arnoldi_relative_residual=relative_residual(product, solution, g, shift))
    return solution
