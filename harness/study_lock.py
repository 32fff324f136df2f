"""The study lock: one writing stage at a time per study (docs/pipeline.md, "One writer at a time").

The lock is an advisory `flock` on <study>/.harness.lock, whose text names the holder (host, pid, command,
start time); the holder removes the file on release. The kernel drops a `flock` when its process dies, so a
holder killed with -9 leaves only the file behind: the next writer takes the lock over and says whose it was.
A holder recorded on another host cannot be checked from here; that lock is left for the user to remove.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from harness.errors import HarnessError
from harness.files import flush_to_disk, remove_stale_temporaries


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def describe_holder(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "another harness process (it has not named itself yet)"
    return (
        f"`{holder.get('command', '?')}` (pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, "
        f"started {holder.get('started', '?')})"
    )


def read_holder(path: Path) -> dict[str, Any] | None:
    """The holder the lock file names, or None (no file, released, or not written yet)."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    if not text:
        return None
    try:
        holder = json.loads(text)
    except json.JSONDecodeError:
        return {"command": f"(unreadable lock text {text[:60]!r})"}
    return holder if isinstance(holder, dict) else None


@contextlib.contextmanager
def study_lock(path: Path, command: str, *, wait: bool = False,
               say: Callable[[str], None] = _say) -> Iterator[None]:
    """Hold the lock at `path` for the block. Held by a live process: raise HarnessError naming it, or with
    `wait` say so and wait for it. Left by a dead holder of this host: take it over and say so."""
    f = _acquire(path, wait, say)
    try:
        _take(f, path, command, say)
        try:
            yield
        finally:
            path.unlink(missing_ok=True)  # while still held: a waiter that opened this file then opens anew
    finally:
        f.close()  # closing drops the flock


def _acquire(path: Path, wait: bool, say: Callable[[str], None]):
    waiting = False
    while True:
        try:
            f = os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT, 0o644), "r+", encoding="utf-8")
        except OSError as e:
            raise HarnessError(
                f"{path}: cannot open the study lock ({e.strerror}); a writing command needs a "
                "writable study folder"
            ) from None
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = describe_holder(read_holder(path))
            if not wait:
                f.close()
                raise HarnessError(
                    f"{path}: another harness process is writing this study: {holder}. Rerun when "
                    "it has finished, or pass --wait to wait for it"
                ) from None
            if not waiting:
                say(f"waiting for the study lock {path}, held by {holder}")
                waiting = True
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            same = os.stat(path).st_ino == os.fstat(f.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return f
        f.close()  # its holder removed the file on release: lock the one that names the study now


def _take(f, path: Path, command: str, say: Callable[[str], None]) -> None:
    previous = read_holder(path)
    if previous:
        if previous.get("host") != socket.gethostname():
            raise HarnessError(
                f"{path}: the study lock names {describe_holder(previous)}, on another host: this "
                "host cannot tell whether it still runs. Remove the file once it has stopped"
            )
        say(f"taking over the study lock {path} from {describe_holder(previous)}, which no longer runs "
            "(killed?); its finished work is kept and resumed")
        remove_stale_temporaries(path.parent)  # what its atomic writes left half-done, anywhere in the study
    holder = {"host": socket.gethostname(), "pid": os.getpid(), "command": command,
              "started": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    f.seek(0)
    f.truncate()
    f.write(json.dumps(holder, sort_keys=True) + "\n")
    flush_to_disk(f)
