r"""Group-testing Shapley estimation (paper Algorithm 1 and Wang & Jia 2023).

Both variants draw *tests*: a size :math:`k \sim q(k) \propto 1/k + 1/(P-k)`
and a uniform coalition of that size among ``P`` players, then one utility
evaluation. With :math:`Z = \sum_k (1/k + 1/(P-k))`, Lemma 1 of the paper
gives :math:`s_i - s_j = Z\,\mathbb E[U(S)(\beta_i - \beta_j)]`.

``variant="paper"`` (Algorithm 1, ``P = N``) estimates the pairwise
differences :math:`C_{ij} = \frac{Z}{T}\sum_t u_t(\beta_{ti}-\beta_{tj})` and
recovers values from the feasibility problem
:math:`\sum_i \hat s_i = U(D) - U(\emptyset)`,
:math:`|\hat s_i - \hat s_j - C_{ij}| \le \tau`. Writing
:math:`a_i = \frac{Z}{T}\sum_t u_t\beta_{ti}`, :math:`C_{ij} = a_i - a_j`, so
:math:`\hat s = a + \frac{U(D) - U(\emptyset) - \sum a}{N}\mathbf 1` satisfies
every constraint with slack ``tau`` for any ``tau >= 0``: that closed form is
the default recovery. Only the centred vector ``a - mean(a)`` is accumulated
(``O(N)`` memory; no ``T x N`` or ``N x N`` matrix).

``variant="improved"`` (Wang & Jia 2023) adds a null player ``N+1``
(``P = N + 1``) whose value is 0, so
:math:`\hat s_i = \frac{Z}{T}\sum_t u_t(\beta_{ti} - \beta_{t,N+1})` is unbiased
directly, with no feasibility problem (and efficiency is not enforced).

*Centering.* Subtracting any function ``b(k_t)`` of the drawn size from
``u_t`` leaves both estimators unbiased, since
:math:`\mathbb E[\beta_i - \beta_j \mid k] = 0`. ``centering="linear"`` uses
:math:`b(k) = U(\emptyset) + \frac{k}{P}(U(D) - U(\emptyset))`, which removes
the large common part of the utilities and cuts the variance several-fold on
games with a large baseline utility.
"""

from __future__ import annotations

import time

import numpy as np

from ._sampling import (MeanState, default_batch_size, evaluate_anchors, evaluate_coalitions,
                        open_checkpoint, run_sampling, units_from_budget)
from ._validation import (check_choice, check_float, check_game, check_int, check_n_jobs, check_solver,
                          check_target)
from .permutation import SAMPLING_PARAMETERS
from .result import ValuationResult, register_finalizer

__all__ = ["group_testing_shapley", "group_testing_size_distribution", "FeasibilityError",
           "recover_from_differences", "random_subsets"]


class FeasibilityError(RuntimeError):
    """The solver could not find a point of the group-testing feasibility problem."""


