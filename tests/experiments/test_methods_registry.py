"""The method registry (issue 35, item 2): one spelling, one call, one label and one default per method."""

from pathlib import Path

import numpy as np
import pytest
import yaml

import shapley_research as sr
from shapley_research.experiments import (Method, MethodCall, get_method, method_defaults, method_names,
                                          register_method, unregister_method)
from shapley_research.experiments import data_cleaning as dc
from shapley_research.experiments import mlp_cleaning as mc

CONF = Path(__file__).resolve().parents[2] / "conf" / "experiment"

#: The labels readers see in the committed figures and tables: a contract, spelled out here.
LABELS = {
    "random": "random values", "knn_shapley": "KNN-Shapley (exact)", "permutation": "permutation Shapley",
    "permutation_antithetic": "antithetic + position adj.", "truncated_permutation": "truncated MC (TMC)",
    "group_testing": "group testing (Wang & Jia + centering)", "compressive": "compressive",
    "svarm": "stratified SVARM", "msr_banzhaf": "Banzhaf (MSR)", "beta_shapley": "Beta(16, 1)",
    "leave_one_out": "leave-one-out", "data_oob": "Data-OOB", "all_s_influence": "all-S influence",
    "largest_s_influence": "largest-S influence", "ame": "AME (Lasso)", "class_wise_shapley": "class-wise Shapley",
    "lava": "LAVA (optimal transport)", "weighted_banzhaf": "weighted Banzhaf (MSR)", "dvrl": "DVRL",
}
#: Registered for configs and notebooks to run by name, in no experiment's method list (no committed result moves).
AVAILABLE_ONLY = ("weighted_banzhaf", "dvrl")


def _conf(name):
    return yaml.safe_load((CONF / f"{name}.yaml").read_text(encoding="utf-8"))


def test_every_experiment_method_is_registered_under_its_one_spelling_and_label():
    assert {m: get_method(m).label for m in method_names()} == LABELS
    assert dc.LABELS == {m: LABELS[m] for m in dc.METHODS}
    assert mc.LABELS == {m: LABELS[m] for m in mc.METHODS}
    assert set(method_names()) == set(dc.METHODS) | set(AVAILABLE_ONLY)
    assert not set(AVAILABLE_ONLY) & (set(dc.METHODS) | set(mc.METHODS))
    assert method_names(needs="game", budgeted=True) == ("permutation", "permutation_antithetic",
                                                         "truncated_permutation", "group_testing", "compressive",
                                                         "svarm", "msr_banzhaf", "beta_shapley", "ame",
                                                         "class_wise_shapley", "weighted_banzhaf", "dvrl")
    assert dc.BUDGETED == tuple(m for m in dc.METHODS if get_method(m).budgeted)


def test_the_code_defaults_agree_with_the_experiments_yaml():
    """One source per default: where the YAML names an option, the registry (and mlp_cleaning) agrees with it."""
    cleaning = _conf("data_cleaning")
    shared = set(method_defaults()) & set(cleaning)
    assert {"oob_max_estimators", "truncation", "beta_alpha", "logistic_C", "knn_k"} <= shared
    assert {k: cleaning[k] for k in shared} == {k: method_defaults()[k] for k in shared}
    assert {k: dc.DEFAULT_OPTIONS[k] for k in shared} == {k: cleaning[k] for k in shared}
    mlp = _conf("mlp_cleaning")
    assert {k: mlp[k] for k in mc.DEFAULT_OPTIONS} == mc.DEFAULT_OPTIONS


