"""The Markdown block parser: one test per parsing rule, on inline fixtures."""

import pytest

from chunking_support import check_blocks_tile, kinds
from harness.chunking.blocks import parse_blocks


def parse(text):
    blocks = parse_blocks(text)
    check_blocks_tile(text, blocks)
    return blocks


def texts(text):
    return [text[b.start : b.end] for b in parse(text)]


@pytest.mark.parametrize("text", ["", "\n", "   \n\t\n", "\r\n\r\n"])
def test_empty_and_blank_text_has_no_blocks(text):
    assert parse(text) == []


def test_atx_headers_levels_titles_and_closing_hashes():
    blocks = parse("# One\n## Two ##\n###### Six\n####### seven\n#nospace\n#\n")
    assert kinds(blocks) == ["header", "header", "header", "paragraph", "header"]
    assert [(b.level, b.title) for b in blocks if b.kind == "header"] == [(1, "One"), (2, "Two"), (6, "Six"), (1, "")]
    assert blocks[3].start_line == 4 and blocks[3].end_line == 5  # "####### seven" and "#nospace"


def test_atx_header_indented_four_spaces_is_code_not_header():
    assert kinds(parse("para\n\n    # not a header\n")) == ["paragraph", "code"]
    assert kinds(parse("   # three spaces is a header\n")) == ["header"]


def test_setext_headers_take_the_whole_paragraph_as_title():
    blocks = parse("Big\ntitle\n===\n\nSmall title\n---\n")
    assert [(b.kind, b.level, b.title) for b in blocks] == [("header", 1, "Big title"), ("header", 2, "Small title")]
    assert (blocks[0].start_line, blocks[0].end_line) == (1, 3)


def test_dashes_without_a_paragraph_are_a_thematic_break():
    assert kinds(parse("text\n\n---\n\n***\n\n_ _ _\n\n- - -\n")) == ["paragraph"] + ["thematic_break"] * 4


def test_fence_backticks_and_tildes_with_blank_lines_and_hash_lines_inside():
    text = "```php\n# not a header\n\n| a | b |\n|---|---|\n```\nafter\n\n~~~\nx\n\n~~~\n"
    assert texts(text) == ["```php\n# not a header\n\n| a | b |\n|---|---|\n```", "after", "~~~\nx\n\n~~~"]
    assert kinds(parse(text)) == ["code", "paragraph", "code"]


def test_fence_closes_only_with_same_char_at_least_as_long():
    text = "````\n```\n~~~~\n````` \nafter\n"
    assert texts(text) == ["````\n```\n~~~~\n````` ", "after"]  # a block keeps its lines whole


def test_fence_opener_indent_at_most_three_and_no_backtick_in_info():
    assert kinds(parse("   ```\ncode\n   ```\n")) == ["code"]
    assert kinds(parse("``` a`b\ntext\n")) == ["paragraph"]


def test_unclosed_fence_runs_to_end_without_trailing_blank_lines():
    text = "intro\n\n```\ncode\n# inside\n\n"
    blocks = parse(text)
    assert kinds(blocks) == ["paragraph", "code"]
    assert text[blocks[1].start : blocks[1].end] == "```\ncode\n# inside"


def test_table_needs_a_matching_delimiter_row_and_continues_over_pipe_lines():
    text = "| a | b |\n|:--|--:|\n| 1 | 2 |\n3 | 4\nnot a row\n"
    blocks = parse(text)
    assert kinds(blocks) == ["table", "paragraph"]
    assert text[blocks[0].start : blocks[0].end] == "| a | b |\n|:--|--:|\n| 1 | 2 |\n3 | 4"


def test_table_with_mismatched_cells_is_not_a_table():
    assert kinds(parse("a | b\n|---|\n")) == ["paragraph"]
    assert [(b.kind, b.title) for b in parse("a | b\n---\n")] == [("header", "a | b")]


def test_table_interrupts_a_paragraph():
    assert kinds(parse("intro line\n| a | b |\n|---|---|\n")) == ["paragraph", "table"]


def test_list_continues_over_items_indented_lines_and_blank_lines_before_either():
    text = "- one\n  more of one\n\n- two\n\n    indented para\n3. three\n\nafter\n"
    blocks = parse(text)
    assert kinds(blocks) == ["list", "paragraph"]
    assert text[blocks[0].start : blocks[0].end] == "- one\n  more of one\n\n- two\n\n    indented para\n3. three"