def group_testing_size_distribution(n_drawn: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Sizes ``k = 1..P-1``, their probabilities ``q(k)`` and the constant ``Z``.

    ``P = n_drawn`` is the number of players coalitions are drawn from
    (``N`` for Algorithm 1, ``N + 1`` for the improved variant).
    """
    k = np.arange(1, n_drawn, dtype=float)
    weights = 1.0 / k + 1.0 / (n_drawn - k)
    z = float(weights.sum())
    return k.astype(np.int64), weights / z, z


def random_subsets(rng: np.random.Generator, k: np.ndarray, n_drawn: int) -> np.ndarray:
    """Boolean ``(len(k), n_drawn)`` rows, row ``t`` a uniform subset of size ``k[t]``.

    Draws the smaller of each subset and its complement by adding uniform
    draws (with replacement) until the row holds that many distinct players.
    The procedure treats all players alike and always stops at the right
    size, so every subset of that size is equally likely; it touches about
    ``min(k, P - k)`` cells per row instead of shuffling all ``P``.
    """
    flip = k > n_drawn // 2
    small = np.where(flip, n_drawn - k, k)
    masks = np.zeros((k.size, n_drawn), dtype=bool)
    flat = masks.reshape(-1)
    need, active = small.copy(), np.flatnonzero(small)
    while active.size:
        rows = np.repeat(active, need[active])
        flat[rows * n_drawn + rng.integers(0, n_drawn, rows.size)] = True
        need[active] = small[active] - np.count_nonzero(masks[active], axis=1)
        active = active[need[active] > 0]
    np.logical_xor(masks, flip[:, None], out=masks)
    return masks


def _contrast_moments(weight: np.ndarray, masks: np.ndarray, offset: np.ndarray) -> MeanState:
    r"""Moments of the per-test vectors :math:`x_{ti} = w_t(eta_{ti} - o_t)` without forming them.

    ``o_t`` is the null player's indicator (improved) or ``k_t / N`` (paper,
    which centres the contrasts). Both sums are linear in the 0/1 masks:
    :math:`\sum_t x_{ti} = (w^	opeta)_i - w^	op o` and, as
    :math:`(eta - o)^2 = eta(1 - 2o) + o^2` for 0/1 ``beta``,
    :math:`\sum_t x_{ti}^2 = (w^2(1 - 2o))^	opeta + (w^2)^	op o^2`; so one
    ``(2, b) @ (b, N)`` product gives the batch's mean and M2.
    """
    size = weight.shape[0]
    offset = offset.astype(float)
    sums = np.stack([weight, weight**2 * (1.0 - 2.0 * offset)]) @ masks
    mean = (sums[0] - weight @ offset) / size
    total_sq = sums[1] + weight**2 @ offset**2
    m2 = np.maximum(total_sq - size * mean**2, 0.0)
    return MeanState(masks.shape[1], size, mean, m2)


def recover_from_differences(centred: np.ndarray, total: float, *, recovery: str = "closed_form",
                             tolerance: float = 0.0, solver: str = "CLARABEL") -> tuple[np.ndarray, dict]:
    r"""Values with ``sum = total`` and pairwise differences within ``tolerance`` of ``C``.

    ``C_ij = centred_i - centred_j``. ``"closed_form"`` returns
    ``centred + total / N``, a point of the feasible set for every tolerance.
    ``"cvxpy"`` solves the feasibility problem in ``O(N)`` constraints, using
    that all ``N(N-1)`` constraints hold iff the residuals
    ``d = s - centred`` fit in an interval of width ``tolerance``:
    ``lo <= d_i <= lo + tolerance``. ``"cvxpy_pairwise"`` states the
    ``N(N-1)/2`` absolute-value constraints literally (one vectorised
    expression; ``O(N^2)`` memory, for verification on small games).
    """
    n = centred.shape[0]
    base = centred + total / n
    if recovery == "closed_form":
        return base, {"recovery": "closed_form"}
    import cvxpy as cp

    # Solve in units of the values' scale so solver tolerances are meaningful.
    scale = max(float(np.abs(base).max()), abs(total) / n, 1e-12)
    c, tot, tol = centred / scale, total / scale, tolerance / scale
    s = cp.Variable(n)
    constraints = [cp.sum(s) == tot]
    if recovery == "cvxpy":
        lo = cp.Variable()
        constraints += [s - c >= lo, s - c <= lo + tol]
    else:
        i, j = np.triu_indices(n, 1)
        constraints += [cp.abs(s[i] - s[j] - (c[i] - c[j])) <= tol]
    problem = cp.Problem(cp.Minimize(0), constraints)
    try:
        problem.solve(solver=solver)
    except cp.error.SolverError as exc:
        raise FeasibilityError(
            f"solver {solver} failed on the group-testing feasibility problem ({exc}). "
            "recovery='closed_form' always has a solution."
        ) from exc
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or s.value is None:
        raise FeasibilityError(
            f"the group-testing feasibility problem is {problem.status} for solver {solver} "
            f"with tolerance {tolerance:.3g}. The problem is feasible in exact arithmetic "
            "(the closed form is a solution), so this is numerical: use a larger epsilon, another "
            "solver, or recovery='closed_form'."
        )
    return np.asarray(s.value) * scale, {"recovery": recovery, "solver": solver, "status": problem.status}


def group_testing_shapley(game, budget, seed=None, *, variant: str = "improved",
                          centering: str | None = None, recovery: str = "closed_form",
                          epsilon: float | None = None, solver: str = "CLARABEL",
                          batch_size: int | None = None, n_jobs: int | None = None,
                          progress: bool | None = None, empty_utility: float | None = None,
                          target_stderr: float | None = None, checkpoint=None,
                          checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""Shapley values by group testing.

    Parameters
    ----------
    game : game
        Object with ``n_players`` (at least 2) and ``evaluate(masks)``.
    budget : int
        Utility evaluations allowed: ``U(D)`` and ``U(empty)`` are evaluated
        once, every remaining evaluation is one test.
    seed : int, optional
        Seed of the random streams; ``None`` draws one (kept on the result).
    variant : {"improved", "paper"}, default "improved"
        ``"paper"`` is Algorithm 1; ``"improved"`` is Wang & Jia (2023) with a
        null player and no feasibility problem (see the module docstring).
    centering : {"none", "linear"}, optional
        Subtract a function of the drawn size from each utility (unbiased
        variance reduction). Default: ``"linear"`` for ``"improved"``,
        ``"none"`` for ``"paper"`` (the algorithm as published).
    recovery : {"closed_form", "cvxpy", "cvxpy_pairwise"}, default "closed_form"
        How ``"paper"`` turns pairwise differences into values (see
        :func:`recover_from_differences`); ignored by ``"improved"``.
    epsilon : float, optional
        Target l2 error of the paper's feasibility problem: its pairwise
        constraints use ``tau = epsilon / (2 sqrt(N))``. By default ``tau`` is
        the largest estimated standard error of a value. Used by the cvxpy
        recoveries only.
    solver : str, default "CLARABEL"
        cvxpy solver of the feasibility problem.
    batch_size, n_jobs, progress, empty_utility
        As in :func:`permutation_shapley`.
{sampling}
    Returns
    -------
    ValuationResult
        ``stderr`` is the standard error of each value (for ``"paper"``, of
        the closed-form recovery); runs with different seeds combine with
        :func:`~shapley_research.merge_results`.
    """
    start = time.perf_counter()
    variant = check_choice(variant, "variant", {"improved", "paper"})
    centering = check_choice("linear" if centering is None and variant == "improved"
                             else centering or "none", "centering", {"none", "linear"})
    recovery = check_choice(recovery, "recovery", {"closed_form", "cvxpy", "cvxpy_pairwise"})
    if variant == "paper" and recovery != "closed_form":
        solver = check_solver(solver)
    n = check_game(game, minimum=2)
    n_jobs = check_n_jobs(n_jobs)
    target_stderr = check_target(target_stderr)
    fixed = 1 if empty_utility is not None else 2
    n_units = units_from_budget(budget, fixed, 1, "test", target_stderr=target_stderr)
    batch_size = (default_batch_size(n, 1) if batch_size is None
                  else check_int(batch_size, "batch_size", minimum=1))
    if epsilon is not None:
        epsilon = check_float(epsilon, "epsilon", minimum=0.0)
    options = {"variant": variant, "centering": centering}
    entropy, ckpt = open_checkpoint(checkpoint, seed, dim=n, interval=checkpoint_interval, fingerprint={
        "method": f"group_testing[{variant}]", "n_players": n, "batch_size": batch_size,
        "empty_utility": empty_utility, **options})
    anchors = evaluate_anchors(game, empty_utility, checkpoint=ckpt)
    n_drawn = n + 1 if variant == "improved" else n
    sizes, probabilities, z = group_testing_size_distribution(n_drawn)
    slope = (anchors.full - anchors.empty) / n_drawn

    def sample_batch(rng: np.random.Generator, size: int):
        k = rng.choice(sizes, size=size, p=probabilities)
        beta = random_subsets(rng, k, n_drawn)
        masks = beta[:, :n]
        in_game = k - beta[:, n] if variant == "improved" else k
        u, evaluations = evaluate_coalitions(game, masks, anchors.empty, anchors.full, sizes=in_game)
        if centering == "linear":
            u = u - (anchors.empty + slope * k)
        offset = beta[:, n] if variant == "improved" else k / n
        return _contrast_moments(z * u, masks, offset), evaluations

    outcome = run_sampling(sample_batch, dim=n, n_units=n_units, batch_size=batch_size, entropy=entropy,
                           n_jobs=n_jobs, progress=progress, desc=f"group testing ({variant})", unit="test",
                           checkpoint=ckpt, target_stderr=target_stderr)
    info = {"options": options, **options, "Z": z, "empty_utility": anchors.empty,
            "full_utility": anchors.full, "batch_size": batch_size, "recovery": recovery,
            "epsilon": epsilon, "solver": solver, **outcome.summary()}
    values, stderr, updates = _finalize(outcome.state, info)
    return ValuationResult(values=values, n_evaluations=outcome.n_evaluations + anchors.n_evaluations,
                           method=f"group_testing[{variant}]", seed=entropy,
                           wall_time=time.perf_counter() - start, stderr=stderr,
                           n_samples=outcome.state.count, info={**info, **updates}, state=outcome.state)


group_testing_shapley.__doc__ = group_testing_shapley.__doc__.replace("{sampling}", SAMPLING_PARAMETERS)


@register_finalizer("group_testing[improved]", "group_testing[paper]")
def _finalize(state: MeanState, info: dict):
    """Values from the accumulated contrasts: directly (improved) or by recovery (paper)."""
    stderr = state.stderr
    if info["variant"] == "improved":
        return state.mean.copy(), stderr, {}
    n = state.dim
    epsilon = info["epsilon"]
    tau = (epsilon / (2 * np.sqrt(n)) if epsilon is not None
           else float(np.nanmax(stderr)) if np.isfinite(stderr).any() else 0.0)
    values, details = recover_from_differences(state.mean, info["full_utility"] - info["empty_utility"],
                                               recovery=info["recovery"], tolerance=tau,
                                               solver=info["solver"])
    return values, stderr, {**details, "tolerance": tau}
