r"""Sums of unanimity games: a game family with closed-form values at any size.

A unanimity game on a coalition :math:`A` pays 1 to every coalition that
contains :math:`A`. Every game is a sum of them (Harsanyi), and a sum of a
few on small coalitions is a cheap, exactly valued test bed for estimators
at thousands of players (shapiq calls it SOUM):

.. math::

    U(S) = \sum_{j} c_j \,\mathbb 1[A_j \subseteq S], \qquad
    s_i = \sum_{j:\, i \in A_j} \frac{c_j}{|A_j|}, \qquad
    \beta_i = \sum_{j:\, i \in A_j} \frac{c_j}{2^{|A_j| - 1}}.

The Shapley value :math:`s` splits each term equally among its members, who
are symmetric, and gives nothing to players outside it (null players); the
Banzhaf value :math:`\beta` counts the coalitions ``S`` without ``i`` in which
``i`` completes ``A_j`` (``2^{N - |A_j|}`` of ``2^{N - 1}``). Both are linear
in the game.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._kernels import unanimity_prefix_utilities, unanimity_utilities
from .._validation import check_int, check_permutations
from ._base import Game, content_digest

__all__ = ["UnanimitySumGame", "random_unanimity_sum"]


class UnanimitySumGame(Game):
    """``U(S) = sum_j c_j 1[A_j subset of S]``, with exact Shapley and Banzhaf values.

    Parameters
    ----------
    n_players : int
        Number of players, at least 1.
    coalitions : sequence of sequences of int
        The non-empty sets ``A_j``, as player indices in ``range(n_players)``
        (repeats within one set are ignored).
    coefficients : array-like of float
        ``c_j``, one finite number per coalition.

    Notes
    -----
    Evaluation is compiled: ``O(N)`` per coalition plus the terms of its
    smaller side (members or non-members), and
    ``evaluate_prefixes`` values every prefix of a permutation in
    ``O(N + sum_j |A_j|)``, since a term joins at the position of its last
    member.
    """

    def fingerprint(self) -> str:
        """A digest of the terms and their coefficients."""
        return content_digest(self._members, self.sizes, self.coefficients)

    def __init__(self, n_players: int, coalitions: Sequence[ArrayLike], coefficients: ArrayLike) -> None:
        self.n_players = check_int(n_players, "n_players", minimum=1)
        terms = [np.unique(np.asarray(t)) for t in coalitions]
        for j, term in enumerate(terms):
            if term.size == 0 or term.dtype.kind not in "iu":
                raise ValueError(f"coalitions[{j}] must be a non-empty set of integer player indices, "
                                 f"got {term.tolist()}.")
            if term[0] < 0 or term[-1] >= self.n_players:
                raise ValueError(f"coalitions[{j}] holds players outside range({self.n_players}): {term.tolist()}.")
        values = np.asarray(coefficients, dtype=float)
        if values.shape != (len(terms),):
            raise ValueError(f"coefficients must be {len(terms)} numbers (one per coalition), "
                             f"got shape {values.shape}.")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"coefficients must be finite, got {values[~np.isfinite(values)][:5].tolist()} at "
                             f"positions {np.flatnonzero(~np.isfinite(values))[:5].tolist()}.")
        self.coefficients = values
        self.sizes = np.array([t.size for t in terms], dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self._members = (np.concatenate(terms) if terms else np.zeros(0)).astype(np.int64)
        owner = np.repeat(np.arange(len(terms), dtype=np.int64), self.sizes)
        by_player = np.argsort(self._members, kind="stable")  # terms of each player, in term order
        self._terms_of = owner[by_player]
        self._terms_start = np.concatenate([[0], np.cumsum(np.bincount(self._members, minlength=self.n_players))
                                            ]).astype(np.int64)

    def _evaluate(self, masks: NDArray[np.bool_]) -> NDArray[np.float64]:
        return unanimity_utilities(np.ascontiguousarray(masks), self.sizes, self.coefficients, self._terms_start,
                                   self._terms_of)

    def evaluate_prefixes(self, permutations: ArrayLike) -> NDArray[np.float64]:
        """Utilities of every prefix of each permutation, an ``(m, N)`` array (see :mod:`shapley_research.games`).

        ``permutations`` is an integer ``(m, N)`` array whose rows permute ``range(N)``.
        """
        checked = check_permutations(permutations, self.n_players)
        return unanimity_prefix_utilities(checked.astype(np.int64, copy=False), self._members, self._starts,
                                          self.coefficients)

    def _spread(self, shares: NDArray[np.float64]) -> NDArray[np.float64]:
        """``v_i = sum over terms j containing i of shares_j``."""
        # numpy's stubs type bincount as integer even with float weights
        return np.bincount(self._members, weights=np.repeat(shares, self.sizes),  # type: ignore[return-value]
                           minlength=self.n_players)

    def shapley_values(self) -> NDArray[np.float64]:
        """Exact Shapley values: ``s_i = sum_{j: i in A_j} c_j / |A_j|``, float64 ``(n_players,)``."""
        return self._spread(self.coefficients / self.sizes)

    def banzhaf_values(self) -> NDArray[np.float64]:
        """Exact Banzhaf values: ``beta_i = sum_{j: i in A_j} c_j / 2^(|A_j| - 1)``, float64 ``(n_players,)``."""
        return self._spread(self.coefficients / np.exp2(self.sizes - 1))

    def __repr__(self) -> str:
        return f"UnanimitySumGame(n_players={self.n_players}, n_terms={self.coefficients.size})"


def random_unanimity_sum(n_players: int, n_terms: int | None = None, *, max_size: int = 3,
                         seed: int = 0) -> UnanimitySumGame:
    """A sum of unanimity games on random small coalitions.

    Term ``j`` has a size drawn uniformly from ``1..max_size``, members drawn
    uniformly without repeats and a coefficient uniform in ``[0.5, 2]``.

    Parameters
    ----------
    n_players : int
        Number of players, at least ``max_size``.
    n_terms : int, optional
        Number of terms; default ``n_players`` (evaluation then costs
        ``O(N)`` per coalition and every value is of order 1).
    max_size : int, default 3
        Largest term size, at least 1.
    seed : int, default 0
        Seed of the terms.
    """
    n_players = check_int(n_players, "n_players", minimum=1)
    max_size = check_int(max_size, "max_size", minimum=1)
    if max_size > n_players:
        raise ValueError(f"max_size must be at most n_players = {n_players}, got {max_size}.")
    n_terms = n_players if n_terms is None else check_int(n_terms, "n_terms", minimum=1)
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0))
    sizes = rng.integers(1, max_size + 1, size=n_terms)
    coalitions = [rng.choice(n_players, size=s, replace=False) for s in sizes]  # O(size) each
    coefficients = rng.uniform(0.5, 2.0, size=n_terms)
    return UnanimitySumGame(n_players, coalitions, coefficients)
