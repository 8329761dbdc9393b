"""Progress bars: they count evaluations, move within a batch where a game reports rows, and change no number."""

from __future__ import annotations

import io

import numpy as np
import pytest

from shapley_research import (compressive_shapley, exact_banzhaf, exact_beta_shapley, exact_shapley,
                              group_testing_shapley, leave_one_out, msr_banzhaf, permutation_shapley,
                              stratified_svarm_shapley)
from shapley_research.estimators import PROGRESS_ENV
from shapley_research.estimators._sampling import _loop, _progress
from shapley_research.estimators._sampling._loop import run_sampling
from shapley_research.games import report_evaluated, reporting_to

N = 12


class RowGame:
    """An additive game evaluated one row at a time, reporting every ``every`` rows (0: never)."""

    def __init__(self, n_players: int = N, every: int = 1, bars: list | None = None):
        self.n_players, self.every, self.bars = n_players, every, bars
        self.weights = np.linspace(-1.0, 2.0, n_players)
        self.seen = []  # the bar's count after each report, while rows are evaluated

    def evaluate(self, masks):
        masks = np.asarray(masks, dtype=bool)
        out = np.empty(masks.shape[0])
        pending = 0
        for row, mask in enumerate(masks):
            out[row] = float(self.weights[mask].sum()) + 0.1 * mask.sum() ** 0.5
            pending += 1
            if self.every and pending == self.every:
                report_evaluated(pending)
                pending = 0
                if self.bars:
                    self.seen.append(self.bars[-1].n)
        if self.every and pending:
            report_evaluated(pending)
        return out


class FakeBar:
    """Records what the loop does with its bar."""

    def __init__(self, progress, *, total=None, desc="", unit="eval", initial=0, file=None):
        self.disable = progress is not None and not progress
        self.total, self.n, self.desc, self.initial = total, initial, desc, initial
        self.updates, self.totals, self.postfix = [], [total], None

    def update(self, n=1):
        self.updates.append(n)
        self.n += n

    def set_postfix(self, postfix, refresh=True):
        self.postfix = dict(postfix)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __setattr__(self, name, value):
        if name == "total" and hasattr(self, "totals"):
            self.totals.append(value)
        object.__setattr__(self, name, value)


@pytest.fixture
def bars(monkeypatch):
    """Every bar the sampling loop and the SVARM pilot open, in order."""
    opened = []

    def factory(*args, **kwargs):
        opened.append(FakeBar(*args, **kwargs))
        return opened[-1]

    from shapley_research.estimators import _svarm

    monkeypatch.setattr(_loop, "progress_bar", factory)
    monkeypatch.setattr(_svarm, "progress_bar", factory)
    monkeypatch.setattr(_progress, "progress_bar", factory)  # the enumerations' evaluation_bar
    return opened


def test_the_bar_moves_within_a_batch_as_rows_are_reported(bars):
    game = RowGame(bars=bars)
    result = permutation_shapley(game, 1 + 40 * N, seed=3, batch_size=20, progress=True)
    bar = bars[-1]
    assert bar.n == result.n_evaluations - 1  # every sampling evaluation, U(empty) aside
    # the first batch holds 20 permutations of N evaluations each: the bar moved row by row through it
    first = game.seen[:20 * N]
    assert first == list(range(1, 20 * N + 1))
    assert bar.total == 40 * N and bar.totals[0] == 40 * N  # known before the first batch: samples x their cost
    assert bar.postfix == {"perms": 40}


@pytest.mark.parametrize("every", [1, 5, 7, 0])
def test_per_batch_updates_never_count_reported_rows_twice(bars, every):
    game = RowGame(every=every, bars=bars)
    result = msr_banzhaf(game, 100, seed=1, batch_size=30, progress=True)
    bar = bars[-1]
    assert bar.n == result.n_evaluations == 100
    assert sum(bar.updates) == 100 and all(u >= 0 for u in bar.updates)
    if every == 0:  # a game that does not report: the bar moves once per batch
        assert bar.updates == [30, 30, 30, 10]


