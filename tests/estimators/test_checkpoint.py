"""Checkpoint and resume: a stopped run loses nothing and continues to the very same numbers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import shapley_research as sr
from games import CountingGame, Interrupted, InterruptingGame, MajorityGame, WeightedVotingGame, assert_same_run

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off

GAME = WeightedVotingGame([4, 3, 3, 2, 2, 1, 1, 1], quota=9)
N = GAME.n_players

# estimator name -> call(game, budget, **kwargs); budgets of about 40 batches
RUNS = {
    "permutation": lambda g, **kw: sr.permutation_shapley(g, kw.pop("budget", 1 + 8 * 40), batch_size=1, **kw),
    "antithetic": lambda g, **kw: sr.permutation_shapley(g, kw.pop("budget", 1 + 16 * 40), batch_size=1,
                                                         antithetic=True, **kw),
    "rotations": lambda g, **kw: sr.permutation_shapley(g, kw.pop("budget", 1 + 3 * 16 * 40), batch_size=1,
                                                        antithetic=True, rotations=3, **kw),
    "position_adjusted": lambda g, **kw: sr.permutation_shapley(g, kw.pop("budget", 1 + 8 * 40), batch_size=1,
                                                                position_adjustment=True, **kw),
    "group_testing": lambda g, **kw: sr.group_testing_shapley(g, kw.pop("budget", 2 + 25 * 40), batch_size=25,
                                                              **kw),
    "group_testing_paper": lambda g, **kw: sr.group_testing_shapley(g, kw.pop("budget", 2 + 25 * 40),
                                                                    batch_size=25, variant="paper", **kw),
    "compressive": lambda g, **kw: sr.compressive_shapley(g, kw.pop("budget", 2 + 8 * 40), batch_size=1, **kw),
    "svarm": lambda g, **kw: sr.stratified_svarm_shapley(g, kw.pop("budget", 2 * N + 2 + 25 * 40), batch_size=25,
                                                         **kw),
    # U(empty), U(D) and 40 permutations at full cost; the savings buy more, in later rounds
    "truncated": lambda g, **kw: sr.permutation_shapley(g, kw.pop("budget", 2 + 8 * 40), batch_size=1,
                                                        truncation=0.2, **kw),
    "msr_banzhaf": lambda g, **kw: sr.msr_banzhaf(g, kw.pop("budget", 25 * 40), batch_size=25, **kw),
    "kernel": lambda g, **kw: sr.unbiased_kernel_shapley(g, kw.pop("budget", 2 + 2 * 25 * 40), batch_size=25, **kw),
    "owen": lambda g, **kw: sr.owen_shapley(g, kw.pop("budget", 4 * (N + 1) * 40), batch_size=1, antithetic=True, **kw),
    "kernel_regression": lambda g, **kw: sr.kernel_shapley(g, kw.pop("budget", 2 + 2 * 25 * 40), batch_size=25, **kw),
    "leverage": lambda g, **kw: sr.leverage_shapley(g, kw.pop("budget", 2 + 2 * 25 * 40), batch_size=25, **kw),
    # Beta(16, 1): units of at most N + 1 evaluations at N = 8 (info["unit_evaluations"]), plus U(empty) and U(D)
    "beta_shapley": lambda g, **kw: sr.beta_shapley(g, kw.pop("budget", 2 + (N + 1) * 40), batch_size=1, **kw),
    "beta_shapley_1_1": lambda g, **kw: sr.beta_shapley(g, kw.pop("budget", 1 + N * 40), alpha=1, beta=1,
                                                        batch_size=1, **kw),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_interrupted_then_resumed_equals_uninterrupted(name, tmp_path):
    path = tmp_path / "run.ckpt"
    full = RUNS[name](GAME, seed=5)
    with pytest.raises(Interrupted):
        RUNS[name](InterruptingGame(GAME, after=15), seed=5, checkpoint=path, checkpoint_interval=3600)
    assert path.exists(), "the state merged before the interruption must be saved"
    counting = CountingGame(GAME)
    resumed = RUNS[name](counting, seed=5, checkpoint=path)
    assert resumed.info["resumed_samples"] > 0
    assert_same_run(resumed, full)
    # the resumed process evaluated only what was missing: no anchors, no batch twice
    assert 0 < counting.rows < full.n_evaluations - 2


def test_a_stopped_run_says_what_its_checkpoint_holds_and_what_its_batch_log_keeps(tmp_path, capsys):
    """A checkpoint keeps whole batches, its batch log the utilities of the batch under way: a stop says which."""
    path = tmp_path / "run.ckpt"
    with pytest.raises(Interrupted):  # the 4th batch's one call is interrupted: nothing of it is logged
        sr.msr_banzhaf(InterruptingGame(GAME, after=4), 400, seed=5, batch_size=50, checkpoint=path)
    said = capsys.readouterr().err
    assert f"stopped: {path} holds 150 coalitions (150 evaluations, 3 whole batches of 50)" in said
    assert "the batch under way had logged no utility" in said and "Rerun the same call to resume." in said
    assert sr.msr_banzhaf(GAME, 400, seed=5, batch_size=50, checkpoint=path).info["resumed_samples"] == 150
    with pytest.raises(Interrupted):  # no checkpoint: nothing saved, nothing said
        sr.msr_banzhaf(InterruptingGame(GAME, after=4), 400, seed=5, batch_size=50)
    assert "stopped:" not in capsys.readouterr().err


@pytest.mark.slow  # kills a child interpreter mid-run
def test_killed_process_resumes_to_the_same_values(tmp_path):
    """SIGKILL (no chance to clean up) mid-run; the last periodic checkpoint is intact."""
    path = tmp_path / "killed.ckpt"
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        import shapley_research as sr
        from games import WeightedVotingGame
        from shapley_research.estimators import _small_games

        _small_games.ENUMERATION_MAX_PLAYERS = 0  # sample the 8 players, as in the parent (tests/conftest.py)

        class Slow(WeightedVotingGame):
            def _evaluate(self, masks):
                time.sleep(0.02)
                return super()._evaluate(masks)

        sr.permutation_shapley(Slow([4, 3, 3, 2, 2, 1, 1, 1], quota=9), 1 + 8 * 400, seed=9, batch_size=1,
                               checkpoint={str(path)!r}, checkpoint_interval=0)
    """)
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if path.exists():
                time.sleep(0.3)  # let a few more batches land
                break
            time.sleep(0.05)
        assert child.poll() is None, "the run finished before it could be killed"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    counting = CountingGame(GAME)
    resumed = sr.permutation_shapley(counting, 1 + 8 * 400, seed=9, batch_size=1, checkpoint=path)
    assert 0 < resumed.info["resumed_samples"] < 400
    assert_same_run(resumed, sr.permutation_shapley(GAME, 1 + 8 * 400, seed=9, batch_size=1))


