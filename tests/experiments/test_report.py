"""The generated results report and the README section it refreshes."""

import json
from pathlib import Path

import pytest

from shapley_research.experiments import claim, write_metrics, write_report
from shapley_research.experiments._report import (BEGIN, END, build_report, build_summary, replace_section,
                                                  write_docs_pages)

REPO = Path(__file__).resolve().parents[2]


def make_run(results, name, holds, figures=("fig.png",)):
    write_metrics(results / name, {"x": 1.0}, [
        claim(f"claim of {name}", "stat", 0.5, holds, source="paper", section="Section 4", criterion="stat > 0.4",
              note=None if holds else "too few samples"),
        claim(f"check of {name}", "error", 0.25, True, source="reproduction", criterion="error < 0.3"),
        claim(f"timed check of {name}", "seconds", 2.0, False, source="reproduction", criterion="seconds < 1",
              timing=True),
    ])
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
    assert "| P1 | claim of sparsity | Section 4 | stat > 0.4 | stat = 0.5 | holds |" in text
    assert "| P1 | claim of iris_accuracy | Section 4 | stat > 0.4 | stat = 0.5 | **does not hold** |" in text
    assert "- P1: too few samples" in text  # the cause of a claim that does not hold
    assert "| R1 | check of sparsity | error < 0.3 | error = 0.25 | holds |" in text
    assert "| R2 | timed check of sparsity | seconds < 1 | seconds = 2 | **does not hold** (timed) |" in text
    assert text.index("Claims of the paper") < text.index("Checks this reproduction adds")
    assert "| 0 of 1 | 1 of 2 | paper | 60 | 50 |" in text and "Total wall time of the experiments: 2.0 min." in text
    assert "ridge_stability" not in text  # experiments without results are left out


def test_claims_of_cited_papers_are_not_called_the_papers(tmp_path):
    make_run(tmp_path, "sparsity", True)
    make_run(tmp_path, "data_cleaning", True)
    text = build_report(tmp_path)
    cleaning = text[text.index("### data_cleaning"):]
    assert "Claims of the papers it cites" in cleaning and "Claims of the paper:" not in cleaning
    assert "Claims of the paper:" in text[text.index("### sparsity"):text.index("### data_cleaning")]
    assert "| [data_cleaning](#data_cleaning) | 1 of 1 (cited papers) |" in text  # GitHub's anchor of the heading
    assert "| [sparsity](#sparsity) | 1 of 1 |" in text


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
    expected = replace_section(readme, build_summary(REPO / "results", "results/README.md"))
    assert readme == expected, "README results section is stale: run `shapley-research report --readme README.md`"


def test_results_report_matches_the_committed_results():
    """results/README.md is the full report of the committed results (the README's table links into it)."""
    from shapley_research.experiments import Project

    project = Project.locate(REPO)
    descriptions = {name: project.description(name) for name in project.available()}
    text = (REPO / "results" / "README.md").read_text()
    assert text.endswith(build_report(REPO / "results", "", descriptions)), \
        "results/README.md is stale: run `shapley-research report --readme README.md`"


def test_summary_links_each_experiment_into_the_full_report(tmp_path):
    make_run(tmp_path, "sparsity", True)
    make_run(tmp_path, "iris_accuracy", False)
    text = build_summary(tmp_path, "results/README.md")
    assert "| [iris_accuracy](results/README.md#iris_accuracy) | 0 of 1 | 1 of 2 | paper | 60 | 50 |" in text
    assert "| [sparsity](results/README.md#sparsity) | 1 of 1 |" in text
    assert "Total wall time of the experiments: 2.0 min." in text
    assert "| P1 |" not in text and "![" not in text  # the claims and figures stay in the full report


