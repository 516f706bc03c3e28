"""The interactive lane is not the client's to take (issue 31, item 5), on the real API app and a
real Redis with API keys required; no worker consumes the jobs, so interactive work stays
queued until a test ends it the way the fleet would (a worker's write, a cancel, a failure, an
expiry).

* one request: a job of more texts than MT_INTERACTIVE_MAX_SEGMENTS runs on the bulk lane,
  whatever lane it asks for, on every surface that can ask for the interactive lane;
* one key: its interactive work queued or being translated is bounded (segments and jobs),
  429 ``interactive_share_exceeded`` with Retry-After past it, while other keys and its own
  bulk work pass; the share comes back however that work ends;
* a key made without a rate has MT_KEY_RATE's (keys made before it too); ``none`` has none.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.core import keys
from mtfleet.core.apikeys import KeyStore
from mtfleet.core.interactive import InteractiveShares
from mtfleet.core.models import SegmentOutcome
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobStore
from tests.integration.registered import register_pair
from tests.support import in_process

#: Small limits, so a test reaches them with a few requests.
LIMITS = {
    "interactive_max_segments": 4,
    "key_interactive_segments": 6,
    "key_interactive_jobs": 3,
}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def one(i: int | str) -> dict[str, Any]:
    return {"texts": [f"Red shoe {i}."], "source_lang": "en", "target_lang": "es"}


@pytest.fixture
def api(redis_url: str, r: redis.Redis) -> Iterator[TestClient]:
    register_pair(r, ttl_s=120)  # routing finds a pool; nothing consumes its queues
    settings = Settings(
        redis_url=redis_url,
        auth="required",
        auth_cache_s=0,
        deepl_wait_s=0.2,
        libretranslate_wait_s=0.2,
        **LIMITS,
    )
    with TestClient(create_app(in_process(settings)), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def tokens(r: redis.Redis) -> tuple[str, str]:
    store = KeyStore(r, cache_s=0)
    return store.create("tenant-a", rate=1000.0)[1], store.create("tenant-b", rate=1000.0)[1]


def key_id(token: str) -> str:
    return token.split("_")[1]


def lanes(r: redis.Redis) -> dict[int, set[str]]:
    """Texts per job -> the lanes of the jobs of that size the fleet holds."""
    found: dict[int, set[str]] = {}
    for k in r.scan_iter(keys.job("*")):
        if str(k).count(":") == 2:
            total, lane = r.hmget(k, ["total", "lane"])
            found.setdefault(int(total), set()).add(str(lane))
    return found


def test_one_request_cannot_take_the_interactive_lane_on_any_surface(
    api: TestClient, tokens: tuple[str, str], r: redis.Redis
) -> None:
    a, _ = tokens
    five = [f"Blue shirt number {i}." for i in range(5)]  # one more than MT_INTERACTIVE_MAX...
    asked = {"source_lang": "en", "target_lang": "es", "lane": "interactive"}
    job = api.post("/v1/jobs", json={**asked, "texts": five}, headers=auth(a))
    assert job.status_code == 202, job.text
    assert job.json()["lane"] == "bulk"  # asked for interactive, served on the bulk lane
    small = api.post("/v1/jobs", json={**asked, "texts": five[:4]}, headers=auth(a))
    assert small.json()["lane"] == "interactive"  # up to the limit it is what was asked

    # every other surface that asks for the interactive lane: each makes one job of five
    body = {"texts": five, "source_lang": "en", "target_lang": "es", "timeout": 0.2}
    assert api.post("/v1/translate", json=body, headers=auth(a)).status_code == 202
    resp = api.post(
        "/v2/translate",
        json={"text": [" ".join(five)], "source_lang": "EN", "target_lang": "ES"},
        headers={"Authorization": f"DeepL-Auth-Key {a}"},
    )  # one text of five sentences: five segments
    assert resp.status_code in (429, 503), resp.text  # still translating: send it again
    resp = api.post(
        "/libretranslate/translate",
        json={"q": five, "source": "en", "target": "es", "api_key": a},
    )
    assert resp.status_code in (429, 503), resp.text
    doc = api.post(
        "/v1/documents",
        files={"file": ("five.txt", "\n".join(five).encode())},
        data={"source_lang": "en", "target_lang": "es", "lane": "interactive"},
        headers=auth(a),
    )
    assert doc.status_code == 202, doc.text
    assert lanes(r) == {5: {"bulk"}, 4: {"interactive"}}  # no job of five is interactive
    assert sum(1 for k in r.scan_iter(keys.job("*")) if str(k).count(":") == 2) == 6


def test_a_key_at_its_interactive_share_gets_429_and_no_one_else_does(
    api: TestClient, tokens: tuple[str, str]
) -> None:
    a, b = tokens
    limits = api.get("/v1/limits", headers=auth(a)).json()
    assert {k: limits[k] for k in LIMITS} == LIMITS  # what a client plans by
    first = api.post("/v1/jobs", json=one(0), headers={**auth(a), "Idempotency-Key": "k0"})
    for i in (1, 2):
        assert api.post("/v1/jobs", json=one(i), headers=auth(a)).status_code == 202
    # three interactive jobs queued (MT_KEY_INTERACTIVE_JOBS=3): the fourth waits its turn
    refused = api.post("/v1/jobs", json=one(3), headers=auth(a))
    assert refused.status_code == 429, refused.text
    assert int(refused.headers["Retry-After"]) >= 1
    error = refused.json()["error"]
    assert error["type"] == "interactive_share_exceeded"
    assert error["interactive_jobs"] == 3 and error["interactive_segments"] == 3
    assert "MT_KEY_INTERACTIVE_JOBS" in error["message"] and '"lane": "bulk"' in error["message"]
    translate = api.post("/v1/translate", json=one(4), headers=auth(a))
    assert translate.status_code == 429 and translate.json()["error"]["type"] == error["type"]
    deepl = api.post(
        "/v2/translate",
        json={"text": ["Red shoe 5."], "source_lang": "EN", "target_lang": "ES"},
        headers={"Authorization": f"DeepL-Auth-Key {a}"},
    )
    assert deepl.status_code == 429 and deepl.headers["Retry-After"]
    # a replay of one of its jobs finds that job; its bulk work and another key go on
    again = api.post("/v1/jobs", json=one(0), headers={**auth(a), "Idempotency-Key": "k0"})
    assert again.status_code == 202 and again.json()["id"] == first.json()["id"]
    bulk = api.post("/v1/jobs", json={**one(6), "lane": "bulk"}, headers=auth(a))
    assert bulk.status_code == 202, bulk.text
    for i in range(3):
        assert api.post("/v1/jobs", json=one(f"b{i}"), headers=auth(b)).status_code == 202


def test_the_share_counts_segments_and_comes_back_however_work_ends(
    api: TestClient, tokens: tuple[str, str], r: redis.Redis
) -> None:
    a, _ = tokens
    store = JobStore(r, result_ttl_s=3600)
    shares = InteractiveShares(r, segments=6, jobs=3, ttl_s=3600)
    owner = key_id(a)

    def send(n: int, tag: str) -> Any:
        body = {"texts": [f"{tag} shoe {i}." for i in range(n)], "source_lang": "en",
                "target_lang": "es"}  # fmt: skip
        return api.post("/v1/jobs", json=body, headers=auth(a))

    four = send(4, "four").json()["id"]
    two = send(2, "two").json()["id"]
    assert shares.held(owner) == (6, 2)
    assert send(1, "over").status_code == 429  # 6 of 6 segments held (2 of 3 jobs)

    # a worker finishes three of the four segments (its own write path): three come back
    done = SegmentOutcome(translation="zapato")
    store.record(four, [(i, done) for i in range(3)], pool="apertium", lane="interactive")
    assert shares.held(owner) == (3, 2)
    third = send(3, "three")
    assert third.status_code == 202, third.text
    assert send(1, "over").status_code == 429  # three jobs

    # the rest ends every other way: finished, cancelled, failed, expired
    store.record(four, [(3, done)], pool="apertium", lane="interactive")
    assert api.delete(f"/v1/jobs/{two}", headers=auth(a)).status_code == 200
    store.fail(third.json()["id"], {"type": "engine_error", "message": "down"})
    assert shares.held(owner) == (0, 0)
    last = send(1, "last").json()["id"]
    r.delete(keys.job(last))  # its data expired (MT_RESULT_TTL_S)
    assert shares.held(owner) == (0, 0)

    # an entry naming no job (an earlier version's reservation) holds nothing and goes
    r.hset(keys.api_key_interactive(owner), "r:dead", f"5 {time.time() - 1:.3f}")
    assert shares.held(owner) == (0, 0)
    assert r.hlen(keys.api_key_interactive(owner)) == 0  # nothing left behind


def test_a_key_without_a_rate_has_the_default_and_none_has_none(
    redis_url: str, r: redis.Redis
) -> None:
    register_pair(r, ttl_s=60)
    settings = Settings(redis_url=redis_url, auth="required", auth_cache_s=0, key_rate=2)
    store = KeyStore(r, cache_s=0)
    plain = store.create("plain")[1]
    unlimited = store.create("unlimited", rate="none")[1]
    before = store.create("made-before")[1]
    r.hset(keys.api_key(key_id(before)), "rate", "")  # how keys without a rate were stored

    def refused(token: str, n: int) -> list[httpx.Response]:
        """The 429s of ``n`` calls in a row (each taken, with its headers, as it came: a later
        call would find the bucket refilled on a slow machine)."""
        answers = [client.get("/v1/limits", headers=auth(token)) for _ in range(n)]
        return [a for a in answers if a.status_code == 429]

    with TestClient(create_app(in_process(settings)), raise_server_exceptions=False) as client:
        over = refused(plain, 4)  # MT_KEY_RATE=2: bursts of two
        assert over and all(int(a.headers["Retry-After"]) >= 1 for a in over)
        assert refused(before, 4)
        assert refused(unlimited, 20) == []
    listed = {k.name: k for k in KeyStore(r, cache_s=0, default_rate=2).list_keys()}
    assert listed["plain"].rate == 2 and listed["plain"].rate_default
    assert listed["made-before"].rate == 2 and listed["made-before"].rate_default
    assert listed["unlimited"].rate is None and not listed["unlimited"].rate_default
