"""Checks at the boundary of the public API.

Every public function validates its arguments here, so that bad input fails
early with a message naming the argument and what was expected.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection
from typing import Any, Literal, SupportsInt, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray


def check_int(value: object, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise naming ``name``.

    Integral floats (``1e4``) are accepted; booleans and fractions are not.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got a boolean ({value!r}).")
    if isinstance(value, numbers.Integral) or (isinstance(value, numbers.Real) and float(value).is_integer()):
        number = int(cast(SupportsInt, value))  # int() takes every Real (typeshed's numbers.Real lacks __int__)
    else:
        raise TypeError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}.")
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {number}.")
    return number


def check_float(value: object, name: str, *, minimum: float | None = None, strict: bool = False,
                maximum: float | None = None) -> float:
    """Return ``value`` as a finite float within the given bounds, or raise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}.")
    number = float(value)
    if not np.isfinite(number):
        raise ValueError(f"{name} must be finite, got {number}.")
    if minimum is not None and (number <= minimum if strict else number < minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {number}.")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {number}.")
    return number


def check_choice(value: object, name: str, choices: Collection[str]) -> str:
    """Return ``value`` if it is one of ``choices``, or raise naming ``name``."""
    try:
        known = bool(value in choices)
    except (TypeError, ValueError):  # unhashable (a list) against a set; an array's ambiguous truth value
        known = False
    if not known:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}.")
    return cast(str, value)  # one of the choices


def check_n_jobs(n_jobs: object) -> int | None:
    """Return ``n_jobs`` as joblib understands it: ``None`` or a non-zero integer (``-1``: all cores)."""
    if n_jobs is None:
        return None
    jobs = check_int(n_jobs, "n_jobs")
    if jobs == 0:
        raise ValueError("n_jobs must be None, a positive integer or a negative one (-1: all cores), got 0.")
    return jobs


def check_solver(solver: object) -> str:
    """Return the name of an installed cvxpy solver, or raise naming ``solver``."""
    if not isinstance(solver, str):
        raise TypeError(f"solver must be the name of a cvxpy solver, got {solver!r} of type {type(solver).__name__}.")
    import cvxpy as cp

    installed = cp.installed_solvers()
    if solver.upper() not in installed:
        raise ValueError(f"solver must be one of the installed cvxpy solvers {sorted(installed)}, got {solver!r}.")
    return solver


def check_game(game: object, *, minimum: int = 1) -> int:
    """Return ``game.n_players`` after checking that ``game`` is a game, or raise naming it.

    A game has an integer ``n_players`` (at least ``minimum``) and a method
    ``evaluate(masks)``; a plain utility function is not one (wrap it with
    :func:`shapley_research.as_game`).
    """
    evaluate = getattr(game, "evaluate", None)
    if not hasattr(game, "n_players") and evaluate is None:
        hint = "; wrap a utility function with as_game(fn, n_players)" if callable(game) else ""
        raise TypeError(f"game must be an object with n_players and evaluate(masks), "
                        f"got {type(game).__name__}{hint}.")
    n = check_int(getattr(game, "n_players", None), "game.n_players", minimum=minimum)
    if not callable(evaluate):
        raise TypeError(f"game.evaluate must be a method evaluate(masks) returning one utility per "
                        f"coalition; {type(game).__name__} has "
                        f"{'none' if evaluate is None else type(evaluate).__name__}.")
    return n


def check_seed(seed: object) -> int:
    """Resolve ``seed`` to the non-negative integer entropy of the run.

    ``None`` draws fresh entropy from the operating system; the drawn value is
    returned (and stored on the result) so the run can be repeated exactly.
    """
    if seed is None:
        return int(cast(SupportsInt, np.random.SeedSequence().entropy))  # drawn entropy is an int
    if isinstance(seed, np.random.SeedSequence):
        if not isinstance(seed.entropy, numbers.Integral) or seed.spawn_key:
            raise ValueError("seed: pass a SeedSequence with integer entropy and no spawn key, or an int.")
        return int(cast(SupportsInt, seed.entropy))  # an Integral, checked above
    if isinstance(seed, (np.random.Generator, np.random.RandomState)):
        raise TypeError(f"seed must be an integer >= 0, a numpy SeedSequence or None, got a {type(seed).__name__}: "
                        "a run's values are reproduced from its seed, which a generator's state does not give "
                        "(pass the int that seeded it).")
    return check_int(seed, "seed", minimum=0)


