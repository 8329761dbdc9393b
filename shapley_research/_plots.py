r"""Looking at values: each point's value in rank order, with its confidence band.

:func:`plot_values` draws one result, or several on the same points (sorted by
the first, so the curves line up point by point), and marks points known to be
bad (flipped labels, say) so that one sees where a valuation ranks them::

    plot_values({"permutation": result, "KNN": knn}, highlight=flipped, top=20)

matplotlib is imported on the first call only: ``import shapley_research`` does
not load it.
"""

from __future__ import annotations

from collections.abc import Mapping
from statistics import NormalDist
from typing import TYPE_CHECKING, NamedTuple, Union

import numpy as np
from numpy.typing import ArrayLike

from ._validation import check_bool, check_int, check_real_array
from .result import ValuationResult

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_values"]

#: What :func:`plot_values` compares: one result (or array of values), or a mapping name -> result.
Results = Union[ValuationResult, ArrayLike, Mapping[str, Union[ValuationResult, ArrayLike]]]


class _Series(NamedTuple):
    name: str
    values: np.ndarray
    stderr: np.ndarray | None  # None: no band; NaN or infinite entries: no band at those points


def _one_series(name: str, result: object, where: str) -> _Series:
    """``result`` (a ValuationResult or an array of values) as a checked series; ``where`` names it in errors."""
    stderr = None
    if isinstance(result, ValuationResult):
        values, stderr = result.values, result.stderr
    else:
        values = check_real_array(result, where)
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{where} must hold one value per point (shape (N,) with N >= 1), got shape "
                         f"{values.shape}.")
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(f"{where} has {bad.size} non-finite values (first at point {bad[0]}): drop or estimate "
                         "those points before plotting (Data-OOB leaves NaN where a point was never out of bag).")
    if stderr is not None:
        stderr = np.asarray(stderr, dtype=float)
        if (stderr < 0).any():  # NaN compares False: NaN stays, meaning "no band here"
            raise ValueError(f"{where}.stderr must be >= 0 (or NaN where unknown), got {np.nanmin(stderr)}.")
        if not np.isfinite(stderr).any():
            stderr = None
    return _Series(name, values, stderr)


def _as_series(results: object) -> list[_Series]:
    """``results`` as a list of series of one length, or a TypeError/ValueError naming the culprit."""
    if isinstance(results, (str, bytes)) or results is None:
        raise TypeError(f"results must be a ValuationResult, an array of values or a mapping name -> result, got "
                        f"{type(results).__name__}.")
    if isinstance(results, Mapping):
        if not results:
            raise ValueError("results must hold at least one result, got an empty mapping.")
        series = [_one_series(str(name), result, f"results[{name!r}]") for name, result in results.items()]
    elif isinstance(results, ValuationResult):
        series = [_one_series(results.method, results, "results")]
    else:
        series = [_one_series("values", results, "results")]
    first = series[0]
    for other in series[1:]:
        if other.values.size != first.values.size:
            raise ValueError(f"results[{other.name!r}] has {other.values.size} values, results[{first.name!r}] "
                             f"{first.values.size}: the results compared must value the same points.")
    return series


def _highlighted(highlight: object, n: int) -> np.ndarray:
    """``highlight`` (a boolean mask of length ``n`` or indices in ``[0, n)``) as a boolean mask."""
    mask = np.zeros(n, dtype=bool)
    if highlight is None:
        return mask
    array = np.asarray(highlight)
    if array.dtype == bool:
        if array.shape != (n,):
            raise ValueError(f"highlight as a boolean mask must have one entry per point ({n}), got shape "
                             f"{array.shape}.")
        return array.copy()
    if array.size == 0:
        return mask
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise TypeError(f"highlight must be a boolean mask or a 1-D array of point indices, got "
                        f"{array.dtype} of shape {array.shape}.")
    outside = array[(array < 0) | (array >= n)]
    if outside.size:
        raise ValueError(f"highlight indices must be in [0, {n}), got {outside[:5].tolist()}.")
    mask[array] = True
    return mask


