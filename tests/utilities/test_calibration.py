"""The routing cost model's calibration: fixed or measured once per machine, cached, and used by route_by_cost."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge

from shapley_research.utilities.learners import route_by_cost, route_decision
# Internal: the calibration cache and the cost model's formulas, which route_by_cost and route_decision use (no
# public call returns a Calibration, its cache file or its key, or takes factors without one)
from shapley_research.utilities.learners import _calibration
from shapley_research.utilities.learners._calibration import cache_path, calibration, machine_key
from shapley_research.utilities.learners._cost import ROUTING_ENV, SIDES, Calibration, logistic_costs, ridge_costs


@pytest.fixture
def calibrated(monkeypatch, tmp_path):
    """Calibrated mode with an empty cache folder and no calibration kept by this process."""
    monkeypatch.setenv(ROUTING_ENV, "calibrated")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(_calibration, "_PROCESS_CALIBRATION", {})
    return tmp_path


def test_fixed_mode_uses_the_committed_constants(monkeypatch):
    monkeypatch.setenv(ROUTING_ENV, "fixed")
    assert calibration() == Calibration() and set(calibration().factors) == set(SIDES)
    assert "fixed" in route_decision(LogisticRegression(), "accuracy", "auto", 300, 64, 10).reason


@pytest.mark.parametrize("value", ["sometimes", "1"])
def test_an_unknown_mode_is_refused(monkeypatch, value):
    monkeypatch.setenv(ROUTING_ENV, value)
    with pytest.raises(ValueError, match=ROUTING_ENV):
        route_decision(LogisticRegression(), "accuracy", "auto", 300, 64, 10)  # fast="auto" asks the cost model


def test_factors_scale_each_side_alone():
    base = logistic_costs(300, 64, 10)
    scaled = logistic_costs(300, 64, 10, factors={"lbfgs": 2.0, "sklearn_logistic": 3.0})
    assert scaled[0] == pytest.approx(2 * base[0]) and scaled[1] == pytest.approx(3 * base[1])
    binary = logistic_costs(300, 10, 2, factors={"sklearn_logistic": 3.0})  # binary has a factor of its own
    assert binary[1] == pytest.approx(logistic_costs(300, 10, 2)[1])
    assert ridge_costs(200, 10, factors={"ridge": 0.5})[0] == pytest.approx(0.5 * ridge_costs(200, 10)[0])


@pytest.mark.slow
def test_measured_once_then_cached_and_read_back(calibrated, monkeypatch):
    first = calibration()
    assert first.source == "measured" and set(first.factors) == set(SIDES)
    assert all(np.isfinite(v) and v > 0 for v in first.factors.values())
    stored = json.loads(cache_path().read_text())["factors"]
    assert stored == first.factors and cache_path().parent.parent == calibrated
    assert calibration() is first  # the process keeps it: one route per configuration within a run
    monkeypatch.setattr(_calibration, "_PROCESS_CALIBRATION", {})
    monkeypatch.setattr(_calibration, "measure_factors", lambda: pytest.fail("measured again despite the cache"))
    again = calibration()
    assert again.source == "cached" and again.factors == first.factors
    assert "calibrated on this machine" in route_decision(Ridge(), "r2", "auto", 200, 10).reason
    assert "fixed" in route_by_cost(Ridge(), 200, 10).reason  # the function itself: committed constants


@pytest.mark.parametrize("content", ["not json", '{"factors": {"lbfgs": -1}}', '{"other": 1}'])
def test_an_unreadable_cache_is_measured_again(calibrated, monkeypatch, content):
    cache_path().parent.mkdir(parents=True)
    cache_path().write_text(content)
    monkeypatch.setattr(_calibration, "measure_factors", lambda: dict.fromkeys(SIDES, 2.0))
    assert calibration().source == "measured" and calibration().factors["lbfgs"] == 2.0
    assert json.loads(cache_path().read_text())["factors"]["lbfgs"] == 2.0


def test_a_read_only_cache_folder_only_loses_the_cache(calibrated, monkeypatch):
    blocker = calibrated / "shapley-research"
    blocker.write_text("a file where the folder would go")
    monkeypatch.setattr(_calibration, "measure_factors", lambda: dict.fromkeys(SIDES, 1.5))
    assert calibration().factors["ridge"] == 1.5


def test_the_key_names_the_machine_and_versions():
    assert len(machine_key()) == 16 and machine_key() == machine_key()
    assert cache_path().name == f"routing-{machine_key()}.json"


def test_the_key_follows_the_batched_learners_code(monkeypatch, tmp_path):
    """A solver changed in a checkout (the same version string) is measured again, not read from the cache."""
    (tmp_path / "_solver.py").write_text("STEP = 1\n")
    monkeypatch.setattr(_calibration, "__file__", str(tmp_path / "_calibration.py"))
    before = machine_key.__wrapped__()
    (tmp_path / "_solver.py").write_text("STEP = 2\n")
    assert machine_key.__wrapped__() != before
