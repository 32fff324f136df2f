"""Late chunking (`pooling: late`) on a tiny random BERT saved as a sentence-transformers model: chunk
vectors are means of hand-computed token vectors over their spans, a short document is one pass, a long
one is windowed by the most-context rule, and chunks indexing other text than their source are refused.
Also the token-budget cut of dense inputs (`truncate_tokens`, qwen3-embedding's registered setting)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.data.model import Chunk, Document, make_chunk_id
from harness.errors import HarnessError
from harness.retrieval.dense import SentenceTransformerEmbedder
from harness.retrieval.late import LateChunkingRetriever, best_window, window_starts
from harness.retrieval.registry import RetrieverContext
from harness.retrieval.token_cut import TokenCut
from tiny_models import tiny_bert_sentence_transformer

SENTENCES = ["redis cache is fast.", "the queue worker retry fails!", "which database index table?",
             "late chunking token window.", "a job of the worker is slow now."]
DOC = " ".join(SENTENCES)  # 30 word-level tokens


def chunks(doc_id="t/doc.md", text=DOC, render=lambda t: t):
    out, start = [], 0
    for i, sentence in enumerate(SENTENCES):
        a = text.index(sentence, start)
        start = a + len(sentence)
        out.append(Chunk(doc_id, make_chunk_id(doc_id, i, sentence), sentence, ((a, start),), "", 1, 1,
                         ("paragraph",), indexed_text=render(sentence)))
    return out


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("bert")
    return {"short": tiny_bert_sentence_transformer(root / "w64", max_seq_length=64),
            "long": tiny_bert_sentence_transformer(root / "w16", max_seq_length=16)}


def by_hand(st_dir, ids_window):
    """Last hidden states of [CLS] + ids + [SEP] from the encoder loaded with transformers directly."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(st_dir), local_files_only=True).eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor([[2] + ids_window + [3]])).last_hidden_state[0]
    return out[1:-1].numpy()


def tokens(st_dir, text):
    from transformers import AutoTokenizer

    enc = AutoTokenizer.from_pretrained(str(st_dir), local_files_only=True)(
        text, add_special_tokens=False, return_offsets_mapping=True)
    return enc["input_ids"], np.array(enc["offset_mapping"])


def late(tmp_path, st_dir, overlap=4):
    return LateChunkingRetriever("late", SentenceTransformerEmbedder(str(st_dir)), cache_dir=tmp_path,
                                 documents={"t/doc.md": DOC}, overlap=overlap)


def test_a_chunk_vector_is_the_mean_of_its_span_tokens_from_one_pass(tmp_path, models):
    ids, offsets = tokens(models["short"], DOC)
    assert len(ids) == 30 < 62  # the whole document fits one window
    vectors = by_hand(models["short"], ids)
    retriever = late(tmp_path, models["short"])
    got_offsets, got, windows = retriever.encoder.token_vectors(DOC)
    assert windows == 1 and got_offsets.tolist() == offsets.tolist()
    np.testing.assert_allclose(got, vectors, atol=1e-5)
    matrix = retriever.chunk_vectors("s", chunks())
    for row, chunk in zip(matrix, chunks()):
        (a, b), = chunk.spans
        inside = (offsets[:, 0] < b) & (offsets[:, 1] > a)
        np.testing.assert_allclose(row, vectors[inside].mean(axis=0), atol=1e-5)
    assert retriever.counts == {"late_documents": 1, "late_windows": 1, "late_chunks_without_tokens": 0}


