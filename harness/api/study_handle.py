"""`harness.Study(path)`: a study folder from a notebook or a script (docs/api.md).

It reads what the stages wrote (the grid's state, the per-question table, the decided tests) and runs the
stages with the options of their commands. Each call opens the folder afresh, as each command does, so an
edit between calls is seen.
"""

from __future__ import annotations

import contextlib
import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from harness.api.commands import run_command
from harness.api.verdict_frame import VerdictFrame, verdict_frame
from harness.grid.paths import report_dir
from harness.pipeline.status import GridStatus, format_status, grid_status
from harness.provenance.drift import check_frozen
from harness.provenance.interim import require_outcomes_allowed
from harness.stats.io import load_per_question
from harness.study import Study
from harness.study_lock import study_lock


@dataclass(frozen=True, repr=False)
class StudyStatus:
    """What `harness status` prints, as a record (`grid`) and as text (str, or the notebook's display)."""

    grid: GridStatus

    @property
    def next_step(self) -> str:
        return self.grid.next_step()

    def __str__(self) -> str:
        return format_status(self.grid)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"


def _stage(command: str) -> Callable[..., int]:
    name = command.replace("-", "_")

    def run_stage(self: StudyHandle, **options: Any) -> int:
        return run_command(command, self.root, options, where=f"harness.Study.{name}()")

    run_stage.__name__ = run_stage.__qualname__ = name
    run_stage.__doc__ = (f"`harness {command} --study ROOT` with these options (`harness {command} --help` "
                         "names them; dashes as underscores): the exit code, or a HarnessError.")
    return run_stage


class StudyHandle:
    """A study folder (exposed as `harness.Study`); the path must hold configs/study.yaml."""

    def __init__(self, path: str | os.PathLike[str]):
        self.root = Study.at(Path(path)).root

    def __repr__(self) -> str:
        return f"harness.Study({str(self.root)!r})"

    def _open(self) -> Study:
        return Study.at(self.root)  # a Study holds its config for one command

    def status(self) -> StudyStatus:
        """The grid's state and the next step, as `harness status` prints them (reads, never writes)."""
        return StudyStatus(grid_status(self._open()))

    def results(self, *, deviation: str | None = None) -> pd.DataFrame:
        """The per-question table (every results/per_question/<dataset> file) in long format: dataset, arm,
        retriever, qid, cluster, stratum, metric, value. Withheld until every configured cell is scored, as
        `harness compare --study` withholds it; `deviation` (a reason) looks anyway and logs it."""
        study = self._outcomes("results", deviation)
        return load_per_question(study)

    def verdicts(self, *, deviation: str | None = None) -> VerdictFrame:
        """Every registered test with its statistics and verdict, one row each (results/stats/), under the
        same guard as `results`."""
        return verdict_frame(self._outcomes("verdicts", deviation))

    @property
    def report_path(self) -> Path:
        """The report's page, results/report/index.html (written by `report`)."""
        return report_dir(self._open()) / "index.html"

    def _outcomes(self, method: str, deviation: str | None) -> Study:
        """The study, once its inputs match the freeze and its outcomes may be seen (no interim looks)."""
        study = self._open()
        check_frozen(study, stage=method, models=False)
        command = f"harness.Study.{method}"
        # a look logged as a deviation appends to DEVIATIONS.md: under the study lock, as every writer
        with study_lock(study.lock_path, command) if deviation else contextlib.nullcontext():
            require_outcomes_allowed(study, command=command, deviation_reason=deviation)
        return study

    def run(self, command: str, **options: Any) -> int:
        """Any command that takes --study, e.g. run("judge-sample", out="sample.csv"): its exit code, or a
        HarnessError."""
        return run_command(command, self.root, options, where=f"harness.Study.run({command!r})")

    select = _stage("select")
    freeze = _stage("freeze")
    estimate = _stage("estimate")
    build_arms = _stage("build-arms")
    score = _stage("score")
    answer = _stage("answer")
    stats = _stage("stats")
    audit = _stage("audit")
    report = _stage("report")
    run_all = _stage("run-all")
