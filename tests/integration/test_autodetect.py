"""source_lang "auto" on mixed content: the job's language is detected on all its text, and a
segment clearly in another language the fleet serves is translated from that language (its own
chunk), as the phrase-cache keys the worker writes show."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.fleet.localfleet import LocalFleet
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


def test_text_without_letters_goes_to_a_served_source_with_no_confidence(
    fleet: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    """Nothing to tell ("12345") is no reason to refuse: any served source gives the same text
    back, and the job says the detector had no confidence."""
    _, api, _ = fleet
    resp = api.post("/v1/translate", json={"texts": ["12345"], "target_lang": "es"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["detected_source_lang"] == "en" and body["detected_confidence"] == 0


def test_a_job_of_text_already_in_the_target_is_kept_not_refused(
    fleet: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    """Spanish sent to Spanish with auto: each text is kept as it is (with a warning), not
    refused with "source_lang and target_lang are both 'es'"."""
    _, api, _ = fleet
    texts = ["El paquete contiene dos camisas de algodón y un jersey de lana."]
    resp = api.post("/v1/translate", json={"texts": texts, "target_lang": "es"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["translations"] == texts
    assert body["warnings"][0]["type"] == "already_in_target_language"
