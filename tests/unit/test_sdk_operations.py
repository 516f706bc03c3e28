"""The SDK's operations are declared once (producer/calls.py, producer/tm_client.py) and both
clients expose each with its signature: MTClient's blocks and returns the answer,
AsyncMTClient's returns a coroutine of the same answer. Requests go over httpx's own
MockTransport, a recorded server: what is sent and how the answer is read are the SDK's."""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

import httpx

from mtfleet.core.guidance import Guidance
from mtfleet.producer.client import AsyncMTClient, MTClient, _Operations, operation

JOB = {
    "id": "0" * 32,
    "status": "queued",
    "source_lang": "en",
    "target_lang": "es",
    "lane": "bulk",
    "progress": {"done": 0, "failed": 0, "total": 1},
    "created_at": 1.0,
    "cached": 0,
}


def server(seen: list[httpx.Request]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/v1/jobs":
            return httpx.Response(202, json=JOB)
        if request.url.path == "/v1/translate":
            return httpx.Response(
                200,
                json={"id": None, "status": "succeeded", "translations": ["Hola"], "cached": 1},
            )
        return httpx.Response(404, json={"error": {"type": "not_found", "message": "no"}})

    return httpx.MockTransport(answer)


def test_every_operation_is_on_both_clients_with_its_builders_signature() -> None:
    ops = {name: v for name, v in vars(_Operations).items() if isinstance(v, operation)}
    assert len(ops) >= 20
    for name, op in ops.items():
        want = inspect.signature(op.build)
        assert inspect.signature(getattr(MTClient(), name)) == want, name
        assert inspect.signature(getattr(AsyncMTClient(), name)) == want, name
        assert getattr(MTClient, name).__doc__, f"{name} has no documentation"


def test_the_sync_client_sends_and_reads() -> None:
    seen: list[httpx.Request] = []
    with MTClient("http://fleet") as mt:
        mt.http = httpx.Client(base_url="http://fleet", transport=server(seen))
        job = mt.submit(
            ["Hi"],
            source="en",
            target="es",
            lane="bulk",
            guidance=Guidance(context="A shop."),
            model_type="quality_optimized",
            translation_memory_threshold=0,
        )
        assert job.id == JOB["id"]
        assert mt.translate(["Hi"], source="en", target="es") == ["Hola"]
    body = json.loads(seen[0].content)
    assert body == {
        "texts": ["Hi"],
        "source_lang": "en",
        "target_lang": "es",
        "lane": "bulk",
        "context": "A shop.",
        "model_type": "quality_optimized",
        "translation_memory_threshold": 0,
    }
    assert seen[0].headers["Idempotency-Key"]


def test_the_async_client_returns_coroutines_of_the_same_answers() -> None:
    seen: list[httpx.Request] = []

    async def run() -> list[Any]:
        async with AsyncMTClient("http://fleet") as mt:
            mt.http = httpx.AsyncClient(base_url="http://fleet", transport=server(seen))
            pending = mt.submit(["Hi"], source="en", target="es")
            assert inspect.iscoroutine(pending)
            return [await pending, await mt.translate(["Hi"], source="en", target="es")]

    job, translations = asyncio.run(run())
    assert job.id == JOB["id"] and translations == ["Hola"]
    assert [r.url.path for r in seen] == ["/v1/jobs", "/v1/translate"]
