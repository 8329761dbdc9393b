"""Side-by-side benchmark against pyDVL: finding mislabeled training points, at equal numbers of model fits.

Run ``python benchmarks/cleaning_comparison.py`` (about 10 minutes on 2 cores;
``--quick`` for a smoke run of about 1.5 minutes; ``--output PATH`` for the
markdown file, default ``benchmarks/results/cleaning_comparison.md``). pyDVL is
an optional benchmark dependency (``pip install --no-deps pydvl==0.10.0
pyDeprecate==0.3.2 more-itertools``, see ``benchmarks/README.md``), never a
runtime one. Both libraries run in this process, one after the other on the
same data, with BLAS/OpenMP limited to one thread (``threadpoolctl``).

The data set, one per seed: scikit-learn's breast cancer data (569 points, 30
features, 2 classes) split at random into 300 training points and 269 test
points, the features standardised with the training set's means and standard
deviations, and 15% of the training labels (45) flipped to another class at
random. The model is ``LogisticRegression(max_iter=1000)`` and the utility of a
training subset its accuracy on the test set: ours
``ModelUtility(model, ..., metric="accuracy", fast="auto")`` (routed to the
batched logistic-regression learner), pyDVL's
``ModelUtility(model, SupervisedScorer("accuracy", test, default=...))`` (one
scikit-learn fit per subset). pyDVL scores the empty set and a subset
scikit-learn cannot fit (a single class) with the scorer's ``default``; it is
set to the accuracy of predicting the training set's most frequent class,
which is our utility of the empty set (ours scores a single-class subset by
predicting that class).

Methods, the same number of model fits on both sides. Ours runs first with
``--budget`` fits (default 3,000) for the three sampling methods; it never
exceeds the budget and may leave part of it unspent, so pyDVL then gets the fits
ours made: they are counted by a wrapper around its utility (every non-empty
subset it fits counts one) and a stopping criterion on that count, checked after
each of its batches, stops it, so pyDVL makes at least as many fits as ours, at
most one of its sampling units more:

* **TMC Shapley** (Ghorbani and Zou, 2019), the same truncation rule on both
  sides: a permutation stops once ``|U(D) - U(prefix)| <= 0.01 |U(D)|``. Ours:
  ``permutation_shapley(game, budget, seed, truncation=0.01)``; pyDVL:
  ``TMCShapleyValuation(utility, RelativeTruncation(rtol=0.01))`` (its default
  truncation waits for 40% of each permutation first; the burn-in is left out
  here so that both run one rule).
* **MSR Banzhaf** (Wang and Jia, 2023). Ours: ``msr_banzhaf``; pyDVL:
  ``MSRBanzhafValuation``.
* **Beta(16, 1) Shapley** (Kwon and Zou, 2022). Ours: ``beta_shapley(alpha=16,
  beta=1)`` (sizes drawn from the Beta weights); pyDVL:
  ``BetaShapleyValuation(utility, PermutationSampler(), alpha=16, beta=1)``
  (uniform permutations, importance-weighted: pyDVL's documented pairing).
* **Leave-one-out**: ``N + 1`` fits on both sides.
* **Data-OOB** (Kwon and Zou, 2023), ``--n-estimators`` bagged models (default
  800, the number of its paper): ours ``data_oob(model, X, y, n_estimators)``;
  pyDVL ``DataOOBValuation`` of a fitted ``BaggingClassifier(model,
  n_estimators)`` (the bagging fit is timed with it).

Measured per method, package and seed: detection of the flipped labels (AUROC
of ranking the points by lowest value, flipped = positive; F1 when the ``k``
lowest-valued points are flagged, ``k`` = the number flipped, so F1 = precision
= recall), test accuracy of the model refitted (scikit-learn) after removing
the lowest-valued 10% of the training points, wall time of the whole call
(utility construction included) and the fits made. Seed ``s`` draws the split,
the flipped labels and both libraries' random streams, so the two columns of a
seed value the very same corrupted data set and are compared in pairs.

Goals (one ``OK``/``MISS`` line each): our detection is as good as pyDVL's same
method or better within noise (for AUROC and for F1: the mean over seeds of
ours minus pyDVL's, paired by seed, is at least minus twice its standard error,
the larger of the one over seeds and that of a paired bootstrap of the training
points, since a handful of seeds alone estimates it poorly), and for the
sampling methods pyDVL's wall time is at least 10x ours. ``--raw PATH`` saves
the measurements (the values included) as JSON and ``--from-raw PATH`` rewrites
the report from such a file without measuring again.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from shapley_research import (ModelUtility, beta_shapley, data_oob, leave_one_out, msr_banzhaf,
                              permutation_shapley)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # also when loaded by file path (the tests)
from _peer_common import (_table, _verdict, commit_text, date_line, load_raw, log, machine_info,  # noqa: E402
                          machine_line, quiet_warnings, save_raw, write_outputs)  # (the machine and the output)
from _pydvl_adapters import Counter, max_evaluations, pydvl_values  # noqa: E402  (pyDVL's evaluation counter)

TIME_GOAL = 10.0  # pyDVL wall time / ours, sampling methods
NOISE_SE = 2.0  # "within noise": mean paired difference >= -NOISE_SE standard errors
N_TRAIN = 300
FLIP_SHARE = 0.15
REMOVE_SHARE = 0.10
TRUNCATION = 0.01
ALPHA, BETA = 16.0, 1.0
BOOTSTRAP = 500  # paired bootstrap resamples of the training points, per seed and method
DEFAULT_OUTPUT = os.path.join(HERE, "results", "cleaning_comparison.md")
METHODS = ("TMC Shapley", "MSR Banzhaf", "Beta(16, 1) Shapley", "leave-one-out", "Data-OOB")
SAMPLING = METHODS[:3]
PACKAGES = ("shapley_research", "pyDVL")


# --------------------------------------------------------------------------- data and scores


def make_model():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=1000)


def corrupted_breast_cancer(seed: int, n_train: int = N_TRAIN, flip_share: float = FLIP_SHARE) -> dict:
    """Breast cancer split at random, standardised on the training points, ``flip_share`` of their labels flipped.

    A flipped label is drawn uniformly among the other classes (with two
    classes: the other one). Returns the arrays, the clean training labels and
    the boolean mask of the flipped points.
    """
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    train, test = order[:n_train], order[n_train:]
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    std[std == 0] = 1.0
    X_train, X_test = (X[train] - mean) / std, (X[test] - mean) / std
    y_clean, y_test = y[train], y[test]
    flipped = np.zeros(n_train, dtype=bool)
    flipped[rng.choice(n_train, int(round(flip_share * n_train)), replace=False)] = True
    classes = np.unique(y)
    y_train = y_clean.copy()
    for i in np.flatnonzero(flipped):
        y_train[i] = rng.choice(classes[classes != y_clean[i]])
    return {"X_train": X_train, "y_train": y_train, "X_test": X_test, "y_test": y_test, "y_clean": y_clean,
            "flipped": flipped}


def prior_accuracy(data: dict) -> float:
    """Test accuracy of predicting the most frequent training label (smallest on ties): our ``U(empty)``."""
    labels, counts = np.unique(data["y_train"], return_counts=True)
    return float(np.mean(data["y_test"] == labels[np.argmax(counts)]))


def detection_scores(values: np.ndarray, flipped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AUROC and F1 at ``k`` of each row of ``values`` (shape ``(B, N)``) against the rows of ``flipped``.

    AUROC of ranking by lowest value, flipped = positive: the Mann-Whitney
    statistic, ties in value counting half (as ``sklearn.metrics.roc_auc_score``
    of ``-values``). F1 when the ``k`` lowest-valued points of a row are
    flagged, ``k`` its number of flipped points: with ``k`` flagged and ``k``
    positive, precision = recall = F1 = the share of flagged points that are
    flipped (ties broken by position).
    """
    from scipy.stats import rankdata

    values, flipped = np.atleast_2d(np.asarray(values, float)), np.atleast_2d(np.asarray(flipped, bool))
    positives = flipped.sum(axis=1)
    negatives = flipped.shape[1] - positives
    ranks = rankdata(-values, axis=1)  # average ranks: the lowest value gets the highest rank
    auroc = ((ranks * flipped).sum(axis=1) - positives * (positives + 1) / 2) / (positives * negatives)
    order = np.argsort(values, axis=1, kind="stable")
    hits = np.cumsum(np.take_along_axis(flipped, order, axis=1), axis=1)
    f1 = hits[np.arange(hits.shape[0]), positives - 1] / positives
    return auroc, f1


