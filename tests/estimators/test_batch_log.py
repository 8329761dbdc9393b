"""Within-batch replay logs: a run stopped mid-batch keeps the utilities that batch had computed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import shapley_research as sr
from games import assert_same_run
from shapley_research.estimators._sampling import _replay
from shapley_research.estimators._sampling._replay import ReplayWarning

pytestmark = pytest.mark.sampling

N = 8
WEIGHTS = np.array([4, 3, 3, 2, 2, 1, 1, 1], dtype=float)


class Stop(KeyboardInterrupt):
    pass


class RowGame:
    """A utility computed row by row (``as_game(..., vectorized=False)``): counts rows, stops at row ``stop_at``."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.rows, self.stop_at = 0, stop_at

    def __call__(self, mask: np.ndarray) -> float:
        if self.stop_at is not None and self.rows + 1 == self.stop_at:
            raise Stop
        self.rows += 1
        total = float(mask @ WEIGHTS)
        return float(total >= 9) + 0.01 * total  # a weighted vote, plus a little to tell coalitions apart

    def game(self) -> sr.FunctionGame:
        return sr.as_game(self, N)


# default batch sizes: one batch each (the truncated run, whose batches are of one permutation, many)
RUNS = {
    "msr_banzhaf": lambda g, **kw: sr.msr_banzhaf(g, 300, **kw),
    "permutation": lambda g, **kw: sr.permutation_shapley(g, 1 + 8 * 30, **kw),
    "antithetic": lambda g, **kw: sr.permutation_shapley(g, 1 + 16 * 15, antithetic=True, **kw),
    "truncated": lambda g, **kw: sr.permutation_shapley(g, 2 + 8 * 30, truncation=0.2, **kw),
    "group_testing": lambda g, **kw: sr.group_testing_shapley(g, 300, **kw),
    "compressive": lambda g, **kw: sr.compressive_shapley(g, 2 + 8 * 30, **kw),
    "svarm": lambda g, **kw: sr.stratified_svarm_shapley(g, 2 * N + 2 + 300, **kw),
    "beta_shapley": lambda g, **kw: sr.beta_shapley(g, 2 + (N + 1) * 30, **kw),
    "kernel": lambda g, **kw: sr.unbiased_kernel_shapley(g, 2 + 2 * 150, **kw),
    "owen": lambda g, **kw: sr.owen_shapley(g, 4 * (N + 1) * 8, **kw),
    "kernel_regression": lambda g, **kw: sr.kernel_shapley(g, 2 + 2 * 150, **kw),
    "leverage": lambda g, **kw: sr.leverage_shapley(g, 2 + 2 * 150, **kw),
}


@pytest.fixture
def row_by_row(monkeypatch):
    """Every call of a game with independent rows is evaluated and logged one row at a time."""
    monkeypatch.setattr(_replay, "LOG_SECONDS", 0.0)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_run_stopped_mid_batch_resumes_evaluating_only_what_was_not_logged(name, row_by_row, tmp_path):
    path = tmp_path / "run.ckpt"
    counted = RowGame()
    full = RUNS[name](counted.game(), seed=3)
    stop_at = counted.rows // 2
    with pytest.raises(Stop):
        RUNS[name](RowGame(stop_at).game(), seed=3, checkpoint=path)
    log = path.with_name(path.name + ".batches")
    assert log.exists() and path.exists()
    resumed = RowGame()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReplayWarning)
        again = RUNS[name](resumed.game(), seed=3, checkpoint=path)
    assert_same_run(again, full)
    # every row evaluated before the stop (the anchors in the checkpoint, the rest in the log) is not evaluated again
    assert resumed.rows == counted.rows - (stop_at - 1)
    assert not log.exists(), "the log goes once the checkpoint holds its batch"


def test_a_vectorized_game_is_logged_call_by_call(tmp_path):
    """A game without independent rows is logged by whole calls: the calls made before the stop are replayed.

    At N = 4,096 a batch of 4,096 coalitions is evaluated in four calls of 1,024 (about 2^22 mask cells each).
    """
    from games import CountingGame, Interrupted, InterruptingGame

    n = 4096
    weights = np.random.default_rng(0).uniform(size=n)
    game = sr.as_game(lambda masks: masks @ weights, n, vectorized=True)
    path = tmp_path / "run.ckpt"
    full = sr.msr_banzhaf(game, 4096, seed=2)
    with pytest.raises(Interrupted):
        sr.msr_banzhaf(InterruptingGame(game, after=3), 4096, seed=2, checkpoint=path)
    counting = CountingGame(game)
    assert_same_run(sr.msr_banzhaf(counting, 4096, seed=2, checkpoint=path), full)
    assert (counting.calls, counting.rows) == (2, 2048)  # the two calls before the stop came from the log


