r"""DVRL: data values learned by reinforcement on coalitions (Yoon, Arik & Pfister, ICML 2020).

Yoon, Arik and Pfister, "Data Valuation using Reinforcement Learning"
(ICML 2020). A *data value estimator* :math:`h_\phi` maps each point's
features :math:`f_i` to a selection probability :math:`p_i = h_\phi(f_i)`;
a selection vector :math:`s \in \{0, 1\}^N`, :math:`s_i \sim
\mathrm{Bernoulli}(p_i)` independently, picks the points a model is trained
on, and the model's validation performance is the reward. Here a selection
vector *is* a coalition and the reward is its utility :math:`U(s)`, so DVRL
runs on any game: :math:`\phi` maximises

.. math::

    J(\phi) = \mathbb{E}_{s \sim \pi_\phi}\bigl[U(s)\bigr], \qquad
    \pi_\phi(s) = \prod_{i=1}^{N} p_i^{s_i} (1 - p_i)^{1 - s_i},

by REINFORCE (Williams 1992). Since
:math:`\partial \log \pi_\phi(s) / \partial z_i = s_i - p_i` for the logit
:math:`z_i` of :math:`p_i`, a step draws ``K`` coalitions
:math:`s^{(1..K)}`, evaluates them in **one** call of ``game.evaluate`` (a
batched game trains them at once), and descends

.. math::

    L(\phi) = -\frac1K \sum_{k=1}^{K} \bigl(U(s^{(k)}) - b_k\bigr) \log \pi_\phi(s^{(k)})
        + \lambda \Bigl[\bigl(\bar p - \eta\bigr)_+ + \bigl((1 - \eta) - \bar p\bigr)_+\Bigr],
    \qquad \bar p = \frac1N \sum_i p_i,

with Adam. The second term is the authors' exploration penalty (their code,
and OpenDataVal's ``DVRL``: :math:`\lambda = 10^3`, :math:`\eta = 0.9`): it
is zero while the mean selection probability stays in
:math:`[1 - \eta, \eta]` and pushes it back inside otherwise, so the
estimator cannot collapse onto selecting every point (larger coalitions
have larger utility, which pulls every :math:`p_i` up) or none. The
baseline :math:`b_k` reduces the variance without changing the expected
gradient (it does not depend on :math:`s^{(k)}`): by default the mean
utility of the *other* ``K - 1`` coalitions of the step (the leave-one-out
baseline of Kool et al. 2019), or the paper's moving average of past
utilities, :math:`\delta \leftarrow \delta + (\bar U - \delta) / T`.
The values are the final selection probabilities :math:`p_i`.

**Features.** The estimator's input: ``features`` when given, else built
from a game that holds its data (``ModelUtility``, the batched learners,
``TorchModelUtility``): the training features, the label (one-hot for
classification), and the *marginal* signal of the authors' code (also OpenDataVal's)
:math:`|y_i - \hat f_{\mathrm{val}}(x_i)|` (one-hot label minus predicted
probabilities for classification), :math:`\hat f_{\mathrm{val}}` a copy of
the game's model fitted on its validation (test) set, where the game has a
model with ``fit`` and ``predict`` (``ModelUtility``): where a point's label
disagrees with what the validation data predict, it is likely mislabelled.
Every column is standardised. A game without data gets a table: one free
logit per player.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._sampling._batches import aux_rng, batch_rng, model_seeds
from ._sampling._checkpoint import Checkpoint, check_checkpoint_path, terminated_as_exit
from ._sampling._loop import open_checkpoint
from ._sampling._progress import evaluation_bar
from .._threads import pinned_threads
from .._validation import (check_choice, check_features, check_float, check_game, check_int, check_progress,
                           check_seed, check_utilities)
from ..games import GameLike, game_identity
from ..result import ValuationResult
from ..utilities import fresh_copy, unseeded_random_states

__all__ = ["dvrl", "dvrl_features"]

#: Hidden layers of the value estimator by default: one of 100 ReLU units (the paper's width).
DEFAULT_HIDDEN = (100,)
BASELINES = ("batch", "moving_average")
ADAM_BETA1, ADAM_BETA2, ADAM_EPSILON = 0.9, 0.999, 1e-8
#: Entropy of the random_state given to the marginal signal's model where the game's model leaves it unset.
MARGINAL_ENTROPY = 0x0D5A_2020


# --------------------------------------------------------------------------------------------
# The estimator's input
# --------------------------------------------------------------------------------------------

def _standardised(F: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each column centred and scaled to unit variance; a constant column becomes zeros."""
    std = F.std(axis=0)
    return np.where(std > 0, (F - F.mean(axis=0)) / np.where(std > 0, std, 1.0), 0.0)


