"""`source:` blocks in the typed config, the flagship's declared sources, and the freeze's record of them."""

from __future__ import annotations

import shutil
from dataclasses import fields
from pathlib import Path

import pytest
from fetch_support import hub, hub_folder, private_hub_cache, study_with  # noqa: F401 - the fixture

from harness.cli.main import main
from harness.config import load_study_config
from harness.config.datasets import DATASET_SCHEMAS, FreshStackDomain
from harness.data.adapters import ADAPTERS
from harness.errors import HarnessError
from harness.files import atomic_write_json, read_json
from harness.provenance.record_diff import compare_records
from harness.provenance.inputs import input_record
from harness.sources import fetch as fetching
from harness.sources.formats import FORMATS
from harness.sources.lock import lock_path
from harness.study import Study

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "724c31ccd3edce6b6dfe5e0dd2a594a47217f078"


def freshstack_entry(**source) -> dict:
    return {"adapter": "freshstack", "metric_set": "freshstack", "domains": {"laravel": {
        "queries": "q.jsonl", "corpus": "c.jsonl", "checkout": "docs", "commit": COMMIT, "source": source}}}


def check(datasets: dict):
    return load_study_config({"study": "s", "datasets": datasets, "arms": {"S": {"kind": "S"}},
                              "retrievers": {"bm25": {"type": "bm25"}}}, path="configs/study.yaml",
                             default_name="s")


GIT = {"git": {"repository": "https://example.org/docs.git", "commit": COMMIT}}


@pytest.mark.parametrize(
    "source, message",
    [
        (
            {"queries": {"huggingface": {"id": "x", "split": "test"}, **GIT}},
            r"`datasets.fs.domains.laravel.source.queries` must give exactly one of huggingface, url, git "
            r"\(got huggingface, git\)",
        ),
        (
            {"queries": GIT},
            r"`datasets.fs.domains.laravel.source.queries` must be a huggingface or url source \(a file\), "
            r"got `git`",
        ),
        (
            {"checkout": {"huggingface": {"id": "x", "split": "train"}}},
            r"source.checkout` must be a git source",
        ),
        (
            {"qrels": {"url": {"href": "https://example.org/qrels.tsv", "sha256": "0" * 64}}},
            r"source.qrels` is given, but the entry sets no `qrels`",
        ),
        (
            {"queries": {"huggingface": {"id": "x", "split": "test", "revison": "main"}}},
            r"huggingface.revison` is not a known key \(did you mean `revision`\?\)",
        ),
        (
            {"queries": {"url": {"href": "https://example.org/q.jsonl", "sha256": "abc"}}},
            r"url.sha256` must be 64 lowercase hex digits, got 'abc'",
        ),
        (
            {"checkout": {"git": {"repository": "r", "commit": "7d9b38e9"}}},
            r"git.commit` is 7d9b38e9, but the domain's `commit` is 724c31cc.*must name the same commit",
        ),
        ({"checkout": {"git": {"repository": "r", "commit": "main"}}}, r"git.commit` must be a commit hash"),
    ],
)
def test_a_wrong_source_is_refused_naming_its_key(source, message):
    with pytest.raises(HarnessError, match=message):
        check({"fs": freshstack_entry(**source)})


def test_a_qrels_file_takes_no_hub_rows_and_qasper_lists_one_source_per_file():
    entry = freshstack_entry(qrels={"huggingface": {"id": "x", "split": "test"}})
    entry["domains"]["laravel"]["qrels"] = "qrels.tsv"
    with pytest.raises(HarnessError, match=r"source.qrels` is a text file: give a url source"):
        check({"fs": entry})
    with pytest.raises(
        HarnessError, match=r"source.files` must list one source per entry of `files` \(2\), got 1"
    ):
        check({"p": {"adapter": "qasper", "metric_set": "qasper", "files": ["a.json", "b.json"],
                     "source": {"files": [{"huggingface": {"id": "x", "split": "test"}}]}}})


