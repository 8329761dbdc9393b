r"""Batched training of one torch module on a chunk of weighted training sets at once.

Private machinery of :class:`~shapley_research.utilities.TorchModelUtility`.
A chunk of :math:`B` coalitions is :math:`B` copies of the module's
parameters stacked along a leading axis, and per-sample weights
:math:`w \in \mathbb{N}^{B \times n}` over the rows it trains on (a
coalition's mask, or bootstrap counts): all :math:`N` training rows shared by
the chunk (minibatches), or each coalition's own rows gathered and padded to
the chunk's largest coalition at weight 0 (full batch, :func:`own_rows`, with
chunks of similar sizes from :func:`size_ordered_chunks`). Model :math:`b` minimises

.. math:: L_b(\theta_b) = \frac{\sum_i w_{bi}\, \ell(f_{\theta_b}(x_i), y_i)}{\sum_i w_{bi}},

and the optimiser adds the coupled L2 term :math:`\lambda \theta_b` to its
gradient (as ``torch.optim``'s ``weight_decay``). Gradients of all models
come from one ``torch.func.vmap`` of ``torch.func.grad`` over the stacked
parameters, or for a plain MLP from :mod:`._torch_mlp`'s hand-written kernels;
Adam (fused) and SGD update the flat stacked tensors elementwise, so every
model gets exactly the update it would get alone. Nothing in the step loop
reads a value back to the host.

Torch is imported inside the functions: this module imports without it.
"""

from __future__ import annotations

import copy
import hashlib
import math
import threading
from dataclasses import dataclass
from typing import Any, Callable, cast

import numpy as np

ADAM_BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults
ADAM_EPS = 1e-8
ALIGNMENT = 16  # elements: 64 bytes of float32, 128 of float64 (a cache line or two)
MAX_CHUNK = 4096  # beyond this a chunk gains nothing on any device, and the host-side arrays grow
SCHEDULE_STREAM = 0x5EED_BA7C  # separates the minibatch stream of a seed from the re-initialisation stream
REINIT_STREAM = 0x1217_0000
Tensor = Any  # a torch.Tensor; torch is imported inside the functions only


@dataclass(frozen=True)
class TrainingPlan:
    """What every chunk is trained with (the same for every chunk of every call).

    ``batch_size=None`` is full-batch training: ``n_steps`` steps on all rows.
    Otherwise ``n_steps`` minibatch steps over epochs whose row orders come from
    ``seed`` (:func:`epoch_batches`).
    """

    task: str
    optimizer: str
    learning_rate: float
    weight_decay: float
    n_steps: int
    batch_size: int | None
    seed: int


# --------------------------------------------------------------------------------------------
# The loss of one model, and the gradients of a stack of them
# --------------------------------------------------------------------------------------------

def per_thread_copies(template: Any) -> Callable[[], Any]:
    """A function returning this thread's copy of the module ``template`` (made on the thread's first call).

    ``torch.func.functional_call`` swaps a module's parameters in place while
    it runs: threads training chunks of one game at once (joblib's threading
    backend) would read each other's parameters through a shared module.
    A game makes one such function and hands it to its loss and its forward
    (``module=`` of :func:`stacked_gradient` and :func:`stacked_forward`), so
    that each thread holds one copy.
    """
    copies = threading.local()

    def module() -> Any:
        if not hasattr(copies, "module"):
            copies.module = copy.deepcopy(template)
        return copies.module

    return module


def per_model_loss(template: Any, task: str, module: Callable[[], Any] | None = None) -> Callable[..., Tensor]:
    """``loss(params, constants, weights, X, y)``: the weighted mean loss of one model (no batch axis).

    ``template`` is the module whose forward ``torch.func.functional_call``
    runs with ``params`` (the trained parameters) and ``constants`` (buffers
    and frozen parameters), on a copy per thread (``module``, else a new
    :func:`per_thread_copies`). Weights are integers, so a total of 0 (a minibatch holding none of the
    coalition) is clamped to 1: loss and gradient are then 0, and
    :func:`train_chunk` skips the step.
    """
    import torch
    from torch.func import functional_call

    module = module or per_thread_copies(template)

    def loss(params: dict[str, Tensor], constants: dict[str, Tensor], weights: Tensor, X: Tensor, y: Tensor) -> Tensor:
        outputs = functional_call(module(), (params, constants), (X,))
        if task == "classification":
            losses = torch.nn.functional.cross_entropy(outputs, y, reduction="none")
        else:
            losses = (outputs.reshape(-1) - y) ** 2
        return (weights * losses).sum() / weights.sum().clamp(min=1.0)

    return loss


