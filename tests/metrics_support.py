"""Helpers for the metrics tests: a transparent tokenizer and small record builders."""

from __future__ import annotations

import re
from pathlib import Path

from harness.data.model import Chunk, Evidence, Question
from harness.metrics.budget import TokenCache
from harness.metrics.registry import ScoringCache

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


class WordEncoding:
    """One token per whitespace-separated word with its trailing whitespace, so counts are obvious by eye.

    Implements the methods TokenCache uses (encode_ordinary, decode, decode_bytes); counts encodes.
    """

    _piece = re.compile(r"\s+|\S+\s*")

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._pieces: list[str] = []
        self.encode_calls = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.encode_calls += 1
        out = []
        for piece in self._piece.findall(text):
            if piece not in self._ids:
                self._ids[piece] = len(self._pieces)
                self._pieces.append(piece)
            out.append(self._ids[piece])
        return out

    def decode(self, ids: list[int]) -> str:
        return "".join(self._pieces[i] for i in ids)

    def decode_bytes(self, ids: list[int]) -> bytes:
        return self.decode(ids).encode("utf-8")


def word_cache() -> ScoringCache:
    return ScoringCache(tokens=TokenCache(WordEncoding()))


def chunk(text: str, position: int = 0, doc_id: str = "doc") -> Chunk:
    return Chunk(
        doc_id=doc_id,
        chunk_id=f"{doc_id}#{position:04d}",
        text=text,
        spans=((0, len(text)),),
        section_path="",
        start_line=1,
        end_line=1,
        block_types=("paragraph",),
        indexed_text="IGNORED PREFIX " + text,
    )


def chunks(*texts: str) -> list[Chunk]:
    return [chunk(t, i) for i, t in enumerate(texts)]


def question(*evidence: str, qid: str = "q1", unlocated: tuple[str, ...] = ()) -> Question:
    items = [Evidence("doc", t, 0, len(t)) for t in evidence] + [Evidence("doc", t) for t in unlocated]
    return Question(
        qid=qid, dataset="d", query="?", cluster="c1", stratum="", scope=("doc",), evidence=tuple(items)
    )


def words_seq(prefix: str, n: int) -> list[str]:
    """["e1", ..., "en"] for prefix "e"."""
    return [f"{prefix}{i}" for i in range(1, n + 1)]