def detection(values: np.ndarray, flipped: np.ndarray) -> tuple[float, float]:
    """AUROC of ranking by lowest value (flipped = positive) and F1 of flagging the ``k`` lowest, ``k`` = flipped."""
    auroc, f1 = detection_scores(values, flipped)
    return float(auroc[0]), float(f1[0])


def bootstrap_gaps(mine: np.ndarray, other: np.ndarray, flipped: np.ndarray, resamples: int = BOOTSTRAP,
                   seed: int = 0) -> np.ndarray:
    """Paired bootstrap over the training points: ``(resamples, 2)`` AUROC and F1 gaps ``mine - other``.

    Each resample draws ``N`` points with replacement (redrawn until it holds
    a flipped and a clean point) and scores both value vectors on it: the
    noise of measuring detection on this many flipped points, with the two
    rankings' correlation kept.
    """
    rng = np.random.default_rng([seed, 2])
    n = flipped.size
    rows = rng.integers(n, size=(resamples, n))
    held = flipped[rows].sum(axis=1)
    while ((held == 0) | (held == n)).any():
        bad = (held == 0) | (held == n)
        rows[bad] = rng.integers(n, size=(int(bad.sum()), n))
        held = flipped[rows].sum(axis=1)
    mine_scores = detection_scores(np.asarray(mine, float)[rows], flipped[rows])
    other_scores = detection_scores(np.asarray(other, float)[rows], flipped[rows])
    return np.column_stack([mine_scores[0] - other_scores[0], mine_scores[1] - other_scores[1]])


