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
"""

from __future__ import annotations

import copy
import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import numpy as np
from numpy.typing import NDArray

from ._sampling._batches import close_batches, items_per_worker, ordered_results
from ._sampling._checkpoint import Checkpoint
from ._sampling._loop import open_checkpoint
from ._sampling._progress import evaluation_bar
from .._device import check_game_jobs
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

    def utilities(self, predictions: np.ndarray, label: int) -> NDArray[np.float64]:
        """:math:`a_S(T_c) \\exp(a_S(T_{-c}))` of each row of predictions, for class index ``label``."""
        correct = predictions == self.y_test[None, :]
        in_class = self.test == label
        n_test = self.y_test.shape[0]
        return correct[:, in_class].sum(axis=1) / n_test * np.exp(correct[:, ~in_class].sum(axis=1) / n_test)


def _plan(sizes: NDArray[np.intp], budget: int) -> NDArray[np.intp]:
    """Permutations per class: round robin over the classes, each costing ``n_c + 1`` evaluations."""
    counts = np.zeros(sizes.size, dtype=np.intp)
    left, cost = budget, sizes + 1
    while True:
        added = False
        for c in range(sizes.size):
            if cost[c] <= left:
                counts[c] += 1
                left -= int(cost[c])
                added = True
        if not added:
            return counts


def _context(rng: np.random.Generator, classes: _Classes, label: int) -> NDArray[np.bool_]:
    """An out-of-class context: each point with probability 1/2, redrawn until every other class is in it."""
    out = classes.train != label
    needed = np.setdiff1d(np.unique(classes.train[out]), [label])
    for _ in range(MAX_CONTEXT_DRAWS):
        context = out & (rng.random(classes.train.size) < 0.5)
        if np.isin(needed, classes.train[context]).all():
            return context
    raise RuntimeError(f"no context holding every class but {label} in {MAX_CONTEXT_DRAWS} draws.")


class _RunSoFar:
    """What a run has sampled, as its checkpoint keeps it.

    Every class's marginal contributions, flat in class order (the file's
    ``mean``; rows not sampled yet are 0), and in the file's ``context`` the
    permutations done per class, the models fitted, and the state of the
    generator of the class under way at its last chunk's end (a context is
    redrawn until it holds every other class, so the draws per permutation
    vary: the state, not a count, says where the stream stands).
    """

    def __init__(self, checkpoint: Checkpoint | None, counts: NDArray[np.intp], sizes: NDArray[np.intp]) -> None:
        self.checkpoint, self.counts, self.sizes = checkpoint, counts, sizes
        self.offsets = np.concatenate([[0], np.cumsum(counts * sizes)])
        self.flat, self.unused = np.zeros(int(self.offsets[-1])), np.zeros(int(self.offsets[-1]))
        self.done, self.fits, self.state = [0] * counts.size, 0, None
        if checkpoint is not None and checkpoint.loaded:
            self.flat[:] = checkpoint.mean
            self.done, self.fits, self.state = (checkpoint.context[key] for key in ("done", "fits", "state"))
        self.resumed_state = self.state

    def marginals(self, label: int) -> NDArray[np.float64]:
        """Class ``label``'s ``(permutations, n_c)`` marginal contributions (a view)."""
        return self.flat[self.offsets[label]:self.offsets[label + 1]].reshape(self.counts[label], self.sizes[label])

    def generator(self, entropy: int, label: int) -> np.random.Generator:
        """Class ``label``'s stream, where the checkpoint's last chunk of it left it (its start otherwise)."""
        rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(label,)))
        if self.resumed_state is not None and self.resumed_state["label"] == label:
            rng.bit_generator.state = self.resumed_state["bit_generator"]
        return rng

    @property
    def evaluations(self) -> int:
        return int(np.dot(self.done, self.sizes + 1))

    def record(self, label: int, done: int, fits: int, state: Mapping[str, Any]) -> None:
        """A chunk of class ``label`` is in: ``done`` permutations of it, ``fits`` more models fitted, and
        ``state`` the class's generator state after drawing it (the draws may run ahead of the chunks in)."""
        self.done[label], self.fits = done, self.fits + fits
        self.state = {"label": label, "bit_generator": state}
        self.save(force=False)

    def save(self, force: bool) -> None:
        if self.checkpoint is not None:
            self.checkpoint.context = {"done": list(self.done), "fits": self.fits, "state": self.state}
            self.checkpoint.save(self.flat, self.unused, sum(self.done), self.evaluations, 0, force=force)


