"""Exploratory analyses: plan schema, moderator definitions, group statistics, blocked inputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from harness.analyses.moderators import BRIDGED, NO_MISSING, NOT_BRIDGED, moderators, question_terms, terciles
from harness.analyses.run import run_analyses
from harness.data.model import Chunk, Evidence, Question
from harness.errors import InputError
from harness.stats.contrast import sample_clusters
from harness.inference.groups import group_contrast, group_mean, win_tie_loss
from harness.plan.load import load_plan
from harness.inference.simulate import SyntheticDataset, long_table

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"


def _plan_with(tmp_path, entries):
    shutil.copytree(DEMO / "plan", tmp_path / "plan")
    path = tmp_path / "plan" / "plan.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["exploratory"] = entries
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_demo_plan_registers_every_analysis_kind():
    plan = load_plan(DEMO / "plan" / "plan.yaml", DEMO / "amendments")
    assert {a.analysis for a in plan.analyses} == {"bridging", "targeting-terciles", "overlap-terciles",
                                                   "answer-type", "win-tie-loss", "conditional-means",
                                                   "subset-contrast"}


@pytest.mark.parametrize(
    "entry, message",
    [
        (
            {"id": "x", "analysis": "vibes"},
            r"exploratory\[0\]\.analysis: unknown analysis 'vibes' \[entry x\]",
        ),
        ({"id": "x", "analysis": "win-tie-loss", "colour": "red"}, r"exploratory\[0\]\.colour: unknown key"),
        (
            {"id": "x", "analysis": "win-tie-loss", "families": ["nope"]},
            r"families: no family 'nope' \[entry x\]",
        ),
        (
            {
                "id": "x",
                "analysis": "bridging",
                "dataset": "papers",
                "a": "E",
                "b": "S+T",
                "metric": "rec@512t",
                "retrievers": ["bm25"],
            },
            r"exploratory\[0\]\.seed: required key is missing",
        ),
        (
            {
                "id": "x",
                "analysis": "bridging",
                "dataset": "papers",
                "a": "E",
                "b": "S+T",
                "metric": "prec@9t",
                "retrievers": ["bm25"],
                "seed": 1,
            },
            r"metric 'prec@9t' is not registered",
        ),
        (
            {
                "id": "x",
                "analysis": "subset-contrast",
                "dataset": "docs",
                "a": "S",
                "b": "P",
                "retriever": "bm25",
                "metric": "prec@1024t",
                "first": ["a"],
                "second": ["a"],
                "seed": 1,
            },
            r"second: shares strata",
        ),
    ],
)
def test_unknown_analysis_field_or_group_names_file_and_entry(tmp_path, entry, message):
    path = _plan_with(tmp_path, [entry])
    with pytest.raises(InputError, match=message) as err:
        load_plan(path)
    assert "plan.yaml" in str(err.value)


def _chunk(doc, i, text, section="", fields=None):
    g = None if fields is None else {"title": fields, "summary": "", "keywords": [], "questions": []}
    indexed = (f"{section}\n\n{text}" if section else text) if fields is None else f"{fields}\n\n{text}"
    return Chunk(doc_id=doc, chunk_id=f"{doc}#{i}", text=text, spans=((0, len(text)),), section_path=section,
                 start_line=i, end_line=i, block_types=("paragraph",), indexed_text=indexed, generated=g)


def _question(qid, query, evidence):
    return Question(qid=qid, dataset="d", query=query, cluster=qid, stratum="", scope=("p",),
                    evidence=(Evidence("p", evidence, None, None, ()),))


def test_bridging_groups_overlap_and_targeting_follow_the_definitions():
    gold = "the cat sat quietly on the warm mat all afternoon long"
    other = "dogs bark loudly at night when strangers pass the gate"
    s = [_chunk("p", 0, gold), _chunk("p", 1, other)]
    st = {c.chunk_id: _chunk("p", i, c.text, "Pets") for i, c in enumerate(s)}
    e = {
        "p#0": _chunk("p", 0, gold, fields="feline resting"),
        "p#1": _chunk("p", 1, other, fields="feline dogs"),
    }
    qs = [_question("q1", "Where does the feline sit?", gold),     # 'feline' missing from S+T, in E fields
          _question("q2", "Which zebra sat on the mat?", gold),    # 'zebra' missing, not supplied
          _question("q3", "cat sat on mat?", gold),                # every term in the chunk
          _question("q4", "Giraffe facts?", "no such evidence text anywhere here")]
    table = moderators(qs, "qasper", s, st, e, stop_words=frozenset({"where", "does", "the", "which", "on",
                                                                      "whatever", "happened"}))
    assert {q: m.bridging for q, m in table.by_qid.items()} == {
        "q1": BRIDGED,
        "q2": NOT_BRIDGED,
        "q3": NO_MISSING,
    }
    assert table.excluded == {"no gold chunk": 1}
    assert table.by_qid["q3"].overlap == 1.0 and table.by_qid["q2"].overlap == pytest.approx(2 / 3)
    assert table.by_qid["q1"].overlap == 0.0  # {feline, sit}: neither is in the evidence
    # q1's terms {feline, sit, ...}: 'feline' is in the gold fields (1) and in the other chunk's fields (1)
    assert table.by_qid["q1"].targeting == pytest.approx(0.0)
    assert question_terms("A cat, a b c! Cats") == frozenset({"cat", "cats"})


def test_terciles_are_deterministic_and_balanced():
    labels = terciles({f"q{i}": float(i % 4) for i in range(10)})
    counts = {g: sum(v == g for v in labels.values()) for g in ("bottom", "middle", "top")}
    assert counts == {"bottom": 3, "middle": 4, "top": 3}
    assert labels == terciles(dict(reversed(list({f"q{i}": float(i % 4) for i in range(10)}.items()))))


def test_group_contrast_matches_the_difference_of_group_means():
    rng = np.random.default_rng(0)
    n = 300
    clusters = np.repeat(np.arange(100), 3)
    groups = np.where(rng.random(n) < 0.4, "g1", "g2")
    diffs = np.where(groups == "g1", 10.0, 2.0) + rng.normal(0, 5, n)
    strata = np.zeros(n, dtype=int)
    c = group_contrast("g1", "g2", diffs, clusters, strata, groups, seed=3, resamples=2000)
    m1 = group_mean("g1", diffs, clusters, strata, groups == "g1", seed=1, resamples=500)
    m2 = group_mean("g2", diffs, clusters, strata, groups == "g2", seed=1, resamples=500)
    assert c.estimate == pytest.approx(m1.estimate - m2.estimate)
    assert c.ci95[0] < c.estimate < c.ci95[1] and c.ci95[0] > 4  # true difference 8
    assert group_contrast("g1", "none", diffs, clusters, strata, groups, seed=3) is None
    assert win_tie_loss([1.0, 0.0, -2.0, 3.0]) == (0.5, 0.25, 0.25)


def test_missing_inputs_block_with_the_make_target():
    plan = load_plan(DEMO / "plan" / "plan.yaml", DEMO / "amendments")
    table = long_table(
        np.random.default_rng(1),
        [SyntheticDataset("papers", 12, 2.0), SyntheticDataset("docs", 30, 1.0, ("ledger", "tern", "skiff"))],
        {"S": 0.0, "F512c": -0.05, "E": 0.02, "S+T": 0.0},
        ["hybrid"],
        {"papers": ["rec@512t"], "docs": ["prec@1024t"]},
    )
    records = {r["id"]: r for r in run_analyses(plan, table, None)}
    assert records["bridging-papers"]["status"] == "blocked"
    assert records["bridging-papers"]["missing"][0]["target"] == "make build-arms"
    assert records["f1-by-recall-papers"]["status"] == "blocked"
    assert "answer_f1@512t" in records["f1-by-recall-papers"]["missing"][0]["what"]
    assert records["f1-by-recall-papers"]["missing"][0]["target"] == "make answer"
    assert records["answer-type-papers"]["status"] == "blocked"
    wtl = records["win-tie-loss"]
    assert wtl["status"] == "ran" and wtl["rows"]
    assert all(abs(r["win"] + r["tie"] + r["loss"] - 1) < 1e-12 for r in wtl["rows"])
    domains = records["domains-docs"]
    assert domains["status"] == "ran" and [r["group"] for r in domains["rows"]] == [
        "ledger",
        "tern",
        "ledger minus tern",
    ]
    assert domains["rows"][2]["estimate"] == pytest.approx(
        domains["rows"][0]["estimate"] - domains["rows"][1]["estimate"]
    )


def test_win_tie_loss_reads_each_test_on_its_registered_questions():
    """A test on a seeded subset (the demo's robustness arms, built on one paper) counts only that subset's
    questions, and an arm that exists only there does not break the table."""
    plan = load_plan(DEMO / "plan" / "plan.yaml", DEMO / "amendments")
    para = next(t for f in plan.families for t in f.tests if t.id == "R-para-papers")
    assert para.subset is not None and para.subset.n_clusters == 1
    arms = {"S": 0.0, "S+T": 0.0, "E": 0.02, "F512c": -0.05}
    table = long_table(np.random.default_rng(3), [SyntheticDataset("papers", 8, 2.0)], arms, ["hybrid"],
                       {"papers": ["rec@512t"]})
    kept = sample_clusters(table, dataset="papers", n_clusters=1, seed=para.subset.seed)
    only = table[(table["arm"] == "E") & table["cluster"].astype(str).isin(kept)].assign(arm="E-para")
    only = only.assign(value=1.0 - only["value"])
    records = {r["id"]: r for r in run_analyses(plan, pd.concat([table, only], ignore_index=True), None)}
    rows = {r["test"]: r for r in records["win-tie-loss"]["rows"]}
    e_rows = table[
        (table["arm"] == "E") & table["cluster"].astype(str).isin(kept) & (table["metric"] == "rec@512t")
    ]
    assert (
        rows["R-para-papers"]["n_questions"]
        == len(e_rows)
        < len(table[(table["arm"] == "E") & (table["metric"] == "rec@512t")])
    )
    diffs = (1.0 - e_rows["value"].to_numpy()) - e_rows["value"].to_numpy()
    assert rows["R-para-papers"]["win"] == pytest.approx(float(np.mean(diffs > 0)))
