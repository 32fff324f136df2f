"""Fixed-window chunkers (docs/design.md, Arms): F512c, F256t and FL.

Every window is an exact slice doc.text[start:end] with spans ((start, end),). Character windows
tile the text; token windows are token-index ranges of cl100k_base over the whole document
(`encode_ordinary`: special-token strings in a document are plain text), mapped to characters
through byte offsets. cl100k can split a multi-byte character across tokens; a window boundary
that falls inside a character moves to the end of that character, so the partial character goes
to the earlier window. Windows whose text is whitespace only are dropped (an empty or blank
document gives no chunks); positions count the windows kept.

section_path is the path where the window's content starts; block_types are the kinds of the
blocks the window overlaps (locate.py).
"""

from __future__ import annotations

import statistics

import numpy as np

from harness.chunking.locate import chunks_from_slices
from harness.config.chunking import F256T_STRIDE, F256T_TOKENS, F512C_CHARS  # defaults live in the schema
from harness.data.model import Chunk, Document
from harness.errors import InputError
from harness.tokens import cl100k


def _positive(name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(f"{name} must be a positive integer, got {value!r}")
    return value


def char_windows(text: str, size: int) -> list[tuple[int, int]]:
    _positive("chars", size)
    return [(s, min(s + size, len(text))) for s in range(0, len(text), size)]


def token_boundaries(text: str) -> list[int]:
    """Character offset of every cl100k token boundary: n_tokens + 1 non-decreasing offsets."""
    enc = cl100k()
    tokens = enc.encode_ordinary(text)
    byte_ends = np.cumsum([0] + [len(b) for b in enc.decode_tokens_bytes(tokens)])
    data = text.encode("utf-8")
    if len(data) == len(text):  # ASCII: bytes are characters
        return byte_ends.tolist()
    # chars starting before byte b = lead bytes in data[:b]; mid-character b rounds up to the next char
    is_lead = (np.frombuffer(data, dtype=np.uint8) & 0xC0) != 0x80
    chars_before = np.concatenate(([0], np.cumsum(is_lead)))
    return chars_before[byte_ends].tolist()


def token_windows(text: str, size: int, stride: int) -> list[tuple[int, int]]:
    """[start, end) character slices of token windows [k*stride, k*stride + size); the last may be shorter."""
    _positive("tokens", size)
    _positive("stride", stride)
    if stride > size:
        raise InputError(f"stride must not exceed the window length ({size} tokens), got {stride}")
    bounds = token_boundaries(text)
    n = len(bounds) - 1
    slices = []
    first = 0
    while first < n:
        last = min(first + size, n)
        slices.append((bounds[first], bounds[last]))
        if last == n:
            break
        first += stride
    return [(s, e) for s, e in slices if e > s]


def f512c_chunks(doc: Document, *, chars: int = F512C_CHARS) -> list[Chunk]:
    """512-character windows, no overlap."""
    return chunks_from_slices(doc.doc_id, doc.text, char_windows(doc.text, chars))


def f256t_chunks(doc: Document, *, tokens: int = F256T_TOKENS, stride: int = F256T_STRIDE) -> list[Chunk]:
    """256-token windows every 224 tokens (32 tokens of overlap)."""
    return chunks_from_slices(doc.doc_id, doc.text, token_windows(doc.text, tokens, stride))


def fl_chunks(doc: Document, *, tokens: int) -> list[Chunk]:
    """Token windows of `tokens` tokens (the median S chunk length), no overlap."""
    return chunks_from_slices(doc.doc_id, doc.text, token_windows(doc.text, tokens, tokens))


def median_token_length(chunks: list[Chunk]) -> int:
    """The FL window length: the lower median of the chunks' cl100k lengths (an observed length)."""
    if not chunks:
        raise InputError("cannot take the median S chunk length: there are no S chunks")
    enc = cl100k()
    return max(1, statistics.median_low(len(enc.encode_ordinary(c.text)) for c in chunks))
