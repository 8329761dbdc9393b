"""Valuation: the two halves as two players (exact) and per-point SVs by permutation sampling, per level."""

from __future__ import annotations

import math
import time
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_int
from .._parallel import check_n_jobs, parallel_map
from ._data import fit_projection, load_privacy_data, split_halves
from ._mechanism import _check_delta, _check_epsilon, l2_sensitivity, privatize_images

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from numpy.typing import ArrayLike
    import pandas as pd
    from sklearn.decomposition import PCA
    from ...games import GameLike

HALVES = ("clean", "noisy")


def two_half_values(game: GameLike, noisy: ArrayLike) -> dict[str, float]:
    """Exact SV of the game whose two players are the clean half and the noisy half.

    ``sv_noisy = (U(N) - U(0) + U(C+N) - U(C)) / 2`` and likewise for the clean half
    (computed with :func:`shapley_research.exact_shapley` on the 2-player game).

    Returns
    -------
    dict
        ``sv_clean, sv_noisy, u_empty, u_clean, u_noisy, u_all``.
    """
    from ... import exact_shapley
    from ...games import as_game

    noisy = np.asarray(noisy, dtype=bool)
    groups = np.stack([~noisy, noisy])  # player 0 = clean half, player 1 = noisy half

    def group_utility(masks):
        return game.evaluate(masks.astype(float) @ groups.astype(float) > 0)

    pair = as_game(group_utility, 2, vectorized=True)
    result = exact_shapley(pair)
    codes = np.array([[False, False], [True, False], [False, True], [True, True]])
    u = pair.evaluate(codes)
    return {"sv_clean": float(result.values[0]), "sv_noisy": float(result.values[1]),
            "u_empty": float(u[0]), "u_clean": float(u[1]), "u_noisy": float(u[2]), "u_all": float(u[3])}


def permutation_group_values(game: GameLike, groups: np.ndarray, n_permutations: int,
                             seed: int | np.random.Generator | None, batch_size: int = 50) -> dict[str, Any]:
    """Per-point SVs by permutation sampling, and the sum of each group with its standard error.

    Draws ``n_permutations`` uniform permutations (``shapley_research.estimators.random_permutations``
    from ``numpy.random.default_rng(seed)``) and their marginal contributions
    (``marginal_contributions``, on the game's prefix path when it has one).

    Parameters
    ----------
    game : game
    groups : bool array of shape (n_groups, n_players)
        Membership of every player in each group.
    n_permutations : int
        ``>= 2`` (a standard error needs two).
    seed : int or numpy.random.Generator
    batch_size : int
        Permutations per call to the game.

    Returns
    -------
    dict
        ``values``, ``stderr`` (per point, ``(n,)``), ``group_sums`` and
        ``group_stderr`` (``(n_groups,)``, from the per-permutation sums),
        ``group_sums_per_permutation`` (``(T, n_groups)``), ``u_empty``.
    """
    from ...estimators import marginal_contributions, random_permutations

    n = game.n_players
    groups = np.asarray(groups, dtype=bool)
    if groups.ndim != 2 or groups.shape[1] != n:
        raise ValueError(f"groups must have shape (n_groups, {n}), got {groups.shape}.")
    n_permutations = check_int(n_permutations, "n_permutations", minimum=2)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    rng = np.random.default_rng(seed)
    u_empty = float(game.evaluate(np.zeros((1, n), dtype=bool))[0])
    phi = np.empty((n_permutations, n))
    for start in range(0, n_permutations, batch_size):
        stop = min(start + batch_size, n_permutations)
        phi[start:stop] = marginal_contributions(game, random_permutations(rng, stop - start, n), u_empty)
    sums = phi @ groups.T.astype(float)
    root_t = math.sqrt(n_permutations)
    return {"values": phi.mean(axis=0), "stderr": phi.std(axis=0, ddof=1) / root_t,
            "group_sums": sums.mean(axis=0), "group_stderr": sums.std(axis=0, ddof=1) / root_t,
            "group_sums_per_permutation": sums, "u_empty": u_empty}


def value_privacy_level(data: dict[str, Any], projection: PCA, noisy: np.ndarray, epsilon: float, *, delta: float,
                        clip_norm: float,
                        clamp: bool, logistic_C: float, n_permutations: int, noise_seed: int,
                        permutation_seed: int) -> dict[str, Any]:
    """Privatize the noisy half at ``epsilon``, then value the points and the two halves.

    Returns
    -------
    dict
        ``epsilon, sigma`` and the outputs of :func:`two_half_values` (``two``) and
        :func:`permutation_group_values` (``perm``, groups ordered as :data:`HALVES`),
        plus ``cpu_seconds``.
    """
    from ... import LogisticRegressionUtility

    start = time.process_time()
    noisy = np.asarray(noisy, dtype=bool)
    X = np.array(data["X_train"], dtype=float)
    X[noisy], sigma = privatize_images(X[noisy], epsilon, delta, clip_norm, noise_seed, clamp=clamp)
    game = LogisticRegressionUtility(projection.transform(X), data["y_train"],
                                     projection.transform(data["X_test"]), data["y_test"], "accuracy",
                                     C=logistic_C)
    two = two_half_values(game, noisy)
    perm = permutation_group_values(game, np.stack([~noisy, noisy]), n_permutations, permutation_seed)
    return {"epsilon": float(epsilon), "sigma": sigma, "two": two, "perm": perm,
            "cpu_seconds": time.process_time() - start}


