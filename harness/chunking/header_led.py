"""Header-led chunking (docs/design.md, Arms): the boundaries shared by S, S+T, E, E-K, CR, PF.

The chunks are those of the published reference (mdkeychunker 0.4.2 `MarkdownChunker`, recorded as
`chunking.header_led_reference` in the frozen config), byte for byte, so the study's S counts replicate.

What a chunk holds:
- `text` is the reference's text: its blocks' texts (lines joined by "\\n") joined by one blank line.
- `spans` is the single source range from the first block's first character to the last block's last
  character. `doc.text[span]` holds the same blocks with the source's own blank lines and line
  endings between and inside them, so it equals `text` up to whitespace between blocks and line
  endings. Metrics match word n-grams, which are blind to that difference.

Pass 1 (grouping); `size` is the sum of the chunk's block text lengths (separators not counted):
- a header closes a chunk that has body, with no size condition;
- any other block closes it when the chunk has body and size + block length > tau_max;
- after a code block, table, front matter or blockquote is added, the chunk closes when size >= tau_max;
- trailing header-only content joins the last chunk, with no cap.
Pass 2 (small chunks), on text lengths (separators counted):
- while the previous chunk's text is under tau_min and the two lengths sum to at most 2 x tau_max,
  the next chunk joins it; a blank chunk is dropped;
- afterwards a last chunk still under tau_min joins the one before it, under the same cap.
A joined chunk takes the section of its longer part (the earlier on a tie), falling back to the
other part's when that one is empty. A chunk's own section is its first body block's non-empty
section path, else its first non-empty one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.chunking.blocks import BULKY_KINDS, Block, parse_blocks
from harness.config.chunking import TAU_MAX, TAU_MIN  # the defaults live in the config schema, once
from harness.data.model import Chunk, Document, make_chunk_id
from harness.errors import InputError

SEPARATOR = "\n\n"


@dataclass
class _Piece:
    """A chunk under construction: its blocks, in order, and its text and section."""

    blocks: list[Block] = field(default_factory=list)
    text: str = ""
    section_path: str = ""

    @classmethod
    def of(cls, blocks: list[Block]) -> "_Piece":
        body_paths = [b.section_path for b in blocks if b.kind != "header" and b.section_path]
        any_paths = [b.section_path for b in blocks if b.section_path]
        path = (body_paths or any_paths or [""])[0]
        return cls(list(blocks), SEPARATOR.join(b.text for b in blocks), path)

    def joined(self, other: "_Piece") -> "_Piece":
        major = self if len(self.text) >= len(other.text) else other
        path = major.section_path or self.section_path or other.section_path
        return _Piece(self.blocks + other.blocks, self.text + SEPARATOR + other.text, path)


def check_taus(tau_min: int, tau_max: int) -> None:
    if not isinstance(tau_max, int) or isinstance(tau_max, bool) or tau_max < 1:
        raise InputError(f"tau_max must be a positive integer (characters), got {tau_max!r}")
    if not isinstance(tau_min, int) or isinstance(tau_min, bool) or not 0 <= tau_min <= tau_max:
        raise InputError(f"tau_min must be an integer between 0 and tau_max={tau_max}, got {tau_min!r}")


def group_blocks(blocks: list[Block], tau_min: int = TAU_MIN, tau_max: int = TAU_MAX) -> list[_Piece]:
    """Both grouping passes over parsed blocks."""
    check_taus(tau_min, tau_max)
    return _join_small(_group(blocks, tau_max), tau_min, 2 * tau_max)


def _group(blocks: list[Block], tau_max: int) -> list[_Piece]:
    pieces: list[_Piece] = []
    current: list[Block] = []
    size = 0
    has_body = False
    for block in blocks:
        is_body = block.kind != "header"
        if has_body and (not is_body or size + len(block.text) > tau_max):
            pieces.append(_Piece.of(current))
            current, size, has_body = [], 0, False
        current.append(block)
        size += len(block.text)
        has_body = has_body or is_body
        if block.kind in BULKY_KINDS and size >= tau_max:
            pieces.append(_Piece.of(current))
            current, size, has_body = [], 0, False
    if current:
        tail = _Piece.of(current)
        if not has_body and pieces:
            pieces[-1] = pieces[-1].joined(tail)  # an empty last section travels with the chunk before
        else:
            pieces.append(tail)
    return pieces


def _join_small(pieces: list[_Piece], tau_min: int, cap: int) -> list[_Piece]:
    out: list[_Piece] = []
    for p in pieces:
        if not p.text.strip():
            continue
        if out and len(out[-1].text) < tau_min and len(out[-1].text) + len(p.text) <= cap:
            out[-1] = out[-1].joined(p)
        else:
            out.append(p)
    if len(out) >= 2 and len(out[-1].text) < tau_min and len(out[-2].text) + len(out[-1].text) <= cap:
        last = out.pop()
        out[-1] = out[-1].joined(last)
    return out


def unique_kinds(kinds: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(kinds))


def header_led_chunks(doc: Document, *, tau_min: int = TAU_MIN, tau_max: int = TAU_MAX) -> list[Chunk]:
    """Header-led chunks of `doc`; empty or whitespace-only documents give no chunks."""
    pieces = group_blocks(parse_blocks(doc.text), tau_min, tau_max)
    chunks = []
    for pos, p in enumerate(pieces):
        first, last = p.blocks[0], p.blocks[-1]
        chunks.append(
            Chunk(
                doc_id=doc.doc_id,
                chunk_id=make_chunk_id(doc.doc_id, pos, p.text),
                text=p.text,
                spans=((first.start, last.end),),
                section_path=p.section_path,
                start_line=first.start_line,
                end_line=last.end_line,
                block_types=unique_kinds([b.kind for b in p.blocks]),
            )
        )
    return chunks
