"""Chunker arms from outside the harness (docs/plugins.md): a `kind: python` function of the study's plugins/,
and the LangChain, LlamaIndex and Chonkie adapters. Every chunk is located in the source text; what cannot be
located is counted, and a document none of whose chunks is found is refused with its id."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.arms.builder import BuildInputs
from harness.arms.plugin_arms import unlocated_warning
from harness.arms.registry import build_chunks
from harness.chunking.outside import locate_pieces, outside_chunks
from harness.config.arm_kinds import get_kind, lab_kinds, llm_free_kinds
from harness.config.arms import ARM
from harness.config.fields import Where
from harness.data.model import Document
from harness.errors import HarnessError
from harness.plugins import callable_identity, load_callable

TEXT = "# Title\n\nFirst paragraph here.\n\nSecond   paragraph\nwraps here.\n\nFirst paragraph here.\n"
DOC = Document("d/one.md", "docs", TEXT)


def _arm(raw: dict):
    return ARM(raw, Where(None, ("arms", "x")))


def _build(raw: dict, root: Path | None, documents=(DOC,)):
    cfg = _arm(raw)
    inputs = BuildInputs(
        list(documents),
        None,
        dict,
        study=SimpleNamespace(root=root) if root else None,
        arm="x",
        arm_config=cfg,
        progress=False,
    )
    return build_chunks(get_kind(cfg.kind), inputs)


def _plugin(root: Path, body: str, name: str = "cutter") -> None:
    (root / "plugins").mkdir(parents=True, exist_ok=True)
    (root / "plugins" / f"{name}.py").write_text(body, encoding="utf-8")


def test_texts_are_located_in_order_verbatim_or_with_whitespace_collapsed():
    pieces = [
        "# Title",
        "First paragraph here.",
        "Second paragraph wraps here.",
        "First paragraph here.",
        "  ",
    ]
    slices, counts = locate_pieces(DOC, pieces, what="arm x")
    # the repeated paragraph is placed on its second occurrence: pieces are searched after the previous one
    first, second = TEXT.index("First"), TEXT.rindex("First")
    assert [s for s, _ in slices] == [0, first, TEXT.index("Second"), second]
    assert TEXT[slices[2][0]:slices[2][1]] == "Second   paragraph\nwraps here."
    assert counts == {"verbatim": 3, "normalised": 1, "blank": 1}


def test_spans_are_taken_as_given_and_bad_pieces_are_refused_naming_the_document():
    chunks, counts = outside_chunks(DOC, [(0, 7), [9, 30]], what="arm x")
    assert [c.text for c in chunks] == [TEXT[0:7], TEXT[9:30]] and counts == {"spans": 2}
    assert chunks[1].spans == ((9, 30),) and chunks[1].start_line == 3
    with pytest.raises(HarnessError, match=r"arm x: document d/one.md: piece 1 is the span \(5, 999\)"):
        locate_pieces(DOC, [(0, 5), (5, 999)], what="arm x")
    with pytest.raises(HarnessError, match="piece 0 is a dict"):
        locate_pieces(DOC, [{"text": "x"}], what="arm x")


def test_unlocated_chunks_are_counted_and_a_document_with_none_found_is_refused():
    slices, counts = locate_pieces(DOC, ["# Title", "not in the text"], what="arm x")
    assert len(slices) == 1 and counts["unlocated"] == 1
    with pytest.raises(HarnessError, match="arm x: document d/one.md: none of its 2 chunks is found"):
        locate_pieces(DOC, ["nowhere", "not in the text"], what="arm x")


def test_a_python_arm_from_the_study_plugins_folder(tmp_path):
    _plugin(tmp_path, "def cut(text, doc_id, sep='\\n\\n'):\n"
                      "    return [p for p in text.split(sep)] + ['made up by ' + doc_id]\n")
    built = _build({"kind": "python", "callable": "cutter:cut", "params": {"sep": "\n\n"}}, tmp_path)
    texts = [c.text for c in built.chunks]
    assert texts == [
        "# Title",
        "First paragraph here.",
        "Second   paragraph\nwraps here.",
        "First paragraph here.\n",
    ]
    assert all(TEXT[c.spans[0][0]:c.spans[0][1]] == c.text for c in built.chunks)
    assert built.manifest["chunker"] == "python"
    assert built.manifest["pieces"]["unlocated"] == 1 and built.manifest["unlocated_by_document"] == {
        "d/one.md": 1
    }
    assert "1 chunk(s) from 1 document(s) are not in the source text" in unlocated_warning(
        "c/x", built.manifest
    )
    again = _build({"kind": "python", "callable": "cutter:cut", "params": {"sep": "\n\n"}}, tmp_path)
    assert [c.chunk_id for c in again.chunks] == [c.chunk_id for c in built.chunks]


def test_a_python_arm_returning_spans_and_its_errors(tmp_path):
    _plugin(tmp_path, "def spans(text, doc_id):\n    return [(0, 7), (9, len(text))]\n"
                      "def broken(text, doc_id):\n    raise ValueError('no luck')\n"
                      "def scalar(text, doc_id):\n    return 'one chunk'\n")
    assert [c.spans for c in _build({"kind": "python", "callable": "cutter:spans"}, tmp_path).chunks] == [
        ((0, 7),), ((9, len(TEXT)),)]
    with pytest.raises(
        HarnessError,
        match=r"arm `x` \(kind python\): the chunker failed on document d/one.md: "
        "ValueError: no luck",
    ):
        _build({"kind": "python", "callable": "cutter:broken"}, tmp_path)
    with pytest.raises(HarnessError, match="returned a str, not a list"):
        _build({"kind": "python", "callable": "cutter:scalar"}, tmp_path)
    with pytest.raises(HarnessError, match="module `cutter` .plugins/. has no function `missing`"):
        _build({"kind": "python", "callable": "cutter:missing"}, tmp_path)
    with pytest.raises(HarnessError, match="cannot import `nosuchmodule`"):
        _build({"kind": "python", "callable": "nosuchmodule:cut"}, tmp_path)


def test_the_schema_refuses_a_callable_of_another_shape():
    with pytest.raises(HarnessError, match=r"`arms.x.callable` is not `module:function`"):
        _arm({"kind": "python", "callable": "cutter.cut"})
    with pytest.raises(HarnessError, match=r"`arms.x.splitter` is required"):
        _arm({"kind": "langchain"})


def test_an_edited_plugin_is_loaded_afresh_and_a_package_keeps_its_relative_imports(tmp_path):
    _plugin(tmp_path, "def f(text, doc_id):\n    return 1\n", name="edited")
    assert load_callable("edited:f", tmp_path, what="x")("", "") == 1
    _plugin(tmp_path, "def f(text, doc_id):\n    return 2\n", name="edited")
    assert load_callable("edited:f", tmp_path, what="x")("", "") == 2
    package = tmp_path / "plugins" / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "helpers.py").write_text("SIZE = 3\n", encoding="utf-8")
    (package / "cut.py").write_text("from .helpers import SIZE\ndef f(text, doc_id):\n    return SIZE\n")
    assert load_callable("pkg.cut:f", tmp_path, what="x")("", "") == 3


def test_loading_a_plugin_writes_no_bytecode_into_the_study(tmp_path, monkeypatch):
    """plugins/ is released with the study: no __pycache__ appears there, even where Python writes
    bytecode."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    _plugin(tmp_path, "def f(text, doc_id):\n    return 4\n", name="quiet")
    package = tmp_path / "plugins" / "quietpkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "cut.py").write_text("def f(text, doc_id):\n    return 5\n", encoding="utf-8")
    assert load_callable("quiet:f", tmp_path, what="x")("", "") == 4
    assert load_callable("quietpkg.cut:f", tmp_path, what="x")("", "") == 5
    assert not list((tmp_path / "plugins").rglob("__pycache__"))
    assert sys.dont_write_bytecode is False  # the setting is the process's again


