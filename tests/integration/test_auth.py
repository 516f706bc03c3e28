"""API keys on the real API and a real Redis (MT_AUTH=required): 401s, per-key visibility and
idempotency, the daily quota and the rate (429 + Retry-After), and the purge route."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from mtfleet.api import deepl
from mtfleet.api.app import create_app
from mtfleet.api.surfaces import V1, surface_for
from mtfleet.core import keys
from mtfleet.core.apikeys import KeyStore, seconds_to_utc_midnight
from mtfleet.core.cache import PhraseCache
from mtfleet.core.errors import QuotaExceeded
from mtfleet.core.registry import Registry, WorkerInfo
from mtfleet.core.settings import Settings
from mtfleet.fleet.localfleet import free_port
from tests.integration.registered import register_pair
from tests.support import in_process

SURFACES = (V1, deepl.SURFACE)
BODY = {"texts": ["Red shoes"], "source_lang": "en", "target_lang": "es"}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def store(r: redis.Redis) -> KeyStore:
    return KeyStore(r, cache_s=0)


@pytest.fixture
def api(redis_url: str, r: redis.Redis) -> Iterator[TestClient]:
    # A registered pair (as a worker's heartbeat leaves it); no worker consumes the jobs.
    register_pair(r, ttl_s=60)
    settings = Settings(redis_url=redis_url, auth="required", auth_cache_s=0, max_segment_chars=50)
    with TestClient(create_app(in_process(settings)), raise_server_exceptions=False) as client:
        yield client


# Every /v1 route, with a request that would succeed (or 404) given a key.
V1_CALLS = [
    ("POST", "/v1/jobs", BODY),
    ("GET", "/v1/jobs/abc", None),
    ("GET", "/v1/jobs/abc/result", None),
    ("GET", "/v1/jobs/abc/document", None),
    ("GET", "/v1/jobs/abc/events", None),
    ("POST", "/v1/documents", None),
    ("DELETE", "/v1/jobs/abc", None),
    ("POST", "/v1/translate", {**BODY, "timeout": 0.1}),
    ("GET", "/v1/languages", None),
    ("GET", "/v1/limits", None),
    (
        "POST",
        "/v1/glossaries",
        {"name": "g", "source_lang": "en", "target_lang": "es", "protected": ["iPhone"]},
    ),
    ("GET", "/v1/glossaries", None),
    ("GET", "/v1/glossaries/abc", None),
    ("DELETE", "/v1/glossaries/abc", None),
    (
        "POST",
        "/v1/translation_memories",
        {"name": "m", "source_lang": "en", "target_lang": "es", "entries": []},
    ),
    ("GET", "/v1/translation_memories", None),
    ("GET", "/v1/translation_memories/abc", None),
    ("GET", "/v1/translation_memories/abc/export", None),
    ("POST", "/v1/translation_memories/abc/entries", {"entries": [{"source": "a", "target": "b"}]}),
    ("DELETE", "/v1/translation_memories/abc", None),
    ("GET", "/v1/jobs", None),
    ("GET", "/v1/ops", None),  # an operator key's (a user key's is 403: tests/integration/test_ops)
]


def test_every_v1_route_is_in_the_list_below(api: TestClient) -> None:
    routes = {
        (method, re.sub(r"\{(job|glossary|tm)_id\}", "abc", route.path))
        for route in api.app.routes  # type: ignore[attr-defined]
        if isinstance(route, APIRoute) and surface_for(SURFACES, route.path) is V1
        for method in route.methods
    }
    assert routes == {(m, p) for m, p, _ in V1_CALLS}


def test_deepls_quality_evaluations_under_v1_take_deepls_key(
    api: TestClient, store: KeyStore
) -> None:
    """DeepL's quality-evaluation alpha lives under /v1: its clients send DeepL-Auth-Key and
    read DeepL's error body, not mtfleet's own /v1's."""
    _, token = store.create("shop1")
    body = {"target_lang": "ES", "segments": [{"source": "Red shoes", "target": "Zapatos"}]}
    for method, path, sent in (
        ("POST", "/v1/quality-evaluations", body),
        ("GET", "/v1/quality-evaluations/abc", None),
    ):
        missing = api.request(method, path, json=sent)
        assert missing.status_code == 403, missing.text  # DeepL's status for a missing key
        assert "DeepL-Auth-Key" in missing.json()["message"]
        wrong = api.request(method, path, json=sent, headers={"Authorization": "DeepL-Auth-Key x"})
        assert wrong.status_code == 403 and "message" in wrong.json(), wrong.text
        ok = api.request(
            method, path, json=sent, headers={"Authorization": f"DeepL-Auth-Key {token}"}
        )
        assert ok.status_code not in (401, 403), ok.text
        assert "error" not in ok.json(), ok.text  # DeepL's shape whatever the answer


