"""Load generators that stay out of the server's way (it shares two cores with them).

* :func:`hammer`: a closed loop of ``concurrency`` keep-alive HTTP/1.1 connections written with
  plain asyncio streams (no HTTP library in the hot path: a request is one prepared
  ``bytes``), each sending its next request when the previous answer is in.
* :func:`poisson_stream`: an open loop of interactive requests arriving as a Poisson process
  (exponential gaps from a seeded generator), each sent on its own when its time comes, however
  many are still outstanding.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from bench.workload import SOURCE, TARGET


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (``p`` in 0-100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1))
    return ordered[k]


def latency_summary(latencies_s: list[float]) -> dict[str, float]:
    """p50/p95/p99/max in milliseconds."""
    return {
        "p50_ms": percentile(latencies_s, 50) * 1000,
        "p95_ms": percentile(latencies_s, 95) * 1000,
        "p99_ms": percentile(latencies_s, 99) * 1000,
        "max_ms": max(latencies_s, default=math.nan) * 1000,
    }


# --- raw keep-alive HTTP ----------------------------------------------------------------------
def request_bytes(host: str, method: str, path: str, body: dict[str, Any] | None = None) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"
    if body is None:
        return (head + "\r\n").encode()
    data = json.dumps(body).encode()
    head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    return head.encode() + data


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
        elif name.strip().lower() == b"transfer-encoding":
            raise RuntimeError("chunked responses are not supported by this load generator")
    body = await reader.readexactly(length) if length else b""
    return status, body


@dataclass
class HammerResult:
    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    latencies_s: list[float] = field(default_factory=list)
    first_error: str | None = None

    def summary(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "errors": self.errors,
            "seconds": self.seconds,
            "requests_per_s": self.requests / self.seconds if self.seconds else math.nan,
            **latency_summary(self.latencies_s),
            "first_error": self.first_error,
        }


async def _hammer(
    url: str,
    make: Callable[[int], bytes],
    check: Callable[[int, bytes, int], str | None],
    concurrency: int,
    duration_s: float,
) -> HammerResult:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    result = HammerResult()
    counter = iter(range(1 << 62))
    deadline = 0.0

    async def conn() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while time.monotonic() < deadline:
                n = next(counter)
                t0 = time.monotonic()
                writer.write(make(n))
                status, body = await _read_response(reader)
                result.latencies_s.append(time.monotonic() - t0)
                result.requests += 1
                problem = check(n, body, status)
                if problem:
                    result.errors += 1
                    result.first_error = result.first_error or problem
        finally:
            writer.close()

    t0 = time.monotonic()
    deadline = t0 + duration_s
    await asyncio.gather(*(conn() for _ in range(concurrency)))
    result.seconds = time.monotonic() - t0
    return result


def hammer(
    url: str,
    make: Callable[[int], bytes],
    check: Callable[[int, bytes, int], str | None],
    *,
    concurrency: int,
    duration_s: float,
) -> HammerResult:
    """``concurrency`` connections, each sending ``make(n)`` back to back for ``duration_s``;
    ``check(n, body, status)`` returns what is wrong with an answer, or None."""
    return asyncio.run(_hammer(url, make, check, concurrency, duration_s))


# --- open-loop interactive stream ------------------------------------------------------------
class _Connections:
    """Keep-alive HTTP/1.1 connections for an open loop: a request takes an idle one or opens
    another, so however many requests are outstanding none waits for a connection. Requests
    are prepared ``bytes`` and answers parsed by :func:`_read_response`, as in :func:`hammer`:
    the generator shares the machine's cores with the fleet it measures, and an HTTP client
    library cost several times the CPU per request (httpx: ~5 ms here, ~15 % of what the
    whole fleet spends on an interactive request)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.opened: list[asyncio.StreamWriter] = []

    async def send(self, request: bytes) -> tuple[int, bytes]:
        if self.idle:
            reader, writer = self.idle.pop()
            try:
                return await self._exchange(reader, writer, request)
            except (asyncio.IncompleteReadError, ConnectionError):
                pass  # the server closed it while idle (its keep-alive timeout): a new one
        reader, writer = await asyncio.open_connection(self.host, self.port)
        self.opened.append(writer)
        return await self._exchange(reader, writer, request)

    async def _exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
    ) -> tuple[int, bytes]:
        writer.write(request)
        status, body = await _read_response(reader)
        self.idle.append((reader, writer))
        return status, body

    def close(self) -> None:
        for writer in self.opened:
            writer.close()


async def poisson_stream(
    url: str,
    requests: list[list[str]],
    *,
    rate_per_s: float,
    duration_s: float,
    seed: int = 0,
    timeout_s: float = 30.0,
) -> dict[str, Any]:
    """Send ``requests`` (texts each) to ``POST /v1/translate`` of the API at ``url`` at Poisson
    arrival times for ``duration_s``; latency is each request's round trip. A request not done
    within ``timeout_s`` (answered 202) counts in ``timed_out`` and at its latency in the
    percentiles; errors and wrong answers count in ``failed`` only."""
    rng = random.Random(seed)
    latencies: list[float] = []
    timeouts: list[float] = []
    failures: list[str] = []
    conns = _Connections(url)
    host = f"{conns.host}:{conns.port}"

    async def one(texts: list[str]) -> None:
        body = {
            "texts": texts,
            "source_lang": SOURCE,
            "target_lang": TARGET,
            "timeout": timeout_s,
        }
        request = request_bytes(host, "POST", "/v1/translate", body)
        t0 = time.monotonic()
        try:
            status, raw = await asyncio.wait_for(conns.send(request), timeout_s + 10)
        except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
            return
        elapsed = time.monotonic() - t0
        if status == 202:  # not done within the timeout: counted at its latency
            timeouts.append(elapsed)
            latencies.append(elapsed)
            return
        if status != 200:
            failures.append(f"{status} {raw[:200]!r}")
            return
        out = json.loads(raw)["translations"]
        if len(out) != len(texts) or any(t is None for t in out):
            failures.append(f"bad answer: {str(out)[:200]}")
            return
        latencies.append(elapsed)

    tasks: list[asyncio.Task[None]] = []
    start = time.monotonic()
    at = start
    try:
        for texts in requests:
            at += rng.expovariate(rate_per_s)
            if at - start > duration_s:
                break
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            tasks.append(asyncio.create_task(one(texts)))
        await asyncio.gather(*tasks)
    finally:
        conns.close()
    return {
        "sent": len(tasks),
        "answered": len(latencies),
        "timed_out": len(timeouts),
        "failed": len(failures),
        "first_failure": failures[0] if failures else None,
        "rate_per_s": rate_per_s,
        **latency_summary(latencies),
        "latencies_s": latencies,
    }
