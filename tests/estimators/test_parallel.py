"""The same seed gives the same values whatever the parallel backend: sequential, joblib
processes (loky) and a Dask cluster through joblib's dask backend.

Batches draw from their own seed streams and are merged in batch order, so where a batch
runs cannot change a single bit of the result.
"""

import numpy as np
import pytest
from joblib import parallel_config

import shapley_research as sr

pytestmark = [pytest.mark.slow, pytest.mark.sampling]  # process pools and a Dask cluster; the batches must sample

distributed = pytest.importorskip("distributed")

WEIGHTS = np.linspace(0.0, 1.0, 30)


def saturating(masks):
    """A cheap non-additive game (module level, so every backend can pickle it)."""
    return masks @ WEIGHTS + np.sqrt(masks.sum(axis=1))


GAME = sr.as_game(saturating, 30, vectorized=True)
LONG_WEIGHTS = np.linspace(0.0, 1.0, 600)


def saturating_long(masks):
    """:func:`saturating` on 600 players: position adjustment's state is then merged by the compiled pass."""
    return masks @ LONG_WEIGHTS + np.sqrt(masks.sum(axis=1))


LONG_GAME = sr.as_game(saturating_long, 600, vectorized=True)
RUNS = {
    "permutation": lambda n_jobs: sr.permutation_shapley(GAME, 30_001, seed=3, n_jobs=n_jobs, batch_size=50),
    "antithetic": lambda n_jobs: sr.permutation_shapley(GAME, 30_001, seed=3, n_jobs=n_jobs, batch_size=25,
                                                        antithetic=True),
    "rotations": lambda n_jobs: sr.permutation_shapley(GAME, 30_001, seed=3, n_jobs=n_jobs, batch_size=10,
                                                       rotations=5),
    "position_adjusted": lambda n_jobs: sr.permutation_shapley(GAME, 30_001, seed=3, n_jobs=n_jobs,
                                                               batch_size=25, antithetic=True,
                                                               position_adjustment=True),
    "position_adjusted_long": lambda n_jobs: sr.permutation_shapley(LONG_GAME, 1 + 2 * 600 * 8, seed=3,
                                                                    n_jobs=n_jobs, batch_size=3, antithetic=True,
                                                                    position_adjustment=True),
    "group_testing": lambda n_jobs: sr.group_testing_shapley(GAME, 20_002, seed=3, n_jobs=n_jobs,
                                                             batch_size=1_000),
    "group_testing_paper": lambda n_jobs: sr.group_testing_shapley(GAME, 20_002, seed=3, n_jobs=n_jobs,
                                                                   batch_size=1_000, variant="paper"),
    "compressive": lambda n_jobs: sr.compressive_shapley(GAME, 6_002, seed=3, n_jobs=n_jobs, batch_size=20),
    "svarm": lambda n_jobs: sr.stratified_svarm_shapley(GAME, 20_062, seed=3, n_jobs=n_jobs, batch_size=1_000),
    # GAME has no evaluate_prefixes, so truncation may skip prefixes; the savings buy batches in later rounds
    "truncated": lambda n_jobs: sr.permutation_shapley(GAME, 30_002, seed=3, n_jobs=n_jobs, batch_size=50,
                                                       truncation=0.2),
    "msr_banzhaf": lambda n_jobs: sr.msr_banzhaf(GAME, 20_000, seed=3, n_jobs=n_jobs, batch_size=1_000),
    "kernel": lambda n_jobs: sr.unbiased_kernel_shapley(GAME, 20_002, seed=3, n_jobs=n_jobs, batch_size=1_000),
    "owen": lambda n_jobs: sr.owen_shapley(GAME, 4 * 31 * 160, seed=3, n_jobs=n_jobs, batch_size=10),
    "kernel_regression": lambda n_jobs: sr.kernel_shapley(GAME, 20_002, seed=3, n_jobs=n_jobs, batch_size=1_000),
    "leverage": lambda n_jobs: sr.leverage_shapley(GAME, 20_002, seed=3, n_jobs=n_jobs, batch_size=1_000),
    # Beta(16, 1): units of at most 33 evaluations at N = 30, plus U(empty) and U(D)
    "beta_shapley": lambda n_jobs: sr.beta_shapley(GAME, 2 + 33 * 1_000, seed=3, n_jobs=n_jobs, batch_size=50),
    "beta_shapley_1_1": lambda n_jobs: sr.beta_shapley(GAME, 30_001, seed=3, alpha=1, beta=1, n_jobs=n_jobs,
                                                       batch_size=50),
}


