"""The units of the sampling loop, one by one: batches and streams, merging in order, stopping rules, checkpoints."""

from __future__ import annotations

import hashlib
import inspect
import json
import time

import joblib
import numpy as np
import pytest

from shapley_research.estimators import CheckpointError, batch_rng
from shapley_research.estimators._sampling import _batches, _stopping
from shapley_research.estimators._sampling._batches import (BatchJob, aux_rng, batch_jobs, batch_sizes, close_batches,
                                                            evaluate_batches, samples_in_batches)
from shapley_research.estimators._sampling._checkpoint import FORMAT, Checkpoint, LoopSnapshot
from shapley_research.estimators._sampling._loop import (MeanState, merge_batch, merged_in_order, resumed_state,
                                                         run_sampling)
from shapley_research.estimators._sampling._progress import expected_evaluations, expected_samples, show_batch
from shapley_research.estimators._sampling._stopping import (MIN_SAMPLES_FOR_PRECISION, SampleCap, StateEstimates,
                                                             StoppingRule, TargetRankCorrelation, TargetStderr,
                                                             first_reached, stopping_rules)

# --- batch planning and random streams ---


@pytest.mark.parametrize("n_units, batch_size, sizes", [
    (10, 4, [4, 4, 2]), (8, 4, [4, 4]), (3, 5, [3]), (0, 4, []), (1, 1, [1]),
])
def test_batch_sizes_are_full_batches_then_the_remainder(n_units, batch_size, sizes):
    assert list(batch_sizes(n_units, batch_size)) == sizes
    assert sum(sizes) == n_units


def test_batch_sizes_without_a_count_are_endless_full_batches():
    sizes = batch_sizes(None, 7)
    assert [next(sizes) for _ in range(5)] == [7] * 5


@pytest.mark.parametrize("n_units, batches, expected", [(10, 0, 0), (10, 2, 8), (10, 3, 10), (10, 9, 10),
                                                        (None, 3, 12)])
def test_samples_in_batches(n_units, batches, expected):
    assert samples_in_batches(n_units, 4, batches) == expected


def test_plans_are_made_for_every_batch_in_order_also_for_the_skipped_ones():
    calls = []

    def plan(batch, size):
        calls.append((batch, size))
        return f"plan {batch}"

    jobs = batch_jobs(10, 4, first=2, plan=plan)
    assert calls == []  # lazily: nothing is planned before a batch is asked for
    assert list(jobs) == [BatchJob(2, 2, ("plan 2",))]
    assert calls == [(0, 4), (1, 4), (2, 2)]
    assert list(batch_jobs(5, 2)) == [BatchJob(0, 2, ()), BatchJob(1, 2, ()), BatchJob(2, 1, ())]


def test_batch_streams_are_fixed_per_batch_and_independent():
    first = batch_rng(7, 3).random(4)
    np.testing.assert_array_equal(batch_rng(7, 3).random(4), first)  # the same batch, the same numbers
    others = [batch_rng(7, 2).random(4), batch_rng(8, 3).random(4), aux_rng(7, 3).random(4)]
    assert not any(np.array_equal(first, other) for other in others)
    spawn = np.random.SeedSequence(7, spawn_key=(_batches.BATCH_STREAM, 3))
    np.testing.assert_array_equal(np.random.default_rng(spawn).random(4), first)  # the documented stream


def _draw(rng, size, planned=None):
    """A batch of samples, later batches finishing first under threads (results must still come in order)."""
    time.sleep(0.002 * (5 - min(size, 5)))
    samples = rng.normal(size=(size, 3))
    if planned is not None:
        samples += planned
    return samples, size


