"""Shared fixtures: games with known Shapley values.

The tests mirror the package: ``tests/<subpackage>/test_*.py``, with no ``__init__.py`` (basenames
are unique). ``pythonpath = ["tests"]`` (pyproject.toml) puts this folder on ``sys.path``, so the
test modules of every subfolder import the game zoo as ``from games import ...`` and the helpers
(``_benchmark_scripts``, ``_pipeline_project``) by name.

Markers (registered in ``pyproject.toml``): ``slow`` for a test of about a second or
more, left out by the fast subset ``python -m pytest -m "not slow"`` (the default run has
every test); ``sampling`` to keep sampling estimators sampling on small games, which the
other tests value exactly as users get them (see ``_small_games_per_module``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from shapley_research.estimators import _small_games

from games import (VOTING_QUOTA, VOTING_WEIGHTS, AdditiveGame, AirportGame, GloveGame, MajorityGame,
                   SizeAdditiveGame, TableGame, WeightedVotingGame, random_unanimity_game, sparse_game)

# fast="auto" routes by the committed cost constants in tests, not by this machine's calibration (which would
# time reference fits on first use, and could route differently on another machine)
os.environ.setdefault("SHAPLEY_RESEARCH_ROUTING", "fixed")

#: The users' limit of the small-game enumeration, which the tests keep unless marked ``sampling``.
_ENUMERATION_DEFAULT = _small_games.ENUMERATION_MAX_PLAYERS


def _switch_for(node) -> str | None:
    """``"sampling"`` or ``"enumeration"``: the one of the two markers closest to ``node``, or None."""
    for marker in node.iter_markers():
        if marker.name in ("sampling", "enumeration"):
            return marker.name
    return None


def _enumeration_limit(node) -> int:
    """0 (always sample) under a ``sampling`` marker, else the users' default."""
    return 0 if _switch_for(node) == "sampling" else _ENUMERATION_DEFAULT


@pytest.fixture(scope="module", autouse=True)
def _small_games_per_module(request):
    """The small-game enumeration as a module's markers set it, from the module's first fixture on.

    A sampling estimator whose budget covers all 2^N coalitions returns the exact values
    (``shapley_research.estimators._small_games``), as it does for every user, and the tests run with
    that default. A test or module that studies the sampling itself on a small game (unbiasedness,
    standard errors, checkpoints, stopping rules) is marked ``sampling``, which switches the shortcut
    off; at module scope so that a module's own fixtures, made before its tests, sample too.
    ``enumeration`` on a test turns it back on under a ``sampling`` module.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_small_games, "ENUMERATION_MAX_PLAYERS", _enumeration_limit(request.node))
        yield


@pytest.fixture(autouse=True)
def _small_games_per_test(request, monkeypatch):
    """The small-game enumeration as the test's closest ``sampling``/``enumeration`` marker sets it."""
    monkeypatch.setattr(_small_games, "ENUMERATION_MAX_PLAYERS", _enumeration_limit(request.node))


@pytest.fixture(scope="session")
def unanimity_game():
    """12 players, 10 unanimity terms of size <= 6; player 11 is a null player."""
    return random_unanimity_game(12, 10, 6, seed=3, null_players=[11])


@pytest.fixture(scope="session")
def wide_unanimity_game():
    """30 players: enough coordinates to check standard errors player by player."""
    return random_unanimity_game(30, 25, 8, seed=5)


@pytest.fixture(scope="session")
def voting_game():
    return WeightedVotingGame(VOTING_WEIGHTS, VOTING_QUOTA)


@pytest.fixture(scope="session")
def sparse_values_game():
    """40 players, values exactly 4-sparse around their mean (compressive sampling)."""
    return sparse_game()


def _closed_form_games():
    rng = np.random.default_rng(20190416)
    return {
        "additive_offset": AdditiveGame(rng.normal(size=9), offset=1.5),
        "size_additive": SizeAdditiveGame(rng.uniform(0, 1, 10), np.r_[0.0, np.log1p(np.arange(1, 11))]),
        "unanimity": random_unanimity_game(11, 12, 5, seed=7),
        "airport": AirportGame([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0]),
        "glove_symmetric": GloveGame(4, 4),
        "glove_asymmetric": GloveGame(3, 6),
        "glove_1_2": GloveGame(1, 2),
        "majority": MajorityGame(9, 5),
        "unanimous_majority": MajorityGame(8, 8),
        "weighted_voting": WeightedVotingGame(VOTING_WEIGHTS, VOTING_QUOTA),
        "random_table": TableGame(rng.normal(size=2**7)),
    }


CLOSED_FORM_GAMES = _closed_form_games()


@pytest.fixture(params=sorted(CLOSED_FORM_GAMES))
def closed_form_game(request):
    return CLOSED_FORM_GAMES[request.param]


# --- two quick-profile runs of each experiment, made side by side and shared by the tests that read them ---------

_QUICK_RUNS: dict = {}  # NAME -> Future of [(completed process, output root)] * 2