def _layout(order: np.ndarray, top: int | None, sort: bool) -> tuple[np.ndarray, np.ndarray, float | None]:
    """The points shown, their x positions, and the x of the gap between the lowest and highest (or None).

    Sorted, x is the rank (1 = lowest); ``top`` keeps the ``top`` lowest and highest, one slot apart.
    Unsorted, x is the point's index.
    """
    n = order.size
    if not sort:
        return order, order.astype(float), None
    if top is None or 2 * top >= n:
        return order, np.arange(1.0, n + 1), None
    shown = np.concatenate([order[:top], order[-top:]])
    x = np.concatenate([np.arange(1.0, top + 1), np.arange(top + 2.0, 2 * top + 2)])
    return shown, x, top + 1.0


def _check_options(level: object, top: object, sort: object, highlight_label: object) -> tuple[float, int | None]:
    """``level`` and ``top`` checked (with ``sort`` and ``highlight_label``), or a TypeError/ValueError naming them."""
    import numbers

    if isinstance(level, (bool, np.bool_)) or not isinstance(level, numbers.Real):
        raise TypeError(f"level must be a real number in (0, 1), got {level!r} of type {type(level).__name__}.")
    if not 0.0 < float(level) < 1.0:  # NaN fails too
        raise ValueError(f"level must be in (0, 1) (0.95 for a 95% interval), got {level!r}.")
    sorted_ = check_bool(sort, "sort")
    count = None if top is None else check_int(top, "top", minimum=1)
    if count is not None and not sorted_:
        raise ValueError("top selects the lowest- and highest-ranked points, so it needs sort=True.")
    if not isinstance(highlight_label, str):
        raise TypeError(f"highlight_label must be a string, got {type(highlight_label).__name__}.")
    return float(level), count


def _point_labels(labels: object, n: int) -> np.ndarray | None:
    """One label per point (a pandas object stands for its index, as in ``to_dataframe``), or None."""
    if labels is None:
        return None
    array = np.asarray(labels.index if hasattr(labels, "iloc") else labels)  # type: ignore[attr-defined]
    if array.shape != (n,):
        raise ValueError(f"labels must hold one label per point ({n}), got shape {array.shape}.")
    return array


def plot_values(results: Results, ax: Axes | None = None, *, labels: ArrayLike | None = None,
                highlight: ArrayLike | None = None, highlight_label: str = "highlighted", level: float = 0.95,
                sort: bool = True, top: int | None = None, ylabel: str = "value",
                title: str | None = None) -> Axes:
    r"""Draw each point's value in rank order, with its confidence band, and mark the points to watch.

    Each result is a line over the points, sorted by increasing value of the
    *first* result (ties by index), so that several methods compared on the
    same points line up point by point: the x axis is the rank under the
    first result (1 = lowest), and the other curves are that result's order,
    not their own sorted values. A dotted line marks zero.

    The band around a result with standard errors :math:`\hat\sigma_i` is
    the two-sided normal interval of level :math:`1 - \alpha` (``level``),
    point by point:

    .. math:: \hat\phi_i \pm z_{1-\alpha/2}\, \hat\sigma_i, \qquad z_{0.975} \approx 1.96,

    which assumes the estimate is approximately normal (the central limit
    theorem over the samples of a Monte Carlo estimator). Each interval holds
    one point's value at that level, not all of them at once. There is no
    band where the result has no standard error (``stderr`` is ``None``, a
    plain array, the influence heuristics) and none at points whose standard
    error is NaN or infinite; exact methods (``stderr`` zero) get a band of
    zero width.

    Parameters
    ----------
    results : ValuationResult, array-like of shape (N,) or mapping of str to either
        The values: one result, or several named ones of the same ``N``
        points (``{"permutation": a, "KNN": b}``); a result is named by its
        ``method``, an array ``"values"``. Values must be finite.
    ax : matplotlib Axes, optional
        Where to draw; a new figure by default.
    labels : array-like of shape (N,), optional
        One label per point (a pandas DataFrame or Series stands for its
        index), written under the points shown: best with ``top``.
    highlight : array-like of bool of shape (N,) or of int, optional
        Points to mark on the first result's curve (a mask, or indices in
        ``[0, N)``), e.g. the flipped labels: a good valuation ranks them low.
    highlight_label : str, default "highlighted"
        Their legend entry, followed by how many are shown.
    level : float, default 0.95
        Level of the bands, in ``(0, 1)``.
    sort : bool, default True
        Sort by the first result's values; ``False`` keeps the points in
        index order (the x axis is then the index).
    top : int, optional
        Show only the ``top`` lowest- and ``top`` highest-ranked points (all
        of them where ``2 top >= N``), the two groups one slot apart; needs
        ``sort=True``.
    ylabel, title : str
        The y axis label and the title (none by default).

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``, or the new figure's axes. Each curve's line has the gid
        ``"values:<name>"``, its band ``"band:<name>"``, the marks
        ``"highlight"``.
    """
    series = _as_series(results)
    n = series[0].values.size
    level, top = _check_options(level, top, sort, highlight_label)
    marked = _highlighted(highlight, n)
    names = _point_labels(labels, n)
    order = np.argsort(series[0].values, kind="stable") if sort else np.arange(n)
    shown, x, gap = _layout(order, top, sort)

    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes as _Axes

    if ax is not None and not isinstance(ax, _Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}.")
    fresh = ax is None
    if ax is None:
        _, ax = plt.subplots(figsize=(6.0, 3.4))
    z = NormalDist().inv_cdf(0.5 + level / 2)
    for one in series:
        _draw_series(ax, one, shown, x, gap, z, f"{100 * level:g}%")
    on_show = marked[shown]
    if on_show.any():
        count = f"{int(on_show.sum())} of {int(marked.sum())} shown" if on_show.sum() < marked.sum() else on_show.sum()
        ax.scatter(x[on_show], series[0].values[shown][on_show], s=40, facecolors="none", edgecolors="crimson",
                   linewidths=1.3, zorder=4, gid="highlight", label=f"{highlight_label} ({count})")
    _decorate(ax, series[0].name, n, shown, x, gap, names, sort, ylabel, title)
    if fresh:
        ax.figure.tight_layout()  # type: ignore[union-attr]  # a new Axes' figure is a Figure
    return ax


