"""`retrieval_scope: pooled`: a Qasper-style dataset retrieving over all its selected documents in one index.

A tiny two-paper study, end to end (select, freeze, build-arms, score; three chunks per index at least, so
BM25's IDF is informative): the ice paper's question shares
"calving rate" with its own evidence, while the glacier paper repeats every query term; within its paper
the evidence ranks first, pooled the glacier chunk takes rank 1. Gold and metrics are unchanged, so hit@1
falls from 1 to 0 while rec@512t (both papers fit in 512 tokens) stays 1. The unset default and an
explicit `document` give byte-identical rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness.cli.main import main
from harness.config import load_study_config, to_plain
from harness.data.load import load_dataset, read_selection
from harness.errors import HarnessError
from harness.study import Study
from harness.grid.paths import per_question_path, run_path

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"

ICE = (
    "# Ice shelves\n\n## Setting\n\nWe surveyed the ice shelf front from a ship during two summers and "
    "logged every "
    "iceberg that broke away from the front.\n\n## Methods\n\nPositions of the front were read from radar "
    "images that the crew took every week from the bridge.\n\n## Findings\n\nThe calving rate doubled "
    "between the first and "
    "the second summer, while the front itself advanced slightly.\n"
)
GLACIER = (
    "# Glaciers\n\n## Glacier calving\n\nGlacier calving rate, glacier calving rate and again the glacier "
    "calving rate: this review lists every glacier calving rate model we know of.\n\n## Other\n\n"
    "Moraines and till are described elsewhere in this review of mountain landforms.\n"
)
ICE_EVIDENCE = "The calving rate doubled between the first and the second summer"


def _tiny_study(root: Path) -> Study:
    (root / "data").mkdir(parents=True)
    docs = [{"doc_id": "p/ice", "domain": "papers", "text": ICE},
            {"doc_id": "p/glacier", "domain": "papers", "text": GLACIER}]
    questions = [
        {
            "qid": "ice-q1",
            "query": "How did the glacier calving rate change?",
            "scope": {"doc": "p/ice"},
            "cluster": "doc",
            "evidence": [{"doc_id": "p/ice", "text": ICE_EVIDENCE}],
        },
        {
            "qid": "gla-q1",
            "query": "Which landforms are described elsewhere?",
            "scope": {"doc": "p/glacier"},
            "cluster": "doc",
            "evidence": [{"doc_id": "p/glacier", "text": "Moraines and till are described elsewhere"}],
        },
    ]
    for name, rows in (("documents", docs), ("questions", questions)):
        (root / "data" / f"{name}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
        )
    base = {"adapter": "jsonl", "metric_set": "qasper", "documents": "data/documents.jsonl",
            "questions": "data/questions.jsonl", "selection": {"seed": 1, "n_clusters": "all"}}
    config = {"study": "tiny", "chunking": {"tau_min": 20},
              "datasets": {"papers": base, "papers-document": {**base, "retrieval_scope": "document"},
                           "papers-pooled": {**base, "retrieval_scope": "pooled"}},
              "arms": {"S": {"kind": "S"}, "S+T": {"kind": "S+T"}}, "retrievers": {"bm25": {"type": "bm25"}},
              "budgets": {"qasper": [512], "freshstack": [1024]}}
    (root / "configs").mkdir()
    (root / "configs" / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    plan = {
        "study": "tiny",
        "registered_at": "2025-01-01T00:00:00+00:00",
        "alpha": 0.05,
        "bootstrap": {"method": "bca-cluster", "resamples": 1000},
        "permutation": {"method": "cluster-sign-flip", "max_flips": 1000},
        "datasets": {
            name: {
                "primary_metric": "rec@512t",
                "cluster": "paper",
                "stratified": False,
                "margin": 5,
                "metrics": ["rec@512t", "hit@1"],
            }
            for name in config["datasets"]
        },
        "arms": ["S", "S+T"],
        "retrievers": ["bm25"],
        "families": [
            {
                "id": "f",
                "description": "pooled against own paper",
                "tier": "exploratory",
                "multiplicity": "none",
                "decision": {"rule": "two-sided", "signflip_required": False},
                "seed": 1,
                "tests": [
                    {
                        "id": "t",
                        "a": "S+T",
                        "b": "S",
                        "retriever": "bm25",
                        "dataset": "papers-pooled",
                        "metric": "rec@512t",
                    }
                ],
            }
        ],
    }
    (root / "plan").mkdir()
    (root / "plan" / "plan.yaml").write_text(yaml.safe_dump(plan), encoding="utf-8")
    return Study.at(root)


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    study = _tiny_study(tmp_path_factory.mktemp("pooled"))
    for args in (["select"], ["freeze"], ["build-arms", "--no-progress"], ["score", "--no-progress"]):
        assert main([args[0], "--study", str(study.root), *args[1:]]) == 0, args
    return study


def _value(study: Study, dataset: str, qid: str, metric: str) -> float:
    rows = pd.read_csv(per_question_path(study, dataset, "csv"))
    hit = rows[(rows.arm == "S") & (rows.qid == qid) & (rows.metric == metric)]
    assert len(hit) == 1, (dataset, qid, metric)
    return float(hit.value.iloc[0])


def _ranked_docs(study: Study, dataset: str, qid: str) -> list[str]:
    lines = [
        line.split()
        for line in run_path(study, dataset, "S", "bm25").read_text(encoding="utf-8").splitlines()
    ]
    ranked = sorted((int(rank), chunk) for q, _, chunk, rank, _, _ in lines if q == qid)
    return [chunk.split("#")[0] for _, chunk in ranked]


def test_pooled_scope_is_every_selected_document(scored):
    pooled = load_dataset(scored, "papers-pooled", selection=read_selection(scored))
    own = load_dataset(scored, "papers", selection=read_selection(scored))
    assert {q.scope for q in pooled.questions} == {("p/glacier", "p/ice")}
    assert pooled.counts["documents_pooled"] == 2 and "documents_pooled" not in own.counts
    assert {q.qid: q.scope for q in own.questions} == {"gla-q1": ("p/glacier",), "ice-q1": ("p/ice",)}
    # gold, clusters and strata are the dataset's own
    assert [(q.qid, q.cluster, q.stratum, q.evidence) for q in pooled.questions] == \
           [(q.qid, q.cluster, q.stratum, q.evidence) for q in own.questions]


def test_pooled_ranking_includes_the_other_paper(scored):
    assert set(_ranked_docs(scored, "papers", "ice-q1")) == {"p/ice"}
    pooled = _ranked_docs(scored, "papers-pooled", "ice-q1")
    assert pooled[0] == "p/glacier" and set(pooled) == {"p/ice", "p/glacier"}


def test_scores_move_as_the_competition_predicts(scored):
    assert _value(scored, "papers", "ice-q1", "hit@1") == 1.0
    assert _value(scored, "papers-pooled", "ice-q1", "hit@1") == 0.0  # the glacier chunk took rank 1
    for dataset in ("papers", "papers-pooled"):  # both papers fit in 512 tokens: the evidence is still in
        assert _value(scored, dataset, "ice-q1", "rec@512t") == 1.0


def test_unset_scope_equals_explicit_document_byte_for_byte(scored):
    def rows(dataset):
        text = per_question_path(scored, dataset, "csv").read_text(encoding="utf-8")
        return text.replace(f"{dataset},", "<dataset>,")
    assert rows("papers") == rows("papers-document")


def test_demo_papers_keep_their_own_paper_and_pooled_twin_pools(tmp_path):
    study = Study.at(DEMO)
    selection = read_selection(study)
    papers = load_dataset(study, "papers", selection=selection)
    assert "retrieval_scope" not in to_plain(
        study.config.datasets["papers"]
    )  # the default: nothing frozen changes
    assert all(q.scope == (q.cluster,) for q in papers.questions)
    pooled = load_dataset(study, "papers-pooled", selection=selection)
    assert {q.scope for q in pooled.questions} == {tuple(d.doc_id for d in papers.documents)}
    assert [q.qid for q in pooled.questions] == [q.qid for q in papers.questions]


@pytest.mark.parametrize("dataset, value, message", [
    ("papers", "everything", r"datasets\.papers\.retrieval_scope"),
    ("docs", "pooled", r"datasets\.docs\.retrieval_scope"),  # FreshStack: its domain pool is fixed
])
def test_bad_or_misplaced_scope_names_the_key(tmp_path, dataset, value, message):
    config = {
        "study": "x",
        "datasets": {
            "papers": {
                "adapter": "jsonl",
                "metric_set": "qasper",
                "documents": "d.jsonl",
                "questions": "q.jsonl",
            },
            "docs": {
                "adapter": "freshstack",
                "metric_set": "freshstack",
                "domains": {"a": {"queries": "q.jsonl"}},
            },
        },
    }
    config["datasets"][dataset]["retrieval_scope"] = value
    with pytest.raises(HarnessError, match=message):
        load_study_config(config, path="configs/study.yaml", default_name="x")
