"""Every experiment's parameters, declared once: their types and ranges, checked before a notebook runs.

The values of a parameter live in ``conf/`` (``conf/experiment/NAME.yaml`` at
the paper's scale, ``conf/experiment_profile/NAME/PROFILE.yaml`` for what a
profile changes); its name, type and range live here, in one frozen dataclass
per experiment (:data:`DECLARATIONS`), one annotated field per parameter, e.g.
``n_train: Annotated[int, Range(2)]``. Everything else is derived:

- :data:`SCHEMAS` (a :class:`Spec` per key) and :func:`parameter_problems`,
  which ``shapley-research run`` applies to the composed parameters so a bad
  value stops it in a second, naming the key;
- :func:`declaration_problems`: every key of the experiment's file and of its
  profiles' files is declared here, and every declared field has a value;
- the notebook's ``parameters`` cell, generated from the paper profile by
  ``shapley-research params NAME --write`` (``tests/experiments/test_parameters.py``
  checks that every cell is in sync).
"""

# The declarations' field annotations are calls (``int_in(2)``, ``pair(Digit)``) that typing.get_type_hints
# evaluates at run time into ``Annotated`` types; mypy cannot evaluate a call in an annotation.
# mypy: disable-error-code="valid-type"

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

__all__ = ["Spec", "SCHEMAS", "COMMON", "DECLARATIONS", "Range", "Length", "spec_of", "parameter_problems",
           "check_parameters", "check_notebook_parameters", "declaration_problems",
           "unknown_parameter_problems"]

# Where each fact about a parameter lives, for the messages that send an edit there.
TYPES_FILE = "shapley_research/experiments/_schema.py"


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
            # a list spec always has its item (spec_of)
            text = (f"a list of {self.length} values" if self.length else "a non-empty list") + \
                f", each {self.item.describe()}"  # type: ignore[union-attr]
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
                    and all(self.item.accepts(v) for v in value))  # type: ignore[union-attr]  # as in describe
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if self.kind == "int" and not isinstance(value, numbers.Integral):
            return False
        if not math.isfinite(value):
            return False
        # typeshed does not order numbers.Real against float; every Real accepted here does (both tests below)
        if self.low is not None and (value < self.low  # type: ignore[operator]
                                     or (self.open_low and value == self.low)):
            return False
        return self.high is None or not (value > self.high  # type: ignore[operator]
                                         or (self.open_high and value == self.high))


