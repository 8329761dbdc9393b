"""The README's library examples run as written (the ones that define everything they use)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def library_examples() -> list[str]:
    """Python blocks of the README's "The library" section before its first subsection."""
    text = README.read_text()
    start = text.index("## The library")
    section = text[start:text.index("\n### ", start)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_library_section_has_its_examples():
    assert len(library_examples()) == 2


@pytest.mark.parametrize("index", range(2))
def test_example_runs(index, capsys):
    exec(compile(library_examples()[index], f"README example {index}", "exec"), {})
    assert capsys.readouterr().out.strip(), "every example prints its result"