def test_a_registered_method_runs_through_the_experiments_runner():
    """Adding a method is one entry: data_cleaning's run_method then runs it by name, with its defaults."""
    def first_player(call: MethodCall):
        values = np.zeros(call.game.n_players)
        values[0] = call.options["bonus"]
        return values, 7, "first player only"

    register_method(Method("test_first_player", "first player", first_player, budgeted=False,
                           defaults={"bonus": 2.0}))
    try:
        problem = dc.make_problem("breast_cancer", 12, 40, 0.15, seed=0)
        row = dc.run_method("test_first_player", problem, 100, seed=0, options={**dc.DEFAULT_OPTIONS, "bonus": 3.0})
        assert row["error"] is None and row["budget"] is None and row["n_evaluations"] == 7
        assert row["note"] == "first player only"
        np.testing.assert_array_equal(row["values"], [3.0] + [0.0] * 11)
        assert method_defaults(["test_first_player"])["bonus"] == 2.0
        with pytest.raises(ValueError, match="already registered"):
            register_method(Method("test_first_player", "again", first_player))
    finally:
        unregister_method("test_first_player")
    assert "test_first_player" not in method_names()


def test_the_registry_refuses_bad_entries_and_unknown_names():
    with pytest.raises(TypeError, match="entry must be a Method"):
        register_method("permutation")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="disagree"):
        register_method(Method("test_other_truncation", "x", lambda call: (None, 0, None),
                               defaults={"truncation": 0.5}))
    assert "test_other_truncation" not in method_names()
    with pytest.raises(ValueError, match="unknown method 'tmc'"):
        get_method("tmc")
    with pytest.raises(ValueError, match="unknown method"):
        dc.run_method("tmc", {}, 10, seed=0)


def test_the_registry_calls_the_public_estimators_with_the_same_streams():
    """A registered call is the public estimator's call: same seed, same bits."""
    weights = np.arange(1.0, 7.0)
    game = sr.as_game(lambda masks: masks.astype(float) @ weights, 6, vectorized=True)
    call = MethodCall({}, 120, 5, method_defaults(), make_game=lambda: game)
    result, _, _ = get_method("beta_shapley").call(call)
    direct = sr.beta_shapley(game, 120, 5, alpha=16.0, beta=1.0, progress=False)
    np.testing.assert_array_equal(result.values, direct.values)


def test_weighted_banzhaf_and_dvrl_are_the_public_estimators_calls():
    """Same seed, same bits; weighted_banzhaf's weight is the option banzhaf_weight, 0.1 by default."""
    weights = np.arange(1.0, 7.0)
    game = sr.as_game(lambda masks: masks.astype(float) @ weights, 6, vectorized=True)
    assert method_defaults(["weighted_banzhaf"])["banzhaf_weight"] == 0.1
    for weight in (0.1, 0.3):
        call = MethodCall({}, 200, 5, {**method_defaults(), "banzhaf_weight": weight}, make_game=lambda: game)
        result, _, _ = get_method("weighted_banzhaf").call(call)
        np.testing.assert_array_equal(result.values, sr.msr_banzhaf(game, 200, 5, weight=weight, progress=False).values)
        np.testing.assert_allclose(result.values, weights, rtol=1e-12)  # an additive game's value at any weight
    result, _, note = get_method("dvrl").call(MethodCall({}, 96, 5, method_defaults(), make_game=lambda: game))
    np.testing.assert_array_equal(result.values, sr.dvrl(game, 96, 5, progress=False).values)
    assert note == "features: players (one logit each)"


def test_data_cleaning_runs_the_available_only_methods_by_name_with_their_defaults():
    problem = dc.make_problem("breast_cancer", 12, 40, 0.15, seed=0)
    rows = {m: dc.run_method(m, problem, 64, seed=3) for m in AVAILABLE_ONLY}
    assert all(row["error"] is None and row["values"].shape == (12,) for row in rows.values())
    assert rows["weighted_banzhaf"]["n_evaluations"] == 64 and rows["dvrl"]["n_evaluations"] == 64
    game = dc.make_game(problem)
    np.testing.assert_array_equal(rows["weighted_banzhaf"]["values"],
                                  sr.msr_banzhaf(game, 64, 3, weight=0.1, progress=False).values)
    assert "marginal" in rows["dvrl"]["note"]  # the logistic game's marginal signal is among dvrl's inputs