@pytest.mark.parametrize("n_jobs", [2, 3])
def test_batches_give_the_same_results_in_batch_order_for_any_n_jobs(n_jobs):
    def run(jobs_count):
        jobs = batch_jobs(11, 2, first=1, plan=lambda batch, size: float(batch))
        with joblib.parallel_config(backend="threading"):
            results = evaluate_batches(_draw, jobs, 5, jobs_count)
            try:
                return list(results)
            finally:
                close_batches(results)

    serial = run(None)
    assert [evaluations for _, evaluations in serial] == [2, 2, 2, 2, 1]  # batches 1..5, in order
    for (a, ea), (b, eb) in zip(serial, run(n_jobs), strict=True):
        np.testing.assert_array_equal(a, b)
        assert ea == eb
    np.testing.assert_array_equal(serial[0][0], batch_rng(5, 1).normal(size=(2, 3)) + 1.0)


def test_serial_batches_run_only_when_asked_for():
    ran = []

    def sample_batch(rng, size):
        ran.append(size)
        return np.zeros((size, 1)), size

    results = evaluate_batches(sample_batch, batch_jobs(None, 3), 0, 1)
    assert ran == []
    next(results), next(results)
    close_batches(results)
    assert ran == [3, 3]
    close_batches(iter(()))  # nothing to close: no error


# --- merging in order ---


