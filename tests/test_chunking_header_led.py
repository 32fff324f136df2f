"""Header-led grouping rules, one test each, with small taus so sizes are visible by eye."""


import pytest

from chunking_support import check_blocks_whole, check_chunk_records, check_covers_content, doc
from harness.chunking.header_led import header_led_chunks
from harness.errors import InputError


def chunk(text, tau_min=0, tau_max=1500):
    d = doc(text)
    chunks = header_led_chunks(d, tau_min=tau_min, tau_max=tau_max)
    check_chunk_records(d, chunks, exact=False)
    check_covers_content(d, chunks)
    check_blocks_whole(d, chunks)
    return chunks


def para(n, ch="w"):
    """A paragraph of exactly n characters."""
    return ch * n


@pytest.mark.parametrize("text", ["", "  \n\n\t\n", "\r\n"])
def test_empty_document_gives_no_chunks(text):
    assert chunk(text, tau_min=100) == []


def test_header_closes_a_chunk_that_has_body():
    cs = chunk("# A\n\nbody a\n\n## B\n\nbody b\n")
    assert [c.text for c in cs] == ["# A\n\nbody a", "## B\n\nbody b"]
    assert [c.section_path for c in cs] == ["A", "A > B"]
    assert [c.block_types for c in cs] == [("header", "paragraph")] * 2


def test_headers_without_body_accumulate_and_the_deepest_names_the_section():
    cs = chunk("# A\n## B\n### C\n\nbody\n")
    assert len(cs) == 1
    assert cs[0].section_path == "A > B > C"
    assert cs[0].block_types == ("header", "paragraph")


def test_body_block_closes_the_chunk_when_adding_it_would_exceed_tau_max():
    # "# H" (3) + "\n\n" + 20 + "\n\n" + 20 = 47 > 40: the second paragraph starts a new chunk
    cs = chunk(f"# H\n\n{para(20, 'a')}\n\n{para(20, 'b')}\n", tau_max=40)
    assert [c.text for c in cs] == [f"# H\n\n{para(20, 'a')}", para(20, "b")]
    assert [c.section_path for c in cs] == ["H", "H"]  # a size split stays in its section
    # exactly tau_max fits: 3 + 2 + 20 + 2 + 13 = 40
    assert len(chunk(f"# H\n\n{para(20)}\n\n{para(13)}\n", tau_max=40)) == 1


def test_header_only_chunk_is_never_closed_for_size():
    cs = chunk(f"# H\n\n{para(100)}\n", tau_max=40)
    assert [c.text for c in cs] == [f"# H\n\n{para(100)}"]


def test_a_block_longer_than_tau_max_is_never_split():
    big = " ".join(["word"] * 500)
    cs = chunk(f"intro\n\n{big}\n\nafter\n", tau_max=100)
    assert [c.text for c in cs] == ["intro", big, "after"]


@pytest.mark.parametrize(
    "bulky, kind",
    [
        ("```\n" + "c" * 40 + "\n```", "code"),
        ("| a | b |\n|---|---|\n| " + "c" * 30 + " | d |", "table"),
        ("> " + "q" * 40, "blockquote"),
    ],
)
def test_bulky_block_that_brings_the_chunk_to_tau_max_closes_it(bulky, kind):
    cs = chunk(f"# H\n\n{bulky}\n\nnext\n", tau_max=len(bulky) + 5)
    assert [c.text for c in cs] == [f"# H\n\n{bulky}", "next"]
    assert cs[0].block_types == ("header", kind)


def test_front_matter_reaching_tau_max_closes_the_chunk():
    fm = "---\n" + "k: " + "v" * 40 + "\n---"
    cs = chunk(f"{fm}\nafter\n", tau_max=len(fm))
    assert [c.text for c in cs] == [fm, "after"]
    assert cs[0].block_types == ("front_matter",)


def test_small_chunk_joins_the_next_and_takes_the_longer_parts_section_path():
    text = f"# A\n\nshort\n\n# B\n\n{para(60)}\n"
    cs = chunk(text, tau_min=20, tau_max=100)
    assert len(cs) == 1 and cs[0].text == text.rstrip("\n")
    assert cs[0].section_path == "B"
    assert cs[0].block_types == ("header", "paragraph")


def test_joins_repeat_while_the_previous_chunk_stays_under_tau_min():
    cs = chunk("# A\n\na\n\n# B\n\nb\n\n# C\n\nc\n\n# D\n\n" + para(40) + "\n", tau_min=25, tau_max=100)
    # A (6) + B -> 14 < 25, + C -> 22 < 25, + D -> over tau_min: everything joins
    assert len(cs) == 1 and cs[0].section_path == "D"


def test_join_stops_at_twice_tau_max():
    text = f"# A\n\nx\n\n# B\n\n{para(95)}\n"  # parts of 6 and 100 characters; the separator is not counted
    assert len(chunk(text, tau_min=20, tau_max=53)) == 1  # cap 106: the join fits exactly
    assert len(chunk(text, tau_min=20, tau_max=52)) == 2  # cap 104 < 106: no join


