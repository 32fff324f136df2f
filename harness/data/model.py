"""The one schema every dataset is converted into (docs/design.md, Data model).

Rows are small frozen records whose fields are exactly what the output files hold.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from harness.files import sha256_text


@dataclass(frozen=True)
class Document:
    doc_id: str  # globally unique, e.g. "qasper/1909.00694", "laravel/blade.md"
    domain: str
    text: str  # Markdown
    provenance: dict[str, Any] = field(default_factory=dict)  # source, commit, licence


@dataclass(frozen=True)
class Evidence:
    """One gold evidence item: the string and where it was located (start/end None if not found)."""

    doc_id: str
    text: str
    start: int | None = None
    end: int | None = None
    annotators: tuple[int, ...] = ()  # which annotations named it (Qasper); empty otherwise

    @property
    def located(self) -> bool:
        return self.start is not None


@dataclass(frozen=True)
class Question:
    qid: str
    dataset: str
    query: str
    cluster: str  # resampling unit
    stratum: str  # resampling stratum ("" when unstratified)
    scope: tuple[str, ...]  # doc_ids this question searches, sorted
    evidence: tuple[Evidence, ...]
    answers: tuple[str, ...] = ()
    nuggets: tuple[str, ...] = ()
    reference_answer: str = ""  # one accepted answer, for the nugget judge's acceptance controls
    # per-annotator gold (answer, answer_type) by the Qasper evaluator's rules, unanswerable included;
    # empty: answer F1 uses `answers` as free-form references
    gold_answers: tuple[tuple[str, str], ...] = ()
    # extractive / abstractive / yes-no / unanswerable (harness.data.answer_types); "" when the data give
    # none, and then left out of to_json so a dataset without answer types keeps its canonical form
    answer_type: str = ""

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["scope"] = list(self.scope)
        d["evidence"] = [asdict(e) | {"annotators": list(e.annotators)} for e in self.evidence]
        d["answers"] = list(self.answers)
        d["nuggets"] = list(self.nuggets)
        d["gold_answers"] = [list(g) for g in self.gold_answers]
        if not self.answer_type:
            del d["answer_type"]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Question":
        return cls(
            qid=d["qid"],
            dataset=d["dataset"],
            query=d["query"],
            cluster=d["cluster"],
            stratum=d.get("stratum", ""),
            scope=tuple(d["scope"]),
            evidence=tuple(
                Evidence(e["doc_id"], e["text"], e.get("start"), e.get("end"), tuple(e.get("annotators", ())))
                for e in d["evidence"]
            ),
            answers=tuple(d.get("answers", ())),
            nuggets=tuple(d.get("nuggets", ())),
            reference_answer=d.get("reference_answer", ""),
            gold_answers=tuple((str(a), str(t)) for a, t in d.get("gold_answers", ())),
            answer_type=d.get("answer_type", ""),
        )


GENERATED_FIELDS = (
    "title",
    "summary",
    "keywords",
    "entities",
    "questions",
    "key",
    "related_keys",
    "context",
    "llm_failed",
)


@dataclass(frozen=True)
class Chunk:
    """A retrievable unit. `text` is source text (what metrics match); `indexed_text` is what an arm
    indexes."""

    doc_id: str
    chunk_id: str  # doc_id + position + content hash, unique across the corpus
    text: str
    spans: tuple[tuple[int, int], ...]  # character offsets into the document, half-open
    section_path: str
    start_line: int  # 1-based, inclusive
    end_line: int
    block_types: tuple[str, ...]
    indexed_text: str = ""
    generated: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        d = {
            "doc_id": self.doc_id,
            "chunk_id": self.chunk_id,
            "text": self.text,
            "spans": [list(s) for s in self.spans],
            "section_path": self.section_path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "block_types": list(self.block_types),
            "indexed_text": self.indexed_text,
        }
        if self.generated is not None:
            d["generated"] = self.generated
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Chunk":
        return cls(
            doc_id=d["doc_id"],
            chunk_id=d["chunk_id"],
            text=d["text"],
            spans=tuple((int(a), int(b)) for a, b in d["spans"]),
            section_path=d["section_path"],
            start_line=int(d["start_line"]),
            end_line=int(d["end_line"]),
            block_types=tuple(d["block_types"]),
            indexed_text=d.get("indexed_text", ""),
            generated=d.get("generated"),
        )


def make_chunk_id(doc_id: str, position: int, text: str) -> str:
    """doc_id + zero-based position + 8 hex digits of the text's SHA-256."""
    return f"{doc_id}#{position:04d}-{sha256_text(text)[:8]}"