def check_masks(masks: ArrayLike, n_players: int) -> NDArray[np.bool_]:
    """Return ``masks`` as a boolean ``(m, n_players)`` array, or raise."""
    array = np.asarray(masks)
    if array.ndim != 2 or array.shape[1] != n_players:
        raise ValueError(
            f"masks must have shape (m, n_players) = (m, {n_players}), got shape {array.shape}."
        )
    if array.dtype != np.bool_:
        if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
            raise TypeError(f"masks must be a boolean array, got dtype {array.dtype}.")
        if not np.isin(array, (0, 1)).all():
            raise ValueError("masks must contain only booleans (or 0/1).")
        array = array.astype(bool)
    return array


def check_weights(weights: ArrayLike, n_players: int, name: str = "masks",
                  owner: str | None = None) -> NDArray[np.bool_] | NDArray[np.int64]:
    """Return masks (booleans, kept) or sample weights (non-negative integers, as int64) of shape (m, n_players).

    Sample weights are e.g. bootstrap counts; integral floats are accepted. A
    non-numeric dtype raises a ``TypeError``; a numeric array with a wrong value
    (negative, fractional, not finite) a ``ValueError``. ``owner`` prefixes the
    messages.
    """
    prefix = "" if owner is None else f"{owner}: "
    array = np.asarray(weights)
    if array.ndim != 2 or array.shape[1] != n_players:
        raise ValueError(f"{prefix}{name} must have shape (m, n_players) = (m, {n_players}), "
                         f"got shape {array.shape}.")
    if array.dtype == np.bool_:
        return array
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"{prefix}{name} must be boolean masks or integer sample weights, got dtype {array.dtype}.")
    finite = array.dtype.kind != "f" or bool(np.isfinite(array).all())  # np.mod warns on infinities
    if array.size and not (finite and np.all(array >= 0) and np.all(np.mod(array, 1) == 0)):
        raise ValueError(f"{prefix}{name} must contain only booleans (or 0/1) or non-negative integers (sample "
                         "weights, such as bootstrap counts).")
    return array.astype(np.int64)


def check_permutations(permutations: ArrayLike, n_players: int) -> NDArray[np.integer]:
    """Return ``permutations`` as an integer ``(m, n_players)`` array whose rows permute ``range(n_players)``, or raise.

    ``O(m N)``: a row is a permutation iff its entries lie in range and every
    player is marked seen.
    """
    array = np.asarray(permutations)
    if array.ndim != 2 or array.shape[1] != n_players:
        raise ValueError(f"permutations must have shape (m, n_players) = (m, {n_players}), "
                         f"got {array.shape}.")
    if not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"permutations must be integers, got dtype {array.dtype}.")
    if array.size:
        seen = np.zeros(array.shape, dtype=bool)
        in_range = array.min() >= 0 and array.max() < n_players
        if in_range:
            np.put_along_axis(seen, array, True, axis=1)
        if not (in_range and seen.all()):
            raise ValueError("each row of permutations must be a permutation of range(n_players).")
    return array


