r"""Influence values of a torch model (Koh & Liang, ICML 2017): :func:`torch_influence`.

The model of a :class:`~shapley_research.TorchModelUtility` is trained once on
all ``N`` points with the game's own recipe, giving :math:`\hat\theta`. Its
training objective is

.. math:: F(\theta) = \frac1N \sum_{j=1}^N \ell_j(\theta) + \frac{\lambda}{2}\lVert\theta\rVert^2,

:math:`\ell_j` the cross-entropy (or squared error) of point ``j`` and
:math:`\lambda` the recipe's weight decay. Up-weighting point ``i`` by
:math:`\varepsilon` moves the minimiser by
:math:`d\hat\theta/d\varepsilon = -H^{-1} g_i`, with :math:`g_i = \nabla\ell_i(\hat\theta)`
and the damped Hessian

.. math:: H = \frac1N \sum_{j=1}^N \nabla^2 \ell_j(\hat\theta) + (\lambda + \delta) I,

so the mean test loss :math:`L_{\text{test}}` changes at the rate
:math:`\mathcal I_i = -g_{\text{test}}^\top H^{-1} g_i` (Koh & Liang's
:math:`\mathcal I_{\text{up,loss}}`, :math:`g_{\text{test}} = \nabla L_{\text{test}}(\hat\theta)`).
The value of point ``i`` is :math:`v_i = -\mathcal I_i = g_i^\top s_{\text{test}}`,
:math:`s_{\text{test}} = H^{-1} g_{\text{test}}`: positive when up-weighting
the point lowers the test loss (it helps). One linear solve serves all
``N`` points; the ``N`` products :math:`g_i^\top s` are one forward-mode
derivative of the per-sample losses in the direction :math:`s` (no
``(N, p)`` gradient matrix is formed).

Solvers: ``"direct"`` builds :math:`H` from Hessian-vector products against
blocks of the identity (forward-over-reverse, ``torch.func.jvp`` of
``torch.func.grad``, batched by ``torch.func.vmap``) and solves by Cholesky
(LU where :math:`H` is indefinite, with a warning); ``"cg"`` runs conjugate
gradients on Hessian-vector products, never forming :math:`H`;
``"lissa"`` (a stochastic Neumann series) and ``"arnoldi"`` (a low-rank
eigendecomposition of :math:`H`) approximate the solve from Hessian-vector
products too (``_hessian_solvers.py``, with the maths).
Everything is computed in float64 on the game's device, on one torch
thread on the CPU, so a call repeats bit for bit.
"""

from __future__ import annotations

import copy
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

import numpy as np

from .._device import available_bytes, import_torch, released
from ..estimators import progress_bar
from .._validation import check_choice, check_float, check_int, check_progress, check_seed
from ..result import ValuationResult
from ..utilities import TorchModelUtility
from ._hessian_solvers import (ArnoldiSettings, LissaSettings, arnoldi_solve, check_arnoldi, check_lissa,
                               lissa_solve)

if TYPE_CHECKING:
    import torch

__all__ = ["torch_influence"]

_OWNER = "torch_influence"
METHODS = ("auto", "direct", "cg", "lissa", "arnoldi")
#: Most trained parameters ``method="direct"`` accepts: its float64 Hessian then takes 128 MiB and its
#: factorisation a few seconds on one core; beyond it use ``method="cg"``.
MAX_DIRECT_PARAMETERS = 4096
MAX_HESSIAN_BLOCK = 256  # identity columns per batched Hessian-vector product ("direct")
Tensor = Any  # a torch.Tensor; torch is imported inside the functions only


@dataclass
class _Problem:
    """The float64 losses of the game's model around :math:`\\hat\\theta` (flat parameters)."""

    theta: Tensor  # (p,) float64, the trained parameters, flattened in the game's parameter order
    train_losses: Callable[[Tensor], Tensor]  # flat parameters -> (N,) per-sample training losses
    row_losses: Callable[[Tensor, Tensor], Tensor]  # (flat parameters, row indices) -> those rows' losses
    test_loss: Callable[[Tensor], Tensor]  # flat parameters -> mean test loss (a scalar)
    n_rows: int  # N
    activations: int  # numbers the model computes per row (for the Hessian's block size)


