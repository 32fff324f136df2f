"""The Python API (docs/api.md): harness.Study and harness.compare on a small built study (two LLM-free arms
under BM25, scored and statted), and the document's examples run as written."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import harness
from harness.errors import HarnessError
from harness.files import read_json
from harness.grid.paths import done_marker_path, per_question_path, stats_dir
from harness.grid.cells import configured_cells
from harness.grid.results import read_per_question
from harness.pipeline.status import format_status, grid_status
from harness.plan.load import load_study_plan
from harness.study import Study
from harness.study_lock import study_lock
from harness.cli.main import main
from pipeline_support import make_llm_free_study, run_cli

ROOT = Path(__file__).resolve().parents[1]
ARMS = ("S", "F512c")


def _build(root: Path) -> None:
    make_llm_free_study(root / "s", arms=ARMS)
    for stage in ("build-arms", "score", "stats"):
        assert main([stage, "--study", str(root / "s"), "--quiet"]) == 0, stage


@pytest.fixture(scope="module")
def built(built_once) -> Path:
    """The built study, read-only: a test that writes takes `study`, its own copy."""
    return built_once("api-study", _build) / "s"


@pytest.fixture
def study(built, tmp_path) -> Path:
    shutil.copytree(built, tmp_path / "s")
    return tmp_path / "s"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.M | re.S)


def test_the_documented_examples_run(built, tmp_path, monkeypatch, capsys):
    shutil.copytree(built, tmp_path / "my-study")
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(ROOT / "docs" / "api.md")
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), {"__name__": "docs_api"})
    out = capsys.readouterr().out
    assert "H3-F512c-papers" in out and "p_signflip" in out
    assert str(tmp_path / "my-study" / "results" / "report" / "index.html") in out


def test_import_harness_loads_the_api_only_when_asked():
    code = ("import sys, harness; print('harness.api' in sys.modules, 'pandas' in sys.modules); "
            "from harness import Study, compare; print(Study.__name__, compare.__module__); "
            "print('Study' in dir(harness))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout.split("\n")
    assert out[:3] == ["False False", "StudyHandle harness.api.frame_compare", "True"]
    with pytest.raises(AttributeError, match="no attribute 'Studdy'"):
        harness.Studdy  # noqa: B018


def test_a_folder_that_is_no_study_is_refused(tmp_path):
    with pytest.raises(HarnessError, match="is not a study directory"):
        harness.Study(tmp_path)


def test_status_is_what_harness_status_prints(built, capsys):
    status = harness.Study(built).status()
    assert str(status) == format_status(grid_status(Study.at(built)))
    code, out, _ = run_cli(capsys, "status", "--study", str(built))
    assert code == 0 and out == str(status) + "\n"
    assert status.next_step.startswith("make report") and "<pre>" in status._repr_html_()


def test_results_is_the_per_question_table(built):
    table = harness.Study(built).results()
    papers = read_per_question(per_question_path(Study.at(built), "papers"))
    assert list(table.columns) == list(papers.columns)
    assert sorted(table.dataset.unique()) == ["docs", "papers", "papers-pooled"]
    pd.testing.assert_frame_equal(table[table.dataset == "papers"].reset_index(drop=True), papers)


def test_outcomes_are_withheld_until_every_cell_is_scored(study):
    cell = configured_cells(Study.at(study))[0]
    done_marker_path(Study.at(study), cell).unlink()
    handle = harness.Study(study)
    for look in (handle.results, handle.verdicts):
        with pytest.raises(HarnessError, match="no interim looks"):
            look()
    assert len(handle.results(deviation="checking the API")) > 0
    assert "`harness.Study.results`" in (study / "DEVIATIONS.md").read_text(encoding="utf-8")


def test_verdicts_hold_every_registered_test_as_its_family_decided_it(built):
    frame = harness.Study(built).verdicts()
    plan = load_study_plan(Study.at(built))
    assert list(frame.test) == [t.id for fam in plan.families for t in fam.tests]
    for fam in plan.families:
        released = read_json(stats_dir(Study.at(built)) / f"{fam.id}.json")["rows"]
        for row in released:
            got = frame[frame.test == row["test"]].iloc[0]
            assert (got.family, got.verdict, got.estimate) == (fam.id, row["verdict"], row["estimate"])
            assert (got.ci95_bca_lo, got.ci95_bca_hi) == tuple(row["ci95_bca"])
            assert got.p_signflip_holm == row["p_signflip_holm"]


def test_a_family_that_did_not_run_gives_missing_rows(study):
    path = stats_dir(Study.at(study)) / "H3.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(record | {"status": "not run", "rows": [], "missing": ["arm S on papers"]}),
                    encoding="utf-8")
    frame = harness.Study(study).verdicts()
    assert list(frame.verdict) == ["missing", "missing"]
    assert list(frame.missing) == ["arm S on papers"] * 2 and frame.estimate.isna().all()
    assert frame._repr_html_().count("<tr>") == 3  # the header and both tests


def test_verdicts_from_another_freeze_are_refused(study):
    path = stats_dir(Study.at(study)) / "H3.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(record | {"frozen_config_hash": "0" * 64}), encoding="utf-8")
    with pytest.raises(HarnessError, match="statistics from another freeze"):
        harness.Study(study).verdicts()


def test_the_verdict_table_renders_as_html(built):
    frame = harness.Study(built).verdicts()
    html = frame._repr_html_()
    assert html.count("<table>") == 1 and html.count("<tr>") == len(frame) + 1
    assert all(test in html for test in frame.test) and "tables/" not in html
    assert "S - F512c" in html and f"{frame.estimate.iloc[0]:.2f}" in html
    derived = frame[frame.verdict == frame.verdict.iloc[0]]
    assert type(derived) is pd.DataFrame  # a selection is a plain frame, shown as pandas shows it


@pytest.mark.parametrize("dataset, metric, margin", [("papers", "rec@512t", 5.0),
                                                     ("docs", "prec@1024t", None)])
def test_compare_gives_harness_compares_numbers(built, tmp_path, capsys, dataset, metric, margin):
    """The same table (outside any study) through `harness compare --results` and harness.compare."""
    table = tmp_path / "table.parquet"
    shutil.copy(per_question_path(Study.at(built), dataset), table)
    extra = ["--margin", str(margin)] if margin else []
    code, out, _ = run_cli(capsys, "compare", "--results", str(table), "--dataset", dataset, "--a", "S",
                           "--b", "F512c", "--retriever", "bm25", "--metric", metric, "--resamples", "2000",
                           *extra)
    assert code == 0
    result = harness.compare(read_per_question(table), a="S", b="F512c", metric=metric, margin=margin,
                             resamples=2000)
    assert result.to_json() == json.loads(out) and result.verdict is None
    row = result.to_frame()
    assert len(row) == 1 and row.estimate[0] == result.contrast.estimate
    assert (row.ci95_bca_lo[0], row.ci95_bca_hi[0]) == result.contrast.ci95_bca


def test_compare_decides_with_a_registered_rule(built):
    table = harness.Study(built).results()
    result = harness.compare(table, a="S", b="F512c", metric="rec@512t", dataset="papers", margin=5,
                             rule="tost", resamples=2000)
    c = result.contrast
    excludes_zero = c.ci95_bca[0] > 0 or c.ci95_bca[1] < 0
    expected = "equiv." if c.p_tost < 0.05 else "diff." if excludes_zero else "incon."
    assert (result.verdict, result.ci_shown, result.rule) == (expected, "90", "tost")
    assert result.to_json()["verdict"] == expected and result.to_frame().verdict[0] == expected
    html = result._repr_html_()
    assert "<table>" in html and f"{c.estimate:.2f}" in html and "90%" in html and expected in html


def test_compare_on_a_frame_without_clusters_or_datasets():
    frame = pd.DataFrame({"arm": ["x"] * 4 + ["y"] * 4, "qid": [1, 2, 3, 4] * 2, "metric": "ndcg",
                          "value": [0.5, 0.6, 0.7, 0.2, 0.4, 0.6, 0.5, 0.1]})
    result = harness.compare(frame, a="x", b="y", metric="ndcg", cluster=None)
    assert (result.contrast.n_questions, result.contrast.n_clusters, result.contrast.dataset) == (4, 4, "-")
    assert result.contrast.estimate == pytest.approx(10.0)  # the mean paired difference, in points


@pytest.mark.parametrize("change, options, message", [
    (lambda f: f.drop(columns="cluster"), {}, "no column 'cluster' \\(cluster=None makes each question"),
    (lambda f: f, {"dataset": None},
     "holds 3 values of 'dataset' \\(docs, papers, papers-pooled\\): pass dataset="),
    (lambda f: f, {"rule": "tost"}, "rule 'tost' needs margin="),
    (lambda f: f, {"rule": "coin-flip"}, "unknown decision rule 'coin-flip'"),
    (lambda f: f, {"resamples": 1}, "compare: resamples= must lie from 2 to"),
    (lambda f: f, {"strata": "domain"}, "no column 'domain'"),
    (lambda f: f.assign(value=f.value * 100), {}, "metric values must lie in \\[0, 1\\]"),
])
def test_compare_refuses_what_it_cannot_pair(built, change, options, message):
    table = change(harness.Study(built).results())
    with pytest.raises(HarnessError, match=message):
        harness.compare(table, **{"a": "S", "b": "F512c", "metric": "rec@512t", "dataset": "papers",
                                  **options})


def test_a_stage_runs_as_its_command(study, capsys):
    handle = harness.Study(study)
    capsys.readouterr()
    assert handle.stats(family=["H3"]) == 0
    assert "H3: " in capsys.readouterr().out
    assert handle.stats(quiet=True) == 0
    assert capsys.readouterr().out == ""  # --quiet applied as `harness` applies it


@pytest.mark.parametrize("call, message", [
    (lambda s: s.score(worker=2), "harness.Study.score\\(\\): no option 'worker'; `harness score` takes "
     "adopt_unrecorded, dataset, executor, no_progress, quiet, ray_address, wait, workers"),
    (lambda s: s.score(executor="cloud"), "argument --executor: invalid choice: 'cloud'"),
    (lambda s: s.stats(quiet="yes"), "quiet= is a switch"),
    (lambda s: s.run("lab"), "`harness lab` works on no study"),
    (lambda s: s.run("scores"), "no command 'scores'"),
])
def test_a_stage_refuses_options_its_command_does_not_take(built, call, message):
    with pytest.raises(HarnessError, match=message):
        call(harness.Study(built))


def test_a_writing_stage_takes_the_study_lock(study):
    with study_lock(Study.at(study).lock_path, "harness stats (another writer)"):
        with pytest.raises(HarnessError, match="another harness process is writing this study"):
            harness.Study(study).stats(quiet=True)
