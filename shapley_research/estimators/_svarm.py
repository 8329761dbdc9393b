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

import os
from dataclasses import dataclass
from math import comb
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import NDArray

from ._sampling._driver import Run, Sampler, SamplingOptions, SamplingSpec, drive
from ._sampling._loop import (Anchors, MeanState, Pinned, aux_rng, chunk_rows,
                              coalition_batch_size, evaluations_text, pinned_threads,
                              units_from_budget)
from ._sampling._batches import close_batches
from ._sampling._progress import progress_bar
from ._sampling._subsets import random_subsets
from ._sampling._without_replacement import (MAX_STRATUM, PILOT_PHASE, StratumPlan, draw_coalitions, size_rng,
                                             pass_remainder, without_replacement_sizes)
from .._ordered import ordered_map
from .._validation import check_choice, check_float, check_game, check_int, check_utilities
from ._permutation import documents_sampling_options
from ._small_games import enumeration_affordable
from ._svarm_strata import (CoalitionBatches, batch_state, evaluate_batch, nearest_filled, pooled_variances,
                            size_sums, size_variances, stratum_estimates, stratum_statistics)
from ..games import GameLike, reporting_to
from ..result import Finalizer, SamplingRecord, ValuationResult, register_finalizer

__all__ = ["neyman_size_probabilities", "stratified_svarm_shapley", "svarm_size_probabilities"]

MAX_PLAYERS = 2048  # the state holds 3 (N + 1)^2 running sums: about 100 MiB at this size

ALLOCATIONS = ("svarm", "neyman")  # the size allocations of stratified_svarm_shapley
PILOT_PER_PLAYER = 5  # default pilot of the Neyman allocation: 5 N coalitions
NEYMAN_FLOOR = 0.2  # share of the default allocation kept under Neyman's
PILOT_STREAM = 0  # aux_rng index of the pilot coalitions


def svarm_size_probabilities(n_players: int) -> NDArray[np.float64]:
    r"""Probabilities of the sampled coalition sizes ``k = 2, ..., N - 2``.

    :math:`P(k) \propto 1/\min(k, N - k)`, the allocation of Stratified SVARM:
    a coalition of size ``k`` feeds ``k`` of the :math:`\phi^+` strata and
    ``N - k`` of the :math:`\phi^-` strata, so small and large sizes, which
    feed the fewest strata of one kind, are drawn more often.
    Empty for ``N < 4`` (every stratum is then computed exactly).

    Returns
    -------
    numpy.ndarray of float64, shape (max(N - 3, 0),)
        :math:`P(k)` for ``k = 2, ..., N - 2``, summing to 1.
    """
    n = check_int(n_players, "n_players", minimum=1)
    sizes = np.arange(2, n - 1)
    weights = 1.0 / np.minimum(sizes, n - sizes)
    return weights / weights.sum() if sizes.size else weights


