"""The online one-pass prefix path of logistic regression: chord steps along each permutation.

:func:`online_prefix_utilities` is what
:meth:`LogisticRegressionUtility.evaluate_prefixes` computes with
``prefix_path="online"``: as each point joins the prefix, a few damped
quasi-Newton (chord) steps from the previous prefix's parameters, with exact
refits at geometrically spaced sizes and whenever the prefix's classes
change. An approximation of refitting every prefix (:mod:`shapley_research.utilities.learners`).
"""

from __future__ import annotations

import numpy as np

from ._line_search import _armijo
from ._softmax import NEG_LOGIT, _SoftmaxChunk

__all__ = ["online_prefix_utilities"]


def online_prefix_utilities(learner, perms: np.ndarray, degenerate: np.ndarray):
    """Utilities (b, n) of every prefix of ``perms``, each scored as its model is updated.

    What :meth:`LogisticRegressionUtility.evaluate_prefixes` computes with
    ``prefix_path="online"`` (see there); degenerate prefixes are left at 0.

    Keeps the objective ``f`` and gradient ``g`` of the current prefix at the
    current parameters: a joining point adds its own loss and gradient
    (``O(K q)``), and each chord step costs one pass (the trial point's
    ``f`` for the Armijo test and its ``g`` for the next step come together).
    """
    b, n = perms.shape
    K, q = learner.targets.n_classes, learner.design.q
    X, labels = learner.design.train, learner.targets.y_train_index
    data = learner._softmax_data
    full = learner._use_newton()
    values = np.zeros((b, n))
    theta = np.zeros((b, K, q))
    f, g = np.zeros(b), np.zeros((b, K, q))
    # inverse Hessian at the last refit: full (b, Kq, Kq), or its class blocks (b, K, q, q)
    inverse = np.zeros((b, K * q, K * q)) if full else np.zeros((b, K, q, q))
    present = np.zeros((b, K), dtype=bool)
    members = np.zeros((b, n))
    refit_size = np.zeros(b)
    fitted = np.zeros(b, dtype=bool)
    rows_b = np.arange(b)
    grid = np.zeros(n + 1, dtype=bool)
    sizes = learner._refit_sizes(n)
    grid[sizes[sizes <= n]] = True
    for k in range(n):
        j = perms[:, k]
        new_class = ~present[rows_b, labels[j]]
        present[rows_b, labels[j]] = True
        members[rows_b, j] = 1.0
        size = k + 1
        live = ~degenerate[:, k]
        refit = live & (new_class | ~fitted | grid[size])
        step = np.flatnonzero(live & ~refit)
        if step.size:  # the joining point's loss and gradient at the current parameters
            x, label = X[j[step]], labels[j[step]]
            C = np.where(present[step].sum(axis=1) == 2, 0.5 * learner.C, learner.C)
            z = np.einsum("bkq,bq->bk", theta[step], x) + np.where(present[step], 0.0, NEG_LOGIT)
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            total = p.sum(axis=1)
            f[step] += C * (np.log(total) - z[np.arange(step.size), label])
            p /= total[:, None]
            p[np.arange(step.size), label] -= 1.0
            g[step] += C[:, None, None] * p[:, :, None] * x[:, None, :]
        for _ in range(learner.prefix_steps):
            chunk = _SoftmaxChunk(data, members[step], present[step],
                                  np.where(present[step].sum(axis=1) == 2, 0.5 * learner.C, learner.C))
            step = step[~chunk.converged(g[step], learner.prefix_tol)]
            if step.size == 0:
                break
            chunk = _SoftmaxChunk(data, members[step], present[step],
                                  np.where(present[step].sum(axis=1) == 2, 0.5 * learner.C, learner.C))
            scale = (refit_size[step] / size)[:, None, None]
            if full:
                delta = np.einsum("bij,bj->bi", inverse[step], g[step].reshape(step.size, K * q))
                delta = delta.reshape(step.size, K, q)
            else:  # (2 D)^{-1}: twice the class blocks D dominate the Hessian, so this step contracts
                delta = 0.5 * np.einsum("bkij,bkj->bki", inverse[step], g[step])
            # Armijo backtracking: a stale Hessian can overshoot on small, nearly separable prefixes
            th, f_new, g_new, accepted = _armijo(chunk, theta[step], f[step], g[step], -scale * delta,
                                                 with_grad=True)
            theta[step], f[step], g[step] = th, f_new, g_new
            step = step[accepted]
        if refit.any():
            rr = np.flatnonzero(refit)
            masks = members[rr] > 0
            counts = learner.targets.class_counts(masks)
            th = learner._fit_thetas(masks, counts, theta0=theta[rr] * present[rr][:, :, None])
            chunk = _SoftmaxChunk.from_masks(data, masks, counts, learner.C)
            theta[rr] = th
            f[rr], g[rr] = chunk.objective(th)
            inverse[rr] = chunk.exact_hessian_inverse(th) if full else chunk.block_hessian_inverse(th)
            fitted[rr] = True
            refit_size[rr] = size
        if live.any():  # degenerate prefixes are filled in by the caller
            values[live, k] = learner._score_thetas(theta[live], present[live])
    return values
