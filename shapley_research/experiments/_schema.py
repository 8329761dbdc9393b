"""Typed parameters of every experiment, checked before a notebook's kernel starts.

Each experiment's keys (``conf/experiment/NAME.yaml``, minus ``description``)
have a :class:`Spec` here: a type and the values that make sense (counts are
positive, fractions lie in (0, 1), grids are non-empty). ``shapley-research
run`` checks the composed parameters against it and stops with one line
naming the key and what was expected, instead of failing minutes later
inside the notebook; ``tests/test_pipeline.py`` checks that every key of
``conf/`` has a spec and that both profiles pass.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

__all__ = ["Spec", "SCHEMAS", "COMMON", "parameter_problems", "check_parameters", "check_notebook_parameters"]


@dataclass(frozen=True)
class Spec:
    """What one parameter may be.

    ``kind`` is ``"int"``, ``"float"`` (an int is accepted), ``"str"``,
    ``"bool"`` or ``"list"`` (of ``item``). Bounds are inclusive unless
    ``open_low`` / ``open_high``; ``choices`` restricts a string;
    ``nullable`` admits ``None``.
    """

    kind: str
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    choices: tuple = ()
    item: Spec | None = None
    length: int | None = None
    nullable: bool = False

    def describe(self) -> str:
        """The expectation in words, e.g. ``an integer >= 1``."""
        if self.kind == "list":
            text = (f"a list of {self.length} values" if self.length else "a non-empty list") + \
                f", each {self.item.describe()}"
        elif self.kind == "str":
            text = f"one of {', '.join(map(repr, self.choices))}" if self.choices else "a string"
        else:
            text = {"int": "an integer", "float": "a number", "bool": "true or false"}[self.kind]
            if self.low is not None and self.high is not None:
                left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
                text += f" in {left}{self.low:g}, {self.high:g}{right}"
            elif self.low is not None:
                text += f" {'>' if self.open_low else '>='} {self.low:g}"
            elif self.high is not None:
                text += f" {'<' if self.open_high else '<='} {self.high:g}"
        return text + (" or null" if self.nullable else "")

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` satisfies the spec."""
        if value is None:
            return self.nullable
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "str":
            return isinstance(value, str) and (not self.choices or value in self.choices)
        if self.kind == "list":
            return (isinstance(value, (list, tuple)) and len(value) >= 1
                    and (self.length is None or len(value) == self.length)
                    and all(self.item.accepts(v) for v in value))
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if self.kind == "int" and not isinstance(value, numbers.Integral):
            return False
        if not math.isfinite(value):
            return False
        if self.low is not None and (value < self.low or (self.open_low and value == self.low)):
            return False
        return self.high is None or not (value > self.high or (self.open_high and value == self.high))


def integer(low=None, high=None, nullable=False) -> Spec:
    return Spec("int", low, high, nullable=nullable)


def number(low=None, high=None, open_low=False, open_high=False) -> Spec:
    return Spec("float", low, high, open_low, open_high)


def text(*choices: str, nullable: bool = False) -> Spec:
    return Spec("str", choices=tuple(choices), nullable=nullable)


def list_of(item: Spec, length: int | None = None, nullable: bool = False) -> Spec:
    return Spec("list", item=item, length=length, nullable=nullable)


FLAG = Spec("bool")
COUNT = integer(1)
POSITIVE = number(0, open_low=True)
FRACTION = number(0, 1, open_low=True, open_high=True)
UNIT = number(0, 1)  # a fraction that may be 0 or 1
SPEARMAN = number(-1, 1)

#: Parameters every experiment receives (``conf/config.yaml`` and the profile).
COMMON = {"output_dir": text(), "profile": text(), "seed": integer(0), "n_jobs": integer(-1)}

