r"""Stratified SVARM: Shapley values from utilities, not marginal contributions.

Kolpaczki, Bengs, Muschalik and Hüllermeier, "Approximating the Shapley Value
without Marginal Contributions" (AAAI 2024). The Shapley value splits by the
size :math:`\ell` of the coalition a player joins,

.. math::

    s_i = \frac1N \sum_{\ell=0}^{N-1} \left(\phi^+_{i,\ell} - \phi^-_{i,\ell}\right),\qquad
    \phi^+_{i,\ell} = \mathbb E\,U(S \cup \{i\}),\quad \phi^-_{i,\ell} = \mathbb E\,U(S),

with :math:`S` uniform among the subsets of :math:`D \setminus \{i\}` of size
:math:`\ell`. One evaluated coalition :math:`A` of size :math:`k` is a sample
of :math:`\phi^+_{i,k-1}` for every member and of :math:`\phi^-_{i,k}` for
every other player: each evaluation updates all ``N`` players, where a
marginal contribution updates one. Each stratum mean is estimated separately,
so the estimate does not mix coalition sizes (most of a utility's spread on
ML games is between sizes).
"""

from __future__ import annotations

import time

import numpy as np

from ._sampling import (MeanState, default_batch_size, evaluate_anchors, open_checkpoint, run_sampling,
                        units_from_budget)
from ._subsets import random_subsets
from ._validation import (check_game, check_int, check_n_jobs, check_target, check_target_rank_correlation,
                          check_utilities)
from .permutation import documents_sampling_options
from .result import ValuationResult, register_finalizer

__all__ = ["stratified_svarm_shapley", "svarm_size_probabilities"]

MAX_PLAYERS = 2048  # the state holds 3 (N + 1)^2 running sums: about 100 MiB at this size


def svarm_size_probabilities(n_players: int) -> np.ndarray:
    r"""Probabilities of the sampled coalition sizes ``k = 2, ..., N - 2``.

    :math:`P(k) \propto 1/\min(k, N - k)`, the allocation of Stratified SVARM:
    a coalition of size ``k`` feeds ``k`` of the :math:`\phi^+` strata and
    ``N - k`` of the :math:`\phi^-` strata, so small and large sizes, which
    feed the fewest strata of one kind, are drawn more often.
    Empty for ``N < 4`` (every stratum is then computed exactly).
    """
    n = check_int(n_players, "n_players", minimum=1)
    sizes = np.arange(2, n - 1)
    weights = 1.0 / np.minimum(sizes, n - sizes)
    return weights / weights.sum() if sizes.size else weights


def _block(n: int) -> int:
    """Entries of one per-(player, size) block of the state."""
    return n * (n + 1)


def _batch_state(masks: np.ndarray, sizes: np.ndarray, u: np.ndarray) -> MeanState:
    r"""Count, mean and M2 of the batch's per-sample vectors, never formed.

    The vector of sample ``t`` (coalition :math:`A_t`, size :math:`k_t`, centred
    utility :math:`u_t`) holds, for every player ``i`` and size ``k``,
    :math:`c = [i \in A_t, k_t = k]`, :math:`u_t c` and :math:`u_t^2 c`, then
    per size :math:`[k_t = k]`, :math:`u_t [k_t = k]` and :math:`u_t^2 [k_t = k]`.
    Their sums are bincounts over the members of each coalition, and
    :math:`M_2 = \sum x^2 - (\sum x)^2 / b` follows from the same sums
    (:math:`c^2 = c`) plus one of :math:`u^4`.
    """
    b, n = masks.shape
    rows, players = np.nonzero(masks)
    cells = players * (n + 1) + sizes[rows]
    powers = [None, u, u**2, u**4]
    member = [np.bincount(cells, weights=None if w is None else w[rows], minlength=_block(n)) for w in powers]
    by_size = [np.bincount(sizes, weights=w, minlength=n + 1) for w in powers]
    sums, squares = [], []
    for moments in (member, by_size):
        count, first, second, fourth = moments
        sums += [count, first, second]
        squares += [count, second, fourth]  # sum of x^2 for x = c, u c, u^2 c
    total = np.concatenate(sums).astype(float)
    m2 = np.maximum(np.concatenate(squares) - total**2 / b, 0.0)
    return MeanState(total.size, b, total / b, m2)


