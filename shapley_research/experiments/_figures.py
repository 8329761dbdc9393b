"""Figures of an experiment: the project's style, and each figure saved as PNG and PDF, or none in a run without.

matplotlib is imported only inside the functions that draw, so the command
line tool can import this module without paying for it. A run of the numbers
alone (``shapley-research run NAME --no-figures``, which sets
``SHAPLEY_RESEARCH_FIGURES=off`` for the kernel) draws and writes no figure:
drawing is about half of a quick run's time, and ``shapley-research compare``
reads none.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import _check_stem, experiment_dir

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FIGURE_DPI", "FIGURES_ENV", "figures_enabled", "save_figure", "setup_matplotlib"]

FIGURE_DPI = 150
#: Set to "off" (``shapley-research run --no-figures``) for a run of the numbers alone: no figure is drawn or saved.
FIGURES_ENV = "SHAPLEY_RESEARCH_FIGURES"


def figures_enabled() -> bool:
    """Whether this run draws its figures: unless ``SHAPLEY_RESEARCH_FIGURES`` is ``"off"`` (``run --no-figures``)."""
    return os.environ.get(FIGURES_ENV, "on") != "off"


def save_figure(fig: Figure, output_dir: str | os.PathLike, stem: str, pdf: bool = True) -> list[Path]:
    """Save ``fig`` as ``stem.png`` (150 dpi) and, by default, ``stem.pdf``.

    The figure stays open so that a notebook still displays it. In a run
    without figures (:func:`figures_enabled` false) nothing is drawn or
    written and the figure is closed.

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    stem = _check_stem(stem)
    if stem.endswith((".png", ".pdf")):
        raise ValueError(f"give the stem without an extension, got {stem!r}.")
    if not figures_enabled():
        import matplotlib.pyplot as plt

        plt.close(fig)
        return []
    folder = experiment_dir(output_dir)
    paths = [folder / f"{stem}.png"] + ([folder / f"{stem}.pdf"] if pdf else [])
    for path in paths:
        # A fixed CreationDate keeps the PDF byte-identical across identical runs.
        metadata = {"CreationDate": None} if path.suffix == ".pdf" else None
        fig.savefig(path, dpi=FIGURE_DPI, bbox_inches="tight", metadata=metadata)
    return paths


def setup_matplotlib() -> None:
    """Select a headless backend where needed and apply the project's figure style.

    Inside a Jupyter kernel the inline backend is kept, so executed notebooks
    show their figures; elsewhere (scripts, tests), and in a run without
    figures (:func:`figures_enabled` false), Agg is used, which needs no
    display and draws nothing until asked.
    """
    import matplotlib

    if "inline" not in matplotlib.get_backend() or not figures_enabled():
        matplotlib.use("Agg")
    matplotlib.rcParams.update({
        "figure.figsize": (6.0, 4.0),
        "figure.dpi": 100,
        "savefig.dpi": FIGURE_DPI,
        "font.size": 10,
        "axes.titlesize": 11,
        "axes.labelsize": 10,
        "legend.fontsize": 9,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        # Embed TrueType fonts: Type 3 fonts are rejected by many paper venues.
        "pdf.fonttype": 42,
        "ps.fonttype": 42,
        "svg.hashsalt": "shapley-research",
    })
