"""Pieces every dataset adapter shares: the loaded-dataset record, Markdown file reading and evidence location.

Markdown files are read as UTF-8; bytes that are not UTF-8 raise InputError naming the file, because decoding
with replacement characters would silently shift the character offsets that gold spans depend on. CRLF and
lone CR line endings become LF (as Python's universal-newline reading does), and the adapter counts the
documents where that happened.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from harness.data.model import Document, Question
from harness.errors import InputError

METRIC_SETS = ("qasper", "freshstack")


@dataclass(frozen=True)
class LoadedDataset:
    name: str
    metric_set: str
    documents: tuple[Document, ...]  # sorted by doc_id
    questions: tuple[Question, ...]  # sorted by qid
    counts: dict[str, int]  # every drop, miss and normalisation, by name


def normalise_newlines(text: str) -> tuple[str, bool]:
    """CRLF and lone CR -> LF; returns the text and whether anything changed."""
    if "\r" not in text:
        return text, False
    return text.replace("\r\n", "\n").replace("\r", "\n"), True


def read_markdown(path: str | Path) -> tuple[str, bool]:
    """A Markdown file's text with LF line endings, and whether line endings were normalised."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("Markdown file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("expected a Markdown file, found a directory", path=path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"not valid UTF-8 (byte {e.start}: {data[e.start:e.start + 1]!r}); re-encode the file as UTF-8",
            path=path,
        ) from None
    return normalise_newlines(text)


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

    def locate(self, needle: str, preferred: dict[str, tuple[int, int]] | None = None):
        """(start, end, how) with how "verbatim" or "normalised"; (None, None, None) when not found.

        `preferred` maps exact strings to spans to use first (e.g. whole paragraphs), so an evidence string
        equal to a paragraph is placed on that paragraph rather than on an earlier partial repeat.
        """
        if not needle.strip():
            return None, None, None
        if preferred and needle in preferred:
            start, end = preferred[needle]
            return start, end, "verbatim"
        start = self.text.find(needle)
        if start >= 0:
            return start, start + len(needle), "verbatim"
        target = collapse_whitespace(needle)
        if self._normalised is None:
            self._build_normalised()
        i = self._normalised.find(target)
        if i < 0:
            return None, None, None
        return self._origin[i], self._origin[i + len(target) - 1] + 1, "normalised"


def iter_jsonl_numbered(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line; errors name the file and the line."""
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    with f:
        try:
            lines = f.read().split("\n")  # not splitlines(): U+2028 may sit inside a JSON string
        except UnicodeDecodeError as e:
            raise InputError(f"not valid UTF-8: {e}", path=path) from None
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
