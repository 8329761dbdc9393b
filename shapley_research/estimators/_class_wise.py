r"""Class-wise Shapley values (CS-Shapley; Schoch, Xu and Ji, NeurIPS 2022), for games that train a classifier.

A point ``i`` of class :math:`c` is valued by the Shapley value over the
in-class training points :math:`D_c` of the utility

.. math::

    U(S_c \mid S_{-c}) = a_S(T_c)\, \exp\bigl(a_S(T_{-c})\bigr),
    \qquad S = S_c \cup S_{-c},

where :math:`S_{-c}` is a context of out-of-class training points, the model
is trained on :math:`S`, and :math:`a_S(T_c)` and :math:`a_S(T_{-c})` are the
numbers of test points of class :math:`c` and of the other classes that it
predicts right, over the test set's size (pyDVL's rescaled accuracies): a
point that raises the accuracy on its own class at the expense of the others
is worth less than one that raises both. The estimate (pyDVL's
``ClasswiseShapley``): for each class in turn, a context draws every
out-of-class point with probability 1/2 (drawn again until it holds every other
class), then a random permutation of the in-class points, and the marginal
contributions along it are averaged; last, the values of each class are
scaled to sum to :math:`a_D(T_c)` (the paper's normalisation).

The game supplies the data, the model and the predictions: a
:class:`~shapley_research.ModelUtility` (any classifier; a routed one
predicts through its batched learner),
:class:`~shapley_research.LogisticRegressionUtility` or
:class:`~shapley_research.TorchModelUtility`, whose ``predict`` trains a
whole chunk of coalitions at once.

The estimate runs on the sampling driver (:mod:`._sampling._driver`) like
every sampling estimator: a unit is a *round*, one context and one
permutation of every class (:math:`N + C` coalitions, each training point
getting one marginal contribution), so the batches, their seeds, ``n_jobs``,
checkpoints, precision targets and the progress bar are the driver's.
"""

from __future__ import annotations

import copy
import functools
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._sampling._driver import Run, Sampler, SamplingOptions, SamplingSpec, drive
from ._sampling._loop import MeanState
from .._validation import check_bool, check_int
from ..result import ValuationResult
from ..utilities import ConstantPredictor, LogisticRegressionUtility, ModelUtility, TorchModelUtility, degenerate_rows

__all__ = ["class_wise_shapley", "class_wise_predictions", "class_wise_minimum_budget"]

GAMES = (ModelUtility, LogisticRegressionUtility, TorchModelUtility)
#: Most mask cells handed to one prediction call by default (a few MiB of booleans).
CHUNK_CELLS = 2**22
#: Draws of an out-of-class context before giving up on one holding every other class.
MAX_CONTEXT_DRAWS = 1000


def _check_classifier_game(game: object) -> None:
    if not isinstance(game, GAMES):
        raise TypeError(f"game must be a ModelUtility, LogisticRegressionUtility or TorchModelUtility (a game that "
                        f"trains a classifier, whose labels and predictions class-wise Shapley needs), got "
                        f"{type(game).__name__}.")
    if getattr(game, "task", "classification") != "classification":
        raise ValueError(f"game must be a classification utility; this {type(game).__name__} has "
                         f"task={game.task!r}.")


def _fit_and_predict(game: ModelUtility, masks: NDArray[np.bool_]) -> np.ndarray:
    """Predicted test labels of a clone of ``game.model`` fitted on each row (the constant model where degenerate)."""
    from sklearn.base import clone

    predictions = np.empty((masks.shape[0], len(game.y_test)), dtype=game.targets.classes.dtype)
    degenerate = degenerate_rows(masks, game.targets, game.min_samples)
    X = game.X_train
    for row, mask in enumerate(masks):
        if degenerate[row]:
            model: Any = ConstantPredictor.from_coalition(mask, game.targets)
        else:
            model = clone(game.model) if hasattr(game.model, "get_params") else copy.deepcopy(game.model)
            rows = X.iloc[np.flatnonzero(mask)] if hasattr(X, "iloc") else X[mask]
            model.fit(rows, game.y_train[mask])
        predictions[row] = np.asarray(model.predict(game.X_test))
    return predictions


