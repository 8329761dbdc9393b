r"""Leverage SHAP: KernelSHAP's regression on coalitions drawn by their leverage scores (Musco & Witter 2025).

KernelSHAP (:mod:`~shapley_research.estimators._kernel_regression`) solves the
constrained least-squares problem

.. math::

    \phi = \arg\min_{\beta} \sum_{0 < |S| < N} w(S)\,\bigl(U(S) - U(\emptyset) - z_S^\top \beta\bigr)^2
    \quad\text{s.t.}\quad \mathbf 1^\top \beta = U(D) - U(\emptyset),
    \qquad w(S) = \frac{N - 1}{\binom{N}{|S|}\,|S|\,(N - |S|)},

from coalitions drawn with probability :math:`\propto w(S)`. Musco & Witter
("Provably Accurate Shapley Value Estimation via Leverage Score Sampling",
ICLR 2025) write the problem without its constraint (projecting the design
onto the complement of :math:`\mathbf 1`) and show that the rows of the
weighted, projected design matrix have leverage scores
:math:`\ell_S \propto 1/\binom{N}{|S|}`: a function of the size alone, equal
in total over each size. Sampling by leverage scores, the classic tool of
randomised regression, is therefore: a size ``s`` uniform on ``1 .. N-1``,
then a uniform coalition of that size. Each sampled coalition enters the sums
with the importance ratio of the kernel's size probability :math:`p_s \propto
1/(s(N-s))` to the sampling one :math:`q_s = 1/(N-1)`,

.. math::

    r_s = \frac{p_s}{q_s} \propto \frac{1}{s\,(N - s)}, \qquad
    \hat A = \frac1n \sum_k r_{s_k} z_k z_k^\top, \qquad
    \hat b = \frac1n \sum_k r_{s_k} z_k\,(U(z_k) - U(\emptyset)),

each an unbiased estimate of KernelSHAP's :math:`A = \mathbb E_p[z z^\top]` and
:math:`b` (normalised so that :math:`\mathbb E_q[r] = 1`). The values are the
same constrained solve of these sums, a ratio of sample means: biased by
:math:`O(1/n)`, consistent, efficient in every run. Their theorem: with
:math:`O(N \log(N/\delta) + N / (\epsilon\delta))` samples the fitted
objective is within :math:`1 + \epsilon` of the optimum with probability
:math:`1 - \delta`; KernelSHAP has no such bound. Against the kernel's sizes
the uniform ones put more samples in the middle sizes (:math:`q_s / p_s
\propto s(N-s)`), fewer at the edges.

*Paired sampling* (the paper's, and Covert & Lee's): each drawn coalition is
evaluated with its complement, whose ratio is the same (:math:`r_s =
r_{N-s}`).

*Departure from the paper.* Its Algorithm 1 samples *without replacement*:
each coalition of size ``s`` is kept independently with probability
:math:`\min(1, c\,\ell_S)` (a binomial count per size, then that many
distinct coalitions), the constant ``c`` set by bisection so that the expected
count is the budget, and the kept rows are weighted by the inverse of that
probability; sizes with few coalitions are then enumerated whole. This module
samples *with replacement* (i.i.d. units), which runs on the shared sampling
driver, so that ``n_jobs``, checkpoints, precision targets, merging and a hard
evaluation budget all work as for every other sampling estimator; the
binomial scheme needs the whole budget up front and its count is random.
Measured with a dense prototype (paired, five seeds): the two are
alike (within the seeds' spread) on the 100- and 200-player games of
``benchmarks/kernel_shapley.py`` at 10-100 N evaluations, where collisions are
rare; on 12-player games at 16-64 N, where the budget enumerates the smallest
and largest sizes, sampling without replacement had 1.3-3.6x less error.

*Cost and standard errors* as in :func:`~shapley_research.kernel_shapley`,
whose machinery this estimator shares (:class:`~._kernel_regression.SizeDesign`):
``O(N^2)`` per coalition (one float64 product per chunk: the ratios are not
counts) and memory, at most :data:`~._kernel_regression.MAX_PLAYERS` players,
standard errors from the spread of the regressions of groups of ``10 N`` units.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._kernel_regression import RegressionFinalizer, RegressionSpec, SizeDesign, regression_run
from ._kernel_shapley import shapley_kernel_sizes
from ._permutation import documents_sampling_options
from ._sampling._driver import drive
from ..games import GameLike
from ..result import ValuationResult, register_finalizer

__all__ = ["leverage_shapley", "leverage_sizes"]

register_finalizer("leverage_shapley")(RegressionFinalizer)  # the same solve of the same sums


def leverage_sizes(n_players: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""The leverage-score size distribution and its importance ratios to the Shapley kernel's.

    Returns ``(probabilities, ratios)``: ``probabilities[s - 1] = 1 / (N - 1)``
    for ``s = 1 .. N-1`` (every size equally likely: each coalition's leverage
    score is :math:`\propto 1/\binom{N}{s}`), and ``ratios[s - 1]``
    :math:`= p_s / q_s = (N - 1)\,p_s`, with :math:`p_s \propto 1/(s(N-s))` the
    kernel's size probability (:func:`~._kernel_shapley.shapley_kernel_sizes`);
    the ratios average 1 under the uniform sizes. ``N >= 2``.
    """
    kernel, _ = shapley_kernel_sizes(n_players)
    uniform = np.full(n_players - 1, 1.0 / (n_players - 1))
    return uniform, kernel / uniform


