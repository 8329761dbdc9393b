"""Sphinx configuration of the documentation site.

Build (warnings are errors, broken cross-references too)::

    python -m sphinx -W --keep-going -n -b html docs docs/_build/html
    python -m http.server -d docs/_build/html     # then open http://localhost:8000

Two parts of the site are generated at build time, never committed:

* ``docs/api/``: one page per public name, from the ``__all__`` of
  ``shapley_research`` and of its subpackages (:data:`API_MODULES`);
* ``docs/reproduction/generated/``: one page per experiment, with its figures,
  claims and verdicts from ``results/NAME/metrics.json`` and its executed notebook
  copied from ``results/NAME/NAME.ipynb`` (rendered, not re-executed), written by
  ``shapley_research.experiments._report.write_docs_pages``, the generator of the
  README's results section.

``SHAPLEY_DOCS_EXPERIMENTS=iris_accuracy,sparsity`` limits the reproduction pages to
those experiments (the test suite's quicker build); empty means every one.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

from shapley_research.experiments import EXPERIMENT_NAMES  # noqa: E402
from shapley_research.experiments._report import write_docs_pages  # noqa: E402
from shapley_research.experiments._project import Project  # noqa: E402

project = "shapley-research"
author = "shapley-research developers"
copyright = "2026, shapley-research developers"
try:
    release = version = importlib.metadata.version("shapley-research")
except importlib.metadata.PackageNotFoundError:  # built from a checkout that is not installed
    release = version = ""

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.napoleon",
    "sphinx_copybutton",
    "myst_nb",
]

# --- sources -------------------------------------------------------------------------------------------------
exclude_patterns = ["_build", "**.ipynb_checkpoints", "jupyter_execute"]
# .rst first: autosummary writes its stubs with the first suffix
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # the notebooks are rendered with the outputs they were committed with
nb_merge_streams = True
# unknown_mime_type: the notebooks' widget outputs (progress bars) have a text fallback; ref.python: a
# docstring's type "ndarray of shape (n_players,)" links n_players to whichever class documents it
suppress_warnings = ["mystnb.unknown_mime_type", "ref.python"]

# --- API reference ----------------------------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
templates_path = ["_templates"]  # a class page: its docstring and documented members, no stub tables
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_preprocess_types = False

#: The modules whose public names the API reference lists; the top level first, then each subpackage's names
#: that the top level does not export.
API_MODULES = (
    ("shapley_research", "The top level: games, estimators, results"),
    ("shapley_research.games", "Games"),
    ("shapley_research.utilities", "Utilities: games of machine learning"),
    ("shapley_research.utilities.learners", "Batched learners and routing"),
    ("shapley_research.estimators", "Estimators: building blocks"),
    ("shapley_research.influence", "Influence-function heuristics"),
    ("shapley_research.evaluation", "Judging values: point removal"),
    ("shapley_research.result", "Results"),
    ("shapley_research.datasets", "Data sets"),
    ("shapley_research.attacks", "Adversarial examples"),
    ("shapley_research.experiments", "Experiments: claims, runs, reports"),
)


def public_names() -> dict[str, list[str]]:
    """Each API module's names, without those an earlier module of :data:`API_MODULES` lists."""
    seen: set[tuple] = set()
    listed: dict[str, list[str]] = {}
    for module_name, _ in API_MODULES:
        module = importlib.import_module(module_name)
        names = []
        for name in module.__all__:
            obj = getattr(module, name)
            # a function or class re-exported elsewhere is listed once; any other value by its own name
            # (an id of a temporary tuple would be reused by the next one and drop names at random)
            key = ("object", id(obj)) if callable(obj) or isinstance(obj, type) else ("value", module_name, name)
            if key not in seen:
                seen.add(key)
                names.append(name)
        listed[module_name] = names
    return listed


