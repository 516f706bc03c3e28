"""The API on a real Redis at its edges: malformed input is a clear 4xx (never a 5xx), and a
Redis outage is a quick 503 — never a 202 for work that was not recorded."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import psutil
import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.core.settings import Settings
from mtfleet.fleet.localfleet import LocalFleet, free_port
from tests.integration.registered import register_pair
from tests.support import in_process

BODY = {"texts": ["Red shoes"], "source_lang": "en", "target_lang": "es"}


@pytest.fixture
def api(redis_url: str, r: redis.Redis) -> Iterator[TestClient]:
    # A registered pair (as a worker's heartbeat leaves it), so requests get past routing.
    register_pair(r, ttl_s=60)
    settings = Settings(
        redis_url=redis_url,
        max_request_bytes=64 * 1024,
        max_segment_chars=100,
        max_segments_per_job=20,
    )
    with TestClient(create_app(in_process(settings)), raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize(
    ("content", "headers", "status"),
    [
        (b"{not json", {"content-type": "application/json"}, 422),
        (
            b'{"texts": ["\xff\xfe bad utf-8"], "source_lang": "en", "target_lang": "es"}',
            {"content-type": "application/json"},
            400,
        ),
        (b"[1, 2, 3]", {"content-type": "application/json"}, 422),
        (b"", {"content-type": "application/json"}, 422),
    ],
)
def test_malformed_bodies_are_422(
    api: TestClient, content: bytes, headers: dict[str, str], status: int
) -> None:
    resp = api.post("/v1/jobs", content=content, headers=headers)
    assert resp.status_code == status, resp.text
    assert resp.json()["error"]["type"] == "invalid_input"


@pytest.mark.parametrize(
    "ctype", ["application/x-www-form-urlencoded", "text/plain; charset=utf-8", None]
)
def test_a_json_body_is_json_whatever_its_content_type_says(
    api: TestClient, ctype: str | None
) -> None:
    """``curl -d '{...}'`` declares a form: the body parses as JSON, so it is taken as JSON."""
    body = b'{"texts": ["Red shoes"], "source_lang": "en", "target_lang": "es"}'
    headers = {"content-type": ctype} if ctype else {}
    resp = api.post("/v1/jobs", content=body, headers=headers)
    assert resp.status_code in (200, 202), resp.text
    assert resp.json()["progress"]["total"] == 1


def test_a_body_that_is_not_json_nor_multipart_is_415_naming_the_header(api: TestClient) -> None:
    resp = api.post(
        "/v1/jobs",
        content=b"texts=hello",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert resp.status_code == 415, resp.text
    err = resp.json()["error"]
    assert err["type"] == "unsupported_media_type"
    assert "Content-Type: application/json" in err["message"]
    assert "application/x-www-form-urlencoded" in err["message"]


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"texts": ["x" * 101]}, "limit is 100"),
        ({"texts": ["a"] * 21}, "limit is 20"),
        ({"texts": ["nul\x00here"]}, "control character U+0000"),
        ({"texts": ["\ud800"]}, "surrogate"),
        ({"source_lang": "e"}, "source_lang"),
        ({"source_lang": "en" * 20}, "source_lang"),
        ({"lane": "fast"}, "lane"),
        ({"unexpected": 1}, "unexpected"),
        ({"texts": [1, 2]}, "texts"),
    ],
)
def test_invalid_fields_are_clear_422(api: TestClient, patch: dict, needle: str) -> None:  # type: ignore[type-arg]
    # json.dumps escapes what httpx could not encode (a lone surrogate travels as \\ud800).
    resp = api.post(
        "/v1/jobs",
        content=json.dumps({**BODY, **patch}),
        headers={"content-type": "application/json"},
    )
    assert resp.status_code == 422, resp.text
    assert needle in resp.json()["error"]["message"]


def test_oversized_bodies_are_413_with_and_without_content_length(api: TestClient) -> None:
    big = b'{"texts": ["' + b"a" * 70_000 + b'"], "source_lang": "en", "target_lang": "es"}'
    resp = api.post("/v1/jobs", content=big, headers={"content-type": "application/json"})
    assert resp.status_code == 413 and resp.json()["error"]["type"] == "payload_too_large"

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(big), 8192):
            yield big[i : i + 8192]

    resp = api.post("/v1/jobs", content=chunks(), headers={"content-type": "application/json"})
    assert resp.status_code == 413


def test_idempotency_key_reused_with_another_body_is_409(api: TestClient) -> None:
    first = api.post("/v1/jobs", json=BODY, headers={"Idempotency-Key": "k1"})
    again = api.post("/v1/jobs", json=BODY, headers={"Idempotency-Key": "k1"})
    other = api.post(
        "/v1/jobs", json={**BODY, "texts": ["Blue shoes"]}, headers={"Idempotency-Key": "k1"}
    )
    assert first.status_code == 202 and again.json()["id"] == first.json()["id"]
    assert other.status_code == 409 and other.json()["error"]["type"] == "idempotency_conflict"


def test_unfinished_result_is_409_unless_partial(api: TestClient) -> None:
    job = api.post("/v1/jobs", json=BODY).json()  # no worker consumes it here
    resp = api.get(f"/v1/jobs/{job['id']}/result")
    assert resp.status_code == 409 and "partial=true" in resp.json()["error"]["message"]
    partial = api.get(f"/v1/jobs/{job['id']}/result", params={"partial": "true"}).json()
    assert partial["translations"] == [None] and partial["status"] == "queued"


def test_translate_answers_202_with_the_job_when_no_worker_finishes_in_time(
    api: TestClient,
) -> None:
    t0 = time.monotonic()
    resp = api.post("/v1/translate", json={**BODY, "timeout": 0.5})
    assert 0.5 <= time.monotonic() - t0 < 3
    assert resp.status_code == 202 and resp.headers["location"] == f"/v1/jobs/{resp.json()['id']}"


def test_redis_down_is_a_quick_503_and_health_stays_up() -> None:
    dead = Settings(redis_url=f"redis://127.0.0.1:{free_port()}/0")
    with TestClient(create_app(in_process(dead)), raise_server_exceptions=False) as client:
        t0 = time.monotonic()
        resp = client.post("/v1/jobs", json=BODY)
        assert resp.status_code == 503 and resp.json()["error"]["type"] == "unavailable"
        assert resp.headers["retry-after"] == "1"
        # the cause (address, port, errno) is logged, not told to the client
        assert resp.json()["error"]["message"] == "the job store is unavailable; retry shortly"
        assert time.monotonic() - t0 < 10
        assert client.get(f"/v1/jobs/{'a' * 32}").status_code == 503  # a well-formed id
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 503
        assert client.get("/metrics").status_code == 200


@pytest.mark.parametrize("preload", [None, "false"])
def test_the_api_starts_its_document_processes_before_it_serves(
    redis_url: str, preload: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first document must not wait seconds for its processes to start and import the
    formats, nor the first auto-detected request for lingua's models: by default, when the API
    answers at all, both are loaded. MT_PRELOAD=false (what the suite's fleets run,
    tests/conftest.py) loads neither before the first use."""
    if preload is None:
        monkeypatch.delenv("MT_PRELOAD", raising=False)  # the default
    else:
        monkeypatch.setenv("MT_PRELOAD", preload)
    with LocalFleet(redis_url=redis_url, env={"MT_DOCUMENT_WORKERS": "3"}) as fleet:
        fleet.start_api()  # returns once /healthz answers
        api = psutil.Process(next(p for p in fleet.procs if p.name == "api").popen.pid)
        children = api.children(recursive=True)
        # the fork server (the API's child) and the processes it forked (api/parsing.py)
        forked = [c for c in children if "multiprocessing.forkserver" in " ".join(c.cmdline())]
        workers = [c for c in forked if c.ppid() != api.pid]
        lingua = [m.path for m in api.memory_maps() if "/lingua/" in m.path]
        if preload is None:
            assert len(workers) == 3, [c.cmdline() for c in children]
            assert lingua, "lingua's detector is not loaded"
        else:
            assert (forked, lingua) == ([], [])
