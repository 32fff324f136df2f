"""`executor:` where `score` and `stats` run their cells (harness.pipeline.executors).

    executor: {kind: ray, ray_address: "ray://head:10001"}   # absent: local, in this process

Where a cell runs cannot change its result (each cell is computed by the same function from the same
files, and written under its own name), so the freeze only reports a change here.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.config.fields import Int, OneOf, Optional, Text, setting

EXECUTORS = ("local", "ray")
LOCAL = "local"


@dataclass(frozen=True)
class Executor:
    kind: str = setting(LOCAL, OneOf(EXECUTORS))
    ray_address: str | None = setting(
        None, Optional(Text(non_empty=True))
    )  # None: start a local Ray instance
    # ray: the CPUs of a local instance (None: all); local: processes scoring an arm each (None: 1, in the
    # score process itself)
    workers: int | None = setting(None, Optional(Int(1)))
