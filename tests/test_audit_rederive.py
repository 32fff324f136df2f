"""The audit re-derives what it used to trust (harness.pipeline.rederive, harness.pipeline.rescore):
coordinated
edits that keep every released file consistent with the results manifest fail, each naming the record.

The released study is a copy of the demo's data with the LLM-free arms, an enrichment arm E, BM25 and a
simulated dense retriever, and a simulated model as the enricher, the reader and the judge: every stage runs
in seconds and every model output sits in the generation and vector caches as in a real release."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from harness.audit import AuditSettings, audit_study
from harness.cli.main import main
from harness.files import read_json
from harness.grid.cells import configured_cells
from harness.grid.paths import answers_dir, embeddings_dir, generations_path, judges_dir, per_question_path
from harness.provenance.checks import Check
from harness.provenance.freeze import frozen_hash
from harness.provenance.release import release_hash
from harness.provenance.release import record_results
from harness.study import Study
from pipeline_support import edit_config, make_llm_free_study
from provenance_support import forge_journal, published_hashes


def _add_models(cfg: dict) -> None:
    cfg["models"] = {"sim": {"backend": "simulated", "name": "qwen2.5:7b"}}
    cfg["arms"]["E"] = {"kind": "E", "model": "sim", "datasets": ["papers"]}
    cfg["retrievers"]["dense"] = {"type": "dense", "backend": "simulated", "model": "nomic-embed-text"}
    cfg["reader"] = {"model": "sim", "questions": 4, "seed": 2027,
                     "cells": [{"dataset": "papers", "retriever": "bm25", "arms": ["E", "S"]},
                               {"dataset": "docs", "retriever": "bm25", "arms": ["S"]}]}
    cfg["judge"] = {"model": "sim", "require_distinct_family": False}


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    root = tmp_path_factory.mktemp("released")
    make_llm_free_study(root, ("bm25",), freeze=False)
    edit_config(root, _add_models)
    for command in ("select", "freeze", "build-arms", "score", "answer", "stats"):
        assert (
            main(
                [
                    command,
                    "--study",
                    str(root),
                    *(["--no-progress"] if command in ("build-arms", "score", "answer") else []),
                ]
            )
            == 0
        ), command
    return Study.at(root)


@pytest.fixture
def copy(released, tmp_path):
    shutil.copytree(released.root, tmp_path / "s")
    return Study.at(tmp_path / "s")


def audit(study: Study, capsys, *extra: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    # outside git the published hashes anchor the registration and the release (else the audit exits 3)
    code = main(["audit", "--study", str(study.root), *published_hashes(study), "--no-progress", *extra])
    return code, capsys.readouterr().out.splitlines()


def failures(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("FAIL")]


def run(study: Study, *commands: str) -> None:
    forge_journal(study)  # a forger journals the edited files too, so that no stage refuses them
    for command in commands:
        assert (
            main([command, "--study", str(study.root), *(["--no-progress"] if command != "stats" else [])])
            == 0
        )


def test_the_release_passes_every_re_derivation_and_a_rescore_of_every_cell(released, capsys):
    code, lines = audit(released, capsys, "--rescore", "all")
    assert code == 0, failures(lines)
    for record in (
        "selection/selection.json",
        "results/per_question/papers.parquet",
        "results/per_question/docs.csv",
        "results/answers/reader_acceptance.json",
        "results/judges/acceptance.json",
        "results/judges/controls.jsonl",
        "results/chunks/papers/E.jsonl",
    ):
        assert any(line.startswith(f"PASS  (re-derived)/{record}: ") for line in lines), record
    rescored = [line for line in lines if line.startswith("PASS  (rescore)/") and "(vectors" not in line]
    assert len(rescored) == len(configured_cells(released))
    assert any(line.startswith("PASS  (rescore)/papers/E/bm25: ") and "answer rows replayed identical" in line
               for line in rescored)
    assert any(line.startswith("PASS  (rescore)/(vectors dense): ") for line in lines)


def test_the_audit_is_a_library_call_whose_checks_are_one_type_the_cli_prints(released, capsys):
    """harness.audit returns every finding as a provenance Check (anchors, re-derivations, family rows alike);
    the command prints their lines and the summary, and exits with the result's code."""
    result = audit_study(released, AuditSettings(registered_hash=frozen_hash(released),
                                                 release_hash=release_hash(released)))
    assert all(type(c) is Check for c in result.checks)
    subjects = {c.subject for c in result.checks}
    assert {"(registration)", "(re-derived)", "(frozen)", "(grid)"} <= subjects
    assert any(c.item == "(family)" for c in result.checks) and result.exit_code == 0 and result.all_passed
    code, lines = audit(released, capsys)
    assert code == 0 and lines == [c.line() for c in result.checks] + [result.summary()]
    assert lines[-1] == f"audit: {len(result.checks)} PASS, 0 FAIL"


