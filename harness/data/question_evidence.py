"""The lab's question-evidence adapter (issue 16): a Markdown text plus a JSON list of
{question, evidence: [exact strings], split}.

Each evidence string is located verbatim (its first occurrence) as a character span; a string that is
not in the text is an error naming it. Questions get ids q001, q002, ... in file order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness.data.model import Evidence, Question
from harness.errors import InputError

SPLITS = ("train", "held-out")


@dataclass(frozen=True)
class LabQuestion:
    question: Question
    split: str  # "train" or "held-out"

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        return tuple((e.start, e.end) for e in self.question.evidence)


def lab_questions(text: str, items: Any, *, doc_id: str, path: str | None = None) -> list[LabQuestion]:
    """Located questions from the parsed JSON list; errors name the file, the record and the bad value."""
    if not isinstance(items, list):
        raise InputError(f"expected a JSON list of question records, got {type(items).__name__}", path=path)
    out: list[LabQuestion] = []
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            raise InputError(f"a record must be an object, got {item!r}", path=path, record=k)
        query, evidence, split = item.get("question"), item.get("evidence"), item.get("split")
        if not isinstance(query, str) or not query.strip():
            raise InputError(f"'question' must be a non-empty string, got {query!r}", path=path, record=k)
        if not isinstance(evidence, list) or not evidence or not all(isinstance(e, str) and e for e in evidence):
            raise InputError(f"'evidence' must be a non-empty list of non-empty strings, got {evidence!r}", path=path, record=k)
        if split not in SPLITS:
            raise InputError(f"'split' must be one of {', '.join(SPLITS)}, got {split!r}", path=path, record=k)
        located = []
        for e in evidence:
            start = text.find(e)
            if start < 0:
                raise InputError(f"evidence string not found in the document: {e!r}", path=path, record=k)
            located.append(Evidence(doc_id, e, start, start + len(e)))
        qid = f"q{k + 1:03d}"
        question = Question(qid, "lab", query, qid, split, (doc_id,), tuple(located))
        out.append(LabQuestion(question, split))
    return out


def read_lab_questions(text: str, qe_path: str, *, doc_id: str) -> list[LabQuestion]:
    try:
        with open(qe_path, encoding="utf-8") as f:
            items = json.load(f)
    except FileNotFoundError:
        raise InputError("file not found", path=qe_path) from None
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON (line {e.lineno}): {e.msg}", path=qe_path) from None
    return lab_questions(text, items, doc_id=doc_id, path=qe_path)
