"""The one sampling driver: the shared options, the sequence it owns, and the estimators as specifications."""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from games import AirportGame, CountingGame, random_unanimity_game

import shapley_research as sr
from shapley_research.estimators._sampling._driver import Run, Sampler, SamplingOptions, SamplingSpec, drive
from shapley_research.estimators._sampling._loop import MeanState
from shapley_research.result import Finalizer, SamplingRecord

ESTIMATORS = {
    "permutation_shapley": ("_permutation.py", sr.permutation_shapley),
    "msr_banzhaf": ("_banzhaf.py", sr.msr_banzhaf),
    "beta_shapley": ("_beta_shapley.py", sr.beta_shapley),
    "stratified_svarm_shapley": ("_svarm.py", sr.stratified_svarm_shapley),
    "group_testing_shapley": ("_group_testing.py", sr.group_testing_shapley),
    "compressive_shapley": ("_compressive.py", sr.compressive_shapley),
    "unbiased_kernel_shapley": ("_kernel_shapley.py", sr.unbiased_kernel_shapley),
    "owen_shapley": ("_owen.py", sr.owen_shapley),
    "kernel_shapley": ("_kernel_regression.py", sr.kernel_shapley),
    "leverage_shapley": ("_leverage.py", sr.leverage_shapley),
}
ESTIMATORS_DIR = Path(sr.__file__).parent / "estimators"


