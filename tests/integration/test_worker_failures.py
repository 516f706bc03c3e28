"""Workers that cannot work must not eat chunks: a worker whose engine fails to load exits
(and is restarted by the launcher) without taking messages; the job waits for a good worker."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.core import keys
from mtfleet.core.registry import Registry, WorkerInfo
from mtfleet.core.settings import Settings
from mtfleet.fleet.localfleet import LocalFleet
from tests.support import in_process

pytestmark = pytest.mark.slow


def test_worker_with_broken_engine_takes_nothing_and_job_waits(
    redis_url: str, r: redis.Redis, tmp_path: Path
) -> None:
    # A model folder that passes the launcher's pre-flight check (it has a config.json) and
    # then fails to load: the worker starts, exits, and is restarted.
    broken_model = tmp_path / "broken-model"
    broken_model.mkdir()
    (broken_model / "config.json").write_text('{"model_type": "no-such-architecture"}')
    # The pair is known (a healthy worker served it before), so the API accepts the job.
    Registry(r).beat(
        WorkerInfo(
            name="earlier@host",
            engine="apertium",
            model="apertium",
            fingerprint="apertium-x",
            pairs=[("en", "es")],
            lanes=["interactive"],
        ),
        ttl_s=0.5,
    )
    fleet = LocalFleet(redis_url=redis_url, env={"MT_REDIS_URL": redis_url, "MT_HEARTBEAT_S": "1"})
    fleet.start_redis()
    try:
        with TestClient(create_app(in_process(Settings(redis_url=redis_url)))) as api:
            job = api.post(
                "/v1/jobs",
                json={"texts": ["The small dog."], "source_lang": "en", "target_lang": "es"},
            ).json()
            # in the pool the job was routed to: its chunk is in the queue this worker consumes
            # (the transformers engine: it fails the same way as vLLM, a restart costs seconds)
            broken = fleet.start_worker(
                "--engine", "transformers", "--model", str(broken_model), "--pool", "apertium",
                name="broken",
            )  # fmt: skip
            deadline = time.monotonic() + 90
            while (
                "engine failed to load" not in broken.log_tail(200)
                or broken.log_tail(400).count("exited with") < 2
            ):
                assert time.monotonic() < deadline, broken.log_tail()
                time.sleep(0.5)
            # Restarted (with backoff) and never registered, never consumed the chunk.
            assert not Registry(r).live_workers()
            assert r.llen(keys.queue("apertium", "interactive")) == 1
            assert api.get(f"/v1/jobs/{job['id']}").json()["status"] == "queued"

            good = fleet.start_worker("--engine", "apertium", name="good")
            done = api.get(f"/v1/jobs/{job['id']}", params={"wait": 30}).json()
            assert done["status"] == "succeeded"
            result = api.get(f"/v1/jobs/{job['id']}/result").json()
            assert "perro" in result["translations"][0]
            # Celery's own line per chunk (received, succeeded in) only at --loglevel DEBUG
            assert "celery@" in good.log_tail(400) or "ready" in good.log_tail(400)
            assert f"Task {keys.TRANSLATE_TASK}[" not in good.log_tail(400)
    finally:
        fleet.stop()
