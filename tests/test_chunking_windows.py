"""F512c, F256t and FL windows: exact sizes, strides and overlaps, non-ASCII boundaries."""

import pytest

from chunking_support import check_chunk_records, doc
from harness.chunking.header_led import header_led_chunks
from harness.chunking.windows import (
    f256t_chunks,
    f512c_chunks,
    fl_chunks,
    median_token_length,
    token_boundaries,
)
from harness.errors import InputError
from harness.tokens import cl100k

PROSE = "".join(f"Sentence number {i} talks about topic {i % 7}.\n" for i in range(300))
UNICODE = "".join(f"Größe {i}: 日本語のテキスト 🎉 naïve café — ünïcödé {i}\n" for i in range(200))


def test_f512c_windows_are_consecutive_512_char_slices():
    d = doc(PROSE)
    cs = f512c_chunks(d)
    check_chunk_records(d, cs)
    assert [c.spans[0] for c in cs] == [(s, min(s + 512, len(PROSE))) for s in range(0, len(PROSE), 512)]
    assert all(len(c.text) == 512 for c in cs[:-1]) and 0 < len(cs[-1].text) <= 512


def test_windows_report_section_path_at_their_start_and_block_kinds_they_overlap():
    text = "# A\n\n" + "a" * 600 + "\n\n## B\n\n```\ncode\n```\n"
    cs = f512c_chunks(doc(text))
    assert [c.section_path for c in cs] == ["A", "A"]
    assert cs[0].block_types == ("header", "paragraph")
    assert cs[1].block_types == ("paragraph", "header", "code")


def test_whitespace_only_windows_are_dropped_and_positions_count_kept_ones():
    text = "x" * 10 + " " * 1100 + "y"
    cs = f512c_chunks(doc(text))
    assert [c.spans[0] for c in cs] == [(0, 512), (1024, 1111)]
    assert [c.chunk_id.split("#")[1][:4] for c in cs] == ["0000", "0001"]


def test_token_boundaries_match_the_encoding_on_ascii():
    enc = cl100k()
    tokens = enc.encode_ordinary(PROSE)
    bounds = token_boundaries(PROSE)
    assert len(bounds) == len(tokens) + 1 and bounds[0] == 0 and bounds[-1] == len(PROSE)
    for k in (0, 1, 57, len(tokens) - 1):
        assert PROSE[bounds[k] : bounds[k + 1]] == enc.decode([tokens[k]])


def test_f256t_windows_have_256_tokens_with_stride_224():
    enc = cl100k()
    d = doc(PROSE)
    cs = f256t_chunks(d)
    check_chunk_records(d, cs, overlapping=True)
    tokens = enc.encode_ordinary(PROSE)
    n = len(tokens)
    starts = list(range(0, n, 224))
    starts = starts[: next(i for i, s in enumerate(starts) if s + 256 >= n) + 1]
    assert len(cs) == len(starts) > 3
    for c, s in zip(cs, starts):
        assert c.text == enc.decode(tokens[s : s + 256])
    # neighbours overlap by exactly 32 tokens
    assert cs[1].spans[0][0] < cs[0].spans[0][1]
    assert len(enc.encode_ordinary(PROSE[cs[1].spans[0][0] : cs[0].spans[0][1]])) == 32


def test_token_windows_on_non_ascii_text_are_exact_slices_rounding_split_characters_up():
    d = doc(UNICODE)
    check_chunk_records(d, f256t_chunks(d), overlapping=True)
    check_chunk_records(d, fl_chunks(d, tokens=37))
    fl = fl_chunks(d, tokens=37)
    assert "".join(c.text for c in fl) == UNICODE  # no overlap, no gap
    # a character that cl100k splits into several tokens stays whole in the earlier window
    bounds = token_boundaries("語")
    assert len(bounds) > 2 and bounds == [0] + [1] * (len(bounds) - 1)


def test_special_token_strings_are_plain_text():
    d = doc("before <|endoftext|> after")
    assert [c.text for c in f256t_chunks(d)] == [d.text]


def test_fl_windows_tile_the_document_with_the_given_length():
    enc = cl100k()
    d = doc(PROSE)
    cs = fl_chunks(d, tokens=100)
    assert "".join(c.text for c in cs) == PROSE
    tokens = enc.encode_ordinary(PROSE)
    assert [c.text for c in cs] == [enc.decode(tokens[i : i + 100]) for i in range(0, len(tokens), 100)]


def test_median_token_length_is_the_lower_median_of_s_chunks():
    enc = cl100k()
    chunks = header_led_chunks(
        doc("# A\n\n" + "alpha " * 50 + "\n\n# B\n\n" + "beta " * 300 + "\n"), tau_min=0
    )
    lengths = sorted(len(enc.encode_ordinary(c.text)) for c in chunks)
    assert len(lengths) == 2 and median_token_length(chunks) == lengths[0]
    with pytest.raises(InputError, match="no S chunks"):
        median_token_length([])


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_documents_give_no_windows(text):
    d = doc(text)
    assert f512c_chunks(d) == [] and f256t_chunks(d) == [] and fl_chunks(d, tokens=10) == []


def test_multi_megabyte_paragraph_is_split_by_windows():
    big = "lorem ipsum " * 250_000
    cs = f512c_chunks(doc(big))
    assert len(cs) == -(-len(big) // 512) and "".join(c.text for c in cs) == big


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda d: f512c_chunks(d, chars=0), r"chars must be a positive integer, got 0"),
        (lambda d: f256t_chunks(d, tokens=-5), r"tokens must be a positive integer, got -5"),
        (
            lambda d: f256t_chunks(d, tokens=10, stride=11),
            r"stride must not exceed the window length \(10 tokens\), got 11",
        ),
        (lambda d: fl_chunks(d, tokens="300"), r"tokens must be a positive integer, got '300'"),
    ],
)
def test_bad_window_parameters_are_named(call, match):
    with pytest.raises(InputError, match=match):
        call(doc("some text"))