TERMINATED = {  # the call the child makes, and the same call here: the sampling loop, and AME's loop of its own
    "permutation": ("permutation_shapley(game, 1 + 8 * 400, seed=9, batch_size=1, **kw)",
                    lambda game, **kw: sr.permutation_shapley(game, 1 + 8 * 400, seed=9, batch_size=1, **kw)),
    "ame": ("ame(game, 400, seed=9, chunk_size=1, **kw)",
            lambda game, **kw: sr.ame(game, 400, seed=9, chunk_size=1, **kw)),
}


def saved_count(path: Path) -> int:
    """The samples a checkpoint file holds."""
    with np.load(path, allow_pickle=False) as archive:
        return int(json.loads(str(archive["meta"][()]))["count"])


@pytest.mark.slow  # stops a child interpreter mid-run
@pytest.mark.parametrize("name", sorted(TERMINATED))
def test_terminated_process_saves_its_state_and_resumes_to_the_same_values(name, tmp_path):
    """SIGTERM (``kill``, ``timeout``, a scheduler's stop) saves the state as Ctrl-C does; exit status 143."""
    call, run = TERMINATED[name]
    path, started = tmp_path / "terminated.ckpt", tmp_path / "started"
    script = textwrap.dedent(f"""
        import pathlib, sys, time
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        import shapley_research as sr
        from games import WeightedVotingGame
        from shapley_research.estimators import _small_games

        _small_games.ENUMERATION_MAX_PLAYERS = 0  # sample the 8 players, as in the parent (tests/conftest.py)

        class Slow(WeightedVotingGame):
            def _evaluate(self, masks):
                pathlib.Path({str(started)!r}).touch()
                time.sleep(0.02)
                return super()._evaluate(masks)

        game, kw = Slow([4, 3, 3, 2, 2, 1, 1, 1], quota=9), dict(checkpoint={str(path)!r}, checkpoint_interval=3600)
        sr.{call}
    """)
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None and not started.exists():
            time.sleep(0.05)
        time.sleep(0.3)  # let a few batches land; none is written before the interval but on the signal
        assert child.poll() is None, "the run finished before it could be stopped"
        # the sampling driver writes the file at the start (seed, anchors), AME not: no sample before the interval
        assert not path.exists() or saved_count(path) == 0
        child.send_signal(signal.SIGTERM)
    finally:
        child.wait(timeout=60)
    assert child.returncode == 128 + signal.SIGTERM
    resumed = run(CountingGame(GAME), checkpoint=path)
    assert 0 < resumed.info["resumed_samples"] < 400
    assert_same_run(resumed, run(GAME))


