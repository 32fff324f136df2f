"""Header-led chunking (DESIGN section 4): the boundaries shared by S, S+T, E, E-K, CR, PF.

A chunk is a run of consecutive whole blocks, so its text is the exact slice
doc.text[first_block.start:last_block.end] (blank lines between its blocks included as they are
in the source) and `spans` is that single [start, end). Sizes are lengths of these slices.

Pass 1 (grouping): a header closes the current chunk if it has body; a body block closes it if it
has body and adding the block would exceed tau_max (a header-only chunk is never closed for size);
a code block, table, front matter or blockquote that brings the chunk to tau_max closes it.
Trailing header-only content joins the last chunk (keeping that chunk's section path).
Pass 2 (small chunks): while the previous output chunk is under tau_min and the join stays within
2 x tau_max, the next chunk joins it; a final short chunk joins its predecessor under the same cap.
A joined chunk takes the section path of its longer part (the earlier one on a tie).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.chunking.blocks import BULKY_KINDS, Block, parse_blocks
from harness.config.chunking import TAU_MAX, TAU_MIN  # the defaults live in the config schema, once
from harness.data.model import Chunk, Document, make_chunk_id
from harness.errors import InputError


@dataclass
class _Group:
    start: int
    end: int
    start_line: int
    end_line: int
    section_path: str
    kinds: list[str]
    has_body: bool

    @classmethod
    def of(cls, block: Block) -> "_Group":
        return cls(block.start, block.end, block.start_line, block.end_line, block.section_path, [block.kind], block.kind != "header")

    def add(self, block: Block) -> None:
        self.end, self.end_line = block.end, block.end_line
        self.kinds.append(block.kind)
        self.has_body = self.has_body or block.kind != "header"
        # headers come first in a pass-1 group, so its last block's path is the section of its body
        self.section_path = block.section_path

    def join(self, other: "_Group") -> None:
        if other.end - other.start > self.end - self.start:
            self.section_path = other.section_path
        self.end, self.end_line = other.end, other.end_line
        self.kinds.extend(other.kinds)
        self.has_body = self.has_body or other.has_body

    @property
    def size(self) -> int:
        return self.end - self.start


def check_taus(tau_min: int, tau_max: int) -> None:
    if not isinstance(tau_max, int) or isinstance(tau_max, bool) or tau_max < 1:
        raise InputError(f"tau_max must be a positive integer (characters), got {tau_max!r}")
    if not isinstance(tau_min, int) or isinstance(tau_min, bool) or not 0 <= tau_min <= tau_max:
        raise InputError(f"tau_min must be an integer between 0 and tau_max={tau_max}, got {tau_min!r}")


def group_blocks(blocks: list[Block], tau_min: int = TAU_MIN, tau_max: int = TAU_MAX) -> list[_Group]:
    """Both grouping passes over parsed blocks (no text needed: sizes come from offsets)."""
    check_taus(tau_min, tau_max)
    return _join_small(_group(blocks, tau_max), tau_min, 2 * tau_max)


def _group(blocks: list[Block], tau_max: int) -> list[_Group]:
    groups: list[_Group] = []
    cur: _Group | None = None
    for block in blocks:
        if cur is None:
            cur = _Group.of(block)
        elif block.kind == "header":
            if cur.has_body:
                groups.append(cur)
                cur = _Group.of(block)
            else:
                cur.add(block)
        elif cur.has_body and block.end - cur.start > tau_max:
            groups.append(cur)
            cur = _Group.of(block)
        else:
            cur.add(block)
        if block.kind in BULKY_KINDS and cur.size >= tau_max:
            groups.append(cur)
            cur = None
    if cur is not None:
        if not cur.has_body and groups:
            path = groups[-1].section_path
            groups[-1].join(cur)
            groups[-1].section_path = path  # header-only tail has no content of its own
        else:
            groups.append(cur)
    return groups


def _join_small(groups: list[_Group], tau_min: int, cap: int) -> list[_Group]:
    out: list[_Group] = []
    for g in groups:
        if out and out[-1].size < tau_min and g.end - out[-1].start <= cap:
            out[-1].join(g)
        else:
            out.append(g)
    if len(out) >= 2 and out[-1].size < tau_min and out[-1].end - out[-2].start <= cap:
        last = out.pop()
        out[-1].join(last)
    return out


def unique_kinds(kinds: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(kinds))


def header_led_chunks(doc: Document, *, tau_min: int = TAU_MIN, tau_max: int = TAU_MAX) -> list[Chunk]:
    """Header-led chunks of `doc`; empty or whitespace-only documents give no chunks."""
    groups = group_blocks(parse_blocks(doc.text), tau_min, tau_max)
    chunks = []
    for pos, g in enumerate(groups):
        text = doc.text[g.start : g.end]
        chunks.append(
            Chunk(
                doc_id=doc.doc_id,
                chunk_id=make_chunk_id(doc.doc_id, pos, text),
                text=text,
                spans=((g.start, g.end),),
                section_path=g.section_path,
                start_line=g.start_line,
                end_line=g.end_line,
                block_types=unique_kinds(g.kinds),
            )
        )
    return chunks
