"""Cooperative games: the objects every estimator values.

A *game* is any object with an integer attribute ``n_players`` and a method
``evaluate(masks)`` mapping a boolean ``(m, n_players)`` array of coalitions
(row ``r`` is the indicator vector of a coalition ``S_r``) to ``m`` utilities
``U(S_r)``. Evaluating many coalitions in one call is what makes games fast:
a model utility trains a whole batch of subsets at once.

A game may also offer ``evaluate_prefixes(permutations)``: for an ``(m, n)``
array of permutations it returns the ``(m, n)`` utilities
``U({pi_1}), U({pi_1, pi_2}), ..., U({pi_1..pi_n})`` of every prefix of every
permutation. Incrementally trainable models compute these in one pass per
permutation; permutation estimators use the method when present and fall back
to building the prefix masks otherwise.
"""

from __future__ import annotations

import functools
import hashlib
import types
from typing import Any, Callable, Protocol, cast, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import (check_bool, check_int, check_masks, check_real_scalar, check_utilities, is_frame,
                           is_sparse)

__all__ = ["Game", "GameLike", "PrefixGame", "FunctionGame", "as_game", "evaluate_prefixes", "supports_prefixes",
           "prefix_masks", "prefix_positions",
           "prefix_utilities", "PREFIX_MASK_CELLS"]


@runtime_checkable
class GameLike(Protocol):
    """What an estimator needs from a game (structural type).

    ``evaluate`` maps a boolean ``(m, n_players)`` array of coalitions to
    their ``m`` float utilities.
    """

    n_players: int

    def evaluate(self, masks: NDArray[np.bool_]) -> NDArray[np.float64]: ...


@runtime_checkable
class PrefixGame(GameLike, Protocol):
    """A game with a one-pass prefix path (structural type): ``evaluate_prefixes(permutations)``.

    The capability is declared by the game's class: a method, or (where only
    some configurations have an exact path, as :class:`~shapley_research.ModelUtility`)
    a property that raises ``AttributeError`` on an instance without one.
    Check it with :func:`supports_prefixes`, not ``isinstance`` (which,
    depending on the Python version, may look at the class alone).
    """

    def evaluate_prefixes(self, permutations: NDArray[np.integer[Any]]) -> NDArray[np.float64]: ...


def supports_prefixes(game: object) -> bool:
    """Whether ``game`` offers a one-pass ``evaluate_prefixes`` (:class:`PrefixGame`) on this instance.

    The one test of the capability: estimators use the path when it is there
    (:func:`evaluate_prefixes`), truncation refuses a game that has it.
    """
    return callable(getattr(game, "evaluate_prefixes", None))


def content_digest(*parts: Any) -> str:
    """16 hex digits of a SHA-256 over arrays (their dtype, shape and bytes), DataFrames and the reprs of the rest."""
    digest = hashlib.sha256()
    for part in parts:
        if is_frame(part):  # a DataFrame: its values by column, and its names
            import pandas as pd

            digest.update(repr(list(part.columns)).encode())
            digest.update(pd.util.hash_pandas_object(part, index=False).to_numpy().tobytes())
        elif is_sparse(part):
            csr = part.tocsr(copy=True)  # a copy: the caller's matrix is left as it was
            csr.sum_duplicates()  # one representation of a matrix (sorted indices, no repeated entries)
            csr.eliminate_zeros()
            digest.update(f"sparse{csr.dtype.str}{csr.shape}".encode())
            for array in (csr.data, csr.indices, csr.indptr):
                digest.update(np.ascontiguousarray(array).tobytes())
        elif isinstance(part, np.ndarray) and part.dtype != object:
            digest.update(f"{part.dtype.str}{part.shape}".encode())
            digest.update(np.ascontiguousarray(part).tobytes())
        else:
            digest.update(repr(part.tolist() if isinstance(part, np.ndarray) else part).encode())
    return digest.hexdigest()[:16]


def game_identity(game: Any) -> str | None:
    """What tells two games apart where their runs would be merged: ``game.fingerprint()``, or None.

    A game's ``fingerprint()`` (:meth:`Game.fingerprint`) digests what defines
    its utility (a model utility's data, model and metric). A game without one
    (or with an empty one, such as a wrapper that counts calls) is unknown, and
    is never told apart from another by it.
    """
    fingerprint = getattr(game, "fingerprint", None)
    own = fingerprint() if callable(fingerprint) else ""
    return own or None