def check_utilities(values: object, n_rows: int, source: str = "game.evaluate") -> NDArray[np.float64]:
    """Return utilities as a finite float array of length ``n_rows``, or raise."""
    try:
        array = np.asarray(values)
        if array.dtype.kind in "cUS":  # complex would lose its imaginary part; strings are no utilities
            raise TypeError
        values = np.asarray(array, dtype=float)
    except (TypeError, ValueError) as exc:
        got = type(values).__name__
        if isinstance(values, np.ndarray):
            got += f" of dtype {values.dtype}"
        raise TypeError(f"{source} must return real numbers; got {got}.") from exc
    values = values.reshape(-1) if values.ndim == 2 and 1 in values.shape else values
    if values.shape != (n_rows,):
        raise ValueError(
            f"{source} must return one utility per coalition: expected shape ({n_rows},), "
            f"got {values.shape}."
        )
    if not np.isfinite(values).all():
        bad = np.flatnonzero(~np.isfinite(values))
        raise ValueError(
            f"{source} returned non-finite utilities ({values[bad[0]]}) for {bad.size} of "
            f"{n_rows} coalitions (first at row {bad[0]}). Utilities must be finite."
        )
    return values


def check_real_scalar(value: object, what: str, hint: str = "") -> float:
    """Return ``value`` as a float when it is one real number, or a TypeError saying ``what`` must return one.

    Python and NumPy numbers and one-element real arrays are accepted; strings
    (which ``float`` would parse), complex numbers, ``None`` and longer arrays
    are not. ``what`` names the callable that produced ``value``.
    """
    if isinstance(value, numbers.Real):  # float, int, bool and their NumPy scalars
        return float(value)
    array = None
    if not isinstance(value, (str, bytes)):
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):  # ragged sequences
            array = None
    if array is not None and array.size == 1 and array.dtype.kind in "biuf":
        return float(array.reshape(()))
    shape = f" of shape {array.shape}" if array is not None and array.ndim else ""
    raise TypeError(f"{what} must return one real number, got {type(value).__name__}{shape}{hint}.")


def check_real_array(values: object, name: str) -> NDArray[np.float64]:
    """Return ``values`` as a float array of any shape, or a TypeError naming ``name``.

    Strings (which NumPy would parse) and complex numbers (whose imaginary part
    the cast would drop) are refused; shape and finiteness are the caller's.
    """
    try:
        array = np.asarray(values)
        if array.dtype.kind in "cUS":
            raise TypeError
        return np.asarray(array, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers, got {type(values).__name__}.") from exc


def check_features(X: object, name: str, allow_nan: bool = False) -> NDArray[np.float64]:
    """Return ``X`` as a finite, dense, 2-D float array with samples and features, or raise.

    ``allow_nan``: missing values (NaN) pass, for a model that takes them; infinities never do.
    """
    if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
        raise TypeError(f"{name} must be a dense array; sparse matrices are not supported (call .toarray()).")
    if is_sparse_frame(X):  # np.asarray would densify it silently, whatever its size
        raise TypeError(f"{name} must be a dense array; DataFrames of sparse columns are not supported "
                        "(call .sparse.to_dense()).")
    original = type(X).__name__
    try:
        X = np.asarray(X)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise TypeError(f"{name} must be a numeric array, got {original}.") from exc
    if X.dtype.kind in "US":  # numpy would parse numeric strings silently; scikit-learn refuses them too
        raise TypeError(f"{name} must be a numeric array, got strings (dtype {X.dtype}); "
                        "convert them to numbers explicitly.")
    if X.dtype.kind == "c":  # the cast to float would drop the imaginary part with only a warning
        raise TypeError(f"{name} must be a real numeric array, got complex values (dtype {X.dtype}).")
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array, got {original} of dtype {X.dtype}.") from exc
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}.")
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty: it must contain at least one sample.")
    if X.shape[1] == 0:
        raise ValueError(f"{name} has no features (shape {X.shape}).")
    if not np.isfinite(X).all() and (not allow_nan or np.isinf(X).any()):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return X

def is_frame(X: object) -> bool:
    """Whether ``X`` is a 2-D pandas-like table (rows selected by position with ``.iloc``)."""
    return hasattr(X, "iloc") and hasattr(X, "columns") and getattr(X, "ndim", None) == 2


def is_sparse_frame(X: object) -> bool:
    """Whether ``X`` is a pandas DataFrame whose every column is sparse (``pd.SparseDtype``)."""
    return is_frame(X) and len(X.columns) > 0 and all(  # type: ignore[attr-defined]
        str(dtype).startswith("Sparse[") for dtype in X.dtypes)  # type: ignore[attr-defined]


