"""Experiments reproducing the paper's figures and claims.

Each experiment NAME is ``notebooks/NAME.ipynb`` driven by ``conf/`` and run
with ``shapley-research run NAME``; its logic lives in the package
``shapley_research/experiments/NAME/``, split by role (data and game,
measurement, claims, figures). This package holds the helpers the notebooks
share (:mod:`._common`), the notebook builder (:mod:`._notebook`), the project
layout and DVC conventions (:mod:`._project`), the comparison of two runs
(:mod:`._compare`), where runs write (:mod:`._paths`), the budgets checked
against the data (:mod:`._budgets`), the registry of the methods run by name
(:mod:`._methods`), the results report (:mod:`._report`) and the parameter
declarations (:mod:`._schema`); the names the command line needs are
exported here.
"""

#: The fixed experiment vocabulary, in the order they are listed.
EXPERIMENT_NAMES = ("iris_accuracy", "runtime_scaling", "sparsity", "ridge_stability", "privacy_noise",
                    "adversarial", "data_cleaning", "mlp_cleaning")

from ._common import (CLAIM_SOURCES, METRICS_FILE, Claim, claim, experiment_dir, held_count,  # noqa: E402
                      is_timing_key, progress, read_metrics, save_figure, set_blas_threads, setup_matplotlib,
                      to_jsonable, undecided_count, validate_metrics, verdict_of, without_timings, write_metrics,
                      write_table)
from ._compare import compare_runs, provenance_differences  # noqa: E402
from ._methods import (Method, MethodCall, get_method, method_defaults, method_names,  # noqa: E402
                       register_method, unregister_method)
from ._notebook import parameters_cell, parameters_source, provenance, run_info, write_parameters_cell  # noqa: E402
from ._paths import results_guard, shown_path  # noqa: E402
from ._project import (RESULTS_DIR, RUNNER_ENV, SCRATCH_DIR, UPDATE_RESULTS_ENV, Project,  # noqa: E402
                       ProjectError, check_declared, check_name, check_notebook_in_sync, dvc_stage,
                       generated_parameters, notebook_parameters, profile_key_problems, run_profile, user_sets,
                       write_dvc_stage)
from ._report import CITED_PAPERS_EXPERIMENTS, RUN_INFO_FILE, write_report  # noqa: E402
from ._schema import check_notebook_parameters, check_parameters, declaration_problems  # noqa: E402

__all__ = [
    "EXPERIMENT_NAMES", "METRICS_FILE", "CLAIM_SOURCES", "Claim", "claim", "experiment_dir", "is_timing_key",
    "progress", "read_metrics", "save_figure", "set_blas_threads", "setup_matplotlib", "to_jsonable",
    "validate_metrics", "without_timings", "write_metrics", "write_table", "check_notebook_parameters",
    # what the command line (shapley_research.cli) drives: verdict counts, comparison, parameters cells, the
    # project layout and DVC stages, the report, the parameter checks
    "held_count", "undecided_count", "verdict_of", "compare_runs", "provenance_differences",
    "parameters_cell", "parameters_source", "write_parameters_cell", "provenance", "run_info",
    "results_guard", "shown_path", "RESULTS_DIR", "SCRATCH_DIR", "UPDATE_RESULTS_ENV", "user_sets",
    "RUNNER_ENV", "Project", "ProjectError", "check_declared", "check_name", "check_notebook_in_sync", "dvc_stage",
    "generated_parameters", "notebook_parameters", "profile_key_problems", "run_profile", "write_dvc_stage",
    "CITED_PAPERS_EXPERIMENTS", "RUN_INFO_FILE", "write_report", "check_parameters", "declaration_problems",
    # the registry of the methods the experiments run by name (:mod:`._methods`)
    "Method", "MethodCall", "get_method", "method_defaults", "method_names", "register_method",
    "unregister_method",
]