def _stratum_statistics(state: MeanState, n: int):
    """Per (player, size) counts, sums and sums of squares of the members (``in``) and the others (``out``)."""
    sums = state.mean * state.count
    block = _block(n)
    c_in, y_in, q_in = (sums[j * block:(j + 1) * block].reshape(n, n + 1) for j in range(3))
    c, y, q = (sums[3 * block + j * (n + 1):3 * block + (j + 1) * (n + 1)] for j in range(3))
    return (np.rint(c_in), y_in, q_in), (np.rint(c) - np.rint(c_in), y - y_in, q - q_in)


def _nearest_filled(means: np.ndarray, filled: np.ndarray) -> np.ndarray:
    """``means`` with each unfilled entry of a row replaced by the nearest filled one (ties: the smaller size)."""
    index = np.arange(means.shape[1])
    before = np.maximum.accumulate(np.where(filled, index, -1), axis=1)
    after = np.minimum.accumulate(np.where(filled, index, means.shape[1])[:, ::-1], axis=1)[:, ::-1]
    use_after = (before < 0) | ((after < means.shape[1]) & (after - index < index - before))
    source = np.where(use_after, after, before)
    return np.take_along_axis(means, source, axis=1)


def _strata(stats, offset: int, exact: dict, n: int):
    """Means, variances and counts of one sign's strata ``l = 0..N-1``.

    ``stats`` are indexed by coalition size ``k``; the sampled sizes
    ``2..N-2`` are the strata ``l = k + offset`` (``None`` when ``N < 4``: no
    size is sampled). The ``exact`` strata have an infinite count (no
    sampling error).
    """
    means, variances, counts = np.zeros((n, n)), np.full((n, n), np.nan), np.zeros((n, n))
    if stats is not None:
        count, total, square = (a[:, 2:n - 1] for a in stats)
        region = slice(2 + offset, n - 1 + offset)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[:, region] = np.where(count > 0, total / count, 0.0)
            spread = np.maximum(square - total**2 / np.maximum(count, 1), 0.0)  # rounding can make it negative
            variances[:, region] = np.where(count > 1, spread / np.maximum(count - 1, 1), np.nan)
        counts[:, region] = count
    for level, values in exact.items():
        means[:, level], variances[:, level], counts[:, level] = values, 0.0, np.inf
    return means, variances, counts


