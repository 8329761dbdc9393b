"""Import a script of ``benchmarks/`` as a module, for tests of its helpers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str):
    """The module of ``benchmarks/<name>.py`` (executed once per call; its ``main`` is not run).

    It is executed as ``python benchmarks/<name>.py`` runs it, with ``benchmarks/`` first on ``sys.path``,
    so that its imports of its siblings by name (``_reference_games``, ``core_overhead``) resolve.
    """
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))  # one entry: a script that inserts its folder itself keeps its own
    return module
