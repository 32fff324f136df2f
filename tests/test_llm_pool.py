"""A pool of model servers (harness.llm.pool) against fake Ollama servers on loopback."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from llm_fake_ollama import DIGEST, FakeOllama
from llm_study import make_study, small_corpus

from harness.arms.llm_arms import build_llm_arm
from harness.arms.registry import BUILDERS
from harness.config.fields import Where
from harness.config.models import MODEL
from harness.errors import HarnessError
from harness.files import atomic_write_jsonl
from harness.llm.base import (
    Backend,
    BackendUnavailable,
    Completion,
    ModelMismatch,
    ServerFailed,
    SpendCapReached,
)
from harness.llm.cache import GenerationCache
from harness.llm.ledger import SpendLedger, study_spend_usd
from harness.llm.pool import HostPool
from harness.llm.session import LlmSession
from harness.grid.paths import generations_path

FAST = {"backoff_s": 0.02, "max_backoff_s": 0.1, "failures_before_down": 3}


def refused_url() -> str:
    """A loopback port nobody listens on: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def pooled(urls, *, concurrency=2, timeout_s=30.0, failover=FAST) -> dict:
    return {"backend": "ollama", "name": "fake", "seed": 0, "num_ctx": 4096, "num_predict": 256,
            "timeout_s": timeout_s, "failover": failover,
            "hosts": [{"url": u, "concurrency": concurrency} for u in urls]}


def build_e(tmp_path, model: dict, docs, chunks, *, workers=2):
    study = make_study(tmp_path, {"m": model}, {"E": {"kind": "E", "model": "m"}},
                       llm={"workers": workers, "retry_seeds": [1, 2, 3], "spend_cap_usd": None})
    return study, build_llm_arm(
        study, "E", study.arms["E"], docs, chunks, render=BUILDERS["E"].render, progress=False
    )


def chunk_bytes(path, result) -> bytes:
    atomic_write_jsonl(path, (c.to_json() for c in result.chunks))
    return path.read_bytes()


def cache_keys(study) -> list[str]:
    return [json.loads(line)["key"] for line in generations_path(study, "m").read_text().splitlines()]


def test_one_and_three_hosts_give_byte_identical_chunk_sets_even_when_one_dies(tmp_path):
    docs, chunks = small_corpus(n_docs=6, n_chunks=4)
    with FakeOllama() as one:
        study1, single = build_e(tmp_path / "one", pooled([one.host]), docs, chunks)
    with (
        FakeOllama(delay_s=0.01) as a,
        FakeOllama(delay_s=0.01, go_down_after=3) as b,
        FakeOllama(delay_s=0.01) as c,
    ):
        study3, three = build_e(tmp_path / "three", pooled([a.host, b.host, c.host]), docs, chunks)
        served = {s["url"]: s["served"] for s in three.manifest["run"]["servers"]}
        assert b.down and served[b.host] >= 3  # the dying server took part, then went away mid-run
        assert sum(served.values()) == 24 and served[a.host] > 0 and served[c.host] > 0
        assert three.manifest["run"]["workers"] == 6  # one worker per slot
    assert chunk_bytes(tmp_path / "1.jsonl", single) == chunk_bytes(tmp_path / "3.jsonl", three)
    assert sorted(cache_keys(study1)) == sorted(cache_keys(study3))  # no host in any key
    assert len(set(cache_keys(study3))) == len(cache_keys(study3)) == 24  # nothing lost, nothing asked twice
    assert single.manifest["backend"]["digest"] == three.manifest["backend"]["digest"] == DIGEST


def test_failover_past_refused_timed_out_and_failing_servers(tmp_path):
    docs, chunks = small_corpus(n_docs=4, n_chunks=3)
    with (
        FakeOllama(delay_s=0.01) as good,
        FakeOllama(delay_s=5.0) as slow,
        FakeOllama(fail_status=500) as broken,
    ):
        model = pooled([refused_url(), slow.host, broken.host, good.host], concurrency=1, timeout_s=0.5)
        study, result = build_e(tmp_path, model, docs, chunks)
    assert all(not c.generated["llm_failed"] for c in result.chunks)
    keys = cache_keys(study)
    assert len(keys) == len(set(keys)) == 12  # exactly one cache entry per chunk
    served = {s["url"]: s["served"] for s in result.manifest["run"]["servers"]}
    assert served[good.host] == 12 and served[slow.host] == 0 and served[broken.host] == 0
    assert good.total_chat_calls == 12  # no call answered twice


def test_a_digest_mismatch_names_both_servers(tmp_path):
    docs, chunks = small_corpus(n_docs=1, n_chunks=1)
    with FakeOllama() as a, FakeOllama(blob="ef" * 32) as b:
        with pytest.raises(
            ModelMismatch, match=rf"server {b.host} serves sha256:{'ef' * 32}, but server {a.host}"
        ):
            build_e(tmp_path, pooled([a.host, b.host]), docs, chunks)
        assert a.total_chat_calls == b.total_chat_calls == 0  # refused before any call


def test_a_server_down_at_the_start_is_checked_before_it_serves(tmp_path):
    pool_cfg = pooled([refused_url()])
    with FakeOllama() as a, FakeOllama(blob="ef" * 32) as b:
        # b is "down" for the first check (its URL swapped in later); when it answers, its digest is checked
        from harness.llm.registry import make_backend

        pool = make_backend(pooled([a.host, b.host]))
        real = pool._servers[1].backend.host_report
        pool._servers[1].backend.host_report = lambda: (_ for _ in ()).throw(BackendUnavailable("down"))
        assert pool.digest == DIGEST
        pool._servers[1].backend.host_report = real
        pool._servers[0].concurrency = 0  # only b is free now
        pool._servers[1].resting_until = 0.0
        with pytest.raises(ModelMismatch, match=b.host):
            pool.complete("hi", schema=None, seed=0)
    assert pool_cfg["hosts"][0]["concurrency"] == 2