def test_a_disabled_bar_gets_no_reports(bars):
    game = RowGame(bars=bars)
    msr_banzhaf(game, 50, seed=1, batch_size=25, progress=False)
    assert bars[-1].disable and bars[-1].updates == [25, 25]


@pytest.mark.parametrize("estimator, budget", [
    (lambda g, b, **kw: permutation_shapley(g, b, seed=5, batch_size=7, **kw), 1 + 30 * N),
    (lambda g, b, **kw: permutation_shapley(g, b, seed=5, batch_size=7, truncation=0.3, **kw), 2 + 30 * N),
    (lambda g, b, **kw: msr_banzhaf(g, b, seed=5, batch_size=64, **kw), 300),
    (lambda g, b, **kw: group_testing_shapley(g, b, seed=5, batch_size=64, **kw), 300),
    (lambda g, b, **kw: compressive_shapley(g, b, seed=5, batch_size=7, **kw), 2 + 20 * N),
    (lambda g, b, **kw: stratified_svarm_shapley(g, b, seed=5, batch_size=64, allocation="neyman", pilot=100,
                                                 **kw), 400),
])
def test_progress_changes_no_number(estimator, budget):
    plain = estimator(RowGame(every=0), budget, progress=False)
    for progress in (True, None):
        shown = estimator(RowGame(every=3), budget, progress=progress)
        np.testing.assert_array_equal(shown.values, plain.values)
        np.testing.assert_array_equal(shown.stderr, plain.stderr)
        assert shown.n_evaluations == plain.n_evaluations


@pytest.mark.parametrize("estimator, rows, desc", [
    (lambda g, **kw: exact_shapley(g, chunk_size=1000, **kw), 2**N, "exact Shapley"),
    (lambda g, **kw: exact_banzhaf(g, chunk_size=1000, **kw), 2**N, "exact Banzhaf"),
    (lambda g, **kw: exact_beta_shapley(g, chunk_size=1000, **kw), 2**N, "exact Beta Shapley"),
    (lambda g, **kw: leave_one_out(g, chunk_size=5, **kw), N + 1, "leave-one-out"),
])
def test_the_enumerations_show_a_bar_over_their_evaluations(bars, estimator, rows, desc):
    """exact_shapley can mean 2^20 model fits: the same progress option as the samplers, changing no number."""
    plain = estimator(RowGame(every=0), progress=False)
    assert bars[-1].disable and sum(bars[-1].updates) == rows
    shown = estimator(RowGame(every=7, bars=bars), progress=True)
    bar = bars[-1]
    assert not bar.disable and bar.desc == desc and bar.total == rows and bar.n == rows
    assert sum(bar.updates) == rows and all(u >= 0 for u in bar.updates)
    np.testing.assert_array_equal(shown.values, plain.values)
    with pytest.raises(TypeError, match="progress must be"):
        estimator(RowGame(), progress="yes")


def test_svarm_pilot_moves_row_by_row(bars):
    game = RowGame(bars=bars)
    stratified_svarm_shapley(game, 400, seed=2, batch_size=50, allocation="neyman", pilot=100, progress=True)
    pilot, sampling = bars
    assert pilot.desc == "SVARM pilot" and pilot.n == 100 == pilot.total
    assert game.seen[:50] == list(range(1, 51))  # within the pilot's first batch
    assert sampling.n == 400 - (2 * N + 2) - 100  # after the anchors, the exact strata and the pilot


def test_workers_report_nothing_and_the_batches_still_add_up(bars):
    from joblib import parallel_config

    game = RowGame(bars=bars)
    with parallel_config(backend="threading"):
        result = msr_banzhaf(game, 120, seed=4, batch_size=30, n_jobs=2, progress=True)
    bar = bars[-1]
    # the reports from the worker threads reached no bar: it moved only by whole batches
    assert bar.updates == [30, 30, 30, 30] and bar.n == result.n_evaluations
    assert len(game.seen) == 120 and set(game.seen) <= {0, 30, 60, 90}