def torch_influence(game: TorchModelUtility, *, method: Literal["auto", "direct", "cg", "lissa", "arnoldi"] = "auto",
                    damping: float = 0.1, trained_model: torch.nn.Module | None = None, tol: float = 1e-10,
                    max_iterations: int | None = None, seed: int | np.random.SeedSequence | None = None,
                    lissa_depth: int = 1000, lissa_scale: float | None = None, lissa_repetitions: int = 1,
                    lissa_batch_size: int | None = None, arnoldi_rank: int = 10, arnoldi_iterations: int | None = None,
                    arnoldi_complement: Literal["damping", "zero"] = "damping",
                    progress: bool | None = False) -> ValuationResult:
    r"""Koh & Liang influence values of every training point of a torch game's model.

    Trains the game's model on the whole training set with the game's recipe
    (optimiser, steps, weight decay, seed: the model :math:`U(D)` scores), then
    values point ``i`` by how much up-weighting it lowers the mean test loss
    (module docstring):

    .. math:: v_i = \nabla\ell_i(\hat\theta)^\top H^{-1} \nabla L_{\text{test}}(\hat\theta),
              \qquad H = \frac1N\sum_j \nabla^2\ell_j(\hat\theta) + (\lambda + \delta) I.

    The test loss is the training loss (cross-entropy, or squared error for a
    regression metric) on the game's test rows, whatever the game's metric:
    accuracy has no useful gradient. Test rows whose label is not a training
    class are left out.

    **Leave-one-out.** Removing point ``i`` from the mean of the objective is,
    to first order, up-weighting :math:`\ell_i + \tfrac{\lambda}{2}\lVert\theta\rVert^2`
    by :math:`-1/N` (the regulariser's weight relative to the data changes
    too), so for the utility :math:`U = -L_{\text{test}}`

    .. math:: U(D) - U(D\setminus\{i\}) \approx \frac{v_i + c}{N},
              \qquad c = \lambda\, \hat\theta^\top H^{-1} \nabla L_{\text{test}}(\hat\theta),

    the same constant for every point (``info["loo_estimates"]``); at an
    exact minimiser :math:`c = -\operatorname{mean}_j v_j`. Rankings are those
    of :math:`v`. The approximation is exact to first order for a strongly
    convex objective trained to its minimum; for a neural network :math:`H`
    may be indefinite (a saddle, or training stopped early) and
    :math:`\hat\theta` is not a minimiser, so the damping :math:`\delta`
    keeps the solve well posed and the values are a heuristic (Koh & Liang
    damp too; Basu et al. 2021 show how fragile deep-network influence is).

    Parameters
    ----------
    game : TorchModelUtility
        Its module, data, loss and training recipe.
    method : {"auto", "direct", "cg", "lissa", "arnoldi"}, default "auto"
        ``"direct"``: the explicit :math:`p \times p` Hessian and a Cholesky
        solve (at most :data:`MAX_DIRECT_PARAMETERS` trained parameters);
        ``"cg"``: conjugate gradients on Hessian-vector products (memory of a
        few parameter vectors; needs :math:`H` positive definite);
        ``"lissa"``: the Neumann series :math:`h_{t+1} = g_{\text{test}} + (I - H/\sigma) h_t`,
        :math:`s \approx h_T/\sigma` (Agarwal et al. 2017, as Koh & Liang
        use it), on all rows or seeded minibatches (needs :math:`H` positive
        definite); ``"arnoldi"``: the top ``arnoldi_rank`` eigenpairs
        :math:`(\lambda_j, u_j)` of the mean Hessian from Arnoldi iterations
        (Schioppa et al. 2022), :math:`s = \sum_j u_j u_j^\top g_{\text{test}} / (\lambda_j + \lambda + \delta)`
        plus the rest of :math:`g_{\text{test}}` over :math:`\lambda + \delta`
        (``arnoldi_complement``); ``influence/_hessian_solvers.py`` has the maths.
        ``"auto"``: ``"direct"`` up to that many parameters, else ``"cg"``.
    damping : float, default 0.1
        :math:`\delta \ge 0`, added to the Hessian's diagonal on top of the
        recipe's weight decay. Koh & Liang used 0.01; on mlp_cleaning's MLP
        (100 Adam steps) the Hessian's smallest eigenvalue was -0.013 to -0.033,
        so 0.01 left it indefinite on every seed of
        ``benchmarks/torch_influence.py`` (an LU solve with a warning, and
        ``"cg"`` refused) while 0.1 made it positive definite there.
    trained_model : torch.nn.Module, optional
        Parameters to use as :math:`\hat\theta` instead of training (a model
        of the game's architecture trained elsewhere): every trained parameter
        of the game's module, by name and shape.
    tol : float, default 1e-10
        ``"cg"``: stop once :math:`\lVert H s - g_{\text{test}}\rVert \le`
        ``tol`` :math:`\lVert g_{\text{test}}\rVert`.
    max_iterations : int, optional
        ``"cg"``: most iterations; default ``10 p``.
    seed : int, numpy SeedSequence or None, default None
        ``"lissa"``'s minibatches and power-iteration start, ``"arnoldi"``'s
        start vector (a numpy generator: the same draws on every device);
        ``None`` draws fresh entropy, stored as the result's ``seed``.
        ``"direct"`` and ``"cg"`` draw nothing.
    lissa_depth : int, default 1000
        Steps :math:`T` of each recursion (one Hessian-vector product each).
        With all rows the error shrinks like :math:`(1 - \mu_{\min}/\sigma)^T`,
        :math:`\mu_{\min}` the smallest eigenvalue of :math:`H`.
    lissa_scale : float, optional
        :math:`\sigma > 0`; the series converges for :math:`\sigma` above
        half the largest eigenvalue of :math:`H`. Default: 1.5 times that
        eigenvalue, estimated by 20 power iterations.
    lissa_repetitions : int, default 1
        Independent recursions averaged (with ``lissa_batch_size`` only: on
        all rows the recursion is deterministic).
    lissa_batch_size : int, optional
        Rows of each step's Hessian-vector product, drawn without replacement
        from ``seed``'s generator; default all ``N`` (the deterministic series).
    arnoldi_rank : int, default 10
        Eigenpairs kept (at most the number of trained parameters).
    arnoldi_iterations : int, optional
        Arnoldi steps (Hessian-vector products), the Krylov subspace's
        dimension, at least ``arnoldi_rank``; default
        ``min(p, 2 arnoldi_rank + 20)``. Fewer are taken once the subspace is
        invariant. Memory: that many parameter vectors (the Krylov basis).
    arnoldi_complement : {"damping", "zero"}, default "damping"
        What acts on the part of :math:`g_{\text{test}}` outside the top
        eigenspace: the damping alone (divided by :math:`\lambda + \delta`:
        the exact inverse of the rank-k approximation plus the damping, exact
        when the mean Hessian has rank at most ``arnoldi_rank``), or nothing
        (``"zero"``: Schioppa et al.'s projection).
    progress : bool or None, default False
        A bar over the Hessian's column blocks or the CG iterations, the
        package's (``None``: in terminals and notebooks, and in logs once the
        solve has lasted 30 s).

    Returns
    -------
    ValuationResult
        ``method="torch_influence[direct]"`` (or ``[cg]``, ``[lissa]``,
        ``[arnoldi]``), ``n_evaluations`` 1 (the model trained; 0 with
        ``trained_model``), no ``stderr``, ``seed`` for ``"lissa"`` and
        ``"arnoldi"`` (else None). ``info``: ``loo_estimates``, ``loo_constant`` (:math:`c`),
        ``s_test`` (:math:`H^{-1} g_{\text{test}}`), ``theta`` (:math:`\hat\theta`
        flattened in the module's parameter order), ``n_parameters``, ``damping``,
        ``weight_decay``, ``solver`` (``"cholesky"``, ``"lu"``, ``"cg"``,
        ``"lissa"`` or ``"arnoldi"``), ``cg_iterations`` and
        ``cg_relative_residual`` (CG); ``lissa_scale`` (:math:`\sigma` used),
        ``lissa_depth``, ``lissa_repetitions``, ``lissa_batch_size`` and
        ``lissa_relative_residual`` (LiSSA); ``arnoldi_rank`` (pairs kept),
        ``arnoldi_iterations`` (steps taken), ``arnoldi_complement``,
        ``arnoldi_eigenvalues`` (of the mean Hessian, without
        :math:`\lambda + \delta`) and ``arnoldi_relative_residual`` (Arnoldi;
        relative residuals :math:`\lVert H s - g_{\text{test}}\rVert / \lVert g_{\text{test}}\rVert`);
        ``test_loss``, ``gradient_norm`` (of :math:`F` at :math:`\hat\theta`:
        how far training stopped from a stationary point).

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> from sklearn.datasets import load_iris
    >>> from shapley_research import TorchModelUtility, torch_influence
    >>> X, y = load_iris(return_X_y=True)
    >>> _ = torch.manual_seed(0)
    >>> mlp = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    >>> game = TorchModelUtility(mlp, X[::3], y[::3], X[1::3], y[1::3], steps=300, learning_rate=0.05,
    ...                          weight_decay=0.05, dtype="float64")
    >>> result = torch_influence(game)
    >>> result.values.shape, result.method
    ((50,), 'torch_influence[direct]')
    """
    start = time.perf_counter()
    solver, damping, tol, max_iterations, progress = _check_arguments(
        game, method, damping, tol, max_iterations, progress, trained_model)
    seed, lissa, arnoldi = _check_approximations(
        game, solver, damping, seed, dict(depth=lissa_depth, scale=lissa_scale, repetitions=lissa_repetitions,
                                          batch_size=lissa_batch_size),
        dict(rank=arnoldi_rank, iterations=arnoldi_iterations, complement=arnoldi_complement))
    torch = import_torch(_OWNER)
    with game._pinned_threads(), released(game.device):  # one torch thread on the CPU, as the game trains
        problem = _problem(game, trained_model)
        decay = game.weight_decay
        shift = decay + damping
        g_test = torch.func.grad(problem.test_loss)(problem.theta)
        objective_gradient = _mean_train_gradient(problem)(problem.theta) + decay * problem.theta
        info: dict[str, Any] = {}
        if solver == "direct":
            s_test = _direct_solve(problem, g_test, shift, progress, info)
        elif solver == "cg":
            s_test = _cg_solve(problem, g_test, shift, tol, max_iterations, progress, info)
        else:
            s_test = _approximate_solve(problem, solver, g_test, shift, lissa, arnoldi, seed, progress, info)
        values = _directional_losses(problem, s_test)
        constant = decay * float(problem.theta @ s_test)
        info.update(test_loss=float(problem.test_loss(problem.theta)),
                    gradient_norm=float(torch.linalg.vector_norm(objective_gradient)))
    info.update(loo_estimates=(values + constant) / problem.n_rows, s_test=s_test.cpu().numpy(),
                theta=problem.theta.cpu().numpy(),
                n_parameters=int(problem.theta.numel()), damping=damping, weight_decay=decay,
                loo_constant=constant)
    return ValuationResult(values=values, n_evaluations=0 if trained_model is not None else 1,
                           method=f"torch_influence[{solver}]", seed=seed, wall_time=time.perf_counter() - start,
                           info=info)