def stacked_gradient(template: Any, task: str,
                     module: Callable[[], Any] | None = None) -> Callable[..., dict[str, Tensor]]:
    """``grad(params, constants, weights, X, y)``: per-model gradients of stacked ``params`` (dict of (B, ...)).

    ``weights`` is (B, n); ``X`` and ``y`` are the (n, d) and (n,) rows every
    model shares, or (B, n, d) and (B, n): each model's own rows. ``module``:
    the game's :func:`per_thread_copies` of ``template`` (None: its own).
    """
    from torch.func import grad, vmap

    per_model = grad(per_model_loss(template, task, module))
    shared_rows = vmap(per_model, in_dims=(0, None, 0, None, None))
    own_rows = vmap(per_model, in_dims=(0, None, 0, 0, 0))

    def gradient(params: dict[str, Tensor], constants: dict[str, Tensor], weights: Tensor, X: Tensor,
                 y: Tensor) -> dict[str, Tensor]:
        return (own_rows if X.dim() == 3 else shared_rows)(params, constants, weights, X, y)

    return gradient


def stacked_forward(template: Any, module: Callable[[], Any] | None = None) -> Callable[..., Tensor]:
    """``forward(params, constants, X)``: outputs (B, n, ...) of every model of a stack on the same rows.

    On a copy of ``template`` per thread (``module``, the game's
    :func:`per_thread_copies`; None: its own).
    """
    from torch.func import functional_call, vmap

    module = module or per_thread_copies(template)

    def forward(params: dict[str, Tensor], constants: dict[str, Tensor], X: Tensor) -> Tensor:
        return functional_call(module(), (params, constants), (X,))

    return vmap(forward, in_dims=(0, None, None))


# --------------------------------------------------------------------------------------------
# Adam and SGD on stacked parameters
# --------------------------------------------------------------------------------------------

class StackedOptimizer:
    """Adam or plain SGD on the flat parameters (B, P) of a chunk, one step count per model.

    Full batch (``active=None``) every model steps at every call, and Adam is
    ``torch.optim.Adam``'s fused kernel on the whole flat tensor, one kernel a
    step (``torch._fused_adam_``, on the CPU and CUDA; elsewhere its
    single-tensor path written out operation by operation). With
    minibatches, a model whose ``active`` flag is False in a step (its batch
    held none of its rows) is left exactly as it is, Adam state and step
    count included, so its training is that of its own rows alone.
    """

    def __init__(self, name: str, learning_rate: float, weight_decay: float, flat: Tensor):
        import torch

        self.name, self.learning_rate, self.weight_decay = name, learning_rate, weight_decay
        self.step_count = 0
        self.steps = torch.zeros((flat.shape[0], 1), dtype=flat.dtype, device=flat.device)
        self.fused = name == "adam" and flat.device.type in ("cpu", "cuda") and hasattr(torch, "_fused_adam_")
        self.step_tensor = torch.zeros((), dtype=torch.float32, device=flat.device)  # the fused kernel's count
        # Adam's moments (None for SGD, which never reads them)
        self.mean: Tensor = torch.zeros_like(flat) if name == "adam" else None
        self.square: Tensor = torch.zeros_like(flat) if name == "adam" else None

    def step(self, flat: Tensor, grad: Tensor, active: Tensor | None = None) -> None:
        """Update ``flat`` in place from ``grad`` (both (B, P)); ``active`` is None or (B,) booleans."""
        if active is None and self.fused:
            self._fused_adam(flat, grad)
            return
        if self.weight_decay != 0.0:
            grad = grad.add(flat, alpha=self.weight_decay)
        if active is None:
            self._step_all(flat, grad)
        else:
            self._step_active(flat, grad, active.reshape(-1, 1))

    def _fused_adam(self, flat: Tensor, grad: Tensor) -> None:
        """One step of ``torch.optim.Adam(fused=True)``: the moments, bias corrections and the coupled decay."""
        import torch

        self.step_count += 1
        self.step_tensor.add_(1)
        beta1, beta2 = ADAM_BETAS
        torch._fused_adam_([flat], [grad], [self.mean], [self.square], [], [self.step_tensor],
                           lr=self.learning_rate, beta1=beta1, beta2=beta2, weight_decay=self.weight_decay,
                           eps=ADAM_EPS, amsgrad=False, maximize=False)

    def _step_all(self, flat: Tensor, grad: Tensor) -> None:
        self.step_count += 1
        if self.name == "sgd":
            flat.add_(grad, alpha=-self.learning_rate)
            return
        beta1, beta2 = ADAM_BETAS
        self.mean.lerp_(grad, 1 - beta1)
        self.square.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        correction2_sqrt = math.sqrt(1 - beta2**self.step_count)
        denominator = (self.square.sqrt() / correction2_sqrt).add_(ADAM_EPS)
        flat.addcdiv_(self.mean, denominator, value=-self.learning_rate / (1 - beta1**self.step_count))

    def _step_active(self, flat: Tensor, grad: Tensor, active: Tensor) -> None:
        import torch

        if self.name == "sgd":
            flat.sub_(torch.where(active, self.learning_rate * grad, 0.0))
            return
        beta1, beta2 = ADAM_BETAS
        self.steps += active
        steps = self.steps.clamp(min=1)  # a model that never stepped uses no correction
        self.mean.copy_(torch.where(active, self.mean.lerp(grad, 1 - beta1), self.mean))
        self.square.copy_(torch.where(active, self.square.mul(beta2).addcmul_(grad, grad, value=1 - beta2),
                                      self.square))
        denominator = (self.square.sqrt() / (1 - beta2**steps).sqrt()).add_(ADAM_EPS)
        step_size = self.learning_rate / (1 - beta1**steps)
        flat.sub_(torch.where(active, step_size * self.mean / denominator, 0.0))


