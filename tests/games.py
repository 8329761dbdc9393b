"""Test games with Shapley values known in closed form.

Every game here is a vectorised :class:`shapley_research.games.Game` (it
implements ``_evaluate`` on a boolean ``(m, n)`` mask array) and exposes its
true Shapley values through a ``shapley_values`` property that is computed
*independently of the package*: from a closed form, or, for the few games
without one, by brute force over all ``N!`` permutations with
:mod:`itertools` (:func:`brute_force_shapley`).

Also here: a counting wrapper (to audit ``n_evaluations``) and
:func:`relative_l2`, the error measure of the convergence tests.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from shapley_research.games import Game, content_digest

__all__ = [
    "AdditiveGame", "SizeAdditiveGame", "UnanimityGame", "AirportGame", "GloveGame",
    "MajorityGame", "WeightedVotingGame", "VOTING_WEIGHTS", "VOTING_QUOTA", "VOTING_NULL_PLAYERS",
    "TableGame", "CountingGame", "CountingPrefixGame",
    "brute_force_shapley", "random_unanimity_game", "sparse_game", "relative_l2", "assert_same_run",
]


def assert_same_run(a, b) -> None:
    """Two runs gave the same result bit for bit: values, standard errors (where given), counts and seed."""
    np.testing.assert_array_equal(a.values, b.values)
    if a.stderr is not None:
        np.testing.assert_array_equal(a.stderr, b.stderr)
    assert (a.n_evaluations, a.n_samples, a.seed) == (b.n_evaluations, b.n_samples, b.seed)


def relative_l2(estimate, truth) -> float:
    """``||estimate - truth||_2 / ||truth||_2``."""
    estimate, truth = np.asarray(estimate, dtype=float), np.asarray(truth, dtype=float)
    return float(np.linalg.norm(estimate - truth) / np.linalg.norm(truth))


def brute_force_shapley(utility, n_players: int) -> np.ndarray:
    r"""Shapley values by averaging marginal contributions over all ``N!`` orders.

    Parameters
    ----------
    utility : callable
        ``utility(frozenset_of_players) -> float``.
    n_players : int
        ``N``; keep it at most 8 (``8! = 40320`` orders).

    Notes
    -----
    The textbook definition :math:`s_i = \frac1{N!}\sum_\pi [U(P_i^\pi \cup
    \{i\}) - U(P_i^\pi)]`, written with plain Python sets, so it shares no code
    with the package's estimators.
    """
    if n_players > 8:
        raise ValueError("brute force over permutations is for N <= 8.")
    cache: dict = {}

    def u(coalition):
        if coalition not in cache:
            cache[coalition] = float(utility(coalition))
        return cache[coalition]

    totals = [0.0] * n_players
    for order in itertools.permutations(range(n_players)):
        before = frozenset()
        for player in order:
            after = before | {player}
            totals[player] += u(after) - u(before)
            before = after
    return np.array(totals) / math.factorial(n_players)


class AdditiveGame(Game):
    r"""Additive game :math:`U(S) = c + \sum_{i \in S} w_i`.

    Shapley values: :math:`s_i = w_i` (every marginal contribution of ``i`` is
    ``w_i``). The offset ``c = U(empty)`` checks that estimators subtract
    ``U(empty)`` rather than assuming it is 0. Every permutation gives the
    exact values, so permutation sampling is exact at any budget.
    """

    def __init__(self, weights, offset: float = 0.0):
        self.weights = np.asarray(weights, dtype=float)
        self.offset = float(offset)
        self.n_players = self.weights.shape[0]

    def _evaluate(self, masks):
        return self.offset + masks @ self.weights

    @property
    def shapley_values(self) -> np.ndarray:
        return self.weights.copy()


class SizeAdditiveGame(Game):
    r"""Additive game plus a symmetric size term, with a prefix fast path.

    :math:`U(S) = \sum_{i \in S} w_i + g(|S|)` with ``g(0) = 0``.

    Shapley values: the additive part gives ``w_i``; the size term is a
    symmetric game (every permutation of players leaves it unchanged), so by
    symmetry and efficiency it gives each player ``g(N) / N``:
    :math:`s_i = w_i + g(N)/N`. Marginal contributions
    ``w_i + g(k+1) - g(k)`` depend on the position ``k`` of ``i``, so sampling
    estimators have real variance here.

    ``evaluate_prefixes`` computes all prefix utilities of a permutation with a
    cumulative sum, like an incrementally trainable model.
    """

    def __init__(self, weights, size_term):
        self.weights = np.asarray(weights, dtype=float)
        self.n_players = self.weights.shape[0]
        self.g = np.asarray(size_term, dtype=float)  # g[k] for k = 0..N
        if self.g.shape != (self.n_players + 1,) or self.g[0] != 0:
            raise ValueError("size_term must hold g(0)=0, g(1), ..., g(N).")

    def _evaluate(self, masks):
        return masks @ self.weights + self.g[masks.sum(axis=1)]

    def evaluate_prefixes(self, permutations):
        permutations = np.asarray(permutations)
        return np.cumsum(self.weights[permutations], axis=1) + self.g[1:][None, :]

    @property
    def shapley_values(self) -> np.ndarray:
        return self.weights + self.g[-1] / self.n_players


def sparse_game(n_players: int = 40, n_heavy: int = 4, base: float = 4.0, deviation: float = 3.0,
                noise_scale: float = 4.0) -> SizeAdditiveGame:
    r"""A monotone game whose values are exactly ``K``-sparse around their mean.

    Weights are ``base`` for every player but ``n_heavy`` (even) heavy ones,
    which get ``base + deviation`` and ``base - deviation`` in equal numbers,
    so ``w - mean(w)`` has exactly ``K = n_heavy`` non-zero entries. The size
    term ``g(k) = noise_scale * sqrt(k)`` is increasing, so the game is
    monotone (Theorem 4's assumption) when all weights are positive, and it
    makes the marginal contributions random. Values: ``s = w + g(N)/N``, so
    :math:`s - \bar s = w - \bar w` is ``K``-sparse and Theorem 4's term
    :math:`\sigma_K(s - \bar s)` is 0.
    """
    if n_heavy % 2:
        raise ValueError("n_heavy must be even so the deviations sum to 0.")
    weights = np.full(n_players, float(base))
    heavy = np.linspace(0, n_players - 1, n_heavy).astype(int)  # spread out, deterministic
    weights[heavy[0::2]] += deviation
    weights[heavy[1::2]] -= deviation
    size_term = noise_scale * np.sqrt(np.arange(n_players + 1))
    game = SizeAdditiveGame(weights, size_term)
    game.heavy = heavy
    return game


class UnanimityGame(Game):
    r"""Sum of unanimity games :math:`U(S) = \sum_T c_T \mathbb 1[T \subseteq S]`.

    Shapley values (Shapley 1953; each unanimity game splits ``c_T`` equally
    among the members of ``T``, who are symmetric, and gives 0 to the null
    players outside it; the value is linear in the game):
    :math:`s_i = \sum_{T \ni i} c_T / |T|`.
    """

    def __init__(self, n_players: int, coalitions, coefficients):
        self.n_players = int(n_players)
        self.coalitions = [np.asarray(sorted(set(t)), dtype=int) for t in coalitions]
        self.coefficients = np.asarray(coefficients, dtype=float)
        if len(self.coalitions) != self.coefficients.shape[0]:
            raise ValueError("one coefficient per coalition.")

    def _evaluate(self, masks):
        total = np.zeros(masks.shape[0])
        for members, c in zip(self.coalitions, self.coefficients):
            total += c * masks[:, members].all(axis=1)
        return total

    @property
    def shapley_values(self) -> np.ndarray:
        values = np.zeros(self.n_players)
        for members, c in zip(self.coalitions, self.coefficients):
            values[members] += c / members.size
        return values


def random_unanimity_game(n_players: int, n_terms: int, max_size: int, seed: int,
                          null_players=()) -> UnanimityGame:
    """Unanimity terms on random coalitions of sizes 1..max_size (never touching ``null_players``)."""
    rng = np.random.default_rng(seed)
    pool = np.setdiff1d(np.arange(n_players), np.asarray(null_players, dtype=int))
    coalitions = [rng.choice(pool, size=rng.integers(1, max_size + 1), replace=False)
                  for _ in range(n_terms)]
    coefficients = rng.uniform(0.5, 2.0, size=n_terms)
    return UnanimityGame(n_players, coalitions, coefficients)


class AirportGame(Game):
    r"""Airport (runway cost) game :math:`U(S) = \max_{i \in S} c_i`, ``U(empty) = 0``.

    Shapley values (Littlechild and Owen, 1973): with costs sorted increasingly,
    :math:`c_{(1)} \le \dots \le c_{(N)}` and :math:`c_{(0)} = 0`, the player
    with the ``k``-th smallest cost pays
    :math:`s_{(k)} = \sum_{j=1}^{k} \frac{c_{(j)} - c_{(j-1)}}{N - j + 1}`:
    each runway segment ``j`` is shared equally by the ``N - j + 1`` players
    who need it. ``evaluate_prefixes`` is a cumulative maximum.
    """

    def __init__(self, costs):
        self.costs = np.asarray(costs, dtype=float)
        if (self.costs < 0).any():
            raise ValueError("costs must be non-negative.")
        self.n_players = self.costs.shape[0]

    def _evaluate(self, masks):
        return np.where(masks, self.costs[None, :], 0.0).max(axis=1)

    def evaluate_prefixes(self, permutations):
        return np.maximum.accumulate(self.costs[np.asarray(permutations)], axis=1)

    @property
    def shapley_values(self) -> np.ndarray:
        order = np.argsort(self.costs, kind="stable")
        sorted_costs = self.costs[order]
        n = self.n_players
        segments = np.diff(sorted_costs, prepend=0.0) / (n - np.arange(n))
        values = np.empty(n)
        values[order] = np.cumsum(segments)
        return values


class GloveGame(Game):
    r"""Glove game: players ``0..L-1`` own a left glove, ``L..L+R-1`` a right one.

    :math:`U(S) = \min(|S \cap \mathcal L|, |S \cap \mathcal R|)` (pairs formed).

    Shapley values. A left player's marginal contribution is 1 exactly when
    its predecessors in a random order hold fewer left than right gloves. The
    number ``s`` of predecessors is uniform on ``0..N-1`` and, given ``s``, the
    number ``l`` of left gloves among them is hypergeometric (``L-1`` left and
    ``R`` right candidates), so

    .. math::

        s_{left} = \frac1N \sum_{s=0}^{N-1} \sum_{l < s - l}
            \frac{\binom{L-1}{l}\binom{R}{s-l}}{\binom{N-1}{s}},

    and symmetrically for a right player. For ``L = R`` both are ``1/2`` (all
    players are symmetric and ``U(D) = L``); for ``L < R`` each left player
    gets more than each right player. ``(L, R) = (1, 2)`` gives ``2/3, 1/6, 1/6``.
    """

    def __init__(self, n_left: int, n_right: int):
        self.n_left, self.n_right = int(n_left), int(n_right)
        self.n_players = self.n_left + self.n_right

    def _evaluate(self, masks):
        left = masks[:, :self.n_left].sum(axis=1)
        right = masks[:, self.n_left:].sum(axis=1)
        return np.minimum(left, right).astype(float)

    @staticmethod
    def _value_of_one(own: int, other: int) -> float:
        n = own + other
        total = 0.0
        for s in range(n):
            for mine in range(0, min(own - 1, s) + 1):
                theirs = s - mine
                if theirs > other or mine >= theirs:
                    continue
                total += math.comb(own - 1, mine) * math.comb(other, theirs) / math.comb(n - 1, s)
        return total / n

    @property
    def shapley_values(self) -> np.ndarray:
        left = self._value_of_one(self.n_left, self.n_right)
        right = self._value_of_one(self.n_right, self.n_left)
        return np.concatenate([np.full(self.n_left, left), np.full(self.n_right, right)])


class MajorityGame(Game):
    r"""Symmetric majority game :math:`U(S) = \mathbb 1[|S| \ge q]`, ``1 <= q <= N``.

    All players are symmetric and ``U(D) - U(empty) = 1``, so by symmetry and
    efficiency :math:`s_i = 1/N`.
    """

    def __init__(self, n_players: int, quota: int):
        self.n_players, self.quota = int(n_players), int(quota)
        if not 1 <= self.quota <= self.n_players:
            raise ValueError("quota must be in 1..N.")

    def _evaluate(self, masks):
        return (masks.sum(axis=1) >= self.quota).astype(float)

    @property
    def shapley_values(self) -> np.ndarray:
        return np.full(self.n_players, 1.0 / self.n_players)


class WeightedVotingGame(Game):
    r"""Weighted voting game :math:`U(S) = \mathbb 1[\sum_{i \in S} w_i \ge q]`.

    No closed form in general: ``shapley_values`` is the Shapley-Shubik index
    by brute force over all ``N!`` orders (:func:`brute_force_shapley`, for
    ``N <= 8``). A player of weight 0, or one that is never pivotal, is a null
    player with value 0.
    """

    def __init__(self, weights, quota: float):
        self.weights = np.asarray(weights, dtype=float)
        self.quota = float(quota)
        self.n_players = self.weights.shape[0]

    def _evaluate(self, masks):
        return (masks @ self.weights >= self.quota).astype(float)

    def fingerprint(self) -> str:  # what a user's game defines so that merge_results tells it apart
        return content_digest(self.weights, self.quota)

    @property
    def shapley_values(self) -> np.ndarray:
        weights = [float(w) for w in self.weights]
        return brute_force_shapley(lambda s: float(sum(weights[i] for i in s) >= self.quota),
                                   self.n_players)


#: A 7-player weighted voting game with two null players: with weights
#: 10,10,10,4,4,1,0 and quota 18 the weight-1 player is never pivotal (no sum of
#: the other weights equals 17) and the weight-0 player never is.
VOTING_WEIGHTS = (10, 10, 10, 4, 4, 1, 0)
VOTING_QUOTA = 18
VOTING_NULL_PLAYERS = (5, 6)


class TableGame(Game):
    r"""Arbitrary game given by a table of ``2^N`` utilities (index = bit code of ``S``).

    ``shapley_values`` by brute force over permutations (``N <= 8``).
    """

    def __init__(self, table):
        self.table = np.asarray(table, dtype=float)
        self.n_players = int(round(math.log2(self.table.shape[0])))
        if 1 << self.n_players != self.table.shape[0]:
            raise ValueError("table must have 2^N entries.")

    def _evaluate(self, masks):
        codes = masks.astype(np.int64) @ (1 << np.arange(self.n_players, dtype=np.int64))
        return self.table[codes]

    @property
    def shapley_values(self) -> np.ndarray:
        return brute_force_shapley(lambda s: self.table[sum(1 << i for i in s)], self.n_players)


class CountingGame(Game):
    """Wrap a game and count what is evaluated (mask path only; no ``evaluate_prefixes``).

    Attributes
    ----------
    rows : int
        Coalitions evaluated (rows of all masks passed to ``evaluate``).
    calls : int
        Calls to ``evaluate``.
    empty_rows, full_rows : int
        How many of those rows were the empty / grand coalition.
    """

    def __init__(self, game):
        self.game = game
        self.n_players = game.n_players
        self.rows = self.calls = self.empty_rows = self.full_rows = 0

    def _evaluate(self, masks):
        self.calls += 1
        self.rows += masks.shape[0]
        sizes = masks.sum(axis=1)
        self.empty_rows += int((sizes == 0).sum())
        self.full_rows += int((sizes == self.n_players).sum())
        return self.game.evaluate(masks)

    @property
    def shapley_values(self) -> np.ndarray:
        return self.game.shapley_values


class RecordingGame(CountingGame):
    """A :class:`CountingGame` that also keeps a copy of every mask batch evaluated, in order (``masks``)."""

    def __init__(self, game):
        super().__init__(game)
        self.masks = []

    def _evaluate(self, masks):
        self.masks.append(np.array(masks))
        return super()._evaluate(masks)


class Interrupted(KeyboardInterrupt):
    pass


class InterruptingGame(CountingGame):
    """Raises KeyboardInterrupt on the ``after``-th call of ``evaluate``, as Ctrl-C would."""

    def __init__(self, game, after: int):
        super().__init__(game)
        self.after = after

    def _evaluate(self, masks):
        if self.calls + 1 == self.after:
            raise Interrupted
        return super()._evaluate(masks)


class CountingPrefixGame(CountingGame):
    """Counting wrapper that also forwards (and counts) ``evaluate_prefixes``.

    ``prefix_rows`` counts prefix utilities returned (``m * n`` per call).
    """

    def __init__(self, game):
        super().__init__(game)
        self.prefix_rows = 0

    def evaluate_prefixes(self, permutations):
        permutations = np.asarray(permutations)
        self.prefix_rows += permutations.size
        return self.game.evaluate_prefixes(permutations)


def flipped_label_task(centre: float) -> tuple:
    """Two Gaussian classes at -centre and +centre (40 training points each, 50 test points each) with the
    training labels of points 3, 11, 45 and 60 flipped: ``(X, y_noisy, X_test, y_test, flipped)``."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-centre, 1, (40, 2)), rng.normal(centre, 1, (40, 2))])
    y = np.repeat([0, 1], 40)
    flipped = np.array([3, 11, 45, 60])
    y[flipped] = 1 - y[flipped]
    X_test = np.vstack([rng.normal(-centre, 1, (50, 2)), rng.normal(centre, 1, (50, 2))])
    return X, y, X_test, np.repeat([0, 1], 50), flipped


def logistic_game_on_cpu_device():
    """An iris ``LogisticRegressionUtility`` on torch's CPU device (skips without torch): a game on a device."""
    import pytest

    pytest.importorskip("torch")
    from sklearn.datasets import load_iris

    from shapley_research import LogisticRegressionUtility

    X, y = load_iris(return_X_y=True)
    return LogisticRegressionUtility(X[::2], y[::2], X[1::2], y[1::2], device="cpu")
