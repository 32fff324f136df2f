"""The P chunker: blank-line paragraphs, fences whole, headers ignored, packed to pack_chars."""

import pytest

from chunking_support import check_chunk_records, check_covers_content, doc
from harness.chunking.paragraphs import paragraph_chunks
from harness.errors import InputError


def chunk(text, pack_chars=1500):
    d = doc(text)
    cs = paragraph_chunks(d, pack_chars=pack_chars)
    check_chunk_records(d, cs)
    check_covers_content(d, cs)
    return cs


def test_paragraphs_are_packed_next_fit_and_headers_are_not_boundaries():
    text = "# A\n\n" + "a" * 20 + "\n\n## B\n\n" + "b" * 20 + "\n\n" + "c" * 20 + "\n"
    cs = chunk(text, pack_chars=42)
    # "# A" + a*20 -> 25, + "## B" -> 31, + b*20 -> 53 > 42: close; b*20 + c*20 -> 42 fits exactly
    assert [c.text for c in cs] == ["# A\n\n" + "a" * 20 + "\n\n## B", "b" * 20 + "\n\n" + "c" * 20]
    assert [c.section_path for c in cs] == ["A", "A > B"]  # path where the chunk starts


def test_fences_are_kept_whole_across_blank_lines():
    fence = "```\nline 1\n\n\nline 2\n```"
    cs = chunk(f"intro\n\n{fence}\n\nafter\n", pack_chars=10)
    assert [c.text for c in cs] == ["intro", fence, "after"]
    assert cs[1].block_types == ("code",)


def test_fences_nested_in_lists_are_kept_whole():
    text = "- step\n\n    ```\n    a\n\n    b\n    ```\n"
    cs = chunk(text, pack_chars=5)
    assert [c.text for c in cs] == ["- step", "    ```\n    a\n\n    b\n    ```"]


def test_a_long_paragraph_is_never_split():
    big = "word " * 1000
    cs = chunk(f"x\n\n{big.strip()}\n\ny\n", pack_chars=100)
    assert [len(c.text) for c in cs] == [1, len(big.strip()), 1]


def test_crlf_blank_lines_separate_paragraphs():
    cs = chunk("a\r\n\r\nb\r\n", pack_chars=1)
    assert [c.text for c in cs] == ["a", "b"]


@pytest.mark.parametrize("text", ["", " \n\n"])
def test_empty_documents_give_no_chunks(text):
    assert chunk(text) == []


def test_bad_pack_size_is_named():
    with pytest.raises(InputError, match=r"pack_chars must be a positive integer, got 0"):
        paragraph_chunks(doc("x"), pack_chars=0)
