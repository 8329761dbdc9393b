"""Typed results: what merge_results and the final steps read back lives on ``ValuationResult.record``.

``info`` only reports; the run's options, its anchors, the seeds of merged
runs and each method's final step (a :class:`~shapley_research.result.Finalizer`
with its merge rules) are typed fields of a
:class:`~shapley_research.result.SamplingRecord`, equal to what ``info`` reports.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

import shapley_research as sr
from shapley_research import result as result_module
from shapley_research.estimators._sampling import _without_replacement as wor
from shapley_research.result import Finalizer, SamplingRecord, ValuationResult, merge_results, register_finalizer

from games import AirportGame

GAME = sr.random_unanimity_sum(10, seed=1)  # 1,024 coalitions: every budget below samples
AIRPORT = AirportGame(np.random.default_rng(3).uniform(0, 5, 8))  # strata small enough to draw without replacement

RUNS = {  # method -> a run at a seed; budgets below 2^N, so no run is enumerated
    "permutation": lambda seed: sr.permutation_shapley(GAME, 600, seed),
    "permutation[truncated]": lambda seed: sr.permutation_shapley(
        sr.as_game(GAME.evaluate, GAME.n_players, vectorized=True), 600, seed, truncation=0.2, antithetic=True),
    "permutation[adjusted]": lambda seed: sr.permutation_shapley(GAME, 600, seed, position_adjustment=True),
    "group_testing[improved]": lambda seed: sr.group_testing_shapley(GAME, 500, seed),
    "group_testing[paper]": lambda seed: sr.group_testing_shapley(GAME, 500, seed, variant="paper"),
    "stratified_svarm": lambda seed: sr.stratified_svarm_shapley(AIRPORT, 200, seed),
    "stratified_svarm[neyman]": lambda seed: sr.stratified_svarm_shapley(AIRPORT, 200, seed, allocation="neyman",
                                                                         pilot=20),
    "msr_banzhaf": lambda seed: sr.msr_banzhaf(GAME, 300, seed),
    "unbiased_kernel_shapley": lambda seed: sr.unbiased_kernel_shapley(GAME, 300, seed),
    "owen_shapley": lambda seed: sr.owen_shapley(GAME, 4 * 11 * 20, seed),
    "kernel_shapley": lambda seed: sr.kernel_shapley(GAME, 300, seed),
    "leverage_shapley": lambda seed: sr.leverage_shapley(GAME, 300, seed),
    "beta_shapley": lambda seed: sr.beta_shapley(GAME, 900, seed),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_record_holds_what_info_reports(name):
    result = RUNS[name](3)
    record = result.record
    assert isinstance(record, SamplingRecord) and isinstance(record.finalizer, Finalizer)
    assert record.options == result.info["options"]
    assert record.empty_utility == result.info.get("empty_utility")
    assert record.full_utility == result.info.get("full_utility")
    assert record.seeds == (result.seed,) and "seeds" not in result.info
    for key in record.finalizer.listed:
        assert record.drawn.get(key) == result.info.get(key), key
    assert set(record.drawn) <= set(result.info)
    for key in record.finalizer.summed:
        if key in result.info:
            np.testing.assert_array_equal(record.terms[key], result.info[key])
        else:
            assert key not in record.terms
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.seeds = (0,)  # type: ignore[misc]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_final_step_gives_the_values_from_the_state(name):
    result = RUNS[name](4)
    values, stderr, updates = result.record.estimates(result.state)
    np.testing.assert_array_equal(values, result.values)
    np.testing.assert_array_equal(stderr, result.stderr)
    for key, value in updates.items():
        np.testing.assert_array_equal(np.asarray(result.info[key]), np.asarray(value))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_merged_record_lists_the_seeds_and_matches_info(name):
    a, b, c = (RUNS[name](seed) for seed in (1, 2, 3))
    merged = merge_results(merge_results(a, b), c)
    assert merged.record.seeds == (1, 2, 3) and merged.info["seeds"] == [1, 2, 3]
    assert merged.record.options == merged.info["options"] == a.info["options"]
    assert merged.record.finalizer == a.record.finalizer
    for key in merged.record.finalizer.summed:
        if key in merged.info:
            np.testing.assert_array_equal(merged.record.terms[key], merged.info[key])


def test_results_without_sample_statistics_carry_no_record():
    assert sr.exact_shapley(GAME).record is None
    assert sr.compressive_shapley(GAME, 600, 1).record is None
    assert sr.least_core(GAME, 600, 1).record is None and sr.least_core(GAME, 600, 1).state is None
    small = sr.random_unanimity_sum(4, seed=1)
    assert sr.permutation_shapley(small, 2**4, 1).record is None  # the budget covers every coalition: exact


def test_svarm_lists_how_runs_drew_and_sums_their_pass_remainders():
    plain, neyman = RUNS["stratified_svarm"](1), RUNS["stratified_svarm[neyman]"](2)
    merged = merge_results(plain, neyman)
    assert merged.info["allocation"] == merged.record.drawn["allocation"] == ["svarm", "neyman"]
    assert merged.info["pilot"] == merged.record.drawn["pilot"] == [None, 20]
    assert merged.info["without_replacement"] == plain.info["without_replacement"]  # alike: not listed
    np.testing.assert_allclose(merged.record.terms["pass_remainders"],
                               plain.record.terms["pass_remainders"] + neyman.record.terms["pass_remainders"])
    again = merge_results(merged, RUNS["stratified_svarm"](3))
    assert again.info["allocation"] == [["svarm", "neyman"], "svarm"] and "pass_remainders" in again.record.terms


def test_runs_drawn_differently_list_it_and_keep_no_summed_term(monkeypatch):
    without = RUNS["stratified_svarm"](1), RUNS["group_testing[paper]"](1)
    monkeypatch.setattr(wor, "MAX_STRATUM", 0)  # every stratum with replacement
    with_ = RUNS["stratified_svarm"](2), RUNS["group_testing[paper]"](2)
    for a, b in zip(without, with_):
        merged = merge_results(a, b)
        assert merged.info["without_replacement"] == merged.record.drawn["without_replacement"]
        assert merged.info["without_replacement"] == [a.info["without_replacement"], []]
        assert "pass_remainders" not in merged.info and "pass_remainders" not in merged.record.terms


@pytest.mark.parametrize("name", ["permutation", "msr_banzhaf", "beta_shapley"])
def test_methods_without_merge_rules_neither_list_nor_sum(name):
    finalizer = RUNS[name](1).record.finalizer
    assert finalizer.listed == finalizer.summed == finalizer.summed_alike == ()


def test_refusals_are_unchanged():
    perm = RUNS["permutation"]
    mergeable = ("beta_shapley, group_testing[improved], group_testing[paper], kernel_shapley, leverage_shapley, "
                 "msr_banzhaf, owen_shapley, permutation, stratified_svarm, unbiased_kernel_shapley")
    cases = [
        ((), "merge_results needs at least one result."),
        ((perm(1), sr.compressive_shapley(GAME, 600, 2)),  # the offending run is named, not the first
         f"results[1] is a 'compressive' run, which cannot be merged: only sampling runs that carry their sample "
         f"statistics can ({mergeable})."),
        ((perm(1), sr.group_testing_shapley(GAME, 500, 2)),
         "results[1] is a 'group_testing[improved]' run, results[0] a 'permutation' run."),
        ((perm(1), sr.permutation_shapley(sr.random_unanimity_sum(11, seed=1), 600, 2)),
         "results[1] has 11 players, results[0] 10."),
        ((perm(1), sr.permutation_shapley(GAME, 600, 2, antithetic=True)),
         "results[1] was run with options {'antithetic': True}, results[0] with {'antithetic': False}."),
        ((sr.msr_banzhaf(GAME, 300, 1), sr.msr_banzhaf(GAME, 300, 2, empty_utility=0.0)),
         "results[1] was run with options {'empty_utility': 0.0}, results[0] with {}."),
        ((sr.stratified_svarm_shapley(AIRPORT, 200, 1), sr.stratified_svarm_shapley(AIRPORT, 200, 2,
                                                                                      empty_utility=5.0)),
         "results[1] has empty_utility=5.0, results[0] 0.0: runs of different games cannot be merged."),
        ((merge_results(perm(1), perm(2)), perm(2)),
         "results share a seed ([1, 2, 2]): runs with one seed draw the same samples, so merging them would "
         "count those samples twice."),
    ]
    for results, message in cases:
        with pytest.raises(ValueError) as caught:
            merge_results(*results)
        assert str(caught.value) == message
    with pytest.raises(TypeError, match=r"results\[1\] must be a ValuationResult, got str"):
        merge_results(perm(1), "run")
    with pytest.raises(ValueError, match="cannot be merged"):  # statistics without their record
        merge_results(perm(1), dataclasses.replace(perm(2), record=None))


def test_merge_results_names_no_method_specific_key():
    tree = ast.parse(inspect.getsource(result_module))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    strings = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}
    for key in ("allocation", "pilot", "size_probabilities", "without_replacement", "pass_remainders",
                "variant", "recovery", "epsilon", "reference"):
        assert not any(key in text for text in strings), key


@dataclass(frozen=True)
class _ToyFinalizer(Finalizer):
    """A method whose per-run ``draw`` is listed and whose ``extra`` term is summed, where ``kind`` is alike."""

    shift: float
    listed = ("draw",)
    summed = ("extra",)
    summed_alike = ("kind",)

    def finalize(self, state, record):
        return state.mean + self.shift, state.stderr, {"runs": len(record.seeds)}


@functools.cache
def _state_type() -> type:
    """The class of a sampling run's ``ValuationResult.state`` (what ``merge_results`` makes fresh ones of)."""
    return type(RUNS["permutation"](0).state)


