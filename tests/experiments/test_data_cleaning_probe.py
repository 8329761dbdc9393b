"""The data_cleaning budget probe: its runs, its own claim (settled or still rising) and its notes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shapley_research.experiments import data_cleaning as dc

SEMIVALUES = dc.PROBE_METHODS


def table(aurocs: dict, budget: int, datasets=("a", "b")) -> pd.DataFrame:
    """Rows per data set, method and repetition: ``aurocs[method]`` is the AUROC per repetition."""
    rows = [{"dataset": d, "repetition": r, "method": m, "budget": budget, "main": True, "auroc": a, "f1": a,
             "wall_time_s": 1.0, "n_evaluations": budget, "error": None}
            for d in datasets for m, per_seed in aurocs.items() for r, a in enumerate(per_seed)]
    return pd.DataFrame(rows)


SWEEP = table({m: [0.80, 0.82, 0.78, 0.81, 0.79, 0.80] for m in SEMIVALUES} | {"data_oob": [0.9] * 6}, 6000)


def probe_at(rise: dict, spread=(0.0, 0.004, -0.004)) -> pd.DataFrame:
    """A probe on the sweep's first three repetitions: each method's AUROC raised by ``rise[method]``."""
    first = SWEEP[SWEEP["repetition"] < 3]
    aurocs = {m: [a + rise.get(m, 0.0) + s for a, s in zip(first[(first["method"] == m) & (first["dataset"] == "a")]
                                                            ["auroc"], spread)] for m in SEMIVALUES}
    return pd.concat([table({m: [a - rise.get(m, 0.0) / 2 for a in v] for m, v in aurocs.items()}, 12000),
                      table(aurocs, 24000)], ignore_index=True)


def test_settled_claim_holds_when_nothing_moves():
    verdict = dc.settled_claim(SWEEP, probe_at({}))
    assert verdict.holds and verdict.verdict == "holds" and verdict.source == "reproduction"
    assert "6000" in verdict.claim and "24000" in verdict.claim
    assert "12000" in verdict.note and "3 repetitions" in verdict.note


def test_settled_claim_fails_when_a_semivalue_still_rises():
    verdict = dc.settled_claim(SWEEP, probe_at({"permutation": 0.06}))
    assert verdict.verdict == "does not hold" and "permutation on a" in verdict.note
    assert verdict.value == pytest.approx(0.06)


def test_settled_claim_is_inconclusive_when_the_rise_straddles_the_tolerance():
    verdict = dc.settled_claim(SWEEP, probe_at({"permutation": 0.02}, spread=(0.0, 0.03, -0.03)))
    assert verdict.verdict == "inconclusive" and not verdict.holds and "seeds would decide" in verdict.note


def test_rise_is_paired_by_repetition():
    _, _, rises = dc.rise_past_sweep(SWEEP, probe_at({"beta_shapley": 0.05}), "beta_shapley")
    assert set(rises) == {"a", "b"}
    np.testing.assert_allclose(rises["a"], [0.05, 0.054, 0.046])


def test_claims_carry_the_probe_in_their_notes():
    probe = probe_at({"permutation": 0.06})
    claims = dc.data_cleaning_claims(SWEEP.assign(main=True), pd.DataFrame(
        {"dataset": [], "repetition": [], "method": [], "curve": [], "fraction": [], "accuracy": []}), probe=probe)
    assert len(claims) == 7 and claims[-1].verdict == "does not hold"
    beta, oob = claims[2], claims[3]
    assert "Past the sweep (probe, 3 seeds" in beta.note and "beta_shapley - permutation at 24000" in beta.note
    assert "data_oob - permutation at 24000" in oob.note
    # the papers' verdicts stay those of the sweep: the probe only adds to the note
    without = dc.beta_claim(SWEEP)
    assert beta.verdict == without.verdict and beta.value == without.value


def test_probe_summary_is_json_ready():
    summary = dc.probe_summary(probe_at({}))
    assert set(summary) == {"a", "b"} and set(summary["a"]) == set(SEMIVALUES)
    assert set(summary["a"]["permutation"]) == {"12000", "24000"}


def test_run_budget_probe_small_and_bad_input():
    kw = dict(datasets=["breast_cancer"], n_train=20, n_test=40, flip_fraction=0.2, seed=0)
    probe = dc.run_budget_probe(probe_seeds=1, probe_budgets=[60, 30], methods=("msr_banzhaf",), **kw)
    assert list(probe["budget"]) == [30, 60] and probe["error"].isna().all()
    assert probe["auroc"].between(0, 1).all()
    with pytest.raises(ValueError, match="probe_seeds"):
        dc.run_budget_probe(probe_seeds=0, probe_budgets=[60], **kw)
    with pytest.raises(ValueError, match="probe_budgets"):
        dc.run_budget_probe(probe_seeds=1, probe_budgets=[], **kw)


@pytest.mark.slow  # draws with matplotlib (its first import takes seconds)
def test_plot_with_probe_draws(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = dc.plot_detection_vs_evaluations(SWEEP, probe_at({}))
    labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert any("probe, 3 seeds" in label for label in labels)
    plt.close(fig)