def code_lines(path: Path, name: str) -> int:
    """Code lines of the function ``name`` of ``path``: its docstring, comments and blank lines aside."""
    source = path.read_text(encoding="utf-8")
    text = source.splitlines()
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name)
    lines = set(range(node.lineno, node.end_lineno + 1))
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        lines -= set(range(first.lineno, first.end_lineno + 1))
    return sum(1 for n in lines if text[n - 1].strip() and not text[n - 1].strip().startswith("#"))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_sampling_entry_is_thin_and_calls_the_driver(name):
    module, _ = ESTIMATORS[name]
    path = ESTIMATORS_DIR / module
    assert code_lines(path, name) <= 30
    function = next(n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if isinstance(n, ast.FunctionDef) and n.name == name)
    called = {c.func.id for c in ast.walk(function) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
    assert "drive" in called and "run_sampling" not in called


def test_the_code_line_count_can_fail(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f(x):\n    \"\"\"Doc.\"\"\"\n" + "    x += 1\n" * 31 + "    return x\n")
    assert code_lines(path, "f") == 33


# --- the shared options ---


def test_options_are_checked_once_and_frozen():
    game = AirportGame([1.0, 2.0, 3.0])
    options = SamplingOptions.checked(game, "permutation_shapley", batch_size=4, empty_utility=1,
                                      target_stderr=0.1, checkpoint="x.ckpt", checkpoint_interval=5)
    assert (options.batch_size, options.empty_utility, options.target_stderr, options.checkpoint_interval) == (
        4, 1.0, 0.1, 5.0)
    assert isinstance(options.empty_utility, float)
    assert options.targets == {"target_stderr": 0.1, "target_rank_correlation": None}
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.batch_size = 5  # type: ignore[misc]


@pytest.mark.parametrize("keywords, error, named", [
    ({"batch_size": 0}, ValueError, "batch_size"), ({"batch_size": 1.5}, TypeError, "batch_size"),
    ({"n_jobs": 0}, ValueError, "n_jobs"), ({"empty_utility": "0"}, TypeError, "empty_utility"),
    ({"target_stderr": -1.0}, ValueError, "target_stderr"),
    ({"target_rank_correlation": 1.5}, ValueError, "target_rank_correlation"),
    ({"checkpoint": "x.ckpt", "checkpoint_interval": -1.0}, ValueError, "checkpoint_interval"),
])
def test_a_bad_option_is_refused_by_name(keywords, error, named):
    with pytest.raises(error, match=named):
        SamplingOptions.checked(AirportGame([1.0, 2.0]), "permutation_shapley", **keywords)


def test_the_interval_is_checked_only_with_a_checkpoint():
    """As before the driver: without a checkpoint the interval is unused, so never refused."""
    assert SamplingOptions.checked(AirportGame([1.0]), "x", checkpoint_interval=-1.0).checkpoint_interval == 60.0


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_estimator_refuses_a_bad_shared_option_before_evaluating(name):
    game = CountingGame(random_unanimity_game(30, 6, 3, seed=1))
    _, estimator = ESTIMATORS[name]
    with pytest.raises(ValueError, match="batch_size"):
        estimator(game, 3000, 0, batch_size=0)
    with pytest.raises(ValueError, match="target_stderr"):
        estimator(game, 3000, 0, target_stderr=-1.0)
    assert game.rows == 0


# --- the driver's sequence, through a toy specification ---


@dataclass(frozen=True)
class MeanFinalizer(Finalizer):
    def finalize(self, state, record):
        return state.mean.copy(), state.stderr, {"finalized": True}


def constant_batch(game, rng, size):
    """Each unit: a draw of N normals around the player's index, evaluating nothing but counting N."""
    n = game.n_players
    return np.arange(n) + rng.standard_normal((size, n)), size * n


@dataclass(frozen=True, kw_only=True)
class ToySpec(SamplingSpec):
    pilot_units: int = 0

    def start(self, game, run, anchors):
        head = None
        if self.pilot_units:
            head = MeanState(self.dim)
            head.add_batch(np.full((self.pilot_units, self.dim), 100.0))
        record = SamplingRecord(MeanFinalizer(), {}, seeds=(run.entropy,))
        return Sampler(lambda rng, size: constant_batch(game, rng, size), {"before": run.batch_size}, record,
                       info_after={"after": anchors.empty}, head=head, pilot=self.pilot_units,
                       evaluations=self.pilot_units * self.per_unit)


def toy(n: int = 6, **fields) -> ToySpec:
    return ToySpec(method="toy", n_players=n, dim=n, per_unit=n, unit_name="toy unit", desc="toy",
                   progress_unit="toy", **fields)


def test_the_driver_plans_evaluates_the_anchors_and_reports_in_order():
    game = CountingGame(AirportGame(np.arange(1.0, 7.0)))
    result = drive(toy(), game, 1 + 6 * 7, 3, SamplingOptions(batch_size=3))
    assert result.n_samples == 7 and result.n_evaluations == 1 + 7 * 6  # U(empty) once, 7 units of 6
    assert game.rows == 1  # only the anchor: the toy batches evaluate nothing
    assert list(result.info) == ["before", "stopped_by", "resumed_samples", "after", "finalized",
                                 "unspent_evaluations"]
    assert result.info["unspent_evaluations"] == 0
    assert result.info["stopped_by"] == "budget" and result.seed == 3
    assert result.record is not None and result.state.count == 7


def test_the_driver_names_the_unit_when_the_budget_is_too_small():
    with pytest.raises(ValueError, match="smaller than one toy unit: it needs at least 7 utility evaluations"):
        drive(toy(), AirportGame(np.arange(1.0, 7.0)), 6, 0, SamplingOptions())


def test_the_driver_enumerates_a_game_the_budget_covers():
    game = AirportGame(np.arange(1.0, 7.0))
    result = drive(toy(), game, 2**6, 0, SamplingOptions())
    assert result.info["stopped_by"] == "enumeration"
    np.testing.assert_allclose(result.values, sr.exact_shapley(game).values)


def test_a_pilot_takes_units_of_the_budget_and_is_merged_first():
    game = AirportGame(np.arange(1.0, 7.0))
    result = drive(toy(pilot_units=2), game, 1 + 6 * 7, 3, SamplingOptions(batch_size=3))
    assert result.n_samples == 7 and result.n_evaluations == 1 + 7 * 6
    plain = drive(toy(), game, 1 + 6 * 5, 3, SamplingOptions(batch_size=3))
    np.testing.assert_allclose(result.values, (2 * 100.0 + 5 * plain.values) / 7, rtol=1e-14)


def test_the_driver_stops_at_a_target_and_is_the_same_for_any_n_jobs():
    game = AirportGame(np.arange(1.0, 7.0))
    runs = [drive(toy(), game, None, 4, SamplingOptions(batch_size=8, target_stderr=0.05, n_jobs=jobs))
            for jobs in (None, 2)]
    assert runs[0].info["stopped_by"] == "target_stderr" and runs[0].stderr.max() <= 0.05
    np.testing.assert_array_equal(runs[0].values, runs[1].values)


def test_the_driver_resumes_a_checkpoint_to_the_same_bits(tmp_path):
    game = AirportGame(np.arange(1.0, 13.0))  # 12 players: no budget below enumerates
    whole = drive(toy(12), game, 1 + 12 * 40, 5, SamplingOptions(batch_size=4))
    path = tmp_path / "toy.ckpt"
    drive(toy(12), game, 1 + 12 * 16, 5, SamplingOptions(batch_size=4, checkpoint=path))
    resumed = drive(toy(12), game, 1 + 12 * 40, None, SamplingOptions(batch_size=4, checkpoint=path))
    assert resumed.info["resumed_samples"] == 16 and resumed.seed == 5
    np.testing.assert_array_equal(whole.values, resumed.values)


def test_a_run_gets_the_checked_options_through_the_driver():
    captured = {}

    @dataclass(frozen=True, kw_only=True)
    class Capturing(ToySpec):
        def start(self, game, run, anchors):
            captured["run"] = run
            return super().start(game, run, anchors)

    spec = Capturing(method="toy", n_players=6, dim=6, per_unit=6, unit_name="toy unit", desc="toy",
                     progress_unit="toy")
    drive(spec, AirportGame(np.arange(1.0, 7.0)), 6 * 9 + 5, 0, SamplingOptions(empty_utility=0.5))
    run = captured["run"]
    assert isinstance(run, Run) and run.n_units == 9 + 0 and run.options.empty_utility == 0.5


# --- what the specifications keep through the driver, by the public estimators ---


def test_the_one_sided_warning_still_points_at_the_caller():
    with pytest.warns(UserWarning, match="one-sided") as caught:
        sr.msr_banzhaf(AirportGame(np.arange(1.0, 41.0)), 3, 0)
    assert caught[0].filename == __file__


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_estimator_reports_the_loop_and_the_seed_the_same_way(name):
    _, estimator = ESTIMATORS[name]
    game = random_unanimity_game(30, 6, 3, seed=2)
    result = estimator(game, 4000, 7)
    assert result.seed == 7 and result.info["stopped_by"] == "budget" and result.info["resumed_samples"] == 0
    assert result.info["batch_size"] >= 1 and result.n_evaluations <= 4000
    again = estimator(game, 4000, 7, n_jobs=2, batch_size=result.info["batch_size"])
    np.testing.assert_array_equal(result.values, again.values)
    assert estimator(game, 2**30, 7, target_stderr=1e9).info["stopped_by"] == "target_stderr"


class _ProcessRecordingGame(sr.Game):
    """A cheap game that records the processes that evaluate it (module level: workers can unpickle it)."""

    n_players = 30  # 2^30 coalitions: the budget cannot enumerate them

    def __init__(self):
        self.pids: set[int] = set()

    def _evaluate(self, masks):
        import os

        self.pids.add(os.getpid())
        return masks @ np.arange(1.0, 31.0) + np.sqrt(masks.sum(axis=1))


def test_a_run_of_one_batch_starts_no_workers():
    """Workers would only add their start-up: the batch runs here, with the bits of n_jobs=None."""
    import os

    game = _ProcessRecordingGame()
    parallel = sr.msr_banzhaf(game, 200, seed=3, n_jobs=2)
    assert parallel.info["batch_size"] >= parallel.n_samples  # one batch
    assert game.pids == {os.getpid()}
    np.testing.assert_array_equal(parallel.values, sr.msr_banzhaf(_ProcessRecordingGame(), 200, seed=3).values)


def test_a_budget_left_by_whole_units_is_reported_unspent():
    game = random_unanimity_game(10, 6, 3, seed=2)
    result = sr.permutation_shapley(game, 1 + 3 * 20 + 15, seed=0, antithetic=True)  # 3 pairs of 20, 15 left
    assert result.n_evaluations == 61 and result.info["unspent_evaluations"] == 15
    stopped = sr.permutation_shapley(game, 1_001, seed=0, target_stderr=10.0, batch_size=10)  # stops at 30
    assert stopped.info["stopped_by"] == "target_stderr"
    assert stopped.info["unspent_evaluations"] == 1_001 - stopped.n_evaluations > 0
    assert "unspent_evaluations" not in sr.permutation_shapley(game, None, seed=0, target_stderr=10.0).info
    enumerated = sr.permutation_shapley(game, 2_000, seed=0)  # 2^10 evaluations buy the exact values
    assert enumerated.info["stopped_by"] == "enumeration" and enumerated.info["unspent_evaluations"] == 2_000 - 1_024
