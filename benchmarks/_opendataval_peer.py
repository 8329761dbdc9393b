"""The OpenDataVal side of ``benchmarks/opendataval_comparison.py``, run by OpenDataVal's own interpreter.

OpenDataVal 1.3.0 pins torch 2.1 and numpy < 2, so it lives in a virtual
environment of its own (the install commands are in the header of
``opendataval_comparison.py``) and this file never imports
``shapley_research``. It is started as
``<venv>/bin/python benchmarks/_opendataval_peer.py CONFIG.json``; the config
names the data sets, seeds, methods, budgets and an output folder, and this
process writes, per data set and seed:

* ``data_<dataset>_<seed>.npz``: OpenDataVal's own task, from
  ``DataFetcher.setup(dataset, random_state=seed, train_count, valid_count,
  test_count, add_noise=mix_labels, noise_kwargs={"noise_rate": rate})``: the
  training and validation covariates exactly as its models see them (the
  float32 tensors of ``fetcher.datapoints``), the labels as class indices
  (``argmax`` of its one-hot labels, after the noise) and the indices of the
  flipped training points (``fetcher.noisy_train_indices``);
* ``peer_<dataset>_<seed>.json``: per method, the values, the wall time of
  ``evaluator.train(fetcher, model)`` plus ``evaluate_data_values()``, the real
  model fits and the calls of the model wrapper's ``fit``.

*Real fits.* Its ``sklogreg`` model (``ClassifierSkLearnWrapper`` around
scikit-learn's ``LogisticRegression()``) replaces a coalition that misses a
class by a ``DummyClassifier``, without fitting the logistic regression: only
calls of ``LogisticRegression.fit`` count as fits. They are counted by a
wrapper set on that class for the whole process (one integer increment per
call). Progress bars are switched off (tqdm 4.64 has no environment switch,
so its ``__init__`` gets ``disable=True``), and torch runs on one thread.

*The host's end.* The last section (:func:`run_peer`, :func:`load_task`,
:func:`load_peer`) is what ``opendataval_comparison.py`` imports from here,
in its own environment: it starts this script on a config and reads back the
files it wrote, whose names (:func:`task_file`, :func:`values_file`,
:data:`VERSIONS_FILE`) both ends take from here. It needs the standard
library and numpy only, as the rest of this file at import.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np

TMC_MIN_CARDINALITY = 5  # OpenDataVal's default first prefix of a permutation
VERSIONS_FILE = "peer_versions.json"  # the peer's versions, written once per process
PEER_SCRIPT = os.path.abspath(__file__)  # what run_peer copies and starts


def task_file(folder: str, dataset: str, seed: int) -> str:
    """The ``.npz`` of the task of ``dataset`` and ``seed`` in ``folder``."""
    return os.path.join(folder, f"data_{dataset}_{seed}.npz")


def values_file(folder: str, dataset: str, seed: int) -> str:
    """The ``.json`` of the peer's results on the task of ``dataset`` and ``seed`` in ``folder``."""
    return os.path.join(folder, f"peer_{dataset}_{seed}.json")


class FitCounter:
    """Counts calls of ``LogisticRegression.fit`` (real fits) and of the model wrapper's ``fit`` (coalitions)."""

    def __init__(self) -> None:
        self.real_fits = 0
        self.wrapper_fits = 0

    def install(self) -> None:
        """Wrap both ``fit`` methods at class level: every deep copy of the model counts here."""
        from opendataval.model.api import ClassifierSkLearnWrapper
        from sklearn.linear_model import LogisticRegression

        LogisticRegression.fit = self._counting(LogisticRegression.fit, "real_fits")
        ClassifierSkLearnWrapper.fit = self._counting(ClassifierSkLearnWrapper.fit, "wrapper_fits")

    def _counting(self, fit: Callable[..., Any], attribute: str) -> Callable[..., Any]:
        @functools.wraps(fit)
        def counted(*args: Any, **kwargs: Any) -> Any:
            setattr(self, attribute, getattr(self, attribute) + 1)
            return fit(*args, **kwargs)

        return counted

    def reset(self) -> None:
        self.real_fits = self.wrapper_fits = 0


