"""A question's answer type, from its annotators' answers (the `answer-type` exploratory analysis).

Labels: extractive, abstractive, yes-no, unanswerable (the four kinds of Qasper annotation). Each annotator
with a usable answer votes for the type of that answer, classified by the official evaluator's precedence
(harness.data.qasper_gold.reference_from_annotation: unanswerable, else extractive spans, else a free-form
answer, else yes/no). The question takes the type with the most votes; a tie goes to the type earlier in
ANSWER_TYPES, the same precedence, so the result never depends on annotator order. A question without a
vote has no type (""), which the analysis counts instead of guessing.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

EXTRACTIVE, ABSTRACTIVE, YES_NO, UNANSWERABLE = "extractive", "abstractive", "yes-no", "unanswerable"
ANSWER_TYPES = (EXTRACTIVE, ABSTRACTIVE, YES_NO, UNANSWERABLE)  # also the tie order
NO_TYPE = ""

# the evaluator's reference types (harness.data.qasper_gold.ANSWER_TYPES) -> these labels
FROM_EVALUATOR = {
    "extractive": EXTRACTIVE,
    "abstractive": ABSTRACTIVE,
    "boolean": YES_NO,
    "none": UNANSWERABLE,
}


def combined_answer_type(votes: Iterable[str]) -> str:
    """The majority label among `votes` (each one of ANSWER_TYPES), ties by ANSWER_TYPES order; "" if none."""
    counts = Counter(votes)
    unknown = sorted(set(counts) - set(ANSWER_TYPES))
    if unknown:
        raise ValueError(f"answer type {unknown[0]!r} is not one of {', '.join(ANSWER_TYPES)}")
    if not counts:
        return NO_TYPE
    return min(ANSWER_TYPES, key=lambda t: (-counts[t], ANSWER_TYPES.index(t)))
