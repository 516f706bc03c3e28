"""The SDK's one retry policy (``RetryPolicy``/``Attempts``), both clients, against a real HTTP
server on 127.0.0.1 (``http.server`` in a thread) that answers from a script: a 429 or 503 the
server says is worth retrying (``Retry-After``) is sent again after that wait, with the same
Idempotency-Key; one it does not say so about, or one whose wait is past the budget (a day's
quota), is the caller's error at once; a job's event stream refused for the key's rate is
opened again, not replaced by polling."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mtfleet.producer.calls import MTClientError, RetryPolicy
from mtfleet.producer.client import AsyncMTClient, MTClient

ID = "0" * 32
JOB = {
    "id": ID,
    "status": "succeeded",
    "source_lang": "en",
    "target_lang": "es",
    "lane": "bulk",
    "progress": {"done": 1, "failed": 0, "total": 1},
    "created_at": 1.0,
    "cached": 0,
}
GLOSSARY = {
    "id": "g1",
    "name": "shop",
    "source_lang": "en",
    "target_lang": "es",
    "entry_count": 0,
    "protected_count": 0,
    "version": "v1",
    "created_at": 1.0,
    "entries": {},
    "protected": [],
}


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    at: float


@dataclass
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    events: list[str] | None = None  # an event stream's blocks


def refused(code: int, type_: str, retry_after: str | None) -> Answer:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return Answer(code, {"error": {"type": type_, "message": f"{type_} here"}}, headers)


Script = Callable[[Seen, int], Answer]  # the request, and how many came before it


@contextlib.contextmanager
def serving(script: Script) -> Iterator[tuple[str, list[Seen]]]:
    """An HTTP server answering each request as ``script`` says; its URL and the requests."""
    seen: list[Seen] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            with lock:
                request = Seen(self.command, self.path, dict(self.headers), time.monotonic())
                answer = script(request, len(seen))
                seen.append(request)
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            if answer.events is not None:
                payload = "".join(answer.events).encode()
                self.send_header("Content-Type", "text/event-stream")
            else:
                payload = json.dumps(answer.body).encode() if answer.body is not None else b""
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = _answer

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


CLIENTS = ["sync", "async"]
FAST = RetryPolicy(budget_s=10.0, first_s=0.01, max_s=0.02)


def run(client: str, url: str, use: Callable[[Any], Any], retry: RetryPolicy = FAST) -> Any:
    """``use(mt)`` on an MTClient (``sync``) or an AsyncMTClient (``async``: awaited)."""
    if client == "sync":
        with MTClient(url, retry=retry) as mt:
            return use(mt)

    async def go() -> Any:
        async with AsyncMTClient(url, retry=retry) as amt:
            return await use(amt)

    return asyncio.run(go())


def submit(mt: Any) -> Any:
    return mt.submit(["Red shoes"], source="en", target="es")


@pytest.mark.parametrize("client", CLIENTS)
def test_a_rate_limited_submission_waits_its_retry_after_and_keeps_its_idempotency_key(
    client: str,
) -> None:
    def script(request: Seen, before: int) -> Answer:
        return refused(429, "rate_limited", "1") if before == 0 else Answer(201, JOB)

    with serving(script) as (url, seen):
        job = run(client, url, submit)
    assert job.id == ID
    assert [s.method for s in seen] == ["POST", "POST"]
    keys = {s.headers["Idempotency-Key"] for s in seen}
    assert len(keys) == 1  # the same request: a second job cannot be made
    assert seen[1].at - seen[0].at >= 1.0  # not before the server said


@pytest.mark.parametrize("client", CLIENTS)
def test_a_503_with_retry_after_is_waited_out_on_a_read(client: str) -> None:
    def script(request: Seen, before: int) -> Answer:
        return refused(503, "unavailable", "1") if before == 0 else Answer(200, JOB)

    with serving(script) as (url, seen):
        job = run(client, url, lambda mt: mt.get(ID))
    assert job.id == ID and len(seen) == 2
    assert seen[1].at - seen[0].at >= 1.0


@pytest.mark.parametrize("client", CLIENTS)
def test_a_429_is_a_refusal_so_even_a_request_without_a_key_is_sent_again(client: str) -> None:
    """A 429 means the API did nothing with the request: creating a glossary (no
    Idempotency-Key) is sent again as safely as a read."""

    def script(request: Seen, before: int) -> Answer:
        return refused(429, "rate_limited", "1") if before == 0 else Answer(201, GLOSSARY)

    with serving(script) as (url, seen):
        made = run(client, url, lambda mt: mt.create_glossary("shop", source="en", target="es"))
    assert made.id == "g1" and [s.method for s in seen] == ["POST", "POST"]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_spent_quota_is_the_callers_error_at_once_not_waited_for(client: str) -> None:
    """quota_exceeded's Retry-After is the time to the next UTC day: past the budget, so the
    answer stands (no wait, one request)."""

    def script(request: Seen, before: int) -> Answer:
        return refused(429, "quota_exceeded", "36000")

    with serving(script) as (url, seen), pytest.raises(MTClientError) as raised:
        run(client, url, submit)
    assert raised.value.status == 429 and raised.value.type == "quota_exceeded"
    assert len(seen) == 1


@pytest.mark.parametrize("client", CLIENTS)
def test_a_429_without_retry_after_is_not_retried(client: str) -> None:
    never = serving(lambda r, n: refused(429, "rate_limited", None))
    with never as (url, seen), pytest.raises(MTClientError) as raised:
        run(client, url, submit)
    assert raised.value.type == "rate_limited" and len(seen) == 1


@pytest.mark.parametrize("client", CLIENTS)
def test_a_rate_that_never_frees_up_is_given_up_within_the_budget(client: str) -> None:
    """Every answer a 429 with Retry-After 1: a few tries inside a 2.5 s budget, then the
    server's own error (not a claim that the API is unreachable)."""
    retry = RetryPolicy(budget_s=2.5, first_s=0.01, max_s=0.02)
    always = serving(lambda r, n: refused(429, "rate_limited", "1"))
    with always as (url, seen), pytest.raises(MTClientError) as raised:
        run(client, url, submit, retry)
    assert raised.value.type == "rate_limited"
    assert 2 <= len(seen) <= 3


def sse(event_id: str, body: dict[str, Any], event: str) -> str:
    return f"id: {event_id}\nevent: {event}\ndata: {json.dumps(body)}\n\n"


@pytest.mark.parametrize("client", CLIENTS)
def test_a_stream_refused_for_the_rate_is_opened_again_not_polled(client: str) -> None:
    def script(request: Seen, before: int) -> Answer:
        if not request.path.endswith("/events"):
            return Answer(200, JOB)
        if before == 0:
            return refused(429, "rate_limited", "1")
        return Answer(200, events=[sse("1", JOB, "final")])

    def follow(mt: Any) -> Any:
        if isinstance(mt, MTClient):
            return list(mt.events(ID, timeout=30))

        async def collect() -> Any:
            return [j async for j in mt.events(ID, timeout=30)]

        return collect()

    with serving(script) as (url, seen):
        got = run(client, url, follow)
    assert [j.status for j in got] == ["succeeded"]
    assert [s.path for s in seen] == [f"/v1/jobs/{ID}/events"] * 2  # no poll
    assert seen[1].at - seen[0].at >= 1.0
