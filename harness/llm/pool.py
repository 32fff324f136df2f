"""A pool of servers for one model (`hosts:` under a `models:` entry): several Ollama servers, or several
OpenAI-compatible ones (vLLM, llama.cpp's server), each taking `concurrency` calls at once.

The pool is itself a Backend, so the session, the generation cache and the spend ledger see one model:

- its identity has no server in it (the servers must agree, see `digest`), so the cache key, and hence
  every answer, is the same whatever the number of servers or which one served a call;
- a call takes a free slot on a live server (the one with most free slots; ties by listing order);
  when none is free it waits, so with as many workers as slots every slot stays busy;
- a server that fails a call (refused, dropped, timed out: BackendUnavailable; HTTP 5xx: ServerFailed)
  is rested with doubling backoff and the call goes back to wait for a slot on any server; a call is
  cached only once it has an answer, so nothing completed is lost or asked twice;
- after `failures_before_down` consecutive failures a server counts as down (it is still retried after
  its backoff while others work); when every server is down the call raises BackendUnavailable naming
  each server's last error, and the build stops; a rerun resumes from the cache.

Any other error (model missing, credentials, a 4xx) is not a server fault and stops the build as before.

ServerPool holds the dispatch and the agreement check for any kind of server (the /rerank servers of
harness.retrieval.rerank_http use it); HostPool is that pool behind the LLM Backend interface.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, TypeVar

from harness.config.models import Failover
from harness.llm.base import Backend, BackendUnavailable, Completion, Message, ModelMismatch, ServerFailed

HOST_FAULTS = (BackendUnavailable, ServerFailed)
T = TypeVar("T")


@dataclass
class _Server:
    url: str
    backend: Any  # a Backend, or any server ServerPool dispatches to
    concurrency: int
    in_flight: int = 0
    failures: int = 0  # consecutive
    resting_until: float = 0.0
    last_error: str = ""
    served: int = 0
    busy_s: float = 0.0  # summed call time, for slot utilisation
    verified: bool = False  # reported the pool's model (see HostPool.digest)


@dataclass(frozen=True)
class ServerStats:
    url: str
    concurrency: int
    served: int
    failures: int
    busy_s: float


class ServerPool:
    """Dispatch over servers of one model with the failover above. `members`: (url, server, concurrency), each
    server with `model`, `host_report()` and `pooled_digest(report)` (an LLM Backend, or a /rerank client of
    harness.retrieval.rerank_http); `dispatch(call)` runs call(server) on a free live server."""

    def __init__(
        self, members: Sequence[tuple[str, Any, int]], *, failover: Failover | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not members:
            raise ValueError("a pool needs at least one server")
        self.model = members[0][1].model
        self.failover = failover or Failover()
        self._servers = [_Server(url, backend, int(n)) for url, backend, n in members]
        self._clock = clock
        self._cond = threading.Condition()
        self._digest: str | None = None
        self._report = ""
        self._digest_lock = threading.Lock()
        self.requeued = 0  # calls put back after a server failed them

    @property
    def capacity(self) -> int:
        return sum(s.concurrency for s in self._servers)

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self._servers]

    @property
    def digest(self) -> str:
        """Every server's report on the model, which must agree; read once, before the first call. A server
        that cannot answer now rests like after a failed call, and is checked before its first call."""
        with self._digest_lock:
            if self._digest is None:
                reports = []
                for server in self._servers:
                    try:
                        reports.append((server, server.backend.host_report()))
                    except HOST_FAULTS as e:
                        self._release(server, error=e, busy_s=0.0, answered=False, held=False)
                if not reports:
                    raise BackendUnavailable(
                        f"no server of model {self.model!r} answers ({self._last_errors()}); "
                        "start them and rerun"
                    )
                self._report = reports[0][1]
                for server, report in reports:
                    self._check(server, report)
                self._digest = self._servers[0].backend.pooled_digest(self._report)
            return self._digest

    def _check(self, server: _Server, report: str) -> None:
        if report != self._report:
            first = next(s for s in self._servers if s.verified)
            raise ModelMismatch(
                f"model {self.model!r}: server {server.url} serves {report}, but server {first.url} serves "
                f"{self._report}; every server in `hosts:` must serve the same weights (pull the same model "
                "on "
                "both, or remove one)"
            )
        server.verified = True

    def _last_errors(self) -> str:
        return "; ".join(f"{s.url}: {s.last_error or 'not tried'}" for s in self._servers)

    def stats(self) -> list[ServerStats]:
        with self._cond:
            return [
                ServerStats(s.url, s.concurrency, s.served, s.failures, round(s.busy_s, 6))
                for s in self._servers
            ]

    def describe_servers(self) -> list[dict[str, Any]]:
        """For the manifest's run record: which servers took part (never part of a cache key)."""
        return [{"url": s.url, "concurrency": s.concurrency, "served": s.served} for s in self._servers]

    # --- dispatch ---

    def _all_down(self) -> bool:
        return all(s.failures >= self.failover.failures_before_down for s in self._servers)

    def _acquire(self) -> _Server:
        with self._cond:
            while True:
                if self._all_down():
                    raise BackendUnavailable(
                        f"every server of model {self.model!r} is down ({self._last_errors()}); completed "
                        "calls are cached "
                        "and a rerun resumes"
                    )
                now = self._clock()
                free = [s for s in self._servers if s.resting_until <= now and s.in_flight < s.concurrency]
                if free:
                    best = max(free, key=lambda s: s.concurrency - s.in_flight)  # max keeps the first of ties
                    best.in_flight += 1
                    return best
                resting = [s.resting_until - now for s in self._servers if s.resting_until > now]
                self._cond.wait(timeout=min(resting) if resting else None)

    def _release(
        self,
        server: _Server,
        *,
        error: BaseException | None,
        busy_s: float,
        answered: bool,
        held: bool = True,
    ) -> None:
        with self._cond:
            server.in_flight -= int(held)
            server.busy_s += busy_s
            if error is None:
                server.failures = 0
                server.served += int(answered)
            else:
                server.failures += 1
                server.last_error = f"{type(error).__name__}: {error}"
                f = self.failover
                server.resting_until = self._clock() + min(
                    f.backoff_s * 2 ** (server.failures - 1), f.max_backoff_s
                )
                self.requeued += int(held)
            self._cond.notify_all()

    def dispatch(self, call: Callable[[Any], T]) -> T:
        """call(server) on a free live server; a server fault rests that server and the call waits for
        another."""
        self.digest  # noqa: B018 - the servers agree before any call
        while True:
            server = self._acquire()
            start = time.perf_counter()
            try:
                if not server.verified:  # was down at the start: check it serves the same weights first
                    self._check(server, server.backend.host_report())
                done = call(server.backend)
            except HOST_FAULTS as e:
                self._release(server, error=e, busy_s=time.perf_counter() - start, answered=False)
                continue  # back to the queue: any live server may take it
            except BaseException:  # not the server's fault (a 4xx, a missing model): the build stops
                self._release(server, error=None, busy_s=time.perf_counter() - start, answered=False)
                raise
            self._release(server, error=None, busy_s=time.perf_counter() - start, answered=True)
            return done