def test_open_routes_need_no_key(api: TestClient) -> None:
    for path in ("/healthz", "/docs", "/openapi.json"):
        assert api.get(path).status_code == 200, path
    assert api.get("/readyz").status_code == 200  # the registered worker counts as live
    schemes = api.get("/openapi.json").json()["components"]["securitySchemes"]
    assert schemes["ApiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schemes["ApiKey"]["description"],
    }


@pytest.mark.parametrize(("method", "path", "body"), V1_CALLS)
def test_v1_refuses_missing_malformed_unknown_wrong_and_revoked_keys(
    api: TestClient,
    store: KeyStore,
    method: str,
    path: str,
    body: dict | None,  # type: ignore[type-arg]
) -> None:
    key, token = store.create("shop1")
    _, other = store.create("shop2")
    revoked_key, revoked = store.create("gone")
    store.revoke(revoked_key.id)
    secret = token.split("_", 2)[2]
    attempts: list[dict[str, str]] = [
        {},
        {"Authorization": f"Basic {token}"},
        {"Authorization": "Bearer"},
        auth("nonsense"),
        auth(f"mt_{'0' * 16}_{secret}"),  # unknown id
        auth(f"mt_{key.id}_{other.split('_', 2)[2]}"),  # another key's secret
        auth(token + "x"),
        auth(revoked),
    ]
    for headers in attempts:
        resp = api.request(method, path, json=body, headers=headers)
        assert resp.status_code == 401, (headers, resp.text)
        assert resp.headers["www-authenticate"].startswith("Bearer")
        assert resp.json()["error"]["type"] == "unauthorized"
    if path == "/v1/documents":  # a multipart upload
        ok = api.post(
            path,
            files={"file": ("page.md", b"# Red shoes\n\nThe red shoes are light.\n")},
            data={"source_lang": "en", "target_lang": "es"},
            headers=auth(token),
        )
    else:
        ok = api.request(method, path, json=body, headers=auth(token))
    assert ok.status_code in ({403} if path == "/v1/ops" else {200, 201, 202, 404}), ok.text
    assert store.used_today([revoked_key.id]) == {revoked_key.id: 0}


def test_a_job_is_visible_only_to_the_key_that_made_it(api: TestClient, store: KeyStore) -> None:
    _, a = store.create("shop-a")
    _, b = store.create("shop-b")
    job = api.post("/v1/jobs", json=BODY, headers=auth(a)).json()
    missing = "0" * 32
    for method, suffix in (
        ("GET", ""),
        ("GET", "/result"),
        ("DELETE", ""),
        ("DELETE", "?purge=true"),
    ):
        theirs = api.request(method, f"/v1/jobs/{job['id']}{suffix}", headers=auth(b))
        none = api.request(method, f"/v1/jobs/{missing}{suffix}", headers=auth(b))
        assert theirs.status_code == none.status_code == 404
        assert theirs.json() == _with_id(none.json(), missing, job["id"])
    mine = api.get(f"/v1/jobs/{job['id']}", headers=auth(a))
    assert mine.status_code == 200 and mine.json()["status"] == "queued"  # B changed nothing
    assert "owner" not in mine.json()


def _with_id(body: dict, old: str, new: str) -> dict:  # type: ignore[type-arg]
    err = dict(body["error"])
    err["message"] = err["message"].replace(old, new)
    return {"error": err}


def test_idempotency_keys_are_scoped_per_api_key(api: TestClient, store: KeyStore) -> None:
    _, a = store.create("shop-a")
    _, b = store.create("shop-b")
    idem = {"Idempotency-Key": "order-42"}
    first_a = api.post("/v1/jobs", json=BODY, headers={**auth(a), **idem}).json()
    first_b = api.post("/v1/jobs", json=BODY, headers={**auth(b), **idem}).json()
    again_a = api.post("/v1/jobs", json=BODY, headers={**auth(a), **idem}).json()
    assert first_a["id"] != first_b["id"]
    assert again_a["id"] == first_a["id"]
    assert api.get(f"/v1/jobs/{first_b['id']}", headers=auth(b)).status_code == 200


