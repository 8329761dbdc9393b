"""Adversarial examples against a PyTorch logistic regression, with foolbox, and a file cache for them.

* :func:`train_torch_logistic_regression` fits a multinomial logistic
  regression in PyTorch (optionally on a fixed linear projection of the
  pixels, such as PCA), minimising scikit-learn's objective
  :math:`C\\sum_i \\ell_i + \\frac12\\|W\\|^2` with full-batch L-BFGS.
* :func:`generate_adversarial` runs foolbox's FGSM (:math:`L_\\infty`,
  fixed ``epsilon``) or Carlini-Wagner :math:`L_2` attack on it. It checks
  its inputs first and says what is wrong in words, where foolbox fails with
  a bare ``AssertionError`` (pixels outside the model's bounds) or a dtype
  ``RuntimeError`` (float64 inputs); it measures success itself, on the
  model's own predictions, and returns the original image where Carlini-Wagner
  found no adversarial (foolbox returns an all-zero image there, which a
  model usually misclassifies, so foolbox counts it as a success).
* :func:`load_or_generate` caches generated arrays in a ``.npz`` file that
  records the parameters and a hash of the inputs; it regenerates only when
  they change.

torch and foolbox are imported inside the functions that need them (torch
takes seconds to import), so importing this module is cheap and a valid
cache is read without importing either.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._validation import check_choice, check_float, check_int

__all__ = ["ATTACKS", "AdversarialExamples", "train_torch_logistic_regression", "generate_adversarial",
           "check_images", "check_labels", "array_digest", "cache_key", "load_or_generate", "read_cache"]

ATTACKS = ("fgsm", "cw")
_PIXEL_SLACK = 1e-6  # float32 rounding of pixels computed in float64


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

def check_images(X, bounds=(0.0, 1.0), name: str = "X") -> np.ndarray:
    """Return ``X`` as a C-contiguous float32 array of images within ``bounds``, or raise.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, ...)
        One image (or feature vector) per row; any numeric dtype.
    bounds : (float, float)
        The model's input range, e.g. ``(0, 1)`` for pixels divided by 255.

    Raises
    ------
    TypeError
        If ``X`` is not numeric (strings, objects, complex numbers).
    ValueError
        If it has no rows, fewer than 2 dimensions, NaN or infinite values, or
        values outside ``bounds`` (naming the range found and the one expected).
    """
    lo, hi = _check_bounds(bounds)
    if hasattr(X, "detach") and hasattr(X, "cpu"):  # a torch tensor
        X = X.detach().cpu().numpy()
    array = np.asarray(X)
    if array.dtype == np.bool_ or not (np.issubdtype(array.dtype, np.integer)
                                        or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"{name} must be a numeric (integer or float) array of pixels, got dtype {array.dtype}.")
    if array.ndim < 2:
        raise ValueError(f"{name} must hold one image per row (at least 2-D), got shape {array.shape}.")
    if array.shape[0] == 0 or array.size == 0:
        raise ValueError(f"{name} is empty (shape {array.shape}).")
    array = np.ascontiguousarray(array, dtype=np.float32)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or infinite values.")
    found_lo, found_hi = float(array.min()), float(array.max())
    if found_lo < lo - _PIXEL_SLACK or found_hi > hi + _PIXEL_SLACK:
        hint = " (pixels in 0..255? divide by 255)" if found_hi > 1.5 and hi <= 1.0 else ""
        raise ValueError(f"{name} has values in [{found_lo:g}, {found_hi:g}] but the model's bounds are "
                         f"[{lo:g}, {hi:g}]{hint}.")
    return np.clip(array, lo, hi)


def check_labels(y, n_samples: int, n_classes: int | None = None, name: str = "y") -> np.ndarray:
    """Return ``y`` as int64 class indices in ``[0, n_classes)``, or raise.

    Raises
    ------
    TypeError
        For non-integer labels (strings, fractional floats).
    ValueError
        For a wrong shape or length, or labels outside ``[0, n_classes)``.
    """
    if hasattr(y, "detach") and hasattr(y, "cpu"):
        y = y.detach().cpu().numpy()
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one label per image), got shape {labels.shape}.")
    if labels.shape[0] != n_samples:
        raise ValueError(f"{name} has {labels.shape[0]} labels but there are {n_samples} images.")
    if labels.dtype == np.bool_ or not (np.issubdtype(labels.dtype, np.integer)
                                         or np.issubdtype(labels.dtype, np.floating)):
        raise TypeError(f"{name} must hold integer class indices, got dtype {labels.dtype}.")
    if np.issubdtype(labels.dtype, np.floating):
        if not (np.isfinite(labels).all() and np.all(labels == np.round(labels))):
            raise TypeError(f"{name} must hold integer class indices, got non-integral values.")
    labels = labels.astype(np.int64)
    if labels.size and labels.min() < 0:
        raise ValueError(f"{name} holds negative labels (min {labels.min()}); labels are class indices 0..K-1.")
    if n_classes is not None and labels.size and labels.max() >= n_classes:
        raise ValueError(f"{name} holds label {labels.max()} but the model has {n_classes} classes "
                         f"(labels must be in 0..{n_classes - 1}).")
    return labels


def _check_bounds(bounds) -> tuple[float, float]:
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise TypeError(f"bounds must be a pair of numbers (lo, hi), got {bounds!r}.") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds must be finite with lo < hi, got {bounds!r}.")
    return lo, hi


@contextmanager
def _torch_threads(n: int | None):
    """Run torch on ``n`` intra-op threads (restored afterwards); small models gain nothing from more."""
    import torch

    if n is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# --------------------------------------------------------------------------------------------
# The attacked model
# --------------------------------------------------------------------------------------------

def _logistic_module(n_inputs: int, n_classes: int, projection):
    """A ``torch.nn.Module``: optional fixed affine projection, then one linear layer (the logits)."""
    import torch

    class LogisticRegressionModule(torch.nn.Module):
        """Logits ``W ((x - mean) P^T) + b`` (``P``, ``mean`` fixed buffers), or ``W x + b``."""

        def __init__(self):
            super().__init__()
            if projection is None:
                self.register_buffer("components", None)
                self.register_buffer("center", None)
                n_features = n_inputs
            else:
                components, center = projection
                self.register_buffer("components", torch.as_tensor(components, dtype=torch.float32))
                self.register_buffer("center", torch.as_tensor(center, dtype=torch.float32))
                n_features = self.components.shape[0]
            self.linear = torch.nn.Linear(n_features, n_classes)

        def features(self, x):
            x = x.reshape(x.shape[0], -1)
            if self.components is None:
                return x
            return (x - self.center) @ self.components.T

        def forward(self, x):
            return self.linear(self.features(x))

    return LogisticRegressionModule()


def _check_projection(projection, n_inputs: int):
    if projection is None:
        return None
    try:
        components, center = projection
    except (TypeError, ValueError):
        raise TypeError("projection must be a pair (components, mean) of arrays, e.g. "
                        "(pca.components_, pca.mean_).") from None
    components = np.asarray(components, dtype=np.float32)
    center = np.asarray(center, dtype=np.float32).reshape(-1)
    if components.ndim != 2 or components.shape[1] != n_inputs or center.shape != (n_inputs,):
        raise ValueError(f"projection components must have shape (d, {n_inputs}) and the mean ({n_inputs},); "
                         f"got {components.shape} and {center.shape}.")
    return components, center


def train_torch_logistic_regression(X, y, *, n_classes: int | None = None, C: float = 1.0,
                                    projection=None, max_iter: int = 500, tol: float = 1e-7,
                                    bounds=(0.0, 1.0), seed: int = 0, threads: int | None = 1):
    """Fit a multinomial logistic regression in PyTorch; return it in eval mode.

    Minimises scikit-learn's objective :math:`C\\sum_i \\ell_i(W, b) +
    \\frac12\\|W\\|_F^2` (intercepts unpenalised; divided by ``C n`` for
    conditioning) with full-batch L-BFGS and a strong-Wolfe line search, so
    the fit is deterministic.

    Parameters
    ----------
    X : array (n, ...)
        Training images within ``bounds`` (float32 or convertible).
    y : array (n,)
        Integer labels ``0..n_classes-1``.
    n_classes : int, optional
        Number of outputs; default ``max(y) + 1``.
    C : float, default 1.0
        Inverse L2 penalty, as in ``sklearn.linear_model.LogisticRegression``.
    projection : (components, mean), optional
        A fixed affine map applied to the flattened pixels before the linear
        layer, ``(x - mean) @ components.T`` (e.g. a PCA's ``components_`` and
        ``mean_``): the model is then a logistic regression on those features,
        still differentiable with respect to the pixels, so attacks work on
        pixels.
    max_iter, tol : L-BFGS iteration cap and gradient tolerance.
    bounds : (float, float)
        Input range (checked).
    seed : int
        ``torch.manual_seed`` for the initial weights.
    threads : int or None, default 1
        torch intra-op threads while fitting (None: leave as is).

    Returns
    -------
    torch.nn.Module
        Maps a float32 batch (n, ...) to logits (n, n_classes); in eval mode.
    """
    import torch

    X = check_images(X, bounds)
    labels = check_labels(y, X.shape[0], n_classes)
    n_classes = int(labels.max()) + 1 if n_classes is None else check_int(n_classes, "n_classes", minimum=2)
    if n_classes < 2:
        raise ValueError("y holds a single class; a classifier needs at least two.")
    C = check_float(C, "C", minimum=0.0, strict=True)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_float(tol, "tol", minimum=0.0, strict=True)
    n_inputs = int(np.prod(X.shape[1:]))
    projection = _check_projection(projection, n_inputs)
    with _torch_threads(threads):
        torch.manual_seed(check_int(seed, "seed", minimum=0))
        model = _logistic_module(n_inputs, n_classes, projection)
        inputs, targets = torch.from_numpy(X), torch.from_numpy(labels)
        optimizer = torch.optim.LBFGS(model.linear.parameters(), lr=1.0, max_iter=max_iter,
                                      tolerance_grad=tol, tolerance_change=1e-12, history_size=20,
                                      line_search_fn="strong_wolfe")
        scale = 0.5 / (C * X.shape[0])

        def closure():
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(inputs), targets) + scale * model.linear.weight.square().sum()
            loss.backward()
            return loss

        optimizer.step(closure)
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model


# --------------------------------------------------------------------------------------------
# Attacks
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AdversarialExamples:
    """Output of :func:`generate_adversarial`.

    Attributes
    ----------
    images : ndarray, float32, the inputs' shape
        The adversarial images (the original image where the attack failed to
        find one, for Carlini-Wagner).
    success : ndarray of bool
        Whether the model misclassifies the returned image.
    predictions : ndarray of int
        The model's predicted class of each returned image.
    l2, linf : ndarray of float
        Norms of the perturbation ``images - X``, per image.
    """

    images: np.ndarray
    success: np.ndarray
    predictions: np.ndarray
    l2: np.ndarray
    linf: np.ndarray

    @property
    def success_rate(self) -> float:
        return float(self.success.mean())


def _predict(model, X: np.ndarray, batch_size: int) -> np.ndarray:
    import torch

    out = []
    with torch.no_grad():
        for start in range(0, X.shape[0], batch_size):
            out.append(model(torch.from_numpy(X[start:start + batch_size])).argmax(dim=1).numpy())
    return np.concatenate(out)


def generate_adversarial(model, X, y, attack: str = "fgsm", *, epsilon: float = 0.1, steps: int = 100,
                         stepsize: float = 0.01, binary_search_steps: int = 9, confidence: float = 0.0,
                         bounds=(0.0, 1.0), batch_size: int = 512, seed: int = 0,
                         threads: int | None = 1) -> AdversarialExamples:
    """Untargeted adversarial examples for ``model`` with foolbox.

    Parameters
    ----------
    model : torch.nn.Module
        Maps a float32 batch to logits; put in eval mode here.
    X : array (n, ...)
        Images within ``bounds``; float32, or any numeric dtype (converted).
    y : array (n,)
        True integer labels, ``0 <= y < n_classes``.
    attack : {"fgsm", "cw"}
        ``"fgsm"``: fast gradient sign method, perturbation of size ``epsilon``
        in the :math:`L_\\infty` norm (Goodfellow et al. 2015).
        ``"cw"``: Carlini-Wagner :math:`L_2` minimum-norm attack (2017) with
        ``binary_search_steps`` searches of ``steps`` Adam steps of ``stepsize``,
        and ``confidence`` (the logit margin required).
    epsilon : float
        FGSM's perturbation size (ignored by ``"cw"``).
    steps, stepsize, binary_search_steps, confidence
        Carlini-Wagner's settings (ignored by ``"fgsm"``).
    bounds : (float, float)
        The model's input range; ``X`` must lie within it.
    batch_size : int
        Images attacked at once (results do not depend on it for these attacks).
    seed : int
        ``torch.manual_seed`` before attacking (both attacks are deterministic;
        the seed guards against randomised variants).
    threads : int or None, default 1
        torch intra-op threads during the attack.

    Returns
    -------
    AdversarialExamples

    Raises
    ------
    TypeError
        Non-numeric images, non-integer labels.
    ValueError
        Pixels outside ``bounds`` (naming both ranges), labels out of range,
        shapes that do not match, unknown attack.
    """
    import torch

    check_choice(attack, "attack", ATTACKS)
    lo, hi = _check_bounds(bounds)
    X = check_images(X, (lo, hi))
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}.")
    model.eval()
    with _torch_threads(threads):
        with torch.no_grad():
            try:
                logits = model(torch.from_numpy(X[:1]))
            except Exception as exc:
                raise ValueError(f"the model cannot take inputs of shape {X.shape[1:]}: {exc}") from exc
        if logits.ndim != 2:
            raise ValueError(f"the model must return logits of shape (n, n_classes), got {tuple(logits.shape)}.")
        labels = check_labels(y, X.shape[0], int(logits.shape[1]))
        import foolbox as fb

        if attack == "fgsm":
            epsilon = check_float(epsilon, "epsilon", minimum=0.0, strict=True)
            method, epsilons = fb.attacks.FGSM(), epsilon
        else:
            method = fb.attacks.L2CarliniWagnerAttack(
                binary_search_steps=check_int(binary_search_steps, "binary_search_steps", minimum=1),
                steps=check_int(steps, "steps", minimum=1),
                stepsize=check_float(stepsize, "stepsize", minimum=0.0, strict=True),
                confidence=check_float(confidence, "confidence", minimum=0.0))
            epsilons = None
        fmodel = fb.PyTorchModel(model, bounds=(lo, hi))
        torch.manual_seed(check_int(seed, "seed", minimum=0))
        images = np.empty_like(X)
        for start in range(0, X.shape[0], batch_size):
            rows = slice(start, start + batch_size)
            _, clipped, _ = method(fmodel, torch.from_numpy(X[rows]), torch.from_numpy(labels[rows]),
                                   epsilons=epsilons)
            images[rows] = clipped.detach().cpu().numpy()
        if attack == "cw":
            # foolbox leaves an all-zero image where the search found nothing: return the original instead
            flat, original = images.reshape(len(images), -1), X.reshape(len(X), -1)
            failed = ~flat.any(axis=1) & original.any(axis=1)
            images[failed] = X[failed]
        predictions = _predict(model, images, batch_size)
    delta = (images - X).reshape(len(X), -1).astype(np.float64)
    return AdversarialExamples(images=images, success=predictions != labels, predictions=predictions,
                               l2=np.linalg.norm(delta, axis=1), linf=np.abs(delta).max(axis=1))


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


def _json_default(value):
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


def load_or_generate(cache_path: str | os.PathLike | None, params: Mapping[str, Any],
                     generate: Callable[[], Mapping[str, Any]], *, inputs: Mapping[str, Any] | None = None,
                     ) -> tuple[dict[str, np.ndarray], bool]:
    """Arrays from ``cache_path`` if it was made with these ``params`` and ``inputs``; else generate and save.

    The file (``.npz``, compressed) stores the arrays that ``generate()``
    returns together with ``params`` as JSON, the SHA-256 of ``inputs``
    (:func:`array_digest`) and the key combining both (:func:`cache_key`).
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
            np.savez_compressed(tmp, **arrays, **{_PARAMS_FIELD: np.array(_params_json(params)),
                                                  _KEY_FIELD: np.array(key), _INPUTS_FIELD: np.array(inputs_sha)})
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return arrays, True
