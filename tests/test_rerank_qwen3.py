"""The Qwen3-Reranker scorer in process (`backend: transformers`) on a tiny random Qwen3 built here:
P("yes") by hand from the logits, the same bits in batches of 1 and 8 and in either pair order, the
prompt cut to max_length, and pair scores cached through the rerank retriever."""

from __future__ import annotations

import math

import pytest

from harness.errors import HarnessError
from harness.retrieval.registry import RetrieverContext
from harness.retrieval.rerank_qwen3 import (
    PAD_MULTIPLE,
    PROMPT_HEAD,
    PROMPT_TAIL,
    Qwen3RerankScorer,
    user_turn,
)
from retrieval_support import chunks_of
from tiny_models import tiny_qwen3

QUERY = "what is the redis cache retry"
# lengths spread over several padding buckets (PAD_MULTIPLE tokens)
PASSAGES = [
    "redis cache is fast",
    "the queue worker retry fails " * 12,
    "no",
    "database index table row column " * 25,
    "which job is slow ?",
    "late chunking token window " * 9,
    "a redis cache of the database",
    "yes yes no " * 30,
    "how to retry a job",
    "the worker",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_qwen3(tmp_path_factory.mktemp("qwen3"))


def test_prompts_span_several_padding_buckets(model_dir):
    scorer = Qwen3RerankScorer(str(model_dir))
    lengths = {len(scorer.prompt_ids(QUERY, p)) // PAD_MULTIPLE for p in PASSAGES}
    assert len(lengths) >= 3


def test_batches_of_one_and_eight_and_reversed_pairs_give_the_same_scores(model_dir):
    one = Qwen3RerankScorer(str(model_dir), batch_size=1).score(QUERY, PASSAGES)
    eight = Qwen3RerankScorer(str(model_dir), batch_size=8).score(QUERY, PASSAGES)
    reversed_ = Qwen3RerankScorer(str(model_dir), batch_size=8).score(QUERY, PASSAGES[::-1])[::-1]
    assert one == eight == reversed_  # exact: the same float bits
    assert len(set(one)) == len(PASSAGES)  # the random model does tell the passages apart


def test_score_is_the_yes_no_softmax_of_the_last_position_by_hand(model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    lm = AutoModelForCausalLM.from_pretrained(str(model_dir), local_files_only=True).eval()
    text = (
        PROMPT_HEAD
        + user_turn(
            "Given a web search query, retrieve relevant passages that answer the query", QUERY, PASSAGES[0]
        )
        + PROMPT_TAIL
    )
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        last = lm(input_ids=torch.tensor([ids])).logits[0, -1]
    yes, no = (
        float(last[tokenizer.convert_tokens_to_ids("yes")]),
        float(last[tokenizer.convert_tokens_to_ids("no")]),
    )
    by_hand = math.exp(yes) / (math.exp(yes) + math.exp(no))
    scorer = Qwen3RerankScorer(str(model_dir))
    assert scorer.prompt_ids(QUERY, PASSAGES[0]) == ids
    assert scorer.score(QUERY, [PASSAGES[0]])[0] == pytest.approx(by_hand, abs=1e-6)


def test_a_long_pair_keeps_the_system_and_assistant_turns_and_loses_the_document_tail(model_dir):
    scorer = Qwen3RerankScorer(str(model_dir), max_length=120)
    ids = scorer.prompt_ids(QUERY, PASSAGES[3])
    full = Qwen3RerankScorer(str(model_dir)).prompt_ids(QUERY, PASSAGES[3])
    tokenizer, _, _, _, head, tail = scorer._load()
    assert len(ids) == 120 < len(full)
    assert ids[: len(head)] == head and ids[-len(tail):] == tail
    assert ids[: 120 - len(tail)] == full[: 120 - len(tail)]


def test_max_length_without_room_for_the_pair_is_an_error(model_dir):
    with pytest.raises(HarnessError, match="max_length 10 leaves no room"):
        Qwen3RerankScorer(str(model_dir), max_length=10).score(QUERY, ["x"])


def test_the_rerank_retriever_caches_the_pair_scores(tmp_path, model_dir):
    configs = {"first": {"type": "bm25"},
               "q3": {"type": "rerank", "first_stage": "first", "depth": 4, "backend": "transformers",
                      "model": str(model_dir), "batch_size": 3}}
    chunks = chunks_of(PASSAGES)
    retriever = RetrieverContext(tmp_path, configs).get("q3")
    first = retriever.index("s", chunks).search(QUERY)
    assert retriever.stats() == {"cache_hits": 0, "cache_misses": 4}
    retriever.flush()
    again = RetrieverContext(tmp_path, configs).get("q3")
    second = again.index("s", chunks).search(QUERY)
    assert again.stats() == {"cache_hits": 4, "cache_misses": 0}
    assert first.order.tolist() == second.order.tolist() and first.scores.tolist() == second.scores.tolist()
    assert again.describe()["scorer"]["backend"] == "transformers"
