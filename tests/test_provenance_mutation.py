"""Mutation test of the freeze: flip one byte in each input file of a copy of the demo study; `harness
build-arms` (the real CLI path) must exit 2 before building anything and name that file, for every file
(a flip that makes the config invalid is a config error instead: exit 1, naming the file and key).

The files are enumerated twice, from the freeze record and from a walk of the demo's input folders, and the
two lists must agree, so a file the freeze forgets fails here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from provenance_support import DEMO, FakeDigests, install_fake_digests, model_keys

import harness.cli.build_arms as build_arms_cli
from harness.cli.main import main
from harness.provenance.freeze import freeze
from harness.study import Study

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (DEMO / "data").is_dir(), reason="the demo study is absent"),
]

INPUT_FOLDERS = ("configs", "plan", "amendments", "prompts", "selection", "data")


class ReachedBuild(Exception):
    """build-arms got past the drift check."""


def walked_inputs(root: Path) -> set[str]:
    """Every file of the study's input folders, found without asking the harness."""
    found = set()
    for folder in INPUT_FOLDERS:
        for p in (root / folder).rglob("*"):
            rel = p.relative_to(root)
            if p.is_file() and not any(part.startswith(".") for part in rel.parts):
                found.add(rel.as_posix())
    return found


def flip_one_byte(path: Path) -> None:
    """Flip the case bit of the ASCII letter nearest the middle: one byte, still UTF-8."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    letters = [i for i, b in enumerate(data) if chr(b).isascii() and chr(b).isalpha()]
    assert letters, f"{path} has no ASCII letter to flip"
    i = min(letters, key=lambda j: (abs(j - middle), j))
    data[i] ^= 0x20
    path.write_bytes(bytes(data))


@pytest.fixture
def study(tmp_path, monkeypatch) -> Study:
    root = tmp_path / "demo"
    for folder in INPUT_FOLDERS:
        shutil.copytree(DEMO / folder, root / folder)
    digests = FakeDigests(
        {key: f"sha256:{i:064d}" for i, key in enumerate(model_keys(root / "configs" / "study.yaml"))}
    )
    install_fake_digests(monkeypatch, digests)

    def no_build(*args, **kwargs):
        raise ReachedBuild

    monkeypatch.setattr(build_arms_cli, "build_arms", no_build)
    study = Study.at(root)
    freeze(study)
    return study


def test_freeze_record_and_folder_walk_list_the_same_files(study):
    recorded = set(json.loads(study.frozen_path.read_text())["input_files"])
    assert recorded == walked_inputs(study.root)
    assert len(recorded) >= 30 and "data/docs/docs/ledger/accounts.md" in recorded
    shipped = set(json.loads((DEMO / "frozen_config.json").read_text()).get("input_files", {}))
    assert shipped == recorded, "examples/demo/frozen_config.json is stale: re-freeze the demo"


def test_unchanged_copy_passes_the_drift_check(study):
    with pytest.raises(ReachedBuild):  # the control: without a flip, build-arms goes on to build
        main(["build-arms", "--study", str(study.root), "--no-progress"])


def test_every_flipped_input_file_stops_build_arms(study, capsys):
    files = sorted(walked_inputs(study.root))
    missed = []
    for rel in files:
        path = study.root / rel
        original = path.read_bytes()
        flip_one_byte(path)
        try:
            code = main(["build-arms", "--study", str(study.root), "--no-progress"])
        except ReachedBuild:
            code = "built"
        finally:
            path.write_bytes(original)
        err = capsys.readouterr().err
        # a flip the config schema refuses is a config error (exit 1, naming the file), not drift
        config_error = rel == "configs/study.yaml" and code == 1 and f"{rel}: " in err
        if not config_error and (code != 2 or f'input_files["{rel}"]' not in err):
            missed.append((rel, code, err[-300:]))
    assert missed == [], f"{len(missed)} of {len(files)} flipped files not refused by name: {missed}"
