"""The rehearsal's stand-ins: a simulated LLM that answers every prompt role in shape, and hashed-vector
encoders and rerankers; all deterministic."""

from __future__ import annotations

import json
import multiprocessing

import numpy as np
import pytest

from harness.arms.contextual import CONTEXT_SCHEMA
from harness.arms.addon_arms import MAPPING_SCHEMA
from harness.arms.enrich import ENRICH_SCHEMA, fields_validator
from harness.config.models import model_settings
from harness.errors import HarnessError
from harness.llm.registry import make_backend
from harness.pipeline.reading import ANSWER_SCHEMA, VERDICT_SCHEMA
from harness.retrieval.registry import RetrieverContext
from harness.retrieval.simulated import HashedPairScorer, hashed_vectors

PROMPT = "Summarise this chunk. Transformers use attention over token sequences to model context windows."
SCHEMAS = {
    "enrich": ENRICH_SCHEMA,
    "context": CONTEXT_SCHEMA,
    "mapping": MAPPING_SCHEMA,
    "answer": ANSWER_SCHEMA,
    "verdict": VERDICT_SCHEMA,
}


def _backend(**extra):
    return make_backend({"backend": "simulated", "name": "qwen2.5:7b"} | extra)


@pytest.mark.parametrize("role", sorted(SCHEMAS))
def test_every_role_gets_an_answer_in_its_schema(role):
    schema = SCHEMAS[role]
    answer = json.loads(_backend().complete(PROMPT, schema=schema, seed=0).text)
    assert set(answer) == set(schema["properties"])
    if role == "enrich":
        assert fields_validator(ENRICH_SCHEMA["required"])(answer) is not None
        assert 5 <= len(answer["keywords"]) <= 8
    if role == "verdict":
        assert answer["verdict"] in VERDICT_SCHEMA["properties"]["verdict"]["enum"]
    if role == "answer":  # strings are runs of the prompt's own words
        assert answer["answer"] and answer["answer"] in PROMPT.lower().replace(".", "")


def test_answers_depend_on_prompt_and_seed_only():
    one = _backend().complete(PROMPT, schema=ENRICH_SCHEMA, seed=0)
    assert one == _backend().complete(PROMPT, schema=ENRICH_SCHEMA, seed=0)
    assert one.text != _backend().complete(PROMPT, schema=ENRICH_SCHEMA, seed=1).text
    assert one.text != _backend().complete(PROMPT + " More.", schema=ENRICH_SCHEMA, seed=0).text
    assert one.prompt_tokens > 10 and one.completion_tokens > 10 and one.cost_usd == 0.0


def _answer_in_subprocess(queue):
    queue.put(_backend().complete(PROMPT, schema=ENRICH_SCHEMA, seed=3).text)