def _quick_command(name: str, output_dir, *overrides: str) -> list:
    """``shapley-research run NAME profile=quick output_dir=OUTPUT_DIR [OVERRIDES]`` as `dvc repro` runs it."""
    import shutil
    import sys

    script = shutil.which("shapley-research")
    command = [script] if script else [sys.executable, "-m", "shapley_research.cli"]
    return command + ["run", name, "profile=quick", f"output_dir={output_dir}", *overrides, "--quiet"]


def run_quick_profile(name: str, output_dir):
    """One quick run of ``name`` in a subprocess (a ``subprocess.CompletedProcess``)."""
    import subprocess

    return subprocess.run(_quick_command(name, output_dir), capture_output=True, text=True, timeout=600)


#: The overrides of each side-by-side run: the first as `dvc repro` runs it (every core, ``n_jobs=-1`` from
#: conf/config.yaml), the second in one process, so that comparing them also shows that no number depends on n_jobs.
_SIDE_BY_SIDE = ((), ("n_jobs=1",))


def _run_side_by_side(name: str, roots) -> list:
    """The quick runs of ``name`` into each of ``roots``, at the same time (:data:`_SIDE_BY_SIDE`)."""
    import subprocess

    procs = [subprocess.Popen(_quick_command(name, root, *overrides), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for root, overrides in zip(roots, _SIDE_BY_SIDE)]
    done = []
    for proc, root in zip(procs, roots):
        stdout, stderr = proc.communicate(timeout=600)
        done.append((subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), root))
    return done


class _QuickRunQueue:
    """Runs the selected tests' quick runs in the background, one experiment's pair at a time, in test order.

    The unit tests keep one core busy and leave the other idle, while an end-to-end test otherwise waits
    for its runs: starting them at the session's start, and running the modules that read them last
    (:func:`pytest_collection_modifyitems`), overlaps the two, so the suite's wall time is about its CPU time
    over two cores. Each experiment's runs are made once whatever the order of requests.
    """

    def __init__(self, tmp_path_factory) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._factory = tmp_path_factory
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="quick-runs")

    def _roots(self, name: str) -> list:
        return [self._factory.mktemp(f"quick_{name}"), self._factory.mktemp(f"rerun_{name}")]

    def submit(self, name: str) -> None:
        if name not in _QUICK_RUNS:
            roots = self._roots(name)  # made in the main thread: the factory is not thread-safe
            _QUICK_RUNS[name] = self._pool.submit(_run_side_by_side, name, roots)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


_QUEUE: list = []  # the session's _QuickRunQueue, once tests need one


def _quick_runs_queue(factory) -> _QuickRunQueue:
    if not _QUEUE:
        _QUEUE.append(_QuickRunQueue(factory))
    return _QUEUE[0]


def _quick_runs(tmp_path_factory, name: str) -> list:
    _quick_runs_queue(tmp_path_factory).submit(name)  # already queued at the session's start, unless selected late
    return _QUICK_RUNS[name].result()


def _quick_run_name(item) -> str | None:
    """The experiment whose quick runs ``item`` reads: its ``name`` parameter, else its module's name."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "name" in params:
        return params["name"]
    stem = item.path.stem
    return stem.removeprefix("test_experiment_") if stem.startswith("test_experiment_") else None


def pytest_collection_finish(session):
    """Start the quick runs the selected tests read, in the order they read them."""
    needed = [_quick_run_name(item) for item in session.items
              if _END_TO_END_FIXTURES.intersection(getattr(item, "fixturenames", ()))]
    names = list(dict.fromkeys(n for n in needed if n is not None))
    if names and not session.config.option.collectonly:
        factory = session.config._tmp_path_factory  # what the tmp_path_factory fixture returns
        for name in names:
            _quick_runs_queue(factory).submit(name)


def pytest_sessionfinish(session):
    if _QUEUE:
        _QUEUE[0].shutdown()


#: Fixtures that run an experiment's notebook end to end (minutes): a test that uses one is ``slow``.
_END_TO_END_FIXTURES = {"quick_run", "quick_rerun"}


def pytest_collection_modifyitems(items):
    """Mark ``slow`` every test that reads an end-to-end run, so that ``-m "not slow"`` never starts one, and run
    the modules of those tests last: the other tests keep one core busy while the quick runs, started at the
    session's start (:class:`_QuickRunQueue`), are made on the other, instead of waiting for them mid-suite.
    """
    end_to_end_modules = set()
    for item in items:
        if _END_TO_END_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
            end_to_end_modules.add(item.path)
    items.sort(key=lambda item: item.path in end_to_end_modules)  # stable: each part keeps its order


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    """``quick_run(NAME) -> (completed process, output root)``: the experiment's quick run, made once per session.

    Made side by side with a second run of the same configuration in one process (:func:`quick_rerun`,
    ``n_jobs=1``), which the rerun-determinism test compares with it: the two take the time of one on two cores, and the
    experiment's end-to-end test reads the first, so the suite pays for them once. Tests must only
    read the runs' files.
    """
    return lambda name: _quick_runs(tmp_path_factory, name)[0]


@pytest.fixture(scope="session")
def quick_rerun(tmp_path_factory):
    """``quick_rerun(NAME)``: the second quick run of :func:`quick_run`, made at the same time in another directory."""
    return lambda name: _quick_runs(tmp_path_factory, name)[1]
