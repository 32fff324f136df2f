"""The metric-set registry: canonical names, each metric exactly once, budgets from the config, one cache per
run."""

import pytest

from harness.config import metric_sets as declared
from harness.errors import HarnessError
from harness.metrics.budget import TokenCache
from harness.metrics.registry import (
    METRIC_SETS, ScoringCache, budgets_from_config, get_metric_set, score_question,
)
from metrics_support import WordEncoding, chunks, question, word_cache

QASPER_NAMES = [
    "rec@256t", "rec@512t", "rec@1024t", "complete@256t", "complete@512t", "complete@1024t",
    "partial@256t", "partial@512t", "partial@1024t", "rec@1", "rec@3", "rec@5", "hit@1", "hit@3", "hit@5",
]
FRESHSTACK_NAMES = [
    "prec@512t", "rec@512t", "prec@1024t", "rec@1024t", "prec@2048t", "rec@2048t",
    "hit@1", "hit@3", "hit@5", "hit@10", "mrr@10",
]
GOLD = "alpha beta gamma delta epsilon zeta eta theta"


@pytest.mark.parametrize(
    "name, expected, ranking",
    [
        ("qasper", QASPER_NAMES, []),
        ("qasper", QASPER_NAMES, chunks(GOLD, "other words here", GOLD)),
        ("freshstack", FRESHSTACK_NAMES, []),
        ("freshstack", FRESHSTACK_NAMES, chunks(*(f"w{i} {GOLD}" for i in range(12)))),
    ],
)
def test_every_metric_name_exactly_once_in_registered_order(name, expected, ranking):
    ms = METRIC_SETS[name]
    assert list(ms.metric_names(ms.default_budgets)) == expected
    got = score_question(name, question(GOLD), ranking, ms.default_budgets, cache=word_cache())
    assert [m for m, _ in got] == expected
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for _, v in got)


def test_every_declared_metric_set_is_scored_as_declared():
    assert tuple(METRIC_SETS) == tuple(declared.METRIC_SETS) == ("qasper", "freshstack")
    for name, spec in declared.METRIC_SETS.items():
        built = METRIC_SETS[name]
        assert built.name == name
        assert (built.score_assembled is not None) == spec.assembles, name
        assert spec.primary_metric in built.metric_names(built.default_budgets), name
        assert spec.gold in (declared.EVIDENCE_STRINGS, declared.GOLD_SECTIONS), name


def test_budget_order_in_the_config_does_not_change_names():
    got = score_question("qasper", question(GOLD), [], [1024, 256, 512], cache=word_cache())
    assert [m for m, _ in got] == QASPER_NAMES


def test_real_tokenizer_scores_a_question():
    # default cache: cl100k_base; GOLD is 8 words, 8 tokens; the budget 256 holds both chunks whole
    got = dict(score_question("qasper", question(GOLD), chunks("unrelated text", GOLD), [256]))
    assert (got["rec@256t"], got["rec@1"], got["rec@3"]) == (1.0, 0.0, 1.0)


def test_one_cache_encodes_each_text_once_across_questions_and_retrievers():
    enc = WordEncoding()
    cache = ScoringCache(tokens=TokenCache(enc))
    corpus = chunks(*(f"w{i} {GOLD}" for i in range(6)))
    rankings = [corpus, corpus[::-1], corpus[2:] + corpus[:2]]  # three "retrievers"
    for q in (question(GOLD, qid="q1"), question("w3 alpha", qid="q2")):
        for ranking in rankings:
            score_question("qasper", q, ranking, [4, 16], cache=cache)
    assert enc.encode_calls == 6
    assert len(cache.tokens) == 6


def test_unknown_metric_set_is_refused():
    with pytest.raises(
        ValueError, match=r"unknown metric_set 'trec'; choose one of \['freshstack', 'qasper'\]"
    ):
        score_question("trec", question(GOLD), [], [512])


@pytest.mark.parametrize(
    "budgets, match",
    [
        ([], "budgets for metric_set 'qasper' must be a non-empty list"),
        ("512", "budgets for metric_set 'qasper' must be a non-empty list"),
        ([512, 512], r"budgets for metric_set 'qasper' repeat a value: \[512, 512\]"),
        ([0], "budget must be a positive integer"),
    ],
)
def test_bad_budgets_are_refused(budgets, match):
    with pytest.raises(ValueError, match=match):
        score_question("qasper", question(GOLD), [], budgets)


def test_budgets_come_from_the_config_section():
    section = {"qasper": [1024, 256, 512], "freshstack": [512, 1024, 2048]}
    assert budgets_from_config(section, "qasper") == (256, 512, 1024)
    assert budgets_from_config(section, "freshstack") == (512, 1024, 2048)
    missing = (r"`budgets.freshstack` is missing; register the token budgets, "
               r"e.g. budgets: \{freshstack: \[512, 1024, 2048\]\}")
    with pytest.raises(HarnessError, match=missing):
        budgets_from_config({"qasper": [512]}, "freshstack")
    with pytest.raises(HarnessError, match="`budgets.qasper`: budget must be a positive integer"):
        budgets_from_config({"qasper": [512, -1]}, "qasper")
    with pytest.raises(ValueError, match="unknown metric_set 'nope'"):
        budgets_from_config(section, "nope")


def test_demo_config_budgets_are_valid():
    import yaml
    from pathlib import Path

    cfg = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "examples/demo/configs/study.yaml").read_text()
    )
    for name, spec in cfg["datasets"].items():
        ms = get_metric_set(spec["metric_set"])
        assert budgets_from_config(cfg["budgets"], ms.name) == ms.default_budgets
