r"""Average Marginal Effect (AME): a Lasso of the utility on random inclusion indicators (Lin et al., ICML 2022).

Lin, Zhang, Lécuyer, Li, Panda and Sen, "Measuring the effect of training
data on deep learning predictions via randomized experiments" (ICML 2022).
The AME of point ``i`` under a distribution :math:`\mathcal{P}` of inclusion
probabilities is

.. math::

    \mathrm{AME}_i = \mathbb{E}_{p \sim \mathcal{P}}\,\mathbb{E}_{S \sim \mathrm{Bern}(p)^{N-1}}
        \bigl[U(S \cup \{i\}) - U(S)\bigr],

the expected marginal contribution of ``i`` to a coalition in which every
other point is present independently with probability ``p``. It is estimated
as a randomised experiment: ``budget`` coalitions are drawn (each with its
own ``p`` from the grid, each point present with probability ``p``), their
utilities computed by ``game.evaluate`` a chunk of coalitions at a time, and
the utilities regressed on the inclusion indicators by a Lasso (the effects
are sparse when few points matter); the coefficients are the values.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Literal, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._lasso_path import lasso_lars_cv, lasso_path
from ._sampling._batches import close_batches, items_per_worker, ordered_results
from ._sampling._checkpoint import Checkpoint, terminated_as_exit
from ._sampling._loop import open_checkpoint
from ._sampling._progress import evaluation_bar
from .._device import check_game_jobs
from .._validation import (check_choice, check_float, check_game, check_int, check_progress, check_real_array,
                           check_utilities)
from ..games import GameLike, game_identity
from ..result import ValuationResult

__all__ = ["ame", "ame_coalitions"]

#: The paper's default grid of inclusion probabilities, as OpenDataVal uses it.
DEFAULT_PROBABILITIES = (0.2, 0.4, 0.6, 0.8)
DESIGNS = ("indicators", "opendataval")
#: The Lasso's solvers: the exact path (LARS with the lasso modification) or coordinate descent on a grid.
SOLVERS = ("lars", "coordinate_descent")
#: Most mask cells passed to ``game.evaluate`` in one call by default (16 MiB of booleans).
CHUNK_CELLS = 2**24
#: Most coalitions per call by default when the run keeps a checkpoint, which is written between calls.
CHECKPOINT_CHUNK = 1024


def ame_coalitions(seed: int, budget: int, n_players: int,
                   probabilities: Sequence[float] = DEFAULT_PROBABILITIES) -> tuple[NDArray[np.bool_], NDArray]:
    """The coalitions of an AME run with entropy ``seed``, and the inclusion probability of each.

    Coalition ``k`` has probability ``probabilities[k % len(probabilities)]``
    (the grid in equal shares, as OpenDataVal draws ``num_models`` coalitions
    per probability), and each player is in it independently with that
    probability, from the stream ``default_rng(SeedSequence(seed))``.

    Returns
    -------
    masks : ndarray of bool, shape (budget, n_players)
    p : ndarray of float, shape (budget,)
    """
    grid = np.asarray(probabilities, dtype=float)
    p = grid[np.arange(budget) % grid.size]
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    return rng.random((budget, n_players)) < p[:, None], p


def _check_probabilities(probabilities: object) -> NDArray[np.float64]:
    grid = check_real_array(probabilities, "probabilities").reshape(-1)
    if grid.size == 0 or not np.all((grid > 0) & (grid < 1)):
        raise ValueError(f"probabilities must be one or more numbers strictly between 0 and 1, got "
                         f"{grid.tolist()[:8]}.")
    return grid


def _chunk_utilities(game: GameLike, masks: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Checked utilities of one chunk of coalitions (module level, so joblib's workers can run it)."""
    return check_utilities(game.evaluate(masks), masks.shape[0])


