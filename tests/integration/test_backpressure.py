"""Backpressure: once a lane's queue holds MT_MAX_QUEUE_<LANE> chunks, new work for that lane
gets 429 with Retry-After (nothing is written for it), while the other lane and answers from the
phrase cache still pass. No worker runs here, so the queue only grows."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.core import keys
from mtfleet.core.settings import Settings
from tests.integration.registered import register_pair
from tests.support import in_process


@pytest.fixture
def api(redis_url: str, r: redis.Redis) -> Iterator[TestClient]:
    register_pair(r, ttl_s=60)
    settings = Settings(redis_url=redis_url, chunk_size=10, max_queue_bulk=5, auth="off")
    with TestClient(create_app(in_process(settings)), raise_server_exceptions=False) as client:
        yield client


def bulk(texts: list[str]) -> dict[str, object]:
    return {"texts": texts, "source_lang": "en", "target_lang": "es", "lane": "bulk"}


def test_a_full_lane_answers_429_and_records_nothing(api: TestClient, r: redis.Redis) -> None:
    # 4 chunks, then 2 more: the queue passes its limit of 5
    assert api.post("/v1/jobs", json=bulk([f"a{i}" for i in range(40)])).status_code == 202
    assert api.post("/v1/jobs", json=bulk([f"b{i}" for i in range(20)])).status_code == 202
    time.sleep(0.25)  # the API reads the depth at most every 0.2 s
    jobs_before = len(list(r.scan_iter(keys.job("*"))))
    resp = api.post("/v1/jobs", json=bulk(["one more"]))
    assert resp.status_code == 429, resp.text
    assert resp.json()["error"]["type"] == "overloaded"
    assert int(resp.headers["Retry-After"]) >= 1
    assert "MT_MAX_QUEUE_BULK" in resp.json()["error"]["message"]
    assert len(list(r.scan_iter(keys.job("*")))) == jobs_before  # nothing written
    assert r.llen(keys.queue("apertium", "bulk")) == 6

    # the interactive lane has its own limit
    resp = api.post("/v1/jobs", json={**bulk(["quick"]), "lane": "interactive"})
    assert resp.status_code == 202, resp.text

    # the queue drains below the limit: accepted again
    r.ltrim(keys.queue("apertium", "bulk"), 0, 1)
    time.sleep(0.25)
    assert api.post("/v1/jobs", json=bulk(["after the drain"])).status_code == 202
    assert "mt_api_rejected_total" in api.get("/metrics").text
