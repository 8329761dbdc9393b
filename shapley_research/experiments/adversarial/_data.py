"""A run's data: PCA features of the players and test images, from the cached attacks (:func:`prepare_data`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._images import ATTACKS, _AttackSource, _cache_params, attack_settings, fit_pca, load_mnist_pixels, split_indices

if TYPE_CHECKING:
    from collections.abc import Mapping

ATTACK_LABELS = {"fgsm": "FGSM", "cw": "CW"}


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------

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
