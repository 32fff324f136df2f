"""Property tests: on generated Markdown, spans reproduce the source, no block is split, windows are exact."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunking_support import (
    check_blocks_tile,
    check_blocks_whole,
    check_chunk_records,
    check_covers_content,
    doc,
)
from harness.chunking.blocks import parse_blocks
from harness.chunking.header_led import header_led_chunks
from harness.chunking.paragraphs import paragraph_chunks
from harness.chunking.windows import f512c_chunks, fl_chunks, token_boundaries

WORD = st.text(alphabet="abcxyz éü日🎉|`~#->*_:1.", min_size=1, max_size=12)
LINE = st.lists(WORD, min_size=1, max_size=12).map(" ".join)

FRAGMENTS = st.one_of(
    LINE,
    st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 7), LINE),
    st.builds(lambda t, u: f"{t}\n{u}", LINE, st.sampled_from(["===", "---"])),
    st.builds(
        lambda f, body, close: f"{f}\n{body}\n{close}",
        st.sampled_from(["```", "~~~", "````", "  ```py"]),
        st.lists(st.one_of(LINE, st.just("")), max_size=6).map("\n".join),
        st.sampled_from(["```", "~~~", "`````", "", "  ```"]),
    ),
    st.builds(
        lambda rows: "| a | b |\n|---|:-:|\n" + "\n".join(f"| {r} | x |" for r in rows),
        st.lists(LINE, max_size=4),
    ),
    st.lists(
        st.builds(lambda m, t: f"{m} {t}", st.sampled_from(["-", "*", "1.", "2)", "   -"]), LINE),
        min_size=1,
        max_size=4,
    ).map("\n".join),
    st.lists(LINE, min_size=1, max_size=3).map(lambda ls: "\n".join("> " + x for x in ls)),
    st.sampled_from(["---", "***", "    indented code", "", "   ", "---\nk: v\n---"]),
)
SEPARATORS = st.sampled_from(["\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\n  \n"])


@st.composite
def markdown(draw):
    parts = draw(st.lists(st.tuples(FRAGMENTS, SEPARATORS), max_size=25))
    return "".join(f + s for f, s in parts) + draw(st.sampled_from(["", "\n", "tail"]))


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(markdown())
def test_blocks_tile_the_text(text):
    check_blocks_tile(text, parse_blocks(text))


@SETTINGS
@given(markdown(), st.integers(0, 300), st.integers(1, 400))
def test_header_led_chunks_cover_the_source_and_never_split_a_block(text, tau_min, tau_max):
    tau_min = min(tau_min, tau_max)
    d = doc(text)
    chunks = header_led_chunks(d, tau_min=tau_min, tau_max=tau_max)
    check_chunk_records(d, chunks, exact=False)
    check_covers_content(d, chunks)
    check_blocks_whole(d, chunks)
    blocks = parse_blocks(text)
    for c in chunks:
        (s, e), = c.spans
        inside = [b for b in blocks if s <= b.start and b.end <= e]
        assert c.block_types == tuple(dict.fromkeys(b.kind for b in inside))
        # a document's trailing header-only tail joins the last chunk with no cap; without it, only a
        # single oversized body block (with its headers) can take a chunk past 2 x tau_max
        body_at = [i for i, b in enumerate(inside) if b.kind != "header"]
        core = inside[: body_at[-1] + 1] if body_at else inside
        if sum(len(b.text) for b in core) > 2 * tau_max:
            assert len(body_at) <= 1


@SETTINGS
@given(markdown(), st.integers(1, 300))
def test_paragraph_chunks_are_exact_slices_and_keep_code_whole(text, pack_chars):
    d = doc(text)
    chunks = paragraph_chunks(d, pack_chars=pack_chars)
    check_chunk_records(d, chunks)
    check_covers_content(d, chunks)
    spans = [c.spans[0] for c in chunks]
    for b in parse_blocks(text):
        for start, end in ((b.start, b.end),) * (b.kind == "code") + b.fences:
            end = start + len(text[start:end].rstrip())  # an unclosed fence's trailing blank lines
            assert any(s <= start and end <= e for s, e in spans)


@SETTINGS
@given(markdown(), st.integers(1, 100))
def test_char_windows_sit_on_the_grid_and_drop_only_blank_windows(text, size):
    d = doc(text)
    chunks = f512c_chunks(d, chars=size)
    check_chunk_records(d, chunks)
    kept = {c.spans[0] for c in chunks}
    for start in range(0, len(text), size):
        window = (start, min(start + size, len(text)))
        assert (window in kept) == bool(text[window[0] : window[1]].strip())


@SETTINGS
@given(markdown(), st.integers(1, 40))
def test_token_windows_tile_by_token_boundaries(text, size):
    d = doc(text)
    bounds = token_boundaries(text)
    assert bounds == sorted(bounds) and (not bounds or bounds[-1] == len(text))
    chunks = fl_chunks(d, tokens=size)
    check_chunk_records(d, chunks)
    expected = [(bounds[i], bounds[min(i + size, len(bounds) - 1)]) for i in range(0, len(bounds) - 1, size)]
    expected = [w for w in expected if text[w[0] : w[1]].strip()]
    assert [c.spans[0] for c in chunks] == expected
