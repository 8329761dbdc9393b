"""Every python block of the README and of the documentation's guides runs as pasted: as a script, and
line by line into the Python prompt.

A reader pastes one page's blocks one after another into one session, so a block may use what an
earlier one of the same page defined and nothing else. Each page runs in a new Python process in an
empty directory (where the checkpoint example writes its file), both ways:

* as a script: the blocks joined into one file;
* at the interactive prompt: each line fed to :class:`code.InteractiveConsole`, as the standard
  prompt reads a paste, then one empty line after each block (the reader's Enter). The prompt is
  stricter than a script: a compound statement (``with``, ``for``, ``def``) ends only at an empty
  line, so a dedented line straight after one, or an empty line inside one, is a SyntaxError there.
  Any SyntaxError or exception fails the test.
"""

import json
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

# Feeds the blocks (a JSON list in argv[1]) to an interactive console; exits 1 at the first error.
CONSOLE = '''
import code, json, sys

class Console(code.InteractiveConsole):
    def showsyntaxerror(self, *args, **kwargs):
        super().showsyntaxerror(*args, **kwargs)
        raise SystemExit(f"SyntaxError at the prompt, README block {block}, line {line}: {text!r}")

    def showtraceback(self, *args, **kwargs):
        super().showtraceback(*args, **kwargs)
        raise SystemExit(f"exception at the prompt, README block {block}, line {line}: {text!r}")

console = Console()
for block, source in enumerate(json.loads(open(sys.argv[1]).read())):
    for line, text in enumerate([*source.splitlines(), ""], start=1):
        console.push(text)
'''


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


@pytest.mark.slow  # runs every page's blocks in a fresh interpreter
@pytest.mark.parametrize("page", list(PAGES))
def test_every_python_block_runs_pasted_into_the_interactive_prompt(tmp_path, page):
    (tmp_path / "console.py").write_text(CONSOLE)
    (tmp_path / "blocks.json").write_text(json.dumps(python_blocks(page)))
    _run([str(tmp_path / "console.py"), str(tmp_path / "blocks.json")], tmp_path, page)


def test_the_console_harness_fails_where_the_prompt_fails(tmp_path):
    """The README's old example 3: a line straight after a ``with`` block is a SyntaxError at the prompt."""
    (tmp_path / "console.py").write_text(CONSOLE)
    for source, error in (("with open('f', 'w') as f:\n    f.write('x')\nprint('done')\n", "SyntaxError"),
                          ("x = 1\nprint(y)\n", "exception")):
        (tmp_path / "blocks.json").write_text(json.dumps([source]))
        proc = subprocess.run([sys.executable, str(tmp_path / "console.py"), str(tmp_path / "blocks.json")],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1 and f"{error} at the prompt, README block 0, line" in proc.stderr, proc.stderr
        compile(source, "script", "exec")  # while the same lines are a valid script