# --------------------------------------------------------------------------------------------
# Arguments, before any training
# --------------------------------------------------------------------------------------------

def _check_arguments(game: Any, method: Any, damping: Any, tol: Any, max_iterations: Any, progress: Any,
                     trained_model: Any) -> tuple[str, float, float, int | None, bool | None]:
    """Every argument checked (TypeError / ValueError naming it) before anything is trained."""
    if not isinstance(game, TorchModelUtility):
        raise TypeError(f"{_OWNER}: game must be a TorchModelUtility (its module, data and training recipe), "
                        f"got {type(game).__name__}.")
    method = check_choice(method, "method", METHODS)
    damping = check_float(damping, "damping", minimum=0.0)
    tol = check_float(tol, "tol", minimum=0.0, strict=True)
    max_iterations = None if max_iterations is None else check_int(max_iterations, "max_iterations", minimum=1)
    progress = check_progress(progress)
    n_parameters = sum(int(value.numel()) for value in game._initial.values())
    if method == "auto":
        method = "direct" if n_parameters <= MAX_DIRECT_PARAMETERS else "cg"
    if method == "direct" and n_parameters > MAX_DIRECT_PARAMETERS:
        raise ValueError(f"{_OWNER}: method='direct' forms the {n_parameters} x {n_parameters} Hessian; it takes "
                         f"at most {MAX_DIRECT_PARAMETERS} trained parameters. Use method='cg' (Hessian-vector "
                         f"products only).")
    if game.weight_decay + damping == 0.0 and method == "cg":
        warnings.warn(f"{_OWNER}: no weight decay and damping=0: conjugate gradients need a positive definite "
                      f"Hessian, which an over-parameterised model does not have; consider damping > 0.",
                      RuntimeWarning, stacklevel=3)
    if trained_model is not None:
        _check_trained_model(game, trained_model)
    if game.task == "classification" and not (game.targets.y_test_index >= 0).any():
        raise ValueError(f"{_OWNER}: no test label of the game is a training class: the test loss is undefined.")
    return method, damping, tol, max_iterations, progress


