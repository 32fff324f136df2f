"""Markdown block parser (docs/design.md, Arms): one linear pass over lines -> a list of Blocks.

The rules are those of the published reference chunker (mdkeychunker 0.4.2, `MarkdownChunker`),
because the study's S chunks were counted with it; they are deliberately not CommonMark:

- Lines end at "\\r\\n", "\\r" or "\\n". A block's `text` is its lines joined by "\\n" (line endings
  normalised); `start`/`end` are offsets into the text exactly as given, so the source slice and
  `text` differ only in line endings.
- Checked in this order at each non-blank line: front matter (line 1 is "---", closed by a later
  "---"), a fence (up to 3 spaces, 3+ backticks or tildes; runs to its closer or to the end of the
  document, trailing lines included), an ATX header ("#" x 1-6, whitespace, a title), a setext header
  (any non-list, non-quote, non-rule line over a "===" or "---" underline), a table (a line with
  "|" over a delimiter row of at least two cells; runs over non-blank lines holding "|"), a list, a
  blockquote, a thematic break, a paragraph.
- No indented code and no HTML block: indented lines are paragraph or list text.
- A list starts where the stripped line looks like an item ("*", "+" or "-" then whitespace, or
  digits then "." or ")" then whitespace), at any indent. It continues over list lines, lines
  indented deeper than its first line, and blank lines followed by either; no lazy continuation.
- A blockquote runs over lines whose stripped text starts with ">".
- A paragraph ends at a blank line or at a later line that starts with "#" or ">" once stripped,
  opens a fence, is a list line, or contains "|".
- Section paths join every open header title with " > " (empty titles included, as the reference).

Blank lines belong to no block; every non-whitespace character lies in exactly one block.
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
    text: str = ""  # the block's lines joined by "\n" (what the reference measures and emits)
    level: int = 0  # 1-6 for headers, else 0
    title: str = ""  # header text, else ""
    fences: tuple[tuple[int, int], ...] = ()  # char ranges of fenced code nested in a list


_LINE_END = re.compile(r"\r\n|\r|\n")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_ATX = re.compile(r" {0,3}(#{1,6})\s+(.+?)(?:\s+#+)?\s*")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)\s*")
_THEMATIC = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})")
_DELIMITER_ROW = re.compile(r"\s*\|?[\s:-]+\|[\s|:-]+\|?\s*")
_BULLET = re.compile(r"[*+-]\s+")
_ORDERED = re.compile(r"\d+[.)]\s+")
# a fence inside a list item (any indent, optionally after the item marker); metadata only
_NESTED_FENCE = re.compile(r"\s*(?:[*+-]|\d+[.)])?\s*(`{3,}|~{3,})(.*)")


def is_blank(line: str) -> bool:
    return not line.strip()


def is_list_line(line: str) -> bool:
    stripped = line.strip()
    return _BULLET.match(stripped) is not None or _ORDERED.match(stripped) is not None


def fence_opener(line: str) -> tuple[str, int] | None:
    """(fence char, run length) when `line` opens a fence; a backtick fence's info has no backtick."""
    m = _FENCE_OPEN.fullmatch(line)
    if m is None:
        return None
    run = m.group(1)
    if run[0] == "`" and "`" in m.group(2):
        return None
    return run[0], len(run)


def closes_fence(fence: tuple[str, int], line: str, max_indent: int | None = 3) -> bool:
    """Whether `line` is a run of at least the opener's length of its char, alone on the line."""
    body = line.lstrip(" ")
    if max_indent is not None and len(line) - len(body) > max_indent:
        return False
    if max_indent is None:
        body = body.lstrip()
    run = len(body) - len(body.lstrip(fence[0]))
    return run >= fence[1] and body[run:].strip(" \t") == ""


def _is_thematic(line: str) -> bool:
    return _THEMATIC.fullmatch(line) is not None


class Lines:
    """The text split at "\\r\\n", "\\r" or "\\n", with each line's start offset.

    A final line ending leaves an empty last line, as `str.split` does; the reference keeps it, and
    it matters only to an unclosed fence, which runs to the end of the document.
    """

    __slots__ = ("text", "lines", "starts", "n")

    def __init__(self, text: str):
        self.text = text
        lines: list[str] = []
        starts: list[int] = []
        pos = 0
        for m in _LINE_END.finditer(text):
            starts.append(pos)
            lines.append(text[pos : m.start()])
            pos = m.end()
        starts.append(pos)
        lines.append(text[pos:])
        self.lines, self.starts, self.n = lines, starts, len(lines)

    def content_end(self, i: int) -> int:
        return self.starts[i] + len(self.lines[i])

    def get(self, i: int) -> str | None:
        return self.lines[i] if 0 <= i < self.n else None

    def joined(self, first: int, last: int) -> str:
        return "\n".join(self.lines[first : last + 1])


def parse_blocks(text: str) -> list[Block]:
    """Parse Markdown `text` into blocks, in document order, in a single pass over its lines."""
    return _Parser(Lines(text)).run()


