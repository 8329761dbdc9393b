"""shapley_research: data valuation with the Shapley value.

Every estimator of Jia et al., "Towards Efficient Data Valuation Based on the
Shapley Value" (AISTATS 2019), as functions that take a game first and return
a :class:`ValuationResult`.
"""

from .bounds import (UniformDivisionGuarantee, compressive_sample_size, group_testing_q_tot,
                     group_testing_sample_size, permutation_sample_size, stability_bound,
                     uniform_division_guarantee)
from .compressive import compressive_shapley
from .exact import exact_shapley
from .games import FunctionGame, Game, GameLike, as_game
from .group_testing import FeasibilityError, group_testing_shapley
from .knn import KNNUtility, knn_shapley
from .permutation import permutation_shapley
from ._checkpoint import CheckpointError
from .result import ValuationResult, merge_results
from .svarm import stratified_svarm_shapley
from .unanimity import UnanimitySumGame, random_unanimity_sum
from .uniform import uniform_shapley

__version__ = "0.1.0"

__all__ = [
    "Game", "GameLike", "FunctionGame", "as_game", "ValuationResult", "merge_results", "CheckpointError",
    "exact_shapley", "permutation_shapley", "group_testing_shapley", "compressive_shapley",
    "stratified_svarm_shapley", "uniform_shapley", "knn_shapley", "KNNUtility", "FeasibilityError",
    "permutation_sample_size", "group_testing_sample_size", "group_testing_q_tot",
    "compressive_sample_size", "stability_bound", "uniform_division_guarantee",
    "UniformDivisionGuarantee", "UnanimitySumGame", "random_unanimity_sum",
]

# --- ML utilities (issue 3): utility.py, learners/ ---
from .learners import LogisticRegressionUtility, RidgeUtility  # noqa: E402
from .utility import ConstantPredictor, ModelUtility  # noqa: E402

__all__ += ["ModelUtility", "ConstantPredictor", "LogisticRegressionUtility", "RidgeUtility"]

# --- influence heuristics (issue 3): influence/ ---
from .influence import (LogisticObjective, all_s_influence, largest_s_influence,  # noqa: E402
                        largest_s_influence_general, neyman_allocation)

__all__ += ["LogisticObjective", "largest_s_influence", "largest_s_influence_general",
            "all_s_influence", "neyman_allocation"]