def is_sparse(X: object) -> bool:
    """Whether ``X`` is a SciPy sparse matrix or array (one that converts to CSR), or a DataFrame of sparse columns."""
    return (hasattr(X, "tocsr") and hasattr(X, "toarray") and not isinstance(X, np.ndarray)) or is_sparse_frame(X)


def check_same_columns(X_train: object, X_test: object) -> None:
    """Two DataFrames must have the same columns in the same order (a model takes features by position;
    scikit-learn refuses other names at predict time, here they would be matched silently)."""
    if is_frame(X_train) and is_frame(X_test):
        train, test = list(X_train.columns), list(X_test.columns)  # type: ignore[attr-defined]
        if train != test:
            raise ValueError(f"X_test must have the columns of X_train in the same order; got {test[:10]} against "
                             f"{train[:10]}.")


def check_feature_pair(X_train: object, X_test: object, allow_nan: bool = False
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Training and test features (:func:`check_features`) with the same features, in the same order."""
    check_same_columns(X_train, X_test)
    X_tr, X_te = check_features(X_train, "X_train", allow_nan), check_features(X_test, "X_test", allow_nan)
    if X_tr.shape[1] != X_te.shape[1]:
        raise ValueError(f"X_train has {X_tr.shape[1]} features but X_test has {X_te.shape[1]}.")
    return X_tr, X_te


def check_bool(value: object, name: str) -> bool:
    """Return ``value`` as a bool, or raise (``0``/``1`` and strings are refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r} of type {type(value).__name__}.")
    return bool(value)


#: Environment variable that, set to ``off``, turns the estimators' default bars (``progress=None``) off.
#: Defined here, below every layer, so that the command line sets it without importing the estimators.
PROGRESS_ENV = "SHAPLEY_RESEARCH_PROGRESS"


def check_progress(progress: object) -> bool | None:
    """``progress``: ``None`` (shown on a terminal or in a notebook, and in a log once a run lasts) or a bool."""
    if progress is None:
        return None
    if not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be True, False or None (shown where someone watches), got {progress!r} "
                        f"of type {type(progress).__name__}.")
    return bool(progress)


