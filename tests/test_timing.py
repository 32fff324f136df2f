"""harness.timing: time waiting on models and encoders is the union of the calls' intervals."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness import timing


def test_overlapping_calls_count_once_and_either_is_the_union():
    before = timing.totals()
    started = threading.Barrier(2)

    def call():
        with timing.waiting_on(timing.MODEL):
            started.wait()
            time.sleep(0.2)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with timing.waiting_on(timing.ENCODER):
        with timing.waiting_on(timing.MODEL):  # a model call inside an encoder call (an LLM reranker)
            time.sleep(0.1)
    after = timing.totals()
    model = after["model"] - before["model"]
    encoder = after["encoder"] - before["encoder"]
    either = after["either"] - before["either"]
    assert 0.29 <= model < 0.39  # two overlapping 0.2 s calls count 0.2 s, then 0.1 s more
    assert 0.09 <= encoder < 0.15
    assert 0.29 <= either < model + 0.05  # the nested model call is not counted twice


def test_a_process_writes_its_totals_at_exit_when_asked(tmp_path):
    out = tmp_path / "waiting.json"
    code = ("import time; from harness import timing\n"
            "with timing.waiting_on(timing.ENCODER):\n    time.sleep(0.05)\n")
    subprocess.run([sys.executable, "-c", code], check=True, env={"HARNESS_TIME_SPLIT": str(out), "PATH": ""},
                   cwd=Path(__file__).resolve().parents[1])
    totals = json.loads(out.read_text())
    assert set(totals) == {"model", "encoder", "either"} and totals["model"] == 0
    assert totals["encoder"] >= 0.05 and totals["either"] == totals["encoder"]