def test_a_question_removed_from_the_selection_fails_naming_it(copy, capsys):
    """Case 2: the selection edited and frozen again; the draw from its seed and data still selects it."""
    path = copy.selection_path
    selection = read_json(path)
    selection["datasets"]["docs"]["selected"].remove("ledger-q03")
    path.write_text(json.dumps(selection, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    assert main(["freeze", "--study", str(copy.root), "--force", "a smaller sample"]) == 0
    code, lines = audit(Study.at(copy.root), capsys)
    assert code == 1
    line = next(line for line in lines if line.startswith("FAIL  (re-derived)/selection/selection.json: "))
    assert "docs: `selected` lacks ledger-q03" in line, line


def test_a_table_edited_consistently_with_its_csv_and_the_manifest_fails_against_its_parts(copy, capsys):
    """Case 3c: papers.parquet and papers.csv edited alike, the manifest recorded afresh, stats rerun."""
    parquet, csv = per_question_path(copy, "papers", "parquet"), per_question_path(copy, "papers", "csv")
    table = pd.read_parquet(parquet)
    i = int(table.index[(table.arm == "S+T") & (table.metric == "rec@512t")][0])
    table.at[i, "value"] = 1.0 - table.at[i, "value"]
    table.to_parquet(parquet, index=False)
    lines = csv.read_text(encoding="utf-8").splitlines()
    row = table.iloc[i]
    lines[i + 1] = ",".join(str(row[c]) for c in table.columns[:-1]) + f",{float(row['value'])!r}"
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    record_results(copy)
    run(copy, "stats")
    code, lines = audit(copy, capsys)
    assert code == 1
    fails = failures(lines)
    assert {f.split(":")[0] for f in fails} == {"FAIL  (re-derived)/results/per_question/papers.parquet",
                                                "FAIL  (re-derived)/results/per_question/papers.csv"}, fails
    assert all(f"line {i + 2} differs" in f for f in fails), fails


def test_answer_rows_set_to_one_fail_the_rescore_of_their_cell(copy, capsys):
    """Case 3d: an answer part's values all 1.0, the manifest recorded afresh, score and stats rerun: only
    answering the cell again from the cache shows it."""
    part = answers_dir(copy) / "papers" / "E__bm25.parquet"
    rows = pd.read_parquet(part)
    rows["value"] = 1.0
    rows.to_parquet(part, index=False)
    record_results(copy)
    run(copy, "score", "stats")
    code, lines = audit(copy, capsys, "--rescore", "all")
    assert code == 1
    fails = failures(lines)  # the table holds the edited part, and stats were recomputed from it: one FAIL
    assert len(fails) == 1 and fails[0].startswith("FAIL  (rescore)/papers/E/bm25: "), fails
    assert (
        "results/answers/papers/E__bm25.parquet (the cell's answer rows, as CSV) line 2 differs" in fails[0]
    )


def test_an_edited_generation_cache_fails_the_chunk_set_it_no_longer_replays(copy, capsys):
    """Case 4, the edit without rebuilding: the released E chunk set is not what the cache now replays.
    (Edited
    and rebuilt, the chunk sets agree with the cache; only the release record's hash sees that.)"""
    path = generations_path(copy, "sim")
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    answer = json.loads(record["text"])
    answer["title"] = "Injected title"
    record["text"] = json.dumps(answer)
    lines[0] = json.dumps(record, sort_keys=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, lines = audit(copy, capsys)
    assert code == 1
    # the release record names the edited cache too; left unforged here, it is not what this test checks
    fails = [f for f in failures(lines) if not f.startswith("FAIL  (results)/results/generations/sim.jsonl")]
    assert len(fails) == 1 and fails[0].startswith(
        "FAIL  (re-derived)/results/chunks/papers/E.jsonl: not what the generation cache replays"
    ), fails
    assert "Injected title" in fails[0]


@pytest.mark.parametrize("edit", ["reader", "judge"])
def test_an_edited_acceptance_record_fails_against_its_replayed_controls(copy, capsys, edit):
    """Case 6: a control rate edited (its per-question scores left as they are), stats rerun."""
    if edit == "reader":
        path = answers_dir(copy) / "reader_acceptance.json"
        record = read_json(path)
        record["datasets"]["papers"]["positive"] = 0.9
    else:
        path = judges_dir(copy) / "acceptance.json"
        record = read_json(path)
        record["nugget-judge"]["positive"], record["nugget-judge"]["reasons"] = 0.95, []
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    record_results(copy)
    run(copy, "stats")
    code, lines = audit(copy, capsys)
    assert code == 1
    fails = failures(lines)
    item = "results/answers/reader_acceptance.json" if edit == "reader" else "results/judges/acceptance.json"
    assert len(fails) == 1 and fails[0].startswith(f"FAIL  (re-derived)/{item}: edited"), fails
    assert (
        "datasets.papers.positive: released 0.9" if edit == "reader" else "positive: released 0.95"
    ) in fails[0]


def test_edited_cached_vectors_fail_the_rescore_sample(copy, capsys):
    """The rescore reads the released vectors instead of encoding them again; a sample encoded afresh shows an
    edited cache."""
    for shard in sorted(embeddings_dir(copy).glob("*/*.npz")):
        with np.load(shard) as z:
            arrays = dict(z)
        arrays["vectors"] = arrays["vectors"][:, ::-1].copy()  # same norms, other directions
        np.savez(shard, **arrays)
    code, lines = audit(copy, capsys, "--rescore", "all")
    assert code == 1
    assert any(
        line.startswith("FAIL  (rescore)/(vectors dense): ") and "differ from the model's encoding" in line
        for line in lines
    ), failures(lines)


@pytest.mark.parametrize(
    "edit, differs",
    [
        (lambda t: t, None),
        (lambda t: t.assign(value=t["value"].where(t.index != 1, -0.0)), "t line 3 differs"),  # == 0.0
        (lambda t: t.assign(value=t["value"].where(t.index != 2, np.nextafter(0.5, 1.0))),
         "t line 4 differs"),
        (lambda t: t.assign(qid=t["qid"].where(t.index != 0, "q9")), "t line 2 differs"),
        (lambda t: t.iloc[:2], "t: ends after line 3"),
    ],
)
def test_two_tables_differ_where_their_csv_lines_differ(edit, differs):
    """table_difference finds at C speed what writing both as CSV finds: -0.0 (equal to 0.0, written
    "-0.0") and the next float differ."""
    from harness.grid.results import ResultRow, to_frame
    from harness.pipeline.rederive import table_difference

    ours = to_frame([ResultRow("d", "S", "bm25", f"q{i}", f"c{i}", "", "hit@1", v)
                     for i, v in enumerate([1.0, 0.0, 0.5])])
    found = table_difference(edit(ours.copy()), ours, "t")
    assert found == differs if differs is None else found.startswith(differs), found
