"""`harness rehearse`: the study's twin made, every stage run on it, each registered test's verdict on the
twin (or why it is blocked) and, with replicates, the verdicts under known effects; written to
<twin>/rehearsal/ as rehearsal.json and rehearsal.md (docs/rehearsal.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from harness.errors import HarnessError
from harness.files import atomic_write_json, atomic_write_text
from harness.grid.results import read_per_question
from harness.plan.load import load_study_plan
from harness.rehearsal import summary
from harness.rehearsal.stages import STAGES, StageFailed, as_json, family_results, run_stages
from harness.rehearsal.twin import make_twin
from harness.stats.io import load_per_question
from harness.stats.replicates import REPLICATE_RESAMPLES, replicate_verdicts
from harness.study import Study


@dataclass(frozen=True)
class RehearsalSettings:
    scale: str = "small"
    seed: int = 0  # of the simulated data and of the replicates
    real_encoders: bool = False
    malformed_rate: float = 0.02
    executor: str | None = None  # for score and stats (None: the config's)
    score_workers: int | None = None
    until: str | None = None  # the last stage run (None: every stage)
    effects: Mapping[str, float] = field(default_factory=dict)  # test -> true effect in points (replicates)
    replicates: int = 0
    resamples: int = REPLICATE_RESAMPLES  # 0: the plan's registered count
    workers: int = 1  # processes for the replicates
    pilot: str | None = None  # a per-question file the replicates redraw instead of the twin's
    progress: bool = False

    def __post_init__(self) -> None:
        if self.until is not None and STAGES.index(self.until) < STAGES.index("stats") and self.replicates:
            raise HarnessError(f"--replicates needs the stats stage; --until {self.until} stops before it")
        if (self.effects or self.pilot) and self.replicates < 1:
            raise HarnessError("--effect and --pilot apply to the replicates: give --replicates R (R >= 1)")
        if not 0 <= self.malformed_rate < 1:
            raise HarnessError(f"--malformed-rate must be in [0, 1); got {self.malformed_rate}")


@dataclass(frozen=True)
class Rehearsal:
    twin: Path
    text: tuple[str, ...]  # rehearsal.md's lines
    written: Path  # rehearsal.md (rehearsal.json beside it)
    blocked: str | None  # the line saying what blocks a verdict; None when every registered test got one


def rehearse(study: Study, out: Path, settings: RehearsalSettings, *,
             log: Callable[[str], None] = lambda _: None) -> Rehearsal:
    """The twin in `out` (a rerun into the same folder resumes), its stages and tests; `log` gets where the
    twin is before the stages start."""
    twin = make_twin(study, out, scale=settings.scale, seed=settings.seed,
                     real_encoders=settings.real_encoders, malformed_rate=settings.malformed_rate)
    log(f"rehearse: twin of {study.root} in {twin.root} (scale {settings.scale})")
    record: dict[str, Any] = {"study": str(study.root), "twin": str(twin.root), "scale": settings.scale,
                              "seed": settings.seed, "executor": settings.executor,
                              "score_workers": settings.score_workers}
    stages = STAGES if settings.until is None else STAGES[:STAGES.index(settings.until) + 1]
    try:
        runs = run_stages(twin, executor=settings.executor, workers=settings.score_workers, stages=stages,
                          progress=settings.progress)
    except StageFailed as failed:  # e.g. the freeze refusing a test no configured cell can produce
        text = ["## Stages on the twin", "", summary.stage_table(failed.runs), "",
                f"BLOCKED: stage {failed.stage} failed on the twin: {failed.reason}"]
        record |= {"stages": as_json(failed.runs),
                   "failed": {"stage": failed.stage, "reason": failed.reason, "log_tail": failed.tail}}
        return _written(twin, record, text, blocked=text[-1])
    record["stages"] = as_json(runs)
    text = ["## Stages on the twin", "", summary.stage_table(runs)]
    if "stats" not in stages:
        text += ["", f"stopped after {settings.until}: no test was run (stats comes later)"]
        return _written(twin, record, text, blocked=None)
    plan = load_study_plan(twin)
    registered = {fam.id: [t.id for t in fam.tests] for fam in plan.families}
    results = summary.outcomes(family_results(twin), registered)
    record["tests"] = [o.__dict__ for o in results]
    text += ["", "## Registered tests on the twin", "", summary.outcome_table(results), "",
             summary.headline(results)]
    if settings.replicates:
        table = read_per_question(settings.pilot) if settings.pilot else load_per_question(twin)
        known = replicate_verdicts(plan, table, effects=dict(settings.effects),
                                   replicates=settings.replicates, seed=settings.seed,
                                   resamples=settings.resamples or None, progress=settings.progress,
                                   workers=settings.workers)
        record["replicates"] = known.to_json() | {"pilot": settings.pilot}
        text += ["", f"## Known effects: {settings.replicates} replicates", "", known.to_markdown()]
    blocked = any(o.verdict is None for o in results)
    return _written(twin, record, text, blocked=summary.headline(results) if blocked else None)


def _written(twin: Study, record: dict, text: list[str], *, blocked: str | None) -> Rehearsal:
    out = twin.root / "rehearsal"
    atomic_write_json(out / "rehearsal.json", record)
    atomic_write_text(out / "rehearsal.md", "\n".join(text) + "\n")
    return Rehearsal(twin.root, tuple(text), out / "rehearsal.md", blocked)