def test_answers_are_the_same_in_another_process():
    """No process-local state (hash randomisation, dict order) reaches an answer."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_answer_in_subprocess, args=(queue,))
    proc.start()
    text = queue.get(timeout=120)
    proc.join()
    assert text == _backend().complete(PROMPT, schema=ENRICH_SCHEMA, seed=3).text


def test_malformed_share_is_near_the_configured_rate():
    backend = _backend(malformed_rate=0.3)
    broken = 0
    for seed in range(400):
        try:
            json.loads(backend.complete(PROMPT, schema=ANSWER_SCHEMA, seed=seed).text)
        except json.JSONDecodeError:
            broken += 1
    assert 0.22 < broken / 400 < 0.38
    assert all(json.loads(_backend().complete(PROMPT, schema=ANSWER_SCHEMA, seed=s).text) for s in range(50))


def test_priced_model_is_billed_and_estimates_an_upper_bound():
    backend = _backend(price_in_per_mtok=1.0, price_out_per_mtok=2.0)
    assert backend.billed and not _backend().billed
    done = backend.complete(PROMPT, schema=ANSWER_SCHEMA, seed=0)
    assert done.cost_usd == pytest.approx((done.prompt_tokens * 1.0 + done.completion_tokens * 2.0) / 1e6)
    assert backend.estimate_cost_usd([{"role": "user", "content": PROMPT}], {}) >= done.cost_usd


def test_prices_come_in_pairs():
    with pytest.raises(HarnessError, match="price_out_per_mtok"):
        model_settings({"backend": "simulated", "name": "x", "price_in_per_mtok": 1.0})


def test_hashed_vectors_rank_the_matching_text_first_and_are_stable():
    texts = ["the cat sat on the mat", "stock markets fell sharply today", "a cat and a mat"]
    vectors = hashed_vectors(texts)
    assert vectors.dtype == np.float32 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    query = hashed_vectors(["cat on a mat"])[0]
    assert int(np.argmin(vectors @ query)) == 1
    assert np.array_equal(vectors, hashed_vectors(texts))
    scores = HashedPairScorer("qwen3-reranker").score("cat on a mat", texts)
    assert scores[1] < min(scores[0], scores[2])


def test_hashed_vectors_are_the_same_bytes_on_every_machine():
    """Pinned digests: the stand-ins' vectors are exact (sums of +-1, one correctly rounded division), so a
    platform, numpy or hashing change that moved a rehearsal's rankings shows here."""
    import hashlib

    from harness.retrieval.simulated import HashedLateEncoder

    vectors = hashed_vectors(["the cat sat on the mat", "", "Stock markets fell 3% today; the cat did not"])
    assert not vectors[1].any()
    assert hashlib.sha256(vectors.tobytes()).hexdigest() == \
        "2a8a669f542b343e7d49beddd2b2921eb533b8bde113e5be742c67fcbdaf3f4c"
    _, tokens, windows = HashedLateEncoder(overlap=8).token_vectors("The cat sat. " * 300)
    assert windows == 2 and hashlib.sha256(tokens.tobytes()).hexdigest() == \
        "baa45d2071a1373a9911fed071e2a1b185ed5263dca4be5cc387abec7e3399cc"


def test_a_word_pair_is_bucketed_by_order_and_never_across_texts():
    together = hashed_vectors(["alpha beta"])[0]
    assert not np.array_equal(together, hashed_vectors(["beta alpha"])[0])
    apart = hashed_vectors(["alpha", "beta"])
    # two one-word texts have no pair: each is one signed bucket, unit length
    assert all(np.count_nonzero(row) == 1 for row in apart)


def test_simulated_retrievers_build_from_config(tmp_path):
    configs = {
        "dense": {"type": "dense", "backend": "simulated", "model": "nomic-embed-text"},
        "bm25": {"type": "bm25"},
        "rerank": {
            "type": "rerank",
            "first_stage": "bm25",
            "backend": "simulated",
            "model": "qwen3-reranker",
        },
    }
    context = RetrieverContext(tmp_path, configs)
    dense = context.get("dense")
    assert dense.embedder.describe()["backend"] == "simulated"
    assert context.get("rerank").scorer.describe()["backend"] == "simulated"


def test_remembered_hashed_vectors_are_the_rows_a_fresh_batch_gives(monkeypatch):
    import harness.retrieval.simulated as simulated

    texts = ["alpha beta gamma", "", "beta alpha", "alpha beta gamma", "delta"]
    fresh = simulated._hash_rows(texts)
    monkeypatch.setattr(simulated, "_REMEMBERED", {})
    monkeypatch.setattr(simulated, "MAX_REMEMBERED_VECTORS", 3)  # cleared between and within calls
    for batch in (texts, texts[::-1], texts[2:], texts):
        got = simulated.hashed_vectors(batch)
        want = np.stack([fresh[texts.index(t)] for t in batch])
        assert got.tobytes() == want.tobytes()
    assert len(simulated._REMEMBERED) <= 4 and all(
        not r.flags.writeable for r in simulated._REMEMBERED.values()
    )
