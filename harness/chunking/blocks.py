"""Markdown block parser (DESIGN section 4): one linear pass over lines -> a list of Blocks.

Block kinds: front_matter, code (fenced or indented), header (ATX or setext), table, list,
blockquote, thematic_break, paragraph. Blank lines belong to no block, so every non-whitespace
character of the text lies in exactly one block and the text between blocks is whitespace.

Offsets are character offsets into the text exactly as given: lines end at "\\n", a "\\r" before it
is part of the line ending (CRLF input is handled, not rewritten), and a block's `end` stops before
the line ending of its last line. A block always starts and ends on a non-blank line.

Rules beyond the DESIGN text, all from CommonMark/GFM: lists and blockquotes take lazy continuation
lines (a non-blank line right after them that starts no other block); a list tracks fences nested
in its items so their blank lines and `#` lines stay inside the list; indented code (4+ columns,
not interrupting a paragraph) is a code block; a table needs as many delimiter cells as header
cells and a `|` in the delimiter row (so `a | b` over `---` stays a setext header).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("front_matter", "code", "header", "table", "list", "blockquote", "thematic_break", "paragraph")
# blocks that close a chunk once they bring it to tau_max (they are kept whole and tend to be long)
BULKY_KINDS = frozenset({"code", "table", "front_matter", "blockquote"})


@dataclass(frozen=True)
class Block:
    kind: str
    start: int  # char offset of the first line's first character
    end: int  # char offset just past the last line's content (before its line ending)
    start_line: int  # 1-based, inclusive
    end_line: int
    section_path: str  # header titles joined by " > "; a header's own path includes itself
    level: int = 0  # 1-6 for headers, else 0
    title: str = ""  # header text, else ""
    fences: tuple[tuple[int, int], ...] = ()  # char ranges of fenced code nested in a list


_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE_OPEN = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)$")
_FENCE_CLOSE = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*$")
_THEMATIC = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_LIST_ITEM = re.compile(r" {0,3}(?:[-+*]|(\d{1,9})[.)])(?:[ \t]+(\S?)|$)")
_BLOCKQUOTE = re.compile(r" {0,3}>")
_DELIMITER = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_NESTED_FENCE = re.compile(r"[ \t]*(?:[-+*]|\d{1,9}[.)])?[ \t]*(`{3,}|~{3,})(.*)$")


def is_blank(line: str) -> bool:
    return not line or line.isspace()


def _indent_columns(line: str) -> int:
    cols = 0
    for ch in line:
        if ch == " ":
            cols += 1
        elif ch == "\t":
            cols += 4 - cols % 4
        else:
            break
    return cols


def _fence_opener(line: str) -> tuple[str, int] | None:
    """(fence char, length) when `line` opens a CommonMark fence at indent <= 3."""
    m = _FENCE_OPEN.match(line)
    if not m:
        return None
    fence = m.group(2)
    if fence[0] == "`" and "`" in m.group(3):
        return None  # a backtick fence's info string may not contain backticks
    return fence[0], len(fence)


def _closes(fence: tuple[str, int], line: str, any_indent: bool = False) -> bool:
    m = _FENCE_CLOSE.match(line)
    if not m:
        return False
    run = m.group(1)
    if run[0] != fence[0] or len(run) < fence[1]:
        return False
    return any_indent or _indent_columns(line) <= 3


def _cell_count(row: str) -> int:
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return len(_CELL_SPLIT.split(row))


def _starts_table(line: str, next_line: str | None) -> bool:
    return (
        next_line is not None
        and "|" in line
        and "|" in next_line
        and "-" in next_line
        and _DELIMITER.match(next_line) is not None
        and _cell_count(line) == _cell_count(next_line)
    )


def _header_title(raw: str | None) -> str:
    if not raw:
        return ""
    return _ATX_CLOSING.sub("", raw).strip()


def _list_item(line: str) -> re.Match | None:
    return _LIST_ITEM.match(line) if _THEMATIC.match(line) is None else None


def _interrupts_paragraph(line: str, next_line: str | None) -> bool:
    """Whether `line` starts a block that may interrupt a paragraph (CommonMark + GFM tables)."""
    first = line.lstrip(" ")[:1]
    if first == "" or _indent_columns(line) > 3:
        return False
    if first == "#" and _ATX.match(line):
        return True
    if first in "`~" and _fence_opener(line):
        return True
    if first == ">":
        return True
    if first in "*-_" and _THEMATIC.match(line):
        return True
    if first in "-+*" or first.isdigit():
        m = _LIST_ITEM.match(line)
        # only non-empty items, and ordered ones only when they start at 1
        if m and m.group(2) and (m.group(1) is None or int(m.group(1)) == 1):
            return True
    return "|" in line and _starts_table(line, next_line)


class Lines:
    """The text split at "\\n" with each line's start offset and content end (before "\\r\\n")."""

    __slots__ = ("text", "lines", "starts", "n")

    def __init__(self, text: str):
        self.text = text
        raw = text.split("\n")
        if raw and raw[-1] == "":
            raw.pop()  # a final newline does not open another line
        self.lines = [ln[:-1] if ln.endswith("\r") else ln for ln in raw]
        starts = []
        pos = 0
        for ln in raw:
            starts.append(pos)
            pos += len(ln) + 1
        self.starts = starts
        self.n = len(raw)

    def content_end(self, i: int) -> int:
        return self.starts[i] + len(self.lines[i])

    def get(self, i: int) -> str | None:
        return self.lines[i] if i < self.n else None


def parse_blocks(text: str) -> list[Block]:
    """Parse Markdown `text` into blocks, in document order, in a single pass over its lines."""
    return _Parser(Lines(text)).run()