def _level_rows(level: dict, noisy: np.ndarray, y: np.ndarray):
    two, perm = level["two"], level["perm"]
    rows, points = [], []
    for g, half in enumerate(HALVES):
        members = noisy if half == "noisy" else ~noisy
        k = int(members.sum())
        rows.append({
            "epsilon": level["epsilon"], "sigma": level["sigma"], "reference": math.isinf(level["epsilon"]),
            "half": half, "n_points": k,
            "sv_sum": perm["group_sums"][g], "sv_sum_se": perm["group_stderr"][g],
            "sv_mean": perm["group_sums"][g] / k, "sv_mean_se": perm["group_stderr"][g] / k,
            "two_player_sv": two[f"sv_{half}"], "accuracy_half_alone": two[f"u_{half}"],
            "accuracy_all": two["u_all"], "accuracy_empty": two["u_empty"],
            "cpu_seconds": level["cpu_seconds"],
        })
    for i in range(noisy.size):
        points.append({"epsilon": level["epsilon"], "sigma": level["sigma"], "point": i,
                       "half": "noisy" if noisy[i] else "clean", "label": int(y[i]),
                       "sv": perm["values"][i], "sv_se": perm["stderr"][i]})
    return rows, points


def run_privacy_noise(*, epsilons: Sequence[float], delta: float, clip_norm: float, clamp: bool, n_train: int,
                      n_test: int, n_public: int, n_components: int, logistic_C: float, n_permutations: int,
                      include_reference: bool = True, seed: int = 0, n_jobs: int = 1,
                      progress: Callable[..., Iterable[Any]] | None = None,
                      ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The whole experiment: every privacy level (and the noise-free reference), valued.

    Parameters
    ----------
    epsilons : sequence of float
        The privacy levels of the noisy half.
    include_reference : bool
        Also value ``epsilon = inf`` (clip and clamp, no noise).
    seed : int
        One ``numpy.random.SeedSequence(seed)`` spawns the seeds of the data
        split, the halves, the noise and the permutations (shared by all levels).
    n_jobs : int
        Levels valued in parallel (joblib processes); results do not depend on it.
    progress : callable, optional
        ``progress(iterable, desc=...)`` wrapper (e.g. ``experiments.progress``).

    Returns
    -------
    levels : pandas.DataFrame
        One row per (level, half): ``epsilon`` (``inf`` for the reference),
        ``sigma`` (per-pixel noise), ``reference``, ``half``, ``n_points``,
        ``sv_sum``/``sv_sum_se`` (per-point SVs summed over the half, standard
        error from the per-permutation sums), ``sv_mean``/``sv_mean_se`` (the
        same per point), ``two_player_sv`` (exact SV of the half as one of two
        players), ``accuracy_half_alone``, ``accuracy_all``, ``accuracy_empty``
        (test accuracy of the model trained on the half, on both, on nothing),
        ``cpu_seconds`` (of the level).
    points : pandas.DataFrame
        One row per (level, point): ``epsilon, sigma, point, half, label, sv, sv_se``.
    info : dict
        ``sensitivity``, ``pca_explained_variance``, ``n_noisy``, ``n_clean``,
        ``cpu_seconds`` (this process; not the workers' when ``n_jobs > 1``),
        ``fraction_clipped`` (noisy images longer than ``clip_norm``).
    """
    import pandas as pd

    eps = [_check_epsilon(e) for e in epsilons]
    if any(math.isinf(e) for e in eps):
        raise ValueError("give finite epsilons; the noise-free reference is include_reference=True.")
    if len(eps) < 2 or len(set(eps)) != len(eps):
        raise ValueError(f"epsilons must hold at least two distinct values, got {epsilons!r}.")
    eps = sorted(eps) + ([math.inf] if include_reference else [])
    _check_delta(delta)
    n_jobs = check_n_jobs(n_jobs)
    data_seed, half_seed, noise_seed, perm_seed = np.random.SeedSequence(seed).generate_state(4)
    start = time.process_time()
    data = load_privacy_data(n_train, n_test, n_public, int(data_seed))
    noisy = split_halves(data["y_train"], int(half_seed))
    projection = fit_projection(data["X_public"], n_components, seed=int(data_seed) % 2**31)
    options: dict[str, Any] = dict(delta=delta, clip_norm=clip_norm, clamp=clamp, logistic_C=logistic_C,
                                   n_permutations=n_permutations, noise_seed=int(noise_seed),
                                   permutation_seed=int(perm_seed))
    levels = parallel_map(partial(value_privacy_level, **options), [(data, projection, noisy, e) for e in eps],
                          n_jobs=n_jobs, progress=progress, desc="privacy levels")
    rows, points = [], []
    for level in levels:
        r, p = _level_rows(level, noisy, data["y_train"])
        rows += r
        points += p
    info = {"sensitivity": l2_sensitivity(clip_norm, data["X_train"].shape[1]),
            "pca_explained_variance": float(projection.explained_variance_ratio_.sum()),
            "n_noisy": int(noisy.sum()), "n_clean": int((~noisy).sum()),
            "cpu_seconds": time.process_time() - start,
            "fraction_clipped": float(np.mean(np.linalg.norm(data["X_train"][noisy], axis=1) > clip_norm))}
    return pd.DataFrame(rows), pd.DataFrame(points), info
