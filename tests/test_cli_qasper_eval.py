"""`harness qasper-eval` on a hand-worked fixture, on bad predictions files, and on the real qasper-train10
file."""

import json
from collections import Counter

import pytest

from harness.cli.main import main
from metrics_support import SHARED_DATA

TRAIN10 = SHARED_DATA / "qasper-train10" / "qasper-train10.original-schema.json"


def ann(*, unanswerable=False, spans=(), free="", yes_no=None, evidence=()):
    return {
        "answer": {
            "unanswerable": unanswerable,
            "extractive_spans": list(spans),
            "free_form_answer": free,
            "yes_no": yes_no,
            "evidence": list(evidence),
            "highlighted_evidence": [],
        },
        "annotation_id": "a",
        "worker_id": "w",
    }


def qa(qid, *annotations):
    return {"question": f"question {qid}?", "question_id": qid, "answers": list(annotations)}


def paper(*qas):
    return {"title": "T", "abstract": "A.", "full_text": [], "qas": list(qas)}


GOLD = {
    "P1": paper(
        qa("q1", ann(spans=["BiLSTM", "CRF"], evidence=["para A"]),
           ann(free="a BiLSTM tagger", evidence=["para A", "FLOAT SELECTED: Table 2"])),
        qa("q2", ann(yes_no=False, evidence=["para B"])),
        qa("q3", ann(unanswerable=True), ann(free="Not stated in the paper")),
    ),
    "P2": paper(
        qa("q4", ann(free="They use 10,000 tweets", evidence=["FLOAT SELECTED: Table 1", "para C"])),
        qa("q5", ann(spans=["Twitter"], evidence=["para E"])),
        qa("q6", ann()),  # an annotation with no answer at all
        qa("q7"),  # no annotation
    ),
}

PREDICTIONS = [
    {"question_id": "q1", "predicted_answer": "BiLSTM", "predicted_evidence": ["para A"]},
    {"question_id": "q2", "predicted_answer": "No", "predicted_evidence": []},
    {"question_id": "q3", "predicted_answer": "Unanswerable", "predicted_evidence": []},
    {
        "question_id": "q4",
        "predicted_answer": "10000 tweets were used",
        "predicted_evidence": ["para C", "para D"],
    },
    # q5: no prediction
    {"question_id": "q6", "predicted_answer": "anything", "predicted_evidence": []},
]

# Worked by hand (normalised tokens in brackets):
# q1  pred [bilstm]; vs "BiLSTM, CRF" [bilstm, crf]: P 1, R 1/2, F1 2/3; vs "a BiLSTM tagger" [bilstm,
# tagger]:
#     also 2/3, a tie, so the first annotator's type: extractive. Evidence {para A} vs {para A}: 1.
# q2  "No" vs gold "No": 1, boolean. Evidence {} vs {para B}: 0.
# q3  "Unanswerable" vs "Unanswerable": 1, type none. Evidence {} vs the unanswerable reference's {}: 1.
# q4  pred [10000, tweets, were, used] vs [they, use, 10000, tweets]: common 2, P 1/2, R 1/2, F1 1/2,
# abstractive.
#     Evidence {para C, para D} vs {FLOAT.., para C}: P 1/2, R 1/2, F1 1/2;
#     with --text-evidence-only the gold is {para C}: P 1/2, R 1, F1 2/3.
# q5  missing: 0 and 0, in no type.      q6, q7: excluded (no usable answer); q6's one annotation counted.
# Answer F1 = (2/3 + 1 + 1 + 1/2 + 0) / 5 = 19/30;  evidence F1 = (1 + 0 + 1 + 1/2 + 0) / 5 = 1/2,
# text evidence only: (1 + 0 + 1 + 2/3 + 0) / 5 = 8/15.
# By type: extractive 2/3 (1 question), abstractive 1/2 (1), boolean 1 (1), none 1 (1).


def write_inputs(tmp_path, gold=GOLD, predictions=PREDICTIONS, lines=None):
    gold_path = tmp_path / "gold.json"
    gold_path.write_text(json.dumps(gold))
    pred_path = tmp_path / "predictions.jsonl"
    pred_path.write_text(
        "\n".join(lines if lines is not None else [json.dumps(p) for p in predictions]) + "\n"
    )
    return gold_path, pred_path