def neyman_size_probabilities(state: MeanState, n_players: int, floor: float = NEYMAN_FLOOR) -> np.ndarray:
    r"""Neyman allocation of the sampled sizes ``k = 2, ..., N - 2``, from the strata seen so far.

    A coalition of size ``k`` is a sample of :math:`\phi^+_{i,k-1}` for its
    ``k`` members and of :math:`\phi^-_{i,k}` for the ``N - k`` others. With
    ``B`` coalitions drawn with probabilities :math:`p_k`, a stratum gets
    :math:`m^+_{i,k-1} \approx B p_k k / N` and
    :math:`m^-_{i,k} \approx B p_k (N - k) / N` samples, so the expected
    squared :math:`\ell_2` error of :math:`s_i = \frac1N \sum_\ell
    (\phi^+_{i,\ell} - \phi^-_{i,\ell})` summed over the players is

    .. math::

        \frac{1}{N^2} \sum_{i,\ell} \left(\frac{\sigma^2_{+,i,\ell}}{m^+_{i,\ell}}
        + \frac{\sigma^2_{-,i,\ell}}{m^-_{i,\ell}}\right)
        \approx \frac{1}{N B} \sum_k \frac{a_k}{p_k},\qquad
        a_k = \frac{S^+_{k-1}}{k} + \frac{S^-_k}{N - k},\quad
        S^\pm_\ell = \sum_i \sigma^2_{\pm,i,\ell},

    minimised over the simplex by :math:`p_k \propto \sqrt{a_k}`.
    :math:`S^\pm_\ell` is estimated as ``N`` times the within-stratum
    variance pooled over the players with two samples or more at that size
    (where no player has two: :math:`N \operatorname{Var}(U(A) \mid |A| = k)`,
    which adds the spread between the players' stratum means); sizes with
    fewer than two coalitions take :math:`a_k` linearly
    interpolated between the nearest estimated sizes (it varies smoothly with
    ``k`` on the games measured). The result is
    :math:`(1 - f)\,p^{\mathrm{Neyman}} + f\,p^{\mathrm{SVARM}}`: the
    ``floor`` ``f`` of :func:`svarm_size_probabilities` keeps every size
    sampled where few samples estimated a variance of zero. Without any
    estimate (or all zero) it is the default allocation.

    Parameters
    ----------
    state : MeanState
        Statistics of sampled coalitions, as kept by :func:`stratified_svarm_shapley`.
    n_players : int
        ``N``.
    floor : float, default 0.2
        Share of the default allocation mixed in, in ``[0, 1]``.

    Returns
    -------
    numpy.ndarray
        Probabilities of the sizes ``2..N-2`` (empty for ``N < 4``).
    """
    n = check_int(n_players, "n_players", minimum=1)
    floor = check_float(floor, "floor", minimum=0.0, maximum=1.0)
    default = svarm_size_probabilities(n)
    if default.size == 0:
        return default
    sizes = np.arange(2, n - 1)
    whole = size_variances(state, n)
    members, outsiders = stratum_statistics(state, n)
    spread = []
    for stats, offset in ((members, -1), (outsiders, 0)):  # size k feeds phi+_{k-1} and phi-_k
        _, variances, counts = stratum_estimates(stats, offset, {}, n)
        pooled = pooled_variances(variances, counts)[sizes + offset]
        spread.append(np.where(np.isnan(pooled), whole, pooled))
    cost = spread[0] / sizes + spread[1] / (n - sizes)  # a_k / N
    known = np.isfinite(cost)
    if not known.any():
        return default
    cost = np.interp(sizes, sizes[known], cost[known])
    root = np.sqrt(cost)
    if not root.sum() > 0:
        return default
    return (1.0 - floor) * root / root.sum() + floor * default


