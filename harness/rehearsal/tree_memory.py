"""The resident memory of a process and every process it started, summed, at its peak.

The kernel's per-child usage (os.wait4) reports the largest single process only, so a stage that scores in
worker processes, or starts a local Ray instance, would show one worker's memory. This samples the process
tree from /proc instead: every INTERVAL_S, each descendant's resident set summed. A peak shorter than the
interval can be missed; the stage table takes the larger of this and the kernel's figure (which, on Linux,
keeps the high-water mark of the forked parent's copy across exec, so a small stage shows at least the
rehearsal process's own size: an upper bound). Where /proc is absent (not Linux) only the kernel's figure
remains.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

INTERVAL_S = 0.2
PROC = Path("/proc")


def tree_rss_bytes(root_pid: int, proc: Path = PROC) -> int:
    """Resident bytes of `root_pid` and all its descendants now (0 when /proc cannot be read)."""
    children: dict[int, list[int]] = {}
    for entry in proc.glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended between the listing and the read
            continue
        # the command name (field 2) is in parentheses and may hold spaces; the parent pid follows it
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    page = os.sysconf("SC_PAGE_SIZE")
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        try:
            total += int((proc / str(pid) / "statm").read_text().split()[1]) * page
        except (OSError, IndexError, ValueError):
            pass
        stack += children.get(pid, [])
    return total


class TreePeak:
    """Samples tree_rss_bytes(pid) in a thread from start() to stop(); `peak_bytes` is the largest sum
    seen."""

    def __init__(self, pid: int, interval_s: float = INTERVAL_S):
        self.pid, self.interval_s, self.peak_bytes = pid, interval_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "TreePeak":
        if PROC.is_dir():
            self._thread.start()
        return self

    def stop(self) -> int:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.peak_bytes

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_bytes = max(self.peak_bytes, tree_rss_bytes(self.pid))
            self._stop.wait(self.interval_s)
