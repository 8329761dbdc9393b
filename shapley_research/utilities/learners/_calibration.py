r"""The cost model of ``fast="auto"`` calibrated on the machine it runs on, once, cached per machine and version.

The formulas of :mod:`._cost` predict seconds per coalition from the shapes;
their constants were fitted on the development machine. On another machine
(another CPU, BLAS, numpy or scikit-learn) both sides of the comparison move,
and not by the same factor. :func:`calibration` therefore times, on first use,
one small reference workload per side and solver, one BLAS thread, and keeps
the ratios of measured to predicted time:

* ``sklearn_logistic``: scikit-learn's ``LogisticRegression`` fitted on
  coalitions of a synthetic 10-class problem (``N = 300``, ``d = 30``);
* ``lbfgs``: the batched learner's L-BFGS on coalitions of the same problem;
* ``newton``: its Newton on a binary problem (``N = 300``, ``d = 10``), and
  ``sklearn_logistic_binary``, scikit-learn on that problem;
* ``ridge`` and ``sklearn_ridge``: the batched and the scikit-learn ridge.

Each factor scales the constants of its side (:func:`._cost.route_by_cost`).
The whole measurement takes one to two seconds; the factors are written to
``$XDG_CACHE_HOME/shapley-research/routing-<key>.json`` (``~/.cache`` without
``XDG_CACHE_HOME``), the key a hash of the CPU, the Python, numpy, scipy,
scikit-learn and package versions and of the batched learners' sources (a
change to the solvers between two releases, as in a checkout, measures again),
and read back by later processes.

A route thus depends on the machine, never on the load of the moment within a
run (the factors are fixed once measured). For a route that does not depend on
the machine at all, pass ``fast=True`` or ``fast=False`` (as the experiments
do), or set the environment variable :data:`ROUTING_ENV` to ``"fixed"``: the
committed constants (factors 1), as the test suite does.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..._device import cpu_model
from ._cost import ROUTING_ENV, SIDES, Calibration, logistic_costs, ridge_costs

_PROCESS_CALIBRATION: dict[str, Calibration] = {}


def routing_mode() -> str:
    """``"fixed"`` or ``"calibrated"`` from :data:`ROUTING_ENV` (unset: calibrated); else a ``ValueError``."""
    mode = os.environ.get(ROUTING_ENV, "calibrated").strip().lower() or "calibrated"
    if mode not in ("fixed", "calibrated"):
        raise ValueError(f"{ROUTING_ENV} must be 'fixed' or 'calibrated', got {mode!r}.")
    return mode


def calibration() -> Calibration:
    """The cost model's factors on this machine: fixed, cached on disk, or measured now (then cached)."""
    if routing_mode() == "fixed":
        return Calibration()
    path = cache_path()
    if str(path) not in _PROCESS_CALIBRATION:
        _PROCESS_CALIBRATION[str(path)] = _read_cache(path) or _write_cache(path, measure_factors())
    return _PROCESS_CALIBRATION[str(path)]


@functools.lru_cache(maxsize=1)
def machine_key() -> str:
    """A short hash of what the timings depend on: CPU, core count, Python and library versions, learners' code.

    Computed once per process: every ``fast="auto"`` route asks for it.
    """
    import scipy
    import sklearn

    from ... import __version__

    sources = hashlib.sha256(b"".join(path.read_bytes() for path in sorted(Path(__file__).parent.glob("*.py"))))
    parts = [platform.machine(), cpu_model() or "", str(os.cpu_count()), platform.python_version(), np.__version__,
             scipy.__version__, sklearn.__version__, __version__, sources.hexdigest()]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def cache_path() -> Path:
    """``$XDG_CACHE_HOME/shapley-research/routing-<machine_key>.json`` (``~/.cache`` by default)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "shapley-research" / f"routing-{machine_key()}.json"


def _read_cache(path: Path) -> Calibration | None:
    """The cached calibration, or None when absent or unreadable (then measured again)."""
    try:
        factors = json.loads(path.read_text())["factors"]
        values = {side: float(factors[side]) for side in SIDES}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all(np.isfinite(v) and v > 0 for v in values.values()):
        return None
    return Calibration(values, "cached", str(path))


def _write_cache(path: Path, factors: dict[str, float]) -> Calibration:
    """Keep ``factors`` in ``path`` when it can be written (a read-only home only loses the cache)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"factors": factors, "measured": time.strftime("%Y-%m-%d %H:%M:%S")}, indent=1))
    except OSError:
        pass
    return Calibration(factors, "measured", str(path))