def removal_accuracy(values: np.ndarray, data: dict, share: float = REMOVE_SHARE) -> float:
    """Test accuracy of the model refitted (scikit-learn) without the lowest-valued ``share`` of the points."""
    n = len(values)
    keep = np.argsort(values, kind="stable")[int(round(share * n)):]
    model = make_model().fit(data["X_train"][keep], data["y_train"][keep])
    return float(model.score(data["X_test"], data["y_test"]))


def reference_accuracies(data: dict, seed: int) -> dict:
    """Test accuracy with every point, without the flipped ones, and without a random ``REMOVE_SHARE``."""
    n = len(data["y_train"])
    fit = lambda rows: make_model().fit(data["X_train"][rows], data["y_train"][rows]).score(data["X_test"],
                                                                                             data["y_test"])
    random_values = np.random.default_rng([seed, 1]).random(n)
    return {"all": float(fit(np.arange(n))), "clean": float(fit(np.flatnonzero(~data["flipped"]))),
            "random_removal": removal_accuracy(random_values, data), "random_detection": detection(
                random_values, data["flipped"])}


# --------------------------------------------------------------------------- the two libraries


def ours(method: str, data: dict, seed: int, budget: int, n_estimators: int) -> tuple[np.ndarray, int, dict]:
    """Values, utility evaluations (model fits) and details of our ``method``."""
    if method == "Data-OOB":
        result = data_oob(make_model(), data["X_train"], data["y_train"], n_estimators=n_estimators, seed=seed,
                          progress=False)
        return result.values, int(result.n_evaluations), {}
    game = ModelUtility(make_model(), data["X_train"], data["y_train"], data["X_test"], data["y_test"],
                        metric="accuracy", fast="auto")
    if method == "TMC Shapley":
        result = permutation_shapley(game, budget, seed, truncation=TRUNCATION, progress=False)
    elif method == "MSR Banzhaf":
        result = msr_banzhaf(game, budget, seed, progress=False)
    elif method == "Beta(16, 1) Shapley":
        result = beta_shapley(game, budget, seed, alpha=ALPHA, beta=BETA, progress=False)
    elif method == "leave-one-out":
        result = leave_one_out(game)
    else:
        raise ValueError(method)
    details = {"learner": type(game.learner_).__name__ if game.learner_ is not None else "none (sklearn fits)"}
    if method in ("TMC Shapley", "Beta(16, 1) Shapley"):
        details["units"] = int(result.n_samples)  # permutations, or Beta sampling units
    if "mean_truncation_position" in result.info:
        details["stop"] = float(result.info["mean_truncation_position"])
    return result.values, int(result.n_evaluations), details


