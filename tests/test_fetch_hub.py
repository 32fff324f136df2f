"""`harness fetch` from local folders in the hub's layout, through the same `datasets.load_dataset` call as
the hub: the written files load through the existing adapters and give the questions of the shipped files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from data_support import CHECKOUT, SHARED_DATA, freshstack_study
from fetch_support import hub, hub_folder, private_hub_cache, study_with  # noqa: F401 - the fixture

from harness.cli.main import main
from harness.data import qasper
from harness.data.common import InputReader
from harness.data.load import load_dataset
from harness.files import read_json, sha256_file
from harness.sources import fetch as fetching
from harness.sources.lock import read_lock
from harness.study import Study

QASPER_HF = SHARED_DATA / "qasper-train10" / "qasper-original-sample.hf.json"
QASPER_ORIGINAL = SHARED_DATA / "qasper-train10" / "qasper-train10.original-schema.json"
needs_qasper = pytest.mark.skipif(not QASPER_HF.is_file(), reason="../shared/data/qasper-train10 is absent")
needs_laravel = pytest.mark.skipif(not (CHECKOUT / "helpers.md").is_file(),
                                   reason="../shared/data/laravel-docs-724c31cc is absent")


def qasper_rows() -> list[dict]:
    return list(qasper._json_values(QASPER_HF, InputReader(QASPER_HF.parent)))


def qasper_study(root: Path, hub_dir: Path, **more) -> object:
    return study_with(root, {"papers": {
        "adapter": "qasper", "metric_set": "qasper", "files": ["data/qasper/train.json"],
        "source": {"files": [hub(hub_dir, "train", "qasper", **more)]}}})


@needs_qasper
def test_qasper_from_the_hub_layout_loads_as_the_shipped_original_schema_file(tmp_path, capsys):
    hub_dir = hub_folder(tmp_path / "hub", "qasper", "train", qasper_rows())
    study = qasper_study(tmp_path / "study", hub_dir, rows=10)
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "written          data/qasper/train.json" in out and "10 rows" in out
    written = study.root / "data" / "qasper" / "train.json"
    assert list(read_json(written)) == list(
        read_json(QASPER_ORIGINAL)
    )  # the original schema, keyed by paper id
    shipped = study_with(tmp_path / "shipped", {"papers": {"adapter": "qasper", "metric_set": "qasper",
                                                           "files": [str(QASPER_ORIGINAL)]}})
    fetched, expected = (
        load_dataset(study, "papers", selection=None),
        load_dataset(shipped, "papers", selection=None),
    )
    assert len(fetched.questions) > 40 and fetched.questions == expected.questions
    assert fetched.documents == expected.documents
    entry = read_lock(study)["data/qasper/train.json"]
    assert entry["sha256"] == sha256_file(written) and entry["rows"] == 10
    assert entry["bytes"] == written.stat().st_size


@needs_qasper
def test_a_wrong_row_count_is_refused_before_anything_is_written(tmp_path, capsys):
    study = qasper_study(
        tmp_path / "study", hub_folder(tmp_path / "hub", "qasper", "train", qasper_rows()), rows=11
    )
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 2
    assert "has 10 rows, expected 11 (config)" in capsys.readouterr().err
    assert not (study.root / "data" / "qasper").exists()


def test_a_wrong_schema_is_refused_before_anything_is_written(tmp_path, capsys):
    rows = [{"id": "p1", "title": "T", "abstract": "A"}]  # no full_text, no qas
    study = qasper_study(tmp_path / "study", hub_folder(tmp_path / "hub", "qasper", "train", rows))
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "missing field `full_text`" in err and "data/qasper/train.json" in err
    assert not (study.root / "data" / "qasper" / "train.json").exists()
    assert not list((study.root / "data" / "qasper").glob(".*"))  # no scratch left


def freshstack_pair(tmp_path: Path):
    """The data tests' hand-written FreshStack files, and a study fetching the same rows from the hub
    layout."""
    (tmp_path / "shipped").mkdir()
    shipped = freshstack_study(tmp_path / "shipped")
    domain = shipped.raw_config["datasets"]["fs"]["domains"]["laravel"]
    queries = [
        json.loads(line) for line in (shipped.root / "data" / "queries.jsonl").read_text().splitlines()
    ]
    corpus = [json.loads(line) for line in (shipped.root / "data" / "corpus.jsonl").read_text().splitlines()]
    q_hub = hub_folder(tmp_path / "queries-hub", "laravel", "test", queries)
    c_hub = hub_folder(tmp_path / "corpus-hub", "laravel", "train", corpus)
    fetched_domain = dict(domain, queries="data/freshstack/laravel/queries.jsonl",
                          corpus="data/freshstack/laravel/corpus.jsonl",
                          source={"queries": hub(q_hub, "test", "laravel", rows=len(queries)),
                                  "corpus": hub(c_hub, "train", "laravel")})
    fetched = study_with(tmp_path / "fetched", {"fs": dict(shipped.raw_config["datasets"]["fs"],
                                                             domains={"laravel": fetched_domain})})
    return shipped, fetched


@needs_laravel
def test_freshstack_domain_from_the_hub_layout_gives_the_same_questions(tmp_path):
    shipped, fetched = freshstack_pair(tmp_path)
    report = fetching.fetch(fetched, progress=False)
    assert [(o.path, o.state) for o in report.outcomes] == [
        ("data/freshstack/laravel/corpus.jsonl", "written"),
        ("data/freshstack/laravel/queries.jsonl", "written"),
    ]
    got, expected = load_dataset(fetched, "fs", selection=None), load_dataset(shipped, "fs", selection=None)
    assert [q.qid for q in got.questions] == ["q1", "q3"] and got.questions == expected.questions
    assert got.documents == expected.documents


@needs_laravel
def test_second_fetch_verifies_and_a_changed_file_is_refused_naming_both_hashes(tmp_path, capsys):
    _, study = freshstack_pair(tmp_path)
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count("verified") == 2 and "written" not in out and "SOURCES.lock" not in out
    corpus = study.root / "data" / "freshstack" / "laravel" / "corpus.jsonl"
    expected = read_lock(study)["data/freshstack/laravel/corpus.jsonl"]["sha256"]
    corpus.write_text(corpus.read_text() + "\n", encoding="utf-8")
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert (
        f"data/freshstack/laravel/corpus.jsonl: sha256 expected {expected} (SOURCES.lock), actual "
        f"{sha256_file(corpus)}"
        in err
    )


@needs_laravel
def test_upstream_content_changed_under_the_lock_is_refused_unless_update(tmp_path, capsys):
    _, study = freshstack_pair(tmp_path)
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    queries = study.root / "data" / "freshstack" / "laravel" / "queries.jsonl"
    before = queries.read_bytes()
    rows = [json.loads(line) for line in before.decode().splitlines()]
    rows[0]["query_text"] = "Changed upstream, and longer?"
    hub_dir = tmp_path / "queries-hub" / "laravel" / "test.jsonl"
    hub_dir.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    queries.unlink()
    capsys.readouterr()
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 2
    assert "data/freshstack/laravel/queries.jsonl: sha256 expected" in capsys.readouterr().err
    assert not queries.exists()  # refused before writing
    assert main(["fetch", "--study", str(study.root), "--no-progress", "--update"]) == 0
    out = capsys.readouterr().out
    assert (
        "written          data/freshstack/laravel/queries.jsonl" in out
        and "updated" in out
        and "SOURCES.lock" in out
    )
    assert read_lock(study)["data/freshstack/laravel/queries.jsonl"]["sha256"] == sha256_file(queries)
    assert b"Changed upstream, and longer?" in queries.read_bytes()


@needs_laravel
def test_an_interrupted_fetch_resumes_with_what_it_had_written(tmp_path, monkeypatch):
    _, study = freshstack_pair(tmp_path)
    real = fetching.load_rows

    def interrupted(dataset_id, **kw):
        if "queries-hub" in dataset_id:
            raise KeyboardInterrupt
        return real(dataset_id, **kw)

    monkeypatch.setattr(fetching, "load_rows", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fetching.fetch(study, progress=False)
    folder = study.root / "data" / "freshstack" / "laravel"
    assert sorted(p.name for p in folder.iterdir()) == ["corpus.jsonl"]  # no half-written queries file
    assert list(read_lock(study)) == ["data/freshstack/laravel/corpus.jsonl"]
    monkeypatch.setattr(fetching, "load_rows", real)
    report = fetching.fetch(study, progress=False)
    assert [(o.path, o.state) for o in report.outcomes] == [
        ("data/freshstack/laravel/corpus.jsonl", "verified"),
        ("data/freshstack/laravel/queries.jsonl", "written"),
    ]


def test_offline_each_missing_source_names_itself_and_the_file_to_place(tmp_path, capsys):
    study = study_with(
        tmp_path,
        {
            "papers": {
                "adapter": "qasper",
                "metric_set": "qasper",
                "files": ["data/dev.json", "data/test.json"],
                "source": {
                    "files": [
                        hub("allenai/qasper", "validation", "qasper"),
                        hub("allenai/qasper", "test", "qasper"),
                    ]
                },
            }
        },
    )
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "2 source(s) not fetched" in err
    for i, (split, path) in enumerate([("validation", "data/dev.json"), ("test", "data/test.json")]):
        assert (
            f"source `datasets.papers.source.files[{i}]` (huggingface allenai/qasper (config qasper, split "
            f"{split}, "
            f"revision pinned on first fetch)) cannot be fetched: HF_HUB_OFFLINE is set"
        ) in err
        assert f"place {path} by hand (a Qasper file in the original schema" in err
    assert not (tmp_path / "data" / "SOURCES.lock").exists()


@needs_laravel
def test_a_fetch_killed_while_writing_leaves_no_partial_file(tmp_path, monkeypatch):
    _, study = freshstack_pair(tmp_path)
    real = os.replace

    def killed(src, dst):
        if str(dst).endswith("queries.jsonl"):
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        fetching.fetch(study, progress=False)
    folder = study.root / "data" / "freshstack" / "laravel"
    assert sorted(p.name for p in folder.iterdir()) == ["corpus.jsonl"]
    monkeypatch.setattr(os, "replace", real)
    assert [o.state for o in fetching.fetch(study, progress=False).outcomes] == ["verified", "written"]


def test_rows_the_adapter_would_refuse_are_refused_before_writing(tmp_path, capsys):
    rows = [{"query_id": "q1", "query_title": "", "query_text": " ", "nuggets": []}]
    q_hub = hub_folder(tmp_path / "hub", "d", "test", rows)
    domain = {"queries": "data/q.jsonl", "corpus": "data/c.jsonl", "checkout": "docs",
              "source": {"queries": hub(q_hub, "test", "d")}}
    study = study_with(tmp_path / "study", {"fs": {"adapter": "freshstack", "metric_set": "freshstack",
                                                   "domains": {"d": domain}}})
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "data/q.jsonl: huggingface" in err and "the query is empty" in err and "nothing written" in err
    assert not list((study.root / "data").iterdir())  # neither the file nor the scratch copy


@pytest.mark.parametrize("dataset", ["papers", "docs"])
def test_the_demo_jsonl_files_from_the_hub_layout_give_the_demo_questions(tmp_path, dataset):
    demo = Path(__file__).resolve().parents[1] / "examples" / "demo"
    shipped_cfg = Study.at(demo).raw_config["datasets"][dataset]
    source = {}
    for key in ("documents", "questions"):
        rows = [
            json.loads(line) for line in (demo / shipped_cfg[key]).read_text().splitlines() if line.strip()
        ]
        source[key] = hub(hub_folder(tmp_path / f"{key}-hub", "default", "train", rows), "train", "default",
                          rows=len(rows))
    study = study_with(
        tmp_path / "study",
        {
            dataset: {
                "adapter": "jsonl",
                "metric_set": shipped_cfg["metric_set"],
                "documents": f"data/{dataset}/documents.jsonl",
                "questions": f"data/{dataset}/questions.jsonl",
                "source": source,
            }
        },
    )
    shutil.copytree(
        demo / "data" / dataset / "docs", study.root / "data" / dataset / "docs"
    )  # the bodies `path` names
    assert [o.state for o in fetching.fetch(study, progress=False).outcomes] == ["written", "written"]
    shipped = study_with(
        tmp_path / "shipped",
        {
            dataset: dict(
                shipped_cfg,
                documents=str(demo / shipped_cfg["documents"]),
                questions=str(demo / shipped_cfg["questions"]),
            )
        },
    )
    got, expected = (
        load_dataset(study, dataset, selection=None),
        load_dataset(shipped, dataset, selection=None),
    )
    assert (
        len(got.questions) > 40
        and got.questions == expected.questions
        and got.documents == expected.documents
    )