def measure_factors(repeats: int = 2) -> dict[str, float]:
    """Time each side's reference workload (best of ``repeats``, one BLAS thread): measured / predicted."""
    from threadpoolctl import threadpool_limits

    factors = {}
    with threadpool_limits(limits=1):
        for side, (run, predicted) in reference_workloads().items():
            run()  # imports, first-call allocations, the batched learner's full-data fit
            factors[side] = _best_time(run, repeats) / predicted
    return factors


def _best_time(run: Callable[[], float], repeats: int) -> float:
    """Seconds per coalition, the fastest of ``repeats`` runs (``run`` returns the number of coalitions)."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        count = run()
        best = min(best, (time.perf_counter() - start) / count)
    return float(best)


def _classes(n: int, d: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian classes: ``k`` centres, unit noise, ``n`` points of ``d`` features."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    return rng.normal(size=(k, d))[y] + rng.normal(size=(n, d)), y


def _coalitions(n: int, count: int, seed: int, size: int | None = None) -> np.ndarray:
    """``count`` masks over ``n`` points: of uniform sizes, or all of ``size`` points."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, n + 1, count) if size is None else np.full(count, size)
    return np.argsort(rng.random((count, n)), axis=1) < sizes[:, None]


def reference_workloads() -> dict[str, tuple[Callable[[], float], float]]:
    """Per side: ``(run, predicted)``: ``run()`` fits some coalitions and returns their number,
    ``predicted`` the committed cost model's seconds per coalition for that shape.
    """
    from sklearn.linear_model import LogisticRegression, Ridge

    from ._logistic import LogisticRegressionUtility
    from ._ridge import RidgeUtility

    workloads = {}
    for (n, d, k), (learner_side, sklearn_side) in {(300, 30, 10): ("lbfgs", "sklearn_logistic"),
                                                    (300, 10, 2): ("newton", "sklearn_logistic_binary")}.items():
        X, y = _classes(n + 100, d, k, seed=k)
        learner = LogisticRegressionUtility(X[:n], y[:n], X[n:], y[n:], "accuracy", tol=1e-4)
        batched, per_subset, _ = logistic_costs(n, d, k)
        workloads[learner_side] = (_evaluating(learner, _coalitions(n, 32, 1)), batched)
        workloads[sklearn_side] = (_fitting(LogisticRegression(), X[:n], y[:n], X[n:], y[n:], n // 2), per_subset)
    X, y = _classes(400, 20, 1, seed=0)
    y = X @ np.linspace(-1, 1, 20) + np.random.default_rng(0).normal(size=400)
    batched, per_subset, _ = ridge_costs(300, 20)
    workloads["ridge"] = (_evaluating(RidgeUtility(X[:300], y[:300], X[300:], y[300:]), _coalitions(300, 64, 1)),
                          batched)
    workloads["sklearn_ridge"] = (_fitting(Ridge(), X[:300], y[:300], X[300:], y[300:], 150), per_subset)
    return workloads


def _evaluating(game: Any, masks: np.ndarray) -> Callable[[], float]:
    def run() -> float:
        game.evaluate(masks)
        return float(masks.shape[0])

    return run


def _fitting(model: Any, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
             size: int) -> Callable[[], float]:
    """Clone, fit on a coalition of ``size`` points and score, as ``ModelUtility(fast=False)`` does, 4 times."""
    from sklearn.base import clone

    masks = _coalitions(X.shape[0], 4, 2, size=size)

    def run() -> float:
        for mask in masks:
            clone(model).fit(X[mask], y[mask]).score(X_test, y_test)
        return float(masks.shape[0])

    return run
