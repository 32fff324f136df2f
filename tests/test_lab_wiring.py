"""The chunking lab wired into studies (issue 16): lab arms in the registry (training split only for QES),
L sweeps, the graph retriever and BM25 lab tokeniser through the retrieval registry, assembler options in
scoring, the question_evidence adapter, and the handbook study."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.arms.build import inputs_hash
from harness.arms.lab_arms import training_record
from harness.arms.builder import BuildInputs
from harness.arms.registry import build_chunks
from harness.config.arm_kinds import get_kind
from harness.config import load_study_config
from harness.config.lab import Assembly, QesDpArm, QesGreedyArm
from harness.data.load import load_dataset
from harness.data.model import Chunk
from harness.errors import HarnessError, InputError
from harness.grid.cells import arm_spec
from harness.metrics.assembly import assemble
from harness.metrics.qasper import gold_strings, retrieved_flags
from harness.metrics.registry import ScoringCache, score_question
from harness.retrieval.graph import GraphParams, chunk_graph, graph_ranking
from harness.retrieval.graph_retriever import xref_pairs
from harness.retrieval.lab_tokens import lab_tokens
from harness.retrieval.registry import RetrieverContext
from harness.study import Study

REPO = Path(__file__).resolve().parents[1]
HANDBOOK = REPO / "examples" / "handbook"
QES = [("qes-dp", QesDpArm(kind="qes-dp", L=450)), ("qes-greedy", QesGreedyArm(kind="qes-greedy", L=450))]


@pytest.fixture(scope="module")
def handbook():
    return load_dataset(Study.at(HANDBOOK), "handbook", selection=None)


def build(kind: str, cfg, dataset, questions=None):
    inputs = BuildInputs(dataset.documents, None, dict, arm=kind, arm_config=cfg,
                         questions=dataset.questions if questions is None else questions)
    return [(c.text, c.spans) for c in build_chunks(get_kind(kind), inputs).chunks]


def test_handbook_loads_with_its_split_and_records_its_files(handbook):
    assert len(handbook.questions) == 31
    assert {q.stratum for q in handbook.questions} == {"train", "held-out"}
    assert handbook.counts["questions_train"] == 20 and handbook.counts["questions_held_out"] == 11
    assert [f.path for f in handbook.input_files] == ["data/handbook.md", "data/questions.json"]
    text = handbook.documents[0].text
    assert all(text[e.start:e.end] == e.text for q in handbook.questions for e in q.evidence)


@pytest.mark.parametrize("kind,cfg", QES, ids=[k for k, _ in QES])
def test_no_held_out_question_can_change_a_qes_chunk_set(handbook, kind, cfg):
    before = build(kind, cfg, handbook)
    text = handbook.documents[0].text
    # rewrite every held-out question: other evidence (whole provisions), other wording, plus extra questions
    starts = [i for i in range(len(text)) if text.startswith("\n### ", i)]
    changed = []
    for k, q in enumerate(handbook.questions):
        if q.stratum == "held-out":
            a, b = starts[k % (len(starts) - 1)] + 1, starts[k % (len(starts) - 1) + 1]
            ev = dataclasses.replace(q.evidence[0], text=text[a:b], start=a, end=b)
            q = dataclasses.replace(q, query="something else", evidence=(ev,))
        changed.append(q)
    extra = dataclasses.replace(changed[-1], qid="q999", cluster="q999")
    changed.append(extra)
    assert build(kind, cfg, handbook, changed) == before
    assert training_record(kind, changed) == training_record(kind, handbook.questions)
    # the check can fail: the same rewrite applied to a training question moves the boundaries
    moved = [dataclasses.replace(q, stratum="train") if q.stratum == "held-out" else q for q in changed]
    assert build(kind, cfg, handbook, moved) != before


def test_qes_refuses_questions_without_a_split(handbook):
    unsplit = [dataclasses.replace(q, stratum="") for q in handbook.questions]
    with pytest.raises(HarnessError, match=r"arm `qes-dp`: QES arms train on a train / held-out split"):
        build("qes-dp", QesDpArm(kind="qes-dp"), handbook, unsplit)
    held = [dataclasses.replace(q, stratum="held-out") for q in handbook.questions]
    with pytest.raises(HarnessError, match="no training question"):
        build("qes-dp", QesDpArm(kind="qes-dp"), handbook, held)


def test_the_inputs_hash_covers_training_evidence_only(tmp_path):
    root = tmp_path / "h"
    for part in ("configs", "data", "plan"):
        shutil.copytree(HANDBOOK / part, root / part)
    study = Study.at(root)
    dataset = load_dataset(study, "handbook", selection=None)
    arm = arm_spec(study, "qes-dp@L450")
    before = inputs_hash(study, dataset, arm)
    held_out = [q if q.stratum == "train" else dataclasses.replace(q, query="x") for q in dataset.questions]
    assert inputs_hash(study, dataclasses.replace(dataset, questions=tuple(held_out)), arm) == before
    train = [
        q if q.stratum != "train" else dataclasses.replace(q, evidence=q.evidence[:1])
        for q in dataset.questions
    ]
    assert inputs_hash(study, dataclasses.replace(dataset, questions=tuple(train)), arm) != before


def _config(**changes):
    raw = {
        "datasets": {"h": {"adapter": "question_evidence", "metric_set": "qasper", "document": "d.md",
                           "questions": "q.json"}},
        "arms": {"fx": {"kind": "fixed", "L": [250, 800]}, "pr": {"kind": "provisions"}},
        "retrievers": {"bm25": {"type": "bm25", "tokenizer": "lab", "k1": 1.2},
                       "graph": {"type": "graph", "ablate": ["lexical"]}},
        "budgets": {"qasper": [40, 120]},
    }
    raw.update(changes)
    return raw


def test_l_lists_expand_into_one_arm_per_value_with_defaults_written_once():
    config = load_study_config(_config(), path="study.yaml", default_name="t")
    assert list(config.arms) == ["fx@L250", "fx@L800", "pr"]
    assert config.arms["fx@L800"].L == 800 and config.arms["fx@L800"].overlap == 50
    assert config.arms["pr"].resolve_refs is True and config.arms["pr"].ref_chars == 320
    assert config.retrievers["graph"].base == "bm25" and config.retrievers["graph"].restart == 0.5
    assert config.assembly is None  # unset: today's token cut, and configs without it freeze unchanged
    clash = _config(arms={"fx": {"kind": "fixed", "L": [250]}, "fx@L250": {"kind": "fixed"}})
    with pytest.raises(
        HarnessError, match=r"`arms.fx.L` expands to arm `fx@L250`, which is already configured"
    ):
        load_study_config(clash, path="study.yaml", default_name="t")
    with pytest.raises(HarnessError, match=r"`arms.fx.overlap` must be an integer < L \(40\)"):
        load_study_config(
            _config(arms={"fx": {"kind": "fixed", "L": 40, "overlap": 50}}), path="s.yaml", default_name="t"
        )


def test_assembly_options_are_refused_for_freshstack_sets():
    raw = _config(assembly={"unit": "words"})
    raw["datasets"]["fs"] = {
        "adapter": "jsonl",
        "metric_set": "freshstack",
        "documents": "d",
        "questions": "q",
    }
    with pytest.raises(HarnessError, match=r"`assembly` applies to the qasper metric set only; dataset `fs`"):
        load_study_config(raw, path="study.yaml", default_name="t")
    raw["assembly"] = {"unit": "tokens"}  # today's behaviour spelled out: allowed everywhere
    assert load_study_config(raw, path="study.yaml", default_name="t").assembly.is_default
    with pytest.raises(HarnessError, match="overflow"):
        load_study_config(_config(assembly={"overflow": "drop"}), path="study.yaml", default_name="t")


def _chunks(texts, sections):
    return [Chunk("doc", f"doc#{i}", t, ((0, len(t)),), s, 1, 1, ("paragraph",), indexed_text=t)
            for i, (t, s) in enumerate(zip(texts, sections))]


CHUNKS = _chunks(
    ["Quiet hours run from 22:00 to 07:00.", "Loud tools may not run in quiet hours, see Section 1.1.",
     "Guests are supervised as in Section 1.3.", "A supervised member needs a steward nearby."],
    ["H > 1.1 Quiet hours", "H > 2.1 Tools", "H > 2.2 Guests", "H > 1.3 Supervised member"],
)


def test_graph_retriever_is_personalised_pagerank_over_the_registry_bm25():
    context = RetrieverContext(Path("."), load_study_config(_config(), path="s", default_name="t").retrievers)
    graph, bm25 = context.get("graph"), context.get("bm25")
    assert graph.base is bm25 and bm25.tokenize is lab_tokens and bm25.k1 == 1.2
    assert xref_pairs(CHUNKS, __import__("re").compile(r"Section (\d+(?:\.\d+)+)")) == [(1, 0), (2, 3)]
    query = "when may loud tools run"
    base = bm25.index("s", CHUNKS).scores(query)
    params = GraphParams(lexical=0.0)
    w = chunk_graph([c.section_path for c in CHUNKS], [(1, 0), (2, 3)], [frozenset()] * 4, params)
    expected = graph_ranking(base, w, params)
    got = graph.index("s", CHUNKS).search(query)
    assert got.order.tolist() == expected.order.tolist()
    assert np.allclose(got.scores, expected.scores)
    assert graph.describe()["edges"]["lexical"] == 0.0


def test_default_assembly_scores_exactly_as_before_and_words_score_the_assembled_context(handbook):
    q = handbook.questions[0]
    ranked = _chunks([handbook.documents[0].text[i:i + 400] for i in range(0, 4000, 350)], [""] * 12)
    cache = ScoringCache()
    plain = score_question("qasper", q, ranked, (40, 120), cache=cache)
    assert score_question("qasper", q, ranked, (40, 120), cache=cache, assembly=Assembly()) == plain
    words = Assembly(unit="words", overflow="skip", novelty=0.3)
    scored = dict(score_question("qasper", q, ranked, (40, 120), cache=cache, assembly=words))
    assert set(scored) >= {"complete@40w", "partial@120w", "rec@120w", "hit@1"} and "rec@40t" not in scored
    for budget in (40, 120):
        picked = assemble(ranked, budget, unit="words", overflow="skip", novelty=0.3)
        flags = retrieved_flags(gold_strings(q, cache.grams), [cache.grams.get(p.text) for p in picked])
        assert scored[f"complete@{budget}w"] == float(all(flags))
        assert scored[f"partial@{budget}w"] == float(any(flags))
    assert {k: v for k, v in scored.items() if "@" in k and k[-1].isdigit()} == {
        k: v for k, v in plain if k[-1].isdigit()}  # rec@k / hit@k do not depend on the assembler


def _qe_study(tmp_path, items, split=None) -> Study:
    root = tmp_path / "qe"
    (root / "configs").mkdir(parents=True)
    shutil.copy(HANDBOOK / "data" / "handbook.md", root / "d.md")
    (root / "q.json").write_text(json.dumps(items), encoding="utf-8")
    raw = copy.deepcopy(_config())
    if split is not None:
        raw["datasets"]["h"]["split"] = split
    import yaml

    (root / "configs" / "study.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    return Study.at(root)


def test_a_missing_evidence_string_is_an_error_naming_it(tmp_path):
    study = _qe_study(
        tmp_path, [{"question": "q?", "evidence": ["No such sentence here."], "split": "train"}]
    )
    with pytest.raises(
        InputError, match=r"q.json.*evidence string not found in the document: 'No such sentence here.'"
    ):
        load_dataset(study, "h", selection=None)


def test_a_seeded_split_replaces_the_records_split_deterministically(tmp_path):
    items = json.loads((HANDBOOK / "data" / "questions.json").read_text(encoding="utf-8"))
    for item in items:
        del item["split"]
    study = _qe_study(tmp_path, items, split={"seed": 7, "held_out": 0.25})
    first = load_dataset(study, "h", selection=None)
    again = load_dataset(study, "h", selection=None)
    assert [q.stratum for q in first.questions] == [q.stratum for q in again.questions]
    assert sum(q.stratum == "held-out" for q in first.questions) == round(0.25 * 31)


@pytest.mark.slow
def test_the_handbook_study_runs_end_to_end_with_per_split_results(tmp_path):
    """build-arms, score and report on a copy of the frozen handbook study (about half a minute)."""
    import pandas as pd

    from harness.cli.main import main

    root = tmp_path / "handbook"
    shutil.copytree(HANDBOOK, root, ignore=shutil.ignore_patterns("results"))
    for command in ("build-arms", "score"):
        assert main([command, "--study", str(root), "--no-progress"]) == 0
    rows = pd.read_parquet(root / "results" / "per_question" / "handbook.parquet")
    assert set(rows["stratum"]) == {"train", "held-out"}
    assert {"fixed@L250", "qes-dp@L800", "provisions-noref@L450"} <= set(rows["arm"])
    assert set(rows["retriever"]) == {"bm25", "graph"}
    assert {f"complete@{b}w" for b in (40, 80, 120, 200, 400)} <= set(rows["metric"])
    assert main(["stats", "--study", str(root)]) == 0
    assert main(["report", "--study", str(root)]) == 0
    report = (root / "results" / "report" / "report.md").read_text(encoding="utf-8")
    assert "## Chunking lab: per split and chunk-size sweep" in report
    assert "| qes-greedy@L450 | graph | 120w |" in report
    # amendment 0001's contextual-headers arms: built with the option, in the lab table and the family table
    manifest = json.loads(
        (root / "results" / "chunks" / "handbook" / "sentence-headers.manifest.json").read_text()
    )
    assert manifest["contextual_headers"]["chunks_with_headers"] == manifest["chunk_set"]["chunks"]
    assert manifest["contextual_headers"]["documents_without_headings"] == 0
    assert "| sentence-headers | bm25 | 120w |" in report and "| fixed-headers | graph | 120w |" in report
    assert "H-sentence" in report and "H-fixed" in report
    # the chunk-set table measures "share over budget" in the study's unit, words, and says so
    chunk_table = (root / "results" / "report" / "tables" / "chunks-handbook.csv").read_text(encoding="utf-8")
    assert chunk_table.splitlines()[0].split(",")[4:9] == [f"> {b} words" for b in (40, 80, 120, 200, 400)]
    assert (root / "results" / "report" / "figures" / "lab-l-sweep-handbook.svg").is_file()
