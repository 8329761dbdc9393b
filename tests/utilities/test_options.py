"""Typed option groups of the model utilities and the declared prefix capability (issue 35, item 3).

Through the public API only: a group gives the same utilities, bit for bit,
as the keywords it stands for; it is validated where it is built; a group
and its keywords together are refused; ``evaluate_prefixes`` is declared by
the class and tested by ``supports_prefixes``.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge

from shapley_research import (DegeneratePolicy, LogisticRegressionUtility, ModelUtility, PrefixPath, RidgeUtility,
                              TrainingRecipe, permutation_shapley)
from shapley_research.games import PrefixGame, evaluate_prefixes, supports_prefixes

RNG = np.random.default_rng(4)
X = RNG.normal(size=(30, 4))
Y = (X[:, 0] + 0.3 * RNG.normal(size=30) > 0).astype(int)
X_TEST = RNG.normal(size=(25, 4))
Y_TEST = (X_TEST[:, 0] > 0).astype(int)
Y_REG = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * RNG.normal(size=30)
Y_REG_TEST = X_TEST @ np.array([1.0, -2.0, 0.5, 0.0])
MASKS = RNG.random((40, 30)) < 0.3
MASKS[0] = False  # the empty coalition, and a few one-class or tiny ones among the rest
POLICY_KEYWORDS = {"degenerate": "default", "default_utility": 0.25, "min_samples": 3}
POLICY = DegeneratePolicy("default", default_utility=0.25, min_samples=3)


@pytest.mark.parametrize("build", [
    lambda **kw: ModelUtility(LogisticRegression(), X, Y, X_TEST, Y_TEST, fast=True, **kw),
    lambda **kw: ModelUtility(LogisticRegression(), X, Y, X_TEST, Y_TEST, fast=False, **kw),
    lambda **kw: LogisticRegressionUtility(X, Y, X_TEST, Y_TEST, **kw),
    lambda **kw: RidgeUtility(X, Y_REG, X_TEST, Y_REG_TEST, **kw),
], ids=["model_fast", "model_refit", "logistic", "ridge"])
def test_a_degenerate_policy_gives_the_utilities_of_its_keywords(build):
    by_keywords, by_policy = build(**POLICY_KEYWORDS), build(degenerate=POLICY)
    assert (by_policy.degenerate, by_policy.default_utility, by_policy.min_samples) == ("default", 0.25, 3)
    values = by_policy.evaluate(MASKS)
    np.testing.assert_array_equal(values, by_keywords.evaluate(MASKS))
    assert values[0] == 0.25  # the empty coalition is degenerate: the policy's utility


def test_the_default_policy_is_the_default_keywords():
    default = ModelUtility(LogisticRegression(), X, Y, X_TEST, Y_TEST, fast=True, degenerate=DegeneratePolicy())
    plain = ModelUtility(LogisticRegression(), X, Y, X_TEST, Y_TEST, fast=True)
    np.testing.assert_array_equal(default.evaluate(MASKS), plain.evaluate(MASKS))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"mode": "skip"}, ValueError, "mode must be one of"),
    ({"mode": "default"}, ValueError, "needs a number as default_utility"),
    ({"mode": "constant", "default_utility": 0.5}, ValueError, "only used with mode='default'"),
    ({"min_samples": 0}, ValueError, "min_samples must be >= 1"),
    ({"min_samples": 1.5}, TypeError, "min_samples must be an integer"),
    ({"mode": "default", "default_utility": "high"}, TypeError, "default_utility"),
])
def test_a_bad_degenerate_policy_is_refused_where_it_is_built(kwargs, error, match):
    with pytest.raises(error, match=match):
        DegeneratePolicy(**kwargs)


def test_a_policy_beside_its_own_keywords_is_refused():
    with pytest.raises(TypeError, match="degenerate: a DegeneratePolicy carries"):
        ModelUtility(LogisticRegression(), X, Y, X_TEST, Y_TEST, degenerate=POLICY, min_samples=2)
    with pytest.raises(TypeError, match="degenerate: a DegeneratePolicy carries"):
        RidgeUtility(X, Y_REG, X_TEST, Y_REG_TEST, degenerate=POLICY, default_utility=0.0)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"optimizer": "rmsprop"}, ValueError, "optimizer must be one of"),
    ({"learning_rate": 0.0}, ValueError, "learning_rate"),
    ({"epochs": 0}, ValueError, "epochs must be >= 1"),
    ({"batch_size": 2.5}, TypeError, "batch_size must be an integer"),
    ({"reinitialize": "yes"}, TypeError, "reinitialize"),
    ({"seed": -1}, ValueError, "seed must be >= 0"),
])
def test_a_bad_training_recipe_is_refused_where_it_is_built(kwargs, error, match):
    with pytest.raises(error, match=match):
        TrainingRecipe(**kwargs)


def _torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))


@pytest.mark.parametrize("keywords", [
    {"steps": 15, "learning_rate": 0.05},
    {"optimizer": "sgd", "learning_rate": 0.1, "epochs": 2, "batch_size": 8, "weight_decay": 0.01, "seed": 3,
     "reinitialize": True},
], ids=["adam_full_batch", "sgd_minibatch_reinitialized"])
def test_a_training_recipe_gives_the_utilities_of_its_keywords(keywords):
    from shapley_research import TorchModelUtility

    mlp = _torch()
    by_keywords = TorchModelUtility(mlp, X, Y, X_TEST, Y_TEST, **keywords)
    by_recipe = TorchModelUtility(mlp, X, Y, X_TEST, Y_TEST, recipe=TrainingRecipe(**keywords))
    assert by_recipe.recipe == by_keywords.recipe == TrainingRecipe(**keywords)
    assert by_recipe.n_steps == by_keywords.n_steps
    np.testing.assert_array_equal(by_recipe.evaluate(MASKS), by_keywords.evaluate(MASKS))


def test_a_recipe_beside_its_own_keywords_is_refused_naming_them():
    from shapley_research import TorchModelUtility

    mlp = _torch()
    with pytest.raises(TypeError, match="recipe: epochs, learning_rate given both"):
        TorchModelUtility(mlp, X, Y, X_TEST, Y_TEST, learning_rate=0.5, epochs=3,
                          recipe=TrainingRecipe(steps=10))
    with pytest.raises(TypeError, match="recipe must be a TrainingRecipe"):
        TorchModelUtility(mlp, X, Y, X_TEST, Y_TEST, recipe={"steps": 10})  # type: ignore[arg-type]
    assert TorchModelUtility(mlp, X, Y, X_TEST, Y_TEST, steps=4).recipe == TrainingRecipe(steps=4)


@pytest.mark.parametrize("keywords", [
    {"prefix_path": "online", "prefix_refit_ratio": 2.0, "prefix_steps": 5},
    {"prefix_path": "online", "prefix_refit_ratio": None, "prefix_steps": 1},
    {"prefix_path": "exact"},
], ids=["online", "online_no_refits", "exact"])
def test_a_prefix_path_gives_the_prefix_utilities_of_its_keywords(keywords):
    fields = {"mode": "prefix_path", "refit_ratio": "prefix_refit_ratio", "steps": "prefix_steps"}
    group = PrefixPath(**{f: keywords[k] for f, k in fields.items() if k in keywords})
    by_keywords = LogisticRegressionUtility(X, Y, X_TEST, Y_TEST, **keywords)
    by_group = LogisticRegressionUtility(X, Y, X_TEST, Y_TEST, prefix_path=group)
    assert (by_group.prefix_path, by_group.prefix_refit_ratio, by_group.prefix_steps) == (
        by_keywords.prefix_path, by_keywords.prefix_refit_ratio, by_keywords.prefix_steps)
    assert by_group.exact_prefixes is (group.mode == "exact")
    perms = np.array([np.random.default_rng(s).permutation(30) for s in range(3)])
    np.testing.assert_array_equal(by_group.evaluate_prefixes(perms), by_keywords.evaluate_prefixes(perms))


@pytest.mark.parametrize("build, error, match", [
    (lambda: PrefixPath("warm"), ValueError, "mode must be one of"),
    (lambda: PrefixPath(refit_ratio=1.0), ValueError, "refit_ratio"),
    (lambda: PrefixPath(steps=0), ValueError, "steps must be >= 1"),
    (lambda: LogisticRegressionUtility(X, Y, X_TEST, Y_TEST, prefix_path=PrefixPath(), prefix_steps=4), TypeError,
     "prefix_path: a PrefixPath carries"),
    (lambda: LogisticRegressionUtility(X, Y, X_TEST, Y_TEST, prefix_path="warm"), ValueError,
     "prefix_path must be one of"),
])
def test_a_bad_prefix_path_is_refused_naming_the_argument(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_the_prefix_path_is_declared_by_the_class_and_present_only_where_exact():
    """ModelUtility declares evaluate_prefixes once, on the class; an instance has it only with an exact path."""
    assert isinstance(vars(ModelUtility)["evaluate_prefixes"], property)
    routed = ModelUtility(LogisticRegression(), X, Y, X_TEST, Y_TEST, fast=True)
    warm = ModelUtility(LogisticRegression(), X, Y, X_TEST, Y_TEST, fast=True, warm_prefixes=True)
    ridge = ModelUtility(Ridge(), X, Y_REG, X_TEST, Y_REG_TEST, metric="r2", fast=True)
    for game, exact in ((routed, False), (warm, True), (ridge, True)):
        assert "evaluate_prefixes" not in vars(game)  # nothing attached per instance
        assert supports_prefixes(game) is exact is game.has_exact_prefixes
    with pytest.raises(AttributeError, match="no exact one-pass evaluate_prefixes"):
        routed.evaluate_prefixes  # noqa: B018
    assert supports_prefixes(LogisticRegressionUtility(X, Y, X_TEST, Y_TEST))  # a method of the learner's class
    assert not supports_prefixes(object())
    perms = np.array([RNG.permutation(30) for _ in range(2)])
    # the game's one pass and the prefix masks through evaluate agree where the path is exact
    np.testing.assert_allclose(evaluate_prefixes(warm, perms), evaluate_prefixes(routed, perms), atol=1e-6)
    assert isinstance(warm, PrefixGame)


def test_truncation_takes_a_game_without_the_path_and_refuses_one_with_it():
    routed = ModelUtility(LogisticRegression(), X, Y, X_TEST, Y_TEST, fast=True)
    warm = ModelUtility(LogisticRegression(), X, Y, X_TEST, Y_TEST, fast=True, warm_prefixes=True)
    assert permutation_shapley(routed, 62, 0, truncation=0.01, progress=False).values.shape == (30,)
    with pytest.raises(ValueError, match=r"cannot save evaluations.*warm_prefixes=False"):
        permutation_shapley(warm, 62, 0, truncation=0.01, progress=False)
    # a routed Ridge has the path without warm_prefixes: the message names what removes it
    ridge = ModelUtility(Ridge(), X, Y.astype(float), X_TEST, Y_TEST.astype(float), "r2", fast=True)
    with pytest.raises(ValueError, match=r"cannot save evaluations.*fast=False"):
        permutation_shapley(ridge, 62, 0, truncation=0.01, progress=False)
    per_clone = ModelUtility(Ridge(), X, Y.astype(float), X_TEST, Y_TEST.astype(float), "r2", fast=False)
    assert permutation_shapley(per_clone, 62, 0, truncation=0.01, progress=False).values.shape == (30,)