SCHEMAS: dict[str, dict[str, Spec]] = {
    "iris_accuracy": {
        "class_pair": list_of(integer(0, 2), length=2), "n_train": integer(2), "n_test": integer(2),
        "C": POSITIVE, "reference": text("exact", "permutation"), "reference_permutations": COUNT,
        "budget_permutations": COUNT, "n_repetitions": integer(2), "n_repetitions_all_s": COUNT,
        "first_order_all_s": FLAG, "n_utility_checks": integer(0), "spearman_threshold": SPEARMAN,
        "error_threshold": POSITIVE, "largest_error_threshold": POSITIVE, "ratio_threshold": POSITIVE,
        "alpha": FRACTION, "confidence_level": FRACTION,
    },
    "runtime_scaling": {
        "digits": list_of(integer(0, 9), length=2), "n_train": integer(2), "n_test": COUNT, "epochs": COUNT,
        "C": POSITIVE, "epsilon": POSITIVE, "delta": FRACTION, "utility_range": POSITIVE,
        "theory_n_min": integer(2), "theory_n_max": integer(2), "theory_points_per_decade": COUNT,
        "cost_learners": list_of(text("sgd", "lbfgs")), "fit_sizes": list_of(integer(2)),
        "influence_ns": list_of(integer(2)), "cost_min_total": POSITIVE, "measured_ns": list_of(integer(3)),
        "pca_components": COUNT, "target_rel_error": POSITIVE, "reference_rel_error": POSITIVE,
        "exact_max_players": integer(2, 20), "n_seeds": COUNT, "max_doublings": integer(0),
        "all_s_max_doublings": integer(0), "all_s_enumerated_n": integer(3, 16),
        "scaling_games": list_of(text("knn", "unanimity")),
        "scaling_methods": list_of(text("permutation", "permutation_antithetic", "group_testing_paper",
                                        "group_testing_improved", "compressive", "svarm")),
        "scaling_ns": list_of(integer(8)), "scaling_permutation_ns": list_of(integer(8), nullable=True),
        "scaling_targets": list_of(FRACTION), "scaling_seeds": COUNT, "permutation_cap": COUNT,
        "group_testing_cap": COUNT, "group_testing_max_work": COUNT, "compressive_cap": COUNT,
        "compressive_max_players": integer(4), "svarm_cap": COUNT, "svarm_max_players": integer(4),
        "knn_k": COUNT, "knn_test_points": integer(1, 1000), "knn_components": integer(1, 784),
        "knn_jitter": number(0), "scaling_n_jobs": COUNT,
    },
    "sparsity": {
        "n_train": integer(2), "n_test": COUNT, "n_components": COUNT, "batch_size": COUNT,
        "reference_permutations": COUNT, "reference_parts": COUNT, "permutation_grid": list_of(COUNT),
        "n_repetitions": COUNT, "measurement_fractions": list_of(number(0, 1, open_low=True)),
        "recovery": text("homotopy", "cvxpy"), "solver": text(), "sparsity_level": FRACTION,
        "paper_k_fraction": FRACTION, "null_draws": COUNT, "null_quantile": FRACTION,
        "target_fractions": list_of(FRACTION),
    },
    "ridge_stability": {
        "n_train": integer(2), "lambda_min": POSITIVE, "lambda_max": POSITIVE, "n_lambdas": integer(3),
        "n_permutations": integer(2), "n_bootstrap": integer(2),
        "conventions": list_of(text("fixed_alpha", "per_coalition", "no_intercept")),
        "u_shape_factor": number(1, open_low=True), "spearman_threshold": number(0, 1, open_low=True),
        "fit_tolerance": POSITIVE, "epsilon": POSITIVE,
    },
    "privacy_noise": {
        "n_train": integer(2), "n_test": COUNT, "n_public": COUNT, "n_components": COUNT,
        "logistic_C": POSITIVE, "epsilons": list_of(POSITIVE), "delta": FRACTION, "clip_norm": POSITIVE,
        "clamp": FLAG, "n_permutations": integer(2), "spearman_threshold": SPEARMAN,
        "excess_drop_min_se": number(0),
    },
    "adversarial": {
        "n_model_train": integer(2), "n_components": COUNT, "C": POSITIVE, "n_per_class": COUNT,
        "n_test": COUNT, "test_ratios": list_of(UNIT), "fgsm_epsilon": number(0, 1, open_low=True),
        "cw_steps": COUNT, "cw_stepsize": POSITIVE, "cw_binary_search_steps": COUNT,
        "cw_confidence": number(0), "n_permutations": integer(2), "cache_dir": text(nullable=True),
    },
    "data_cleaning": {
        "datasets": list_of(text("breast_cancer", "digits")), "digit_classes": list_of(integer(0, 9), length=2),
        "n_train": integer(4), "n_test": integer(2), "flip_fraction": FRACTION, "n_seeds": COUNT, "budget": COUNT,
        "budget_grid": list_of(COUNT), "logistic_C": POSITIVE, "max_iter": COUNT, "knn_k": COUNT,
        "truncation": number(0, 1, open_high=True), "beta_alpha": POSITIVE, "beta_beta": POSITIVE,
        "oob_max_estimators": COUNT, "removal_fractions": list_of(number(0, 1, open_high=True)),
        "addition_fractions": list_of(number(0, 1, open_low=True)),
    },
    "mlp_cleaning": {
        "datasets": list_of(text("breast_cancer", "digits", "mnist")),
        "digit_classes": list_of(integer(0, 9), length=2), "n_train": integer(4), "n_test": integer(2),
        "flip_fraction": FRACTION, "n_seeds": COUNT, "budget": COUNT,
        "models": list_of(text("mlp", "logistic")), "hidden": COUNT, "steps": COUNT, "learning_rate": POSITIVE,
        "weight_decay": number(0), "device": text(), "dtype": text("float32", "float64"),
        "chunk_size": integer(1, nullable=True), "pca_components": COUNT, "logistic_C": POSITIVE, "max_iter": COUNT,
        "truncation": number(0, 1, open_high=True), "beta_alpha": POSITIVE, "beta_beta": POSITIVE,
        "oob_estimators": COUNT,
    },
}