@pytest.mark.parametrize("damage", ["checksum", "other_run"])
def test_a_damaged_or_foreign_log_is_ignored_with_a_warning(damage, row_by_row, tmp_path):
    path = tmp_path / "run.ckpt"
    log = path.with_name(path.name + ".batches")
    counted = RowGame()
    full = sr.msr_banzhaf(counted.game(), 300, seed=3)
    with pytest.raises(Stop):
        sr.msr_banzhaf(RowGame(150).game(), 300, seed=3, checkpoint=path)
    if damage == "checksum":
        blob = bytearray(log.read_bytes())
        blob[-3] ^= 0xFF  # a utility's bytes: the record no longer matches its checksum
        log.write_bytes(bytes(blob))
        seed = 3
    else:  # the log of seed 3 next to the checkpoint of seed 4
        other = tmp_path / "other.ckpt"
        with pytest.raises(Stop):
            sr.msr_banzhaf(RowGame(150).game(), 300, seed=4, checkpoint=other)
        other.with_name(other.name + ".batches").write_bytes(log.read_bytes())
        path, seed = other, 4
        full = sr.msr_banzhaf(counted.game(), 300, seed=4)
    resumed = RowGame()
    with pytest.warns(ReplayWarning, match="is ignored"):
        again = sr.msr_banzhaf(resumed.game(), 300, seed=seed, checkpoint=path)
    assert_same_run(again, full)
    assert resumed.rows == 300  # nothing of the log was used: every coalition evaluated again


def test_a_log_without_its_checkpoint_is_not_used(row_by_row, tmp_path):
    path = tmp_path / "run.ckpt"
    with pytest.raises(Stop):
        sr.msr_banzhaf(RowGame(150).game(), 300, seed=3, checkpoint=path)
    path.unlink()  # a new run under the old name: the log's run was never saved here
    resumed = RowGame()
    with pytest.warns(ReplayWarning, match="no checkpoint file holds the run"):
        sr.msr_banzhaf(resumed.game(), 300, seed=3, checkpoint=path)
    assert resumed.rows == 300  # every coalition (MSR evaluates no anchor)


def test_a_log_cut_short_by_a_kill_keeps_its_whole_records(row_by_row, tmp_path):
    path = tmp_path / "run.ckpt"
    log = path.with_name(path.name + ".batches")
    full = sr.msr_banzhaf(RowGame().game(), 300, seed=3)
    with pytest.raises(Stop):
        sr.msr_banzhaf(RowGame(150).game(), 300, seed=3, checkpoint=path)
    log.write_bytes(log.read_bytes()[:-5])  # the last record half-written
    resumed = RowGame()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReplayWarning)
        again = sr.msr_banzhaf(resumed.game(), 300, seed=3, checkpoint=path)
    assert_same_run(again, full)
    assert resumed.rows == 300 - 148  # the 149 rows logged but the last one, cut short


def test_a_stop_says_how_many_utilities_the_log_keeps(row_by_row, tmp_path, capsys):
    path = tmp_path / "run.ckpt"
    with pytest.raises(Stop):
        sr.msr_banzhaf(RowGame(41).game(), 300, seed=3, checkpoint=path)
    said = capsys.readouterr().err
    assert "holds 0 coalitions (0 evaluations, 0 whole batches of 4096); 40 utilities of the batch under way" in said


def test_parallel_batches_replay_the_logged_batch_first(row_by_row, tmp_path):
    """With n_jobs > 1 the logged batch runs in this process, then the workers take the rest: same bits."""
    path = tmp_path / "run.ckpt"
    full = sr.msr_banzhaf(RowGame().game(), 600, seed=3, batch_size=100)
    with pytest.raises(Stop):
        sr.msr_banzhaf(RowGame(250).game(), 600, seed=3, batch_size=100, checkpoint=path)
    from joblib import parallel_config

    with parallel_config(backend="threading"):
        again = sr.msr_banzhaf(RowGame().game(), 600, seed=3, batch_size=100, checkpoint=path, n_jobs=2)
    assert_same_run(again, full)


HARD_KILL = """
import os, sys
import numpy as np
import shapley_research as sr

weights, calls = np.linspace(0.0, 1.0, 50), [0]

def utility(mask):
    calls[0] += 1
    if calls[0] == int(sys.argv[2]):
        os._exit(9)  # a hard kill: no handler, no final save
    return float(mask @ weights + np.sqrt(mask.sum()))

result = sr.msr_banzhaf(sr.as_game(utility, 50), 3000, seed=None, batch_size=500, checkpoint=sys.argv[1],
                        progress=False)
np.save(sys.argv[1] + ".values.npy", result.values)
print(calls[0])
"""


@pytest.mark.slow  # two child interpreters
def test_a_hard_kill_keeps_the_logged_utilities(tmp_path):
    import json
    import subprocess
    import sys

    script, path = tmp_path / "run.py", tmp_path / "run.ckpt"
    script.write_text(HARD_KILL)
    killed = subprocess.run([sys.executable, str(script), str(path), "1700"], capture_output=True, text=True)
    assert killed.returncode == 9 and path.exists()  # the file written at the start holds the drawn seed
    resumed = subprocess.run([sys.executable, str(script), str(path), "0"], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert int(resumed.stdout) < 3000 - 1000  # most of the 1,699 utilities evaluated before the kill are replayed
    with np.load(path, allow_pickle=False) as archive:
        seed = json.loads(str(archive["meta"][()]))["fingerprint"]["seed"]
    weights = np.linspace(0.0, 1.0, 50)
    game = sr.as_game(lambda mask: float(mask @ weights + np.sqrt(mask.sum())), 50)
    uninterrupted = sr.msr_banzhaf(game, 3000, seed=seed, batch_size=500, progress=False)
    np.testing.assert_array_equal(np.load(str(path) + ".values.npy"), uninterrupted.values)
