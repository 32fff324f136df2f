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
    assert kinds(blocks) == ["header", "header", "header", "paragraph", "paragraph", "paragraph"]
    assert [(b.level, b.title) for b in blocks if b.kind == "header"] == [(1, "One"), (2, "Two"), (6, "Six")]
    # a line starting with "#" ends a paragraph even when it is no header
    assert [(b.start_line, b.end_line) for b in blocks[3:]] == [(4, 4), (5, 5), (6, 6)]


def test_no_indented_code_block_indented_lines_are_text():
    assert kinds(parse("para\n\n    # four spaces\n")) == ["paragraph", "paragraph"]  # no header, no code
    assert kinds(parse("intro\n\n    $x = 1;\n    $y = 2;\n")) == ["paragraph", "paragraph"]
    assert kinds(parse("    - indented item\n")) == ["list"]


def test_no_html_block_a_tag_line_is_a_paragraph():
    assert texts('<a name="x"></a>\n# H\n') == ['<a name="x"></a>', "# H"]
    assert kinds(parse('<a name="x"></a>\n# H\n')) == ["paragraph", "header"]


def test_setext_header_is_one_line_over_its_underline():
    blocks = parse("Big\ntitle\n===\n\nSmall title\n---\n")
    # "Big" opens a paragraph that takes "title" and the underline: only a single line over it is a header
    assert [(b.kind, b.title) for b in blocks] == [("paragraph", ""), ("header", "Small title")]
    assert blocks[1].level == 2 and (blocks[1].start_line, blocks[1].end_line) == (5, 6)
    assert [(b.kind, b.title) for b in parse("a | b\n---\n")] == [("header", "a | b")]


def test_rules_and_star_lists():
    # "* * *" and "- - -" look like list items once stripped, and lists are checked before rules
    assert kinds(parse("text\n\n---\n\n***\n\n_ _ _\n\n- - -\n")) == ["paragraph"] + [
        "thematic_break"
    ] * 3 + ["list"]


def test_fence_backticks_and_tildes_with_blank_lines_and_hash_lines_inside():
    text = "```php\n# not a header\n\n| a | b |\n|---|---|\n```\nafter\n\n~~~\nx\n\n~~~\n"
    assert texts(text) == ["```php\n# not a header\n\n| a | b |\n|---|---|\n```", "after", "~~~\nx\n\n~~~"]
    assert kinds(parse(text)) == ["code", "paragraph", "code"]


def test_fence_closes_only_with_same_char_at_least_as_long():
    text = "````\n```\n~~~~\n````` \nafter\n"
    assert texts(text) == ["````\n```\n~~~~\n````` ", "after"]


def test_fence_opener_indent_at_most_three_and_no_backtick_in_info():
    assert kinds(parse("   ```\ncode\n   ```\n")) == ["code"]
    assert kinds(parse("``` a`b\ntext\n")) == ["paragraph"]


def test_unclosed_fence_runs_to_the_end_trailing_lines_included():
    text = "intro\n\n```\ncode\n# inside\n\n"
    blocks = parse(text)
    assert kinds(blocks) == ["paragraph", "code"]
    assert blocks[1].text == "```\ncode\n# inside\n\n" and blocks[1].end == len(text)


def test_table_needs_a_delimiter_row_of_two_cells_and_continues_over_pipe_lines():
    text = "| a | b |\n|:--|--:|\n| 1 | 2 |\n3 | 4\nnot a row\n"
    blocks = parse(text)
    assert kinds(blocks) == ["table", "paragraph"]
    assert blocks[0].text == "| a | b |\n|:--|--:|\n| 1 | 2 |\n3 | 4"
    assert kinds(parse("| only |\n| --- |\n")) == ["paragraph", "paragraph"]
    assert kinds(parse("a | b\n|---|---|\n")) == ["table"]  # cell counts need not match


def test_pipe_line_ends_a_paragraph():
    assert kinds(parse("intro line\n| a | b |\n|---|---|\n")) == ["paragraph", "table"]
    assert kinds(parse("intro\nx | y\n")) == ["paragraph", "paragraph"]


