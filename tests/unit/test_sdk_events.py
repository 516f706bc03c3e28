"""Following a job (``MTClient.events`` / ``AsyncMTClient.events``, ``wait``): the event stream
read to the final event, a broken stream opened again with ``Last-Event-ID``, a server without
the stream answered by the long poll, an error about the job raised, and a 204 (the final
event seen already) answered with one read. Both clients, against httpx's MockTransport playing
the server (the SDK's own reading, writing and retrying are what run)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest

from mtfleet.producer.calls import MTClientError, RetryPolicy
from mtfleet.producer.client import AsyncMTClient, Job, MTClient

ID = "0" * 32


def job(status: str, done: int) -> dict[str, Any]:
    return {
        "id": ID,
        "status": status,
        "source_lang": "en",
        "target_lang": "es",
        "lane": "bulk",
        "progress": {"done": done, "failed": 0, "total": 2},
        "created_at": 1.0,
        "cached": 0,
    }


def sse(event_id: str, body: dict[str, Any], event: str = "progress") -> bytes:
    return f"id: {event_id}\nevent: {event}\ndata: {json.dumps(body)}\n\n".encode()


class Stream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body that yields ``parts`` and then, with ``breaks``, fails as a cut connection."""

    def __init__(self, parts: list[bytes], breaks: bool = False) -> None:
        self.parts, self.breaks = parts, breaks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.parts
        if self.breaks:
            raise httpx.ReadError("connection cut")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            yield part
        if self.breaks:
            raise httpx.ReadError("connection cut")


Server = Callable[[httpx.Request], httpx.Response]
EVENTS = "text/event-stream"


CLIENTS = ["sync", "async"]


def follow(server: Server, client: str) -> list[Job]:
    """The jobs a client (``sync``: MTClient, ``async``: AsyncMTClient) yields following job
    ``ID`` through ``server``."""
    retry = RetryPolicy(first_s=0.01, max_s=0.02)
    transport = httpx.MockTransport(server)
    if client == "sync":
        with MTClient("http://fleet", retry=retry) as mt:
            mt.http = httpx.Client(base_url="http://fleet", transport=transport)
            return list(mt.events(ID, timeout=10, poll_s=0.1))

    async def run() -> list[Job]:
        async with AsyncMTClient("http://fleet", retry=retry) as amt:
            amt.http = httpx.AsyncClient(base_url="http://fleet", transport=transport)
            return [j async for j in amt.events(ID, timeout=10, poll_s=0.1)]

    return asyncio.run(run())


@pytest.mark.parametrize("client", CLIENTS)
def test_the_stream_is_read_to_its_final_event(client: str) -> None:
    def server(request: httpx.Request) -> httpx.Response:
        body = [sse("1", job("running", 1)), sse("2", job("succeeded", 2), "final")]
        return httpx.Response(200, headers={"content-type": EVENTS}, stream=Stream(body))

    got = follow(server, client)
    assert [(j.status, j.progress.done) for j in got] == [("running", 1), ("succeeded", 2)]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_broken_stream_is_opened_again_after_its_last_event(client: str) -> None:
    resumed: list[str | None] = []

    def server(request: httpx.Request) -> httpx.Response:
        last = request.headers.get("Last-Event-ID")
        resumed.append(last)
        if last is None:  # the first stream: one event, then the connection is cut
            stream = Stream([sse("7", job("running", 1))], breaks=True)
        else:
            stream = Stream([sse("8", job("succeeded", 2), "final")])
        return httpx.Response(200, headers={"content-type": EVENTS}, stream=stream)

    got = follow(server, client)
    assert [j.status for j in got] == ["running", "succeeded"]
    assert resumed == [None, "7"]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_server_without_the_stream_is_answered_by_the_long_poll(client: str) -> None:
    polls: list[str] = []

    def server(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/events"):
            return httpx.Response(404, json={"detail": "Not Found"})  # an older API
        polls.append(request.url.params.get("wait", ""))
        return httpx.Response(200, json=job("succeeded" if polls[1:] else "running", 1))

    got = follow(server, client)
    assert [j.status for j in got] == ["running", "succeeded"]
    assert len(polls) == 2 and all(float(w) > 0 for w in polls)


@pytest.mark.parametrize("client", CLIENTS)
def test_an_error_about_the_job_is_raised_not_polled(client: str) -> None:
    def server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"error": {"type": "job_not_found", "message": "no"}})

    with pytest.raises(MTClientError):
        follow(server, client)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_204_says_the_final_event_was_seen_and_the_job_is_read_once(client: str) -> None:
    reads: list[str] = []

    def server(request: httpx.Request) -> httpx.Response:
        reads.append(request.url.path)
        if request.url.path.endswith("/events"):
            return httpx.Response(204)
        return httpx.Response(200, json=job("succeeded", 2))

    got = follow(server, client)
    assert [j.status for j in got] == ["succeeded"]
    assert reads == [f"/v1/jobs/{ID}/events", f"/v1/jobs/{ID}"]
