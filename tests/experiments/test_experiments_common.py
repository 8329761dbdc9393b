"""Unit tests of the helpers experiment notebooks share (shapley_research.experiments)."""

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from shapley_research.experiments import (EXPERIMENT_NAMES, Claim, build_notebook, claim, experiment_dir,
                                          is_timing_key, notebook_defaults, progress, read_metrics, save_figure,
                                          set_blas_threads, setup_matplotlib, to_jsonable, validate_metrics,
                                          without_timings, write_metrics, write_notebook, write_table)


def test_experiment_names_are_the_papers_six_and_data_cleaning():
    assert EXPERIMENT_NAMES == ("iris_accuracy", "runtime_scaling", "sparsity", "ridge_stability",
                                "privacy_noise", "adversarial", "data_cleaning", "mlp_cleaning")


def test_to_jsonable_converts_numpy_and_containers(tmp_path):
    value = {"a": np.float32(0.5), "b": np.int64(3), "c": np.array([[1, 2]]), "d": (np.bool_(True), None),
             "e": {2, 1}, "f": tmp_path, "g": float("nan"), "h": -np.inf}
    out = to_jsonable(value)
    assert out == {"a": 0.5, "b": 3, "c": [[1, 2]], "d": [True, None], "e": [1, 2], "f": str(tmp_path),
                   "g": None, "h": None}
    assert type(out["a"]) is float and type(out["b"]) is int and type(out["d"][0]) is bool
    json.dumps(out, allow_nan=False)


@pytest.mark.parametrize("bad", [object(), {1: "non-string key"}])
def test_to_jsonable_refuses_values_without_json_form(bad):
    with pytest.raises(TypeError):
        to_jsonable(bad)


OURS = {"source": "reproduction", "criterion": "error < 0.05"}
PAPERS = {"source": "paper", "section": "Section 5.1, Figure 4", "criterion": "error < 0.05"}


def test_claim_coerces_numpy_types():
    c = claim("  Group testing is accurate. ", "max_error", np.float64(0.01), np.float64(0.01) < 0.05, **PAPERS)
    assert c == Claim("Group testing is accurate.", "max_error", 0.01, True, "paper", "error < 0.05",
                      "Section 5.1, Figure 4")
    assert type(c.holds) is bool and type(c.value) is float
    assert c.to_dict() == {"claim": "Group testing is accurate.", "statistic": {"name": "max_error", "value": 0.01},
                           "holds": True, "verdict": "holds", "source": "paper", "section": "Section 5.1, Figure 4",
                           "criterion": "error < 0.05", "timing": False}


def test_claim_of_the_reproduction_with_note_and_timing():
    c = claim("Ours is fast.", "seconds", 1.5, False, source="reproduction", criterion="seconds < 1",
              note="the  machine\nwas busy", timing=np.bool_(True))
    assert c.to_dict() == {"claim": "Ours is fast.", "statistic": {"name": "seconds", "value": 1.5}, "holds": False,
                           "verdict": "does not hold", "source": "reproduction", "criterion": "seconds < 1",
                           "note": "the machine was busy", "timing": True}


@pytest.mark.parametrize("args, kwargs, error", [
    (("", "s", 1, True), OURS, ValueError),
    (("text", " ", 1, True), OURS, ValueError),
    (("text", "s", 1, np.array([True, False])), OURS, TypeError),
    (("text", "s", 1, "yes"), OURS, TypeError),
    (("text", "s", object(), True), OURS, TypeError),
    (("text", "s", 1, True), {"source": "someone", "criterion": "c"}, ValueError),
    (("text", "s", 1, True), {"source": "paper", "criterion": "c"}, ValueError),  # the paper's, but where?
    (("text", "s", 1, True), {"source": "reproduction", "criterion": " "}, ValueError),
    (("text", "s", 1, True), {**OURS, "timing": "no"}, TypeError),
])
def test_claim_rejects_bad_arguments(args, kwargs, error):
    with pytest.raises(error):
        claim(*args, **kwargs)


def test_claim_needs_source_and_criterion():
    with pytest.raises(TypeError, match="source"):
        claim("text", "s", 1, True, criterion="c")
    with pytest.raises(TypeError, match="criterion"):
        claim("text", "s", 1, True, source="reproduction")


