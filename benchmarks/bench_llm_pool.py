"""A pool of model servers (harness.llm.pool) against fake Ollama servers on loopback.

    .venv/bin/python benchmarks/bench_llm_pool.py [--latency 0.2] [--concurrency 4] [--calls-per-slot 8]
    [--quick]

Each fake server answers every chat call after a fixed latency; the servers run in a child process (as
real servers are other processes, so their request handling does not compete with the harness for its
interpreter). For 1, 2 and 4 servers, one worker per slot drives distinct prompts through the real path
(LlmSession: cache key, generation cache append (flushed to disk behind the writers), ledger, pool
dispatch, the ollama client over HTTP). Printed per server count:

- throughput (calls/s) and its ratio to linear scaling from one server (goal: within 10% of linear);
- slot utilisation: time the servers spent answering / (wall time x slots) (goal: at least 90%);
- harness overhead per call: a call's time in the session minus its time in the server call (goal: < 5 ms);
  beside it, the HTTP round trip beyond the server's latency (ollama client and loopback, not the harness).

Then a run with 4 servers where one is killed midway: calls lost (no cache entry) and repeated (a key
cached twice), both goals 0, and which servers answered.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from goals import add_quick, goal  # noqa: E402
from llm_fake_ollama import FakeOllama  # noqa: E402

from harness.llm.cache import GenerationCache  # noqa: E402
from harness.llm.ledger import SpendLedger  # noqa: E402
from harness.llm.registry import make_backend  # noqa: E402
from harness.llm.session import LlmSession  # noqa: E402


def model(urls: list[str], concurrency: int) -> dict:
    return {"backend": "ollama", "name": "fake", "num_ctx": 4096, "num_predict": 64,
            "failover": {"backoff_s": 0.05, "max_backoff_s": 0.5, "failures_before_down": 5},
            "hosts": [{"url": u, "concurrency": concurrency} for u in urls]}


def drive(session: LlmSession, prompts: list[str], workers: int) -> tuple[float, list[float]]:
    """Wall time, and each call's time in the session."""
    todo, lock, times = list(prompts), threading.Lock(), []

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                prompt = todo.pop()
            start = time.perf_counter()
            session.call(prompt, schema=None, seed=0)
            with lock:
                times.append(time.perf_counter() - start)

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, times


def serve(n_servers: int, latency: float, go_down_after: int | None, hosts, stop, report) -> None:
    """A child process running the fake servers, so their request handling does not share the harness's
    interpreter (real servers are other processes); reports whether the last one went down, and the calls
    each server answered."""
    fakes = [FakeOllama(delay_s=latency) for _ in range(n_servers)]
    fakes[-1].go_down_after = go_down_after
    for f in fakes:
        f.__enter__()
    hosts.put([f.host for f in fakes])
    stop.wait()
    report.put({"killed": fakes[-1].down, "answered": [f.total_chat_calls for f in fakes]})
    for f in fakes:
        f.go_down()


class Servers:
    def __init__(self, n_servers: int, latency: float, go_down_after: int | None):
        context = multiprocessing.get_context("spawn")  # no threads or locks inherited from this process
        self._hosts, self._report, self._stop = context.Queue(), context.Queue(), context.Event()
        self._process = context.Process(target=serve, args=(n_servers, latency, go_down_after, self._hosts,
                                                            self._stop, self._report), daemon=True)

    def __enter__(self) -> list[str]:
        self._process.start()
        return self._hosts.get(timeout=60)

    def stop(self) -> dict:
        self._stop.set()
        report = self._report.get(timeout=60)
        self._process.join(timeout=60)
        return report

    def __exit__(self, *exc) -> None:
        if self._process.is_alive():
            self._process.kill()
            self._process.join()