def test_docs_pages_hold_figures_claims_and_the_notebook(tmp_path):
    results = tmp_path / "results"
    make_run(results, "sparsity", False)
    make_run(results, "iris_accuracy", True)
    (results / "sparsity" / "sparsity.ipynb").write_text("{}")
    (results / "sparsity" / "values.csv").write_text("player,value\n0,1.0\n")
    out = tmp_path / "docs" / "generated"
    write_docs_pages(tmp_path, out, names=("sparsity",), descriptions={"sparsity": "MNIST sparsity."})
    assert sorted(p.name for p in out.iterdir()) == ["index.md", "sparsity", "sparsity.md"]  # only those asked for
    page = (out / "sparsity.md").read_text()
    assert page.startswith("(experiment-sparsity)=\n# sparsity\n\nMNIST sparsity.")
    assert "![sparsity: fig](sparsity/fig.png)" in page
    assert "| P1 | claim of sparsity | Section 4 | stat > 0.4 | stat = 0.5 | **does not hold** |" in page
    assert "- P1: too few samples" in page and "{download}`values.csv <sparsity/values.csv>`" in page
    assert "{doc}`sparsity.ipynb <sparsity/sparsity>`" in page and "\nsparsity/sparsity\n```" in page  # toctree
    assert sorted(p.name for p in (out / "sparsity").iterdir()) == ["fig.png", "sparsity.ipynb", "values.csv"]
    index = (out / "index.md").read_text()
    assert "| {doc}`sparsity <sparsity>` | 0 of 1 | 1 of 2 | paper | 60 | 50 |" in index
    assert "iris_accuracy" not in index
    before = (out / "sparsity.md").stat().st_mtime_ns
    write_docs_pages(tmp_path, out, names=("sparsity",), descriptions={"sparsity": "MNIST sparsity."})
    assert (out / "sparsity.md").stat().st_mtime_ns == before  # unchanged pages are not rewritten


def test_statistics_are_formatted_with_three_significant_digits():
    from shapley_research.experiments._report import _format

    assert _format({"spearman": [1.0, 1.0], "z": [120.631, 113.975]}) == "spearman: [1, 1]; z: [121, 114]"
    assert _format([0.123456, True, "x", 7]) == "[0.123, true, x, 7]"
    assert _format(list(range(8))) == "[0, 1, 2, 3, 4, 5, ...]"


def test_a_report_of_other_runs_says_how_it_was_made(tmp_path):
    """Only the committed results come from `dvc repro`; a report of a directory of one's own runs says so."""
    for results in ("results", "my_runs"):
        make_run(tmp_path / results, "sparsity", True)
        text = write_report(tmp_path, results)[0].read_text()
        committed = "Regenerate with `dvc repro`" in text
        assert committed == (results == "results")
        assert committed or "`shapley-research report --results my_runs`" in text


def test_notebooks_print_each_claim_as_the_command_does(capsys):
    """One format for every notebook: the verdict (an undecided one is no failure), where, value, criterion, note."""
    from shapley_research.experiments import claim, claim_line, is_claim_output, print_claims

    claims = [claim("A holds.", "ratio", [0.26925, 2.0], True, source="paper", section="Section 5",
                    criterion="ratio > 1"),
              claim("B is undecided.", "mean", 0.5, False, source="reproduction", criterion="mean > 0",
                    note="the interval straddles 0", undecided="inconclusive"),
              claim("C is a sanity check.", "n", 3, True, source="reproduction", criterion="n = 3", sanity=True)]
    print_claims(claims)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "[holds] (Section 5) A holds. (ratio = [0.2692, 2])", "    criterion: ratio > 1",
        "[INCONCLUSIVE] (reproduction) B is undecided. (mean = 0.5)", "    criterion: mean > 0",
        "    note: the interval straddles 0",
        "[holds, sanity check] (reproduction) C is a sanity check. (n = 3)", "    criterion: n = 3"]
    assert claim_line(claims[1].to_dict()) == claim_line(claims[1])  # a metrics.json entry alike
    # what `shapley-research run` holds back from the streamed output: every line print_claims writes, and only
    # those (an indented criterion or note is a claim's only right after one)
    assert all(is_claim_output(line, after_claim=i > 0) for i, line in enumerate(printed))
    assert not any(is_claim_output(line) for line in ("    note: x", "[holds]", "holds (Section 5)", "[done] (x)"))
    nested = claim("D has two parts.", "rho and z", {"rho": -1.0, "z": [36.52738268996076] * 7}, True,
                   source="reproduction", criterion="both")
    assert claim_line(nested).endswith("(rho and z = rho: -1; z: [36.53, 36.53, 36.53, 36.53, 36.53, 36.53, ... "
                                       "(7 values)])")
