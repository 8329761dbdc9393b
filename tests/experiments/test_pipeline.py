"""The reproduction pipeline's conventions (conf/README.md, notebooks/README.md) and DVC stages.

The checks of the real project cover every experiment that has any of its files; while none exists they
check that nothing is half added. The same checks run on the pipeline fixture, and `dvc repro` runs it once.
"""

import os
import shutil
import subprocess

import pytest
import yaml
from _pipeline_project import REPO, make_project

from shapley_research.experiments import (EXPERIMENT_NAMES, Project, check_parameters, claim, notebook_defaults,
                                          notebook_parameters, write_dvc_stage, write_metrics)
from shapley_research.experiments._dvc_stages import library_deps, stage_cmd, stage_deps
from shapley_research.experiments._report import BEGIN, END

REAL = Project(REPO)


def _path_and_options(entry):
    """A dvc.yaml out/dep entry is 'path' or {'path': {options}}."""
    if isinstance(entry, str):
        return entry, {}
    (path, options), = entry.items()
    return path, options or {}


def stage_problems(root, name, stage) -> list[str]:
    """Everything in a dvc.yaml stage that breaks the convention of conf/README.md."""
    problems = []
    prefix = f"results/{name}/"
    if stage.get("cmd") != stage_cmd(name):
        problems.append(f"cmd should be {stage_cmd(name)!r}, got {stage.get('cmd')!r}")
    deps = [_path_and_options(d)[0] for d in stage.get("deps", [])]
    problems += [f"missing dep {d}" for d in stage_deps(root, name) if d not in deps]
    problems += [f"dep on an executed notebook {d}" for d in deps
                 if d.endswith(".ipynb") and d != f"notebooks/{name}.ipynb"]
    problems += [f"dep on its own output {d}" for d in deps if d.startswith(prefix)]
    outs = dict(_path_and_options(o) for o in stage.get("outs", []))
    problems += [f"out outside {prefix}: {o}" for o in outs if not o.startswith(prefix)]
    executed = f"{prefix}{name}.ipynb"
    if executed not in outs:
        problems.append(f"{executed} must be an out")
    problems += [f"{o} must have cache: false (results are committed to git)" for o, options in outs.items()
                 if options.get("cache", True)]
    if f"{prefix}metrics.json" in outs:
        problems.append("metrics.json must be declared under metrics, not outs")
    metrics = [_path_and_options(m) for m in stage.get("metrics", [])]
    if metrics != [(f"{prefix}metrics.json", {"cache": False})]:
        problems.append(f"metrics should be [{prefix}metrics.json with cache: false], got {metrics}")
    return problems


def check_notebook_matches_paper_profile(project: Project, name: str) -> None:
    """The notebook declares exactly its parameters, with the paper profile's values; quick differs."""
    paper = notebook_parameters(project.compose(name, ["profile=paper"]), name)
    quick = notebook_parameters(project.compose(name, ["profile=quick"]), name)
    expected = dict(paper, output_dir=f"scratch/{name}")  # git-ignored: a run by hand never writes results/
    assert notebook_defaults(project.notebook(name)) == expected, (
        f"the parameters cell of notebooks/{name}.ipynb should hold the paper profile's values: "
        f"run `shapley-research params {name} --write`")
    assert quick["profile"] == "quick"
    changed = {k for k in paper if paper[k] != quick[k]} - {"output_dir", "profile"}
    assert changed, f"conf/experiment_profile/{name}/quick.yaml changes no parameter: quick is not smaller"
    assert project.description(name), f"conf/experiment/{name}.yaml needs a one-line description"


@pytest.mark.slow  # over a second
@pytest.mark.parametrize("name", EXPERIMENT_NAMES)
def test_experiment_files_are_complete(name):
    missing = REAL.missing(name)
    if len(missing) == 2 + len(REAL.profiles()):
        pytest.skip(f"{name} is not added yet")
    assert not missing, f"{name} is half added: missing {missing} (conf/README.md, 'Adding an experiment')"
    check_notebook_matches_paper_profile(REAL, name)


def test_profiles_are_quick_and_paper():
    assert REAL.profiles() == ["paper", "quick"]
    for profile in REAL.profiles():
        assert yaml.safe_load((REAL.conf_dir / "profile" / f"{profile}.yaml").read_text())["name"] == profile
    config = yaml.safe_load((REAL.conf_dir / "config.yaml").read_text())
    assert config["defaults"][0] == {"profile": "paper"}
    assert {k: config[k] for k in ("output_dir", "seed", "n_jobs")} == {"output_dir": "scratch", "seed": 0,
                                                                         "n_jobs": -1}  # every core


