"""Builders for the LLM tests: a throwaway study directory and a few header-led-like chunks."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from harness.data.model import Chunk, Document, make_chunk_id
from harness.llm.base import Backend, Completion
from harness.study import Study

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"


def make_study(root: Path, models: dict, arms: dict, llm: dict | None = None) -> Study:
    (root / "configs").mkdir(parents=True, exist_ok=True)
    config = {
        "study": "llm-test",
        "datasets": {"papers": {"adapter": "jsonl", "metric_set": "qasper"}},
        "models": models,
        "arms": arms,
        "retrievers": {"bm25": {"type": "bm25"}},
        "llm": llm or {"workers": 2, "retry_seeds": [1, 2, 3], "spend_cap_usd": None},
    }
    (root / "configs" / "study.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    shutil.copytree(PROMPTS, root / "prompts", dirs_exist_ok=True)
    return Study.at(root)


def chunks_for(doc_id: str, sections: list[tuple[str, str]]) -> tuple[Document, list[Chunk]]:
    """A document from (section path, text) pieces, and one chunk per piece with its real span."""
    text, chunks, pos = "", [], 0
    for i, (section, body) in enumerate(sections):
        start = len(text)
        text += body + "\n\n"
        chunks.append(
            Chunk(
                doc_id=doc_id,
                chunk_id=make_chunk_id(doc_id, i, body),
                text=body,
                spans=((start, start + len(body)),),
                section_path=section,
                start_line=pos + 1,
                end_line=pos + 1,
                block_types=("paragraph",),
            )
        )
        pos += 2
    return Document(doc_id=doc_id, domain="test", text=text), chunks


def small_corpus(n_docs: int = 3, n_chunks: int = 4) -> tuple[list[Document], dict[str, list[Chunk]]]:
    docs, by_doc = [], {}
    for d in range(n_docs):
        pieces = [
            (f"Paper {d} > Part {c}" if c else "", f"{w} is discussed here in document {d}, piece {c}.")
            for c, w in enumerate(["intro", "method", "method", "results", "limits", "outlook"][:n_chunks])
        ]
        doc, chunks = chunks_for(f"test/doc{d}", pieces)
        docs.append(doc)
        by_doc[doc.doc_id] = chunks
    return docs, by_doc


class CountingBackend(Backend):
    """A billed backend with a fixed price per call; counts the calls that reach it."""

    name = "counting"
    billed = True

    def __init__(self, cost: float = 0.4):
        super().__init__("m", {"temperature": 0})
        self.cost = cost
        self.calls = 0

    @property
    def digest(self) -> str:
        return "d1"

    def estimate_cost_usd(self, messages, options) -> float:
        return self.cost

    def complete(self, prompt, *, schema, seed, options=None) -> Completion:
        self.calls += 1
        return Completion('{"ok": true}', 5, 2, 0.01, self.cost, "d1")


def kill_after_lines(script: Path, cache_file: Path, lines: int, timeout_s: float = 60) -> bytes:
    """Run `script` in a child interpreter, SIGKILL it once `cache_file` holds `lines` lines, and return the
    cache file's bytes as the kill left them (the resume tests then check what a rerun repeats)."""
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cache_file.exists() and cache_file.read_bytes().count(b"\n") >= lines:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the build finished before it could be killed"
    return cache_file.read_bytes()