def class_wise_predictions(game: ModelUtility | LogisticRegressionUtility | TorchModelUtility,
                           masks: NDArray[np.bool_]) -> np.ndarray:
    """Predicted test labels ``(m, n_test)`` of the model trained on each coalition of ``masks``.

    Through the game's own batched ``predict`` where it has one (the batched
    learners, a routed ``ModelUtility``), else one fit of a clone of the model
    per coalition; a degenerate coalition (empty, one class, fewer than
    ``min_samples`` points) predicts the constant model's label, as the game
    scores it with ``degenerate="constant"``.
    """
    _check_classifier_game(game)
    masks = np.asarray(masks, dtype=bool)
    if isinstance(game, (LogisticRegressionUtility, TorchModelUtility)):
        return np.asarray(game.predict(masks))
    if game.learner_ is not None:
        return np.asarray(game.learner_.predict(masks))
    return _fit_and_predict(game, masks)


@dataclass(frozen=True)
class _Classes:
    """The training classes and the test points of each, by index."""

    train: NDArray[np.intp]  # class index of each training point
    test: NDArray[np.intp]  # class index of each test point, -1 for a class absent from training
    y_test: np.ndarray
    n_classes: int

    @classmethod
    def of(cls, game: ModelUtility | LogisticRegressionUtility | TorchModelUtility) -> _Classes:
        targets = game.targets
        return cls(np.asarray(targets.y_train_index), np.asarray(targets.y_test_index), np.asarray(game.y_test),
                   int(targets.n_classes))

    @functools.cached_property
    def sizes(self) -> NDArray[np.intp]:
        return np.bincount(self.train, minlength=self.n_classes)

    @functools.cached_property
    def _members(self) -> list[NDArray[np.intp]]:
        return [np.flatnonzero(self.train == label) for label in range(self.n_classes)]

    def members(self, label: int) -> NDArray[np.intp]:
        return self._members[label]

    def utilities(self, predictions: np.ndarray, labels: NDArray[np.intp]) -> NDArray[np.float64]:
        """:math:`a_S(T_c) \\exp(a_S(T_{-c}))` of each row of predictions, ``c`` the row's class index in ``labels``."""
        correct = predictions == self.y_test[None, :]
        in_class = (correct & (self.test[None, :] == labels[:, None])).sum(axis=1)
        n_test = self.y_test.shape[0]
        return in_class / n_test * np.exp((correct.sum(axis=1) - in_class) / n_test)

    def in_class_accuracy(self, predictions: np.ndarray) -> NDArray[np.float64]:
        """:math:`a(T_c)` of one model's test predictions, for every class ``c``."""
        correct = predictions == self.y_test
        return np.array([correct[self.test == label].sum() for label in range(self.n_classes)]) / self.y_test.size


def _context(rng: np.random.Generator, classes: _Classes, label: int) -> NDArray[np.bool_]:
    """An out-of-class context: each point with probability 1/2, redrawn until every other class is in it."""
    out = classes.train != label
    needed = np.setdiff1d(np.unique(classes.train[out]), [label])
    for _ in range(MAX_CONTEXT_DRAWS):
        context = out & (rng.random(classes.train.size) < 0.5)
        if np.isin(needed, classes.train[context]).all():
            return context
    raise RuntimeError(f"no context holding every class but {label} in {MAX_CONTEXT_DRAWS} draws.")


