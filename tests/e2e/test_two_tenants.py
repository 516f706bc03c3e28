"""No tenant can hurt another: what one API key does with its own jobs (a thousand event streams,
near-limit documents) costs another key nothing. A real ``mtfleet api`` with API keys required
and a real Apertium worker; key A floods, key B works as usual and is timed by its deadlines.

Key A's jobs go to a pool whose worker has stopped (``parked``): they stay queued, so A's streams
stay open until A cancels the job, which wakes every one of them at once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import redis

from mtfleet.core.keys import job_all as keys_of
from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer.client import MTClient, MTClientError
from tests.e2e.fleet_control import APERTIUM_WORKER, apertium_fleet

pytestmark = pytest.mark.slow

STREAMS = 1000
#: B's calls must each answer within this (an idle fleet answers in tens of milliseconds).
B_DEADLINE_S = 10.0


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    with apertium_fleet(redis_server, {"MT_AUTH": "required"}) as f:
        parked = f.start_worker(*APERTIUM_WORKER, "--pool", "parked", name="parked")
        f.wait_ready(60, pool="parked")
        parked.popen.terminate()  # the pool stays known: its jobs queue and wait
        parked.popen.wait(30)
        yield f


@pytest.fixture(scope="module")
def keys(fleet: LocalFleet) -> tuple[str, str]:
    return fleet.create_api_key("tenant-a"), fleet.create_api_key("tenant-b")


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass
class StreamEnd:
    status: int
    retry_after: str | None = None
    events: list[str] | None = None  # the event names received, in order
    complete: bool = False  # the body ended after a final event (no cut mid-stream)
    error: str | None = None


async def follow(client: httpx.AsyncClient, job_id: str, key: str) -> StreamEnd:
    """One event stream of ``job_id``, read to its end."""
    try:
        async with client.stream(
            "GET", f"/v1/jobs/{job_id}/events", headers=auth(key), timeout=60
        ) as resp:
            if resp.status_code != 200:
                await resp.aread()
                return StreamEnd(resp.status_code, resp.headers.get("retry-after"))
            events: list[str] = []
            async for line in resp.aiter_lines():
                if line.startswith("event: "):
                    events.append(line.removeprefix("event: "))
            final = bool(events) and events[-1] != "job.progress"
            return StreamEnd(200, events=events, complete=final)
    except httpx.HTTPError as exc:
        return StreamEnd(0, error=f"{type(exc).__name__}: {exc}")


async def b_works(client: httpx.AsyncClient, key: str, rounds: int) -> list[tuple[int, str]]:
    """Key B's ordinary day: one-line translations (new ones: the worker translates them) and
    a small upload followed to its end; (status, what) of every call."""
    seen: list[tuple[int, str]] = []
    for i in range(rounds):
        text = f"The red chair number {i} is in the house."
        resp = await client.post(
            "/v1/translate",
            json={"texts": [text], "source_lang": "en", "target_lang": "es"},
            headers=auth(key),
            timeout=B_DEADLINE_S,
        )
        seen.append((resp.status_code, f"translate {i}: {resp.text[:200]}"))
        await asyncio.sleep(0.05)
    up = await client.post(
        "/v1/documents",
        files={"file": ("note.txt", b"The blue table is small.\n")},
        data={"target_lang": "es", "source_lang": "en"},
        headers=auth(key),
        timeout=B_DEADLINE_S,
    )
    seen.append((up.status_code, f"upload: {up.text[:200]}"))
    if up.status_code in (200, 202):
        end = await follow(client, up.json()["id"], key)
        seen.append((end.status, f"B's stream: {end}"))
        assert end.complete and end.events and end.events[-1] == "job.succeeded", end
    return seen


def test_a_thousand_streams_of_one_key_cost_another_key_nothing(
    fleet: LocalFleet, keys: tuple[str, str]
) -> None:
    a, b = keys

    async def run() -> tuple[list[StreamEnd], list[tuple[int, str]], httpx.Response]:
        limits = httpx.Limits(max_connections=STREAMS + 50, max_keepalive_connections=50)
        async with httpx.AsyncClient(base_url=fleet.api_url, limits=limits) as client:
            job = await client.post(
                "/v1/jobs",
                json={"texts": ["A parked sentence."], "source_lang": "en", "target_lang": "es",
                      "pool": "parked", "lane": "bulk"},
                headers=auth(a),
            )  # fmt: skip
            assert job.status_code == 202, job.text
            job_id = job.json()["id"]
            streams = [asyncio.create_task(follow(client, job_id, a)) for _ in range(STREAMS)]
            # A's streams open, or are refused: the first to end is a refusal (a held one ends
            # with the job). A fixed 3 s wait here saw none on a slow day: the API had not yet
            # come to the streams past A's share when the job was cancelled.
            await asyncio.wait(streams, timeout=60, return_when=asyncio.FIRST_COMPLETED)
            b_task = asyncio.create_task(b_works(client, b, 20))
            await asyncio.sleep(0.5)
            cancel = await client.delete(f"/v1/jobs/{job_id}", headers=auth(a))  # wakes them all
            ends = await asyncio.gather(*streams)
            return ends, await b_task, cancel

    ends, seen, cancel = asyncio.run(run())
    assert cancel.status_code == 200, cancel.text
    # B: every call answered, none a 5xx or a refusal, each within its deadline
    assert all(status in (200, 202) for status, _ in seen), [s for s in seen if s[0] >= 300]
    # A: a bounded share of streams; the rest refused with a time to come back
    refused = [e for e in ends if e.status == 429]
    held = [e for e in ends if e.status == 200]
    assert refused and all(e.retry_after for e in refused)
    assert held and len(held) + len(refused) == STREAMS, [
        e for e in ends if e.status not in (200, 429)
    ]
    # every stream held ended cleanly, with the job's final event: none cut mid-body
    assert all(e.complete and e.events and e.events[-1] == "job.cancelled" for e in held), [
        e for e in held if not e.complete
    ][:3]


def test_near_limit_documents_of_one_key_do_not_hold_up_another(
    fleet: LocalFleet, keys: tuple[str, str]
) -> None:
    """Twelve SRT files of 180,000 cues each from key A at once (each far over what a job may
    carry): refused while they are read, one at a time in A's share of the document processes,
    four more waiting their turn, the rest 429; key B's small uploads are read at once."""
    a, b = keys
    cues = "".join(
        f"{i}\n00:00:00,000 --> 00:00:01,000\nGo!\n\n" for i in range(1, 180_001)
    ).encode()
    assert len(cues) < 8 * 1024 * 1024  # under the request limit: the reading must refuse it

    async def run() -> tuple[list[httpx.Response], list[httpx.Response]]:
        async with httpx.AsyncClient(base_url=fleet.api_url, timeout=120) as client:

            async def upload(key: str, name: str, data: bytes) -> httpx.Response:
                return await client.post(
                    "/v1/documents",
                    files={"file": (name, data)},
                    data={"target_lang": "es", "source_lang": "en"},
                    headers=auth(key),
                )

            floods = [asyncio.create_task(upload(a, f"film{i}.srt", cues)) for i in range(12)]
            await asyncio.sleep(0.5)
            mine = []
            for i in range(3):
                mine.append(
                    await asyncio.wait_for(
                        upload(b, f"note{i}.txt", b"The blue table is small.\n"), B_DEADLINE_S
                    )
                )
            return list(await asyncio.gather(*floods)), mine

    floods, mine = asyncio.run(run())
    assert all(r.status_code in (200, 202) for r in mine), [r.text for r in mine]
    statuses = sorted(r.status_code for r in floods)
    assert set(statuses) <= {422, 429} and 429 in statuses, [r.text[:200] for r in floods]
    assert statuses.count(422) >= 5  # the one read and the four that waited for A's share
    for r in floods:
        error = r.json()["error"]
        if r.status_code == 422:
            assert error["type"] == "document_too_large" and "10000" in error["message"]
        else:
            assert error["type"] == "rate_limited" and int(r.headers["retry-after"]) >= 1