def _pilot(game, n: int, n_pilot: int, entropy: int, reference: float, batch_size: int, checkpoint,
           n_jobs: int | None = None, progress: bool | None = None, plan: StratumPlan | None = None) -> MeanState:
    """Statistics of the pilot coalitions (default allocation, stream ``aux_rng(entropy, PILOT_STREAM)``).

    With a ``plan`` (strata drawn without replacement), batch ``j``'s sizes
    and offsets come from it and ``size_rng(entropy, j, PILOT_PHASE)``: the
    pilot takes the first draws of every stratum's order and the sampling
    batches continue them.

    The coalitions are drawn in order from that one stream, then evaluated in
    batches, in parallel with ``n_jobs`` (joblib), which changes no value; all
    pilot masks are held at once (``pilot x N`` booleans, 21 MB for 5 N
    coalitions at N = 2,048). Their utilities are kept in the checkpoint's
    context, so a resumed run redraws the same coalitions from the seed and
    needs no evaluation (nor a noisy game to repeat itself). A progress bar
    (``progress`` as for the sampling loop) counts the evaluated coalitions,
    within a batch too where the game reports them and ``n_jobs`` is 1.
    """
    saved = None if checkpoint is None else checkpoint.context.get("pilot_utilities")
    rng = aux_rng(entropy, PILOT_STREAM)
    probabilities, levels = svarm_size_probabilities(n), np.arange(2, n - 1)
    draws = []
    for j, start in enumerate(range(0, n_pilot, batch_size)):
        if plan is None:
            sizes = rng.choice(levels, size=min(batch_size, n_pilot - start), p=probabilities)
            draws.append((sizes, random_subsets(rng, sizes, n)))
        else:
            sizes, offsets = plan.draw(size_rng(entropy, j, PILOT_PHASE), min(batch_size, n_pilot - start),
                                       probabilities)
            draws.append((sizes, draw_coalitions(rng, sizes, offsets, n, entropy)))
    if saved is not None:
        ends = np.cumsum([sizes.size for sizes, _ in draws])
        utilities = np.split(np.asarray(saved, dtype=float), ends[:-1])
    else:
        evaluate = Pinned(evaluate_batch)  # the same BLAS threads in every worker: identical values
        results = ordered_map(evaluate, ((game, masks) for _, masks in draws), None if len(draws) == 1 else n_jobs,
                              batch_size=1)
        utilities, done, bar = [], 0, progress_bar(progress, total=n_pilot, desc="SVARM pilot")
        with bar, reporting_to(None if bar.disable else bar.update):
            try:
                for u in results:  # in batch order, whatever the backend
                    utilities.append(u)
                    done += u.size
                    bar.update(done - bar.n)  # only what the game has not reported
            finally:
                close_batches(results)  # an interrupted pilot stops joblib's workers now, not when collected
    state = MeanState(3 * (n + 1) ** 2)
    for (sizes, masks), u in zip(draws, utilities):
        state.merge(batch_state(masks, sizes, u - reference))
    if checkpoint is not None:
        checkpoint.context["pilot_utilities"] = np.concatenate(utilities).tolist()
    return state


@register_finalizer("stratified_svarm")
@dataclass(frozen=True)
class SvarmFinalizer(Finalizer):
    """The final step of :func:`stratified_svarm_shapley`, with the exact strata it reads (:meth:`finalize`).

    Merged runs list how each drew its coalitions where they differ, and sum
    the terms of their strata drawn without replacement
    (``pass_remainders``, :func:`_pass_remainders`) where they drew alike.
    """

    n_players: int
    reference: float  # the utility the state's samples are centred at
    singletons: list  # U({i}) per player
    leave_one_out: list  # U(D \ {i}) per player
    without_replacement: list  # the sizes drawn without replacement
    listed = ("allocation", "pilot", "size_probabilities", "without_replacement")
    summed = ("pass_remainders",)
    summed_alike = ("without_replacement",)

    def finalize(self, state: MeanState, record: SamplingRecord) -> tuple[np.ndarray, np.ndarray, dict]:
        return _finalize(state, self, record)