def test_the_window_rule_on_a_document_longer_than_the_window(tmp_path, models):
    ids, _ = tokens(models["long"], DOC)
    width = 16 - 2  # [CLS] and [SEP]
    assert window_starts(len(ids), width, 4) == [0, 10, 16]
    owner = best_window(len(ids), [0, 10, 16], width)
    # token 12: 12 before / 1 after in window 0, 2 / 11 in window 1 -> window 1; token 20: 10 / 3 in window 1,
    # 4 / 9 in window 2 -> window 2; token 15: 5 / 8 in window 1 against 1 / ... -> window 1 (tie rule unused)
    assert owner[[0, 8, 11, 12, 15, 20, 29]].tolist() == [0, 0, 0, 1, 1, 2, 2]
    assert owner[11] == 0  # 11 / 2 in window 0, 1 / 12 in window 1: min 2 beats 1
    expected = np.zeros((len(ids), 32), dtype=np.float32)
    for w, start in enumerate([0, 10, 16]):
        window = by_hand(models["long"], ids[start : start + width])
        for i in range(start, start + width):
            if owner[i] == w:
                expected[i] = window[i - start]
    retriever = late(tmp_path, models["long"])
    _, got, windows = retriever.encoder.token_vectors(DOC)
    assert windows == 3
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_ties_go_to_the_earlier_window():
    # n 10, width 6, overlap 2: windows [0, 6) and [4, 10); token 5: min(5, 0) = 0 vs min(1, 4) = 1 -> second;
    # token 4: min(4, 1) = 1 vs min(0, 5) = 0 -> first; with width 5, overlap 0: [0, 5), [5, 10): no overlap
    assert best_window(10, window_starts(10, 6, 2), 6).tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    assert best_window(3, [0, 0], 3).tolist() == [0, 0, 0]  # equal windows: the earlier


def test_the_retriever_ranks_and_caches_late_vectors(tmp_path, models):
    configs = {"late": {"type": "dense", "model": str(models["long"]), "pooling": "late", "late_overlap": 4}}
    context = RetrieverContext(tmp_path, configs)
    context.add_documents([Document("t/doc.md", "t", DOC)])
    retriever = context.get("late")
    first = retriever.index("s", chunks()).search("redis cache")
    assert sorted(first.order.tolist()) == [0, 1, 2, 3, 4]
    assert retriever.stats()["cache_misses"] >= 5 and retriever.describe()["late_overlap"] == 4
    context.flush()
    again = RetrieverContext(tmp_path, configs)
    again.add_documents([Document("t/doc.md", "t", DOC)])
    second = again.get("late").index("s", chunks()).search("redis cache")
    assert again.get("late").counts["late_documents"] == 0  # every chunk vector came from the cache
    assert first.order.tolist() == second.order.tolist()


def test_chunks_indexing_other_text_than_their_source_are_refused(tmp_path, models):
    retriever = late(tmp_path, models["short"])
    with pytest.raises(
        HarnessError, match=r"chunk t/doc.md#0000-\w+ indexes text that is not its source text.*`arms: \[S\]`"
    ):
        retriever.index("s", chunks(render=lambda t: f"Intro\n\n{t}"))


def test_a_document_the_context_was_not_given_is_an_error(tmp_path, models):
    retriever = LateChunkingRetriever(
        "late", SentenceTransformerEmbedder(str(models["short"])), cache_dir=tmp_path, documents={}, overlap=4
    )
    with pytest.raises(HarnessError, match="the text of document t/doc.md was not given"):
        retriever.index("s", chunks())


@pytest.mark.parametrize(
    "entry, message",
    [
        (
            {"backend": "ollama", "model": "m", "pooling": "late"},
            r"`retrievers\.x\.pooling` late needs token embeddings",
        ),
        ({"late_overlap": 8}, r"`retrievers\.x\.late_overlap` applies only with `pooling: late`"),
        (
            {"backend": "ollama", "model": "m", "truncate_tokens": 30},
            r"`retrievers\.x\.tokenizer` is required with `truncate_tokens:`",
        ),
        (
            {"truncation_side": "left"},
            r"`retrievers\.x\.truncation_side` applies only with `truncate_tokens:`",
        ),
        ({"num_batch": 512}, r"`retrievers\.x\.num_batch` applies only to backend ollama"),
    ],
)
def test_config_errors_name_the_key(tmp_path, entry, message):
    with pytest.raises(HarnessError, match=message):
        RetrieverContext(tmp_path, {"x": {"type": "dense"} | entry}).get("x")


def test_token_cut_keeps_the_prefix_and_cuts_the_chosen_side(models):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(models["short"]), local_files_only=True)
    right = TokenCut(lambda: tokenizer, limit=6, side="right", identity="t")
    left = TokenCut(lambda: tokenizer, limit=6, side="left", identity="t")
    assert right.apply("query :", "redis cache is fast .") == (
        "redis cache is fast",
        True,
    )  # 2 prefix + 4 tokens
    assert left.apply("query :", "redis cache is fast .") == ("cache is fast .", True)
    assert right.apply("", "redis cache") == ("redis cache", False)


