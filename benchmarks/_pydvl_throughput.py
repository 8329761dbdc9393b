"""Part 1 of ``pydvl_comparison.py``: utility evaluations per second, pyDVL's ``ModelUtility`` against ours.

Not a script: ``pydvl_comparison.py`` imports it. On iris and on 1,000 MNIST
images after PCA, the same random subsets (sizes uniform on 1..N) are scored
by pyDVL's ``ModelUtility(LogisticRegression(), SupervisedScorer("neg_log_loss"))``
(one scikit-learn fit per subset, on a prefix of the list) and by ours:
``LogisticRegressionUtility.evaluate``, ``ModelUtility(..., fast="auto")``,
and ``evaluate_prefixes`` along permutations (exact, and the one-pass
approximation).
"""

from __future__ import annotations

import time

import numpy as np

from _games import load_mnist
from _peer_common import log
from shapley_research import LogisticRegressionUtility, ModelUtility

LOG_EPS = float(np.log(np.finfo(float).eps))  # pyDVL's score of a subset it cannot fit: the log-loss's floor


def draw_masks(rng, m, n):
    """``m`` random coalitions of ``n`` players, sizes uniform on 1..n (as utility_throughput.py)."""
    k = rng.integers(1, n + 1, size=m)
    order = rng.random((m, n)).argsort(axis=1)
    return order < k[:, None]


def throughput_case(name, X_train, y_train, X_test, y_test, *, n_ours, n_pydvl, n_perms, rng) -> dict:
    """One game's row of part 1: both libraries' evaluations per second on the same subsets, and their agreement.

    Parameters
    ----------
    name : str
        The row's name.
    X_train, y_train, X_test, y_test : array_like
        The data of the logistic-regression game.
    n_ours, n_pydvl : int
        Subsets evaluated by ours and, a prefix of them, by pyDVL.
    n_perms : int
        Permutations of ``evaluate_prefixes``.
    rng : numpy.random.Generator
        Draws the subsets and the permutations.

    Returns
    -------
    dict
        Counts and seconds of each row, our solver and route, and ``max |dU|`` on the common subsets that hold
        every class.
    """
    from pydvl.valuation import Dataset, ModelUtility as PydvlModelUtility, SupervisedScorer
    from pydvl.valuation.types import Sample
    from sklearn.linear_model import LogisticRegression

    n = len(y_train)
    masks = draw_masks(rng, n_ours, n)
    train, test = Dataset(X_train, y_train), Dataset(X_test, y_test)
    scorer = SupervisedScorer("neg_log_loss", test, default=LOG_EPS, range=(LOG_EPS, 0.0))
    utility = PydvlModelUtility(LogisticRegression(), scorer, catch_errors=True,
                                show_warnings=False).with_dataset(train)
    samples = [Sample(None, np.flatnonzero(mask)) for mask in masks[:n_pydvl]]
    start = time.perf_counter()
    u_pydvl = np.array([utility(sample) for sample in samples])
    t_pydvl = time.perf_counter() - start

    ours = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss")
    start = time.perf_counter()
    u_ours = ours.evaluate(masks)
    t_ours = time.perf_counter() - start
    info = dict(ours.last_fit_info_)

    routed = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, metric="neg_log_loss", fast="auto")
    start = time.perf_counter()
    u_routed = routed.evaluate(masks)
    t_routed = time.perf_counter() - start

    online = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss")
    permutations = np.array([rng.permutation(n) for _ in range(n_perms)])
    start = time.perf_counter()
    online.evaluate_prefixes(permutations)
    t_online = time.perf_counter() - start

    exact_prefixes = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", prefix_path="exact")
    start = time.perf_counter()
    exact_prefixes.evaluate_prefixes(permutations)
    t_exact_prefixes = time.perf_counter() - start

    classes = np.unique(y_train)
    all_classes = np.array([np.unique(y_train[mask]).size == classes.size for mask in masks[:n_pydvl]])
    gap = np.abs(u_ours[:n_pydvl] - u_pydvl)[all_classes]
    routed_gap = np.abs(u_routed[:n_pydvl] - u_pydvl)[all_classes]
    return {"name": name, "n": n, "n_test": len(y_test), "features": X_train.shape[1], "classes": classes.size,
            "n_pydvl": n_pydvl, "t_pydvl": t_pydvl, "n_ours": n_ours, "t_ours": t_ours,
            "n_online": permutations.size, "t_online": t_online, "t_exact_prefixes": t_exact_prefixes,
            "t_routed": t_routed, "route": routed.route_, "solver": info.get("solver", "?"),
            "routed_max_gap": float(routed_gap.max()) if routed_gap.size else float("nan"),
            "n_compared": int(all_classes.sum()), "n_excluded": int((~all_classes).sum()),
            "max_gap": float(gap.max()) if gap.size else float("nan"),
            "mean_gap": float(gap.mean()) if gap.size else float("nan")}


def throughput_part(quick: bool, rng) -> tuple[list[dict], float]:
    """Part 1 on iris and MNIST: the :func:`throughput_case` rows, and the variance PCA kept on MNIST."""
    from shapley_research.datasets import load_iris_split

    iris = load_iris_split(n_train=100, n_test=50, seed=0)
    Z_train, y_train, Z_test, y_test, explained = load_mnist()
    cases = []
    log("part 1: throughput on iris ...")
    cases.append(throughput_case("iris LR (3 classes)", *iris, n_ours=1000 if quick else 5000,
                                 n_pydvl=60 if quick else 400, n_perms=20 if quick else 100, rng=rng))
    log("part 1: throughput on MNIST ...")
    cases.append(throughput_case("MNIST LR (10 classes)", Z_train, y_train, Z_test, y_test,
                                 n_ours=40 if quick else 400, n_pydvl=10 if quick else 100,
                                 n_perms=1 if quick else 4, rng=rng))
    return cases, explained
