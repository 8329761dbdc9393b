"""The project layout the pipeline runs in: configuration, notebooks, results.

A project directory holds ``conf/`` (hydra configuration, see
``conf/README.md``) and ``notebooks/`` (one notebook per experiment, see
``notebooks/README.md``). A run writes to ``scratch/NAME/`` (git-ignored) unless
it is asked to update the committed results ``results/NAME/``
(``shapley-research run NAME --update-results``, what the DVC stages run);
see :mod:`._paths`. This module finds that directory, composes
an experiment's configuration and turns it into notebook parameters; the DVC
stage that reproduces an experiment is in :mod:`._dvc_stages`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import EXPERIMENT_NAMES

CONFIG_DIR = "conf"
NOTEBOOK_DIR = "notebooks"
RESULTS_DIR = "results"
#: Where a run writes unless asked to update the committed results: ``ROOT/scratch/NAME``, ignored by git.
SCRATCH_DIR = "scratch"
#: Set to ``"1"`` by ``shapley-research run --update-results`` for the notebook's kernel: the one way a run
#: may write into the committed ``ROOT/results/`` (the DVC stages' command).
UPDATE_RESULTS_ENV = "SHAPLEY_RESEARCH_UPDATE_RESULTS"
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


def user_sets(overrides: list[str], key: str) -> bool:
    """Whether the hydra ``overrides`` set ``key`` (``key=...``, with an optional ``+``, ``++`` or ``~`` prefix)."""
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
        removed = [override for override in overrides if override.startswith("~")]
        if removed:  # the notebook's own default (the paper profile's) would stand in, unrecorded
            raise ProjectError(f"invalid overrides {' '.join(removed)} for {name!r}: every parameter needs a value; "
                               "set it (KEY=VALUE) instead of removing it.")
        for key in ("experiment", "experiment_profile"):
            if user_sets(overrides, key):
                raise ProjectError(f"'{key}' is chosen by the experiment name; drop that override and "
                                   f"set parameters as experiment.KEY=VALUE.")
        try:
            with initialize_config_dir(config_dir=str(self.conf_dir), version_base="1.3",
                                       job_name="shapley_research"):
                cfg = compose(config_name="config", overrides=[f"experiment={name}", *overrides])
            config = OmegaConf.to_container(cfg, resolve=True)
        except (HydraException, OmegaConfBaseException) as err:
            raise ProjectError(self._override_help(name, overrides, err)) from None
        base = Path.cwd() if user_sets(overrides, "output_dir") else self.root
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
        valid = [k for k in keys if k != "experiment"] + [f"experiment.{k}" for k in experiment]
        message += "".join(f"\n  {hint}" for hint in _override_hints(overrides, valid))
        return (message + f"\nValid overrides: profile={'|'.join(self.profiles())}, "
                + ", ".join(f"{k}=..." for k in keys if k not in ("experiment", "profile"))
                + (", " + ", ".join(f"experiment.{k}=..." for k in experiment) if experiment else "") + ".")


def _override_hints(overrides: list[str], valid: list[str]) -> list[str]:
    """``KEY: did you mean ...?`` for each override whose key is no valid one but is close to one."""
    import difflib

    hints = []
    for override in overrides:
        key = override.split("=", 1)[0].lstrip("+~")
        if key in valid:
            continue
        close = [f"experiment.{key}"] if f"experiment.{key}" in valid else difflib.get_close_matches(key, valid, n=1)
        if close:
            hints.append(f"{key}: did you mean {close[0]}?")
    return hints


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
        name = notebook.stem
        raise ProjectError(f"{notebook} does not declare {', '.join(undeclared)} in its parameters cell, "
                           f"which is generated from conf/: a parameter of {name} is a key of "
                           f"{CONFIG_DIR}/experiment/{name}.yaml with a type in "
                           "shapley_research/experiments/_schema.py; add it there and run "
                           f"`shapley-research params {name} --write`, or drop the override.")


# --- one source of parameters: the notebook's cell is generated, every run records its profile ---------

#: What a run whose parameters match no profile of ``conf/`` records as its profile.
CUSTOM_PROFILE = "custom"
#: Set to ``"cli"`` by ``shapley-research run`` for the notebook's kernel: the command records the run itself.
RUNNER_ENV = "SHAPLEY_RESEARCH_RUNNER"
# Parameters that do not change what a run computes: left out when matching a run to a profile.
_NOT_COMPARED = ("output_dir", "profile", "n_jobs")


def generated_parameters(project: Project, name: str) -> dict[str, Any]:
    """The values of notebook ``name``'s ``parameters`` cell: the default (paper) composition of ``conf/``.

    ``output_dir`` is ``scratch/NAME``, relative to the project root wherever
    the notebook runs (:func:`~._paths.resolve_notebook_paths`): a notebook run by hand
    never writes over the committed ``results/NAME``.
    """
    return dict(notebook_parameters(project.compose(name), name), output_dir=f"{SCRATCH_DIR}/{name}")


def _where(name: str, key: str) -> tuple[str, str]:
    """The file a parameter's value lives in, and the override that changes it for one run."""
    if key in ("output_dir", "seed", "n_jobs"):
        return f"{CONFIG_DIR}/config.yaml", key
    if key == "profile":
        return f"{CONFIG_DIR}/profile/", key
    return f"{CONFIG_DIR}/experiment/{name}.yaml", f"experiment.{key}"


