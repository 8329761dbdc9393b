"""The GPU scripts run on torch's CPU device: they cannot rot between the sessions that have a GPU.

``benchmarks/gpu_run.sh`` runs on a GPU machine only now and then; a script that broke in between (a check
that no longer matched the library, an import that moved) would cost that machine's few minutes. Each
script's ``main`` runs here at a tiny size.
"""

import pytest

from tests._benchmark_scripts import load_benchmark

pytest.importorskip("torch")
pytestmark = [pytest.mark.slow,  # trains torch models: seconds a script
              pytest.mark.usefixtures("one_torch_thread")]


def test_every_gpu_check_passes_on_the_cpu(capsys):
    assert load_benchmark("gpu_check").main(["--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and out.count("PASS") == 6


def test_the_sweep_and_the_profile_run(capsys):
    pytest.importorskip("mlxtend")
    assert load_benchmark("gpu_sweep").main(["--device", "cpu", "--models", "1", "--coalitions", "16",
                                             "--batch-sizes", "0", "8", "--scale-coalitions", "8"]) == 0
    assert load_benchmark("gpu_profile").main(["--device", "cpu", "--sizes", "2", "--profiled", "2"]) == 0
    assert load_benchmark("gpu_call_costs").main(["--device", "cpu", "--coalitions", "8"]) == 0
    out = capsys.readouterr().out
    assert out.count("models/s") == 1 and out.count("profiled wall") == 3
    assert out.count("fits/s") == 1 + 1 + 2  # the batch-size sweep's header; the baseline; one cell a precision
    assert out.count("first coalition (full-data fit)") == 2
