"""The ``shapley-research`` command: list and run the paper's experiments.

::

    shapley-research list [--long]
    shapley-research run NAME [OVERRIDE ...] [--update-results] [--kernel KERNEL] [--quiet]
    shapley-research stage NAME [--results DIR] [--write]
    shapley-research params [NAME ...] [--write | --check]
    shapley-research --project-dir DIR ...

``run`` composes ``conf/`` with hydra (``profile=quick``, ``output_dir=PATH``,
``seed=1``, ``experiment.KEY=VALUE``), executes ``notebooks/NAME.ipynb`` with
papermill, and checks the ``metrics.json`` it wrote. It writes to
``PROJECT/scratch/NAME/`` (git-ignored) or ``OUTPUT_DIR/NAME/``; only
``--update-results`` writes the committed ``PROJECT/results/NAME/``, and only
with the paper profile's values (it is the DVC stages' command). Exit status:
0 when the run finished (whether or not the paper's claims held: a claim that
fails is a result), 1 when the notebook failed or wrote no valid
``metrics.json``, 2 for a usage error (unknown experiment, bad override,
missing file, a budget too small for the data, an output directory inside
``results/`` without ``--update-results``), 130 when stopped by Ctrl-C. A closed output pipe
(``shapley-research list --long | head -2``) ends any command quietly.

The notebook runs in a Jupyter kernel of the Python running this command: a
registered kernel spec whose interpreter is this one (``python3`` after
``python -m ipykernel install --sys-prefix``), or else a private spec written
to a temporary directory, so the environment is never modified
(:mod:`shapley_research._kernel`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

from .experiments import (CITED_PAPERS_EXPERIMENTS, EXPERIMENT_NAMES, FIGURES_ENV, METRICS_FILE, RESULTS_DIR,
                          RUN_INFO_FILE, RUNNER_ENV, UPDATE_RESULTS_ENV, Project, ProjectError, check_declared,
                          check_name, check_notebook_in_sync, check_parameters, claim_line, clear_earlier_run,
                          counts_as_evidence, dvc_stage, folder_state, held_count, notebook_parameters,
                          profile_key_problems, project_relative, read_metrics, results_guard, run_info, run_profile,
                          shown_path, undecided_count, user_sets, working_directory, write_dvc_stage, write_report,
                          written_since)
from ._kernel import (KERNEL_ENV, StreamedOutput, import_papermill, kernel_messages, local_kernel_manager,
                      select_kernel, stream_notebook_output)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # as a shell reports a command stopped by Ctrl-C (128 + SIGINT)


# --- commands ---------------------------------------------------------------------------------------------

def _project(args: argparse.Namespace) -> Project:
    return Project.locate(args.project_dir)


def cmd_list(args: argparse.Namespace) -> int:
    """Print the experiment names, one per line (with ``--long``: status and description)."""
    if not args.long:
        if args.project_dir is not None:
            _project(args)  # a project named on the command line must exist, as for every other command
        print("\n".join(EXPERIMENT_NAMES))
        return EXIT_OK
    project = _project(args)
    width = max(map(len, EXPERIMENT_NAMES))
    for name in EXPERIMENT_NAMES:
        missing = project.missing(name)
        text = project.description(name) if not missing else f"(not available: missing {', '.join(missing)})"
        print(f"{name:<{width}}  {text}".rstrip())
    return EXIT_OK


def summarize(name: str, profile: str, run_dir: Path, metrics: dict, seconds: float) -> str:
    """The verdict lines printed after a run."""
    claims = metrics["claims"]
    counts = []
    paper = "claims of the papers it cites" if name in CITED_PAPERS_EXPERIMENTS else "claims of the paper"
    for source, label in (("paper", paper), ("reproduction", "checks of this reproduction")):
        held, total = held_count(claims, source)
        undecided = ", ".join(f"{n} {verdict}" for verdict, n in undecided_count(claims, source).items())
        if total:
            counts.append(f"{held} of {total} {label} hold" + (f" ({undecided})" if undecided else ""))
    aside = sum(1 for c in claims if not counts_as_evidence(c))
    if aside:
        counts.append(f"{aside} sanity or by-construction checks aside")
    lines = [f"{name} (profile={profile}): {'; '.join(counts)} [{seconds:.1f} s]", f"  results: {shown_path(run_dir)}"]
    if profile != "paper":
        lines.append("  (a quick or custom run checks that the pipeline runs: only the paper profile's verdicts are "
                     "evidence, and a smaller run's can change with the seed)")
    lines += [f"  {claim_line(c)}" for c in claims]
    return "\n".join(lines)


def run_parameters(project: Project, name: str, overrides: list[str], update_results: bool = False) -> dict:
    """The notebook parameters of a run, checked before any kernel starts (a bad value fails in a second).

    ``output_dir`` is ``PROJECT/results/NAME`` with ``update_results`` (then
    the parameters must be the default profile's: the committed results are
    the paper's), else the composed one (default ``PROJECT/scratch/NAME``),
    which must not lie inside ``PROJECT/results/``.

    Raises
    ------
    ProjectError
        If a value breaks its type or range, a budget is too small for the
        data, a profile file sets an unknown key, the notebook's
        ``parameters`` cell departs from ``conf/`` (an edit there would be
        silently overridden), the notebook lacks a parameter, or the output
        directory breaks the rule above.
    """
    if update_results and user_sets(overrides, "output_dir"):
        raise ProjectError("--update-results writes the committed results/ (PROJECT/results/NAME); drop the "
                           "output_dir override, or drop --update-results to write there.")
    params = notebook_parameters(project.compose(name, overrides), name)
    try:
        check_parameters(name, params)
    except ValueError as err:
        raise ProjectError(f"invalid configuration of {name}: {err}") from None
    problems = profile_key_problems(project, name)
    if problems:
        raise ProjectError("\n".join(problems))
    check_notebook_in_sync(project, name, overrides)
    check_declared(project.notebook(name), params)
    params["profile"] = run_profile(project, name, params, overrides)  # "custom" unless a profile's values
    if update_results:
        committed = notebook_parameters(project.compose(name), name)["profile"]
        if params["profile"] != committed:
            raise ProjectError(f"--update-results replaces the committed results/{name}, which hold the "
                               f"{committed} profile's run; these parameters are profile {params['profile']!r}. "
                               "Drop the overrides that change values, or drop --update-results (the run then "
                               f"writes to scratch/{name}/).")
        params["output_dir"] = str(project.root / RESULTS_DIR / name)
    else:
        results_guard(project.root, params["output_dir"], name, update=False)
    return params


def cmd_run(args: argparse.Namespace) -> int:
    """Compose the configuration, execute the notebook, check ``metrics.json``, print the verdicts."""
    name = check_name(args.name)
    if args.no_figures and args.update_results:
        raise ProjectError("--update-results writes the committed results/, figures included; drop --no-figures.")
    project = _project(args)
    params = run_parameters(project, name, args.overrides, args.update_results)
    kernel = select_kernel(args.kernel)
    papermill = import_papermill()
    run_dir = Path(params["output_dir"])
    run_dir.mkdir(parents=True, exist_ok=True)
    try:  # nothing an earlier run left here (its metrics.json, figures) must pass for this run's
        replaced = clear_earlier_run(run_dir)
    except OSError as err:
        print(f"error: could not remove the earlier run's {err.filename} ({err.strerror}); remove it, or give "
              "another output_dir.", file=sys.stderr)
        return EXIT_FAILED
    outside = not Path.cwd().resolve().is_relative_to(project.root)  # the project found by --project-dir, or the
    print(f"Running {name} (profile={params['profile']})"  # checkout holding this package: name it
          + (f" of the project in {project.root}" if outside else "") + f" -> {shown_path(run_dir)}"
          + (f", replacing the earlier run there ({len(replaced)} files)" if replaced else ""),
          file=sys.stderr, flush=True)
    streamed = stream_notebook_output(args.quiet)
    start, before, cpu_start = time.perf_counter(), folder_state(run_dir), _children_cpu_seconds()
    failed = _execute(papermill, project, name, params, kernel, args, streamed)
    seconds = time.perf_counter() - start
    if failed is not None:  # what the stopped run wrote is listed, so the next run into the folder removes it
        info = {"experiment": name, "profile": params["profile"], "finished": False,
                "outputs": written_since(run_dir, before)}
        (run_dir / RUN_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
        return failed
    try:
        metrics = read_metrics(run_dir)
    except (FileNotFoundError, ValueError) as err:
        streamed.show_held()  # no summary prints them
        print(f"error: {name} finished but its {METRICS_FILE} is unusable: {err}", file=sys.stderr)
        return EXIT_FAILED
    # The run's times (the notebook runs in a child kernel process), for the report, with the versions and the
    # CPU it ran on (provenance: never compared between runs).
    info = run_info(name, params["profile"], seconds, _children_cpu_seconds() - cpu_start, args.overrides,
                    outputs=written_since(run_dir, before))
    (run_dir / RUN_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
    print(summarize(name, params["profile"], run_dir, metrics, seconds))
    return EXIT_OK


def _execute(papermill: Any, project: Project, name: str, params: dict, kernel: str, args: argparse.Namespace,
             streamed: StreamedOutput) -> int | None:
    """Execute ``notebooks/NAME.ipynb`` into ``OUTPUT_DIR/NAME.ipynb``: None, or the exit status of a failure.

    A failing cell, a kernel that cannot start and Ctrl-C each end with a
    message naming what is left, not papermill's traceback; the kernel's own
    log (its stderr) is shown only for a failure, never for Ctrl-C, and the
    claims ``streamed`` held back are shown unless the run finished (the
    summary prints them then).
    """
    from papermill.exceptions import PapermillExecutionError

    notebook, run_dir = project.notebook(name), Path(params["output_dir"])
    executed, start = run_dir / f"{name}.ipynb", time.perf_counter()
    # Paths inside the project are recorded relative to it (papermill's metadata and injected output_dir), so
    # the executed notebook does not depend on where the project was cloned; the kernel starts in its root.
    recorded = {**params, "output_dir": project_relative(project.root, run_dir)}
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as kernel_log:
        try:
            with _environment(_kernel_environment(args)), working_directory(project.root):  # the kernel inherits
                papermill.execute_notebook(project_relative(project.root, notebook),
                                           project_relative(project.root, executed), parameters=recorded,
                                           kernel_name=kernel, cwd=".", progress_bar=False,
                                           log_output=not args.quiet,
                                           kernel_manager_class=local_kernel_manager(stderr=kernel_log))
        except KeyboardInterrupt:
            # the cell's task, stopped with the kernel, would log its error (the kernel's traceback) at exit
            logging.getLogger("asyncio").disabled = True
            streamed.show_held()
            print(f"\ninterrupted: {name} stopped after {time.perf_counter() - start:.0f} s; {executed} holds the "
                  "cells run so far. A new run starts the notebook over, reusing any finished parts it saved.",
                  file=sys.stderr)
            return EXIT_INTERRUPTED
        except PapermillExecutionError as err:
            streamed.show_held()
            print(f"error: {name} failed in cell {err.cell_index + 1}: {err.ename}: {err.evalue}\n"
                  f"The executed notebook with the traceback is {executed}", file=sys.stderr)
            _print_if_any(kernel_messages(kernel_log))
            return EXIT_FAILED
        except Exception as err:  # kernel start-up or I/O failures: report, don't dump a papermill traceback
            streamed.show_held()
            print(f"error: could not execute {notebook} with kernel {kernel!r}: {type(err).__name__}: {err}",
                  file=sys.stderr)
            _print_if_any(kernel_messages(kernel_log))
            return EXIT_FAILED
    return None


def _kernel_environment(args: argparse.Namespace) -> dict[str, str | None]:
    """The variables the notebook's kernel gets (``None``: unset), from ``run``'s flags."""
    from ._validation import PROGRESS_ENV  # not from .estimators: importing them takes seconds

    return {PROGRESS_ENV: os.environ.get(PROGRESS_ENV, "off"),  # no estimator bars in a committed executed notebook
            RUNNER_ENV: "cli",  # this command records the run
            UPDATE_RESULTS_ENV: "1" if args.update_results else None,  # the check cell then lets it write results/
            FIGURES_ENV: "off" if args.no_figures else None}


def _print_if_any(text: str) -> None:
    if text:
        print(text, file=sys.stderr)


def _put_environment(values: Mapping[str, str | None]) -> None:
    """Set each variable to its string, or unset it where the value is ``None``."""
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextlib.contextmanager
def _environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """Environment variables set (or unset: ``None``) for the block; the caller's environment restored after."""
    previous = {name: os.environ.get(name) for name in values}
    try:
        _put_environment(values)
        yield
    finally:
        _put_environment(previous)


def _children_cpu_seconds() -> float:
    """CPU seconds used by finished child processes (the notebook kernels)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cmd_report(args: argparse.Namespace) -> int:
    """Write results/README.md and optionally refresh the README's results section."""
    project = _project(args)
    descriptions = {name: project.description(name) for name in project.available()}
    for path in write_report(project.root, args.results, args.readme, descriptions):
        print(f"wrote {path}")
    return EXIT_OK


def cmd_stage(args: argparse.Namespace) -> int:
    """Print (or write into dvc.yaml) the DVC stage for an experiment."""
    import yaml

    project = _project(args)
    if args.write:
        path = write_dvc_stage(project, check_name(args.name), args.results)
        print(f"wrote stage {args.name!r} to {path}")
    else:
        print(yaml.safe_dump({args.name: dvc_stage(project, check_name(args.name), args.results)},
                             sort_keys=False), end="")
    return EXIT_OK


def cmd_params(args: argparse.Namespace) -> int:
    """Print, check or rewrite the notebooks' ``parameters`` cells, generated from ``conf/``."""
    from .experiments import (declaration_problems, generated_parameters, parameters_cell, parameters_source,
                              write_parameters_cell)

    project = _project(args)
    if args.overrides:
        return _print_run_parameters(project, args)
    names = [check_name(name) for name in args.names] or project.available()
    stale = []
    for name in names:
        problems = declaration_problems(name, project.root) + profile_key_problems(project, name)
        if problems:
            raise ProjectError(f"conf/ and the declared parameters of {name} disagree:\n  " + "\n  ".join(problems))
        source = parameters_source(generated_parameters(project, name))
        notebook = project.notebook(name)
        shown = notebook.relative_to(project.root)
        if args.write:
            try:
                print(f"wrote {shown}" if write_parameters_cell(notebook, source) else f"{shown} is up to date")
            except ValueError as err:
                raise ProjectError(str(err)) from None
        elif args.check:
            if parameters_cell(notebook) != source:
                stale.append(name)
                print(f"{shown}: the parameters cell is not the one generated from conf/", file=sys.stderr)
        else:
            print(f"# {shown}\n{source}" if len(names) > 1 else source, end="")
    if stale:
        print(f"run `shapley-research params {' '.join(stale)} --write` after checking the differences "
              "(`shapley-research run` names each one)", file=sys.stderr)
    return EXIT_FAILED if stale else EXIT_OK


def _print_run_parameters(project: Project, args: argparse.Namespace) -> int:
    """``params NAME --with OVERRIDE ...``: the parameters a run with those overrides gets, checked as a run checks
    them (a dry run: no kernel starts)."""
    from .experiments import parameters_source

    if args.write or args.check or len(args.names) != 1:
        raise ProjectError("--with prints the parameters of one run: give one NAME, without --write or --check.")
    params = run_parameters(project, check_name(args.names[0]), args.overrides)
    print(parameters_source(params), end="")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    """Print the settings and verdicts that differ, then every difference but measured times; 1 if any."""
    from .experiments import comparison_report

    try:
        lines, differ = comparison_report(args.first, args.second)
    except ValueError as err:
        raise ProjectError(str(err)) from None
    print("\n".join(lines))
    return EXIT_FAILED if differ else EXIT_OK


def _version() -> str:
    from . import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shapley-research",
        description="Run the experiments reproducing Jia et al. (AISTATS 2019).",
        epilog="Experiments: " + ", ".join(EXPERIMENT_NAMES) + ". Example: shapley-research run iris_accuracy "
               "profile=quick output_dir=/tmp/results experiment.KEY=VALUE")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("--project-dir", metavar="DIR",
                        help="project directory with conf/ and notebooks/ (default: searched upward from the "
                             "working directory)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser)
    _add_experiment_commands(sub)
    _add_result_commands(sub)
    return parser


class _CommandParser(argparse.ArgumentParser):
    """A command's parser: a missing experiment name is answered with the experiments there are."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required: NAME"):  # argparse's words for it
            message = (f"name an experiment: {', '.join(EXPERIMENT_NAMES)} (`shapley-research list --long` "
                       "describes them)")
        super().error(message)


def _add_experiment_commands(sub: argparse._SubParsersAction) -> None:
    """``list``, ``run``, ``stage`` and ``params``: the commands about one experiment and its notebook."""
    p_list = sub.add_parser("list", help="print the experiment names, one per line")
    p_list.add_argument("-l", "--long", action="store_true",
                        help="add each experiment's description, and the files it lacks to run")
    p_list.set_defaults(func=cmd_list)

    p_run = sub.add_parser(
        "run", help="run one experiment",
        description="Compose conf/ with the hydra overrides, execute notebooks/NAME.ipynb with papermill and "
                    "write OUTPUT_DIR/NAME/ (executed notebook, figures, CSV tables, metrics.json, run_info.json). "
                    "OUTPUT_DIR defaults to PROJECT/scratch, which git ignores; the committed PROJECT/results/NAME/ "
                    "is written only with --update-results.",
        epilog="Overrides: profile=quick|paper (default paper), output_dir=PATH (default scratch, relative to "
               "the project; a relative PATH given here is taken from the working directory; never inside "
               "results/), seed=INT, n_jobs=INT, experiment.KEY=VALUE.")
    p_run.add_argument("name", metavar="NAME", help="experiment: " + ", ".join(EXPERIMENT_NAMES))
    # a default, else argparse names OVERRIDE among the required arguments when NAME is missing
    p_run.add_argument("overrides", nargs="*", default=[], metavar="OVERRIDE", help="hydra override KEY=VALUE")
    p_run.add_argument("--update-results", action="store_true",
                       help="write the committed PROJECT/results/NAME/ (the DVC stages' command); refused with "
                            "an output_dir or with values other than the paper profile's")
    p_run.add_argument("--kernel", help=f"Jupyter kernel to use (default: ${KERNEL_ENV} or one running "
                                        "this Python)")
    p_run.add_argument("-q", "--quiet", action="store_true", help="do not stream the notebook's output")
    p_run.add_argument("--no-figures", action="store_true",
                       help="draw and save no figure: the numbers, tables and metrics.json alone, faster (a re-run "
                            "to set beside another with `shapley-research compare`); refused with --update-results")
    p_run.set_defaults(func=cmd_run)

    p_stage = sub.add_parser("stage", help="print the dvc.yaml stage of an experiment that has been run",
                             description="Print the dvc.yaml stage reproducing NAME, listing as outputs the "
                                         "files a finished run left in RESULTS/NAME/.")
    p_stage.add_argument("name", metavar="NAME", help="experiment: " + ", ".join(EXPERIMENT_NAMES))
    p_stage.add_argument("--results", metavar="DIR", help="where the run wrote (default: PROJECT/results)")
    p_stage.add_argument("--write", action="store_true", help="add or replace the stage in PROJECT/dvc.yaml")
    p_stage.set_defaults(func=cmd_stage)

    p_params = sub.add_parser(
        "params", help="print, check or rewrite the notebooks' parameters cells, generated from conf/",
        description="The parameters cell of notebooks/NAME.ipynb holds the paper profile's values of conf/ (the one "
                    "source of values; types and ranges: shapley_research/experiments/_schema.py). Print it, "
                    "check that the notebook's is the same (--check, exit status 1 if not), or rewrite the "
                    "notebook's, leaving every other cell as it is (--write).")
    p_params.add_argument("names", nargs="*", metavar="NAME", help="experiments (default: all available)")
    mode = p_params.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the notebooks' parameters cells")
    mode.add_argument("--check", action="store_true", help="exit 1 if a notebook's cell is not the generated one")
    p_params.add_argument("--with", dest="overrides", action="append", default=[], metavar="OVERRIDE",
                          help="print instead the parameters a run of NAME with this override gets (repeatable: "
                               "--with profile=quick --with experiment.KEY=VALUE), checked as `run` checks them")
    p_params.set_defaults(func=cmd_params)


def _add_result_commands(sub: argparse._SubParsersAction) -> None:
    """``report`` and ``compare``: the commands about what runs wrote."""
    p_report = sub.add_parser("report", help="write results/README.md: figures beside claims and verdicts",
                              description="Collect every RESULTS/NAME/metrics.json and run_info.json into "
                                          "RESULTS/README.md; with --readme, also refresh the marked "
                                          "results section of that file.")
    p_report.add_argument("--results", default="results", metavar="DIR",
                          help="results directory, relative to the project (default: results)")
    p_report.add_argument("--readme", metavar="PATH", help="also refresh the marked section of this README")
    p_report.set_defaults(func=cmd_report)

    p_compare = sub.add_parser("compare", help="check that two runs of an experiment agree but for measured times",
                               description="Compare two OUTPUT_DIR/NAME directories: metrics.json without its "
                                           "measured times, every CSV table without its time columns, every "
                                           "cached .npz array, exactly; each differing field is printed with "
                                           "how many entries differ and the largest absolute and relative "
                                           "difference. run_info.json (times, Python and library versions, "
                                           "CPU) is provenance, not compared: a difference there is only "
                                           "noted. Exit status 1 if anything else differs.")
    p_compare.add_argument("first", metavar="FIRST", help="a run's OUTPUT_DIR/NAME, or an OUTPUT_DIR holding one run")
    p_compare.add_argument("second", metavar="SECOND", help="another run's, alike")
    p_compare.set_defaults(func=cmd_compare)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``shapley-research``; returns the exit status."""
    args = _parse(build_parser(), argv)
    try:
        return args.func(args)
    except ProjectError as err:
        print(f"shapley-research: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        _quiet_closed_stdout()
        return EXIT_OK
    except KeyboardInterrupt:  # before or after a notebook ran (a run's own Ctrl-C is answered in _execute)
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args``, except that ``run``'s overrides may also follow its flags.

    argparse fills ``OVERRIDE ...`` with the words right after ``NAME`` only, so
    ``run NAME --no-figures profile=quick`` left ``profile=quick`` unrecognised;
    the words left over after a flag are overrides too, in the order given.
    """
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "command", None) == "run":
        args.overrides = [*args.overrides, *(word for word in extra if not word.startswith("-"))]
        extra = [word for word in extra if word.startswith("-")]
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _quiet_closed_stdout() -> None:
    """The reader of stdout left (``| head``): send what is left to /dev/null, so exiting prints no error.

    Python's own recipe (signal module docs, "Note on SIGPIPE"): the flush at
    exit would raise again on the closed pipe.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):  # stdout has no file descriptor (captured): nothing to redirect
        pass


if __name__ == "__main__":
    sys.exit(main())