def _finalize(state: MeanState, exact: SvarmFinalizer, record: SamplingRecord) -> tuple[np.ndarray, np.ndarray, dict]:
    r"""Stratum means (exact ones from ``exact`` and the anchors), their difference averaged over sizes.

    Strata without a sample take the mean of the nearest sampled size of the
    same player (reported as ``info["empty_strata"]``; none once the budget
    is a few times ``N log N``). The standard error is
    :math:`\frac1N \sqrt{\sum_\ell \sigma^2_{+,\ell}/m_{+,\ell} + \sigma^2_{-,\ell}/m_{-,\ell}}`
    over the sampled strata, with a stratum's variance pooled over the players
    at its size while it has fewer than two samples (the largest pooled
    variance for a size without any such stratum).
    """
    n = exact.n_players
    ref = exact.reference
    singles = np.asarray(exact.singletons) - ref
    leave = np.asarray(exact.leave_one_out) - ref
    empty, full = (anchor - ref for anchor in record.anchors())
    others = lambda a: (a.sum() - a) / max(n - 1, 1)  # mean over the other players
    exact_plus = {n - 2: others(leave), 0: singles, n - 1: np.full(n, full)} if n >= 2 else {0: singles}
    exact_minus = {1: others(singles), 0: np.full(n, empty), n - 1: leave} if n >= 2 else {0: np.full(n, empty)}
    # a coalition of size k samples phi+_{i,k-1} (members) and phi-_{i,k} (the others)
    members, outsiders = stratum_statistics(state, n) if n >= 4 else (None, None)
    plus = stratum_estimates(members, -1, exact_plus, n)
    minus = stratum_estimates(outsiders, 0, exact_minus, n)
    values = np.zeros(n)
    variance = np.zeros(n)
    empty_strata = 0
    remainders = _pass_remainders(state, exact.without_replacement, record, n)
    for sign, (means, variances, counts), fed in ((1.0, plus, -1), (-1.0, minus, 0)):
        filled = counts > 0
        empty_strata += int((~filled).sum())
        values += sign * nearest_filled(means, filled).sum(axis=1)
        sampled = np.isfinite(counts)
        pooled = pooled_variances(variances, counts)
        if np.isfinite(pooled).any():  # sizes without any stratum of two samples: the largest pooled variance
            pooled = np.where(np.isnan(pooled), np.nanmax(pooled), pooled)
        stratum_var = np.where(np.isnan(variances), pooled[None, :], variances)
        factor = 1.0 / np.maximum(counts, 1.0)  # Var(stratum mean) / S^2 with replacement (1 if empty)
        if remainders is not None:  # without replacement: the remainder of the current pass, over m^2
            levels = np.asarray(exact.without_replacement) + fed
            m = counts[:, levels]
            factor[:, levels] = np.where(m > 0, remainders[fed + 1] / np.maximum(m, 1.0) ** 2, factor[:, levels])
        variance += np.where(sampled, stratum_var * factor, 0.0).sum(axis=1)
    updates: dict[str, Any] = {"empty_strata": empty_strata}
    if remainders is not None:
        updates["pass_remainders"] = remainders
    return values / n, np.sqrt(variance) / n, updates


def _pass_remainders(state: MeanState, sizes: list, record: SamplingRecord, n: int) -> np.ndarray | None:
    r"""``(2, N, K)``: :func:`pass_remainder` of :math:`\phi^+_{i,k-1}` and :math:`\phi^-_{i,k}` per player.

    One column per size ``k`` of ``sizes``, those drawn without replacement
    (``None`` without any). :math:`\phi^\pm_{i,\ell}` averages the
    :math:`M = \binom{N-1}{\ell}` subsets of size :math:`\ell` of the other
    players, a size-``k`` stratum's draws containing ``i`` (``+``) or not
    (``-``); a complete pass over the stratum holds each of them once. Runs
    merged by :func:`~shapley_research.merge_results` drew their orders
    independently: the merged count is the sum of theirs, so the variance of
    the pooled mean is the sum of their remainders over the squared count
    (``merge_results`` sums them into the merged ``record.terms``; runs
    without them merge with the :math:`1/m` of sampling with replacement,
    which overstates it).
    """
    if not sizes or n < 4:
        return None
    if len(record.seeds) > 1:
        return record.terms.get("pass_remainders")
    (c_in, _, _), (c_out, _, _) = stratum_statistics(state, n)
    k = np.asarray(sizes)
    passes = np.rint(size_sums(state.mean * state.count, n)[0])[k] // [comb(n, j) for j in sizes]
    return np.stack([pass_remainder(c_in[:, k], passes, [comb(n - 1, j - 1) for j in sizes]),
                     pass_remainder(c_out[:, k], passes, [comb(n - 1, j) for j in sizes])])