def test_sigterm_keeps_a_handler_installed_by_someone_else():
    from shapley_research.estimators._sampling._checkpoint import terminated_as_exit

    def mine(signum, frame):  # pragma: no cover - never called
        pass

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        with terminated_as_exit():
            assert signal.getsignal(signal.SIGTERM) is mine
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with terminated_as_exit():
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        with terminated_as_exit(saving=False):  # a run without a checkpoint has nothing to save
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_finished_run_is_returned_from_its_checkpoint_without_evaluations(tmp_path):
    path = tmp_path / "done.ckpt"
    first = RUNS["group_testing"](GAME, seed=2, checkpoint=path)
    counting = CountingGame(GAME)
    again = RUNS["group_testing"](counting, seed=2, checkpoint=path)
    assert counting.rows == 0
    assert_same_run(again, first)


def test_seed_none_adopts_the_checkpoint_seed(tmp_path):
    path = tmp_path / "seedless.ckpt"
    with pytest.raises(Interrupted):
        RUNS["permutation"](InterruptingGame(GAME, after=10), checkpoint=path)
    resumed = RUNS["permutation"](GAME, checkpoint=path)
    assert_same_run(resumed, RUNS["permutation"](GAME, seed=resumed.seed))


def test_a_finished_run_continues_with_a_larger_budget(tmp_path):
    path = tmp_path / "grow.ckpt"
    RUNS["group_testing"](GAME, seed=4, checkpoint=path, budget=2 + 25 * 20)
    grown = RUNS["group_testing"](GAME, seed=4, checkpoint=path, budget=2 + 25 * 40)
    assert grown.info["resumed_samples"] == 25 * 20
    assert_same_run(grown, RUNS["group_testing"](GAME, seed=4, budget=2 + 25 * 40))


# estimator name -> (call(game, budget, **kwargs), batch size, three growing budgets); the first budget's
# samples are not a multiple of the batch size, so its run ends on a partial batch
PARTIAL = {
    "permutation": (lambda g, b, **kw: sr.permutation_shapley(g, b, batch_size=3, **kw), 3, (1 + 8 * 10,
                                                                                           1 + 8 * 20, 1 + 8 * 33)),
    "truncated": (lambda g, b, **kw: sr.permutation_shapley(g, b, batch_size=3, truncation=0.2, **kw), 3,
                  (2 + 8 * 10, 2 + 8 * 20, 2 + 8 * 33)),
    "group_testing": (lambda g, b, **kw: sr.group_testing_shapley(g, b, batch_size=7, **kw), 7, (2 + 40, 2 + 90,
                                                                                                  2 + 150)),
    "svarm": (lambda g, b, **kw: sr.stratified_svarm_shapley(g, b, batch_size=7, **kw), 7, (2 * N + 2 + 40,
                                                                                            2 * N + 2 + 90,
                                                                                            2 * N + 2 + 150)),
    "msr_banzhaf": (lambda g, b, **kw: sr.msr_banzhaf(g, b, batch_size=7, **kw), 7, (40, 90, 150)),
    "kernel": (lambda g, b, **kw: sr.unbiased_kernel_shapley(g, b, batch_size=7, **kw), 7, (2 + 2 * 40, 2 + 2 * 90,
                                                                                            2 + 2 * 150)),
    "owen": (lambda g, b, **kw: sr.owen_shapley(g, b, batch_size=3, **kw), 3, (36 * 10, 36 * 20, 36 * 33)),
    "kernel_regression": (lambda g, b, **kw: sr.kernel_shapley(g, b, batch_size=7, **kw), 7,
                          (2 + 2 * 40, 2 + 2 * 90, 2 + 2 * 150)),
    "leverage": (lambda g, b, **kw: sr.leverage_shapley(g, b, batch_size=7, **kw), 7, (2 + 2 * 40, 2 + 2 * 90,
                                                                                      2 + 2 * 150)),
    "beta_shapley": (lambda g, b, **kw: sr.beta_shapley(g, b, batch_size=3, **kw), 3, (2 + 9 * 10, 2 + 9 * 20,
                                                                                       2 + 9 * 33)),
    "compressive": (lambda g, b, **kw: sr.compressive_shapley(g, b, batch_size=3, **kw), 3, (2 + 8 * 10,
                                                                                             2 + 8 * 20, 2 + 8 * 33)),
}


