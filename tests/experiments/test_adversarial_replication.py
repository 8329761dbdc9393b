"""Replications of experiment `adversarial`: the variants, their statistics and the three claims decided on them."""

import numpy as np
import pandas as pd
import pytest

from shapley_research.experiments import adversarial as adv
from shapley_research.experiments.adversarial._replication import ATTACK_MATCH, GAP_CHANGE, SHIFT_RATIO


def _rows(kind, seed, confidence, gap=0.03, match=(0.004, 0.006), z=(10.0, 12.0), shift=1.0):
    """One variant's rows of the replication table, with given statistics (the same gap change in every case)."""
    variant = adv.Variant(kind, seed, confidence)
    trends = {(tr, te, "gap"): {"change": gap, "stderr": 0.001, "z": gap / 0.001, "spearman": 1.0}
              for tr in adv.ATTACKS for te in adv.ATTACKS}
    matches = {tr: {"difference": m, "stderr": m / zz, "z": zz} for tr, m, zz in zip(adv.ATTACKS, match, z)}

    class Data:  # what variant_rows reads of AdversarialData
        attack_info = {"fgsm": {"median_pca_shift_train": 2.0}, "cw": {"median_pca_shift_train": 2.0 * shift}}

    return adv.variant_rows(variant, {"trends": trends, "matches": matches}, Data())


def _table(draws, sweep):
    """``draws``: {seed: (gap, match)} (seed 0 the main run at confidence 7.5); ``sweep``: {confidence: z pair}."""
    rows = []
    for seed, (gap, match) in draws.items():
        kind = "main" if seed == 0 else "data draw"
        rows += _rows(kind, seed, 7.5, gap=gap, match=match, z=sweep.get(7.5, (10.0, 12.0)))
    for confidence, z in sweep.items():
        if confidence != 7.5:
            rows += _rows("CW confidence", 0, confidence, z=z, shift=confidence / 7.5)
    return pd.DataFrame(rows)


def test_variants_are_the_draws_then_the_strengths_and_share_the_main_fgsm_images():
    variants = adv.replication_variants(seed=0, cw_confidence=7.5, replication_seeds=[3, 1],
                                        cw_confidence_sweep=[0, 2.5])
    assert [v.label for v in variants] == ["seed 3", "seed 1", "CW confidence 0", "CW confidence 2.5"]
    assert variants[0].cache_names() == {"fgsm": "fgsm_seed3.npz", "cw": "cw_seed3.npz"}
    assert variants[2].cache_names() == {"cw": "cw_confidence0.npz"}  # FGSM: the main run's fgsm.npz
    assert adv.replication_variants(seed=0, cw_confidence=7.5, replication_seeds=[], cw_confidence_sweep=[]) == []
    assert adv.replication_variants(seed=0, cw_confidence=7.5, replication_seeds=None, cw_confidence_sweep=None) == []


@pytest.mark.parametrize("seeds, sweep, match", [
    ([0, 1], [], "replication_seeds must not hold the main run's seed 0"),
    ([1, 1], [], "replication_seeds must hold distinct values"),
    ([-1], [], r"replication_seeds\[0\]"),
    ([], [7.5], "cw_confidence_sweep must not hold the main run's cw_confidence 7.5"),
    ([], [float("nan")], r"cw_confidence_sweep\[0\] must be a finite number >= 0"),
    ([], [-1.0], r"cw_confidence_sweep\[0\]"),
    ([], [2.5, 2.5000001], r"differ in their shortest form"),  # one cache file name for both
])
def test_bad_variants_are_refused_naming_the_argument(seeds, sweep, match):
    with pytest.raises(ValueError, match=match):
        adv.replication_variants(seed=0, cw_confidence=7.5, replication_seeds=seeds, cw_confidence_sweep=sweep)


def test_a_list_is_required():
    with pytest.raises(TypeError, match="replication_seeds must be a list"):
        adv.replication_variants(seed=0, cw_confidence=7.5, replication_seeds=3, cw_confidence_sweep=[])


def test_variant_rows_carry_every_case_both_panels_and_the_shift_ratio():
    table = pd.DataFrame(_rows("data draw", 2, 7.5, shift=1.25))
    assert (table["statistic"] == GAP_CHANGE).sum() == 4 and (table["statistic"] == ATTACK_MATCH).sum() == 2
    assert table[table["statistic"] == SHIFT_RATIO]["value"].tolist() == [1.25]
    assert set(table["variant"]) == {"seed 2"} and set(table["cw_confidence"]) == {7.5}


def test_replicated_gap_holds_fails_and_stays_undecided_as_the_draws_say():
    steady = {s: (0.03 + 0.001 * s, (0.004, 0.006)) for s in range(5)}
    held = adv.claim_replicated_gap(_table(steady, {}))
    assert held.holds and held.source == "reproduction" and "seeds 0, 1, 2, 3, 4" in held.criterion
    assert held.value == pytest.approx(0.032)
    falling = {s: (-0.03 - 0.001 * s, (0.004, 0.006)) for s in range(5)}  # the gap falls in every draw
    assert adv.claim_replicated_gap(_table(falling, {})).verdict == "does not hold"
    mixed = {s: ((-1) ** s * 0.03, (0.004, 0.006)) for s in range(5)}  # the draws disagree
    assert adv.claim_replicated_gap(_table(mixed, {})).verdict == "inconclusive"
    assert adv.claim_replicated_gap(_table({0: (0.03, (0.004, 0.006))}, {})).verdict == "inconclusive"  # one draw