class Game:
    """Base class for games: subclasses implement ``_evaluate``.

    ``evaluate`` validates the masks (shape ``(m, n_players)``, booleans) and
    the returned utilities (``m`` finite floats) around ``_evaluate``, which
    receives a clean boolean array.
    """

    n_players: int
    #: Whether each row's utility depends on that row alone, so that ``evaluate(masks[a:b])`` is
    #: ``evaluate(masks)[a:b]`` bit for bit (a model fitted per coalition, a function of one mask). A run with
    #: a checkpoint then evaluates and logs a large call in parts, keeping each part's utilities on a stop.
    independent_rows: bool = False

    def evaluate(self, masks: ArrayLike) -> NDArray[np.float64]:
        """Utilities of a batch of coalitions.

        Parameters
        ----------
        masks : array-like of bool, shape (m, n_players)
            Row ``r`` is the indicator vector of coalition ``S_r`` (0/1
            integers or floats are accepted).

        Returns
        -------
        ndarray of float64, shape (m,)
            ``U(S_r)`` for every row, finite.
        """
        checked = check_masks(masks, self.n_players)
        return check_utilities(self._evaluate(checked), checked.shape[0],
                               source=f"{type(self).__name__}._evaluate")

    def _evaluate(self, masks: NDArray[np.bool_]) -> ArrayLike:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} must implement _evaluate(masks).")

    def __call__(self, coalition: ArrayLike) -> float:
        """Utility of one coalition: a boolean mask, or an iterable of player indices.

        Indices must be distinct integers (or integral floats) in
        ``range(n_players)``; negative indices are refused rather than counted
        from the end. A 0/1 integer array is read as indices, not as a mask
        (unlike :meth:`evaluate`): pass booleans.
        """
        array = np.asarray(coalition)
        if array.dtype == np.bool_:
            mask = array.reshape(1, -1)
        else:
            mask = np.zeros((1, self.n_players), dtype=bool)
            mask[0, _check_indices(array, self.n_players)] = True
        return float(self.evaluate(mask)[0])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_players={self.n_players})"

    def fingerprint(self) -> str:
        """A digest of what defines this game's utility (:func:`content_digest`); ``""`` where unknown.

        Runs of games with different fingerprints are refused by
        :func:`~shapley_research.merge_results`. Subclasses holding data or a
        model return a digest of them; the base class knows nothing more than
        its type and size.
        """
        return ""


def function_parts(fn: Any, depth: int = 0) -> list[Any]:
    """What defines a Python function for :meth:`FunctionGame.fingerprint`: name, code, defaults, closure.

    The code object's bytecode, constants and names (nested functions'
    too), and the values of its defaults and closure cells by
    :func:`_stable_parts`. Bytecode belongs to a Python version, so a file
    written under another one tells the same function apart.
    """
    parts: list[Any] = [getattr(fn, "__module__", ""), getattr(fn, "__qualname__", type(fn).__name__)]
    if isinstance(fn, functools.partial):
        return parts + [function_parts(fn.func, depth + 1), _stable_parts(fn.args, depth),
                        _stable_parts(fn.keywords, depth)]
    code = getattr(fn, "__code__", None)
    if code is None or depth > 3:  # a builtin or a callable object: its name (and type) only
        return parts
    cells = [cell.cell_contents for cell in (getattr(fn, "__closure__", None) or ()) if _has_contents(cell)]
    return parts + [_code_parts(code), _stable_parts(getattr(fn, "__defaults__", None), depth),
                    _stable_parts(getattr(fn, "__kwdefaults__", None), depth), _stable_parts(cells, depth)]


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell (a name not yet bound) raises
    except ValueError:
        return False
    return True


def _code_parts(code: types.CodeType) -> list[Any]:
    return [code.co_code.hex(), [_const_parts(c) for c in code.co_consts], list(code.co_names)]


def _const_parts(const: Any) -> Any:
    """A code constant's repr; a frozenset's sorted (its order follows string hashing, which varies by process)."""
    if isinstance(const, types.CodeType):
        return _code_parts(const)
    if isinstance(const, frozenset):
        return sorted(repr(item) for item in const)
    if isinstance(const, tuple):
        return [_const_parts(item) for item in const]
    return repr(const)


