"""Stratified SVARM's size allocation: the paper's by default, Neyman's on request.

The Neyman allocation must estimate the same thing (convergence to exact
values), be reproducible (any ``n_jobs``, checkpoint/resume), follow the
variance of the strata, and leave the default untouched.
"""

import numpy as np
import pytest

import shapley_research as sr
from shapley_research.estimators import batch_rng, neyman_size_probabilities, random_subsets, svarm_size_probabilities
from shapley_research.estimators._sampling import _without_replacement
from shapley_research.estimators._sampling._loop import MeanState, aux_rng
from shapley_research.estimators._svarm import PILOT_STREAM
from games import (AirportGame, CountingGame, Interrupted, InterruptingGame, RecordingGame, SizeAdditiveGame,
                   brute_force_shapley, random_unanimity_game, relative_l2)
from shapley_research.games import Game

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off


class SmallCoalitionGame(Game):
    r"""Additive among coalitions of at most ``m`` players, zero beyond.

    :math:`U(A) = [|A| \le m] \sum_{i \in A} w_i`: every coalition of more
    than ``m`` players is worth 0, so all the variance of the strata is at the
    small sizes. Each term :math:`w_j h(|A|) [j \in A]` gives ``j`` the mean
    of ``h(1..N)`` and the others an equal share of the rest of ``h(N)``.
    """

    def __init__(self, weights, m: int):
        self.weights = np.asarray(weights, dtype=float)
        self.n_players, self.m = self.weights.size, m

    def _evaluate(self, masks):
        return np.where(masks.sum(axis=1) <= self.m, masks @ self.weights, 0.0)

    @property
    def shapley_values(self) -> np.ndarray:
        n = self.n_players
        h = (np.arange(1, n + 1) <= self.m).astype(float)
        own, others = h.mean(), (h[-1] - h.mean()) / (n - 1)
        return own * self.weights + others * (self.weights.sum() - self.weights)


SMALL = SmallCoalitionGame(np.random.default_rng(0).uniform(1.0, 2.0, 12), m=3)
GAMES = {
    "airport": AirportGame(np.random.default_rng(0).uniform(0.0, 1.0, 12)),
    "unanimity": random_unanimity_game(10, n_terms=6, max_size=4, seed=1, null_players=(9,)),
    "size_additive": SizeAdditiveGame(np.linspace(0.0, 1.0, 10), np.r_[0.0, 3 * np.sqrt(np.arange(1, 11))]),
    "small_coalitions": SMALL,
}


def neyman(game, budget, seed, **kw):
    return sr.stratified_svarm_shapley(game, budget, seed=seed, allocation="neyman", **kw)


def test_small_coalition_game_closed_form():
    game = SmallCoalitionGame([1.0, 2.0, 0.5, 3.0, 1.5, 0.25, 2.5], m=3)
    np.testing.assert_allclose(game.shapley_values, brute_force_shapley(
        lambda s: sum(game.weights[list(s)]) if len(s) <= 3 else 0.0, game.n_players), atol=1e-12)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_converges_to_the_exact_values(name):
    game = GAMES[name]
    budget = 2 * game.n_players + 2 + 20_000
    errors = [relative_l2(neyman(game, budget, seed).values, game.shapley_values) for seed in range(3)]
    assert np.mean(errors) < 0.03


def test_allocation_follows_the_variance_and_pays_off():
    n = SMALL.n_players
    result = neyman(SMALL, 2 * n + 2 + 1_000, seed=0)
    p, default = np.asarray(result.info["size_probabilities"]), svarm_size_probabilities(n)
    # sizes 4.. hold constant utilities (zero variance): only the floor of the default allocation is left
    np.testing.assert_allclose(p[2:], 0.2 * default[2:], rtol=1e-12)
    assert p[:2].sum() > 0.8 > 2.5 * default[:2].sum()
    budget = 2 * n + 2 + 1_000
    ours = np.mean([relative_l2(neyman(SMALL, budget, s).values, SMALL.shapley_values) for s in range(8)])
    paper = np.mean([relative_l2(sr.stratified_svarm_shapley(SMALL, budget, seed=s).values, SMALL.shapley_values)
                     for s in range(8)])
    assert ours < 0.8 * paper


def test_probabilities_without_information_are_the_default():
    assert neyman_size_probabilities(MeanState(3 * 4**2), 3).size == 0
    empty = MeanState(3 * 11**2)
    np.testing.assert_array_equal(neyman_size_probabilities(empty, 10), svarm_size_probabilities(10))
    with pytest.raises(ValueError, match="floor must be <= 1"):
        neyman_size_probabilities(empty, 10, floor=1.5)