@documents_sampling_options
def stratified_svarm_shapley(game: GameLike, budget: int | None, seed: int | np.random.SeedSequence | None = None, *,
                             batch_size: int | None = None,
                             n_jobs: int | None = None, progress: bool | None = None,
                             empty_utility: float | None = None, target_stderr: float | None = None,
                             target_rank_correlation: float | None = None,
                             checkpoint: str | os.PathLike[str] | None = None,
                             checkpoint_interval: float = 60.0, allocation: Literal["svarm", "neyman"] = "svarm",
                             pilot: int | None = None) -> ValuationResult:
    r"""Shapley values by Stratified SVARM (Kolpaczki et al., AAAI 2024).

    Estimates the strata :math:`\phi^{\pm}_{i,\ell}` of
    :mod:`shapley_research.estimators._svarm`:

    1. exactly, the sizes where a stratum is a handful of coalitions:
       :math:`U(\emptyset)`, :math:`U(D)`, every :math:`U(\{i\})` and every
       :math:`U(D \setminus \{i\})` (``2N + 2`` evaluations) give
       :math:`\phi^+_{i,\ell}` for :math:`\ell \in \{0, N-2, N-1\}` and
       :math:`\phi^-_{i,\ell}` for :math:`\ell \in \{0, 1, N-1\}`;
    2. by sampling, the others: a size ``k`` in ``2..N-2`` with
       :func:`svarm_size_probabilities` (or, with ``allocation="neyman"``,
       adapted to the strata's variances, below), then a uniform coalition
       ``A`` of that size, whose utility is one sample of
       :math:`\phi^+_{i,k-1}` for each :math:`i \in A` and of
       :math:`\phi^-_{i,k}` for each :math:`i \notin A`.

    The value is the mean over sizes of the stratum differences. Each stratum
    mean is a ratio estimate (unbiased given that the stratum was sampled); an
    unsampled stratum borrows the nearest sampled size of the same player.

    *Small strata without replacement.* A size of at most
    :data:`~shapley_research.estimators._sampling._without_replacement.MAX_STRATUM` (:math:`2^{20}`)
    coalitions (every size up to ``N = 22``, beyond that the sizes near 2
    and ``N - 2``) is read along seeded random orders of its coalitions
    (:mod:`~shapley_research.estimators._sampling._without_replacement`), and a size that has given
    every coalition once is skipped, its strata exact, until all the others
    have too (sizes drawn from the allocation renormalised over the rest).
    Stratum means stay unbiased and their variances take the
    finite-population correction; the draws stay the same for any ``n_jobs``
    and after a resume. Median relative :math:`\ell_2` error over 20 seeds
    on the airport, glove and unanimity games of ``tests/games.py``, with
    replacement then without: 0.042-0.053 then 0.0024-0.0045 at ``N = 10``
    and 1,000 evaluations, 0.10-0.13 then 0.041-0.047 at ``N = 7`` and 100.
    It pays off on games whose marginal contributions are concentrated on
    some coalition sizes (e.g. the airport game); on the KNN benchmark of
    ``benchmarks/pydvl_comparison.py`` the default allocation is no better
    than permutation sampling (``allocation="neyman"`` is, yet stays behind
    antithetic sampling with ``position_adjustment``), and on nearly
    additive games permutation sampling, whose marginal contributions cancel
    the additive part exactly, is better.

    ``allocation="neyman"`` first draws ``pilot`` coalitions with the default
    allocation, then the rest with :func:`neyman_size_probabilities` of the
    pilot's strata: :math:`p_k \propto \sqrt{S^+_{k-1}/k + S^-_k/(N-k)}`
    (:math:`S^\pm` the within-stratum variances summed over the players),
    which minimises the expected squared error for a given number of
    coalitions, mixed with 20 % of the default allocation. The probabilities
    are computed once, from the pilot alone, so they do not depend on
    ``n_jobs`` and a resumed run recomputes them exactly. Each stratum mean
    is still the plain mean of its samples: the allocation changes how many
    samples a stratum gets, not the estimator, so runs of either allocation
    merge. Measured at 30 N to 300 N evaluations on the games of
    ``benchmarks/``, the mean
    relative :math:`\ell_2` error falls by 16-20 % on the airport game (100
    players, 16 seeds), 20-24 % on ``CheapGame`` (200 players) and 20-26 % on
    the MNIST KNN game (1,000 players, 4-8 seeds): the default allocation
    needs 1.4-1.6 times the evaluations for the same error.

    The state is ``3 (N + 1)^2`` running sums (``O(N^2)``, the price of one
    stratum per player and size), so ``N`` is limited to
    :data:`MAX_PLAYERS`; use :func:`~shapley_research.permutation_shapley` or
    :func:`~shapley_research.group_testing_shapley` beyond.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    budget : int or None
        Utility evaluations allowed: ``2N + 2`` exact ones (``2N + 1`` with
        ``empty_utility``), the rest sampled coalitions. Must afford one
        sample when ``N >= 4``. ``None`` (no cap) only with a
        ``target_stderr`` or ``target_rank_correlation``.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the random streams; ``None`` draws one (kept on the result).
    batch_size, n_jobs, progress, empty_utility
        As in :func:`permutation_shapley`; a batch holds sampled
        coalitions: 4096 by default up to ``N = 1,024`` and ``32 N`` beyond
        (its ``O(N^2)`` statistics are formed and merged once a batch),
        evaluated about ``2**22`` mask cells at a time.
{sampling}
        Both targets judge the stratified estimate itself (the values and
        standard errors this function returns), recomputed from the strata
        after each batch (``O(N^2)``, small next to a batch); with
        ``allocation="neyman"`` they are checked only after the pilot.
    allocation : {"svarm", "neyman"}, default "svarm"
        How the sampled sizes are drawn: ``"svarm"``, the fixed
        :func:`svarm_size_probabilities` of the paper; ``"neyman"``, a pilot
        with those, then the Neyman allocation estimated from it.
    pilot : int, optional
        Coalitions of the Neyman pilot (only with ``allocation="neyman"``);
        default ``5 N``, capped by the budget, so at budgets below about
        ``7 N`` the run is the default allocation with other draws. Measured:
        ``10 N`` is a few % better than ``5 N`` at ``100-300 N`` evaluations
        but gains nothing at ``10 N``, where ``5 N`` already does (13-18 %);
        ``N`` or ``2 N`` estimate too few sizes' variances (worse than the
        default on the airport game at large budgets). The pilot's batches are
        evaluated by the ``n_jobs`` workers too. A checkpoint
        continues with a larger budget only if its pilot was complete.

    Returns
    -------
    ValuationResult
        ``stderr`` from the stratum variances; ``info["empty_strata"]``
        counts the strata that had no sample; ``info["allocation"]`` is the
        allocation, and with ``"neyman"`` ``info["pilot"]`` the pilot
        coalitions and ``info["size_probabilities"]`` those of sizes
        ``2..N-2`` after it (``n_samples`` counts the pilot);
        ``info["without_replacement"]`` lists the sizes drawn without
        replacement, and ``info["pass_remainders"]`` their strata's terms of
        the variance. Runs with different seeds combine with
        :func:`~shapley_research.merge_results`.
    """
    n = _check_players(game)
    allocation, pilot = _check_allocation(allocation, pilot, n)
    options = SamplingOptions.checked(
        game, "stratified_svarm_shapley", batch_size=batch_size, n_jobs=n_jobs, progress=progress,
        empty_utility=empty_utility, target_stderr=target_stderr, target_rank_correlation=target_rank_correlation,
        checkpoint=checkpoint, checkpoint_interval=checkpoint_interval)
    levels = np.arange(2, n - 1)
    return drive(SvarmSpec(method="stratified_svarm", n_players=n, dim=3 * (n + 1) ** 2, per_unit=1,
                           unit_name="sampled coalition (after the exact strata)", desc="stratified SVARM",
                           progress_unit="coalition", needs_full=True, allocation=allocation, pilot=pilot,
                           exhaustive=without_replacement_sizes(n, levels)), game, budget, seed, options)


