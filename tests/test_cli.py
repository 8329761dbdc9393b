"""The ``shapley-research`` command, end to end on the pipeline fixture (a stand-in, not the experiment).

Two notebook executions in all: one successful run in a subprocess, one failing run in-process.
"""

import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from _pipeline_project import REPO, make_project

from shapley_research._kernel import KERNEL_NAME, select_kernel
from shapley_research._kernel import _private_kernel, _runs_this_python  # Internal: the kernel spec's choice
from shapley_research.cli import main
from shapley_research.experiments import (EXPERIMENT_NAMES, Project, ProjectError, claim, find_project_dir,
                                          write_metrics)


def cli_command() -> list[str]:
    script = shutil.which("shapley-research")
    return [script] if script else [sys.executable, "-m", "shapley_research.cli"]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_project(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="module")
def quick_run(project, tmp_path_factory):
    """One quick run with an override that makes the fixture's first claim fail (so a custom run, not quick)."""
    out = tmp_path_factory.mktemp("out")
    proc = subprocess.run(cli_command() + ["--project-dir", str(project), "run", "iris_accuracy", "profile=quick",
                                           f"output_dir={out}", "experiment.true_mean=5"],
                          capture_output=True, text=True, timeout=300)
    return proc, out / "iris_accuracy"


def run_main(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_run_writes_all_results(quick_run):
    proc, run_dir = quick_run
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "histogram.pdf", "histogram.png", "iris_accuracy.ipynb", "metrics.json", "run_info.json", "samples.csv"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    # conf/experiment_profile/.../quick.yaml, and an override: recorded as a custom run (test_parameters.py)
    assert metrics["profile"] == "custom" and metrics["n_samples"] == 200
    # A claim that does not hold is a result, not an error: the exit status above is 0.
    assert [c["holds"] for c in metrics["claims"]] == [False, True]
    assert [c["source"] for c in metrics["claims"]] == ["paper", "reproduction"]
    assert all({"claim", "statistic", "holds", "source", "criterion", "timing"} <= set(c) for c in metrics["claims"])
    info = json.loads((run_dir / "run_info.json").read_text())
    assert list(info) == ["experiment", "profile", "overrides", "wall_seconds", "cpu_seconds", "outputs", "python",
                          "libraries", "cpu"]
    assert info["outputs"] == ["histogram.pdf", "histogram.png", "metrics.json", "samples.csv"]  # a rerun removes
    assert info["experiment"] == "iris_accuracy" and info["profile"] == "custom"
    assert info["overrides"] == ["profile=quick", f"output_dir={run_dir.parent}", "experiment.true_mean=5"]
    assert 0 < info["wall_seconds"] and 0 < info["cpu_seconds"]
    # provenance (issue 34): the versions the bit-for-bit promise depends on, and the CPU
    assert info["python"] == platform.python_version()
    assert list(info["libraries"]) == ["shapley-research", "numpy", "scipy", "scikit-learn", "torch", "foolbox",
                                       "cvxpy"]
    assert info["libraries"]["numpy"] == np.__version__
    assert set(info["cpu"]) == {"model", "logical_cores", "usable_cores"} and info["cpu"]["logical_cores"] >= 1


def test_run_injects_the_composed_parameters(quick_run):
    _, run_dir = quick_run
    nb = nbformat.read(run_dir / "iris_accuracy.ipynb", as_version=4)
    assert nb.metadata.papermill.parameters == {
        "output_dir": str(run_dir), "profile": "custom", "seed": 0, "n_jobs": -1, "n_samples": 200, "true_mean": 5}
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)


def test_run_prints_verdicts_and_streams_progress(quick_run):
    proc, run_dir = quick_run
    assert ("iris_accuracy (profile=custom): 0 of 1 claims of the paper hold; 1 of 1 checks of this reproduction "
            "hold") in proc.stdout
    assert "[DOES NOT HOLD] (Fixture, Section 1) The sample mean is within three standard errors" in proc.stdout
    assert "[holds] (reproduction) The sample standard deviation" in proc.stdout
    assert "sampling: 4/4 (100%)" in proc.stderr  # the notebook's progress lines reach the terminal
    # the notebook prints its claims too (print_claims): the summary's verdict lines are the only ones shown
    assert proc.stdout.count("[DOES NOT HOLD] (Fixture, Section 1)") == 1
    assert "[DOES NOT HOLD]" not in proc.stderr and "criterion: |z| <= 3" not in proc.stderr


