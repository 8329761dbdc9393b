"""The online one-pass prefix path of logistic regression: chord steps along each permutation.

:func:`online_prefix_utilities` is what
:meth:`LogisticRegressionUtility.evaluate_prefixes` computes with
``prefix_path="online"``: as each point joins the prefix, a few damped
quasi-Newton (chord) steps from the previous prefix's parameters, with exact
refits at geometrically spaced sizes and whenever the prefix's classes
change. An approximation of refitting every prefix (:mod:`shapley_research.utilities.learners`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._line_search import _armijo
from ._softmax import _effective_C, _point_terms, _SoftmaxChunk

__all__ = ["online_prefix_utilities"]


class _OnlinePath:
    """The state of ``b`` permutations walked together: parameters, objective, the last refit's inverse Hessian."""

    def __init__(self, learner: Any, b: int, n: int) -> None:  # learner: the LogisticRegressionUtility
        K, q = learner.targets.n_classes, learner.design.q
        self.learner, self.data = learner, learner._softmax_data
        self.full = learner._use_newton()
        self.theta = np.zeros((b, K, q))
        self.f, self.g = np.zeros(b), np.zeros((b, K, q))
        # inverse Hessian at the last refit: full (b, Kq, Kq), or its class blocks (b, K, q, q)
        self.inverse = np.zeros((b, K * q, K * q)) if self.full else np.zeros((b, K, q, q))
        self.present = np.zeros((b, K), dtype=bool)
        self.members = np.zeros((b, n))
        self.refit_size = np.zeros(b)
        self.fitted = np.zeros(b, dtype=bool)

    def chunk(self, rows: np.ndarray) -> _SoftmaxChunk:
        return _SoftmaxChunk(self.data, self.members[rows], self.present[rows],
                             _effective_C(self.learner.C, self.present[rows]))

    def add_point(self, rows: np.ndarray, x: np.ndarray, label: np.ndarray) -> None:
        """The joining point's loss and gradient at the current parameters, added to ``f`` and ``g``."""
        loss, grad = _point_terms(x, label, self.theta[rows], self.present[rows],
                                  _effective_C(self.learner.C, self.present[rows]))
        self.f[rows] += loss
        self.g[rows] += grad

    def chord_steps(self, step: np.ndarray, size: int) -> None:
        """Up to ``prefix_steps`` damped steps with the last refit's Hessian, rescaled to the prefix size."""
        learner, theta, f, g = self.learner, self.theta, self.f, self.g
        K, q = theta.shape[1:]
        for _ in range(learner.prefix_steps):
            step = step[~self.chunk(step).converged(g[step], learner.prefix_tol)]
            if step.size == 0:
                break
            chunk = self.chunk(step)
            scale = (self.refit_size[step] / size)[:, None, None]
            if self.full:
                delta = np.einsum("bij,bj->bi", self.inverse[step], g[step].reshape(step.size, K * q))
                delta = delta.reshape(step.size, K, q)
            else:  # (2 D)^{-1}: twice the class blocks D dominate the Hessian, so this step contracts
                delta = 0.5 * np.einsum("bkij,bkj->bki", self.inverse[step], g[step])
            # Armijo backtracking: a stale Hessian can overshoot on small, nearly separable prefixes
            th, f_new, g_new, accepted = _armijo(chunk, theta[step], f[step], g[step], -scale * delta,
                                                 with_grad=True)
            theta[step], f[step], g[step] = th, f_new, g_new
            step = step[accepted]

    def refit(self, rows: np.ndarray, size: int) -> None:
        """Exact warm-started fits of prefixes ``rows``, their objective and inverse Hessian at the solution."""
        learner = self.learner
        masks = self.members[rows] > 0
        counts = learner.targets.class_counts(masks)
        th = learner._fit_thetas(masks, counts, theta0=self.theta[rows] * self.present[rows][:, :, None])
        chunk = _SoftmaxChunk.from_masks(self.data, masks, counts, learner.C)
        self.theta[rows] = th
        self.f[rows], self.g[rows] = chunk.objective(th)
        self.inverse[rows] = chunk.exact_hessian_inverse(th) if self.full else chunk.block_hessian_inverse(th)
        self.fitted[rows] = True
        self.refit_size[rows] = size


def online_prefix_utilities(learner: Any, perms: np.ndarray, degenerate: np.ndarray) -> np.ndarray:
    """Utilities (b, n) of every prefix of ``perms``, each scored as its model is updated.

    What :meth:`LogisticRegressionUtility.evaluate_prefixes` computes with
    ``prefix_path="online"`` (see there); degenerate prefixes are left at 0.

    Keeps the objective ``f`` and gradient ``g`` of the current prefix at the
    current parameters: a joining point adds its own loss and gradient
    (``O(K q)``), and each chord step costs one pass (the trial point's
    ``f`` for the Armijo test and its ``g`` for the next step come together).
    """
    b, n = perms.shape
    X, labels = learner.design.train, learner.targets.y_train_index
    path = _OnlinePath(learner, b, n)
    present, fitted = path.present, path.fitted
    values = np.zeros((b, n))
    rows_b = np.arange(b)
    grid = np.zeros(n + 1, dtype=bool)
    sizes = learner._refit_sizes(n)
    grid[sizes[sizes <= n]] = True
    for k in range(n):
        j = perms[:, k]
        new_class = ~present[rows_b, labels[j]]
        present[rows_b, labels[j]] = True
        path.members[rows_b, j] = 1.0
        size = k + 1
        live = ~degenerate[:, k]
        refit = live & (new_class | ~fitted | grid[size])
        step = np.flatnonzero(live & ~refit)
        if step.size:
            path.add_point(step, X[j[step]], labels[j[step]])
        path.chord_steps(step, size)
        if refit.any():
            path.refit(np.flatnonzero(refit), size)
        if live.any():  # degenerate prefixes are filled in by the caller
            values[live, k] = learner._score_thetas(path.theta[live], present[live])
    return values
