"""Verdicts beyond holds / does not hold: inconclusive intervals, claims outside their scope, sanity checks."""

import pytest

from shapley_research.experiments._common import claim, held_count, undecided_count, validate_metrics, verdict_of
from shapley_research.experiments._report import _claims_table


def _claim(holds=True, **kwargs):
    return claim("a claim", "a statistic", 1.0, holds, source="reproduction", criterion="a rule", **kwargs)


def test_undecided_claims_do_not_hold_and_say_why():
    entry = _claim(False, undecided="inconclusive").to_dict()
    assert entry["holds"] is False and entry["verdict"] == "inconclusive" and verdict_of(entry) == "inconclusive"
    with pytest.raises(ValueError, match="cannot hold"):
        _claim(True, undecided="inconclusive")
    with pytest.raises(ValueError, match="undecided must be None or one of"):
        _claim(False, undecided="maybe")
    assert verdict_of({"holds": True}) == "holds" and "verdict" not in _claim(True).to_dict()  # decided: holds says it
    assert "sanity" not in _claim(True).to_dict() and _claim(True, sanity=True).to_dict()["sanity"] is True


def test_sanity_checks_are_not_counted_with_the_evidence():
    claims = [_claim(True).to_dict(), _claim(False).to_dict(), _claim(True, sanity=True).to_dict(),
              _claim(False, undecided="outside its scope").to_dict(),
              _claim(False, undecided="inconclusive").to_dict()]
    assert held_count(claims, "reproduction") == (1, 4)
    assert undecided_count(claims, "reproduction") == {"inconclusive": 1, "outside its scope": 1}
    validate_metrics({"claims": claims})
    evidence, sanity = _claims_table(claims, "reproduction"), _claims_table(claims, "reproduction", group="sanity")
    assert sum(line.startswith("| R") for line in evidence) == 4 and "*inconclusive*" in "\n".join(evidence)
    assert [line[:5] for line in sanity if line.startswith("| R")] == ["| R3 "]  # keeps its number
    assert sanity[0].startswith("Sanity checks")


def test_checks_decided_by_construction_are_listed_apart_and_not_counted():
    claims = [_claim(True).to_dict(), _claim(False, by_construction=True).to_dict(),
              _claim(True, by_construction=True).to_dict(), _claim(False).to_dict()]
    assert claims[1]["by_construction"] is True and "by_construction" not in claims[0]
    assert held_count(claims, "reproduction") == (1, 2)
    validate_metrics({"claims": claims})
    built = _claims_table(claims, "reproduction", group="by_construction")
    assert built[0].startswith("Checks of this reproduction that hold or fail by construction")
    assert [line[:5] for line in built if line.startswith("| R")] == ["| R2 ", "| R3 "]
    assert "by construction" not in "\n".join(_claims_table(claims, "reproduction"))
    bad = dict(claims[1], by_construction="yes")
    with pytest.raises(ValueError, match="by_construction"):
        validate_metrics({"claims": [bad]})
    with pytest.raises(TypeError, match="by_construction"):
        _claim(True, by_construction="yes")


def test_contradicting_verdicts_are_refused():
    entry = _claim(True).to_dict()
    entry["verdict"] = "does not hold"
    with pytest.raises(ValueError, match="contradicts"):
        validate_metrics({"claims": [entry]})
