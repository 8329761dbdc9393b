"""Command line (``python -m shapley_research.experiments.adversarial generate``): generate the cached sets."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from typing import TYPE_CHECKING

from ._data import ATTACKS, AdversarialData, prepare_data
from ._replication import prepare_variant, replication_variants

if TYPE_CHECKING:
    from collections.abc import Iterable


# --------------------------------------------------------------------------------------------
# Command line: generate the cached adversarial sets (a DVC stage of its own)
# --------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    """``python -m shapley_research.experiments.adversarial generate [OVERRIDE ...] [--cache-dir DIR]``.

    Composes ``conf/`` like ``shapley-research run adversarial`` (same
    overrides: ``profile=quick``, ``seed=1``, ``experiment.KEY=VALUE``) and
    writes ``CACHE_DIR/fgsm.npz`` and ``CACHE_DIR/cw.npz`` (default: the
    configuration's ``cache_dir``, relative to the project root), then the
    replications' files beside them (:mod:`._replication`: one worker per
    variant, ``n_jobs`` of the configuration), regenerating only stale files.
    """
    from .._project import Project, ProjectError, notebook_parameters
    from .._schema import check_parameters

    parser = argparse.ArgumentParser(prog="python -m shapley_research.experiments.adversarial",
                                     description="Generate (or refresh) the cached adversarial image sets.")
    parser.add_argument("command", choices=["generate"])
    parser.add_argument("overrides", nargs="*", help="hydra overrides, as for `shapley-research run adversarial`")
    parser.add_argument("--cache-dir", default=None, help="directory of the .npz files (default: conf's cache_dir)")
    parser.add_argument("--project-dir", default=None)
    args = parser.parse_args(argv)
    try:
        project = Project.locate(args.project_dir)
        params = notebook_parameters(project.compose("adversarial", args.overrides), "adversarial")
        check_parameters("adversarial", params)
    except (ProjectError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    cache_dir = args.cache_dir or params.get("cache_dir")
    if cache_dir is None:
        print("error: no cache_dir in the configuration; pass --cache-dir DIR.", file=sys.stderr)
        return 2
    cache_dir = Path(cache_dir)
    if not cache_dir.is_absolute() and args.cache_dir is None:
        cache_dir = project.root / cache_dir
    from .._common import set_blas_threads

    set_blas_threads(1)
    try:  # checked before the main attacks run
        variants = replication_variants(**{k: params[k] for k in ("seed", "cw_confidence", "replication_seeds",
                                                                   "cw_confidence_sweep")})
    except (TypeError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    data = prepare_data(**dict(params, cache_dir=cache_dir))
    _report(data, ATTACKS)
    from .._parallel import parallel_map

    prepared = parallel_map(prepare_variant, [(v, params, cache_dir) for v in variants], n_jobs=params["n_jobs"])
    for variant, variant_data in zip(variants, prepared):
        _report(variant_data, variant.cache_names())
    return 0


def _report(data: AdversarialData, attacks: Iterable[str]) -> None:
    for attack in attacks:
        state = "generated" if data.regenerated[attack] else "up to date"
        info = data.attack_info[attack]
        print(f"{data.cache_files[attack]}: {state} (success rate on the attacked model: "
              f"train {info['success_rate_train']:.3f}, test {info['success_rate_test']:.3f})", flush=True)
