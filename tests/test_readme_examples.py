"""Every python block of the README runs as pasted: in order, in one fresh interpreter, from a script file.

A reader pastes the blocks one after another into one session, so a block may use what an earlier
one defined and nothing else: the blocks are joined into one script and run by a new Python process
in an empty directory (where the checkpoint example writes its file).
"""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_its_examples():
    blocks = python_blocks()
    assert len(blocks) >= 3
    assert all("print(" in block for block in blocks), "every example prints its result"


def test_every_python_block_runs_as_pasted(tmp_path):
    script = tmp_path / "readme_examples.py"
    script.write_text("\n\n".join(f"# --- README block {i} ---\n{block}" for i, block in enumerate(python_blocks())))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    printed = proc.stdout.splitlines()
    assert len(printed) >= len(python_blocks())
    assert "Dask run identical: True" in printed  # the Dask example ran on its cluster, bit-identical
    assert (tmp_path / "gt.ckpt").is_file()  # the checkpoint example wrote where it said
