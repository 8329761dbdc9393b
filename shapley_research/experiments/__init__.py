"""Experiments reproducing the paper's figures and claims.

Each experiment NAME is ``notebooks/NAME.ipynb`` driven by ``conf/`` and run
with ``shapley-research run NAME``; its logic lives in the package
``shapley_research/experiments/NAME/``, split by role (data and game,
measurement, claims, figures). This package holds the helpers the notebooks
share (:mod:`._common`), the notebook builder (:mod:`._notebook`), the project
layout and DVC conventions (:mod:`._project`) and the comparison of two runs
(:mod:`._compare`).
"""

#: The fixed experiment vocabulary, in the order they are listed.
EXPERIMENT_NAMES = ("iris_accuracy", "runtime_scaling", "sparsity", "ridge_stability", "privacy_noise",
                    "adversarial", "data_cleaning", "mlp_cleaning")

from ._common import (CLAIM_SOURCES, METRICS_FILE, Claim, claim, experiment_dir, is_timing_key,  # noqa: E402
                      progress, read_metrics, save_figure, set_blas_threads, setup_matplotlib, to_jsonable,
                      validate_metrics, without_timings, write_metrics, write_table)
from ._schema import check_notebook_parameters  # noqa: E402

__all__ = [
    "EXPERIMENT_NAMES", "METRICS_FILE", "CLAIM_SOURCES", "Claim", "claim", "experiment_dir", "is_timing_key",
    "progress", "read_metrics", "save_figure", "set_blas_threads", "setup_matplotlib", "to_jsonable",
    "validate_metrics", "without_timings", "write_metrics", "write_table", "check_notebook_parameters",
]
