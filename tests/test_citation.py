"""The repository is cited as the paper's artifact: CITATION.cff and LICENSE agree with the paper and pyproject."""

import re
from pathlib import Path

import pytest
import yaml

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

REPO = Path(__file__).resolve().parents[1]
PAPER = REPO.parent / "shared" / "paper" / "jia2019_efficient_data_valuation.tex"


def test_citation_file_prefers_the_paper_and_names_the_software():
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["message"]
    assert cff["version"] == pyproject["version"] and cff["license"] == pyproject["license"]["text"] == "MIT"
    paper = cff["preferred-citation"]
    assert paper["type"] == "conference-paper" and paper["year"] == 2019 and paper["volume"] == 89
    assert [a["family-names"] for a in paper["authors"]] == ["Jia", "Dao", "Wang", "Hubis", "Hynes", "Gürel", "Li",
                                                            "Zhang", "Song", "Spanos"]
    if PAPER.is_file():  # the LaTeX source beside the repository, where it is checked out
        title = re.search(r"\\aistatstitle\{(.+?)\}", PAPER.read_text()).group(1)
        assert paper["title"] == title


def test_license_file_is_the_declared_mit_licence():
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text