@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_a_run_ended_on_a_partial_batch_continues_with_a_larger_budget(name, tmp_path):
    """Its batches stay as they were and whole batches follow: the same history gives the same bits."""
    run, batch_size, (small, larger, largest) = PARTIAL[name]
    path = tmp_path / "grow.ckpt"
    first = run(GAME, small, seed=6, checkpoint=path)
    assert first.n_samples % batch_size != 0, "the first run must end on a partial batch"
    grown = run(GAME, larger, seed=6, checkpoint=path)
    assert grown.info["resumed_samples"] == first.n_samples < grown.n_samples
    assert grown.n_evaluations <= larger
    # the same two calls, the second interrupted and resumed: the very same run
    again = tmp_path / "again.ckpt"
    run(GAME, small, seed=6, checkpoint=again)
    with pytest.raises(Interrupted):
        run(InterruptingGame(GAME, after=3), larger, seed=6, checkpoint=again, checkpoint_interval=3600)
    assert_same_run(run(GAME, larger, seed=6, checkpoint=again), grown)
    # it grows again, and a smaller budget than the file's is refused with the file untouched
    assert run(GAME, largest, seed=6, checkpoint=path).n_samples > grown.n_samples
    before = _bytes(path)
    with pytest.raises(sr.CheckpointError, match="smaller budget"):
        run(GAME, small, seed=6, checkpoint=path)
    assert _bytes(path) == before


def test_checkpoint_with_parallel_batches_equals_sequential(tmp_path):
    from joblib import parallel_config

    path = tmp_path / "parallel.ckpt"
    with parallel_config(backend="threading"):
        parallel = RUNS["permutation"](GAME, seed=8, n_jobs=2, checkpoint=path, checkpoint_interval=0)
    assert_same_run(parallel, RUNS["permutation"](GAME, seed=8))
    assert [p.name for p in tmp_path.iterdir()] == ["parallel.ckpt"], "temporary files left behind"


def _bytes(path: Path) -> bytes:
    return path.read_bytes()


def _good_checkpoint(tmp_path) -> Path:
    path = tmp_path / "good.ckpt"
    with pytest.raises(Interrupted):
        RUNS["permutation"](InterruptingGame(GAME, after=10), seed=1, checkpoint=path)
    return path


