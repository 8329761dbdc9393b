"""Small strata drawn without replacement (issue 18, 6b): exact where complete, unbiased, honest, reproducible.

Below 2^N evaluations the sampling estimators used to draw each coalition size's stratum with replacement.
Stratified SVARM and group testing now read a small stratum along seeded random orders of its coalitions
(``shapley_research.estimators._sampling._without_replacement``); SVARM also skips a size once it has
given every coalition.
The with-replacement path stays available by setting ``MAX_STRATUM = 0``, and every comparison below is
measured against it on the same games and seeds.
"""

from __future__ import annotations

from dataclasses import replace
from math import comb

import numpy as np
import pytest
from joblib import parallel_config

import shapley_research as sr
from shapley_research.estimators import svarm_size_probabilities
from shapley_research.estimators._sampling import _without_replacement as wor
from shapley_research.estimators._svarm import _finalize
from games import (AirportGame, CountingGame, GloveGame, Interrupted, InterruptingGame, RecordingGame, TableGame,
                   UnanimityGame, WeightedVotingGame, random_unanimity_game, relative_l2)

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off

UNANIMITY = random_unanimity_game(10, n_terms=6, max_size=4, seed=1, null_players=(9,))
AIRPORT = AirportGame(np.random.default_rng(0).uniform(0.0, 1.0, 10))
SMALL = {"unanimity": random_unanimity_game(7, n_terms=6, max_size=4, seed=2),
         "glove": GloveGame(3, 4)}
AIRPORT8 = AirportGame(np.random.default_rng(0).uniform(0.0, 1.0, 8))


@pytest.fixture
def with_replacement(monkeypatch):
    """Run the estimators as before: every stratum with replacement."""
    monkeypatch.setattr(wor, "MAX_STRATUM", 0)


def median_error(run, game, budget, seeds=range(20)) -> float:
    return float(np.median([relative_l2(run(game, budget, seed).values, game.shapley_values) for seed in seeds]))


def svarm(game, budget, seed, **kw):
    return sr.stratified_svarm_shapley(game, budget, seed=seed, **kw)


# --- the machinery ---


@pytest.mark.parametrize("n, k", [(6, 2), (6, 3), (6, 4), (7, 3), (7, 4), (9, 1), (9, 8), (10, 5), (5, 0), (5, 5)])
def test_unrank_is_a_bijection_onto_the_k_subsets(n, k):
    masks = wor.unrank(np.arange(comb(n, k)), n, k)
    assert masks.shape == (comb(n, k), n) and (masks.sum(axis=1) == k).all()
    codes = masks.astype(np.int64) @ (1 << np.arange(n))
    assert np.unique(codes).size == comb(n, k)
    with pytest.raises(ValueError, match=r"must be in \[0, "):
        wor.unrank([comb(n, k)], n, k)


def test_passes_take_every_coalition_once_in_fresh_orders():
    n, k = 8, 3
    total = comb(n, k)
    codes = wor.stratum_coalitions(123, n, k, np.arange(3 * total)).astype(np.int64) @ (1 << np.arange(n))
    passes = codes.reshape(3, total)
    for row in passes:
        assert np.unique(row).size == total
    assert not np.array_equal(passes[0], passes[1]) and not np.array_equal(passes[1], passes[2])
    # the order is a function of (seed, size, pass) alone: any split of the offsets gives the same coalitions
    parts = np.array_split(np.arange(3 * total), 7)
    again = np.concatenate([wor.stratum_coalitions(123, n, k, part) for part in parts])
    np.testing.assert_array_equal(again.astype(np.int64) @ (1 << np.arange(n)), codes)