class _Parser:
    def __init__(self, src: Lines):
        self.src = src
        self.blocks: list[Block] = []
        self.stack: list[tuple[int, str]] = []  # (level, title) of open headers
        self.path = ""

    def emit(self, kind: str, first: int, last: int, level: int = 0, title: str = "", fences=()) -> None:
        if kind == "header":
            while self.stack and self.stack[-1][0] >= level:
                self.stack.pop()
            self.stack.append((level, title))
            self.path = " > ".join(t for _, t in self.stack if t)
        src = self.src
        self.blocks.append(
            Block(kind, src.starts[first], src.content_end(last), first + 1, last + 1, self.path, level, title, fences)
        )

    def run(self) -> list[Block]:
        lines, n = self.src.lines, self.src.n
        i = self.front_matter()
        while i < n:
            line = lines[i]
            if is_blank(line):
                i += 1
                continue
            first = line.lstrip(" ")[:1]
            if _indent_columns(line) >= 4:
                i = self.indented_code(i)
            elif first in "`~" and (fence := _fence_opener(line)):
                i = self.fenced_code(i, fence)
            elif first == "#" and (m := _ATX.match(line)):
                self.emit("header", i, i, len(m.group(1)), _header_title(m.group(2)))
                i += 1
            elif first in "*-_" and _THEMATIC.match(line):
                self.emit("thematic_break", i, i)
                i += 1
            elif first == ">":
                i = self.blockquote(i)
            elif (first in "-+*" or first.isdigit()) and _list_item(line):
                i = self.list_block(i)
            elif "|" in line and _starts_table(line, self.src.get(i + 1)):
                i = self.table(i)
            else:
                i = self.paragraph(i)
        return self.blocks

    def front_matter(self) -> int:
        lines = self.src.lines
        if not lines or lines[0].rstrip() != "---":
            return 0
        for j in range(1, self.src.n):
            if lines[j].rstrip() in ("---", "..."):
                self.emit("front_matter", 0, j)
                return j + 1
        return 0  # unclosed: not front matter; the first line parses as a thematic break

    def last_nonblank(self, first: int, stop: int) -> int:
        """The last non-blank line in [first, stop); `first` must be non-blank."""
        last = stop - 1
        while last > first and is_blank(self.src.lines[last]):
            last -= 1
        return last

    def fenced_code(self, i: int, fence: tuple[str, int]) -> int:
        lines, n = self.src.lines, self.src.n
        j = i + 1
        while j < n and not _closes(fence, lines[j]):
            j += 1
        if j < n:
            self.emit("code", i, j)
            return j + 1
        self.emit("code", i, self.last_nonblank(i, n))  # unclosed: runs to the end of the document
        return n

    def indented_code(self, i: int) -> int:
        lines, n = self.src.lines, self.src.n
        last = i
        j = i + 1
        while j < n:
            line = lines[j]
            if is_blank(line):
                j += 1
                continue
            if _indent_columns(line) < 4:
                break
            last = j
            j += 1
        self.emit("code", i, last)
        return last + 1

    def blockquote(self, i: int) -> int:
        lines, n = self.src.lines, self.src.n
        j = i + 1
        while j < n:
            line = lines[j]
            if is_blank(line):
                break
            if not _BLOCKQUOTE.match(line) and _interrupts_paragraph(line, self.src.get(j + 1)):
                break  # anything else that starts no block is a lazy continuation line
            j += 1
        self.emit("blockquote", i, j - 1)
        return j

    def table(self, i: int) -> int:
        lines, n = self.src.lines, self.src.n
        j = i + 2
        while j < n and "|" in lines[j] and not is_blank(lines[j]):
            j += 1
        self.emit("table", i, j - 1)
        return j

    def list_block(self, i: int) -> int:
        lines, n = self.src.lines, self.src.n
        starts = self.src.starts
        last = i
        fences: list[tuple[int, int]] = []
        fence, fence_start = self.nested_fence(lines[i]), starts[i]
        j = i + 1
        while j < n:
            line = lines[j]
            if fence is not None:
                last = j
                if _closes(fence, line, any_indent=True):
                    fences.append((fence_start, self.src.content_end(j)))
                    fence = None
                j += 1
                continue
            if is_blank(line):
                j += 1
                continue
            after_blank = j > last + 1
            first = line[:1]
            if first in " \t":
                pass  # indented continuation of an item
            elif _THEMATIC.match(line):
                break
            elif _LIST_ITEM.match(line):
                pass
            elif after_blank or _interrupts_paragraph(line, self.src.get(j + 1)):
                break
            # else: a lazy continuation line of the item's paragraph
            last = j
            fence = self.nested_fence(line)
            if fence is not None:
                fence_start = starts[j]
            j += 1
        if fence is not None:  # unclosed nested fence: runs to the end, like a top-level one
            last = self.last_nonblank(i, n)
            fences.append((fence_start, self.src.content_end(last)))
        self.emit("list", i, last, fences=tuple(fences))
        return last + 1

    @staticmethod
    def nested_fence(line: str) -> tuple[str, int] | None:
        m = _NESTED_FENCE.match(line)
        if not m or (m.group(1)[0] == "`" and "`" in m.group(2)):
            return None
        return m.group(1)[0], len(m.group(1))

    def paragraph(self, i: int) -> int:
        lines, n = self.src.lines, self.src.n
        j = i + 1
        while j < n:
            line = lines[j]
            if is_blank(line):
                break
            if (m := _SETEXT.match(line)) is not None:
                title = " ".join(lines[k].strip() for k in range(i, j))
                self.emit("header", i, j, 1 if m.group(1)[0] == "=" else 2, title)
                return j + 1
            if _interrupts_paragraph(line, self.src.get(j + 1)):
                break
            j += 1
        self.emit("paragraph", i, j - 1)
        return j
