"""Experiments reproducing the paper's figures and claims.

Each experiment NAME is ``notebooks/NAME.ipynb`` driven by ``conf/`` and run
with ``shapley-research run NAME``; its logic lives in the package
``shapley_research/experiments/NAME/``, split by role (data and game,
measurement, claims, figures). This package holds the helpers the notebooks
share (:mod:`._common`), the notebook builder (:mod:`._notebook`), the project
layout and DVC conventions (:mod:`._project`, :mod:`._dvc_stages`), the comparison of two runs
(:mod:`._compare`), where runs write (:mod:`._paths`), the budgets checked
against the data (:mod:`._budgets`), the registry of the methods run by name
(:mod:`._methods`), the results report (:mod:`._report`), the parameter
declarations (:mod:`._schema`) and the verdicts on intervals over repetitions
(:mod:`._verdicts`); the names the command line needs are exported here, with
the helpers an experiment (or a new one) builds on: the verdict helpers
(:func:`interval_verdict`, :func:`family_verdicts`, :func:`holm`, ...), the
smallest budgets (:func:`smallest_budget`, :func:`budget_problems`) and the
notebook builder (:func:`build_notebook`, :func:`write_notebook`,
:func:`notebook_defaults`).
"""

#: The fixed experiment vocabulary, in the order they are listed.
EXPERIMENT_NAMES = ("iris_accuracy", "runtime_scaling", "sparsity", "ridge_stability", "privacy_noise",
                    "adversarial", "data_cleaning", "mlp_cleaning")

from ._common import (CLAIM_SOURCES, METRICS_FILE, Claim, claim, counts_as_evidence, experiment_dir,  # noqa: E402
                      held_count, is_timing_key, progress, read_metrics, set_blas_threads, to_jsonable,
                      undecided_count, validate_metrics, verdict_of, without_timings, write_metrics, write_table)
from ._figures import FIGURES_ENV, figures_enabled, save_figure, setup_matplotlib  # noqa: E402
from ._budgets import all_s_minimum, budget_problems, smallest_budget  # noqa: E402
from ._compare import (comparison_report, compare_runs, provenance_differences, setting_differences,  # noqa: E402
                       verdict_changes)
from ._methods import (Method, MethodCall, get_method, method_defaults, method_names,  # noqa: E402
                       register_method, unregister_method)
from ._notebook import (build_notebook, clear_earlier_run, folder_state, notebook_defaults,  # noqa: E402
                        parameters_cell, parameters_source, provenance, run_info, write_notebook,
                        write_parameters_cell, written_since)
from ._parallel import check_n_jobs, parallel_map  # noqa: E402
from ._paths import project_relative, results_guard, shown_path, working_directory  # noqa: E402
from ._project import (CUSTOM_PROFILE, RESULTS_DIR, RUNNER_ENV, SCRATCH_DIR, UPDATE_RESULTS_ENV,  # noqa: E402
                       Project, ProjectError, check_declared, check_name, check_notebook_in_sync,
                       find_project_dir, generated_parameters, notebook_parameters, notebook_sync_problems,
                       profile_key_problems, profile_of, run_profile, user_sets)
from ._dvc_stages import dvc_stage, write_dvc_stage  # noqa: E402
from ._report import (CITED_PAPERS_EXPERIMENTS, RUN_INFO_FILE, claim_line, is_claim_output,  # noqa: E402
                      print_claims, write_report)
from ._schema import (check_notebook_parameters, check_parameters, declaration_problems,  # noqa: E402
                      unknown_parameter_problems)
from ._verdicts import (combine, describe, family_verdicts, holm, holm_adjusted, interval_verdict,  # noqa: E402
                        mean_interval, wrong_side_p)

__all__ = [
    "EXPERIMENT_NAMES", "METRICS_FILE", "CLAIM_SOURCES", "Claim", "claim", "experiment_dir", "is_timing_key",
    "progress", "read_metrics", "save_figure", "set_blas_threads", "setup_matplotlib", "to_jsonable",
    "validate_metrics", "without_timings", "write_metrics", "write_table", "check_notebook_parameters",
    # what the command line (shapley_research.cli) drives: verdict counts, comparison, parameters cells, the
    # project layout and DVC stages, the report, the parameter checks
    "held_count", "undecided_count", "verdict_of", "counts_as_evidence", "claim_line", "print_claims",
    "is_claim_output",
    "compare_runs", "provenance_differences", "setting_differences", "verdict_changes", "comparison_report",
    "parameters_cell", "parameters_source", "write_parameters_cell", "provenance", "run_info",
    "folder_state", "written_since", "clear_earlier_run",
    "results_guard", "shown_path", "project_relative", "working_directory", "RESULTS_DIR", "SCRATCH_DIR",
    "UPDATE_RESULTS_ENV", "user_sets", "FIGURES_ENV", "figures_enabled",
    "RUNNER_ENV", "Project", "ProjectError", "check_declared", "check_name", "check_notebook_in_sync", "dvc_stage",
    "generated_parameters", "notebook_parameters", "profile_key_problems", "run_profile", "write_dvc_stage",
    "CITED_PAPERS_EXPERIMENTS", "RUN_INFO_FILE", "write_report", "check_parameters", "declaration_problems",
    # the registry of the methods the experiments run by name (:mod:`._methods`)
    "Method", "MethodCall", "get_method", "method_defaults", "method_names", "register_method",
    "unregister_method",
    # the experiments' one way to spread tasks over joblib workers (:mod:`._parallel`)
    "parallel_map", "check_n_jobs",
    # the project layout beyond the command line: where the project is, which profile ran, sync and name checks
    "find_project_dir", "CUSTOM_PROFILE", "profile_of", "notebook_sync_problems", "unknown_parameter_problems",
    # the notebook builder (an experiment's notebook, or a test project's)
    "build_notebook", "write_notebook", "notebook_defaults",
    # the smallest budgets, checked against the data before a run (:mod:`._budgets`)
    "smallest_budget", "all_s_minimum", "budget_problems",
    # verdicts on intervals over repetitions, and Holm's correction of a family of them (:mod:`._verdicts`)
    "mean_interval", "interval_verdict", "wrong_side_p", "holm", "holm_adjusted", "family_verdicts", "combine",
    "describe",
]