def _draw_series(ax: Axes, one: _Series, shown: np.ndarray, x: np.ndarray, gap: float | None, z: float,
                 level: str) -> None:
    """One result's line and band over the points ``shown`` at ``x``, broken at ``gap``."""
    y = one.values[shown]
    spread = None if one.stderr is None else z * one.stderr[shown]
    if gap is not None:  # a NaN breaks the line (and the band) between the lowest and the highest
        cut = int(np.searchsorted(x, gap))
        x, y = np.insert(x, cut, gap), np.insert(y, cut, np.nan)
        spread = None if spread is None else np.insert(spread, cut, np.nan)
    # an exact result's band has zero width: its legend entry does not promise an interval
    label = one.name if spread is None or not np.nan_to_num(spread).any() else f"{one.name} ({level} interval)"
    marker = "o" if y.size <= 100 else None  # dots on a few points; on many, they would merge into the line
    (line,) = ax.plot(x, y, marker=marker, ms=3, lw=1.2, label=label, gid=f"values:{one.name}")
    if spread is not None:  # fill_between masks NaN and infinite bounds: no band there
        ax.fill_between(x, y - spread, y + spread, color=line.get_color(), alpha=0.2, lw=0, gid=f"band:{one.name}")


def _decorate(ax: Axes, first: str, n: int, shown: np.ndarray, x: np.ndarray, gap: float | None,
              names: np.ndarray | None, sort: bool, ylabel: str, title: str | None) -> None:
    """The zero line, the ticks (ranks, or the points' labels), the axis labels, the title and the legend."""
    ax.axhline(0.0, color="0.4", lw=0.8, ls=":", zorder=0)
    if names is not None:
        ax.set_xticks(x, [str(name) for name in names[shown]], rotation=90, fontsize="small")
    elif gap is not None:  # the slots after the gap hold the ranks n - k + 1 to n
        k = int(gap) - 1
        ticks = {1: "1", k: str(k), k + 2: str(n - k + 1), 2 * k + 1: str(n)}  # a dict: k = 1 ticks once
        ax.set_xticks(list(ticks), list(ticks.values()))
    if gap is not None:
        ax.axvline(gap, color="0.6", lw=0.8, ls="--", zorder=0)
    ax.set_xlabel(f"rank by the value of {first} (1 = lowest)" if sort else "point")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize="small")
