"""The reader's context and the two model-backed answer steps (reader, nugget judge), free of study files.

The context is exactly B cl100k tokens of retrieved *source* text (Chunk.text, never indexed_text): whole
chunks in rank order, the one crossing the budget cut at a token boundary (harness.metrics.budget), the
units joined by a blank line. What the reader saw is recorded as its SHA-256, the chunk ids and the cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from harness.data.model import Chunk
from harness.files import sha256_text
from harness.llm.prompts import PromptTemplate
from harness.llm.session import LlmSession
from harness.metrics.budget import TokenCache, fill_budget
from harness.metrics.nuggets import VERDICTS, parse_verdict

UNIT_SEPARATOR = "\n\n"
NO_CONTEXT = "(nothing was retrieved)"
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
VERDICT_SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": list(VERDICTS)}},
                  "required": ["verdict"]}


@dataclass(frozen=True)
class ReaderContext:
    text: str
    chunk_ids: tuple[str, ...]  # rank order; the last one is cut when `cut_tokens` is set
    tokens: int  # source tokens given (B, or fewer when the ranking holds less)
    cut_tokens: int | None  # tokens kept of the last chunk when it was cut

    @property
    def sha256(self) -> str:
        return sha256_text(self.text)

    def to_json(self) -> dict[str, Any]:
        return {"context_sha256": self.sha256, "chunk_ids": list(self.chunk_ids), "context_tokens": self.tokens,
                "cut": None if self.cut_tokens is None else {"chunk_id": self.chunk_ids[-1], "tokens": self.cut_tokens}}


def reader_context(ranked: Sequence[Chunk], budget: int, tokens: TokenCache) -> ReaderContext:
    units = fill_budget(ranked, budget, tokens)
    cut = units[-1].n_tokens if units and units[-1].truncated else None
    return ReaderContext(UNIT_SEPARATOR.join(u.text for u in units), tuple(u.chunk_id for u in units),
                         sum(u.n_tokens for u in units), cut)


@dataclass(frozen=True)
class ReaderAnswer:
    answer: str  # "" when every attempt failed
    failed: bool
    attempts: int
    truncated: bool  # the prompt was cut to the model's context window


def _answer_object(value: Any) -> dict | None:
    return value if isinstance(value, dict) and isinstance(value.get("answer"), str) else None


def ask_reader(session: LlmSession, template: PromptTemplate, question: str, context: ReaderContext, *,
               seeds: Sequence[int]) -> ReaderAnswer:
    prompt = template.render({"question": question, "context": context.text or NO_CONTEXT})
    result = session.call_json(prompt, schema=ANSWER_SCHEMA, seeds=seeds, validate=_answer_object)
    if result.value is None:
        return ReaderAnswer("", True, result.attempts, result.truncated)
    return ReaderAnswer(result.value["answer"].strip(), False, result.attempts, result.truncated)


@dataclass(frozen=True)
class Verdict:
    nugget: str
    verdict: str  # a VERDICTS label or "unparseable"
    raw: str
    truncated: bool


def judge_nuggets(session: LlmSession, template: PromptTemplate, question: str, nuggets: Sequence[str],
                  answer: str, *, seed: int) -> list[Verdict]:
    """One call per nugget; an unreadable reply is kept as "unparseable" (not supported, counted), not retried."""
    out = []
    for nugget in nuggets:
        prompt = template.render({"question": question, "nugget": nugget, "answer": answer or "(no answer)"})
        record = session.call(prompt, schema=VERDICT_SCHEMA, seed=seed)
        out.append(Verdict(nugget, parse_verdict(record.text), record.text, record.truncated))
    return out
