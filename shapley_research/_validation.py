"""Checks at the boundary of the public API.

Every public function validates its arguments here, so that bad input fails
early with a message naming the argument and what was expected.
"""

from __future__ import annotations

import numbers

import numpy as np


def check_int(value, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise naming ``name``.

    Integral floats (``1e4``) are accepted; booleans and fractions are not.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got a boolean ({value!r}).")
    if isinstance(value, numbers.Integral):
        value = int(value)
    elif isinstance(value, numbers.Real) and float(value).is_integer():
        value = int(value)
    else:
        raise TypeError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}.")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}.")
    return value


def check_float(value, name: str, *, minimum: float | None = None, strict: bool = False,
                maximum: float | None = None) -> float:
    """Return ``value`` as a finite float within the given bounds, or raise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    if minimum is not None and (value <= minimum if strict else value < minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {value}.")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}.")
    return value


def check_choice(value, name: str, choices) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}.")
    return value


def check_seed(seed) -> int:
    """Resolve ``seed`` to the non-negative integer entropy of the run.

    ``None`` draws fresh entropy from the operating system; the drawn value is
    returned (and stored on the result) so the run can be repeated exactly.
    """
    if seed is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(seed, np.random.SeedSequence):
        if not isinstance(seed.entropy, numbers.Integral) or seed.spawn_key:
            raise ValueError("seed: pass a SeedSequence with integer entropy and no spawn key, or an int.")
        return int(seed.entropy)
    return check_int(seed, "seed", minimum=0)


def check_masks(masks, n_players: int) -> np.ndarray:
    """Return ``masks`` as a boolean ``(m, n_players)`` array, or raise."""
    masks = np.asarray(masks)
    if masks.ndim != 2 or masks.shape[1] != n_players:
        raise ValueError(
            f"masks must have shape (m, n_players) = (m, {n_players}), got shape {masks.shape}."
        )
    if masks.dtype != np.bool_:
        if not (np.issubdtype(masks.dtype, np.integer) or np.issubdtype(masks.dtype, np.floating)):
            raise TypeError(f"masks must be a boolean array, got dtype {masks.dtype}.")
        if not np.isin(masks, (0, 1)).all():
            raise ValueError("masks must contain only booleans (or 0/1).")
        masks = masks.astype(bool)
    return masks


def check_utilities(values, n_rows: int, source: str = "game.evaluate") -> np.ndarray:
    """Return utilities as a finite float array of length ``n_rows``, or raise."""
    try:
        values = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{source} must return real numbers; got {type(values).__name__}.") from exc
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


def check_features(X, name: str) -> np.ndarray:
    """Return ``X`` as a finite, dense, 2-D float array with samples and features, or raise."""
    if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
        raise TypeError(f"{name} must be a dense array; sparse matrices are not supported (call .toarray()).")
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array, got {type(X).__name__}.") from exc
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}.")
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty: it must contain at least one sample.")
    if X.shape[1] == 0:
        raise ValueError(f"{name} has no features (shape {X.shape}).")
    if not np.isfinite(X).all():
        raise ValueError(f"{name} contains NaN or infinite values.")
    return X


def check_bool(value, name: str) -> bool:
    """Return ``value`` as a bool, or raise (``0``/``1`` and strings are refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r} of type {type(value).__name__}.")
    return bool(value)


def check_target(target_stderr) -> float | None:
    """``None`` or a positive finite standard error to stop at."""
    if target_stderr is None:
        return None
    return check_float(target_stderr, "target_stderr", minimum=0.0, strict=True)