def _labels(game: Any, y: NDArray, classification: bool) -> tuple[NDArray[np.float64], NDArray]:
    """The label columns (one-hot over the training classes, or ``y``) and the classes (empty for regression)."""
    if not classification:
        return np.asarray(y, dtype=float).reshape(-1, 1), np.empty(0)
    targets = getattr(game, "targets", None)
    classes = np.asarray(getattr(targets, "classes", np.unique(y)))
    onehot = (np.asarray(y).reshape(-1, 1) == classes.reshape(1, -1)).astype(float)
    return onehot, classes


def _has_marginal_model(game: Any, classification: bool) -> bool:
    """Whether the game offers what the marginal signal needs: a fit/predict model and a validation set
    (of two classes or more for a classifier, which one class could not fit)."""
    model = getattr(game, "model", None)
    if not (callable(getattr(model, "fit", None)) and callable(getattr(model, "predict", None))):
        return False
    y_test = getattr(game, "y_test", None)
    if getattr(game, "X_test", None) is None or y_test is None:
        return False
    return not classification or np.unique(np.asarray(y_test)).size >= 2


def _marginal(game: Any, labels: NDArray[np.float64], classes: NDArray) -> NDArray[np.float64]:
    r""":math:`|y_i - \hat f_{\mathrm{val}}(x_i)|`: a copy of ``game.model`` fitted on the validation set,
    predicting the training points (probabilities over the training classes for a classifier)."""
    model = fresh_copy(game.model)
    unseeded = unseeded_random_states(model) if callable(getattr(model, "set_params", None)) else []
    if unseeded:  # seeds from a fixed stream: the features are a function of the game alone
        model.set_params(**dict(zip(unseeded, model_seeds(MARGINAL_ENTROPY, 0, len(unseeded)))))
    model.fit(game.X_test, game.y_test)
    if classes.size == 0:
        return np.abs(labels - np.asarray(model.predict(game.X_train), dtype=float).reshape(-1, 1))
    if callable(getattr(model, "predict_proba", None)):
        proba = np.asarray(model.predict_proba(game.X_train), dtype=float)
        seen = np.asarray(model.classes_).reshape(-1, 1) == classes.reshape(1, -1)  # its classes -> ours
        predicted = proba @ seen.astype(float)
    else:  # no probabilities: the predicted class, one-hot
        predicted = (np.asarray(model.predict(game.X_train)).reshape(-1, 1) == classes.reshape(1, -1)).astype(float)
    return np.abs(labels - predicted)


def _game_features(game: Any, marginal: bool | None) -> tuple[NDArray[np.float64] | None, str]:
    """The standardised features of ``game``'s players and what they hold (``None``: a table of logits)."""
    X, y = getattr(game, "X_train", None), getattr(game, "y_train", None)
    if X is None or y is None:
        if marginal:
            raise ValueError("marginal=True needs a game with X_train, y_train, a model and a validation set "
                             f"(ModelUtility); {type(game).__name__} has no X_train or y_train.")
        return None, "players (one logit each)"
    try:
        X = check_features(X, "game.X_train")
    except (TypeError, ValueError) as exc:  # text columns, a sparse matrix, missing values
        raise type(exc)(f"dvrl: {exc} Pass features=, an (n_players, d) finite numeric array.") from exc
    task = getattr(game, "task", None)
    classification = task == "classification" if task is not None else np.asarray(y).dtype.kind not in "fc"
    labels, classes = _labels(game, y, classification)
    columns, described = [X, labels], [f"x ({X.shape[1]})", f"{'one-hot ' if classification else ''}y "
                                                           f"({labels.shape[1]})"]
    available = _has_marginal_model(game, classification)
    if marginal and not available:
        raise ValueError(f"marginal=True needs the game's validation set and a model with fit and predict (and, "
                         f"for a classifier, two classes in y_test); {type(game).__name__} lacks them.")
    if available and marginal is not False:
        columns.append(_marginal(game, labels, classes))
        described.append(f"marginal |y - f_val(x)| ({labels.shape[1]})")
    return _standardised(np.hstack(columns)), " + ".join(described)