def check_bool_or_auto(value: object, name: str) -> bool | Literal["auto"]:
    """``value`` as ``True``, ``False`` or ``"auto"`` (numpy booleans accepted), else a ``ValueError``."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value == "auto":  # a membership test would let 1 and 0 through
        return "auto"
    raise ValueError(f"{name} must be 'auto', True or False, got {value!r}.")


def check_target(target_stderr: object) -> float | None:
    """``None`` or a positive finite standard error to stop at."""
    if target_stderr is None:
        return None
    return check_float(target_stderr, "target_stderr", minimum=0.0, strict=True)


def check_target_rank_correlation(target_rank_correlation: object) -> float | None:
    """``None`` or an expected Spearman correlation in ``(0, 1]`` to stop at (booleans refused)."""
    if target_rank_correlation is None:
        return None
    value = check_float(target_rank_correlation, "target_rank_correlation")
    if not 0.0 < value <= 1.0:
        raise ValueError(f"target_rank_correlation must be in (0, 1] (an expected Spearman rank "
                         f"correlation), got {value}.")
    return value


def check_target_vector(y: ArrayLike, name: str, n_samples: int, x_name: str, noun: str = "labels") -> np.ndarray:
    """Return ``y`` as a 1-D array with one entry per sample of ``x_name``, or raise naming ``name``.

    A column ``(n, 1)`` or row ``(1, n)`` vector is flattened; anything else
    that is not 1-D is refused (never silently reshaped).
    """
    y = np.asarray(y)
    if y.ndim == 2 and 1 in y.shape:
        y = y.reshape(-1)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one {noun[:-1]} per sample), got shape {y.shape}.")
    if y.shape[0] != n_samples:
        raise ValueError(f"{name} has {y.shape[0]} {noun} but {x_name} has {n_samples} samples.")
    return y


def check_class_labels(y: np.ndarray, name: str, *, sortable: bool = True) -> np.ndarray:
    """Check a 1-D array of class labels: no NaN/inf, no complex, and (``sortable``) comparable."""
    kind = y.dtype.kind
    if kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"{name} contains NaN or infinite labels.")
    if kind == "f" and np.any(y != np.round(y)):
        raise ValueError(f"{name} holds continuous values (such as {y[y != np.round(y)][0]!r}), not class labels "
                         "(integers, strings or whole-number floats); a real-valued target needs a regression "
                         "utility, e.g. ModelUtility with metric='r2'.")
    if kind not in "biufUSO":
        raise TypeError(f"{name} must hold class labels (integers or strings), got dtype {y.dtype}.")
    if kind == "O":
        if any(isinstance(v, float) and not np.isfinite(v) for v in y.tolist()):
            raise ValueError(f"{name} contains NaN or infinite labels.")
        if sortable:
            try:
                np.unique(y)
            except TypeError as exc:
                raise TypeError(f"{name} labels must be mutually comparable (for sorting); "
                                "got a mix such as numbers and strings or None.") from exc
    if name == "y_train" and kind in "iuf":
        _warn_if_a_quantity(y, name)
    return y


#: Numeric training labels with more distinct values than this, and than half the points, look like a quantity.
MANY_CLASSES = 20


def _warn_if_a_quantity(y: np.ndarray, name: str) -> None:
    """Warn where whole-number labels look like a quantity (counts, prices) taken as classes."""
    distinct = np.unique(y).size
    if distinct > MANY_CLASSES and 2 * distinct > y.size:
        import warnings

        warnings.warn(f"{name} has {distinct} distinct numeric labels among {y.size} points, taken as classes; "
                      "if it is a quantity (counts, prices), value it with a regression utility (a regressor, "
                      "metric='r2').", UserWarning, stacklevel=_callers_level())


def _callers_level() -> int:
    """``stacklevel`` of the first frame outside this package, for a warning raised by the function calling this."""
    import os
    import sys

    package, level = os.path.dirname(os.path.abspath(__file__)), 1
    frame: Any = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def check_two_classes(y: np.ndarray, name: str = "y_train") -> np.ndarray:
    """Refuse class labels holding a single class: a classifier needs two to learn anything.

    With one class every coalition's model predicts that class, so every
    utility is the same and every value about 0 (and every out-of-bag
    prediction is right): a silent, meaningless result. Real-valued targets
    belong to a regression metric or ``task="regression"``, which accept any
    targets.

    Raises
    ------
    ValueError
        Naming ``name``, its single class and how many labels hold it.
    """
    classes = np.unique(y)
    if classes.size < 2:
        single = f"a single class ({classes[:1].tolist()[0]!r})" if classes.size else "no class"
        raise ValueError(f"{name} holds {single} in all its {y.size} labels: a classifier needs at least two "
                         "classes (with one, every model predicts that class and the values carry no "
                         "information). For real-valued targets use a regression metric or task='regression'.")
    return y


def check_label_kinds(y_train: np.ndarray, y_test: np.ndarray) -> None:
    """Refuse test labels that never equal a training label (strings against numbers, or no label in common).

    Every model would then score 0 on the test set, and every value would be 0.
    """
    kinds = {y_train.dtype.kind, y_test.dtype.kind}
    if kinds & set("US") and kinds & set("biuf"):
        raise TypeError(f"y_test holds {_label_kind(y_test)} but y_train holds {_label_kind(y_train)}: "
                        "no test label can match a training label.")
    train, test = set(y_train.tolist()), set(y_test.tolist())
    if not train & test:
        raise ValueError(f"y_test shares no label with y_train (test labels {sorted(map(str, test))[:5]}, training "
                         f"labels {sorted(map(str, train))[:5]}): every model would score 0 on the test set.")


def _label_kind(y: np.ndarray) -> str:
    return f"strings (dtype {y.dtype})" if y.dtype.kind in "US" else f"numbers (dtype {y.dtype})"
