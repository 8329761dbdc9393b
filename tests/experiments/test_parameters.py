"""One source for every experiment parameter (conf/README.md, "Where a parameter lives").

Values live in conf/, types and ranges in shapley_research/experiments/_schema.py (one dataclass per
experiment); the notebooks' parameters cells are generated from both, and an edit in the wrong place is
refused with a message naming the right one. One papermill run in all (the plain recipe records what ran).
"""

import json
import shutil
import subprocess
from typing import Annotated, Literal

import pytest
from _pipeline_project import REPO

from shapley_research.cli import main
from shapley_research.experiments import (CUSTOM_PROFILE, EXPERIMENT_NAMES, RUNNER_ENV, Project, ProjectError,
                                          build_notebook,
                                          check_notebook_parameters, declaration_problems, generated_parameters,
                                          notebook_defaults, notebook_parameters, notebook_sync_problems,
                                          parameters_cell, parameters_source, profile_key_problems, profile_of,
                                          write_notebook, write_parameters_cell)
# Internal: the recorder's hook state (reset after the test), and the parse tables of the declarations
from shapley_research.experiments._notebook import RunRecorder
from shapley_research.experiments._schema import DECLARATIONS, SCHEMAS, Length, Range, Spec, spec_of

REAL = Project(REPO)
AVAILABLE = [name for name in EXPERIMENT_NAMES if not REAL.missing(name)]


def copy_project(root, names=("sparsity",)):
    """The real conf/ and the named notebooks, in a throw-away project directory."""
    shutil.copytree(REPO / "conf", root / "conf", ignore=shutil.ignore_patterns("README.md"))
    (root / "notebooks").mkdir()
    for name in names:
        shutil.copy(REAL.notebook(name), root / "notebooks" / f"{name}.ipynb")
    return Project(root)


def test_specs_are_derived_from_the_annotations():
    assert spec_of(Annotated[int, Range(2)]) == Spec("int", 2)
    assert spec_of(Annotated[float, Range(0, 1, open_low=True)]) == Spec("float", 0, 1, open_low=True)
    assert spec_of(Literal["a", "b"]) == Spec("str", choices=("a", "b"))
    assert spec_of(Annotated[list[Annotated[int, Range(0, 9)]], Length(2)]) == \
        Spec("list", item=Spec("int", 0, 9), length=2)
    assert spec_of(list[int] | None) == Spec("list", item=Spec("int"), nullable=True)
    assert spec_of(Annotated[int, Range(1)] | None) == Spec("int", 1, nullable=True)
    assert spec_of(str | None).describe() == "a string or null"
    with pytest.raises(TypeError, match="cannot derive a parameter spec"):
        spec_of(dict[str, int])


def test_every_experiment_is_declared_once():
    assert list(DECLARATIONS) == list(EXPERIMENT_NAMES) and list(SCHEMAS) == list(EXPERIMENT_NAMES)


@pytest.mark.parametrize("name", AVAILABLE)
def test_conf_holds_a_valid_value_for_exactly_the_declared_parameters(name):
    assert declaration_problems(name, REPO) == []
    assert profile_key_problems(REAL, name) == []


@pytest.mark.parametrize("name", AVAILABLE)
def test_notebook_parameters_cell_is_the_generated_one(name):
    """`shapley-research params NAME --write` regenerates it; the values are the paper profile's."""
    source = parameters_source(generated_parameters(REAL, name))
    assert parameters_cell(REAL.notebook(name)) == source, (
        f"notebooks/{name}.ipynb's parameters cell is stale: run `shapley-research params {name} --write`")
    assert notebook_sync_problems(REAL, name) == []


def test_params_check_passes_and_print_shows_the_cell(capsys):
    assert main(["params", "sparsity", "--check"]) == 0
    assert main(["params", "sparsity"]) == 0
    assert capsys.readouterr().out == parameters_cell(REAL.notebook("sparsity"))