@dataclass(frozen=True, kw_only=True)
class LeverageSpec(RegressionSpec):
    """:func:`leverage_shapley` for the driver: :class:`RegressionSpec` with the leverage sizes and ratios."""

    def design(self) -> SizeDesign:
        """Sizes uniform on ``1 .. N-1``, each coalition weighted by :math:`r_s \\propto 1/(s(N-s))`."""
        probabilities, ratios = leverage_sizes(self.n_players)
        return SizeDesign(np.cumsum(probabilities), ratios)

    def options(self) -> dict:
        return {"paired": self.paired, "sampling": "with_replacement"}


@documents_sampling_options
def leverage_shapley(game: GameLike, budget: int | None, seed: int | np.random.SeedSequence | None = None, *,
                     paired: bool = True, batch_size: int | None = None, n_jobs: int | None = None,
                     progress: bool | None = None, empty_utility: float | None = None,
                     target_stderr: float | None = None, target_rank_correlation: float | None = None,
                     checkpoint: str | os.PathLike[str] | None = None,
                     checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""Shapley values by Leverage SHAP (Musco & Witter, ICLR 2025), sampled with replacement.

    KernelSHAP's constrained weighted regression
    (:func:`~shapley_research.kernel_shapley`), but with the coalitions drawn
    by their leverage scores: a size ``s`` uniform on ``1 .. N-1``, then a
    uniform coalition of that size, by default each with its complement. Each
    enters both sums with the importance ratio
    :math:`r_s \propto 1/(s(N-s))` of the Shapley kernel's size probability to
    the uniform one,

    .. math::

        \hat A = \frac1n \sum_k r_{s_k} z_k z_k^\top, \qquad
        \hat b = \frac1n \sum_k r_{s_k} z_k (U(z_k) - U(\emptyset)), \qquad
        \hat\phi = \hat A^{-1}\Bigl(\hat b - \mathbf 1\,
            \frac{\mathbf 1^\top \hat A^{-1}\hat b - (U(D) - U(\emptyset))}{\mathbf 1^\top \hat A^{-1}\mathbf 1}\Bigr).

    Biased (a ratio of sample means) but consistent; efficiency holds exactly
    in every run. The paper's Algorithm 1 samples without replacement (a
    binomial count of distinct coalitions per size); this estimator samples
    with replacement, on the shared driver (see
    :mod:`shapley_research.estimators._leverage` for why and what it costs).
    Cost, limits, standard errors and singular :math:`\hat A` as in
    :func:`~shapley_research.kernel_shapley`.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)``.
    budget : int or None
        Utility evaluations allowed: ``U(empty)`` and ``U(D)`` once each,
        then 2 per pair (``paired``) or 1 per coalition. ``None`` (no cap)
        only with a ``target_stderr`` or ``target_rank_correlation``.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the random streams; ``None`` draws one (kept on the result).
    paired : bool, default True
        Evaluate each drawn coalition with its complement; ``False``: one
        coalition per sample.
    batch_size, n_jobs, progress
        As in :func:`~shapley_research.kernel_shapley` (groups of ``10 N``
        units within a batch give the standard errors).
    empty_utility : float, optional
        Use this value as ``U(empty)`` instead of evaluating it.
{sampling}
    Returns
    -------
    ValuationResult
        ``method="leverage_shapley"``; ``n_samples`` counts pairs (or
        coalitions); ``info["n_groups"]``, ``info["rank_deficient"]`` as in
        :func:`~shapley_research.kernel_shapley`;
        ``info["options"]["sampling"]`` is ``"with_replacement"``. Runs with
        different seeds combine with :func:`~shapley_research.merge_results`.

    Raises
    ------
    ValueError
        Above :data:`~shapley_research.estimators._kernel_regression.MAX_PLAYERS`
        players (before any evaluation).
    """
    spec, options = regression_run(LeverageSpec, "leverage_shapley", "Leverage SHAP", game, budget, paired,
                                   batch_size=batch_size, n_jobs=n_jobs, progress=progress,
                                   empty_utility=empty_utility, target_stderr=target_stderr,
                                   target_rank_correlation=target_rank_correlation, checkpoint=checkpoint,
                                   checkpoint_interval=checkpoint_interval)
    return drive(spec, game, budget, seed, options)
