r"""Predicted seconds per coalition of a batched learner and of one scikit-learn fit: ``fast="auto"``'s route.

:func:`route_by_cost` decides whether :class:`~shapley_research.ModelUtility`
with ``fast="auto"`` hands a supported model to its batched learner: only
when the batched learner is predicted to be at least :data:`SAFETY_MARGIN`
times faster per coalition than one clone-fit-score of the estimator. The
prediction is a formula in the shapes and the model's parameters, with
constants fitted on the development machine and scaled, side by side, by
factors measured once on the machine it runs on (:mod:`._calibration`,
cached per machine and version; ``SHAPLEY_RESEARCH_ROUTING=fixed`` keeps the
constants as committed). It never depends on a timing taken during a run, so
a route is the same in every run of the same configuration on one machine.

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
problems measured (6-75). When the learner runs L-BFGS, scikit-learn gets a
typical :math:`T_{sk} = \min(\text{max\_iter}, 40)` (measured 25 on digits
standardised, 38 on MNIST after PCA, 67 on raw digits) and the learner
:math:`T_{lb} = 14`: routed from ``ModelUtility`` it stops at scikit-learn's
tolerance, warm-started from the full-data solution and preconditioned by the
full-data Hessian, and iterates in ``float32`` first (measured means 12-14 on
digits and MNIST, counting the ``float64`` polish). Other scikit-learn solvers are
costed as lbfgs; measured, newton-cg and newton-cholesky were as slow or
slower (newton-cholesky 5-10x slower with 10 classes), sag and saga are
slower still, so the error leans towards the per-subset path.

Constants (:data:`COSTS`) were fitted by non-negative least squares on
relative errors to timings on the 2-core development machine (numpy 2.4,
OpenBLAS, scikit-learn 1.9, one BLAS thread, shared with other work):
scikit-learn's lbfgs on synthetic Gaussian classes at 9 shapes
(N 100-2,000, d 4-100, K 2-10, coalitions of N/4, N/2 and N points, 4 fits
each, medians; predictions within 0.4-2.2x of the times, the noise of a
shared machine); Newton on 8 shapes (60-150 coalitions of uniform sizes
each, time per coalition divided by the mean iterations; within 0.7-1.3x);
the batched L-BFGS (mixed precision, at scikit-learn's tolerance) on 7
shapes of synthetic classes (N 200-1,000, d 20-150, K 3-10; within
0.4-1.5x; synthetic classes need fewer iterations than real data, which
the count of 14 covers); ridge on 6 shapes (N 100-2,000, d 10-400).
The margin absorbs that scatter. Measured on the cases it must get right
(time per coalition, one thread): iris (N=100, Newton) scikit-learn 25.7 ms
against 0.14 ms batched; breast cancer (N=300, binary Newton) 7.1 against
0.26 ms; digits (N=300, d=64, K=10, L-BFGS) and MNIST after PCA (N=1,000,
d=50, K=10): ``benchmarks/batched_routing.py`` prints predicted against
measured seconds of both paths on these and more data sets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
    "lbfgs": (6.1e-5, 1.1e-10, 4.8e-11),            # b0, b1 per N K q, b2 per (Kq)^2, per iteration
    "newton": (2.3e-5, 1.8e-10, 6.4e-11),           # c0, c1 per K'^2 N q^2, c2 per (K'q)^3, per iteration
    "sklearn_ridge": (2.8e-3, 5.5e-10),             # r0, r1 per k q min(k, q)
    "ridge": (7.7e-6, 2.2e-10, 1.2e-9),             # e0, e1 per N q^2 / 2, e2 per q^3
}
#: Iterations (module docstring): Newton, scikit-learn against Newton, scikit-learn's lbfgs, the learner's L-BFGS.
ITERATIONS = {"newton": 5, "sklearn_vs_newton": 8, "typical": 40, "lbfgs": 14}


#: Environment variable: ``"fixed"`` (the committed constants) or ``"calibrated"`` (the default).
ROUTING_ENV = "SHAPLEY_RESEARCH_ROUTING"
SIDES = ("sklearn_logistic", "sklearn_logistic_binary", "lbfgs", "newton", "sklearn_ridge", "ridge")


@dataclass(frozen=True)
class Calibration:
    """Measured over predicted seconds of each side's reference workload (1.0: the committed constants).

    Attributes
    ----------
    factors : dict
        One positive factor per entry of :data:`SIDES`.
    source : str
        ``"fixed"``, ``"measured"`` (this process) or ``"cached"`` (read from ``path``).
    path : str or None
        The cache file.
    """

    factors: dict[str, float] = field(default_factory=lambda: dict.fromkeys(SIDES, 1.0))
    source: str = "fixed"
    path: str | None = None

    def describe(self) -> str:
        """One phrase for a route's reason."""
        if self.source == "fixed":
            return f"the committed cost constants (fixed; {ROUTING_ENV}=fixed asks for them)"
        return f"costs calibrated on this machine ({self.source}, {self.path})"


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


