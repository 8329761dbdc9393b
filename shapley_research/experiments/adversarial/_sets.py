"""Test sets mixing benign and attacked images, and the class-matched swap-paired permutations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_float, check_int
from ._data import ATTACKS

if TYPE_CHECKING:
    from collections.abc import Sequence
    from numpy.typing import ArrayLike


# --------------------------------------------------------------------------------------------
# Test sets and permutations
# --------------------------------------------------------------------------------------------

def mixture_test_sets(n_test: int, ratios: Sequence[float], attacks: Sequence[str] = ATTACKS,
                      seed: int = 0) -> tuple[np.ndarray, list[dict[str, Any]]]:
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


def swap_pairs(groups: ArrayLike, labels: ArrayLike) -> np.ndarray:
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


def swap_paired_permutations(rng: np.random.Generator, n_pairs: int, sigma: ArrayLike) -> np.ndarray:
    """``2 * n_pairs`` permutations: rows ``2t`` uniform, rows ``2t + 1`` the same with players mapped by ``sigma``.

    ``sigma`` is a bijection of the players, so every row is a uniform
    random permutation and averaging a pair leaves the estimator unbiased.
    """
    from ...estimators import random_permutations

    sigma = np.asarray(sigma)
    n_pairs = check_int(n_pairs, "n_pairs", minimum=1)
    if sorted(sigma.tolist()) != list(range(sigma.size)):
        raise ValueError("sigma must be a permutation of range(n_players).")
    first = random_permutations(rng, n_pairs, sigma.size)
    out = np.empty((2 * n_pairs, sigma.size), dtype=first.dtype)
    out[0::2], out[1::2] = first, sigma[first]
    return out