def quiet_and_single_threaded() -> None:
    """No progress bars, no warnings, one torch thread (BLAS threads are set by the parent's environment)."""
    import warnings

    import torch
    import tqdm

    tqdm.tqdm.__init__ = functools.partialmethod(tqdm.tqdm.__init__, disable=True)
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)


def fetch_task(dataset: str, seed: int, config: dict) -> Any:
    """OpenDataVal's noisy task: its split of ``dataset`` and its flipped labels (``mix_labels``)."""
    from opendataval.dataloader import DataFetcher, mix_labels

    return DataFetcher.setup(dataset, random_state=seed, train_count=config["train_count"],
                             valid_count=config["valid_count"], test_count=config["test_count"],
                             add_noise=mix_labels, noise_kwargs={"noise_rate": config["noise_rate"]})


def save_task(fetcher: Any, path: str) -> None:
    """The covariates as the models see them, labels as class indices, the flipped training indices."""
    x_train, y_train, x_valid, y_valid, *_ = fetcher.datapoints
    np.savez(path, x_train=x_train.numpy().astype(np.float64), y_train=y_train.numpy().argmax(axis=1),
             x_valid=x_valid.numpy().astype(np.float64), y_valid=y_valid.numpy().argmax(axis=1),
             noisy=np.sort(np.asarray(fetcher.noisy_train_indices, dtype=np.int64)))


def _patched_class_wise(base: type) -> type:
    """OpenDataVal 1.3.0's ``ClassWiseShapley`` with one line fixed: its ``_get_class_indices`` takes the
    out-of-class *validation* indices from the training labels (``train_classes != label``), which indexes the
    validation set out of bounds when it is smaller than the training set (an ``IndexError`` on this task);
    here they come from the validation labels, as the three other index sets do."""

    class ClassWiseShapleyFixed(base):  # type: ignore[misc, valid-type]
        def _get_class_indices(self, label: Any) -> tuple[Any, ...]:
            train_in, train_out, valid_in, _ = super()._get_class_indices(label)
            return train_in, train_out, valid_in, (self.valid_classes != label).nonzero(as_tuple=True)[0]

    return ClassWiseShapleyFixed


def make_evaluator(method: str, seed: int, budget: dict) -> Any:
    """OpenDataVal's evaluator of ``method`` with the budget of the config, seeded with ``seed``.

    TMC and Beta Shapley use ``TMCSampler`` (``mc_epochs`` permutations, its
    truncation: stop after 10 consecutive marginal contributions below 1e-8
    of the running sum); its default ``GrTMCSampler`` runs until a
    Gelman-Rubin statistic converges, a number of fits no config can set.
    Caching is off so that no run reuses another's marginal contributions.
    """
    from opendataval.dataval import (AME, BetaShapley, ClassWiseShapley, DataBanzhaf, DataOob, DataShapley,
                                     KNNShapley, LavaEvaluator, LeaveOneOut)
    from opendataval.dataval.margcontrib.sampler import TMCSampler

    def sampler() -> Any:
        return TMCSampler(mc_epochs=budget["permutations"], min_cardinality=TMC_MIN_CARDINALITY, cache_name=None,
                          random_state=seed)

    if method == "ame":  # num_models coalitions for each inclusion probability 0.2, 0.4, 0.6, 0.8
        return AME(num_models=budget["models"], random_state=seed)
    if method == "cs":  # TMC permutations of each class's points, every out-of-class point in the context
        return _patched_class_wise(ClassWiseShapley)(sampler=sampler())
    if method == "lava":  # no model: its OT distance between training and validation sets, on the CPU
        return LavaEvaluator(random_state=seed)

    if method == "tmc":
        return DataShapley(sampler=sampler())
    if method == "beta":
        return BetaShapley(sampler=sampler(), alpha=budget["alpha"], beta=budget["beta"])
    if method == "banzhaf":
        return DataBanzhaf(num_models=budget["models"], random_state=seed)
    if method == "oob":
        return DataOob(num_models=budget["models"], random_state=seed)
    if method == "loo":
        return LeaveOneOut(random_state=seed)
    if method == "knn":
        return KNNShapley(k_neighbors=budget["k"], random_state=seed)
    raise ValueError(f"method: expected one of tmc, beta, banzhaf, oob, loo, knn, ame, cs, lava, got {method!r}")


