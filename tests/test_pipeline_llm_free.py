"""End to end on a copy of the demo study, LLM-free arms under BM25: select, freeze, build-arms, score.

Checks what the orchestration adds on top of the stage modules: resumability, byte-identical rebuilds,
refusal of chunk sets built from other inputs, and the shape of the per-question table.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness.arms.build import build_arms, read_chunk_set
from harness.cli.main import main
from harness.data.load import load_dataset, read_selection
from harness.errors import HarnessError
from harness.grid.cells import arm_spec
from harness.pipeline.score import score_study
from harness.files import atomic_write_json, read_json
from harness.provenance.freeze import frozen_hash
from harness.study import Study
from pipeline_support import LLM_FREE, make_llm_free_study, seed_chunk_vectors
from provenance_support import published_hashes
from harness.grid.paths import (
    chunk_manifest_path,
    chunks_path,
    per_question_path,
    results_dir,
    run_path,
    stats_dir,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    study = make_llm_free_study(tmp_path_factory.mktemp("study"))
    assert main(["build-arms", "--study", str(study.root), "--no-progress"]) == 0
    assert main(["score", "--study", str(study.root), "--no-progress"]) == 0
    return study


def test_every_arm_has_chunks_and_manifest(built):
    for dataset in ("papers", "docs"):
        for arm in LLM_FREE:
            manifest = read_json(chunk_manifest_path(built, dataset, arm))
            lines = chunks_path(built, dataset, arm).read_text(encoding="utf-8").splitlines()
            assert manifest["chunk_set"]["chunks"] == len(lines) > 0
            assert manifest["chunk_set"]["questions"] == {"papers": 48, "docs": 47}[dataset]
            assert manifest["frozen_config_hash"] == frozen_hash(built)
    fl = read_json(chunk_manifest_path(built, "papers", "FL"))
    s_tokens = read_json(chunk_manifest_path(built, "papers", "S"))["chunk_set"]["length_tokens"]
    # FL windows are the lower median of S chunk lengths; the median S length bounds it from above
    assert 0 < fl["fl_window_tokens"] <= s_tokens["median"]


def test_rebuild_is_skipped_and_byte_identical(built, tmp_path):
    before = {p: p.read_bytes() for p in (results_dir(built) / "chunks").rglob("*") if p.is_file()}
    logs: list[str] = []
    frozen = frozen_hash(built)
    builds = build_arms(built, frozen_hash=frozen, progress=False, log=logs.append)
    assert builds and all(b.skipped for b in builds)
    # a fresh build in another directory writes the same chunk files byte for byte
    other = make_llm_free_study(tmp_path / "other")
    build_arms(other, frozen_hash=None, progress=False, log=lambda _: None)
    for path, data in before.items():
        if path.suffix == ".jsonl":
            twin = results_dir(other) / path.relative_to(results_dir(built))
            assert twin.read_bytes() == data, path.name


def test_chunk_set_from_other_inputs_is_refused(built, tmp_path):
    study = Study.at(built.root)
    dataset = load_dataset(study, "papers", selection=read_selection(study))
    mpath = chunk_manifest_path(study, "papers", "P")
    manifest = read_json(mpath)
    try:
        atomic_write_json(mpath, manifest | {"inputs_hash": "0" * 64})
        with pytest.raises(HarnessError, match="built from other inputs"):
            read_chunk_set(study, dataset, arm_spec(study, "P"), frozen_hash=manifest["frozen_config_hash"])
    finally:
        atomic_write_json(mpath, manifest)


def test_per_question_table(built):
    for dataset, n_questions, metric in (("papers", 48, "rec@512t"), ("docs", 47, "prec@1024t")):
        df = pd.read_parquet(per_question_path(built, dataset))
        assert list(df.columns) == [
            "dataset",
            "arm",
            "retriever",
            "qid",
            "cluster",
            "stratum",
            "metric",
            "value",
        ]
        assert set(df["arm"]) == set(LLM_FREE) and set(df["retriever"]) == {"bm25"}
        # every question has every metric exactly once per cell
        counts = df.groupby(["arm", "retriever", "metric"])["qid"].nunique()
        assert (counts == n_questions).all()
        assert not df.duplicated(["arm", "retriever", "qid", "metric"]).any()
        assert df["value"].between(0, 1).all()
        primary = df[df["metric"] == metric]
        assert primary["value"].mean() > 0.05  # BM25 finds evidence on this corpus
        csv = pd.read_csv(per_question_path(built, dataset, "csv"), keep_default_na=False)
        assert len(csv) == len(df)
        run = run_path(built, dataset, "S", "bm25").read_text(encoding="utf-8").splitlines()
        first = run[0].split()
        assert first[1] == "Q0" and first[3] == "1" and first[5] == "S__bm25"


def test_score_resumes_only_missing_cells(built):
    frozen = read_json(per_question_path(built, "papers").with_suffix(".manifest.json"))["frozen_config_hash"]
    table = per_question_path(built, "papers").read_bytes()
    part = results_dir(built) / "per_question" / "papers" / "P__bm25.parquet"
    part.unlink()
    logs: list[str] = []
    score_study(built, frozen_hash=frozen, datasets=["papers"], progress=False, log=logs.append)
    assert "1 to score" in logs[0]
    assert part.is_file()
    assert per_question_path(built, "papers").read_bytes() == table
    logs.clear()
    score_study(built, frozen_hash=frozen, datasets=["papers"], progress=False, log=logs.append)
    assert "0 to score" in logs[0]


def test_build_without_freeze_says_what_to_do(tmp_path, capsys):
    study = make_llm_free_study(tmp_path / "s")
    study.frozen_path.unlink()
    assert main(["build-arms", "--study", str(study.root)]) == 1
    assert "run `harness freeze` first" in capsys.readouterr().err


@pytest.mark.parametrize(
    "edit, named",
    [
        (
            lambda root: _edit_config(root, lambda c: c["chunking"].__setitem__("tau_max", 1400)),
            "chunking.tau_max",
        ),
        (
            lambda root: _edit_config(
                root, lambda c: c["datasets"]["papers"]["selection"].__setitem__("seed", 7)
            ),
            "selection.seed",
        ),
        (
            lambda root: (root / "prompts" / "enrich.txt").write_text(
                (root / "prompts" / "enrich.txt").read_text(encoding="utf-8") + " ", encoding="utf-8"
            ),
            "enrich.txt",
        ),
        (
            lambda root: (root / "selection" / "selection.json").write_text(
                (root / "selection" / "selection.json").read_text(encoding="utf-8") + "\n", encoding="utf-8"
            ),
            "selection.sha256",
        ),
    ],
)
def test_build_and_score_refuse_drift_with_a_diff(tmp_path, capsys, edit, named):
    study = make_llm_free_study(tmp_path / "s")
    edit(study.root)
    capsys.readouterr()
    for command in ("build-arms", "score"):
        assert main([command, "--study", str(study.root), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert f"{command}: refusing to run" in err and named in err
    assert not (results_dir(study) / "chunks").exists()


def _edit_config(root: Path, change) -> None:
    path = root / "configs" / "study.yaml"
    cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(cfg)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")


@pytest.mark.slow
def test_whole_chain_through_stats_and_audit(tmp_path, capsys):
    """select, freeze, build-arms, score, stats, audit, report on real demo data: the families whose arms
    exist run (no deviation needed, every configured cell is scored), the others say what is missing."""
    study = make_llm_free_study(tmp_path / "s", ("bm25", "minilm", "hybrid"))
    seeded: set[str] = set()
    for command in ("build-arms", "score", "stats", "audit", "report"):
        # outside git, the published hashes anchor the freeze and the release
        extra = {"build-arms": ["--no-progress"], "score": ["--no-progress"]}.get(command, [])
        extra = published_hashes(study) if command == "audit" else extra
        assert main([command, "--study", str(study.root), *extra]) == 0, command
        if command == "build-arms":  # S's chunks and the queries are encoded, the other arms' shipped
            seeded = seed_chunk_vectors(study, [arm for arm in LLM_FREE if arm != "S"])
    out = capsys.readouterr().out
    assert "audit: " in out and " 0 FAIL" in out
    # the embedding cache counters are per dataset (the retrievers are shared across datasets)
    misses = {line.split(":")[0]: int(line.split("'cache_misses': ")[1].split("}")[0])
              for line in out.splitlines() if "retriever counters" in line}
    encoded, seen_chunks, seen_queries, frozen = {}, set(seeded), set(), frozen_hash(study)
    for name in misses:  # in scoring order; the vector cache is shared, so a text is encoded once overall
        dataset = load_dataset(study, name, selection=read_selection(study))
        chunks = {c.indexed_text for arm in LLM_FREE
                  for c in read_chunk_set(study, dataset, arm_spec(study, arm), frozen_hash=frozen)}
        queries = {q.query for q in dataset.questions}
        encoded[name] = len(chunks - seen_chunks) + len(queries - seen_queries)
        seen_chunks |= chunks
        seen_queries |= queries
    assert list(misses) == ["papers", "papers-pooled", "docs"] and encoded["papers-pooled"] == 0
    assert encoded["papers"] > 0 and encoded["docs"] > 0
    assert (
        misses == encoded
    )  # first run: each distinct chunk text and query encoded once, by its first dataset
    h3 = read_json(stats_dir(study) / "H3.json")
    assert h3["status"] == "ran" and h3["frozen_config_hash"] == frozen_hash(study)
    assert [r["test"] for r in h3["rows"]] == [
        "H3-F512c-papers",
        "H3-F256t-papers",
        "H3-F512c-docs",
        "H3-F256t-docs",
    ]
    assert all(r["n_questions"] == {"papers": 48, "docs": 47}[r["dataset"]] for r in h3["rows"])
    # LLM-free families only; robustness runs on its one LLM-free test (the section-path prefix, pooled)
    assert sorted(p.stem for p in stats_dir(study).glob("*.json")) == ["H3", "exploratory", "robustness"]
    robustness = read_json(stats_dir(study) / "robustness.json")["rows"]
    assert [(r["test"], r["dataset"], r["verdict"] != "missing") for r in robustness] == [
        ("R-pooled-prefix-papers", "papers-pooled", True)]
    assert (stats_dir(study) / "H3.png").is_file() and "H3" in (stats_dir(study) / "summary.md").read_text()
    report = (results_dir(study) / "report" / "report.md").read_text(encoding="utf-8")
    assert "## Chunk sets" in report and "| F256t |" in report
    assert (results_dir(study) / "report" / "index.html").is_file()


def test_issue23_case7_select_freeze_and_build_arms_name_every_drop_in_one_line_per_dataset(tmp_path, capsys):
    """A question whose evidence is not in its document was dropped with no word on the console (only a
    manifest count); a BOM opening a Markdown body was kept uncounted. Each stage now prints one line per
    dataset naming every nonzero drop, loss or change count."""
    import json

    from harness.cli.main import main
    from pipeline_support import make_llm_free_study

    root = tmp_path / "s"
    make_llm_free_study(root, freeze=False)
    questions = root / "data/papers/questions.jsonl"
    first = json.loads(questions.read_text(encoding="utf-8").splitlines()[0])
    lost = {**first, "qid": "p01-lost", "evidence": [{"doc_id": first["evidence"][0]["doc_id"],
                                                      "text": "A sentence that is in no document."}]}
    questions.write_text(questions.read_text(encoding="utf-8") + json.dumps(lost) + "\n", encoding="utf-8")
    document = root / "data/papers/docs/tide-gauge-drift.md"
    document.write_bytes(b"\xef\xbb\xbf" + document.read_bytes())
    expected = ("papers: dropped or changed on loading (48 questions kept): evidence_unlocated 1, "
                "questions_dropped_no_located_evidence 1, texts_bom_stripped 1")
    for command in ("select", "freeze", "build-arms"):
        capsys.readouterr()
        assert (
            main([command, "--study", str(root), *(["--no-progress"] if command == "build-arms" else [])])
            == 0
        )
        lines = capsys.readouterr().out.splitlines()
        assert expected in lines, (command, lines)
        assert "docs: nothing dropped or changed on loading (47 questions kept)" in lines


@pytest.mark.parametrize("per_search", [1, 3])
def test_questions_ranked_in_small_batches_give_the_same_rows_and_run_files(built, monkeypatch, per_search):
    """score_cell ranks a scope's questions QUESTIONS_PER_SEARCH at a time (memory): any batch size writes
    the bytes and rows of one batch per scope, on pooled scopes of many questions."""
    import harness.pipeline.score as score
    from harness.grid.cells import configured_cells
    from harness.metrics.registry import ScoringCache, budgets_from_config
    from harness.retrieval.registry import RetrieverContext

    checked = 0
    for name in ("papers-pooled", "docs"):
        frozen = read_json(per_question_path(built, name).with_suffix(".manifest.json"))["frozen_config_hash"]
        dataset = load_dataset(built, name, selection=read_selection(built))
        budgets = budgets_from_config(built.config.budgets, dataset.metric_set)
        for cell in [c for c in configured_cells(built) if c.dataset.name == name][:3]:
            scoped = score.scopes(dataset, read_chunk_set(built, dataset, cell.arm.ranks, frozen_hash=frozen))
            assert max(len(s.questions) for s in scoped) > per_search  # the batches do split a scope

            def run(n):
                monkeypatch.setattr(score, "QUESTIONS_PER_SEARCH", n)
                rows = score.score_cell(
                    built,
                    dataset,
                    cell,
                    scoped,
                    RetrieverContext.for_study(built),
                    ScoringCache(),
                    budgets,
                    run_depth=built.config.run_depth,
                )
                return rows, run_path(built, *cell.names).read_bytes()

            whole = run(10_000)
            assert run(per_search) == whole
            checked += 1
    assert checked == 6


def test_a_scopes_indexes_are_released_once_every_cell_is_past_it(tmp_path, monkeypatch):
    """score_cells holds one scope's indexes at a time: a pooled chunk set's scopes' indexes, for every
    retriever and variant, together took gigabytes at the paper's scale."""
    import gc
    import weakref

    import harness.pipeline.score as score
    from harness.grid.cells import configured_cells
    from harness.metrics.registry import ScoringCache, budgets_from_config
    from harness.retrieval.base import IndexMemo
    from harness.retrieval.registry import RetrieverContext

    study = make_llm_free_study(tmp_path / "s", ("bm25",))
    assert main(["build-arms", "--study", str(study.root), "--no-progress"]) == 0
    dataset = load_dataset(study, "papers", selection=read_selection(study))
    cells = [c for c in configured_cells(study) if c.dataset.name == "papers" and c.arm.name == "S"]
    chunks = read_chunk_set(study, dataset, arm_spec(study, "S"), frozen_hash=frozen_hash(study))
    scoped = score.scopes(dataset, chunks)
    assert sum(1 for s in scoped if s.chunks) > 2
    built: dict[str, list] = {}
    original = IndexMemo.get

    def watched(self, retriever, scope_key, chunks, build):
        if scope_key not in built:
            gc.collect()
            alive = [key for key, refs in built.items() if any(ref() is not None for ref in refs)]
            assert not alive, f"indexes of scopes {alive} are still held"
        index = original(self, retriever, scope_key, chunks, build)
        built.setdefault(scope_key, []).append(weakref.ref(index))
        return index

    monkeypatch.setattr(IndexMemo, "get", watched)
    score.score_cells(study, dataset, cells, scoped, RetrieverContext.for_study(study, share_indexes=True),
                      ScoringCache(), budgets_from_config(study.config.budgets, dataset.metric_set),
                      run_depth=study.config.run_depth)
    assert len(built) == sum(1 for s in scoped if s.chunks)


