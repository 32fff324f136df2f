"""The 98 Laravel docs files (real Markdown): every chunker runs and keeps the invariants."""

import os
from pathlib import Path

import pytest

from chunking_support import (
    LARAVEL,
    check_blocks_tile,
    check_blocks_whole,
    check_chunk_records,
    check_covers_content,
    laravel_docs,
)
from harness.chunking import CHUNKERS
from harness.chunking.blocks import parse_blocks
from harness.chunking.header_led import header_led_chunks

pytestmark = pytest.mark.skipif(not LARAVEL.is_dir(), reason=f"real data not present: {LARAVEL}")


REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def docs():
    return laravel_docs()


def test_all_98_files_are_present(docs):
    assert len(docs) == 98


def test_header_led_invariants_on_every_file(docs):
    for d in docs:
        check_blocks_tile(d.text, parse_blocks(d.text))
        chunks = header_led_chunks(d)
        assert chunks, d.doc_id
        check_chunk_records(d, chunks, exact=False)
        check_covers_content(d, chunks)
        check_blocks_whole(d, chunks)
        # every chunk over 2 x tau_max holds one body block (an oversized code block or list)
        for c in chunks:
            if len(c.text) > 3000:
                body = [b for b in parse_blocks(c.text) if b.kind != "header"]
                assert len(body) == 1, (d.doc_id, c.start_line)


@pytest.mark.parametrize("name, params", [("F512c", {}), ("F256t", {}), ("P", {}), ("FL", {"tokens": 300})])
def test_baseline_chunkers_on_every_file(docs, name, params):
    for d in docs:
        chunks = CHUNKERS[name](d, **params)
        check_chunk_records(d, chunks, overlapping=name == "F256t")
        if name != "F256t":
            check_covers_content(d, chunks)


def test_blade_first_and_last_chunks(docs):
    blade = next(d for d in docs if d.doc_id == "laravel/blade.md")
    chunks = header_led_chunks(blade)
    first, last = chunks[0], chunks[-1]
    # the title and its table of contents (a 2,168-char list a header-only chunk cannot be closed before)
    assert (first.section_path, first.start_line, first.end_line, first.block_types) == (
        "Blade Templates", 1, 47, ("header", "list"))
    assert first.text.startswith("# Blade Templates\n\n- [Introduction](#introduction)")
    assert last.end_line == blade.text.rstrip("\n").count("\n") + 1
    assert last.section_path.startswith("Blade Templates > ")


def test_atx_headers_match_an_independent_line_count(docs):
    # independent count: lines starting with "#{1,6} " that no fence or indented block contains
    for d in docs:
        blocks = parse_blocks(d.text)
        code = [(b.start, b.end) for b in blocks if b.kind == "code"]
        code += [f for b in blocks for f in b.fences]
        pos, expected = 0, 0
        for line in d.text.split("\n"):
            stripped = line.lstrip("#")
            if (
                1 <= len(line) - len(stripped) <= 6
                and stripped[:1] in (" ", "")
                and not any(s <= pos < e for s, e in code)
            ):
                expected += 1
            pos += len(line) + 1
        assert sum(b.kind == "header" and b.start_line == b.end_line for b in blocks) == expected, d.doc_id


def test_chunk_output_does_not_depend_on_the_process(docs):
    """Two interpreters with different hash seeds print the same bytes (set or dict order cannot leak)."""
    import subprocess
    import sys

    files = sorted(str(p) for p in LARAVEL.glob("*.md"))[:20]
    outputs = set()
    for seed in ("1", "2"):
        run = subprocess.run(
            [sys.executable, "-m", "harness", "chunk", "--arm", "P", *files],
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=REPO,
            check=True,
        )
        outputs.add(run.stdout)
    assert len(outputs) == 1 and next(iter(outputs)).count(b"\n") > 100
