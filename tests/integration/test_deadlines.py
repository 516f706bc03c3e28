"""Deadlines on real worker processes: nothing waits on the engine without one.

The cost-model engine's fault injection plays the engine: ``MTBENCH_HANG_ON`` makes one request
never finish while the engine serves the others; ``MTBENCH_STALL_ON`` stops the whole engine (a
hung device); ``MTBENCH_SLOW_ON`` makes a request slower than the broker's visibility timeout.
Short deadlines (``MT_ENGINE_DEADLINE_FLOOR_S=2``) keep each test to seconds.
"""

from __future__ import annotations

import time

import httpx
import pytest
import redis

from mtfleet.core import keys
from mtfleet.core.registry import Registry
from mtfleet.fleet.localfleet import free_port
from tests.integration.costfleet import cost_fleet
from tests.integration.test_faults import FAULT_ENV, submit, wait_final

pytestmark = pytest.mark.slow

# A 2 s floor; the visibility timeout (and so the chunk budget) long enough for a batch call to
# be narrowed down to its hanging segment (log2(32) calls of 2 s).
DEADLINE_ENV = {
    **FAULT_ENV,
    "MT_VISIBILITY_TIMEOUT_S": "120",
    "MT_ENGINE_DEADLINE_FLOOR_S": "2",
    "MT_ENGINE_DEADLINE_FACTOR": "5",
}


def metric(port: int, name: str) -> float:
    for line in httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.mark.parametrize("mode", ["continuous", "batch"])
def test_a_segment_the_engine_hangs_on_fails_alone_and_the_fleet_goes_on(
    redis_server: str, mode: str
) -> None:
    """One segment never finishes. Streaming engine: its request passes its deadline while the
    engine finishes the others, so it is aborted and fails alone. Batch engine: the call that
    holds it is interrupted at its deadline and bisection narrows it down to that segment.
    Either way the job ends ``partial`` with only that segment failed (``engine_timeout``), and
    the next job is translated."""
    url = redis_server.rsplit("/", 1)[0] + "/7"
    redis.Redis.from_url(url).flushdb()
    port = free_port()
    env = {
        **DEADLINE_ENV,
        "MTBENCH_MODE": mode,
        "MTBENCH_HANG_ON": "HANGME",
        "MT_WORKER_METRICS_PORT": str(port),
    }
    with cost_fleet(url, env) as (fleet, api):
        texts = [f"line {i} of the job with a hanging segment" for i in range(64)]
        texts[5] = "a line that HANGME forever"
        t0 = time.monotonic()
        job = wait_final(api, submit(api, texts), timeout=90, fleet=fleet)
        took = time.monotonic() - t0
        assert job["status"] == "partial", job
        assert job["progress"] == {"done": 63, "failed": 1, "total": 64}
        result = api.get(f"/v1/jobs/{job['id']}/result").json()
        assert [(e["index"], e["type"]) for e in result["errors"]] == [(5, "engine_timeout")]
        ok = [i for i in range(64) if i != 5]
        assert [result["translations"][i] for i in ok] == [f"<es> {texts[i]}" for i in ok]
        assert took < 60
        assert metric(port, "mt_worker_engine_timeouts_total") >= (1 if mode == "continuous" else 0)
        assert metric(port, "mt_worker_engine_healthy") == 1  # it stayed healthy throughout
        nxt = api.post(
            "/v1/translate",
            json={"texts": ["after the hang"], "source_lang": "en", "target_lang": "es"},
        ).json()
        assert nxt["translations"] == ["<es> after the hang"]