@pytest.mark.slow
def test_an_arms_cells_scored_together_equal_each_scored_alone_and_fusions_reuse_their_members(
    tmp_path, monkeypatch
):
    """score_cells ranks a batch with every retriever of the arm; the fusion reads its members' rankings of
    the batch (search_batch) instead of ranking again. Rows, counts and run files equal scoring each cell
    alone, with no index shared."""
    pytest.importorskip("sentence_transformers")
    import harness.pipeline.score as score
    from harness.grid.cells import configured_cells
    from harness.metrics.registry import ScoringCache, budgets_from_config
    from harness.retrieval.bm25 import BM25Index
    from harness.retrieval.registry import RetrieverContext

    study = make_llm_free_study(tmp_path / "s", ("bm25", "minilm", "hybrid"))
    assert main(["build-arms", "--study", str(study.root), "--no-progress"]) == 0
    seed_chunk_vectors(study, LLM_FREE)  # the subject is ranking, not encoding: only the queries are encoded
    frozen = frozen_hash(study)
    searched = []
    original = BM25Index.search_many
    monkeypatch.setattr(
        BM25Index, "search_many", lambda self, queries: searched.append(1) or original(self, queries)
    )
    monkeypatch.setattr(score, "QUESTIONS_PER_SEARCH", 5)  # several batches per pooled scope
    for name in ("papers-pooled", "docs"):
        dataset = load_dataset(study, name, selection=read_selection(study))
        budgets = budgets_from_config(study.config.budgets, dataset.metric_set)
        cells = [c for c in configured_cells(study) if c.dataset.name == name and c.arm.name in ("S", "P")]
        for arm in ("S", "P"):
            arm_cells = [c for c in cells if c.arm.name == arm]
            assert [c.retriever.name for c in arm_cells] == ["bm25", "minilm", "hybrid"]
            chunks = read_chunk_set(study, dataset, arm_spec(study, arm), frozen_hash=frozen)
            scoped = score.scopes(dataset, chunks)
            alone = []
            for cell in arm_cells:
                alone.append(
                    (
                        score.score_cell(
                            study,
                            dataset,
                            cell,
                            scoped,
                            RetrieverContext.for_study(study),
                            ScoringCache(),
                            budgets,
                            run_depth=study.config.run_depth,
                        ),
                        run_path(study, *cell.names).read_bytes(),
                    )
                )
                run_path(study, *cell.names).unlink()
            searched.clear()
            together = score.score_cells(
                study,
                dataset,
                arm_cells,
                scoped,
                RetrieverContext.for_study(study, share_indexes=True),
                ScoringCache(),
                budgets,
                run_depth=study.config.run_depth,
            )
            batches = sum(-(-len(s.questions) // 5) for s in scoped if s.chunks)
            assert len(searched) == batches  # bm25 ranked each batch once, for its own cell and the hybrid's
            assert [
                (outcome, run_path(study, *c.names).read_bytes()) for c, outcome in zip(arm_cells, together)
            ] == alone