CORRUPTIONS = {
    "random_bytes": lambda data: os.urandom(len(data)),
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "one_byte_flipped": lambda data: data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF])
    + data[len(data) // 2 + 1:],
    "text": lambda data: b"not a checkpoint\n",
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_corrupted_checkpoint_is_refused_and_never_overwritten(corruption, tmp_path):
    path = _good_checkpoint(tmp_path)
    damaged = CORRUPTIONS[corruption](_bytes(path))
    path.write_bytes(damaged)
    counting = CountingGame(GAME)
    with pytest.raises(sr.CheckpointError, match="checkpoint=.*(not a checkpoint|corrupted|unknown format)") as err:
        RUNS["permutation"](counting, seed=1, checkpoint=path)
    assert counting.rows == 0, "nothing may be evaluated before the checkpoint is validated"
    assert _bytes(path) == damaged
    assert "allow_pickle" not in str(err.value)  # numpy's advice on pickles is no reason for a user
    if corruption == "text":
        assert "is not a checkpoint file" in str(err.value)


def test_a_checkpoint_that_cannot_be_read_is_not_called_damaged(tmp_path, monkeypatch):
    """An OS error (permissions, say) gives its reason and no advice to delete what may be a good run."""
    path = _good_checkpoint(tmp_path)

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(np, "load", refused)
    with pytest.raises(sr.CheckpointError, match=r"could not be read \(PermissionError: Permission denied\)") as err:
        RUNS["permutation"](GAME, seed=1, checkpoint=path)
    assert "delete" not in str(err.value)


def test_a_damaged_archive_says_so_with_its_reason(tmp_path):
    path = _good_checkpoint(tmp_path)
    data = _bytes(path)
    path.write_bytes(data[: len(data) - 30])  # the archive's directory cut off
    with pytest.raises(sr.CheckpointError, match=r"is damaged or not a checkpoint \(BadZipFile: "):
        RUNS["permutation"](GAME, seed=1, checkpoint=path)


def test_a_smaller_budget_names_the_units_the_file_holds(tmp_path):
    """An antithetic run holds pairs (its result counts permutations): the refusal says which."""
    path = tmp_path / "pairs.ckpt"
    first = sr.permutation_shapley(GAME, 1 + 16 * 10, seed=2, antithetic=True, batch_size=2, checkpoint=path)
    assert first.n_samples == 20
    with pytest.raises(sr.CheckpointError, match="holds 10 pairs in 5 batches, but this call's budget plans 4 pairs"):
        sr.permutation_shapley(GAME, 1 + 16 * 4, seed=2, antithetic=True, batch_size=2, checkpoint=path)


def test_corruption_inside_valid_archive_is_caught_by_the_checksum(tmp_path):
    path = _good_checkpoint(tmp_path)
    with np.load(path) as archive:
        contents = {key: archive[key] for key in archive.files}
    contents["mean"] = contents["mean"] + 1e-9  # a plausible, silently wrong state
    with open(path, "wb") as handle:
        np.savez(handle, **contents)
    damaged = _bytes(path)
    with pytest.raises(sr.CheckpointError, match="corrupted"):
        RUNS["permutation"](GAME, seed=1, checkpoint=path)
    assert _bytes(path) == damaged


@pytest.mark.parametrize("change", [
    dict(seed=2),
    dict(antithetic=True),
    dict(batch_size=2),
])
def test_checkpoint_of_another_run_is_refused(change, tmp_path):
    path = _good_checkpoint(tmp_path)
    before = _bytes(path)
    kwargs = {"seed": 1, "batch_size": 1, **change}
    with pytest.raises(sr.CheckpointError, match="different run"):
        sr.permutation_shapley(GAME, 1 + 16 * 40, checkpoint=path, **kwargs)
    with pytest.raises(sr.CheckpointError, match="different run"):
        sr.group_testing_shapley(GAME, 1000, seed=1, checkpoint=path)
    assert _bytes(path) == before


def test_a_checkpoint_of_another_game_is_refused_and_one_written_before_fingerprints_is_read(tmp_path):
    """Same players, same anchors, other quota: the games' fingerprints differ. A file without the key (written
    before games had fingerprints) continues as it did."""
    import json

    from shapley_research.estimators._sampling._checkpoint import _digest

    path = tmp_path / "game.ckpt"
    RUNS["permutation"](GAME, seed=3, checkpoint=path, budget=1 + 8 * 20)
    before = _bytes(path)
    other = WeightedVotingGame([4, 3, 3, 2, 2, 1, 1, 1], quota=12)
    with pytest.raises(sr.CheckpointError, match="game: file"):
        RUNS["permutation"](other, seed=3, checkpoint=path)
    assert _bytes(path) == before
    with np.load(path, allow_pickle=False) as archive:  # the file as an earlier version wrote it
        meta, mean, m2 = json.loads(str(archive["meta"][()])), archive["mean"], archive["m2"]
    meta.pop("sha256")
    del meta["fingerprint"]["game"]
    np.savez(path, meta=np.array(json.dumps({**meta, "sha256": _digest(meta, mean, m2)}, sort_keys=True)),
             mean=mean, m2=m2)
    counting = CountingGame(GAME)  # a wrapper has no fingerprint: not compared, as the file's is missing
    resumed = RUNS["permutation"](counting, seed=3, checkpoint=path)
    assert resumed.info["resumed_samples"] == 20 and 0 < counting.rows
    assert_same_run(resumed, RUNS["permutation"](GAME, seed=3))


def test_checkpoint_holding_more_than_the_budget_is_refused(tmp_path):
    path = tmp_path / "big.ckpt"
    RUNS["permutation"](GAME, seed=3, checkpoint=path, budget=1 + 8 * 40)
    before = _bytes(path)
    with pytest.raises(sr.CheckpointError, match="budget plans"):
        RUNS["permutation"](GAME, seed=3, checkpoint=path, budget=1 + 8 * 20)
    assert _bytes(path) == before


def test_checkpoint_argument_is_validated(tmp_path):
    with pytest.raises(TypeError, match="checkpoint must be a file path"):
        RUNS["permutation"](GAME, seed=1, checkpoint=3)
    with pytest.raises(ValueError, match="is a directory"):
        RUNS["permutation"](GAME, seed=1, checkpoint=tmp_path)
    with pytest.raises(ValueError, match="checkpoint_interval must be >= 0"):
        RUNS["permutation"](GAME, seed=1, checkpoint=tmp_path / "x", checkpoint_interval=-1)


def test_majority_game_runs_without_checkpoint_unchanged():
    """No checkpoint: no file is written anywhere and the run equals itself."""
    game = MajorityGame(6, 3)
    a = sr.permutation_shapley(game, 601, seed=0)
    b = sr.permutation_shapley(game, 601, seed=0)
    assert_same_run(a, b)
    assert a.info["stopped_by"] == "budget" and a.info["resumed_samples"] == 0
