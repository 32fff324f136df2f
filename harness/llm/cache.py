"""Content-addressed generation cache: one append-only JSONL file, one line per call.

Each line is written with a single append before `put` returns, so a killed process keeps every answer
it returned and leaves at most one torn last line (no trailing newline); it is cut off on the next
writable open. A complete line that is not valid JSON is real corruption and raises instead of being
skipped. Durability against a machine crash comes from fsync, which a background thread runs behind the
writers: one fsync covers every line written before it started, so a pool finishing many calls at once
pays for one disk flush, and no caller waits for the disk (a flush costs ~4 ms, more than the rest of a
call's harness overhead). `close` (and `wait_durable`) return only once every line is flushed; a failed
flush is raised by the next `put` or by `close`, naming the file.

Opened with `read_only=True` (replay), the cache never creates, truncates or writes anything: a torn
last line is only skipped in memory (and counted), a missing file is an error, and `put` refuses.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.errors import InputError
from harness.files import canonical_json, durable_writes, sha256_text


def prompt_sha256(messages: Sequence[Mapping[str, str]]) -> str:
    return sha256_text(canonical_json([dict(m) for m in messages]))


def cache_key(
    identity: Mapping[str, Any],
    messages: Sequence[Mapping[str, str]],
    *,
    schema: Mapping[str, Any] | None,
    seed: int,
    options: Mapping[str, Any] | None = None,
    repeat: int = 0,
) -> str:
    """SHA-256 of backend, model, digest, options (with seed and schema) and prompt; a repeated generation
    run r > 0 (an arm's `repeats`) adds r, so repeat 0 keeps the key of the arm without repeats."""
    material = {
        "backend": identity["backend"],
        "model": identity["model"],
        "digest": identity["digest"],
        "options": dict(identity["options"]) | dict(options or {}) | {"seed": seed, "schema": schema},
        "prompt": [dict(m) for m in messages],
    }
    if repeat < 0:
        raise ValueError(f"repeat index must be >= 0, got {repeat}")
    if repeat:
        material["repeat"] = repeat
    return sha256_text(canonical_json(material))


@dataclass(frozen=True)
class CacheRecord:
    key: str
    backend: str
    model: str
    digest: str
    prompt_sha256: str
    seed: int
    text: str
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    cost_usd: float
    truncated: bool = False


_FIELDS = tuple(CacheRecord.__dataclass_fields__)


@dataclass(frozen=True)
class _Parsed:
    """A cache file's whole lines as parsed; never changed once made (an open copies what it adds to)."""

    sha256: str  # of the bytes parsed
    size: int
    lines: int
    records: dict[str, CacheRecord]  # by key, a later line for the same key winning (FRESH reruns append)
    prompts: frozenset[str]  # the prompt hashes answered


# path -> what its bytes parsed to: the arms of one model open its cache one after another, and parsing every
# line again for each of them was most of a replayed build's time. A file that only grew since (an arm's
# answers appended) has just its new lines parsed; one whose parsed bytes changed is parsed whole.
_parsed: dict[Path, _Parsed] = {}
_parsed_lock = threading.Lock()


def _parsed_records(path: Path, data: bytes) -> _Parsed:
    """The cache's whole lines, parsed once per content in a process (CacheRecord is frozen)."""
    with _parsed_lock:
        known = _parsed.get(path)
    digest = hashlib.sha256()
    view = memoryview(data)
    if known is not None and len(data) < known.size:  # cut shorter or replaced: nothing parsed before is kept
        known = None
    if known is not None:
        digest.update(view[: known.size])
        if digest.hexdigest() != known.sha256:  # the bytes parsed before changed: parse them all again
            known, digest = None, hashlib.sha256()
        elif len(data) == known.size:
            return known
    start, lineno = (known.size, known.lines) if known is not None else (0, 0)
    records = dict(known.records) if known is not None else {}
    prompts = set(known.prompts) if known is not None else set()
    for line in data[start:].split(b"\n")[:-1]:
        lineno += 1
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            record = CacheRecord(**{k: obj[k] for k in _FIELDS if k in obj})
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as e:
            raise InputError(
                f"generation cache line {lineno} is corrupt ({e}); move the file aside to regenerate",
                path=path,
                record=lineno,
            ) from None
        records[record.key] = record
        prompts.add(record.prompt_sha256)
    digest.update(view[start:])
    parsed = _Parsed(digest.hexdigest(), len(data), lineno, records, frozenset(prompts))
    with _parsed_lock:
        _parsed[path] = parsed
    return parsed


class GenerationCache:
    """Lookups by key; with `fresh=True` old lines are not read (new answers are still appended);
    with `read_only=True` nothing on disk is created or changed (replay)."""

    def __init__(self, path: str | os.PathLike, *, fresh: bool = False, read_only: bool = False):
        if fresh and read_only:
            raise ValueError(
                "GenerationCache: fresh=True (ignore cached answers) and read_only=True contradict"
            )
        self.path = Path(path)
        self.fresh = fresh
        self.read_only = read_only
        self.torn_bytes_dropped = 0  # read-only: skipped in memory, left on disk
        self._records: dict[str, CacheRecord] = {}
        self._prompts: set[str] = set()
        self._lock = threading.Lock()
        self._fd = -1
        self._durable = durable_writes()  # read once: a bad HARNESS_FSYNC is refused here, not in the flusher
        # background flushing: lines written / lines covered by a finished fsync
        self._written = self._flushed = 0
        self._flush_state = threading.Condition(self._lock)
        self._flusher: threading.Thread | None = None
        self._flush_error: OSError | None = None
        self._closing = False
        if read_only:
            if not self.path.is_file():
                raise InputError("replay: no generation cache here (nothing to replay)", path=self.path)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_and_load()
        if not read_only:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _repair_and_load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            # a write cut short by a kill: drop the partial line so the next append starts clean
            self.torn_bytes_dropped = len(data) - end
            if not self.read_only:
                os.truncate(self.path, end)
            data = data[:end]
        if self.fresh:
            return
        parsed = _parsed_records(self.path, data)
        self._records, self._prompts = dict(parsed.records), set(parsed.prompts)

    def _remember(self, record: CacheRecord) -> None:
        self._records[record.key] = record
        self._prompts.add(record.prompt_sha256)

    def __len__(self) -> int:
        return len(self._records)

    def get(self, key: str) -> CacheRecord | None:
        return self._records.get(key)

    def has_prompt(self, prompt_hash: str) -> bool:
        """Whether any cached answer (under any model, digest or options) exists for this prompt."""
        return prompt_hash in self._prompts

    def digests_for(self, backend: str, model: str) -> list[str]:
        """Distinct digests recorded for a backend/model (replay uses this when none is pinned)."""
        return sorted({r.digest for r in self._records.values() if r.backend == backend and r.model == model})

    def put(self, record: CacheRecord) -> None:
        if self.read_only:
            raise RuntimeError(
                f"{self.path}: the generation cache is open read-only (replay); nothing is written"
            )
        line = (
            json.dumps({f: getattr(record, f) for f in _FIELDS}, sort_keys=True, ensure_ascii=False) + "\n"
        ).encode("utf-8")
        with self._lock:
            self._raise_flush_error()
            view = memoryview(line)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            self._written += 1
            self._remember(record)
            if self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_behind, name=f"flush {self.path.name}", daemon=True
                )
                self._flusher.start()
            self._flush_state.notify_all()

    def _flush_behind(self) -> None:
        """fsync whenever lines were written since the last one; exits on close once all are flushed."""
        while True:
            with self._lock:
                while self._written == self._flushed and not self._closing:
                    self._flush_state.wait()
                if self._written == self._flushed:
                    return
                target, fd = self._written, self._fd
            try:
                if self._durable:
                    os.fsync(fd)
            except OSError as e:
                with self._lock:
                    self._flush_error = e
                    self._flush_state.notify_all()
                return
            with self._lock:
                self._flushed = target
                self._flush_state.notify_all()

    def _raise_flush_error(self) -> None:
        if self._flush_error is not None:
            raise OSError(f"{self.path}: flushing the generation cache to disk failed: {self._flush_error}")

    def wait_durable(self) -> None:
        """Return once every line written so far is flushed to disk."""
        with self._lock:
            while self._flushed < self._written and self._flush_error is None:
                self._flush_state.wait()
            self._raise_flush_error()

    def close(self) -> None:
        with self._lock:
            if self._fd < 0:
                return
            self._closing = True
            self._flush_state.notify_all()
            flusher = self._flusher
        if flusher is not None:
            flusher.join()
        with self._lock:
            os.close(self._fd)
            self._fd = -1
            self._raise_flush_error()

    def __enter__(self) -> "GenerationCache":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