def test_dvc_yaml_has_a_conforming_stage_per_experiment():
    available = REAL.available()
    path = REPO / "dvc.yaml"
    if not path.exists():
        assert not available, f"dvc.yaml is missing; add stages with `shapley-research stage NAME --write` " \
                              f"for {available}"
        return
    stages = yaml.safe_load(path.read_text()).get("stages") or {}
    assert set(available) <= set(stages), f"experiments without a stage: {set(available) - set(stages)}"
    problems = {name: stage_problems(REPO, name, stage) for name, stage in stages.items()
                if name in EXPERIMENT_NAMES}
    assert not any(problems.values()), problems
    # Auxiliary stages (cached inputs of an experiment, the report) go through the package too.
    for name, stage in stages.items():
        if name not in EXPERIMENT_NAMES:
            assert stage["cmd"].startswith(("shapley-research ", "python -m shapley_research.")), (
                f"stage {name} bypasses the package")
            outs = dict(_path_and_options(o) for o in stage.get("outs", []))
            assert all(not o.get("cache", True) for o in outs.values()), f"stage {name} caches an out"


def test_library_deps_cover_the_package_but_not_other_experiments():
    deps = library_deps(REPO, "sparsity")
    assert "shapley_research/cli.py" in deps and "shapley_research/estimators" in deps
    assert "shapley_research/experiments/_common.py" in deps
    assert all(not d.startswith("shapley_research/experiments/") or d.split("/")[-1].startswith(("_", "sparsity"))
               for d in deps)
    assert not any("__pycache__" in d for d in deps)


def test_stage_validator_flags_violations():
    bad = {"cmd": "shapley-research run sparsity profile=quick",
           "deps": ["results/iris_accuracy/iris_accuracy.ipynb", "results/sparsity/x.csv"],
           "outs": ["results/sparsity", "elsewhere/fig.png"],
           "metrics": ["results/sparsity/metrics.json"]}
    text = "\n".join(stage_problems(REPO, "sparsity", bad))
    for expected in ("cmd should be", "missing dep notebooks/sparsity.ipynb", "dep on an executed notebook",
                     "dep on its own output", "out outside results/sparsity/", "sparsity.ipynb must be an out",
                     "must have cache: false",
                     "metrics should be"):
        assert expected in text


def test_fixture_notebook_follows_the_convention(tmp_path):
    check_notebook_matches_paper_profile(Project(make_project(tmp_path)), "iris_accuracy")


@pytest.mark.slow  # runs dvc, papermill or jupyter in a subprocess
@pytest.mark.skipif(not (shutil.which("dvc") and shutil.which("shapley-research")),
                    reason="needs dvc and the shapley-research script on PATH")
def test_dvc_repro_runs_the_generated_stage_once(tmp_path):
    root = make_project(tmp_path / "project")
    project = Project(root)
    # The generator lists the files a finished run left; write that file set by hand to avoid a second run.
    fake = tmp_path / "fake"
    write_metrics(fake / "iris_accuracy", {}, [claim("c", "s", 1, True, source="reproduction", criterion="c")])
    for name in ("histogram.png", "histogram.pdf", "samples.csv", "iris_accuracy.ipynb", "run_info.json"):
        (fake / "iris_accuracy" / name).write_text("")
    # A README with the report markers: the report stage rewrites its section, so declares it (persisted).
    (root / "README.md").write_text(f"# Project\n\n{BEGIN}\n{END}\n\nHand-written text.\n")
    dvc_yaml = write_dvc_stage(project, "iris_accuracy", fake)
    stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
    assert {"README.md": {"cache": False, "persist": True}} in stages["report"]["outs"]
    stage = stages["iris_accuracy"]
    assert stage_problems(root, "iris_accuracy", stage) == []

    env = dict(os.environ, DVC_NO_ANALYTICS="1")

    def dvc(*args):
        return subprocess.run(["dvc", *args], cwd=root, env=env, capture_output=True, text=True, timeout=300)

    assert dvc("init", "--no-scm", "-q").returncode == 0
    for option in ("core.analytics", "core.check_update"):
        dvc("config", option, "false")
    repro = dvc("repro")
    assert repro.returncode == 0, repro.stdout + repro.stderr
    assert ("iris_accuracy (profile=paper): 1 of 1 claims of the paper hold; 1 of 1 checks of this "
            "reproduction hold") in repro.stdout
    run_dir = root / "results" / "iris_accuracy"
    declared = {path for path, _ in map(_path_and_options, stage["outs"] + stage["metrics"])}
    written = {f"results/iris_accuracy/{p.name}" for p in run_dir.iterdir()}
    assert written == declared  # and no .gitignore: nothing is cached, results stay in git
    readme = (root / "README.md").read_text()  # the table of verdicts, linked into the full report
    assert "| [iris_accuracy](results/README.md#iris_accuracy) | 1 of 1 |" in readme and "Hand-written text." in readme
    assert "| P1 | The sample mean is within three standard errors" in (root / "results" / "README.md").read_text()
    assert "up to date" in dvc("status").stdout
    # Only the paper profile's files are dependencies of `dvc repro`.
    with open(root / "conf" / "experiment_profile" / "iris_accuracy" / "quick.yaml", "a") as f:
        f.write("# edited\n")
    assert "up to date" in dvc("status").stdout
    with open(root / "conf" / "experiment" / "iris_accuracy.yaml", "a") as f:
        f.write("# edited\n")
    assert "modified:           conf/experiment/iris_accuracy.yaml" in dvc("status").stdout