def _check_approximations(game: Any, solver: str, damping: float, seed: Any, lissa: dict[str, Any],
                          arnoldi: dict[str, Any]) -> tuple[int | None, LissaSettings, ArnoldiSettings]:
    """The seed (``None`` unless ``solver`` draws) and LiSSA's and Arnoldi's options, checked whatever the
    method; their bounds that depend on the model only for the method that uses them."""
    lissa_settings = check_lissa(lissa["depth"], lissa["scale"], lissa["repetitions"], lissa["batch_size"],
                                 game.n_players)
    n_parameters = sum(int(value.numel()) for value in game._initial.values())
    shift = game.weight_decay + damping
    arnoldi_settings = check_arnoldi(arnoldi["rank"], arnoldi["iterations"], arnoldi["complement"],
                                     n_parameters if solver == "arnoldi" else None, shift)
    if solver == "lissa" and shift == 0.0:
        warnings.warn(f"{_OWNER}: no weight decay and damping=0: LiSSA's series needs a positive definite "
                      f"Hessian, which an over-parameterised model does not have; consider damping > 0.",
                      RuntimeWarning, stacklevel=3)
    drawn = check_seed(seed) if seed is not None or solver in ("lissa", "arnoldi") else None
    return (drawn if solver in ("lissa", "arnoldi") else None), lissa_settings, arnoldi_settings


