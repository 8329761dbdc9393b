r"""LAVA: the calibrated gradient of a class-wise optimal-transport distance (Just et al., ICLR 2023).

Just, Kang, Wang, Zeng, Ko, Jin and Jia, "LAVA: Data Valuation without
Pre-Specified Learning Algorithms" (ICLR 2023). No model is trained: the
training set is compared with the validation (test) set by the optimal
transport dataset distance of Alvarez-Melis and Fusi (2020), whose ground
cost between labelled points adds a feature distance and a label distance,

.. math::

    C\bigl((x, y), (x', y')\bigr) = \lambda_x \tfrac12\|x - x'\|^2 + \lambda_y \tfrac12 W(y, y'),

with :math:`W(y, y')` the optimal-transport cost between the training points
of class :math:`y` and the test points of class :math:`y'` (ground cost
:math:`\tfrac12\|x - x'\|^2`). The dual potential :math:`f_i` of training
point ``i`` in the transport between the two sets (uniform weights) is the
derivative of the distance with respect to the point's mass; the calibrated
gradient, :math:`f_i - \frac{1}{N-1}\sum_{j \ne i} f_j`, is how the distance
moves when mass shifts from the other points to ``i``. A point whose label
disagrees with its neighbourhood lies far from the test set's
class-conditional distribution and raises the distance: it gets a large
gradient, and its value, the gradient's negative, is low.

The class to class transports are solved exactly by POT (``ot.emd2``), the
maintained optimal transport library. The outer one is solved by default as
OpenDataVal's LAVA solves it through geomloss (in the otdd dataset distance
LAVA is built on): an annealed
Sinkhorn loop, one update per temperature down to the regularisation 0.1
(:func:`annealed_potentials`, a few log-sum-exp passes written here in
numpy), whose potentials rank the points as theirs do; POT's converged
Sinkhorn (``ot.bregman.sinkhorn_epsilon_scaling``) and exact simplex
(``ot.emd``) are options. The scaling of the cost (halved squared
distances, the label term halved again) and the calibration follow
OpenDataVal 1.3's ``LavaEvaluator``.
"""

from __future__ import annotations

import time
import warnings
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import (check_choice, check_class_labels, check_feature_pair, check_float, check_int,
                           check_label_kinds, check_target_vector)
from ..result import ValuationResult

__all__ = ["lava", "label_distances"]

SOLVERS = ("sinkhorn", "emd", "annealed")
#: Ratio of successive blur radii in geomloss's epsilon scaling (its default, as OpenDataVal runs it).
ANNEALING_SCALING = 0.5


def _import_ot():  # type: ignore[no-untyped-def]
    try:
        import ot
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise ImportError("lava needs POT, the optimal transport library: pip install pot") from exc
    return ot


def label_distances(X_train: ArrayLike, train_index: ArrayLike, X_test: ArrayLike,
                    test_index: ArrayLike) -> NDArray[np.float64]:
    r"""``W[c, c']``: the exact OT cost between training class ``c`` and test class ``c'``.

    Uniform weights on each class's points, ground cost
    :math:`\tfrac12\|x - x'\|^2` (``ot.emd2``). ``train_index`` and
    ``test_index`` are class indices ``0..K-1`` and ``0..K'-1``, every one present.
    """
    X_train, X_test = check_feature_pair(X_train, X_test)
    train_index = _check_class_index(train_index, "train_index", X_train.shape[0])
    test_index = _check_class_index(test_index, "test_index", X_test.shape[0])
    ot = _import_ot()
    n_train, n_test = int(train_index.max()) + 1, int(test_index.max()) + 1
    W = np.empty((n_train, n_test))
    for c in range(n_train):
        source = X_train[train_index == c]
        for d in range(n_test):
            target = X_test[test_index == d]
            cost = ot.dist(source, target) / 2.0  # squared Euclidean
            W[c, d] = float(ot.emd2(np.full(len(source), 1.0 / len(source)),
                                    np.full(len(target), 1.0 / len(target)), cost, numItermax=10_000_000))
    return W


