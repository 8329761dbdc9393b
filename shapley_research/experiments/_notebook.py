"""Build experiment notebooks and read their ``parameters`` cell.

The conventions (see ``notebooks/README.md``): the first code cell is tagged
``parameters`` for papermill and holds only ``name = <literal>`` lines whose
values are the paper profile's; the command line tool injects the composed
configuration after it.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._device import cpu_model

if TYPE_CHECKING:
    from nbformat import NotebookNode

PARAMETERS_TAG = "parameters"
#: The notebooks' ``language_info``: with ``file_extension``, ``jupyter nbconvert --to script`` writes ``.py``.
LANGUAGE_INFO = {"name": "python", "file_extension": ".py", "mimetype": "text/x-python",
                 "nbconvert_exporter": "python", "pygments_lexer": "ipython3",
                 "codemirror_mode": {"name": "ipython", "version": 3}}

__all__ = ["PARAMETERS_TAG", "LANGUAGE_INFO", "build_notebook", "write_notebook", "parameters_cell",
           "notebook_defaults", "parameters_source", "write_parameters_cell", "RunRecorder", "PROVENANCE_KEYS",
           "PAPERMILL_HEADER", "injected_names", "LIBRARIES", "provenance", "run_info", "folder_state",
           "written_since", "clear_earlier_run"]


def build_notebook(parameters: str, cells: Iterable[str | tuple[str, str]], title: str | None = None,
                   kernel_name: str = "python3") -> NotebookNode:
    """Return a notebook whose first code cell is the tagged ``parameters`` cell.

    Parameters
    ----------
    parameters : str
        Source of the parameters cell: ``name = literal`` lines.
    cells : iterable of str or (kind, source)
        The following cells; a plain string is a code cell, ``("markdown", text)``
        a markdown cell.
    title : str, optional
        Markdown put first (papermill ignores markdown cells).
    kernel_name : str
        Recorded in the metadata; the command line tool picks the kernel that
        actually runs the notebook.

    Returns
    -------
    nbformat.NotebookNode
    """
    import nbformat.v4 as nbf

    _parse_parameters(parameters)  # fail now, not at papermill time
    nb_cells = [nbf.new_markdown_cell(title)] if title else []
    nb_cells.append(nbf.new_code_cell(parameters, metadata={"tags": [PARAMETERS_TAG]}))
    for cell in cells:
        if isinstance(cell, str):
            nb_cells.append(nbf.new_code_cell(cell))
        else:
            kind, source = cell
            if kind not in ("code", "markdown"):
                raise ValueError(f"cell kind must be 'code' or 'markdown', got {kind!r}.")
            nb_cells.append(nbf.new_code_cell(source) if kind == "code" else nbf.new_markdown_cell(source))
    nb = nbf.new_notebook(cells=nb_cells)
    nb.metadata["kernelspec"] = {"name": kernel_name, "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = dict(LANGUAGE_INFO)
    return nb


def write_notebook(nb: NotebookNode, path: str | os.PathLike) -> Path:
    """Validate ``nb`` and write it to ``path`` (nbformat 4)."""
    import nbformat

    nbformat.validate(nb)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def parameters_cell(path: str | os.PathLike) -> str:
    """Source of the notebook's ``parameters`` cell.

    Raises
    ------
    ValueError
        If no code cell is tagged ``parameters`` or it is not the first code cell.
    """
    # Plain JSON rather than nbformat: importing nbformat's validator takes seconds here.
    try:
        cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{path} is not a notebook: {err}") from None
    code = [cell for cell in cells if cell.get("cell_type") == "code"]
    tagged = [i for i, cell in enumerate(code) if PARAMETERS_TAG in cell.get("metadata", {}).get("tags", [])]
    if not tagged:
        raise ValueError(f"{path}: no code cell is tagged '{PARAMETERS_TAG}'; papermill could not inject "
                         "the configuration (see notebooks/README.md).")
    if tagged != [0]:
        raise ValueError(f"{path}: the '{PARAMETERS_TAG}' cell must be the first code cell and the only one.")
    source = code[0].get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _parse_parameters(source: str) -> dict[str, Any]:
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise ValueError(f"the parameters cell is not valid Python: {err}") from None
    values = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) and node.value is not None else None
        if not isinstance(target, ast.Name):
            raise ValueError(f"the parameters cell must hold only 'name = literal' lines; line {node.lineno} "
                             "is something else.")
        try:
            # node is an Assign, or an AnnAssign with a value: any other statement was refused above
            values[target.id] = ast.literal_eval(node.value)  # type: ignore[attr-defined]
        except ValueError:
            raise ValueError(f"parameter {target.id!r} (line {node.lineno}) must be a literal "
                             "(number, string, list, dict, True/False/None).") from None
    return values


def notebook_defaults(path: str | os.PathLike) -> dict[str, Any]:
    """The parameters a notebook declares, with their default values.

    Raises
    ------
    ValueError
        If the parameters cell is missing, misplaced, or holds anything but
        ``name = literal`` lines.
    """
    try:
        return _parse_parameters(parameters_cell(path))
    except ValueError as err:
        if str(err).startswith(str(path)):
            raise
        raise ValueError(f"{path}: {err}") from None


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a Python literal too, with double quotes
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(_literal, value)) + "]"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    raise TypeError(f"a notebook parameter must be a string, number, boolean, None or list, got {value!r}.")


def parameters_source(params: dict[str, Any]) -> str:
    """The ``parameters`` cell holding ``params``: one ``name = literal`` line each, in order.

    The inverse of :func:`notebook_defaults`' parsing: parsing the source gives
    ``params`` back.
    """
    return "".join(f"{key} = {_literal(value)}\n" for key, value in params.items())


def write_parameters_cell(path: str | os.PathLike, source: str) -> bool:
    """Replace the source of the notebook's ``parameters`` cell; return whether the file changed.

    Only that cell's ``"source"`` is rewritten, in nbformat's layout; every
    other byte of the file is kept (a notebook is a DVC dependency of its
    stage, and its other cells must not change).

    Raises
    ------
    ValueError
        If the parameters cell is missing or misplaced, ``source`` holds
        anything but ``name = literal`` lines, or the cell's source cannot be
        found in the file as nbformat writes it.
    """
    _parse_parameters(source)
    path = Path(path)
    old = parameters_cell(path)
    if old == source:
        return False
    text = path.read_text(encoding="utf-8")

    def layout(cell_source: str) -> str:  # nbformat: indent 1, cell keys at depth 3
        lines = json.dumps(cell_source.splitlines(keepends=True), indent=1, ensure_ascii=False)
        return '"source": ' + lines.replace("\n", "\n   ")

    if text.count(layout(old)) != 1:
        raise ValueError(f"{path}: cannot locate the parameters cell's source in the file; write the cell "
                         "with Jupyter instead.")
    path.write_text(text.replace(layout(old), layout(source)), encoding="utf-8")
    return True


#: The comment papermill puts first in the cell it injects (``papermill.translators``, ``comment="Parameters"``).
PAPERMILL_HEADER = "# Parameters\n"


def injected_names() -> list[str] | None:
    """The names papermill injected into this kernel, from its latest ``injected-parameters`` cell.

    Read from IPython's input history: the latest cell whose source starts
    with papermill's header (:data:`PAPERMILL_HEADER`). ``None`` outside
    IPython or when no such cell ran (a run in Jupyter or plain Python).
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None:
        return None
    history = list(getattr(getattr(shell, "history_manager", None), "input_hist_raw", None) or [])
    for source in reversed(history):
        if isinstance(source, str) and source.startswith(PAPERMILL_HEADER):
            try:
                tree = ast.parse(source)
            except SyntaxError:
                return None
            return [target.id for node in tree.body if isinstance(node, ast.Assign)
                    for target in node.targets if isinstance(target, ast.Name)]
    return None