REPLICAS = 48
READOUT = np.random.default_rng(7).normal(size=(REPLICAS * 61, 16)) / 40


def blas_bound(masks):
    """A game whose utilities move in the last bits with the number of BLAS threads.

    Its product has inner dimension ``48 N`` (OpenBLAS splits such products
    differently over 1 and 2 threads); joblib's workers run with fewer threads
    than the parent, so without pinning the batches' threads the values of
    every estimator differed between ``n_jobs=1`` and ``n_jobs=2`` by 1e-16 to 1e-14.
    """
    wide = np.repeat(masks, REPLICAS, axis=1).astype(float)
    return np.tanh(wide @ READOUT[:wide.shape[1]]).sum(axis=1)


def blas_runs(n_players: int) -> dict:
    """Every sampling estimator on :func:`blas_bound` with ``n_players``, in batches that split unevenly."""
    game = sr.as_game(blas_bound, n_players, vectorized=True)
    n = n_players
    return {
        "permutation": lambda n_jobs: sr.permutation_shapley(game, 37 * n + 1, seed=5, n_jobs=n_jobs, batch_size=7),
        "antithetic_adjusted": lambda n_jobs: sr.permutation_shapley(
            game, 38 * n + 1, seed=5, n_jobs=n_jobs, batch_size=6, antithetic=True, position_adjustment=True),
        "rotations": lambda n_jobs: sr.permutation_shapley(game, 36 * n + 1, seed=5, n_jobs=n_jobs, batch_size=5,
                                                           rotations=3),
        "group_testing": lambda n_jobs: sr.group_testing_shapley(game, 3_001, seed=5, n_jobs=n_jobs,
                                                                 batch_size=700),
        "group_testing_paper": lambda n_jobs: sr.group_testing_shapley(game, 3_001, seed=5, n_jobs=n_jobs,
                                                                       batch_size=700, variant="paper"),
        "compressive": lambda n_jobs: sr.compressive_shapley(game, 37 * n + 2, seed=5, n_jobs=n_jobs, batch_size=9),
        "svarm": lambda n_jobs: sr.stratified_svarm_shapley(game, 3_001 + 2 * n, seed=5, n_jobs=n_jobs,
                                                            batch_size=700),
        "svarm_neyman": lambda n_jobs: sr.stratified_svarm_shapley(game, 3_001 + 7 * n, seed=5, n_jobs=n_jobs,
                                                                   batch_size=300, allocation="neyman"),
        "truncated": lambda n_jobs: sr.permutation_shapley(game, 37 * n + 2, seed=5, n_jobs=n_jobs, batch_size=7,
                                                           truncation=0.2),
        "msr_banzhaf": lambda n_jobs: sr.msr_banzhaf(game, 3_001, seed=5, n_jobs=n_jobs, batch_size=700),
        "kernel": lambda n_jobs: sr.unbiased_kernel_shapley(game, 3_002, seed=5, n_jobs=n_jobs, batch_size=350),
        "owen": lambda n_jobs: sr.owen_shapley(game, 4 * (n + 1) * 37, seed=5, n_jobs=n_jobs, batch_size=7,
                                               antithetic=True),
        "kernel_regression": lambda n_jobs: sr.kernel_shapley(game, 3_002, seed=5, n_jobs=n_jobs, batch_size=350),
        "leverage": lambda n_jobs: sr.leverage_shapley(game, 3_002, seed=5, n_jobs=n_jobs, batch_size=350),
        "beta_shapley": lambda n_jobs: sr.beta_shapley(game, 37 * (n + 3) + 2, seed=5, n_jobs=n_jobs, batch_size=7),
    }


def assert_identical(result, reference):
    np.testing.assert_array_equal(result.values, reference.values)
    assert result.n_evaluations == reference.n_evaluations and result.n_samples == reference.n_samples
    if reference.stderr is not None:
        np.testing.assert_array_equal(result.stderr, reference.stderr)


@pytest.mark.parametrize("n_players", [7, 61])
def test_bit_identical_where_blas_threads_would_change_the_rounding(n_players, dask_client):
    """Every sampling estimator, sequential = loky (2 workers) = threads = Dask, on a BLAS-bound game."""
    for run in blas_runs(n_players).values():
        sequential = run(1)
        assert_identical(run(2), sequential)
        with parallel_config(backend="threading"):
            assert_identical(run(2), sequential)
        with parallel_config(backend="dask"):
            assert_identical(run(2), sequential)