def _stable_parts(value: Any, depth: int) -> Any:
    """``value`` as reprs that do not depend on where it lives in memory: arrays by content, containers
    element by element, games by fingerprint, functions by :func:`function_parts`, other objects by type."""
    if isinstance(value, np.ndarray) or is_frame(value):
        return content_digest(value)
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic)):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return [_stable_parts(item, depth) for item in value]
    if isinstance(value, dict):
        return sorted((repr(key), _stable_parts(item, depth)) for key, item in value.items())
    if callable(getattr(value, "fingerprint", None)):
        return value.fingerprint()
    if isinstance(value, types.ModuleType):
        return value.__name__
    if callable(value):  # function_parts stops below depth 3
        return function_parts(value, depth + 1)
    return type(value).__qualname__


class FunctionGame(Game):
    """A game defined by a Python function (see :func:`as_game`)."""

    def __init__(self, fn: Callable[[NDArray[np.bool_]], ArrayLike], n_players: int,
                 vectorized: bool = False) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}.")
        self.fn = fn
        self.n_players = check_int(n_players, "n_players", minimum=1)
        self.vectorized = check_bool(vectorized, "vectorized")

    def fingerprint(self) -> str:
        """The fingerprint of the game whose method ``fn`` is, else a digest of ``fn`` (:func:`function_parts`).

        Two functions made by one factory (closures over different arrays or
        numbers) or two lambdas with different bodies are told apart; what a
        function reads from a global variable or an opaque object is not.
        """
        owner = getattr(self.fn, "__self__", None)
        if callable(getattr(owner, "fingerprint", None)):
            return owner.fingerprint()  # type: ignore[union-attr]
        return content_digest(repr(function_parts(self.fn)))

    @property
    def independent_rows(self) -> bool:  # type: ignore[override]
        """Whether ``fn`` is called once per row (``vectorized=False``): each row's utility is its own."""
        return not self.vectorized

    def _evaluate(self, masks: NDArray[np.bool_]) -> ArrayLike:
        if self.vectorized:
            return self.fn(masks)
        return np.fromiter((check_real_scalar(self.fn(row), "fn(mask)", _SCALAR_HINT) for row in masks),
                           dtype=float, count=masks.shape[0])


_SCALAR_HINT = " (as_game with vectorized=False); pass vectorized=True for a function of a mask matrix"


def _check_indices(coalition: np.ndarray, n_players: int) -> NDArray[np.intp]:
    """Player indices of a coalition given as integers in ``range(n_players)``, or raise."""
    indices = coalition.reshape(-1)
    if indices.size == 0:
        return indices.astype(np.intp)
    if indices.dtype.kind not in "iu":
        if indices.dtype.kind != "f" or not np.all(np.isfinite(indices) & (indices == np.round(indices))):
            raise TypeError(f"coalition must be a boolean mask or integer player indices, got dtype "
                            f"{indices.dtype} ({indices[:5].tolist()}).")
    if (indices < 0).any() or (indices >= n_players).any():
        raise ValueError(f"coalition holds player indices outside range({n_players}): "
                         f"{indices[(indices < 0) | (indices >= n_players)][:5].tolist()}.")
    unique, counts = np.unique(indices, return_counts=True)
    if (counts > 1).any():  # most likely a 0/1 mask of integers, which evaluate() reads as a mask
        raise ValueError(f"coalition holds repeated player indices ({unique[counts > 1][:5].tolist()}); give each "
                         f"player once, or a boolean mask (a 0/1 integer array reads as indices here: "
                         f"convert it with .astype(bool)).")
    return indices.astype(np.intp)


def as_game(fn: Callable[[NDArray[np.bool_]], ArrayLike], n_players: int, vectorized: bool = False) -> FunctionGame:
    """Wrap a utility function as a game.

    Parameters
    ----------
    fn : callable
        With ``vectorized=False``, ``fn(mask) -> float`` takes one boolean
        mask of length ``n_players`` and returns one real number (a NumPy
        scalar or one-element array is fine; a string, ``None`` or a longer
        array raises ``TypeError``). With ``vectorized=True``,
        ``fn(masks) -> array`` takes a boolean ``(m, n_players)`` array and
        returns ``m`` utilities. Non-finite utilities raise ``ValueError``.
    n_players : int
        Number of players (data points), at least 1.
    vectorized : bool, default False
        Whether ``fn`` evaluates a whole mask matrix at once (``True`` or
        ``False`` only).

    Returns
    -------
    FunctionGame

    Examples
    --------
    >>> import numpy as np
    >>> from shapley_research import as_game, exact_shapley
    >>> weights = np.array([1.0, 2.0, 3.0])
    >>> game = as_game(lambda m: m @ weights, 3, vectorized=True)
    >>> exact_shapley(game).values
    array([1., 2., 3.])
    """
    return FunctionGame(fn, n_players, vectorized=vectorized)


