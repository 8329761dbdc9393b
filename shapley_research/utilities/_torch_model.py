r"""A torch module trained on every coalition, a whole chunk of coalitions at once.

:class:`TorchModelUtility` is the model utility
:math:`U(S) = \text{metric}(A(S), X_{\text{test}}, y_{\text{test}})` of
:class:`~shapley_research.ModelUtility` for a small ``torch.nn.Module``
trained by Adam or SGD. The batched training loop is in
:mod:`._torch_training`. Torch is optional: it is imported when a game is
built, never when this module is.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._model_data import (TargetInfo, check_dataset, check_degenerate_options, clipped_mean_log_probability,
                          constant_frequencies, constant_means, degenerate_rows, regression_scores, split_degenerate)
from ._options import TrainingRecipe, recipe_keywords
from ._torch_checks import OWNER as _OWNER, check_output_shape, metric_and_task, resolve_steps
from ._torch_mlp import mlp_gradient, mlp_layers
from ._torch_training import (MAX_CHUNK, TrainingPlan, activations_per_row, bytes_per_model, epoch_batches,
                              own_rows, per_thread_copies, redrawn_parameters, reinitialization_seed,
                              size_ordered_chunks, stacked_copies, stacked_forward, stacked_gradient, train_chunk)
from .._device import check_dtype, chunk_capacity, import_torch, released, resolve_device, torch_dtype
from .._threads import pinned_torch_threads
from .._validation import check_bool, check_choice, check_features, check_float, check_int, check_weights
from ..games import Game, content_digest, report_evaluated

if TYPE_CHECKING:
    from ._options import DegeneratePolicy
    import torch

__all__ = ["TorchModelUtility"]

CPU_THREADS = 1  # torch threads while training on the CPU: the estimators' pin (a shared machine can't starve it)
# Fixed cost of one training step of a chunk, in floating-point operations of the model's rows (kernel launches
# and Python: the hand-written MLP step runs ~15 kernels, the vmap/grad one ~60 ops through several transforms; a
# GPU launch costs what thousands of rows do). It sets how finely chunks are cut by size; a constant, not a timing,
# so the chunks (and the values) never depend on the machine's load.
STEP_OVERHEAD_FLOPS = {("cpu", True): 3e6, ("cpu", False): 6e7, ("gpu", True): 3e9, ("gpu", False): 1e10}


class TorchModelUtility(Game):
    r"""Utility of a training subset: the test score of a torch module trained on it.

    .. math:: U(S) = \text{metric}\bigl(f_{\theta_S},\ X_{\text{test}}, y_{\text{test}}\bigr),
              \qquad \theta_S = \text{Adam or SGD, from } \theta_0, \text{ on }
              L_S(\theta) = \frac{\sum_{i=1}^N w_i\, \ell(f_\theta(x_i), y_i)}{\sum_{i=1}^N w_i},

    with :math:`w_i = 1[i \in S]` (the coalition's mask; bootstrap counts in
    :meth:`predict`), :math:`\ell` the cross-entropy over the training classes
    (classification metrics) or the squared error :math:`(f_\theta(x_i) - y_i)^2`
    (regression metrics), and weight decay :math:`\lambda` added to every
    gradient as :math:`\lambda\theta` (``torch.optim``'s coupled L2 penalty,
    i.e. :math:`\tfrac{\lambda}{2}\lVert\theta\rVert^2` in the objective).
    Every coalition starts from the same :math:`\theta_0`, the parameters of
    ``model`` (or fresh ones with ``reinitialize=True``).

    A chunk of coalitions is trained at once: the parameters of all its models
    are stacked on a leading axis, each step computes every model's gradient
    (one ``torch.func.vmap`` of ``torch.func.grad`` of
    ``torch.func.functional_call``; for a plain MLP, hand-written batched
    kernels, Notes), and Adam / SGD update the stacks elementwise. Full batch
    (``batch_size=None``), each coalition trains on its own rows: the
    coalitions are sorted by size and cut into chunks of similar sizes, and a
    chunk's coalitions are gathered and padded to its largest one (padded rows
    weigh 0), so a step costs about the chunk's rows, not :math:`N` per model.
    With minibatches, every model of a chunk sees the shared batch of all
    rows, its own ones weighted 1. A coalition thus gets exactly the updates
    it would get trained alone (``chunk_size=1``), to the rounding of batched
    kernels; values come back in the caller's order. Degenerate coalitions are
    not trained (Notes).

    Parameters
    ----------
    model : torch.nn.Module
        Its parameters are every coalition's starting point; it is never
        modified (a copy is moved to ``device`` and ``dtype``). The copy runs
        in eval mode (no dropout; batch norm uses its stored statistics), its
        buffers and parameters with ``requires_grad=False`` stay fixed, and its
        forward must be a function ``torch.func.vmap`` can batch. It takes
        ``(n, d)`` feature rows and returns ``(n, K)`` logits for ``K``
        training classes, or ``(n,)`` / ``(n, 1)`` values for regression.
        Output unit ``k`` scores the ``k``-th training label **in sorted
        order** (``np.unique(y_train)[k]``): for labels ``["dog", "cat"]``
        unit 0 is ``"cat"`` and unit 1 ``"dog"``, whatever order they come
        in; a module trained elsewhere with another label order must be
        permuted to match.
    X_train, y_train : arrays of shape (N, d) and (N,)
        The players. Labels may be any sortable values, at least two distinct
        ones for a classification metric (a single class raises a
        ``ValueError`` naming it: every value would be about 0); a regression
        metric needs real targets.
    X_test, y_test : arrays of shape (n_test, d) and (n_test,)
        The fixed test set.
    metric : str, default "accuracy"
        ``"accuracy"`` or ``"neg_log_loss"`` (classification),
        ``"neg_mean_squared_error"`` (``"neg_mse"``), ``"neg_mean_absolute_error"``
        (``"neg_mae"``) or ``"r2"`` (regression), as in
        :class:`~shapley_research.ModelUtility`; test labels unseen in training count as wrong.
    optimizer : {"adam", "sgd"}, default "adam"
        Adam with ``torch.optim.Adam``'s defaults (betas 0.9, 0.999, eps 1e-8)
        or plain SGD (no momentum).
    learning_rate : float, default 1e-2
        Positive.
    steps : int, optional
        Optimiser steps per coalition; 300 when neither ``steps`` nor
        ``epochs`` is given. Full batch (``batch_size=None``): each step uses all
        rows; with a ``batch_size``, each step is one minibatch.
    epochs : int, optional
        Instead of ``steps``: passes over the ``N`` rows (full batch: one step
        each; with ``batch_size = b``: :math:`\lceil N / b \rceil` steps each).
    batch_size : int, optional
        ``None`` trains on all rows at every step. Otherwise epoch :math:`e`
        visits the ``N`` rows in the order of the :math:`e`-th permutation
        drawn from ``seed``, in consecutive batches of ``b`` rows (the last one
        shorter). This schedule depends only on ``seed``, ``N`` and ``b``: every
        coalition of every chunk sees the same batches, and its step on a batch
        uses its own rows in it (weighted mean over them); a coalition with no
        row in a batch skips that step (parameters and Adam state untouched, its
        step count not advanced). So a coalition's training never depends on which
        coalitions share its chunk.
    weight_decay : float, default 0.0
        :math:`\lambda \ge 0`, on every trained parameter.
    device : str or torch.device, default "cpu"
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``, a ``torch.device``, or
        ``"auto"`` (CUDA when torch sees a GPU, else the CPU; ``None`` is the CPU).
        A device torch cannot see raises a ``ValueError``.
    dtype : {"float32", "float64"}, default "float32"
        Floating-point type of parameters, data and training (float32 is what
        GPUs are fast at; float64 for agreement with a model trained alone to
        about 1e-10).
    seed : int, default 0
        Draws the minibatch schedule and, with ``reinitialize=True``, the
        initial parameters. Full-batch training from ``model``'s parameters
        uses no randomness.
    chunk_size : int, optional
        Most coalitions trained at once. ``None``: as many as fit in the
        working memory of ``device`` (:func:`~shapley_research._device.available_bytes`:
        a third of a GPU's total memory, 256 MiB on the CPU) at an estimate of the bytes
        per model (parameters, gradients, Adam's moments and temporaries, plus
        three times the activations of the rows of a step, the chunk's padded
        own rows in full-batch training, and of the evaluated rows), at most
        4,096. An integer caps that number. Full batch, chunks are cut smaller
        where that saves padded rows (a fixed cost per step against the rows
        saved, :func:`._torch_training.size_ordered_chunks`). Utilities agree
        across chunk sizes to rounding, and one card plans the same chunks on
        every run; where memory held by other processes leaves no room for
        them, they shrink with a ``RuntimeWarning`` (the last bits can then
        differ): an integer the memory rule does not lower repeats a run.
    reinitialize : bool, default False
        ``False``: every coalition starts from ``model``'s parameters.
        ``True``: every coalition starts from parameters re-drawn by the
        ``reset_parameters()`` of ``model``'s submodules under the torch seed
        hashed from ``(seed, the coalition's weights)`` (blake2b, then
        ``numpy.random.SeedSequence``), on the host, one coalition after another.
        So the same coalition gets the same initial parameters and the same
        utility whichever chunk, call, device or chunk size it is trained in: the
        utility is still a function of ``S``, one with the initialisation's
        noise, and two coalitions share no draw. What it costs: a Python loop over the
        coalitions of each chunk (one ``reset_parameters`` pass each, and a copy
        to the device); the drawn values are those of this torch release's
        initialisers and CPU generator (another release may draw others);
        parameters without a ``reset_parameters`` in their module keep ``model``'s
        values; and the values change with ``seed``. Needs at least one submodule with
        ``reset_parameters``.
    degenerate : {"constant", "default", "raise"} or DegeneratePolicy, default "constant"
    default_utility : float, optional
    min_samples : int, default 1
        Degenerate coalitions, exactly as :class:`~shapley_research.ModelUtility`:
        empty, fewer than ``min_samples`` points, or a single class
        (a :class:`~shapley_research.DegeneratePolicy` holds all three).
    recipe : TrainingRecipe, optional
        ``optimizer, learning_rate, steps, epochs, batch_size, weight_decay,
        seed, reinitialize`` in one :class:`~shapley_research.TrainingRecipe`
        (the same settings; those keywords are then left at their defaults).
    progress : bool, default False
        Show a tqdm bar of the models trained in each call (estimators' own
        bars move chunk by chunk anyway, through
        :func:`~shapley_research.games.report_evaluated`).

    Attributes
    ----------
    n_players : int
    device : torch.device
        Where the models train (estimators refuse ``n_jobs > 1`` on an accelerator; on the CPU, where a
        game trains on one thread, workers share the cores as for any game).
    dtype : str
    n_steps : int
        Optimiser steps per coalition.
    recipe : TrainingRecipe
        The training settings in effect (from the keywords or the ``recipe`` passed).
    n_fits : int
        Models trained so far (degenerate coalitions are not trained).

    Notes
    -----
    **Degenerate coalitions** are never trained: their utility follows
    ``degenerate`` as in :class:`~shapley_research.ModelUtility` (``"constant"``:
    the constant model of the coalition's labels).

    **Reproducibility.** The same arguments on the same device and chunk size
    give bit-identical utilities for the same coalitions, on repeated calls
    and on a fresh object. A coalition evaluated among other coalitions may
    land in a chunk of another padded width, whose batched kernels sum in
    another order: its utility then agrees to rounding (about 1e-15 relative
    in float64 for the trained outputs). Within a chunk, every model's
    parameters sit at the same memory alignment, so that batched kernels
    treat the models alike (a coalition repeated in a chunk gets the same
    bits in this package's tests on the CPU).

    **Threads.** On the CPU, training runs with :data:`CPU_THREADS` (one)
    torch thread, as the estimators pin theirs (with torch's default of one
    thread per core, a loaded machine slowed ``evaluate`` fifty-fold); the
    caller's count is restored afterwards. On a GPU it is left alone.

    **Plain MLPs** (``nn.Sequential`` of ``nn.Linear`` with ReLU, Tanh or
    Sigmoid between them, every parameter trained, no buffers or hooks) get
    their gradients from hand-written batched kernels
    (:mod:`._torch_mlp`: the same backpropagation, about a dozen kernels a
    step instead of the several milliseconds of ``torch.func`` transforms);
    they agree with the generic path to rounding. Adam runs as one fused
    kernel on the flat parameters on the CPU and CUDA.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> from sklearn.datasets import load_iris
    >>> from shapley_research import TorchModelUtility, msr_banzhaf
    >>> X, y = load_iris(return_X_y=True)
    >>> d, n_classes = X.shape[1], 3
    >>> _ = torch.manual_seed(0)
    >>> mlp = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, n_classes))
    >>> game = TorchModelUtility(mlp, X[::3], y[::3], X[1::3], y[1::3], steps=100, learning_rate=0.05)
    >>> result = msr_banzhaf(game, 64, seed=0)   # 64 coalitions of the 50 points, trained in one chunk
    >>> result.values.shape, game.n_fits
    ((50,), 64)
    """

    def __init__(self, model: torch.nn.Module, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike,
                 y_test: ArrayLike, metric: str = "accuracy", *, optimizer: Literal["adam", "sgd"] = "adam",
                 learning_rate: float = 1e-2, steps: int | None = None, epochs: int | None = None,
                 batch_size: int | None = None, weight_decay: float = 0.0,
                 device: str | torch.device | None = "cpu", dtype: Literal["float32", "float64"] = "float32",
                 seed: int = 0, chunk_size: int | None = None, reinitialize: bool = False,
                 degenerate: Literal["constant", "default", "raise"] | DegeneratePolicy = "constant",
                 default_utility: float | None = None, min_samples: int = 1, progress: bool = False,
                 recipe: TrainingRecipe | None = None) -> None:
        torch = import_torch(_OWNER)
        if not isinstance(model, torch.nn.Module):
            kind = f"the class {model.__name__}" if isinstance(model, type) else type(model).__name__
            raise TypeError(f"{_OWNER}: model must be a torch.nn.Module instance, got {kind}.")
        self.model = model
        self.metric, self.task = metric_and_task(metric)
        self.X_train, self.y_train, self.X_test, self.y_test = check_dataset(
            X_train, y_train, X_test, y_test, self.task)
        self.targets = TargetInfo(self.y_train, self.y_test, self.task)
        self.n_players = self.X_train.shape[0]
        self.degenerate, self.default_utility, self.min_samples = check_degenerate_options(
            degenerate, default_utility, min_samples, self.n_players)
        self._check_training_options(recipe_keywords(recipe, {
            "optimizer": optimizer, "learning_rate": learning_rate, "steps": steps, "epochs": epochs,
            "batch_size": batch_size, "weight_decay": weight_decay, "seed": seed, "reinitialize": reinitialize}),
            chunk_size)
        self.progress = check_bool(progress, "progress")
        self.dtype = check_dtype(dtype, _OWNER)
        self.device = resolve_device("cpu" if device is None else device, _OWNER) or torch.device("cpu")
        self._prepare_module(model)
        self._prepare_data()
        self._check_module_output()
        self.n_fits = 0

    # -- construction ---------------------------------------------------------------------------
    def _check_training_options(self, training: dict[str, Any], chunk_size: Any) -> None:
        """The training keywords (or a recipe's) validated and kept; ``recipe`` is them as one object."""
        self.optimizer = check_choice(training["optimizer"], "optimizer", ("adam", "sgd"))
        self.learning_rate = check_float(training["learning_rate"], "learning_rate", minimum=0.0, strict=True)
        self.weight_decay = check_float(training["weight_decay"], "weight_decay", minimum=0.0)
        self.seed = check_int(training["seed"], "seed", minimum=0)
        self.chunk_size = None if chunk_size is None else check_int(chunk_size, "chunk_size", minimum=1)
        self.reinitialize = check_bool(training["reinitialize"], "reinitialize")
        batch_size = training["batch_size"]
        self.batch_size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.n_steps = resolve_steps(training["steps"], training["epochs"], self.batch_size, self.n_players)
        self.recipe = TrainingRecipe(**training)

    def _prepare_module(self, model: Any) -> None:
        """The template module on the device, its trained parameters' initial values and its constants."""
        import_torch(_OWNER)  # says how to install torch when it is missing
        trained = [name for name, param in model.named_parameters() if param.requires_grad]
        if not trained:
            raise ValueError(f"{_OWNER}: model has no parameter with requires_grad=True: nothing to train.")
        template = copy.deepcopy(model).to(device=self.device, dtype=torch_dtype(self.dtype)).eval()
        template.requires_grad_(False)
        state = {name: value.detach() for name, value in template.named_parameters()}
        self._initial = {name: state.pop(name) for name in trained}
        self._constants = {**state, **dict(template.named_buffers())}
        self._template = template
        self._scratch = None
        if self.reinitialize:
            if not any(hasattr(module, "reset_parameters") for module in model.modules()):
                raise ValueError(f"{_OWNER}: reinitialize=True needs a submodule with reset_parameters() "
                                 f"(such as nn.Linear); {type(model).__name__} has none.")
            self._scratch = copy.deepcopy(model).to("cpu")  # drawn on the host, then copied per chunk
        self._training_functions()

    def _training_functions(self) -> None:
        """The batched gradient and forward of the template (closures: rebuilt, not pickled)."""
        layers = mlp_layers(self._template, list(self._initial))
        self._hand_written = layers is not None  # a plain MLP: gradients without torch.func (far fewer ops)
        copies = per_thread_copies(self._template)  # one per thread, for the gradient and the forward
        self._gradient = (stacked_gradient(self._template, self.task, copies) if layers is None
                          else mlp_gradient(layers, self.task))
        self._forward = stacked_forward(self._template, copies)

    def __getstate__(self) -> dict[str, Any]:
        """The game without its training closures (they hold per-thread state), for joblib's workers."""
        state = self.__dict__.copy()
        for name in ("_gradient", "_forward"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._training_functions()

    def _check_module_output(self) -> None:
        """One forward pass on two training rows, plain and batched, before any training."""
        torch = import_torch(_OWNER)
        sample = self._X_train[:2]
        rows, d = sample.shape
        try:
            with torch.no_grad():
                output = self._template(sample)
        except Exception as error:  # noqa: BLE001 - any failure of the user's forward, reported with the shapes
            raise ValueError(f"{_OWNER}: model fails on rows of X_train (shape ({rows}, {d})): "
                             f"{type(error).__name__}: {error}") from error
        if not isinstance(output, torch.Tensor) or not output.is_floating_point():
            raise ValueError(f"{_OWNER}: model must return a floating-point tensor, got {type(output).__name__}"
                             f"{'' if not isinstance(output, torch.Tensor) else ' of ' + str(output.dtype)}.")
        check_output_shape(tuple(output.shape), rows, self.targets if self.task == "classification" else None)
        try:
            with torch.no_grad():
                self._forward(stacked_copies(self._initial, 1), self._constants, sample)
        except Exception as error:  # noqa: BLE001 - the forward must batch over stacked parameters
            raise ValueError(f"{_OWNER}: model's forward cannot be batched by torch.func.vmap over stacked "
                             f"parameters: {type(error).__name__}: {error}") from error
        self._check_batched_gradient(sample)
        self._activations = activations_per_row(self._template, sample)

    def _check_batched_gradient(self, sample: Any) -> None:
        """One training gradient on ``sample``'s rows as training computes it (full batch: each coalition's own
        rows, a batched input), so a forward that vmap cannot batch fails here, named, not at the first fit."""
        torch = import_torch(_OWNER)
        rows = sample.shape[0]
        y = self._y_train[:rows]
        X = sample if self.batch_size is not None else sample.unsqueeze(0)
        y = y if self.batch_size is not None else y.unsqueeze(0)
        try:
            with torch.no_grad():
                self._gradient(stacked_copies(self._initial, 1), self._constants,
                               torch.ones((1, rows), dtype=sample.dtype, device=self.device), X, y)
        except Exception as error:  # noqa: BLE001 - any failure of the user's module under torch.func
            raise ValueError(f"{_OWNER}: model cannot be trained batched by torch.func (one model per coalition, "
                             f"each on its own rows: a batched input; data-dependent Python control flow, such "
                             f"as `if x.sum() > 0`, is not supported): {type(error).__name__}: {error}") from error

    def _prepare_data(self) -> None:
        """Training and test tensors on the device, the training plan and the minibatch schedule."""
        torch = import_torch(_OWNER)
        dtype = torch_dtype(self.dtype)
        # copies (torch.tensor): a read-only array, as pandas hands out, would make torch.as_tensor warn
        self._X_train = torch.tensor(self.X_train, dtype=dtype, device=self.device)
        self._X_test = torch.tensor(self.X_test, dtype=dtype, device=self.device)
        if self.task == "classification":
            self._y_train = torch.tensor(self.targets.y_train_index, dtype=torch.long, device=self.device)
        else:
            self._y_train = torch.tensor(self.y_train, dtype=dtype, device=self.device)
        self._plan = TrainingPlan(self.task, self.optimizer, self.learning_rate, self.weight_decay,
                                  self.n_steps, self.batch_size, self.seed)
        self._schedule = None if self.batch_size is None else torch.as_tensor(
            epoch_batches(self._plan, self.n_players), device=self.device)

    # -- training a chunk -------------------------------------------------------------------------
    def _chunk_capacity(self, rows: np.ndarray | int, n_evaluated_rows: int) -> np.ndarray:
        """Most coalitions per chunk training on ``rows`` rows a step (the memory rule of ``chunk_size``), capped.

        ``rows`` may be an array of row counts (one capacity each). Full
        batch, a coalition's weights are its padded own rows; with
        minibatches, all ``N``.
        """
        itemsize = 8 if self.dtype == "float64" else 4
        n_parameters = sum(value.numel() for value in self._initial.values())
        rows = np.maximum(np.asarray(rows, dtype=np.int64), n_evaluated_rows)
        weights_bytes = itemsize * (self.n_players if self.batch_size is not None else rows)
        per_model = bytes_per_model(n_parameters, self._activations, rows, self.optimizer, itemsize) + weights_bytes
        cap = MAX_CHUNK if self.chunk_size is None else min(MAX_CHUNK, self.chunk_size)
        return chunk_capacity(self.device, per_model, cap, type(self).__name__)

    def _chunk_rows(self, n_evaluated_rows: int) -> int:
        """Coalitions per chunk when every coalition trains on all rows (minibatches): :meth:`_chunk_capacity`."""
        rows = self.n_players if self.batch_size is None else self.batch_size
        return int(self._chunk_capacity(rows, n_evaluated_rows))

    def _chunks(self, weights: np.ndarray, n_evaluated_rows: int) -> list[np.ndarray]:
        """Rows of ``weights`` trained together: by size on their own rows (full batch), else in order."""
        if self.batch_size is not None:
            size = self._chunk_rows(n_evaluated_rows)
            return [np.arange(start, min(start + size, weights.shape[0])) for start in range(0, weights.shape[0], size)]
        n_parameters = sum(value.numel() for value in self._initial.values())
        kind = "cpu" if self.device.type == "cpu" else "gpu"
        overhead_rows = STEP_OVERHEAD_FLOPS[kind, self._hand_written] / (6 * n_parameters)  # 6 flops/param/row
        return size_ordered_chunks(np.count_nonzero(weights, axis=1),
                                   lambda rows: self._chunk_capacity(rows, n_evaluated_rows), overhead_rows)

    def _initial_parameters(self, weights: np.ndarray) -> dict[str, Any]:
        if not self.reinitialize:
            return stacked_copies(self._initial, weights.shape[0])
        seeds = [reinitialization_seed(self.seed, row) for row in weights]
        return redrawn_parameters(self._scratch, list(self._initial), seeds, torch_dtype(self.dtype), self.device)

    def _trained_parameters(self, weights: np.ndarray) -> dict[str, Any]:
        """Stacked parameters (B, ...) on the device of one model trained per row of ``weights`` (B, N)."""
        torch = import_torch(_OWNER)
        if self.batch_size is None:  # full batch: each coalition on its own rows, padded at weight 0
            index, gathered = own_rows(weights)
            rows = torch.as_tensor(index, device=self.device)
            X_rows, y_rows = self._X_train[rows], self._y_train[rows]
        else:  # minibatches: every coalition sees the shared batches (class docstring, batch_size)
            gathered, X_rows, y_rows = weights, self._X_train, self._y_train
        # masks (1 byte a cell) or counts are converted on the device; the copy drops negative strides (torch's refusal)
        sample_weights = torch.as_tensor(np.array(gathered), device=self.device).to(torch_dtype(self.dtype))
        params = train_chunk(self._gradient, self._initial_parameters(weights), self._constants, sample_weights,
                             X_rows, y_rows, self._plan, self._schedule)
        self.n_fits += weights.shape[0]
        return params

    def _train_and_forward(self, weights: np.ndarray, X: Any) -> np.ndarray:
        """Train one model per row of ``weights`` and return their float64 outputs on ``X`` (B, n[, K])."""
        torch = import_torch(_OWNER)
        params = self._trained_parameters(weights)
        with torch.no_grad():
            outputs = self._forward(params, self._constants, X)
        outputs = outputs.to(dtype=torch.float64).cpu().numpy()  # the one wait on the device per chunk
        if self.task == "regression":
            return outputs.reshape(weights.shape[0], -1)
        return outputs

    def _in_chunks(self, weights: np.ndarray, X: Any, consume: Callable[[np.ndarray, np.ndarray], None]) -> None:
        """Train the rows of ``weights`` chunk by chunk, handing each chunk's row indices and outputs to ``consume``."""
        from tqdm.auto import tqdm

        chunks = self._chunks(weights, X.shape[0])
        bar = tqdm(total=weights.shape[0], desc=_OWNER, unit="model", leave=False, disable=not self.progress)
        try:
            with self._pinned_threads(), released(self.device):  # no cached GPU memory stays held between calls
                for chunk in chunks:
                    consume(chunk, self._train_and_forward(weights[chunk], X))
                    report_evaluated(chunk.size)
                    bar.update(chunk.size)
        finally:
            bar.close()

    @contextmanager
    def _pinned_threads(self) -> Iterator[None]:
        """torch on :data:`CPU_THREADS` threads while training on the CPU (:func:`~.._threads.pinned_torch_threads`:
        the count found by the first thread training is restored when the last one leaves)."""
        if self.device.type != "cpu":
            yield
            return
        with pinned_torch_threads(CPU_THREADS):  # counted per process: threads training at once share it
            yield

    # -- the game ---------------------------------------------------------------------------------
    def _evaluate(self, masks: NDArray[np.bool_]) -> NDArray[np.float64]:
        values, degenerate, _ = split_degenerate(masks, self.targets, self.metric, self.degenerate,
                                                 self.default_utility, self.min_samples, owner=_OWNER)
        if degenerate.any():
            report_evaluated(int(degenerate.sum()))
        trained = np.flatnonzero(~degenerate)

        def score(chunk: np.ndarray, outputs: np.ndarray) -> None:
            values[trained[chunk]] = self._scores(outputs)

        if trained.size:
            self._in_chunks(masks[trained], self._X_test, score)
        return values

    def _scores(self, outputs: np.ndarray) -> NDArray[np.float64]:
        """The metric of each model from its test outputs (B, n_test[, K])."""
        info = self.targets
        if self.task == "regression":
            return regression_scores(outputs, info.y_test, self.metric, info.ss_tot)
        if self.metric == "accuracy":  # argmax takes the first of tied classes: the smallest label
            return np.mean(outputs.argmax(axis=2) == info.y_test_index, axis=1)
        from scipy.special import log_softmax

        log_p = log_softmax(outputs, axis=2)
        seen = info.y_test_index >= 0
        true = np.take_along_axis(log_p, np.maximum(info.y_test_index, 0)[None, :, None], axis=2)[..., 0]
        return clipped_mean_log_probability(np.where(seen, true, -np.inf))

    # -- sample weights ---------------------------------------------------------------------------
    def predict(self, weights: ArrayLike, X: ArrayLike | None = None) -> np.ndarray:
        """Predictions of a model trained on each row of ``weights``.

        Parameters
        ----------
        weights : array of shape (m, N)
            Booleans (coalitions) or non-negative integers (e.g. bootstrap
            counts), the per-sample loss weights :math:`w_i` of
            :math:`\\sum_i w_i \\ell_i / \\sum_i w_i`.
        X : array of shape (n, d), optional
            Rows to predict; the test set by default.

        Returns
        -------
        np.ndarray of shape (m, n)
            Predicted labels (from the training classes) for classification,
            values for regression. A degenerate row (total weight below
            ``min_samples``, or a single class) is not trained and predicts the
            constant model: the most weighted class (ties to the smallest label;
            the training majority when empty) or the weighted mean target (0 when
            empty).
        """
        checked = check_weights(weights, self.n_players, "weights", _OWNER)
        rows_X = self._rows_to_predict(X)
        degenerate = degenerate_rows(checked, self.targets, self.min_samples)
        classification = self.task == "classification"
        predictions = np.empty((checked.shape[0], rows_X.shape[0]), dtype=self.targets.classes.dtype
                               if classification else float)
        if degenerate.any():
            predictions[degenerate] = self._constant_predictions(checked[degenerate])[:, None]
        trained = np.flatnonzero(~degenerate)

        def store(chunk: np.ndarray, outputs: np.ndarray) -> None:
            rows = trained[chunk]
            predictions[rows] = self.targets.classes[outputs.argmax(axis=2)] if classification else outputs

        if trained.size:
            self._in_chunks(checked[trained], rows_X, store)
        return predictions

    def trained_outputs(self, weights: ArrayLike, X: ArrayLike | None = None) -> NDArray[np.float64]:
        """Raw outputs (float64) of a model trained on each row of ``weights``, no degenerate rule applied.

        ``(m, n, K)`` logits for classification, ``(m, n)`` values for
        regression; ``weights`` and ``X`` as in :meth:`predict`. Every row must
        have a positive total weight.
        """
        checked = check_weights(weights, self.n_players, "weights", _OWNER)
        rows_X = self._rows_to_predict(X)
        empty = np.flatnonzero(checked.sum(axis=1) == 0)
        if empty.size:
            raise ValueError(f"{_OWNER}: weights row {int(empty[0])} is all zero: there is nothing to train on.")
        result: NDArray[np.float64] = np.empty((0, rows_X.shape[0]))

        def store(chunk: np.ndarray, outputs: np.ndarray) -> None:
            nonlocal result
            if result.shape[0] != checked.shape[0]:  # the first chunk gives the outputs' trailing shape
                result = np.empty((checked.shape[0], *outputs.shape[1:]))
            result[chunk] = outputs

        self._in_chunks(checked, rows_X, store)
        return result

    def _rows_to_predict(self, X: Any) -> Any:
        if X is None:
            return self._X_test
        torch = import_torch(_OWNER)
        X = check_features(X, "X")
        if X.shape[1] != self.X_train.shape[1]:
            raise ValueError(f"{_OWNER}: X has {X.shape[1]} features; X_train has {self.X_train.shape[1]}.")
        return torch.as_tensor(X, dtype=torch_dtype(self.dtype), device=self.device)

    def _constant_predictions(self, weights: np.ndarray) -> np.ndarray:
        """The constant model of each weighted coalition (ModelUtility's ConstantPredictor, with counts)."""
        info = self.targets
        if self.task == "regression":
            return constant_means(weights, info)
        # the frequencies' argmax is the counts': dividing integer counts by their total keeps their order
        return info.classes[constant_frequencies(info.class_counts(weights), info).argmax(axis=1)]

    def fingerprint(self) -> str:
        """A digest of the data, the module's layers and initial weights, the metric and the training recipe."""
        names = sorted(self._initial)
        weights = [self._initial[name].detach().cpu().numpy() for name in names]
        return content_digest(self.X_train, self.y_train, self.X_test, self.y_test, repr(self.model), names, *weights,
                              self.metric, self.recipe, self.batch_size, self.n_steps, self.degenerate,
                              self.default_utility, self.min_samples, self.dtype)

    def __repr__(self) -> str:
        return (f"{_OWNER}({type(self.model).__name__}, n_players={self.n_players}, metric={self.metric!r}, "
                f"optimizer={self.optimizer!r}, steps={self.n_steps}, device={str(self.device)!r}, "
                f"dtype={self.dtype!r})")