def _check_trained_model(game: Any, trained_model: Any) -> None:
    torch = import_torch(_OWNER)
    if not isinstance(trained_model, torch.nn.Module):
        raise TypeError(f"{_OWNER}: trained_model must be a torch.nn.Module, got {type(trained_model).__name__}.")
    given = dict(trained_model.named_parameters())
    for name, value in game._initial.items():
        if name not in given or tuple(given[name].shape) != tuple(value.shape):
            found = "missing" if name not in given else f"of shape {tuple(given[name].shape)}"
            raise ValueError(f"{_OWNER}: trained_model must have the game module's parameter {name!r} of shape "
                             f"{tuple(value.shape)}; it is {found}.")
        if not torch.isfinite(given[name].detach()).all():
            raise ValueError(f"{_OWNER}: trained_model's parameter {name!r} has NaN or infinite values.")


# --------------------------------------------------------------------------------------------
# The losses around the trained parameters, in float64
# --------------------------------------------------------------------------------------------

def _trained_parameters(game: Any, trained_model: Any) -> dict[str, Tensor]:
    """:math:`\\hat\\theta` by name: the game's recipe on all ``N`` points, or ``trained_model``'s parameters."""
    if trained_model is not None:
        given = dict(trained_model.named_parameters())
        return {name: given[name].detach().to(game.device) for name in game._initial}
    everyone = np.ones((1, game.n_players), dtype=bool)
    stacked = game._trained_parameters(everyone)  # the model U(D) scores (one chunk of one coalition)
    return {name: value[0] for name, value in stacked.items()}


def _problem(game: Any, trained_model: Any) -> _Problem:
    """The game's module in float64 as functions of the flat parameters: per-sample and test losses."""
    torch = import_torch(_OWNER)
    from torch.func import functional_call

    float64 = torch.float64
    names = list(game._initial)
    shapes = [tuple(game._initial[name].shape) for name in names]
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
    trained = _trained_parameters(game, trained_model)
    theta = torch.cat([trained[name].detach().to(float64).reshape(-1) for name in names])
    module = copy.deepcopy(game._template).to(float64)
    constants = {name: value.to(float64) if value.is_floating_point() else value
                 for name, value in game._constants.items()}
    classification = game.task == "classification"

    def losses(flat: Tensor, X: Tensor, y: Tensor) -> Tensor:
        params = {name: part.view(shape) for name, part, shape in zip(names, torch.split(flat, sizes), shapes)}
        outputs = functional_call(module, (params, constants), (X,))
        if classification:
            return torch.nn.functional.cross_entropy(outputs, y, reduction="none")
        return (outputs.reshape(-1) - y) ** 2

    X_train, y_train = game._X_train.to(float64), game._y_train
    if classification:
        seen = torch.as_tensor(game.targets.y_test_index >= 0, device=game.device)
        X_test = game._X_test.to(float64)[seen]
        y_test = torch.as_tensor(game.targets.y_test_index, device=game.device)[seen]
    else:
        y_train = y_train.to(float64)
        X_test = game._X_test.to(float64)
        y_test = torch.as_tensor(game.targets.y_test, dtype=float64, device=game.device)
    return _Problem(theta=theta, train_losses=lambda flat: losses(flat, X_train, y_train),
                    row_losses=lambda flat, rows: losses(flat, X_train[rows], y_train[rows]),
                    test_loss=lambda flat: losses(flat, X_test, y_test).mean(), n_rows=game.n_players,
                    activations=int(getattr(game, "_activations", 1)))