def test_a_profile_key_that_is_not_declared_is_refused(tmp_path, capsys):
    project = copy_project(tmp_path)
    with open(project.profile_conf("sparsity", "quick"), "a") as f:
        f.write("null_drawz: 3\n")
    assert any("quick.yaml: null_drawz is not a parameter of sparsity" in p
               for p in declaration_problems("sparsity", tmp_path))
    assert main(["--project-dir", str(tmp_path), "run", "sparsity", "profile=quick",
                 f"output_dir={tmp_path / 'out'}"]) == 2
    assert "quick.yaml: null_drawz is not a parameter of sparsity" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_key_without_a_type_or_a_type_without_a_value_is_named(tmp_path):
    project = copy_project(tmp_path)
    text = project.experiment_conf("sparsity").read_text().replace("null_draws:", "null_drawz:")
    project.experiment_conf("sparsity").write_text(text)
    problems = declaration_problems("sparsity", tmp_path)
    assert ("conf/experiment/sparsity.yaml: null_drawz has no declared type; declare it in "
            "shapley_research/experiments/_schema.py, class Sparsity.") in problems
    assert ("shapley_research/experiments/_schema.py, class Sparsity: null_draws has no value in "
            "conf/experiment/sparsity.yaml; give it one there.") in problems


def test_an_edited_notebook_cell_is_refused_saying_where_the_parameter_lives(tmp_path, capsys):
    project = copy_project(tmp_path)
    notebook = project.notebook("sparsity")
    original = notebook.read_bytes()
    edited = parameters_cell(notebook).replace("null_draws = 200", "null_draws = 100")
    assert write_parameters_cell(notebook, edited)
    code = main(["--project-dir", str(tmp_path), "run", "sparsity", "profile=quick",
                 f"output_dir={tmp_path / 'out'}"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert ("null_draws lives in conf/experiment/sparsity.yaml (null_draws = 200 there), not in the notebook "
            "(100); edit it there or pass experiment.null_draws=100 to shapley-research run.") in err
    assert "`shapley-research params sparsity --write` regenerates the cell" in err
    # the way to run the cell's values once, which works as written: restore the cell, then override
    assert ("To run the cell's values once: `shapley-research params sparsity --write` restores the cell (the run "
            f"refuses an edited one), then `shapley-research run sparsity profile=quick output_dir={tmp_path / 'out'} "
            "experiment.null_draws=100`.") in err  # the refused command's own overrides kept
    assert not (tmp_path / "out").exists()  # refused before the kernel starts
    # --check finds it; --write restores the file byte for byte (every other cell untouched).
    assert main(["--project-dir", str(tmp_path), "params", "sparsity", "--check"]) == 1
    assert main(["--project-dir", str(tmp_path), "params", "sparsity", "--write"]) == 0
    assert notebook.read_bytes() == original


def test_write_parameters_cell_refuses_anything_but_literals(tmp_path):
    project = copy_project(tmp_path)
    with pytest.raises(ValueError, match="must be a literal"):
        write_parameters_cell(project.notebook("sparsity"), "n_train = len([1])\n")


def test_parameters_source_round_trips():
    params = {"a": "x", "b": [1, 2.5, "y"], "c": None, "d": True, "e": 1e-05}
    assert parameters_source(params) == 'a = "x"\nb = [1, 2.5, "y"]\nc = None\nd = True\ne = 1e-05\n'
    nb = build_notebook(parameters_source(params), ["pass"])
    assert nb.cells[0].source == parameters_source(params)


@pytest.mark.parametrize("change, expected", [
    ({}, "quick"), ({"n_jobs": 2, "output_dir": "/elsewhere"}, "quick"), ({"null_draws": 100}, CUSTOM_PROFILE),
    ({"seed": 1}, CUSTOM_PROFILE),
])
def test_profile_of_names_the_profile_whose_values_ran(change, expected):
    quick = notebook_parameters(REAL.compose("sparsity", ["profile=quick"]), "sparsity")
    assert profile_of(REAL, "sparsity", {**quick, **change, "profile": "paper"}) == expected
    assert profile_of(REAL, "sparsity", notebook_parameters(REAL.compose("sparsity"), "sparsity")) == "paper"


def test_check_cell_records_a_run_that_the_command_did_not_start(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(RUNNER_ENV, raising=False)
    monkeypatch.chdir(REPO)
    run_dir = tmp_path / "sparsity"
    namespace = dict(notebook_parameters(REAL.compose("sparsity", ["profile=quick"]), "sparsity"),
                     profile="paper", output_dir=str(run_dir))
    import atexit

    try:
        check_notebook_parameters("sparsity", namespace)
        recorder = RunRecorder.active
        assert namespace["profile"] == "quick"
        assert "recorded as profile = 'quick'" in capsys.readouterr().out
        recorder()
        assert not run_dir.exists()  # no metrics.json yet: the run has not finished
        run_dir.mkdir()
        (run_dir / "metrics.json").write_text("{}")
        recorder()
    finally:
        atexit.unregister(RunRecorder.active)
        RunRecorder.active = None
    info = json.loads((run_dir / "run_info.json").read_text())
    # as the command writes it: the run, its times, then its provenance (versions, CPU)
    assert list(info) == ["experiment", "profile", "wall_seconds", "cpu_seconds", "outputs", "python", "libraries",
                          "cpu"]
    assert info["experiment"] == "sparsity" and info["profile"] == "quick" and info["outputs"] == ["metrics.json"]
    # Under `shapley-research run` the command records the run: the check leaves everything as it is.
    monkeypatch.setenv(RUNNER_ENV, "cli")
    namespace["profile"] = "paper"
    check_notebook_parameters("sparsity", namespace)
    assert namespace["profile"] == "paper" and RunRecorder.active is None


def test_a_notebook_run_outside_the_command_replaces_the_earlier_run_in_its_folder(tmp_path, monkeypatch, capsys):
    """Jupyter or plain papermill: the check cell removes the files the earlier run listed, and only those."""
    import atexit

    monkeypatch.delenv(RUNNER_ENV, raising=False)
    monkeypatch.chdir(REPO)
    run_dir = tmp_path / "sparsity"
    run_dir.mkdir()
    for name in ("metrics.json", "errors.png", "notes.txt"):
        (run_dir / name).write_text("earlier")
    (run_dir / "run_info.json").write_text(json.dumps({"outputs": ["errors.png", "metrics.json"]}))
    namespace = dict(notebook_parameters(REAL.compose("sparsity", ["profile=quick"]), "sparsity"),
                     output_dir=str(run_dir))
    try:
        check_notebook_parameters("sparsity", namespace)
    finally:
        atexit.unregister(RunRecorder.active)
        RunRecorder.active = None
    assert "Replacing the earlier run in" in capsys.readouterr().out
    assert [p.name for p in run_dir.iterdir()] == ["notes.txt"]


def test_the_recorder_takes_a_metrics_file_timed_just_before_the_start_and_leaves_an_older_one(tmp_path):
    """File times come from a coarse clock: a metrics.json written right after the start may look older."""
    import os

    from shapley_research.experiments._notebook import MTIME_SLACK_S

    recorder = RunRecorder("sparsity", "quick", tmp_path)
    metrics = tmp_path / "metrics.json"
    metrics.write_text("{}")
    os.utime(metrics, (recorder.started - 10 * MTIME_SLACK_S,) * 2)  # an earlier run's
    recorder()
    assert not (tmp_path / "run_info.json").exists()
    os.utime(metrics, (recorder.started - MTIME_SLACK_S / 2,) * 2)  # this run's, stamped by a coarse clock
    recorder()
    assert json.loads((tmp_path / "run_info.json").read_text())["experiment"] == "sparsity"


@pytest.mark.slow  # runs papermill in a subprocess
@pytest.mark.skipif(not shutil.which("papermill"), reason="needs papermill on PATH")
def test_plain_papermill_recipe_records_the_profile_and_run_info(tmp_path):
    """notebooks/README.md's recipe: custom values are recorded as "custom", and run_info.json is written."""
    project = copy_project(tmp_path / "project", names=())
    cells = ["from shapley_research.experiments import check_notebook_parameters\n"
             "check_notebook_parameters('sparsity', globals())",
             "from shapley_research.experiments import claim, write_metrics\n"
             "write_metrics(output_dir, {'profile': profile}, [claim('c', 's', 1, True, source='reproduction', "
             "criterion='c')]);"]
    source = parameters_source(generated_parameters(REAL, "sparsity"))
    write_notebook(build_notebook(source, cells), project.notebook("sparsity"))
    out = tmp_path / "out" / "sparsity"
    proc = subprocess.run(["papermill", str(project.notebook("sparsity")), str(tmp_path / "executed.ipynb"),
                           "-p", "output_dir", str(out), "-p", "n_train", "200", "-y", "permutation_grid: [5, 20]"],
                          cwd=project.root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "metrics.json").read_text())["profile"] == CUSTOM_PROFILE
    info = json.loads((out / "run_info.json").read_text())
    assert info["experiment"] == "sparsity" and info["profile"] == CUSTOM_PROFILE
    assert info["wall_seconds"] >= 0 and info["cpu_seconds"] >= 0
    assert notebook_defaults(project.notebook("sparsity"))["profile"] == "paper"


def test_params_with_overrides_prints_what_a_run_gets_without_running(tmp_path, capsys):
    project = copy_project(tmp_path)
    args = ["--project-dir", str(tmp_path), "params", "sparsity"]
    assert main([*args, "--with", "profile=quick"]) == 0
    quick = capsys.readouterr().out
    assert 'profile = "quick"' in quick and "seed = 0" in quick
    assert quick != parameters_source(generated_parameters(project, "sparsity"))  # the paper's cell
    assert main([*args, "--with", "profile=quick", "--with", "seed=3"]) == 0
    reseeded = capsys.readouterr().out
    assert 'profile = "custom"' in reseeded and "seed = 3" in reseeded
    # checked as a run checks them, and only for one experiment, alone
    assert main([*args, "--with", "experiment.typo=1"]) == 2
    assert "no such key" in capsys.readouterr().err
    assert main([*args, "--with", "seed=3", "--check"]) == 2
    assert "give one NAME, without --write or --check" in capsys.readouterr().err
    assert not (tmp_path / "scratch").exists()  # nothing ran


def test_run_info_lists_the_overrides_of_a_custom_run():
    from shapley_research.experiments import run_info

    info = run_info("x", "custom", 1.04, 2.0, ["profile=quick", "experiment.budget=5"])
    assert list(info)[:3] == ["experiment", "profile", "overrides"]
    assert info["overrides"] == ["profile=quick", "experiment.budget=5"] and info["wall_seconds"] == 1.0
    assert "overrides" not in run_info("x", "paper", 1.0, 2.0)  # the committed runs' files keep their keys


def test_the_recorders_cpu_time_counts_worker_processes_still_alive():
    """Jupyter and plain papermill keep joblib's workers alive: their CPU time is the run's too. Measured in a
    fresh process, whose only child is the worker (the test session's own come and go)."""
    import subprocess
    import sys

    script = """
import subprocess, sys
from shapley_research.experiments._notebook import _cpu_seconds
before = _cpu_seconds()
worker = subprocess.Popen([sys.executable, "-c", "import time\\nt = time.process_time()\\n"
                           "while time.process_time() - t < 0.5: pass\\nprint(flush=True)\\ntime.sleep(30)"],
                          stdout=subprocess.PIPE, text=True)
worker.stdout.readline()  # it has burnt its 0.5 s and sleeps, alive
print(_cpu_seconds() - before)
worker.kill()
worker.wait()
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert float(out.stdout.strip().splitlines()[-1]) >= 0.4


def test_papermill_passing_a_profiles_name_with_other_values_is_refused(tmp_path, monkeypatch):
    """``papermill ... -p profile quick`` would run the paper profile's values (minutes) under a quick name."""
    import shapley_research.experiments._notebook as notebook_module

    monkeypatch.delenv(RUNNER_ENV, raising=False)
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(notebook_module, "injected_names", lambda: ["profile", "output_dir"])
    paper = dict(notebook_parameters(REAL.compose("sparsity"), "sparsity"), output_dir=str(tmp_path / "sparsity"))
    with pytest.raises(ValueError, match=r"profile='quick' was passed.*are the paper profile's.*"
                                         r"shapley-research run sparsity profile=quick"):
        check_notebook_parameters("sparsity", dict(paper, profile="quick"))
    assert RunRecorder.active is None and not (tmp_path / "sparsity").exists()  # refused before anything was cleared
    monkeypatch.setattr(notebook_module, "injected_names", lambda: ["output_dir"])  # the cell's own default name
    namespace = dict(paper, profile="quick")
    import atexit

    try:
        check_notebook_parameters("sparsity", namespace)  # Jupyter: the cell's name is no request
    finally:
        atexit.unregister(RunRecorder.active)
        RunRecorder.active = None
    assert namespace["profile"] == "paper"


@pytest.mark.parametrize("override, expected", [
    ("experiment.n_trian=5", "experiment.n_trian: did you mean experiment.n_train?"),
    ("n_train=5", "n_train: did you mean experiment.n_train?"),  # the experiment's key without its prefix
])
def test_a_mistyped_override_gets_the_closest_key(override, expected):
    with pytest.raises(ProjectError) as refused:
        REAL.compose("sparsity", [override])
    assert expected in str(refused.value) and "Valid overrides:" in str(refused.value)


def test_an_override_that_removes_a_parameter_is_refused():
    """Hydra's ``~key`` deletion left the notebook's default (the paper's value) inside a quick run, unrecorded."""
    with pytest.raises(ProjectError, match=r"~experiment.n_train .* every parameter needs a value"):
        REAL.compose("sparsity", ["profile=quick", "~experiment.n_train"])
