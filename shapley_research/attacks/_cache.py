"""The ``.npz`` file cache of generated arrays, keyed by parameters and a hash of the inputs."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np


# --------------------------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------------------------

_PARAMS_FIELD, _KEY_FIELD, _INPUTS_FIELD = "__params__", "__key__", "__inputs_sha256__"


def array_digest(arrays: Mapping[str, Any]) -> str:
    """SHA-256 of named arrays: their names, dtypes, shapes and bytes (order of names does not matter)."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(np.asarray(arrays[name]))
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _json_default(value: object) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    if isinstance(value, (tuple, set, frozenset)):
        return sorted(value) if not isinstance(value, tuple) else list(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"params must hold JSON values (numbers, strings, lists, dicts), got {type(value).__name__}.")


def _params_json(params: Mapping[str, Any]) -> str:
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping of JSON values, got {type(params).__name__}.")
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"), default=_json_default,
                      allow_nan=False)


def cache_key(params: Mapping[str, Any], inputs_sha256: str = "") -> str:
    """The key a cache entry is valid for: SHA-256 of the canonical JSON of ``params`` and the inputs' hash."""
    return hashlib.sha256((_params_json(params) + "|" + inputs_sha256).encode()).hexdigest()


def read_cache(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Arrays and metadata (``params``, ``key``, ``inputs_sha256``) of a cache file.

    Raises
    ------
    FileNotFoundError, ValueError
        If the file is missing, or is not a cache file written by :func:`load_or_generate`.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except FileNotFoundError:
        raise
    except Exception as exc:  # noqa: BLE001 - zip, pickle and format errors alike
        raise ValueError(f"{path} is not a readable .npz cache file: {exc}") from None
    try:
        meta = {"params": json.loads(str(arrays.pop(_PARAMS_FIELD))), "key": str(arrays.pop(_KEY_FIELD)),
                "inputs_sha256": str(arrays.pop(_INPUTS_FIELD))}
    except (KeyError, ValueError) as exc:
        raise ValueError(f"{path} lacks the cache metadata ({exc}); it was not written by load_or_generate.") from None
    return arrays, meta


# Every member of a cache file carries this date instead of the time of writing (zip's earliest date).
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _write_npz(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    """An uncompressed ``.npz`` whose bytes depend only on ``arrays`` (names, order, dtypes, values).

    ``np.savez`` dates every member with the time of writing, and deflate's
    output can depend on the zlib build, so identical arrays gave a new file
    on every run; the pipeline records the file's hash (``dvc.lock``), and
    only a change of the arrays should change it.
    """
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            with archive.open(member, "w", force_zip64=True) as out:
                np.lib.format.write_array(out, np.asanyarray(array), allow_pickle=False)


def load_or_generate(cache_path: str | os.PathLike | None, params: Mapping[str, Any],
                     generate: Callable[[], Mapping[str, Any]], *, inputs: Mapping[str, Any] | None = None,
                     ) -> tuple[dict[str, np.ndarray], bool]:
    """Arrays from ``cache_path`` if it was made with these ``params`` and ``inputs``; else generate and save.

    The file (``.npz``, uncompressed, the same bytes for the same arrays:
    :func:`_write_npz`) stores the arrays that ``generate()`` returns together
    with ``params`` as JSON, the SHA-256 of ``inputs`` (:func:`array_digest`)
    and the key combining both (:func:`cache_key`).
    It is regenerated only when that key differs, or the file is missing or
    unreadable. It is written to a temporary file first and renamed, so an
    interrupted run never leaves a truncated cache.

    Parameters
    ----------
    cache_path : path or None
        The ``.npz`` file; ``None`` disables caching (always generate).
    params : mapping
        Everything that determines the result (JSON values).
    generate : callable
        ``() -> {name: array}``; names must not start with ``__``.
    inputs : mapping of arrays, optional
        The data the arrays are computed from (hashed, not stored).

    Returns
    -------
    (dict of arrays, bool)
        The arrays, and whether they were generated now.
    """
    inputs_sha = array_digest(inputs) if inputs else ""
    key = cache_key(params, inputs_sha)
    path = None if cache_path is None else Path(cache_path)
    if path is not None and path.is_file():
        try:
            arrays, meta = read_cache(path)
        except ValueError as exc:
            warnings.warn(f"regenerating the cache: {exc}", RuntimeWarning, stacklevel=2)
        else:
            if meta["key"] == key:
                return arrays, False
    arrays = {name: np.asarray(value) for name, value in dict(generate()).items()}
    bad = [name for name in arrays if name.startswith("__")]
    if bad:
        raise ValueError(f"generated array names must not start with '__': {bad}.")
    if any(a.dtype == object for a in arrays.values()):
        raise TypeError("generated arrays must have a numeric, boolean or string dtype (no objects).")
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".npz", dir=path.parent)
        os.close(fd)
        try:
            _write_npz(tmp, {**arrays, _PARAMS_FIELD: np.array(_params_json(params)), _KEY_FIELD: np.array(key),
                             _INPUTS_FIELD: np.array(inputs_sha)})
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return arrays, True
