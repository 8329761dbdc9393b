"""The device tests, without pytest: what the CPU tests assert, checked on a GPU.

The GPU machine has torch, numpy, scipy and scikit-learn but neither pytest
nor a package index, so this script repeats the properties that
``tests/utilities/test_learners_device.py`` and ``tests/utilities/test_torch_model_utility.py``
assert on torch's CPU device, on ``--device`` (default ``cuda``): the torch
learners equal the numpy learners (float64 to 1e-9, mixed precision to 1e-4, float32 to 2e-3),
weights are scikit-learn's sample weights, TorchModelUtility trained in a
chunk equals it trained alone and repeats bit for bit, and no GPU memory is
left held after a run. One ``PASS`` or ``FAIL`` line per check; the exit
status is the number of failures. ``benchmarks/gpu_run.sh`` runs it with the
benchmark.
"""

from __future__ import annotations

import argparse
import sys
import traceback

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris, load_wine
from sklearn.linear_model import LogisticRegression

from shapley_research import LogisticRegressionUtility, RidgeUtility, TorchModelUtility, data_oob, msr_banzhaf

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def split(loader, n_train=90, n_test=50):
    X, y = loader(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:n_train], order[n_train:n_train + n_test]
    return X[train], y[train], X[test], y[test]


def masks_for(n, m=200):
    rng = np.random.default_rng(1)
    masks = rng.random((m, n)) < rng.uniform(0.05, 1.0, (m, 1))
    masks[:3] = False
    return masks


@check
def logistic_equals_numpy(device):
    for loader in (load_iris, load_wine, load_breast_cancer):
        data = split(loader)
        masks = masks_for(len(data[1]))
        for solver in ("newton", "lbfgs"):
            expected = LogisticRegressionUtility(*data, "neg_log_loss", solver=solver).evaluate(masks)
            # float64 throughout: the float32 phase of mixed precision rounds differently on the two paths
            found = LogisticRegressionUtility(*data, "neg_log_loss", solver=solver, device=device,
                                              mixed_precision=False).evaluate(masks)
            assert np.abs(found - expected).max() <= 1e-9, (loader.__name__, solver, np.abs(found - expected).max())
            mixed = LogisticRegressionUtility(*data, "neg_log_loss", solver=solver, device=device,
                                              mixed_precision=True).evaluate(masks)
            assert np.abs(mixed - expected).max() <= 1e-4, (loader.__name__, solver, "mixed precision")
            single = LogisticRegressionUtility(*data, "neg_log_loss", solver=solver, device=device,
                                               dtype="float32", tol=1e-4).evaluate(masks)
            assert np.abs(single - expected).max() <= 2e-3, (loader.__name__, solver, "float32")


@check
def ridge_equals_numpy(device):
    data = split(load_diabetes, 120, 80)
    masks = masks_for(120)
    expected = RidgeUtility(*data, alpha=0.7).evaluate(masks)
    np.testing.assert_allclose(RidgeUtility(*data, alpha=0.7, device=device).evaluate(masks), expected, rtol=1e-10)


@check
def weights_are_sample_weights(device):
    X, y, Xt, yt = split(load_iris)
    counts = np.random.default_rng(5).multinomial(len(y), np.full(len(y), 1 / len(y)), size=2)
    coef, _ = LogisticRegressionUtility(X, y, Xt, yt, device=device, tol=1e-10, max_iter=1000).fit_subsets(counts)
    for row, weight in enumerate(counts):
        model = LogisticRegression(tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=weight)
        np.testing.assert_allclose(coef[row], model.coef_, rtol=1e-5, atol=1e-6)


def mlp(d, k, hidden=16):
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(d, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, k))


@check
def torch_module_batched_equals_alone_and_repeats(device):
    X, y, Xt, yt = split(load_iris)
    masks = masks_for(len(y), m=24)
    game = TorchModelUtility(mlp(4, 3), X, y, Xt, yt, "neg_log_loss", steps=50, device=device, dtype="float64")
    batched = game.evaluate(masks)
    alone = TorchModelUtility(mlp(4, 3), X, y, Xt, yt, "neg_log_loss", steps=50, device=device, dtype="float64",
                              chunk_size=1).evaluate(masks)
    np.testing.assert_allclose(batched, alone, rtol=0, atol=1e-9)
    again = TorchModelUtility(mlp(4, 3), X, y, Xt, yt, "neg_log_loss", steps=50, device=device,
                              dtype="float64").evaluate(masks)
    assert batched.tobytes() == again.tobytes(), "not bit-identical"


@check
def estimators_and_data_oob_run_on_the_device(device):
    X, y, Xt, yt = split(load_breast_cancer, 200, 100)
    game = LogisticRegressionUtility(X, y, Xt, yt, device=device)
    result = msr_banzhaf(game, 2000, seed=0)
    reference = msr_banzhaf(LogisticRegressionUtility(X, y, Xt, yt), 2000, seed=0)
    assert np.abs(result.values - reference.values).max() <= 1e-9
    oob = data_oob(LogisticRegression(), X, y, 100, seed=0, fast=True, device=device)
    assert np.isfinite(oob.values).mean() > 0.9


def _warm_cublas(device) -> None:
    """One product of each kind first, so cuBLAS's workspace (held per stream, by design) counts in ``before``."""
    import torch

    for dtype in (torch.float32, torch.float64):
        a = torch.ones((2, 8, 8), dtype=dtype, device=device)
        torch.bmm(a, a), torch.baddbmm(a, a, a), a[0] @ a[0]


@check
def no_memory_left_held(device):
    """Evaluate gives back what its chunks took; deleting the games gives back their data.

    The caching allocator keeps small tensors in 2 MiB segments, so the
    segment holding a game's own data shows as reserved but unallocated
    slack: less than 2 MiB is allowed for it, and a second, larger call must
    end with exactly the memory the first ended with.
    """
    import gc

    import torch

    if not str(device).startswith("cuda"):
        return
    _warm_cublas(device)
    gc.collect()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated(device)
    X, y, Xt, yt = split(load_wine)
    game = TorchModelUtility(mlp(13, 3, 64), X, y, Xt, yt, steps=100, device=device)
    learner = LogisticRegressionUtility(X, y, Xt, yt, device=device)
    for utility in (game, learner):
        utility.evaluate(masks_for(len(y), m=256))
        held = torch.cuda.memory_allocated(device), torch.cuda.memory_reserved(device)
        utility.evaluate(masks_for(len(y), m=2048))
        again = torch.cuda.memory_allocated(device), torch.cuda.memory_reserved(device)
        name = type(utility).__name__
        assert again == held, f"{name}: (allocated, reserved) {held} after one call, {again} after a larger one"
        assert held[1] - held[0] < 2**21, f"{name}: {held[1] - held[0]} bytes cached after evaluate"
    del game, learner, utility  # the loop variable holds the last game too
    gc.collect()
    left = torch.cuda.memory_allocated(device) - before
    assert left == 0, f"{left} bytes still allocated after the games are gone"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    import torch

    print(f"gpu check on {args.device}: torch {torch.__version__}"
          + (f", {torch.cuda.get_device_name(args.device)}" if args.device.startswith("cuda") else ""))
    failures = 0
    for fn in CHECKS:
        try:
            fn(args.device)
            print(f"PASS {fn.__name__}")
        except Exception:  # noqa: BLE001 - report every check, then the count
            failures += 1
            print(f"FAIL {fn.__name__}\n{traceback.format_exc()}")
    print(f"{len(CHECKS) - failures} passed, {failures} failed")
    return failures


if __name__ == "__main__":
    sys.exit(main())
