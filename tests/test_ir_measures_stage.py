"""`ir_measures:` in a study: the per-question table gains the measures, results/qrels/ holds each arm's
chunk-level relevance, a plan may register a test on a measure, and the numbers are pytrec_eval's on the
released run files and qrels."""

from __future__ import annotations

import pandas as pd
import pytest
import pytrec_eval
import yaml

from harness.cli.main import main
from harness.grid.paths import per_question_path, qrels_path, run_path, stats_dir
from harness.retrieval.runfile import read_run

from pipeline_support import edit_config, make_llm_free_study

MEASURES = ["nDCG@10", "RR@10", "AP"]
TREC = {"nDCG@10": "ndcg_cut_10", "AP": "map"}


def _with_measures(root):
    edit_config(root, lambda cfg: cfg.__setitem__("ir_measures", MEASURES))
    plan_path = root / "plan" / "plan.yaml"
    plan = yaml.safe_load(plan_path.read_text(encoding="utf-8"))
    plan["families"] = [f for f in plan["families"] if f["id"] == "H3"]
    family = plan["families"][0]
    family["tests"] = [t for t in family["tests"] if t["dataset"] == "papers"][:1]
    family["tests"].append({**family["tests"][0], "id": "H3-F512c-ndcg", "metric": "nDCG@10"})
    plan["exploratory"] = []
    plan["datasets"]["papers"]["metrics"] += MEASURES  # the plan registers what it reports
    plan_path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    root = tmp_path_factory.mktemp("ir")
    study = make_llm_free_study(root, ("bm25",), freeze=False, arms=("S", "F512c"))
    _with_measures(root)
    for stage in ("select", "freeze", "build-arms", "score", "stats"):
        assert main([stage, "--study", str(root)]) == 0, stage
    return study


def test_the_table_holds_every_measure_and_stats_decide_a_test_on_one(scored):
    table = pd.read_parquet(per_question_path(scored, "papers"))
    for measure in MEASURES:
        values = table[(table.metric == measure) & (table.arm == "S")].value
        assert len(values) == table[(table.metric == "rec@512t") & (table.arm == "S")].shape[0] > 0
        assert values.between(0, 1).all() and values.gt(0).any()
    rows = (stats_dir(scored) / "H3.json").read_text()
    assert "H3-F512c-ndcg" in rows and "nDCG@10" in rows


def test_pytrec_eval_gives_the_same_numbers_from_the_released_runs_and_qrels(scored):
    table = pd.read_parquet(per_question_path(scored, "papers"))
    for arm in ("S", "F512c"):
        qrels: dict[str, dict[str, int]] = {}
        for line in qrels_path(scored, "papers", arm).read_text().splitlines():
            qid, _, chunk, grade = line.split()
            qrels.setdefault(qid, {})[chunk] = int(grade)
        # the harness's rank order is the order evaluated: -rank as the score, as docs/ir-measures.md says
        run: dict[str, dict[str, float]] = {}
        for row in read_run(run_path(scored, "papers", arm, "bm25")):
            run.setdefault(row.qid, {})[row.chunk_id] = -float(row.rank)
        evaluated = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "recip_rank"}).evaluate(run)
        ours = table[(table.arm == arm) & (table.retriever == "bm25")].pivot(index="qid", columns="metric",
                                                                             values="value")
        assert set(evaluated) == set(ours.index)
        for qid, m in evaluated.items():
            assert ours.loc[qid, "nDCG@10"] == pytest.approx(m["ndcg_cut_10"], abs=1e-9)
            assert ours.loc[qid, "AP"] == pytest.approx(m["map"], abs=1e-9)
            rank = next((r for r, (c, _) in enumerate(sorted(run[qid].items(), key=lambda x: -x[1]), 1)
                         if qrels[qid].get(c)), None)
            assert ours.loc[qid, "RR@10"] == pytest.approx(1 / rank if rank and rank <= 10 else 0.0, abs=1e-9)


def test_a_plan_test_on_an_unlisted_measure_is_refused(tmp_path, capsys):
    make_llm_free_study(tmp_path, ("bm25",), freeze=False, arms=("S", "F512c"))
    _with_measures(tmp_path)
    edit_config(tmp_path, lambda cfg: cfg.__setitem__("ir_measures", ["AP"]))
    assert main(["select", "--study", str(tmp_path)]) == 0
    assert main(["freeze", "--study", str(tmp_path)]) != 0
    assert "unknown metric 'nDCG@10'" in capsys.readouterr().err


def test_a_measure_the_harness_does_not_compute_is_refused_in_the_config(tmp_path, capsys):
    make_llm_free_study(tmp_path, ("bm25",), freeze=False, arms=("S",))
    edit_config(tmp_path, lambda cfg: cfg.__setitem__("ir_measures", ["MRR@10"]))
    assert main(["config", "--study", str(tmp_path)]) != 0
    assert "ir_measures" in capsys.readouterr().err


def test_the_audits_rescore_re_derives_the_released_qrels(scored, tmp_path):
    import shutil

    from harness.pipeline.rescore import rescore
    from harness.provenance.freeze import frozen_hash
    from harness.study import Study

    copy = Study.at(shutil.copytree(scored.root, tmp_path / "study"))
    frozen = frozen_hash(copy)
    assert all(c.passed for c in rescore(copy, "all", 0, frozen, log=lambda line: None))
    qrels = qrels_path(copy, "papers", "F512c")
    lines = qrels.read_text().splitlines(keepends=True)
    qrels.write_text("".join(lines[1:]))  # a relevant chunk dropped: the runs and rows stay as they were
    failed = [c for c in rescore(copy, "all", 0, frozen, log=lambda line: None) if not c.passed]
    assert failed and all("qrels/papers/F512c.qrels line 1 differs" in c.detail for c in failed)
    assert {c.item.split("/")[1] for c in failed} == {"F512c"}