class HostPool(ServerPool, Backend):
    """A pool of LLM servers behind the Backend interface, each backend built from the same model entry."""

    def __init__(
        self, members: Sequence[tuple[str, Backend, int]], *, failover: Failover | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        ServerPool.__init__(self, members, failover=failover, clock=clock)
        first = members[0][1]
        Backend.__init__(self, first.model, first.options)
        self.name = first.name
        self.billed = first.billed
        self.default_options = first.default_options

    @property
    def prompt_token_limit(self) -> int | None:
        return self._servers[0].backend.prompt_token_limit

    def estimate_cost_usd(self, messages: Sequence[Message], options: Mapping[str, Any]) -> float:
        return self._servers[0].backend.estimate_cost_usd(messages, options)

    def complete(
        self,
        prompt: str | Sequence[Message],
        *,
        schema: Mapping[str, Any] | None,
        seed: int,
        options: Mapping[str, Any] | None = None,
    ) -> Completion:
        return self.dispatch(
            lambda backend: backend.complete(prompt, schema=schema, seed=seed, options=options)
        )


def pool_from_config(settings: Mapping[str, Any], build_one: Callable[[dict[str, Any]], Backend]) -> HostPool:
    """A pool from a model entry with `hosts:` (plain settings, harness.config.models.model_settings);
    `build_one` builds one server's backend from the entry with that server's URL in place of the list."""
    single = "host" if settings["backend"] == "ollama" else "base_url"
    members = []
    for h in settings["hosts"]:
        one = {k: v for k, v in settings.items() if k not in ("hosts", "failover")} | {single: h["url"]}
        members.append((h["url"], build_one(one), int(h["concurrency"])))
    failover = Failover(**settings["failover"]) if settings.get("failover") else None
    return HostPool(members, failover=failover)
