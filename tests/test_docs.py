"""The documentation site builds without a warning, and the tutorial notebook is committed executed.

The documented command (docs/conf.py, "Getting started") builds every page; this test builds the site
with two of the experiments' pages (``SHAPLEY_DOCS_EXPERIMENTS``), the same configuration otherwise.
"""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorials" / "value_your_own_data.ipynb"


@pytest.mark.slow  # a Sphinx build: about a minute on two cores
def test_the_site_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    pytest.importorskip("pydata_sphinx_theme")
    env = {**os.environ, "SHAPLEY_DOCS_EXPERIMENTS": "iris_accuracy,privacy_noise",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
                           "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    for page in ("index", "getting_started", "tutorials/value_your_own_data", "guides/choosing",
                 "guides/long_runs", "guides/gpu", "reproduction/index", "reproduction/departures",
                 "reproduction/generated/index", "reproduction/generated/iris_accuracy",
                 "reproduction/generated/iris_accuracy/iris_accuracy", "benchmarks", "architecture", "citation",
                 "api/index", "api/generated/shapley_research.permutation_shapley",
                 "api/generated/shapley_research.ModelUtility"):
        assert (out / f"{page}.html").is_file(), page
    iris = (out / "reproduction" / "generated" / "iris_accuracy.html").read_text()
    assert "does not hold" in iris and "comparison.png" in iris  # verdicts and figures from results/
    assert not (out / "reproduction" / "generated" / "sparsity.html").exists()  # not asked for
    api = (out / "api" / "index.html").read_text()
    import shapley_research

    missing = [name for name in shapley_research.__all__ if f"shapley_research.{name}.html" not in api]
    assert not missing, f"public names without an API page: {missing}"


def test_the_tutorial_is_committed_executed():
    """The site renders the tutorial as committed (never executed by the build): every code cell has run."""
    notebook = nbformat.read(TUTORIAL, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(cell.execution_count for cell in code), "execute the tutorial and commit its outputs"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), "run it top to bottom, once"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


@pytest.mark.slow  # runs the tutorial (about a minute on two cores)
def test_the_tutorial_runs(tmp_path):
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("torch")
    notebook = nbformat.read(TUTORIAL, as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