def _check_class_index(index: ArrayLike, name: str, n_rows: int) -> NDArray[np.intp]:
    """One class index ``0..K-1`` per row, every class present (an empty class has no distance to another)."""
    index = np.asarray(index)
    if index.ndim != 1 or index.shape[0] != n_rows or index.dtype.kind not in "iu":
        raise ValueError(f"{name} must be a 1-D integer array with one class index per row ({n_rows}), got "
                         f"shape {index.shape} and dtype {index.dtype}.")
    if index.min() < 0 or np.unique(index).size != index.max() + 1:
        raise ValueError(f"{name} must hold the class indices 0..K-1, each at least once; got "
                         f"{np.unique(index)[:10].tolist()}.")
    return index.astype(np.intp)


def _check_data(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike
                ) -> tuple[NDArray[np.float64], np.ndarray, NDArray[np.float64], np.ndarray]:
    X_tr, X_te = check_feature_pair(X_train, X_test)
    if X_tr.shape[0] < 2:
        raise ValueError(f"X_train must hold at least 2 points for the calibrated gradient, got {X_tr.shape[0]}.")
    y_tr = check_class_labels(check_target_vector(y_train, "y_train", X_tr.shape[0], "X_train"), "y_train")
    y_te = check_class_labels(check_target_vector(y_test, "y_test", X_te.shape[0], "X_test"), "y_test")
    check_label_kinds(y_tr, y_te)
    return X_tr, y_tr, X_te, y_te


def annealing_schedule(diameter: float, reg: float, scaling: float = ANNEALING_SCALING) -> list[float]:
    """geomloss's temperatures for ``p = 2``: ``diameter^2``, then down by ``scaling^2`` a step, then ``reg``."""
    steps = np.arange(2.0 * np.log(diameter), np.log(reg), 2.0 * np.log(scaling))
    return [diameter**2] + [float(np.exp(e)) for e in steps] + [reg]


def _softmin(eps: float, cost: NDArray[np.float64], h: NDArray[np.float64]) -> NDArray[np.float64]:
    r"""The soft c-transform :math:`-\varepsilon\log\sum_j \exp(h_j - C_{ij}/\varepsilon)` over rows of ``cost``."""
    from scipy.special import logsumexp

    return -eps * logsumexp(h[None, :] - cost / eps, axis=1)


def augmented_diameter(X_train: NDArray[np.float64], train_index: NDArray[np.intp], X_test: NDArray[np.float64],
                       test_index: NDArray[np.intp]) -> float:
    """geomloss's starting scale: the diagonal of both clouds' bounding box, labels appended as a coordinate.

    OpenDataVal appends each point's class index to its features (the test
    set's indices after the training set's ``K``), and geomloss measures the
    diameter of those augmented points.
    """
    first = np.column_stack([X_train, train_index])
    second = np.column_stack([X_test, test_index + int(train_index.max()) + 1])
    lowest = np.minimum(first.min(axis=0), second.min(axis=0))
    highest = np.maximum(first.max(axis=0), second.max(axis=0))
    return float(np.linalg.norm(highest - lowest))