def test_one_wedged_segment_of_fifty_fails_alone_within_three_engine_deadlines(
    redis_server: str,
) -> None:
    """A batch engine wedged by one segment of a 50-segment chunk, with a chunk budget (30 s)
    shorter than narrowing it down with a full deadline (10 s) per halving would take (seven
    deadlines: the chunk went back until it was dead-lettered, after six deliveries). The
    halves of a call that timed out get half its time, so the 49 others are translated and
    the wedged one fails alone, saying why, within three engine deadlines, in one delivery."""
    url = redis_server.rsplit("/", 1)[0] + "/7"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    floor = 10.0
    env = {
        **DEADLINE_ENV,
        "MTBENCH_MODE": "batch",
        "MTBENCH_HANG_ON": "HANGME",
        "MT_CHUNK_SIZE": "50",
        "MT_VISIBILITY_TIMEOUT_S": "60",  # a chunk's budget: 30 s
        "MT_ENGINE_DEADLINE_FLOOR_S": str(floor),
        "MT_ENGINE_DEADLINE_FACTOR": "2",
    }
    with cost_fleet(url, env) as (fleet, api):
        texts = [f"line {i} of the job with a wedged segment" for i in range(50)]
        texts[37] = "a line that HANGME forever"
        t0 = time.monotonic()
        job = wait_final(api, submit(api, texts), timeout=3 * floor + 30, fleet=fleet)
        took = time.monotonic() - t0
        assert job["status"] == "partial", job
        assert job["progress"] == {"done": 49, "failed": 1, "total": 50}
        result = api.get(f"/v1/jobs/{job['id']}/result").json()
        [error] = result["errors"]
        assert (error["index"], error["type"]) == (37, "engine_timeout")
        assert "on this segment alone" in error["message"], error
        ok = [i for i in range(50) if i != 37]
        assert [result["translations"][i] for i in ok] == [f"<es> {texts[i]}" for i in ok]
        assert took <= 3 * floor, took
        assert rd.llen(keys.DEAD_LETTER) == 0
        assert rd.hget(keys.chunk_deliveries(job["id"]), "0") == "1"


def test_a_chunk_slower_than_its_budget_finishes_over_deliveries_never_dead_lettered(
    redis_server: str,
) -> None:
    """A slow batch engine (about a second per call of four segments) behind a short visibility
    timeout (10 s: a chunk's budget is 5 s): a chunk of 32 needs eight calls, more than its
    budget. Each delivery records what it finished before the chunk goes back, and a delivery
    that recorded something is no failure: even with MT_MAX_DELIVERIES=1 the job completes,
    each segment translated once, nothing dead-lettered."""
    url = redis_server.rsplit("/", 1)[0] + "/7"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    port = free_port()
    env = {
        **FAULT_ENV,
        "MTBENCH_MODE": "batch",
        "MTBENCH_MAX_NUM_SEQS": "4",
        "MTBENCH_STEP_FIXED_S": "0.25",
        "MT_CHUNK_SIZE": "32",
        "MT_MAX_DELIVERIES": "1",
        "MT_WORKER_METRICS_PORT": str(port),
    }
    with cost_fleet(url, env) as (fleet, api):
        texts = [f"slow line {i}" for i in range(32)]
        job = wait_final(api, submit(api, texts), timeout=90, fleet=fleet)
        assert job["status"] == "succeeded", job
        result = api.get(f"/v1/jobs/{job['id']}/result").json()
        assert result["translations"] == [f"<es> {t}" for t in texts]
        assert rd.llen(keys.DEAD_LETTER) == 0
        deliveries = rd.hgetall(keys.chunk_deliveries(job["id"]))
        started, progressed = int(deliveries["0"]), int(deliveries.get("progressed:0", 0))
        assert started >= 2 and started - progressed == 1, deliveries  # one failure at most
        # nothing finished went to the engine again: only the call (four segments at most)
        # that each delivery's budget cut short
        assert metric(port, "mt_worker_batch_segments_sum") <= 32 + 4 * (started - 1)