def test_replicated_match_needs_both_panels():
    both = {s: (0.03, (0.004 + 0.0001 * s, 0.006 + 0.0001 * s)) for s in range(5)}
    assert adv.claim_replicated_match(_table(both, {})).holds
    one = {s: (0.03, (-0.004 - 0.0001 * s, 0.006)) for s in range(5)}  # FGSM's points prefer the other attack
    failed = adv.claim_replicated_match(_table(one, {}))
    assert failed.verdict == "does not hold" and "train fgsm" in failed.note


def test_match_across_confidence_holds_only_at_every_strength():
    draws = {0: (0.03, (0.004, 0.006))}
    held = adv.claim_match_across_confidence(_table(draws, {0.0: (5.0, 3.0), 7.5: (10.0, 12.0), 10.0: (9.0, 8.0)}))
    assert held.holds and held.value == 3.0 and "0, 7.5, 10" in held.criterion
    weak = adv.claim_match_across_confidence(_table(draws, {0.0: (17.8, -50.0), 7.5: (10.0, 12.0)}))
    assert weak.verdict == "does not hold" and weak.note.startswith("Fails at confidence 0.")
    assert "shift ratio 0.00" in weak.note and weak.value == -50.0
    # the cause the note names: both panels value their points more against the same (here FGSM's) test set
    assert weak.note.endswith("At confidence 0 both panels' gaps are larger on the FGSM test set.")
    alone = adv.claim_match_across_confidence(_table(draws, {}))  # no other strength ran
    assert alone.verdict == "inconclusive" and "No other confidence ran" in alone.note
    assert adv.claim_match_across_confidence(_table(draws, {7.5: (1.0, 12.0)})).verdict == "does not hold"


def test_replication_claims_are_this_packages_and_say_what_a_draw_redraws():
    table = _table({s: (0.03 + 0.001 * s, (0.004 + 1e-4 * s, 0.006)) for s in range(5)}, {0.0: (5.0, 3.0)})
    claims = adv.replication_claims(table)
    assert [c.source for c in claims] == ["reproduction"] * 3 and all(c.holds for c in claims)
    assert all(adv._claims.DRAW in c.criterion for c in claims[:2]) and claims[2].criterion.count("z > 2") == 1


@pytest.mark.slow  # draws with matplotlib
def test_replication_figure_shows_the_draws_and_the_sweep():
    table = _table({s: (0.03 + 0.001 * s, (0.004, 0.006)) for s in range(5)}, {0.0: (17.8, -50.0), 2.5: (9.0, 1.0)})
    fig = adv.plot_replications(table)
    left, right = fig.axes
    assert len(left.get_xticklabels()) == 6  # four gap changes, two attack matches
    assert [len(line.get_xdata()) for line in right.get_lines()[:2]] == [3, 3]  # 0, 2.5 and the main 7.5
    assert np.isclose(right.get_lines()[0].get_ydata()[0], 17.8)


def test_generate_refuses_bad_variants_before_any_attack(capsys):
    assert adv.main(["generate", "profile=quick", "experiment.replication_seeds=[0]", "--cache-dir", "unused"]) == 2
    assert "replication_seeds must not hold the main run's seed 0" in capsys.readouterr().err


def test_a_stopped_replication_resumes_from_its_finished_variants(tmp_path, monkeypatch):
    """Finished variants' rows wait in the run's folder: a rerun reads them back, the same bits, and then clears."""
    from shapley_research.experiments._resume import PartCache
    from shapley_research.experiments.adversarial import _replication

    variants = adv.replication_variants(seed=0, cw_confidence=7.5, replication_seeds=[1],
                                        cw_confidence_sweep=[0.0])
    monkeypatch.setattr(_replication, "run_variant",
                        lambda variant, params, cache_dir: _rows(variant.kind, variant.seed, variant.cw_confidence,
                                                                 gap=0.1 / 3))
    monkeypatch.setattr(PartCache, "clear", lambda self: None)  # as if stopped before the end
    resume = tmp_path / "resume"
    main = _rows("main", 0, 7.5)
    first = adv.run_replications(variants, {"n_per_class": 3}, None, resume_dir=resume, main_rows=main)
    assert len(list(resume.glob("adversarial_variant_*.json"))) == 2
    monkeypatch.undo()

    def never(*args):
        raise AssertionError("a finished variant ran again")

    monkeypatch.setattr(_replication, "run_variant", never)
    again = adv.run_replications(variants, {"n_per_class": 3}, None, resume_dir=resume, main_rows=main)
    pd.testing.assert_frame_equal(first, again)
    assert not resume.exists()
