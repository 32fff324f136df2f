"""Generation cache (keys, torn lines, a killed build), replay misses and the spend ledger."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from llm_fake_ollama import FakeOllama
from llm_study import CountingBackend, kill_after_lines, make_study, small_corpus

from harness.arms.llm_arms import build_llm_arm
from harness.arms.registry import BUILDERS
from harness.errors import InputError
from harness.llm.base import Completion, ReplayMiss, SpendCapReached
from harness.llm.cache import CacheRecord, GenerationCache, cache_key, prompt_sha256
from harness.llm.ledger import SpendLedger
from harness.llm.replay import ReplayBackend
from harness.llm.session import LlmSession
from harness.grid.paths import generations_path

ROOT = Path(__file__).resolve().parents[1]
IDENTITY = {"backend": "ollama", "model": "m", "digest": "d1", "options": {"temperature": 0}}
MESSAGES = [{"role": "user", "content": "hello"}]


def record(key: str, text: str = "{}", cost: float = 0.0) -> CacheRecord:
    return CacheRecord(key, "ollama", "m", "d1", prompt_sha256(MESSAGES), 0, text, 3, 2, 0.1, cost)


def test_key_changes_with_every_component():
    base = cache_key(IDENTITY, MESSAGES, schema=None, seed=0)
    assert base == cache_key(dict(IDENTITY), [dict(MESSAGES[0])], schema=None, seed=0)
    variants = [
        cache_key(IDENTITY | {"backend": "llama.cpp"}, MESSAGES, schema=None, seed=0),
        cache_key(IDENTITY | {"model": "m2"}, MESSAGES, schema=None, seed=0),
        cache_key(IDENTITY | {"digest": "d2"}, MESSAGES, schema=None, seed=0),
        cache_key(IDENTITY | {"options": {"temperature": 0.5}}, MESSAGES, schema=None, seed=0),
        cache_key(IDENTITY, [{"role": "user", "content": "hello!"}], schema=None, seed=0),
        cache_key(IDENTITY, MESSAGES, schema={"type": "object"}, seed=0),
        cache_key(IDENTITY, MESSAGES, schema=None, seed=1),
        cache_key(IDENTITY, MESSAGES, schema=None, seed=0, options={"num_predict": 9}),
    ]
    assert len({base, *variants}) == 1 + len(variants)


def test_torn_last_line_is_cut_and_appends_stay_valid(tmp_path):
    path = tmp_path / "g.jsonl"
    with GenerationCache(path) as cache:
        cache.put(record("k1"))
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"key": "k2", "text": "half a li')  # a write cut short by SIGKILL
    with GenerationCache(path) as cache:
        assert cache.torn_bytes_dropped == len(b'{"key": "k2", "text": "half a li')
        assert cache.get("k1") is not None and cache.get("k2") is None
        cache.put(record("k3"))
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and [json.loads(x)["key"] for x in lines[:-1]] == ["k1", "k3"]


def test_put_writes_at_once_and_one_background_flush_covers_many_lines(tmp_path, monkeypatch):
    import os
    import threading
    import time

    path = tmp_path / "g.jsonl"
    flushed_sizes, real_fsync = [], os.fsync

    def slow_fsync(fd):  # a disk that takes 50 ms per flush
        time.sleep(0.05)
        flushed_sizes.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    monkeypatch.setenv("HARNESS_FSYNC", "1")  # the suite's default skips the flush (tests/conftest.py)
    cache = GenerationCache(path)
    start = time.perf_counter()
    threads = [
        threading.Thread(target=lambda i=i: [cache.put(record(f"k{i}-{j}")) for j in range(5)])
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    assert took < 0.2, f"40 puts took {took:.2f} s: they waited for the disk"  # waiting: 5 x 50 ms at least
    assert (
        len(path.read_bytes().splitlines()) == 40
    )  # in the file (a killed process keeps them) before any close
    cache.close()
    assert (
        flushed_sizes and flushed_sizes[-1] == path.stat().st_size
    )  # close returns only once all is flushed
    assert len(flushed_sizes) < 40  # flushes were shared between lines


def test_a_failed_flush_is_raised_naming_the_file(tmp_path, monkeypatch):
    import errno
    import os

    def failing_fsync(fd):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    monkeypatch.setenv("HARNESS_FSYNC", "1")
    cache = GenerationCache(tmp_path / "g.jsonl")
    cache.put(record("k1"))
    with pytest.raises(OSError, match=r"g\.jsonl: flushing the generation cache to disk failed: .*I/O error"):
        cache.wait_durable()
    with pytest.raises(OSError, match="flushing the generation cache"):
        cache.put(record("k2"))
    with pytest.raises(OSError, match="flushing the generation cache"):
        cache.close()


def test_an_unchanged_cache_is_parsed_once_and_a_changed_one_again(tmp_path, monkeypatch):
    """The arms of one model open its cache one after another: its lines are parsed once per content."""
    import harness.llm.cache as module

    path = tmp_path / "g.jsonl"
    with GenerationCache(path) as cache:
        cache.put(record("k1"))
        cache.put(record("k2", cost=0.5))
    parsed = []
    real = module.json.loads
    monkeypatch.setattr(module.json, "loads", lambda line: parsed.append(line) or real(line))
    for _ in range(3):
        with GenerationCache(path, read_only=True) as cache:
            assert cache.get("k2").cost_usd == 0.5 and len(cache) == 2
    assert len(parsed) == 2  # two lines, parsed by the first open only
    with GenerationCache(path) as cache:
        cache.put(record("k2", text='{"a": 1}'))  # a later line for the same key wins
    with GenerationCache(path) as cache:
        assert cache.get("k2").text == '{"a": 1}' and len(cache) == 2
    assert len(parsed) == 3  # the grown file: only its new line was parsed


def test_a_cache_whose_parsed_bytes_changed_is_parsed_whole_again(tmp_path, monkeypatch):
    """Only a file that grew past the bytes parsed before reuses them: an edit of those bytes, even one that
    keeps their length and appends a line, is read afresh."""
    import harness.llm.cache as module

    path = tmp_path / "g.jsonl"
    with GenerationCache(path) as cache:
        cache.put(record("k1", text="old"))
        cache.put(record("k2"))
    with GenerationCache(path, read_only=True) as cache:
        assert cache.get("k1").text == "old"
    edited = path.read_bytes().replace(b'"text": "old"', b'"text": "new"')
    path.write_bytes(edited + json.dumps(json.loads(edited.splitlines()[1]) | {"key": "k3"}).encode() + b"\n")
    parsed = []
    real = module.json.loads
    monkeypatch.setattr(module.json, "loads", lambda line: parsed.append(line) or real(line))
    with GenerationCache(path, read_only=True) as cache:
        assert cache.get("k1").text == "new" and cache.get("k3") is not None and len(cache) == 3
    assert len(parsed) == 3


def test_a_cache_cut_shorter_than_the_bytes_parsed_before_holds_only_its_lines(tmp_path):
    """A file shorter than what was parsed before (lines removed, or replaced by a shorter one) is read
    afresh: no record of the removed lines is served from memory."""
    path = tmp_path / "g.jsonl"
    with GenerationCache(path) as cache:
        for key in ("k1", "k2", "k3"):
            cache.put(record(key))
    with GenerationCache(path, read_only=True) as cache:
        assert len(cache) == 3
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:1]))
    with GenerationCache(path, read_only=True) as cache:
        assert len(cache) == 1 and cache.get("k1") is not None and cache.get("k3") is None


def test_corrupt_complete_line_is_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "g.jsonl"
    with GenerationCache(path) as cache:
        cache.put(record("k1"))
    path.write_bytes(path.read_bytes() + b"not json\n")
    with pytest.raises(InputError, match=r"g\.jsonl \(record 2\): generation cache line 2 is corrupt"):
        GenerationCache(path)


def test_fresh_ignores_old_answers_and_later_lines_win(tmp_path):
    path = tmp_path / "g.jsonl"
    with GenerationCache(path) as cache:
        cache.put(record("k1", text="old"))
    with GenerationCache(path, fresh=True) as cache:
        assert cache.get("k1") is None
        cache.put(record("k1", text="new"))
    with GenerationCache(path) as cache:
        assert cache.get("k1").text == "new"


def test_ledger_cap_stops_before_the_call_that_would_pass_it(tmp_path):
    backend = CountingBackend(cost=0.4)
    with GenerationCache(tmp_path / "g.jsonl") as cache:
        session = LlmSession(backend, cache, SpendLedger("E", cap_usd=1.0))
        session.call("a", schema=None, seed=0)
        session.call("b", schema=None, seed=0)
        with pytest.raises(SpendCapReached, match=r"arm E: spend cap \$1\.0000 reached \(spent \$0\.8000"):
            session.call("c", schema=None, seed=0)
        assert backend.calls == 2  # the third call never reached the backend
        session.call("a", schema=None, seed=0)  # a cached answer costs nothing new and is allowed
        totals = session.ledger.totals()
    assert (totals.calls, totals.fresh_calls, totals.cache_hits) == (3, 2, 1)
    assert totals.cost_usd == pytest.approx(1.2)  # the cached call's original cost is the arm's cost
    with pytest.raises(ValueError, match="spend cap for arm 'E' must be >= 0, got -1"):
        SpendLedger("E", cap_usd=-1)


def test_zero_cap_allows_no_billed_call_but_local_calls_pass(tmp_path):
    with GenerationCache(tmp_path / "g.jsonl") as cache:
        billed = CountingBackend()
        with pytest.raises(SpendCapReached):
            LlmSession(billed, cache, SpendLedger("Es", cap_usd=0.0)).call("x", schema=None, seed=0)
        assert billed.calls == 0
        local = CountingBackend(cost=0.0)
        local.billed = False
        LlmSession(local, cache, SpendLedger("E", cap_usd=0.0)).call("x", schema=None, seed=0)
        assert local.calls == 1


def test_replay_miss_names_the_prompt_hash(tmp_path):
    with GenerationCache(tmp_path / "g.jsonl") as cache:
        original = CountingBackend()
        LlmSession(original, cache, SpendLedger("E", None)).call("known", schema=None, seed=0)
        replay = ReplayBackend.for_cache(original, cache.digests_for("counting", "m"), pinned=None)
        session = LlmSession(replay, cache, SpendLedger("E", None))
        assert json.loads(session.call("known", schema=None, seed=0).text) == {"ok": True}
        wanted = prompt_sha256([{"role": "user", "content": "unknown"}])
        with pytest.raises(ReplayMiss, match=f"no cached answer for prompt {wanted}"):
            session.call("unknown", schema=None, seed=0)
    assert original.calls == 1
    with pytest.raises(Exception, match="holds no answers from counting model 'm'"):
        ReplayBackend.for_cache(original, [], pinned=None)
    with pytest.raises(Exception, match="under 2 digests .*pin one with `digest:`"):
        ReplayBackend.for_cache(original, ["a", "b"], pinned=None)


BUILD_SCRIPT = """
import sys
sys.path[:0] = [{root!r}, {tests!r}]
from llm_study import small_corpus
from harness.arms.llm_arms import build_llm_arm
from harness.arms.registry import BUILDERS
from harness.study import Study
study = Study.at({study!r})
docs, chunks = small_corpus(n_docs=4, n_chunks=6)
build_llm_arm(study, "E", study.arms["E"], docs, chunks, render=BUILDERS["E"].render, progress=False)
print("finished")
"""


def test_killed_build_leaves_no_corrupt_line_and_rerun_repeats_no_cached_call(tmp_path):
    docs, chunks = small_corpus(n_docs=4, n_chunks=6)  # 24 calls
    script = tmp_path / "build.py"
    with FakeOllama(delay_s=0.05) as fake:
        model = {"backend": "ollama", "name": "fake", "host": fake.host, "num_ctx": 4096, "num_predict": 256}
        study = make_study(tmp_path / "study", {"m": model}, {"E": {"kind": "E", "model": "m"}})
        script.write_text(
            textwrap.dedent(BUILD_SCRIPT).format(
                root=str(ROOT), tests=str(ROOT / "tests"), study=str(study.root)
            )
        )
        cache_file = generations_path(study, "m")
        raw = kill_after_lines(script, cache_file, 8)
        asked_before = dict(fake.chat_calls)
        complete = raw[: raw.rfind(b"\n") + 1].decode().splitlines()
        assert 8 <= len(complete) < 24
        cached_prompts = {json.loads(line)["prompt_sha256"] for line in complete}  # every line parses

        result = build_llm_arm(
            study, "E", study.arms["E"], docs, chunks, render=BUILDERS["E"].render, progress=False
        )
    repeated = {prompt for (prompt, _), n in fake.chat_calls.items() if n > 1}
    assert not repeated & cached_prompts  # nothing in the cache is asked again
    assert len(repeated) <= 2  # at most the calls in flight (two workers) are lost
    assert len(fake.chat_calls) == 24
    assert set(asked_before) <= set(fake.chat_calls)
    assert result.manifest["run"]["cache_hits"] == len(complete)
    assert all(not c.generated["llm_failed"] for c in result.chunks)
    lines = cache_file.read_text().splitlines()
    assert len({json.loads(line)["key"] for line in lines}) == 24 == len(lines)


class ScriptedBackend(CountingBackend):
    """Answers from a script and records the (seed, temperature) each call was made with."""

    billed = False

    def __init__(self, answers):
        super().__init__(cost=0.0)
        self.answers, self.seen = list(answers), []

    def complete(self, prompt, *, schema, seed, options=None) -> Completion:
        self.seen.append((seed, (self.options | dict(options or {}))["temperature"]))
        return Completion(self.answers.pop(0), 5, 2, 0.01, 0.0, "d1")


def test_retries_sample_at_the_retry_temperature_and_are_cached_apart(tmp_path):
    backend = ScriptedBackend(["not json", '{"a": 1}'])
    with GenerationCache(tmp_path / "g.jsonl") as cache:
        session = LlmSession(backend, cache, SpendLedger("E", None), retry_options={"temperature": 0.4})
        result = session.call_json("p", schema={}, seeds=[0, 1, 2, 3], validate=lambda v: v)
        assert (result.value, result.attempts) == ({"a": 1}, 2)
        assert backend.seen == [(0, 0), (1, 0.4)]  # the first attempt keeps the configured temperature
        again = LlmSession(backend, cache, SpendLedger("E", None), retry_options={"temperature": 0.4})
        assert again.call_json("p", schema={}, seeds=[0, 1, 2, 3], validate=lambda v: v).value == {"a": 1}
    assert len(backend.seen) == 2  # the rerun was answered from the cache, retry included
    without = ScriptedBackend(["not json", '{"a": 1}'])
    with GenerationCache(tmp_path / "h.jsonl") as cache:
        LlmSession(without, cache, SpendLedger("E", None)).call_json(
            "p", schema={}, seeds=[0, 1], validate=lambda v: v
        )
    assert without.seen == [(0, 0), (1, 0)]


def test_a_raw_newline_inside_a_string_is_not_a_parse_failure(tmp_path):
    backend = ScriptedBackend(['{"a": "two\nlines"}'])
    with GenerationCache(tmp_path / "g.jsonl") as cache:
        result = LlmSession(backend, cache, SpendLedger("E", None)).call_json(
            "p", schema={}, seeds=[0, 1], validate=lambda v: v)
    assert (result.value, result.attempts) == ({"a": "two\nlines"}, 1)
