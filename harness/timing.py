"""Wall time a process spends waiting on models and encoders, so a stage's own work can be told apart from
theirs (the rehearsal reports the share: docs/rehearsal.md).

Each category counts the union of its calls' intervals: calls in flight on several threads at once count
once. `either` is the union over both categories (an LLM reranker's model call inside an encoder call counts
once). With HARNESS_TIME_SPLIT=<file> in the environment, the process writes its totals there at exit.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
from contextlib import contextmanager
from typing import Iterator

SPLIT_ENV = "HARNESS_TIME_SPLIT"
MODEL, ENCODER, EITHER = "model", "encoder", "either"


class _Union:
    """Seconds during which at least one interval was open."""

    def __init__(self) -> None:
        self.open, self.since, self.total = 0, 0.0, 0.0

    def enter(self, now: float) -> None:
        if self.open == 0:
            self.since = now
        self.open += 1

    def leave(self, now: float) -> None:
        self.open -= 1
        if self.open == 0:
            self.total += now - self.since


_LOCK = threading.Lock()
_UNIONS = {MODEL: _Union(), ENCODER: _Union(), EITHER: _Union()}


@contextmanager
def waiting_on(category: str) -> Iterator[None]:
    """Time spent inside the block counts as waiting on `category` (MODEL or ENCODER)."""
    with _LOCK:
        now = time.perf_counter()
        _UNIONS[category].enter(now)
        _UNIONS[EITHER].enter(now)
    try:
        yield
    finally:
        with _LOCK:
            now = time.perf_counter()
            _UNIONS[category].leave(now)
            _UNIONS[EITHER].leave(now)


def totals() -> dict[str, float]:
    """Seconds per category (closed intervals only), rounded to milliseconds."""
    with _LOCK:
        return {name: round(u.total, 3) for name, u in _UNIONS.items()}


def _write_totals(path: str) -> None:
    with open(path, "w", encoding="utf-8") as out:
        json.dump(totals(), out, sort_keys=True)


if os.environ.get(SPLIT_ENV):
    atexit.register(_write_totals, os.environ[SPLIT_ENV])
