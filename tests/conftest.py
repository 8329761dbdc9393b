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


@pytest.fixture
def one_torch_thread():
    """torch's CPU work on one thread for the test, as the estimators pin it.

    torch's OpenMP threads wait for each other by spinning: while another process held one of the two
    cores, its two threads sharing the other ran the GPU scripts on torch's CPU device 8x slower (194 s
    against 23 s on one thread, the same work beside the same load).
    """
    pytest.importorskip("torch")
    from shapley_research._threads import pinned_torch_threads

    with pinned_torch_threads(1):
        yield


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


# --- two quick-profile runs of each experiment, made one after the other in the background, shared by the tests ---

_QUICK_RUNS: dict = {}  # NAME -> [_QueuedRun] * 2: the run, the rerun


def _quick_command(name: str, output_dir, *overrides: str) -> list:
    """``shapley-research run NAME profile=quick output_dir=OUTPUT_DIR [OVERRIDES]`` as `dvc repro` runs it."""
    import shutil
    import sys

    script = shutil.which("shapley-research")
    command = [script] if script else [sys.executable, "-m", "shapley_research.cli"]
    return command + ["run", name, "profile=quick", f"output_dir={output_dir}", *overrides, "--quiet"]


def run_quick_profile(name: str, output_dir, *overrides: str, background: bool = False):
    """One quick run of ``name`` in a subprocess (a ``subprocess.CompletedProcess``).

    ``background``: at the lowest CPU priority (``nice -n 19``), on the cycles the tests leave idle. A test's
    BLAS and OpenMP threads wait for each other by spinning, so a run competing with them at equal priority
    slowed the tests beside it several-fold; the values do not depend on the priority.
    """
    import shutil
    import subprocess

    command = _quick_command(name, output_dir, *overrides)
    nice = shutil.which("nice") if background else None
    return subprocess.run([nice, "-n", "19", *command] if nice else command, capture_output=True, text=True,
                          timeout=600)


#: The overrides of the two runs: the first as `dvc repro` runs it (every core, ``n_jobs=-1`` from
#: conf/config.yaml), the second in one process, so that comparing them also shows that no number depends on n_jobs,
#: and without figures (``--no-figures``), which compare_runs does not read: drawing is half a quick run's time.
_RUN, _RERUN = (), ("n_jobs=1", "--no-figures")


class _QueuedRun:
    """One quick run: made by the queue's thread, or by the test session's thread if it gets there first."""

    def __init__(self, pool, name: str, root, overrides: tuple) -> None:
        self._args = (name, root, overrides)
        self._made = None
        self.future = pool.submit(self._make, True)

    def _make(self, background: bool):
        name, root, overrides = self._args
        self._made = (run_quick_profile(name, root, *overrides, background=background), root)
        return self._made

    def steal(self) -> bool:
        """Make the run here, now, at the tests' priority, if nobody has started it; whether it did."""
        # Future.cancel() is True again on a future already cancelled: without the check a run stolen once was
        # made again by each later steal.
        if self.future.cancelled() or not self.future.cancel():
            return False
        self._make(False)
        return True

    def result(self):
        """``(completed process, output root)``, once made."""
        return self._made if self.future.cancelled() else self.future.result()


class _QuickRunQueue:
    """Makes the selected tests' quick runs in the background, one at a time, in the order tests read them.

    The unit tests keep one core busy and leave the other idle, while an end-to-end test otherwise waits
    for its runs: starting them at the session's start on the idle core, at the lowest priority (a test using
    both cores keeps them), and running the modules that read them last (:func:`pytest_collection_modifyitems`),
    overlaps the two. Every experiment's first run is
    queued before any rerun: the end-to-end modules read the first runs, the rerun-determinism module, last,
    both. Once the unit tests are done, a test waiting for a run makes queued runs itself (from the end of the
    queue), so both cores work until the last run. Each run is made once whatever the order of requests.
    """

    def __init__(self, tmp_path_factory) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._factory = tmp_path_factory
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="quick-runs")
        self._order: list = []

    def _queue(self, name: str, which: int) -> None:
        prefix, overrides = ("quick", _RUN) if which == 0 else ("rerun", _RERUN)
        root = self._factory.mktemp(f"{prefix}_{name}")  # made in the main thread: the factory is not thread-safe
        run = _QueuedRun(self._pool, name, root, overrides)
        _QUICK_RUNS.setdefault(name, [None, None])[which] = run
        self._order.append(run)

    def submit(self, names) -> None:
        """Queue the runs of ``names`` not queued yet: every first run, then every rerun."""
        new = [name for name in dict.fromkeys(names) if name not in _QUICK_RUNS]
        for which in (0, 1):
            for name in new:
                self._queue(name, which)

    def result(self, run: _QueuedRun):
        """``run``'s result; while it is being made, the session's thread makes the last queued runs."""
        if run.steal():
            return run.result()
        for spare in reversed(self._order):
            if run.future.done():
                break
            spare.steal()
        return run.result()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


_QUEUE: list = []  # the session's _QuickRunQueue, once tests need one


def _quick_runs_queue(factory) -> _QuickRunQueue:
    if not _QUEUE:
        _QUEUE.append(_QuickRunQueue(factory))
    return _QUEUE[0]


def _quick_runs(tmp_path_factory, name: str, which: int):
    queue = _quick_runs_queue(tmp_path_factory)
    queue.submit([name])  # already queued at the session's start, unless selected late
    return queue.result(_QUICK_RUNS[name][which])


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
    names = [n for n in dict.fromkeys(needed) if n is not None]
    if names and not session.config.option.collectonly:
        factory = session.config._tmp_path_factory  # what the tmp_path_factory fixture returns
        _quick_runs_queue(factory).submit(names)


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

    The experiment's end-to-end test reads it, and the rerun-determinism test compares it with a second run of
    the same configuration in one process (:func:`quick_rerun`, ``n_jobs=1``). Tests must only read the runs'
    files.
    """
    return lambda name: _quick_runs(tmp_path_factory, name, 0)


@pytest.fixture(scope="session")
def quick_rerun(tmp_path_factory):
    """``quick_rerun(NAME)``: the second quick run of :func:`quick_run` (``n_jobs=1``, no figures), in another
    directory."""
    return lambda name: _quick_runs(tmp_path_factory, name, 1)
