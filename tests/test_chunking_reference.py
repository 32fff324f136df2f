"""Differential tests: S chunks equal the published reference chunker's (mdkeychunker 0.4.2), byte for byte.

The reference is a test-only dependency; the harness never imports it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunking_support import LARAVEL, doc, laravel_docs
from harness.chunking.header_led import header_led_chunks

reference = pytest.importorskip(
    "mdkeychunker.chunker", reason="mdkeychunker==0.4.2 (test extra) is not installed"
)
reference_config = pytest.importorskip("mdkeychunker.config")


def reference_chunks(text: str, tau_min: int, tau_max: int) -> list[tuple[str, str]]:
    cfg = reference_config.Config(min_chunk_size=tau_min, max_chunk_size=tau_max)
    return [(c.text, c.section_title) for c in reference.MarkdownChunker(cfg).chunk(text)]


def our_chunks(text: str, tau_min: int, tau_max: int) -> list[tuple[str, str]]:
    d = doc(text)
    chunks = header_led_chunks(d, tau_min=tau_min, tau_max=tau_max)
    for c in chunks:
        (s, e), = c.spans
        # the span's source text holds the same blocks: equal up to whitespace and line endings
        assert d.text[s:e].split() == c.text.split()
    return [(c.text, c.section_path) for c in chunks]


@pytest.mark.skipif(not LARAVEL.is_dir(), reason=f"real Laravel docs not found at {LARAVEL}")
def test_all_laravel_files_give_the_reference_chunks_with_default_taus():
    docs = laravel_docs()
    assert len(docs) == 98
    differing = [
        d.doc_id for d in docs if our_chunks(d.text, 100, 1500) != reference_chunks(d.text, 100, 1500)
    ]
    assert differing == []


@pytest.mark.skipif(not LARAVEL.is_dir(), reason=f"real Laravel docs not found at {LARAVEL}")
@pytest.mark.parametrize("tau_min, tau_max", [(0, 200), (300, 700), (50, 4000)])
def test_laravel_files_match_the_reference_at_other_taus(tau_min, tau_max):
    for d in laravel_docs()[::7]:
        assert our_chunks(d.text, tau_min, tau_max) == reference_chunks(d.text, tau_min, tau_max), d.doc_id


# --- generated Markdown mixing every block kind, including the cases where the two rule sets part ---

words = st.lists(st.sampled_from(["alpha", "beta", "x|y", "#tag", "1.2", "*", "-", "`", "> q", "gamma"]),
                 min_size=1, max_size=8).map(" ".join)
indent = st.sampled_from(["", " ", "  ", "   ", "    ", "\t", "      "])
title = st.one_of(words, st.sampled_from(["", " ", "#", "A #", "Title ##"]))

atx = st.builds(
    lambda n, t, close: "#" * n + " " + t + close,
    st.integers(1, 7),
    title,
    st.sampled_from(["", " #", " ##"]),
)
bare_hash = st.sampled_from(["#", "#nospace", "####### seven", "   # indented", "    # four"])
setext = st.builds(lambda t, u: f"{t}\n{u}", words, st.sampled_from(["===", "---", "  --", "= =", "- - -"]))
paragraph = st.lists(st.builds(lambda i, w: i + w, indent, words), min_size=1, max_size=4).map("\n".join)
bullet = st.builds(
    lambda i, m, w: f"{i}{m} {w}", indent, st.sampled_from(["-", "*", "+", "1.", "2)", "10.", "-\t"]), words
)
list_block = st.lists(st.one_of(bullet, st.builds(lambda i, w: i + w, indent, words), st.just("")),
                      min_size=1, max_size=6).map(lambda ls: "\n".join(["- item"] + ls))
fence_char = st.sampled_from(["```", "~~~", "````", "``` py", "~~~~ x"])
code = st.builds(
    lambda f, body, closed, closer_indent: (
        f"{f}\n" + "\n".join(body) + (f"\n{closer_indent}{f.split()[0]}" if closed else "")
    ),
    fence_char,
    st.lists(st.one_of(words, st.just(""), st.just("# not a header")), max_size=4),
    st.booleans(),
    st.sampled_from(["", "   ", "    "]),
)
table = st.builds(
    lambda head, delim, rows: "\n".join([head, delim] + rows),
    st.sampled_from(["| a | b |", "a | b", "| only |"]),
    st.sampled_from(["|---|---|", "| --- |", "--- | ---", "|:-:|--:|", "| - |"]),
    st.lists(st.sampled_from(["| 1 | 2 |", "3 | 4", "| x |", "no pipe"]), max_size=3),
)
quote = st.lists(
    st.builds(lambda i, w: f"{i}> {w}", st.sampled_from(["", " ", "  "]), words), min_size=1, max_size=3
).map("\n".join)
lazy = st.builds(lambda q, w: f"{q}\n{w}", quote, words)
rule = st.sampled_from(["---", "***", "___", "* * *", "- - -", " ___"])
html = st.sampled_from(['<a name="x"></a>', "<div>\nbody\n</div>", "<!-- c -->"])
long_para = st.integers(50, 1800).map(lambda n: ("lorem ipsum " * (n // 12 + 1))[:n].strip())

block = st.one_of(
    atx,
    bare_hash,
    setext,
    paragraph,
    list_block,
    code,
    table,
    quote,
    lazy,
    rule,
    html,
    long_para,
    st.builds(lambda w: "    " + w, words),
)
separator = st.sampled_from(["\n", "\n\n", "\n\n\n", "\n \n", "\n\t\n\n"])
front_matter = st.sampled_from(
    [
        "",
        "---\na: 1\n...\nb: 2\n---\n",
        "---\ntitle: x\n---\n",
        "\ufeff---\na: 1\n---\n",
        "---\nunclosed: yes\n",
        "---\n",
    ]
)


@st.composite
def markdown(draw):
    blocks = draw(st.lists(block, max_size=14))
    seps = draw(st.lists(separator, min_size=len(blocks), max_size=len(blocks)))
    text = draw(front_matter) + "".join(b + s for b, s in zip(blocks, seps))
    if draw(st.booleans()):
        text = text.rstrip("\n")
    newline = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    return text.replace("\n", newline)


taus = st.sampled_from([(100, 1500), (0, 40), (20, 120), (150, 300), (500, 2000), (0, 1)])


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=markdown(), tau=taus)
def test_generated_markdown_gives_the_reference_chunks(text, tau):
    assert our_chunks(text, *tau) == reference_chunks(text, *tau)


@pytest.mark.parametrize(
    "text",
    [
        "# A\n\n    indented php\n    $x = 1;\n\nafter\n",  # no indented code: a paragraph
        '<a name="x"></a>\n# H\n\nbody\n',  # no HTML block
        "para\n| --- |\nmore\n",  # a one-cell delimiter is no table; "|" ends the paragraph
        "> quote\nlazy line\n",  # no lazy continuation
        "- item\ncontinued\n",  # no lazy list continuation
        "# A\n\n" + "x" * 90 + "\n\n\n\n" + "y" * 20 + "\n",  # blank lines do not count toward size
        "text\r\n# H\r\nbody\r\n",  # CRLF
        "```\nunclosed\n\n",  # an unclosed fence runs to the end, trailing lines included
    ],
)
def test_documented_differences_from_commonmark_follow_the_reference(text):
    for tau in [(0, 40), (100, 1500)]:
        assert our_chunks(text, *tau) == reference_chunks(text, *tau)


@pytest.mark.skipif(not LARAVEL.is_dir(), reason=f"real Laravel docs not found at {LARAVEL}")
def test_harness_chunk_cli_prints_the_reference_chunks_for_the_laravel_files(capsys):
    import json

    from harness.cli.main import main

    files = sorted(LARAVEL.glob("*.md"))
    assert main(["chunk", "--arm", "S", *map(str, files)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = [
        (str(p), text, section)
        for p in files
        for text, section in reference_chunks(p.read_bytes().decode("utf-8"), 100, 1500)
    ]
    assert [(r["doc_id"], r["text"], r["section_path"]) for r in rows] == expected