def _pooled(variances: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per size, the variance pooled over the players whose stratum has two samples or more (NaN if none)."""
    ok = np.isfinite(counts) & (counts > 1)
    weight = np.where(ok, counts - 1, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, variances * weight, 0.0).sum(axis=0) / weight.sum(axis=0)


@register_finalizer("stratified_svarm")
def _finalize(state, info):
    r"""Stratum means (exact ones from ``info``), their difference averaged over sizes.

    Strata without a sample take the mean of the nearest sampled size of the
    same player (reported as ``info["empty_strata"]``; none once the budget
    is a few times ``N log N``). The standard error is
    :math:`\frac1N \sqrt{\sum_\ell \sigma^2_{+,\ell}/m_{+,\ell} + \sigma^2_{-,\ell}/m_{-,\ell}}`
    over the sampled strata, with a stratum's variance pooled over the players
    at its size while it has fewer than two samples (the largest pooled
    variance for a size without any such stratum).
    """
    n = int(info["n_players"])
    ref = info["reference"]
    singles = np.asarray(info["singletons"]) - ref
    leave = np.asarray(info["leave_one_out"]) - ref
    empty, full = info["empty_utility"] - ref, info["full_utility"] - ref
    others = lambda a: (a.sum() - a) / max(n - 1, 1)  # mean over the other players
    exact_plus = {n - 2: others(leave), 0: singles, n - 1: np.full(n, full)} if n >= 2 else {0: singles}
    exact_minus = {1: others(singles), 0: np.full(n, empty), n - 1: leave} if n >= 2 else {0: np.full(n, empty)}
    # a coalition of size k samples phi+_{i,k-1} (members) and phi-_{i,k} (the others)
    members, outsiders = _stratum_statistics(state, n) if n >= 4 else (None, None)
    plus = _strata(members, -1, exact_plus, n)
    minus = _strata(outsiders, 0, exact_minus, n)
    values = np.zeros(n)
    variance = np.zeros(n)
    empty_strata = 0
    for sign, (means, variances, counts) in ((1.0, plus), (-1.0, minus)):
        filled = counts > 0
        empty_strata += int((~filled).sum())
        values += sign * _nearest_filled(means, filled).sum(axis=1)
        sampled = np.isfinite(counts)
        pooled = _pooled(variances, counts)
        if np.isfinite(pooled).any():  # sizes without any stratum of two samples: the largest pooled variance
            pooled = np.where(np.isnan(pooled), np.nanmax(pooled), pooled)
        stratum_var = np.where(np.isnan(variances), pooled[None, :], variances)
        variance += np.where(sampled, stratum_var / np.maximum(counts, 1.0), 0.0).sum(axis=1)
    return values / n, np.sqrt(variance) / n, {"empty_strata": empty_strata}


@documents_sampling_options
def stratified_svarm_shapley(game, budget, seed=None, *, batch_size: int | None = None,
                             n_jobs: int | None = None, progress: bool | None = None,
                             empty_utility: float | None = None, target_stderr: float | None = None,
                             target_rank_correlation: float | None = None, checkpoint=None,
                             checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""Shapley values by Stratified SVARM (Kolpaczki et al., AAAI 2024).

    Estimates the strata :math:`\phi^{\pm}_{i,\ell}` of the module docstring:

    1. exactly, the sizes where a stratum is a handful of coalitions:
       :math:`U(\emptyset)`, :math:`U(D)`, every :math:`U(\{i\})` and every
       :math:`U(D \setminus \{i\})` (``2N + 2`` evaluations) give
       :math:`\phi^+_{i,\ell}` for :math:`\ell \in \{0, N-2, N-1\}` and
       :math:`\phi^-_{i,\ell}` for :math:`\ell \in \{0, 1, N-1\}`;
    2. by sampling, the others: a size ``k`` in ``2..N-2`` with
       :func:`svarm_size_probabilities`, then a uniform coalition ``A`` of
       that size, whose utility is one sample of :math:`\phi^+_{i,k-1}` for
       each :math:`i \in A` and of :math:`\phi^-_{i,k}` for each
       :math:`i \notin A`.

    The value is the mean over sizes of the stratum differences. Each stratum
    mean is a ratio estimate (unbiased given that the stratum was sampled); an
    unsampled stratum borrows the nearest sampled size of the same player.
    It pays off on games whose marginal contributions are concentrated on
    some coalition sizes (e.g. the airport game); on the KNN benchmark of
    ``benchmarks/pydvl_comparison.py`` it is no better than permutation
    sampling, and on nearly additive games permutation sampling, whose
    marginal contributions cancel the additive part exactly, is better.

    The state is ``3 (N + 1)^2`` running sums (``O(N^2)``, the price of one
    stratum per player and size), so ``N`` is limited to
    :data:`MAX_PLAYERS`; use :func:`~shapley_research.permutation_shapley` or
    :func:`~shapley_research.group_testing_shapley` beyond.

    Parameters
    ----------
    game : game
        Object with ``n_players`` and ``evaluate(masks)``.
    budget : int or None
        Utility evaluations allowed: ``2N + 2`` exact ones (``2N + 1`` with
        ``empty_utility``), the rest sampled coalitions. Must afford one
        sample when ``N >= 4``. ``None`` (no cap) only with a
        ``target_stderr`` or ``target_rank_correlation``.
    seed : int, optional
        Seed of the random streams; ``None`` draws one (kept on the result).
    batch_size, n_jobs, progress, empty_utility
        As in :func:`permutation_shapley` (a batch holds sampled coalitions).
{sampling}
        Both targets judge the stratified estimate itself (the values and
        standard errors this function returns), recomputed from the strata
        after each batch (``O(N^2)``, small next to a batch).

    Returns
    -------
    ValuationResult
        ``stderr`` from the stratum variances; ``info["empty_strata"]``
        counts the strata that had no sample. Runs with different seeds
        combine with :func:`~shapley_research.merge_results`.
    """
    start = time.perf_counter()
    n = check_game(game)
    if n > MAX_PLAYERS:
        raise ValueError(f"stratified_svarm_shapley keeps one stratum per player and coalition size "
                         f"(O(N^2) memory), so it takes at most {MAX_PLAYERS} players; this game has {n}. "
                         "Use permutation_shapley or group_testing_shapley instead.")
    n_jobs = check_n_jobs(n_jobs)
    target_stderr = check_target(target_stderr)
    target_rank_correlation = check_target_rank_correlation(target_rank_correlation)
    targeted = target_stderr is not None or target_rank_correlation is not None
    fixed = 2 * n + 1 + (0 if empty_utility is not None else 1)
    if n >= 4:
        n_units = units_from_budget(budget, fixed, 1, "sampled coalition (after the exact strata)",
                                    target_stderr=target_stderr, target_rank_correlation=target_rank_correlation)
    else:  # every stratum is exact: the budget need only cover them
        if budget is not None and check_int(budget, "budget", minimum=0) < fixed:
            raise ValueError(f"budget={budget} is smaller than one pass over the exact strata of a "
                             f"{n}-player game: it needs {fixed} utility evaluations.")
        if budget is None and not targeted:
            units_from_budget(budget, fixed, 1, "")  # raises the usual TypeError
        n_units = 0
    batch_size = (default_batch_size(n, 1) if batch_size is None
                  else check_int(batch_size, "batch_size", minimum=1))
    dim = 3 * (n + 1) ** 2
    entropy, ckpt = open_checkpoint(checkpoint, seed, dim=dim, interval=checkpoint_interval, fingerprint={
        "method": "stratified_svarm", "n_players": n, "batch_size": batch_size, "empty_utility": empty_utility})
    anchors = evaluate_anchors(game, empty_utility, full=True, checkpoint=ckpt)
    n_exact, singles, leave = _exact_strata(game, n, ckpt)
    # utilities are stored centred, so that sums of squares keep their precision
    reference = 0.5 * (anchors.empty + anchors.full)
    probabilities = svarm_size_probabilities(n)
    levels = np.arange(2, n - 1)

    def sample_batch(rng: np.random.Generator, size: int):
        sizes = rng.choice(levels, size=size, p=probabilities)
        masks = random_subsets(rng, sizes, n)
        u = check_utilities(game.evaluate(masks), size) - reference
        return _batch_state(masks, sizes, u), size

    info = {"n_players": n, "options": {}, "batch_size": batch_size, "empty_utility": anchors.empty,
            "full_utility": anchors.full, "reference": reference, "singletons": singles,
            "leave_one_out": leave}

    last = {}  # the loop's state grows with every merge: its count identifies it, both hooks share one pass

    def estimates(state):
        key = (id(state), state.count)
        if last.get("key") != key:
            last.update(key=key, estimates=_finalize(state, info)[:2])
        return last["estimates"]

    outcome = run_sampling(sample_batch, dim=dim, n_units=n_units, batch_size=batch_size, entropy=entropy,
                           n_jobs=n_jobs, progress=progress, desc="stratified SVARM", unit="coalition",
                           checkpoint=ckpt, target_stderr=target_stderr, stderr_of=lambda s: estimates(s)[1],
                           target_rank_correlation=target_rank_correlation,
                           values_of=lambda s: estimates(s)[0])
    info.update(outcome.summary())
    values, stderr, updates = _finalize(outcome.state, info)
    return ValuationResult(
        values=values, n_evaluations=outcome.n_evaluations + anchors.n_evaluations + n_exact,
        method="stratified_svarm", seed=entropy, wall_time=time.perf_counter() - start, stderr=stderr,
        n_samples=outcome.state.count, info={**info, **updates}, state=outcome.state,
    )


def _exact_strata(game, n: int, checkpoint) -> tuple[int, list, list]:
    """``U({i})`` and ``U(D \\ {i})`` for every player (from the checkpoint when resuming)."""
    if checkpoint is not None and "exact_strata" in checkpoint.context:
        saved = checkpoint.context["exact_strata"]  # counted as made: the run made them before it stopped
        return 2 * n, saved["singletons"], saved["leave_one_out"]
    eye = np.eye(n, dtype=bool)
    u = check_utilities(game.evaluate(np.concatenate([eye, ~eye])), 2 * n)
    singles, leave = u[:n].tolist(), u[n:].tolist()
    if checkpoint is not None:
        checkpoint.context["exact_strata"] = {"singletons": singles, "leave_one_out": leave}
    return 2 * n, singles, leave