def test_streamed_output_holds_back_the_notebooks_claims():
    """The claims a notebook prints last are held back (the summary prints them), wherever the kernel's chunks
    of output break; a run that ends without a summary shows them after all."""
    import io
    import logging

    from shapley_research._kernel import StreamedOutput  # Internal: what a run shows on the terminal

    stream = io.StringIO()
    handler = StreamedOutput(stream)
    for text in ("sampling: 4/4\n", "[holds] (Section 5) A holds. (r = 2)", "\n",  # print's newline apart
                 "    criterion: r > 1\n[INCONCLUSIVE, sanity check] (reproduction) B. (m = 0.5)\n    note: n\n",
                 "Ending Cell 3---\n", "    note: not after a claim\n"):
        handler.handle(logging.makeLogRecord({"msg": text}))
    assert stream.getvalue() == "sampling: 4/4\nEnding Cell 3---\n    note: not after a claim\n"
    handler.show_held()
    assert stream.getvalue().endswith("\n[holds] (Section 5) A holds. (r = 2)\n    criterion: r > 1\n"
                                      "[INCONCLUSIVE, sanity check] (reproduction) B. (m = 0.5)\n    note: n\n")
    assert handler.held == []


@pytest.mark.slow  # executes a notebook
def test_failing_notebook_exits_1_and_leaves_no_metrics(project, tmp_path, capsys):
    run_dir = tmp_path / "iris_accuracy"
    # an earlier run's files must not pass for this run's; a file of the user's stays
    write_metrics(run_dir, {}, [claim("Stale.", "s", 1, True, source="reproduction", criterion="c")])
    for name in ("histogram.png", "samples.csv", "notes.txt"):
        (run_dir / name).write_text("earlier")
    (run_dir / "run_info.json").write_text(json.dumps({"experiment": "iris_accuracy", "outputs": [
        "histogram.png", "metrics.json", "samples.csv", "../outside.txt"]}))
    (tmp_path / "outside.txt").write_text("not the run's")
    code, _, err = run_main(capsys, "--project-dir", project, "run", "iris_accuracy", "profile=quick",
                            f"output_dir={tmp_path}", "experiment.n_samples=-4", "--quiet")
    assert code == 1
    assert "failed in cell" in err and "ValueError" in err
    assert "replacing the earlier run there (4 files)" in err
    # the notebook kept, with its traceback; a run_info.json listing what the stopped run wrote, for the next
    assert sorted(p.name for p in run_dir.iterdir()) == ["iris_accuracy.ipynb", "notes.txt", "run_info.json"]
    assert json.loads((run_dir / "run_info.json").read_text()) == {
        "experiment": "iris_accuracy", "profile": "custom", "finished": False, "outputs": []}
    assert (tmp_path / "outside.txt").exists()  # nothing outside the folder is touched


def fake_papermill(monkeypatch, error: BaseException) -> None:
    """papermill's stand-in: the kernel logs a traceback to its stderr, the notebook prints a claim, then ``error``."""
    import logging
    import types

    def kernel_manager(stderr):
        stderr.write("[IPKernelApp] ERROR | Exception in message handler:\nzmq.error.ZMQError: Socket operation "
                     "on non-socket\n")
        return object

    def execute_notebook(*args, **kwargs):
        logging.getLogger("papermill").info("[holds] (Section 5) A printed claim. (r = 2)\n")
        raise error

    monkeypatch.setattr("shapley_research.cli.local_kernel_manager", kernel_manager)
    monkeypatch.setattr("shapley_research.cli.import_papermill",
                        lambda: types.SimpleNamespace(execute_notebook=execute_notebook))


def test_an_interrupted_run_says_so_and_exits_130(project, tmp_path, capsys, monkeypatch):
    """Ctrl-C: one line naming what is left, not papermill's traceback, the stopped cell's logged error nor the
    kernel's own log (a kernel shut down in a cell logs a ZMQError traceback)."""
    import logging

    fake_papermill(monkeypatch, KeyboardInterrupt())
    monkeypatch.setattr(logging.getLogger("asyncio"), "disabled", False)
    code, _, err = run_main(capsys, "--project-dir", project, "run", "iris_accuracy", "profile=quick",
                            f"output_dir={tmp_path}")
    assert code == 130
    assert "interrupted: iris_accuracy stopped after" in err and "A new run starts the notebook over" in err
    assert "Traceback" not in err and "ZMQError" not in err and logging.getLogger("asyncio").disabled
    assert "[holds] (Section 5) A printed claim." in err  # no summary prints it: the streamed claims show


