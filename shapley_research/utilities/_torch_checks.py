"""Checks of :class:`~shapley_research.TorchModelUtility`'s arguments: metric, training length, output shape."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ._model_data import TargetInfo, resolve_metric
from .._validation import check_int

#: The class these checks name in their messages.
OWNER = "TorchModelUtility"
#: Optimiser steps per coalition when neither ``steps`` nor ``epochs`` is given.
DEFAULT_STEPS = 300


def metric_and_task(metric: Any) -> tuple[str, str]:
    """The metric's name and task: a named metric only (a callable scorer needs ModelUtility)."""
    name, task = resolve_metric(metric)
    if task is None:
        raise TypeError(f"{OWNER} takes a metric name, not a callable scorer (use ModelUtility for one).")
    return cast(str, name), task  # a named metric has a task


def resolve_steps(steps: int | None, epochs: int | None, batch_size: int | None, n_rows: int) -> int:
    """Optimiser steps per coalition from ``steps`` or ``epochs`` (not both)."""
    if steps is not None and epochs is not None:
        raise ValueError(f"{OWNER}: pass steps or epochs, not both (got steps={steps!r}, epochs={epochs!r}).")
    if epochs is None:
        return DEFAULT_STEPS if steps is None else check_int(steps, "steps", minimum=1)
    epochs = check_int(epochs, "epochs", minimum=1)
    return epochs if batch_size is None else epochs * -(-n_rows // batch_size)


def check_output_shape(shape: tuple[int, ...], rows: int, targets: TargetInfo | None) -> None:
    """ValueError unless ``shape`` is (rows, K) for K classes, or (rows,) / (rows, 1) for regression."""
    if targets is not None:
        k = targets.n_classes
        if shape != (rows, k):
            per_row = int(np.prod(shape[1:])) if len(shape) > 1 and shape[0] == rows else None
            what = (f"{per_row} value{'s' if per_row != 1 else ''} per row" if per_row is not None
                    else f"shape {shape} for {rows} rows")
            labels = ", ".join(map(repr, targets.classes[:10].tolist())) + (", ..." if k > 10 else "")
            raise ValueError(f"{OWNER}: model outputs {what} but y_train has {k} classes ({labels}, in the "
                             f"sorted order of the output units): a classifier must output logits of shape "
                             f"({rows}, {k}) for {rows} rows, got {shape}.")
    elif shape not in ((rows,), (rows, 1)):
        raise ValueError(f"{OWNER}: model outputs shape {shape} for {rows} rows, but a regression metric needs "
                         f"one value per row: shape ({rows},) or ({rows}, 1).")