@dataclass(frozen=True, kw_only=True)
class SvarmSpec(SamplingSpec):
    """:func:`stratified_svarm_shapley` for :func:`~._sampling._driver.drive`: a unit is one sampled coalition
    (:class:`CoalitionBatches`), after the exact strata and, with ``"neyman"``, a pilot (:func:`_pilot`);
    the strata of sizes ``exhaustive`` are read along random orders (without replacement)."""

    allocation: Literal["svarm", "neyman"]
    pilot: int
    exhaustive: list

    def batch_size(self, batch_size: int | None, n_units: int | None) -> int:
        """4096 coalitions up to ``N = 1,024``; beyond, ``32 N``, so that forming and merging a batch's
        ``O(N^2)`` statistics is shared by 32 or more chunks of evaluations (at ``N = 2,048``, 8 N left that
        work at about three times the evaluations of a cheap game)."""
        return coalition_batch_size(self.n_players, per_player=32) if batch_size is None else batch_size

    def units(self, budget: object, options: SamplingOptions) -> int | None:
        return _sampled_units(self.n_players, budget, options.empty_utility, **options.targets)

    def n_pilot(self, n_units: int | None) -> int:
        """The pilot's coalitions: the first of the budget (a budget below the pilot is all pilot)."""
        if self.allocation == "svarm" or self.n_players < 4:
            return 0
        return self.pilot if n_units is None else min(self.pilot, n_units)

    def fingerprint_options(self, n_units: int | None) -> dict:
        fingerprint: dict[str, Any] = {"state_layout": "size_major"}  # files of the player-major state are refused
        if self.exhaustive:  # files of runs with replacement throughout (large N) stay valid
            fingerprint["without_replacement"] = MAX_STRATUM
        if self.allocation != "svarm":  # the default's files stay those written before allocations existed
            fingerprint.update(allocation=self.allocation, pilot=self.n_pilot(n_units))
        return fingerprint

    def enumeration_info(self, empty_utility: float | None) -> dict:
        return {"allocation": self.allocation}

    def start(self, game: GameLike, run: Run, anchors: Anchors | None) -> Sampler:
        n, entropy, anchors = self.n_players, run.entropy, cast(Anchors, anchors)  # both are always evaluated
        n_exact, singles, leave = _exact_strata(game, n, run.checkpoint)
        reference = 0.5 * (anchors.empty + anchors.full)  # utilities are stored centred: sums of squares keep
        probabilities, levels = svarm_size_probabilities(n), np.arange(2, n - 1)  # their precision
        plan = StratumPlan(n, levels, self.exhaustive) if self.exhaustive else None
        head, n_pilot = None, self.n_pilot(run.n_units)  # the pilot's statistics, merged before the batches
        if n_pilot:
            with pinned_threads():  # its merges run in this process: the same threads as every batch
                pilot_batch = min(run.batch_size, chunk_rows(n))  # evaluated a chunk at a time
                head = _pilot(game, n, n_pilot, entropy, reference, pilot_batch, run.checkpoint, run.options.n_jobs,
                              run.options.progress, plan)
                probabilities = neyman_size_probabilities(head, n)
        # the allocation is no option of the estimate (stratum means merge whatever the allocation)
        drawn = _how_drawn(self.allocation, self.exhaustive, n_pilot, probabilities)
        info = {"n_players": n, "options": {}, "batch_size": run.batch_size, "empty_utility": anchors.empty,
                "full_utility": anchors.full, "reference": reference, "singletons": singles,
                "leave_one_out": leave} | drawn
        record = SamplingRecord(SvarmFinalizer(n, reference, singles, leave, self.exhaustive), {}, anchors.empty,
                                anchors.full, seeds=(entropy,), drawn=drawn)
        return Sampler(CoalitionBatches(game, n, levels, probabilities, entropy, reference), info, record,
                       evaluations=n_exact + n_pilot, head=head, pilot=n_pilot,
                       estimates_of=lambda s: record.estimates(_with_pilot(head, s))[:2],
                       plan=_stratum_planner(plan, entropy, probabilities))