def _toy_run(seed: int, draw: str, kind: str, samples: np.ndarray) -> ValuationResult:
    state = _state_type()(samples.shape[1])
    state.add_batch(samples)
    record = SamplingRecord(_ToyFinalizer(1.0), {"k": 1}, seeds=(seed,), drawn={"draw": draw, "kind": kind},
                            terms={"extra": np.full(2, float(seed))})
    values, stderr, updates = record.estimates(state)
    return ValuationResult(values, 0, "toy", seed, stderr=stderr, n_samples=state.count,
                           info={"options": {"k": 1}, "draw": draw, "kind": kind, "extra": record.terms["extra"],
                                 **updates}, state=state, record=record.completed(updates))


def test_a_registered_finalizer_brings_its_own_merge_rules(monkeypatch):
    monkeypatch.setitem(result_module._FINALIZERS, "toy", _ToyFinalizer)
    assert register_finalizer("toy")(_ToyFinalizer) is _ToyFinalizer
    rng = np.random.default_rng(0)
    a = _toy_run(1, "x", "same", rng.normal(size=(5, 2)))
    b = _toy_run(2, "y", "same", rng.normal(size=(7, 2)))
    merged = merge_results(a, b)
    assert merged.n_samples == 12 and merged.info["runs"] == 2 and merged.record.seeds == (1, 2)
    np.testing.assert_allclose(merged.values, (5 * a.state.mean + 7 * b.state.mean) / 12 + 1.0)
    assert merged.info["draw"] == merged.record.drawn["draw"] == ["x", "y"]
    np.testing.assert_array_equal(merged.info["extra"], [3.0, 3.0])
    np.testing.assert_array_equal(merged.record.terms["extra"], [3.0, 3.0])
    unlike = merge_results(a, _toy_run(3, "x", "other", rng.normal(size=(4, 2))))
    assert unlike.record.drawn["draw"] == unlike.info["draw"] == "x"
    assert "extra" not in unlike.info and "extra" not in unlike.record.terms