def test_report_evaluated_outside_an_estimator_is_a_no_op():
    report_evaluated(3)
    got = []
    with reporting_to(got.append):
        report_evaluated(2)
        with reporting_to(None):  # e.g. an estimator nested in a game, with its bar off
            report_evaluated(5)
        report_evaluated()
    report_evaluated(4)
    assert got == [2, 1]


def test_the_loop_total_is_unknown_only_without_a_nominal_cost(bars):
    def batch(rng, size):
        return rng.normal(size=(size, 2)), 3 * size

    run_sampling(batch, dim=2, n_units=10, batch_size=4, entropy=0, progress=True)
    assert bars[-1].totals[0] is None and bars[-1].total == 30
    run_sampling(batch, dim=2, n_units=10, batch_size=4, entropy=0, progress=True, evaluations_per_unit=3)
    assert bars[-1].totals[0] == 30 and bars[-1].n == 30


# --- where the bar shows ----------------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self):
        return True


def _drive(bar, steps=5):
    with bar:
        for _ in range(steps):
            bar.update(2)


def test_a_log_gets_plain_lines_without_carriage_returns(monkeypatch):
    monkeypatch.setattr(_progress, "LOG_INTERVAL", 0.0)
    log = io.StringIO()
    _drive(_progress.progress_bar(True, total=10, desc="MSR Banzhaf", file=log))
    text = log.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert len(lines) >= 2 and lines[0].startswith("MSR Banzhaf:   0%")
    assert "10/10" in lines[-1] and "eval/s" in lines[-1]  # a last line at the end, with the rate


def test_a_log_stays_quiet_for_short_runs_by_default():
    log = io.StringIO()
    _drive(_progress.progress_bar(None, total=10, desc="quick", file=log))
    assert log.getvalue() == ""  # progress=None: lines only once a run has lasted LOG_INTERVAL seconds


def test_a_terminal_gets_a_live_bar():
    tty = Terminal()
    _drive(_progress.progress_bar(None, total=10, desc="live", file=tty))
    assert "\r" in tty.getvalue() and "live:   0%" in tty.getvalue()


def test_progress_false_shows_nothing_anywhere():
    for stream in (io.StringIO(), Terminal()):
        bar = _progress.progress_bar(False, total=10, desc="off", file=stream)
        _drive(bar)
        assert bar.disable and stream.getvalue() == ""


def test_a_notebook_gets_tqdm_auto(monkeypatch):
    import tqdm.auto

    class Widget(FakeBar):
        def __init__(self, **kwargs):
            super().__init__(not kwargs.pop("disable"), **{k: v for k, v in kwargs.items() if k != "leave"})

    monkeypatch.setattr(tqdm.auto, "notebook_tqdm", Widget)  # what tqdm.auto picked in a kernel
    monkeypatch.setattr(tqdm.auto, "tqdm", Widget)
    for progress in (None, True):
        bar = _progress.progress_bar(progress, total=10, desc="nb")
        assert isinstance(bar, Widget) and not bar.disable


def test_set_total_resizes_a_notebook_widget():
    class Meter:
        max, bar_style = 1, "info"

        class layout:
            width = "20px"

    class Bar:
        disable, total = False, None
        container = type("Box", (), {"children": [None, Meter(), None]})()

    bar = Bar()
    _progress.set_total(bar, 50)
    meter = bar.container.children[1]
    assert bar.total == 50 and meter.max == 50 and meter.bar_style == "" and meter.layout.width is None


def test_the_default_bar_is_off_where_the_environment_says_so(monkeypatch):
    sink = io.StringIO()
    monkeypatch.setenv(PROGRESS_ENV, "off")
    with _progress.progress_bar(None, total=10, desc="x", file=sink) as bar:
        assert bar.disable
    with _progress.progress_bar(True, total=10, desc="x", file=sink) as bar:
        assert not bar.disable  # an explicit request still shows
    monkeypatch.setenv(PROGRESS_ENV, "")
    with _progress.progress_bar(None, total=10, desc="x", file=sink) as bar:
        assert not bar.disable