def _mean_train_gradient(problem: _Problem) -> Callable[[Tensor], Tensor]:
    """``theta -> (1/N) sum_j grad l_j(theta)``, the gradient of the mean training loss."""
    import torch

    return torch.func.grad(lambda flat: problem.train_losses(flat).mean())


def _hessian_vector_product(problem: _Problem) -> Callable[[Tensor], Tensor]:
    """``v -> (1/N) sum_j Hess l_j(theta) v``: forward-mode derivative of the mean gradient along ``v``."""
    import torch

    gradient = _mean_train_gradient(problem)

    def product(vector: Tensor) -> Tensor:
        return torch.func.jvp(gradient, (problem.theta,), (vector,))[1]

    return product


def _directional_losses(problem: _Problem, direction: Tensor) -> np.ndarray:
    """:math:`g_i^\\top` ``direction`` for every training point: one jvp of the per-sample losses."""
    import torch

    _, derivatives = torch.func.jvp(problem.train_losses, (problem.theta,), (direction,))
    return derivatives.detach().cpu().numpy().astype(np.float64)


# --------------------------------------------------------------------------------------------
# The solves: H s = g_test
# --------------------------------------------------------------------------------------------

def _hessian_block_size(problem: _Problem, device: Any) -> int:
    """Identity columns per batched Hessian-vector product: its activations (forward, tangents, backward) fit
    the device's working memory (:func:`~.._device.available_bytes`), at most :data:`MAX_HESSIAN_BLOCK`."""
    per_column = 8 * (6 * problem.n_rows * problem.activations + 4 * int(problem.theta.numel()))
    return int(max(1, min(MAX_HESSIAN_BLOCK, available_bytes(device) // per_column)))


def _dense_hessian(problem: _Problem, progress: bool | None) -> Tensor:
    """:math:`\\frac1N\\sum_j \\nabla^2\\ell_j(\\hat\\theta)`, column block by column block, symmetrised."""
    import torch

    theta = problem.theta
    p = theta.numel()
    block = _hessian_block_size(problem, theta.device)
    batched = torch.func.vmap(_hessian_vector_product(problem))
    hessian = torch.empty((p, p), dtype=theta.dtype, device=theta.device)
    eye = torch.eye(p, dtype=theta.dtype, device=theta.device)
    with progress_bar(progress, total=p, desc=f"{_OWNER}: Hessian", unit="column") as bar:
        for first in range(0, p, block):
            stop = min(p, first + block)
            hessian[first:stop] = batched(eye[first:stop])  # rows = columns: the Hessian is symmetric
            bar.update(stop - first)
    return (hessian + hessian.T) / 2


def _direct_solve(problem: _Problem, g_test: Tensor, shift: float, progress: bool | None,
                  info: dict[str, Any]) -> Tensor:
    """:math:`H^{-1} g_{\\text{test}}` with the explicit Hessian: Cholesky, or LU (with a warning) if indefinite."""
    import torch

    hessian = _dense_hessian(problem, progress)
    hessian.diagonal().add_(shift)
    factor, failed = torch.linalg.cholesky_ex(hessian)
    if int(failed) == 0:
        info["solver"] = "cholesky"
        return torch.cholesky_solve(g_test.unsqueeze(1), factor).squeeze(1)
    smallest = float(torch.linalg.eigvalsh(hessian)[0])
    warnings.warn(f"{_OWNER}: the damped Hessian is not positive definite (smallest eigenvalue {smallest:.3g}): "
                  f"the model is not at a minimum of its objective; values use an LU solve. A larger damping "
                  f"(> {-smallest:.3g} more) makes H positive definite.", RuntimeWarning, stacklevel=3)
    info.update(solver="lu", hessian_min_eigenvalue=smallest)
    return torch.linalg.solve(hessian, g_test)


def _retained_hessian_vector_product(problem: _Problem) -> Callable[[Tensor], Tensor]:
    """``v -> (1/N) sum_j Hess l_j(theta) v`` by double backward through the mean gradient's graph, built once.

    LiSSA and Arnoldi make hundreds of products in sequence: reverse-over-reverse
    on a retained graph costs a fraction of a forward-over-reverse ``jvp``'s
    transforms per call (0.3-1.2 ms against 5-7 ms on the test and benchmark
    models); the two agree to rounding (1e-16).
    """
    import torch

    theta = problem.theta.detach().requires_grad_(True)
    with torch.enable_grad():
        gradient = torch.autograd.grad(problem.train_losses(theta).mean(), theta, create_graph=True)[0]

    def product(vector: Tensor) -> Tensor:
        if not gradient.requires_grad:  # a loss linear in theta: no curvature
            return torch.zeros_like(vector)
        with torch.enable_grad():
            return torch.autograd.grad(gradient, theta, vector, retain_graph=True)[0]

    return product


def _rows_hessian_vector_product(problem: _Problem) -> Callable[[Tensor, Tensor], Tensor]:
    """``(rows, v) -> (1/|rows|) sum_{j in rows} Hess l_j(theta) v``: a minibatch's mean Hessian along ``v``,
    by double backward (each minibatch its own graph)."""
    import torch

    def product(rows: Tensor, vector: Tensor) -> Tensor:
        theta = problem.theta.detach().requires_grad_(True)
        with torch.enable_grad():
            gradient = torch.autograd.grad(problem.row_losses(theta, rows).mean(), theta, create_graph=True)[0]
            if not gradient.requires_grad:
                return torch.zeros_like(vector)
            return torch.autograd.grad(gradient, theta, vector)[0]

    return product


def _approximate_solve(problem: _Problem, solver: str, g_test: Tensor, shift: float, lissa: LissaSettings,
                       arnoldi: ArnoldiSettings, seed: int | None, progress: bool | None,
                       info: dict[str, Any]) -> Tensor:
    """:math:`H^{-1} g_{\\text{test}}` by LiSSA or Arnoldi (``_hessian_solvers.py``), drawing from ``seed``."""
    rng = np.random.default_rng(seed)
    product = _retained_hessian_vector_product(problem)
    if solver == "lissa":
        return lissa_solve(product, _rows_hessian_vector_product(problem), g_test, shift, lissa, rng,
                           problem.n_rows, progress, info)
    return arnoldi_solve(product, g_test, shift, arnoldi, rng, progress, info)


def _cg_solve(problem: _Problem, g_test: Tensor, shift: float, tol: float, max_iterations: int | None,
              progress: bool | None, info: dict[str, Any]) -> Tensor:
    """:math:`H^{-1} g_{\\text{test}}` by conjugate gradients from 0 (Hestenes & Stiefel), one HVP per iteration."""
    import torch

    hvp = _hessian_vector_product(problem)
    limit = max_iterations if max_iterations is not None else 10 * int(problem.theta.numel())
    solution = torch.zeros_like(g_test)
    residual = g_test.clone()
    direction = residual.clone()
    norm_b = float(torch.linalg.vector_norm(g_test))
    squared = float(residual @ residual)
    iterations = 0
    with progress_bar(progress, total=limit, desc=f"{_OWNER}: CG", unit="iteration") as bar:
        while iterations < limit and squared ** 0.5 > tol * norm_b:
            product = hvp(direction) + shift * direction
            curvature = float(direction @ product)
            if curvature <= 0.0:
                raise ValueError(f"{_OWNER}: conjugate gradients met a direction of non-positive curvature "
                                 f"({curvature:.3g}): the damped Hessian is not positive definite at the trained "
                                 f"model. Increase damping, or use method='direct' (an LU solve).")
            step = squared / curvature
            solution.add_(direction, alpha=step)
            residual.sub_(product, alpha=step)
            new_squared = float(residual @ residual)
            direction.mul_(new_squared / squared).add_(residual)
            squared = new_squared
            iterations += 1
            bar.update(1)
    relative = squared ** 0.5 / norm_b if norm_b > 0 else 0.0
    if relative > tol:
        warnings.warn(f"{_OWNER}: conjugate gradients stopped after {iterations} iterations at relative residual "
                      f"{relative:.3g} > tol={tol:g}; raise max_iterations or damping.", RuntimeWarning, stacklevel=3)
    info.update(solver="cg", cg_iterations=iterations, cg_relative_residual=relative)
    return solution
