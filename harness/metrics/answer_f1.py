"""Qasper answer F1 and evidence F1 by the rules of the official evaluator (allenai/qasper,
qasper_evaluator.py).

Gold: one reference per annotator (harness.data.qasper_gold); a question with no reference is excluded by
the caller.

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

from harness.data.qasper_gold import Reference

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


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
    """Token-level F1 of two strings after normalize_answer; 0 when they share no token (or either is
    empty)."""
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


def score_question(predicted_answer: str, predicted_evidence: Sequence[str],
                   references: Sequence[Reference]) -> QuestionScore:
    """Answer F1 and evidence F1 of one prediction, each the maximum over the references."""
    if not references:
        raise ValueError("references is empty; a question with no usable gold answer is excluded, not scored")
    best_f1, best_type = -1.0, ""
    for ref in references:
        f1 = token_f1(predicted_answer, ref.answer)
        if (
            f1 > best_f1
        ):  # strict: ties keep the earlier annotator's type, as the evaluator's stable sort does
            best_f1, best_type = f1, ref.answer_type
    best_evidence = max(evidence_f1(predicted_evidence, ref.evidence) for ref in references)
    return QuestionScore(best_f1, best_type, best_evidence)


def answer_f1(predicted_answer: str, references: Sequence[Reference]) -> float:
    """Answer F1 alone, in [0, 1]: the per-question value of the answer_f1 metric."""
    return score_question(predicted_answer, (), references).answer_f1
