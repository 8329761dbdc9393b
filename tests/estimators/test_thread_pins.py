"""A batch pin covers the BLAS libraries a batch may load after it was taken.

threadpoolctl limits only the thread pools loaded when a limit is set; SciPy's
wheels bundle a BLAS of their own, which the learners' LAPACK calls load on
first use, so a pin taken before would miss it and LAPACK's rounding would
depend on the machine's cores.
"""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.sampling


def test_scipy_blas_loaded_inside_a_pin_runs_on_the_pinned_threads():
    code = textwrap.dedent("""
        import sys
        import numpy  # numpy's BLAS only: scipy.linalg is not loaded yet
        assert "scipy.linalg" not in sys.modules
        from threadpoolctl import threadpool_info
        from shapley_research._threads import BATCH_THREADS, pinned_threads
        with pinned_threads():
            import scipy.linalg  # what a learner's first LAPACK call does inside a batch
            pools = [(pool["filepath"], pool["num_threads"]) for pool in threadpool_info()
                     if pool["user_api"] == "blas"]
        assert len(pools) >= 1, pools
        assert all(threads == BATCH_THREADS for _, threads in pools), pools
    """)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
