"""What the side-by-side comparisons with other libraries share: the machine record, tables, the report's output.

Not a script: ``pydvl_comparison.py``, ``cleaning_comparison.py`` and
``opendataval_comparison.py`` import it by name (``benchmarks/`` is first on
``sys.path`` when one of them runs). It holds, once:

- **the record of the run**: the machine, the versions, and the provenance of
  the library measured (git commit, files modified in the working tree, a hash
  of the sources loaded) (:func:`machine_info`), and the report lines that
  state them (:func:`machine_line`, :func:`commit_text`, :func:`date_line`);
- **the output**: an aligned text or markdown table (:func:`_table`), the
  ``OK``/``MISS`` verdict of a goal (:func:`_verdict`), progress lines on
  stderr (:func:`log`), and the report printed and written as markdown with
  the command that measured it (:func:`write_outputs`);
- **the raw measurements** saved and read back as JSON (:func:`save_raw`,
  :func:`load_raw`), so that ``--from-raw`` rewrites a report without
  measuring again.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from typing import Callable

import numpy as np

import shapley_research
import shapley_research.datasets  # noqa: F401  (loaded now: the run uses the library as it is at start)

START = time.perf_counter()  # the progress lines' zero, and the worker processes' start


def log(message: str) -> None:
    """``message`` on stderr, after the seconds since this module was loaded."""
    print(f"[{time.perf_counter() - START:6.0f} s] {message}", file=sys.stderr, flush=True)


def quiet_warnings() -> None:
    """Silence scikit-learn's convergence warnings, and future and deprecation warnings, in this process."""
    warnings.filterwarnings("ignore", category=UserWarning, module="sklearn")  # lbfgs ConvergenceWarning
    warnings.filterwarnings("ignore", message=".*did not reach tol.*")
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)


# --------------------------------------------------------------------------- machine


def machine_info() -> dict:
    """The CPU, cores, system, versions (``"not installed"`` for an absent peer), the library's provenance, date."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    versions = {"python": platform.python_version(), "numpy": np.__version__,
                "shapley_research": shapley_research.__version__}
    for name in ("sklearn", "scipy", "cvxpy", "pydvl"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = "not installed"
    return {"cpu": cpu, "cores": os.cpu_count(), "machine": platform.machine(), "system": platform.platform(),
            "versions": versions, "library": library_provenance(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def library_provenance() -> dict:
    """Git commit of the checkout, library files modified in the working tree, hash of the sources loaded."""
    package = os.path.dirname(os.path.abspath(shapley_research.__file__))
    digest = hashlib.sha256()
    for root, _, files in sorted(os.walk(package)):
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(root, name), "rb") as f:
                    digest.update(name.encode() + f.read())
    info = {"package": package, "sources_sha256": digest.hexdigest()[:12], "commit": "unknown", "modified": []}
    try:
        repo = os.path.dirname(package)
        info["commit"] = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True,
                                        text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--", "shapley_research"],
                                capture_output=True, text=True, check=True).stdout
        info["modified"] = [line[3:] for line in status.splitlines() if line.strip()]
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


def machine_line(info: dict) -> str:
    """``Machine: <cpu>, <cores> cores (<machine>), <system>`` of a :func:`machine_info` record."""
    return f"Machine: {info['cpu']}, {info['cores']} cores ({info['machine']}), {info['system']}"


def commit_text(library: dict) -> str:
    """``git commit <hash>[ with uncommitted changes to <files>] (sources sha256 <hash>)`` of
    :func:`library_provenance`'s record."""
    return (f"git commit {library['commit']}"
            + (f" with uncommitted changes to {', '.join(library['modified'])}" if library["modified"] else "")
            + f" (sources sha256 {library['sources_sha256']})")


def date_line(info: dict, load: tuple[float, float], wall: float, tail: str) -> str:
    """The date, the one-minute load average at start and end, the run's wall time in minutes, then ``tail``."""
    return (f"Date: {info['date']}. Load average (1 min) at start / end: {load[0]:.2f} / {load[1]:.2f}. "
            f"Benchmark wall time: {wall / 60:.1f} min{tail}.")


# --------------------------------------------------------------------------- output


def _table(headers, rows, markdown) -> str:
    """``rows`` under ``headers``: a markdown table (blank lines around), or text columns aligned to the right
    but the first."""
    cells = [[str(c) for c in row] for row in rows]
    if markdown:  # blank lines around: a table cannot interrupt a paragraph
        lines = ["", "| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells] + [""])
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    fmt = lambda row: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in cells])


def _verdict(ok) -> str:
    """``OK`` or ``MISS``."""
    return "OK" if ok else "MISS"


def write_outputs(render: Callable[[bool], str], output: str | None, title: str, command: str) -> None:
    """Print ``render(False)`` (text); if ``output``, write ``render(True)`` (markdown) there under ``title``.

    Parameters
    ----------
    render : callable
        ``render(markdown)``: the report.
    output : str or None
        The markdown file, its folders made if missing; None or ``""`` writes none.
    title : str
        The markdown file's heading.
    command : str
        The command that measured, stated under the heading.
    """
    print(render(False))
    if output:
        os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
        with open(output, "w") as f:
            f.write(f"# {title}\n\n"
                    f"Written by `{command}` (every number below comes from that run).\n\n"
                    + render(True) + "\n")
        print(f"\nwrote {output}")


def save_raw(raw: dict, path: str) -> None:
    """Save the raw measurements as JSON (numpy scalars as floats)."""
    with open(path, "w") as f:
        json.dump(raw, f, default=float)


def load_raw(path: str) -> dict:
    """The raw measurements that :func:`save_raw` saved."""
    with open(path) as f:
        return json.load(f)
