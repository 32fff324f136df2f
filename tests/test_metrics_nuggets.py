"""Strict nugget recall, the judge's acceptance controls, exploratory labelling, and the spot-check kappa."""

import pytest
from harness.errors import InputError
from harness.metrics.judge_agreement import cohens_kappa, read_spot_check
from harness.metrics.nuggets import (
    NOT_SUPPORT,
    PARTIAL,
    SUPPORT,
    UNPARSEABLE,
    JudgeAcceptance,
    NuggetScore,
    label_nugget_rows,
    negative_control,
    parse_verdict,
    positive_control,
    score_verdicts,
    seeded_derangement,
    strict_recall,
)


@pytest.mark.parametrize("raw, verdict", [
    ('{"verdict": "support"}', SUPPORT),
    ('{"verdict": " Support ", "why": "stated in line 2"}', SUPPORT),
    ('{"verdict": "partial_support"}', PARTIAL),
    ('{"verdict": "not_support"}', NOT_SUPPORT),
    ('{"verdict": "supported"}', UNPARSEABLE),  # not a label of the frozen prompt
    ('{"verdict": true}', UNPARSEABLE),
    ('{"label": "support"}', UNPARSEABLE),
    ('["support"]', UNPARSEABLE),
    ('support', UNPARSEABLE),
    ('{"verdict": "support"', UNPARSEABLE),  # truncated output
    ("", UNPARSEABLE),
    (None, UNPARSEABLE),
])
def test_parse_verdict(raw, verdict):
    assert parse_verdict(raw) == verdict


def test_strict_recall_counts_only_full_support():
    raw = ['{"verdict": "support"}', '{"verdict": "partial_support"}', "oops", '{"verdict": "not_support"}',
           '{"verdict": "support"}']
    score = strict_recall(raw)
    # 2 of 5 nuggets fully supported; the partial and the unparseable one count as not supported
    assert score == NuggetScore(nuggets=5, supported=2, partial=1, unparseable=1)
    assert score.strict_recall == pytest.approx(2 / 5)


def test_a_question_without_nuggets_or_with_unknown_labels_is_refused():
    with pytest.raises(ValueError, match="without nuggets"):
        score_verdicts([])
    with pytest.raises(ValueError, match=r"parse_verdict labels, got \['yes'\]"):
        score_verdicts([SUPPORT, "yes"])


def scores(*pairs):
    return {f"q{i}": NuggetScore(n, s, 0, u) for i, (n, s, u) in enumerate(pairs)}


def test_positive_control_arithmetic():
    # recalls 4/4, 2/3, 5/5: mean (1 + 2/3 + 1) / 3 = 8/9 = 0.889 >= 0.85
    result = positive_control(scores((4, 4, 0), (3, 2, 1), (5, 5, 0)))
    assert result.mean_recall == pytest.approx(8 / 9)
    assert result.passed and result.reason == "" and (result.questions, result.unparseable) == (3, 1)
    # recalls 1, 2/3, 4/5: mean (1 + 2/3 + 4/5) / 3 = 37/45 = 0.822 < 0.85
    failed = positive_control(scores((4, 4, 0), (3, 2, 0), (5, 4, 0)))
    assert failed.mean_recall == pytest.approx(37 / 45) and not failed.passed
    assert (
        failed.reason == "positive control failed: mean strict recall 0.822, required >= 0.85 (3 questions)"
    )


def test_negative_control_arithmetic_and_its_boundary():
    # recalls 0, 1/10, 0, 0: mean 1/40 = 0.025 <= 0.05
    assert negative_control(scores((4, 0, 0), (10, 1, 0), (3, 0, 0), (2, 0, 0))).passed
    # recalls 1/10, 0: mean 0.05 exactly, which passes (<=)
    edge = negative_control(scores((10, 1, 0), (5, 0, 0)))
    assert edge.mean_recall == pytest.approx(0.05) and edge.passed
    # recalls 1/5, 0: mean 0.1 > 0.05 (the paper's judge failed at 0.068)
    failed = negative_control(scores((5, 1, 0), (5, 0, 0)))
    assert not failed.passed and "required <= 0.05" in failed.reason


def test_controls_without_reference_answers_are_not_computable():
    pos, neg = positive_control({}), negative_control({})
    assert pos.mean_recall is None and not pos.passed
    assert pos.reason == "positive control not computable: no reference answers"
    assert neg.reason == "negative control not computable: no reference answers"


def test_derangement_has_no_fixed_point_and_is_seeded():
    qids = [f"q{i:03d}" for i in range(50)]
    first = seeded_derangement(qids, seed=2027)
    assert sorted(first) == qids and sorted(first.values()) == qids  # a permutation
    assert all(first[q] != q for q in qids)
    assert seeded_derangement(list(reversed(qids)), seed=2027) == first  # input order does not matter
    assert seeded_derangement(qids, seed=2028) != first
    for seed in range(200):  # small sets are where fixed points are likeliest
        d = seeded_derangement(["a", "b", "c"], seed=seed)
        assert all(d[q] != q for q in d) and sorted(d.values()) == ["a", "b", "c"]
    assert seeded_derangement(["a", "b"], seed=5) == {"a": "b", "b": "a"}
    with pytest.raises(ValueError, match="at least 2 questions, got 1"):
        seeded_derangement(["a", "a"], seed=0)