def _evaluate(game: GameLike, masks: NDArray[np.bool_], chunk_size: int, progress: bool | None = None,
              checkpoint: Checkpoint | None = None, n_jobs: int | None = None) -> NDArray[np.float64]:
    """Utilities of ``masks``, ``chunk_size`` rows per call to ``game.evaluate``, under a progress bar.

    With a ``checkpoint`` (whose ``mean`` holds the utilities of the first
    ``count`` coalitions) the calls start at the first coalition not evaluated
    yet, and the utilities so far are written after each call (every
    ``interval`` seconds), when the run is interrupted and at the end. With
    ``n_jobs`` the chunks are evaluated by joblib's workers and taken in order.
    """
    utilities, unused = np.zeros(masks.shape[0]), np.zeros(masks.shape[0])
    done = 0
    if checkpoint is not None and checkpoint.loaded:
        done = checkpoint.count
        utilities[:done] = np.asarray(checkpoint.mean)[:done]

    def save(force: bool) -> None:
        if checkpoint is not None:
            checkpoint.save(utilities, unused, done, done, -(-done // chunk_size), force=force)

    starts = range(done, masks.shape[0], chunk_size)
    stop_saves = terminated_as_exit(saving=checkpoint is not None)  # SIGTERM saves as Ctrl-C does
    with stop_saves, evaluation_bar(progress, masks.shape[0], desc="AME") as advance:
        advance(done)
        results = ordered_results(_chunk_utilities, game, (masks[start:start + chunk_size] for start in starts),
                                  n_jobs)
        try:
            for start, values in zip(starts, results):
                stop = min(start + chunk_size, masks.shape[0])
                utilities[start:stop] = values
                done = stop
                advance(stop - start)
                save(force=False)
        finally:
            close_batches(results)  # an interrupted run stops joblib from dispatching further chunks
            save(force=True)  # at the end, and on an interruption: every coalition evaluated is kept
    return utilities


def _chunk_size(chunk_size: int | None, budget: int, n_players: int, checkpoint: object, n_jobs: int | None) -> int:
    """Coalitions per call: ``chunk_size``, else up to 2**24 cells, 1,024 with a checkpoint, 4 calls per worker."""
    if chunk_size is not None:
        return check_int(chunk_size, "chunk_size", minimum=1)
    chunk = max(1, CHUNK_CELLS // n_players)
    if checkpoint is not None:
        chunk = min(chunk, CHECKPOINT_CHUNK)
    shared = items_per_worker(budget, n_jobs)
    return chunk if shared is None else min(chunk, shared)


def _design(masks: NDArray[np.bool_], design: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The regressors, and the factor that turns a coefficient into a value (per column)."""
    X = masks.astype(float)
    if design == "opendataval":  # z-score of each coalition's row; constant rows (empty, full) become 0
        mean, std = X.mean(axis=1, keepdims=True), X.std(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            Z = np.where(std > 0, (X - mean) / np.where(std > 0, std, 1.0), 0.0)
        return Z, np.ones(X.shape[1])
    mean, std = X.mean(axis=0), X.std(axis=0)  # each indicator centred and scaled: one penalty for all
    scale = np.where(std > 0, std, 1.0)
    return (X - mean) / scale, np.where(std > 0, 1.0 / scale, 0.0)


def _lasso(X: NDArray[np.float64], y: NDArray[np.float64], alpha: float | None, cv: int,
           max_iter: int, solver: str) -> tuple[NDArray[np.float64], float]:
    """Coefficients and the penalty of a Lasso of centred ``y`` on ``X`` (cross-validated when ``alpha`` is None).

    ``"lars"``: the compiled exact path (:mod:`._lasso_path`), as scikit-learn's
    ``LassoLarsCV`` / ``LassoLars`` compute it; ``"coordinate_descent"``:
    scikit-learn's ``LassoCV`` / ``Lasso``.
    """
    from sklearn.linear_model import Lasso, LassoCV

    centred = y - y.mean()
    if alpha == 0.0:  # the least-squares limit, without the Lasso's warning about alpha = 0
        return np.asarray(np.linalg.lstsq(X, centred, rcond=None)[0], dtype=float), 0.0
    if solver == "lars":
        if alpha is None:  # folds in order: deterministic
            return lasso_lars_cv(X, centred, cv, max_iter)
        return lasso_path(X - X.mean(axis=0), centred, alpha, max_iter)[1][-1], alpha
    model = LassoCV(cv=cv, max_iter=max_iter) if alpha is None else Lasso(alpha=alpha, max_iter=max_iter)
    model.fit(X, centred)
    return np.asarray(model.coef_, dtype=float), float(model.alpha_) if alpha is None else alpha


def ame(game: GameLike, budget: int, seed: int | np.random.SeedSequence | None = None, *,
        probabilities: ArrayLike = DEFAULT_PROBABILITIES, alpha: float | None = None, cv: int = 5,
        design: Literal["indicators", "opendataval"] = "indicators", chunk_size: int | None = None,
        max_iter: int = 10_000, solver: Literal["lars", "coordinate_descent"] = "lars",
        progress: bool | None = None, checkpoint: str | os.PathLike[str] | None = None,
        checkpoint_interval: float = 60.0, n_jobs: int | None = None) -> ValuationResult:
    r"""Average Marginal Effect values (Lin et al., ICML 2022): a Lasso of ``U(S)`` on random coalitions.

    ``budget`` coalitions are drawn (:func:`ame_coalitions`): coalition ``k``
    takes the inclusion probability ``p_k = probabilities[k % len]`` and holds
    each player independently with probability ``p_k``. Their utilities are
    computed by ``game.evaluate``, ``chunk_size`` coalitions a call (a batched
    game trains a whole chunk at once), then regressed on the inclusion
    indicators by a Lasso with an intercept; the coefficient of player ``i``
    is its value. For an additive game :math:`U(S) = c + \sum_{i \in S} w_i`
    the values are :math:`w_i` shrunk towards 0 by the penalty, and exactly
    :math:`w_i` in the limit ``alpha -> 0`` (least squares) once the design
    has full rank; for a general game they estimate the AME,
    the expected marginal contribution of ``i`` to a coalition drawn this way,
    and the Lasso sets the effects of points that do not matter to 0.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    budget : int
        Coalitions drawn and evaluated (utility evaluations), at least 2.
        Fewer than ``N`` warn: the Lasso then gives at most ``budget - 1``
        players a nonzero value.
    seed : int or SeedSequence, optional
        Entropy of the coalitions; the same seed gives the same bits.
        ``None`` draws fresh entropy, kept on the result.
    probabilities : sequence of float, default (0.2, 0.4, 0.6, 0.8)
        The inclusion probabilities, each in (0, 1), used in equal shares (the
        paper's grid, OpenDataVal's default).
    alpha : float, optional
        The Lasso's penalty (scikit-learn's ``alpha``, on standardised
        regressors); ``0`` is least squares. By default chosen by ``cv``-fold
        cross-validation (folds in order), as OpenDataVal does. The
        cross-validation follows each fold's path to its end, which grows
        about as :math:`N^3` at a budget proportional to ``N`` (on a cheap
        game with ``3N`` coalitions, one core: 3.4 s at ``N = 500``, 7.2 s at
        1,000, some 30 s at 2,000), 5-12x the cost of one path stopped at a
        given ``alpha``; beyond a few thousand players pass ``alpha`` (say, a
        smaller run's ``info["alpha"]``).
    cv : int, default 5
        Folds of the cross-validation when ``alpha`` is None.
    design : {"indicators", "opendataval"}, default "indicators"
        The regressors. ``"indicators"``: each player's inclusion indicator,
        centred and scaled to unit variance over the coalitions, the
        coefficient mapped back to the indicator's units (the change in
        utility when the player is added). ``"opendataval"``: OpenDataVal
        1.3's ``AME``, each coalition's row of indicators z-scored across
        players (a row with every player in or out becomes zeros) and the
        coefficients reported as they are; the ranking is close, the scale is
        not a change in utility.
    chunk_size : int, optional
        Coalitions per call to ``game.evaluate``; by default all of them while
        the masks stay under 2**24 cells. The values do not depend on it.
    max_iter : int, default 10000
        Most steps of the Lasso's solver (LARS steps, or coordinate-descent sweeps).
    solver : {"lars", "coordinate_descent"}, default "lars"
        ``"lars"``: the exact Lasso path, knot by knot, in compiled loops
        (the penalty cross-validated over the path's knots as scikit-learn's
        ``LassoLarsCV`` does, the same penalty and coefficients to rounding,
        5x faster on 1,000 coalitions of 300 players; or at ``alpha``, as
        ``LassoLars``). ``"coordinate_descent"``: coordinate descent on a grid
        of 100 penalties (``LassoCV`` or ``Lasso``; OpenDataVal's). Both
        minimise the same cross-validated error; on OpenDataVal's tasks (300
        points, 400-1,000 coalitions) scikit-learn's path was 4-5x faster than
        the grid, its coefficients correlated 0.99997 with the grid's and its
        penalty within 2%.
    progress : bool, optional
        A progress bar over the utility evaluations (default: in terminals and
        notebooks, and in logs once the run has lasted 30 s; ``False``: none).
        A game that reports its coalitions one by one (``ModelUtility``
        fitting clones) moves it within a chunk. It never changes a number.
    checkpoint : str or os.PathLike, optional
        File holding the utilities evaluated so far, written atomically after
        a call to ``game.evaluate`` at most every ``checkpoint_interval``
        seconds, at the end and when the run is interrupted; if it exists, the
        run continues from it (with its seed when ``seed`` is None) and gives
        exactly the values of an uninterrupted run. The Lasso's options may
        differ between the two calls (the file holds utilities only); the
        game, ``budget`` and ``probabilities`` may not: a file from another
        call, or a corrupted one, raises
        :class:`~shapley_research.CheckpointError` and is never overwritten.
        By default a checkpointed run calls ``game.evaluate`` on at most 1,024
        coalitions at a time.
    checkpoint_interval : float, default 60
        Minimum seconds between two writes of the checkpoint.
    n_jobs : int, optional
        Chunks evaluated in parallel through joblib (``None`` or 1: in this
        process; -1: all cores; ``joblib.parallel_config`` picks the backend,
        a Dask cluster included), each worker on one BLAS thread. By default
        the budget is then cut into about four chunks per worker. The values
        are the same bits for any ``n_jobs``: the coalitions are drawn before
        any evaluation and taken back in order.

    Returns
    -------
    ValuationResult
        ``method="ame"``, ``n_evaluations = n_samples = budget``, the seed,
        no standard error; ``info`` holds the penalty used (``alpha``), the
        ``design``, the ``solver``, the ``probabilities``, ``mean_utility``
        and ``resumed_samples`` (coalitions read from the checkpoint).
    """
    start = time.perf_counter()
    n = check_game(game)
    budget = check_int(budget, "budget", minimum=2)
    grid = _check_probabilities(probabilities)
    if alpha is not None:
        alpha = check_float(alpha, "alpha", minimum=0.0)
    cv = check_int(cv, "cv", minimum=2)
    if alpha is None and budget < cv:
        raise ValueError(f"budget must be at least cv={cv} to cross-validate the penalty, got {budget}; "
                         "pass alpha, or a larger budget.")
    check_choice(design, "design", DESIGNS)
    check_choice(solver, "solver", SOLVERS)
    if budget < n and alpha != 0.0:
        warnings.warn(f"ame: budget={budget} coalitions for {n} players: the Lasso gives at most {budget - 1} "
                      f"players a nonzero value and the other {n - budget + 1} or more get 0 whatever their "
                      "effect. Draw at least N coalitions; a few N is usual.", UserWarning, stacklevel=2)
    n_jobs = check_game_jobs(game, n_jobs, "ame")
    chunk = _chunk_size(chunk_size, budget, n, checkpoint, n_jobs)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    progress = check_progress(progress)
    entropy, store = open_checkpoint(checkpoint, seed, dim=budget, interval=checkpoint_interval, fingerprint={
        "method": "ame", "n_players": n, "budget": budget, "probabilities": grid.tolist(),
        "game": game_identity(game)})
    resumed = store.count if store is not None else 0

    masks, _ = ame_coalitions(entropy, budget, n, tuple(grid.tolist()))
    utilities = _evaluate(game, masks, chunk, progress, store, n_jobs)
    X, to_value = _design(masks, design)
    coef, used_alpha = _lasso(X, utilities, alpha, cv, max_iter, solver)
    info = {"alpha": used_alpha, "design": design, "solver": solver, "probabilities": grid.tolist(),
            "mean_utility": float(utilities.mean()), "selected": int(np.count_nonzero(coef)),
            "resumed_samples": resumed}
    return ValuationResult(values=coef * to_value, n_evaluations=budget, method="ame", seed=entropy,
                           wall_time=time.perf_counter() - start, n_samples=budget, info=info)
