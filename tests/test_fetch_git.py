"""Checkouts fetched by `harness fetch` from a local bare git repository with two commits."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from fetch_support import study_with

from harness.cli.main import main
from harness.sources.lock import read_lock

pytestmark = pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
                                reason="the git command is not installed")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def run_git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(cwd), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return proc.stdout.strip()


@pytest.fixture
def docs_repo(tmp_path) -> tuple[Path, str, str]:
    """A bare repository whose first commit holds guide.md v1 and whose second (its HEAD) changes it."""
    work = tmp_path / "work"
    work.mkdir()
    run_git(work, "init", "--quiet", "-b", "main")
    (work / "guide.md").write_text("# Guide\n\nversion one\n")
    run_git(work, "add", "guide.md")
    run_git(work, "commit", "--quiet", "-m", "one")
    first = run_git(work, "rev-parse", "HEAD")
    (work / "guide.md").write_text("# Guide\n\nversion two\n")
    run_git(work, "commit", "--quiet", "-am", "two")
    second = run_git(work, "rev-parse", "HEAD")
    bare = tmp_path / "docs.git"
    subprocess.run(
        ["git", "clone", "--quiet", "--bare", str(work), str(bare)], check=True, env={**os.environ, **GIT_ENV}
    )
    return bare, first, second


def docs_study(root: Path, repository: Path, commit: str):
    domain = {
        "queries": "data/q.jsonl",
        "corpus": "data/c.jsonl",
        "checkout": "data/checkouts/docs",
        "commit": commit,
        "source": {"checkout": {"git": {"repository": repository.as_uri(), "commit": commit}}},
    }
    return study_with(root, {"fs": {"adapter": "freshstack", "metric_set": "freshstack",
                                    "domains": {"docs": domain}, "selection": {"seed": 1}}})


@pytest.mark.parametrize("abbreviated", [False, True])
def test_the_checkout_lands_on_the_pinned_commit_not_the_newest(tmp_path, docs_repo, capsys, abbreviated):
    bare, first, second = docs_repo
    study = docs_study(tmp_path / "study", bare, first[:8] if abbreviated else first)
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    checkout = study.root / "data" / "checkouts" / "docs"
    assert run_git(checkout, "rev-parse", "HEAD") == first != second
    assert (checkout / "guide.md").read_text() == "# Guide\n\nversion one\n"
    assert f"written          data/checkouts/docs  commit {first}, 1 files" in capsys.readouterr().out
    entry = read_lock(study)["data/checkouts/docs"]
    assert entry["commit"] == first and entry["tree"] == run_git(checkout, "rev-parse", "HEAD^{tree}")
    assert not list(checkout.parent.glob(".*fetch-tmp"))  # the scratch clone was renamed into place
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    assert f"verified         data/checkouts/docs  commit {first}" in capsys.readouterr().out


def test_a_commit_the_repository_lacks_is_an_error_naming_it(tmp_path, docs_repo, capsys):
    bare, _, _ = docs_repo
    study = docs_study(tmp_path / "study", bare, "0123456789abcdef0123456789abcdef01234567")
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 1
    assert (
        "commit 0123456789abcdef0123456789abcdef01234567 is not in the repository" in capsys.readouterr().err
    )
    assert not (study.root / "data" / "checkouts" / "docs").exists()


def test_a_checkout_moved_off_its_commit_or_edited_is_refused(tmp_path, docs_repo, capsys):
    bare, first, second = docs_repo
    study = docs_study(tmp_path / "study", bare, first)
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 0
    checkout = study.root / "data" / "checkouts" / "docs"
    (checkout / "guide.md").write_text("edited by hand\n")
    capsys.readouterr()
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 2
    assert "data/checkouts/docs: 1 tracked file(s) modified since the checkout" in capsys.readouterr().err
    run_git(checkout, "checkout", "--quiet", "--", "guide.md")
    run_git(checkout, "fetch", "--quiet", "origin", second)
    run_git(checkout, "checkout", "--quiet", "--detach", second)
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 2
    assert (
        f"data/checkouts/docs: HEAD expected {first} (SOURCES.lock), actual {second}"
        in capsys.readouterr().err
    )


def test_an_unreachable_repository_names_the_source_and_the_folder_to_place(tmp_path, capsys):
    study = docs_study(
        tmp_path / "study", tmp_path / "no-such-repo.git", "0123456789abcdef0123456789abcdef01234567"
    )
    assert main(["fetch", "--study", str(study.root), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "source `datasets.fs.domains.docs.source.checkout` (git file://" in err
    assert "place data/checkouts/docs by hand (a clone of the repository with that commit checked out)" in err
    assert not list((study.root / "data" / "checkouts").iterdir())  # no empty scratch clone left behind