def dvrl_features(game: GameLike, marginal: bool | None = None) -> NDArray[np.float64] | None:
    r"""The input of :func:`dvrl`'s value estimator for ``game`` when no ``features`` are passed.

    The columns, each standardised: the game's training features
    ``X_train``, its labels ``y_train`` (one-hot over the training classes
    for classification), and, where the game has a model with ``fit`` and
    ``predict`` and a validation set (``ModelUtility``) and ``marginal`` is
    not ``False``, the marginal signal :math:`|y_i - \hat f_{val}(x_i)|` of
    a copy of the model fitted on the validation set (one column per class).
    ``None`` for a game without ``X_train`` and ``y_train``: :func:`dvrl`
    then learns one logit per player. Where the model leaves a
    ``random_state`` unset, the copy gets one from a fixed stream, so the
    features depend on the game alone.
    """
    check_game(game)
    return _game_features(game, _check_marginal(marginal))[0]


# --------------------------------------------------------------------------------------------
# The value estimator: a ReLU network in numpy, with its gradient written out
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Network:
    """A ReLU MLP from ``sizes[0]`` inputs to one logit, its parameters one flat vector.

    With ``table`` the input is the identity (no features): the first layer's
    weights are then one row per player, read instead of multiplied.
    """

    sizes: tuple[int, ...]
    table: bool = False

    @property
    def shapes(self) -> list[tuple[int, int]]:
        """``(inputs, outputs)`` of each layer."""
        return list(zip(self.sizes[:-1], self.sizes[1:]))

    @property
    def n_params(self) -> int:
        return sum(n_in * n_out + n_out for n_in, n_out in self.shapes)

    def layers(self, theta: NDArray[np.float64]) -> list[tuple[NDArray[np.float64], NDArray[np.float64]]]:
        """``(W, b)`` of each layer: views of ``theta``."""
        out, start = [], 0
        for n_in, n_out in self.shapes:
            W = theta[start:start + n_in * n_out].reshape(n_in, n_out)
            start += n_in * n_out
            out.append((W, theta[start:start + n_out]))
            start += n_out
        return out

    def initial(self, rng: np.random.Generator) -> NDArray[np.float64]:
        """He-normal hidden weights, zero biases and a zero output layer: every :math:`p_i = 1/2` at the start."""
        theta = np.zeros(self.n_params)
        for W, _ in self.layers(theta)[:-1]:
            W[...] = rng.normal(0.0, np.sqrt(2.0 / W.shape[0]), W.shape)
        return theta

    def forward(self, theta: NDArray[np.float64], F: NDArray[np.float64] | None
                ) -> tuple[NDArray[np.float64], list[NDArray[np.float64]]]:
        """The logits, and the input of every layer (for :meth:`backward`)."""
        inputs: list[NDArray[np.float64]] = []
        a = F
        layers = self.layers(theta)
        for index, (W, b) in enumerate(layers):
            inputs.append(a)  # type: ignore[arg-type]  # None only for a table's first layer
            z = (W if a is None else a @ W) + b
            a = z if index == len(layers) - 1 else np.maximum(z, 0.0)
        return a[:, 0], inputs  # type: ignore[index]

    def backward(self, theta: NDArray[np.float64], inputs: list[NDArray[np.float64]],
                 grad_logits: NDArray[np.float64]) -> NDArray[np.float64]:
        """The gradient of the loss in ``theta``, from its gradient in the logits."""
        grad = np.zeros_like(theta)
        layers, grad_layers = self.layers(theta), self.layers(grad)
        delta = grad_logits.reshape(-1, 1)
        for index in range(len(layers) - 1, -1, -1):
            (W, _), (gW, gb), a = layers[index], grad_layers[index], inputs[index]
            gW[...] = delta if a is None else a.T @ delta
            gb[...] = delta.sum(axis=0)
            if index:
                delta = (delta @ W.T) * (inputs[index] > 0)  # the ReLU's gate: its output was this layer's input
        return grad


