"""The named units that permutation_shapley composes: antithetic pairs, rotations, position adjustment,
the truncation tally, the variant's costs and options, and the batches they make."""

import numpy as np
import pytest

from shapley_research import (as_game, group_testing_shapley, permutation_shapley, random_unanimity_sum,
                              stratified_svarm_shapley)
from shapley_research.estimators import _position_effects, marginal_contributions, random_permutations
from shapley_research.estimators._permutation import PermutationBatches
from shapley_research.estimators._permutation_variants import (PermutationVariant, over_rotations, rotation_of,
                                                               with_reverses)
from shapley_research.estimators._sampling._loop import Anchors, MeanState
from shapley_research.estimators._truncation import TALLY, append_tally, split_tally

pytestmark = pytest.mark.sampling  # the samplers themselves, on small games: the exact shortcut stays off

N = 7


def _along(perms):
    """Contributions that record the permutation itself, so the units' bookkeeping is visible."""
    phi = perms.astype(float)
    return phi, np.full(len(perms), N), np.full(len(perms), N, dtype=np.int64)


def test_with_reverses_averages_each_permutation_with_its_reverse():
    perms = random_permutations(np.random.default_rng(0), 5, N)
    phi, stops, made = with_reverses(_along, perms)
    assert np.array_equal(phi, 0.5 * (perms + perms[:, ::-1]))
    assert np.array_equal(stops, np.full(5, N)) and np.array_equal(made, np.full(5, 2 * N))


