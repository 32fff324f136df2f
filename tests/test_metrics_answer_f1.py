"""Qasper answer F1 and evidence F1 (harness.metrics.answer_f1) on worked examples."""

import pytest

from harness.data.qasper_gold import Reference, reference_from_annotation
from harness.metrics.answer_f1 import answer_f1, evidence_f1, normalize_answer, score_question, token_f1


def annotation(*, unanswerable=False, spans=(), free="", yes_no=None, evidence=()):
    return {"unanswerable": unanswerable, "extractive_spans": list(spans), "free_form_answer": free,
            "yes_no": yes_no, "evidence": list(evidence), "highlighted_evidence": []}


@pytest.mark.parametrize("text, normalised", [
    ("The  Cat, sat!", "cat sat"),
    ("An apple a day", "apple day"),
    ("the-end", "theend"),  # punctuation goes first, so "the-end" is one word, not an article
    ("a.", ""),  # "a." -> "a" -> article removed
    ("  The, a; AN!  ", ""),  # punctuation and articles only
    ("Another theory", "another theory"),  # articles only as whole words
    ("BiLSTM (2-layer)", "bilstm 2layer"),
])
def test_normalisation(text, normalised):
    assert normalize_answer(text) == normalised


def test_token_f1_worked_example():
    # pred "the big red dog" -> [big, red, dog]; gold "a red dog barks" -> [red, dog, barks]
    # common 2: precision 2/3, recall 2/3, F1 = 2/3
    assert token_f1("the big red dog", "a red dog barks") == pytest.approx(2 / 3)
    # repeated tokens count by multiplicity: pred [dog, dog], gold [dog] -> common 1, P 1/2, R 1, F1 2/3
    assert token_f1("dog dog", "dog") == pytest.approx(2 / 3)


def test_punctuation_and_articles_only_scores_zero_even_against_itself():
    # both normalise to "": no common token, so 0 (the evaluator's rule, not 1)
    assert token_f1("The.", "a, an!") == 0.0
    assert token_f1("", "cats") == 0.0


def test_references_by_answer_type():
    ext = reference_from_annotation(annotation(spans=["BiLSTM", "CRF"], free="ignored", evidence=["p1"]))
    assert ext == Reference("BiLSTM, CRF", "extractive", ("p1",))
    assert reference_from_annotation(annotation(free="a seed lexicon")) == Reference(
        "a seed lexicon", "abstractive", ()
    )
    assert reference_from_annotation(annotation(yes_no=True)).answer == "Yes"
    assert reference_from_annotation(annotation(yes_no=False)) == Reference("No", "boolean", ())
    # unanswerable wins and drops its evidence
    assert reference_from_annotation(annotation(unanswerable=True, evidence=["x"])) == Reference(
        "Unanswerable", "none", ()
    )
    assert reference_from_annotation(annotation()) is None  # no usable answer


def test_text_evidence_only_drops_float_selected_by_containment():
    ann = annotation(free="x", evidence=["FLOAT SELECTED: Table 1", "para", "see FLOAT SELECTED fig"])
    assert reference_from_annotation(ann).evidence == tuple(ann["evidence"])
    assert reference_from_annotation(ann, text_evidence_only=True).evidence == ("para",)


def test_extractive_spans_score_like_a_space_join():
    # ", " joins the spans; punctuation removal makes that the same tokens as a space join
    ref = reference_from_annotation(annotation(spans=["word2vec", "GloVe"]))
    assert answer_f1("word2vec GloVe", [ref]) == 1.0


def test_yes_no_prediction_against_free_form_gold():
    free = Reference("No, they use only English data", "abstractive", ())
    # pred [no] vs gold [no, they, use, only, english, data]: common 1, P 1, R 1/6, F1 = 2/7
    assert answer_f1("No", [free]) == pytest.approx(2 / 7)
    # "Yes" shares nothing with it
    assert answer_f1("Yes", [free]) == 0.0


def test_unanswerable_predicted_and_gold():
    none = Reference("Unanswerable", "none", ())
    assert score_question("Unanswerable", [], [none]) == score_question("unanswerable.", [], [none])
    score = score_question("Unanswerable", [], [none])
    assert (score.answer_f1, score.answer_type, score.evidence_f1) == (1.0, "none", 1.0)
    # an answer against an unanswerable gold scores 0; "Unanswerable" against a real answer scores 0
    assert answer_f1("BERT", [none]) == 0.0
    assert answer_f1("Unanswerable", [Reference("BERT", "extractive", ("p",))]) == 0.0


def test_maximum_over_annotators_and_its_type():
    refs = [Reference("Unanswerable", "none", ()),
            Reference("a seed lexicon of predicates", "abstractive", ("p1", "p2")),
            Reference("seed lexicon", "extractive", ("p1",))]
    score = score_question("the seed lexicon", ["p1"], refs)
    # vs none: 0; vs abstractive [seed, lexicon, of, predicates]: common 2, P 1, R 1/2, F1 2/3;
    # vs extractive [seed, lexicon]: F1 1 -> max 1, type extractive
    assert score.answer_f1 == 1.0 and score.answer_type == "extractive"
    # evidence ["p1"]: vs () 0; vs (p1, p2) P 1, R 1/2, F1 2/3; vs (p1,) 1 -> max 1
    assert score.evidence_f1 == 1.0
    # a tie keeps the first annotator's type (the evaluator's stable sort)
    tie = score_question("lexicon", [], [Reference("seed lexicon", "extractive", ()),
                                         Reference("lexicon seed", "abstractive", ())])
    assert tie.answer_f1 == pytest.approx(2 / 3) and tie.answer_type == "extractive"
    # no answer matches at all: the first reference's type
    assert score_question("zzz", [], refs[1:]).answer_type == "abstractive"


def test_evidence_f1_is_a_set_f1_with_the_empty_rule():
    # predicted {a, b, c} (a repeated), gold {a, d}: common 1, P 1/3, R 1/2, F1 = 2 * (1/6) / (5/6) = 2/5
    assert evidence_f1(["a", "b", "a", "c"], ["a", "d"]) == pytest.approx(2 / 5)
    assert evidence_f1([], []) == 1.0
    assert evidence_f1(["a"], []) == 0.0
    assert evidence_f1([], ["a"]) == 0.0


def test_no_references_is_refused():
    with pytest.raises(ValueError, match="no usable gold answer"):
        score_question("x", [], [])