def test_daily_quota_is_429_with_seconds_until_the_utc_day_ends(
    api: TestClient, store: KeyStore
) -> None:
    key, token = store.create("shop1", chars_per_day=20)
    assert api.post("/v1/jobs", json={**BODY, "texts": ["x" * 12]}, headers=auth(token)).is_success
    over = api.post("/v1/jobs", json={**BODY, "texts": ["y" * 9]}, headers=auth(token))
    assert over.status_code == 429
    err = over.json()["error"]
    assert err["type"] == "quota_exceeded" and "8 of 20 left today" in err["message"]
    retry_after = int(over.headers["retry-after"])
    assert retry_after == err["retry_after"]
    assert abs(retry_after - seconds_to_utc_midnight(time.time())) <= 5
    exact = api.post("/v1/jobs", json={**BODY, "texts": ["z" * 4, "w" * 4]}, headers=auth(token))
    assert exact.is_success  # 20 of 20
    translate = api.post("/v1/translate", json={**BODY, "texts": ["a"]}, headers=auth(token))
    assert translate.status_code == 429 and translate.json()["error"]["type"] == "quota_exceeded"
    assert store.used_today([key.id]) == {key.id: 20}


def test_an_answer_from_the_phrase_cache_is_charged_and_stops_at_the_quota(
    api: TestClient, store: KeyStore, r: redis.Redis
) -> None:
    """A request the phrase cache answers whole (no job made) costs its characters like any
    other, and is refused at the quota like any other."""
    key, token = store.create("shop1", chars_per_day=20)
    # the key's own entry, as a worker leaves it (pair fingerprint "fp", scope: the key)
    PhraseCache(r, ttl_s=60).put_many(
        "fp", "en", "es", {"Red shoes": "Zapatos rojos"}, job_id="0" * 32, scope=key.id
    )
    for used in (9, 18):
        hit = api.post("/v1/translate", json=BODY, headers=auth(token))
        assert hit.status_code == 200, hit.text
        assert hit.json()["id"] is None and hit.json()["translations"] == ["Zapatos rojos"]
        assert store.used_today([key.id]) == {key.id: used}
    over = api.post("/v1/translate", json=BODY, headers=auth(token))
    assert over.status_code == 429 and over.json()["error"]["type"] == "quota_exceeded"
    assert store.used_today([key.id]) == {key.id: 18}
    # another key does not see this key's entry: it gets a job (queued, nobody consumes it)
    _, other = store.create("shop2")
    queued = api.post("/v1/translate", json={**BODY, "timeout": 0.1}, headers=auth(other))
    assert queued.status_code == 202 and queued.json()["id"]


def test_refused_requests_and_idempotent_replays_cost_no_quota(
    api: TestClient, store: KeyStore
) -> None:
    key, token = store.create("shop1", chars_per_day=10)
    refused = [
        ({**BODY, "texts": ["0123456789"], "target_lang": "de"}, 422),  # no engine for en->de
        ({**BODY, "texts": ["0123456789"], "target_lang": "en"}, 422),  # same language
        ({**BODY, "texts": ["0123456789"], "lane": "fast"}, 422),  # schema error
        ({**BODY, "texts": ["0123456789"] * 2}, 429),  # over the quota
        ({**BODY, "texts": ["x" * 51]}, 429),  # over the quota (and MT_MAX_SEGMENT_CHARS)
    ]
    for body, status in refused:
        resp = api.post("/v1/jobs", json=body, headers=auth(token))
        assert resp.status_code == status, resp.text
    assert store.used_today([key.id]) == {key.id: 0}
    idem = {**auth(token), "Idempotency-Key": "k"}
    first = api.post("/v1/jobs", json=BODY, headers=idem)  # 9 characters
    again = api.post("/v1/jobs", json=BODY, headers=idem)
    conflict = api.post("/v1/jobs", json={**BODY, "texts": ["a"]}, headers=idem)
    assert first.status_code == again.status_code == 202 and conflict.status_code == 409
    assert again.json()["id"] == first.json()["id"]
    assert store.used_today([key.id]) == {key.id: 9}
    assert api.post("/v1/jobs", json={**BODY, "texts": ["a"]}, headers=auth(token)).is_success
    # the quota is spent now, but a replay still answers with its job (and costs nothing)
    spent = api.post("/v1/jobs", json={**BODY, "texts": ["b"]}, headers=auth(token))
    assert spent.status_code == 429
    replay = api.post("/v1/jobs", json=BODY, headers=idem)
    assert replay.status_code == 202 and replay.json()["id"] == first.json()["id"]
    assert store.used_today([key.id]) == {key.id: 10}


