"""Qasper answer F1 and evidence F1 by the rules of the official evaluator (allenai/qasper, qasper_evaluator.py).

Gold: one reference per annotator, built by answer type in the evaluator's order of precedence:
extractive spans (joined by ", "), else the free-form answer, else "Yes"/"No", and "Unanswerable" for an
annotation marked unanswerable. An annotation with none of these has no usable answer: the evaluator stops
with an error there; we skip it and count it, and a question left with no reference is excluded by the caller.

Answer F1: SQuAD-style normalisation (lower case; punctuation, then the articles a/an/the, removed;
whitespace collapsed), token-level F1, maximum over the references. Evidence F1: set overlap of predicted
and reference evidence strings (paragraph level), maximum over the references; both empty scores 1.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

ANSWER_TYPES = ("extractive", "abstractive", "boolean", "none")
UNANSWERABLE = "Unanswerable"
FLOAT_SELECTED = "FLOAT SELECTED"  # figure and table evidence; --text-evidence-only drops it

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


@dataclass(frozen=True)
class Reference:
    """One annotator's gold answer for a question."""

    answer: str
    answer_type: str  # one of ANSWER_TYPES
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class QuestionScore:
    answer_f1: float
    answer_type: str  # the type of the first reference reaching answer_f1 (the evaluator's tie rule)
    evidence_f1: float


def normalize_answer(text: str) -> str:
    """Lower case, drop ASCII punctuation, then the articles a/an/the, and collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    """Token-level F1 of two strings after normalize_answer; 0 when they share no token (or either is empty)."""
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(gold).split()
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def evidence_f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """F1 of the distinct predicted evidence strings against one reference's; 1 when both are empty."""
    if not predicted and not gold:  # an unanswerable reference, and no evidence predicted
        return 1.0
    predicted_set, gold_set = set(predicted), set(gold)
    same = len(predicted_set & gold_set)
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted_set), same / len(gold_set)
    return 2 * precision * recall / (precision + recall)


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


def score_question(predicted_answer: str, predicted_evidence: Sequence[str],
                   references: Sequence[Reference]) -> QuestionScore:
    """Answer F1 and evidence F1 of one prediction, each the maximum over the references."""
    if not references:
        raise ValueError("references is empty; a question with no usable gold answer is excluded, not scored")
    best_f1, best_type = -1.0, ""
    for ref in references:
        f1 = token_f1(predicted_answer, ref.answer)
        if f1 > best_f1:  # strict: ties keep the earlier annotator's type, as the evaluator's stable sort does
            best_f1, best_type = f1, ref.answer_type
    best_evidence = max(evidence_f1(predicted_evidence, ref.evidence) for ref in references)
    return QuestionScore(best_f1, best_type, best_evidence)


def answer_f1(predicted_answer: str, references: Sequence[Reference]) -> float:
    """Answer F1 alone, in [0, 1]: the per-question value of the answer_f1 metric."""
    return score_question(predicted_answer, (), references).answer_f1