def annealed_potentials(a: NDArray[np.float64], b: NDArray[np.float64], cost: NDArray[np.float64],
                        schedule: list[float]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""The dual potentials ``(f, g)`` of geomloss's annealed Sinkhorn loop (``debias=False``), in numpy.

    One symmetric, averaged Sinkhorn update per temperature of ``schedule``
    (:func:`annealing_schedule`), then one last full update at the final
    temperature: what ``geomloss.SamplesLoss("sinkhorn", p=2, potentials=True)``
    returns for OpenDataVal's LAVA. The loop stops long before Sinkhorn
    converges at the final temperature, so the potentials are those of a
    smoothed transport, not of the entropic optimum.
    """
    a_log, b_log = np.log(a), np.log(b)
    cost_t = np.ascontiguousarray(cost.T)
    eps = schedule[0]
    f, g = _softmin(eps, cost, b_log), _softmin(eps, cost_t, a_log)
    for eps in schedule:
        f_new, g_new = _softmin(eps, cost, b_log + g / eps), _softmin(eps, cost_t, a_log + f / eps)
        f, g = 0.5 * (f + f_new), 0.5 * (g + g_new)
    return _softmin(eps, cost, b_log + g / eps), _softmin(eps, cost_t, a_log + f / eps)


def _potentials(a: NDArray[np.float64], b: NDArray[np.float64], cost: NDArray[np.float64], solver: str,
                reg: float, max_iter: int, tol: float, diameter: float) -> tuple[NDArray[np.float64], float]:
    """The training side's dual potential of the transport, and the transport cost.

    ``"annealed"``: :func:`annealed_potentials` on :func:`annealing_schedule`
    from ``diameter`` down to ``reg``, the cost being the dual objective at
    the potentials. ``"emd"``: the c-transform :math:`f_i = \\min_j (C_{ij} - g_j)` of the test
    side's exact potential :math:`g` (an optimal potential too, and one that
    gives identical points identical values, which the simplex's own need
    not). ``"sinkhorn"``: POT's epsilon scaling (the regularisation lowered
    step by step to ``reg``, Sinkhorn converged at each step), whose
    inner solves warn while epsilon is still large; a plan whose marginals
    miss by more than ``tol`` at the end is reported by a ``RuntimeWarning``.
    """
    if solver == "annealed":
        f, g = annealed_potentials(a, b, cost, annealing_schedule(diameter, reg))
        return f, float(a @ f + b @ g)
    ot = _import_ot()
    if solver == "emd":
        plan, log = ot.emd(a, b, cost, numItermax=max(max_iter, 100_000), log=True)
        g = np.asarray(log["v"], dtype=float)
        return (cost - g[None, :]).min(axis=1), float(log["cost"])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sinkhorn did not converge")
        warnings.filterwarnings("ignore", category=RuntimeWarning, module="ot")
        plan, log = ot.bregman.sinkhorn_epsilon_scaling(a, b, cost, reg, numItermax=max_iter, stopThr=tol,
                                                        log=True)
    error = max(float(np.abs(plan.sum(axis=1) - a).max()), float(np.abs(plan.sum(axis=0) - b).max()))
    if not error <= tol:
        warnings.warn(f"lava: Sinkhorn stopped with a marginal error of {error:.3g} > tol={tol:g}; raise "
                      "max_iter or reg, or pass solver='emd'.", RuntimeWarning, stacklevel=3)
    return np.asarray(log["alpha"], dtype=float).reshape(-1), float(np.sum(plan * cost))


def lava(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike, *,
         solver: Literal["annealed", "sinkhorn", "emd"] = "annealed", reg: float = 0.1, lam_x: float = 1.0,
         lam_y: float = 1.0, max_iter: int = 1000, tol: float = 1e-6) -> ValuationResult:
    r"""LAVA values (Just et al., ICLR 2023): minus the calibrated gradient of the class-wise OT distance.

    The optimal transport between the training set and the test set (uniform
    weights) under the ground cost
    :math:`\lambda_x \tfrac12\|x - x'\|^2 + \lambda_y \tfrac12 W(y, y')`
    (:func:`label_distances` gives :math:`W`) is solved by POT; with
    :math:`f` the training side's dual potential, point ``i`` gets

    .. math::

        v_i = -\Bigl(f_i \bigl(1 + \tfrac{1}{N-1}\bigr) - \tfrac{1}{N-1}\sum_j f_j\Bigr)
            = -\Bigl(f_i - \tfrac{1}{N-1}\sum_{j \ne i} f_j\Bigr),

    OpenDataVal's calibration (a constant added to :math:`f`, which the dual
    leaves free, cancels). Low values flag points that pull the training set
    away from the test set, such as flipped labels. Deterministic: no seed.

    Parameters
    ----------
    X_train, y_train : arrays of shape (N, d) and (N,)
        The points valued (finite features; labels of any sortable kind).
    X_test, y_test : arrays of shape (m, d) and (m,)
        The validation set they are compared with.
    solver : {"annealed", "sinkhorn", "emd"}, default "annealed"
        The outer transport. ``"annealed"``: the loop OpenDataVal's LAVA runs
        through geomloss (:func:`annealed_potentials`): one averaged
        Sinkhorn update per temperature, from the squared diameter of the
        point clouds down to ``reg`` (blur radii halved a step), and one last
        update; the potentials of a smoothed transport, not converged at
        ``reg``. On OpenDataVal's noisy-label task (300 points, 15% flipped,
        seeds 0-2) it finds the flipped labels as OpenDataVal does (AUROC
        0.712 / 0.756 on breast cancer / digits against its 0.714 / 0.756;
        Spearman 0.997 / 0.999 with its values on seed 0), where the converged
        solvers read 0.736 / 0.591 (``"sinkhorn"``) and 0.460 / 0.593
        (``"emd"``): the exact potentials are not unique, and their c-transform
        is a poor ranking. ``"sinkhorn"``: POT's epsilon scaling, converged at
        ``reg``. ``"emd"``: the exact network simplex, its training potential
        the c-transform of its test potential. Each way identical points get
        identical values.
    reg : float, default 0.1
        Entropic regularisation at the end of ``"annealed"`` and of
        ``"sinkhorn"``, in the cost's units (OpenDataVal's ``entreg``), > 0.
    lam_x, lam_y : float, default 1.0
        Weights of the feature and label terms of the cost, >= 0, not both 0.
    max_iter : int, default 1000
        Epsilon-scaling steps of ``"sinkhorn"`` (at least 100000 simplex
        iterations for ``"emd"``; ``"annealed"`` runs its fixed schedule).
    tol : float, default 1e-6
        Stopping threshold of ``"sinkhorn"`` on the marginals' error (each
        mass is ``1/N`` or ``1/m``); a ``RuntimeWarning`` when it is not reached.

    Returns
    -------
    ValuationResult
        ``method="lava"``, ``n_evaluations = 0`` (no model is trained), no
        seed; ``info`` holds the transport cost (``distance``), the
        ``label_distances`` matrix and the ``solver``.
    """
    start = time.perf_counter()
    X_tr, y_tr, X_te, y_te = _check_data(X_train, y_train, X_test, y_test)
    check_choice(solver, "solver", SOLVERS)
    reg = check_float(reg, "reg", minimum=0.0, strict=True)
    lam_x = check_float(lam_x, "lam_x", minimum=0.0)
    lam_y = check_float(lam_y, "lam_y", minimum=0.0)
    if lam_x == 0.0 and lam_y == 0.0:
        raise ValueError("lam_x and lam_y must not both be 0: the cost would be 0 everywhere.")
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_float(tol, "tol", minimum=0.0, strict=True)
    ot = _import_ot()

    train_classes, train_index = np.unique(y_tr, return_inverse=True)
    test_classes, test_index = np.unique(y_te, return_inverse=True)
    W = label_distances(X_tr, train_index, X_te, test_index) if lam_y > 0 else np.zeros(
        (train_classes.size, test_classes.size))
    cost = lam_x * ot.dist(X_tr, X_te) / 2.0 + lam_y * W[train_index][:, test_index] / 2.0
    a, b = np.full(X_tr.shape[0], 1.0 / X_tr.shape[0]), np.full(X_te.shape[0], 1.0 / X_te.shape[0])
    f, distance = _potentials(a, b, cost, solver, reg, max_iter, tol,
                              augmented_diameter(X_tr, train_index, X_te, test_index))
    n = X_tr.shape[0]
    gradient = f * (1.0 + 1.0 / (n - 1)) - f.sum() / (n - 1)
    info = {"distance": distance, "label_distances": W, "solver": solver, "reg": reg,
            "train_classes": train_classes.tolist(), "test_classes": test_classes.tolist()}
    return ValuationResult(values=-gradient, n_evaluations=0, method="lava", wall_time=time.perf_counter() - start,
                           info=info)
