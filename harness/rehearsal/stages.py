"""Every stage run on the twin, each in its own process, timed, its peak memory and what it made counted.

A stage is the `harness` command itself (python -m harness STAGE --study TWIN), so the rehearsal runs the
code the real study will run; its peak resident memory is that of its process tree (tree_memory), workers
included. Its output goes to <twin>/rehearsal/logs/<stage>.log; the first stage that fails stops the
rehearsal, named with the end of its log.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from harness.errors import HarnessError
from harness.files import read_json
from harness.grid.paths import generations_dir, per_question_dir, results_dir, stats_dir
from harness.pipeline.stages import STAGES, configured_stages, stage_arguments
from harness.rehearsal.tree_memory import TreePeak
from harness.stats.families import FamilyResult
from harness.study import Study
from harness.timing import EITHER, ENCODER, MODEL, SPLIT_ENV

RESCORED_CELLS = 1  # the audit re-runs this many seeded cells byte for byte
LOG_TAIL_LINES = 15


class StageFailed(HarnessError):
    """A stage failed on the twin: what ran before it, and the end of its log."""

    def __init__(self, stage: str, exit_code: int, log: Path, tail: list[str], runs: list["StageRun"]):
        super().__init__(f"stage {stage} failed on the twin (exit {exit_code}); the end of {log}:\n"
                         + "\n".join("    " + line for line in tail))
        self.stage, self.tail, self.runs = stage, tail, runs

    @property
    def reason(self) -> str:
        """The stage's own error line (the last line naming an error), else its last line."""
        errors = [line for line in self.tail if "error" in line.lower()]
        return (errors or self.tail or ["no output"])[-1].strip()


@dataclass(frozen=True)
class StageRun:
    stage: str
    wall_s: float
    peak_mib: (
        float  # the stage's process and every process it started, summed (harness.rehearsal.tree_memory)
    )
    counts: dict[str, int]  # the study's totals after the stage
    # seconds the stage's process waited on models, on encoders, and on either (harness.timing); the rest of
    # wall_s is the harness's own work (worker processes of an executor are not included)
    waiting_s: dict[str, float]

    @property
    def own_share(self) -> float:
        """The share of the stage's wall time spent outside model and encoder calls."""
        return max(0.0, self.wall_s - self.waiting_s.get(EITHER, 0.0)) / self.wall_s if self.wall_s else 0.0


def run_stages(
    twin: Study,
    *,
    executor: str | None,
    workers: int | None = None,
    stages: tuple[str, ...] = STAGES,
    progress: bool = True,
) -> list[StageRun]:
    logs = twin.root / "rehearsal" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    runs = []
    for stage in configured_stages(twin, stages):
        args = stage_arguments(stage, executor, rescore=RESCORED_CELLS, workers=workers)
        if progress:
            print(f"rehearse: {stage} ...", file=sys.stderr, flush=True)
        run = _run_one(twin, stage, args, logs / f"{stage}.log")
        if isinstance(run, _Failure):
            raise StageFailed(run.stage, run.exit_code, run.log, run.tail, runs)
        runs.append(run)
        if progress:
            r = runs[-1]
            print(
                f"rehearse: {stage} done in {r.wall_s:.1f} s, peak {r.peak_mib:.0f} MiB",
                file=sys.stderr,
                flush=True,
            )
    return runs


@dataclass(frozen=True)
class _Failure:
    stage: str
    exit_code: int
    log: Path
    tail: list[str]


def _run_one(twin: Study, stage: str, args: list[str], log: Path) -> StageRun | _Failure:
    command = [sys.executable, "-m", "harness", stage, "--study", str(twin.root), *args]
    waiting = log.with_suffix(".waiting.json")
    waiting.unlink(missing_ok=True)
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=twin.root,
                                   env=os.environ | {"PYTHONHASHSEED": "0", SPLIT_ENV: str(waiting)})
        tree = TreePeak(process.pid).start()
        _, status, usage = os.wait4(process.pid, 0)
        tree_peak = tree.stop()
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if process.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-LOG_TAIL_LINES:]
        return _Failure(stage, process.returncode, log, tail)
    # ru_maxrss (KiB on Linux) is the largest single process; the tree's sum counts workers and Ray too
    peak = max(usage.ru_maxrss * 1024, tree_peak)
    return StageRun(stage, round(wall, 2), round(peak / 2**20, 1), counts(twin),
                    # a process that never imported harness.timing made no model or encoder call
                    read_json(waiting) if waiting.is_file() else dict.fromkeys((EITHER, ENCODER, MODEL), 0.0))


def counts(study: Study) -> dict[str, int]:
    """Chunk sets, scored cells and per-question rows, LLM calls in the generation caches, contrasts run."""
    out = {"chunk sets": len(list((results_dir(study) / "chunks").glob("*/*.jsonl")))}
    cells, rows = set(), 0
    for path in sorted(per_question_dir(study).glob("*.parquet")):
        table = pq.read_table(path, columns=["dataset", "arm", "retriever"])
        rows += table.num_rows
        cells |= set(zip(*(table.column(c).to_pylist() for c in ("dataset", "arm", "retriever"))))
    out |= {"cells": len(cells), "rows": rows}
    out["LLM calls"] = sum(_records(p) for p in sorted(generations_dir(study).glob("*.jsonl")))
    out["contrasts"] = sum(1 for fam in family_results(study) for row in fam.rows if row.contrast is not None)
    return out


def _records(path: Path) -> int:
    """Non-blank lines of a JSON Lines file: a count, not a parse (caches reach millions of lines)."""
    with open(path, "rb") as lines:
        return sum(1 for line in lines if line.strip())


def family_results(study: Study) -> list[FamilyResult]:
    """The released statistics of every family (results/stats/<family>.json), in file-name order."""
    released = ((p, read_json(p)) for p in sorted(stats_dir(study).glob("*.json")))
    return [FamilyResult.from_json(r, str(p)) for p, r in released
            if isinstance(r, dict) and "family" in r and "rows" in r]


def as_json(runs: list[StageRun]) -> list[dict[str, Any]]:
    return [asdict(r) | {"own_share": round(r.own_share, 4)} for r in runs]
