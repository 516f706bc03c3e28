"""GET /v1/ops and GET /v1/jobs on the real API and a real Redis: operator keys only, what the
panel reads when chunks wait for nobody, dead letters with their reasons, the workers' figures
added up; the pages themselves (CSP, every asset from the package, nothing from elsewhere)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.api.routes.pages import ASSETS
from mtfleet.core import keys
from mtfleet.core.apikeys import KeyStore
from mtfleet.core.models import ChunkMessage, ChunkSegment, Lane
from mtfleet.core.queues import read_queues
from mtfleet.core.registry import Registry, WorkerInfo, WorkerStats
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobStore
from mtfleet.workers.chunk import dead_letter
from tests.integration.registered import register_pair
from tests.support import in_process

BULK = {"source_lang": "en", "target_lang": "es", "lane": "bulk"}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def api(redis_url: str, r: redis.Redis) -> Iterator[TestClient]:
    # the pair is known, but its worker has left: chunks wait for nobody
    register_pair(r, ttl_s=60)
    Registry(r).leave("")
    settings = Settings(redis_url=redis_url, auth="required", auth_cache_s=0)
    with TestClient(create_app(in_process(settings)), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def tokens(r: redis.Redis) -> dict[str, str]:
    store = KeyStore(r, cache_s=0)
    return {
        "user": store.create("shop")[1],
        "other": store.create("shop2")[1],
        "operator": store.create("ops", role="operator")[1],
    }


def test_ops_is_for_operator_keys(api: TestClient, tokens: dict[str, str]) -> None:
    assert api.get("/v1/ops").status_code == 401
    refused = api.get("/v1/ops", headers=auth(tokens["user"]))
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "forbidden"
    assert "--role operator" in refused.json()["error"]["message"]
    assert api.get("/v1/ops", headers=auth(tokens["operator"])).status_code == 200


def test_with_auth_off_ops_is_open(redis_url: str, r: redis.Redis) -> None:
    with TestClient(create_app(in_process(Settings(redis_url=redis_url, auth="off")))) as client:
        assert client.get("/v1/ops").status_code == 200
        assert client.get("/v1/jobs").json() == {"jobs": []}  # no owner, no list
        assert '<meta name="mt-auth" content="off">' in client.get("/").text


def test_ops_shows_chunks_waiting_for_nobody_and_dead_letters(
    api: TestClient, tokens: dict[str, str], r: redis.Redis
) -> None:
    texts = [f"The red shirt number {i}." for i in range(40)]
    made = api.post("/v1/jobs", json={"texts": texts, **BULK}, headers=auth(tokens["user"]))
    assert made.status_code == 202, made.text
    store = JobStore(r, result_ttl_s=3600)
    msg = ChunkMessage(
        job_id=made.json()["id"],
        chunk=0,
        lane=Lane.bulk,
        source="en",
        target="es",
        segments=[ChunkSegment(indices=[0], text=texts[0])],
        enqueued_at=time.time(),
    )
    dead_letter(store, msg, [0], reason="engine_error: the engine returned 2 outputs for 1")
    r.lpush(keys.DEAD_LETTER, json.dumps({"task_id": "x", "reason": "malformed chunk message"}))

    ops = api.get("/v1/ops", headers=auth(tokens["operator"])).json()
    rows = {(row["pool"], row["lane"]): row for row in ops["lanes"]}
    # the pool is known (its pair is served) but no live worker is left in it
    assert set(rows) == {("apertium", "interactive"), ("apertium", "bulk")}
    bulk = rows[("apertium", "bulk")]
    assert bulk["queued"] >= 1 and bulk["workers"] == 0 and bulk["in_flight"] == 0
    assert bulk["oldest_queued_s"] is not None and bulk["oldest_queued_s"] >= 0
    assert ops["workers"] == [] and ops["segments_per_s"] == 0
    assert ops["dead_letters"] == 2
    newest, first = ops["latest_dead_letters"]
    assert newest["reason"] == "malformed chunk message" and newest["job_id"] is None
    assert first["job_id"] == msg.job_id and first["chunk"] == 0 and first["lane"] == "bulk"
    assert "2 outputs for 1" in first["reason"]
    # the same reading feeds /metrics (an operator's too)
    scraped = api.get("/metrics", headers=auth(tokens["operator"])).text
    assert 'mt_lane_live_workers{lane="bulk",pool="apertium"} 0.0' in scraped
    assert re.search(
        r'mt_oldest_queued_chunk_seconds\{lane="bulk",pool="apertium"\} [0-9.]+', scraped
    )
    assert "mt_dead_letter_chunks 2.0" in scraped


def test_ops_and_metrics_show_what_each_key_has_waiting(
    redis_url: str, r: redis.Redis, tokens: dict[str, str]
) -> None:
    """A lane's queued chunks are its backlog and its broker queue together; the backlog's
    part is shown per API key, in /v1/ops and /metrics."""
    register_pair(r, ttl_s=60)
    Registry(r).leave("")  # nobody consumes: what is submitted stays where it is
    settings = Settings(redis_url=redis_url, auth="required", auth_cache_s=0, release_ahead=1)
    with TestClient(create_app(in_process(settings))) as api:
        for who, n in (("user", 3), ("other", 1)):
            for i in range(n):
                made = api.post(
                    "/v1/jobs", json={"texts": [f"{who} {i}"], **BULK}, headers=auth(tokens[who])
                )
                assert made.status_code == 202, made.text
        ops = api.get("/v1/ops", headers=auth(tokens["operator"])).json()
        scraped = api.get("/metrics", headers=auth(tokens["operator"])).text
    user, other = (tokens[who].split("_")[1] for who in ("user", "other"))
    bulk = next(row for row in ops["lanes"] if (row["pool"], row["lane"]) == ("apertium", "bulk"))
    # the user's first chunk went to the broker (its queue holds one); the rest waits
    assert bulk["queued"] == 4 and r.llen(keys.queue("apertium", "bulk")) == 1
    assert bulk["waiting_by_key"] == {user: 2, other: 1}
    for key_id, n in ((user, 2), (other, 1)):
        assert f'mt_backlog_chunks{{key="{key_id}",lane="bulk",pool="apertium"}} {n}.0' in scraped
    assert 'mt_queue_depth{lane="bulk",pool="apertium"} 4.0' in scraped


def test_the_oldest_waiting_chunk_is_read_from_the_broker_message(
    api: TestClient, tokens: dict[str, str], r: redis.Redis
) -> None:
    for n in (1, 2):
        made = api.post(
            "/v1/jobs", json={"texts": [f"Blue shoes {n}"], **BULK}, headers=auth(tokens["user"])
        )
        assert made.status_code == 202
    created = [
        j["created_at"] for j in api.get("/v1/jobs", headers=auth(tokens["user"])).json()["jobs"]
    ]
    queue = keys.queue("apertium", "bulk")
    reading = read_queues(r, [("apertium", "bulk")], now=min(created) + 100)[queue]
    assert reading.queued == 2
    # the first job's chunk, queued at its submission, has waited ~100 s at that "now"
    assert reading.oldest_queued_s == pytest.approx(100, abs=1)
    assert (
        read_queues(r, [("apertium", "interactive")])[
            keys.queue("apertium", "interactive")
        ].oldest_queued_s
        is None
    )


def test_ops_adds_up_the_workers_figures(
    api: TestClient, tokens: dict[str, str], r: redis.Redis
) -> None:
    registry = Registry(r)
    for name, rate, buckets in (
        ("gpu0@a", 30.0, [("0.1", 9), ("0.25", 10), ("+Inf", 10)]),
        ("gpu0@b", 12.5, [("0.1", 1), ("0.25", 10), ("+Inf", 10)]),
    ):
        registry.beat(
            WorkerInfo(
                name=name,
                instance=name,
                engine="vllm",
                model="tencent/Hunyuan-MT-7B",
                fingerprint="fp",
                pairs=[("en", "es")],
                lanes=["interactive", "bulk"],
                gpus=[0],
                stats=WorkerStats(
                    window_s=10,
                    segments_per_s={"bulk": rate},
                    busy_share=0.5,
                    pull_window=4,
                    latency_window_s=60,
                    latency_buckets={"interactive": buckets},
                    cache_hits=3,
                    cache_lookups=4,
                ),
            ),
            ttl_s=30,
        )
    ops = api.get("/v1/ops", headers=auth(tokens["operator"])).json()
    rows = {(row["pool"], row["lane"]): row for row in ops["lanes"]}
    assert rows[("vllm", "bulk")]["workers"] == 2
    assert rows[("vllm", "bulk")]["segments_per_s"] == 42.5 and ops["segments_per_s"] == 42.5
    interactive = next(lat for lat in ops["latency"] if lat["lane"] == "interactive")
    assert interactive["jobs"] == 20 and interactive["p50_s"] == pytest.approx(0.1)
    assert ops["cache"]["hits"] >= 6 and ops["cache"]["lookups"] >= 8
    workers = {w["name"]: w for w in ops["workers"]}
    assert workers["gpu0@a"]["pull_window"] == 4 and workers["gpu0@a"]["busy_share"] == 0.5
    assert workers["gpu0@a"]["gpu_readings"] is None  # no NVML reading was published


def test_jobs_lists_the_keys_own_recent_jobs_newest_first(
    api: TestClient, tokens: dict[str, str]
) -> None:
    mine = []
    for n in range(3):
        made = api.post(
            "/v1/jobs", json={"texts": [f"Shoe {n}"], **BULK}, headers=auth(tokens["user"])
        )
        mine.append(made.json()["id"])
    upload = api.post(
        "/v1/documents",
        files={"file": ("page.md", b"# Red shoes\n\nThe red shoes are light.\n")},
        data={"source_lang": "en", "target_lang": "es"},
        headers=auth(tokens["user"]),
    )
    mine.append(upload.json()["id"])
    api.post("/v1/jobs", json={"texts": ["Not mine"], **BULK}, headers=auth(tokens["other"]))
    listed = api.get("/v1/jobs", headers=auth(tokens["user"])).json()["jobs"]
    assert [j["id"] for j in listed] == mine[::-1]
    assert listed[0]["document_name"] == "page.md" and listed[0]["document_format"] == "markdown"
    assert [
        j["id"] for j in api.get("/v1/jobs?limit=2", headers=auth(tokens["user"])).json()["jobs"]
    ] == mine[:1:-1]
    api.delete(f"/v1/jobs/{mine[0]}?purge=true", headers=auth(tokens["user"]))
    after = api.get("/v1/jobs", headers=auth(tokens["user"])).json()["jobs"]
    assert mine[0] not in [j["id"] for j in after]
    assert api.get("/v1/jobs?limit=0", headers=auth(tokens["user"])).status_code == 422


def test_pages_ship_everything_they_load_under_a_strict_csp(api: TestClient) -> None:
    for path in ("/", "/ops"):
        page = api.get(path)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert '<meta name="mt-auth" content="required">' in page.text
        assert "<script>" not in page.text and " style=" not in page.text  # nothing inline
        assets = re.findall(r'(?:src|href)="(/static/ui/[^"]+)"', page.text)
        assert len(assets) >= 3
        shipped, seen = len(page.content), set()
        while assets:
            asset = assets.pop()
            if asset in seen:
                continue
            seen.add(asset)
            got = api.get(asset)
            assert got.status_code == 200, asset
            assert got.headers["x-content-type-options"] == "nosniff"
            shipped += len(got.content)
            # the modules a script imports are shipped too
            assets += [f"/static/ui/{m}" for m in re.findall(r'from "\./([\w.]+)"', got.text)]
        assert shipped < 32 * 1024, (path, shipped)  # a light page: docs/pages.md has the figures
    for asset in ASSETS.iterdir():
        text = asset.read_text(encoding="utf-8")
        # nothing from the internet (the SVG namespace is a name, not a request)
        assert set(re.findall(r"https?://[^\s\"'`)]+", text)) <= {"http://www.w3.org/2000/svg"}
        assert "import(" not in text
