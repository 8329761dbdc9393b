"""All-S influence: stratified Shapley sampling with influence-approximated marginal contributions.

:func:`all_s_influence` estimates every stratum mean of the Shapley value by
coalition size from sampled base sets, one model fit each, with the marginal
contributions of all covered players from influence updates of that fit; a
pilot round, then Neyman allocation in rounds of doubling size.
"""

from __future__ import annotations

import math
import time

from typing import Any, Callable, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..estimators import batch_rng, progress_bar
from .._validation import check_choice, check_int, check_progress, check_seed
from ..result import ValuationResult
from ._allocation import _BIG, PRIOR_SETS, _draw_subsets, _Stratum, _stratum_std, neyman_allocation
from ._marginals import UTILITY_CHANGES, _marginals, warn_out_of_range
from ._objective import APPROXIMATIONS, LogisticObjective


def all_s_influence(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, budget: int,
                    seed: int | None = None, *, C: float = 1.0, fit_intercept: bool = True,
                    utility: Literal["neg_log_loss", "accuracy"] = "neg_log_loss",
                    approximation: Literal["newton", "influence"] = "newton",
                    utility_change: Literal["evaluate", "linear"] = "evaluate", n_pilot: int = 2,
                    progress: bool | None = None) -> ValuationResult:
    r"""All-S influence: stratified Shapley sampling with influence-approximated marginals.

    Writes :math:`s_i = \frac1N\sum_{k=0}^{N-1}\mathbb E[X_i^k]` (module
    docstring) and estimates each stratum mean :math:`\mu_{ik} = \mathbb
    E[X_i^k]` from sampled coalitions, each fitted once:

    * **stratum** ``k = 0`` is exact: :math:`X_i^0 = 0` (degenerate-subset
      convention), never sampled;
    * **stratum** ``k \ge 1`` draws *base sets* uniformly without replacement.
      If :math:`N - k \ge k + 1` a base set is a size-``k`` set :math:`S` and
      every :math:`i \notin S` gets :math:`X_i^k = U(S\cup\{i\}) - U(S)` from
      the influence of *adding* :math:`z_i`; otherwise it is a size-``(k+1)``
      set :math:`T` and every :math:`j\in T` gets
      :math:`X_j^k = U(T) - U(T\setminus\{j\})` from the influence of
      *removing* :math:`z_j`. Conditionally on covering player ``i`` the
      coalition is uniform among the size-``k`` subsets of
      :math:`I\setminus\{i\}`, so both are unbiased up to the influence
      error; the choice maximises the players covered per fit,
      :math:`c_k = \max(N-k, k+1)/N`. (The ``k = N-1`` stratum is then the
      single set :math:`T = I`: largest-S influence without normalisation.)
    * **allocation**: a pilot of ``n_pilot`` base sets per stratum estimates
      the within-player standard deviation :math:`\sigma_k` of
      :math:`X_i^k` (pooled over players); the rest of the budget follows the
      Neyman allocation :math:`n_k \propto \sigma_k/\sqrt{c_k}`
      (:func:`neyman_allocation`), which minimises
      :math:`\sum_i \operatorname{Var}\hat s_i`, capped at the number of
      distinct base sets :math:`\binom{N}{|S|}` (a stratum given all of them
      is computed exactly, up to the influence error). It is spent in rounds
      of doubling size (the first as large as the pilot), re-estimating
      :math:`\sigma_k` before each, with each variance shrunk toward the
      pooled one by 4 base sets' worth of weight: marginal contributions are
      heavy-tailed, a two-set pilot often reads a near-zero variance, and
      plain one-shot Neyman allocation then did worse than equal allocation
      in our checks. One allocation per stratum, not per player ("customises
      the number of samples ... according to the variance of
      :math:`X_i^k`"), because one fit serves all the players it covers.
    * **estimate**: :math:`\hat\mu_{ik}` is the mean of player ``i``'s
      observations in stratum ``k``; a player with none falls back to the
      stratum's mean over players (counted in ``info["n_missing_cells"]``).

    Parameters
    ----------
    X_train, y_train, X_test, y_test, C, fit_intercept, utility
        As for :class:`LogisticObjective`.
    budget : int
        Number of sampled base sets (one model fit each, none for a base set
        that misses a class: its model is the convention ``theta = 0``). At
        least the pilot, :math:`\sum_{k=1}^{N-1}\min(\texttt{n\_pilot},
        \binom{N}{|S_k|})`. The run stops early if every stratum is exhausted.
    seed : int, optional
        Seed; ``None`` draws one (kept on the result). Round ``r`` (0: the
        pilot) of stratum ``k`` draws from stream ``batch_rng(seed, r N + k)``,
        so results depend only on the seed, the data and the arguments.
    approximation : {"newton", "influence"}, default "newton"
        ``"newton"``: one Newton step with the Hessian of the changed set
        (second-order accurate; same cost); ``"influence"``: the paper's
        influence function with the base set's Hessian.
    utility_change : {"evaluate", "linear"}, default "evaluate"
        ``"evaluate"``: the test utility at the updated parameters (exact in
        the utility, required for accuracy); ``"linear"``: first-order change
        through the (surrogate) utility gradient.
    n_pilot : int, default 2
        Pilot base sets per stratum, at least 2.
    progress : bool, optional
        Show a progress bar (default: only on an interactive terminal).

    Returns
    -------
    ValuationResult
        ``method="all_s_influence"``; ``stderr`` from the pooled within-player
        variance of each stratum with the finite-population correction
        (:math:`\frac1N\sqrt{\sum_k \hat\sigma_k^2 (1 - n_{ik}/\binom{N-1}{k}) / n_{ik}}`;
        it ignores the influence approximation's bias). ``n_evaluations`` is
        the number of model fits actually made: each fit is followed by one
        exact test-utility evaluation of that model, and the pair counts as
        one evaluation (one coalition whose utility was computed, the unit of
        every estimator of the package). Not counted: coalitions whose utility
        is the convention constant :math:`U_0`, and the influence-approximated
        utilities (``info["n_influence_updates"]``). ``n_samples`` is the
        number of base sets drawn. ``info`` also holds the per-stratum
        ``allocation`` (base sets drawn), ``coverage``, ``directions``,
        ``pilot_std`` (raw, after the pilot), ``stratum_std`` (final, shrunk),
        ``exhausted`` strata, ``n_rounds``, ``stratum_means`` (``(N, N)``,
        column ``k`` estimates :math:`\mathbb E[X_i^k]`), ``n_fits``,
        ``n_degenerate_bases``, ``n_missing_cells``, ``n_out_of_range``
        (approximated marginals beyond any change of the utility: a
        ``RuntimeWarning`` says the influence steps broke down, as on
        unscaled features).
    """
    start = time.perf_counter()
    obj = LogisticObjective(X_train, y_train, X_test, y_test, C=C, fit_intercept=fit_intercept,
                            utility=utility)
    check_choice(approximation, "approximation", APPROXIMATIONS)
    check_choice(utility_change, "utility_change", UTILITY_CHANGES)
    n_pilot = check_int(n_pilot, "n_pilot", minimum=2)
    budget = check_int(budget, "budget", minimum=0)
    entropy = check_seed(seed)
    progress = check_progress(progress)
    n = obj.n_train
    strata = [_Stratum(k, n) for k in range(1, n)]
    pilot = np.array([min(n_pilot, st.population) for st in strata], dtype=np.int64)
    if budget < pilot.sum():
        raise ValueError(f"budget={budget} is too small: the pilot round alone needs {int(pilot.sum())} "
                         f"base sets ({n_pilot} per coalition size k = 1..{n - 1}, fewer where a size "
                         f"has fewer distinct sets); raise budget to {int(pilot.sum())} at least"
                         + (f", or lower n_pilot (with n_pilot=2 the pilot needs "
                            f"{sum(min(2, st.population) for st in strata)})." if n_pilot > 2 else "."))
    counters: dict[str, Any] = {"n_fits": 0, "n_degenerate_bases": 0, "n_influence_updates": 0, "n_out_of_range": 0,
                "largest": 0.0}

    def process(stratum: _Stratum, base: tuple[int, ...]) -> None:
        _process_base(obj, stratum, base, approximation, utility_change, counters)

    pilot_std, n_rounds = _sample_strata(strata, pilot, budget, entropy, process, progress)
    stratum_means, stratum_var, stderr, n_missing = _stratum_estimates(strata, n)
    values = stratum_means.sum(axis=1) / n
    warn_out_of_range("all_s_influence", obj, counters)
    del counters["largest"]
    n_drawn = int(sum(len(st.drawn) for st in strata))
    info: dict[str, Any] = {
        "budget": budget, "n_pilot": n_pilot, "approximation": approximation,
        "utility_change": utility_change, "utility": obj.utility_name, "C": obj.C,
        "sizes": np.arange(1, n), "directions": [st.direction for st in strata],
        "coverage": np.array([st.coverage for st in strata]),
        "allocation": np.array([len(st.drawn) for st in strata]),
        "pilot_std": pilot_std, "stratum_std": np.sqrt(stratum_var), "n_rounds": n_rounds,
        "exhausted": np.array([len(st.drawn) == st.population for st in strata]),
        "stratum_means": stratum_means, "n_missing_cells": n_missing,
        "empty_utility": obj.degenerate_utility, **counters,
    }
    return ValuationResult(values=values, n_evaluations=counters["n_fits"], method="all_s_influence",
                           seed=entropy, wall_time=time.perf_counter() - start, stderr=stderr,
                           n_samples=n_drawn, info=info)