API_INTRO = """# API reference

Every name of `shapley_research.__all__`, then the public names each subpackage
adds (its `__all__`), from their numpy-style docstrings. The top level re-exports
the names most code needs: `from shapley_research import ModelUtility, permutation_shapley`.
Names defined in a private module (`_name.py`) are documented where they are public.
(Generated by `docs/conf.py` from the `__all__` lists at every build.)
"""


def write_api_pages(out: Path) -> None:
    """``api/index.md``: one autosummary table per module of :data:`API_MODULES` (stubs in ``api/generated/``)."""
    out.mkdir(parents=True, exist_ok=True)
    titles = dict(API_MODULES)
    lines = [API_INTRO]
    for module_name, names in public_names().items():
        if not names:
            continue
        lines += [f"## {titles[module_name]}", "", "```{eval-rst}", f".. automodule:: {module_name}", "",
                  ".. autosummary::",
                  "   :toctree: generated", "   :nosignatures:", ""]
        lines += [f"   {name}" for name in names] + ["```", ""]
    text = "\n".join(lines)
    target = out / "index.md"
    if not target.is_file() or target.read_text() != text:  # unchanged files keep incremental builds quick
        target.write_text(text)


def _experiments() -> tuple[str, ...]:
    wanted = [n for n in os.environ.get("SHAPLEY_DOCS_EXPERIMENTS", "").split(",") if n]
    return tuple(n for n in EXPERIMENT_NAMES if not wanted or n in wanted)


write_api_pages(DOCS / "api")
# pages of experiments left out by SHAPLEY_DOCS_EXPERIMENTS (written by an earlier, full build) are not read
exclude_patterns += [f"reproduction/generated/{name}{tail}" for name in EXPERIMENT_NAMES if name not in _experiments()
                     for tail in (".md", "/**")]
_project = Project.locate(ROOT)
write_docs_pages(ROOT, DOCS / "reproduction" / "generated", names=_experiments(),
                 descriptions={name: _project.description(name) for name in _project.available()})

# --- cross-references --------------------------------------------------------------------------------------------
nitpicky = True
_PUBLIC = {name for module_name, _ in API_MODULES for name in importlib.import_module(module_name).__all__}


def _documented_target(env, target: str):
    """The documented public object a private or partial path names, e.g. ``shapley_research.result.X`` -> ``X``.

    Matched on the last two components (``Class.method``), then on the last one; only a unique match counts.
    """
    parts = target.lstrip("~.").split(".")
    objects = env.get_domain("py").objects
    for k in (2, 1):
        if len(parts) < k:
            continue
        found = [name for name, entry in objects.items()
                 if name.split(".")[-k:] == parts[-k:] and entry.objtype != "module" and not entry.aliased]
        if len(found) == 1:
            return found[0]
    return None


def _resolve(app, env, node, contnode):
    """Resolve a Python reference through the public path of a name defined in a private module."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"]
    if not target.startswith("shapley_research.") and target.rsplit(".", 1)[-1] not in _PUBLIC:
        return None
    documented = _documented_target(env, target)
    if documented is None:
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(env, node["refdoc"], app.builder, "obj", documented, node, contnode)


def _keep_warning(app, domain, node) -> bool | None:
    """Warn only where a public name of this package fails to resolve; others render as plain text.

    A docstring may name a private helper (``run_sampling``) or an object of
    another library (``numpy.ndarray``): not documented here, so not a broken link.
    """
    target = node.get("reftarget", "")
    ours = target.startswith("shapley_research") or target.lstrip("~.").rsplit(".", 1)[-1] in _PUBLIC
    private = any(part.startswith("_") for part in target.lstrip("~.").split("."))
    return None if ours and not private else True


def setup(app):
    app.connect("missing-reference", _resolve)
    app.connect("warn-missing-reference", _keep_warning)


# --- HTML ----------------------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "shapley-research"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "header_links_before_dropdown": 4,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
# pages without sub-pages: no empty "Section Navigation" column, more width for their tables
html_sidebars = {page: [] for page in ("index", "getting_started", "tutorials/value_your_own_data", "benchmarks",
                                         "architecture", "citation")}
html_show_sourcelink = False
