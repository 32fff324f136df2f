"""Every benchmark under benchmarks/ runs to the end in --quick mode and prints its goals (met / NOT met), so
a benchmark broken by a change to the harness fails here instead of rotting unseen."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted((ROOT / "benchmarks").glob("bench_*.py"))


def test_there_are_benchmarks_and_the_makefile_runs_each_one():
    assert len(BENCHMARKS) >= 10
    assert "benchmarks/bench_*.py" in (ROOT / "Makefile").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("script", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_the_benchmark_runs_in_quick_mode_and_prints_its_goals(script):
    done = subprocess.run([sys.executable, str(script), "--quick"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"{script.name} exited with {done.returncode}:\n{done.stderr[-3000:]}"
    goals = re.findall(r"^goal: .+: (met|NOT met)", done.stdout, flags=re.MULTILINE)
    assert goals, f"{script.name} printed no goal line:\n{done.stdout[-2000:]}"
