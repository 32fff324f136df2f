"""The reader's context and the two model-backed answer steps (reader, nugget judge), free of study files.

The context is exactly B cl100k tokens of retrieved *source* text (Chunk.text, never indexed_text): whole
chunks in rank order, the one crossing the budget cut at a token boundary (harness.metrics.budget), the
units joined by a blank line. What the reader saw is recorded as its SHA-256, the chunk ids and the cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from harness.data.model import Chunk, Question
from harness.data.qasper_gold import Reference
from harness.files import sha256_text
from harness.llm.prompts import PromptTemplate
from harness.llm.session import LlmSession
from harness.metrics.answer_f1 import answer_f1
from harness.metrics.budget import TokenCache, fill_budget
from harness.metrics.nuggets import VERDICTS, NuggetScore, parse_verdict, score_verdicts

ANSWER_F1, NUGGET_RECALL = "answer_f1", "nugget_recall"
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
        return {
            "context_sha256": self.sha256,
            "chunk_ids": list(self.chunk_ids),
            "context_tokens": self.tokens,
            "cut": None
            if self.cut_tokens is None
            else {"chunk_id": self.chunk_ids[-1], "tokens": self.cut_tokens},
        }


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
    """One call per nugget; an unreadable reply is kept as "unparseable" (not supported, counted), not
    retried."""
    out = []
    for nugget in nuggets:
        prompt = template.render({"question": question, "nugget": nugget, "answer": answer or "(no answer)"})
        record = session.call(prompt, schema=VERDICT_SCHEMA, seed=seed)
        out.append(Verdict(nugget, parse_verdict(record.text), record.text, record.truncated))
    return out


def references(question: Question) -> list[Reference]:
    """Per-annotator gold (Qasper adapter), else the free-form `answers`; empty when the question has none."""
    if question.gold_answers:
        return [Reference(a, t, ()) for a, t in question.gold_answers]
    return [Reference(a, "abstractive", ()) for a in question.answers if a.strip()]


def answer_metric(f1: bool, budget: int) -> str:
    """The metric an answer cell's rows carry: answer_f1@<B>t or nugget_recall@<B>t."""
    return f"{ANSWER_F1 if f1 else NUGGET_RECALL}@{budget}t"


@dataclass(frozen=True)
class AnswerScore:
    value: float | None  # None: the question has nothing to score against (`dropped` says what)
    dropped: str | None = None  # a count name: dropped_no_gold / dropped_no_nuggets
    verdicts: tuple[Verdict, ...] = ()
    nuggets: NuggetScore | None = None


def score_answer(question: Question, answer: str, *, f1: bool, judge: LlmSession | None,
                 judge_template: PromptTemplate | None, judge_seed: int | None) -> AnswerScore:
    """One answer in the dataset's answer metric: answer F1 against the gold (`f1`), else the judge's strict
    nugget recall; the arms' answers and the reader's controls are scored by this one function."""
    if f1:
        gold = references(question)
        return AnswerScore(answer_f1(answer, gold)) if gold else AnswerScore(None, "dropped_no_gold")
    if judge is None or not question.nuggets:
        return AnswerScore(None, "dropped_no_nuggets")
    verdicts = judge_nuggets(judge, judge_template, question.query, question.nuggets, answer, seed=judge_seed)
    score = score_verdicts([v.verdict for v in verdicts])
    return AnswerScore(score.strict_recall, None, tuple(verdicts), score)
