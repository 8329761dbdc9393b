"""Replications of the paper's claims: other draws of the data, and other strengths of the CW attack.

The main run decides the paper's claims on one draw of the data and attacks,
at the CW confidence this package calibrated; its z-statistics measure the
Monte Carlo precision of that draw only. Two sets of variants run the same
protocol again (:func:`replication_variants`):

* **data draws** (``replication_seeds``): the split, the PCA, the attacked
  model, both attacks' images, the test-set mixing and the permutations all
  come from another seed, every setting as in the main run;
* **CW strengths** (``cw_confidence_sweep``): the main draw, with CW run at
  other logit margins (FGSM's images and the permutations unchanged).

Each variant yields the statistics the paper's claims are decided on
(:func:`variant_rows`): per attack case, the change of the gap (mean value
of the adversarial points minus that of the benign ones) from test ratio 0
to 1, and per panel the gap's excess on the same-attack test set at ratio 1.
A variant's images are cached beside the main run's
(:meth:`Variant.cache_names`) and its rows, with ``resume_dir``, in the run's
folder until every variant is done, so a stopped run resumes from what it
finished.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._validation import check_int
from .._resume import PartCache, check_replication_seeds
from ._data import ATTACKS, AdversarialData, prepare_data
from ._run import run_valuation, summarize

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Iterable, Mapping, Sequence

    import pandas as pd

__all__ = ["Variant", "replication_variants", "variant_rows", "prepare_variant", "run_variant", "run_replications",
           "KINDS", "GAP_CHANGE", "ATTACK_MATCH", "SHIFT_RATIO"]

#: what a variant replicates: the main run itself, another data draw, or another CW confidence on the main draw
KINDS = ("main", "data draw", "CW confidence")
#: the statistics of :func:`variant_rows`
GAP_CHANGE, ATTACK_MATCH, SHIFT_RATIO = "gap change", "attack match", "CW/FGSM shift ratio"


@dataclass(frozen=True)
class Variant:
    """One run of the protocol: ``kind`` (one of :data:`KINDS`), its data ``seed`` and CW's ``cw_confidence``."""

    kind: str
    seed: int
    cw_confidence: float

    @property
    def label(self) -> str:
        """``"seed 3"`` for a data draw, ``"CW confidence 2.5"`` for a strength, ``"main"`` for the main run."""
        if self.kind == "data draw":
            return f"seed {self.seed}"
        return f"CW confidence {self.cw_confidence:g}" if self.kind == "CW confidence" else "main"

    def cache_names(self) -> dict[str, str]:
        """File names of the variant's attacks in the cache directory (the main run's files where they are shared)."""
        if self.kind == "data draw":
            return {attack: f"{attack}_seed{self.seed}.npz" for attack in ATTACKS}
        if self.kind == "CW confidence":  # FGSM's images are the main draw's
            return {"cw": f"cw_confidence{self.cw_confidence:g}.npz"}
        return {}


def _confidence(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")
    return float(value)


def _confidences(values: Any) -> list[float]:
    """``cw_confidence_sweep`` checked: a list of distinct finite numbers >= 0 (None: empty)."""
    if values is None:  # the configuration's null: no variant
        return []
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"cw_confidence_sweep must be a list, got {type(values).__name__}.")
    checked = [_confidence(v, f"cw_confidence_sweep[{i}]") for i, v in enumerate(values)]
    if len(set(checked)) != len(checked):
        raise ValueError(f"cw_confidence_sweep must hold distinct values, got {list(values)!r}.")
    return checked


def replication_variants(*, seed: int, cw_confidence: float, replication_seeds: Iterable[int] | None,
                         cw_confidence_sweep: Iterable[float] | None) -> list[Variant]:
    """The variants beside the main run (``seed``, ``cw_confidence``): data draws first, then CW strengths.

    Parameters
    ----------
    seed : int
        The main run's data seed (the first data draw).
    cw_confidence : float
        The main run's CW confidence.
    replication_seeds : list of int or None
        Seeds of the other data draws, run at ``cw_confidence``; ``None`` (the
        configuration's ``null``) stands for an empty list.
    cw_confidence_sweep : list of float or None
        Other CW confidences, run on the main draw; ``None``: none.

    Returns
    -------
    list of Variant

    Raises
    ------
    ValueError
        If a seed is negative or repeated or is the main ``seed``, or a
        confidence is negative, not finite, repeated, the main one or
        printed like another (its cache file would be another's).
    TypeError
        If either list is not a list (or a seed not an integer).
    """
    seed, cw_confidence = check_int(seed, "seed", minimum=0), _confidence(cw_confidence, "cw_confidence")
    seeds = check_replication_seeds(replication_seeds, seed)
    confidences = _confidences(cw_confidence_sweep)
    if cw_confidence in confidences:
        raise ValueError(f"cw_confidence_sweep must not hold the main run's cw_confidence {cw_confidence:g}: "
                         "the main run is that strength.")
    variants = [Variant("data draw", s, cw_confidence) for s in seeds] + [Variant("CW confidence", seed, c)
                                                                         for c in confidences]
    names = [name for v in variants for name in v.cache_names().values()] + ["cw.npz", "fgsm.npz"]
    if len(set(names)) != len(names):  # two confidences printed alike (2.5 and 2.5000001) would share a file
        raise ValueError(f"cw_confidence_sweep's values must differ in their shortest form ({{:g}}), got "
                         f"{list(cw_confidence_sweep or [])!r}.")
    return variants


