"""The Jupyter kernel a run's notebook executes in, and the manager that starts and stops it.

The notebook runs in a kernel of the Python running ``shapley-research``: a
registered kernel spec whose interpreter is this one (``python3`` after
``python -m ipykernel install --sys-prefix``), or else a private spec written
to a temporary directory, so the environment is never modified.

What of the notebook reaches the terminal: papermill streams the cells'
output through its logger (``log_output=True``), which
:class:`StreamedOutput` prints as plain lines on stderr so long runs show
their progress, holding back the claims the notebook prints last
(:func:`~shapley_research.experiments.print_claims`): the command's summary
prints their verdicts after a finished run, so each shows once, and a run
that fails or is stopped shows them after all (:meth:`StreamedOutput.show_held`).
The kernel's own stderr (its log, not the cells' output) goes to a file
(:func:`local_kernel_manager`), shown only when the kernel failed
(:func:`kernel_messages`).
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from .experiments import ProjectError, is_claim_output

KERNEL_NAME = "shapley-research"
KERNEL_ENV = "SHAPLEY_RESEARCH_KERNEL"


def _runs_this_python(argv: list[str]) -> bool:
    """Whether a kernel spec's command starts the interpreter running this process."""
    if not argv:
        return False
    # jupyter_client replaces a bare 'python', 'python3' or 'python3.X' with sys.executable.
    major, minor = sys.version_info[:2]
    if argv[0] in ("python", f"python{major}", f"python{major}.{minor}"):
        return True
    try:
        return Path(argv[0]).resolve() == Path(sys.executable).resolve()
    except OSError:
        return False


def _private_kernel() -> str:
    """Write a kernel spec for ``sys.executable`` outside the environment and put it on ``JUPYTER_PATH``."""
    import hashlib
    import json
    import shutil

    from ipykernel.kernelspec import write_kernel_spec

    # One directory per user and interpreter, so environments never share a spec.
    tag = hashlib.sha1(sys.executable.encode()).hexdigest()[:12]
    data_dir = Path(tempfile.gettempdir()) / f"shapley-research-jupyter-{getattr(os, 'getuid', lambda: 0)()}-{tag}"
    spec_dir = data_dir / "kernels" / KERNEL_NAME
    try:
        current = json.loads((spec_dir / "kernel.json").read_text())["argv"][0] == sys.executable
    except (OSError, ValueError, KeyError, IndexError):
        current = False
    if not current:
        shutil.rmtree(spec_dir, ignore_errors=True)
        spec_dir.parent.mkdir(parents=True, exist_ok=True)
        write_kernel_spec(path=str(spec_dir), overrides={"display_name": "Python (shapley-research)"})
    # jupyter_client reads JUPYTER_PATH each time papermill creates a kernel spec manager.
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(data_dir), os.environ.get("JUPYTER_PATH")]))
    return KERNEL_NAME


def select_kernel(requested: str | None = None) -> str:
    """Name of the Jupyter kernel to run notebooks in.

    ``requested`` (or ``$SHAPLEY_RESEARCH_KERNEL``) is used as given. Otherwise
    the first kernel spec among ``shapley-research``, ``python3`` and the
    others that starts this very interpreter, so the notebook imports the
    same ``shapley_research``; failing that, a private spec (see module docs).

    Raises
    ------
    ProjectError
        If the requested kernel is not installed.
    """
    from jupyter_client.kernelspec import KernelSpecManager

    specs = KernelSpecManager().get_all_specs()
    requested = requested or os.environ.get(KERNEL_ENV)
    if requested:
        if requested not in specs:
            raise ProjectError(f"no Jupyter kernel named {requested!r}; installed: {', '.join(sorted(specs))}.")
        return requested
    for name in (KERNEL_NAME, "python3", *sorted(specs)):
        spec = specs.get(name, {}).get("spec", {})
        if spec.get("language", "python") == "python" and _runs_this_python(spec.get("argv", [])):
            return name
    return _private_kernel()