def flat_parameters(params: dict[str, Tensor]) -> tuple[Tensor, dict[str, Tensor]]:
    """One contiguous (B, P) copy of the stacked ``params`` and a dict of views of it, shaped as ``params``.

    The optimiser then updates all parameters of all models with a handful
    of large elementwise kernels instead of a handful per parameter tensor.
    Every parameter starts at a multiple of :data:`ALIGNMENT` elements of a
    row, and ``P`` is one too (zeros fill the gaps: zero gradients keep them
    zero): every model's matrices then sit at the same memory alignment, and
    batched matrix kernels, whose code path can follow the alignment, give
    each model the same bits wherever it is in the chunk.
    """
    import torch

    count = next(iter(params.values())).shape[0]
    offsets, width = _aligned_offsets(params)
    sample = next(iter(params.values()))
    flat = torch.zeros((count, width), dtype=sample.dtype, device=sample.device)
    views = {}
    for key, value in params.items():
        view = flat[:, offsets[key]:offsets[key] + value[0].numel()]
        view.copy_(value.reshape(count, -1))
        views[key] = view.view(value.shape)
    return flat, views


def _aligned_offsets(params: dict[str, Tensor]) -> tuple[dict[str, int], int]:
    """Each parameter's first column in a flat row, each a multiple of :data:`ALIGNMENT`, and the row's width."""
    offsets, width = {}, 0
    for key, value in params.items():
        offsets[key] = width
        width += -(-value[0].numel() // ALIGNMENT) * ALIGNMENT
    return offsets, width


# --------------------------------------------------------------------------------------------
# Minibatch schedule and the training loop
# --------------------------------------------------------------------------------------------

def epoch_batches(plan: TrainingPlan, n_rows: int) -> np.ndarray:
    """Row indices of every minibatch step, shape (n_steps, batch_size); -1 pads an epoch's last batch.

    Epoch ``e`` visits the rows in the order of the ``e``-th permutation drawn
    from ``(seed, SCHEDULE_STREAM)``, cut into consecutive batches (the last
    one shorter, padded). The schedule depends only on the seed, ``N`` and
    ``batch_size``, so every coalition of every chunk sees the same batches.
    """
    batch_size = cast(int, plan.batch_size)  # a minibatch plan's
    rng = np.random.default_rng([plan.seed, SCHEDULE_STREAM])
    per_epoch = math.ceil(n_rows / batch_size)
    n_epochs = math.ceil(plan.n_steps / per_epoch)
    padded = np.full((n_epochs, per_epoch * batch_size), -1, dtype=np.int64)
    for epoch in range(n_epochs):
        padded[epoch, :n_rows] = rng.permutation(n_rows)
    return padded.reshape(n_epochs * per_epoch, batch_size)[:plan.n_steps]


def train_chunk(gradient: Callable[..., dict[str, Tensor]], params: dict[str, Tensor], constants: dict[str, Tensor],
                weights: Tensor, X: Tensor, y: Tensor, plan: TrainingPlan,
                schedule: Tensor | None = None) -> dict[str, Tensor]:
    """The stacked ``params`` (copied, as views of one flat tensor) trained on ``weights`` (B, N).

    Full batch: every step uses all ``N`` rows. Minibatches: step ``t`` uses
    the rows ``schedule[t]`` (a device tensor from :func:`epoch_batches`,
    -1 for padding, weighted 0), and models with no weight in that batch skip it.
    """
    import torch

    flat, params = flat_parameters(params)
    optimizer = StackedOptimizer(plan.optimizer, plan.learning_rate, plan.weight_decay, flat)
    flat_grad, grad_views = flat_parameters({key: torch.zeros_like(value) for key, value in params.items()})

    def flat_gradient(weights_of_step: Tensor, X_step: Tensor, y_step: Tensor) -> Tensor:
        grads = gradient(params, constants, weights_of_step, X_step, y_step)
        for key, view in grad_views.items():
            view.copy_(grads[key])
        return flat_grad

    with torch.no_grad():
        if schedule is None:
            for _ in range(plan.n_steps):
                optimizer.step(flat, flat_gradient(weights, X, y))
            return params
        for rows in schedule:
            present = rows >= 0
            rows = rows.clamp(min=0)
            batch_weights = weights[:, rows] * present
            optimizer.step(flat, flat_gradient(batch_weights, X[rows], y[rows]), batch_weights.sum(dim=1) > 0)
    return params


# --------------------------------------------------------------------------------------------
# Each coalition on its own rows: chunks of similar sizes
# --------------------------------------------------------------------------------------------

def size_ordered_chunks(sizes: np.ndarray, capacity: Callable[[np.ndarray], np.ndarray],
                        overhead_rows: float) -> list[np.ndarray]:
    r"""Coalitions (indices into ``sizes``) cut into chunks of similar sizes, each sorted by size.

    A chunk :math:`c` trains its :math:`B_c` coalitions on rows padded to its
    largest size :math:`n_c`, so a step costs about
    :math:`r_0 + B_c\, n_c` model-rows, :math:`r_0` = ``overhead_rows`` being the
    fixed cost of a step (kernel launches, Python) in model-rows. The
    coalitions are sorted by size (stable: ties keep the caller's order) and
    cut into consecutive chunks minimising :math:`\sum_c (r_0 + B_c n_c)` under
    :math:`B_c \le` ``capacity(n_c)`` (memory and the caller's cap), by dynamic
    programming over the cut points (:math:`O(m \cdot \max B_c)`, numpy inside).
    A deterministic function of ``sizes``: no timing enters it.
    """
    order = np.argsort(sizes, kind="stable")
    ordered = np.asarray(sizes)[order].astype(np.float64)
    count = ordered.size
    caps = np.maximum(1, np.asarray(capacity(ordered.astype(np.int64)), dtype=np.int64))
    best = np.zeros(count + 1)
    start = np.zeros(count + 1, dtype=np.int64)
    for stop in range(1, count + 1):  # the best cost of the first `stop` coalitions, and where its last chunk starts
        first = max(0, stop - int(caps[stop - 1]))
        costs = best[first:stop] + overhead_rows + (stop - np.arange(first, stop)) * ordered[stop - 1]
        choice = int(np.argmin(costs))
        best[stop], start[stop] = costs[choice], first + choice
    chunks, stop = [], count
    while stop > 0:
        chunks.append(order[start[stop]:stop])
        stop = int(start[stop])
    return chunks[::-1]


def own_rows(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's nonzero entries of ``weights`` (B, N), gathered: (B, n) row indices and their weights.

    ``n`` is the largest number of nonzero entries of a row; a row's entries
    keep their increasing order, and shorter rows are padded with row 0 at
    weight 0 (a zero term of the weighted loss).
    """
    present = weights != 0
    counts = present.sum(axis=1)
    width = max(1, int(counts.max(initial=0)))
    rows, columns = np.nonzero(present)  # row-major: each row's columns in increasing order
    position = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    index = np.zeros((weights.shape[0], width), dtype=np.int64)
    index[rows, position] = columns
    gathered = np.zeros((weights.shape[0], width), dtype=weights.dtype)
    gathered[rows, position] = weights[rows, columns]
    return index, gathered


# --------------------------------------------------------------------------------------------
# Initial parameters
# --------------------------------------------------------------------------------------------

def stacked_copies(initial: dict[str, Tensor], count: int) -> dict[str, Tensor]:
    """``count`` copies of every initial parameter, stacked on a new leading axis."""
    return {key: value.unsqueeze(0).expand(count, *value.shape).clone() for key, value in initial.items()}


def reinitialization_seed(seed: int, weights_row: np.ndarray) -> int:
    """The torch seed of one coalition's fresh initial parameters: from ``seed`` and the coalition's weights."""
    digest = hashlib.blake2b(np.ascontiguousarray(weights_row, dtype="<u4").tobytes(), digest_size=16).digest()
    words = np.frombuffer(digest, dtype="<u4").tolist()
    state = np.random.SeedSequence([seed, REINIT_STREAM, weights_row.size, *words]).generate_state(2)
    return (int(state[0]) << 32 | int(state[1])) >> 1  # torch.manual_seed takes at most 2**63 - 1


#: Held while torch's global generator draws initial parameters (:func:`redrawn_parameters`).
_GLOBAL_GENERATOR = threading.Lock()


def redrawn_parameters(scratch: Any, names: list[str], seeds: list[int], dtype: Any, device: Any) -> dict[str, Tensor]:
    """Stacked parameters ``names`` of ``scratch`` after ``reset_parameters()`` under each seed.

    ``scratch`` is a host copy of the module, re-initialised in place under
    ``torch.manual_seed(s)`` (the global generator is forked and restored, so
    the caller's random state is untouched). One draw at a time in the
    process: threads sharing a game (joblib's threading backend) would
    otherwise interleave their draws on torch's one global generator and on
    ``scratch``.
    """
    import torch

    drawn: dict[str, list[Any]] = {name: [] for name in names}
    with _GLOBAL_GENERATOR, torch.random.fork_rng(devices=[]):
        for seed in seeds:
            torch.manual_seed(seed)
            for module in scratch.modules():
                if hasattr(module, "reset_parameters"):
                    module.reset_parameters()
            current = dict(scratch.named_parameters())
            for name in names:
                # a copy: reset_parameters() initialises in place, and .to() of the same dtype would alias
                drawn[name].append(current[name].detach().to(dtype, copy=True))
    return {name: torch.stack(values).to(device) for name, values in drawn.items()}


# --------------------------------------------------------------------------------------------
# Memory per model, for the chunk size
# --------------------------------------------------------------------------------------------

def activations_per_row(template: Any, sample: Tensor) -> int:
    """Numbers each module of ``template`` outputs per row of ``sample`` (forward hooks on every module)."""
    import torch

    total = [0]

    def count(_module: Any, _inputs: Any, output: Any) -> None:
        for value in output if isinstance(output, (tuple, list)) else (output,):
            if isinstance(value, torch.Tensor):
                total[0] += value.numel()

    hooks = [module.register_forward_hook(count) for module in template.modules()]
    try:
        with torch.no_grad():
            template(sample)
    finally:
        for hook in hooks:
            hook.remove()
    return max(1, total[0] // sample.shape[0]) + sample[0].numel()


def bytes_per_model(n_parameters: int, activations: int, rows: np.ndarray, optimizer: str,
                    itemsize: int) -> np.ndarray:
    """Working memory of one model of a chunk while it trains on ``rows`` rows per step (an array of counts).

    Parameters, gradients, Adam's two moments and about three parameter-sized
    temporaries of the update; activations kept for the backward pass, their
    gradients and a temporary each; the weights and the loss per row.
    """
    parameter_copies = 2 + (2 if optimizer == "adam" else 0) + 3
    return itemsize * (n_parameters * parameter_copies + rows * (3 * activations + 4))