def test_a_failing_kernel_shows_its_own_log(project, tmp_path, capsys, monkeypatch):
    fake_papermill(monkeypatch, RuntimeError("Kernel died before replying to kernel_info"))
    code, _, err = run_main(capsys, "--project-dir", project, "run", "iris_accuracy", "profile=quick",
                            f"output_dir={tmp_path}", "--quiet")
    assert code == 1 and "RuntimeError: Kernel died before replying to kernel_info" in err
    assert "The kernel's own messages (last lines):\n  [IPKernelApp] ERROR" in err and "ZMQError" in err


@pytest.mark.slow  # starts a kernel, that fails
def test_a_kernel_that_cannot_start_says_why(project, tmp_path, capsys, monkeypatch):
    """The kernel's stderr goes to a file, not the terminal; a kernel that fails to start shows it."""
    spec = tmp_path / "jupyter" / "kernels" / "broken"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-c", "import sys; sys.exit('boom: no kernel here')", "-f", "{connection_file}"],
        "display_name": "broken", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    code, _, err = run_main(capsys, "--project-dir", project, "run", "iris_accuracy", "profile=quick",
                            f"output_dir={tmp_path}", "--kernel", "broken", "--quiet")
    assert code == 1 and "could not execute" in err
    assert "The kernel's own messages (last lines):\n  boom: no kernel here" in err


