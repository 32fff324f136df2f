"""`harness qasper-eval`: score Qasper answers and evidence by the official evaluator's rules."""

from __future__ import annotations

import json
import sys

HELP = "score Qasper predictions (answer F1 overall and by type, evidence F1) as the official evaluator does"

DESCRIPTION = (
    "Score predicted Qasper answers against a gold file with the rules of the official Qasper evaluator "
    "(allenai/qasper qasper_evaluator.py), the same code the study uses for answer_f1. "
    "Gold: a Qasper JSON file in the original schema ({paper_id: {..., qas: [...]}}; the Hugging Face export "
    "is read too). Predictions: JSON lines, one object per question with question_id, predicted_answer "
    "(string) and predicted_evidence (list of paragraph strings). Answer F1 is token F1 after lower-casing "
    "and removing punctuation, articles and extra whitespace, maximised over the annotators' answers; "
    "evidence F1 compares the predicted paragraph strings with each annotator's evidence, maximised "
    "likewise. "
    "A gold question without a prediction scores 0 and is counted as missing; a gold question with no "
    "usable answer is excluded and counted. Scores are fractions in [0, 1]; the text output adds points "
    "(x100)."
)


def add_arguments(parser) -> None:
    parser.description = DESCRIPTION
    parser.add_argument(
        "--gold", required=True, metavar="FILE.json", help="Qasper gold file (original schema)"
    )
    parser.add_argument("--predictions", required=True, metavar="FILE.jsonl",
                        help="JSON lines: question_id, predicted_answer, predicted_evidence")
    parser.add_argument("--text-evidence-only", action="store_true",
                        help="drop gold evidence containing 'FLOAT SELECTED' (figures and tables), as the "
                             "official --text_evidence_only does (default: keep it)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args) -> int:
    from harness.metrics.qasper_eval import evaluate, read_gold, read_predictions

    gold = read_gold(args.gold, text_evidence_only=args.text_evidence_only)
    predictions = read_predictions(args.predictions)
    result = evaluate(gold, predictions, predictions_path=args.predictions)
    if args.json:
        json.dump({"gold": str(args.gold), "predictions": str(args.predictions), **result.to_json()},
                  sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    out = sys.stdout
    out.write(f"Answer F1: {_fraction(result.answer_f1)}\n")
    out.write("Answer F1 by type:\n")
    for kind, f1 in result.answer_f1_by_type.items():
        out.write(f"  {kind:<12} {_fraction(f1)}  (questions: {result.questions_by_type[kind]})\n")
    out.write(f"Evidence F1: {_fraction(result.evidence_f1)}\n")
    out.write(f"Questions scored: {result.questions_scored}\n")
    out.write(f"Missing predictions (scored 0): {result.missing_predictions}\n")
    out.write(f"Questions excluded, no usable gold answer: {result.excluded_no_gold_answer} "
              f"(annotations without an answer: {result.annotations_without_answer}; "
              f"predictions for excluded questions: {result.predictions_for_excluded})\n")
    out.write(
        f"Gold evidence: {'text only (FLOAT SELECTED dropped)' if result.text_evidence_only else 'all'}\n"
    )
    return 0


def _fraction(value: float | None) -> str:
    return "n/a (no questions)" if value is None else f"{value:.4f} ({100 * value:.2f} points)"
