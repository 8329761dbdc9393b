"""Beta Shapley (Kwon and Zou, AISTATS 2022): weights, exact values, and the sampling estimator.

The exact values are checked against a brute force written here (Python sets
and ``math.lgamma``, no package code) and against closed forms: every
semivalue of an additive game is the player's weight, a symmetric majority
game's is the probability of the pivotal size, and a unanimity game's follows
from the chance that a random coalition of each size holds the other members.
The sampler is checked for what a Monte Carlo estimate owes: unbiasedness over
seeds, honest standard errors, convergence, identical numbers for any
``n_jobs`` and after a resume, merging, and bad input refused before any
evaluation.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import shapley_research as sr
from games import (VOTING_NULL_PLAYERS, AdditiveGame, AirportGame, CountingGame, CountingPrefixGame, GloveGame,
                   Interrupted, InterruptingGame, MajorityGame, SizeAdditiveGame, TableGame, WeightedVotingGame,
                   random_unanimity_game, relative_l2)
from shapley_research import beta_shapley, exact_beta_shapley
from shapley_research.estimators import beta_weights
from shapley_research.estimators import _beta_shapley
from shapley_research.estimators._beta_shapley import _Layout
from shapley_research.estimators._permutation import random_permutations

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off

SHAPES = [(16.0, 1.0), (4.0, 1.0), (1.0, 4.0), (2.0, 2.0), (0.5, 0.5), (1.0, 1.0)]


def reference_weight(n: int, k: int, alpha: float, beta: float) -> float:
    """``B(k + beta, n - 1 - k + alpha) / B(alpha, beta)`` from ``math.lgamma``."""
    log_b = lambda x, y: math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)
    return math.exp(log_b(k + beta, n - 1 - k + alpha) - log_b(alpha, beta))


def brute_force_semivalue(game, alpha: float, beta: float) -> np.ndarray:
    """``sum over S not containing i of w(|S|) [U(S + i) - U(S)]``, coalition by coalition (N <= 10)."""
    n = game.n_players
    utility = {}
    for members in itertools.chain.from_iterable(itertools.combinations(range(n), k) for k in range(n + 1)):
        mask = np.zeros((1, n), dtype=bool)
        mask[0, list(members)] = True
        utility[frozenset(members)] = float(game.evaluate(mask)[0])
    values = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for k in range(n):
            w = reference_weight(n, k, alpha, beta)
            for s in itertools.combinations(others, k):
                values[i] += w * (utility[frozenset(s) | {i}] - utility[frozenset(s)])
    return values


def unanimity_semivalue(game, alpha: float, beta: float) -> np.ndarray:
    r"""Closed form for a sum of unanimity games.

    ``i`` in ``T`` contributes ``c_T`` to ``S`` iff ``T - i`` is inside ``S``;
    for ``S`` uniform of size ``k`` that has probability
    ``C(N - |T|, k - |T| + 1) / C(N - 1, k)``, and size ``k`` has probability
    ``C(N - 1, k) w(k)``.
    """
    n = game.n_players
    values = np.zeros(n)
    for members, c in zip(game.coalitions, game.coefficients):
        t = len(members)
        share = sum(math.comb(n - t, k - t + 1) * reference_weight(n, k, alpha, beta) for k in range(t - 1, n))
        values[members] += c * share
    return values


# ---------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 5, 12, 40])
def test_alpha_beta_one_gives_the_shapley_weights(n):
    expected = [1.0 / (n * math.comb(n - 1, k)) for k in range(n)]
    np.testing.assert_allclose(beta_weights(n, 1, 1), expected, rtol=1e-12)


@pytest.mark.parametrize("alpha, beta", SHAPES + [(0.1, 3.0), (40.0, 0.2)])
@pytest.mark.parametrize("n", [1, 3, 10, 60])
def test_weights_match_the_beta_function_and_sum_to_one_over_sizes(n, alpha, beta):
    weights = beta_weights(n, alpha, beta)
    np.testing.assert_allclose(weights, [reference_weight(n, k, alpha, beta) for k in range(n)], rtol=1e-10)
    assert sum(math.comb(n - 1, k) * weights[k] for k in range(n)) == pytest.approx(1.0, rel=1e-12)


def test_log_weights_for_many_players():
    """For N = 10^5 most weights underflow (w(k) < 1 / C(N - 1, k)); their logarithms give the size distribution."""
    from scipy.special import gammaln, logsumexp

    n = 100_000
    log_weights = beta_weights(n, 16, 1, log=True)
    assert np.isfinite(log_weights).all()
    np.testing.assert_allclose(np.exp(log_weights[:50]), beta_weights(n, 16, 1)[:50], rtol=1e-12)
    for k in (0, 17, 5_000, n - 1):  # log B(k + 1, n - 1 - k + 16) - log B(16, 1), from math.lgamma
        reference = (math.lgamma(k + 1) + math.lgamma(n - 1 - k + 16) - math.lgamma(n + 16)) + math.log(16)
        assert log_weights[k] == pytest.approx(reference, rel=1e-10)
    k = np.arange(n)
    log_sizes = gammaln(n) - gammaln(k + 1) - gammaln(n - k) + log_weights
    assert logsumexp(log_sizes) == pytest.approx(0.0, abs=1e-9)
    # Beta(16, 1) puts most weight on small coalitions: the smallest tenth of the sizes holds 1 - 0.9^16 = 81 %
    assert np.exp(logsumexp(log_sizes[: n // 10])) == pytest.approx(1 - 0.9**16, abs=1e-3)


# ---------------------------------------------------------------------------
# Exact values
# ---------------------------------------------------------------------------

SMALL_GAMES = {
    "voting": WeightedVotingGame((10, 10, 10, 4, 4, 1, 0), 18),
    "glove_1_2": GloveGame(1, 2),
    "glove_3_4": GloveGame(3, 4),
    "airport": AirportGame([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0]),
    "unanimity": random_unanimity_game(8, 6, 4, seed=2),
    "table": TableGame(np.random.default_rng(20).normal(size=2**6)),
    "size_additive": SizeAdditiveGame([0.3, 1.0, -0.5, 2.0, 0.1], np.sqrt(np.arange(6.0))),
}


@pytest.mark.parametrize("alpha, beta", [(16.0, 1.0), (4.0, 1.0), (1.0, 4.0), (0.5, 2.0)])
@pytest.mark.parametrize("name", sorted(SMALL_GAMES))
def test_exact_values_equal_a_brute_force(name, alpha, beta):
    game = SMALL_GAMES[name]
    result = exact_beta_shapley(game, alpha, beta)
    np.testing.assert_allclose(result.values, brute_force_semivalue(game, alpha, beta), rtol=1e-10, atol=1e-12)
    assert result.n_evaluations == 2**game.n_players and result.method == "exact_beta_shapley"
    assert (result.info["alpha"], result.info["beta"]) == (alpha, beta)


def test_exact_values_at_alpha_beta_one_are_the_shapley_values(closed_form_game):
    np.testing.assert_allclose(exact_beta_shapley(closed_form_game, 1, 1).values,
                               sr.exact_shapley(closed_form_game).values, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("alpha, beta", SHAPES)
def test_closed_forms_of_unanimity_majority_and_additive_games(alpha, beta):
    unanimity = random_unanimity_game(9, 7, 5, seed=11)
    np.testing.assert_allclose(exact_beta_shapley(unanimity, alpha, beta).values,
                               unanimity_semivalue(unanimity, alpha, beta), rtol=1e-10)
    # a majority game pays 1 for joining a coalition of q - 1 players: the value is that size's probability
    n, q = 9, 4
    pivotal = math.comb(n - 1, q - 1) * reference_weight(n, q - 1, alpha, beta)
    np.testing.assert_allclose(exact_beta_shapley(MajorityGame(n, q), alpha, beta).values, pivotal, rtol=1e-10)
    # every marginal contribution of an additive game is the player's weight, and the weights sum to 1
    additive = AdditiveGame([1.5, -2.0, 0.25, 3.0, 0.0], offset=4.0)
    np.testing.assert_allclose(exact_beta_shapley(additive, alpha, beta).values, additive.weights, atol=1e-12)


def test_null_players_get_zero_and_symmetric_players_the_same():
    voting = WeightedVotingGame((10, 10, 10, 4, 4, 1, 0), 18)
    values = exact_beta_shapley(voting).values
    assert np.all(values[list(VOTING_NULL_PLAYERS)] == 0)
    assert values[0] == pytest.approx(values[1]) == pytest.approx(values[2]) and values[3] == pytest.approx(values[4])
    glove = exact_beta_shapley(GloveGame(3, 5)).values
    np.testing.assert_allclose(glove[:3], glove[0], rtol=1e-12)
    np.testing.assert_allclose(glove[3:], glove[3], rtol=1e-12)


def test_exact_with_a_given_empty_utility():
    game = AdditiveGame([1.0, 2.0, 3.0], offset=0.5)
    counter = CountingGame(game)
    result = exact_beta_shapley(counter, empty_utility=0.5)
    assert counter.empty_rows == 0 and result.n_evaluations == counter.rows == 7
    np.testing.assert_allclose(result.values, game.weights)


# ---------------------------------------------------------------------------
# Sampling: unbiased, honest, convergent
# ---------------------------------------------------------------------------

UNBIASED_GAMES = {"airport": AirportGame([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0]),
                  "unanimity": random_unanimity_game(11, 12, 5, seed=7),
                  "glove": GloveGame(3, 6)}


@pytest.mark.slow  # over a second
@pytest.mark.parametrize("alpha, beta", [(16.0, 1.0), (1.0, 16.0), (2.0, 2.0), (0.5, 0.5)])
@pytest.mark.parametrize("name", sorted(UNBIASED_GAMES))
def test_mean_over_seeds_is_the_exact_value(name, alpha, beta):
    """60 runs of ~18 units: their mean is within 4 standard errors of the mean of every exact value.

    Plus 4 / units of the largest value: a contribution rarer than that may
    never be seen in all the units (rule of three), leaving a spread of 0: a
    cheap airport player's under Beta(1, 16), which needs a large coalition
    without every dearer player (value 1e-5), or the one in 750 coalitions
    where a left glove is worth nothing under Beta(1, 16).
    """
    game = UNBIASED_GAMES[name]
    exact = exact_beta_shapley(game, alpha, beta).values
    runs = [beta_shapley(game, 20 * game.n_players, seed, alpha, beta) for seed in range(60)]
    values = np.array([run.values for run in runs])
    spread = values.std(axis=0, ddof=1) / np.sqrt(len(runs))
    rare = 4 / sum(run.n_samples for run in runs) * np.abs(exact).max()
    assert np.all(np.abs(values.mean(axis=0) - exact) <= 4 * spread + rare)


_rng = np.random.default_rng(3)
CALIBRATION_GAMES = {  # 14 players: the exact values by enumeration
    "airport": AirportGame(np.round(_rng.uniform(1, 10, 14), 1)),
    "size_additive": SizeAdditiveGame(_rng.normal(size=14), 3 * np.sqrt(np.arange(15.0))),
    "glove": GloveGame(6, 8),
}


@pytest.mark.parametrize("name, alpha, beta", [("airport", 16, 1), ("size_additive", 16, 1), ("glove", 4, 1)])
def test_standard_errors_are_honest(name, alpha, beta):
    """(estimate - truth) / stderr over 14 players x 10 seeds behaves like N(0, 1).

    Measured over 6 blocks of 10 seeds, here and at 8,000 evaluations: mean
    z^2 in 0.76..1.22, fraction of |z| > 3 at most 0.014. (Games whose
    contributions are rare at the sizes the weights favour, such as unanimity
    games of many members under Beta(16, 1), are not: a run that never saw
    one reports a standard error of 0.)
    """
    game = CALIBRATION_GAMES[name]
    truth = exact_beta_shapley(game, alpha, beta).values
    z = np.concatenate([(lambda r: (r.values - truth) / r.stderr)(beta_shapley(game, 3_000, seed, alpha, beta))
                        for seed in range(10)])
    assert 0.6 < np.mean(z**2) < 1.6
    assert np.mean(np.abs(z) > 3) < 0.03


def test_error_falls_as_the_budget_grows():
    game = UNBIASED_GAMES["airport"]
    exact = exact_beta_shapley(game).values
    error = {budget: np.mean([relative_l2(beta_shapley(game, budget, seed).values, exact) for seed in range(6)])
             for budget in (200, 3_200)}
    assert error[3_200] < error[200] / 2.5  # ~1/4 expected for 16 times the budget
    assert error[3_200] < 0.1


def test_an_additive_game_is_exact_from_any_budget():
    """One contribution per player and unit, at any size, with no importance weight: each one is the weight."""
    game = AdditiveGame(np.linspace(-1.0, 2.0, 12), offset=3.0)
    for alpha, beta in SHAPES:
        result = beta_shapley(game, 100, 0, alpha, beta)
        np.testing.assert_allclose(result.values, game.weights, atol=1e-12)
        np.testing.assert_allclose(result.stderr, 0.0, atol=1e-12)


def test_null_players_are_exactly_zero_and_symmetric_players_close():
    voting = WeightedVotingGame((10, 10, 10, 4, 4, 1, 0), 18)
    result = beta_shapley(voting, 5_000, 3)
    assert np.all(result.values[list(VOTING_NULL_PLAYERS)] == 0)
    assert np.all(result.stderr[list(VOTING_NULL_PLAYERS)] == 0)
    glove = GloveGame(4, 4)
    result = beta_shapley(glove, 8_000, 1)
    assert np.abs(result.values - result.values.mean()).max() < 4 * result.stderr.max()


def test_alpha_beta_one_is_permutation_sampling_bit_for_bit():
    """A uniform size distribution makes every unit one permutation, drawn as permutation_shapley draws it."""
    for game in (UNBIASED_GAMES["unanimity"], UNBIASED_GAMES["airport"]):  # mask path, prefix path
        n, units = game.n_players, 57
        ours = beta_shapley(game, 1 + n * units, 4, 1, 1, batch_size=7)
        theirs = sr.permutation_shapley(game, 1 + n * units, 4, batch_size=7)
        np.testing.assert_array_equal(ours.values, theirs.values)
        np.testing.assert_array_equal(ours.stderr, theirs.stderr)
        assert ours.n_evaluations == theirs.n_evaluations and ours.n_samples == theirs.n_samples == units


# ---------------------------------------------------------------------------
# Evaluations: counted honestly, within the budget
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("alpha, beta", SHAPES)
def test_evaluations_are_counted_and_stay_within_the_budget(alpha, beta):
    rng = np.random.default_rng(int(alpha * 10 + beta))
    for game, wrap in ((UNBIASED_GAMES["unanimity"], CountingGame), (UNBIASED_GAMES["airport"], CountingPrefixGame)):
        for budget in rng.integers(40, 1_500, size=3):
            counter = wrap(game)
            result = beta_shapley(counter, int(budget), 0, alpha, beta)
            made = counter.rows + getattr(counter, "prefix_rows", 0)
            assert result.n_evaluations == made <= budget
            fixed = 1 + ("full_utility" in result.info)  # U(empty), and U(D) unless p is uniform
            assert result.n_samples == (budget - fixed) // result.info["unit_evaluations"]


@pytest.mark.parametrize("n, alpha, beta", [(5, 16, 1), (40, 16, 1), (100, 16, 1), (60, 2, 2), (50, 0.5, 0.5),
                                            (45, 1, 16), (30, 0.3, 2)])
def test_a_unit_costs_at_most_its_charge_and_the_charge_is_attained(n, alpha, beta):
    """The charge per unit is the most any offset of the slots costs: N plus the chains inside (0, N)."""
    layout = _Layout(n, alpha, beta)
    begins = (layout.ends - layout.cell_mass) % layout.scale
    offsets = np.unique(np.concatenate([[0], begins, layout.ends % layout.scale]))  # one per piece of cost
    cells = layout.slots(offsets)
    costs = []
    for row in cells:
        layer, size = layout.cell_layer[row], layout.cell_size[row]
        heads = np.flatnonzero(np.r_[True, (layer[1:] != layer[:-1]) | (size[1:] != size[:-1] + 1)])
        low, high = size[heads], size[heads] + np.diff(np.append(heads, n))
        costs.append(n + int(((low > 0) & (high < n)).sum()))
    assert max(costs) == layout.unit_evaluations


def test_empty_utility_is_not_evaluated_when_given():
    counter = CountingGame(AdditiveGame([1.0, 2.0, 3.0, 4.0], offset=0.0))
    result = beta_shapley(counter, 60, 0, empty_utility=0.0)
    assert counter.empty_rows == 0 and result.n_evaluations == counter.rows <= 60
    np.testing.assert_allclose(result.values, [1.0, 2.0, 3.0, 4.0])


@pytest.mark.enumeration
def test_a_budget_covering_every_coalition_returns_the_exact_values():
    game = UNBIASED_GAMES["unanimity"]
    counter = CountingGame(game)
    result = beta_shapley(counter, 2**11, 5, 4, 1)
    np.testing.assert_allclose(result.values, exact_beta_shapley(game, 4, 1).values, rtol=1e-12)
    assert result.info["stopped_by"] == "enumeration" and np.all(result.stderr == 0)
    assert result.method == "beta_shapley" and counter.rows == result.n_evaluations == 2**11


# ---------------------------------------------------------------------------
# Chains: the ranks and masks the coalitions are built from
# ---------------------------------------------------------------------------

def unit_chains(n: int, alpha: float, beta: float, units: int, seed: int):
    """The chains of ``units`` units, drawn as ``_unit_samples`` draws them."""
    layout, rng = _Layout(n, alpha, beta), np.random.default_rng(seed)
    perms = random_permutations(rng, units, n)
    cells = layout.slots(rng.integers(layout.scale, size=units, dtype=np.int64)).ravel()
    return perms, _beta_shapley._chains(perms, layout.cell_layer[cells], layout.cell_size[cells])


def reference_rank(perms: np.ndarray, chains, c: int) -> np.ndarray:
    """Chain ``c``'s ranks from the definition: its ``j``-th joiner ``j``, the ``low`` players after it in the
    permutation (cyclically) 0, everyone else ``N + 1``."""
    n, unit = chains.n, int(chains.unit[c])
    head, length, low = int(chains.heads[c]) - unit * n, int(chains.lengths[c]), int(chains.low[c])
    rank = np.full(n, n + 1)
    rank[perms[unit, head:head + length]] = np.arange(1, length + 1)
    rank[perms[unit, (head + length + np.arange(low)) % n]] = 0
    return rank


@pytest.mark.parametrize("n, alpha, beta, units", [(7, 16, 1, 5), (60, 2, 2, 4), (300, 16, 1, 3), (150, 0.5, 0.5, 2),
                                                   (40_000, 16, 1, 1)])
def test_chain_ranks_follow_the_permutations(n, alpha, beta, units):
    """The compiled sweep of the inverse permutations gives each chain's ranks as the definition does
    (``N = 40,000``: int32 ranks; the largest bases and longest chains)."""
    perms, chains = unit_chains(n, alpha, beta, units, seed=n)
    which = np.arange(chains.heads.size)
    if which.size > 60:  # the largest bases and the longest chains
        which = np.union1d(np.argsort(chains.low, kind="stable")[-40:], np.argsort(chains.lengths, kind="stable")[-20:])
    rank = _beta_shapley._chain_ranks(chains, which, _beta_shapley._positions(chains))
    assert rank.dtype == (np.int16 if n < 32_767 else np.int32) and rank.shape == (which.size, n)
    for row, c in zip(rank, which):
        np.testing.assert_array_equal(row, reference_rank(perms, chains, int(c)))
    assert n < 60 or ((chains.low[which] > 0).any() and (chains.lengths[which] > 1).any())  # bases and joiners


def test_every_chunk_evaluates_the_nested_coalitions(monkeypatch):
    """Chunks of three rows, so long chains span many chunks and their ranks are reused: every mask evaluated is
    the chain's base plus its first ``step`` joiners, in order."""
    n = 50
    perms, chains = unit_chains(n, 16.0, 1.0, 3, seed=3)
    row_chain, row_step = _beta_shapley._segments(chains.lengths + 1)
    size = chains.low[row_chain] + row_step
    todo = (size > 0) & (size < n)
    seen = []

    class Recording:
        n_players = n

        def evaluate(self, masks):
            seen.append(masks.copy())
            return masks @ np.arange(1.0, n + 1)

    monkeypatch.setattr(_beta_shapley, "PREFIX_MASK_CELLS", 3 * n)
    utilities = _beta_shapley._evaluate_chain_rows(Recording(), chains, row_chain[todo], row_step[todo])
    masks = np.concatenate(seen)
    assert len(seen) == -(-int(todo.sum()) // 3) and masks.shape == (todo.sum(), n)
    for mask, c, step in zip(masks, row_chain[todo], row_step[todo]):
        np.testing.assert_array_equal(mask, reference_rank(perms, chains, int(c)) <= step)
    np.testing.assert_array_equal(utilities, masks @ np.arange(1.0, n + 1))
    assert (chains.lengths > 3).any()  # a chain spans chunks


# ---------------------------------------------------------------------------
# The sampling loop: n_jobs, checkpoints, merging, stopping
# ---------------------------------------------------------------------------

GAME = WeightedVotingGame([4, 3, 3, 2, 2, 1, 1, 1], quota=9)


def _arrays(result):
    return result.values, result.stderr, result.state.mean, result.state.m2


@pytest.mark.slow  # starts a pool of worker processes (loky)
def test_results_do_not_depend_on_n_jobs():
    game = UNBIASED_GAMES["unanimity"]
    sequential, parallel = (beta_shapley(game, 3_000, 1, batch_size=16, n_jobs=jobs) for jobs in (1, 2))
    for a, b in zip(_arrays(sequential), _arrays(parallel)):
        np.testing.assert_array_equal(a, b)
    assert sequential.n_evaluations == parallel.n_evaluations


def test_interrupted_then_resumed_equals_uninterrupted(tmp_path):
    path = tmp_path / "beta.ckpt"
    run = lambda g, **kw: beta_shapley(g, kw.pop("budget", 2 + 10 * 40), 5, batch_size=1, **kw)
    full = run(GAME)
    with pytest.raises(Interrupted):
        run(InterruptingGame(GAME, after=15), checkpoint=path, checkpoint_interval=3600)
    counter = CountingGame(GAME)
    resumed = run(counter, checkpoint=path)
    assert resumed.info["resumed_samples"] > 0
    for a, b in zip(_arrays(resumed), _arrays(full)):
        np.testing.assert_array_equal(a, b)
    assert (resumed.n_evaluations, resumed.n_samples) == (full.n_evaluations, full.n_samples)
    assert 0 < counter.rows < full.n_evaluations - 2  # neither the anchors nor a finished batch again
    # a finished run continues with a larger budget to the values of a run made with it at once
    grown = run(GAME, checkpoint=path, budget=2 + 10 * 80)
    np.testing.assert_array_equal(grown.values, run(GAME, budget=2 + 10 * 80).values)
    with pytest.raises(sr.CheckpointError, match="different run"):
        beta_shapley(GAME, 2 + 10 * 80, 5, 4, 1, batch_size=1, checkpoint=path)


def test_merged_runs_are_the_pooled_statistics_of_their_units():
    unit_evaluations = beta_shapley(GAME, 1_000, 0).info["unit_evaluations"]  # alpha=16, beta=1 at N = 8
    one_unit = [beta_shapley(GAME, 2 + unit_evaluations, seed) for seed in range(40)]
    assert all(run.n_samples == 1 for run in one_unit)
    samples = np.array([run.values for run in one_unit])
    merged = sr.merge_results(*one_unit)
    np.testing.assert_allclose(merged.values, samples.mean(axis=0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(merged.stderr, samples.std(axis=0, ddof=1) / np.sqrt(40), rtol=1e-10, atol=1e-15)
    assert merged.n_samples == 40 and merged.method == "beta_shapley" and merged.info["seeds"] == list(range(40))
    halves = [beta_shapley(GAME, 1_000, seed) for seed in (1, 2)]
    state = type(halves[0].state)(GAME.n_players)
    for run in halves:
        state.merge(run.state)
    np.testing.assert_array_equal(sr.merge_results(*halves).values, state.mean)
    with pytest.raises(ValueError, match="options"):
        sr.merge_results(halves[0], beta_shapley(GAME, 1_000, 3, 4, 1))
    with pytest.raises(ValueError, match="cannot be merged"):
        sr.merge_results(exact_beta_shapley(GAME), exact_beta_shapley(GAME))


def test_stops_at_the_target_standard_error():
    result = beta_shapley(GAME, None, 0, target_stderr=0.01, batch_size=8)
    assert result.info["stopped_by"] == "target_stderr" and result.stderr.max() <= 0.01
    fewer = beta_shapley(GAME, 2 + result.info["unit_evaluations"] * (result.n_samples - 8), 0,
                         target_stderr=0.01, batch_size=8)
    assert fewer.info["stopped_by"] == "budget"  # the first batch that reaches it, not later
    assert np.abs(result.values - exact_beta_shapley(GAME).values).max() < 5 * 0.01
    ranked = beta_shapley(GAME, None, 0, target_rank_correlation=0.9, batch_size=8)
    assert ranked.info["stopped_by"] == "target_rank_correlation"


# ---------------------------------------------------------------------------
# Bad input: refused before anything is evaluated
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, match", [
    (dict(alpha=0), ValueError, "alpha must be > 0"),
    (dict(alpha=-1.0), ValueError, "alpha must be > 0"),
    (dict(beta=0.0), ValueError, "beta must be > 0"),
    (dict(alpha="16"), TypeError, "alpha must be a real number"),
    (dict(beta=None), TypeError, "beta must be a real number"),
    (dict(alpha=True), TypeError, "alpha must be a real number"),
    (dict(alpha=float("nan")), ValueError, "alpha must be finite"),
    (dict(beta=float("inf")), ValueError, "beta must be finite"),
    (dict(budget=10), ValueError, "budget=10 is smaller than one unit"),
    (dict(budget=None), TypeError, "budget must be an integer"),
    (dict(budget=1.5e3 + 0.5), TypeError, "budget must be an integer"),
    (dict(budget="1000"), TypeError, "budget must be an integer"),
    (dict(batch_size=0), ValueError, "batch_size must be >= 1"),
    (dict(n_jobs=0), ValueError, "n_jobs must be"),
    (dict(seed=-1), ValueError, "seed must be >= 0"),
    (dict(empty_utility="0"), TypeError, "empty_utility must be a real number"),
    (dict(target_stderr=-0.1), ValueError, "target_stderr must be > 0"),
    (dict(target_rank_correlation=1.5), ValueError, "target_rank_correlation must be in"),
    (dict(checkpoint=3), TypeError, "checkpoint must be a file path"),
])
def test_bad_input_is_refused_before_any_evaluation(kwargs, error, match):
    counter = CountingGame(GAME)
    call = {"budget": 1_000, "seed": 0, **kwargs}
    with pytest.raises(error, match=match):
        beta_shapley(counter, **call)
    assert counter.rows == 0


@pytest.mark.parametrize("call, error, match", [
    (lambda g: exact_beta_shapley(g, alpha=0), ValueError, "alpha must be > 0"),
    (lambda g: exact_beta_shapley(g, beta="1"), TypeError, "beta must be a real number"),
    (lambda g: exact_beta_shapley(g, max_players=7), ValueError, "max_players=7"),
    (lambda g: exact_beta_shapley(g, empty_utility=[0.0]), TypeError, "empty_utility must be a real number"),
    (lambda g: exact_beta_shapley(g.evaluate), TypeError, "game must be an object with n_players"),
    (lambda g: beta_weights(0, 16, 1), ValueError, "n_players must be >= 1"),
    (lambda g: beta_weights(5, 16, -1), ValueError, "beta must be > 0"),
    (lambda g: beta_weights(5.5, 16, 1), TypeError, "n_players must be an integer"),
    (lambda g: beta_weights(5, 16, 1, log=1), TypeError, "log must be True or False"),
])
def test_bad_input_of_the_exact_values_and_weights(call, error, match):
    counter = CountingGame(GAME)
    with pytest.raises(error, match=match):
        call(counter)
    assert counter.rows == 0
