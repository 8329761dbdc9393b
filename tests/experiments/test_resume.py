"""Finished parts of a long run on disk: exact round trip, keyed by the run, removed at the end."""

import json
import math

from shapley_research.experiments import clear_earlier_run, folder_state, written_since
from shapley_research.experiments._resume import PartCache
from shapley_research.experiments.adversarial import RESUME_FOLDER


def test_a_part_comes_back_bit_for_bit_for_its_run_only(tmp_path):
    parts = PartCache(tmp_path / "parts", "draw_", {"settings": [1, 2.5]})
    value = {"x": 0.1 + 0.2, "y": float("nan"), "z": [1e-300, -2.0 / 3.0]}
    assert parts.read(7) is None  # nothing yet
    parts.write(7, value)
    back = parts.read(7)
    assert back["x"] == value["x"] and math.isnan(back["y"]) and back["z"] == value["z"]
    assert PartCache(tmp_path / "parts", "draw_", {"settings": [1, 2.6]}).read(7) is None  # another run's
    assert not list((tmp_path / "parts").glob("*.part"))  # written atomically


def test_an_invalid_or_broken_part_is_recomputed_and_clear_removes_the_folder(tmp_path):
    parts = PartCache(tmp_path / "parts", "draw_", {}, valid=lambda label, value: value.get("label") == label)
    parts.write(1, {"label": 2})
    assert parts.read(1) is None  # not a result of label 1
    parts.path(3).write_text("{broken")
    assert parts.read(3) is None
    (tmp_path / "parts" / "other.txt").write_text("kept")
    parts.clear()
    assert [p.name for p in (tmp_path / "parts").iterdir()] == ["other.txt"]  # only this prefix goes
    (tmp_path / "parts" / "other.txt").unlink()
    parts.clear()
    assert not (tmp_path / "parts").exists()


def test_a_stopped_runs_finished_parts_are_no_output_the_next_run_removes(tmp_path):
    """`shapley-research run` lists what a stopped run wrote, and the next run removes it: not the parts it
    resumes from (adversarial's resume_dir, privacy_noise's cache/)."""
    run_dir = tmp_path / "adversarial"
    run_dir.mkdir()
    before = folder_state(run_dir)
    PartCache(run_dir / RESUME_FOLDER, "adversarial_variant_", {}).write("a", {"x": 1.0})
    PartCache(run_dir / "cache", "privacy_draw_", {}).write(1, {"x": 1.0})
    (run_dir / "values.csv").write_text("x\n")
    outputs = written_since(run_dir, before)
    assert outputs == ["values.csv"]
    (run_dir / "run_info.json").write_text(json.dumps({"finished": False, "outputs": outputs}))
    assert clear_earlier_run(run_dir) == ["values.csv", "run_info.json"]
    assert PartCache(run_dir / RESUME_FOLDER, "adversarial_variant_", {}).read("a") == {"x": 1.0}
