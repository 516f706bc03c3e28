"""A worker holds only its pull window, not as many chunks as it has threads.

A real worker process runs the benchmarks' cost-model engine (a slow simulated batch engine)
with 32 execution slots; a 50-chunk backlog must stay in Redis, where an idle worker could take
it, except for the few chunks that keep this worker's engine full.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.core.settings import Settings
from mtfleet.fleet.localfleet import LocalFleet, free_port
from tests.integration.costfleet import cost_fleet, held
from tests.support import in_process

ROOT = Path(__file__).resolve().parents[2]


def gauge(text: str, name: str) -> float | None:
    m = re.search(rf"^{name} ([0-9.e+-]+)$", text, re.M)
    return float(m.group(1)) if m else None


def test_worker_holds_its_pull_window_not_its_slots(redis_server: str) -> None:
    url = redis_server.rsplit("/", 1)[0] + "/3"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    port = free_port()
    env = {
        "MT_REDIS_URL": url,
        "MT_ENGINE": "bench.costengine:CostModelEngine",
        "MTBENCH_PRESET": "cpu-small",  # 20 ms steps, 16 sequences: ~70 segments/s
        "MTBENCH_MODE": "batch",
        "MT_PULL_AHEAD_S": "0.1",
        "MT_CHUNK_SIZE": "4",
        "MT_WORKER_METRICS_PORT": str(port),
        "MT_HEARTBEAT_S": "1",
        "PYTHONPATH": str(ROOT),
    }
    with LocalFleet(redis_url=url, env=env) as fleet:
        fleet.start_redis()
        fleet.start_worker("--lanes", "bulk", "--concurrency", "32")
        deadline = time.monotonic() + 60
        window = None
        while not window:
            assert time.monotonic() < deadline, fleet.procs[-1].log_tail()
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
                window = gauge(text, "mt_worker_pull_window_chunks")
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        # two calls' worth of segments (16 each) in chunks of 4: 8 chunks, far below 32
        assert window == 8
        settings = Settings(redis_url=url, chunk_size=4, interactive_max_segments=1)
        with TestClient(create_app(in_process(settings))) as api:
            texts = [f"segment number {i} of the backlog" for i in range(200)]
            job = api.post(
                "/v1/jobs",
                json={"texts": texts, "source_lang": "en", "target_lang": "es", "lane": "bulk"},
            ).json()
            counts: list[int] = []
            while True:
                counts.append(held(rd))
                status = api.get(f"/v1/jobs/{job['id']}").json()["status"]
                if status not in {"queued", "running"}:
                    break
                assert time.monotonic() < deadline + 120, counts[-20:]
                time.sleep(0.02)
            assert status == "succeeded"
            result = api.get(f"/v1/jobs/{job['id']}/result").json()
            assert result["translations"] == [f"<es> {t}" for t in texts]
        assert 0 < max(counts) <= window + 1  # the consumer applies a new window before a fetch


def test_interactive_chunk_is_fetched_while_the_bulk_window_is_full(redis_server: str) -> None:
    """Bulk chunks that take seconds fill the worker's window; an interactive job submitted
    after them still finishes before the first of them (it has its own consumer)."""
    url = redis_server.rsplit("/", 1)[0] + "/4"
    redis.Redis.from_url(url).flushdb()
    env = {
        "MTBENCH_MAX_NUM_SEQS": "64",  # room in the engine: what is fetched runs at once
        "MT_CHUNK_SIZE": "8",
        "MT_WORKER_CONCURRENCY": "2",  # bulk window: two chunks
        "MT_INTERACTIVE_PREFETCH": "2",
        "MT_INTERACTIVE_MAX_SEGMENTS": "1",
    }
    with cost_fleet(url, env) as (_fleet, api):
        # ~130 tokens each: a bulk chunk takes ~130 steps of 20 ms
        long = " ".join(["word"] * 100)
        bulk = api.post(
            "/v1/jobs",
            json={
                "texts": [f"{i} {long}" for i in range(48)],
                "source_lang": "en",
                "target_lang": "es",
                "lane": "bulk",
            },
        ).json()
        while api.get(f"/v1/jobs/{bulk['id']}").json()["status"] != "running":
            time.sleep(0.02)
        time.sleep(0.3)  # the window is full now
        resp = api.post(
            "/v1/translate",
            json={"texts": ["Red shoes"], "source_lang": "en", "target_lang": "es"},
        )
        assert resp.status_code == 200 and resp.json()["translations"] == ["<es> Red shoes"]
        progress = api.get(f"/v1/jobs/{bulk['id']}").json()["progress"]
        assert progress["done"] == 0, progress  # no bulk chunk had finished yet
        api.delete(f"/v1/jobs/{bulk['id']}")
