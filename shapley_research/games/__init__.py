"""Games: what an estimator values, and games whose values are known in closed form.

A game has ``n_players`` and ``evaluate(masks)``, the utilities of a batch of
coalitions (:class:`Game`, :func:`as_game`); a game may add
``evaluate_prefixes(permutations)`` for the utilities of every prefix of a
permutation in one pass, declared by its class (:class:`PrefixGame`; tested by
:func:`supports_prefixes`). :class:`UnanimitySumGame` (a sum of unanimity games,
whose Shapley values are the weights shared within each set) is cheap at any
number of players and serves the tests and the measured scaling panel. Games
built from trained models are in :mod:`shapley_research.utilities`. A game
that evaluates its rows one at a time may call :func:`report_evaluated` after
each, so that the running estimator's progress bar moves within a batch.

The building blocks of estimators and model utilities are public here too:
prefix masks and positions of permutations (:func:`prefix_masks`,
:func:`prefix_positions`, :func:`prefix_utilities`, :func:`evaluate_prefixes`),
the reporter an estimator installs around its evaluations
(:func:`reporting_to`), and the compiled KNN match counts
(:func:`knn_match_counts`, :func:`knn_prefix_match_counts`).
"""

from ._base import (PREFIX_MASK_CELLS, FunctionGame, Game, GameLike, PrefixGame, as_game, content_digest,
                    evaluate_prefixes, game_identity, prefix_masks, prefix_positions, prefix_utilities,
                    supports_prefixes)
from ._kernels import knn_match_counts, knn_prefix_match_counts
from ._progress import report_evaluated, reporting_to
from ._unanimity import UnanimitySumGame, random_unanimity_sum

__all__ = ["Game", "GameLike", "PrefixGame", "FunctionGame", "as_game", "prefix_masks", "evaluate_prefixes",
           "supports_prefixes",
           "UnanimitySumGame", "random_unanimity_sum", "report_evaluated",
           # building blocks of estimators and model utilities
           "prefix_positions", "prefix_utilities", "PREFIX_MASK_CELLS", "reporting_to", "knn_match_counts",
           "knn_prefix_match_counts", "content_digest", "game_identity"]