def test_a_stream_whose_reads_fail_ends_with_an_event_not_a_cut(
    fleet: LocalFleet, keys: tuple[str, str]
) -> None:
    """The stream's reads fail (its job is purged under it): the client gets a final event
    saying why, and the body ends cleanly."""
    _, b = keys
    with httpx.Client(base_url=fleet.api_url, timeout=30) as client:
        job = client.post(
            "/v1/jobs",
            json={"texts": ["Parked again."], "source_lang": "en", "target_lang": "es",
                  "pool": "parked", "lane": "bulk"},
            headers=auth(b),
        ).json()  # fmt: skip
        with client.stream("GET", f"/v1/jobs/{job['id']}/events", headers=auth(b)) as resp:
            lines = resp.iter_lines()
            assert next(lines).startswith(("retry:", "id:", "event:"))
            purged = httpx.delete(
                f"{fleet.api_url}/v1/jobs/{job['id']}", params={"purge": "true"}, headers=auth(b)
            )
            assert purged.status_code == 200
            rest = list(lines)
    events = [ln.removeprefix("event: ") for ln in rest if ln.startswith("event: ")]
    data = [json.loads(ln.removeprefix("data: ")) for ln in rest if ln.startswith("data: ")]
    assert events[-1] in ("job.cancelled", "error"), rest
    if events[-1] == "error":
        assert data[-1]["error"]["type"] == "job_not_found"


def test_the_sdk_following_a_job_that_expires_under_it_says_so(
    fleet: LocalFleet, keys: tuple[str, str]
) -> None:
    """mt.events() meets the stream's error event (its job's keys expired mid-stream), opens
    the stream again and raises the 404 that answers it (it once failed to read the error event
    as a job). Expiry is what deletes a job without a cancel: a purge cancels first, and its
    stream may end on ``job.cancelled`` (test above)."""
    _, b = keys
    with MTClient(fleet.api_url, api_key=b) as mt:
        job = mt.submit(["Parked once more."], source="en", target="es", pool="parked")
        events = mt.events(job.id, timeout=30)
        assert next(events).status.value == "queued"
        r = redis.Redis.from_url(fleet.redis_url)
        assert r.delete(*keys_of(job.id)) > 0  # what the TTL does when it runs out
        with pytest.raises(MTClientError) as raised:
            for _ in events:
                pass
        assert raised.value.status == 404 and raised.value.type == "job_not_found"
