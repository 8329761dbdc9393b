"""The DVC stages that reproduce the experiments: each stage's command, dependencies and outputs.

One stage per experiment runs its notebook with the paper profile into the
committed ``results/NAME/`` (``shapley-research run NAME --update-results``);
its dependencies are the files that can change its results (:func:`stage_deps`);
``adversarial_examples`` caches the attacked images (:data:`AUX_STAGES`) and
``report`` gathers every experiment's verdicts. ``shapley-research stage NAME
--write`` writes a stage into ``dvc.yaml`` (:func:`write_dvc_stage`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import EXPERIMENT_NAMES
from ._common import METRICS_FILE
from ._project import CONFIG_DIR, NOTEBOOK_DIR, RESULTS_DIR, SCRATCH_DIR, Project, ProjectError, check_name

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
                           f"first (it writes {SCRATCH_DIR}/{name}/), then give `--results {SCRATCH_DIR}`, so the "
                           "stage can list the files the experiment writes.")
    prefix = f"{RESULTS_DIR}/{name}"
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
    """The command of experiment ``name``'s stage: the default (paper) profile, into the committed results."""
    return f"shapley-research run {check_name(name)} --update-results"


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
# `persist`: DVC keeps the files when a dependency changes, and the command rewrites only the
# files whose cache key (settings and generating code) changed, in seconds otherwise.
AUX_STAGES: dict[str, dict[str, dict[str, Any]]] = {
    "adversarial": {
        "adversarial_examples": {
            "cmd": "python -m shapley_research.experiments.adversarial generate",
            "deps": ["conf/config.yaml", "conf/profile/paper.yaml", "conf/experiment/adversarial.yaml",
                     "conf/experiment_profile/adversarial/paper.yaml", "shapley_research/attacks",
                     "shapley_research/_validation.py", "shapley_research/experiments/_project.py",
                     "shapley_research/experiments/_common.py", "shapley_research/experiments/_schema.py",
                     "shapley_research/experiments/adversarial"],
            "outs": [{"data/adversarial": {"cache": False, "persist": True}}],
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
              "# Convention: conf/README.md. Checked by tests/experiments/test_pipeline.py.\n")
    path.write_text(header + yaml.safe_dump(document, sort_keys=False, default_flow_style=False))
    return path
