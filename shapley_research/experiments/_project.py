"""The project layout the pipeline runs in: configuration, notebooks, results.

A project directory holds ``conf/`` (hydra configuration, see
``conf/README.md``) and ``notebooks/`` (one notebook per experiment, see
``notebooks/README.md``); results go to ``results/NAME/``. This module finds
that directory, composes an experiment's configuration, turns it into
notebook parameters, and writes the DVC stage that reproduces an experiment.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import EXPERIMENT_NAMES
from ._common import METRICS_FILE

CONFIG_DIR = "conf"
NOTEBOOK_DIR = "notebooks"
RESULTS_DIR = "results"
# Keys of an experiment's configuration that describe it rather than parameterise it.
META_KEYS = ("description",)
PACKAGE_DIR = Path(__file__).resolve().parents[1]


class ProjectError(Exception):
    """A user-facing problem with the project, an experiment name, or overrides."""


def _is_project(path: Path) -> bool:
    return (path / CONFIG_DIR / "config.yaml").is_file() and (path / NOTEBOOK_DIR).is_dir()


def find_project_dir(start: str | os.PathLike | None = None) -> Path:
    """The nearest directory at or above ``start`` with ``conf/config.yaml`` and ``notebooks/``.

    Falls back to the source checkout that holds this package (editable
    installs), so the tool works from anywhere on a developer's machine.

    Raises
    ------
    ProjectError
        If neither is a project directory.
    """
    here = Path.cwd() if start is None else Path(start)
    here = here.resolve()
    for candidate in (here, *here.parents):
        if _is_project(candidate):
            return candidate
    if _is_project(PACKAGE_DIR.parent):
        return PACKAGE_DIR.parent
    raise ProjectError(f"no project directory (one with {CONFIG_DIR}/config.yaml and {NOTEBOOK_DIR}/) at or "
                       f"above {here}; run from inside the project or pass --project-dir.")


def check_name(name: str) -> str:
    """Return ``name`` if it is one of the fixed experiment names, else raise :class:`ProjectError`."""
    if name not in EXPERIMENT_NAMES:
        raise ProjectError(f"unknown experiment {name!r}; the experiments are: {', '.join(EXPERIMENT_NAMES)}.")
    return name


def _user_sets(overrides: list[str], key: str) -> bool:
    # Hydra override syntax: an optional +, ++ or ~ prefix, then key=value.
    pattern = re.compile(rf"^(\+\+|\+|~)?{re.escape(key)}(=|$)")
    return any(pattern.match(o) for o in overrides)


@dataclass(frozen=True)
class Project:
    """A project directory and the paths of its experiments."""

    root: Path

    @classmethod
    def locate(cls, project_dir: str | os.PathLike | None = None) -> "Project":
        """The project at ``project_dir`` (checked), or the one found from the working directory."""
        if project_dir is None:
            return cls(find_project_dir())
        root = Path(project_dir).resolve()
        if not _is_project(root):
            raise ProjectError(f"{project_dir} is not a project directory: it needs {CONFIG_DIR}/config.yaml "
                               f"and {NOTEBOOK_DIR}/.")
        return cls(root)

    @property
    def conf_dir(self) -> Path:
        return self.root / CONFIG_DIR

    def experiment_conf(self, name: str) -> Path:
        """``conf/experiment/NAME.yaml``: the experiment's protocol and paper-scale parameters."""
        return self.conf_dir / "experiment" / f"{check_name(name)}.yaml"

    def profile_conf(self, name: str, profile: str) -> Path:
        """``conf/experiment_profile/NAME/PROFILE.yaml``: the experiment's settings for one profile."""
        return self.conf_dir / "experiment_profile" / check_name(name) / f"{profile}.yaml"

    def notebook(self, name: str) -> Path:
        return self.root / NOTEBOOK_DIR / f"{check_name(name)}.ipynb"

    def profiles(self) -> list[str]:
        return sorted(p.stem for p in (self.conf_dir / "profile").glob("*.yaml"))

    def missing(self, name: str) -> list[str]:
        """Files an experiment lacks to be runnable, relative to the root (empty when runnable)."""
        needed = [self.experiment_conf(name), self.notebook(name)]
        needed += [self.profile_conf(name, p) for p in self.profiles()]
        return [str(p.relative_to(self.root)) for p in needed if not p.is_file()]

    def available(self) -> list[str]:
        """The experiments this project can run, in the fixed order."""
        return [name for name in EXPERIMENT_NAMES if not self.missing(name)]

    def description(self, name: str) -> str:
        """The one-line ``description`` of ``conf/experiment/NAME.yaml`` (empty if none)."""
        from omegaconf import OmegaConf

        path = self.experiment_conf(name)
        if not path.is_file():
            return ""
        return " ".join(str(OmegaConf.load(path).get("description", "")).split())

    def compose(self, name: str, overrides: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
        """Compose ``conf/`` for experiment ``name`` with hydra overrides, as a plain resolved dict.

        A relative ``output_dir`` given as an override is taken relative to
        the working directory, as on any command line; the configured default
        is relative to the project root, so ``dvc repro`` and a run from a
        subdirectory both write to ``ROOT/results``. The returned
        ``output_dir`` is absolute and is the parent of the experiment's own
        directory.

        Raises
        ------
        ProjectError
            If files are missing or an override is invalid, with hydra's reason.
        """
        from hydra import compose, initialize_config_dir
        from hydra.errors import HydraException
        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException

        missing = self.missing(name)
        if missing:
            raise ProjectError(f"experiment {name!r} cannot run in {self.root}: missing {', '.join(missing)}.")
        overrides = list(overrides)
        for key in ("experiment", "experiment_profile"):
            if _user_sets(overrides, key):
                raise ProjectError(f"'{key}' is chosen by the experiment name; drop that override and "
                                   f"set parameters as experiment.KEY=VALUE.")
        try:
            with initialize_config_dir(config_dir=str(self.conf_dir), version_base="1.3",
                                       job_name="shapley_research"):
                cfg = compose(config_name="config", overrides=[f"experiment={name}", *overrides])
            config = OmegaConf.to_container(cfg, resolve=True)
        except (HydraException, OmegaConfBaseException) as err:
            raise ProjectError(self._override_help(name, overrides, err)) from None
        base = Path.cwd() if _user_sets(overrides, "output_dir") else self.root
        config["output_dir"] = str((base / str(config["output_dir"])).resolve())
        return config

    def _override_help(self, name: str, overrides: list[str], err: Exception) -> str:
        # Hydra's own message suggests '+key=value' for unknown keys, but a key
        # the notebook does not declare is refused later anyway: list the keys.
        reason = str(err).split("\nConfig search path:")[0].strip()
        if "To append to your config use" in reason:
            reason = reason.split("\n")[0].rstrip(".") + ": no such key."
        cause = err.__cause__
        if cause is not None and str(cause).strip() and "no such key" not in reason:
            reason += f"\n  {str(cause).splitlines()[0]}"
        message = f"invalid overrides {' '.join(overrides) or '(none)'} for {name!r}:\n  {reason}"
        if not overrides:  # the configuration itself is broken: no valid keys to list
            return message.replace("invalid overrides (none)", "invalid configuration")
        try:
            keys = self.compose(name)
        except ProjectError:
            return message
        experiment = [k for k in keys["experiment"] if k not in META_KEYS]
        return (message + f"\nValid overrides: profile={'|'.join(self.profiles())}, "
                + ", ".join(f"{k}=..." for k in keys if k not in ("experiment", "profile"))
                + (", " + ", ".join(f"experiment.{k}=..." for k in experiment) if experiment else "") + ".")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def notebook_parameters(config: dict[str, Any], name: str) -> dict[str, Any]:
    """Flatten a composed configuration into the notebook's parameters.

    The experiment's keys (except :data:`META_KEYS`) become top-level
    parameters, beside ``output_dir`` (the experiment's own directory,
    ``OUTPUT_DIR/NAME``), ``profile`` (the profile's name), ``seed``,
    ``n_jobs``, and any further keys of the profile.

    Raises
    ------
    ProjectError
        If an experiment key would shadow a common parameter.
    """
    seed, n_jobs = config["seed"], config["n_jobs"]
    if not _is_int(seed) or seed < 0:
        raise ProjectError(f"seed must be an integer >= 0, got {seed!r}.")
    if not _is_int(n_jobs) or not (n_jobs >= 1 or n_jobs == -1):
        raise ProjectError(f"n_jobs must be an integer >= 1, or -1 for all cores, got {n_jobs!r}.")
    profile = dict(config["profile"])
    params = {"output_dir": str(Path(config["output_dir"]) / check_name(name)), "profile": profile.pop("name"),
              "seed": config["seed"], "n_jobs": config["n_jobs"]}
    profile.pop("description", None)
    params.update(profile)
    for key, value in config["experiment"].items():
        if key in META_KEYS:
            continue
        if key in params:
            raise ProjectError(f"conf/experiment/{name}.yaml: key {key!r} clashes with the common parameter of "
                               "that name; rename it.")
        params[key] = value
    return params


def check_declared(notebook: Path, params: dict[str, Any]) -> None:
    """Raise :class:`ProjectError` unless the notebook declares every parameter it is given.

    papermill only warns about parameters a notebook does not declare, and
    the run then silently ignores them; a typo in a configuration key would
    go unnoticed.
    """
    from ._notebook import notebook_defaults

    try:
        declared = notebook_defaults(notebook)
    except ValueError as err:
        raise ProjectError(str(err)) from None
    undeclared = sorted(set(params) - set(declared))
    if undeclared:
        raise ProjectError(f"{notebook} does not declare {', '.join(undeclared)} in its parameters cell; "
                           "declare them there (with the paper profile's values) or remove them from conf/.")


# --- DVC --------------------------------------------------------------------------------------------------

# Experiments whose packages another experiment's package imports (its stage depends on them too).
IMPORTS_EXPERIMENTS = {"mlp_cleaning": ("data_cleaning", "iris_accuracy")}


def library_deps(root: Path, name: str) -> list[str]:
    """The package sources that can change experiment ``name``'s results, relative to ``root``.

    Every module of the library and the experiment helpers, and the
    experiment's own package ``shapley_research/experiments/NAME/`` (or module
    ``NAME.py``) if it exists; never the other experiments' code, so editing
    one experiment re-runs only it, except the packages it imports
    (:data:`IMPORTS_EXPERIMENTS`).
    """
    package = root / "shapley_research"
    if not package.is_dir():
        return []
    deps = []
    for path in sorted(package.iterdir()):
        if path.name.startswith((".", "__pycache__")):
            continue
        if path.is_dir() and path.name != "experiments" and any(path.rglob("*.py")):
            deps.append(path)
        elif path.suffix == ".py":
            deps.append(path)
    experiments = package / "experiments"
    deps += sorted(p for p in experiments.glob("*.py") if p.name.startswith("_"))
    own = [experiments / name, experiments / f"{name}.py"]
    own += [experiments / other for other in IMPORTS_EXPERIMENTS.get(name, ())]
    deps += [path for path in own if path.is_file() or (path.is_dir() and any(path.rglob("*.py")))]
    return [p.relative_to(root).as_posix() for p in deps]


def dvc_stage(project: Project, name: str, results_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """The ``dvc.yaml`` stage that reproduces experiment ``name`` with the paper profile.

    Outputs are the files a finished run left in ``RESULTS/NAME/`` (any
    profile: the file names must not depend on it). They are listed one by
    one because ``metrics.json`` sits in the same directory and DVC forbids
    overlapping outputs. None is cached by DVC (``cache: false``): the results
    are committed to git. The executed notebook carries timestamps, so
    nothing may depend on it.

    Raises
    ------
    ProjectError
        If the experiment has not been run yet (no ``metrics.json``).
    """
    results = Path(results_dir) if results_dir is not None else project.root / RESULTS_DIR
    run_dir = results / check_name(name)
    if not (run_dir / METRICS_FILE).is_file():
        raise ProjectError(f"no {METRICS_FILE} in {run_dir}; run `shapley-research run {name} profile=quick` "
                           "first, so the stage can list the files the experiment writes.")
    prefix = f"{RESULTS_DIR}/{name}"
    executed = f"{name}.ipynb"
    from ._report import RUN_INFO_FILE

    # run_info.json is written by every `shapley-research run`, even if this directory predates it.
    files = sorted({p.name for p in run_dir.iterdir() if p.is_file() and not p.name.startswith(".")}
                   | {RUN_INFO_FILE})
    # Nothing is cached by DVC: the paper profile's results are committed to git so readers
    # of the repository see them (a cached out would be git-ignored by DVC).
    outs: list[Any] = [{f"{prefix}/{f}": {"cache": False}} for f in files if f != METRICS_FILE]
    aux_outs = [next(iter(o)) for stage in AUX_STAGES.get(name, {}).values() for o in stage["outs"]]
    return {"cmd": stage_cmd(name), "deps": stage_deps(project.root, name) + aux_outs, "outs": outs,
            "metrics": [{f"{prefix}/{METRICS_FILE}": {"cache": False}}]}


def stage_cmd(name: str) -> str:
    """The command of experiment ``name``'s stage: the default (paper) profile and output directory."""
    return f"shapley-research run {check_name(name)}"


def stage_deps(root: Path, name: str) -> list[str]:
    """Everything that can change experiment ``name``'s paper-profile results, relative to ``root``."""
    return [f"{NOTEBOOK_DIR}/{name}.ipynb", f"{CONFIG_DIR}/config.yaml", f"{CONFIG_DIR}/profile/paper.yaml",
            f"{CONFIG_DIR}/experiment/{name}.yaml", f"{CONFIG_DIR}/experiment_profile/{name}/paper.yaml",
            *library_deps(root, name)]


REPORT_STAGE = "report"

# Inputs an experiment generates once and caches as pipeline outputs, so that they are
# regenerated only when what they are made from changes: experiment -> {stage: definition}.
# Unlike the results they are kept out of git (.gitignore) and out of DVC's cache: they move
# between machines by rounding only, and a fresh clone's `dvc repro` regenerates them.
AUX_STAGES: dict[str, dict[str, dict[str, Any]]] = {
    "adversarial": {
        "adversarial_examples": {
            "cmd": "python -m shapley_research.experiments.adversarial generate",
            "deps": ["conf/config.yaml", "conf/profile/paper.yaml", "conf/experiment/adversarial.yaml",
                     "conf/experiment_profile/adversarial/paper.yaml", "shapley_research/attacks",
                     "shapley_research/_validation.py", "shapley_research/experiments/_project.py",
                     "shapley_research/experiments/_common.py", "shapley_research/experiments/_schema.py",
                     "shapley_research/experiments/adversarial"],
            "outs": [{"data/adversarial": {"cache": False}}],
        },
    },
}


def report_stage(root: Path, names: list[str]) -> dict[str, Any]:
    """The stage collecting every experiment's verdicts and timings into ``results/README.md``.

    Where the project's README has the report markers, the stage also
    refreshes that section, so a finished ``dvc repro`` leaves no stale
    numbers. The README is then declared as an output too (every file a stage
    writes is), with ``persist`` (DVC must not delete it before the stage
    runs: the stage rewrites only its results section) and without cache (it
    is tracked by git). Editing the README by hand therefore changes the
    stage's output: record the edit with ``dvc commit report``.
    """
    from ._report import BEGIN

    deps = [f"{RESULTS_DIR}/{n}/{f}" for n in names for f in (METRICS_FILE, "run_info.json")]
    deps += [d for d in ("shapley_research/experiments/_report.py",) if (root / d).is_file()]
    readme = root / "README.md"
    cmd = "shapley-research report"
    outs = [{f"{RESULTS_DIR}/README.md": {"cache": False}}]
    if readme.is_file() and BEGIN in readme.read_text():
        cmd += " --readme README.md"
        outs.append({"README.md": {"cache": False, "persist": True}})
    return {"cmd": cmd, "deps": deps, "outs": outs}


def write_dvc_stage(project: Project, name: str, results_dir: str | os.PathLike | None = None) -> Path:
    """Add or replace experiment ``name``'s stage in ``ROOT/dvc.yaml``; other stages are kept, in order."""
    import yaml

    path = project.root / "dvc.yaml"
    document = yaml.safe_load(path.read_text()) if path.is_file() else None
    document = document or {}
    stages = document.setdefault("stages", {}) or {}
    stages[name] = dvc_stage(project, name, results_dir)
    experiments = [n for n in EXPERIMENT_NAMES if n in stages]  # the fixed order: small diffs
    ordered = {}
    for experiment in experiments:
        ordered.update(AUX_STAGES.get(experiment, {}))
        ordered[experiment] = stages[experiment]
    ordered[REPORT_STAGE] = report_stage(project.root, experiments)
    document["stages"] = ordered
    header = ("# Generated by `shapley-research stage NAME --write`; regenerate rather than edit by hand.\n"
              "# Convention: conf/README.md. Checked by tests/test_pipeline.py.\n")
    path.write_text(header + yaml.safe_dump(document, sort_keys=False, default_flow_style=False))
    return path