def variant_rows(variant: Variant, summary: Mapping[str, Any], data: AdversarialData) -> list[dict[str, Any]]:
    """The claims' statistics of one variant, as rows of the replication table.

    Rows: one :data:`GAP_CHANGE` per (train, test) attack case (``value`` the
    change of the gap from the lowest test ratio to the highest, with its
    ``stderr``, ``z`` and ``spearman`` over the ratios, from
    :func:`~._run.summarize`'s trends), one :data:`ATTACK_MATCH` per panel
    (the gap on the same-attack test set minus on the other's, at the highest
    ratio) and one :data:`SHIFT_RATIO` (CW's median PCA-space shift of the
    training images over FGSM's: the attacks' relative strength).
    """
    head = {"kind": variant.kind, "variant": variant.label, "seed": variant.seed,
            "cw_confidence": variant.cw_confidence}
    nan = float("nan")
    rows = []
    for train in ATTACKS:
        for test in ATTACKS:
            t = summary["trends"][(train, test, "gap")]
            rows.append({**head, "statistic": GAP_CHANGE, "train": train, "test": test, "value": t["change"],
                         "stderr": t["stderr"], "z": t["z"], "spearman": t["spearman"]})
    for train in ATTACKS:
        m = summary["matches"][train]
        rows.append({**head, "statistic": ATTACK_MATCH, "train": train, "test": "", "value": m["difference"],
                     "stderr": m["stderr"], "z": m["z"], "spearman": nan})
    shifts = {a: data.attack_info[a]["median_pca_shift_train"] for a in ATTACKS}
    rows.append({**head, "statistic": SHIFT_RATIO, "train": "", "test": "", "value": shifts["cw"] / shifts["fgsm"],
                 "stderr": nan, "z": nan, "spearman": nan})
    return rows


def prepare_variant(variant: Variant, params: Mapping[str, Any],
                    cache_dir: str | os.PathLike | None) -> AdversarialData:
    """:func:`~._data.prepare_data` of the variant: the main run's settings (``params``, the notebook's
    parameters) with the variant's ``seed`` and ``cw_confidence``, its attacks cached in ``cache_dir``."""
    settings = dict(params, seed=variant.seed, cw_confidence=variant.cw_confidence, cache_dir=cache_dir,
                    cache_names=variant.cache_names(), verbose=False)
    return prepare_data(**settings)


def run_variant(variant: Variant, params: Mapping[str, Any], cache_dir: str | os.PathLike | None,
                n_jobs: int = 1) -> list[dict[str, Any]]:
    """Prepare the variant's data (:func:`prepare_variant`), value both panels, return its rows."""
    data = prepare_variant(variant, params, cache_dir)
    run = run_valuation(data, test_ratios=params["test_ratios"], n_permutations=params["n_permutations"],
                        C=params["C"], seed=variant.seed, n_jobs=n_jobs, verbose=False)
    return variant_rows(variant, summarize(run, data), data)


#: The columns of the replication table (:func:`variant_rows`).
ROW_KEYS = frozenset({"kind", "variant", "seed", "cw_confidence", "statistic", "train", "test", "value", "stderr",
                      "z", "spearman"})


def _valid_rows(label: str, rows: Any) -> bool:
    """Whether a resumed value is one variant's rows (:func:`variant_rows`) of ``label``."""
    return (isinstance(rows, list) and bool(rows)
            and all(isinstance(r, dict) and set(r) == ROW_KEYS and r["variant"] == label for r in rows))


def _resumable_variant(variant: Variant, params: Mapping[str, Any], cache_dir: str | os.PathLike | None,
                       parts: PartCache | None) -> list[dict[str, Any]]:
    """:func:`run_variant`, read back from ``parts`` if a stopped run finished it (a task of the workers)."""
    rows = parts.read(variant.label) if parts is not None else None
    if rows is None:
        rows = run_variant(variant, params, cache_dir)
        if parts is not None:
            parts.write(variant.label, rows)
    return rows


def run_replications(variants: Sequence[Variant], params: Mapping[str, Any], cache_dir: str | os.PathLike | None,
                     *, n_jobs: int = 1, progress: Callable[..., Iterable[Any]] | None = None,
                     resume_dir: str | os.PathLike | None = None,
                     main_rows: Sequence[Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """Every variant's rows (:func:`run_variant`), one variant per joblib worker, in the order given.

    Each variant runs on one core (its valuation with ``n_jobs=1``); the
    numbers do not depend on ``n_jobs``. The main run's images must already be
    cached (the CW-strength variants read its FGSM file), so that no two
    workers write one file. With ``resume_dir``, each finished variant's rows
    wait there (:class:`~.._resume.PartCache`, keyed by ``params``,
    ``cache_dir`` and the main run's rows ``main_rows``, which a code change
    that moves a number would move) for a rerun after a stop, and are removed
    once every variant is done.
    """
    import pandas as pd

    from .._parallel import parallel_map

    parts = None
    if resume_dir is not None:
        fingerprint = {"params": dict(params), "cache_dir": str(cache_dir), "main": list(main_rows or [])}
        parts = PartCache(resume_dir, "adversarial_variant_", fingerprint, valid=_valid_rows)
    tasks = [(variant, dict(params), cache_dir, parts) for variant in variants]
    results = parallel_map(_resumable_variant, tasks, n_jobs=n_jobs, progress=progress, desc="replications")
    if parts is not None:
        parts.clear()
    return pd.DataFrame([row for rows in results for row in rows])