def local_kernel_manager(stderr: IO[str] | None = None) -> type:
    """A kernel manager talking to its kernel over local IPC sockets, that shuts a kernel down without interrupting it.

    The kernel runs on this machine, so the sockets need no network; over TCP
    ipykernel warns on every run that the traffic is unencrypted, a warning
    the user can do nothing about. jupyter_client interrupts a kernel before
    asking it to shut down; a kernel still handling a message then logs
    "ERROR | KeyboardInterrupt caught in kernel" at the end of a run that
    succeeded. The shutdown request alone stops it (and a kernel that does
    not stop is killed).

    The kernel's own stderr goes to ``stderr`` where given, not to the
    terminal: the cells' output reaches this process as messages (stderr
    included), and what the kernel writes there itself is its log, which a
    stop makes noisy (a kernel asked to shut down while a cell runs logs a
    ZMQError traceback from a closed socket). A kernel left starting when
    this process exits (Ctrl-C during start-up, before the client owns it)
    is killed at exit rather than left to fail on its removed sockets.
    """
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class LocalKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            if stderr is not None:
                kw.setdefault("stderr", stderr)
            await super()._async_launch_kernel(kernel_cmd, **kw)
            atexit.register(self._kill_if_running)

        def _kill_if_running(self) -> None:
            process = getattr(self.provisioner, "process", None)
            if process is not None and process.poll() is None:
                process.kill()

        async def _async_interrupt_kernel(self) -> None:
            if not getattr(self, "shutting_down", False):  # jupyter_client sets it as shutdown begins
                await super()._async_interrupt_kernel()

        @default("transport")
        def _default_transport(self) -> str:
            return "ipc"

        @default("ip")
        def _default_ip(self) -> str:
            # the sockets' path prefix: jupyter_client's default, "kernel-ipc" in the working directory, is
            # shared by two runs started there at once, whose kernels then read each other's messages
            directory = tempfile.mkdtemp(prefix="shapley-research-kernel-")
            atexit.register(shutil.rmtree, directory, ignore_errors=True)
            return os.path.join(directory, "ipc")

    return LocalKernelManager


def import_papermill() -> Any:
    """papermill, imported without jsonschema's optional IRI format checker.

    papermill imports nbformat, which imports jsonschema, which imports
    ``rfc3987_syntax`` when it is installed (it comes with Jupyter's
    ``jsonschema[format-nongpl]``). That package compiles a lark grammar at
    import: 2.5 s of a run's start-up, as long as the rest of papermill. No
    notebook schema checks an IRI format, so blocking the import (a ``None``
    in ``sys.modules`` reads as absent) changes no validation.
    """
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
    import papermill

    return papermill


#: How many of the kernel's last log lines a failed run shows.
KERNEL_LOG_LINES = 20


class StreamedOutput(logging.StreamHandler):
    """Print papermill's log records as lines, holding back the notebook's printed claims.

    A record is a chunk of a cell's stream as the kernel sent it: several
    lines, or a line without its newline (``print`` writes the text and the
    newline apart); a claim's criterion and note count as claim output only
    right after a claim's line.
    """

    def __init__(self, stream: IO[str]):
        super().__init__(stream)
        self.setFormatter(logging.Formatter("%(message)s"))
        self.held: list[str] = []
        self._after_claim = False

    def _shown(self, line: str) -> bool:
        """Whether ``line`` is printed now; a claim's line is kept in :attr:`held` instead."""
        if not line and self._after_claim:  # the newline of a claim's line, sent on its own
            return False
        self._after_claim = is_claim_output(line, self._after_claim)
        if self._after_claim:
            self.held.append(line)
        return not self._after_claim

    def emit(self, record: logging.LogRecord) -> None:
        try:
            shown = [line for line in self.format(record).rstrip("\n").split("\n") if self._shown(line)]
            if shown:
                self.stream.write("\n".join(shown) + self.terminator)
                self.flush()
        except RecursionError:  # as logging.StreamHandler.emit: a failing write is reported, never raised
            raise
        except Exception:
            self.handleError(record)

    def show_held(self) -> None:
        """Print the claims held back (the run ends without the summary that prints them)."""
        self.acquire()  # Handler's lock, as around emit
        try:
            if self.held:
                self.stream.write("\n".join(self.held) + self.terminator)
                self.flush()
            self.held.clear()
        finally:
            self.release()


def stream_notebook_output(quiet: bool) -> StreamedOutput:
    """Show papermill's log on the current stderr through a new :class:`StreamedOutput`, and return it.

    With ``quiet`` only its warnings show (the notebook's output is not
    streamed then). The handler of an earlier run in this process is
    replaced, so no claim it held and no stream it wrote to carries over.
    """
    logger = logging.getLogger("papermill")
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    for earlier in [h for h in logger.handlers if isinstance(h, StreamedOutput)]:
        logger.removeHandler(earlier)
    handler = StreamedOutput(sys.stderr)
    logger.addHandler(handler)
    logger.propagate = False
    return handler


def kernel_messages(log: IO[str]) -> str:
    """The last :data:`KERNEL_LOG_LINES` lines the kernel wrote to ``log`` (its stderr), introduced; or ``""``."""
    log.flush()
    log.seek(0)
    lines = log.read().rstrip().splitlines()[-KERNEL_LOG_LINES:]
    return "The kernel's own messages (last lines):\n  " + "\n  ".join(lines) if lines else ""