@dataclass(frozen=True)
class _Rounds:
    """A batch's rounds: the context and in-class order drawn for each (round, class) block, in draw order.

    Block ``(r, c)`` is ``n_c + 1`` coalitions, the context plus the first
    ``j`` in-class points of the order, ``j = 0 .. n_c``; the batch's
    coalitions are the blocks one after the other, built a chunk of rows at a
    time (:meth:`masks`) so that memory stays at a chunk's whatever ``N``.
    """

    classes: _Classes
    contexts: list[NDArray[np.bool_]]
    orders: list[NDArray[np.intp]]

    @classmethod
    def draw(cls, rng: np.random.Generator, classes: _Classes, size: int) -> _Rounds:
        contexts, orders = [], []
        for _ in range(size):
            for label in range(classes.n_classes):
                contexts.append(_context(rng, classes, label))
                orders.append(rng.permutation(int(classes.sizes[label])))
        return cls(classes, contexts, orders)

    @property
    def labels(self) -> NDArray[np.intp]:
        """The class of every block."""
        return np.arange(len(self.orders)) % self.classes.n_classes

    @functools.cached_property
    def starts(self) -> NDArray[np.intp]:
        """The first row of every block, and the batch's row count last."""
        return np.concatenate([[0], np.cumsum([order.size + 1 for order in self.orders])])

    def masks(self, start: int, stop: int) -> NDArray[np.bool_]:
        """Coalitions ``start .. stop - 1`` of the batch."""
        masks = np.empty((stop - start, self.classes.train.size), dtype=bool)
        starts = self.starts
        for block in range(np.searchsorted(starts, start, side="right") - 1, len(self.orders)):
            first, last = max(start, starts[block]), min(stop, starts[block + 1])
            if first >= last:
                break
            order, label = self.orders[block], block % self.classes.n_classes
            position = np.empty(order.size, dtype=np.intp)
            position[order] = np.arange(order.size)
            rows = masks[first - start:last - start]
            rows[:] = self.contexts[block][None, :]
            rows[:, self.classes.members(label)] = position[None, :] < np.arange(first, last)[:, None] - starts[block]
        return masks

    def marginals(self, utilities: NDArray[np.float64], size: int) -> NDArray[np.float64]:
        """``(size, N)``: every training point's marginal contribution in each round, from the rows' utilities."""
        marginals = np.zeros((size, self.classes.train.size))
        starts = self.starts
        for block, order in enumerate(self.orders):
            label = block % self.classes.n_classes
            marginals[block // self.classes.n_classes, self.classes.members(label)[order]] = \
                np.diff(utilities[starts[block]:starts[block + 1]])
        return marginals


def class_wise_minimum_budget(n_players: int, n_classes: int, normalize: bool = True) -> int:
    """The smallest budget :func:`class_wise_shapley` accepts: one permutation of every class (+ 1 to normalise).

    A permutation of class :math:`c` costs :math:`n_c + 1` fits, so one of
    each costs :math:`N + C` whatever the class sizes, and ``normalize`` adds
    the fit on all the data.
    """
    n_players = check_int(n_players, "n_players", minimum=1)
    n_classes = check_int(n_classes, "n_classes", minimum=1)
    return n_players + n_classes + int(check_bool(normalize, "normalize"))


@dataclass(frozen=True, kw_only=True)
class ClassWiseSpec(SamplingSpec):
    """:func:`class_wise_shapley` for :func:`~._sampling._driver.drive`: a unit is a round (one permutation of
    every class), reduced to each point's marginal contribution and, last, the models it fitted."""

    classes: _Classes
    normalize: bool
    chunk_rows: int
    labels: list
    needs_empty: bool = False
    enumerable = False  # the values are not those of game.evaluate
    replayable = False  # its batches ask the game for predictions, which the batch log does not keep

    def fixed(self, empty_utility: float | None) -> int:
        return int(self.normalize)

    def fingerprint_options(self, n_units: int | None) -> dict:
        return {"class_sizes": self.classes.sizes.tolist(), "normalize": self.normalize}

    def start(self, game: Any, run: Run, anchors: Any) -> Sampler:
        classes, n = self.classes, self.n_players
        full: list = []  # the normalising fit, made once when first needed: after any refusal of a checkpoint

        def accuracy() -> NDArray[np.float64] | None:
            if self.normalize and not full:
                full.append(classes.in_class_accuracy(class_wise_predictions(game, np.ones((1, n), dtype=bool))[0]))
            return full[0] if full else None

        def sample_batch(rng: np.random.Generator, size: int) -> tuple[NDArray[np.float64], int]:
            rounds = _Rounds.draw(rng, classes, size)
            rows = int(rounds.starts[-1])
            utilities, fits = np.empty(rows), np.zeros(size)
            labels = np.repeat(rounds.labels, np.diff(rounds.starts))
            for first in range(0, rows, self.chunk_rows):
                last = min(rows, first + self.chunk_rows)
                masks = rounds.masks(first, last)
                utilities[first:last] = classes.utilities(class_wise_predictions(game, masks), labels[first:last])
                fitted = ~degenerate_rows(masks, game.targets, game.min_samples)
                np.add.at(fits, np.arange(first, last)[fitted] // (n + classes.n_classes), 1)
            return np.column_stack([rounds.marginals(utilities, size), fits]), rows

        return Sampler(sample_batch, {}, evaluations=int(self.normalize), watch=slice(0, n),
                       estimates_of=lambda state: self._scaled(state, accuracy())[:2],
                       context={"accuracy": accuracy})

    def _scaled(self, state: MeanState,
                accuracy: NDArray[np.float64] | None) -> tuple[np.ndarray, np.ndarray, list]:
        """Values, standard errors and factors: each class scaled to sum to ``accuracy`` (``None``: as sampled)."""
        n = self.n_players
        values, stderr = state.mean[:n].copy(), state.stderr[:n].copy()
        factors = np.ones(self.classes.n_classes)
        if accuracy is not None:
            for label in range(self.classes.n_classes):
                members = self.classes.train == label
                total = values[members].sum()
                if total > 0:  # pyDVL scales by any non-zero sum; a negative one would reverse the class's ranking
                    factors[label] = accuracy[label] / total
                values[members] *= factors[label]
                stderr[members] *= abs(factors[label])
        return values, stderr, factors.tolist()

    def estimates(self, sampler: Sampler, state: MeanState) -> tuple[np.ndarray, np.ndarray | None, dict]:
        values, stderr, factors = self._scaled(state, sampler.context["accuracy"]())
        fits = int(round(state.mean[self.n_players] * state.count)) + int(self.normalize)
        return values, stderr, {"permutations": [state.count] * self.classes.n_classes, "factors": factors,
                                "normalize": self.normalize, "model_fits": fits}

    def report(self, sampler: Sampler, summary: dict, updates: dict) -> dict:
        rounds = {**summary, "resumed_samples": summary["resumed_samples"] * self.classes.n_classes}
        return {**updates, "classes": self.labels, **rounds}

    def samples(self, state: MeanState) -> int:
        return state.count * self.classes.n_classes


def class_wise_shapley(game: ModelUtility | LogisticRegressionUtility | TorchModelUtility, budget: int | None,
                       seed: int | np.random.SeedSequence | None = None, *, normalize: bool = True,
                       chunk_size: int | None = None, progress: bool | None = None,
                       checkpoint: str | os.PathLike[str] | None = None,
                       checkpoint_interval: float = 60.0, n_jobs: int | None = None, batch_size: int | None = None,
                       target_stderr: float | None = None,
                       target_rank_correlation: float | None = None) -> ValuationResult:
    r"""Class-wise Shapley values (CS-Shapley, Schoch, Xu & Ji, NeurIPS 2022) of a classifier's training points.

    Point ``i`` of class :math:`c` gets the mean of its marginal contributions
    :math:`U(P \cup \{i\} \mid S_{-c}) - U(P \mid S_{-c})` over samples of a
    context :math:`S_{-c}` (each out-of-class training point with probability
    1/2, drawn again until it holds every other class) and of a random
    permutation of the in-class points (:math:`P`: the in-class points before
    ``i``), with :math:`U(S_c \mid S_{-c}) = a_S(T_c) \exp(a_S(T_{-c}))` the
    in-class and out-of-class accuracies of the model trained on
    :math:`S_c \cup S_{-c}` (numbers of right test predictions over the test
    set's size; module docstring). The samples come in rounds, one context and
    one permutation of every class: a round costs :math:`N + C` model fits
    (:math:`n_c + 1` per class), made by the game a chunk at a time. For a
    fixed context the values of a class sum to :math:`U(D_c \mid S_{-c}) -
    U(\emptyset \mid S_{-c})` (efficiency within the class). With
    ``normalize`` (the paper's and pyDVL's default) the values of each class
    are then scaled to sum to :math:`a_D(T_c)`, the in-class accuracy of the
    model trained on all the data (one more fit); a class whose values sum to
    0 or less is left as it is (pyDVL scales a negative sum too, which
    reverses the class's ranking).

    Parameters
    ----------
    game : ModelUtility, LogisticRegressionUtility or TorchModelUtility
        A classification utility: its training labels, test labels and model
        (the game's own metric is not used). Any other game raises a
        ``TypeError``.
    budget : int or None
        Model fits (coalitions whose predictions are computed), including
        the normalising fit: whole rounds, at least one,
        :math:`N + C` (+ 1 with ``normalize``; :func:`class_wise_minimum_budget`).
        ``None`` (no cap) only with a ``target_stderr`` or
        ``target_rank_correlation``.
    seed : int or SeedSequence, optional
        Entropy of the contexts and permutations; the same seed gives the same
        bits. ``None`` draws fresh entropy, kept on the result.
    normalize : bool, default True
        Scale each class's values to sum to its in-class accuracy.
    chunk_size : int, optional
        Coalitions per prediction call, about; by default as many as fit in
        2**22 mask cells. The values do not depend on it.
    progress : bool, optional
        A progress bar over the model fits of the rounds (default: in
        terminals and notebooks, and in logs once the run has lasted 30 s;
        ``False``: none). It never changes a number.
    checkpoint : str or os.PathLike, optional
        File holding the run's state, written atomically after a batch at
        most every ``checkpoint_interval`` seconds, at the end and when the run
        is interrupted; if it exists, the run continues from it (with its seed
        when ``seed`` is None) and gives exactly the values of an
        uninterrupted run (the normalising fit is made again). A file from
        another call (game size, classes, ``normalize``, seed, batch size, or
        a smaller budget) or a corrupted one raises
        :class:`~shapley_research.CheckpointError` and is never overwritten;
        a finished run's file can be continued with a larger budget (its
        rounds kept as they were, batched as in
        :func:`~shapley_research.permutation_shapley`).
    checkpoint_interval : float, default 60
        Minimum seconds between two writes of the checkpoint.
    n_jobs : int, optional
        Batches of rounds run in parallel through joblib (``None`` or 1: in
        this process; -1: all cores; ``joblib.parallel_config`` picks the
        backend), each on one BLAS thread; the values are the same bits for
        any ``n_jobs``.
    batch_size : int, optional
        Rounds per batch, each batch drawn from its own stream (the values
        depend on it, as in :func:`~shapley_research.permutation_shapley`);
        by default as many as make about 4096 fits.
    target_stderr, target_rank_correlation : float, optional
        Stop after the first batch where the largest standard error of the
        (normalised) values is at most ``target_stderr``, or where the ranking
        is stable to ``target_rank_correlation``, from 30 rounds on; as in
        :func:`~shapley_research.permutation_shapley`. ``budget`` is then a cap.

    Returns
    -------
    ValuationResult
        ``method="class_wise_shapley"``; ``n_evaluations`` the coalitions whose
        predictions were computed, ``n_samples`` the permutations (rounds times
        classes), ``stderr`` the standard error of each point's mean marginal
        contribution (scaled like the value; NaN after one round); ``info``
        holds the permutations per class (``permutations``), the normalising
        factors (``factors``), the models fitted (``model_fits``: the
        coalitions that are not degenerate, which get the constant model's
        predictions instead), ``stopped_by`` and ``resumed_samples``
        (permutations read from the checkpoint).
    """
    _check_classifier_game(game)
    normalize = check_bool(normalize, "normalize")
    chunk = None if chunk_size is None else check_int(chunk_size, "chunk_size", minimum=1)
    options = SamplingOptions.checked(game, "class_wise_shapley", batch_size=batch_size, n_jobs=n_jobs,
                                      progress=progress,
                                      target_stderr=target_stderr, target_rank_correlation=target_rank_correlation,
                                      checkpoint=checkpoint, checkpoint_interval=checkpoint_interval)
    classes = _Classes.of(game)
    n = classes.train.size
    spec = ClassWiseSpec(method="class_wise_shapley", n_players=n, dim=n + 1, per_unit=n + classes.n_classes,
                         unit_name="round (one permutation of every class)", desc="class-wise Shapley",
                         progress_unit="round", classes=classes, normalize=normalize,
                         chunk_rows=max(1, CHUNK_CELLS // n) if chunk is None else chunk,
                         labels=game.targets.classes.tolist())
    return drive(spec, game, budget, seed, options)