PREFIX_MASK_CELLS = 2**22  # most mask cells built at once for a game without evaluate_prefixes (4 MiB of bools)


def prefix_positions(permutations: NDArray[np.integer[Any]]) -> NDArray[np.signedinteger[Any]]:
    """``positions[t, j]``: the position of player ``j`` in permutation ``t``, in the narrowest integer type.

    Player ``j`` is in prefix ``k`` of ``pi_t`` iff ``positions[t, j] <= k``;
    the comparison dominates building prefix masks, and the narrowest type makes
    it 3-6x faster. ``permutations`` is an ``(m, n)`` integer array; the
    result has the same shape, in ``int16``, ``int32`` or ``int64``.
    """
    m, n = permutations.shape
    dtype: type[np.signedinteger[Any]] = (np.int16 if n <= np.iinfo(np.int16).max
                                          else np.int32 if n <= np.iinfo(np.int32).max else np.int64)
    positions = np.empty((m, n), dtype=dtype)
    np.put_along_axis(positions, permutations, np.arange(n, dtype=dtype)[None, :], axis=1)
    return positions


def prefix_masks(permutations: NDArray[np.integer[Any]]) -> NDArray[np.bool_]:
    """Masks of all prefixes of each permutation.

    For ``permutations`` of shape ``(m, n)`` returns a boolean ``(m * n, n)``
    array whose row ``t * n + k`` is the coalition ``{pi_t[0], ..., pi_t[k]}``.
    Built with one broadcast comparison of positions (:func:`prefix_positions`).
    """
    m, n = permutations.shape
    positions = prefix_positions(permutations)
    masks = positions[:, None, :] <= np.arange(n, dtype=positions.dtype)[None, :, None]
    return masks.reshape(m * n, n)


def evaluate_prefixes(game: GameLike, permutations: NDArray[np.integer[Any]]) -> NDArray[np.float64]:
    """Utilities of all prefixes, through the game's fast path when it has one.

    ``permutations`` is an ``(m, n)`` integer array of permutations of the
    players; returns the ``(m, n)`` float64 utilities ``U({pi_t[0..k]})``
    (``game.evaluate_prefixes`` when the game has it, else prefix masks
    through ``game.evaluate``, see :func:`prefix_utilities`).
    """
    m, n = permutations.shape
    if supports_prefixes(game):
        values = cast(PrefixGame, game).evaluate_prefixes(permutations)
        try:
            array = np.asarray(values)
        except ValueError:  # ragged: check_utilities reports it
            array = None
        if array is not None and array.size == m * n:
            values = array.reshape(-1)  # (m, n) as documented, or already flat
        return check_utilities(values, m * n, source=f"{type(game).__name__}.evaluate_prefixes").reshape(m, n)
    positions = prefix_positions(permutations)
    return prefix_utilities(game, positions, np.arange(n, dtype=positions.dtype))


def prefix_utilities(game: GameLike, positions: NDArray[np.signedinteger[Any]],
                     evaluated: NDArray[np.signedinteger[Any]]) -> NDArray[np.float64]:
    """``(m, len(evaluated))`` utilities, through ``game.evaluate``, of the prefixes ``evaluated`` of permutations.

    ``positions`` are the permutations' :func:`prefix_positions`. One call
    while the masks hold at most about ``PREFIX_MASK_CELLS`` cells, else
    blocks of whole permutations of that size, or of one permutation's
    prefixes when a permutation alone is larger: the prefix masks of ``m``
    permutations of ``n`` players hold ``m n^2`` cells (400 MB for one
    permutation at ``N = 20,000``, 10 GB at ``10^5``), so memory stays ``O(N)``
    per evaluated row whatever ``N``.
    """
    m, n = positions.shape
    source = f"{type(game).__name__}.evaluate"
    utilities = np.empty((m, evaluated.size))
    rows_per_call = max(1, PREFIX_MASK_CELLS // n)
    group = max(1, rows_per_call // evaluated.size)  # permutations per call
    step = min(evaluated.size, rows_per_call)  # prefixes per call, within one permutation
    for first in range(0, m, group):
        block = positions[first:first + group]
        for lo in range(0, evaluated.size, step):
            part = evaluated[lo:lo + step]
            masks = (block[:, None, :] <= part[None, :, None]).reshape(-1, n)
            utilities[first:first + group, lo:lo + step] = check_utilities(
                game.evaluate(masks), masks.shape[0], source=source).reshape(block.shape[0], part.size)
    return utilities
