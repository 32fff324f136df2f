"""FRESH / REPLAY are read by the CLI and passed down; replay never touches the generation cache."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
from llm_fake_ollama import FakeOllama
from llm_study import make_study, small_corpus

from harness.arms.llm_arms import build_llm_arm
from harness.arms.registry import BUILDERS
from harness.cli import build_arms as cli
from harness.errors import HarnessError, InputError
from harness.llm.base import ReplayMiss
from harness.llm.cache import GenerationCache
from harness.grid.paths import generations_path


def ollama_model(fake: FakeOllama) -> dict:
    return {
        "backend": "ollama",
        "name": "fake",
        "host": fake.host,
        "seed": 0,
        "num_ctx": 4096,
        "num_predict": 256,
    }


def build(study, docs, chunks, **kw):
    return build_llm_arm(
        study, "E", study.arms["E"], docs, chunks, render=BUILDERS["E"].render, progress=False, **kw
    )


def snapshot(root: Path) -> dict[str, tuple[str, bytes | None, int]]:
    """Every file and directory under root: kind, bytes, mtime in nanoseconds."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.stat()
        out[p.relative_to(root).as_posix()] = (
            ("dir", None, st.st_mtime_ns) if p.is_dir() else ("file", p.read_bytes(), st.st_mtime_ns)
        )
    return out


def test_replay_leaves_every_file_byte_identical_and_creates_nothing(tmp_path):
    docs, chunks = small_corpus(n_docs=2, n_chunks=2)
    with FakeOllama() as fake:
        study = make_study(tmp_path, {"m": ollama_model(fake)}, {"E": {"kind": "E", "model": "m"}})
        first = build(study, docs, chunks)
    cache_file = generations_path(study, "m")
    with open(cache_file, "ab") as f:  # a torn last line: a writable open would cut it off
        f.write(b'{"key": "torn')
    os.utime(
        cache_file, ns=(1_000_000_000, 1_000_000_000)
    )  # an mtime a rewrite could not reproduce by chance
    before = snapshot(tmp_path)

    replayed = build(study, docs, chunks, replay=True)  # the server is gone: answers come from the cache only

    assert snapshot(tmp_path) == before
    assert [c.to_json() for c in replayed.chunks] == [c.to_json() for c in first.chunks]
    assert (
        replayed.manifest["run"]["fresh_calls"] == 0 and replayed.manifest["run"]["torn_bytes_dropped"] == 13
    )


def test_replay_miss_writes_nothing_either(tmp_path):
    docs, chunks = small_corpus(n_docs=1, n_chunks=2)
    with FakeOllama() as fake:
        study = make_study(tmp_path, {"m": ollama_model(fake)}, {"E": {"kind": "E", "model": "m"}})
        build(study, docs, chunks)
    before = snapshot(tmp_path)
    more_docs, more_chunks = small_corpus(n_docs=2, n_chunks=2)  # doc1 was never generated
    with pytest.raises(ReplayMiss, match="no cached answer"):
        build(study, more_docs, more_chunks, replay=True)
    assert snapshot(tmp_path) == before


def test_replay_without_a_cache_file_is_an_error_and_creates_nothing(tmp_path):
    docs, chunks = small_corpus(n_docs=1, n_chunks=1)
    study = make_study(
        tmp_path, {"m": {"backend": "ollama", "name": "fake"}}, {"E": {"kind": "E", "model": "m"}}
    )
    before = snapshot(tmp_path)
    with pytest.raises(InputError, match=r"generations/m\.jsonl: replay: no generation cache here"):
        build(study, docs, chunks, replay=True)
    assert snapshot(tmp_path) == before and not (tmp_path / "results").exists()


def test_a_read_only_cache_refuses_writes(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_bytes(b"")
    cache = GenerationCache(path, read_only=True)
    with pytest.raises(RuntimeError, match="open read-only"):
        cache.put(None)  # refused before the record is looked at
    with pytest.raises(ValueError, match="fresh=True .* and read_only=True contradict"):
        GenerationCache(path, fresh=True, read_only=True)


def test_the_arm_builder_does_not_read_the_environment(tmp_path, monkeypatch):
    docs, chunks = small_corpus(n_docs=1, n_chunks=2)
    with FakeOllama() as fake:
        study = make_study(tmp_path, {"m": ollama_model(fake)}, {"E": {"kind": "E", "model": "m"}})
        build(study, docs, chunks)
        monkeypatch.setenv("FRESH", "1")
        warm = build(
            study, docs, chunks
        )  # FRESH in the environment is the CLI's business, not this function's
        assert warm.manifest["run"]["fresh_calls"] == 0 and fake.total_chat_calls == 2
        fresh = build(study, docs, chunks, fresh=True)
        assert fresh.manifest["run"]["fresh_calls"] == 2 and fake.total_chat_calls == 4
    with pytest.raises(HarnessError, match="arm E: fresh .* and replay .* contradict"):
        build(study, docs, chunks, fresh=True, replay=True)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize(
    "argv, env, expected",
    [
        ((), {}, (False, False)),
        (("--fresh",), {}, (True, False)),
        (("--replay",), {}, (False, True)),
        ((), {"FRESH": "1"}, (True, False)),
        ((), {"REPLAY": "1"}, (False, True)),
        ((), {"FRESH": "0", "REPLAY": ""}, (False, False)),
    ],
)
def test_cli_reads_flags_and_environment(argv, env, expected):
    assert cli.llm_mode(parse(*argv), env) == expected


def test_cli_refuses_contradicting_or_malformed_modes(capsys):
    with pytest.raises(
        HarnessError, match=r"fresh \(--fresh / FRESH=1\) and replay \(--replay / REPLAY=1\) contradict"
    ):
        cli.llm_mode(parse("--fresh"), {"REPLAY": "1"})
    with pytest.raises(
        HarnessError, match=r"environment variable FRESH must be 1 or 0 \(or unset\), got 'yes'"
    ):
        cli.llm_mode(parse(), {"FRESH": "yes"})
    with pytest.raises(SystemExit):
        parse("--fresh", "--replay")
    assert "not allowed with argument" in capsys.readouterr().err


def test_cli_help_documents_the_modes():
    from harness.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    text = sub.choices["build-arms"].format_help()
    for needle in ("--fresh", "--replay", "FRESH=1", "REPLAY=1", "the cache is never written"):
        assert needle in text