def _how_drawn(allocation: str, exhaustive: list, n_pilot: int, probabilities: np.ndarray) -> dict:
    """How a run draws its coalitions, as ``info`` reports it: the allocation, the sizes drawn without
    replacement and, after a pilot, its coalitions and the sizes' probabilities."""
    drawn: dict[str, Any] = {"allocation": allocation, "without_replacement": exhaustive}
    if n_pilot:
        drawn.update(pilot=n_pilot, size_probabilities=probabilities.tolist())
    return drawn


def _check_players(game) -> int:
    """The game's ``N``, at most :data:`MAX_PLAYERS`."""
    n = check_game(game)
    if n > MAX_PLAYERS:
        raise ValueError(f"stratified_svarm_shapley keeps one stratum per player and coalition size "
                         f"(O(N^2) memory), so it takes at most {MAX_PLAYERS} players; this game has {n}. "
                         "Use permutation_shapley or group_testing_shapley instead.")
    return n


def _check_allocation(allocation: object, pilot: object, n: int) -> tuple[Literal["svarm", "neyman"], int]:
    """The allocation and the pilot's coalitions (``5 N`` by default; set only with ``"neyman"``)."""
    allocation = check_choice(allocation, "allocation", ALLOCATIONS)
    if pilot is not None and allocation != "neyman":
        raise ValueError(f"pilot sets the pilot of allocation='neyman'; this call has allocation={allocation!r}.")
    checked = cast(Literal["svarm", "neyman"], allocation)  # one of ALLOCATIONS
    return checked, n * PILOT_PER_PLAYER if pilot is None else check_int(pilot, "pilot", minimum=1)