@dataclass(frozen=True)
class Range:
    """Bounds of a number, inclusive unless ``open_low`` / ``open_high``: ``Annotated[int, Range(1)]``."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False


@dataclass(frozen=True)
class Length:
    """The exact length of a list: ``Annotated[list[int], Length(2)]``."""

    value: int


def spec_of(annotation: Any) -> Spec:
    """The :class:`Spec` of a field's type annotation.

    ``int``, ``float``, ``str``, ``bool``, ``Literal[...]`` of strings and
    ``list[X]``, each optionally ``Annotated`` with :class:`Range` (numbers) or
    :class:`Length` (lists) and ``| None`` (nullable).

    Raises
    ------
    TypeError
        For any other annotation.
    """
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        spec = spec_of(args[0])
        for extra in args[1:]:
            if isinstance(extra, Range):
                spec = dataclasses.replace(spec, low=extra.low, high=extra.high, open_low=extra.open_low,
                                           open_high=extra.open_high)
            elif isinstance(extra, Length):
                spec = dataclasses.replace(spec, length=extra.value)
        return spec
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        others = [a for a in args if a is not type(None)]
        if len(others) == 1:
            return dataclasses.replace(spec_of(others[0]), nullable=True)
    if origin is Literal and all(isinstance(a, str) for a in args):
        return Spec("str", choices=args)
    if origin is list and len(args) == 1:
        return Spec("list", item=spec_of(args[0]))
    kinds = {int: "int", float: "float", str: "str", bool: "bool"}
    if annotation in kinds:
        return Spec(kinds[annotation])
    raise TypeError(f"cannot derive a parameter spec from the annotation {annotation!r}.")


def _specs(declaration: type) -> dict[str, Spec]:
    hints = typing.get_type_hints(declaration, include_extras=True)
    return {field.name: spec_of(hints[field.name]) for field in dataclasses.fields(declaration)}


# Shorthands for the types that recur.
Count = Annotated[int, Range(1)]
Positive = Annotated[float, Range(0, open_low=True)]
Fraction = Annotated[float, Range(0, 1, open_low=True, open_high=True)]
Unit = Annotated[float, Range(0, 1)]  # a fraction that may be 0 or 1
Correlation = Annotated[float, Range(-1, 1)]
NonNegative = Annotated[float, Range(0)]
Digit = Annotated[int, Range(0, 9)]


def int_in(low: int, high: int | None = None) -> Any:
    """An integer in ``[low, high]`` (``high=None``: no upper bound)."""
    return Annotated[int, Range(low, high)]


def float_in(low: float, high: float | None = None, *, open_low: bool = False, open_high: bool = False) -> Any:
    """A number in the interval from ``low`` to ``high``, closed unless ``open_low`` / ``open_high``."""
    return Annotated[float, Range(low, high, open_low, open_high)]


def pair(item: Any) -> Any:
    """A list of exactly two ``item``."""
    return Annotated[list[item], Length(2)]


@dataclass(frozen=True)
class Common:
    """What every experiment receives (``conf/config.yaml``, the profile's ``name``)."""

    output_dir: str
    profile: str
    seed: int_in(0)
    n_jobs: int_in(-1)


# --- the experiments' parameters: one field per key of conf/experiment/NAME.yaml, in its order ------------

@dataclass(frozen=True)
class IrisAccuracy:
    """``iris_accuracy``: values in ``conf/experiment/iris_accuracy.yaml``."""

    class_pair: pair(int_in(0, 2))
    n_train: int_in(2)
    n_test: int_in(2)
    C: Positive
    reference: Literal["exact", "permutation"]
    reference_permutations: Count
    budget_permutations: int_in(2)  # B = k N evaluations buy k - 1 whole permutations (one evaluates U(empty))
    n_repetitions: int_in(2)
    n_repetitions_all_s: Count
    n_utility_checks: int_in(0)
    spearman_threshold: Correlation
    error_threshold: Positive
    alpha: Fraction
    confidence_level: Fraction
    theorem_delta: Fraction
    n_repetitions_theorem: int_in(2)


@dataclass(frozen=True)
class RuntimeScaling:
    """``runtime_scaling``: values in ``conf/experiment/runtime_scaling.yaml``."""

    digits: pair(Digit)
    n_train: int_in(2)
    n_test: Count
    epochs: Count
    C: Positive
    epsilon: Positive
    delta: Fraction
    utility_range: Positive
    theory_n_min: int_in(2)
    theory_n_max: int_in(2)
    theory_points_per_decade: Count
    cost_learners: list[Literal["sgd", "lbfgs"]]
    fit_sizes: list[int_in(2)]
    influence_ns: list[int_in(2)]
    cost_min_total: Positive
    measured_ns: list[int_in(3)]
    pca_components: Count
    target_rel_error: Positive
    reference_rel_error: Positive
    exact_max_players: int_in(2, 20)
    n_seeds: Count
    max_doublings: int_in(0)
    all_s_max_doublings: int_in(0)
    all_s_enumerated_n: int_in(3, 16)
    scaling_games: list[Literal["knn", "unanimity"]]
    scaling_methods: list[Literal["permutation", "permutation_antithetic", "group_testing_paper",
                                  "group_testing_improved", "compressive", "svarm"]]
    scaling_ns: list[int_in(8)]
    scaling_permutation_ns: list[int_in(8)] | None
    scaling_targets: list[Fraction]
    scaling_seeds: Count
    permutation_cap: Count
    group_testing_cap: Count
    group_testing_max_work: Count
    compressive_cap: Count
    compressive_max_players: int_in(4)
    svarm_cap: Count
    svarm_max_players: int_in(4)
    knn_k: Count
    knn_test_points: int_in(1, 1000)
    knn_components: int_in(1, 784)
    knn_jitter: NonNegative
    scaling_n_jobs: Count


@dataclass(frozen=True)
class Sparsity:
    """``sparsity``: values in ``conf/experiment/sparsity.yaml``."""

    n_train: int_in(2)
    n_test: Count
    n_components: Count
    batch_size: Count
    reference_permutations: Count
    reference_parts: Count
    permutation_grid: list[Count]
    n_repetitions: Count
    measurement_fractions: list[float_in(0, None, open_low=True)]  # M = ceil(f N); f > 1: more rows than players
    recovery: Literal["homotopy", "cvxpy"]
    solver: str
    sparsity_level: Fraction
    paper_k_fraction: Fraction
    null_draws: Count
    null_quantile: Fraction
    target_fractions: list[Fraction]


@dataclass(frozen=True)
class RidgeStability:
    """``ridge_stability``: values in ``conf/experiment/ridge_stability.yaml``."""

    n_train: int_in(2)
    lambda_min: Positive
    lambda_max: Positive
    n_lambdas: int_in(3)
    n_permutations: int_in(2)
    n_bootstrap: int_in(2)
    n_bootstrap_u_shape: int_in(40)
    conventions: list[Literal["fixed_alpha", "per_coalition", "no_intercept"]]
    u_shape_factor: float_in(1, open_low=True)
    spearman_threshold: float_in(0, 1, open_low=True)
    fit_tolerance: Positive
    epsilon: Positive


@dataclass(frozen=True)
class PrivacyNoise:
    """``privacy_noise``: values in ``conf/experiment/privacy_noise.yaml``."""

    n_train: int_in(2)
    n_test: Count
    n_public: Count
    n_components: Count
    logistic_C: Positive
    epsilons: list[Positive]
    delta: Fraction
    clip_norm: Positive
    clamp: bool
    n_permutations: int_in(2)
    spearman_threshold: Correlation
    excess_drop_min_se: NonNegative
    replication_seeds: list[int_in(0)] | None  # other data draws (null: none)


@dataclass(frozen=True)
class Adversarial:
    """``adversarial``: values in ``conf/experiment/adversarial.yaml``."""

    n_model_train: int_in(2)
    n_components: Count
    C: Positive
    n_per_class: Count
    n_test: Count
    test_ratios: list[Unit]
    fgsm_epsilon: float_in(0, 1, open_low=True)
    cw_steps: Count
    cw_stepsize: Positive
    cw_binary_search_steps: Count
    cw_confidence: NonNegative
    n_permutations: int_in(2)
    cache_dir: str | None
    replication_seeds: list[int_in(0)] | None  # other data draws (null: none)
    cw_confidence_sweep: list[NonNegative] | None  # other CW confidences on the main draw (null: none)


@dataclass(frozen=True)
class DataCleaning:
    """``data_cleaning``: values in ``conf/experiment/data_cleaning.yaml``."""

    datasets: list[Literal["breast_cancer", "digits"]]
    digit_classes: pair(Digit)
    n_train: int_in(4)
    n_test: int_in(2)
    flip_fraction: Fraction
    n_seeds: Count
    budget: Count
    budget_grid: list[Count]
    probe_budgets: list[Count]
    probe_seeds: Count
    logistic_C: Positive
    max_iter: Count
    knn_k: Count
    truncation: float_in(0, 1, open_high=True)
    beta_alpha: Positive
    beta_beta: Positive
    oob_max_estimators: Count
    removal_fractions: list[float_in(0, 1, open_high=True)]
    addition_fractions: list[float_in(0, 1, open_low=True)]
    noisy_seeds: Count
    noisy_budget: Count
    noisy_epochs: Count
    noisy_batch_size: Count
    noisy_learning_rate: Positive
    noise_draws: int_in(2)


@dataclass(frozen=True)
class MlpCleaning:
    """``mlp_cleaning``: values in ``conf/experiment/mlp_cleaning.yaml``."""

    datasets: list[Literal["breast_cancer", "digits", "mnist"]]
    digit_classes: pair(Digit)
    n_train: int_in(4)
    n_test: int_in(2)
    flip_fraction: Fraction
    n_seeds: Count
    budget: Count
    models: list[Literal["mlp", "logistic"]]
    hidden: Count
    steps: Count
    learning_rate: Positive
    weight_decay: NonNegative
    device: str
    dtype: Literal["float32", "float64"]
    chunk_size: Count | None
    pca_components: Count
    logistic_C: Positive
    max_iter: Count
    truncation: float_in(0, 1, open_high=True)
    beta_alpha: Positive
    beta_beta: Positive
    oob_estimators: Count


#: Experiment name -> the dataclass declaring its parameters.
DECLARATIONS: dict[str, type] = {
    "iris_accuracy": IrisAccuracy, "runtime_scaling": RuntimeScaling, "sparsity": Sparsity,
    "ridge_stability": RidgeStability, "privacy_noise": PrivacyNoise, "adversarial": Adversarial,
    "data_cleaning": DataCleaning, "mlp_cleaning": MlpCleaning,
}
#: Parameters every experiment receives (``conf/config.yaml`` and the profile).
COMMON: dict[str, Spec] = _specs(Common)
#: Experiment name -> parameter -> :class:`Spec`, derived from :data:`DECLARATIONS`.
SCHEMAS: dict[str, dict[str, Spec]] = {name: _specs(declaration) for name, declaration in DECLARATIONS.items()}


#: Experiment name -> ``(low, high, strict)``: parameter ``low`` must be below ``high`` (or equal, unless strict).
ORDERED: dict[str, list[tuple[str, str, bool]]] = {
    "runtime_scaling": [("theory_n_min", "theory_n_max", False)],
    "ridge_stability": [("lambda_min", "lambda_max", True)],
}


def _order_problems(name: str, params: dict[str, Any]) -> list[str]:
    """One line per pair of :data:`ORDERED` whose values, each valid alone, are in the wrong order."""
    problems = []
    for low, high, strict in ORDERED.get(name, []):
        if low in params and high in params and (params[low] >= params[high] if strict
                                                 else params[low] > params[high]):
            problems.append(f"experiment.{high}={params[high]!r}: expected {'more than' if strict else 'at least'} "
                            f"experiment.{low}={params[low]!r}.")
    return problems


def _declaration_name(name: str) -> str:
    declaration = DECLARATIONS.get(name)
    return f"{TYPES_FILE}, class {declaration.__name__}" if declaration else TYPES_FILE


def parameter_problems(name: str, params: dict[str, Any], *, require_specs: bool = False) -> list[str]:
    """One line per parameter of experiment ``name`` that breaks its spec (empty when all are fine).

    Once each value passes its own spec, pairs that must be ordered
    (:data:`ORDERED`: ``lambda_min`` below ``lambda_max``) are checked too.

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
                problems.append(f"{where}: no type is declared for it in {_declaration_name(name)}.")
        elif not spec.accepts(value):
            problems.append(f"{where}={value!r}: expected {spec.describe()}.")
    return problems or _order_problems(name, params)


def check_parameters(name: str, params: dict[str, Any]) -> None:
    """Raise ``ValueError`` listing every parameter of ``name`` that breaks its spec, or a budget too small.

    The budgets are checked against the data once every value passes its own
    spec (:func:`~._budgets.budget_problems`: each budget against the smallest
    one the experiment's estimators accept for ``n_train`` points).
    """
    problems = parameter_problems(name, params)
    if not problems:
        from ._budgets import budget_problems

        problems = budget_problems(name, params)
    if problems:
        raise ValueError("\n".join(problems))


def unknown_parameter_problems(name: str, names: list[str]) -> list[str]:
    """One line per name among ``names`` that is no parameter of experiment ``name`` (with a close match)."""
    import difflib

    known = [*COMMON, *SCHEMAS.get(name, {})]
    problems = []
    for key in names:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"{key} is not a parameter of {name}{hint}; its parameters: {', '.join(known)}.")
    return problems


def check_notebook_parameters(name: str, namespace: dict[str, Any]) -> None:
    """Check a notebook's parameters where it runs, and record the run, however the notebook is run.

    Every experiment notebook calls this right after its parameters cell, so
    ``papermill notebooks/NAME.ipynb out.ipynb -p KEY VALUE`` with a bad value
    fails at once, naming the key. papermill's ``-p`` passes a list as a string
    (``-p grid "[5, 20]"`` gives ``'[5, 20]'``); the message says to use ``-y``.
    A name papermill injected that is no parameter of the experiment (a typo:
    ``-p n_sedes 3``; papermill itself only logs a warning and the run would use
    the defaults) is refused, as is a budget too small for ``n_train``
    (:func:`check_parameters`).

    Relative paths (``output_dir``, ``cache_dir``) are then taken from the
    project root wherever the notebook runs, and an ``output_dir`` inside the
    committed ``results/`` is refused unless ``shapley-research run NAME
    --update-results`` runs the notebook
    (:func:`~shapley_research.experiments._paths.resolve_notebook_paths`).

    Outside ``shapley-research run`` (which records its runs itself), a run
    that passes is recorded as that command would record it: ``profile`` in
    ``namespace`` is set to the profile whose values the parameters are, or
    ``"custom"``, and ``OUTPUT_DIR/run_info.json`` is written (see
    :func:`~shapley_research.experiments._project.record_notebook_run`).

    Raises
    ------
    ValueError
        Listing every parameter that breaks its spec, every injected name that
        is no parameter, a budget too small for the data, or an ``output_dir``
        in the committed results.
    """
    keys = [key for key in {**COMMON, **SCHEMAS[name]} if key in namespace]
    from ._notebook import injected_names

    problems = unknown_parameter_problems(name, injected_names() or [])
    problems += parameter_problems(name, {key: namespace[key] for key in keys})
    if problems:
        hint = ""
        if any(spec.kind == "list" and isinstance(namespace.get(key), str) for key, spec in SCHEMAS[name].items()):
            hint = ("\npapermill's -p passes a list as a string: give lists as YAML with -y, "
                    "e.g. -y \"permutation_grid: [5, 20]\".")
        raise ValueError(f"invalid parameters of notebooks/{name}.ipynb:\n" + "\n".join(problems) + hint)
    from ._budgets import budget_problems

    problems = budget_problems(name, {key: namespace[key] for key in keys})
    if problems:
        raise ValueError(f"invalid parameters of notebooks/{name}.ipynb:\n" + "\n".join(problems))
    from ._paths import resolve_notebook_paths
    from ._project import record_notebook_run

    resolve_notebook_paths(name, namespace)
    record_notebook_run(name, namespace)


def declaration_problems(name: str, project_dir: str | os.PathLike | None = None) -> list[str]:
    """Where experiment ``name``'s files in ``conf/`` and its declaration here disagree (empty when they agree).

    Every key of ``conf/experiment/NAME.yaml`` (but ``description``) is a
    field of the experiment's dataclass and every field has a value there;
    every key of every ``conf/experiment_profile/NAME/*.yaml`` (``scale.yaml``
    too, which no ``conf/profile`` composes) is declared, and the values each
    profile file gives, over the experiment's, pass :func:`parameter_problems`.
    """
    from omegaconf import OmegaConf

    from ._project import META_KEYS, Project

    project = Project.locate(project_dir)
    base_path = project.experiment_conf(name)
    base = OmegaConf.to_container(OmegaConf.load(base_path), resolve=True)
    declared = list(SCHEMAS[name])
    keys = [key for key in base if key not in META_KEYS]
    where = _declaration_name(name)
    problems = [f"conf/experiment/{name}.yaml: {key} has no declared type; declare it in {where}."
                for key in keys if key not in declared]
    problems += [f"{where}: {key} has no value in conf/experiment/{name}.yaml; give it one there."
                 for key in declared if key not in keys]
    for path in sorted((project.conf_dir / "experiment_profile" / name).glob("*.yaml")):
        profile = OmegaConf.to_container(OmegaConf.load(path), resolve=True) or {}
        shown = f"conf/experiment_profile/{name}/{path.name}"
        problems += [f"{shown}: {key} is not a parameter of {name} (declared in {where}, valued in "
                     f"conf/experiment/{name}.yaml); a profile only changes declared parameters."
                     for key in profile if key not in declared and key not in keys]  # those: above
        values = {key: value for key, value in {**base, **profile}.items() if key in declared}
        found = parameter_problems(name, values)
        if not found:
            from ._budgets import budget_problems

            found = budget_problems(name, values)
        problems += [f"{shown}: {problem}" for problem in found]
    return problems