def test_list_continues_over_items_deeper_lines_and_blank_lines_before_either():
    text = "- one\n  more of one\n\n- two\n\n    indented para\n3. three\n\nafter\n"
    blocks = parse(text)
    assert kinds(blocks) == ["list", "paragraph"]
    assert blocks[0].text == "- one\n  more of one\n\n- two\n\n    indented para\n3. three"


def test_list_has_no_lazy_continuation():
    assert kinds(parse("- item\nnot lazy\n")) == ["list", "paragraph"]
    assert kinds(parse("- item\n# Header\n")) == ["list", "header"]
    assert kinds(parse("  - indented item\n  same indent text\n")) == ["list", "paragraph"]


def test_list_records_nested_fences_for_the_paragraph_chunker():
    text = "1. Step\n\n    ```bash\n    # comment\n\n    run\n    ```\n\n2. Next\n\nafter\n"
    blocks = parse(text)
    assert kinds(blocks) == ["list", "paragraph"]
    fence_start = text.index("    ```bash")
    fence_end = text.index("    ```\n\n2.") + len("    ```")
    assert blocks[0].fences == ((fence_start, fence_end),)


def test_blockquote_has_no_lazy_continuation():
    text = "> [!NOTE]\n> first\nlazy\n\n> second\n"
    assert kinds(parse(text)) == ["blockquote", "paragraph", "blockquote"]
    assert kinds(parse("  > indented quote\n> more\n")) == ["blockquote"]


def test_paragraph_ends_at_hash_fence_list_quote_and_pipe_lines_only():
    assert kinds(parse("p\n#tag\n")) == ["paragraph", "paragraph"]
    assert kinds(parse("p\n```\nc\n```\n")) == ["paragraph", "code"]
    assert kinds(parse("p\n> q\n")) == ["paragraph", "blockquote"]
    assert kinds(parse("p\n2024. item\n")) == ["paragraph", "list"]
    # a rule, an empty item or an indented line does not end a paragraph
    assert kinds(parse("The year\n***\n*\n    indented\n")) == ["paragraph"]


def test_front_matter_only_at_start_closed_by_dashes():
    text = "---\ntitle: x\n# not a header\n...\n---\n# Real\n"
    blocks = parse(text)
    assert kinds(blocks) == ["front_matter", "header"]
    assert blocks[1].section_path == "Real" and blocks[0].section_path == ""
    assert kinds(parse("\ufeff---\nonly: front matter\n---\n")) == ["front_matter"]
    assert kinds(parse("text\n\n---\na: b\n---\n")) == ["paragraph", "thematic_break", "header"]


def test_unclosed_front_matter_is_a_thematic_break():
    assert kinds(parse("---\ntitle: x\n")) == ["thematic_break", "paragraph"]


def test_section_paths_join_every_open_title_empty_ones_included():
    text = "# A\nx\n## B\nx\n### C\nx\n## D\nx\n# E\n###### F\nx\n#  \nx\n"
    paths = [b.section_path for b in parse(text) if b.kind == "paragraph"]
    assert paths == ["A", "A > B", "A > B > C", "A > D", "E > F", ""]


def test_crlf_and_cr_offsets_are_exact_and_text_is_normalised():
    for nl in ("\r\n", "\r"):
        text = f"# Title{nl}{nl}Line one{nl}line two{nl}{nl}```{nl}code{nl}```{nl}"
        blocks = parse(text)
        assert kinds(blocks) == ["header", "paragraph", "code"]
        assert [b.text for b in blocks] == ["# Title", "Line one\nline two", "```\ncode\n```"]
        assert [text[b.start : b.end] for b in blocks][1] == f"Line one{nl}line two"
        assert [(b.start_line, b.end_line) for b in blocks] == [(1, 1), (3, 4), (6, 8)]


def test_last_line_without_newline():
    assert texts("# H\n\nlast") == ["# H", "last"]
