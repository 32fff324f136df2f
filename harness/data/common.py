"""Pieces every dataset adapter shares: the adapter entry, the loaded-dataset record, the input reader,
evidence location.

Every file an adapter opens goes through one InputReader, which records the path and the SHA-256 of the
bytes it returned; the dataset carries that list (`input_files`), so the freeze hashes exactly what the
study was built from and a later adapter cannot leave a file out (load_dataset refuses a dataset without
one, and tests/test_data_contract.py watches every file an adapter opens).

Markdown files are read as UTF-8; bytes that are not UTF-8 raise InputError naming the file, because decoding
with replacement characters would silently shift the character offsets that gold spans depend on. CRLF and
lone CR line endings become LF (as Python's universal-newline reading does), and the adapter counts the
documents where that happened. A UTF-8 byte-order mark opening a text (a file, or a document's inline text)
is stripped, since it would hide a title from the header parser; the reader records each such text and
load_dataset counts them as `texts_bom_stripped` (present when nonzero).
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from harness.config.datasets import ClusterSelection, DatasetConfig, QuestionSelection
from harness.data.model import Document, Question
from harness.errors import InputError
from harness.files import sha256_bytes
from harness.study import Study

BOM = "\ufeff"


@dataclass(frozen=True)
class LoadedDataset:
    name: str
    metric_set: str
    documents: tuple[Document, ...]  # sorted by doc_id
    questions: tuple[Question, ...]  # sorted by qid
    counts: dict[str, int]  # every drop, miss and normalisation, by name
    input_files: tuple["InputFile", ...]  # every file read, sorted by path (InputReader.files)


def no_strata(cfg: DatasetConfig) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class SimulatedCorpus:
    """Simulated documents and questions (harness rehearse) as rows of the JSONL format
    (docs/jsonl-format.md), for an adapter to write in its own format."""

    documents: list[dict]  # documents.jsonl rows, each naming its body's file in `path`
    texts: dict[str, str]  # each document's `path` -> its Markdown text
    questions: list[dict]  # questions.jsonl rows; evidence as {doc_id, start, end} spans


# (the twin's root, the folder for this dataset's files relative to it, the corpus) -> the `datasets:` entry
# values naming the files written (relative to the root)
SimulatedWriter = Callable[[Path, str, SimulatedCorpus], dict[str, str]]


@dataclass(frozen=True)
class Adapter:
    """What one `adapter:` does with its typed `datasets:` entry (harness.config.datasets), which the schema
    has already checked. harness.data.adapters names one per adapter."""

    # (study, dataset name, entry, its selection.json entry or None for every eligible record, reader)
    load: Callable[[Study, str, DatasetConfig, dict | None, "InputReader"], LoadedDataset]
    # (study, dataset name, entry, a loader of every eligible record) -> its selection.json entry
    select: Callable[[Study, str, DatasetConfig, Callable[[], LoadedDataset]], dict]
    # the entry's values that name files or folders it reads (the freeze hashes them or records checkouts)
    paths: Callable[[DatasetConfig], tuple[str, ...]]
    # the strata a plan test's subset may name
    strata: Callable[[DatasetConfig], tuple[str, ...]] = no_strata
    # how `harness rehearse` writes simulated data in this format; None: the rehearsal has a writer of its own
    # for the format (harness.rehearsal.twin_data.WRITERS: formats whose raw files it simulates in full)
    write_simulated: SimulatedWriter | None = None


def exclusion_paths(selection: ClusterSelection | QuestionSelection | None) -> tuple[str, ...]:
    """The exclusion list's file, when a `selection:` section names one (rather than listing the ids)."""
    return (selection.exclude,) if selection is not None and isinstance(selection.exclude, str) else ()


@dataclass(frozen=True)
class InputFile:
    path: str  # relative to the study root when inside it, else as configured (relative or absolute)
    sha256: str  # of the bytes the adapter read


class InputReader:
    """The one way adapters read files: each read is recorded with the SHA-256 of the bytes returned.

    A file read twice must give the same bytes both times (else it changed while loading)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._files: dict[str, str] = {}
        self.bom_stripped: set[str] = set()  # labels of the texts that opened with a byte-order mark

    @property
    def files(self) -> tuple[InputFile, ...]:
        return tuple(InputFile(p, h) for p, h in sorted(self._files.items()))

    def display_path(self, path: str | Path) -> str:
        return display_path(self.root, path)

    def record(self, label: str, digest: str) -> None:
        """A non-file input (e.g. a hub download) identified by a digest of its content."""
        self._remember(label, digest, label)

    def read_bytes(self, path: str | Path, *, what: str = "file") -> bytes:
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            raise InputError(f"{what} not found", path=path) from None
        except IsADirectoryError:
            raise InputError(f"expected a {what}, found a directory", path=path) from None
        self._remember(self.display_path(path), sha256_bytes(data), path)
        return data

    def read_text(self, path: str | Path, *, what: str = "file") -> str:
        return self.without_bom(decode_utf8(self.read_bytes(path, what=what), path), self.display_path(path))

    def without_bom(self, text: str, label: str) -> str:
        """`text` without an opening byte-order mark; `label` (a path, or a file and line) records one."""
        if not text.startswith(BOM):
            return text
        self.bom_stripped.add(label)
        return text[len(BOM):]

    def read_markdown(self, path: str | Path) -> tuple[str, bool]:
        """A Markdown file's text with LF line endings, and whether line endings were normalised."""
        return normalise_newlines(self.read_text(path, what="Markdown file"))

    def iter_jsonl(self, path: str | Path) -> Iterator[tuple[int, dict]]:
        """(line number, object) for every non-blank line; errors name the file and the line."""
        return jsonl_objects(self.read_text(path), path)

    def _remember(self, key: str, digest: str, path) -> None:
        if self._files.setdefault(key, digest) != digest:
            raise InputError("changed while it was being loaded; load again", path=path)


