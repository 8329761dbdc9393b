"""A noisy utility for Data Banzhaf's claim: logistic regression trained by minibatch SGD from a random start.

Wang & Jia (AISTATS 2023) argue for the Banzhaf value when the utility is
*noisy*: the model is trained stochastically, so the same coalition can score
differently from run to run, and Banzhaf is the semivalue whose ranking that
noise disturbs least. The experiment's main game is deterministic (a batched
logistic regression fitted to convergence), so their argument has nothing to
act on there. This module gives the claim the setting it speaks of, at a small
cost: the same model family, trained the way their argument assumes.

* **Game** (:func:`make_noisy_game`): ``TorchModelUtility`` of a linear
  softmax model (logistic regression, ``nn.Linear(d, K)``) trained by plain
  minibatch SGD (``epochs`` passes in batches of ``batch_size``, step
  ``learning_rate``) from parameters redrawn for every coalition
  (``reinitialize=True``: torch's initialiser under a seed hashed from the
  game's seed and the coalition). The utility is one draw of the random
  utility of Wang & Jia's argument: two coalitions share no initialisation,
  and the same coalition always gets the same draw (same seed, same bits).
* **Run** (:func:`run_noisy_utility`): the problems of the main run (same
  :func:`~._measure.problem_seed`: same splits and flips), MSR Banzhaf and
  permutation Shapley with the main run's method seeds, on one game per
  problem (both methods value the same draw), at one budget.
* **Noise** (:func:`utility_noise`): the spread of ``U`` over independent
  draws of the game (seeds), on the full training set and on random halves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_float, check_int
from .._parallel import check_n_jobs
from ._measure import detection_fields, map_problems, problem_settings, task_problem
from ._methods import method_seed, run_method

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    import pandas as pd
    from ...utilities import TorchModelUtility

__all__ = ["NOISY_METHODS", "NOISY_DEFAULTS", "NOISY_UTILITY", "NOISY_GAME", "make_noisy_game", "utility_noise",
           "run_noisy_utility"]

#: The methods Data Banzhaf's claim compares.
NOISY_METHODS = ("msr_banzhaf", "permutation")
#: The training of the noisy game: SGD passes, batch size, step size; independent draws of the noise measure.
NOISY_DEFAULTS = {"epochs": 5, "batch_size": 32, "learning_rate": 0.1, "noise_draws": 8}
#: The noisy utility in words (claims, figures).
NOISY_UTILITY = "logistic regression trained by minibatch SGD from a random initialisation drawn for every coalition"
#: The noisy game as called (notes).
NOISY_GAME = ("TorchModelUtility(nn.Linear(d, K), ..., metric='accuracy', optimizer='sgd', epochs={epochs}, "
              "batch_size={batch_size}, learning_rate={learning_rate}, reinitialize=True, seed=s), one game (one draw "
              "of the noise) per problem, valued by both methods")


def make_noisy_game(problem: dict[str, Any], seed: int, epochs: int = 5, batch_size: int = 32,
                    learning_rate: float = 0.1) -> TorchModelUtility:
    """The noisy utility on ``problem``: test accuracy of a linear softmax model trained by minibatch SGD.

    Parameters
    ----------
    problem : dict
        From :func:`~._data.make_problem`.
    seed : int
        The game's seed: the minibatch order and every coalition's initial parameters derive from it.
    epochs, batch_size, learning_rate
        Plain SGD (no momentum, no weight decay): ``epochs`` passes over the
        training rows in batches of ``batch_size`` (each coalition steps on
        its own rows in each batch), step ``learning_rate``.

    Returns
    -------
    TorchModelUtility
        On the CPU in float32, ``reinitialize=True``.
    """
    from ..._device import import_torch
    from ... import TorchModelUtility

    torch = import_torch("make_noisy_game")
    seed = check_int(seed, "seed", minimum=0)
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    learning_rate = check_float(learning_rate, "learning_rate", minimum=0.0, strict=True)
    X, y = problem["X_train"], problem["y_train"]
    with torch.random.fork_rng(devices=[]):  # the template's own values are never used (every coalition redraws)
        torch.manual_seed(seed)
        model = torch.nn.Sequential(torch.nn.Linear(X.shape[1], int(np.unique(y).size)))
    return TorchModelUtility(model, X, y, problem["X_test"], problem["y_test"], metric="accuracy", optimizer="sgd",
                             learning_rate=learning_rate, epochs=epochs, batch_size=batch_size, device="cpu",
                             dtype="float32", seed=seed, reinitialize=True)


def utility_noise(problem: dict[str, Any], seed: int, draws: int, options: dict[str, Any] | None = None,
                  n_halves: int = 4) -> dict[str, float]:
    """The noise of the utility: the standard deviation of ``U`` over ``draws`` independent games (seeds).

    Returns ``{"full_mean", "full_sd", "half_sd"}``: mean and standard
    deviation of ``U(D)`` over the draws, and the standard deviation on
    ``n_halves`` random halves of the training set (mean over the halves).
    """
    draws = check_int(draws, "draws", minimum=2)
    options = {**NOISY_DEFAULTS, **(options or {})}
    n = problem["y_train"].size
    rng = np.random.default_rng(seed)
    coalitions = np.vstack([np.ones((1, n), dtype=bool), rng.random((n_halves, n)) < 0.5])
    scores = np.array([make_noisy_game(problem, method_seed(seed, f"noise draw {j}"), options["epochs"],
                                       options["batch_size"], options["learning_rate"]).evaluate(coalitions)
                       for j in range(draws)])
    return {"full_mean": float(scores[:, 0].mean()), "full_sd": float(scores[:, 0].std(ddof=1)),
            "half_sd": float(scores[:, 1:].std(axis=0, ddof=1).mean())}


def _noisy_rows(dataset: str, repetition: int,
                settings: dict[str, Any]) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """The utility's noise and the methods on the noisy utility, on one (data set, repetition)."""
    s, options = settings, settings["options"]
    pseed, problem = task_problem(s, dataset, repetition)
    noise = utility_noise(problem, pseed, options["noise_draws"], options)
    game = make_noisy_game(problem, method_seed(pseed, "noisy utility"), options["epochs"],
                           options["batch_size"], options["learning_rate"])
    rows = []
    for method in s["methods"]:
        row = run_method(method, problem, s["budget"], method_seed(pseed, method), game=game)
        rows.append({"dataset": dataset, "repetition": repetition, "method": method, "budget": s["budget"],
                     "main": True, **{k: options[k] for k in ("epochs", "batch_size", "learning_rate")},
                     **detection_fields(row, problem["flipped"])})
    return noise, rows


