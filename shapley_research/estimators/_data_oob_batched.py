"""Data-OOB's batched path: a chunk of bootstrap estimators trained at once by a batched learner.

A bootstrap sample is a vector of counts ``w = bincount(S_b, minlength=N)``;
for the losses of :class:`~shapley_research.utilities.learners.LogisticRegressionUtility`
and :class:`~shapley_research.utilities.learners.RidgeUtility` the model fitted on
the sample (repeated rows) is the model fitted with ``sample_weight=w``,
which is what those learners' ``predict(weights, X)`` train, many rows of
``weights`` at once. :func:`batched_learner` decides whether
:func:`~._data_oob.data_oob` takes this path (``fast``, ``device``, or a
learner passed as the model) and builds the learner; :func:`batched_results`
yields, in estimator order, the same ``(oob rows, scores, fitted)`` triples
as the per-fit path, so the two share the accumulation.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._device import check_game_jobs, released, resolve_device

# predictions, bootstrap counts and the learner's probabilities of one chunk of estimators
CHUNK_BYTES = 32 * 2**20
MAX_CHUNK = 1024
_OWNER = "data_oob"


def is_batched_learner(model: Any) -> bool:
    """Whether ``model`` is a batched learner instance: ``predict(weights, X)`` and ``n_players``."""
    return (not isinstance(model, type) and hasattr(model, "n_players")
            and callable(getattr(model, "predict", None)))


def learner_task(learner: Any, task: str, fallback: Callable[[Any], str]) -> str:
    """The task of a learner instance: its ``task`` attribute, which an explicit ``task`` must match."""
    own = getattr(learner, "task", None)
    if own not in ("classification", "regression"):
        return fallback(learner) if task == "auto" else task
    if task not in ("auto", own):
        raise ValueError(f"{_OWNER}: task={task!r}, but {type(learner).__name__} is a {own} learner "
                         f"(its task attribute); pass task='auto' or {own!r}.")
    return own


def check_learner(learner: Any, X: np.ndarray, y: np.ndarray, device: Any) -> None:
    """A learner instance: no ``device`` argument, built on these ``N`` points (and, if it keeps them, these)."""
    name = type(learner).__name__
    if device is not None:
        raise ValueError(f"{_OWNER}: device={str(device)!r} with a {name} instance, which runs on its own device "
                         f"({str(getattr(learner, 'device', None))!r}); build the learner with device=... and "
                         "pass device=None.")
    if learner.n_players != X.shape[0]:
        raise ValueError(f"{_OWNER}: {name} has n_players={learner.n_players}, but X_train has {X.shape[0]} "
                         "points; build the learner on the training set to value.")
    for attribute, ours in (("X_train", X), ("y_train", y)):
        theirs = getattr(learner, attribute, None)
        if isinstance(theirs, np.ndarray) and not np.array_equal(theirs, ours):
            raise ValueError(f"{_OWNER}: {name} was built on another {attribute} than the one passed; "
                             "the bagged models must train on the points they value.")


def batched_learner(model: Any, X: np.ndarray, y: np.ndarray, task: str, fast, device: Any,
                    n_jobs: int | None) -> Any:
    """The batched learner that runs the estimators of ``model``, or ``None`` for the per-fit path.

    ``model`` is a scikit-learn (or fit/predict) model: ``fast`` and
    ``device`` route it as in :class:`~shapley_research.ModelUtility`
    (:func:`~shapley_research.utilities.learners.route_decision`), except that
    ``"auto"`` goes batched whenever a learner exists. ``n_jobs > 1`` is refused
    for a learner on a device (:func:`~shapley_research._device.check_game_jobs`).
    """
    from ..utilities.learners import learner_for, route_decision

    device = resolve_device(device, _OWNER)
    decision = route_decision(model, None, fast, X.shape[0], X.shape[1], device=device, unit="bootstrap sample",
                              always_batched=True, task=task)
    if not decision.batched:
        return None
    metric = "accuracy" if task == "classification" else "neg_mean_squared_error"
    learner = learner_for(model, X, y, X, y, metric, device=device)
    check_game_jobs(learner, n_jobs, _OWNER)
    return learner


def chunk_size(n_points: int, n_classes: int, n_estimators: int) -> int:
    """Estimators predicted at once: their predictions, counts and probabilities within :data:`CHUNK_BYTES`."""
    per_estimator = 8 * n_points * (2 + n_classes)
    return int(max(1, min(MAX_CHUNK, n_estimators, CHUNK_BYTES // per_estimator)))


def batched_results(learner: Any, X: np.ndarray, y: np.ndarray, seed: int, n_estimators: int,
                    classification: bool, score: Callable, bar: Any, bootstrap: Callable, scores: Callable):
    """Per estimator, in order: its out-of-bag rows, their scores and whether a model was fitted.

    Estimator ``b`` draws ``bootstrap(seed, b, N)`` (the per-fit path's
    sample); a chunk of estimators is predicted on ``X`` by one
    ``learner.predict(counts, X)``. A classifier's sample with one class
    counts as not fitted (the learner predicts that class, as the per-fit
    path does).
    """
    n = X.shape[0]
    size = chunk_size(n, np.unique(y).size if classification else 1, n_estimators)
    what = f"{type(learner).__name__}.predict"
    with released(getattr(learner, "device", None)):  # no cached GPU memory stays held after the run
        for lo in range(0, n_estimators, size):
            estimators = range(lo, min(lo + size, n_estimators))
            samples = [bootstrap(seed, b, n) for b in estimators]
            counts = np.stack([np.bincount(rows, minlength=n) for rows in samples])
            predictions = _predict(learner, counts, X, lo, what)
            bar.update(len(estimators))
            for rows, weights, predicted in zip(samples, counts, predictions):
                oob = np.flatnonzero(weights == 0)
                fitted = not (classification and np.unique(y[rows]).size == 1)
                yield oob, (scores(score, y[oob], predicted[oob], what) if oob.size else np.empty(0)), fitted


def _predict(learner: Any, counts: np.ndarray, X: np.ndarray, first: int, what: str) -> np.ndarray:
    """``learner.predict(counts, X)``, checked to be one row of ``N`` predictions per estimator."""
    try:
        predictions = np.asarray(learner.predict(counts, X))
    except Exception as exc:
        if hasattr(exc, "add_note"):
            exc.add_note(f"{_OWNER}: while training {type(learner).__name__} on bootstrap samples "
                         f"{first} to {first + counts.shape[0] - 1}.")
        raise
    if predictions.shape != counts.shape:
        raise ValueError(f"{what} must return one row of predictions on X_train per weight vector: expected "
                         f"shape {counts.shape}, got {predictions.shape}.")
    return predictions
