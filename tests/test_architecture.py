"""Architecture of the package: imports point one way, units stay short, the public API is typed and lint-clean.

Import graph: every module of ``shapley_research`` is parsed with :mod:`ast`
(nothing is imported), and every ``import`` / ``from ... import`` of a
``shapley_research`` module counts, at module level *and* inside functions
(a lazy import inside a function hides a cycle, it does not remove it).
Relative imports are resolved against the importing module's package;
``from .pkg import name`` imports ``pkg.name`` if that is a module, else
``pkg``. A package's ``__init__`` importing its own submodules (to re-export
them) is fine, so edges from a package to its descendants are left out; a
submodule importing its parent package (``from .. import name``) counts.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest


PACKAGE = Path(__file__).resolve().parents[1] / "shapley_research"
MAX_LINES = 600
MAX_WIDTH = 120  # characters per line, in the package, the tests and the benchmarks

# ----------------------------------------------------------------------------- the import graph

def package_modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> source file, for every module under ``package`` (a package is its ``__init__``)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that module ``name`` imports anywhere in its source."""
    own_package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: level 1 is the module's own package, 2 its parent, ...
                base = own_package.split(".")
                if node.level - 1 >= len(base):
                    raise ValueError(f"{path}: relative import beyond the top-level package")
                base = base[:len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in modules else stem
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import a.b.c`: the deepest of our modules named
                target = target.rpartition(".")[0]
            if target:
                found.add(target)
    return found


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, without package-to-descendant edges and self-loops."""
    modules = package_modules(package)
    graph = {}
    for name, path in modules.items():
        edges = imported_modules(name, path, modules)
        if path.name == "__init__.py":
            edges = {t for t in edges if not t.startswith(name + ".")}
        graph[name] = edges - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle ``[a, b, ..., a]`` of ``graph``, or None (iterative depth-first search)."""
    state = {}  # absent: unvisited, 1: on the current path, 2: finished
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_no_import_cycles():
    cycle = find_cycle(import_graph(PACKAGE))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_graph_sees_relative_lazy_and_parent_imports():
    """Guard against a vacuous check: known edges of each kind are found."""
    graph = {name.removeprefix("shapley_research."): {t.removeprefix("shapley_research.") for t in targets}
             for name, targets in import_graph(PACKAGE).items()}
    assert "utilities._model_data" in graph["utilities._model"]  # from ._model_data import ...
    assert "utilities.learners" in graph["utilities._model"]  # from .learners import ...
    assert "utilities._model_data" in graph["utilities.learners._base"]  # from .._model_data import ...
    assert "utilities.learners._warm_prefix" in graph["utilities.learners._logistic"]
    assert "experiments" in graph["experiments.privacy_noise._claims"]  # from .. import claim, in a function
    assert "utilities.learners" in graph["experiments.adversarial._run"]  # from ...utilities.learners, likewise
    # a package re-exporting its own submodules is no edge
    assert not any(t.startswith("utilities.learners.") for t in graph["utilities.learners"])
    assert not graph["shapley_research"]


# The layers, bottom up: a module may import its own layer and the layers below it, never one above.
LAYERS = (
    {"_validation", "_threads", "_ordered", "_warnings", "_device", "result", "datasets"},
    {"games"},
    {"utilities", "attacks"},
    {"estimators"},
    {"influence", "evaluation", "_plots"},
    {"experiments"},
    {"cli", "_kernel"},
)


def layer_of(module: str) -> int | None:
    """The layer of a module of the package, from its first component under ``shapley_research``."""
    parts = module.split(".")
    if len(parts) == 1:  # the top-level __init__ re-exports every layer
        return None
    return next(i for i, layer in enumerate(LAYERS) if parts[1] in layer)


def test_every_top_level_module_has_a_layer():
    top = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert top == set().union(*LAYERS)


def test_imports_point_down_the_layers():
    upward = [f"{name} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})"
              for name, targets in import_graph(PACKAGE).items() if layer_of(name) is not None
              for target in targets if layer_of(target) is not None and layer_of(target) > layer_of(name)]
    assert not upward, "imports pointing up the layers:\n" + "\n".join(upward)


def test_a_cycle_through_a_lazy_import_is_found(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .a import f\n")
    (package / "a.py").write_text("from .sub import helper\n\ndef f():\n    return helper.g()\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "helper.py").write_text("def g():\n    from ..a import f  # lazy, still a cycle\n")
    assert find_cycle(import_graph(package)) == ["pkg.a", "pkg.sub.helper", "pkg.a"]
    (package / "sub" / "helper.py").write_text("def g():\n    return 1\n")
    assert find_cycle(import_graph(package)) is None


def test_a_child_importing_its_parent_package_counts(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .a import f\nfrom . import b\n")  # re-exports: fine
    (package / "a.py").write_text("def f():\n    return 1\n")
    (package / "b.py").write_text("from . import f\n")  # imports the parent __init__
    graph = import_graph(package)
    assert graph == {"pkg": set(), "pkg.a": set(), "pkg.b": {"pkg"}}
    (package / "a.py").write_text("import pkg.b\n")  # pkg.b -> pkg is fine; pkg.a -> pkg.b -> pkg too
    (package / "__init__.py").write_text("from .a import f\nimport json\nfrom pkg import b as _b\n")
    assert find_cycle(import_graph(package)) is None
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("from .a import *\n")
    assert find_cycle(import_graph(package)) == ["pkg.a", "pkg.b", "pkg.a"]


# ----------------------------------------------------------------------------- module length

def _line_counts() -> dict[str, int]:
    root = PACKAGE.parent
    return {path.relative_to(root).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
            for path in package_modules(PACKAGE).values()}


def test_no_module_is_too_long():
    too_long = {path: n for path, n in _line_counts().items() if n > MAX_LINES}
    assert not too_long, (f"modules over {MAX_LINES} lines (split them by role into private modules of a "
                          f"subpackage, as shapley_research/experiments/adversarial/): {too_long}")


def test_the_length_check_counts_lines():
    """Guard against a vacuous check: the package has many modules, and the longest is near the limit."""
    counts = _line_counts()
    assert len(counts) > 50 and max(counts.values()) > MAX_LINES // 2


def _wide_lines(root: Path) -> dict[str, list[int]]:
    wide = {}
    for folder in ("shapley_research", "tests", "benchmarks"):
        for path in sorted((root / folder).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            numbers = [i for i, line in enumerate(lines, 1) if len(line) > MAX_WIDTH]
            if numbers:
                wide[path.relative_to(root).as_posix()] = numbers
    return wide


def test_no_line_is_too_wide():
    wide = _wide_lines(PACKAGE.parent)
    assert not wide, f"lines over {MAX_WIDTH} characters (file: line numbers): {wide}"


def test_the_width_check_sees_a_wide_line(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("x = 1\n" + "y = '" + "a" * MAX_WIDTH + "'\n")
    assert _wide_lines(tmp_path) == {"tests/test_x.py": [2]}


# ----------------------------------------------------------------------------- function length

MAX_FUNCTION_LINES = 60  # code lines of one function, its docstring, comments and blank lines aside


def function_lengths(path: Path) -> dict[str, int]:
    """``"name:line"`` -> code lines, for every function and method of one source file (nested ones too)."""
    source = path.read_text(encoding="utf-8")
    text = source.splitlines()
    lengths = {}
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        lines = set(range(node.lineno, node.end_lineno + 1))
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            lines -= set(range(first.lineno, first.end_lineno + 1))
        lengths[f"{node.name}:{node.lineno}"] = sum(
            1 for n in lines if text[n - 1].strip() and not text[n - 1].strip().startswith("#"))
    return lengths


def test_no_function_is_too_long():
    too_long = {f"{path.relative_to(PACKAGE.parent).as_posix()}:{name}": n
                for path in package_modules(PACKAGE).values()
                for name, n in function_lengths(path).items() if n > MAX_FUNCTION_LINES}
    assert not too_long, (f"functions over {MAX_FUNCTION_LINES} code lines (split them into named units): "
                          f"{too_long}")


def test_the_function_length_check_counts_code_lines(tmp_path):
    source = tmp_path / "m.py"
    source.write_text('def f(x):\n    """Doc\n\n    string."""\n    # a comment\n\n    y = x\n    return y\n')
    assert function_lengths(source) == {"f:1": 3}


# ----------------------------------------------------------------------------- private modules

def owner_of(module: str) -> str | None:
    """The package that owns a private module: the one above its first ``_name`` component (None: public)."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_"):
            return ".".join(parts[:i])
    return None


def private_imports_across_packages(package: Path) -> list[str]:
    """``"importer -> private module"`` for every import of a private module from outside its owner."""
    found = []
    for name, targets in import_graph(package).items():
        for target in targets:
            owner = owner_of(target)
            if owner and owner != package.name and not (name == owner or name.startswith(owner + ".")):
                found.append(f"{name} -> {target}")
    return sorted(found)


def test_no_module_imports_another_package_private_modules():
    found = private_imports_across_packages(PACKAGE)
    assert not found, ("imports of another package's private module (import its public name from the package "
                       "instead, adding it to that package's __init__ if needed):\n" + "\n".join(found))


def test_the_private_import_check_sees_a_reach_across(tmp_path):
    package = tmp_path / "pkg"
    for sub in ("a", "b"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "_shared.py").write_text("X = 1\n")  # the top-level package's own: every module may use it
    (package / "a" / "_impl.py").write_text("from .._shared import X\n")
    (package / "a" / "__init__.py").write_text("from ._impl import X\n")
    (package / "b" / "use.py").write_text("from ..a import X\n")
    assert private_imports_across_packages(package) == []
    (package / "b" / "use.py").write_text("from ..a._impl import X\n")
    assert private_imports_across_packages(package) == ["pkg.b.use -> pkg.a._impl"]


# ----------------------------------------------------------------------------- types and lint

def public_callables() -> dict[str, object]:
    """Every function, method and property of the public API: the names in the public packages' ``__all__``."""
    import importlib
    import inspect
    import pkgutil

    import shapley_research

    found: dict[str, object] = {}

    def add(obj: object, qualname: str) -> None:
        if inspect.isclass(obj) and obj.__module__.startswith("shapley_research"):
            for name, member in vars(obj).items():
                if name.startswith("_") and name not in ("__init__", "__call__"):
                    continue
                function = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
                if inspect.isfunction(function) and function.__module__.startswith("shapley_research"):
                    found[f"{qualname}.{name}"] = function  # (not what typing.Protocol puts in as __init__)
        elif inspect.isfunction(obj) and obj.__module__.startswith("shapley_research"):
            found[qualname] = obj

    modules = [shapley_research] + [importlib.import_module(m.name) for m in pkgutil.walk_packages(
        shapley_research.__path__, "shapley_research.") if not any(p.startswith("_") for p in m.name.split("."))]
    for module in modules:
        for name in getattr(module, "__all__", ()):
            add(getattr(module, name), f"{module.__name__}.{name}")
    return found


def missing_annotations(function) -> list[str]:
    """The parameters (and ``return``) of ``function`` without an annotation (``self`` and ``cls`` aside)."""
    import inspect

    annotations = function.__annotations__
    missing = [p for p in inspect.signature(function).parameters if p not in ("self", "cls") and p not in annotations]
    if "return" not in annotations and function.__name__ != "__init__":
        missing.append("return")
    return missing


def test_the_public_api_is_fully_annotated():
    callables = public_callables()
    assert len(callables) > 200  # guard against a vacuous check
    missing = {name: gaps for name, function in callables.items() if (gaps := missing_annotations(function))}
    assert not missing, "public functions with unannotated parameters or return:\n" + "\n".join(
        f"{name}: {', '.join(gaps)}" for name, gaps in sorted(missing.items()))


def test_the_package_ships_its_types():
    assert (PACKAGE / "py.typed").is_file()


def _run_tool(*args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", *args], cwd=PACKAGE.parent, capture_output=True, text=True)


@pytest.mark.slow
def test_the_type_checker_is_clean():
    result = _run_tool("mypy")  # configured in pyproject.toml ([tool.mypy]); the test extra installs it
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_the_linter_is_clean():
    result = _run_tool("ruff", "check", "--no-cache", ".")  # configured in pyproject.toml ([tool.ruff])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


# ----------------------------------------------------------------------------- start-up

def _modules_loaded_by(code: str) -> list[str]:
    """The heavy dependencies loaded by running ``code`` in a fresh interpreter."""
    import subprocess
    import sys

    heavy = ("sklearn", "numba", "scipy.stats", "torch", "matplotlib")
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {heavy!r} if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return ast.literal_eval(proc.stdout.strip().splitlines()[-1])


def test_the_package_and_the_command_line_start_without_the_library():
    """Public names load on first use: `import shapley_research` and the CLI skip scikit-learn, numba, SciPy's stats
    (and matplotlib, which only the plots import, when called)."""
    assert _modules_loaded_by("import shapley_research") == []
    assert _modules_loaded_by("import shapley_research.cli") == []
    loaded = _modules_loaded_by("from shapley_research import permutation_shapley, plot_values")
    assert "sklearn" in loaded and "matplotlib" not in loaded


def test_every_public_name_and_subpackage_resolves_lazily():
    import shapley_research
    from shapley_research import estimators, games, result

    assert shapley_research.permutation_shapley is estimators.permutation_shapley
    assert shapley_research.Game is games.Game and shapley_research.ValuationResult is result.ValuationResult
    assert set(shapley_research.__all__) <= set(dir(shapley_research))
    assert shapley_research.experiments.__name__ == "shapley_research.experiments"
    with pytest.raises(AttributeError, match="no attribute 'permutation_shaply'"):
        shapley_research.permutation_shaply  # noqa: B018
