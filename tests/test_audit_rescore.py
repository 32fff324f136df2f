"""`harness audit --rescore K` (harness.pipeline.rescore) on a scored copy of the demo: it passes, and fails
naming the cell and the first differing line when one chunk text, one run-file line or one per-question
value of a drawn cell is edited."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.cli.main import main
from harness.grid.cells import configured_cells
from harness.pipeline.rescore import DEFAULT_SEED, draw_cells
from harness.provenance.freeze import frozen_hash
from harness.study import Study
from pipeline_support import make_llm_free_study
from harness.grid.paths import cell_part_path, chunks_path, run_path
from provenance_support import record_as_written


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    study = make_llm_free_study(tmp_path_factory.mktemp("released"))
    for command in ("build-arms", "score", "stats"):
        assert (
            main([command, "--study", str(study.root), *(["--no-progress"] if command != "stats" else [])])
            == 0
        )
    return study


@pytest.fixture
def copy(released, tmp_path):
    shutil.copytree(released.root, tmp_path / "s")
    return Study.at(tmp_path / "s")


def audit(study, capsys) -> tuple[int, list[str]]:
    capsys.readouterr()
    # outside git the published hash anchors the registration (else the audit exits 3, not verifiable)
    code = main(
        ["audit", "--study", str(study.root), "--rescore", "5", "--registered-hash", frozen_hash(study)]
    )
    return code, [
        line for line in capsys.readouterr().out.splitlines() if "(rescore)" in line or "rescore:" in line
    ]


def first_cell(study):
    return draw_cells(study, 5, DEFAULT_SEED)[0][0]


def test_cells_under_an_llm_reranker_are_never_drawn():
    demo = Study.at(Path(__file__).resolve().parents[1] / "examples" / "demo")
    llm_yes = {c for c in configured_cells(demo) if getattr(c.retriever.config, "backend", None) == "llm-yes"}
    cells, skipped = draw_cells(demo, "all", DEFAULT_SEED)
    assert llm_yes and skipped == len(llm_yes) and not llm_yes & set(cells)


@pytest.mark.slow
def test_rescore_of_five_seeded_cells_passes_on_the_released_results(released, capsys):
    code, lines = audit(released, capsys)
    assert code == 0
    assert lines[0].startswith(f"rescore: 5 cell(s) drawn with seed {DEFAULT_SEED}")
    passed = [line for line in lines if line.startswith("PASS  (rescore)/")]
    assert len(passed) == 5 and "per-question rows identical" in passed[0]
    cells, _ = draw_cells(released, 5, DEFAULT_SEED)
    assert [line.split("/", 1)[1].split(":")[0] for line in passed] == [str(c) for c in cells]
    assert draw_cells(released, 5, DEFAULT_SEED) == draw_cells(released, 5, DEFAULT_SEED)  # the seed decides


@pytest.mark.slow
def test_an_edited_chunk_text_fails_its_cell(copy, capsys):
    cell = first_cell(copy)
    path = chunks_path(copy, *cell.names[:2])
    lines = path.read_text(encoding="utf-8").splitlines()
    chunk = json.loads(lines[3])
    chunk["text"] = chunk["text"].replace(" ", "  ", 1)
    lines[3] = json.dumps(chunk, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out = audit(copy, capsys)
    assert code == 1
    assert any(line.startswith(f"FAIL  (rescore)/{cell}: ") and f"{cell.arm}.jsonl line 4 differs" in line
               for line in out), out


@pytest.mark.slow
def test_an_edited_run_file_line_fails_its_cell(copy, capsys):
    cell = first_cell(copy)
    path = run_path(copy, *cell.names)
    lines = path.read_text(encoding="utf-8").splitlines()
    qid, q0, chunk_id, rank, score, tag = lines[1].split()
    lines[1] = " ".join((qid, q0, chunk_id, rank, repr(float(score) + 1e-9), tag))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out = audit(copy, capsys)
    assert code == 1
    assert any(
        line.startswith(f"FAIL  (rescore)/{cell}: ")
        and f"{cell.arm}__{cell.retriever}.run line 2 differs" in line
        for line in out
    ), out


@pytest.mark.slow
def test_an_edited_per_question_value_no_family_reads_fails_its_cell(copy, capsys):
    """The value is edited in the cell's part, the manifest recorded afresh and `score` run, which assembles
    the edit into both released tables (CSV and Parquet); the metric is one no family tests, so the plain
    audit (statistics, and the tables against their parts) still passes: only the rescore sees it."""
    cell = first_cell(copy)
    part = cell_part_path(copy, cell)
    rows = pd.read_parquet(part)
    tested = {
        t["metric"]
        for f in __import__("yaml").safe_load(copy.plan_path.read_text())["families"]
        for t in f["tests"]
    }
    i = rows.index[~rows.metric.isin(tested)][0]
    rows.at[i, "value"] = 1.0 if rows.at[i, "value"] < 0.5 else 0.0
    rows.to_parquet(part, index=False)
    record_as_written(copy)  # the forger journals and records the edit
    assert main(["score", "--study", str(copy.root), "--no-progress"]) == 0
    code, out = audit(copy, capsys)
    assert code == 1
    fails = [line for line in out if line.startswith("FAIL")]
    assert len(fails) == 1 and fails[0].startswith(f"FAIL  (rescore)/{cell}: "), fails
    assert f"{cell.arm}__{cell.retriever}.parquet (the cell's rows, as CSV) line {i + 2} differs" in fails[0]
