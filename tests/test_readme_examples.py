"""Every python block of the README and of the documentation's guides runs as pasted: as a script, and
line by line into the Python prompt.

A reader pastes one page's blocks one after another into one session, so a block may use what an
earlier one of the same page defined and nothing else. Each page runs in a new Python process in an
empty directory (where the checkpoint example writes its file):

* as a script: the blocks joined into one file, run;
* at the interactive prompt: each line fed to :class:`code.InteractiveConsole`, as the standard
  prompt reads a paste, then one empty line after each block (the reader's Enter). The prompt is
  stricter than a script: a compound statement (``with``, ``for``, ``def``) ends only at an empty
  line, so a dedented line straight after one, or an empty line inside one, is a SyntaxError there.
  The statements the prompt reads are compiled, not run a second time: they are the script's
  statements, which the script run has run (a block that reads differently at the prompt is a
  SyntaxError there, which fails the test).
"""

import code
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The pages with runnable examples (markdown, README first), and what each must print or write besides.
PAGES = {
    "README.md": {},
    "docs/guides/library.md": {},
    "docs/guides/long_runs.md": {"prints": "Dask run identical: True",  # the Dask example ran, bit-identical
                                 "writes": "gt.ckpt"},  # the checkpoint example wrote where it said
    "docs/guides/gpu.md": {},
}


class _Prompt(code.InteractiveConsole):
    """The standard prompt reading a paste: each statement it would run is compiled, not run."""

    def __init__(self) -> None:
        super().__init__()
        self.error = None

    def runcode(self, code_object) -> None:
        pass

    def showsyntaxerror(self, *args, **kwargs) -> None:
        self.error = "SyntaxError"


def prompt_error(blocks: list[str]) -> str | None:
    """Where the prompt refuses a paste of ``blocks`` (an Enter after each), or None if it reads every line."""
    prompt = _Prompt()
    for block, source in enumerate(blocks):
        for line, text in enumerate([*source.splitlines(), ""], start=1):
            prompt.push(text)
            if prompt.error:
                return f"{prompt.error} at the prompt, block {block}, line {line}: {text!r}"
    return None


def python_blocks(page: str = "README.md") -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), re.S)


def _run(args: list[str], cwd: Path, page: str) -> list[str]:
    proc = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    printed = proc.stdout.splitlines()
    assert len(printed) >= len(python_blocks(page))
    if "prints" in PAGES[page]:
        assert PAGES[page]["prints"] in printed
    if "writes" in PAGES[page]:
        assert (cwd / PAGES[page]["writes"]).is_file()
    return printed


def test_the_pages_have_their_examples():
    assert python_blocks("README.md"), "the README's quick start is runnable"
    blocks = [block for page in PAGES for block in python_blocks(page)]
    assert len(blocks) >= 5
    assert all("print(" in block for block in blocks), "every example prints its result"
    documented = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if "```python" in p.read_text()
                  and "generated" not in p.parts and "_build" not in p.parts}
    assert documented <= set(PAGES), f"pages with examples this test does not run: {documented - set(PAGES)}"


@pytest.mark.slow  # runs every page's blocks in a fresh interpreter
@pytest.mark.parametrize("page", list(PAGES))
def test_every_python_block_runs_as_a_script(tmp_path, page):
    script = tmp_path / "examples.py"
    script.write_text("\n\n".join(f"# --- {page} block {i} ---\n{block}"
                                   for i, block in enumerate(python_blocks(page))))
    _run([str(script)], tmp_path, page)


@pytest.mark.parametrize("page", list(PAGES))
def test_every_python_block_reads_pasted_into_the_interactive_prompt(page):
    blocks = python_blocks(page)
    assert prompt_error(blocks) is None  # the statements themselves ran in the script run


def test_the_prompt_check_fails_where_the_prompt_fails():
    """The README's old example 3: a line straight after a ``with`` block is a SyntaxError at the prompt."""
    source = "with open('f', 'w') as f:\n    f.write('x')\nprint('done')\n"
    assert prompt_error([source]) == "SyntaxError at the prompt, block 0, line 3: \"print('done')\""
    compile(source, "script", "exec")  # while the same lines are a valid script
    assert prompt_error([source.replace("\nprint", "\n\nprint")]) is None  # an empty line closes the block
    assert prompt_error(["def f():\n    x = 1\n\n    return x\n"]) is not None  # an empty line inside one