def test_every_server_down_stops_the_build_and_a_rerun_repeats_nothing(tmp_path):
    docs, chunks = small_corpus(n_docs=4, n_chunks=3)
    with FakeOllama(go_down_after=2) as a, FakeOllama(go_down_after=2) as b:
        with pytest.raises(BackendUnavailable, match=r"every server of model 'fake' is down"):
            build_e(tmp_path, pooled([a.host, b.host], concurrency=1), docs, chunks)
    study_dir = tmp_path
    done = len(generations_path(make_study(study_dir, {}, {}), "m").read_text().splitlines())
    assert done == 4  # each server answered two calls, all cached
    with FakeOllama() as c:
        study, result = build_e(study_dir, pooled([c.host]), docs, chunks)
    assert c.total_chat_calls == 12 - done and result.manifest["run"]["cache_hits"] == done
    assert len(set(cache_keys(study))) == len(cache_keys(study)) == 12


def test_no_server_answering_at_the_start_is_a_clear_error(tmp_path):
    docs, chunks = small_corpus(n_docs=1, n_chunks=1)
    with pytest.raises(BackendUnavailable, match=r"no server of model 'fake' answers"):
        build_e(tmp_path, pooled([refused_url(), refused_url()]), docs, chunks)


class Priced(Backend):
    """A billed server: fixed price and latency per call; counts its calls and the most it ran at once."""

    name = "priced"
    billed = True

    def __init__(self, cost: float, latency_s: float = 0.0, fail_first: int = 0):
        super().__init__("m", {"temperature": 0})
        self.cost, self.latency_s, self.fail_first = cost, latency_s, fail_first
        self.calls = self.running = self.peak = 0
        self.lock = threading.Lock()

    @property
    def digest(self) -> str:
        return "d1"

    def estimate_cost_usd(self, messages, options) -> float:
        return self.cost

    def complete(self, prompt, *, schema, seed, options=None) -> Completion:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
            failing = self.fail_first > 0
            self.fail_first -= int(failing)
        time.sleep(self.latency_s)
        with self.lock:
            self.running -= 1
            if failing:
                raise ServerFailed("HTTP 503")
            self.calls += 1
        return Completion(json.dumps({"p": prompt}), 5, 2, self.latency_s, self.cost, "d1")


def run_calls(session: LlmSession, prompts, workers: int) -> list[BaseException]:
    errors: list[BaseException] = []
    todo = list(prompts)
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                p = todo.pop(0)
            try:
                session.call(p, schema=None, seed=0)
            except SpendCapReached as e:
                with lock:
                    errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_the_spend_cap_holds_across_servers(tmp_path):
    servers = [Priced(0.1, 0.01), Priced(0.1, 0.01, fail_first=2), Priced(0.1, 0.01)]
    pool = HostPool([(f"s{i}", b, 2) for i, b in enumerate(servers)])
    with GenerationCache(tmp_path / "m.jsonl") as cache:
        session = LlmSession(pool, cache, SpendLedger("E", 1.0))
        errors = run_calls(session, [f"q{i}" for i in range(30)], workers=6)
    assert errors and all("spend cap" in str(e) for e in errors)
    assert sum(b.calls for b in servers) == 10  # ten paid calls fill the cap of 1.0 exactly
    assert study_spend_usd(tmp_path) == pytest.approx(1.0)
    assert max(b.peak for b in servers) <= 2  # no server ever ran more than its concurrency


def test_every_slot_is_used(tmp_path):
    servers = [Priced(0.0, 0.05), Priced(0.0, 0.05)]
    pool = HostPool([("a", servers[0], 3), ("b", servers[1], 1)])
    with GenerationCache(tmp_path / "m.jsonl") as cache:
        run_calls(LlmSession(pool, cache, SpendLedger("E", None)), [f"q{i}" for i in range(24)], workers=4)
    assert (servers[0].peak, servers[1].peak) == (3, 1)
    assert sum(b.calls for b in servers) == 24 and servers[0].calls > servers[1].calls


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"host": "http://x", "hosts": [{"url": "http://y"}]}, r"`models\.m\.hosts` give either `host:`"),
        ({"hosts": [{"url": "http://y"}, {"url": "http://y/"}]}, r"lists http://y more than once"),
        ({"failover": {"backoff_s": 1}}, r"`models\.m\.failover` applies only to a pool"),
        ({"hosts": []}, r"models\.m\.hosts"),
        ({"hosts": [{"url": "http://y", "concurrency": 0}]}, r"concurrency"),
    ],
)
def test_pool_config_errors(entry, message):
    with pytest.raises(HarnessError, match=message):
        MODEL({"backend": "ollama", "name": "fake"} | entry, Where(None, ("models", "m")))


def test_openai_pool_needs_a_server():
    with pytest.raises(
        HarnessError, match=r"`models\.m\.base_url` is required \(or list the servers under `hosts:`\)"
    ):
        MODEL({"backend": "openai-compatible", "name": "x"}, Where(None, ("models", "m")))
    cfg = MODEL(
        {
            "backend": "openai-compatible",
            "name": "x",
            "revision": "abc",
            "hosts": [{"url": "http://a/v1", "concurrency": 8}, {"url": "http://b/v1"}],
        },
        Where(None, ("models", "m")),
    )
    assert [(h.url, h.concurrency) for h in cfg.hosts] == [("http://a/v1", 8), ("http://b/v1", 4)]