def test_a_backend_that_cannot_stream_results_gives_the_same_bits():
    """A backend without ``return_as="generator"`` (joblib's ``multiprocessing``) gets groups of calls: same bits.

    Here a threading backend that says it cannot stream: joblib's ``multiprocessing`` forks, and forking
    this process (a Dask cluster's threads, a previous pool's) can copy a held lock and deadlock.
    """
    from joblib import Parallel, register_parallel_backend
    from joblib._parallel_backends import ThreadingBackend
    from sklearn.linear_model import LogisticRegression

    from shapley_research.experiments import parallel_map

    class NotStreaming(ThreadingBackend):
        supports_return_generator = False

    register_parallel_backend("not_streaming", NotStreaming)
    runs = blas_runs(7)
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    runs["data_oob"] = lambda n_jobs: sr.data_oob(LogisticRegression(), X, y, n_estimators=20, seed=1, n_jobs=n_jobs)
    sequential = {name: run(1) for name, run in runs.items()}
    with parallel_config(backend="not_streaming"):
        with pytest.raises(ValueError, match="return_as"):  # what ordered_map falls back from
            Parallel(n_jobs=2, return_as="generator")
        for name, run in runs.items():
            assert_identical(run(2), sequential[name])
        assert parallel_map(abs, [(-i,) for i in range(7)], n_jobs=2) == list(range(7))


def test_pinned_threads_nest_and_restore():
    from threadpoolctl import threadpool_info

    from shapley_research.estimators._sampling._loop import BATCH_THREADS, pinned_threads

    with pinned_threads():  # the first pin may load scipy's BLAS: take "before" once it is loaded
        pass
    before = {pool["filepath"]: pool["num_threads"] for pool in threadpool_info()}
    with pinned_threads():
        with pinned_threads():
            assert all(pool["num_threads"] == BATCH_THREADS for pool in threadpool_info())
        assert all(pool["num_threads"] == BATCH_THREADS for pool in threadpool_info())
    assert {pool["filepath"]: pool["num_threads"] for pool in threadpool_info()} == before


@pytest.fixture(scope="module")
def dask_client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.mark.parametrize("name", sorted(RUNS))
def test_identical_for_sequential_processes_and_dask(name, dask_client):
    sequential = RUNS[name](1)
    processes = RUNS[name](2)
    with parallel_config(backend="dask"), distributed.get_task_stream(dask_client) as tasks:
        on_dask = RUNS[name](2)
    assert tasks.data, "no task ran on the Dask cluster"
    for result in (processes, on_dask):
        np.testing.assert_array_equal(result.values, sequential.values)
        assert result.n_evaluations == sequential.n_evaluations and result.n_samples == sequential.n_samples
        if sequential.stderr is not None:
            np.testing.assert_array_equal(result.stderr, sequential.stderr)
    # nthreads() asks the scheduler; scheduler_info() can return the client's periodic cache, which lists no workers
    assert len(dask_client.nthreads()) == 2, "a Dask worker died during the run"


def test_model_utility_fits_in_parallel_with_identical_utilities(dask_client):
    """ModelUtility(n_jobs=...) fits the coalitions of one evaluate call on joblib workers."""
    from sklearn.datasets import load_iris
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    masks = rng.random((40, 75)) < 0.5
    masks[0] = False  # a degenerate coalition keeps its convention in the parallel path

    def utility(n_jobs):
        return sr.ModelUtility(DecisionTreeClassifier(random_state=0), X[::2], y[::2], X[1::2], y[1::2],
                               n_jobs=n_jobs)

    sequential = utility(None)
    expected = sequential.evaluate(masks)
    processes = utility(2)
    np.testing.assert_array_equal(processes.evaluate(masks), expected)
    assert processes.n_fits == sequential.n_fits == 39
    with parallel_config(backend="dask"), distributed.get_task_stream(dask_client) as tasks:
        on_dask = utility(2).evaluate(masks)
    assert tasks.data, "no fit ran on the Dask cluster"
    np.testing.assert_array_equal(on_dask, expected)
    with pytest.raises(ValueError, match="n_jobs must be"):
        utility(0)
