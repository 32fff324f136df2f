"""`harness chunk` end to end through the dispatcher."""

import json

import pytest

from harness.chunking.header_led import header_led_chunks
from harness.chunking.windows import median_token_length
from harness.cli.main import main
from harness.data.model import Chunk, Document

TEXT = (
    "# Guide\r\n\r\n"
    + "Intro paragraph with words. " * 10
    + "\r\n\r\n## Setup\r\n\r\n"
    + "Run the installer. " * 40
    + "\r\n"
)


def run_chunk(capsys, *argv):
    code = main(["chunk", *argv])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


@pytest.fixture
def md(tmp_path):
    p = tmp_path / "guide.md"
    p.write_bytes(TEXT.encode("utf-8"))
    return p


def test_s_plus_t_prints_rendered_chunks_with_exact_crlf_spans(capsys, md):
    code, rows, _ = run_chunk(capsys, "--arm", "S+T", str(md))
    assert code == 0 and len(rows) == 2
    for row in rows:
        (s, e), = row["spans"]
        # the reference's text normalises line endings; the span still locates the source exactly
        assert TEXT[s:e].replace("\r\n", "\n") == row["text"]
        assert row["indexed_text"] == f"{row['section_path']}\n\n{row['text']}"
        assert row["doc_id"] == md.as_posix()
        Chunk.from_json(row)  # the output contract round-trips
    assert [r["section_path"] for r in rows] == ["Guide", "Guide > Setup"]


def test_tau_options_reach_the_chunker(capsys, md):
    _, rows, _ = run_chunk(capsys, "--arm", "S", "--tau-min", "2000", "--tau-max", "2000", str(md))
    assert len(rows) == 1


def test_fl_defaults_to_the_median_s_length_over_all_files(capsys, md, tmp_path):
    other = tmp_path / "other.md"
    other.write_text("# Other\n\n" + "Different words here. " * 100 + "\n", encoding="utf-8")
    _, rows, _ = run_chunk(capsys, "--arm", "FL", str(md), str(other))
    docs = [Document(p.as_posix(), "", p.read_bytes().decode()) for p in (md, other)]
    tokens = median_token_length([c for d in docs for c in header_led_chunks(d)])
    from harness.chunking.windows import fl_chunks

    expected = [c.text for d in docs for c in fl_chunks(d, tokens=tokens)]
    assert [r["text"] for r in rows] == expected
    _, rows, _ = run_chunk(capsys, "--arm", "FL", "--fl-tokens", "20", str(md))
    assert [r["text"] for r in rows] == [c.text for c in fl_chunks(docs[0], tokens=20)]


def test_missing_file_is_a_clean_error(capsys, tmp_path):
    code, rows, err = run_chunk(capsys, "--arm", "S", str(tmp_path / "nope.md"))
    assert code == 1 and rows == [] and "nope.md: file not found" in err


def test_non_utf8_file_is_a_clean_error(capsys, tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"# Title\n\xff\xfe broken\n")
    code, _, err = run_chunk(capsys, "--arm", "P", str(bad))
    assert code == 1 and "bad.md: not UTF-8 (byte 8)" in err


def test_bad_tau_is_a_clean_error(capsys, md):
    code, _, err = run_chunk(capsys, "--arm", "S", "--tau-max", "0", str(md))
    assert code == 1 and "tau_max must be a positive integer" in err


def test_fl_without_any_s_chunk_needs_fl_tokens(capsys, tmp_path):
    empty = tmp_path / "empty.md"
    empty.write_text("", encoding="utf-8")
    code, _, err = run_chunk(capsys, "--arm", "FL", str(empty))
    assert code == 1 and "FL needs --fl-tokens" in err


def test_unknown_arm_is_rejected_by_the_parser(capsys, md):
    with pytest.raises(SystemExit):
        main(["chunk", "--arm", "E", str(md)])
    assert "invalid choice: 'E'" in capsys.readouterr().err


def test_a_byte_order_mark_is_stripped_as_the_loader_strips_it(capsys, tmp_path):
    """A file saved with a BOM: the header parser would not see `# Guide` behind it, and the chunk's text
    would differ from what a study built from the same file (the loader strips the mark)."""
    from harness.data.common import BOM, read_markdown

    marked = tmp_path / "marked.md"
    marked.write_bytes((BOM + "# Guide\n\nIntro words.\n\n## Setup\n\nRun it.\n").encode("utf-8"))
    _, rows, _ = run_chunk(capsys, "--arm", "S", str(marked))
    loaded = Document(marked.as_posix(), "", read_markdown(marked)[0])
    assert [r["text"] for r in rows] == [c.text for c in header_led_chunks(loaded)]
    assert rows[0]["section_path"] == "Guide" and not rows[0]["text"].startswith(BOM)