def test_merged_in_order_equals_one_merge_of_everything_and_copies_each_state():
    rng = np.random.default_rng(0)
    batches = [rng.normal(size=(size, 4)) for size in (3, 1, 5, 2)]
    as_state = MeanState(4)
    as_state.add_batch(batches[2])
    results = [(batches[0], 6), (batches[1], 2), (as_state, 10), (batches[3], 4)]
    state = MeanState(4)
    start = LoopSnapshot.of(state, 100, 7)
    snapshots = list(merged_in_order(results, state, start))
    assert [s.count for s in snapshots] == [3, 4, 9, 11]
    assert [s.n_evaluations for s in snapshots] == [106, 108, 118, 122]
    assert [s.batches for s in snapshots] == [8, 9, 10, 11]
    whole = np.concatenate(batches)
    np.testing.assert_allclose(state.mean, whole.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(state.m2, ((whole - whole.mean(axis=0)) ** 2).sum(axis=0), rtol=1e-12)
    assert snapshots[0].mean is not state.mean and not np.array_equal(snapshots[0].mean, state.mean)
    np.testing.assert_array_equal(snapshots[-1].mean, state.mean)
    # bit for bit the merges one by one, in this order
    by_hand = MeanState(4)
    for samples, _ in results:
        merge_batch(by_hand, samples)
    np.testing.assert_array_equal(by_hand.mean, state.mean)
    np.testing.assert_array_equal(by_hand.m2, state.m2)


def test_merged_in_order_is_lazy():
    def results():
        yield np.ones((2, 1)), 2
        raise AssertionError("asked for a batch past the stop")

    state = MeanState(1)
    merged = merged_in_order(results(), state, LoopSnapshot.of(state, 0, 0))
    assert next(merged).count == 2
    merged.close()


# --- stopping rules ---


class Judge:
    """A stand-in for StateEstimates that records what the rules ask."""

    def __init__(self, count, stderr=1.0, rank=0.0):
        self.count, self._stderr, self._rank, self.asked = count, stderr, rank, []

    def max_stderr(self):
        self.asked.append("stderr")
        return self._stderr

    def rank_correlation(self):
        self.asked.append("rank")
        return self._rank


def test_rule_names_are_the_stopped_by_strings():
    assert (SampleCap.name, TargetStderr.name, TargetRankCorrelation.name) == (
        "budget", "target_stderr", "target_rank_correlation")


@pytest.mark.parametrize("count, reached", [(0, False), (9, False), (10, True), (11, True)])
def test_sample_cap(count, reached):
    assert SampleCap(10).reached(Judge(count)) is reached


@pytest.mark.parametrize("stderr, reached", [(0.2, False), (0.1, True), (0.05, True), (np.nan, False),
                                             (np.inf, False)])
def test_target_stderr_from_min_samples_on(stderr, reached):
    rule = TargetStderr(0.1)
    assert rule.reached(Judge(MIN_SAMPLES_FOR_PRECISION, stderr)) is reached
    early = Judge(MIN_SAMPLES_FOR_PRECISION - 1, 0.0)
    assert not rule.reached(early) and early.asked == []  # too few samples: not even judged


@pytest.mark.parametrize("rank, reached", [(0.89, False), (0.9, True), (1.0, True), (np.nan, False)])
def test_target_rank_correlation_from_min_samples_on(rank, reached):
    rule = TargetRankCorrelation(0.9)
    assert rule.reached(Judge(MIN_SAMPLES_FOR_PRECISION + 5, rank=rank)) is reached
    early = Judge(MIN_SAMPLES_FOR_PRECISION - 1, rank=1.0)
    assert not rule.reached(early) and early.asked == []


def test_stopping_rules_in_order_and_only_those_asked_for():
    assert stopping_rules(None, None, None) == ()
    assert stopping_rules(5, None, None) == (SampleCap(5),)
    assert stopping_rules(None, 0.1, 0.9) == (TargetStderr(0.1), TargetRankCorrelation(0.9))
    assert stopping_rules(5, 0.1, 0.9) == (SampleCap(5), TargetStderr(0.1), TargetRankCorrelation(0.9))


def test_first_reached_names_the_first_rule_met_and_judges_no_further():
    rules = stopping_rules(40, 0.1, 0.9)
    both = Judge(40, stderr=0.01, rank=1.0)
    assert first_reached(rules, both) == "budget" and both.asked == []
    both = Judge(39, stderr=0.01, rank=1.0)
    assert first_reached(rules, both) == "target_stderr" and both.asked == ["stderr"]
    rank_only = Judge(39, stderr=0.5, rank=0.95)
    assert first_reached(rules, rank_only) == "target_rank_correlation"
    assert first_reached(rules, Judge(39, stderr=0.5, rank=0.5)) is None
    assert first_reached((), Judge(10**6)) is None


def test_one_more_rule_is_one_small_class():
    class EvenCount:
        name = "even"

        def reached(self, judged) -> bool:
            return judged.count % 2 == 0

    rule: StoppingRule = EvenCount()
    assert first_reached((TargetStderr(0.0), rule), Judge(4, stderr=1.0)) == "even"


def test_state_estimates_are_computed_once_per_merged_state():
    state, seen, ranked = MeanState(3), [], []

    def estimates_of(s):
        seen.append(s.count)
        return s.mean * 10, s.stderr

    def rank_of(values, stderr, key):
        ranked.append((values.size, key))
        return 0.5

    judged = StateEstimates(state, estimates_of=estimates_of, watch=slice(0, 2), rank_correlation_of=rank_of)
    assert judged.max_stderr() == np.inf and np.isnan(judged.rank_correlation()) and seen == []  # < 2 samples
    state.add_batch(np.array([[0.0, 1.0, 100.0], [2.0, 1.0, -100.0]]))
    assert judged.count == 2
    assert judged.max_stderr() == 1.0  # coordinate 2 is not watched; coordinate 1 has no spread
    assert judged.rank_correlation() == 0.5 and judged.rank_correlation() == 0.5
    np.testing.assert_array_equal(judged.estimates()[0], state.mean * 10)
    assert seen == [2] and ranked == [(2, 2)]
    state.add_batch(np.array([[4.0, 1.0, 0.0]]))
    judged.max_stderr()
    assert seen == [2, 3]


def test_state_estimates_default_to_the_mean_and_its_stderr():
    state = MeanState(2)
    state.add_batch(np.array([[0.0, 1.0], [2.0, 1.0], [np.nan, 1.0]]))
    judged = StateEstimates(state, rank_correlation_of=lambda v, s, key: 1.0)
    assert judged.estimates()[0] is state.mean
    assert judged.max_stderr() == 0.0  # a NaN error is left aside...
    only_nan = StateEstimates(state, watch=slice(0, 1), rank_correlation_of=lambda v, s, key: 1.0)
    with pytest.warns(RuntimeWarning):  # ...and all-NaN errors give NaN (never a stop), as numpy warns
        assert np.isnan(only_nan.max_stderr())


# --- progress ---


def test_expected_samples_and_evaluations():
    judge = Judge(100, stderr=0.2)
    assert expected_samples(judge, n_units=500, target_stderr=None) == 500
    assert expected_samples(judge, n_units=None, target_stderr=0.1) == 400  # stderr ~ 1 / sqrt(count)
    assert expected_samples(judge, n_units=300, target_stderr=0.1) == 300
    assert expected_samples(Judge(1), n_units=None, target_stderr=0.1) is None
    assert expected_samples(Judge(2, stderr=0.01), n_units=None, target_stderr=0.1) == MIN_SAMPLES_FOR_PRECISION
    kw = dict(n_units=500, target_stderr=None)
    assert expected_evaluations(Judge(0), 0, evaluations_per_unit=3, **kw) == 1500  # the nominal cost
    assert expected_evaluations(judge, 250, evaluations_per_unit=3, **kw) == 1250  # the measured cost
    assert expected_evaluations(Judge(0), 0, evaluations_per_unit=None, **kw) is None
    assert expected_evaluations(Judge(0), 0, n_units=None, target_stderr=None, evaluations_per_unit=3) is None


class Bar:
    def __init__(self, disable=False):
        self.disable, self.n, self.total, self.postfix = disable, 5, None, None

    def update(self, n):
        self.n += n

    def set_postfix(self, postfix, refresh=True):
        self.postfix = postfix


@pytest.mark.parametrize("disable", [False, True])
def test_show_batch(disable):
    bar, judge = Bar(disable), Judge(40, stderr=0.123456, rank=0.987654)
    show_batch(bar, judge, 12, total=50, unit="perm", target_stderr=0.1, target_rank_correlation=0.99)
    assert (bar.n, bar.total) == (12, 50)
    expected = {"perms": 40, "stderr": "0.123", "target": "0.1"}
    if not disable:  # the rank correlation is computed only for a bar that shows
        expected.update(rank_corr="0.9877", rank_target="0.99")
    assert bar.postfix == expected
    assert judge.asked == ["stderr"] + ([] if disable else ["rank"])


# --- checkpoint state ---


def test_snapshot_round_trip_through_a_checkpoint_file(tmp_path):
    state = MeanState(3)
    state.add_batch(np.random.default_rng(1).normal(size=(7, 3)))
    snapshot = LoopSnapshot.of(state, 21, 4)
    state.add_batch(np.ones((2, 3)))
    assert snapshot.count == 7  # a copy: later merges do not change it
    with pytest.raises(AttributeError):
        snapshot.count = 8  # frozen
    path = tmp_path / "run.ckpt"
    ckpt = Checkpoint(path, {"method": "unit", "seed": 3}, 3, interval=3600.0)
    assert not ckpt.loaded
    assert snapshot.write(ckpt) is False  # within the interval: not written
    assert snapshot.write(ckpt, force=True) is True
    loaded = Checkpoint(path, {"method": "unit", "seed": 3}, 3, interval=0.0).snapshot
    for name in ("mean", "m2"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(snapshot, name))
    assert (loaded.count, loaded.n_evaluations, loaded.batches) == (7, 21, 4)


def _format_1_file(path, mean, m2, **meta):
    """A checkpoint written as the format documents it, without the package's writer."""
    meta = {"format": 1, "fingerprint": {"method": "unit", "seed": 3}, "context": {}, **meta}
    blob = json.dumps(meta, sort_keys=True).encode() + mean.tobytes() + m2.tobytes()
    text = json.dumps({**meta, "sha256": hashlib.sha256(blob).hexdigest()}, sort_keys=True)
    with open(path, "wb") as handle:
        np.savez(handle, meta=np.array(text), mean=mean, m2=m2)


def test_files_of_format_1_resume(tmp_path):
    assert FORMAT == 1
    path = tmp_path / "old.ckpt"
    mean, m2 = np.array([1.0, 2.0]), np.array([0.5, 0.25])
    _format_1_file(path, mean, m2, count=6, n_evaluations=18, batches=3)
    ckpt = Checkpoint(path, {"method": "unit", "seed": None}, 2, interval=0.0)
    assert ckpt.seed == 3  # adopted from the file
    state, start = resumed_state(ckpt, 2, n_units=10, batch_size=2)
    np.testing.assert_array_equal(state.mean, mean)
    np.testing.assert_array_equal(state.m2, m2)
    assert (state.count, start.count, start.n_evaluations, start.batches) == (6, 6, 18, 3)
    with pytest.raises(CheckpointError, match="holds 6 samples in 3 batches, but this call's budget plans 4"):
        resumed_state(ckpt, 2, n_units=4, batch_size=2)


def test_a_new_run_starts_empty():
    state, start = resumed_state(None, 2, n_units=10, batch_size=2)
    assert state.count == 0 and (start.count, start.n_evaluations, start.batches) == (0, 0, 0)
    np.testing.assert_array_equal(start.mean, np.zeros(2))


# --- run_sampling's contract ---


def test_run_sampling_keeps_its_keywords():
    assert list(inspect.signature(run_sampling).parameters) == [
        "sample_batch", "dim", "n_units", "batch_size", "entropy", "n_jobs", "progress", "desc", "unit",
        "checkpoint", "target_stderr", "watch", "target_rank_correlation", "estimates_of", "plan",
        "evaluations_per_unit"]


def _noisy(rng, size):
    return rng.normal(loc=np.arange(4.0), scale=[0.1, 1.0, 1.0, 1.0], size=(size, 4)), 2 * size


@pytest.mark.parametrize("kw, stopped_by, count", [
    ({"n_units": 25}, "budget", 25),
    ({"n_units": None, "target_stderr": 0.05, "watch": slice(0, 1)}, "target_stderr", MIN_SAMPLES_FOR_PRECISION),
    ({"n_units": 1000, "target_stderr": 1e-9, "target_rank_correlation": 0.99}, "target_rank_correlation", 30),
    ({"n_units": 60, "target_stderr": 1e-9}, "budget", 60),
])
def test_run_sampling_stops_by_each_rule(kw, stopped_by, count):
    outcome = run_sampling(_noisy, dim=4, batch_size=10, entropy=2, progress=False, **kw)
    assert outcome.stopped_by == stopped_by and outcome.state.count == count
    assert outcome.n_evaluations == 2 * count
    assert outcome.summary() == {"stopped_by": stopped_by, "resumed_samples": 0}


def test_run_sampling_resumes_a_checkpoint_to_the_same_state(tmp_path):
    common = dict(dim=4, batch_size=10, entropy=2, progress=False)
    whole = run_sampling(_noisy, n_units=50, **common)
    path = tmp_path / "run.ckpt"
    half = run_sampling(_noisy, n_units=20, checkpoint=Checkpoint(path, {"seed": 2}, 4, 0.0), **common)
    assert half.state.count == 20
    resumed = run_sampling(_noisy, n_units=50, checkpoint=Checkpoint(path, {"seed": 2}, 4, 0.0), **common)
    assert resumed.resumed_samples == 20 and resumed.n_evaluations == whole.n_evaluations
    np.testing.assert_array_equal(resumed.state.mean, whole.state.mean)
    np.testing.assert_array_equal(resumed.state.m2, whole.state.m2)
    assert _stopping.MIN_SAMPLES_FOR_PRECISION == 30
