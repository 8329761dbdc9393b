"""Where runs write, and what they refuse before computing (issue 34, items 9 and 11).

A run by hand, by papermill or by ``shapley-research run`` writes to the git-ignored ``scratch/NAME/``
(relative paths taken from the project root wherever the notebook runs); only
``shapley-research run NAME --update-results`` (the DVC stages' command) writes the committed ``results/``.
A budget too small for the data, and a name papermill injects that is no parameter, stop the run at once.
"""

import json
import shutil
import subprocess
import sys

import nbformat
import pytest
from _pipeline_project import REPO, make_project

from shapley_research.cli import main
from shapley_research.experiments import (RUNNER_ENV, UPDATE_RESULTS_ENV, Project, build_notebook,
                                          check_notebook_parameters, dvc_stage, generated_parameters,
                                          notebook_parameters, parameters_source, unknown_parameter_problems,
                                          write_notebook)

REAL = Project(REPO)


def run_main(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return make_project(tmp_path_factory.mktemp("project"))


def quick(name, **changes):
    return dict(notebook_parameters(REAL.compose(name, ["profile=quick"]), name), **changes)


# --- where a run writes -----------------------------------------------------------------------------------

def test_the_notebooks_and_the_command_default_to_the_ignored_scratch_folder():
    assert generated_parameters(REAL, "sparsity")["output_dir"] == "scratch/sparsity"
    assert REAL.compose("sparsity")["output_dir"] == str(REPO / "scratch")
    assert "/scratch/" in (REPO / ".gitignore").read_text().splitlines()
    assert dvc_stage(REAL, "sparsity")["cmd"] == "shapley-research run sparsity --update-results"


def test_the_command_refuses_the_committed_results_unless_asked(project, capsys):
    code, _, err = run_main(capsys, "--project-dir", project, "run", "iris_accuracy", "profile=quick",
                            f"output_dir={project / 'results'}")
    assert code == 2 and "is inside" in err and "the committed results" in err
    assert "shapley-research run iris_accuracy --update-results" in err and "scratch/iris_accuracy" in err


@pytest.mark.parametrize("overrides, message", [
    (["profile=quick"], "these parameters are profile 'quick'"),
    (["seed=3"], "these parameters are profile 'custom'"),
    (["output_dir=/tmp/elsewhere"], "drop the output_dir override"),
])
def test_update_results_takes_only_the_paper_profile(project, capsys, overrides, message):
    code, _, err = run_main(capsys, "--project-dir", project, "run", "iris_accuracy", *overrides, "--update-results")
    assert code == 2 and message in err


def test_the_check_cell_takes_relative_paths_from_the_project_root(monkeypatch, capsys):
    """Jupyter starts the kernel in notebooks/: scratch/NAME is still ROOT/scratch/NAME, and shown as written."""
    monkeypatch.setenv(RUNNER_ENV, "cli")  # record nothing
    monkeypatch.chdir(REPO / "notebooks")
    namespace = quick("sparsity", output_dir="scratch/sparsity")
    check_notebook_parameters("sparsity", namespace)
    assert namespace["output_dir"] == str(REPO / "scratch" / "sparsity")
    assert f"output_dir = '{REPO / 'scratch' / 'sparsity'}'" in capsys.readouterr().out
    monkeypatch.chdir(REPO)  # from the root the path stays as given, and nothing is printed
    namespace = quick("sparsity", output_dir="scratch/sparsity")
    check_notebook_parameters("sparsity", namespace)
    assert namespace["output_dir"] == "scratch/sparsity" and capsys.readouterr().out == ""


@pytest.mark.parametrize("where", ["notebooks", "."])
def test_the_check_cell_refuses_the_committed_results_unless_the_command_asks(monkeypatch, where):
    monkeypatch.setenv(RUNNER_ENV, "cli")
    monkeypatch.delenv(UPDATE_RESULTS_ENV, raising=False)
    monkeypatch.chdir(REPO / where)
    with pytest.raises(ValueError, match="inside .*results, the committed results; only `shapley-research run "
                                         "sparsity --update-results`"):
        check_notebook_parameters("sparsity", quick("sparsity", output_dir="results/sparsity"))
    monkeypatch.setenv(UPDATE_RESULTS_ENV, "1")  # what `shapley-research run --update-results` sets
    check_notebook_parameters("sparsity", quick("sparsity", output_dir=str(REPO / "results" / "sparsity")))


# --- refused before computing -----------------------------------------------------------------------------

def test_a_budget_too_small_fails_before_the_kernel_starts(tmp_path, capsys):
    code, _, err = run_main(capsys, "--project-dir", REPO, "run", "mlp_cleaning", "profile=quick",
                            "experiment.budget=20", f"output_dir={tmp_path}")
    assert code == 2 and not list(tmp_path.iterdir())
    assert err.strip() == ("shapley-research: error: invalid configuration of mlp_cleaning: experiment.budget=20 "
                           "is too small for n_train=30: at least 35 utility evaluations are needed (by method: "
                           "beta_shapley 35, truncated_permutation 32).")


def test_the_check_cell_refuses_a_budget_too_small(monkeypatch):
    monkeypatch.setenv(RUNNER_ENV, "cli")
    with pytest.raises(ValueError, match=r"experiment.budget=20 is too small for n_train=30: at least 35"):
        check_notebook_parameters("mlp_cleaning", quick("mlp_cleaning", budget=20, output_dir="/tmp/x"))


def test_unknown_names_are_named_with_a_close_match():
    problems = unknown_parameter_problems("data_cleaning", ["n_seeds", "n_sedes"])
    assert len(problems) == 1
    head, listed = problems[0].split("; its parameters: ")
    assert head == "n_sedes is not a parameter of data_cleaning (did you mean n_seeds?)"
    names = listed.rstrip(".").split(", ")
    assert names[:4] == ["output_dir", "profile", "seed", "n_jobs"]  # the common ones first, then the experiment's
    assert {"n_seeds", "budget_grid", "oob_max_estimators", "addition_fractions"} <= set(names)
    assert "n_sedes" not in names


def test_values_valid_alone_but_in_the_wrong_order_are_refused_before_the_kernel_starts():
    from shapley_research.experiments._schema import parameter_problems

    ridge = notebook_parameters(REAL.compose("ridge_stability", ["profile=quick"]), "ridge_stability")
    assert parameter_problems("ridge_stability", ridge) == []
    assert parameter_problems("ridge_stability", {**ridge, "lambda_min": 10.0, "lambda_max": 1.0}) == [
        "experiment.lambda_max=1.0: expected more than experiment.lambda_min=10.0."]
    assert parameter_problems("ridge_stability", {**ridge, "lambda_max": ridge["lambda_min"]})  # strictly
    scaling = notebook_parameters(REAL.compose("runtime_scaling", ["profile=quick"]), "runtime_scaling")
    assert parameter_problems("runtime_scaling", {**scaling, "theory_n_max": scaling["theory_n_min"]}) == []
    assert parameter_problems("runtime_scaling", {**scaling, "theory_n_min": 100, "theory_n_max": 10}) == [
        "experiment.theory_n_max=10: expected at least experiment.theory_n_min=100."]


def _stand_in_project(tmp_path):
    """A copy of conf/ and a stand-in sparsity notebook (check cell, then metrics and the path written)."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "conf", root / "conf")
    cells = ["from shapley_research.experiments import check_notebook_parameters\n"
             "check_notebook_parameters('sparsity', globals())",
             "from shapley_research.experiments import claim, write_metrics\n"
             "print(write_metrics(output_dir, {'profile': profile}, [claim('c', 's', 1, True, "
             "source='reproduction', criterion='c')]))"]
    write_notebook(build_notebook(parameters_source(generated_parameters(REAL, "sparsity")), cells),
                   root / "notebooks" / "sparsity.ipynb")
    return root


@pytest.mark.slow  # papermill in subprocesses
@pytest.mark.skipif(not shutil.which("papermill"), reason="needs papermill on PATH")
def test_papermill_by_hand_writes_scratch_and_refuses_a_typo(tmp_path):
    """A stand-in sparsity notebook (check cell, then metrics) in a copy of the project, run from notebooks/."""
    root = _stand_in_project(tmp_path)
    notebook = root / "notebooks" / "sparsity.ipynb"

    def papermill(*args):
        return subprocess.run(["papermill", str(notebook), str(tmp_path / "executed.ipynb"), *args],
                              cwd=root / "notebooks", capture_output=True, text=True, timeout=300)

    proc = papermill("-p", "null_draws", "10")
    assert proc.returncode == 0, proc.stderr
    written = root / "scratch" / "sparsity" / "metrics.json"
    assert json.loads(written.read_text())["profile"] == "custom"
    assert not (root / "notebooks" / "scratch").exists() and not (root / "notebooks" / "results").exists()
    assert str(written) in proc.stderr or str(written) in (tmp_path / "executed.ipynb").read_text()

    proc = papermill("-p", "null_drasw", "10")  # a typo: papermill alone would run with the defaults
    assert proc.returncode != 0
    assert "null_drasw is not a parameter of sparsity (did you mean null_draws?)" in proc.stderr


@pytest.mark.slow  # the command line in a subprocess, twice
def test_update_results_lets_the_check_cell_write_the_committed_results(tmp_path):
    """The flag reaches the notebook's kernel: its check cell accepts results/NAME only then."""
    root = _stand_in_project(tmp_path)
    script = shutil.which("shapley-research")
    command = [script] if script else [sys.executable, "-m", "shapley_research.cli"]
    command += ["--project-dir", str(root), "run", "sparsity", "--quiet"]
    proc = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (root / "scratch" / "sparsity" / "metrics.json").is_file() and not (root / "results").exists()
    assert "results: scratch/sparsity" in proc.stdout  # the path written, relative to where the user is
    proc = subprocess.run([*command, "--update-results"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((root / "results" / "sparsity" / "metrics.json").read_text())["profile"] == "paper"
    # what the committed notebook records does not depend on where the project lies, nor on where it ran from
    executed = nbformat.read(root / "results" / "sparsity" / "sparsity.ipynb", as_version=4)
    assert str(tmp_path) not in nbformat.writes(executed)
    recorded = executed.metadata.papermill
    assert recorded.input_path == "notebooks/sparsity.ipynb"
    assert recorded.output_path == "results/sparsity/sparsity.ipynb"
    assert recorded.parameters["output_dir"] == "results/sparsity"