def _draws(rng, n, size, p):
    sizes = rng.choice(np.arange(2, n - 1), size=size, p=p)
    return random_subsets(rng, sizes, n)


def test_default_is_the_papers_fixed_allocation(monkeypatch):
    # no pilot, every batch drawn from its own stream with svarm_size_probabilities, as before allocations
    # (with replacement: the draws without it are tested in tests/estimators/test_without_replacement.py)
    monkeypatch.setattr(_without_replacement, "MAX_STRATUM", 0)
    game = GAMES["unanimity"]
    n, p = game.n_players, svarm_size_probabilities(game.n_players)
    recording = RecordingGame(game)
    result = sr.stratified_svarm_shapley(recording, 2 * n + 2 + 250, seed=4, batch_size=100)
    batches = recording.masks[2:]  # after the anchors and the exact strata
    assert [b.shape[0] for b in batches] == [100, 100, 50] and result.info["allocation"] == "svarm"
    for b, masks in enumerate(batches):
        np.testing.assert_array_equal(masks, _draws(batch_rng(result.seed, b), n, masks.shape[0], p))
    assert "pilot" not in result.info
    same = sr.stratified_svarm_shapley(game, 2 * n + 2 + 250, seed=4, batch_size=100, allocation="svarm")
    np.testing.assert_array_equal(same.values, result.values)


def test_neyman_draws_a_pilot_then_its_recorded_probabilities(monkeypatch):
    monkeypatch.setattr(_without_replacement, "MAX_STRATUM", 0)  # as above
    game = GAMES["unanimity"]
    n = game.n_players
    recording = RecordingGame(game)
    result = neyman(recording, 2 * n + 2 + 5 * n + 150, seed=4, batch_size=30)
    assert result.info["pilot"] == 5 * n and result.n_samples == 5 * n + 150
    assert result.n_evaluations == recording.rows == 2 * n + 2 + 5 * n + 150
    pilot, rest = recording.masks[2:4], recording.masks[4:]
    rng = aux_rng(result.seed, PILOT_STREAM)
    for masks in pilot:
        np.testing.assert_array_equal(masks, _draws(rng, n, masks.shape[0], svarm_size_probabilities(n)))
    p = np.asarray(result.info["size_probabilities"])
    assert np.isclose(p.sum(), 1.0) and not np.allclose(p, svarm_size_probabilities(n))
    for b, masks in enumerate(rest):
        np.testing.assert_array_equal(masks, _draws(batch_rng(result.seed, b), n, masks.shape[0], p))


def test_a_budget_below_the_pilot_is_all_pilot():
    game = GAMES["airport"]
    n = game.n_players
    counting = CountingGame(game)
    result = neyman(counting, 2 * n + 2 + 7, seed=1)
    assert result.info["pilot"] == result.n_samples == 7
    assert result.n_evaluations == counting.rows == 2 * n + 2 + 7


@pytest.mark.slow  # starts a pool of worker processes (loky)
def test_identical_for_any_n_jobs():
    game = GAMES["size_additive"]
    # batches of 20: the pilot (50 coalitions) spans three, evaluated by the workers too
    runs = [neyman(game, 1_000, seed=3, batch_size=20, n_jobs=n_jobs) for n_jobs in (1, 2)]
    np.testing.assert_array_equal(runs[0].values, runs[1].values)
    np.testing.assert_array_equal(runs[0].stderr, runs[1].stderr)
    assert runs[0].info["size_probabilities"] == runs[1].info["size_probabilities"]


def test_interrupted_then_resumed_equals_uninterrupted(tmp_path):
    game = GAMES["unanimity"]
    n = game.n_players
    run = lambda g, **kw: neyman(g, 2 * n + 2 + 25 * 40, seed=5, batch_size=25, **kw)  # pilot: 2 batches
    full = run(game)
    path = tmp_path / "run.ckpt"
    with pytest.raises(Interrupted):  # calls: anchors, exact strata, 2 pilot batches, 10 batches, then stop
        run(InterruptingGame(game, after=15), checkpoint=path, checkpoint_interval=3600)
    counting = CountingGame(game)
    resumed = run(counting, checkpoint=path)
    np.testing.assert_array_equal(resumed.values, full.values)
    np.testing.assert_array_equal(resumed.stderr, full.stderr)
    assert (resumed.n_evaluations, resumed.n_samples) == (full.n_evaluations, full.n_samples)
    assert resumed.info["size_probabilities"] == full.info["size_probabilities"]
    # the pilot came from the file: only the batches after the interruption were evaluated
    assert counting.rows == full.n_samples - 5 * n - 10 * 25


