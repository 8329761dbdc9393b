"""The generated results report and the README section it refreshes."""

import json
from pathlib import Path

import pytest

from shapley_research.experiments import claim, write_metrics
from shapley_research.experiments._report import BEGIN, END, build_report, replace_section

REPO = Path(__file__).resolve().parents[1]


def make_run(results, name, holds, figures=("fig.png",)):
    write_metrics(results / name, {"x": 1.0}, [claim(f"claim of {name}", "stat", 0.5, holds)])
    for figure in figures:
        (results / name / figure).write_bytes(b"")
    (results / name / "run_info.json").write_text(json.dumps(
        {"experiment": name, "profile": "paper", "wall_seconds": 60.0, "cpu_seconds": 50.0}))


def test_report_lists_figures_claims_verdicts_and_times(tmp_path):
    make_run(tmp_path, "sparsity", True)
    make_run(tmp_path, "iris_accuracy", False)
    text = build_report(tmp_path, "results/", {"sparsity": "MNIST sparsity."})
    assert text.index("### iris_accuracy") < text.index("### sparsity")  # the fixed experiment order
    assert "![sparsity: fig](results/sparsity/fig.png)" in text and "MNIST sparsity." in text
    assert "| claim of sparsity | stat = 0.5 | holds |" in text
    assert "| claim of iris_accuracy | stat = 0.5 | **does not hold** |" in text
    assert "| 0 of 1 | paper | 60 | 50 |" in text and "Total wall time of the experiments: 2.0 min." in text
    assert "ridge_stability" not in text  # experiments without results are left out


def test_replace_section_keeps_the_rest_and_needs_markers():
    text = f"intro\n{BEGIN}\nold\n{END}\noutro\n"
    assert replace_section(text, "new\n") == f"intro\n{BEGIN}\nnew\n{END}\noutro\n"
    with pytest.raises(ValueError, match="markers"):
        replace_section("no markers", "new\n")


def test_readme_results_section_matches_the_committed_results():
    """The README quotes exactly what the committed metrics say (regenerate with the report command)."""
    readme = (REPO / "README.md").read_text()
    if BEGIN not in readme:
        pytest.skip("the README has no results section yet")
    from shapley_research.experiments._project import Project

    project = Project.locate(REPO)
    descriptions = {name: project.description(name) for name in project.available()}
    expected = replace_section(readme, build_report(REPO / "results", "results/", descriptions))
    assert readme == expected, "README results section is stale: run `shapley-research report --readme README.md`"
