"""Issue 40, cases 7 and 8: every stage resumes after kill -9 at any point, including after a forced
re-freeze, and its outputs are those of an uninterrupted run.

A tiny study (the demo's LLM-free arms, BM25, a simulated reader and judge on two answer cells) is released,
its plan edited, and the chain `freeze --force`, `build-arms --replay`, `score`, `answer --replay`, `stats`
run once uninterrupted, counting the steps of every atomic write (the journal entry, the rename). Each stage
is then run again from the state before it, in a forked process that kills itself with SIGKILL at seeded
steps (so the kill lands between any two writes, or between a file's journal entry and its rename), and
rerun; the rerun must succeed and leave the same files as the uninterrupted run (the only differences two
uninterrupted runs have: the times in done markers and DEVIATIONS.md)."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest

import harness.files as files
from harness.cli.main import main
from harness.provenance.checks import FAIL
from harness.provenance.freeze import frozen_hash
from harness.provenance.recorded import require_recorded
from harness.provenance.release import verify_results
from harness.provenance.timeline import record_first_outcome
from harness.study import Study
from pipeline_support import edit_config, make_llm_free_study

CHAIN = (
    ("freeze", ["--force", "c"]),
    ("build-arms", ["--replay", "--no-progress"]),
    ("score", ["--no-progress"]),
    ("answer", ["--replay", "--no-progress"]),
    ("stats", ["--threads", "1"]),
)
KILLS_PER_STAGE = 3


@contextmanager
def write_steps(kill_at: int | None = None):
    """Count the steps of atomic writes (journal entry, rename); with `kill_at`, SIGKILL this process just
    before that step. Yields the counter."""
    count = [0]
    real_replace, real_note = os.replace, files.note_written

    def step():
        count[0] += 1
        if count[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def replace(*args, **kwargs):
        step()
        return real_replace(*args, **kwargs)

    def note(*args, **kwargs):
        step()
        return real_note(*args, **kwargs)

    os.replace, files.note_written = replace, note
    try:
        yield count
    finally:
        os.replace, files.note_written = real_replace, real_note


def killed_run(argv: list[str], kill_at: int) -> int:
    """Run `harness ARGV` in a forked process killed at step `kill_at`; returns its wait status."""
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        code = 99
        try:
            sink = os.open(os.devnull, os.O_WRONLY)
            os.dup2(sink, 1)
            os.dup2(sink, 2)
            with write_steps(kill_at):
                code = main(argv)
        finally:
            os._exit(code)
    return os.waitpid(pid, 0)[1]


def tiny_study(root: Path) -> Study:
    make_llm_free_study(root, freeze=False)
    edit_config(root, lambda cfg: cfg.update({
        "models": {"sim": {"backend": "simulated", "name": "sim-model"}},
        "reader": {"model": "sim", "questions": 3, "seed": 1,
                   "cells": [{"dataset": "papers", "retriever": "bm25", "arms": ["S"]},
                             {"dataset": "docs", "retriever": "bm25", "arms": ["S"]}]},
        "judge": {"model": "sim"},
    }))
    for argv in (["select"], ["freeze"], ["build-arms", "--no-progress"], ["score", "--no-progress"],
                 ["answer", "--no-progress"], ["stats", "--threads", "1"]):
        assert main([*argv, "--study", str(root)]) == 0, argv
    return Study.at(root)


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> dict[str, tuple[Path, Path, int]]:
    """stage -> (the study before it, after it, the write steps it took), uninterrupted after a forced
    re-freeze."""
    base = tmp_path_factory.mktemp("chain")
    study = tiny_study(base / "study")
    with open(study.plan_path, "a", encoding="utf-8") as f:
        f.write("# c\n")
    out = {}
    for stage, options in CHAIN:
        before, after = base / f"before-{stage}", base / f"after-{stage}"
        shutil.copytree(study.root, before)
        with write_steps() as count:
            assert main([stage, *options, "--study", str(study.root)]) == 0, stage
        shutil.copytree(study.root, after)
        out[stage] = (before, after, count[0])
    return out


def normalized(rel: str, data: bytes) -> bytes:
    """What two uninterrupted runs share: done markers and deviations without their times, and the results
    manifest without the markers' hashes."""
    if rel.endswith(".done.json"):
        record = json.loads(data)
        record.pop("completed_at")
        return json.dumps(record, sort_keys=True).encode()
    if rel == "results/results_manifest.json":
        record = json.loads(data)
        record["files"] = {k: None if k.endswith(".done.json") else v for k, v in record["files"].items()}
        if "DEVIATIONS.md" in record.get("study_files", {}):  # its hashes hold the entries' times
            record["study_files"]["DEVIATIONS.md"] = "(recorded)"
        return json.dumps(record, sort_keys=True).encode()
    if rel == "DEVIATIONS.md":
        return re.sub(rb"\n## \S+ ", b"\n## (time) ", data)
    return data