def _expit(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """The logistic function, without overflow for large negative logits."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


# --------------------------------------------------------------------------------------------
# The optimisation: REINFORCE steps, Adam, a state a checkpoint holds
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Options:
    batch_size: int
    learning_rate: float
    threshold: float
    exploration_weight: float
    baseline: str
    window: int


@dataclass
class _State:
    """The optimiser after ``step`` steps: parameters, Adam's moments, the moving average, the traces.

    The traces hold one entry per step; a write keeps their first ``step`` entries, so a state stopped
    between appending and moving on is written as it was before the step.
    """

    theta: NDArray[np.float64]
    m: NDArray[np.float64]
    v: NDArray[np.float64]
    step: int = 0
    average: float | None = None
    utilities: list[float] = field(default_factory=list)  # mean utility of each step's coalitions
    selection: list[float] = field(default_factory=list)  # mean selection probability at each step

    @classmethod
    def held_by(cls, store: Checkpoint, n_params: int) -> _State:
        """What a checkpoint holds: ``mean`` = parameters then Adam's first moments, ``m2`` = its second
        moments then zeros, the step in ``batches`` and the rest in its JSON context (floats round-trip)."""
        mean, m2 = np.asarray(store.mean, dtype=float), np.asarray(store.m2, dtype=float)
        context = store.context
        return cls(mean[:n_params].copy(), mean[n_params:].copy(), m2[:n_params].copy(), int(store.batches),
                   context.get("average"), [float(u) for u in context.get("utilities", [])],
                   [float(p) for p in context.get("selection", [])])

    def save(self, store: Checkpoint | None, batch_size: int, force: bool) -> None:
        if store is None:
            return
        store.context = {"average": self.average, "utilities": self.utilities[:self.step],
                         "selection": self.selection[:self.step]}
        done = self.step * batch_size
        store.save(np.concatenate([self.theta, self.m]), np.concatenate([self.v, np.zeros_like(self.v)]), done,
                   done, self.step, force=force)

    def adam(self, grad: NDArray[np.float64], learning_rate: float, average: float | None, mean_utility: float,
             mean_selection: float) -> _State:
        """The state after one Adam step along ``grad`` (Kingma & Ba 2015, bias-corrected moments)."""
        step = self.step + 1
        m = ADAM_BETA1 * self.m + (1.0 - ADAM_BETA1) * grad
        v = ADAM_BETA2 * self.v + (1.0 - ADAM_BETA2) * grad * grad
        update = (m / (1.0 - ADAM_BETA1 ** step)) / (np.sqrt(v / (1.0 - ADAM_BETA2 ** step)) + ADAM_EPSILON)
        self.utilities.append(mean_utility)  # O(1) a step; the lists are shared with the next state
        self.selection.append(mean_selection)
        return _State(self.theta - learning_rate * update, m, v, step, average, self.utilities, self.selection)


def _rewards(utilities: NDArray[np.float64], average: float | None, baseline: str) -> NDArray[np.float64]:
    """``U(s_k) - b_k``: minus the mean of the step's other coalitions, or the moving average (started at the
    first step's mean)."""
    if baseline == "batch":
        return utilities - (utilities.sum() - utilities) / (utilities.size - 1)
    return utilities - (float(utilities.mean()) if average is None else average)


def _step(game: GameLike, net: _Network, F: NDArray[np.float64] | None, state: _State, options: _Options,
          entropy: int, n: int) -> _State:
    """One REINFORCE step: draw ``K`` coalitions from the current probabilities, evaluate them in one call,
    and take one Adam step on the loss of the module's docstring. Returns the next state."""
    logits, inputs = net.forward(state.theta, F)
    p = _expit(logits)
    masks = batch_rng(entropy, state.step).random((options.batch_size, n)) < p
    utilities = check_utilities(game.evaluate(masks), options.batch_size)
    rewards = _rewards(utilities, state.average, options.baseline)
    # d/dz_i of -(1/K) sum_k r_k log pi(s_k) is -(1/K) sum_k r_k (s_ki - p_i)
    grad_logits = -(rewards @ masks.astype(float) - rewards.sum() * p) / options.batch_size
    mean_p, mean_u = float(p.mean()), float(utilities.mean())
    push = float(mean_p > options.threshold) - float(mean_p < 1.0 - options.threshold)
    if push:  # the exploration penalty's gradient: lambda/N per point, through p_i (1 - p_i)
        grad_logits = grad_logits + options.exploration_weight * push / n * p * (1.0 - p)
    average = None
    if options.baseline == "moving_average":
        previous = mean_u if state.average is None else state.average
        average = previous + (mean_u - previous) / options.window
    return state.adam(net.backward(state.theta, inputs, grad_logits), options.learning_rate, average, mean_u, mean_p)


def _optimise(game: GameLike, net: _Network, F: NDArray[np.float64] | None, state: _State, options: _Options,
              steps: int, entropy: int, store: Checkpoint | None, progress: bool | None) -> _State:
    """Steps ``state.step .. steps - 1`` under a progress bar; the state is written to ``store`` after a step
    (every ``interval`` seconds), at the end and on an interruption (Ctrl-C, SIGTERM)."""
    n = game.n_players
    with terminated_as_exit(saving=store is not None), pinned_threads(), \
            evaluation_bar(progress, steps * options.batch_size, desc="DVRL") as advance:
        advance(state.step * options.batch_size)
        try:
            while state.step < steps:
                state = _step(game, net, F, state, options, entropy, n)  # replaced whole: never half-updated
                advance(options.batch_size)
                state.save(store, options.batch_size, force=False)
        finally:
            state.save(store, options.batch_size, force=True)
    return state


# --------------------------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------------------------

def _check_marginal(marginal: object) -> bool | None:
    if marginal is None or isinstance(marginal, (bool, np.bool_)):
        return None if marginal is None else bool(marginal)
    raise TypeError(f"marginal must be True, False or None (auto), got {marginal!r} of type "
                    f"{type(marginal).__name__}.")


def _check_hidden(hidden: object) -> tuple[int, ...]:
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence):
        raise TypeError(f"hidden must be a sequence of layer widths (e.g. (100,), or () for a logistic "
                        f"estimator), got {hidden!r} of type {type(hidden).__name__}.")
    return tuple(check_int(width, "hidden", minimum=1) for width in hidden)