def test_ctrl_c_before_the_notebook_starts_prints_one_line(project, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("shapley_research.cli.run_parameters", interrupted)
    assert run_main(capsys, "--project-dir", project, "run", "iris_accuracy") == (130, "", "\ninterrupted\n")


@pytest.mark.parametrize("command", ["run", "stage"])
def test_a_missing_experiment_name_lists_the_experiments(capsys, command):
    with pytest.raises(SystemExit) as exit_info:
        main([command])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "name an experiment: iris_accuracy, runtime_scaling" in err
    assert "OVERRIDE" not in err.splitlines()[-1]  # argparse called the optional overrides required


def test_list_prints_the_six_names(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # needs no project
    code, out, _ = run_main(capsys, "list")
    assert code == 0 and out.splitlines() == list(EXPERIMENT_NAMES)


def test_list_refuses_a_project_dir_that_is_no_project(capsys, tmp_path):
    """Silently listing the names from elsewhere hid a mistyped --project-dir (params refuses it)."""
    code, _, err = run_main(capsys, "--project-dir", str(tmp_path / "missing"), "list")
    assert code == 2 and "is not a project directory" in err


def test_version_prints_the_package_version(capsys):
    import shapley_research

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"shapley-research {shapley_research.__version__}"


def test_list_long_shows_descriptions_and_missing_files(project, capsys):
    code, out, _ = run_main(capsys, "--project-dir", project, "list", "--long")
    lines = out.splitlines()
    assert code == 0 and [line.split()[0] for line in lines] == list(EXPERIMENT_NAMES)
    assert "Fixture - the mean of a normal sample" in lines[0]
    assert "not available: missing conf/experiment/sparsity.yaml" in lines[2]


class _ClosedPipe:
    """A stdout whose reader has gone (``| head``): every write raises BrokenPipeError."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        pass


def test_a_closed_output_pipe_ends_quietly(project, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["--project-dir", str(project), "list", "--long"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.slow  # the command line in a subprocess: seconds
def test_list_into_head_prints_no_traceback(project):
    command = " ".join(cli_command() + ["--project-dir", str(project), "list", "--long"])
    proc = subprocess.run(f"{command} | head -1", shell=True, capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith("iris_accuracy") and proc.stderr == ""


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert all(word in out for word in ("list", "run", "stage", "params", "--project-dir"))


@pytest.mark.parametrize("args, message", [
    (["run", "nope"], "unknown experiment 'nope'; the experiments are: iris_accuracy, runtime_scaling"),
    (["run", "sparsity"], "missing conf/experiment/sparsity.yaml, notebooks/sparsity.ipynb"),
    (["run", "iris_accuracy", "experiment.typo=1"], "Could not override 'experiment.typo': no such key."),
    (["run", "iris_accuracy", "typo=1"], "Valid overrides: profile=paper|quick, output_dir=..., seed=..."),
    # overrides after a flag are overrides too (argparse alone called them unrecognised arguments)
    (["run", "iris_accuracy", "--no-figures", "typo=1"], "Valid overrides: profile=paper|quick"),
    (["run", "iris_accuracy", "profile=huge"], "Available options in 'profile'"),
    (["run", "iris_accuracy", "experiment.n_samples"], "Error parsing override"),
    (["run", "iris_accuracy", "seed=abc"], "seed must be an integer"),
    (["run", "iris_accuracy", "+experiment.extra=1"], "does not declare extra in its parameters cell"),
    (["run", "iris_accuracy", "experiment=sparsity"], "'experiment' is chosen by the experiment name"),
    (["stage", "iris_accuracy"], "run `shapley-research run iris_accuracy profile=quick` first"),
    (["run", "iris_accuracy", "--no-figures", "--update-results"], "figures included; drop --no-figures"),
])
def test_usage_errors_exit_2_with_a_clear_message(project, capsys, args, message):
    code, out, err = run_main(capsys, "--project-dir", project, *args)
    assert code == 2 and out == ""
    assert err.startswith("shapley-research: error: ") and message in err
    assert "Traceback" not in err


def test_an_unknown_flag_is_still_refused(project, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--project-dir", str(project), "run", "iris_accuracy", "--no-figures", "profile=quick", "--nope"])
    assert exit_info.value.code == 2 and "unrecognized arguments: --nope" in capsys.readouterr().err


def test_missing_notebook_is_reported(project, tmp_path, capsys):
    other = make_project(tmp_path / "p")
    (other / "notebooks" / "iris_accuracy.ipynb").unlink()
    code, _, err = run_main(capsys, "--project-dir", other, "run", "iris_accuracy")
    assert code == 2 and "missing notebooks/iris_accuracy.ipynb" in err


def test_project_dir_must_be_a_project(tmp_path, capsys):
    code, _, err = run_main(capsys, "--project-dir", tmp_path, "run", "iris_accuracy")
    assert code == 2 and "is not a project directory" in err


def test_project_is_found_upward_from_the_working_directory(project, monkeypatch):
    assert find_project_dir(project / "notebooks") == project
    monkeypatch.chdir(project / "conf" / "profile")
    assert Project.locate().root == project


def test_relative_output_dir_override_is_taken_from_the_working_directory(project, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proj = Project.locate(project)
    assert proj.compose("iris_accuracy", ["output_dir=rel"])["output_dir"] == str(tmp_path.resolve() / "rel")
    assert proj.compose("iris_accuracy")["output_dir"] == str(project.resolve() / "scratch")  # git-ignored


def test_kernel_choice_runs_this_interpreter(monkeypatch, tmp_path):
    major, minor = sys.version_info[:2]
    for argv0 in ("python", f"python{major}", f"python{major}.{minor}", sys.executable):
        assert _runs_this_python([argv0, "-m", "ipykernel_launcher"])
    assert not _runs_this_python([str(tmp_path / "python"), "-m", "ipykernel_launcher"])
    assert not _runs_this_python([])
    with pytest.raises(ProjectError, match="no Jupyter kernel named 'no-such-kernel'"):
        select_kernel("no-such-kernel")


def test_private_kernel_spec_points_at_this_interpreter(monkeypatch, tmp_path):
    from jupyter_client.kernelspec import KernelSpecManager

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setenv("JUPYTER_PATH", "")
    assert _private_kernel() == KERNEL_NAME
    spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    assert spec.argv[0] == sys.executable and spec.resource_dir.startswith(str(tmp_path))
    assert _private_kernel() == KERNEL_NAME  # reuses the spec it wrote


def test_stage_prints_and_writes_the_dvc_stage(project, tmp_path, capsys):
    import yaml

    write_metrics(tmp_path / "iris_accuracy", {}, [claim("c", "s", 1, True, source="reproduction", criterion="c")])
    for name in ("histogram.png", "iris_accuracy.ipynb"):
        (tmp_path / "iris_accuracy" / name).write_text("")
    code, out, _ = run_main(capsys, "--project-dir", project, "stage", "iris_accuracy", "--results", tmp_path)
    stage = yaml.safe_load(out)["iris_accuracy"]
    assert code == 0 and stage["cmd"] == "shapley-research run iris_accuracy --update-results"
    assert stage["outs"] == [{"results/iris_accuracy/histogram.png": {"cache": False}},
                             {"results/iris_accuracy/iris_accuracy.ipynb": {"cache": False}},
                             {"results/iris_accuracy/run_info.json": {"cache": False}}]  # written by every run
    assert stage["metrics"] == [{"results/iris_accuracy/metrics.json": {"cache": False}}]
    code, out, _ = run_main(capsys, "--project-dir", project, "stage", "iris_accuracy", "--results", tmp_path,
                            "--write")
    report = {"cmd": "shapley-research report",  # the fixture has no README with report markers
              "deps": ["results/iris_accuracy/metrics.json", "results/iris_accuracy/run_info.json"],
              "outs": [{"results/README.md": {"cache": False}}]}
    assert code == 0 and yaml.safe_load((project / "dvc.yaml").read_text())["stages"] == {
        "iris_accuracy": stage, "report": report}
    (project / "dvc.yaml").unlink()


@pytest.mark.slow  # the command line in a subprocess: seconds
@pytest.mark.parametrize("override, message", [
    ("experiment.n_permutations=-5", "experiment.n_permutations=-5: expected an integer >= 2."),
    ("experiment.n_train=abc", "experiment.n_train='abc': expected an integer >= 2."),
])
def test_bad_configuration_fails_before_the_kernel_starts(tmp_path, override, message):
    """One line naming the key, exit status 2, and no kernel started (nothing executed, no stray kernel log)."""
    proc = subprocess.run(cli_command() + ["--project-dir", str(REPO), "run", "privacy_noise", override,
                                           f"output_dir={tmp_path}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"shapley-research: error: invalid configuration of privacy_noise: {message}"
    assert not (tmp_path / "privacy_noise" / "privacy_noise.ipynb").exists()  # composed and refused, never run


def test_runs_use_local_sockets_so_the_kernel_does_not_warn_about_tcp(quick_run):
    proc, _ = quick_run
    assert proc.returncode == 0
    assert "IPKernelApp" not in proc.stderr and "without encryption" not in proc.stderr


def test_summary_names_cited_papers_claims_as_such(tmp_path):
    from shapley_research.cli import summarize
    from shapley_research.experiments import claim

    claims = [claim("c", "s", 1.0, True, source="paper", section="Kwon & Zou (2023)", criterion="s > 0").to_dict()]
    cleaning = summarize("data_cleaning", "quick", tmp_path, {"claims": claims}, 1.0)
    assert "1 of 1 claims of the papers it cites hold" in cleaning and "(Kwon & Zou (2023))" in cleaning
    assert "1 of 1 claims of the paper hold" in summarize("sparsity", "quick", tmp_path, {"claims": claims}, 1.0)


def test_summary_counts_the_checks_set_aside_and_says_a_quick_run_is_no_evidence(tmp_path):
    from shapley_research.cli import summarize
    from shapley_research.experiments import claim

    claims = [claim("c", "s", 1.0, True, source="paper", section="Section 5", criterion="s > 0").to_dict(),
              claim("d", "s", 1.0, True, source="paper", section="Section 5", criterion="s > 0", sanity=True).to_dict()]
    quick = summarize("sparsity", "quick", tmp_path, {"claims": claims}, 1.0)
    assert "1 of 1 claims of the paper hold; 1 sanity or by-construction checks aside" in quick
    assert "only the paper profile's verdicts are evidence" in quick
    assert "evidence" not in summarize("sparsity", "paper", tmp_path, {"claims": claims[:1]}, 1.0)


@pytest.mark.slow  # starts a kernel
def test_a_kernel_is_shut_down_without_an_interrupt():
    """jupyter_client interrupts before a shutdown; a kernel busy with a message then logs an ERROR line at the
    end of a run that succeeded. The kernel manager of a run asks it to shut down, and nothing else."""
    import asyncio
    import signal

    from shapley_research._kernel import local_kernel_manager  # Internal: the signals reach no public output

    async def signals_at_shutdown() -> list[int]:
        manager = local_kernel_manager()(kernel_name=select_kernel())
        await manager.start_kernel()
        sent, send = [], manager.provisioner.send_signal

        async def record(signum: int) -> None:
            sent.append(signum)
            await send(signum)

        manager.provisioner.send_signal = record
        await manager.shutdown_kernel()
        return sent

    assert signal.SIGINT not in asyncio.run(signals_at_shutdown())