def run_json(capsys, gold_path, pred_path, *extra):
    assert (
        main(["qasper-eval", "--gold", str(gold_path), "--predictions", str(pred_path), "--json", *extra])
        == 0
    )
    return json.loads(capsys.readouterr().out)


def test_fixture_numbers_worked_by_hand(tmp_path, capsys):
    out = run_json(capsys, *write_inputs(tmp_path))
    assert out["answer_f1"] == pytest.approx(19 / 30)
    assert out["evidence_f1"] == pytest.approx(1 / 2)
    assert out["answer_f1_by_type"] == pytest.approx(
        {"extractive": 2 / 3, "abstractive": 1 / 2, "boolean": 1.0, "none": 1.0}
    )
    assert out["questions_by_type"] == {"extractive": 1, "abstractive": 1, "boolean": 1, "none": 1}
    assert (out["questions_scored"], out["missing_predictions"]) == (5, 1)
    assert (
        out["excluded_no_gold_answer"],
        out["annotations_without_answer"],
        out["predictions_for_excluded"],
    ) == (2, 1, 1)
    assert out["text_evidence_only"] is False


def test_text_evidence_only_changes_only_evidence_f1(tmp_path, capsys):
    out = run_json(capsys, *write_inputs(tmp_path), "--text-evidence-only")
    assert out["evidence_f1"] == pytest.approx(8 / 15)
    assert out["answer_f1"] == pytest.approx(19 / 30)
    assert out["text_evidence_only"] is True


def test_text_output_names_every_number(tmp_path, capsys):
    gold_path, pred_path = write_inputs(tmp_path)
    assert main(["qasper-eval", "--gold", str(gold_path), "--predictions", str(pred_path)]) == 0
    text = capsys.readouterr().out
    assert "Answer F1: 0.6333 (63.33 points)" in text
    assert "extractive   0.6667 (66.67 points)  (questions: 1)" in text
    assert "Evidence F1: 0.5000 (50.00 points)" in text
    assert "Missing predictions (scored 0): 1" in text
    assert "Questions excluded, no usable gold answer: 2" in text


def test_no_predictions_at_all_scores_zero_and_types_are_empty(tmp_path, capsys):
    out = run_json(capsys, *write_inputs(tmp_path, lines=[""]))
    assert (out["answer_f1"], out["evidence_f1"], out["missing_predictions"]) == (0.0, 0.0, 5)
    assert out["answer_f1_by_type"] == dict.fromkeys(["extractive", "abstractive", "boolean", "none"])


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", r"predictions\.jsonl \(record line 2\): not valid JSON"),
        ('["q1", "x", []]', r"\(record line 2\): expected a JSON object, got list"),
        (
            '{"question_id": "q2", "predicted_answer": "No"}',
            r"\(record line 2\): missing field\(s\) predicted_evidence",
        ),
        (
            '{"question_id": "q2", "predicted_answer": 1, "predicted_evidence": []}',
            r"line 2\): `predicted_answer` must be a string",
        ),
        (
            '{"question_id": "q2", "predicted_answer": "No", "predicted_evidence": "para B"}',
            r"line 2\): `predicted_evidence` must be a list of strings",
        ),
        (
            '{"question_id": "q1", "predicted_answer": "No", "predicted_evidence": []}',
            r"line 2\): question_id 'q1' repeats line 1",
        ),
        (
            '{"question_id": "zz", "predicted_answer": "No", "predicted_evidence": []}',
            r"question ids not in the gold file, first 'zz'",
        ),
    ],
)
def test_bad_prediction_lines_are_errors_naming_file_and_line(tmp_path, capsys, line, message):
    gold_path, pred_path = write_inputs(tmp_path, lines=[json.dumps(PREDICTIONS[0]), line])
    assert main(["qasper-eval", "--gold", str(gold_path), "--predictions", str(pred_path)]) == 1
    err = capsys.readouterr().err
    assert str(pred_path) in err
    assert __import__("re").search(message, err), err