def _check_options(budget: object, batch_size: object, learning_rate: object, threshold: object,
                   exploration_weight: object, baseline: object, window: object) -> tuple[int, _Options]:
    """``budget`` and the optimiser's options, checked (each error names its argument)."""
    baseline = check_choice(baseline, "baseline", BASELINES)
    batch_size = check_int(batch_size, "batch_size", minimum=2 if baseline == "batch" else 1)
    budget = check_int(budget, "budget", minimum=1)
    if budget < batch_size:
        raise ValueError(f"budget={budget} is smaller than one step of batch_size={batch_size} coalitions; "
                         "pass a larger budget or a smaller batch_size.")
    options = _Options(batch_size, check_float(learning_rate, "learning_rate", minimum=0.0, strict=True),
                       check_float(threshold, "threshold", minimum=0.5, strict=True, maximum=1.0),
                       check_float(exploration_weight, "exploration_weight", minimum=0.0), baseline,
                       check_int(window, "window", minimum=1))
    return budget, options


def _check_run(seed: object, checkpoint: object, checkpoint_interval: object) -> None:
    """The seed and the checkpoint's arguments, before the features (which may fit a model) are built."""
    if seed is not None:
        check_seed(seed)
    if checkpoint is not None:
        check_checkpoint_path(checkpoint)
        check_float(checkpoint_interval, "checkpoint_interval", minimum=0.0)


def _check_features(features: ArrayLike, n: int) -> NDArray[np.float64]:
    F = check_features(features, "features")
    if F.shape[0] != n:
        raise ValueError(f"features must have one row per player: expected {n} rows, got {F.shape[0]}.")
    return _standardised(F)