def test_rotation_of_shifts_each_row_by_evenly_spaced_offsets():
    perms = random_permutations(np.random.default_rng(1), 4, N)
    phase = np.array([0, 1, 5, 6])
    for j in range(3):
        rotated = rotation_of(perms, phase, j, 3)
        for t in range(4):
            assert np.array_equal(rotated[t], np.roll(perms[t], -((phase[t] + j * N // 3) % N)))
            assert sorted(rotated[t]) == list(range(N))


def test_over_rotations_averages_contributions_and_sums_evaluations():
    perms = random_permutations(np.random.default_rng(2), 3, N)
    phase = np.array([2, 0, 4])
    phi, stops, made = over_rotations(_along, perms, phase, 2)
    expected = (rotation_of(perms, phase, 0, 2) + rotation_of(perms, phase, 1, 2)) / 2
    assert np.allclose(phi, expected)
    assert np.array_equal(stops, np.full(3, N)) and np.array_equal(made, np.full(3, 2 * N))


def test_reduce_by_position_is_the_batch_state_at_each_players_position():
    perms = random_permutations(np.random.default_rng(3), 6, N)
    positions = _position_effects.player_positions(perms)
    assert all(perms[t, positions[t, i]] == i for t in range(6) for i in range(N))
    bins, n_bins = _position_effects.position_bins(N, False)
    phi = np.random.default_rng(4).normal(size=(6, N))
    reduced = _position_effects.reduce_by_position(phi, perms, bins, n_bins).moments()
    direct = _position_effects.batch_state(phi, positions, bins, n_bins)
    assert np.array_equal(reduced.mean, direct.mean) and np.array_equal(reduced.m2, direct.m2)
    assert reduced.count == direct.count == 6 and reduced.dim == direct.dim


@pytest.mark.parametrize("as_state", [False, True])
def test_the_truncation_tally_is_appended_and_split_off(as_state):
    samples = np.arange(12.0).reshape(4, 3)
    stops, made = np.array([3, 1, 2, 3]), np.array([3, 2, 3, 3])
    batch = MeanState(3) if as_state else samples
    if as_state:
        batch.add_batch(samples)
    tallied = append_tally(batch, stops, made)
    state = tallied if as_state else MeanState(3 + TALLY)
    if not as_state:
        assert tallied.shape == (4, 3 + TALLY)
        state.add_batch(tallied)
    rest, updates = split_tally(state, evaluations_per_unit=3)
    assert np.allclose(rest.mean, samples.mean(axis=0)) and rest.dim == 3
    assert updates == {"mean_truncation_position": pytest.approx(2.25), "evaluations_saved": 12 - 11}


def test_a_variant_knows_its_costs_names_options_and_layout():
    plain = PermutationVariant(N)
    assert (plain.permutations_per_unit, plain.evaluations_per_unit, plain.unit_name, plain.progress_unit) == (
        1, N, "permutation", "perm")
    assert plain.options() == {"antithetic": False} and plain.state_dim() == N and not plain.stops_early
    pairs = PermutationVariant(N, antithetic=True, rotations=3)
    assert pairs.evaluations_per_unit == 6 * N and pairs.progress_unit == "group"
    assert pairs.unit_name == "group of 3 rotated antithetic pairs"
    assert pairs.options() == {"antithetic": True, "rotations": 3}
    adjusted = PermutationVariant(N, position_adjustment=True, truncation=0.0)
    _, n_bins = adjusted.position_bins()
    assert adjusted.state_dim() == 2 * N * n_bins + TALLY and not adjusted.stops_early
    assert list(adjusted.options()) == ["antithetic", "position_adjustment", "truncation"]
    truncated = PermutationVariant(N, truncation=0.2)
    assert truncated.stops_early and truncated.batch_size(None, 320) == 10 and truncated.batch_size(7, 320) == 7


@pytest.mark.parametrize("kwargs, match", [
    ({"rotations": N + 1}, "rotations must be between 1"),
    ({"rotations": 2, "position_adjustment": True}, "cannot be combined"),
    ({"truncation": 1.0}, "truncation must be in"),
    ({"antithetic": "yes"}, "antithetic"),
])
def test_check_variant_names_the_bad_argument(kwargs, match):
    game = random_unanimity_sum(N, seed=0)
    arguments = {"antithetic": False, "rotations": 1, "position_adjustment": False, "truncation": None, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        permutation_shapley(as_game(game.evaluate, N, vectorized=True), 1 + 10 * N, 0, **arguments)


def test_the_batches_of_a_plain_variant_are_the_marginal_contributions():
    game = random_unanimity_sum(N, seed=1)
    batches = PermutationBatches(game, PermutationVariant(N), Anchors(0.0, float("nan"), 1))
    phi, evaluations = batches(np.random.default_rng(5), 4)
    perms = random_permutations(np.random.default_rng(5), 4, N)
    assert np.array_equal(phi, marginal_contributions(game, perms, 0.0)) and evaluations == 4 * N


@pytest.mark.slow  # starts a pool of worker processes (loky)
@pytest.mark.parametrize("kwargs", [{}, {"antithetic": True, "position_adjustment": True}, {"rotations": 3},
                                    {"truncation": 0.1, "antithetic": True}])
def test_the_batches_pickle_and_give_the_same_values_in_parallel(kwargs):
    game = random_unanimity_sum(12, seed=2)
    game = as_game(game.evaluate, 12, vectorized=True) if "truncation" in kwargs else game
    one = permutation_shapley(game, 1200, 3, batch_size=8, **kwargs)
    two = permutation_shapley(game, 1200, 3, batch_size=8, n_jobs=2, **kwargs)
    assert np.array_equal(one.values, two.values) and np.array_equal(one.stderr, two.stderr)
    assert one.n_evaluations == two.n_evaluations


def test_svarm_units_count_the_sampled_coalitions_and_merge_the_pilot_first():
    from shapley_research.estimators._svarm import _check_allocation, _with_pilot

    six, three = random_unanimity_sum(6, seed=0), random_unanimity_sum(3, seed=0)
    assert stratified_svarm_shapley(six, 100, 0).n_samples == 100 - (2 * 6 + 2)
    assert stratified_svarm_shapley(three, 8, 0).n_samples == 0
    assert stratified_svarm_shapley(three, None, 0, target_stderr=0.1).n_samples == 0
    with pytest.raises(ValueError, match="exact strata of a 3-player game"):
        stratified_svarm_shapley(three, 7, 0)
    assert _check_allocation("svarm", None, 6) == ("svarm", 30)
    with pytest.raises(ValueError, match="pilot sets the pilot"):
        stratified_svarm_shapley(six, 100, 0, allocation="svarm", pilot=10)
    head, rest = MeanState(2), MeanState(2)
    head.add_batch(np.array([[1.0, 2.0], [3.0, 4.0]]))
    rest.add_batch(np.array([[5.0, 6.0]]))
    assert _with_pilot(None, rest) is rest
    both = _with_pilot(head, rest)
    assert both.count == 3 and np.allclose(both.mean, [3.0, 4.0]) and head.count == 2 and rest.count == 1


def test_group_testing_options_default_the_centering_by_variant():
    game = random_unanimity_sum(N, seed=0)
    info = group_testing_shapley(game, 100, 0, variant="improved", recovery="closed_form", solver="ANY").info
    assert (info["variant"], info["centering"], info["recovery"], info["solver"]) == (
        "improved", "linear", "closed_form", "ANY")
    assert group_testing_shapley(game, 100, 0, variant="paper", recovery="closed_form", solver="ANY").info[
        "centering"] == "none"
    with pytest.raises(ValueError, match="variant"):
        group_testing_shapley(game, 100, 0, variant="other", recovery="closed_form", solver="ANY")


def test_homotopy_steps_find_the_first_drop_and_the_crossing():
    from shapley_research.estimators._l1_homotopy import _crossing, _first_drop

    coef, w = np.array([1.0, -2.0, 0.5, 3.0]), np.array([-1.0, 1.0, 1.0, 0.0])
    assert _first_drop(coef, w, 4, 1e-12) == (0, 1.0)  # coef + g w = 0 first at g = 1 (entry 0); entry 1 at 2
    assert _first_drop(coef, w, 0, 1e-12)[0] == -1
    pair = np.array([[3.0, 4.0], [0.6, 0.8]])  # residual of norm 5 along its own direction
    g = _crossing(pair, 1.0)
    assert np.isclose(np.linalg.norm(pair[0] - g * pair[1]), 1.0) and np.isclose(g, 4.0)
    assert _crossing(pair, 0.0) == np.inf
