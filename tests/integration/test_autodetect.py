"""source_lang "auto" on mixed content: the job's language is detected on all its text, and a
segment clearly in another language the fleet serves is translated from that language (its own
chunk), as the phrase-cache keys the worker writes show."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.producer.localfleet import LocalFleet
from tests.integration.costfleet import cost_fleet


@pytest.fixture
def fleet(redis_server: str) -> Iterator[tuple[LocalFleet, TestClient, redis.Redis]]:
    url = redis_server.rsplit("/", 1)[0] + "/3"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    with cost_fleet(url, {}) as (f, api):
        yield f, api, rd


def test_a_french_segment_in_an_english_job_is_translated_from_french(
    fleet: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    _, api, rd = fleet
    texts = [
        "The package contains two cotton shirts and a wool sweater.",
        "Le colis contient deux chemises en coton et un pull en laine.",
        "Free shipping on every order this week.",
    ]
    resp = api.post(
        "/v1/translate", json={"texts": texts, "source_lang": "auto", "target_lang": "es"}
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["translations"] == [f"<es> {t}" for t in texts]
    result = api.get(f"/v1/jobs/{body['id']}/result").json()
    assert result["detected_langs"] == [None, "fr", None]
    cache_keys = list(rd.scan_iter("mt:cache:*"))
    assert sum(":fr:es:" in k for k in cache_keys) == 1
    assert sum(":en:es:" in k for k in cache_keys) == 2
    job = api.get(f"/v1/jobs/{body['id']}").json()
    assert job["detected_source_lang"] == "en" and job["source_lang"] == "en"


def test_auto_with_too_little_text_is_a_clear_422(
    fleet: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    _, api, _ = fleet
    resp = api.post(
        "/v1/jobs", json={"texts": ["12345"], "source_lang": "auto", "target_lang": "es"}
    )
    assert resp.status_code == 422
    assert "source_lang" in resp.json()["error"]["message"]
