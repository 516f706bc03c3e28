"""A request either has its job and paid for it, or has neither (issue 39, items 7 and 11), on
the real API app and a real Redis with API keys required; no worker consumes the jobs.

* the client goes away (Starlette cancels the request's task) at every point where submission
  waits, or Redis refuses every write from that point on: after each, Redis holds the job, its
  characters, its share of the interactive lane and its Idempotency-Key's record, or none of
  them;
* an Idempotency-Key that expires while its request is made never makes a job nobody paid for;
* ``source_lang: auto``: a key whose quota is spent is refused before any text is detected,
  and one key's flood of detections is bounded (429 past its share) while another key's
  requests are served.
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.api import metrics
from mtfleet.api.app import create_app
from mtfleet.core import keys
from mtfleet.core.apikeys import ApiKey, KeyStore, utc_day
from mtfleet.core.errors import Unavailable
from mtfleet.core.schemas import JobCreate
from mtfleet.core.settings import Settings
from tests.integration.registered import register_pair
from tests.support import in_process

TEXTS = ["Red shoe.", "Blue hat."]  # 18 characters
SENTENCES = [
    "The package contains two cotton shirts and a wool sweater.",
    "Free shipping on every order this week, whatever its size.",
    "Our store opens at nine in the morning and closes at six.",
]


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def api(redis_url: str, r: redis.Redis) -> Iterator[TestClient]:
    register_pair(r, ttl_s=300)  # routing finds a pool; nothing consumes its queues
    settings = Settings(
        redis_url=redis_url,
        auth="required",
        auth_cache_s=0,
        # room for every job these tests leave queued: the share is checked, never reached
        key_interactive_segments=100_000,
        key_interactive_jobs=10_000,
    )
    with TestClient(create_app(in_process(settings)), raise_server_exceptions=False) as client:
        yield client


def made(r: redis.Redis) -> set[str]:
    """The ids of the jobs the fleet holds."""
    return {str(k).split(":")[2] for k in r.scan_iter(keys.job("*")) if str(k).count(":") == 2}


def assert_whole(r: redis.Redis, key: ApiKey, chars_per_job: int) -> None:
    """Every job is paid for, holds its share and is its Idempotency-Key's; nothing is charged,
    held or remembered for a job that is not there."""
    jobs = made(r)
    used = int(r.get(keys.api_key_chars(key.id, utc_day(time.time()))) or 0)
    held = set(r.hkeys(keys.api_key_interactive(key.id)))
    named = {str(r.get(k)).split(" ")[0] for k in r.scan_iter(keys.idempotency("*"))}
    assert used == chars_per_job * len(jobs), (used, len(jobs))
    assert held == jobs
    assert named == jobs


class AtWait:
    """Awaits ``coro`` and calls ``act`` when it waits for the ``n``-th time (a Redis reply, a
    worker thread, a checkpoint): each wait of the path is where something may happen to it."""

    def __init__(self, coro: Awaitable[Any], n: int, act: Callable[[], None]) -> None:
        self.coro, self.n, self.act = coro, n, act
        self.waits = 0

    def __await__(self) -> Generator[Any, Any, Any]:
        inner = self.coro.__await__()
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                waiting = inner.throw(error) if error is not None else inner.send(value)
            except StopIteration as stop:
                return stop.value
            self.waits += 1
            if self.waits == self.n:
                self.act()
            try:
                value, error = (yield waiting), None
            except BaseException as exc:  # noqa: BLE001 (the task's, passed on as it came)
                value, error = None, exc


@pytest.mark.parametrize("source", ["en", "auto"])
def test_a_submission_cancelled_at_any_wait_has_its_job_and_paid_or_neither(
    api: TestClient, r: redis.Redis, source: str
) -> None:
    """As Starlette cancels a request whose client left: the request's cancel scope is
    cancelled and stays so (every later wait is cancelled too, but shielded ones), at the
    first wait of submission, then the second, ... until one runs to its end."""
    services = api.app.state.services  # type: ignore[attr-defined]
    key, _ = KeyStore(r, cache_s=0).create("shop", rate="none")

    async def cancelled_at(n: int) -> int:
        body = JobCreate(texts=TEXTS, source_lang=source, target_lang="es")
        submit = services.jobs.submit(body, owner=key.id, key=key, idempotency_key=f"k{n}")
        async with anyio.create_task_group() as tg:
            run = AtWait(submit, n, tg.cancel_scope.cancel)
            tg.start_soon(_wait_for, run)
        return run.waits

    for n in itertools.count(1):
        waits = api.portal.call(cancelled_at, n)  # type: ignore[union-attr]
        assert_whole(r, key, len("".join(TEXTS)))
        if waits < n:
            break  # it ran to its end: every wait was tried
    assert made(r), "no run made its job"
    assert n > 5  # (the path waits at least on the charge, the cache, the store)


def test_redis_refusing_writes_at_any_point_of_a_submission_leaves_nothing_half(
    api: TestClient, r: redis.Redis
) -> None:
    """From the n-th wait of submission on, Redis refuses every write (out of memory, a real
    Redis error): the request fails with 503 or has its job, never half of it (a charge or a
    share without a job, a job without them)."""
    services = api.app.state.services  # type: ignore[attr-defined]
    key, _ = KeyStore(r, cache_s=0).create("shop", rate="none")

    async def full_at(n: int) -> int:
        body = JobCreate(texts=TEXTS, source_lang="en", target_lang="es")
        submit = services.jobs.submit(body, owner=key.id, key=key, idempotency_key=f"k{n}")
        run = AtWait(submit, n, functools.partial(r.config_set, "maxmemory", 1))
        try:
            await run
        except Unavailable:
            pass
        finally:
            r.config_set("maxmemory", 0)
        return run.waits

    for n in itertools.count(1):
        waits = api.portal.call(full_at, n)  # type: ignore[union-attr]
        assert_whole(r, key, len("".join(TEXTS)))
        if waits < n:
            break
    assert made(r)


async def _wait_for(run: AtWait) -> None:
    await run


@pytest.mark.parametrize("resent", ["the same body", "another body"])
def test_an_idempotency_key_that_expires_while_its_request_is_made_makes_no_free_job(
    api: TestClient, r: redis.Redis, resent: str
) -> None:
    """A 20-character key spends its day; the same Idempotency-Key is sent again and its record
    expires while that request is being made: the request joins its job, or is refused (409,
    429), and every job there is was paid for."""
    store = KeyStore(r, cache_s=0)
    key, token = store.create("shop", chars_per_day=20, rate="none")
    body = {"texts": ["Red shoes"], "source_lang": "en", "target_lang": "es"}
    idem = {**auth(token), "Idempotency-Key": "order-7"}
    first = api.post("/v1/jobs", json=body, headers=idem)
    assert first.status_code == 202, first.text
    spend = api.post("/v1/jobs", json={**body, "texts": ["x" * 11]}, headers=auth(token))
    assert spend.status_code == 202 and store.used_today([key.id]) == {key.id: 20}

    jobs = api.app.state.services.jobs  # type: ignore[attr-defined]
    routed = jobs.routing.route

    async def slow_route(*args: Any, **kw: Any) -> Any:  # the request outlives the key's record
        for k in r.scan_iter(keys.idempotency("*")):
            r.delete(k)
        return await routed(*args, **kw)

    jobs.routing.route = slow_route
    try:
        again_body = body if resent == "the same body" else {**body, "texts": ["y" * 5000]}
        again = api.post("/v1/jobs", json=again_body, headers=idem)
    finally:
        jobs.routing.route = routed
    assert again.status_code in (202, 409, 429), again.text
    if again.status_code == 202:
        assert again.json()["id"] == first.json()["id"]  # it joined its job
    assert len(made(r)) == 2 and store.used_today([key.id]) == {key.id: 20}


def detected() -> float:
    return metrics.REGISTRY.get_sample_value("mt_api_detected_texts_total") or 0.0


def test_a_spent_key_is_refused_before_detection_and_a_flood_is_bounded_per_key(
    api: TestClient, r: redis.Redis
) -> None:
    store = KeyStore(r, cache_s=0)
    _, spent = store.create("spent", chars_per_day=10, rate="none")
    _, a = store.create("flood", rate="none")
    _, b = store.create("other", rate="none")
    auto = {"texts": SENTENCES, "source_lang": "auto", "target_lang": "es"}

    # detection is counted where it runs: another key's auto request is
    before = detected()
    served = api.post("/v1/jobs", json=auto, headers=auth(b))
    assert served.status_code == 202, served.text
    assert detected() == before + len(SENTENCES)

    # a key whose day is spent gets its 429 before any text is detected
    assert api.post("/v1/jobs", json={**auto, "texts": ["x" * 10], "source_lang": "en"},
                    headers=auth(spent)).status_code == 202  # fmt: skip
    before = detected()
    refused = api.post("/v1/jobs", json=auto, headers=auth(spent))
    assert refused.status_code == 429 and refused.json()["error"]["type"] == "quota_exceeded"
    assert detected() == before

    # key A floods: a few of its detections run or wait (its share), the rest are 429 at
    # once; key B's request, sent while A's run, is served, before A's last one is
    big = {**auto, "texts": [f"{SENTENCES[i % 3]} Item {i}." for i in range(3000)]}
    finished: list[str] = []
    lock = threading.Lock()

    def send(who: str, token: str, body: dict[str, Any]) -> Any:
        resp = api.post("/v1/jobs", json=body, headers=auth(token))
        with lock:
            finished.append(who if resp.status_code == 202 else f"{who}:{resp.status_code}")
        return resp

    with ThreadPoolExecutor(8) as pool:
        before = detected()
        flood = [pool.submit(send, "a", a, big) for _ in range(7)]
        deadline = time.monotonic() + 60
        while detected() == before and time.monotonic() < deadline:
            time.sleep(0.01)  # A's first detection has started
        other = pool.submit(send, "b", b, auto).result(timeout=120)
        answers = [f.result(timeout=300) for f in flood]
    assert other.status_code == 202, other.text
    over = [x for x in answers if x.status_code == 429]
    assert over and all(x.json()["error"]["type"] == "rate_limited" for x in over)
    assert all(int(x.headers["Retry-After"]) >= 1 for x in over)
    assert "MT_KEY_DETECTIONS" in over[0].json()["error"]["message"]
    accepted = [i for i, who in enumerate(finished) if who == "a"]
    assert len(accepted) >= 2 and finished.index("b") < accepted[-1], finished