def test_list_takes_lazy_lines_but_ends_at_other_blocks():
    assert kinds(parse("- item\nlazy line\n# Header\n")) == ["list", "header"]
    assert kinds(parse("- item\n---\n")) == ["list", "thematic_break"]
    assert kinds(parse("- item\n> quote\n")) == ["list", "blockquote"]


def test_list_keeps_nested_fences_with_blank_and_hash_lines():
    text = "1. Step\n\n    ```bash\n# comment\n\nrun\n    ```\n\n2. Next\n\nafter\n"
    blocks = parse(text)
    assert kinds(blocks) == ["list", "paragraph"]
    fence_start = text.index("    ```bash")
    fence_end = text.index("    ```\n\n2.") + len("    ```")
    assert blocks[0].fences == ((fence_start, fence_end),)


def test_list_with_unclosed_nested_fence_runs_to_end():
    blocks = parse("- a\n  ```\n  code\n\nnot list text\n\n")
    assert kinds(blocks) == ["list"]
    assert blocks[0].end_line == 5 and blocks[0].fences[0][1] == blocks[0].end


def test_blockquote_continues_over_quote_and_lazy_lines_and_ends_at_blank():
    text = "> [!NOTE]\n> first\nlazy\n\n> second\n"
    blocks = parse(text)
    assert kinds(blocks) == ["blockquote", "blockquote"]
    assert text[blocks[0].start : blocks[0].end] == "> [!NOTE]\n> first\nlazy"
    assert kinds(parse("> quote\n# Header\n")) == ["blockquote", "header"]


def test_paragraph_interruptions():
    assert kinds(parse("p\n# H\n")) == ["paragraph", "header"]
    assert kinds(parse("p\n```\nc\n```\n")) == ["paragraph", "code"]
    assert kinds(parse("p\n> q\n")) == ["paragraph", "blockquote"]
    assert kinds(parse("p\n- item\n")) == ["paragraph", "list"]
    assert kinds(parse("p\n1. item\n")) == ["paragraph", "list"]
    assert kinds(parse("p\n***\n")) == ["paragraph", "thematic_break"]
    # CommonMark: an ordered item not starting at 1, an empty item and indented code do not interrupt
    assert kinds(parse("The year\n2024. was long\n*\n    indented\n")) == ["paragraph"]


def test_indented_code_spans_blank_lines_between_indented_lines():
    text = "    a\n\n    b\n\nc\n"
    assert texts(text) == ["    a\n\n    b", "c"]
    assert kinds(parse(text)) == ["code", "paragraph"]


def test_front_matter_only_at_start_closed_by_dashes_or_dots():
    text = "---\ntitle: x\n# not a header\n...\n# Real\n"
    blocks = parse(text)
    assert kinds(blocks) == ["front_matter", "header"]
    assert blocks[1].section_path == "Real" and blocks[0].section_path == ""
    assert kinds(parse("---\nonly: front matter\n---\n")) == ["front_matter"]
    assert kinds(parse("text\n\n---\na: b\n---\n")) == ["paragraph", "thematic_break", "header"]


def test_unclosed_front_matter_is_a_thematic_break():
    assert kinds(parse("---\ntitle: x\n")) == ["thematic_break", "paragraph"]


def test_section_paths_follow_the_header_stack():
    text = "# A\nx\n## B\nx\n### C\nx\n## D\nx\n# E\n###### F\nx\n#\nx\n"
    paths = [b.section_path for b in parse(text) if b.kind == "paragraph"]
    assert paths == ["A", "A > B", "A > B > C", "A > D", "E > F", ""]


def test_crlf_offsets_are_exact_and_exclude_the_line_ending():
    text = "# Title\r\n\r\nLine one\r\nline two\r\n\r\n```\r\ncode\r\n```\r\n"
    blocks = parse(text)
    assert kinds(blocks) == ["header", "paragraph", "code"]
    assert blocks[0].title == "Title"
    assert [text[b.start : b.end] for b in blocks] == ["# Title", "Line one\r\nline two", "```\r\ncode\r\n```"]
    assert [(b.start_line, b.end_line) for b in blocks] == [(1, 1), (3, 4), (6, 8)]


def test_last_line_without_newline():
    assert texts("# H\n\nlast") == ["# H", "last"]
