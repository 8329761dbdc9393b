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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PARAMETERS_TAG = "parameters"
#: The notebooks' ``language_info``: with ``file_extension``, ``jupyter nbconvert --to script`` writes ``.py``.
LANGUAGE_INFO = {"name": "python", "file_extension": ".py", "mimetype": "text/x-python",
                 "nbconvert_exporter": "python", "pygments_lexer": "ipython3",
                 "codemirror_mode": {"name": "ipython", "version": 3}}

__all__ = ["PARAMETERS_TAG", "LANGUAGE_INFO", "build_notebook", "write_notebook", "parameters_cell",
           "notebook_defaults"]


def build_notebook(parameters: str, cells: Iterable[str | tuple[str, str]], title: str | None = None,
                   kernel_name: str = "python3"):
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


def write_notebook(nb, path: str | os.PathLike) -> Path:
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
            values[target.id] = ast.literal_eval(node.value)
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
