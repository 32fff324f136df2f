"""The study's stages in pipeline order, each with one line saying what it does.

The one list: `harness` with no command prints it, and `harness rehearse` runs these stages on the twin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `harness` with no command prints PIPELINE without loading the study code
    from harness.study import Study

PIPELINE = (
    ("select", "draw the seeded selection (papers, questions, distractors) into selection/selection.json"),
    ("freeze", "hash every input that can move a result into frozen_config.json"),
    ("estimate", "before paying: calls, tokens and dollars of every paid arm, checked against the spend cap"),
    ("build-arms", "build every arm's chunk set into results/chunks/ (LLM calls cached)"),
    ("score", "rank every arm under every retriever; per-question results in results/per_question/"),
    ("answer", "the fixed reader answers the configured cells; the judge scores nuggets (when configured)"),
    ("stats", "run the registered families: verdict tables and forest plots in results/stats/"),
    ("audit", "recompute every family and check the registration and released files"),
    ("report", "the study report: results/report/index.html (self-contained), report.md, tables, figures"),
)
STAGES = tuple(name for name, _ in PIPELINE)
EXECUTOR_STAGES = ("score", "stats")  # the stages `--executor` applies to


def configured_stages(study: "Study", stages: tuple[str, ...] = STAGES) -> list[str]:
    """The stages the study runs, in order: `answer` only when it configures answer cells."""
    return [s for s in stages if s != "answer" or study.config.reader.cells]


def stage_arguments(stage: str, executor: str | None, *, rescore: int | str,
                    ray_address: str | None = None, workers: int | None = None) -> list[str]:
    """The options a stage's command takes beyond --study (harness run-all and the rehearsal share them)."""
    args = []
    if stage in EXECUTOR_STAGES:
        args += ["--executor", executor] if executor else []
        args += ["--ray-address", ray_address] if ray_address else []
    if stage == "score" and workers:
        args += ["--workers", str(workers)]
    if stage == "audit" and rescore:
        args += ["--rescore", str(rescore)]
    return args
