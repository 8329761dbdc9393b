"""pyDVL's side of the comparisons with pyDVL: a game as a pyDVL utility, an evaluation budget, its estimators.

Not a script: ``pydvl_comparison.py`` and ``cleaning_comparison.py`` import it
by name. pyDVL 0.10.0 is imported inside the functions, so that this module
loads without it.

- :func:`pydvl_game_utility` wraps a game (``game._evaluate`` on a mask) as a
  pyDVL ``UtilityBase``, counting its evaluations in a :class:`Counter`;
- :func:`max_evaluations` is a pyDVL stopping criterion on that count;
- :func:`pydvl_estimators` lists pyDVL's estimators of Shapley values that
  take a budget, and :func:`run_pydvl_estimator` runs one of them on a game.
"""

from __future__ import annotations

import time

import numpy as np


class Counter:
    """Shared by the copies pyDVL makes of a utility (``with_dataset`` copies shallowly)."""

    def __init__(self):
        self.count = 0


def pydvl_game_utility(game, counter: Counter | None = None, empty_utility: float | None = None):
    """A pyDVL ``UtilityBase`` calling ``game._evaluate`` on the mask of each sample.

    Every non-empty subset counts as one evaluation; the empty set is
    evaluated once here and returned for free afterwards (pyDVL's own
    ``ModelUtility`` returns its scorer's default for it), so it counts once.
    """
    from pydvl.valuation.utility.base import UtilityBase

    counter = counter or Counter()
    n = game.n_players
    if empty_utility is None:
        empty_utility = float(game._evaluate(np.zeros((1, n), dtype=bool))[0])
    counter.count += 1

    class GameUtility(UtilityBase):
        def __init__(self):
            self.counter, self.empty = counter, empty_utility

        def __call__(self, sample) -> float:
            if sample is None or len(sample.subset) == 0:
                return self.empty
            self.counter.count += 1
            mask = np.zeros((1, n), dtype=bool)
            mask[0, np.asarray(sample.subset, dtype=np.int64)] = True
            return float(game._evaluate(mask)[0])

    return GameUtility(), counter


def pydvl_players(n: int):
    """A pyDVL dataset of ``n`` players (the utility ignores its features)."""
    from pydvl.valuation import Dataset

    return Dataset(np.arange(n, dtype=float).reshape(-1, 1), np.zeros(n))


def max_evaluations(counter: Counter, budget: int):
    """pyDVL stopping criterion: stop once ``counter`` reaches ``budget`` evaluations."""
    from pydvl.utils.status import Status
    from pydvl.valuation.stopping import StoppingCriterion

    class MaxEvaluations(StoppingCriterion):
        def _check(self, result):
            if counter.count >= budget:
                self._converged = np.full(len(result.indices), True)
                return Status.Converged
            return Status.Pending

        def completion(self) -> float:
            return min(1.0, counter.count / budget)

    return MaxEvaluations()


def pydvl_values(result, n: int) -> np.ndarray:
    """The values of a pyDVL ``ValuationResult`` in player order, over ``n`` players (NaN and missing as 0)."""
    values = np.zeros(n)
    values[np.asarray(result.indices, dtype=np.int64)] = np.nan_to_num(np.asarray(result.values, dtype=float))
    return values


def pydvl_estimators() -> dict:
    """pyDVL's estimators of Shapley values that take a budget: ``build(utility, stop, seed, budget, n)``."""
    from pydvl.valuation import (AntitheticOwenSampler, AntitheticPermutationSampler, OwenSampler,
                                 PermutationSampler, RandomIndexIteration, ShapleyValuation,
                                 StratifiedShapleyValuation, TMCShapleyValuation, UniformOwenStrategy,
                                 VRDSSampler)

    def generic(make_sampler):
        def build(utility, stop, seed, budget, n):
            return ShapleyValuation(utility, make_sampler(seed, budget, n), stop, progress=False)
        return build

    owen = lambda cls: generic(lambda seed, budget, n: cls(UniformOwenStrategy(1, seed=seed), n_samples_inner=2,
                                                           index_iteration=RandomIndexIteration, seed=seed))
    return {
        "PermutationSampler": generic(lambda seed, budget, n: PermutationSampler(seed=seed)),
        "AntitheticPermutationSampler": generic(lambda seed, budget, n: AntitheticPermutationSampler(seed=seed)),
        "TMCShapleyValuation (default truncation)": lambda utility, stop, seed, budget, n: TMCShapleyValuation(
            utility, is_done=stop, seed=seed, progress=False),
        "StratifiedShapleyValuation": lambda utility, stop, seed, budget, n: StratifiedShapleyValuation(
            utility, is_done=stop, seed=seed, progress=False),
        "OwenSampler (uniform q)": owen(OwenSampler),
        "AntitheticOwenSampler (uniform q)": owen(AntitheticOwenSampler),
        # finite: budget / (2N) samples per index (2 evaluations each), sizes harmonic (Wu et al. 2023)
        "VRDSSampler": generic(lambda seed, budget, n: VRDSSampler(max(1, budget // (2 * n)), seed=seed)),
    }


def run_pydvl_estimator(build, game, budget: int, seed: int, empty_utility: float) -> tuple[np.ndarray, int, float]:
    """Run one of :func:`pydvl_estimators` on ``game`` until it has made ``budget`` evaluations.

    Parameters
    ----------
    build : callable
        ``build(utility, stop, seed, budget, n)``, a value of :func:`pydvl_estimators`.
    game : Game
        The game, wrapped by :func:`pydvl_game_utility`.
    budget : int
        Evaluations (the empty set's included), checked by :func:`max_evaluations` after each of pyDVL's batches.
    seed : int
        pyDVL's seed.
    empty_utility : float
        ``U(empty)``, evaluated once by the caller.

    Returns
    -------
    tuple
        ``(values, evaluations made, seconds of the fit)``.
    """
    counter = Counter()
    utility, _ = pydvl_game_utility(game, counter, empty_utility)
    valuation = build(utility, max_evaluations(counter, budget), seed, budget, game.n_players)
    start = time.perf_counter()
    valuation.fit(pydvl_players(game.n_players))
    return pydvl_values(valuation.result, game.n_players), counter.count, time.perf_counter() - start