def _override(option: str, value: Any) -> str:
    import shlex

    from ._notebook import _literal

    text = value if isinstance(value, str) else _literal(value)
    return shlex.quote(f"{option}={text}")


def notebook_sync_problems(project: Project, name: str) -> list[str]:
    """How notebook ``name``'s ``parameters`` cell departs from :func:`generated_parameters` (empty if not).

    One line per parameter, saying where it lives; an edited cell would
    otherwise be silently replaced by the configuration's values at run time.
    """
    return _cell_against_conf(project, name)[0]


def _cell_against_conf(project: Project, name: str) -> tuple[list[str], list[str]]:
    """:func:`notebook_sync_problems`, and the overrides that give one run the values an edited cell holds."""
    from ._notebook import notebook_defaults

    try:
        found = notebook_defaults(project.notebook(name))
    except ValueError as err:
        return [str(err)], []
    expected = generated_parameters(project, name)
    problems, overrides = [], []
    for key, value in found.items():
        where, option = _where(name, key)
        if key not in expected:
            problems.append(f"{key} is not a parameter of {name}: give it a value in {where} and a type in "
                            "shapley_research/experiments/_schema.py, not in the notebook.")
        elif value != expected[key]:
            problems.append(f"{key} lives in {where} ({key} = {expected[key]!r} there), not in the notebook "
                            f"({value!r}); edit it there or pass {_override(option, value)} to "
                            "shapley-research run.")
            if key != "output_dir":
                overrides.append(_override(option, value))
    problems += [f"{key} ({_where(name, key)[0]}) is missing from the cell." for key in expected if key not in found]
    return problems, overrides


def check_notebook_in_sync(project: Project, name: str, given: Sequence[str] = ()) -> None:
    """Raise :class:`ProjectError` unless the notebook's ``parameters`` cell holds the configuration's values.

    The message says what to do in both cases, since either side may have been edited: the cell (restore it,
    then pass its values as overrides, after the refused command's own ``given`` overrides) or conf/
    (regenerate the cell).
    """
    problems, overrides = _cell_against_conf(project, name)
    if problems:
        cell_keys = [override.split("=", 1)[0] for override in overrides]
        command = [o for o in given if not any(user_sets([o], key) for key in cell_keys)] + overrides
        once = (f"To run the cell's values once: `shapley-research params {name} --write` restores the cell "
                f"(the run refuses an edited one), then `shapley-research run {name} {' '.join(command)}`. "
                if overrides else "")
        raise ProjectError(f"the parameters cell of {NOTEBOOK_DIR}/{name}.ipynb differs from conf/ (the one "
                           "source of parameters):\n  " + "\n  ".join(problems) + f"\n{once}After an edit of "
                           f"conf/, `shapley-research params {name} --write` regenerates the cell.")