def display_path(root: str | Path, path: str | Path) -> str:
    """`path` relative to `root` when inside it; a path configured relative to the root keeps that form
    (e.g. ../shared/data/x.md); an absolute path outside the root stays absolute. POSIX separators."""
    root_text = os.path.normpath(str(root))
    text = os.path.normpath(str(path))
    if text == root_text or text.startswith(root_text + os.sep) or str(path).startswith(root_text + os.sep):
        return Path(os.path.relpath(text, root_text)).as_posix()
    return Path(text).as_posix()


def normalise_newlines(text: str) -> tuple[str, bool]:
    """CRLF and lone CR -> LF; returns the text and whether anything changed."""
    if "\r" not in text:
        return text, False
    return text.replace("\r\n", "\n").replace("\r", "\n"), True


def decode_utf8(data: bytes, path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"not valid UTF-8 (byte {e.start}: {data[e.start:e.start + 1]!r}); re-encode the file as UTF-8",
            path=path,
        ) from None


def read_markdown(path: str | Path) -> tuple[str, bool]:
    """An unrecorded one-off read (tools and tests); adapters use InputReader.read_markdown."""
    return InputReader(Path(path).parent).read_markdown(path)


# white space (Unicode's, as str.isspace) and control characters (C0, DEL, C1): a TREC run file splits its
# lines on white space, and a CSV or a terminal shows neither faithfully (docs/pipeline.md, "Names and
# numbers")
_UNSAFE_ID = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


def id_problem(value: str) -> str | None:
    """Why `value` cannot be a doc_id or qid, or None."""
    if not value:
        return "is empty"
    bad = _UNSAFE_ID.search(value)
    if bad is not None:
        return f"contains {bad.group()!r} at position {bad.start()} (no white space or control characters)"
    return None


def check_id(value: str, what: str, *, path, record=None) -> str:
    """A doc_id or qid read from an input: every adapter checks each one here, where it is read, so the error
    names the file and the line (or record); none reaches a run file or a CSV."""
    problem = id_problem(value)
    if problem is not None:
        raise InputError(f"{what} {value!r} {problem}", path=path, record=record)
    return value


_WHITESPACE_RUN = re.compile(r"\s+")


def collapse_whitespace(text: str) -> str:
    return _WHITESPACE_RUN.sub(" ", text).strip()


class TextLocator:
    """Finds evidence strings in one document: verbatim first, else after collapsing whitespace runs.

    The whitespace-normalised copy keeps, for each of its characters, the offset of the original character it
    came from, so a normalised match maps back to a span of the original text.
    """

    def __init__(self, text: str):
        self.text = text
        self._normalised: str | None = None
        self._origin: list[int] = []

    def _build_normalised(self) -> None:
        chars: list[str] = []
        origin: list[int] = []
        previous_space = True  # drops leading whitespace
        for i, ch in enumerate(self.text):
            if ch.isspace():
                if not previous_space:
                    chars.append(" ")
                    origin.append(i)
                previous_space = True
            else:
                chars.append(ch)
                origin.append(i)
                previous_space = False
        self._normalised = "".join(chars)
        self._origin = origin

    def locate(self, needle: str, preferred: dict[str, tuple[int, int]] | None = None, *, after: int = 0):
        """(start, end, how) with how "verbatim" or "normalised"; (None, None, None) when not found.

        `preferred` maps exact strings to spans to use first (e.g. whole paragraphs), so an evidence string
        equal to a paragraph is placed on that paragraph rather than on an earlier partial repeat. `after`:
        only matches starting at or after this offset (an outside chunker's pieces are located in order).
        """
        if not needle.strip():
            return None, None, None
        if preferred and needle in preferred:
            start, end = preferred[needle]
            return start, end, "verbatim"
        start = self.text.find(needle, after)
        if start >= 0:
            return start, start + len(needle), "verbatim"
        target = collapse_whitespace(needle)
        if self._normalised is None:
            self._build_normalised()
        i = self._normalised.find(target, bisect_left(self._origin, after))
        if i < 0:
            return None, None, None
        return self._origin[i], self._origin[i + len(target) - 1] + 1, "normalised"


def iter_jsonl_numbered(path: str | Path) -> Iterator[tuple[int, dict]]:
    """An unrecorded one-off read (tools and tests); adapters use InputReader.iter_jsonl."""
    return InputReader(Path(path).parent).iter_jsonl(path)


def jsonl_objects(text: str, path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of JSONL text; errors name the file and the line."""
    lines = text.split("\n")  # not splitlines(): U+2028 may sit inside a JSON string
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"not valid JSON: {e.msg}", path=path, record=f"line {number}") from None
        if not isinstance(obj, dict):
            raise InputError("not a JSON object", path=path, record=f"line {number}")
        yield number, obj