def test_a_stalled_engine_makes_the_worker_unhealthy_until_it_is_restarted(
    redis_server: str,
) -> None:
    """The whole engine stops (nothing finishes any more): the worker reports itself unhealthy
    (registry and /readyz), stops consuming, gives its chunks back, restarts its engine
    (loading takes 3 s here), and is healthy again. The chunk that stalls every engine it meets
    is dead-lettered after MT_MAX_DELIVERIES; everything else is translated."""
    url = redis_server.rsplit("/", 1)[0] + "/7"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    port = free_port()
    env = {
        **DEADLINE_ENV,
        "MTBENCH_STALL_ON": "STALLME",
        "MTBENCH_LOAD_S": "3",
        "MT_CHUNK_SIZE": "8",
        "MT_MAX_DELIVERIES": "2",
        "MT_WORKER_METRICS_PORT": str(port),
    }
    with cost_fleet(url, env) as (fleet, api):
        texts = [f"line {i} of the job that stalls the engine" for i in range(40)]
        texts[2] = "this line STALLME"  # chunk 0 (indices 0-7)
        job_id = submit(api, texts)
        seen_unhealthy: list[dict] = []  # type: ignore[type-arg]
        not_ready: list[dict] = []  # type: ignore[type-arg]
        deadline = time.monotonic() + 120
        while True:
            job = api.get(f"/v1/jobs/{job_id}").json()
            if job["status"] not in {"queued", "running"}:
                break
            assert time.monotonic() < deadline, (job, fleet.procs[-1].log_tail(60))
            for w in Registry(rd).live_workers():
                if not w.healthy:
                    seen_unhealthy.append(w.model_dump())
            ready = api.get("/readyz")
            if ready.status_code == 503:
                not_ready.append(ready.json())
            time.sleep(0.1)
        assert job["status"] == "partial", job
        result = api.get(f"/v1/jobs/{job_id}/result").json()
        failed = {e["index"]: e["type"] for e in result["errors"]}
        assert set(failed) == set(range(8)) and set(failed.values()) == {"dead_lettered"}
        assert result["translations"][8:] == [f"<es> {t}" for t in texts[8:]]
        assert seen_unhealthy and "none finished" in seen_unhealthy[0]["unhealthy_reason"]
        assert not_ready and not_ready[0]["unhealthy"], not_ready[0]
        assert metric(port, "mt_worker_engine_restarts_total") >= 2  # one per delivery
        assert metric(port, "mt_worker_engine_healthy") == 1
        assert rd.llen(keys.DEAD_LETTER) == 1
        nxt = api.post(
            "/v1/translate",
            json={"texts": ["after the stall"], "source_lang": "en", "target_lang": "es"},
        ).json()
        assert nxt["translations"] == ["<es> after the stall"]


def test_no_chunk_is_held_longer_than_the_visibility_timeout(redis_server: str) -> None:
    """F4: one segment would take 14 s, longer than the 10 s visibility timeout. Its deadline is
    capped at a quarter of the timeout (the chunk's budget is half), so the worker gives up on
    it at 2.5 s: it fails alone with ``engine_timeout``, the chunk is acknowledged in time and
    delivered once, never to a second worker (one is alive beside it)."""
    url = redis_server.rsplit("/", 1)[0] + "/7"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    env = {**FAULT_ENV, "MTBENCH_SLOW_ON": "SLOW:14", "MT_CHUNK_SIZE": "8"}
    with cost_fleet(url, env) as (fleet, api):
        fleet.start_worker("--lanes", "interactive,bulk")
        texts = [f"line {i}" for i in range(64)]
        texts[3] = "a SLOW line"  # chunk 0
        t0 = time.monotonic()
        job = wait_final(api, submit(api, texts), timeout=60, fleet=fleet)
        assert time.monotonic() - t0 < 10
        assert job["status"] == "partial", job
        result = api.get(f"/v1/jobs/{job['id']}/result").json()
        assert [(e["index"], e["type"]) for e in result["errors"]] == [(3, "engine_timeout")]
        time.sleep(12)  # past the visibility timeout and a restore sweep
        assert rd.hgetall(keys.chunk_deliveries(job["id"]))["0"] == "1"
        assert rd.hlen(keys.job_results(job["id"])) == 64
