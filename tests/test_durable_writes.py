"""Every harness write is flushed to disk (fsync) before it counts as done, unless HARNESS_FSYNC=0 (the
suite's scratch studies); any other value is refused naming the variable."""

from __future__ import annotations

import os

import pytest

import harness.files as files
from harness.errors import HarnessError
from harness.llm.cache import CacheRecord, GenerationCache, prompt_sha256
from harness.study_lock import study_lock


def _write_everything(root) -> None:
    """An atomic write in a journaled folder (the file, then its journal line), a generation cache line and
    the study lock."""
    files.atomic_write_text(root / "results" / "a.txt", "a\n")
    cache = GenerationCache(root / "g.jsonl")
    messages = [{"role": "user", "content": "hello"}]
    cache.put(CacheRecord("k", "ollama", "m", "d", prompt_sha256(messages), 0, "{}", 3, 2, 0.1, 0.0))
    cache.close()
    with study_lock(root / "study.lock", "harness test"):
        pass


@pytest.fixture
def flushed(tmp_path, monkeypatch) -> list[int]:
    """The descriptors os.fsync was called on, with tmp_path/results journaled."""
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd) or real(fd))
    results = tmp_path / "results"
    monkeypatch.setattr(files, "_journaled", {str(results): os.path.realpath(results)})
    return calls


def test_by_default_every_write_is_flushed(tmp_path, monkeypatch, flushed):
    monkeypatch.delenv("HARNESS_FSYNC", raising=False)
    _write_everything(tmp_path)
    assert len(flushed) == 4  # the file, its journal line, the cache's line, the lock


def test_harness_fsync_0_skips_every_flush_and_writes_the_same(tmp_path, monkeypatch, flushed):
    monkeypatch.setenv("HARNESS_FSYNC", "0")
    _write_everything(tmp_path)
    assert flushed == []
    assert (tmp_path / "results" / "a.txt").read_text() == "a\n"
    assert len((tmp_path / "g.jsonl").read_bytes().splitlines()) == 1


@pytest.mark.parametrize("value", ["yes", "", "2"])
def test_another_value_is_refused_naming_the_variable(tmp_path, monkeypatch, value):
    monkeypatch.setenv("HARNESS_FSYNC", value)
    with pytest.raises(HarnessError, match="HARNESS_FSYNC="):
        files.atomic_write_text(tmp_path / "a.txt", "a\n")
    with pytest.raises(HarnessError, match="HARNESS_FSYNC="):
        GenerationCache(tmp_path / "g.jsonl")