def test_write_metrics_writes_sorted_plain_json(tmp_path):
    out = tmp_path / "exp"
    path = write_metrics(out, {"z": np.float64(1.5), "a": np.arange(3)},
                         [claim("A claim.", "stat", np.int32(2), np.bool_(False), **OURS)])
    assert path == out / "metrics.json"
    text = path.read_text()
    assert text.index('"a"') < text.index('"claims"') < text.index('"z"')
    doc = json.loads(text)
    assert doc == {"a": [0, 1, 2], "z": 1.5,
                   "claims": [{"claim": "A claim.", "statistic": {"name": "stat", "value": 2}, "holds": False,
                               "verdict": "does not hold", "source": "reproduction", "criterion": "error < 0.05",
                               "timing": False}]}
    assert read_metrics(out) == doc


def test_write_metrics_accepts_claim_dicts(tmp_path):
    entry = {"claim": "A claim.", "statistic": {"name": "s", "value": [1.0]}, "holds": True, **PAPERS}
    write_metrics(tmp_path, {}, [entry])
    assert read_metrics(tmp_path)["claims"] == [entry]


GOOD = {"claim": "c", "statistic": {"name": "s", "value": 1}, "holds": True, **OURS}


@pytest.mark.parametrize("metrics, claims, message", [
    ({"claims": []}, [claim("c", "s", 1, True, **OURS)], "claims"),
    ({}, [], "non-empty"),
    ({}, [{k: v for k, v in GOOD.items() if k != "holds"}], "lacks the key 'holds'"),
    ({}, [{k: v for k, v in GOOD.items() if k != "source"}], "lacks the key 'source'"),
    ({}, [{k: v for k, v in GOOD.items() if k != "criterion"}], "lacks the key 'criterion'"),
    ({}, [{**GOOD, "holds": 1}], "true or false"),
    ({}, [{**GOOD, "timing": "yes"}], "timing must be true or false"),
    ({}, [{**GOOD, "statistic": "s = 1"}], "statistic"),
    ({}, [{**GOOD, "claim": ""}], "non-empty string"),
    ({}, [{**GOOD, "source": "the authors"}], "source must be one of"),
    ({}, [{**GOOD, "source": "paper"}], "section"),
])
def test_write_metrics_rejects_bad_structure(tmp_path, metrics, claims, message):
    with pytest.raises(ValueError, match=message):
        write_metrics(tmp_path, metrics, claims)
    assert not (tmp_path / "metrics.json").exists()


def test_without_timings_keeps_exactly_what_must_not_change():
    timed = claim("Fast.", "ratio", 3.0, True, **OURS, timing=True, note="took 3 s").to_dict()
    undecided = claim("Fast.", "ratio", 1.0, False, **OURS, timing=True, undecided="inconclusive").to_dict()
    assert without_timings(undecided) == without_timings(timed), "an undecided timing verdict is a measured time too"
    exact = claim("Exact.", "error", 0.0, True, **PAPERS).to_dict()
    doc = {"n": 3, "wall_seconds": 1.2, "nested": {"cpu_time_s": 0.5, "error": 0.25, "cost_slope": 2.0},
           "claims": [timed, exact]}
    assert without_timings(doc) == {"n": 3, "nested": {"error": 0.25}, "claims": [
        {"claim": "Fast.", "statistic": {"name": "ratio"}, "source": "reproduction", "criterion": "error < 0.05",
         "timing": True}, exact]}
    assert is_timing_key("measured_seconds_to_target") and not is_timing_key("n_permutations")