def kappa_ok():
    return cohens_kappa(["s", "n"], ["s", "n"])


ROWS = [{"test": "N1", "metric": "nugget_recall@1024t", "tier": "secondary", "verdict": "equiv."},
        {"test": "A1", "metric": "answer_f1@512t", "tier": "key_secondary", "verdict": "equiv."}]


def test_rows_stay_when_the_judge_is_accepted():
    passing = JudgeAcceptance(
        positive_control(scores((2, 2, 0))), negative_control(scores((2, 0, 0))), kappa_ok()
    )
    assert passing.accepted and passing.reasons == ()
    assert label_nugget_rows(ROWS, passing) == ROWS


def test_nugget_rows_turn_exploratory_with_every_reason():
    failing = JudgeAcceptance(
        positive_control(scores((2, 2, 0))), negative_control(scores((5, 1, 0), (5, 0, 0))), None
    )
    labelled = label_nugget_rows(ROWS, failing)
    assert labelled[1] == ROWS[1]  # not a nugget row
    assert labelled[0]["tier"] == "exploratory"
    assert labelled[0]["exploratory_reason"] == (
        "negative control failed: mean strict recall 0.100, required <= 0.05 (2 questions); "
        "no human spot check on file (kappa >= 0.6 required)")
    assert ROWS[0]["tier"] == "secondary"  # the input is not modified
    no_reference = JudgeAcceptance(positive_control({}), negative_control({}), kappa_ok())
    assert label_nugget_rows(ROWS, no_reference)[0]["exploratory_reason"] == (
        "positive control not computable: no reference answers; negative control not computable: no "
        "reference answers"
    )


# --- Cohen's kappa ---------------------------------------------------------------------------------------

JUDGE = ["s", "s", "s", "s", "s", "s", "n", "n", "n", "n"]
HUMAN = ["s", "s", "s", "s", "s", "n", "n", "n", "n", "s"]


def test_kappa_hand_computed():
    # agreement on rows 1-5 and 7-9: p_o = 8/10. Judge: 6 s, 4 n; human: 6 s, 4 n.
    # p_e = 0.6 * 0.6 + 0.4 * 0.4 = 0.52; kappa = (0.8 - 0.52) / (1 - 0.52) = 0.28 / 0.48 = 7/12 = 0.583 < 0.6
    result = cohens_kappa(JUDGE, HUMAN)
    assert (result.observed_agreement, result.expected_agreement) == pytest.approx((0.8, 0.52))
    assert result.kappa == pytest.approx(7 / 12) and not result.passed
    assert result.reason == "human spot check: kappa 0.583 < 0.6 (10 rows)"
    # one more agreement (row 10 relabelled n): p_o 0.9, human 5 s / 5 n, p_e 0.6*0.5 + 0.4*0.5 = 0.5, kappa
    # 0.8
    better = cohens_kappa(JUDGE, HUMAN[:9] + ["n"])
    assert better.kappa == pytest.approx(0.8) and better.passed


def test_kappa_matches_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn (via sentence-transformers) absent")
    labels = ["s", "p", "n", "s", "s", "n", "p", "s", "n", "n", "s", "p"]
    other = ["s", "n", "n", "s", "p", "n", "p", "s", "s", "n", "s", "s"]
    assert cohens_kappa(labels, other).kappa == pytest.approx(metrics.cohen_kappa_score(labels, other))
    assert cohens_kappa(JUDGE, HUMAN).kappa == pytest.approx(metrics.cohen_kappa_score(JUDGE, HUMAN))


def test_kappa_edge_cases():
    assert cohens_kappa(["s", "s"], ["s", "s"]).kappa is None  # p_e = 1: undefined, and not accepted
    assert not cohens_kappa(["s", "s"], ["s", "s"]).passed
    three = cohens_kappa(["s", "p", "n"], ["s", "p", "n"])
    assert three.kappa == 1.0
    with pytest.raises(ValueError, match="differ in length"):
        cohens_kappa(["s"], ["s", "n"])


def test_spot_check_file(tmp_path):
    path = tmp_path / "spot.csv"
    lines = ["nugget,answer,judge_verdict,human_verdict"] + [f"n{i},a{i},{j},{h.upper()} " for i, (j, h) in
                                                               enumerate(zip(JUDGE, HUMAN))]
    path.write_text("\n".join(lines) + "\n")
    assert read_spot_check(path).kappa == pytest.approx(7 / 12)
    path.write_text("nugget,judge_verdict,human_verdict\nn1,s,s\nn2,n,\n")
    with pytest.raises(InputError, match=r"spot\.csv \(record line 3\): empty `human_verdict`"):
        read_spot_check(path)
    with pytest.raises(InputError, match=r"missing column\(s\) human"):
        read_spot_check(path, human_column="human")