def run_noisy_utility(*, datasets: Sequence[str], n_train: int, n_test: int, flip_fraction: float, n_seeds: int,
                      budget: int, digit_classes: Sequence[int] = (3, 8), options: dict[str, Any] | None = None,
                      methods: Sequence[str] = NOISY_METHODS, seed: int = 0,
                      progress: Callable[..., Iterable[Any]] | None = None,
                      n_jobs: int = 1) -> tuple[pd.DataFrame, dict[str, Any]]:
    """MSR Banzhaf and permutation Shapley on the noisy utility, on the main run's problems.

    Parameters
    ----------
    n_seeds : int
        Repetitions ``0 .. n_seeds - 1``: the main run's first problems (same splits and flips).
    budget : int
        Utility evaluations per method.
    options : dict, optional
        Over :data:`NOISY_DEFAULTS`: ``epochs, batch_size, learning_rate, noise_draws``.
    n_jobs : int
        Worker processes over the problems (the numbers do not depend on it).

    Returns
    -------
    detection : pandas.DataFrame
        One row per (dataset, repetition, method): the columns of the main
        run's ``detection`` (``budget, main`` (True), ``n_evaluations,
        wall_time_s, auroc, f1, n_nan, note, error``) and the training
        (``epochs, batch_size, learning_rate``).
    noise : dict
        Per data set, the mean over repetitions of :func:`utility_noise`.
    """
    import pandas as pd

    n_seeds, budget = check_int(n_seeds, "n_seeds", minimum=1), check_int(budget, "budget", minimum=1)
    n_jobs = check_n_jobs(n_jobs)
    settings = problem_settings(seed=seed, n_train=n_train, n_test=n_test, flip_fraction=flip_fraction,
                                digit_classes=digit_classes, options={**NOISY_DEFAULTS, **(options or {})},
                                budget=budget, methods=tuple(methods))
    parts = map_problems(_noisy_rows, settings, datasets, n_seeds, n_jobs=n_jobs, progress=progress,
                         desc="noisy utility")
    rows = [row for _, (_, part) in parts for row in part]
    noise: dict[str, list[dict[str, float]]] = {}
    for dataset, (measured, _) in parts:
        noise.setdefault(dataset, []).append(measured)
    summary = {d: {k: float(np.mean([r[k] for r in runs])) for k in runs[0]} for d, runs in noise.items()}
    return pd.DataFrame(rows), summary
