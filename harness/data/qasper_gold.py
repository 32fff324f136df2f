"""The gold references of a Qasper annotation, by the rules of the official evaluator (allenai/qasper,
qasper_evaluator.py).

One reference per annotator, built by answer type in the evaluator's order of precedence: extractive spans
(joined by ", "), else the free-form answer, else "Yes"/"No", and "Unanswerable" for an annotation marked
unanswerable. An annotation with none of these has no usable answer: the evaluator stops with an error
there; we skip it and count it. The adapter (harness.data.qasper) records them on each question and the
answer metrics (harness.metrics.answer_f1) score against them.
"""

from __future__ import annotations

from dataclasses import dataclass

ANSWER_TYPES = ("extractive", "abstractive", "boolean", "none")
UNANSWERABLE = "Unanswerable"
FLOAT_SELECTED = "FLOAT SELECTED"  # figure and table evidence; --text-evidence-only drops it


@dataclass(frozen=True)
class Reference:
    """One annotator's gold answer for a question."""

    answer: str
    answer_type: str  # one of ANSWER_TYPES
    evidence: tuple[str, ...]


def reference_from_annotation(answer: dict, *, text_evidence_only: bool = False) -> Reference | None:
    """The reference an annotation's `answer` object gives, or None when it holds no usable answer.

    Truth tests follow the evaluator: a non-empty span list wins even if its strings are blank, and a
    free-form answer counts when it is a non-empty string."""
    if answer.get("unanswerable"):
        return Reference(UNANSWERABLE, "none", ())
    spans = answer.get("extractive_spans") or []
    if spans:
        text, kind = ", ".join(spans), "extractive"
    elif answer.get("free_form_answer"):
        text, kind = answer["free_form_answer"], "abstractive"
    elif answer.get("yes_no") is True:
        text, kind = "Yes", "boolean"
    elif answer.get("yes_no") is False:
        text, kind = "No", "boolean"
    else:
        return None
    evidence = answer.get("evidence") or []
    if text_evidence_only:
        # the evaluator tests containment, not the prefix
        evidence = [e for e in evidence if FLOAT_SELECTED not in e]
    return Reference(text, kind, tuple(evidence))