def pydvl_utility(data: dict, counter: Counter):
    """pyDVL's ``ModelUtility`` with an accuracy scorer, counting the subsets it fits in ``counter``."""
    from pydvl.valuation import Dataset, ModelUtility as PydvlModelUtility, SupervisedScorer

    class CountingModelUtility(PydvlModelUtility):
        """Counts every fit (pyDVL answers the empty set with the scorer's default, without fitting)."""

        def _utility(self, sample):
            self.counter.count += 1  # the copies pyDVL makes share the counter (shallow copies)
            return super()._utility(sample)

    scorer = SupervisedScorer("accuracy", Dataset(data["X_test"], data["y_test"]), default=prior_accuracy(data),
                              range=(0.0, 1.0))
    utility = CountingModelUtility(make_model(), scorer, catch_errors=True, show_warnings=False)
    utility.counter = counter
    return utility


def theirs(method: str, data: dict, seed: int, budget: int, n_estimators: int) -> tuple[np.ndarray, int, dict]:
    """Values, model fits and details of pyDVL's ``method``; it stops once ``budget`` fits are made."""
    from pydvl.valuation import (BetaShapleyValuation, DataOOBValuation, Dataset, LOOValuation,
                                 MSRBanzhafValuation, PermutationSampler, RelativeTruncation, TMCShapleyValuation)

    n = len(data["y_train"])
    train = Dataset(data["X_train"], data["y_train"])
    if method == "Data-OOB":
        from sklearn.ensemble import BaggingClassifier

        bagging = BaggingClassifier(make_model(), n_estimators=n_estimators, random_state=seed)
        bagging.fit(data["X_train"], data["y_train"])
        valuation = DataOOBValuation(bagging).fit(train)
        return pydvl_values(valuation.result, n), n_estimators, {}
    counter = Counter()
    utility = pydvl_utility(data, counter)
    stop = max_evaluations(counter, budget)
    if method == "TMC Shapley":
        valuation = TMCShapleyValuation(utility, truncation=RelativeTruncation(rtol=TRUNCATION), is_done=stop,
                                        seed=seed, progress=False)
    elif method == "MSR Banzhaf":
        valuation = MSRBanzhafValuation(utility, is_done=stop, seed=seed, progress=False)
    elif method == "Beta(16, 1) Shapley":
        valuation = BetaShapleyValuation(utility, PermutationSampler(seed=seed), stop, alpha=ALPHA, beta=BETA,
                                         progress=False)
    elif method == "leave-one-out":
        valuation = LOOValuation(utility, progress=False)
    else:
        raise ValueError(method)
    valuation.fit(train)
    details = {}
    if method in ("TMC Shapley", "Beta(16, 1) Shapley"):  # every permutation updates every point once
        details["units"] = int(np.max(valuation.result.counts))
    return pydvl_values(valuation.result, n), counter.count, details


# --------------------------------------------------------------------------- measurement


def measure(seeds, budget: int, n_estimators: int, n_train: int = N_TRAIN, methods=METHODS) -> dict:
    """Every method of both libraries on the corrupted data set of each seed.

    Ours runs first, with ``budget``; pyDVL's sampling methods then get the
    fits ours actually made as their budget (ours never exceeds its budget and
    may leave part of it unspent), so pyDVL makes at least as many fits, at
    most one of its sampling units more.
    """
    with threadpool_limits(1):  # both sides: tiny fits run far faster on one thread, and no oversubscription
        return _measure(seeds, budget, n_estimators, n_train, methods)


def _measure(seeds, budget, n_estimators, n_train, methods) -> dict:
    runs, references = [], []
    for seed in seeds:
        data = corrupted_breast_cancer(seed, n_train)
        references.append({"seed": seed, "flipped": np.flatnonzero(data["flipped"]).tolist(),
                           **reference_accuracies(data, seed)})
        for method in methods:
            fits_made = budget
            for package, run in (("shapley_research", ours), ("pyDVL", theirs)):
                log(f"seed {seed}: {package} {method}" + (f" ({fits_made:,} fits)" if method in SAMPLING else "")
                    + " ...")
                start = time.perf_counter()
                values, fits, details = run(method, data, seed, fits_made, n_estimators)
                seconds = time.perf_counter() - start
                fits_made = fits
                auroc, f1 = detection(values, data["flipped"])
                runs.append({"seed": seed, "method": method, "package": package, "auroc": auroc, "f1": f1,
                             "removal_accuracy": removal_accuracy(values, data), "seconds": seconds,
                             "fits": int(fits), "finite": bool(np.isfinite(values).all()),
                             "values": np.asarray(values, float).tolist(), **details})
    return {"runs": runs, "references": references, "seeds": list(seeds), "budget": budget,
            "n_estimators": n_estimators, "n_train": n_train, "methods": list(methods)}


