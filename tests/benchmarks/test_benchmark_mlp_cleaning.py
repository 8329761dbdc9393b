"""Cheap checks of ``benchmarks/mlp_cleaning_scale.py``: its configuration reader without PyYAML, a tiny run."""

from __future__ import annotations

import pytest
import yaml

from _benchmark_scripts import load_benchmark

pytestmark = pytest.mark.slow  # the benchmark scripts (benchmarks/), loaded and run small


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("mlp_cleaning_scale")


@pytest.mark.parametrize("path", ["experiment/mlp_cleaning.yaml", "experiment_profile/mlp_cleaning/scale.yaml",
                                  "experiment_profile/mlp_cleaning/quick.yaml",
                                  "experiment_profile/mlp_cleaning/paper.yaml"])
def test_the_reader_without_pyyaml_agrees_with_pyyaml(bench, path):
    text = (bench.CONF / path).read_text()
    assert bench.parse_flat_yaml(text) == (yaml.safe_load(text) or {})


def test_scale_parameters_are_the_scale_profile_over_the_base(bench):
    params = bench.scale_parameters()
    assert params["datasets"] == ["mnist"] and params["n_train"] == 4000 and params["device"] == "cuda"
    assert params["hidden"] == 64 and params["pca_components"] == 50 and params["flip_fraction"] == 0.15
    assert "description" not in params and bench.scale_parameters(quick=True)["n_train"] == 100


def test_quick_cpu_run_prints_the_table(bench, capsys):
    pytest.importorskip("mlxtend")
    assert bench.main(["--device", "cpu", "--quick", "--models", "mlp"]) == 0
    out = capsys.readouterr().out
    assert "Device: " in out and "(cpu)" in out and "| mnist | mlp | Data-OOB |" in out
    assert "Failed runs: none" in out and "| logistic |" not in out
