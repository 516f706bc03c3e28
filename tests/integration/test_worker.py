"""A real ``celery worker`` process (Apertium engine) against a private Redis, driven through
the API app in-process: translation, idempotent redelivery, dead-lettering, cancellation."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.core import keys
from mtfleet.core.broker import make_celery, send_chunk
from mtfleet.core.models import ChunkMessage, ChunkSegment, Lane
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobStore
from mtfleet.fleet.localfleet import LocalFleet, free_port
from tests.integration.costfleet import held
from tests.integration.test_store import make_job
from tests.support import in_process


def cache_url(redis_server: str) -> str:
    return redis_server.rsplit("/", 1)[0] + "/1"


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    redis.Redis.from_url(redis_server).flushall()
    f = LocalFleet(
        redis_url=redis_server,
        env={
            "MT_REDIS_URL": redis_server,
            "MT_HEARTBEAT_S": "1",
            # one Celery worker serving both lanes, as a GPU worker does (a CPU engine's
            # default is a worker per lane: tests/integration/test_launcher_processes.py)
            "MT_PROCESS_PER_LANE": "false",
            "MT_MAX_DELIVERIES": "3",
            "MT_WORKER_METRICS_PORT": str(free_port()),
            # The phrase cache on its own database (as it would be on its own LRU instance).
            "MT_CACHE_URL": cache_url(redis_server),
        },
    )
    with f:  # stopped however its start ends: nothing left to serve later modules
        f.start_redis()
        f.start_worker("--engine", "apertium", "--concurrency", "2")
        client = redis.Redis.from_url(redis_server, decode_responses=True)
        deadline = time.monotonic() + 60
        while not client.smembers(keys.WORKERS):
            assert time.monotonic() < deadline, f.procs[-1].log_tail()
            time.sleep(0.2)
        yield f


@pytest.fixture(scope="module")
def settings(fleet: LocalFleet) -> Settings:
    assert fleet.redis_url
    return Settings(
        redis_url=fleet.redis_url, cache_url=cache_url(fleet.redis_url), max_deliveries=3
    )


@pytest.fixture(scope="module")
def api(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(in_process(settings))) as client:
        yield client


@pytest.fixture(scope="module")
def rd(settings: Settings) -> redis.Redis:
    return redis.Redis.from_url(settings.redis.redis_url, decode_responses=True)


def wait_final(api: TestClient, job_id: str, timeout: float = 30) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    while True:
        job = api.get(f"/v1/jobs/{job_id}", params={"wait": 5}).json()
        if job["status"] in {"succeeded", "partial", "failed", "cancelled"}:
            return job  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


TEXTS = [
    "The cat is on the table.",
    "Red shoes",
    "The cat is on the table.",
    "My sister bought a new house.",
    "  Free shipping  ",
]


def test_job_is_translated_in_order_with_duplicates_once(api: TestClient) -> None:
    resp = api.post("/v1/jobs", json={"texts": TEXTS, "source_lang": "en", "target_lang": "es"})
    assert resp.status_code == 202, resp.text
    job = wait_final(api, resp.json()["id"])
    assert job["status"] == "succeeded" and job["progress"] == {"done": 5, "failed": 0, "total": 5}
    out = api.get(f"/v1/jobs/{job['id']}/result").json()["translations"]
    assert "gato" in out[0] and "mesa" in out[0]
    assert out[0] == out[2]
    assert "casa" in out[3]
    assert out[4].startswith("  ") and out[4].endswith("  ") and out[4].strip()


def test_fully_cached_job_completes_at_submission(api: TestClient, settings: Settings) -> None:
    resp = api.post("/v1/jobs", json={"texts": TEXTS, "source_lang": "en", "target_lang": "es"})
    assert resp.status_code == 200
    body = resp.json()
    assert body["status"] == "succeeded" and body["cached"] == 5
    # The cache lives where MT_CACHE_URL says, apart from job state.
    assert list(redis.Redis.from_url(settings.redis.effective_cache_url).scan_iter("mt:cache:*"))
    assert not list(redis.Redis.from_url(settings.redis.redis_url).scan_iter("mt:cache:*"))


def _jobs(settings: Settings) -> int:
    r = redis.Redis.from_url(settings.redis.redis_url)
    return sum(1 for k in r.scan_iter("mt:job:*") if k.count(b":") == 2)


def test_a_fully_cached_translate_answers_from_the_cache_and_keeps_no_job(
    api: TestClient, settings: Settings
) -> None:
    texts = ["The blue lamp is on the desk.", "  The blue lamp is on the desk.\n", "A new chair."]
    body = {"texts": texts, "source_lang": "en", "target_lang": "es", "timeout": 30}
    first = api.post("/v1/translate", json=body).json()
    assert first["id"] and first["cached"] == 0 and all(first["translations"])
    jobs = _jobs(settings)
    again = api.post("/v1/translate", json=body)
    assert again.status_code == 200, again.text
    out = again.json()
    # every text from the cache, each with its own outer whitespace, and nothing stored
    assert out["id"] is None and out["status"] == "succeeded" and out["cached"] == 3
    assert out["translations"] == first["translations"]
    assert out["translations"][1].startswith("  ") and out["translations"][1].endswith("\n")
    assert _jobs(settings) == jobs
    # one text the cache does not hold: a job, with the hits counted
    mixed = api.post("/v1/translate", json={**body, "texts": [texts[0], "A green door."]}).json()
    assert (
        mixed["id"] and mixed["cached"] == 1 and mixed["translations"][0] == out["translations"][0]
    )
    # an Idempotency-Key asks for a job to find again: it gets one, answered from the cache
    keyed = api.post("/v1/translate", json=body, headers={"Idempotency-Key": "lamp-1"}).json()
    assert keyed["id"] and keyed["cached"] == 3
    assert api.get(f"/v1/jobs/{keyed['id']}").json()["status"] == "succeeded"
    assert _jobs(settings) == jobs + 2


def test_redelivered_chunk_changes_nothing(
    api: TestClient, settings: Settings, rd: redis.Redis
) -> None:
    texts = [f"The garden number {i} is green." for i in range(10)]
    resp = api.post("/v1/jobs", json={"texts": texts, "source_lang": "en", "target_lang": "es"})
    job_id = resp.json()["id"]
    wait_final(api, job_id)
    before = api.get(f"/v1/jobs/{job_id}/result").json()
    msg = ChunkMessage(
        job_id=job_id,
        chunk=0,
        lane=Lane.interactive,
        source="en",
        target="es",
        segments=[ChunkSegment(indices=[i], text=t) for i, t in enumerate(texts)],
        enqueued_at=time.time(),
        pool="apertium",
    )
    send_chunk(make_celery(settings), msg)
    deadline = time.monotonic() + 20
    # taken and acknowledged: off the queue and out of every worker's unacked hash
    while rd.llen(keys.queue("apertium", "interactive")) or held(rd):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert rd.hget(keys.chunk_deliveries(job_id), "0") == "1"  # a final job's chunk: not started
    job = api.get(f"/v1/jobs/{job_id}").json()
    assert job["progress"] == {"done": 10, "failed": 0, "total": 10}
    assert api.get(f"/v1/jobs/{job_id}/result").json() == before


def test_chunk_over_its_delivery_budget_is_dead_lettered(
    api: TestClient, settings: Settings, rd: redis.Redis
) -> None:
    job_id = make_job(JobStore(rd, result_ttl_s=600), 2)
    rd.hset(
        keys.chunk_deliveries(job_id), "0", settings.worker.max_deliveries
    )  # it killed 3 workers
    celery = make_celery(settings)
    for n, text in enumerate(["The poison pill.", "The healthy apple."]):
        msg = ChunkMessage(
            job_id=job_id,
            chunk=n,
            lane=Lane.bulk,
            source="en",
            target="es",
            segments=[ChunkSegment(indices=[n], text=text)],
            enqueued_at=time.time(),
            pool="apertium",
        )
        send_chunk(celery, msg)
    job = wait_final(api, job_id)
    assert job["status"] == "partial"
    result = api.get(f"/v1/jobs/{job_id}/result").json()
    assert result["translations"][0] is None and "manzana" in result["translations"][1]
    assert result["errors"][0]["type"] == "dead_lettered"
    dead = [e for e in rd.lrange(keys.DEAD_LETTER, 0, -1) if job_id in e]
    assert len(dead) == 1


def test_cancel_starts_no_chunk_lets_those_in_flight_finish_then_is_final(
    api: TestClient,
) -> None:
    texts = [f"Line {i} says that the {i % 7} small dogs run in the park." for i in range(4000)]
    resp = api.post(
        "/v1/jobs", json={"texts": texts, "source_lang": "en", "target_lang": "es", "lane": "bulk"}
    )
    job_id = resp.json()["id"]
    while api.get(f"/v1/jobs/{job_id}").json()["status"] == "queued":
        time.sleep(0.01)
    cancel = api.delete(f"/v1/jobs/{job_id}").json()
    # no chunk waits any more; those a worker started are finishing (or already have)
    assert cancel["status"] in {"cancelling", "cancelled"}
    if cancel["status"] == "cancelling":
        assert cancel["work"]["queued"] == 0 and cancel["work"]["in_flight"] >= 1
    final = api.get(f"/v1/jobs/{job_id}", params={"wait": 30}).json()
    assert final["status"] == "cancelled" and final["work"] is None
    time.sleep(1.5)
    later = api.get(f"/v1/jobs/{job_id}").json()
    assert later["progress"] == final["progress"]  # final counters: nothing more arrives
    assert final["progress"]["done"] < 4000
    partial = api.get(f"/v1/jobs/{job_id}/result").json()
    assert partial["status"] == "cancelled"
    assert sum(t is not None for t in partial["translations"]) == final["progress"]["done"]


def test_pair_no_engine_serves_is_refused(api: TestClient) -> None:
    resp = api.post("/v1/jobs", json={"texts": ["x"], "source_lang": "en", "target_lang": "fr"})
    assert resp.status_code == 422
    err = resp.json()["error"]
    assert err["type"] == "unsupported_language" and "en->es" in err["message"]


def test_languages_and_readiness_come_from_the_registry(api: TestClient) -> None:
    pairs = api.get("/v1/languages").json()["pairs"]
    assert {
        "source": "en",
        "target": "es",
        "pool": "apertium",
        "engine": "apertium",
        "model": "apertium",
        "live": True,
        "routed": True,
    } in pairs
    ready = api.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["lanes"]["interactive"] and ready.json()["lanes"]["bulk"]
    assert ready.json()["pools"]["apertium"] == ready.json()["lanes"]
    assert api.get("/readyz", params={"pool": "apertium"}).status_code == 200
    unknown = api.get("/readyz", params={"pool": "nllb"})
    assert unknown.status_code == 422 and unknown.json()["error"]["type"] == "unknown_pool"
    metrics = api.get("/metrics").text
    assert 'mt_queue_depth{lane="bulk",pool="apertium"}' in metrics
    assert 'mt_live_workers{pool="apertium"} 1.0' in metrics
    # every request is timed under its route template, with its status
    assert 'mt_api_request_seconds_count{method="GET",route="/readyz",status="200"}' in metrics
    assert 'method="GET",route="/v1/languages",status="200"' in metrics


def test_a_chunk_queued_in_the_earlier_format_still_runs(
    api: TestClient, settings: Settings, rd: redis.Redis
) -> None:
    """Chunks used to travel as an object, not JSON text: one still queued across an upgrade
    is translated like any other."""
    job_id = make_job(JobStore(rd, result_ttl_s=600), 1)
    msg = ChunkMessage(
        job_id=job_id,
        chunk=0,
        lane=Lane.interactive,
        source="en",
        target="es",
        segments=[ChunkSegment(indices=[0], text="The small dog.")],
        enqueued_at=time.time(),
        pool="apertium",
    )
    make_celery(settings).send_task(
        keys.TRANSLATE_TASK,
        args=[msg.model_dump(mode="json")],
        queue=keys.queue("apertium", "interactive"),
    )
    job = wait_final(api, job_id)
    assert job["status"] == "succeeded", job
    assert "perro" in api.get(f"/v1/jobs/{job_id}/result").json()["translations"][0]


def test_malformed_message_is_dead_lettered_and_the_worker_goes_on(
    api: TestClient, settings: Settings, rd: redis.Redis
) -> None:
    celery = make_celery(settings)
    sent = [
        celery.send_task(
            keys.TRANSLATE_TASK, args=[bad], queue=keys.queue("apertium", "interactive")
        )
        for bad in ({"job_id": "x", "segments": "nope"}, '{"job_id": "x", "segments": [')
    ]
    deadline = time.monotonic() + 20
    while not all(any(r.id in e for e in rd.lrange(keys.DEAD_LETTER, 0, -1)) for r in sent):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    resp = api.post(
        "/v1/translate",
        json={"texts": ["The small dog."], "source_lang": "en", "target_lang": "es"},
    )
    assert resp.status_code == 200 and "perro" in resp.json()["translations"][0]


def test_worker_serves_prometheus_metrics(fleet: LocalFleet) -> None:
    import httpx

    port = fleet.env["MT_WORKER_METRICS_PORT"]
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    translated = [
        line
        for line in text.splitlines()
        if line.startswith(
            'mt_worker_segments_total{lane="interactive",outcome="translated",pool="apertium"}'
        )
    ]
    assert translated and float(translated[0].split()[-1]) >= 5
    assert "mt_worker_engine_seconds_count" in text
    assert 'mt_worker_chunk_latency_seconds_count{lane="bulk",pool="apertium"}' in text

    def value(series: str) -> float:
        found = [ln for ln in text.splitlines() if ln.startswith(series + " ")]
        assert found, f"{series} missing"
        return float(found[0].split()[-1])

    # the scheduler's figures: tokens both ways, batches, busy time, window, cost model
    assert value('mt_worker_tokens_total{dir="in"}') > 0
    assert value('mt_worker_tokens_total{dir="out"}') > 0
    assert value("mt_worker_batch_segments_count") > 0
    # every token sent to the engine was submitted; a submitted one may never be sent (its
    # chunk's time budget ran out first and the chunk went back to its queue)
    assert 0 < value("mt_worker_batch_tokens_sum") <= value('mt_worker_tokens_total{dir="in"}')
    assert value("mt_worker_engine_busy_seconds_total") > 0
    assert 1 <= value("mt_worker_pull_window_chunks") <= 2  # --concurrency 2
    assert value("mt_worker_cost_per_token_seconds") > 0
    assert value('mt_job_latency_seconds_count{lane="interactive",pool="apertium"}') >= 1
    # workers look the cache up again only for chunks that waited in the queue: the series exist
    assert value('mt_worker_cache_lookups_total{result="miss"}') >= 0


def test_a_purged_jobs_released_chunks_stop_counting_against_their_lane(
    api: TestClient, rd: redis.Redis
) -> None:
    """A released chunk travels as its place in its job's ledger; a worker that meets one
    whose job was purged meanwhile takes it off the lane's released hash at once, as the start
    of a delivered chunk does (left there, it would hold the lane's release budget until the
    reconciler's grace period passed, and the next job would wait behind nothing)."""
    texts = [f"The dog number {i} runs in the park." for i in range(128 * 24)]
    job_id = api.post(
        "/v1/jobs", json={"texts": texts, "source_lang": "en", "target_lang": "es", "lane": "bulk"}
    ).json()["id"]
    released = keys.backlog_released("apertium", "bulk")
    deadline = time.monotonic() + 20
    while not any(k.startswith(f"{job_id}:") for k in rd.hkeys(released)):
        assert time.monotonic() < deadline, "no chunk of the job was released"
        time.sleep(0.01)
    assert api.delete(f"/v1/jobs/{job_id}", params={"purge": "true"}).status_code < 300
    deadline = time.monotonic() + 20  # the reconciler's grace is 60 s at these settings
    while left := [k for k in rd.hkeys(released) if k.startswith(f"{job_id}:")]:
        assert time.monotonic() < deadline, left
        time.sleep(0.1)
    assert rd.llen(keys.queue("apertium", "bulk")) == 0