# --------------------------------------------------------------------------- analysis and report


def _runs(runs, method, package) -> list[dict]:
    return sorted((r for r in runs if r["method"] == method and r["package"] == package), key=lambda r: r["seed"])


def _select(runs, method, package, key) -> np.ndarray:
    return np.array([r[key] for r in _runs(runs, method, package)], dtype=float)


def detection_gaps(measured: dict, method: str) -> dict:
    """Ours - pyDVL in AUROC and F1, paired by seed: mean, standard error over seeds, bootstrap standard error.

    ``se_seeds``: the standard deviation of the per-seed gaps over
    ``sqrt(seeds)`` (0 with one seed); ``se_bootstrap``: that of the mean gap
    when each seed's data set is resampled (paired bootstrap over the training
    points, :func:`bootstrap_gaps`), the resolution of ``N`` points with this
    many flipped. ``se`` is the larger: the seeds' estimate alone rests on a
    handful of gaps.
    """
    flipped = {r["seed"]: r["flipped"] for r in measured["references"]}
    mine, other = _runs(measured["runs"], method, "shapley_research"), _runs(measured["runs"], method, "pyDVL")
    out = {}
    for column, key in enumerate(("auroc", "f1")):
        gaps = np.array([a[key] - b[key] for a, b in zip(mine, other)])
        se_seeds = float(gaps.std(ddof=1) / np.sqrt(gaps.size)) if gaps.size > 1 else 0.0
        variances = []
        for a, b in zip(mine, other):
            mask = np.zeros(len(a["values"]), dtype=bool)
            mask[flipped[a["seed"]]] = True
            variances.append(bootstrap_gaps(a["values"], b["values"], mask, seed=a["seed"])[:, column].var(ddof=1))
        se_bootstrap = float(np.sqrt(np.sum(variances)) / gaps.size)
        out[key] = {"gap": float(gaps.mean()), "se_seeds": se_seeds, "se_bootstrap": se_bootstrap,
                    "se": max(se_seeds, se_bootstrap)}
    return out


def within_noise(gap: dict) -> bool:
    """Ours at least as high as pyDVL within noise: mean paired gap >= -NOISE_SE standard errors."""
    return gap["gap"] >= -NOISE_SE * gap["se"] - 1e-12


def _cell(values, digits=3) -> str:
    values = np.asarray(values, float)
    if values.size == 1:
        return f"{values[0]:.{digits}f}"
    return f"{values.mean():.{digits}f} [{values.min():.{digits}f}-{values.max():.{digits}f}]"


def _header(info, load, wall, command) -> list[str]:
    """The machine, the versions, the library's provenance, the date, load and wall time, the threads."""
    v = info["versions"]
    return [machine_line(info),
            f"Versions: Python {v['python']}, numpy {v['numpy']}, scikit-learn {v['sklearn']}, "
            f"scipy {v['scipy']}, pyDVL {v['pydvl']}, shapley_research {v['shapley_research']}",
            f"shapley_research: {commit_text(info['library'])}.",
            date_line(info, load, wall, f" (`{command}`)"),
            "BLAS/OpenMP limited to 1 thread (threadpoolctl); both libraries in one process, one after the other.",
            ""]


def _setup(measured) -> list[str]:
    """The data sets, the budgets, and what the table's cells hold."""
    n_train, n_flipped = measured["n_train"], int(round(FLIP_SHARE * measured["n_train"]))
    return [f"Data: breast cancer (scikit-learn), {n_train} training points (standardised), the other "
            f"{569 - n_train} the test set, {n_flipped} training labels ({FLIP_SHARE:.0%}) flipped at random; "
            f"seeds {', '.join(str(s) for s in measured['seeds'])} (each draws the split, the flips and both "
            "libraries' random streams). Model: LogisticRegression(max_iter=1000); utility: test accuracy.",
            f"Budget: {measured['budget']:,} model fits for our sampling methods, then the fits ours made for "
            f"pyDVL's (TMC truncation {TRUNCATION:g} |U(D)| on both sides; Beta({ALPHA:g}, {BETA:g})); N + 1 "
            f"for leave-one-out; {measured['n_estimators']:,} bagged models for Data-OOB.",
            f"Cells: mean over seeds [min-max]. AUROC: flipped labels = positives, ranked by lowest value. "
            f"F1 at k = {n_flipped} lowest flagged (= precision = recall). Removal: test accuracy after "
            f"removing the lowest-valued {REMOVE_SHARE:.0%} and refitting. Wall: the whole call, utility "
            "construction included. Fits: utility evaluations (ours; U(D) and U(empty) included where "
            "evaluated) or scikit-learn fits counted around pyDVL's utility."]