def study_files(root: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith("results/.journal/"):
            out[rel] = normalized(rel, path.read_bytes())
    return out


@pytest.mark.slow
@pytest.mark.parametrize("stage, options", CHAIN, ids=[stage for stage, _ in CHAIN])
def test_case7_a_stage_killed_at_any_write_resumes_to_the_uninterrupted_outputs(
    chain, tmp_path, stage, options
):
    before, after, steps = chain[stage]
    expected = study_files(after)
    points = sorted(random.Random(stage).sample(range(1, steps + 1), min(KILLS_PER_STAGE, steps)))
    for point in points:
        root = tmp_path / f"killed-at-{point}"
        shutil.copytree(before, root)
        argv = [stage, *options, "--study", str(root)]
        status = killed_run(argv, point)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (point, steps, status)
        assert main(argv) == 0, (stage, point)
        assert study_files(root) == expected, (stage, point)
        study = Study.at(root)
        require_recorded(study, stage="check")  # every later stage reads what the rerun left
        assert [c.line() for c in verify_results(study) if c.status == FAIL] == []


def test_case8_a_failure_between_the_deviation_and_the_freeze_leaves_the_deviation_logged(tmp_path, capsys):
    """`freeze --force` logs the deviation, then writes the freeze: a failure between the two leaves the old
    freeze and a logged deviation, and the rerun writes the freeze without logging it twice."""
    study = make_llm_free_study(tmp_path / "s")
    record_first_outcome(study, frozen_hash=frozen_hash(study))  # outcomes exist: a re-freeze needs --force
    old, frozen_bytes = frozen_hash(study), study.frozen_path.read_bytes()
    with open(study.plan_path, "a", encoding="utf-8") as f:
        f.write("# c\n")
    argv = ["freeze", "--force", "c", "--study", str(study.root)]
    status = killed_run(argv, 2)  # the second write: the freeze, after DEVIATIONS.md
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert study.frozen_path.read_bytes() == frozen_bytes  # the old freeze stands ...
    deviations = (study.root / "DEVIATIONS.md").read_text(encoding="utf-8")
    assert deviations.count("`harness freeze --force`") == 1 and "- reason: c\n" in deviations
    new = re.search(r"- frozen hash: (\w+)", deviations)[1]
    assert new != old  # ... and the deviation names the freeze it was about to write
    # without --force the rerun finds the deviation already logged for this very freeze
    assert main(["freeze", "--study", str(study.root)]) == 0
    assert frozen_hash(study) == new
    assert (study.root / "DEVIATIONS.md").read_text(encoding="utf-8") == deviations
    assert main(argv) == 0 and "unchanged" in capsys.readouterr().out
    assert (study.root / "DEVIATIONS.md").read_text(encoding="utf-8") == deviations


def test_case8_a_forced_refreeze_rerun_after_a_failure_logs_the_deviation_once(tmp_path):
    study = make_llm_free_study(tmp_path / "s")
    record_first_outcome(study, frozen_hash=frozen_hash(study))
    with open(study.plan_path, "a", encoding="utf-8") as f:
        f.write("# c\n")
    argv = ["freeze", "--force", "c", "--study", str(study.root)]
    status = killed_run(argv, 2)
    assert os.WIFSIGNALED(status)
    assert main(argv) == 0
    deviations = (study.root / "DEVIATIONS.md").read_text(encoding="utf-8")
    assert deviations.count("`harness freeze --force`") == 1
    assert f"- frozen hash: {frozen_hash(study)}\n" in deviations