def run(n_servers: int, args, folder: Path, kill_one: bool = False) -> dict:
    slots = n_servers * args.concurrency
    n_calls = slots * args.calls_per_slot
    go_down_after = n_calls // (2 * n_servers) if kill_one else None  # about midway through its share
    servers = Servers(n_servers, args.latency, go_down_after)
    with servers as hosts:
        pool = make_backend(model(hosts, args.concurrency))
        path = folder / f"pool{n_servers}{'-kill' if kill_one else ''}.jsonl"
        prompts = [f"<<<\nquestion {i} about topic {i % 97}\n>>>" for i in range(n_calls)]
        with GenerationCache(path) as cache:
            session = LlmSession(pool, cache, SpendLedger("bench", None))
            session.identity  # noqa: B018 - the digest check is start-up, not per call
            wall, times = drive(session, prompts, slots)
        keys = Counter(json.loads(line)["key"] for line in path.read_text().splitlines())
        busy = sum(s.busy_s for s in pool.stats())
        at_servers = servers.stop()
        return {
            "servers": n_servers,
            "slots": slots,
            "calls": n_calls,
            "wall_s": wall,
            "throughput": n_calls / wall,
            "utilisation": busy / (wall * slots),
            # the session's time per call beyond the server call (cache key, lookup, append, ledger,
            # waiting for a slot); the HTTP round trip beyond the latency is the client library's and
            # loopback's
            "overhead_ms": 1000 * (sum(times) - busy) / n_calls,
            "transport_ms": 1000 * (busy / n_calls - args.latency),
            "lost": n_calls - len(keys),
            "repeated": sum(c - 1 for c in keys.values()),
            "served": [s.served for s in pool.stats()],
            "requeued": pool.requeued,
            "killed": at_servers["killed"],
            "server_answers": sum(at_servers["answered"]),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per chat call on every server")
    parser.add_argument("--concurrency", type=int, default=4, help="slots per server")
    parser.add_argument("--calls-per-slot", type=int, default=8)
    add_quick(parser)
    args = parser.parse_args()
    if args.quick:
        args.latency, args.concurrency, args.calls_per_slot = 0.02, 2, 2
    print(
        f"LLM pool: fake Ollama servers, {args.latency * 1000:.0f} ms per call, {args.concurrency} slots each"
    )
    print(f"{'servers':>7} {'slots':>5} {'calls':>5} {'wall s':>7} {'calls/s':>8} {'vs linear':>9} "
          f"{'slot use':>8} {'overhead ms':>11} {'http ms':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        base, rows = None, []
        for n in (1, 2, 4):
            r = run(n, args, Path(tmp))
            base = base or r["throughput"]
            rows.append((n, r, r["throughput"] / (base * n)))
            print(
                f"{r['servers']:>7} {r['slots']:>5} {r['calls']:>5} {r['wall_s']:>7.2f} "
                f"{r['throughput']:>8.1f} "
                f"{r['throughput'] / (base * n):>9.1%} {r['utilisation']:>8.1%} {r['overhead_ms']:>11.2f} "
                f"{r['transport_ms']:>7.2f}"
            )
        k = run(4, args, Path(tmp), kill_one=True)
        print(
            f"4 servers, the last killed midway (killed: {k['killed']}): {k['calls']} calls, lost "
            f"{k['lost']}, "
            f"repeated {k['repeated']}, requeued {k['requeued']}, answered per server {k['served']} "
            f"({k['server_answers']} chat answers sent by the servers), "
            f"{k['throughput']:.1f} calls/s"
        )
    for n, r, linear in rows:
        goal(
            f"{n} server(s): throughput within 10% of linear",
            linear >= 0.9,
            f"{linear:.1%}",
            quick=args.quick,
        )
        goal(
            f"{n} server(s): slot use >= 90%",
            r["utilisation"] >= 0.9,
            f"{r['utilisation']:.1%}",
            quick=args.quick,
        )
        goal(
            f"{n} server(s): harness overhead < 5 ms per call",
            r["overhead_ms"] < 5,
            f"{r['overhead_ms']:.2f} ms",
            quick=args.quick,
        )
    goal("a server killed midway: 0 calls lost", k["lost"] == 0, str(k["lost"]))
    goal("a server killed midway: 0 calls repeated", k["repeated"] == 0, str(k["repeated"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