def _results_table(measured, markdown) -> str:
    """One row per method and package: detection, removal accuracy, wall time, fits, pyDVL's time over ours."""
    runs = measured["runs"]
    headers = ["method", "package", "AUROC", "F1 at k", f"accuracy, lowest {REMOVE_SHARE:.0%} removed",
               "wall s", "fits", "pyDVL wall / ours"]
    rows = []
    for method in measured["methods"]:
        for package in PACKAGES:
            seconds = _select(runs, method, package, "seconds")
            speed = ""
            if package == "shapley_research":
                speed = f"{_select(runs, method, 'pyDVL', 'seconds').mean() / seconds.mean():,.1f}x"
            rows.append([method, package, _cell(_select(runs, method, package, "auroc")),
                         _cell(_select(runs, method, package, "f1")),
                         _cell(_select(runs, method, package, "removal_accuracy")), _cell(seconds, 2),
                         _cell(_select(runs, method, package, "fits"), 0), speed])
    return _table(headers, rows, markdown)


def _reference_line(measured) -> str:
    """The test accuracies of the reference fits and the detection of random values, means over seeds."""
    refs = measured["references"]
    mean = lambda key: float(np.mean([r[key] for r in refs]))
    return (f"   Reference test accuracies (mean over seeds): all {measured['n_train']} points {mean('all'):.3f}; "
            f"without the flipped points {mean('clean'):.3f}; removing a random {REMOVE_SHARE:.0%} "
            f"{mean('random_removal'):.3f}. Random values detect with AUROC "
            f"{np.mean([r['random_detection'][0] for r in refs]):.3f}, F1 "
            f"{np.mean([r['random_detection'][1] for r in refs]):.3f} (chance: 0.5 and {FLIP_SHARE:.2f}).")


def _unit_lines(measured) -> list[str]:
    """Sampling units per run and fits per unit of TMC and Beta Shapley; where our TMC stops, pooled."""
    runs, lines = measured["runs"], []
    for method in ("TMC Shapley", "Beta(16, 1) Shapley"):
        if method not in measured["methods"]:
            continue
        parts = []
        for package in PACKAGES:
            units, fits = _select(runs, method, package, "units"), _select(runs, method, package, "fits")
            parts.append(f"{package} {units.mean():.1f} ({fits.sum() / units.sum():.0f} fits each)")
        unit = "permutations" if method == "TMC Shapley" else "sampling units (ours) / permutations (pyDVL)"
        line = f"   {method}: {unit} per run: " + ", ".join(parts)
        if method == "TMC Shapley":
            mine = _runs(runs, method, "shapley_research")
            units, fits = sum(r["units"] for r in mine), sum(r["fits"] for r in mine)
            stop = sum(r["stop"] * r["units"] for r in mine) / units  # pooled over the permutations
            line += (f"; ours computed {stop:.0f} of {measured['n_train']} players' contributions per permutation "
                     f"on average and made {fits / (stop * units) - 1:.0%} more fits than that: the prefixes past "
                     "a stop within the chunk of positions it evaluates at once (pyDVL evaluates one prefix at a "
                     "time, so its fits per permutation are its stops)")
        lines.append(line + ".")
    return lines


def _detection_goals(measured) -> list[str]:
    """One goal line per method: ours - pyDVL in AUROC and F1, paired by seed, within noise or not."""
    goals = []
    for method in measured["methods"]:
        gaps = detection_gaps(measured, method)
        parts = [f"{label} {g['gap']:+.3f} (se seeds {g['se_seeds']:.3f}, bootstrap {g['se_bootstrap']:.3f})"
                 for label, g in (("AUROC", gaps["auroc"]), ("F1", gaps["f1"]))]
        ok = within_noise(gaps["auroc"]) and within_noise(gaps["f1"])
        goals.append(f"detection {method}: ours - pyDVL {', '.join(parts)} (goal: as good or better within noise) "
                     f"{_verdict(ok)}")
    return goals


