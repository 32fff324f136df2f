"""Where a stage's tasks run: `local` (this process, one after another, or `workers` processes of this
machine side by side) or `ray` (each task a Ray task), chosen from the command line over the config's
`executor:`. The runners themselves are harness.task_runners, below the stages and the statistics alike.
"""

from __future__ import annotations

from harness.config.executor import EXECUTORS, LOCAL, Executor
from harness.errors import HarnessError
from harness.study import Study


def choose_executor(study: Study, kind: str | None, ray_address: str | None,
                    workers: int | None = None) -> Executor:
    """The command line's --executor / --ray-address / --workers over the config's `executor:`, over local."""
    configured = study.config.executor or Executor()
    chosen = kind or configured.kind
    if chosen not in EXECUTORS:
        raise HarnessError(f"--executor {chosen!r}: choose one of {', '.join(EXECUTORS)}")
    if workers is not None and workers < 1:
        raise HarnessError(f"--workers {workers}: give at least 1")
    return Executor(chosen, ray_address or configured.ray_address, workers or configured.workers)


def is_local(executor: Executor) -> bool:
    return executor.kind == LOCAL


def local_workers(executor: Executor | None) -> int:
    """Processes the local executor runs tasks in: the config's or command line's `workers`, else 1 (this
    process, no pool)."""
    return (executor.workers or 1) if executor is not None and is_local(executor) else 1
