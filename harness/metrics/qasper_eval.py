"""The stand-alone Qasper scorer behind `harness qasper-eval`: gold file + predictions JSONL -> answer and
evidence F1.

Follows the official evaluator's aggregation: every gold question is scored; a question without a prediction
scores 0 for answer and evidence F1 and is counted as missing, but enters no answer-type mean; a scored
question's answer-type is the type of the reference that gave its maximum F1. Where we differ, we are
stricter and say so: a question with no usable gold answer is excluded and counted (the evaluator stops
there), and malformed, repeated or unknown prediction ids are errors naming the file and line (the
evaluator keeps the last of a repeated id and ignores unknown ones).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from harness.data.qasper import read_qasper_file
from harness.data.qasper_gold import ANSWER_TYPES, Reference, reference_from_annotation
from harness.errors import InputError
from harness.metrics.answer_f1 import score_question


@dataclass(frozen=True)
class QasperGold:
    references: dict[str, tuple[Reference, ...]]  # question id -> references, in file order
    excluded: tuple[str, ...]  # question ids with no usable gold answer
    annotations_without_answer: int
    text_evidence_only: bool


@dataclass(frozen=True)
class Prediction:
    answer: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class QasperEvaluation:
    answer_f1: float  # mean over scored questions, missing ones as 0; in [0, 1]
    answer_f1_by_type: dict[str, float | None]  # None when no predicted question has that type
    questions_by_type: dict[str, int]
    evidence_f1: float
    questions_scored: int  # gold questions with a usable answer (the denominator)
    missing_predictions: int
    excluded_no_gold_answer: int
    annotations_without_answer: int
    predictions_for_excluded: int
    text_evidence_only: bool
    per_question: dict[str, tuple[float, float]] = field(repr=False)  # qid -> (answer F1, evidence F1)

    def to_json(self) -> dict:
        return {
            "answer_f1": self.answer_f1,
            "answer_f1_by_type": dict(self.answer_f1_by_type),
            "questions_by_type": dict(self.questions_by_type),
            "evidence_f1": self.evidence_f1,
            "questions_scored": self.questions_scored,
            "missing_predictions": self.missing_predictions,
            "excluded_no_gold_answer": self.excluded_no_gold_answer,
            "annotations_without_answer": self.annotations_without_answer,
            "predictions_for_excluded": self.predictions_for_excluded,
            "text_evidence_only": self.text_evidence_only,
        }


def _check_answer(answer: object, path, where: str) -> dict:
    if not isinstance(answer, dict):
        raise InputError("`answer` must be an object", path=path, record=where)
    spans = answer.get("extractive_spans") or []
    evidence = answer.get("evidence") or []
    for name, values in (("extractive_spans", spans), ("evidence", evidence)):
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InputError(f"`{name}` must be a list of strings", path=path, record=where)
    if not isinstance(answer.get("free_form_answer") or "", str):
        raise InputError("`free_form_answer` must be a string", path=path, record=where)
    return answer


def gold_from_papers(papers: dict[str, dict], *, text_evidence_only: bool = False, path=None) -> QasperGold:
    """References per question from paper records in the original Qasper schema."""
    references: dict[str, tuple[Reference, ...]] = {}
    excluded: list[str] = []
    without_answer = 0
    seen: set[str] = set()
    for paper_id, paper in papers.items():
        qas = paper.get("qas") if isinstance(paper, dict) else None
        if not isinstance(qas, list):
            raise InputError("paper record needs a `qas` list", path=path, record=paper_id)
        for qa in qas:
            qid = qa.get("question_id") if isinstance(qa, dict) else None
            if not isinstance(qid, str) or not qid:
                raise InputError("question without a string `question_id`", path=path, record=paper_id)
            if qid in seen:
                raise InputError(f"question id {qid!r} appears twice", path=path, record=paper_id)
            seen.add(qid)
            refs = []
            for annotation in qa.get("answers") or []:
                answer = _check_answer(annotation.get("answer") if isinstance(annotation, dict) else None,
                                       path, f"{paper_id} question {qid}")
                ref = reference_from_annotation(answer, text_evidence_only=text_evidence_only)
                if ref is None:
                    without_answer += 1
                else:
                    refs.append(ref)
            if refs:
                references[qid] = tuple(refs)
            else:
                excluded.append(qid)
    return QasperGold(references, tuple(excluded), without_answer, text_evidence_only)


def read_gold(path: str | Path, *, text_evidence_only: bool = False) -> QasperGold:
    """References from a Qasper file (original schema, or the Hugging Face export the adapter also reads)."""
    return gold_from_papers(read_qasper_file(path), text_evidence_only=text_evidence_only, path=path)


def read_predictions(path: str | Path) -> dict[str, Prediction]:
    """question id -> prediction, from JSON lines with question_id, predicted_answer, predicted_evidence.

    Blank lines are skipped; anything else that is not such an object is an error naming the line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError("predictions file not found", path=path) from None
    except UnicodeDecodeError as e:
        raise InputError(f"predictions file is not UTF-8: {e}", path=path) from None
    predictions: dict[str, Prediction] = {}
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"not valid JSON: {e.msg}", path=path, record=where) from None
        if not isinstance(record, dict):
            raise InputError(f"expected a JSON object, got {type(record).__name__}", path=path, record=where)
        missing = [k for k in ("question_id", "predicted_answer", "predicted_evidence") if k not in record]
        if missing:
            raise InputError(f"missing field(s) {', '.join(missing)}", path=path, record=where)
        qid, answer, evidence = (
            record["question_id"],
            record["predicted_answer"],
            record["predicted_evidence"],
        )
        if not isinstance(qid, str) or not qid:
            raise InputError(
                f"`question_id` must be a non-empty string, got {qid!r}", path=path, record=where
            )
        if not isinstance(answer, str):
            raise InputError(f"`predicted_answer` must be a string, got {type(answer).__name__}",
                             path=path, record=where)
        if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
            raise InputError("`predicted_evidence` must be a list of strings", path=path, record=where)
        if qid in predictions:
            raise InputError(f"question_id {qid!r} repeats line {first_line[qid]}", path=path, record=where)
        predictions[qid] = Prediction(answer, tuple(evidence))
        first_line[qid] = number
    return predictions