def dvrl(game: GameLike, budget: int, seed: int | np.random.SeedSequence | None = None, *,
         features: ArrayLike | None = None, marginal: bool | None = None, batch_size: int = 32,
         hidden: Sequence[int] = DEFAULT_HIDDEN, learning_rate: float = 0.01, threshold: float = 0.9,
         exploration_weight: float = 1e3, baseline: Literal["batch", "moving_average"] = "batch",
         window: int = 20, progress: bool | None = None, checkpoint: str | os.PathLike[str] | None = None,
         checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""DVRL values (Yoon, Arik & Pfister, ICML 2020): selection probabilities learned by REINFORCE on ``U``.

    A value estimator :math:`p_i = h_\phi(f_i)` (a ReLU network on the
    points' features, sigmoid output) is trained to maximise
    :math:`\mathbb{E}_{s}[U(s)]` over coalitions :math:`s` holding each point
    independently with probability :math:`p_i`: each of ``budget //
    batch_size`` steps draws ``batch_size`` coalitions from the current
    probabilities, evaluates them in one call of ``game.evaluate``, and takes
    one Adam step on the REINFORCE loss with the exploration penalty (the
    module's docstring has the loss). The values are the final
    :math:`p_i`: high for points whose presence raised the utility of the
    coalitions drawn. On an additive game :math:`U(S) = c + \sum_{i \in S}
    w_i` the expected gradient in the logit of ``i`` is
    :math:`p_i (1 - p_i) w_i`, so players with :math:`w_i > 0` rise, players
    with :math:`w_i < 0` fall and null players move only by noise (and the
    shared penalty). A learned value is neither a semivalue nor an estimate
    of one: no efficiency, no standard error, and it depends on the
    optimiser's settings and budget.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    budget : int
        Utility evaluations: ``budget // batch_size`` steps of ``batch_size``
        coalitions (a remainder is not spent), at least one step.
    seed : int or SeedSequence, optional
        Entropy of the run: step ``t`` draws its coalitions from the stream
        ``(seed, t)``, the hidden layers' initial weights from an auxiliary
        stream. The same seed gives the same bits. ``None`` draws fresh
        entropy, kept on the result.
    features : array of shape (n_players, d), optional
        The estimator's input, one row per player (each column is
        standardised). By default built from the game (:func:`dvrl_features`):
        training features, labels and the marginal signal for a game holding
        its data; one free logit per player for any other game.
    marginal : bool, optional
        Whether the default features include the marginal signal
        :math:`|y_i - \hat f_{val}(x_i)|` (one extra fit of the game's model,
        on its validation set). ``None``: where the game allows it
        (``ModelUtility``); ``True``: required; ``False``: never.
    batch_size : int, default 32
        Coalitions per step, all evaluated in one call. More give each step a
        less noisy gradient; fewer give more steps for the budget. At least
        2 with the ``"batch"`` baseline.
    hidden : sequence of int, default (100,)
        Widths of the hidden ReLU layers; ``()`` is a logistic estimator. A
        game without features always gets a table of logits.
    learning_rate : float, default 0.01
        Adam's step size (the paper's and OpenDataVal's).
    threshold : float, default 0.9
        :math:`\eta` in (0.5, 1]: the penalty keeps the mean selection
        probability in :math:`[1 - \eta, \eta]`; 1 disables it.
    exploration_weight : float, default 1000
        :math:`\lambda`, the weight of the penalty.
    baseline : {"batch", "moving_average"}, default "batch"
        ``"batch"``: each coalition's reward is its utility minus the mean of
        the step's other coalitions (unbiased, and it removes the utility's
        common level from every step: the lower variance); ``"moving_average"``: minus
        the paper's moving average of past steps' mean utilities, window
        ``window`` (started at the first step's mean).
    window : int, default 20
        :math:`T` of the moving average.
    progress : bool, optional
        A progress bar over the utility evaluations (default: in terminals
        and notebooks, and in logs once the run has lasted 30 s; ``False``:
        none). It never changes a number.
    checkpoint : str or os.PathLike, optional
        File holding the optimiser after its last step (parameters, Adam's
        moments, the moving average, the traces), written atomically at most
        every ``checkpoint_interval`` seconds, at the end and when the run
        is interrupted; if it exists the run continues from it (with its seed
        when ``seed`` is None) and gives the values of an uninterrupted run
        bit for bit. A file from another call (game, features, options) is
        refused with :class:`~shapley_research.CheckpointError` before any
        evaluation and never overwritten.
    checkpoint_interval : float, default 60
        Minimum seconds between two writes of the checkpoint.

    Returns
    -------
    ValuationResult
        ``method="dvrl"``, the values :math:`p_i` in (0, 1),
        ``n_evaluations = n_samples`` = the coalitions evaluated, the seed,
        no standard error. ``info``: ``logits`` (:math:`z_i`, which break
        ties of saturated probabilities), ``features`` (what the input held),
        ``steps``, ``batch_size``, ``baseline``, ``utility_trace`` and
        ``selection_trace`` (each step's mean utility and mean selection
        probability: a rising first trace shows the estimator learning) and
        ``resumed_steps``.

    Notes
    -----
    Departures from the paper, each for the game setting: a step draws
    ``batch_size`` coalitions of *all* players (the paper draws one selection
    over a mini-batch of points and trains one model on it), the reward is
    the game's utility (the paper's validation performance), the marginal
    signal is one input among the others (the authors' network joins it to
    a late layer), and the default baseline is the step's leave-one-out mean (the
    paper's moving average is ``baseline="moving_average"``). There are no
    workers (``n_jobs``): the steps depend on each other, and one step's
    coalitions are one call that a batched game already parallelises.
    """
    start = time.perf_counter()
    n = check_game(game)
    budget, options = _check_options(budget, batch_size, learning_rate, threshold, exploration_weight, baseline,
                                     window)
    widths, marginal = _check_hidden(hidden), _check_marginal(marginal)
    progress = check_progress(progress)
    _check_run(seed, checkpoint, checkpoint_interval)
    if features is not None and marginal is not None:
        raise ValueError("marginal applies to the default features only; pass features or marginal, not both.")
    steps = budget // options.batch_size
    entropy, store, F, described, net = _prepare(game, n, features, marginal, widths, options, budget, seed,
                                                 checkpoint, checkpoint_interval)
    state = (_State.held_by(store, net.n_params) if store is not None and store.loaded else
             _State(net.initial(aux_rng(entropy)), np.zeros(net.n_params), np.zeros(net.n_params)))
    resumed = state.step
    state = _optimise(game, net, F, state, options, steps, entropy, store, progress)
    with pinned_threads():  # the final logits as every step's: on one BLAS thread
        logits = net.forward(state.theta, F)[0]
    info = {"logits": logits, "features": described, "steps": steps, "batch_size": options.batch_size,
            "baseline": options.baseline, "hidden": list(net.sizes[1:-1]),
            "utility_trace": np.asarray(state.utilities), "selection_trace": np.asarray(state.selection),
            "resumed_steps": resumed}
    spent = steps * options.batch_size
    return ValuationResult(values=_expit(logits), n_evaluations=spent, method="dvrl", seed=entropy,
                           wall_time=time.perf_counter() - start, n_samples=spent, info=info)


def _prepare(game: GameLike, n: int, features: ArrayLike | None, marginal: bool | None, widths: tuple[int, ...],
             options: _Options, budget: int, seed: Any, checkpoint: Any, interval: Any
             ) -> tuple[int, Checkpoint | None, NDArray[np.float64] | None, str, _Network]:
    """The seed, the checkpoint (opened and checked), the features and the network of a run."""
    F: NDArray[np.float64] | None
    if features is not None:
        F, described = _check_features(features, n), "given"
    else:
        F, described = _game_features(game, marginal)
    net = _Network((n, 1) if F is None else (F.shape[1], *widths, 1), table=F is None)
    digest = "table" if F is None else hashlib.sha256(np.ascontiguousarray(F).tobytes()).hexdigest()
    entropy, store = open_checkpoint(checkpoint, seed, dim=2 * net.n_params, interval=interval, fingerprint={
        "method": "dvrl", "n_players": n, "budget": budget, "sizes": list(net.sizes), "features": digest,
        "batch_size": options.batch_size, "learning_rate": options.learning_rate, "threshold": options.threshold,
        "exploration_weight": options.exploration_weight, "baseline": options.baseline, "window": options.window,
        "game": game_identity(game)})
    return entropy, store, F, described, net