def parameter_problems(name: str, params: dict[str, Any], *, require_specs: bool = False) -> list[str]:
    """One line per parameter of experiment ``name`` that breaks its spec (empty when all are fine).

    With ``require_specs``, a key without a spec is a problem too (the test
    suite asks this of ``conf/``, so every parameter is typed); otherwise it is
    passed through, as for a project's own stand-in experiments.
    """
    schema = {**COMMON, **SCHEMAS.get(name, {})}
    problems = []
    for key, value in params.items():
        spec = schema.get(key)
        where = key if key in COMMON else f"experiment.{key}"
        if spec is None:
            if require_specs:
                problems.append(f"{where}: no type is declared for it in shapley_research/experiments/_schema.py.")
        elif not spec.accepts(value):
            problems.append(f"{where}={value!r}: expected {spec.describe()}.")
    return problems


def check_parameters(name: str, params: dict[str, Any]) -> None:
    """Raise ``ValueError`` listing every parameter of ``name`` that breaks its spec."""
    problems = parameter_problems(name, params)
    if problems:
        raise ValueError("\n".join(problems))


def check_notebook_parameters(name: str, namespace: dict[str, Any]) -> None:
    """Check a notebook's parameters where it runs, for runs that bypass the command line tool.

    Every experiment notebook calls this right after its parameters cell, so
    ``papermill notebooks/NAME.ipynb out.ipynb -p KEY VALUE`` with a bad value
    fails at once, naming the key. papermill's ``-p`` passes a list as a string
    (``-p grid "[5, 20]"`` gives ``'[5, 20]'``); the message says to use ``-y``.

    Raises
    ------
    ValueError
        Listing every parameter that breaks its spec.
    """
    keys = [key for key in {**COMMON, **SCHEMAS[name]} if key in namespace]
    problems = parameter_problems(name, {key: namespace[key] for key in keys})
    if problems:
        hint = ""
        if any(spec.kind == "list" and isinstance(namespace.get(key), str) for key, spec in SCHEMAS[name].items()):
            hint = ("\npapermill's -p passes a list as a string: give lists as YAML with -y, "
                    "e.g. -y \"permutation_grid: [5, 20]\".")
        raise ValueError(f"invalid parameters of notebooks/{name}.ipynb:\n" + "\n".join(problems) + hint)