def test_plan_completes_a_pass_of_every_stratum_before_starting_the_next():
    n = 7
    levels = np.arange(2, n - 1)
    population = np.array([comb(n, k) for k in levels])
    plan = wor.StratumPlan(n, levels, levels.tolist())
    rng = np.random.default_rng(0)
    seen = {k: [] for k in levels.tolist()}
    for size in [1, 5, 40, 3, 200, 17]:  # batches of uneven sizes
        sizes, offsets = plan.draw(rng, size, svarm_size_probabilities(n))
        assert sizes.size == offsets.size == size
        # no stratum starts a pass before every stratum has completed the one before
        assert np.ceil(plan.counts / population).max() <= (plan.counts // population).min() + 1
        for k in levels.tolist():
            seen[k].extend(offsets[sizes == k].tolist())
    for offsets in seen.values():  # each stratum's draws are its consecutive offsets
        assert offsets == list(range(len(offsets)))
    # while any stratum is incomplete, no complete one is drawn again
    plan, drawn = wor.StratumPlan(n, levels, levels.tolist()), []
    for _ in range(population.sum()):
        sizes, _ = plan.draw(rng, 1, svarm_size_probabilities(n))
        drawn.append(int(sizes[0]))
    np.testing.assert_array_equal(np.bincount(drawn, minlength=n + 1)[levels], population)


def test_with_replacement_strata_get_no_offsets():
    plan = wor.StratumPlan(30, np.arange(1, 30), [1, 2, 28, 29])
    offsets = plan.offsets(np.array([1, 5, 1, 29, 15, 1]))
    np.testing.assert_array_equal(offsets, [0, -1, 1, 0, -1, 2])


def test_which_strata_are_drawn_without_replacement():
    assert wor.without_replacement_sizes(22, range(2, 21)) == list(range(2, 21))
    assert wor.without_replacement_sizes(23, range(2, 22)) == [2, 3, 4, 5, 6, 7, 8, 9, 14, 15, 16, 17, 18, 19, 20, 21]
    assert wor.without_replacement_sizes(1448, range(2, 1447)) == [2, 1446]
    assert wor.without_replacement_sizes(1449, range(2, 1448)) == []


# --- Stratified SVARM ---


def test_every_stratum_complete_gives_the_exact_values():
    game = TableGame(np.random.default_rng(5).normal(size=2**7))
    # 2N + 2 exact evaluations plus the 2^N - 2N - 2 coalitions of sizes 2..N-2: each drawn exactly once
    result = svarm(game, 2**7, seed=3, batch_size=13)
    np.testing.assert_allclose(result.values, game.shapley_values, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(result.stderr, 0.0)
    assert result.info["stopped_by"] == "budget" and result.info["without_replacement"] == [2, 3, 4, 5]
    np.testing.assert_array_equal(result.info["pass_remainders"], 0.0)


def test_a_complete_stratum_is_exact_while_others_are_not():
    # U depends on the coalition at sizes 2 and N-2 only, and on the size alone elsewhere
    n = 8
    rng = np.random.default_rng(2)
    codes = np.arange(2**n)
    sizes = np.array([bin(c).count("1") for c in codes])
    table = np.where(np.isin(sizes, [2, n - 2]), rng.normal(size=2**n), np.sqrt(sizes))
    game = TableGame(table)
    result = svarm(game, 2 * n + 2 + 150, seed=0)
    remainders = np.asarray(result.info["pass_remainders"])  # (sign, player, size 2..6)
    np.testing.assert_array_equal(remainders[:, :, [0, 4]], 0.0)  # sizes 2 and 6 complete (28 coalitions each)
    assert (remainders[:, :, 1:4] > 0).any()  # the middle sizes are not
    np.testing.assert_allclose(result.values, game.shapley_values, rtol=0, atol=1e-12)
    assert result.stderr.max() < 1e-7  # what varies is complete; the rest has no spread


@pytest.mark.parametrize("game", [UNANIMITY, AIRPORT], ids=["unanimity", "airport"])
def test_ten_players_at_a_thousand_evaluations_much_better_than_with_replacement(game, monkeypatch):
    without = median_error(svarm, game, 1_000)
    monkeypatch.setattr(wor, "MAX_STRATUM", 0)
    with_ = median_error(svarm, game, 1_000)
    assert without < 0.25 * with_  # measured 10-17x smaller (0.002-0.005 against 0.04-0.05)
    assert without < 0.01


@pytest.mark.parametrize("name", sorted(SMALL))
def test_seven_players_at_a_hundred_evaluations_better_than_with_replacement(name, monkeypatch):
    game = SMALL[name]
    without = median_error(svarm, game, 100)
    monkeypatch.setattr(wor, "MAX_STRATUM", 0)
    assert without < 0.6 * median_error(svarm, game, 100)  # measured 2.3-2.8x smaller


def test_unbiased_and_its_standard_errors_are_honest():
    truth = AIRPORT8.shapley_values
    runs = [svarm(AIRPORT8, 200, seed=s) for s in range(150)]  # 182 of the 238 coalitions of sizes 2..6
    assert all(r.info["empty_strata"] == 0 for r in runs)
    values = np.array([r.values for r in runs])
    stderr = np.array([r.stderr for r in runs])
    spread = values.std(axis=0)
    assert (np.abs(values.mean(axis=0) - truth) < 4 * spread / np.sqrt(len(runs))).all()  # unbiased
    z = (values - truth) / stderr
    assert 0.8 < z.std() < 1.25
    # without the finite-population correction the standard errors overstate the spread
    plain = np.array([_finalize(r.state, replace(r.record.finalizer, without_replacement=[]), r.record)[1]
                      for r in runs])
    assert (plain.mean(axis=0) > 1.3 * stderr.mean(axis=0)).all()
    assert 0.8 < (spread / stderr.mean(axis=0)).mean() < 1.25


@pytest.mark.slow  # starts a pool of worker processes (loky)
@pytest.mark.parametrize("batch_size", [1, 7, 64, 1_000])
def test_identical_for_any_n_jobs_and_backend(batch_size):
    game = SMALL["unanimity"]
    budget = 110 if batch_size == 1 else 400  # at 400, sizes 2..5 complete and the second passes start
    runs = {"svarm": lambda n_jobs: svarm(game, budget, seed=9, batch_size=batch_size, n_jobs=n_jobs),
            "neyman": lambda n_jobs: svarm(game, budget, seed=9, batch_size=batch_size, n_jobs=n_jobs,
                                           allocation="neyman", pilot=20),
            "group_testing": lambda n_jobs: sr.group_testing_shapley(game, budget, seed=9, batch_size=batch_size,
                                                                     n_jobs=n_jobs)}
    for name, run in runs.items():
        sequential = run(1)
        assert sequential.info["without_replacement"], name
        for backend in ("loky", "threading"):
            with parallel_config(backend=backend):
                parallel = run(2)
            np.testing.assert_array_equal(parallel.values, sequential.values, err_msg=f"{name} {backend}")
            np.testing.assert_array_equal(parallel.stderr, sequential.stderr, err_msg=f"{name} {backend}")


RESUMED = {
    "svarm": lambda g, **kw: svarm(g, 2 * 8 + 2 + 25 * 12, seed=5, batch_size=25, **kw),
    "neyman": lambda g, **kw: svarm(g, 2 * 8 + 2 + 25 * 12, seed=5, batch_size=25, allocation="neyman", **kw),
    "group_testing": lambda g, **kw: sr.group_testing_shapley(g, 2 + 25 * 12, seed=5, batch_size=25, **kw),
    "group_testing_paper": lambda g, **kw: sr.group_testing_shapley(g, 2 + 25 * 12, seed=5, batch_size=25,
                                                                    variant="paper", **kw),
}


@pytest.mark.parametrize("name", sorted(RESUMED))
def test_interrupted_then_resumed_equals_uninterrupted(name, tmp_path):
    game = WeightedVotingGame([4, 3, 3, 2, 2, 1, 1, 1], quota=9)  # 254 coalitions: passes complete and restart
    path = tmp_path / "run.ckpt"
    full = RESUMED[name](game)
    assert full.info["without_replacement"]
    with pytest.raises(Interrupted):
        RESUMED[name](InterruptingGame(game, after=9), checkpoint=path, checkpoint_interval=3600)
    counting = CountingGame(game)
    resumed = RESUMED[name](counting, checkpoint=path)
    assert resumed.info["resumed_samples"] > 0 and counting.rows < full.n_evaluations
    np.testing.assert_array_equal(resumed.values, full.values)
    np.testing.assert_array_equal(resumed.stderr, full.stderr)


def test_a_checkpoint_drawn_with_replacement_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "run.ckpt"
    monkeypatch.setattr(wor, "MAX_STRATUM", 0)
    svarm(UNANIMITY, 500, seed=1, checkpoint=path)
    monkeypatch.undo()
    with pytest.raises(ValueError, match="without_replacement"):
        svarm(UNANIMITY, 500, seed=1, checkpoint=path)


def test_merged_runs_add_their_pass_remainders(monkeypatch):
    a, b = svarm(AIRPORT8, 200, seed=1), svarm(AIRPORT8, 200, seed=2)
    merged = sr.merge_results(a, b)
    np.testing.assert_allclose(merged.info["pass_remainders"],
                               np.asarray(a.info["pass_remainders"]) + np.asarray(b.info["pass_remainders"]))
    assert np.all(merged.stderr < np.maximum(a.stderr, b.stderr))
    assert relative_l2(merged.values, AIRPORT8.shapley_values) < 0.05
    assert "pass_remainders" in sr.merge_results(merged, svarm(AIRPORT8, 200, seed=3)).info  # merges again
    # with a run drawn with replacement, no single correction applies: the merge keeps 1/m (an upper bound)
    monkeypatch.setattr(wor, "MAX_STRATUM", 0)
    mixed = sr.merge_results(a, svarm(AIRPORT8, 200, seed=4))
    assert "pass_remainders" not in mixed.info and mixed.info["without_replacement"] == [[2, 3, 4, 5, 6], []]
    assert np.isfinite(mixed.stderr).all() and (mixed.stderr > 0).all()


# --- group testing ---


@pytest.mark.parametrize("variant, factor", [("improved", 0.9), ("paper", 0.8)])
def test_group_testing_better_than_with_replacement(variant, factor, monkeypatch):
    run = lambda game, budget, seed: sr.group_testing_shapley(game, budget, seed=seed, variant=variant)
    without = [median_error(run, game, 1_000, range(30)) for game in (UNANIMITY, AIRPORT)]
    monkeypatch.setattr(wor, "MAX_STRATUM", 0)
    with_ = [median_error(run, game, 1_000, range(30)) for game in (UNANIMITY, AIRPORT)]
    assert all(w < factor * r for w, r in zip(without, with_))  # measured 1.3-1.4x (improved), 1.6-2.1x (paper)


@pytest.mark.parametrize("variant", ["improved", "paper"])
def test_group_testing_stays_unbiased(variant):
    game = SMALL["unanimity"]
    values = np.array([sr.group_testing_shapley(game, 150, seed=s, variant=variant).values for s in range(150)])
    error = values.mean(axis=0) - game.shapley_values
    assert (np.abs(error) < 4 * values.std(axis=0) / np.sqrt(len(values))).all()


def test_group_testing_tests_take_each_coalition_once_per_pass():
    n = 5  # paper variant: the tests are coalitions of the 5 players, sizes 1..4
    game = RecordingGame(UnanimityGame(n, [[0, 1], [2]], [1.0, 2.0]))
    result = sr.group_testing_shapley(game, 2 + 60, seed=0, variant="paper", batch_size=16)
    assert result.info["without_replacement"] == [1, 2, 3, 4]
    tests = np.concatenate(game.masks[1:])
    for k in range(1, n):
        codes = tests[tests.sum(axis=1) == k].astype(np.int64) @ (1 << np.arange(n))
        full, rest = divmod(codes.size, comb(n, k))
        for p in range(full):  # every complete pass holds each coalition once, the partial one no repeat
            assert np.unique(codes[p * comb(n, k):(p + 1) * comb(n, k)]).size == comb(n, k)
        assert np.unique(codes[full * comb(n, k):]).size == rest


def test_the_order_cache_stays_within_its_bound_and_gives_the_same_orders(monkeypatch):
    monkeypatch.setattr(wor, "_orders", type(wor._orders)())
    monkeypatch.setattr(wor, "_orders_held", [0])
    monkeypatch.setattr(wor, "ORDER_CACHE_ENTRIES", 100)
    first = [wor._order(7, 9, 3, p).copy() for p in range(5)]  # 84 entries each: one fits at a time
    assert len(wor._orders) == 1 and wor._orders_held[0] == 84
    for p in (4, 0, 2):  # evicted or not, an order is a function of its key alone
        np.testing.assert_array_equal(wor._order(7, 9, 3, p), first[p])
    assert wor._orders_held[0] == sum(a.size for a in wor._orders.values()) <= 100