@dataclass(frozen=True)
class _Chunk:
    """Permutations ``first ..`` of class ``label``: their flat prefix masks, the in-class orders, and the
    class's generator state after drawing them (what a checkpoint records once the chunk is in)."""

    label: int
    first: int
    orders: NDArray[np.intp]
    masks: NDArray[np.bool_]
    state: Mapping[str, Any]


def _class_chunks(classes: _Classes, label: int, so_far: _RunSoFar, entropy: int,
                  per_call: Callable[[int], int]) -> Iterator[_Chunk]:
    """Class ``label``'s permutations not sampled yet, drawn from its stream in order, ``per_call(k)`` a chunk."""
    members = np.flatnonzero(classes.train == label)
    n, k = classes.train.size, members.size
    rng, count = so_far.generator(entropy, label), int(so_far.counts[label])
    size = per_call(k)
    for first in range(so_far.done[label], count, size):
        batch = min(size, count - first)
        masks = np.zeros((batch, k + 1, n), dtype=bool)
        orders = np.empty((batch, k), dtype=np.intp)
        for b in range(batch):
            masks[b] = _context(rng, classes, label)[None, :]
            orders[b] = rng.permutation(k)
            position = np.empty(k, dtype=np.intp)
            position[orders[b]] = np.arange(k)
            masks[b][:, members] |= position[None, :] < np.arange(k + 1)[:, None]
        yield _Chunk(label, first, orders, masks.reshape(-1, n), rng.bit_generator.state)


def _sample(game: Any, classes: _Classes, so_far: _RunSoFar, entropy: int, per_call: Callable[[int], int],
            n_jobs: int | None, advance: Callable[[int], None]) -> None:
    """Every class's marginal contributions not sampled yet, into ``so_far``: chunks drawn in class and stream
    order, their predictions made here or by joblib's workers and taken back in that order."""
    drawn: deque[_Chunk] = deque()

    def inputs() -> Iterator[NDArray[np.bool_]]:
        for label in range(classes.n_classes):
            for chunk in _class_chunks(classes, label, so_far, entropy, per_call):
                drawn.append(chunk)
                yield chunk.masks

    results = ordered_results(class_wise_predictions, game, inputs(), n_jobs)
    try:
        for predictions in results:
            chunk = drawn.popleft()
            batch, k = chunk.orders.shape
            fits = int((~degenerate_rows(chunk.masks, game.targets, game.min_samples)).sum())
            utilities = classes.utilities(predictions, chunk.label).reshape(batch, k + 1)
            marginals = so_far.marginals(chunk.label)[chunk.first:chunk.first + batch]
            np.put_along_axis(marginals, chunk.orders, np.diff(utilities, axis=1), axis=1)
            so_far.record(chunk.label, chunk.first + batch, fits, chunk.state)
            advance(chunk.masks.shape[0])
    finally:
        close_batches(results)  # an interrupted run stops joblib from dispatching further chunks


def _normalise(game: Any, classes: _Classes, values: NDArray[np.float64],
               stderr: NDArray[np.float64]) -> NDArray[np.float64]:
    """Scale each class's values to sum to :math:`a_D(T_c)` (one fit of the full set); the factors."""
    correct = class_wise_predictions(game, np.ones((1, classes.train.size), dtype=bool))[0] == classes.y_test
    factors = np.ones(classes.n_classes)
    for label in range(classes.n_classes):
        members = classes.train == label
        total = values[members].sum()
        if total > 0:  # pyDVL scales by any non-zero sum; a negative one would reverse the class's ranking
            factors[label] = correct[classes.test == label].sum() / classes.y_test.shape[0] / total
        values[members] *= factors[label]
        stderr[members] *= abs(factors[label])
    return factors