def test_longer_part_wins_the_section_path_earlier_part_on_a_tie():
    cs = chunk("# A\n\nxx\n\n# B\n\nyy\n", tau_min=50, tau_max=100)
    assert len(cs) == 1 and cs[0].section_path == "A"


def test_final_short_chunk_joins_its_predecessor_under_the_cap():
    text = f"# A\n\n{para(60)}\n\n# B\n\nend\n"
    cs = chunk(text, tau_min=20, tau_max=100)
    assert len(cs) == 1 and cs[0].section_path == "A"
    assert len(chunk(text, tau_min=20, tau_max=36)) == 2  # 73 > 2 * 36: the short tail stays alone


def test_trailing_header_only_content_joins_the_last_chunk():
    cs = chunk(f"# A\n\n{para(60)}\n\n## Empty\n\n### Also empty\n", tau_min=0, tau_max=100)
    assert len(cs) == 1
    assert cs[0].section_path == "A"
    assert cs[0].text.endswith("### Also empty")


def test_headers_only_document_is_one_chunk_named_by_its_first_header():
    cs = chunk("# A\n## B\n### C\n", tau_min=100)
    assert len(cs) == 1 and cs[0].section_path == "A" and cs[0].block_types == ("header",)


def test_front_matter_only_document_is_one_chunk():
    cs = chunk("---\ntitle: Only\n---\n", tau_min=100)
    assert [(c.text, c.block_types, c.section_path) for c in cs] == [
        ("---\ntitle: Only\n---", ("front_matter",), "")
    ]


def test_deep_headers_build_a_six_level_path():
    text = "".join(f"{'#' * i} H{i}\n\n" for i in range(1, 7)) + "body\n\n####### not a header\n"
    cs = chunk(text)
    assert cs[-1].section_path == "H1 > H2 > H3 > H4 > H5 > H6"


def test_setext_headers_lead_chunks():
    cs = chunk("Title\n=====\n\nintro\n\nPart\n----\n\nbody\n")
    assert [c.section_path for c in cs] == ["Title", "Title > Part"]


def test_unclosed_fence_keeps_the_rest_of_the_document_in_one_block():
    text = "# A\n\nintro\n\n```\n# not a header\n" + "line\n" * 400
    cs = chunk(text, tau_max=200)
    assert (
        cs[-1].block_types == ("code",) and cs[-1].text.startswith("```") and cs[-1].text.endswith("line\n")
    )
    assert all(c.section_path == "A" for c in cs)


def test_multi_megabyte_paragraph_is_one_chunk():
    big = "lorem ipsum " * 250_000  # 3 MB, no blank line
    cs = chunk(f"# Big\n\n{big}\n")
    assert len(cs) == 1 and len(cs[0].text) > 3_000_000


def test_crlf_document_chunks_like_its_lf_twin():
    lf = f"# A\n\n{para(50)}\n\n## B\n\n- x\n- y\n\n```\ncode\n```\n"
    crlf = lf.replace("\n", "\r\n")
    a, b = chunk(lf, tau_min=10, tau_max=60), chunk(crlf, tau_min=10, tau_max=60)
    assert len(a) == len(b) > 1
    assert [c.text for c in a] == [c.text.replace("\r\n", "\n") for c in b]
    assert [(c.section_path, c.start_line, c.end_line, c.block_types) for c in a] == [
        (c.section_path, c.start_line, c.end_line, c.block_types) for c in b
    ]


def test_chunk_ids_positions_and_line_ranges():
    cs = chunk("# A\n\nbody a\n\n# B\n\nbody b\n")
    assert [c.chunk_id.split("#")[1][:4] for c in cs] == ["0000", "0001"]
    assert [(c.start_line, c.end_line) for c in cs] == [(1, 3), (5, 7)]


@pytest.mark.parametrize(
    "tau_min, tau_max, match",
    [
        (100, 0, r"tau_max must be a positive integer .* got 0"),
        (100, 1.5, r"tau_max must be a positive integer .* got 1\.5"),
        (2000, 1500, r"tau_min must be an integer between 0 and tau_max=1500, got 2000"),
        (-1, 1500, r"tau_min .* got -1"),
    ],
)
def test_bad_taus_are_named(tau_min, tau_max, match):
    with pytest.raises(InputError, match=match):
        header_led_chunks(doc("# A\n"), tau_min=tau_min, tau_max=tau_max)


def test_trailing_header_tail_joins_a_chunk_closed_at_tau_max_with_no_cap():
    # paragraph (14) + table (19) = 33 reaches tau_max, so the table closes the chunk; the setext header
    # after it is the document's header-only tail and joins that chunk whatever the size
    text = "1 1 1 1 111111\n| a | b |\n|---|:-:|\n\n1 1 1 11111 1111111 1111111111\n===\n"
    cs = chunk(text, tau_min=0, tau_max=33)
    assert [c.block_types for c in cs] == [("paragraph", "table", "header")]