def test_tables_of_every_method_have_the_same_columns_and_concatenate():
    """to_dataframe: one row per player; a method without standard errors gives NaN, so tables stack."""
    import pandas as pd

    game = AIRPORT
    sampled = sr.permutation_shapley(game, 2_001, seed=0)
    exact = sr.uniform_shapley(game)  # the uniform split: no error estimate
    assert exact.stderr is None
    np.testing.assert_array_equal(sr.leave_one_out(game).stderr, np.zeros(game.n_players))  # computed exactly
    tables = [sampled.to_dataframe(), exact.to_dataframe()]
    assert [list(table.columns) for table in tables] == [["player", "value", "stderr", "method"]] * 2
    both = pd.concat(tables, ignore_index=True)
    assert len(both) == 2 * game.n_players and set(both["method"]) == {sampled.method, exact.method}
    np.testing.assert_array_equal(tables[0]["value"], sampled.values)
    np.testing.assert_array_equal(tables[0]["stderr"], sampled.stderr)
    assert tables[1]["stderr"].isna().all()


def test_a_result_indexes_iterates_and_labels_its_players_like_its_values():
    result = sr.permutation_shapley(AIRPORT, 2_001, seed=0)
    assert isinstance(result[0], float) and result[0] == result.values[0] and result[-1] == result.values[-1]
    np.testing.assert_array_equal(result[[2, 0]], result.values[[2, 0]])
    np.testing.assert_array_equal(result[1:3], result.values[1:3])
    np.testing.assert_array_equal(result[result.values > 0], result.values[result.values > 0])
    assert list(result) == result.values.tolist() and len(list(result)) == len(result)
    with pytest.raises(IndexError):
        result[len(result)]
    labels = [f"point {i}" for i in range(len(result))]
    table = result.to_dataframe(labels=labels)
    assert table["player"].tolist() == labels
    np.testing.assert_array_equal(table["value"], result.values)
    with pytest.raises(ValueError, match="one label per player"):
        result.to_dataframe(labels=labels[:-1])
    frame = pd.DataFrame({"x": np.arange(len(result))}, index=pd.Index(labels, name="id"))
    assert result.to_dataframe(labels=frame)["player"].tolist() == labels  # a DataFrame stands for its index
    assert result.to_dataframe(labels=frame["x"])["player"].tolist() == labels


def test_players_without_a_value_rank_last_with_a_warning():
    result = sr.permutation_shapley(GAME, 600, 1)
    values = result.values.copy()
    values[[0, 3]] = np.nan
    unknown = dataclasses.replace(result, values=values)
    with pytest.warns(RuntimeWarning, match="2 of 10 players have no value"):
        ranking = unknown.ranking()
    kept = np.flatnonzero(~np.isnan(values))
    assert ranking.tolist() == kept[np.argsort(-values[kept], kind="stable")].tolist() + [0, 3]
