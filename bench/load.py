"""Load: many concurrent clients against a real API process with a fast worker (issue 4).

Each client is a coroutine with its own keep-alive connection (one ``httpx.AsyncClient`` whose
pool holds a connection per client) that, until the time is up, sends one of:

* ``POST /v1/translate``: 1-5 short strings, a third of them from a small shared set of phrases
  (phrase-cache hits), the rest new;
* ``POST /v1/jobs``: a bulk job of 16-64 new segments, unless the bulk lane answered 429 to this
  client less than ``Retry-After`` seconds ago (a well-behaved client waits that long);
* ``GET /v1/jobs/{id}``: the status of one of its own earlier jobs.

What comes back: counts per route and status, latency percentiles per route, every 5xx and
transport error, how many 429s came without ``Retry-After`` or with another error type than
``overloaded``, the deepest the bulk queue got, and the resident memory (RSS, children included)
of the API and of the worker sampled every few seconds. Nothing here asserts: the test
(``tests/integration/test_load.py``) and the command line decide.

``python -m bench.load --clients 500 --duration 60`` runs it on a private fleet (cost-model
engine, preset ``h200-7b``: 3 ms steps) with a low ``MT_MAX_QUEUE_BULK`` so backpressure shows.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import psutil
import redis

from bench.fleet import BenchFleet, cost_env, process_tree, running_fleet
from bench.loadgen import latency_summary
from bench.workload import SHORT, SOURCE, TARGET, sentence

MIB = 1 << 20
ROUTES = ("translate", "jobs", "status")


@dataclass
class LoadReport:
    clients: int
    duration_s: float
    counts: dict[str, Counter[int]] = field(default_factory=lambda: {r: Counter() for r in ROUTES})
    latencies: dict[str, list[float]] = field(default_factory=lambda: {r: [] for r in ROUTES})
    server_errors: list[str] = field(default_factory=list)  # "route status body" of every 5xx
    transport_errors: Counter[str] = field(default_factory=Counter)
    rejected: int = 0  # 429 answers
    rejected_without_retry_after: int = 0
    rejected_other_type: Counter[str] = field(default_factory=Counter)
    max_bulk_queue: int = 0
    rss_mib: dict[str, list[float]] = field(default_factory=dict)  # component -> samples

    @property
    def requests(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    @property
    def by_status(self) -> Counter[int]:
        total: Counter[int] = Counter()
        for c in self.counts.values():
            total.update(c)
        return total

    def summary(self) -> dict[str, Any]:
        """Plain data for printing or JSON."""
        every = [x for lat in self.latencies.values() for x in lat]
        return {
            "clients": self.clients,
            "duration_s": round(self.duration_s, 1),
            "requests": self.requests,
            "requests_per_s": round(self.requests / self.duration_s, 1) if self.duration_s else 0,
            "by_status": dict(sorted(self.by_status.items())),
            "by_route": {r: dict(sorted(c.items())) for r, c in self.counts.items()},
            "latency_ms": {
                "all": _rounded(latency_summary(every)),
                **{r: _rounded(latency_summary(lat)) for r, lat in self.latencies.items()},
            },
            "server_errors": len(self.server_errors),
            "transport_errors": dict(self.transport_errors),
            "rejected_429": self.rejected,
            "rejected_without_retry_after": self.rejected_without_retry_after,
            "rejected_other_type": dict(self.rejected_other_type),
            "max_bulk_queue_chunks": self.max_bulk_queue,
            "rss_mib": {
                name: {"start": s[0], "max": max(s), "end": s[-1]}
                for name, s in self.rss_mib.items()
                if s
            },
        }


def _rounded(d: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 1) for k, v in d.items()}


def tree_rss(pid: int) -> float:
    """Resident memory of a process and its descendants, MiB (0 when it is gone)."""
    total = 0
    for p in process_tree(pid):
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return round(total / MIB, 1)


class Client:
    """One simulated client: its own random stream, its jobs, its bulk back-off."""

    def __init__(self, n: int, seed: int, shared: list[str], report: LoadReport) -> None:
        self.n = n
        self.rng = random.Random(f"{seed}:client{n}")
        self.shared = shared
        self.report = report
        self.jobs: list[str] = []
        self.bulk_after = 0.0  # monotonic time before which this client sends no bulk job
        self.k = 0

    def _new_text(self, words: int) -> str:
        self.k += 1
        return sentence(self.rng, self.k, words, tag=f"c{self.n}-")

    async def run(self, http: httpx.AsyncClient, deadline: float) -> None:
        while time.monotonic() < deadline:
            r = self.rng.random()
            if r < 0.1 and self.jobs:
                await self._send(http, "status", "GET", f"/v1/jobs/{self.rng.choice(self.jobs)}")
            elif r < 0.5 and time.monotonic() >= self.bulk_after:
                texts = [
                    self._new_text(self.rng.randint(4, 30)) for _ in range(self.rng.randint(16, 64))
                ]
                body = {
                    "texts": texts,
                    "source_lang": SOURCE,
                    "target_lang": TARGET,
                    "lane": "bulk",
                }
                await self._send(http, "jobs", "POST", "/v1/jobs", body)
            else:
                texts = [
                    self.rng.choice(self.shared)
                    if self.rng.random() < 0.33
                    else self._new_text(self.rng.randint(2, 10))
                    for _ in range(self.rng.randint(1, 5))
                ]
                body = {"texts": texts, "source_lang": SOURCE, "target_lang": TARGET}
                await self._send(http, "translate", "POST", "/v1/translate", body)

    async def _send(
        self, http: httpx.AsyncClient, route: str, method: str, path: str, body: Any = None
    ) -> None:
        rep = self.report
        t0 = time.monotonic()
        try:
            resp = await http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            rep.transport_errors[type(exc).__name__] += 1
            await asyncio.sleep(0.1)
            return
        rep.latencies[route].append(time.monotonic() - t0)
        rep.counts[route][resp.status_code] += 1
        if resp.status_code >= 500:
            rep.server_errors.append(f"{route} {resp.status_code} {resp.text[:200]}")
        elif resp.status_code == 429:
            self._rejected(route, resp)
        elif route == "jobs" and resp.status_code in (200, 202) and len(self.jobs) < 50:
            self.jobs.append(resp.json()["id"])

    def _rejected(self, route: str, resp: httpx.Response) -> None:
        rep = self.report
        rep.rejected += 1
        retry_after = resp.headers.get("retry-after", "")
        if not retry_after.isdigit():
            rep.rejected_without_retry_after += 1
        try:
            type_ = str(resp.json()["error"]["type"])
        except (ValueError, KeyError, TypeError):
            type_ = "not-json"
        if type_ != "overloaded":
            rep.rejected_other_type[type_] += 1
        if route == "jobs":
            self.bulk_after = time.monotonic() + float(retry_after or 1)


async def _sample(
    report: LoadReport,
    pids: dict[str, int],
    redis_url: str,
    queue: str,
    stop: asyncio.Event,
    every_s: float,
) -> None:
    """Every ``every_s``: RSS of each component and the bulk queue's depth (from a thread)."""
    r = redis.Redis.from_url(redis_url)

    def one() -> None:
        for name, pid in pids.items():
            report.rss_mib.setdefault(name, []).append(tree_rss(pid))
        with contextlib.suppress(redis.RedisError):
            report.max_bulk_queue = max(report.max_bulk_queue, int(r.llen(queue)))

    try:
        while True:
            await asyncio.to_thread(one)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every_s)
            if stop.is_set():
                await asyncio.to_thread(one)  # the last sample: after the load
                return
    finally:
        r.close()


