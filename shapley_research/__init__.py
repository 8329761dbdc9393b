"""shapley_research: data valuation with the Shapley value.

Every estimator of Jia et al., "Towards Efficient Data Valuation Based on the
Shapley Value" (AISTATS 2019), as functions that take a game first and return
a :class:`ValuationResult`. The layers, bottom up (imports point down only):

* :mod:`.games`: the game protocol and games with closed-form values;
* :mod:`.utilities`: games of machine learning (a model trained on each
  coalition, batched learners, KNN);
* :mod:`.estimators`: the estimators of the paper and after (Banzhaf and
  Beta semivalues, truncated Monte Carlo, leave-one-out, Data-OOB), over one
  shared sampling loop, and the sample sizes of the paper's theorems;
* :mod:`.influence`: the influence-function heuristics the paper compares with;
* :mod:`.evaluation`: judging values by what removing points in their order does
  (:func:`point_removal`, :func:`plot_point_removal`), and looking at them (:func:`plot_values`);
* :class:`ValuationResult` (:mod:`.result`): what every estimator returns;
* :mod:`.experiments`: the paper's experiments, run by ``shapley-research``.

The public names load on first use (:pep:`562`): ``import shapley_research``
and the command line start without scikit-learn, SciPy's statistics and
numba (about 3 s a process); the first name used loads the library as a
plain import did.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and IDEs read; at run time __getattr__ below imports them
    # Games
    from .games import FunctionGame, Game, GameLike, UnanimitySumGame, as_game, random_unanimity_sum
    # Utilities of machine learning
    from .utilities import (ConstantPredictor, DegeneratePolicy, KNNUtility, LogisticRegressionUtility, ModelUtility,
                            PrefixPath, RidgeUtility, TorchModelUtility, TrainingRecipe, VolumeUtility, knn_shapley)
    from .utilities import LearnedUtility, learn_utility
    from .utilities import ThresholdKNNUtility, threshold_knn_shapley
    # Estimators, and the sample sizes of the paper's theorems
    from .estimators import (CheckpointError, FeasibilityError, UniformDivisionGuarantee, compressive_sample_size,
                             compressive_shapley, exact_shapley, group_testing_q_tot, group_testing_sample_size,
                             group_testing_shapley, permutation_sample_size, permutation_shapley, stability_bound,
                             stratified_svarm_shapley, unbiased_kernel_shapley, uniform_division_guarantee,
                             uniform_shapley)
    from .estimators import kernel_shapley, owen_shapley
    from .estimators import leverage_shapley
    # Beyond the Shapley value: semivalues, leave-one-out, Data-OOB
    from .estimators import (beta_shapley, data_oob, exact_banzhaf, exact_beta_shapley, leave_one_out,
                             msr_banzhaf)
    # The peers' methods: AME, class-wise Shapley, LAVA
    from .estimators import ame, class_wise_shapley, lava
    from .estimators import dvrl
    # The least core (not a semivalue)
    from .estimators import exact_least_core, least_core
    # Influence heuristics
    from .influence import (LogisticObjective, all_s_influence, largest_s_influence, largest_s_influence_general,
                            neyman_allocation)
    from .influence import torch_influence
    # Judging values: point removal
    from .evaluation import plot_point_removal, point_removal
    from ._plots import plot_values
    # Results
    from .result import Finalizer, SamplingRecord, ValuationResult, merge_results

__version__ = "0.1.0"

__all__ = [
    # games
    "Game", "GameLike", "FunctionGame", "as_game", "UnanimitySumGame", "random_unanimity_sum",
    # utilities
    "ModelUtility", "ConstantPredictor", "LogisticRegressionUtility", "RidgeUtility", "KNNUtility", "knn_shapley",
    "TorchModelUtility", "VolumeUtility", "DegeneratePolicy", "TrainingRecipe", "PrefixPath",
    "learn_utility", "LearnedUtility",
    "ThresholdKNNUtility", "threshold_knn_shapley",
    # estimators
    "exact_shapley", "permutation_shapley", "group_testing_shapley", "compressive_shapley",
    "stratified_svarm_shapley", "unbiased_kernel_shapley", "uniform_shapley", "FeasibilityError", "CheckpointError",
    "permutation_sample_size", "group_testing_sample_size", "group_testing_q_tot", "compressive_sample_size",
    "stability_bound", "uniform_division_guarantee", "UniformDivisionGuarantee",
    "kernel_shapley", "owen_shapley",
    "leverage_shapley",
    # beyond the Shapley value
    "exact_banzhaf", "msr_banzhaf", "exact_beta_shapley", "beta_shapley", "leave_one_out", "data_oob",
    # the peers' methods
    "ame", "class_wise_shapley", "lava",
    "dvrl",
    # the least core
    "exact_least_core", "least_core",
    # influence
    "LogisticObjective", "largest_s_influence", "largest_s_influence_general", "all_s_influence",
    "neyman_allocation",
    "torch_influence",
    # judging values
    "point_removal", "plot_point_removal",
    "plot_values",
    # results
    "ValuationResult", "merge_results", "SamplingRecord", "Finalizer",
]

#: The subpackages that define the public names (each lists its own in ``__all__``).
_HOMES = ("games", "utilities", "estimators", "influence", "evaluation", "_plots", "result")
#: Subpackages reachable as attributes of the package before anything imported them.
_SUBPACKAGES = frozenset(_HOMES) | {"experiments", "attacks", "datasets"}


def __getattr__(name: str) -> Any:
    """A public name or subpackage, imported on first use (then an ordinary attribute)."""
    if name in __all__:
        for home in _HOMES:  # every public name at once, as ``import shapley_research`` used to
            module = importlib.import_module(f".{home}", __name__)
            globals().update({public: getattr(module, public) for public in module.__all__ if public in __all__})
        return globals()[name]
    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | _SUBPACKAGES)