def test_validate_and_read_metrics_errors(tmp_path):
    with pytest.raises(ValueError, match="JSON object"):
        validate_metrics([])
    with pytest.raises(FileNotFoundError):
        read_metrics(tmp_path)
    (tmp_path / "metrics.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_metrics(tmp_path)


def test_experiment_dir_creates_nested(tmp_path):
    assert experiment_dir(tmp_path / "a", "b") == tmp_path / "a" / "b"
    assert (tmp_path / "a" / "b").is_dir()
    assert experiment_dir(tmp_path / "a") == tmp_path / "a"


@pytest.mark.slow  # over a second
def test_save_figure_writes_png_and_pdf(tmp_path):
    import matplotlib.pyplot as plt

    setup_matplotlib()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    paths = save_figure(fig, tmp_path / "exp", "curve")
    assert [p.name for p in paths] == ["curve.png", "curve.pdf"]
    assert paths[0].read_bytes().startswith(b"\x89PNG") and paths[1].read_bytes().startswith(b"%PDF")
    first_pdf = paths[1].read_bytes()
    save_figure(fig, tmp_path / "exp", "curve")
    assert paths[1].read_bytes() == first_pdf, "PDF output should not carry a timestamp"
    assert [p.name for p in save_figure(fig, tmp_path, "only_png", pdf=False)] == ["only_png.png"]
    for bad in ("sub/dir", "curve.png", ""):
        with pytest.raises(ValueError):
            save_figure(fig, tmp_path, bad)
    plt.close(fig)


def test_a_run_without_figures_draws_and_writes_none(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from shapley_research.experiments import FIGURES_ENV, figures_enabled

    monkeypatch.setenv(FIGURES_ENV, "off")
    assert not figures_enabled()
    setup_matplotlib()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    assert save_figure(fig, tmp_path / "exp", "curve") == []
    assert not (tmp_path / "exp").exists() and not plt.fignum_exists(fig.number)  # closed, nothing written
    with pytest.raises(ValueError):
        save_figure(fig, tmp_path, "curve.png")  # the stem is still checked
    monkeypatch.setenv(FIGURES_ENV, "on")
    assert figures_enabled()


def test_write_table_writes_tidy_csv(tmp_path):
    df = pd.DataFrame({"n": [10, 20], "method": ["a", "b"], "error": [0.1, 0.05]})
    path = write_table(df, tmp_path, "errors.csv")
    assert path == tmp_path / "errors.csv"
    pd.testing.assert_frame_equal(pd.read_csv(path), df)
    assert write_table([{"x": 1}, {"x": 2}], tmp_path, "rows").read_text() == "x\n1\n2\n"


@pytest.mark.parametrize("df", [
    pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "x"), ("a", "y")])),
    pd.DataFrame([[1, 2]], columns=["a", "a"]),
    pd.DataFrame([[1, 2]]),
])
def test_write_table_rejects_untidy_columns(tmp_path, df):
    with pytest.raises(ValueError, match="tidy"):
        write_table(df, tmp_path, "t")


def test_set_blas_threads_limits_and_restores():
    from threadpoolctl import threadpool_info

    limiter = set_blas_threads(1)
    try:
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
    finally:
        limiter.restore_original_limits()
    with pytest.raises(ValueError):
        set_blas_threads(0)


def test_progress_prints_coarse_lines(capsys):
    assert list(progress(range(20), desc="work", steps=4)) == list(range(20))
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["work: 5/20", "work: 10/20", "work: 15/20", "work: 20/20"]
    assert list(progress(iter(range(5)))) == list(range(5))
    assert [line.split(" done")[0] for line in capsys.readouterr().out.splitlines()] == ["1", "2", "4"]


@pytest.mark.slow  # over a second
def test_build_notebook_tags_the_parameters_cell(tmp_path):
    nb = build_notebook("n = 3\nname: str = 'x'  # comment\n", ["print(n)", ("markdown", "# Notes")],
                        title="# Title")
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code", "markdown"]
    assert nb.cells[1].metadata["tags"] == ["parameters"]
    path = write_notebook(nb, tmp_path / "nb" / "x.ipynb")
    assert notebook_defaults(path) == {"n": 3, "name": "x"}


@pytest.mark.parametrize("parameters, message", [
    ("n = 1 +", "not valid Python"),
    ("import os", "only 'name = literal'"),
    ("n = len([])", "must be a literal"),
])
def test_build_notebook_rejects_bad_parameters(parameters, message):
    with pytest.raises(ValueError, match=message):
        build_notebook(parameters, [])


def test_notebook_defaults_requires_a_first_tagged_cell(tmp_path):
    import nbformat.v4 as nbf

    untagged = nbf.new_notebook(cells=[nbf.new_code_cell("n = 1")])
    write_notebook(untagged, tmp_path / "a.ipynb")
    with pytest.raises(ValueError, match="tagged 'parameters'"):
        notebook_defaults(tmp_path / "a.ipynb")
    late = build_notebook("n = 1", [])
    late.cells.insert(0, nbf.new_code_cell("import os"))
    write_notebook(late, tmp_path / "b.ipynb")
    with pytest.raises(ValueError, match="first code cell"):
        notebook_defaults(tmp_path / "b.ipynb")
    (tmp_path / "c.ipynb").write_text("not json")
    with pytest.raises(ValueError, match="is not a notebook"):
        notebook_defaults(tmp_path / "c.ipynb")
