r"""Predicted seconds per coalition of a batched learner and of one scikit-learn fit: ``fast="auto"``'s route.

:func:`route_by_cost` decides whether :class:`~shapley_research.ModelUtility`
with ``fast="auto"`` hands a supported model to its batched learner: only
when the batched learner is predicted to be at least :data:`SAFETY_MARGIN`
times faster per coalition than one clone-fit-score of the estimator. The
prediction depends on the shapes and the model's parameters only (never on a
timing taken at run time), so a route is the same in every run of the same
configuration.

The model (seconds per coalition, one BLAS thread; ``N`` training points,
``q = d + 1`` columns with the intercept, ``K`` classes, a coalition of the
average size ``k = N/2`` of uniform coalition sizes):

* one scikit-learn fit of ``LogisticRegression``:
  :math:`a_0 + T_{sk}\,(a_1 + a_2\,k\,K'\,q)`, ``K' = 1`` for two classes
  (scikit-learn's binary model), ``K`` otherwise; ``a_0`` the clone and the
  scoring, ``a_1`` the per-iteration overhead of scipy's L-BFGS and the loss;
* the batched learner, which works on all ``N`` rows with mask weights:
  L-BFGS :math:`T_{lb}\,(b_0 + b_1 N K q + b_2 (Kq)^2)` (the second term is
  the preconditioner), Newton :math:`T_{nt}\,(c_0 + c_1 K'^2 N q^2 + c_2 (K'q)^3)`
  (the Hessian product and its factorisation);
* ``Ridge``: one fit :math:`r_0 + r_1\,k\,q\,\min(k, q)`; the batched
  learner :math:`e_0 + e_1 N q^2/2 + e_2 q^3` (packed Gram product, solve).

Iterations: Newton :math:`T_{nt} = 5` (measured means 3.1-5.0 from the
full-data warm start); against it scikit-learn is given only
:math:`T_{sk} = \min(\text{max\_iter}, 8)`, the fewest its lbfgs took on the
problems measured (6-75). When the learner runs L-BFGS both sides iterate
about as often, so both get a typical count, :math:`T_{sk} = \min(\text{max\_iter}, 40)`
and :math:`T_{lb} = 1.25 \times 40`: the learner's tolerance is tighter, and
1.25 is the largest ratio of learner to scikit-learn iterations measured
(digits, 10 classes, raw pixels: 85 against 67; digits standardised 22
against 25, MNIST after PCA 24 against 38). Other scikit-learn solvers are
costed as lbfgs; measured, newton-cg and newton-cholesky were as slow or
slower (newton-cholesky 5-10x slower with 10 classes), sag and saga are
slower still, so the error leans towards the per-subset path.

Constants (:data:`COSTS`) were fitted by non-negative least squares on
relative errors to timings on the 2-core development machine (numpy 2.4,
OpenBLAS, scikit-learn 1.9, one BLAS thread, shared with other work):
scikit-learn's lbfgs on synthetic Gaussian classes at 9 shapes
(N 100-2,000, d 4-100, K 2-10, coalitions of N/4, N/2 and N points, 4 fits
each, medians; predictions within 0.4-2.2x of the times, the noise of a
shared machine); the batched L-BFGS on 7 shapes and Newton on 8 (60-150
coalitions of uniform sizes each, time per coalition divided by the mean
iterations; within 0.7-1.3x); ridge on 6 shapes (N 100-2,000, d 10-400).
The margin absorbs that scatter. Measured on the cases it must get right
(time per coalition, one thread): iris (N=100, Newton) scikit-learn 25.7 ms
against 0.14 ms batched; breast cancer (N=300, binary Newton) 7.1 against
0.26 ms; digits (N=300, d=64, K=10, L-BFGS) 31 against 26 ms raw and 11.5
against 8.6 ms standardised, too close to call, so per subset; MNIST after
PCA (N=1,000, d=50, K=10) 36 against 11 ms (predicted 31 against 24 ms:
per subset, the cautious side).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._base import _CHUNK_BYTES

#: Batched must be predicted at least this many times faster than one fit per subset.
SAFETY_MARGIN = 1.5
#: Unknowns up to which the learner's ``solver="auto"`` runs Newton (its ``newton_max_params`` default).
NEWTON_MAX_PARAMS = 160

#: Calibrated constants (seconds), see the module docstring.
COSTS = {
    "sklearn_logistic": (1.7e-3, 3.5e-4, 1.5e-9),   # a0, a1 per iteration, a2 per k K' q per iteration
    "lbfgs": (6.2e-5, 4.4e-10, 7.4e-10),            # b0, b1 per N K q, b2 per (Kq)^2, per iteration
    "newton": (2.3e-5, 1.8e-10, 6.4e-11),           # c0, c1 per K'^2 N q^2, c2 per (K'q)^3, per iteration
    "sklearn_ridge": (2.8e-3, 5.5e-10),             # r0, r1 per k q min(k, q)
    "ridge": (7.7e-6, 2.2e-10, 1.2e-9),             # e0, e1 per N q^2 / 2, e2 per q^3
}
#: Iterations (module docstring): Newton, scikit-learn against Newton, both sides when the learner runs L-BFGS.
ITERATIONS = {"newton": 5, "sklearn_vs_newton": 8, "typical": 40, "lbfgs_ratio": 1.25}


@dataclass(frozen=True)
class RouteDecision:
    """Why ``fast`` sent a model where it did (``ModelUtility.route_``).

    Attributes
    ----------
    batched : bool
        True when the batched learner fits the coalitions.
    reason : str
        One sentence stating the rule or the two predictions behind the route.
    batched_seconds, per_subset_seconds : float or None
        Predicted seconds per coalition (None when no prediction was made).
    solver : str or None
        The batched solver the prediction is for (``"newton"``, ``"lbfgs"``, ``"ridge"``).
    """

    batched: bool
    reason: str
    batched_seconds: float | None = None
    per_subset_seconds: float | None = None
    solver: str | None = None

    def __str__(self) -> str:
        return self.reason


def _positive_int(value: object, name: str, minimum: int = 1) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}.")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}.")
    return int(value)


def batched_logistic_solver(n_samples: int, n_features: int, n_classes: int, fit_intercept: bool = True) -> str:
    """The solver ``LogisticRegressionUtility(solver="auto")`` picks: ``"newton"`` or ``"lbfgs"``.

    Newton when its system has at most :data:`NEWTON_MAX_PARAMS` unknowns
    (``q`` for two classes, ``K q`` otherwise) and the ``(N, q^2)`` outer
    products fit in twice the chunk memory, as ``LogisticRegressionUtility._use_newton``.
    """
    q = n_features + int(bool(fit_intercept))
    params = q if n_classes == 2 else n_classes * q
    small = n_samples * q**2 * 8 <= 2 * _CHUNK_BYTES
    return "newton" if small and params <= NEWTON_MAX_PARAMS else "lbfgs"


def logistic_costs(n_samples: int, n_features: int, n_classes: int, *, fit_intercept: bool = True,
                   max_iter: int = 100) -> tuple[float, float, str]:
    r"""Predicted seconds per coalition: ``(batched, one scikit-learn fit, batched solver)``.

    The formulas and constants are in the module docstring; ``max_iter`` caps
    scikit-learn's iterations (the learner runs to its own tolerance).
    """
    N = _positive_int(n_samples, "n_samples")
    d = _positive_int(n_features, "n_features")
    K = _positive_int(n_classes, "n_classes", minimum=2)
    max_iter = _positive_int(max_iter, "max_iter")
    q, k = d + int(bool(fit_intercept)), N / 2
    K_sk = 1 if K == 2 else K
    solver = batched_logistic_solver(N, d, K, fit_intercept)
    if solver == "newton":
        c0, c1, c2 = COSTS["newton"]
        batched = ITERATIONS["newton"] * (c0 + c1 * K_sk**2 * N * q**2 + c2 * (K_sk * q) ** 3)
        iterations = min(max_iter, ITERATIONS["sklearn_vs_newton"])
    else:
        b0, b1, b2 = COSTS["lbfgs"]
        batched = ITERATIONS["lbfgs_ratio"] * ITERATIONS["typical"] * (b0 + b1 * N * K * q + b2 * (K * q) ** 2)
        iterations = min(max_iter, ITERATIONS["typical"])
    a0, a1, a2 = COSTS["sklearn_logistic"]
    return batched, a0 + iterations * (a1 + a2 * k * K_sk * q), solver


def ridge_costs(n_samples: int, n_features: int, *, fit_intercept: bool = True) -> tuple[float, float, str]:
    """Predicted seconds per coalition of ``Ridge``: ``(batched, one scikit-learn fit, "ridge")``."""
    N = _positive_int(n_samples, "n_samples")
    q = _positive_int(n_features, "n_features") + int(bool(fit_intercept))
    k = N / 2
    e0, e1, e2 = COSTS["ridge"]
    r0, r1 = COSTS["sklearn_ridge"]
    return e0 + e1 * N * q**2 / 2 + e2 * q**3, r0 + r1 * k * q * min(k, q), "ridge"


def route_by_cost(model: Any, n_samples: int, n_features: int, n_classes: int | None = None,
                  margin: float = SAFETY_MARGIN) -> RouteDecision:
    """Route a *supported* model (see ``unsupported_reason``) by the predicted cost per coalition.

    Batched when ``per_subset >= margin * batched``. ``n_classes`` (>= 2) is
    needed for ``LogisticRegression``; ``Ridge`` ignores it.
    """
    from sklearn.linear_model import LogisticRegression, Ridge

    if not (isinstance(margin, (int, float, np.floating, np.integer)) and not isinstance(margin, bool)
            and np.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a finite positive number, got {margin!r}.")
    params = model.get_params()
    if type(model) is LogisticRegression:
        if n_classes is None:
            raise ValueError("n_classes is needed to cost a LogisticRegression.")
        max_iter = params.get("max_iter", 100)
        usable = isinstance(max_iter, (int, np.integer)) and not isinstance(max_iter, bool) and max_iter >= 1
        batched, per_subset, solver = logistic_costs(n_samples, n_features, n_classes,
                                                     fit_intercept=params.get("fit_intercept", True),
                                                     max_iter=int(max_iter) if usable else 100)
    elif type(model) is Ridge:
        batched, per_subset, solver = ridge_costs(n_samples, n_features,
                                                  fit_intercept=params.get("fit_intercept", True))
    else:
        raise TypeError(f"model must be a LogisticRegression or Ridge, got {type(model).__name__}.")
    ratio = per_subset / batched
    chosen = ratio >= margin
    verdict = "batched" if chosen else "per-subset fits"
    reason = (f"{verdict}: predicted {batched * 1e3:.3g} ms per coalition batched ({solver}) against "
              f"{per_subset * 1e3:.3g} ms per scikit-learn fit ({ratio:.2f}x; batched needs >= {margin:g}x)")
    return RouteDecision(chosen, reason, batched, per_subset, solver)
