"""The depth an autoscaler reads (``mt_lane_depth``, deploy/k8s's KEDA triggers): chunks queued
plus chunks held by workers. While a worker translates everything a job sent, the queue is
empty (``mt_queue_depth`` 0: a queue-length trigger would scale the pool to zero) and the depth
still counts every chunk; once the job is done, it is 0."""

from __future__ import annotations

import re
import time

import redis

from tests.integration.costfleet import COST_POOL, cost_fleet

# Slow steps (0.2 s) and 2-segment chunks: a 16-segment job is 8 chunks, all held at once.
SLOW = {"MTBENCH_STEP_FIXED_S": "0.2", "MT_CHUNK_SIZE": "2", "MT_WORKER_CONCURRENCY": "16"}


def gauge(scraped: str, name: str, lane: str = "bulk") -> float:
    found = re.search(rf'^{name}\{{lane="{lane}",pool="{COST_POOL}"\}} (\S+)$', scraped, re.M)
    assert found, name
    return float(found.group(1))


def test_depth_counts_held_chunks_while_the_queue_is_empty(redis_server: str) -> None:
    url = redis_server.rsplit("/", 1)[0] + "/7"
    redis.Redis.from_url(url).flushdb()
    with cost_fleet(url, SLOW) as (_fleet, api):
        texts = [f"a long line number {i} of the nightly catalogue" for i in range(16)]
        body = {"texts": texts, "source_lang": "en", "target_lang": "es", "lane": "bulk"}
        job_id = api.post("/v1/jobs", json=body).json()["id"]
        deadline = time.monotonic() + 30
        while True:
            scraped = api.get("/metrics").text
            held = gauge(scraped, "mt_chunks_held")
            if held == 8 and gauge(scraped, "mt_queue_depth") == 0:
                break
            assert time.monotonic() < deadline, scraped
            time.sleep(0.05)
        assert gauge(scraped, "mt_lane_depth") == 8
        deadline = time.monotonic() + 60
        while api.get(f"/v1/jobs/{job_id}").json()["status"] != "succeeded":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        # (a chunk's message is acknowledged once its task returns, just after its results are
        # recorded: on a busy machine the last acks come a moment after the job has succeeded)
        deadline = time.monotonic() + 10
        while (depth := gauge(api.get("/metrics").text, "mt_lane_depth")) != 0:
            assert time.monotonic() < deadline, f"{depth} chunks still held 10 s after the job"
            time.sleep(0.05)
