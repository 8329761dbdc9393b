"""The same seed gives the same values whatever the parallel backend: sequential, joblib
processes (loky) and a Dask cluster through joblib's dask backend.

Batches draw from their own seed streams and are merged in batch order, so where a batch
runs cannot change a single bit of the result.
"""

import numpy as np
import pytest
from joblib import parallel_config

import shapley_research as sr

distributed = pytest.importorskip("distributed")

WEIGHTS = np.linspace(0.0, 1.0, 30)


def saturating(masks):
    """A cheap non-additive game (module level, so every backend can pickle it)."""
    return masks @ WEIGHTS + np.sqrt(masks.sum(axis=1))


GAME = sr.as_game(saturating, 30, vectorized=True)
RUNS = {
    "permutation": lambda n_jobs: sr.permutation_shapley(GAME, 30_001, seed=3, n_jobs=n_jobs, batch_size=50),
    "antithetic": lambda n_jobs: sr.permutation_shapley(GAME, 30_001, seed=3, n_jobs=n_jobs, batch_size=25,
                                                        antithetic=True),
    "rotations": lambda n_jobs: sr.permutation_shapley(GAME, 30_001, seed=3, n_jobs=n_jobs, batch_size=10,
                                                       rotations=5),
    "position_adjusted": lambda n_jobs: sr.permutation_shapley(GAME, 30_001, seed=3, n_jobs=n_jobs,
                                                               batch_size=25, antithetic=True,
                                                               position_adjustment=True),
    "group_testing": lambda n_jobs: sr.group_testing_shapley(GAME, 20_002, seed=3, n_jobs=n_jobs,
                                                             batch_size=1_000),
    "group_testing_paper": lambda n_jobs: sr.group_testing_shapley(GAME, 20_002, seed=3, n_jobs=n_jobs,
                                                                   batch_size=1_000, variant="paper"),
    "compressive": lambda n_jobs: sr.compressive_shapley(GAME, 6_002, seed=3, n_jobs=n_jobs, batch_size=20),
    "svarm": lambda n_jobs: sr.stratified_svarm_shapley(GAME, 20_062, seed=3, n_jobs=n_jobs, batch_size=1_000),
}


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
    assert len(dask_client.scheduler_info()["workers"]) == 2


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