def test_the_freeze_identity_of_a_study_plugin_and_of_an_installed_module(tmp_path):
    _plugin(tmp_path, "def cut(text, doc_id):\n    return [text]\n")
    assert callable_identity("cutter:cut", tmp_path) == {
        "callable": "cutter:cut",
        "study_plugin": "plugins/cutter.py",
    }
    installed = callable_identity("yaml:safe_load", tmp_path)
    assert installed["package"] == "PyYAML" and installed["version"] and len(installed["sha256"]) == 64
    with pytest.raises(HarnessError, match="module `nosuchmodule` is neither under the study's plugins/"):
        callable_identity("nosuchmodule:f", tmp_path)


def test_plugin_kinds_are_neither_lab_kinds_nor_choices_of_harness_chunk():
    plugin = {"python", "langchain", "llamaindex", "chonkie"}
    assert not plugin & {k.name for k in lab_kinds()} and not plugin & set(llm_free_kinds())


def test_a_missing_library_names_the_extra(monkeypatch):
    real = importlib.import_module

    def refuse(name, *args):
        if name.startswith("langchain_text_splitters"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", refuse)
    with pytest.raises(HarnessError, match=r"needs `langchain_text_splitters`, which is not installed .*"
                                           r"pip install -e '\.\[plugins\]'"):
        _build({"kind": "langchain", "splitter": "CharacterTextSplitter"}, None)


def _library(module: str):
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} is not installed (the optional extra: pip install -e '.[plugins]')")


LONG = Document("d/long.md", "docs", "# Guide\n\n" + "\n\n".join(
    f"## Part {i}\n\nPart {i} explains   how the keeper files record {i}, line by line.\nIt ends here."
    for i in range(8)))


@pytest.mark.parametrize("raw, module", [
    ({"kind": "langchain", "splitter": "RecursiveCharacterTextSplitter", "params": {"chunk_size": 120,
                                                                                   "chunk_overlap": 20}},
     "langchain_text_splitters"),
    ({"kind": "llamaindex", "parser": "SentenceSplitter", "params": {"chunk_size": 40, "chunk_overlap": 5}},
     "llama_index.core"),
    ({"kind": "chonkie", "chunker": "RecursiveChunker", "params": {"chunk_size": 64}}, "chonkie"),
], ids=["langchain", "llamaindex", "chonkie"])
def test_library_adapters_give_chunks_of_source_text(raw, module):
    _library(module)
    built = _build(raw, None, documents=(LONG,))
    assert len(built.chunks) > 2
    assert all(LONG.text[c.spans[0][0]:c.spans[0][1]] == c.text for c in built.chunks)
    assert built.manifest["pieces"]["unlocated"] == 0 and built.manifest["chunker"] == raw["kind"]
    assert [c.chunk_id for c in _build(raw, None, documents=(LONG,)).chunks] == [
        c.chunk_id for c in built.chunks
    ]


def test_an_unknown_library_class_is_refused_naming_the_arm():
    _library("chonkie")
    with pytest.raises(
        HarnessError, match=r"arm `x` \(kind chonkie\): `chonkie` has no class `NoSuchChunker`"
    ):
        _build({"kind": "chonkie", "chunker": "NoSuchChunker"}, None)
