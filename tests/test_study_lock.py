"""Issue 40, case 9: writing stages take a study lock. A second writer exits naming the holder (host, pid,
command, start time), never with a traceback, or waits with --wait; a lock left by a killed holder is taken
over with a message. The holder is a separate process, as a second `harness answer` would be."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from harness.errors import HarnessError
import harness
from harness.cli.main import LOOKING, RECORDING, WRITING, build_parser, main
from harness.grid.paths import per_question_path
from harness.inference.simulate import SyntheticDataset, long_table
from harness.study_lock import study_lock
from pipeline_support import make_llm_free_study

REPO = Path(__file__).resolve().parents[1]

HOLDER = """
import sys
from pathlib import Path
from harness.study_lock import study_lock

with study_lock(Path(sys.argv[1]), "harness answer --study S"):
    print("locked", flush=True)
    sys.stdin.read()  # held until the test closes stdin, or kills this process
"""


def _held(study):
    """The study and a running process holding its lock, stopped when the test ends."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(study.lock_path)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert process.stdout.readline() == "locked\n"
    yield study, process
    if process.poll() is None:
        process.kill()
    process.wait()


@pytest.fixture
def holder(tmp_path):
    """A study, and a running process holding its lock (stopped at the end of the test)."""
    study = make_llm_free_study(tmp_path / "s", freeze=False)
    yield from _held(study)


def test_case9_a_second_writer_is_refused_naming_the_holder(holder, capsys):
    study, process = holder
    capsys.readouterr()
    for argv in (["select"], ["freeze"], ["answer", "--replay", "--no-progress"], ["stats"]):
        assert main([*argv, "--study", str(study.root)]) == 1, argv
        err = capsys.readouterr().err
        assert (
            f"harness {argv[0]}: error: {study.lock_path}: another harness process is writing this study: "
            f"`harness answer --study S` (pid {process.pid} on host {socket.gethostname()}, started 20" in err
        )
        assert "Traceback" not in err and "--wait" in err
    assert not study.selection_path.exists() and not study.frozen_path.exists()  # nothing ran
    # the holder releases on exit: the lock file goes with it and the next writer runs
    process.communicate("")
    assert process.returncode == 0 and not study.lock_path.exists()
    assert main(["select", "--study", str(study.root)]) == 0
    assert study.selection_path.is_file() and not study.lock_path.exists()


def test_case9_a_lock_left_by_a_killed_holder_is_taken_over(holder, capsys):
    study, process = holder
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert study.lock_path.is_file()  # kill -9 leaves the file (the kernel dropped the lock itself)
    capsys.readouterr()
    assert main(["select", "--study", str(study.root)]) == 0
    err = capsys.readouterr().err
    assert (
        f"taking over the study lock {study.lock_path} from `harness answer --study S` (pid {process.pid} on "
        f"host {socket.gethostname()}"
        in err
        and "no longer runs" in err
    )
    assert not study.lock_path.exists()


def test_wait_blocks_until_the_holder_is_gone(holder):
    study, process = holder
    waiting, acquired = threading.Event(), threading.Event()

    def waiter():
        with study_lock(study.lock_path, "waiter", wait=True, say=lambda line: waiting.set()):
            acquired.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    assert waiting.wait(60)
    assert not acquired.is_set()
    process.communicate("")  # the holder finishes
    thread.join(60)
    assert acquired.is_set() and not study.lock_path.exists()


def test_a_lock_naming_another_host_is_left_to_the_user(tmp_path, capsys):
    study = make_llm_free_study(tmp_path / "s", freeze=False)
    study.lock_path.write_text(
        '{"command": "harness score", "host": "elsewhere", "pid": 7, "started": "x"}\n'
    )
    assert main(["select", "--study", str(study.root)]) == 1
    err = capsys.readouterr().err
    assert "the study lock names `harness score` (pid 7 on host elsewhere, started x), on another host" in err
    assert study.lock_path.is_file() and not study.selection_path.exists()


def test_every_writing_command_offers_wait_and_every_recording_one_adoption():
    commands = build_parser()._subparsers._group_actions[0].choices
    for name in WRITING + LOOKING:
        assert "--wait" in commands[name].format_help(), name
    for name in RECORDING:
        assert "--adopt-unrecorded" in commands[name].format_help(), name
    assert "--wait" not in commands["status"].format_help()


LOOK = ["--dataset", "papers", "--a", "S", "--b", "F512c", "--retriever", "bm25", "--metric", "rec@512t",
        "--deviation", "a look before the grid is scored"]
LOOKS = {"compare": LOOK, "power": [*LOOK, "--margin", "5", "--simulations", "20", "--sizes", "10"]}


@pytest.fixture
def looked_at(tmp_path):
    """A frozen study with a per-question table but no scored cell (a look needs --deviation), and a running
    process holding its lock."""
    study = make_llm_free_study(tmp_path / "s", arms=("S", "F512c"))
    table = long_table(np.random.default_rng(7), [SyntheticDataset("papers", 12, 2.0)],
                       {"S": 0.0, "F512c": 0.1}, ["bm25"], {"papers": ["rec@512t"]})
    per_question_path(study, "papers").parent.mkdir(parents=True)
    table.to_parquet(per_question_path(study, "papers"))
    yield from _held(study)


@pytest.mark.parametrize("command", sorted(LOOKS))
def test_a_look_logged_as_a_deviation_is_refused_while_another_process_writes(looked_at, command, capsys):
    study, process = looked_at
    capsys.readouterr()
    assert main([command, "--study", str(study.root), *LOOKS[command]]) == 1
    err = capsys.readouterr().err
    assert (f"harness {command}: error: {study.lock_path}: another harness process is writing this study: "
            f"`harness answer --study S` (pid {process.pid} on host {socket.gethostname()}" in err)
    assert "Traceback" not in err and "--wait" in err
    assert not (study.root / "DEVIATIONS.md").exists()  # nothing appended without the lock


@pytest.mark.parametrize("command", sorted(LOOKS))
def test_a_look_with_wait_appends_its_deviation_once_the_holder_is_gone(looked_at, command):
    study, process = looked_at
    argv = [sys.executable, "-m", "harness", command, "--study", str(study.root), *LOOKS[command], "--wait"]
    look = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    holder = "`harness answer --study S`"
    waiting = look.stderr.readline()
    assert waiting.startswith(f"waiting for the study lock {study.lock_path}, held by {holder}"), waiting
    assert not (study.root / "DEVIATIONS.md").exists()  # still waiting: nothing written
    process.communicate("")  # the holder finishes
    out, err = look.communicate()
    assert look.returncode == 0, err
    log = (study.root / "DEVIATIONS.md").read_text(encoding="utf-8")
    assert log.count(f"— `{command}`") == 1 and "a look before the grid is scored" in log
    assert not study.lock_path.exists()


def test_a_look_from_the_python_api_logged_as_a_deviation_is_refused_while_another_process_writes(looked_at):
    study, process = looked_at
    held = f"another harness process is writing this study: .*pid {process.pid}"
    with pytest.raises(HarnessError, match=held):
        harness.Study(study.root).results(deviation="a look before the grid is scored")
    assert not (study.root / "DEVIATIONS.md").exists()  # nothing appended without the lock
    process.communicate("")  # the holder finishes: the look is logged once
    assert len(harness.Study(study.root).results(deviation="a look before the grid is scored")) > 0
    assert (study.root / "DEVIATIONS.md").read_text(encoding="utf-8").count("harness.Study.results") == 1