def profile_key_problems(project: Project, name: str) -> list[str]:
    """Keys of ``conf/experiment_profile/NAME/*.yaml`` that ``conf/experiment/NAME.yaml`` lacks.

    A profile only changes parameters the experiment has; a misspelt key would
    otherwise add a parameter.
    """
    from omegaconf import OmegaConf

    keys = set(OmegaConf.load(project.experiment_conf(name)))
    problems = []
    for path in sorted((project.conf_dir / "experiment_profile" / name).glob("*.yaml")):
        extra = [key for key in (OmegaConf.load(path) or {}) if key not in keys]
        problems += [f"{CONFIG_DIR}/experiment_profile/{name}/{path.name}: {key} is not a parameter of {name} "
                     f"(those are the keys of {CONFIG_DIR}/experiment/{name}.yaml)." for key in extra]
    return problems


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def profile_of(project: Project, name: str, params: dict[str, Any]) -> str:
    """The profile whose composed parameters ``params`` are, or ``CUSTOM_PROFILE`` (``"custom"``).

    Every parameter counts but ``output_dir``, ``profile`` and ``n_jobs``
    (results do not depend on them): a changed ``seed`` is a custom run.
    """
    for profile in project.profiles():
        composed = notebook_parameters(project.compose(name, [f"profile={profile}"]), name)
        keys = [key for key in composed if key not in _NOT_COMPARED]
        if all(key in params and _plain(params[key]) == _plain(composed[key]) for key in keys):
            return profile
    return CUSTOM_PROFILE


def run_profile(project: Project, name: str, params: dict[str, Any], overrides: list[str] | tuple[str, ...]) -> str:
    """The profile a ``shapley-research run`` with ``overrides`` records: :func:`profile_of` its parameters.

    Overrides of ``profile``, ``output_dir`` and ``n_jobs`` alone leave the
    chosen profile's values, which need no comparison.
    """
    if all(any(user_sets([o], key) for key in _NOT_COMPARED) for o in overrides):
        return params["profile"]
    return profile_of(project, name, params)


def _refuse_a_passed_profile_name(name: str, passed: Any, profile: str, project: Project | None) -> None:
    """Refuse ``papermill -p profile quick`` where the values are another profile's: the name selects nothing.

    A notebook takes its values from its parameters cell and ``-p``; the
    paper profile's run would start (minutes) while the user asked for a
    quick one.
    """
    from ._notebook import injected_names

    if (project is None or passed == profile or passed not in project.profiles()
            or "profile" not in (injected_names() or [])):
        return
    these = "match no profile" if profile == CUSTOM_PROFILE else f"are the {profile} profile's"
    raise ValueError(f"profile={passed!r} was passed, but a notebook takes its values from its parameters cell and "
                     f"-p, not from a profile's name: these parameters {these}. For the {passed} profile run "
                     f"`shapley-research run {name} profile={passed}`, or pass its values with -p.")


def record_notebook_run(name: str, namespace: dict[str, Any]) -> None:
    """Record a notebook run that ``shapley-research run`` did not start (plain papermill, Jupyter).

    Sets ``namespace["profile"]`` to :func:`profile_of` the parameters (the
    notebook's default says ``"paper"`` whatever papermill passed), so the
    results name the profile that ran, removes what an earlier run left in
    ``OUTPUT_DIR`` (:func:`~shapley_research.experiments.clear_earlier_run`),
    and writes ``OUTPUT_DIR/run_info.json`` with the fields the command writes
    once the run has written its ``metrics.json``. Does nothing under ``shapley-research run``
    (:data:`RUNNER_ENV`), which records its runs itself.
    """
    if os.environ.get(RUNNER_ENV) == "cli":
        return
    project: Project | None = None
    try:
        project = Project.locate()
        profile = profile_of(project, name, namespace)
    except ProjectError:  # no conf/ to compare with: nothing says which profile this is
        project, profile = None, CUSTOM_PROFILE
    _refuse_a_passed_profile_name(name, namespace.get("profile"), profile, project)
    if namespace.get("profile") != profile:
        match = "match no profile of conf/" if profile == CUSTOM_PROFILE else f"are conf/'s {profile} profile"
        print(f"The parameters {match}: recorded as profile = {profile!r}.")
        namespace["profile"] = profile
    from ._notebook import RunRecorder, clear_earlier_run

    run_dir = Path(str(namespace["output_dir"]))
    replaced = clear_earlier_run(run_dir)
    if replaced:
        print(f"Replacing the earlier run in {run_dir} ({len(replaced)} files removed).")
    RunRecorder(name, profile, run_dir).install()