def test_missing_predictions_file_is_an_error(tmp_path, capsys):
    gold_path, _ = write_inputs(tmp_path)
    assert main(["qasper-eval", "--gold", str(gold_path), "--predictions", str(tmp_path / "nope.jsonl")]) == 1
    assert "predictions file not found" in capsys.readouterr().err


# --- the real qasper-train10 file ------------------------------------------------------------------

needs_data = pytest.mark.skipif(not TRAIN10.is_file(), reason=f"shared data not present: {TRAIN10}")


def first_annotator_predictions(gold: dict) -> list[dict]:
    """Each question answered with its first annotator's answer string and evidence, built here
    independently."""
    out = []
    for record in gold.values():
        for q in record["qas"]:
            a = q["answers"][0]["answer"]
            if a["unanswerable"]:
                text = "Unanswerable"
            elif a["extractive_spans"]:
                text = " ".join(a["extractive_spans"])  # a space join scores as the evaluator's ", " join
            else:
                text = a["free_form_answer"] or {True: "Yes", False: "No"}[a["yes_no"]]
            out.append({"question_id": q["question_id"], "predicted_answer": text,
                        "predicted_evidence": [] if a["unanswerable"] else a["evidence"]})
    return out


def first_annotator_type(a: dict) -> str:
    if a["unanswerable"]:
        return "none"
    return "extractive" if a["extractive_spans"] else "abstractive" if a["free_form_answer"] else "boolean"


@needs_data
def test_first_annotator_answers_score_100_on_qasper_train10(tmp_path, capsys):
    gold = json.loads(TRAIN10.read_text())
    predictions = first_annotator_predictions(gold)
    assert len(predictions) == 51  # PROVENANCE.md: 51 questions, each with at least one annotation
    pred_path = tmp_path / "first.jsonl"
    pred_path.write_text("".join(json.dumps(p) + "\n" for p in predictions))
    out = run_json(capsys, TRAIN10, pred_path)
    # A prediction equal to a reference scores F1 1 (every reference here has a word left after
    # normalisation), and the first annotator wins every tie, so each question counts under its type.
    assert out["answer_f1"] == 1.0 and out["evidence_f1"] == 1.0
    assert (out["questions_scored"], out["missing_predictions"], out["excluded_no_gold_answer"]) == (51, 0, 0)
    expected_types = Counter(
        first_annotator_type(q["answers"][0]["answer"]) for r in gold.values() for q in r["qas"]
    )
    assert out["questions_by_type"] == dict(expected_types)
    assert out["questions_by_type"] == {"extractive": 26, "abstractive": 14, "boolean": 5, "none": 6}
    assert all(v == 1.0 for v in out["answer_f1_by_type"].values())


@needs_data
def test_half_the_predictions_missing_on_qasper_train10(tmp_path, capsys):
    gold = json.loads(TRAIN10.read_text())
    predictions = first_annotator_predictions(gold)[:25]
    pred_path = tmp_path / "half.jsonl"
    pred_path.write_text("".join(json.dumps(p) + "\n" for p in predictions))
    out = run_json(capsys, TRAIN10, pred_path, "--text-evidence-only")
    # 25 perfect answers, 26 missing ones scored 0 -> 25/51
    assert out["answer_f1"] == pytest.approx(25 / 51)
    assert out["missing_predictions"] == 26


def test_bad_gold_files_are_errors_naming_the_record(tmp_path, capsys):
    repeated = {"P1": paper(qa("q1", ann(yes_no=True))), "P2": paper(qa("q1", ann(yes_no=False)))}
    gold_path, pred_path = write_inputs(tmp_path, gold=repeated, lines=[""])
    assert main(["qasper-eval", "--gold", str(gold_path), "--predictions", str(pred_path)]) == 1
    assert "gold.json (record P2): question id 'q1' appears twice" in capsys.readouterr().err
    bad_spans = {"P1": paper(qa("q1", ann(yes_no=True)))}
    bad_spans["P1"]["qas"][0]["answers"][0]["answer"]["extractive_spans"] = "BiLSTM"
    gold_path, pred_path = write_inputs(tmp_path, gold=bad_spans, lines=[""])
    assert main(["qasper-eval", "--gold", str(gold_path), "--predictions", str(pred_path)]) == 1
    assert "(record P1 question q1): `extractive_spans` must be a list of strings" in capsys.readouterr().err
