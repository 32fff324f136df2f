"""`url:` sources (a plain file, or a member of an archive) through file:// URLs, offline."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile

from fetch_support import study_with

from harness.cli.main import main
from harness.sources.lock import read_lock

QUESTIONS = [{"qid": "q1", "question": "Where?", "evidence": []}]


def jsonl_study(root, href: str, sha256: str, member: str | None = None):
    url = {"href": href, "sha256": sha256, **({"member": member} if member else {})}
    return study_with(
        root,
        {
            "d": {
                "adapter": "jsonl",
                "metric_set": "qasper",
                "documents": "data/documents.jsonl",
                "questions": "data/questions.jsonl",
                "source": {"questions": {"url": url}},
            }
        },
    )


def test_a_plain_file_is_written_as_downloaded_and_locked(tmp_path, capsys):
    payload = "".join(json.dumps(q) + "\n" for q in QUESTIONS).encode()
    (tmp_path / "questions.jsonl").write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    study = jsonl_study(tmp_path / "study", (tmp_path / "questions.jsonl").as_uri(), digest)
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    assert (study.root / "data" / "questions.jsonl").read_bytes() == payload
    assert read_lock(study)["data/questions.jsonl"]["sha256"] == digest
    assert "written          data/questions.jsonl" in capsys.readouterr().out


def test_a_download_with_another_hash_is_refused_before_writing(tmp_path, capsys):
    (tmp_path / "questions.jsonl").write_text(json.dumps(QUESTIONS[0]) + "\n")
    study = jsonl_study(tmp_path / "study", (tmp_path / "questions.jsonl").as_uri(), "0" * 64)
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert (
        f"data/questions.jsonl: {(tmp_path / 'questions.jsonl').as_uri()} sha256 expected {'0' * 64} "
        "(config), actual"
        in err
    )
    assert not (study.root / "data" / "questions.jsonl").exists()


def test_a_member_of_a_tar_archive(tmp_path):
    payload = (json.dumps(QUESTIONS[0]) + "\n").encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("release/questions.jsonl")
        info.size = len(payload)
        archive.addfile(info, io.BytesIO(payload))
    (tmp_path / "release.tgz").write_bytes(buffer.getvalue())
    digest = hashlib.sha256(buffer.getvalue()).hexdigest()
    study = jsonl_study(
        tmp_path / "study", (tmp_path / "release.tgz").as_uri(), digest, "release/questions.jsonl"
    )
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    assert (study.root / "data" / "questions.jsonl").read_bytes() == payload
    missing = jsonl_study(
        tmp_path / "other", (tmp_path / "release.tgz").as_uri(), digest, "release/nope.jsonl"
    )
    assert main(["fetch", "--study", str(missing.root), "--no-progress"]) == 1


def test_an_unreachable_url_names_the_source_and_the_file_to_place(tmp_path, capsys):
    study = jsonl_study(tmp_path / "study", (tmp_path / "absent.jsonl").as_uri(), "0" * 64)
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "source `datasets.d.source.questions` (url file://" in err
    assert "place data/questions.jsonl by hand (questions.jsonl (docs/jsonl-format.md))" in err


def test_a_file_placed_by_hand_is_kept_unlocked_if_the_adapter_reads_it(tmp_path, capsys):
    study = jsonl_study(tmp_path / "study", (tmp_path / "absent.jsonl").as_uri(), "0" * 64)
    placed = study.root / "data" / "questions.jsonl"
    placed.parent.mkdir()
    placed.write_text("not json\n")
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 1
    assert "data/questions.jsonl: placed by hand, but the adapter refuses it" in capsys.readouterr().err
    placed.write_text(json.dumps(QUESTIONS[0]) + "\n")
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    assert (
        "already present  data/questions.jsonl  (not in the lock: placed by hand" in capsys.readouterr().out
    )
    assert read_lock(study) == {}


def _fetched(tmp_path):
    payload = "".join(json.dumps(q) + "\n" for q in QUESTIONS).encode()
    (tmp_path / "questions.jsonl").write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    study = jsonl_study(tmp_path / "study", (tmp_path / "questions.jsonl").as_uri(), digest)
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    return study, digest


def _edit_lock(study, **entry) -> None:
    path = study.root / "data" / "SOURCES.lock"
    lock = json.loads(path.read_text())
    lock["files"]["data/questions.jsonl"].update(entry)
    path.write_text(json.dumps(lock))


def test_the_configs_sha256_outranks_the_lock_for_a_file_present(tmp_path, capsys):
    """An edited file and a lock edited to match it: the config still declares the download's hash, and
    fetch holds the file to that, not to the lock."""
    study, digest = _fetched(tmp_path)
    forged = (json.dumps({"qid": "q9", "question": "Who?", "evidence": []}) + "\n").encode()
    (study.root / "data" / "questions.jsonl").write_bytes(forged)
    _edit_lock(study, sha256=hashlib.sha256(forged).hexdigest(), bytes=len(forged))
    capsys.readouterr()
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 2
    assert (
        f"data/questions.jsonl: sha256 expected {digest} (config), actual "
        f"{hashlib.sha256(forged).hexdigest()}"
        in capsys.readouterr().err
    )


def test_a_lock_that_disagrees_with_the_config_is_corrected_when_the_file_matches_the_config(
    tmp_path, capsys
):
    study, digest = _fetched(tmp_path)
    _edit_lock(study, sha256="f" * 64)
    capsys.readouterr()
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    assert f"verified         data/questions.jsonl  sha256 {digest[:12]}" in capsys.readouterr().out
    assert read_lock(study)["data/questions.jsonl"]["sha256"] == digest
