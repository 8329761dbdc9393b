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
    "group_testing": lambda n_jobs: sr.group_testing_shapley(GAME, 20_002, seed=3, n_jobs=n_jobs,
                                                             batch_size=1_000),
    "group_testing_paper": lambda n_jobs: sr.group_testing_shapley(GAME, 20_002, seed=3, n_jobs=n_jobs,
                                                                   batch_size=1_000, variant="paper"),
    "compressive": lambda n_jobs: sr.compressive_shapley(GAME, 6_002, seed=3, n_jobs=n_jobs, batch_size=20),
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
