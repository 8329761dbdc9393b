"""The run: both panels' valuation (:func:`run_valuation`), its summary tables and the numbers of ``metrics.json``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_int
from ._data import ATTACK_LABELS, ATTACKS, AdversarialData
from ._sets import mixture_test_sets, swap_paired_permutations, swap_pairs
from ._valuation import (_EPS, GROUPS, _label_columns, attack_match, group_means, mean_value_table, pair_average,
                         permutation_contributions, point_value_table, ratio_trend)

if TYPE_CHECKING:
    from collections.abc import Sequence


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


def run_valuation(data: AdversarialData, *, test_ratios: Sequence[float], n_permutations: int, C: float, seed: int,
                  n_jobs: int = 1, verbose: bool = True) -> ValuationRun:
    """Both panels: swap-paired permutation sampling of every test set (see the package docstring).

    The same permutations serve both panels (the players correspond: the
    same benign images, and the same source images attacked two ways).
    """
    from ...utilities.learners import LogisticRegressionUtility

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


def summarize(run: ValuationRun, data: AdversarialData) -> dict[str, Any]:
    """Trends, attack matches, gap trends, totals and the tidy tables of a :class:`ValuationRun`.

    Returns
    -------
    dict
        ``trends`` {(train, test, group or "gap"): ratio_trend}, ``matches`` {train: attack_match of the
        gap}, ``totals`` {(train, test): U(D) - U(empty) at the lowest and highest ratio},
        ``n_players`` (the valued training points), ``mean_values`` and ``point_values`` (DataFrames).
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
    return {"trends": trends, "matches": matches, "totals": totals, "n_players": int(len(data.groups)),
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
