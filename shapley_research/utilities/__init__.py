r"""Utilities of machine learning: games whose coalitions are training sets.

The utility of a coalition of training points is the test score of a model
trained on it (the paper's Section 4.1). :class:`ModelUtility` fits any
scikit-learn estimator, one clone per coalition, or routes to a batched
learner of :mod:`.learners` that trains many coalitions at once
(:class:`LogisticRegressionUtility`, :class:`RidgeUtility`).
:class:`KNNUtility` is the K-nearest-neighbour utility, whose exact Shapley
values :func:`knn_shapley` computes in :math:`O(N \log N)` per test point
(Jia et al., VLDB 2019); :class:`ThresholdKNNUtility` votes with every point
within a radius instead, its exact values :func:`threshold_knn_shapley` in
:math:`O(N)` per test point (Wang et al., ICLR 2024). :class:`VolumeUtility` is the (robust) volume a
coalition's features span, a utility without model or validation set (Xu et
al., NeurIPS 2021). :func:`learn_utility` fits a regression model of any
game's utility on a sample of real evaluations and returns the learned game
(Data Utility Learning, Wang, Yang & Jia, 2022). Options that belong together are typed groups:
:class:`DegeneratePolicy` (what a coalition no model can be trained on is
worth) and :class:`TrainingRecipe` (how :class:`TorchModelUtility` trains).

Building blocks for other games trained on data are public too: the split
and target checks (:func:`check_dataset`, :class:`TargetInfo`) and the
degenerate-coalition convention of :class:`ModelUtility`
(:func:`degenerate_rows`, :func:`constant_utilities`).
"""

from ._knn import KNNUtility, knn_shapley
from ._threshold_knn import ThresholdKNNUtility, threshold_knn_shapley
from ._model import CLASSIFICATION_METRICS, REGRESSION_METRICS, ConstantPredictor, ModelUtility
from ._model_data import (TargetInfo, check_dataset, check_sparse_features, check_table, constant_utilities,
                          degenerate_rows, estimator_kind, fresh_copy, is_raw_table, is_sparse, unseeded_random_states)
from ._input_tags import model_takes_nan, refuse_unsupported_features
from ._options import DegeneratePolicy, PrefixPath, TrainingRecipe
from .learners import LogisticRegressionUtility, RidgeUtility
from ._torch_model import TorchModelUtility
from ._volume import VolumeUtility
from ._learned import LearnedUtility, UtilityFit, default_utility_regressor, learn_utility, sample_coalitions

__all__ = ["ModelUtility", "ConstantPredictor", "CLASSIFICATION_METRICS", "REGRESSION_METRICS",
           "LogisticRegressionUtility", "RidgeUtility", "KNNUtility", "knn_shapley",
           "ThresholdKNNUtility", "threshold_knn_shapley",
           "TorchModelUtility", "VolumeUtility",
           # Data Utility Learning: a regression model of a game's utility
           "learn_utility", "LearnedUtility", "UtilityFit", "default_utility_regressor", "sample_coalitions",
           # typed groups of their options
           "DegeneratePolicy", "TrainingRecipe", "PrefixPath",
           # building blocks of games trained on data
           "TargetInfo", "check_dataset", "constant_utilities", "degenerate_rows", "check_table", "is_raw_table",
           "estimator_kind", "fresh_copy", "unseeded_random_states", "is_sparse", "check_sparse_features",
           "refuse_unsupported_features", "model_takes_nan"]