def class_wise_minimum_budget(n_players: int, n_classes: int, normalize: bool = True) -> int:
    """The smallest budget :func:`class_wise_shapley` accepts: one permutation of every class (+ 1 to normalise).

    A permutation of class :math:`c` costs :math:`n_c + 1` fits, so one of
    each costs :math:`N + C` whatever the class sizes, and ``normalize`` adds
    the fit on all the data.
    """
    n_players = check_int(n_players, "n_players", minimum=1)
    n_classes = check_int(n_classes, "n_classes", minimum=1)
    return n_players + n_classes + int(check_bool(normalize, "normalize"))


def class_wise_shapley(game: ModelUtility | LogisticRegressionUtility | TorchModelUtility, budget: int,
                       seed: int | np.random.SeedSequence | None = None, *, normalize: bool = True,
                       chunk_size: int | None = None, progress: bool | None = None,
                       checkpoint: str | os.PathLike[str] | None = None,
                       checkpoint_interval: float = 60.0, n_jobs: int | None = None) -> ValuationResult:
    r"""Class-wise Shapley values (CS-Shapley, Schoch, Xu & Ji, NeurIPS 2022) of a classifier's training points.

    Point ``i`` of class :math:`c` gets the mean of its marginal contributions
    :math:`U(P \cup \{i\} \mid S_{-c}) - U(P \mid S_{-c})` over samples of a
    context :math:`S_{-c}` (each out-of-class training point with probability
    1/2, drawn again until it holds every other class) and of a random
    permutation of the in-class points (:math:`P`: the in-class points before
    ``i``), with :math:`U(S_c \mid S_{-c}) = a_S(T_c) \exp(a_S(T_{-c}))` the
    in-class and out-of-class accuracies of the model trained on
    :math:`S_c \cup S_{-c}` (numbers of right test predictions over the test
    set's size; module docstring). The classes take turns, one permutation
    each, while the budget lasts; a permutation of class :math:`c` costs
    :math:`n_c + 1` model fits, made by the game a chunk at a time. For a fixed
    context the values of a class sum to :math:`U(D_c \mid S_{-c}) - U(\emptyset
    \mid S_{-c})` (efficiency within the class). With ``normalize`` (the
    paper's and pyDVL's default) the values of each class are then scaled to
    sum to :math:`a_D(T_c)`, the in-class accuracy of the model trained on all
    the data (one more fit); a class whose values sum to 0 or less is left as
    it is (pyDVL scales a negative sum too, which reverses the class's ranking).

    Parameters
    ----------
    game : ModelUtility, LogisticRegressionUtility or TorchModelUtility
        A classification utility: its training labels, test labels and model
        (the game's own metric is not used). Any other game raises a
        ``TypeError``.
    budget : int
        Model fits (coalitions whose predictions are computed), including
        the normalising fit; at least one permutation of every class,
        :math:`\sum_c (n_c + 1)` (+ 1 with ``normalize``).
    seed : int or SeedSequence, optional
        Entropy of the contexts and permutations; the same seed gives the same
        bits. ``None`` draws fresh entropy, kept on the result.
    normalize : bool, default True
        Scale each class's values to sum to its in-class accuracy.
    chunk_size : int, optional
        Coalitions per prediction call, about; by default as many as fit in
        2**22 mask cells. The values do not depend on it.
    progress : bool, optional
        A progress bar over the utility evaluations, moved after each
        prediction call (default: in terminals and notebooks, and in logs once
        the run has lasted 30 s; ``False``: none). It never changes a number.
    checkpoint : str or os.PathLike, optional
        File holding the run so far (the marginal contributions sampled and
        where each class's random stream stands), written atomically after a
        prediction call at most every ``checkpoint_interval`` seconds, at the
        end and when the run is interrupted; if it exists, the run continues
        from it (with its seed when ``seed`` is None) and gives exactly the
        values of an uninterrupted run. A file from another call (game size,
        classes, budget, ``normalize``, seed) or a corrupted one raises
        :class:`~shapley_research.CheckpointError` and is never overwritten.
    checkpoint_interval : float, default 60
        Minimum seconds between two writes of the checkpoint.
    n_jobs : int, optional
        Prediction calls made in parallel through joblib (``None`` or 1: in
        this process; -1: all cores; ``joblib.parallel_config`` picks the
        backend), each worker on one BLAS thread; without ``chunk_size`` the
        permutations are then cut into about four calls per worker. The
        contexts and permutations are drawn here, in stream order, so the
        values are the same bits for any ``n_jobs``.

    Returns
    -------
    ValuationResult
        ``method="class_wise_shapley"``; ``n_evaluations`` the fits made,
        ``n_samples`` the permutations, ``stderr`` the standard error of each
        point's mean marginal contribution (scaled like the value; NaN for a
        class with one permutation); ``info`` holds the permutations per
        class (``permutations``), the normalising factors (``factors``) and
        the models fitted (``model_fits``: the coalitions that are not
        degenerate, which get the constant model's predictions instead) and
        ``resumed_samples`` (permutations read from the checkpoint).
    """
    start = time.perf_counter()
    _check_classifier_game(game)
    budget = check_int(budget, "budget", minimum=1)
    normalize = check_bool(normalize, "normalize")
    targets = game.targets
    classes = _Classes(np.asarray(targets.y_train_index), np.asarray(targets.y_test_index), np.asarray(game.y_test),
                       int(targets.n_classes))
    sizes = np.bincount(classes.train, minlength=classes.n_classes)
    needed = class_wise_minimum_budget(classes.train.size, classes.n_classes, normalize)
    if budget < needed:
        raise ValueError(f"budget={budget} is smaller than one permutation of every class: it needs at least "
                         f"{needed:,} utility evaluations ({' + '.join(str(s + 1) for s in sizes)}"
                         f"{' + 1 to normalise' if normalize else ''}).")
    cells = CHUNK_CELLS if chunk_size is None else check_int(chunk_size, "chunk_size", minimum=1) * classes.train.size
    progress = None if progress is None else check_bool(progress, "progress")
    n_jobs = check_game_jobs(game, n_jobs, "class_wise_shapley")
    counts = _plan(sizes, budget - int(normalize))
    shared = items_per_worker(int(counts.sum()), n_jobs) if chunk_size is None else None

    def per_call(k: int) -> int:  # permutations of a class of k points in one prediction call
        size = max(1, cells // ((k + 1) * classes.train.size))
        return size if shared is None else min(size, shared)

    n_evaluations = int((counts * (sizes + 1)).sum()) + int(normalize)
    entropy, store = open_checkpoint(checkpoint, seed, dim=int(np.dot(counts, sizes)), interval=checkpoint_interval,
                                     fingerprint={"method": "class_wise_shapley", "class_sizes": sizes.tolist(),
                                                  "budget": budget, "normalize": normalize})
    so_far = _RunSoFar(store, counts, sizes)
    resumed = sum(so_far.done)

    values, stderr = np.zeros(classes.train.size), np.full(classes.train.size, np.nan)
    with evaluation_bar(progress, n_evaluations, desc="class-wise Shapley") as advance:
        advance(so_far.evaluations)
        try:
            _sample(game, classes, so_far, entropy, per_call, n_jobs, advance)
        finally:
            so_far.save(force=True)  # at the end, and on an interruption: every chunk sampled is kept
        for label in range(classes.n_classes):
            marginals, members = so_far.marginals(label), classes.train == label
            values[members] = marginals.mean(axis=0)  # one reduction over all samples: no dependence on chunks
            if marginals.shape[0] > 1:
                stderr[members] = marginals.std(axis=0, ddof=1) / np.sqrt(marginals.shape[0])
        factors = _normalise(game, classes, values, stderr) if normalize else np.ones(classes.n_classes)
        advance(int(normalize))
    fits = so_far.fits + int(normalize)  # the full training set is never degenerate: it holds every class
    info = {"permutations": counts.tolist(), "factors": factors.tolist(), "normalize": normalize, "model_fits": fits,
            "classes": targets.classes.tolist(), "resumed_samples": resumed}
    return ValuationResult(values=values, n_evaluations=n_evaluations, method="class_wise_shapley", seed=entropy,
                           wall_time=time.perf_counter() - start, stderr=stderr, n_samples=int(counts.sum()),
                           info=info)
