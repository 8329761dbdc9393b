r"""Judging values by what they do: the utility left after removing points in the order of their values.

Point removal (Ghorbani & Zou, ICML 2019, Fig. 1; OpenDataVal's
"remove high/low" tasks): rank the training points by their values, remove
the lowest-valued first (a good valuation removes harmful points first, so
the utility holds or rises) or the highest-valued first (it falls fastest),
retrain on what is left and read the utility. Random orders are the trivial
baseline: a valuation whose curves do not leave the random band ranks no
better than chance.

:func:`point_removal` computes the three curves in one call of
``game.evaluate`` (a batched game trains every coalition at once), and
:func:`plot_point_removal` draws them::

    curves = point_removal(game, result, fractions=np.linspace(0, 0.5, 11))
    plot_point_removal(curves)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ._validation import check_game, check_int, check_real_array, check_seed, check_utilities
from .games import GameLike
from .result import ValuationResult

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["removal_masks", "point_removal", "plot_point_removal", "ORDERS"]

#: The curves of :func:`point_removal`, in the order they are listed.
ORDERS = ("lowest first", "highest first", "random")
#: Fractions of the training points removed by default: 0 to 50% in steps of 5%.
DEFAULT_FRACTIONS = tuple(np.round(np.linspace(0.0, 0.5, 11), 2).tolist())


def _ranking_values(values: ArrayLike | ValuationResult, n_players: int | None = None) -> np.ndarray:
    """``values`` (or a result's) as a finite 1-D float array of ``n_players`` entries (at least 2)."""
    array = np.asarray(values.values if isinstance(values, ValuationResult) else values, dtype=float)
    if array.ndim != 1 or array.size < 2 or not np.isfinite(array).all():
        raise ValueError(f"values must be finite, of shape (N,) with N >= 2, got shape {array.shape}"
                         f"{'' if np.isfinite(array).all() else ' with NaN or infinite entries'}.")
    if n_players is not None and array.size != n_players:
        raise ValueError(f"values must hold one value per player of the game ({n_players}), got {array.size}.")
    return array


def removal_masks(values: ArrayLike | ValuationResult, fractions: Sequence[float],
                  highest: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Coalitions left after removing the lowest- (or highest-) valued ``round(f N)`` points, per fraction.

    Ties in value are removed in index order (a stable sort).

    Returns
    -------
    masks : ndarray of bool, shape (len(fractions), N)
    n_removed : ndarray of int, shape (len(fractions),)
    """
    values = _ranking_values(values)
    n = values.size
    order = np.argsort(-values if highest else values, kind="stable")
    n_removed = np.array([int(round(f * n)) for f in fractions])
    if (n_removed < 0).any() or (n_removed >= n).any():
        raise ValueError(f"fractions must remove between 0 and N - 1 points, got {list(fractions)!r}.")
    masks = np.ones((len(fractions), n), dtype=bool)
    for row, count in enumerate(n_removed):
        masks[row, order[:count]] = False
    return masks, n_removed


def _random_masks(n: int, fractions: Sequence[float], n_random: int, seed: int) -> np.ndarray:
    """``n_random`` blocks of :func:`removal_masks` for random rankings (uniform values), stream ``seed``."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    return np.vstack([removal_masks(rng.random(n), fractions)[0] for _ in range(n_random)])


def point_removal(game: GameLike, values: ArrayLike | ValuationResult,
                  fractions: ArrayLike = DEFAULT_FRACTIONS, *, n_random: int = 10,
                  seed: int = 0) -> pd.DataFrame:
    r"""The utility left after removing the lowest-, the highest- and randomly-ranked points, per fraction.

    For each fraction ``f``, the ``round(f N)`` points with the lowest values
    are removed (ties in index order) and ``game`` is evaluated on the rest;
    the same for the highest values and for ``n_random`` random rankings
    (the baseline). Every coalition goes to one call of ``game.evaluate``.

    Parameters
    ----------
    game : GameLike
        The utility (e.g. :class:`~shapley_research.ModelUtility`): ``evaluate`` retrains on each coalition.
    values : array-like of shape (N,) or ValuationResult
        The values that rank the points (finite).
    fractions : array-like of float, default 0, 0.05, ..., 0.5
        Fractions of the points removed, each in ``[0, 1)`` and removing at
        most ``N - 1`` points.
    n_random : int, default 10
        Random rankings averaged for the baseline (at least 1).
    seed : int, default 0
        Seed of the random rankings; the same seed gives the same table.

    Returns
    -------
    pandas.DataFrame
        One row per (``order``, ``fraction``): ``order`` (one of
        :data:`ORDERS`), ``fraction``, ``n_removed``, ``utility`` (the mean
        over random rankings for ``"random"``) and ``utility_sd`` (their
        standard deviation; 0 for the ranked orders).
    """
    import pandas as pd

    n = check_game(game, minimum=2)
    values = _ranking_values(values, n)
    shares: list[float] = check_real_array(fractions, "fractions").reshape(-1).tolist()
    if not shares or not all(0.0 <= f < 1.0 for f in shares):  # NaN fails both comparisons
        raise ValueError(f"fractions must be one or more numbers in [0, 1), got {shares[:8]!r}.")
    n_random = check_int(n_random, "n_random", minimum=1)
    seed = check_seed(seed)
    low, n_removed = removal_masks(values, shares)
    high, _ = removal_masks(values, shares, highest=True)
    masks = np.vstack([low, high, _random_masks(n, shares, n_random, seed)])
    utilities = check_utilities(game.evaluate(masks), masks.shape[0])
    k = len(shares)
    random = utilities[2 * k:].reshape(n_random, k)
    columns = {
        "order": np.repeat(ORDERS, k), "fraction": np.tile(shares, 3), "n_removed": np.tile(n_removed, 3),
        "utility": np.concatenate([utilities[:k], utilities[k:2 * k], random.mean(axis=0)]),
        "utility_sd": np.concatenate([np.zeros(2 * k), random.std(axis=0, ddof=1) if n_random > 1 else np.zeros(k)]),
    }
    return pd.DataFrame(columns)


def plot_point_removal(curves: pd.DataFrame, ax: Axes | None = None, *, ylabel: str = "utility",
                       title: str | None = "Point removal by value") -> Figure:
    """Draw :func:`point_removal`'s curves: utility against the share of points removed, random as a band.

    The random baseline is drawn dashed with a band of one standard
    deviation of its rankings. Returns the figure (``ax``'s, or a new one).
    """
    import matplotlib.pyplot as plt

    missing = {"order", "fraction", "utility", "utility_sd"} - set(curves.columns)
    if missing:
        raise ValueError(f"curves must be point_removal's table; it lacks the columns {sorted(missing)}.")
    fresh = ax is None
    if ax is None:
        _, ax = plt.subplots(figsize=(5.0, 3.4))
    styles: dict[str, dict[str, Any]] = {"lowest first": {"color": "tab:blue", "marker": "o"},
                                         "highest first": {"color": "tab:red", "marker": "s"},
                                         "random": {"color": "black", "ls": "--"}}
    for order in ORDERS:
        line = curves[curves["order"] == order].sort_values("fraction")
        if line.empty:
            continue
        x = line["fraction"].to_numpy() * 100
        ax.plot(x, line["utility"], label=f"remove {order}" if order != "random" else "random order",
                ms=4, lw=1.4, **styles[order])
        if order == "random":
            spread = line["utility_sd"].to_numpy()
            ax.fill_between(x, line["utility"] - spread, line["utility"] + spread, color="black", alpha=0.12, lw=0)
    ax.set_xlabel("training points removed (% of N)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False)
    figure = ax.figure
    if fresh:
        figure.tight_layout()  # type: ignore[union-attr]  # a new Axes' figure is a Figure
    return figure  # type: ignore[return-value]