def model_max_iter(params: dict, default: int) -> int:
    """A ``LogisticRegression``'s ``max_iter`` from its ``get_params()``: a positive integer, else ``default``."""
    value = params.get("max_iter")
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 1:
        return int(value)
    return default


def logistic_costs(n_samples: int, n_features: int, n_classes: int, *, fit_intercept: bool = True,
                   max_iter: int = 100, factors: dict[str, float] | None = None) -> tuple[float, float, str]:
    r"""Predicted seconds per coalition: ``(batched, one scikit-learn fit, batched solver)``.

    The formulas and constants are in the module docstring; ``max_iter`` caps
    scikit-learn's iterations (the learner runs to its own tolerance);
    ``factors`` (:mod:`._calibration`) scale each side (default: 1).
    """
    N = _positive_int(n_samples, "n_samples")
    d = _positive_int(n_features, "n_features")
    K = _positive_int(n_classes, "n_classes", minimum=2)
    max_iter = _positive_int(max_iter, "max_iter")
    q, k = d + int(bool(fit_intercept)), N / 2
    K_sk = 1 if K == 2 else K
    solver = batched_logistic_solver(N, d, K, fit_intercept)
    factors = factors or {}
    if solver == "newton":
        c0, c1, c2 = COSTS["newton"]
        batched = ITERATIONS["newton"] * (c0 + c1 * K_sk**2 * N * q**2 + c2 * (K_sk * q) ** 3)
        iterations = min(max_iter, ITERATIONS["sklearn_vs_newton"])
    else:
        b0, b1, b2 = COSTS["lbfgs"]
        batched = ITERATIONS["lbfgs"] * (b0 + b1 * N * K * q + b2 * (K * q) ** 2)
        iterations = min(max_iter, ITERATIONS["typical"])
    a0, a1, a2 = COSTS["sklearn_logistic"]
    per_subset = a0 + iterations * (a1 + a2 * k * K_sk * q)
    sklearn_side = "sklearn_logistic_binary" if K == 2 else "sklearn_logistic"
    return batched * factors.get(solver, 1.0), per_subset * factors.get(sklearn_side, 1.0), solver


def ridge_costs(n_samples: int, n_features: int, *, fit_intercept: bool = True,
                factors: dict[str, float] | None = None) -> tuple[float, float, str]:
    """Predicted seconds per coalition of ``Ridge``: ``(batched, one scikit-learn fit, "ridge")``."""
    N = _positive_int(n_samples, "n_samples")
    q = _positive_int(n_features, "n_features") + int(bool(fit_intercept))
    k = N / 2
    e0, e1, e2 = COSTS["ridge"]
    r0, r1 = COSTS["sklearn_ridge"]
    factors = factors or {}
    return ((e0 + e1 * N * q**2 / 2 + e2 * q**3) * factors.get("ridge", 1.0),
            (r0 + r1 * k * q * min(k, q)) * factors.get("sklearn_ridge", 1.0), "ridge")


def route_by_cost(model: Any, n_samples: int, n_features: int, n_classes: int | None = None,
                  margin: float = SAFETY_MARGIN, costs: Calibration | None = None) -> RouteDecision:
    """Route a *supported* model (see ``unsupported_reason``) by the predicted cost per coalition.

    Batched when ``per_subset >= margin * batched``. ``n_classes`` (>= 2) is
    needed for ``LogisticRegression``; ``Ridge`` ignores it.
    """
    from sklearn.linear_model import LogisticRegression, Ridge

    if not (isinstance(margin, (int, float, np.floating, np.integer)) and not isinstance(margin, bool)
            and np.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a finite positive number, got {margin!r}.")
    params = model.get_params()
    costs = Calibration() if costs is None else costs
    if type(model) is LogisticRegression:
        if n_classes is None:
            raise ValueError("n_classes is needed to cost a LogisticRegression.")
        batched, per_subset, solver = logistic_costs(n_samples, n_features, n_classes,
                                                     fit_intercept=params.get("fit_intercept", True),
                                                     max_iter=model_max_iter(params, 100),
                                                     factors=costs.factors)
    elif type(model) is Ridge:
        batched, per_subset, solver = ridge_costs(n_samples, n_features,
                                                  fit_intercept=params.get("fit_intercept", True),
                                                  factors=costs.factors)
    else:
        raise TypeError(f"model must be a LogisticRegression or Ridge, got {type(model).__name__}.")
    ratio = per_subset / batched
    chosen = ratio >= margin
    verdict = "batched" if chosen else "per-subset fits"
    reason = (f"{verdict}: predicted {batched * 1e3:.3g} ms per coalition batched ({solver}) against "
              f"{per_subset * 1e3:.3g} ms per scikit-learn fit ({ratio:.2f}x; batched needs >= {margin:g}x), "
              f"by {costs.describe()}")
    return RouteDecision(chosen, reason, batched, per_subset, solver)
