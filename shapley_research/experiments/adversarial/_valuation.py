"""Valuation: marginal contributions along permutations for every test set, and their summaries (group means,
tables, trends, attack matches)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_int
from .._parallel import parallel_map
from .._verdicts import rank_correlation
from ._data import ATTACKS

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from numpy.typing import ArrayLike
    import pandas as pd
    from ...utilities import LogisticRegressionUtility

GROUPS = ("benign", "adversarial")
_EPS = float(np.finfo(float).eps)  # scikit-learn's log_loss clips probabilities at eps


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


def prefix_test_log_probabilities(learner: LogisticRegressionUtility, masks: ArrayLike, X_eval: ArrayLike,
                                  y_eval: ArrayLike) -> np.ndarray:
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


def _chunk_contributions(learner, permutations, X_eval, y_eval, weights, u_empty):
    from ...games import prefix_masks

    m, n = permutations.shape
    utilities = prefix_test_log_probabilities(learner, prefix_masks(permutations), X_eval, y_eval) @ weights
    utilities = utilities.reshape(m, n, -1)
    gains = np.diff(utilities, axis=1, prepend=np.broadcast_to(u_empty, (m, 1, utilities.shape[2])))
    phi = np.empty_like(gains)
    np.put_along_axis(phi, permutations[:, :, None], gains, axis=1)
    return phi


def permutation_contributions(learner: LogisticRegressionUtility, X_eval: ArrayLike, y_eval: np.ndarray,
                              weights: ArrayLike, permutations: ArrayLike, *, chunk_size: int = 2,
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
    from .._common import progress

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
    tasks = [(learner, permutations[s:s + chunk_size], X_eval, y_eval, weights, u_empty) for s in starts]
    results = parallel_map(_chunk_contributions, tasks, n_jobs=n_jobs, progress=progress if desc else None,
                           desc=desc or "", blas_threads=blas_threads)
    return np.concatenate(results, axis=0)


def pair_average(phi: np.ndarray) -> np.ndarray:
    """Average consecutive rows ``(2t, 2t + 1)``: the independent samples of swap-paired permutations."""
    if phi.shape[0] % 2:
        raise ValueError(f"expected an even number of permutations (pairs), got {phi.shape[0]}.")
    return 0.5 * (phi[0::2] + phi[1::2])


def group_means(samples: np.ndarray, groups: ArrayLike) -> np.ndarray:
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
    is the part a shift of the total shared alike by every point, as the
    test set changes it, does not move (a proportional change scales it).
    """
    if what == "gap":
        return group_samples[:, GROUPS.index("adversarial")] - group_samples[:, GROUPS.index("benign")]
    if what not in GROUPS:
        raise ValueError(f"what must be one of {list(GROUPS) + ['gap']}, got {what!r}.")
    return group_samples[:, GROUPS.index(what)]


def mean_value_table(group_samples: np.ndarray, sets: Sequence[Mapping[str, Any]], train_attack: str) -> pd.DataFrame:
    """Tidy table of the figure: mean value of each group, and the gap, on each test set, with standard errors.

    ``group_samples`` is (n_pairs, n_groups, n_sets) from :func:`group_means`
    of :func:`pair_average`'d contributions; ``group`` is ``"benign"``,
    ``"adversarial"`` or ``"gap"`` (adversarial minus benign, paired).

    Returns
    -------
    pandas.DataFrame
        One row per (group, test set), columns ``train_attack, test_attack,
        ratio, n_adversarial_test, group, mean_value, stderr, n_pairs``.
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


def point_value_table(samples: np.ndarray, sets: Sequence[Mapping[str, Any]], train_attack: str, groups: ArrayLike,
                      labels: ArrayLike) -> pd.DataFrame:
    """Tidy per-point Shapley values (and standard errors over pairs) for every test set.

    Parameters
    ----------
    samples : ndarray of shape (n_pairs, N, n_sets)
        Pair-averaged marginal contributions (:func:`pair_average`).
    sets : sequence of dict
        The test sets, each with ``test_attack`` and ``ratio``.
    train_attack : str
    groups : int array of shape (N,)
        Index into :data:`GROUPS` of every training point.
    labels : array of shape (N,)

    Returns
    -------
    pandas.DataFrame
        One row per (point, test set), columns ``train_attack, point, group,
        label, test_attack, ratio, value, stderr``.
    """
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


def ratio_trend(group_samples: np.ndarray, sets: Sequence[Mapping[str, Any]], what: str,
                test_attack: str) -> dict[str, float]:
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
            "spearman": rank_correlation(ratios, means)}


def attack_match(group_samples: np.ndarray, sets: Sequence[Mapping[str, Any]], train_attack: str, what: str = "gap",
                 ratio: float | None = None) -> dict[str, float]:
    """``what`` (default the gap) on the ``train_attack`` test set minus on the other attack's, at ``ratio``.

    ``ratio`` defaults to the highest; paired over permutation pairs.
    """
    values = series(group_samples, what)
    ratio = max(s["ratio"] for s in sets) if ratio is None else ratio
    others = [a for a in ATTACKS if a != train_attack]
    same = [s for s, spec in enumerate(sets)
            if spec["test_attack"] == train_attack and np.isclose(spec["ratio"], ratio)]
    other = [s for s, spec in enumerate(sets) if spec["test_attack"] in others and np.isclose(spec["ratio"], ratio)]
    if len(same) != 1 or len(other) != 1:
        raise ValueError(f"need exactly one test set per attack at ratio {ratio}.")
    mean, se = _mean_and_se(values[:, same[0]] - values[:, other[0]])
    mean, se = float(mean), float(se)
    return {"difference": mean, "stderr": se, "z": mean / se if se > 0 else float("nan"), "ratio": float(ratio),
            "value_same": float(values[:, same[0]].mean()), "value_other": float(values[:, other[0]].mean())}