def _sampled_units(n: int, budget, empty_utility, target_stderr, target_rank_correlation) -> int | None:
    """Coalitions the budget samples after the ``2N + 2`` exact evaluations (``None``: no cap), or raise.

    Below 4 players every stratum is exact: the budget need only cover them, and nothing is sampled.
    """
    fixed = 2 * n + 1 + (0 if empty_utility is not None else 1)
    if n >= 4:
        return units_from_budget(budget, fixed, 1, "sampled coalition (after the exact strata)",
                                 target_stderr=target_stderr, target_rank_correlation=target_rank_correlation)
    if (budget is not None and check_int(budget, "budget", minimum=0) < fixed
            and not enumeration_affordable(n, budget, empty_utility)):  # the driver enumerates a covered game
        raise ValueError(f"budget={budget} is smaller than one pass over the exact strata of a "
                         f"{n}-player game: it needs {evaluations_text(fixed)}.")
    if budget is None and target_stderr is None and target_rank_correlation is None:
        units_from_budget(budget, fixed, 1, "")  # raises the usual TypeError
    return 0


def _stratum_planner(plan: StratumPlan | None, entropy: int, probabilities: np.ndarray):
    """The ``plan(batch, size)`` of :func:`run_sampling` for strata without replacement (``None`` without)."""
    if plan is None:
        return None

    def plan_batch(batch: int, size: int):  # in this process, in batch order: the offsets follow the pilot's
        return plan.draw(size_rng(entropy, batch), size, probabilities)

    return plan_batch


def _with_pilot(head: MeanState | None, state: MeanState) -> MeanState:
    """``state`` with the pilot's statistics ``head`` merged before it (a copy; ``state`` itself without)."""
    if head is None:
        return state
    both = MeanState(state.dim, head.count, head.mean.copy(), head.m2.copy())
    both.merge(state)
    return both


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
