"""The task, methods and budgets of ``opendataval_comparison.py``, and the goals its report judges.

Not a script: ``opendataval_comparison.py`` and its siblings
``_opendataval_ours.py`` and ``_opendataval_report.py`` import it. The task is
OpenDataVal's (``DataFetcher.setup`` with 15% of the labels flipped); the
budgets are the peer's parameters, whose real fits ours then gets.
"""

from __future__ import annotations

DATASETS = ("breast_cancer", "digits")
METHODS = {"tmc": "TMC Shapley", "beta": "Beta(16, 1) Shapley", "banzhaf": "Banzhaf (MSR)", "oob": "Data-OOB",
           "loo": "leave-one-out", "knn": "KNN-Shapley (K = 10)", "ame": "AME", "cs": "class-wise Shapley",
           "lava": "LAVA"}
SAMPLED = ("tmc", "beta", "banzhaf", "oob", "ame", "cs")
FIXED_COST = ("loo", "knn", "lava")  # no budget: N + 1 fits, or none
TASK = {"train_count": 300, "valid_count": 100, "test_count": 0, "noise_rate": 0.15}
QUICK_TASK = {**TASK, "train_count": 100, "valid_count": 50}  # smoke run: fewer points, so fewer fits per unit
TRUNCATION = 0.01  # ours: stop a permutation at the first prefix within 1% of U(D)
ALPHA, BETA = 16.0, 1.0
K_NEIGHBOURS = 10
TIME_GOAL = 10.0  # OpenDataVal wall time / ours, sampled methods
NOISE_SE = 2.0  # detection within noise: mean paired gap >= -NOISE_SE standard errors
FIT_TOLERANCE = 0.01  # our real fits within 1% of the peer's
MAX_CORRECTIONS = 2
# the peer's budget parameters: permutations of TMC and Beta (their fits follow from its truncation), models
# of Banzhaf and Data-OOB; chosen so that the full run takes about 20 minutes on 2 cores
# (AME: models per inclusion probability, four of them; class-wise Shapley: permutations of each class)
FULL_BUDGETS = {"breast_cancer": {"permutations": 6, "models": 800, "oob_models": 300, "ame_models": 250,
                                  "cs_permutations": 3},
                "digits": {"permutations": 4, "models": 150, "oob_models": 100, "ame_models": 100,
                           "cs_permutations": 2}}
QUICK_BUDGETS = {"breast_cancer": {"permutations": 3, "models": 150, "oob_models": 50, "ame_models": 50,
                                   "cs_permutations": 1},
                 "digits": {"permutations": 2, "models": 80, "oob_models": 30, "ame_models": 25,
                            "cs_permutations": 1}}


def peer_budgets(sizes: dict[str, dict[str, int]]) -> dict[str, dict[str, dict[str, float]]]:
    """The config's ``budgets[dataset][method]`` for the peer, from the sizes of ``FULL_BUDGETS``."""
    return {name: {"tmc": {"permutations": s["permutations"]},
                   "beta": {"permutations": s["permutations"], "alpha": ALPHA, "beta": BETA},
                   "banzhaf": {"models": s["models"]}, "oob": {"models": s["oob_models"]}, "loo": {},
                   "knn": {"k": K_NEIGHBOURS}, "ame": {"models": s["ame_models"]},
                   "cs": {"permutations": s["cs_permutations"]}, "lava": {}} for name, s in sizes.items()}