def _time_goals(measured) -> list[str]:
    """One goal line per sampling method: pyDVL's mean wall time over ours, and per fit."""
    runs, goals = measured["runs"], []
    for method in SAMPLING:
        if method not in measured["methods"]:
            continue
        mine, other = _select(runs, method, "shapley_research", "seconds"), _select(runs, method, "pyDVL", "seconds")
        my_fits, their_fits = _select(runs, method, "shapley_research", "fits"), _select(runs, method, "pyDVL", "fits")
        ratio = other.mean() / mine.mean()
        per_fit = (other.sum() / their_fits.sum()) / (mine.sum() / my_fits.sum())
        goals.append(f"wall time {method}: pyDVL {other.mean():.1f} s for {their_fits.mean():,.0f} fits, ours "
                     f"{mine.mean():.2f} s for {my_fits.mean():,.0f}: {ratio:,.1f}x ({per_fit:,.1f}x per fit) "
                     f"(goal >= {TIME_GOAL:g}x) {_verdict(ratio >= TIME_GOAL)}")
    return goals


def report(info, load, measured, wall, command, markdown) -> str:
    """The report of :func:`measure`'s ``measured``, as aligned text or as markdown."""
    out = _header(info, load, wall, command) + _setup(measured)
    out += [_results_table(measured, markdown), _reference_line(measured)] + _unit_lines(measured)
    runs = measured["runs"]
    if not all(r["finite"] for r in runs):
        bad = sorted({(r["package"], r["method"]) for r in runs if not r["finite"]})
        out.append(f"   NON-FINITE values returned by: {bad}")
    out.append("")
    out.append(f"Detection, ours - pyDVL paired by seed: mean gap, standard error over the seeds, and that of a paired "
               f"bootstrap of the training points ({BOOTSTRAP} resamples per seed); within noise = gap >= "
               f"-{NOISE_SE:g} x the larger of the two.")
    goals = _detection_goals(measured) + _time_goals(measured)
    out += ["", "Goals:"] + [("- " if markdown else "  ") + g for g in goals]
    return "\n".join(out)


# ----------------------------------------------------------------------------- main


def command_line(argv) -> str:
    """The command that measured, without the options that only say where to write (``--output``, ``--raw``)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--output", "--raw"):
            skip = True
        elif not arg.startswith(("--output=", "--raw=")):
            kept.append(arg)
    return " ".join(["python benchmarks/cleaning_comparison.py", *kept])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 seeds, 500 fits (about 1.5 minutes)")
    parser.add_argument("--output", metavar="PATH", default=DEFAULT_OUTPUT,
                        help=f"markdown output (default {os.path.relpath(DEFAULT_OUTPUT)})")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 3; 2 --quick)")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--budget", type=int, default=None,
                        help="model fits of each sampling method (default 3000; 500 --quick)")
    parser.add_argument("--n-estimators", type=int, default=None,
                        help="bagged models of Data-OOB (default 800; 200 --quick)")
    parser.add_argument("--raw", metavar="PATH", help="also save the raw measurements (values included) as JSON")
    parser.add_argument("--from-raw", metavar="PATH", help="only rewrite the report from a --raw JSON file")
    args = parser.parse_args(argv)
    quiet_warnings()
    if args.from_raw:
        raw = load_raw(args.from_raw)
    else:
        if importlib.util.find_spec("pydvl") is None:
            print("pyDVL is not installed: pip install --no-deps pydvl==0.10.0 pyDeprecate==0.3.2 more-itertools "
                  "(see benchmarks/README.md).", file=sys.stderr)
            return 2
        n_seeds = args.seeds or (2 if args.quick else 3)
        budget = args.budget or (500 if args.quick else 3000)
        n_estimators = args.n_estimators or (200 if args.quick else 800)
        command = command_line(sys.argv[1:] if argv is None else argv)
        info = machine_info()
        load_start = os.getloadavg()[0]
        start = time.perf_counter()
        measured = measure(range(args.seed, args.seed + n_seeds), budget, n_estimators)
        raw = {"info": info, "load": (load_start, os.getloadavg()[0]), "measured": measured,
               "wall": time.perf_counter() - start, "command": command}
        if args.raw:
            save_raw(raw, args.raw)
    report_args = [raw[key] for key in ("info", "load", "measured", "wall", "command")]
    write_outputs(lambda markdown: report(*report_args, markdown=markdown), args.output,
                  "Finding mislabeled points: shapley_research vs pyDVL, side by side", raw["command"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
