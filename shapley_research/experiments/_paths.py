"""Where a run writes: relative paths from the project root, and the committed results kept from stray runs.

A run writes to ``ROOT/scratch/NAME/`` (git-ignored) unless asked to update
the committed ``ROOT/results/NAME/``, which only ``shapley-research run NAME
--update-results`` does (the DVC stages' command, with the paper profile).
A notebook's relative paths are taken from the project root wherever it runs,
and every path shown is the path written: relative to the working directory
when inside it, else absolute.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._project import RESULTS_DIR, SCRATCH_DIR, UPDATE_RESULTS_ENV, Project, ProjectError

__all__ = ["shown_path", "results_guard", "resolve_notebook_paths", "project_relative", "working_directory"]


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def project_relative(root: Path, path: str | os.PathLike) -> str:
    """``path`` relative to the project ``root`` (POSIX separators) when inside it, else absolute.

    What a run records (papermill's injected ``output_dir``, the executed
    notebook's input and output paths) is written this way, so that an
    executed notebook is the same file whichever directory the project was
    cloned into.
    """
    path, root = Path(path).resolve(), root.resolve()
    return path.relative_to(root).as_posix() if _inside(path, root) and path != root else str(path)


@contextlib.contextmanager
def working_directory(folder: Path) -> Iterator[None]:
    """Run the block with ``folder`` as the working directory; the caller's restored after."""
    previous = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def shown_path(path: str | os.PathLike) -> str:
    """``path`` as shown to the user: relative to the working directory when inside it, else absolute."""
    path = Path(path).resolve()
    here = Path.cwd().resolve()
    return str(path.relative_to(here)) if _inside(path, here) and path != here else str(path)


def results_guard(root: Path, output_dir: str | os.PathLike, name: str, update: bool) -> None:
    """Raise :class:`ProjectError` if a run would write into the committed ``ROOT/results/`` unasked.

    The committed results are the paper profile's, written by
    ``shapley-research run NAME --update-results`` (the DVC stages' command);
    every other run writes elsewhere (by default ``ROOT/scratch/NAME``).
    """
    results = (root / RESULTS_DIR).resolve()
    if not update and _inside(Path(output_dir).resolve(), results):
        raise ProjectError(f"output_dir {shown_path(output_dir)} is inside {shown_path(results)}, the committed "
                           f"results; only `shapley-research run {name} --update-results` (the DVC stages' "
                           "command, paper profile) replaces them. Write elsewhere: the default is "
                           f"{shown_path(root / SCRATCH_DIR / name)} (git-ignored).")


def resolve_notebook_paths(name: str, namespace: dict[str, Any]) -> None:
    """Resolve a notebook's relative paths from the project root, and keep it out of the committed results.

    ``output_dir`` (and ``cache_dir``, where the experiment has one) given as
    a relative path, as in the notebooks' ``parameters`` cell
    (``scratch/NAME``), is taken from the project root, wherever the notebook
    runs (Jupyter starts kernels in ``notebooks/``); ``namespace`` gets the
    path as written: relative to the working directory when inside it, else
    absolute (then printed). An ``output_dir`` inside ``ROOT/results/`` is
    refused unless ``shapley-research run --update-results`` started the
    kernel (:data:`UPDATE_RESULTS_ENV`).

    Raises
    ------
    ValueError
        If ``output_dir`` lies inside the committed ``results/`` unasked.
    """
    try:
        root = Project.locate().root
    except ProjectError:  # no project: relative paths stay relative to the working directory
        return
    for key in ("output_dir", "cache_dir"):
        value = namespace.get(key)
        if not isinstance(value, str) or Path(value).is_absolute():
            continue
        shown = shown_path(root / value)
        if shown != value:
            print(f"{key} = {shown!r} ({value!r} from the project root {root})")
            namespace[key] = shown
    try:
        results_guard(root, str(namespace["output_dir"]), name, os.environ.get(UPDATE_RESULTS_ENV) == "1")
    except ProjectError as err:
        raise ValueError(str(err)) from None