class _Parser:
    def __init__(self, src: Lines):
        self.src = src
        self.blocks: list[Block] = []
        self.headers: list[tuple[int, str]] = []  # (level, title) of open headers
        self.path = ""

    def emit(self, kind: str, first: int, last: int, *, level: int = 0, title: str = "", fences=()) -> None:
        if kind == "header":
            self.headers = [(lv, t) for lv, t in self.headers if lv < level] + [(level, title)]
            self.path = " > ".join(t for _, t in self.headers)
        src = self.src
        path = "" if kind == "front_matter" else self.path
        block = Block(
            kind, src.starts[first], src.content_end(last), first + 1, last + 1, path,
            src.joined(first, last), level, title, fences,
        )  # fmt: skip
        self.blocks.append(block)

    def run(self) -> list[Block]:
        lines, n = self.src.lines, self.src.n
        i = self.front_matter()
        while i < n:
            line = lines[i]
            if is_blank(line):
                i += 1
            elif fence := fence_opener(line):
                i = self.fenced_code(i, fence)
            elif m := _ATX.fullmatch(line):
                self.emit("header", i, i, level=len(m.group(1)), title=m.group(2).strip())
                i += 1
            elif self.is_setext(i):
                level = 1 if lines[i + 1].strip().startswith("=") else 2
                self.emit("header", i, i + 1, level=level, title=line.strip())
                i += 2
            elif "|" in line and i + 1 < n and _DELIMITER_ROW.fullmatch(lines[i + 1]):
                i = self.until(i, "table", lambda s: "|" in s and not is_blank(s))
            elif is_list_line(line):
                i = self.list_block(i)
            elif line.strip().startswith(">"):
                i = self.until(i, "blockquote", lambda s: s.strip().startswith(">"))
            elif _is_thematic(line):
                self.emit("thematic_break", i, i)
                i += 1
            else:
                i = self.paragraph(i)
        return self.blocks

    def front_matter(self) -> int:
        lines = self.src.lines
        if lines[0].lstrip("\ufeff").strip() != "---":
            return 0
        for j in range(1, self.src.n):
            if lines[j].strip() == "---":
                self.emit("front_matter", 0, j)
                return j + 1
        return 0  # unclosed: not front matter

    def is_setext(self, i: int) -> bool:
        line, under = self.src.lines[i], self.src.get(i + 1)
        return (
            under is not None
            and _SETEXT_UNDERLINE.fullmatch(under) is not None
            and not _is_thematic(line)
            and not is_list_line(line)
            and not line.strip().startswith(">")
        )

    def until(self, i: int, kind: str, continues) -> int:
        """A block from line i over the following lines for which `continues` holds."""
        j = i + 1
        while j < self.src.n and continues(self.src.lines[j]):
            j += 1
        self.emit(kind, i, j - 1)
        return j

    def fenced_code(self, i: int, fence: tuple[str, int]) -> int:
        lines, n = self.src.lines, self.src.n
        j = i + 1
        while j < n and not closes_fence(fence, lines[j]):
            j += 1
        last = min(j, n - 1)  # unclosed: every remaining line, blank ones included
        self.emit("code", i, last)
        return last + 1

    def list_block(self, i: int) -> int:
        lines, n = self.src.lines, self.src.n
        base = _indent(lines[i])

        def belongs(line: str) -> bool:
            return is_list_line(line) or _indent(line) > base

        j = i + 1
        while j < n:
            if is_blank(lines[j]):
                k = j + 1
                while k < n and is_blank(lines[k]):
                    k += 1
                if k < n and belongs(lines[k]):
                    j = k
                    continue
                break
            if not belongs(lines[j]):
                break
            j += 1
        self.emit("list", i, j - 1, fences=self.nested_fences(i, j - 1))
        return j

    def nested_fences(self, first: int, last: int) -> tuple[tuple[int, int], ...]:
        """Char ranges of fences inside a list, so the paragraph chunker keeps their blank lines."""
        src = self.src
        found: list[tuple[int, int]] = []
        open_at, fence = -1, None
        for k in range(first, last + 1):
            line = src.lines[k]
            if fence is None:
                m = _NESTED_FENCE.fullmatch(line)
                if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                    open_at, fence = k, (m.group(1)[0], len(m.group(1)))
            elif closes_fence(fence, line, max_indent=None):
                found.append((src.starts[open_at], src.content_end(k)))
                fence = None
        if fence is not None:
            found.append((src.starts[open_at], src.content_end(last)))
        return tuple(found)

    def paragraph(self, i: int) -> int:
        lines, n = self.src.lines, self.src.n
        j = i + 1
        while j < n and not is_blank(lines[j]) and not _ends_paragraph(lines[j]):
            j += 1
        self.emit("paragraph", i, j - 1)
        return j


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _ends_paragraph(line: str) -> bool:
    stripped = line.strip()
    return (
        stripped.startswith(("#", ">"))
        or fence_opener(line) is not None
        or is_list_line(line)
        or "|" in line
    )