#: The distributions whose versions ``run_info.json`` records (the bit-for-bit promise depends on them).
LIBRARIES = ("shapley-research", "numpy", "scipy", "scikit-learn", "torch", "foolbox", "cvxpy")
#: The fields of ``run_info.json`` that describe where a run ran, not what it found: ``shapley-research
#: compare`` and the rerun tests never compare them (nor the measured times beside them).
PROVENANCE_KEYS = ("python", "libraries", "cpu")


def provenance() -> dict[str, Any]:
    """Where a run ran: the Python and library versions and the CPU, as ``run_info.json`` records them.

    Returns
    -------
    dict
        ``python`` (e.g. ``"3.12.3"``), ``libraries`` (each of :data:`LIBRARIES`
        to its installed version, ``None`` when it is not installed; read from
        the installed distributions' metadata, so nothing is imported) and
        ``cpu``: ``model`` (the processor's name, ``None`` if unknown),
        ``logical_cores`` (``os.cpu_count()``) and ``usable_cores`` (those this
        process may run on).
    """
    import importlib.metadata
    import platform

    libraries: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            libraries[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            libraries[name] = None
    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on every platform
        usable = os.cpu_count()
    return {"python": platform.python_version(), "libraries": libraries,
            "cpu": {"model": cpu_model(), "logical_cores": os.cpu_count(), "usable_cores": usable}}


def run_info(name: str, profile: str, wall_seconds: float, cpu_seconds: float,
             overrides: Sequence[str] = (), outputs: Sequence[str] = ()) -> dict[str, Any]:
    """The content of ``run_info.json``: the run, its measured times and files, then its :func:`provenance`.

    ``experiment``, ``profile``, then ``overrides`` where the command line
    gave any (``KEY=VALUE`` as typed: what made a ``"custom"`` profile),
    ``wall_seconds`` and ``cpu_seconds`` (rounded to 0.1 s), then
    ``outputs`` where given (the files the run wrote into its folder, which
    the next run into that folder removes: :func:`clear_earlier_run`) come
    first; the provenance fields (:data:`PROVENANCE_KEYS`) follow. Two runs of
    one configuration differ in this file only;
    :func:`~shapley_research.experiments.compare_runs` does not compare it.
    """
    given = {"overrides": list(overrides)} if overrides else {}
    written = {"outputs": sorted(outputs)} if outputs else {}
    return {"experiment": name, "profile": profile, **given, "wall_seconds": round(wall_seconds, 1),
            "cpu_seconds": round(cpu_seconds, 1), **written, **provenance()}


def folder_state(run_dir: Path) -> dict[str, tuple[int, int]]:
    """Each file of ``run_dir`` (relative, ``/``-separated) with its modification time (ns) and size.

    Taken before a run, so that :func:`written_since` finds what the run
    wrote by comparison, not by a clock (a file saved just before the run
    is not the run's).
    """
    if not run_dir.is_dir():
        return {}
    state = {}
    for path in run_dir.rglob("*"):
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            state[path.relative_to(run_dir).as_posix()] = (stat.st_mtime_ns, stat.st_size)
    return state


def written_since(run_dir: Path, before: dict[str, tuple[int, int]]) -> list[str]:
    """The files of ``run_dir`` new or changed since :func:`folder_state` gave ``before``: a run's outputs.

    Left out: ``run_info.json`` itself, executed notebooks (``*.ipynb``:
    papermill writes its output notebook wherever it is asked to, and a
    rerun overwrites it), symbolic links, and the folders of
    :data:`KEPT_FOLDERS` (what a run keeps for the next one).
    """
    from ._report import RUN_INFO_FILE

    return sorted(name for name, state in folder_state(run_dir).items()
                  if before.get(name) != state and not name.endswith(".ipynb")
                  and name.split("/")[-1] != RUN_INFO_FILE and name.split("/")[0] not in KEPT_FOLDERS)


def clear_earlier_run(run_dir: Path) -> list[str]:
    """Remove what an earlier run wrote into ``run_dir``, so that none of it passes for the coming run's.

    Those are the files its ``run_info.json`` lists as ``outputs`` (a run
    without figures leaves no earlier run's figures beside its results), its
    ``metrics.json`` and ``run_info.json``; anything else in the folder stays.
    A listed name outside the folder is left alone, and a symbolic link is
    removed, never what it points to.

    Returns
    -------
    list of str
        The files removed, relative to ``run_dir``.

    Raises
    ------
    OSError
        If a file cannot be removed (held open, or without permission).
    """
    from ._common import METRICS_FILE
    from ._report import RUN_INFO_FILE

    try:
        listed = json.loads((run_dir / RUN_INFO_FILE).read_text()).get("outputs", [])
    except (OSError, ValueError, AttributeError):  # none, unreadable, or not a run's: nothing listed
        listed = []
    names = [item for item in listed if isinstance(item, str)] if isinstance(listed, list) else []
    root, removed = run_dir.resolve(), []
    for name in dict.fromkeys([*names, METRICS_FILE, RUN_INFO_FILE]):
        path = run_dir / name
        if not path.parent.resolve().is_relative_to(root) or not (path.is_symlink() or path.is_file()):
            continue
        path.unlink()
        removed.append(name)
    return removed


#: A run's folder for what it keeps for the next run (generated data): never an output a rerun removes.
CACHE_FOLDER = "cache"
#: adversarial's ``resume_dir`` in its run folder: the finished replication variants a run stopped with Ctrl-C
#: resumes from.
RESUME_FOLDER = "replications_resume"
#: Every such folder: ``cache/`` (the adversarial quick profile's generated images, privacy_noise's finished
#: draws) and :data:`RESUME_FOLDER` (listed as a stopped run's outputs, the next run would remove them first).
KEPT_FOLDERS = (CACHE_FOLDER, RESUME_FOLDER)
#: How much older than the run's start a ``metrics.json`` may look and still be the run's (file-time granularity).
MTIME_SLACK_S = 2.0


class RunRecorder:
    """Writes ``run_info.json`` as ``shapley-research run`` does, for a notebook run any other way.

    Called after every cell of the kernel (IPython's ``post_run_cell``; at exit
    in plain Python), it writes once this run's ``metrics.json`` exists, so a
    run that stops early records nothing; the last cell's call leaves the
    whole run's times.
    """

    active: "RunRecorder | None" = None

    def __init__(self, name: str, profile: str, run_dir: Path):
        import time

        self.info = {"experiment": name, "profile": profile}
        self.run_dir = run_dir
        self.started, self.cpu_started, self.before = time.time(), _cpu_seconds(), folder_state(run_dir)

    def __call__(self, *_: Any) -> None:
        import time

        from ._common import METRICS_FILE
        from ._report import RUN_INFO_FILE

        metrics = self.run_dir / METRICS_FILE
        # A metrics.json older than the run is an earlier run's. File times come from a coarse clock (a few ms;
        # 2 s on FAT), so one written just after the start can look older than time.time() was then.
        if not metrics.is_file() or metrics.stat().st_mtime < self.started - MTIME_SLACK_S:
            return
        info = run_info(self.info["experiment"], self.info["profile"], time.time() - self.started,
                        _cpu_seconds() - self.cpu_started, outputs=written_since(self.run_dir, self.before))
        (self.run_dir / RUN_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")

    def install(self) -> None:
        """Call after every cell from now on, in place of the recorder of an earlier check in this kernel."""
        import atexit

        try:
            from IPython import get_ipython

            shell = get_ipython()
        except ImportError:
            shell = None
        previous, RunRecorder.active = RunRecorder.active, self
        if shell is None:
            atexit.register(self)
            if previous is not None:
                atexit.unregister(previous)
            return
        if previous is not None and previous in shell.events.callbacks["post_run_cell"]:
            shell.events.unregister("post_run_cell", previous)
        shell.events.register("post_run_cell", self)


def _cpu_seconds() -> float:
    """CPU seconds of this process, its finished children and (with psutil) its live ones.

    A notebook run in Jupyter or by plain papermill keeps joblib's worker
    processes alive between cells; without them its CPU time would be this
    process's alone.
    """
    import resource

    total = sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))
    try:
        import psutil
    except ImportError:  # pragma: no cover - Jupyter's kernel installs it
        return total
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:  # ended meanwhile: counted with the finished children once reaped
            continue
        total += times.user + times.system
    return total