def test_interrupted_in_the_pilot_starts_over_to_the_same_values(tmp_path):
    game = GAMES["unanimity"]
    run = lambda g, **kw: neyman(g, 600, seed=6, batch_size=25, **kw)
    path = tmp_path / "run.ckpt"
    with pytest.raises(Interrupted):
        run(InterruptingGame(game, after=4), checkpoint=path, checkpoint_interval=3600)
    np.testing.assert_array_equal(run(game, checkpoint=path).values, run(game).values)


def test_a_finished_run_continues_with_a_larger_budget_once_its_pilot_is_complete(tmp_path):
    game = GAMES["unanimity"]
    n = game.n_players
    path = tmp_path / "run.ckpt"
    neyman(game, 2 * n + 2 + 5 * n + 100, seed=2, batch_size=25, checkpoint=path)
    longer = neyman(game, 2 * n + 2 + 5 * n + 300, seed=2, batch_size=25, checkpoint=path)
    direct = neyman(game, 2 * n + 2 + 5 * n + 300, seed=2, batch_size=25)
    np.testing.assert_array_equal(longer.values, direct.values)
    short = tmp_path / "short.ckpt"
    neyman(game, 2 * n + 2 + 20, seed=2, batch_size=25, checkpoint=short)  # all pilot, and cut short
    with pytest.raises(ValueError, match="pilot: file 20 vs call 50"):
        neyman(game, 2 * n + 2 + 5 * n + 300, seed=2, batch_size=25, checkpoint=short)


def test_checkpoint_of_the_other_allocation_is_refused(tmp_path):
    game = GAMES["unanimity"]
    path = tmp_path / "run.ckpt"
    sr.stratified_svarm_shapley(game, 500, seed=1, checkpoint=path)
    with pytest.raises(ValueError, match="allocation"):
        neyman(game, 500, seed=1, checkpoint=path)


def test_runs_of_both_allocations_merge():
    game = GAMES["airport"]
    a = sr.stratified_svarm_shapley(game, 5_000, seed=1)
    b = neyman(game, 5_000, seed=2)
    merged = sr.merge_results(a, b)
    assert merged.n_samples == a.n_samples + b.n_samples
    assert relative_l2(merged.values, game.shapley_values) < 0.05
    assert np.all(merged.stderr < np.maximum(a.stderr, b.stderr))
    # the merged info says how each run drew its sizes, instead of repeating the first run's
    assert merged.info["allocation"] == ["svarm", "neyman"]
    assert merged.info["pilot"] == [None, b.info["pilot"]]
    assert sr.merge_results(b, neyman(game, 5_000, seed=3)).info["allocation"] == "neyman"


def test_precision_target_and_few_players():
    game = GAMES["unanimity"]
    result = neyman(game, None, seed=0, target_stderr=0.03, batch_size=50)
    assert result.info["stopped_by"] == "target_stderr" and result.stderr.max() <= 0.03
    assert result.n_samples >= result.info["pilot"] == 5 * game.n_players
    tiny = SizeAdditiveGame([1.0, 2.0, 3.0], [0.0, 1.0, 1.5, 4.0])
    exact = neyman(tiny, 8, seed=0)  # N = 3: every stratum is exact, nothing to allocate
    np.testing.assert_allclose(exact.values, tiny.shapley_values, atol=1e-12)
    assert exact.n_samples == 0 and "pilot" not in exact.info


@pytest.mark.parametrize("kwargs, error, match", [
    ({"allocation": "Neyman"}, ValueError, r"allocation must be one of \['neyman', 'svarm'\], got 'Neyman'"),
    ({"allocation": None}, ValueError, "allocation must be one of"),
    ({"allocation": ["neyman"]}, ValueError, "allocation must be one of"),
    ({"pilot": 10}, ValueError, "pilot sets the pilot of allocation='neyman'"),
    ({"allocation": "neyman", "pilot": 0}, ValueError, "pilot must be >= 1"),
    ({"allocation": "neyman", "pilot": 2.5}, TypeError, "pilot must be an integer"),
    ({"allocation": "neyman", "pilot": True}, TypeError, "pilot must be an integer"),
])
def test_bad_input(kwargs, error, match):
    counting = CountingGame(GAMES["unanimity"])
    with pytest.raises(error, match=match):
        sr.stratified_svarm_shapley(counting, 500, seed=0, **kwargs)
    assert counting.rows == 0  # refused before any evaluation