def test_the_flagship_declares_a_source_for_every_file_its_adapters_read(capsys):
    study = Study.at(ROOT)
    assert main(["config", "--study", str(ROOT)]) == 0
    assert "freshstack/queries-oct-2024" in capsys.readouterr().out
    read = {p for name, cfg in study.config.datasets.items() for p in ADAPTERS[cfg.adapter].paths(cfg)
            if not p.startswith("selection/")}
    assert main(["fetch", "--study", str(ROOT), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {line.split()[2]: line for line in lines if line.startswith("would write")}
    assert set(listed) == read and len(read) == 11
    assert "<- huggingface allenai/qasper (split validation, revision pinned on first fetch)" in \
        listed["data/qasper/qasper-dev-v0.3.json"]
    assert f"<- git https://github.com/laravel/docs.git at {COMMIT}" in listed["data/checkouts/laravel-docs"]
    assert "config yolo, split test" in listed["data/freshstack/yolo/queries.jsonl"]
    assert not (ROOT / "data").exists()  # a dry run writes nothing


def test_the_freeze_records_the_locked_revision_so_another_one_is_drift(tmp_path):
    rows = [{"query_id": "q1", "query_title": "T", "query_text": "Q?", "nuggets": []}]
    q_hub = hub_folder(tmp_path / "hub", "d", "test", rows)
    domain = {"queries": "data/q.jsonl", "corpus": "data/c.jsonl", "checkout": "docs",
              "source": {"queries": hub(q_hub, "test", "d")}}
    study = study_with(tmp_path / "study", {"fs": {"adapter": "freshstack", "metric_set": "freshstack",
                                                   "domains": {"d": domain}, "selection": {"seed": 1}}})
    (study.root / "data" / "c.jsonl").parent.mkdir(parents=True)
    (study.root / "data" / "c.jsonl").write_text("")
    (study.root / "docs").mkdir()
    assert not fetching.fetch(study, progress=False).unavailable
    lock = read_json(lock_path(study))
    lock["files"]["data/q.jsonl"]["revision"] = "a" * 40  # as if the hub had resolved this commit
    atomic_write_json(lock_path(study), lock)
    frozen = input_record(study)
    assert frozen["sources"]["data/q.jsonl"]["revision"] == "a" * 40
    lock["files"]["data/q.jsonl"]["revision"] = "b" * 40
    atomic_write_json(lock_path(study), lock)
    (diff,) = compare_records(frozen, input_record(Study.at(study.root)))
    assert diff.keys == ("sources", "data/q.jsonl", "revision") and diff.refused


def test_a_study_without_sources_has_no_sources_record():
    assert "sources" not in input_record(Study.at(ROOT / "examples" / "handbook"))


def _source_keys(schema: type) -> list[str]:
    """The keys of a schema's `source:` section (through Optional(Section(...)))."""
    found = {f.name: f for f in fields(schema)}
    if "source" not in found:
        return []
    return [f.name for f in fields(found["source"].metadata["check"].check.cls)]


def test_every_file_a_source_section_can_declare_has_a_format():
    declared = set()
    for adapter, schema in DATASET_SCHEMAS.items():
        keys = _source_keys(schema) + (_source_keys(FreshStackDomain) if adapter == "freshstack" else [])
        declared |= {f"{adapter}-{key}" for key in keys if key != "checkout"}
    assert declared == set(FORMATS)


def test_a_missing_input_that_fetch_writes_names_make_data(tmp_path, capsys):
    root = Path(__file__).resolve().parents[1]
    for part in ("configs", "plan", "amendments", "prompts", "selection"):
        shutil.copytree(root / part, tmp_path / part)
    assert main(["select", "--study", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "file not found; dataset" in err and "run `make data`" in err
    demo = root / "examples" / "demo"  # its datasets declare no `source:`: a missing file is only missing
    shutil.copytree(demo, tmp_path / "demo", ignore=shutil.ignore_patterns("results"))
    (tmp_path / "demo" / "data" / "docs" / "questions.jsonl").unlink()
    assert main(["select", "--study", str(tmp_path / "demo")]) == 1
    err = capsys.readouterr().err
    assert "questions.jsonl: file not found" in err and "make data" not in err
