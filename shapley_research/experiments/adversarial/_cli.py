"""Command line (``python -m shapley_research.experiments.adversarial generate``): generate the cached sets."""

from __future__ import annotations

import argparse
import re
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
    variant, ``n_jobs`` of the configuration), regenerating only stale files
    (their cache keys hold the settings and the generating code:
    :func:`~._images.generator_sha256`). Image files of variants the
    configuration no longer runs are removed (:func:`remove_unused_images`),
    so the directory, a DVC output kept between runs, holds this
    configuration's files only.
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
    if args.cache_dir is None:  # the configuration's directory (the pipeline's output), not one given by hand
        keep = {f"{attack}.npz" for attack in ATTACKS} | {n for v in variants for n in v.cache_names().values()}
        for path in remove_unused_images(cache_dir, keep):
            print(f"{path}: removed (no variant of the configuration uses it)", flush=True)
    return 0


# An image file's name: ATTACK.npz, or a variant's (Variant.cache_names): ATTACK_seedS.npz, cw_confidenceC.npz;
# and the temporary file a stopped write left (attacks._cache: ".NAME-RANDOM.npz").
_IMAGE_STEM = rf"({'|'.join(ATTACKS)})(_seed\d+|_confidence[0-9.e+-]+)?"
_IMAGE_FILE = re.compile(rf"{_IMAGE_STEM}\.npz")
_LEFT_BY_A_STOP = re.compile(rf"\.{_IMAGE_STEM}-[^/]*\.npz")


def remove_unused_images(cache_dir: Path, keep: set[str]) -> list[Path]:
    """Delete the image files in ``cache_dir`` named like this experiment's but not in ``keep``; return them.

    Only names the experiment writes are touched (``fgsm.npz``,
    ``cw_seed3.npz``, ``cw_confidence2.5.npz``, ...; and the temporary files
    a stopped write left, ``.cw_seed3-x1y2.npz``), so other files in a shared
    directory stay.
    """
    removed = sorted(p for p in Path(cache_dir).glob("*.npz")
                     if (_IMAGE_FILE.fullmatch(p.name) and p.name not in keep) or _LEFT_BY_A_STOP.fullmatch(p.name))
    for path in removed:
        path.unlink()
    return removed


def _report(data: AdversarialData, attacks: Iterable[str]) -> None:
    for attack in attacks:
        state = "generated" if data.regenerated[attack] else "up to date"
        info = data.attack_info[attack]
        print(f"{data.cache_files[attack]}: {state} (success rate on the attacked model: "
              f"train {info['success_rate_train']:.3f}, test {info['success_rate_test']:.3f})", flush=True)