def _process_base(obj: LogisticObjective, stratum: _Stratum, base: tuple[int, ...],
                  approximation: Literal["newton", "influence"],
                  utility_change: str, counters: dict[str, Any]) -> None:
    """Fit one base set (or take the degenerate convention) and add its covered players' marginals."""
    n = obj.n_train
    members = np.asarray(base, dtype=np.intp)
    if obj.degenerate(members):
        theta, u_base = np.zeros(obj.n_params), obj.degenerate_utility
        counters["n_degenerate_bases"] += 1
    else:
        theta = obj.fit(members)
        u_base = obj.utility(theta)
        counters["n_fits"] += 1
    if stratum.direction == "add":
        players = np.setdiff1d(np.arange(n), members, assume_unique=True)
    else:
        players = members
    values, _, meta = _marginals(obj, theta, members, players, stratum.direction, approximation,
                                 utility_change, u_base)
    counters["n_influence_updates"] += meta["n_influence_updates"]
    counters["n_out_of_range"] += meta["n_out_of_range"]
    counters["largest"] = max(counters["largest"], meta["largest"])
    stratum.add(players, values)


def _sample_strata(strata: list[_Stratum], pilot: NDArray[np.int64], budget: int, entropy: int,
                   process: Callable[[_Stratum, tuple[int, ...]], None],
                   progress: bool | None) -> tuple[NDArray[np.float64], int]:
    """The pilot round, then Neyman rounds of doubling size until the budget or every stratum is spent.

    Returns the strata's standard deviations after the pilot and the number of Neyman rounds.
    """
    from threadpoolctl import threadpool_limits

    n = len(strata) + 1
    bar = progress_bar(progress, total=budget, desc="all-S influence", unit="set")  # a line every 30 s in a log
    with threadpool_limits(1), bar:  # many tiny fits: one BLAS thread is much faster
        for st, size in zip(strata, pilot):
            for base in _draw_subsets(st, n, int(size), batch_rng(entropy, st.k)):
                process(st, base)
                bar.update(1)
        pilot_std = _stratum_std(strata)
        upper = np.array([min(st.population, _BIG) for st in strata], dtype=np.int64)
        coverage = np.array([st.coverage for st in strata])
        # Neyman allocation in rounds of doubling size, re-estimating the stratum
        # variances after each: a two-sample pilot alone misallocates badly.
        n_rounds, step = 0, max(int(pilot.sum()), 1)
        while True:
            drawn = np.array([len(st.drawn) for st in strata], dtype=np.int64)
            spent = int(drawn.sum())
            if spent >= budget or (drawn >= upper).all():
                break
            n_rounds += 1
            # Exhausted strata are exact: no variance left to reduce.
            std = np.where(drawn >= upper, 0.0, _stratum_std(strata, PRIOR_SETS))
            target = neyman_allocation(std, min(budget, spent + step), coverage=coverage,
                                       lower=drawn, upper=upper)
            for st, total, have in zip(strata, target, drawn):
                for base in _draw_subsets(st, n, int(total - have), batch_rng(entropy, n_rounds * n + st.k)):
                    process(st, base)
                    bar.update(1)
            step *= 2
    return pilot_std, n_rounds


def _stratum_estimates(strata: list[_Stratum], n: int
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], int]:
    """Stratum means ``(N, N)`` (missing cells filled by the stratum mean), variances, stderr, missing cells."""
    stratum_means = np.zeros((n, n))  # column k: estimates of E[X_i^k]; column 0 is exactly 0
    stratum_var = _stratum_std(strata, PRIOR_SETS) ** 2
    variance_terms = np.zeros(n)
    n_missing = 0
    for st, var_k in zip(strata, stratum_var):
        seen = st.count > 0
        fill = st.mean[seen].mean() if seen.any() else 0.0
        n_missing += int((~seen).sum())
        stratum_means[:, st.k] = np.where(seen, st.mean, fill)
        # Finite-population correction: each player's stratum has C(N-1, k) coalitions.
        population = math.comb(n - 1, st.k)
        fpc = np.clip(1.0 - st.count / population, 0.0, 1.0) if population < _BIG else 1.0
        variance_terms += np.where(seen, var_k * fpc / np.maximum(st.count, 1), var_k)
    return stratum_means, stratum_var, np.sqrt(variance_terms) / n, n_missing