def test_a_cut_dense_retriever_counts_truncated_inputs(tmp_path, models):
    configs = {"cut": {"type": "dense", "model": str(models["short"]), "truncate_tokens": 5}}
    retriever = RetrieverContext(tmp_path, configs).get("cut")
    retriever.index("s", chunks())
    assert retriever.stats()["truncated_documents"] == 2  # the sentences of 6 and 9 tokens; the others have 5
    assert "inputs cut to 5 tokens (right" in retriever.describe()["truncation"]


def test_the_simulated_backend_late_pools_hashed_token_vectors_with_their_documents_context(tmp_path):
    """A rehearsal's late retriever (backend: simulated) runs the late path: words are its tokens (offsets
    into the original text), each carrying its window's mean, so the same chunk pools to a different vector
    in another document, and differs from the plain stand-in's embedding of it alone."""
    from harness.retrieval.late import span_mean
    from harness.retrieval.simulated import HashedLateEncoder

    configs = {
        "late": {
            "type": "dense",
            "backend": "simulated",
            "model": "jina",
            "pooling": "late",
            "late_overlap": 2,
        },
        "plain": {"type": "dense", "backend": "simulated", "model": "jina"},
    }
    context = RetrieverContext(tmp_path, configs)
    other = "Kafka STREAMS partition offsets. " + DOC  # the same sentences after an unrelated one
    context.add_documents([Document("t/doc.md", "t", DOC), Document("t/other.md", "t", other)])
    late_retriever, plain = context.get("late"), context.get("plain")
    assert isinstance(late_retriever.encoder, HashedLateEncoder)
    offsets, vectors, windows = late_retriever.encoder.token_vectors(other)
    assert [other[a:b] for a, b in offsets[:3]] == ["Kafka", "STREAMS", "partition"] and windows == 1
    here = late_retriever.chunk_vectors("s", chunks())
    there = late_retriever.chunk_vectors("s", chunks("t/other.md", other))
    assert not np.allclose(here, there)  # the context moved every chunk's vector
    alone = plain.embedder.embed([c.text for c in chunks()])[0]
    assert not np.allclose(here / np.linalg.norm(here, axis=1, keepdims=True), alone, atol=1e-3)
    first = span_mean(*late_retriever.encoder.token_vectors(DOC)[:2], chunks()[0].spans)
    np.testing.assert_allclose(here[0], first, atol=1e-6)  # a chunk is the mean of its words' vectors


def test_one_documents_token_vectors_are_held_at_a_time_and_rows_keep_chunk_order(tmp_path):
    """A scope's documents' token vectors together can take gigabytes: each is dropped before the next
    document is encoded, and chunks of two documents, interleaved, get the vectors they get one by one."""
    import gc
    import weakref

    from harness.retrieval.simulated import HashedLateEncoder

    live = []

    class Watching(HashedLateEncoder):
        def token_vectors(self, text):
            gc.collect()
            assert all(ref() is None for ref in live), "an earlier document's token vectors are still held"
            offsets, vectors, windows = super().token_vectors(text)
            live.append(weakref.ref(vectors))
            return offsets, vectors, windows

    other = "Kafka STREAMS partition offsets. " + DOC
    configs = {
        "late": {
            "type": "dense",
            "backend": "simulated",
            "model": "jina",
            "pooling": "late",
            "late_overlap": 2,
        }
    }
    one_by_one = RetrieverContext(tmp_path / "a", configs)
    one_by_one.add_documents([Document("t/doc.md", "t", DOC), Document("t/other.md", "t", other)])
    here, there = chunks(), chunks("t/other.md", other)
    alone = [one_by_one.get("late").chunk_vectors(f"s{i}", [c])[0] for i, c in enumerate(here + there)]
    context = RetrieverContext(tmp_path / "b", configs)
    context.add_documents([Document("t/doc.md", "t", DOC), Document("t/other.md", "t", other)])
    retriever = context.get("late")
    retriever.encoder = Watching(overlap=2)
    interleaved = [c for pair in zip(here, there) for c in pair]
    together = retriever.chunk_vectors("s", interleaved)
    assert len(live) == 2 and retriever.counts["late_documents"] == 2
    expected = [alone[i] for pair in zip(range(5), range(5, 10)) for i in pair]
    np.testing.assert_array_equal(together, np.stack(expected))
