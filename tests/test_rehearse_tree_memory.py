"""The rehearsal's peak memory counts a stage's worker processes, not only the stage's own process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.rehearsal.tree_memory import TreePeak, tree_rss_bytes

pytestmark = pytest.mark.skipif(not Path("/proc/self/statm").is_file(), reason="needs Linux /proc")

MIB = 2**20
# a child that holds 200 MiB resident (written, so the pages are real) until its stdin closes
HOLDER = "import sys; block = bytearray(200 * 2**20); block[::4096] = b'x' * len(block[::4096]); " \
         "print('ready', flush=True); sys.stdin.read()"


def _holder(parent_cmd: list[str]) -> subprocess.Popen:
    child = subprocess.Popen(parent_cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    return child


def test_the_tree_sums_every_descendant():
    alone = tree_rss_bytes(os.getpid())
    child = _holder([sys.executable, "-c", HOLDER])
    try:
        assert tree_rss_bytes(os.getpid()) - alone > 190 * MIB
        assert tree_rss_bytes(child.pid) > 190 * MIB
    finally:
        child.stdin.close()
        child.wait()
    assert tree_rss_bytes(os.getpid()) - alone < 100 * MIB


def test_the_peak_of_a_stage_that_starts_workers_includes_them():
    # the "stage" holds little itself and starts two holders: the tree's peak counts both (the kernel's
    # figure is the largest single process, and may even be this test process's size at the fork)
    stage = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import subprocess, sys\n"
                f"cmd = [sys.executable, '-c', {HOLDER!r}]\n"
                "kids = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for "
                "_ in range(2)]\n"
                "[k.stdout.readline() for k in kids]\n"
                "import time; time.sleep(1.0)\n"
                "[k.stdin.close() or k.wait() for k in kids]\n"
            ),
        ]
    )
    peak = TreePeak(stage.pid, interval_s=0.05).start()
    assert stage.wait() == 0
    assert peak.stop() > 400 * MIB