def evaluate(
    gold: QasperGold, predictions: dict[str, Prediction], *, predictions_path=None
) -> QasperEvaluation:
    """Score predictions against gold (module docstring). An id in neither the scored nor the excluded
    gold questions is an error: it usually means predictions for another split."""
    excluded = set(gold.excluded)
    known = set(gold.references) | excluded
    unknown = [qid for qid in predictions if qid not in known]
    if unknown:
        raise InputError(f"{len(unknown)} prediction(s) for question ids not in the gold file, first "
                         f"{unknown[0]!r}", path=predictions_path)
    answer_f1s, evidence_f1s = [], []
    by_type: dict[str, list[float]] = {t: [] for t in ANSWER_TYPES}
    per_question: dict[str, tuple[float, float]] = {}
    missing = 0
    for qid, references in gold.references.items():
        prediction = predictions.get(qid)
        if prediction is None:
            missing += 1
            per_question[qid] = (0.0, 0.0)
        else:
            score = score_question(prediction.answer, prediction.evidence, references)
            by_type[score.answer_type].append(score.answer_f1)
            per_question[qid] = (score.answer_f1, score.evidence_f1)
        answer_f1s.append(per_question[qid][0])
        evidence_f1s.append(per_question[qid][1])
    return QasperEvaluation(
        answer_f1=_mean(answer_f1s) or 0.0,
        answer_f1_by_type={t: _mean(v) for t, v in by_type.items()},
        questions_by_type={t: len(v) for t, v in by_type.items()},
        evidence_f1=_mean(evidence_f1s) or 0.0,
        questions_scored=len(gold.references),
        missing_predictions=missing,
        excluded_no_gold_answer=len(gold.excluded),
        annotations_without_answer=gold.annotations_without_answer,
        predictions_for_excluded=sum(1 for qid in predictions if qid in excluded),
        text_evidence_only=gold.text_evidence_only,
        per_question=per_question,
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