@pytest.mark.parametrize("name", EXPERIMENT_NAMES)
@pytest.mark.parametrize("profile", ["paper", "quick"])
def test_every_parameter_is_typed_and_both_profiles_pass(name, profile):
    from shapley_research.experiments._schema import parameter_problems

    if REAL.missing(name):
        pytest.skip(f"{name} is not added yet")
    params = notebook_parameters(REAL.compose(name, [f"profile={profile}"]), name)
    assert parameter_problems(name, params, require_specs=True) == []


@pytest.mark.parametrize("key, value, expected", [
    ("n_permutations", -5, "experiment.n_permutations=-5: expected an integer >= 2."),
    ("n_train", "abc", "experiment.n_train='abc': expected an integer >= 2."),
    ("delta", 1.5, "experiment.delta=1.5: expected a number in (0, 1)."),
    ("epsilons", [1, "x"], "experiment.epsilons=[1, 'x']: expected a non-empty list, each a number > 0."),
    ("epsilons", [], "experiment.epsilons=[]: expected a non-empty list, each a number > 0."),
    ("clamp", 1, "experiment.clamp=1: expected true or false."),
    ("n_test", float("nan"), "experiment.n_test=nan: expected an integer >= 1."),
])
def test_parameter_checks_name_the_key_and_the_expectation(key, value, expected):
    params = notebook_parameters(REAL.compose("privacy_noise", ["profile=quick"]), "privacy_noise")
    with pytest.raises(ValueError) as refused:
        check_parameters("privacy_noise", {**params, key: value})
    assert str(refused.value).split("\n") == [expected]  # one line per problem


@pytest.mark.slow  # over a second
@pytest.mark.parametrize("name", EXPERIMENT_NAMES)
def test_notebook_declares_its_language_and_checks_its_parameters_first(name):
    import nbformat

    from shapley_research.experiments._notebook import LANGUAGE_INFO, PARAMETERS_TAG

    if REAL.missing(name):
        pytest.skip(f"{name} is not added yet")
    nb = nbformat.read(REAL.notebook(name), as_version=4)
    assert nb.metadata["language_info"]["file_extension"] == ".py"
    assert nb.metadata["language_info"] == LANGUAGE_INFO
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert PARAMETERS_TAG in code[0].metadata.get("tags", [])
    assert f"check_notebook_parameters({name!r}, globals())" in code[1].source


@pytest.mark.slow  # runs dvc, papermill or jupyter in a subprocess
@pytest.mark.skipif(not shutil.which("jupyter"), reason="needs jupyter on PATH")
def test_nbconvert_writes_a_python_script(tmp_path):
    proc = subprocess.run(["jupyter", "nbconvert", "--to", "script", str(REAL.notebook("sparsity")), "--output-dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["sparsity.py"]
    assert "check_notebook_parameters('sparsity', globals())" in (tmp_path / "sparsity.py").read_text()


@pytest.mark.slow  # runs dvc, papermill or jupyter in a subprocess
@pytest.mark.skipif(not shutil.which("papermill"), reason="needs papermill on PATH")
def test_papermill_recipe_refuses_a_list_passed_with_p(tmp_path):
    """notebooks/README.md: a list given with -p reaches the notebook as a string; the check cell says so."""
    proc = subprocess.run(["papermill", str(REAL.notebook("sparsity")), str(tmp_path / "out.ipynb"), "-p",
                           "output_dir", str(tmp_path / "sparsity"), "-p", "permutation_grid", "[5, 20]"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "experiment.permutation_grid='[5, 20]': expected a non-empty list" in proc.stderr
    assert "give lists as YAML with -y" in proc.stderr
    assert not (tmp_path / "sparsity").exists()  # stopped before any work
