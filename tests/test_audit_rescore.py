"""`harness audit --rescore K` (harness.pipeline.rescore) on a scored copy of the demo: it passes, and fails
naming the cell and the first differing line when one chunk text, one run-file line or one per-question
value of a drawn cell is edited."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness.cli.main import main
from harness.files import sha256_text
from harness.grid.cells import configured_cells
from harness.pipeline.rescore import DEFAULT_SEED, draw_cells
from harness.retrieval.rerank_llm import LlmYesNoScorer
from harness.study import Study
from pipeline_support import DEMO, edit_config, make_llm_free_study, seed_chunk_vectors
from harness.grid.paths import cell_part_path, chunks_path, done_marker_path, embeddings_dir, run_path
from harness.grid.states import cell_counts
from provenance_support import published_hashes, record_as_written

WINDOW = "embedder_window"  # a cell's count of chunks cut to each embedder's window


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
    # outside git the published hashes anchor the registration and the release (else the audit exits 3)
    code = main(["audit", "--study", str(study.root), "--rescore", "5", *published_hashes(study)])
    return code, [
        line for line in capsys.readouterr().out.splitlines() if "(rescore)" in line or "rescore:" in line
    ]


def first_cell(study):
    return draw_cells(study, 5, DEFAULT_SEED)[0]


def test_every_cell_is_drawn_including_those_an_llm_reranks():
    demo = Study.at(Path(__file__).resolve().parents[1] / "examples" / "demo")
    llm_yes = {c for c in configured_cells(demo) if getattr(c.retriever.config, "backend", None) == "llm-yes"}
    assert llm_yes and draw_cells(demo, "all", DEFAULT_SEED) == configured_cells(demo)


def _fake_p_yes(self, query, passages):
    return [int(sha256_text(query + p)[:8], 16) / 16**8 for p in passages]


@pytest.fixture(scope="module")
def llm_reranked(tmp_path_factory):
    """S and F512c ranked by BM25, and S on the docs by the llm-yes reranker over it too; `score` computes
    the pair scores with a stand-in for the model's P("yes"), landing in the pair-score cache as the model's
    would."""
    root = tmp_path_factory.mktemp("llm_reranked")
    make_llm_free_study(root, arms=("S", "F512c"), freeze=False)
    models = yaml.safe_load((DEMO / "configs" / "study.yaml").read_text(encoding="utf-8"))["models"]
    edit_config(root, lambda cfg: (
        cfg.__setitem__("models", models),
        cfg["retrievers"].__setitem__("rerank", {"type": "rerank", "first_stage": "bm25", "depth": 3,
                                                 "backend": "llm-yes", "model": "embedded", "arms": ["S"],
                                                 "datasets": ["docs"]}),
    ))
    for command in ("select", "freeze"):
        assert main([command, "--study", str(root)]) == 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LlmYesNoScorer, "score", _fake_p_yes)
        for command in ("build-arms", "score"):
            assert main([command, "--study", str(root), "--no-progress"]) == 0
    assert main(["stats", "--study", str(root)]) == 0
    return Study.at(root)


def _no_model(self, query, passages):
    raise AssertionError("the rescore called the reranker's model")


def _rescore_all(study, capsys) -> list[str]:
    capsys.readouterr()
    main(["audit", "--study", str(study.root), "--rescore", "all", *published_hashes(study)])
    return [line for line in capsys.readouterr().out.splitlines() if "(rescore)/" in line]


def test_rescore_all_replays_the_llm_rerankers_cells_from_the_pair_score_cache(llm_reranked, capsys,
                                                                                monkeypatch):
    monkeypatch.setattr(LlmYesNoScorer, "score", _no_model)
    reranked = [c for c in configured_cells(llm_reranked) if c.retriever.name == "rerank"]
    lines = _rescore_all(llm_reranked, capsys)
    assert reranked and all(any(line.startswith(f"PASS  (rescore)/{c}: ") for line in lines)
                            for c in reranked)
    assert len(lines) == len(configured_cells(llm_reranked)), lines
    assert all(line.startswith("PASS") for line in lines), lines


def test_a_pair_missing_from_the_cache_fails_its_cell_naming_the_pair(llm_reranked, tmp_path, capsys,
                                                                      monkeypatch):
    shutil.copytree(llm_reranked.root, tmp_path / "s")
    study = Study.at(tmp_path / "s")
    monkeypatch.setattr(LlmYesNoScorer, "score", _no_model)
    (folder,) = [n.parent for n in embeddings_dir(study).glob("*/namespace.json")
                 if json.loads(n.read_text())["kind"] == "pair-score"]
    shard = sorted(folder.glob("*.npz"))[0]
    shard.unlink()  # the rescore reads the cache as released; the audit's own record check fails it too
    lines = _rescore_all(study, capsys)
    reranked = [str(c) for c in configured_cells(study) if c.retriever.name == "rerank"]
    fails = [line for line in lines if line.startswith("FAIL")]
    assert fails and all(line.split("/", 1)[1].split(":")[0] in reranked for line in fails), lines
    assert "has no cached pair score for query" in fails[0] and "and passage" in fails[0]
    assert all(line.startswith("PASS") for line in lines if line not in fails)


@pytest.mark.slow
def test_rescore_of_five_seeded_cells_passes_on_the_released_results(released, capsys):
    code, lines = audit(released, capsys)
    assert code == 0
    assert lines[0].startswith(f"rescore: 5 cell(s) drawn with seed {DEFAULT_SEED}")
    passed = [line for line in lines if line.startswith("PASS  (rescore)/")]
    assert len(passed) == 5 and "per-question rows identical" in passed[0]
    cells = draw_cells(released, 5, DEFAULT_SEED)
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


@pytest.mark.slow
def test_an_edited_count_of_chunks_over_the_embedders_window_fails_its_cell(tmp_path, capsys):
    """The report's chunk-set table reads each cell's count of chunks cut to its embedder's window from the
    done marker: the rescore counts them again."""
    copy = make_llm_free_study(tmp_path / "s", ("minilm",), arms=("S", "F512c"))
    for command in ("build-arms", "score", "stats"):
        quiet = ["--no-progress"] if command != "stats" else []
        assert main([command, "--study", str(copy.root), *quiet]) == 0
        if command == "build-arms":  # the subject is the count, not encoding: the queries alone are encoded
            seed_chunk_vectors(copy, ("S", "F512c"))
    cell = next(c for c in draw_cells(copy, 5, DEFAULT_SEED) if (cell_counts(copy, c) or {}).get(WINDOW))
    marker = done_marker_path(copy, cell)
    record = json.loads(marker.read_text(encoding="utf-8"))
    embedder = sorted(record["counts"][WINDOW])[0]
    record["counts"][WINDOW][embedder]["over_window"] += 1
    marker.write_text(json.dumps(record), encoding="utf-8")
    record_as_written(copy)  # the forger journals and records the edit
    code, out = audit(copy, capsys)
    assert code == 1
    fails = [line for line in out if line.startswith("FAIL")]
    assert len(fails) == 1 and fails[0].startswith(f"FAIL  (rescore)/{cell}: ") and WINDOW in fails[0], fails