async def run_clients(
    api_url: str,
    *,
    clients: int,
    duration_s: float,
    pids: dict[str, int],
    redis_url: str,
    bulk_queue: str,
    seed: int = 0,
    sample_every_s: float = 2.0,
) -> LoadReport:
    """``clients`` concurrent clients for ``duration_s`` against ``api_url``."""
    report = LoadReport(clients=clients, duration_s=duration_s)
    shared = [f"{SHORT[i % len(SHORT)]} {i}" for i in range(50)]
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    timeout = httpx.Timeout(60.0, connect=30.0)
    stop = asyncio.Event()
    sampler = asyncio.create_task(
        _sample(report, pids, redis_url, bulk_queue, stop, sample_every_s)
    )
    async with httpx.AsyncClient(base_url=api_url, limits=limits, timeout=timeout) as http:
        t0 = time.monotonic()
        deadline = t0 + duration_s
        await asyncio.gather(
            *(Client(n, seed, shared, report).run(http, deadline) for n in range(clients))
        )
        report.duration_s = time.monotonic() - t0
    stop.set()
    await sampler
    return report


def run_on(fleet: BenchFleet, *, clients: int, duration_s: float, seed: int = 0) -> LoadReport:
    pids = {p.name: p.popen.pid for p in fleet.fleet.procs if p.name in ("api", "worker")}
    redis_url = str(fleet.fleet.redis_url)
    return asyncio.run(
        run_clients(
            fleet.api_url,
            clients=clients,
            duration_s=duration_s,
            pids=pids,
            redis_url=redis_url,
            bulk_queue=fleet.bulk_queue,
            seed=seed,
        )
    )


def load_env(max_queue_bulk: int) -> dict[str, str]:
    """The fleet the load runs on: a fast cost-model worker and a low bulk queue limit."""
    return {
        **cost_env("h200-7b"),
        "MT_MAX_QUEUE_BULK": str(max_queue_bulk),
        "MT_CHUNK_SIZE": "16",
        "MT_TRANSLATE_TIMEOUT_S": "10",
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n")[0])
    p.add_argument("--clients", type=int, default=500)
    p.add_argument("--duration", type=float, default=60.0, help="seconds")
    p.add_argument("--max-queue-bulk", type=int, default=8, help="MT_MAX_QUEUE_BULK (chunks)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with running_fleet(load_env(args.max_queue_bulk)) as fleet:
        report = run_on(fleet, clients=args.clients, duration_s=args.duration, seed=args.seed)
    summary = report.summary()
    print(json.dumps(summary, indent=2))
    return 1 if report.server_errors or report.transport_errors else 0


if __name__ == "__main__":
    sys.exit(main())