def test_rate_limit_is_429_with_retry_after_and_per_key(api: TestClient, store: KeyStore) -> None:
    _, slow = store.create("slow", rate=0.2)  # one request per 5 s, no burst
    _, free = store.create("free")
    assert api.get("/v1/languages", headers=auth(slow)).status_code == 200
    limited = api.get("/v1/languages", headers=auth(slow))
    assert limited.status_code == 429
    assert limited.json()["error"]["type"] == "rate_limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 5
    assert api.post("/v1/jobs", json=BODY, headers=auth(slow)).status_code == 429
    for _ in range(5):
        assert api.get("/v1/languages", headers=auth(free)).status_code == 200


def test_quota_charges_are_atomic_under_concurrency(
    redis_url: str, r: redis.Redis, store: KeyStore
) -> None:
    key, _ = store.create("shop1", chars_per_day=100)
    charged: list[int] = []
    refused: list[int] = []

    async def spend(charging: KeyStore) -> None:
        for _ in range(5):
            try:
                await charging.charge(key, 7)
                charged.append(7)
            except QuotaExceeded:
                refused.append(7)

    async def spenders() -> None:  # 16 at once, each on a connection of its own
        ar = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
        await asyncio.gather(*(spend(KeyStore(r, aclient=ar)) for _ in range(16)))
        await ar.aclose()

    asyncio.run(spenders())
    assert len(charged) == 100 // 7 and len(refused) == 16 * 5 - 100 // 7
    assert store.used_today([key.id]) == {key.id: 7 * (100 // 7)}


def test_purge_deletes_everything_and_plain_delete_keeps_results(
    api: TestClient, store: KeyStore, r: redis.Redis
) -> None:
    _, token = store.create("shop1")
    purged = api.post("/v1/jobs", json=BODY, headers=auth(token)).json()
    resp = api.delete(f"/v1/jobs/{purged['id']}", params={"purge": "true"}, headers=auth(token))
    assert resp.status_code == 200 and resp.json()["status"] == "cancelled"
    assert api.get(f"/v1/jobs/{purged['id']}", headers=auth(token)).status_code == 404
    assert r.exists(*keys.job_all(purged["id"])) == 0
    again = api.delete(f"/v1/jobs/{purged['id']}?purge=true", headers=auth(token))
    assert again.status_code == 404

    kept = api.post("/v1/jobs", json=BODY, headers=auth(token)).json()
    assert api.delete(f"/v1/jobs/{kept['id']}", headers=auth(token)).json()["status"] == "cancelled"
    after = api.get(f"/v1/jobs/{kept['id']}/result", headers=auth(token))
    assert after.status_code == 200 and after.json()["status"] == "cancelled"


def test_auth_off_lets_anyone_in_and_jobs_have_no_owner(redis_url: str, r: redis.Redis) -> None:
    Registry(r).beat(
        WorkerInfo(
            name="w@test",
            engine="apertium",
            model="apertium",
            fingerprint="fp",
            pairs=[("en", "es")],
            lanes=["interactive"],
        ),
        ttl_s=60,
    )
    with TestClient(create_app(in_process(Settings(redis_url=redis_url, auth="off")))) as client:
        job = client.post("/v1/jobs", json=BODY, headers=auth("anything")).json()
        assert client.get(f"/v1/jobs/{job['id']}").status_code == 200
    assert r.hget(keys.job(job["id"]), "owner") is None


def test_redis_down_with_auth_required_is_503_not_401_or_500() -> None:
    dead = Settings(redis_url=f"redis://127.0.0.1:{free_port()}/0", auth="required")
    token = f"mt_{'a' * 16}_secret"
    with TestClient(create_app(in_process(dead)), raise_server_exceptions=False) as client:
        resp = client.get("/v1/languages", headers=auth(token))
        assert resp.status_code == 503 and resp.headers["retry-after"] == "1"
        assert resp.json()["error"]["type"] == "unavailable"
        assert client.get("/v1/languages").status_code == 401  # no key: no Redis needed


# --- the fleet's internals: /readyz's details and /metrics are an operator's ---------------------
#: What /readyz's details would name: a worker, its host, its pool, its engine's address.
INTERNALS = ("gpu0@node-7", "node-7", "nllb-night", "10.1.2.3")


def test_readyz_tells_anyone_its_status_and_only_an_operator_its_workers(
    api: TestClient, store: KeyStore
) -> None:
    _, user = store.create("shop")
    _, operator = store.create("ops", role="operator")
    for headers in ({}, auth(user), auth("mt_not_a_key")):  # a probe, a tenant, a typo
        for params in ({}, {"pool": "apertium"}):
            short = api.get("/readyz", params=params, headers=headers)
            assert short.status_code == 200, (headers, short.text)
            assert short.json() == {"status": "ready"}, headers
        unknown = api.get("/readyz", params={"pool": "nope"}, headers=headers)
        assert unknown.status_code == 422 and unknown.json()["error"]["type"] == "unknown_pool"
        assert "apertium" not in unknown.text  # the pools the fleet has are not listed
    full = api.get("/readyz", headers=auth(operator))
    assert full.status_code == 200
    assert full.json()["pools"] == {"apertium": {"interactive": ["w@test"], "bulk": ["w@test"]}}
    assert full.json()["lanes"] == {"interactive": ["w@test"], "bulk": ["w@test"]}
    unknown = api.get("/readyz", params={"pool": "nope"}, headers=auth(operator))
    assert unknown.status_code == 422 and unknown.json()["error"]["pools"] == ["apertium"]


def test_an_unready_fleet_says_which_lanes_without_naming_workers_hosts_or_pools(
    api: TestClient, store: KeyStore, r: redis.Redis
) -> None:
    registry = Registry(r)
    registry.leave("")  # the registered worker is gone ...
    registry.beat(  # ... and the one left is down, for a reason that names its server
        WorkerInfo(
            name=INTERNALS[0],
            host=INTERNALS[1],
            pool=INTERNALS[2],
            healthy=False,
            unhealthy_reason=f"the server at http://{INTERNALS[3]}:8000 does not answer",
            engine="openai",
            model="m",
            fingerprint="fp",
            pairs=[("en", "de")],
            lanes=["interactive", "bulk"],
        ),
        ttl_s=60,
    )
    _, user = store.create("shop")
    _, operator = store.create("ops", role="operator")
    for headers in ({}, auth(user)):
        short = api.get("/readyz", headers=headers)
        assert short.status_code == 503
        body = short.json()
        assert set(body) == {"status", "error"} and body["status"] == "not_ready"
        assert body["error"]["type"] == "not_ready"
        assert "interactive" in body["error"]["message"]  # which lanes lack a worker
        assert not [word for word in INTERNALS if word in short.text], short.text
    full = api.get("/readyz", headers=auth(operator))
    assert full.status_code == 503
    (down,) = full.json()["unhealthy"]
    assert down["name"] == INTERNALS[0] and down["pool"] == INTERNALS[2]
    assert INTERNALS[3] in down["reason"]


def test_metrics_need_an_operator_key(api: TestClient, store: KeyStore) -> None:
    _, user = store.create("shop")
    _, operator = store.create("ops", role="operator")
    none = api.get("/metrics")
    assert none.status_code == 401 and none.json()["error"]["type"] == "unauthorized"
    assert none.headers["www-authenticate"].startswith("Bearer")
    tenant = api.get("/metrics", headers=auth(user))
    assert tenant.status_code == 403 and tenant.json()["error"]["type"] == "forbidden"
    assert "--role operator" in tenant.json()["error"]["message"]
    scraped = api.get("/metrics", headers=auth(operator))
    assert scraped.status_code == 200
    assert 'mt_lane_live_workers{lane="bulk",pool="apertium"} 1.0' in scraped.text
    assert "mt_api_request_seconds_count" in scraped.text


def test_with_redis_down_readyz_says_so_without_its_address() -> None:
    port = free_port()
    dead = Settings(redis_url=f"redis://127.0.0.1:{port}/0", auth="required")
    with TestClient(create_app(in_process(dead)), raise_server_exceptions=False) as client:
        resp = client.get("/readyz")
        assert resp.status_code == 503
        assert resp.json() == {
            "status": "unavailable",
            "error": {"type": "unavailable", "message": "Redis cannot be read"},
        }
        assert str(port) not in resp.text
