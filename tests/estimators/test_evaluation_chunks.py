"""Batches evaluated in chunks: MSR Banzhaf, group testing and Stratified SVARM draw, evaluate and reduce a
batch of coalitions about 2**22 mask cells at a time, and form the batch's statistics once.

The chunk is shrunk here (``CHUNK_CELLS``) so that small games take many chunks per batch.
"""

from __future__ import annotations

import joblib
import numpy as np
import pytest

from shapley_research import group_testing_shapley, msr_banzhaf, stratified_svarm_shapley
from shapley_research.estimators._sampling import _batches
from shapley_research.estimators._sampling._batches import evaluation_chunks

from games import AdditiveGame, RecordingGame, random_unanimity_game

pytestmark = pytest.mark.sampling

N = 12
CHUNK_ROWS = 7


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of :data:`CHUNK_ROWS` coalitions for a game of :data:`N` players."""
    monkeypatch.setattr(_batches, "CHUNK_CELLS", CHUNK_ROWS * N)


def test_chunks_cover_the_batch_in_order():
    assert list(evaluation_chunks(10, 2**22 // 3)) == [slice(0, 3), slice(3, 6), slice(6, 9), slice(9, 10)]
    assert list(evaluation_chunks(4096, 1024)) == [slice(0, 4096)]  # up to N = 1,024 a default batch is one chunk
    assert list(evaluation_chunks(5, 2**23)) == [slice(i, i + 1) for i in range(5)]  # at least a row each
    assert list(evaluation_chunks(0, 10)) == []


@pytest.mark.parametrize("estimator", [msr_banzhaf, group_testing_shapley, stratified_svarm_shapley])
def test_default_batches_hold_4096_coalitions_or_32n(estimator):
    game = AdditiveGame(np.linspace(-1.0, 1.0, 1500))
    if estimator is stratified_svarm_shapley:  # its O(N^2) statistics are formed once per 32 N coalitions
        expected = 32 * 1500
        budget = 2 * 1500 + 2 + 10
    else:
        expected, budget = 4096, 40
    assert estimator(game, budget, seed=0, progress=False).info["batch_size"] == expected


def _msr_from_coalitions(masks: np.ndarray, utilities: np.ndarray) -> np.ndarray:
    """MSR Banzhaf values from the evaluated coalitions, by its formula (mean in minus mean out)."""
    inside = masks.astype(float)
    return inside.T @ utilities / inside.sum(axis=0) - (1 - inside).T @ utilities / (1 - inside).sum(axis=0)


def test_msr_in_chunks_is_its_formula_on_the_coalitions_evaluated(small_chunks):
    game = RecordingGame(random_unanimity_game(N, 8, 4, seed=2))
    result = msr_banzhaf(game, 300, seed=1, batch_size=64, progress=False)
    masks = np.concatenate(game.masks)
    assert max(m.shape[0] for m in game.masks) == CHUNK_ROWS
    assert masks.shape[0] == result.n_evaluations == 300
    np.testing.assert_allclose(result.values, _msr_from_coalitions(masks, game.game.evaluate(masks)),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("estimator, kwargs", [
    (msr_banzhaf, {}),
    (group_testing_shapley, {}),
    (group_testing_shapley, {"variant": "paper"}),
    (group_testing_shapley, {"sampling": "independent"}),
    (stratified_svarm_shapley, {}),
    (stratified_svarm_shapley, {"allocation": "neyman"}),
])
def test_chunked_batches_evaluate_in_chunks_and_do_not_depend_on_n_jobs(small_chunks, estimator, kwargs):
    game = RecordingGame(random_unanimity_game(N, 8, 4, seed=2))
    first = estimator(game, 400, seed=5, batch_size=50, progress=False, **kwargs)
    sampled = game.masks[2 * N + 1:] if estimator is stratified_svarm_shapley else game.masks  # after the exact strata
    assert max(m.shape[0] for m in sampled) <= max(CHUNK_ROWS, 2)  # the anchors come in one call of two
    assert sum(m.shape[0] for m in game.masks) == first.n_evaluations
    with joblib.parallel_config(backend="threading"):  # workers of this process see the small chunks
        again = estimator(game.game, 400, seed=5, batch_size=50, n_jobs=2, progress=False, **kwargs)
    np.testing.assert_array_equal(first.values, again.values)
    np.testing.assert_array_equal(first.stderr, again.stderr)


@pytest.mark.parametrize("estimator", [group_testing_shapley, stratified_svarm_shapley, msr_banzhaf])
def test_chunked_batches_still_converge(small_chunks, estimator):
    """The chunked batches are still unbiased draws: at a large budget the estimate nears the truth."""
    game = AdditiveGame(np.linspace(-1.0, 2.0, N))  # Shapley and Banzhaf values are the weights
    result = estimator(game, 20_000, seed=3, progress=False)
    np.testing.assert_allclose(result.values, game.shapley_values, atol=0.1)
