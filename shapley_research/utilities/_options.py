"""Typed groups of the model utilities' options: degenerate coalitions, torch training, the logistic prefix path.

Each group bundles keywords that only make sense together, so that a call
reads as what it sets::

    ModelUtility(model, X, y, X_test, y_test, degenerate=DegeneratePolicy("default", default_utility=0.5))
    TorchModelUtility(mlp, X, y, X_test, y_test, recipe=TrainingRecipe("sgd", learning_rate=0.1, epochs=5,
                                                                        batch_size=32))
    LogisticRegressionUtility(X, y, X_test, y_test, prefix_path=PrefixPath("online", refit_ratio=2.0, steps=5))

The groups are the same settings as the keywords they stand for (same
defaults, same utilities, bit for bit); the keywords keep working. Each is
validated where it is built, naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from .._validation import check_bool, check_choice, check_float, check_int

__all__ = ["DegeneratePolicy", "TrainingRecipe", "PrefixPath", "DEGENERATE_MODES"]

#: What a degenerate coalition (empty, fewer than ``min_samples`` points, or a single class) is worth.
DEGENERATE_MODES = ("constant", "default", "raise")


@dataclass(frozen=True)
class DegeneratePolicy:
    """What a model utility does with a coalition it cannot train on.

    A coalition is degenerate when it is empty, has fewer than
    ``min_samples`` points, or (classification) holds a single class.

    Parameters
    ----------
    mode : {"constant", "default", "raise"}, default "constant"
        ``"constant"``: the utility of the constant model of the coalition's
        labels (its majority class, or its mean; the training prior for the
        empty coalition). ``"default"``: ``default_utility``. ``"raise"``: a
        ``ValueError``.
    default_utility : float, optional
        The utility of every degenerate coalition; needed by, and only allowed with, ``mode="default"``.
    min_samples : int, default 1
        Fewest points a coalition is trained on.

    Examples
    --------
    >>> from shapley_research import DegeneratePolicy
    >>> DegeneratePolicy("default", default_utility=0.5, min_samples=2)
    DegeneratePolicy(mode='default', default_utility=0.5, min_samples=2)
    """

    mode: Literal["constant", "default", "raise"] = "constant"
    default_utility: float | None = None
    min_samples: int = 1

    def __post_init__(self) -> None:
        checked = _checked_degenerate(self.mode, self.default_utility, self.min_samples, "mode")
        for name, value in zip(("mode", "default_utility", "min_samples"), checked):
            object.__setattr__(self, name, value)


def _checked_degenerate(mode: Any, default_utility: Any, min_samples: Any,
                        name: str) -> tuple[str, float | None, int]:
    """The three settings validated; ``name`` is what the mode is called in the messages."""
    mode = check_choice(mode, name, DEGENERATE_MODES)
    if mode == "default":
        if default_utility is None:
            raise ValueError(f"{name}='default' needs a number as default_utility.")
        default_utility = check_float(default_utility, "default_utility")
    elif default_utility is not None:
        raise ValueError(f"default_utility={default_utility!r} is only used with {name}='default' "
                         f"(got {name}={mode!r}).")
    return mode, default_utility, check_int(min_samples, "min_samples", minimum=1)


def resolve_degenerate(degenerate: Any, default_utility: float | None,
                       min_samples: int) -> tuple[str, float | None, int]:
    """``(mode, default_utility, min_samples)`` from the keywords or from a :class:`DegeneratePolicy`.

    A policy passed as ``degenerate`` must come alone: ``default_utility`` and
    ``min_samples`` beside it are refused (``TypeError``), so that one call
    cannot say two things.
    """
    if isinstance(degenerate, DegeneratePolicy):
        if default_utility is not None or not (isinstance(min_samples, int) and min_samples == 1):
            raise TypeError("degenerate: a DegeneratePolicy carries default_utility and min_samples; "
                            "pass them in the policy, not beside it.")
        return degenerate.mode, degenerate.default_utility, degenerate.min_samples
    return _checked_degenerate(degenerate, default_utility, min_samples, "degenerate")


@dataclass(frozen=True)
class PrefixPath:
    """What the one-pass ``evaluate_prefixes`` of :class:`~shapley_research.LogisticRegressionUtility` computes.

    The fields are :class:`~shapley_research.LogisticRegressionUtility`'s
    ``prefix_path``, ``prefix_refit_ratio`` and ``prefix_steps``, with the
    same defaults and meaning (the last two steer the online path only).

    Parameters
    ----------
    mode : {"online", "exact"}, default "online"
        ``"online"``: one pass of chord steps, an approximation of refitting.
        ``"exact"``: every prefix fitted to the tolerance, warm-started from the previous one.
    refit_ratio : float or None, default 1.5
        Online path: prefixes of sizes ``ceil(ratio^i)`` are refitted exactly
        (``None``: only when the prefix's classes change).
    steps : int, default 3
        Online path: most chord steps per joining point.

    Examples
    --------
    >>> from shapley_research import PrefixPath
    >>> PrefixPath("online", refit_ratio=2.0).steps
    3
    """

    mode: Literal["online", "exact"] = "online"
    refit_ratio: float | None = 1.5
    steps: int = 3

    def __post_init__(self) -> None:
        checked = _checked_prefix_path(self.mode, self.refit_ratio, self.steps, "mode", "refit_ratio", "steps")
        for name, value in zip(("mode", "refit_ratio", "steps"), checked):
            object.__setattr__(self, name, value)


def _checked_prefix_path(mode: Any, refit_ratio: Any, steps: Any, *names: str) -> tuple[str, float | None, int]:
    mode = check_choice(mode, names[0], ("online", "exact"))
    if refit_ratio is not None:
        refit_ratio = check_float(refit_ratio, names[1], minimum=1.0, strict=True)
    return mode, refit_ratio, check_int(steps, names[2], minimum=1)


def resolve_prefix_path(prefix_path: Any, prefix_refit_ratio: Any,
                        prefix_steps: Any) -> tuple[str, float | None, int]:
    """``(mode, refit_ratio, steps)`` from the keywords, or from a :class:`PrefixPath` (alone, else ``TypeError``)."""
    if isinstance(prefix_path, PrefixPath):
        if not (_is_default(prefix_refit_ratio, 1.5) and _is_default(prefix_steps, 3)):
            raise TypeError("prefix_path: a PrefixPath carries refit_ratio and steps; pass them in it, "
                            "not as prefix_refit_ratio / prefix_steps beside it.")
        return prefix_path.mode, prefix_path.refit_ratio, prefix_path.steps
    return _checked_prefix_path(prefix_path, prefix_refit_ratio, prefix_steps, "prefix_path", "prefix_refit_ratio",
                                "prefix_steps")


@dataclass(frozen=True)
class TrainingRecipe:
    """How :class:`~shapley_research.TorchModelUtility` trains the model of every coalition.

    The fields are :class:`~shapley_research.TorchModelUtility`'s keywords of
    the same names, with the same defaults and meaning.

    Parameters
    ----------
    optimizer : {"adam", "sgd"}, default "adam"
    learning_rate : float, default 0.01
    steps : int, optional
        Optimiser steps per coalition (full batch); or give ``epochs``.
    epochs : int, optional
        Passes over each coalition's rows in minibatches of ``batch_size``.
    batch_size : int, optional
        Minibatch size (``None``: full batch).
    weight_decay : float, default 0.0
        Coupled L2 on every trained parameter.
    seed : int, default 0
        Seed of the minibatch schedule (and of ``reinitialize``'s draws).
    reinitialize : bool, default False
        Draw every coalition's initial parameters (from ``seed`` and the
        coalition) instead of starting from the model's.

    Examples
    --------
    >>> from shapley_research import TrainingRecipe
    >>> TrainingRecipe("sgd", learning_rate=0.1, epochs=5, batch_size=32).epochs
    5
    """

    optimizer: Literal["adam", "sgd"] = "adam"
    learning_rate: float = 1e-2
    steps: int | None = None
    epochs: int | None = None
    batch_size: int | None = None
    weight_decay: float = 0.0
    seed: int = 0
    reinitialize: bool = False

    def __post_init__(self) -> None:
        checked = {
            "optimizer": check_choice(self.optimizer, "optimizer", ("adam", "sgd")),
            "learning_rate": check_float(self.learning_rate, "learning_rate", minimum=0.0, strict=True),
            "weight_decay": check_float(self.weight_decay, "weight_decay", minimum=0.0),
            "seed": check_int(self.seed, "seed", minimum=0),
            "reinitialize": check_bool(self.reinitialize, "reinitialize"),
        }
        for name in ("steps", "epochs", "batch_size"):
            value = getattr(self, name)
            checked[name] = None if value is None else check_int(value, name, minimum=1)
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def keywords(self) -> dict[str, Any]:
        """The recipe as :class:`~shapley_research.TorchModelUtility`'s keywords."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _is_default(value: Any, default: Any) -> bool:
    return value is default or (type(value) is type(default) and value == default)


def recipe_keywords(recipe: TrainingRecipe | None, given: dict[str, Any]) -> dict[str, Any]:
    """The training keywords: ``given`` (the constructor's), or ``recipe``'s when one is passed.

    With a recipe, every training keyword in ``given`` must be at its default
    (a ``TypeError`` names those that are not): one call says each thing once.
    """
    if recipe is None:
        return given
    if not isinstance(recipe, TrainingRecipe):
        raise TypeError(f"recipe must be a TrainingRecipe, got {type(recipe).__name__}.")
    defaults = {f.name: f.default for f in fields(TrainingRecipe)}
    clash = sorted(name for name, value in given.items() if not _is_default(value, defaults[name]))
    if clash:
        raise TypeError(f"recipe: {', '.join(clash)} given both in the TrainingRecipe and as keywords; "
                        f"set them in the recipe.")
    return recipe.keywords()