def value(method: str, fetcher: Any, seed: int, budget: dict, counter: FitCounter) -> dict:
    """Run one evaluator on ``fetcher`` with the ``sklogreg`` model: values, seconds, fits."""
    from opendataval.model import ModelFactory

    model = ModelFactory("sklogreg", fetcher)
    evaluator = make_evaluator(method, seed, budget)
    counter.reset()
    start = time.perf_counter()
    evaluator.train(fetcher, model)  # the metric defaults to accuracy for one-hot labels
    values = np.asarray(evaluator.evaluate_data_values(), dtype=np.float64)
    seconds = time.perf_counter() - start
    return {"values": values.tolist(), "seconds": seconds, "real_fits": counter.real_fits,
            "wrapper_fits": counter.wrapper_fits}


def versions() -> dict:
    """Versions of the peer's stack, for the report."""
    import opendataval
    import sklearn
    import torch

    return {"python": sys.version.split()[0], "opendataval": getattr(opendataval, "__version__", "?"),
            "torch": torch.__version__, "numpy": np.__version__, "sklearn": sklearn.__version__}


def main(config_path: str) -> int:
    """Run every data set, seed and method of the config; write the files described in the module docstring."""
    with open(config_path) as handle:
        config = json.load(handle)
    quiet_and_single_threaded()
    counter = FitCounter()
    counter.install()
    out = config["out_dir"]
    with open(os.path.join(out, VERSIONS_FILE), "w") as handle:
        json.dump(versions(), handle)
    for dataset in config["datasets"]:
        for seed in config["seeds"]:
            fetcher = fetch_task(dataset, seed, config)
            save_task(fetcher, task_file(out, dataset, seed))
            results = {}
            for method in config["methods"]:
                print(f"peer: {dataset} seed {seed} {method} ...", file=sys.stderr, flush=True)
                results[method] = value(method, fetcher, seed, config["budgets"][dataset][method], counter)
            with open(values_file(out, dataset, seed), "w") as handle:
                json.dump(results, handle)
    return 0


# --------------------------------------------------------------------------- the host's end


def peer_environment() -> dict[str, str]:
    """This environment with one BLAS/OpenMP thread, no GPU and without our ``PYTHONPATH``."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    return env


def run_peer(python: str, config: dict, folder: str) -> None:
    """Run this script with ``python`` on ``config`` in ``folder`` (its files land there); its progress goes to
    our stderr."""
    config_path = os.path.join(folder, "config.json")
    with open(config_path, "w") as handle:
        json.dump({**config, "out_dir": folder}, handle)
    script = os.path.join(folder, os.path.basename(PEER_SCRIPT))
    if not os.path.exists(script):  # a copy taken at start: edits to the working tree during the run do not count
        shutil.copy(PEER_SCRIPT, script)
    subprocess.run([python, script, config_path], env=peer_environment(), check=True)


def load_task(folder: str, dataset: str, seed: int) -> dict[str, np.ndarray]:
    """The peer's task of ``dataset`` and ``seed``, with ``flipped`` as a boolean mask over the training points."""
    with np.load(task_file(folder, dataset, seed)) as saved:
        task = {key: saved[key] for key in saved.files}
    task["flipped"] = np.zeros(len(task["y_train"]), dtype=bool)
    task["flipped"][task["noisy"]] = True
    return task


def load_peer(folder: str, dataset: str, seed: int) -> dict[str, dict[str, Any]]:
    """The peer's results on the task of ``dataset`` and ``seed``, by method (:func:`value`'s records)."""
    with open(values_file(folder, dataset, seed)) as handle:
        return json.load(handle)


def load_versions(folder: str) -> dict[str, str]:
    """The peer's versions (:func:`versions`), written by its first process in ``folder``."""
    with open(os.path.join(folder, VERSIONS_FILE)) as handle:
        return json.load(handle)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python _opendataval_peer.py CONFIG.json", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
