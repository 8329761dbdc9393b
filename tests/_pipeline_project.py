"""Assemble a throw-away project from the real conf/ and the pipeline fixture (tests/fixtures/pipeline_project).

The fixture's iris_accuracy is a stand-in for the runner's tests, not the experiment.
"""

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "pipeline_project"


def make_project(root: Path) -> Path:
    """Copy the real ``conf/config.yaml`` and ``conf/profile/`` to ``root``, then the fixture over them."""
    (root / "conf").mkdir(parents=True)
    shutil.copy(REPO / "conf" / "config.yaml", root / "conf" / "config.yaml")
    shutil.copytree(REPO / "conf" / "profile", root / "conf" / "profile")
    shutil.copytree(FIXTURE / "conf", root / "conf", dirs_exist_ok=True)
    shutil.copytree(FIXTURE / "notebooks", root / "notebooks")
    return root
