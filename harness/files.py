"""Hashes, canonical JSON and atomic writes (a file is either absent or complete, never half-written), and
the one YAML reader.

The lowest layer of the package: it imports only the standard library, PyYAML and harness.errors (a leaf),
so any module (data model, provenance, caches) can use it without an import cycle.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

from harness.errors import HarnessError, InputError

__all__ = [
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_jsonl",
    "atomic_write_text",
    "canonical_json",
    "durable_writes",
    "flush_to_disk",
    "iter_jsonl",
    "journal_writes_under",
    "jsonl_lines",
    "note_written",
    "read_json",
    "remove_stale_temporaries",
    "sha256_bytes",
    "sha256_file",
    "sha256_text",
]


FSYNC_VARIABLE = "HARNESS_FSYNC"


def durable_writes() -> bool:
    """Whether a write is flushed to the disk before it counts as done (fsync). `HARNESS_FSYNC=0` skips the
    flush: every write stays atomic (a temporary file renamed), but a machine crash may lose the last ones.
    The test suite sets it for its scratch studies (docs/working-on-the-harness.md, "Checks"); a study
    meant for release never should."""
    value = os.environ.get(FSYNC_VARIABLE, "1")
    if value not in ("0", "1"):
        raise HarnessError(
            f"{FSYNC_VARIABLE}={value!r}: expected 1 (flush every write to disk, the default) or 0"
        )
    return value == "1"


def flush_to_disk(f) -> None:
    """Flush an open file's buffer to the operating system, then (see durable_writes) to the disk."""
    f.flush()
    if durable_writes():
        os.fsync(f.fileno())


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def looks_like_sha256(value: Any) -> bool:
    """A SHA-256 hex digest (64 lowercase hex characters)."""
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no extra whitespace) used for hashing."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    atomic_write_blocks(path, (data,))


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (changing it, even for an instant,
    would race with other threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def created_file_mode() -> int:
    """The mode open() gives a new file: 0666 less the umask (0644 under the usual 022), so colleagues and
    web servers can read a report the umask lets them read."""
    return 0o666 & ~_umask()


def atomic_write_blocks(path: str | os.PathLike, blocks: Iterable[bytes]) -> None:
    """Write the concatenated blocks to path atomically, never holding more than one block in memory. A file
    that already holds exactly these bytes is left as it is (same inode, same modification time), so a rerun
    that changes nothing writes nothing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    journaled = _journal_root(path) is not None
    digest, size = hashlib.sha256(), 0
    # the writer's host and pid in the name let remove_stale_temporaries tell a killed writer's leftover
    # from a live writer's file
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.tmp-{socket.gethostname()}-{os.getpid()}-", suffix=".tmp", dir=path.parent
    )
    try:
        os.fchmod(fd, created_file_mode())  # mkstemp makes 0600; a written file gets what open() would give
        with os.fdopen(fd, "wb") as f:
            for block in blocks:
                f.write(block)
                if journaled:
                    digest.update(block)
                    size += len(block)
            flush_to_disk(f)
        if _same_file_content(Path(tmp), path):  # the stage checked it against the journal before writing
            os.unlink(tmp)
        else:
            if (
                journaled
            ):  # before the file takes its name: a kill in between leaves an entry, never an unnoted file
                note_written(path, digest.hexdigest(), size)
            os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _same_file_content(new: Path, old: Path) -> bool:
    """Whether `old` is a regular file (not a link) with the bytes of `new`."""
    try:
        if old.is_symlink() or not old.is_file() or old.stat().st_size != new.stat().st_size:
            return False
        with open(new, "rb") as a, open(old, "rb") as b:
            while True:
                block = a.read(1 << 20)
                if block != b.read(1 << 20):
                    return False
                if not block:
                    return True
    except OSError:
        return False


# atomic_write_bytes's temporaries, and the `.<name>.<pid>.tmp` form (same host) of an exclusive-link write
_TEMPORARY = re.compile(r"^\..*(?:\.tmp-(?P<host>.+)-(?P<pid>\d+)-[a-z0-9_]+|\.(?P<own_pid>\d+))\.tmp$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def remove_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Delete, under `folder`, the temporaries of atomic writes whose writer (on this host) no longer runs:
    what a killed process leaves. A live writer's temporary, or one of another host, is kept. Returns the
    removed paths, sorted."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    host, removed = socket.gethostname(), []
    for path in sorted(folder.rglob(".*.tmp")):
        match = _TEMPORARY.match(path.name)
        if match is None or not path.is_file() or (match["host"] is not None and match["host"] != host):
            continue
        if not _alive(int(match["pid"] or match["own_pid"])):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


# --- the write journal ---
# Every atomic write under a journaled folder (a study's results/: harness.grid.paths registers it) is noted,
# path and SHA-256, in <folder>/.journal/ before the file takes its name. A stage thereby tells what the
# harness
# wrote, a killed run's output included, from a file edited or added by hand (harness.provenance.recorded,
# require_recorded; docs/integrity.md, "Resuming and the write journal"). Each process appends to its own
# file.

JOURNAL_FOLDER = ".journal"
_journaled: dict[str, str] = {}  # folder as given -> its real path
_journal_guard = threading.Lock()


def journal_writes_under(folder: str | os.PathLike) -> None:
    """Journal every later atomic write of this process below `folder` (idempotent)."""
    if str(folder) not in _journaled:
        _journaled[str(folder)] = os.path.realpath(folder)


def _journal_root(path: str | os.PathLike) -> str | None:
    if not _journaled:
        return None
    target = os.path.realpath(path)
    roots = [r for r in set(_journaled.values()) if target.startswith(r + os.sep)]
    if not roots:
        return None
    root = max(roots, key=len)
    return None if target.startswith(os.path.join(root, JOURNAL_FOLDER) + os.sep) else root


def journal_path(folder: str | os.PathLike) -> Path:
    """This process's journal file for `folder`."""
    return Path(folder) / JOURNAL_FOLDER / f"{socket.gethostname()}-{os.getpid()}.jsonl"


def note_written(path: str | os.PathLike, sha256: str, size: int) -> None:
    """Journal that the harness wrote `size` bytes with this SHA-256 at `path` (nothing outside a journaled
    folder). Called before the file appears under its name."""
    root = _journal_root(path)
    if root is None:
        return
    rel = Path(os.path.realpath(path)).relative_to(root).as_posix()
    line = json.dumps({"path": rel, "sha256": sha256, "bytes": size}, sort_keys=True) + "\n"
    target = journal_path(root)
    with _journal_guard:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a", encoding="utf-8") as f:
            f.write(line)
            flush_to_disk(f)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """Pretty, key-sorted JSON with a trailing newline: same object, same bytes."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def jsonl_lines(records: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)


def atomic_write_jsonl(path: str | os.PathLike, records: Iterable[dict[str, Any]]) -> None:
    atomic_write_text(path, jsonl_lines(records))


def read_json(path: str | os.PathLike) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"not valid JSON: {e}", path=path) from None


def iter_jsonl(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Yield one object per non-blank line; a bad line raises InputError naming file and line."""
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    with f:
        lineno = 0
        while True:
            try:
                line = f.readline()
            except UnicodeDecodeError as e:
                raise InputError(f"not UTF-8 after line {lineno}: {e}", path=path) from None
            if not line:
                return
            lineno += 1
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(
                    f"line {lineno} is not valid JSON: {e.msg}", path=path, record=lineno
                ) from None
            if not isinstance(obj, dict):
                raise InputError(f"line {lineno} is not a JSON object", path=path, record=lineno)
            yield obj


# nodes that aliases may add to a document when expanded: a study's YAML uses a few anchors, if any, while
# nested aliases (a "billion laughs") multiply, and every later walk of the data (the schema, the freeze's
# canonical JSON) would pay for the expansion
MAX_ALIAS_NODES = 10_000


class RefusedYaml(yaml.YAMLError):
    """Valid YAML the harness does not read: a key given twice, or aliases that expand too far."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping key given twice (YAML would keep the last value silently), and a
    document whose aliases expand past MAX_ALIAS_NODES nodes or refer to themselves."""

    def compose_document(self):
        node = super().compose_document()
        _check_expansion(node)
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise RefusedYaml(f"key {key!r} is given twice, at line {seen[key]} and line {line}")
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _check_expansion(root: yaml.Node) -> None:
    """Count the nodes of the document as if every alias were copied out (each distinct node's expanded size
    computed once, so a bomb costs as much as its text), and refuse more than MAX_ALIAS_NODES beyond its
    distinct nodes, or an alias inside its own anchor."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise RefusedYaml(f"the node at line {node.start_mark.line + 1} holds an alias of itself")
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        open_nodes.discard(key)
        sizes[key] = total
        return total

    expanded = size(root)
    if expanded - len(sizes) > MAX_ALIAS_NODES:
        raise RefusedYaml(f"its aliases expand to {expanded:,} nodes from {len(sizes):,} written; at most "
                          f"{MAX_ALIAS_NODES:,} may be added by aliases")


def load_yaml(path: Path) -> Any:
    """Every YAML file the harness reads (study config, plan, amendments) goes through here: safe loading,
    a key given twice in one mapping is refused naming the file, the key and both lines, and aliases that
    expand past MAX_ALIAS_NODES nodes are refused."""
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.load(f, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except FileNotFoundError:
        raise HarnessError(f"{path}: file not found") from None
    except RefusedYaml as e:
        raise HarnessError(f"{path}: {e}") from None
    except yaml.YAMLError as e:
        raise HarnessError(f"{path}: not valid YAML: {e}") from None
