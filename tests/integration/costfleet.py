"""A fleet whose worker runs the benchmarks' cost-model engine, driven through the API app
in-process: deterministic output (``<target> text``), simulated step times, fault injection."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.core import keys
from mtfleet.core.settings import Settings, default_pool
from mtfleet.fleet.localfleet import LocalFleet
from tests.support import in_process

ROOT = Path(__file__).resolve().parents[2]

COST_ENGINE = {
    "MT_ENGINE": "bench.costengine:CostModelEngine",
    "MTBENCH_PRESET": "cpu-small",  # 20 ms steps
    "MT_CHECK_LANGUAGE": "false",  # it echoes its source (never the target language)
    "MT_HEARTBEAT_S": "1",
    "PYTHONPATH": str(ROOT),  # workers import bench.costengine
}
#: The pool its worker serves (the engine's class name).
COST_POOL = default_pool(COST_ENGINE["MT_ENGINE"])


def held(r: redis.Redis) -> int:
    """Chunks fetched and not yet acknowledged by any worker instance (each keeps its own
    unacked hash, mtfleet.core.keys.unacked)."""
    return sum(int(r.hlen(keys.unacked(str(i)))) for i in r.smembers(keys.WORKERS))


@contextlib.contextmanager
def cost_fleet(
    redis_url: str | None, env: dict[str, str]
) -> Iterator[tuple[LocalFleet, TestClient]]:
    """Redis (``redis_url``, or a private one with AOF when None), one worker serving both
    lanes, and the API app with the same ``MT_*`` settings; yielded once /readyz is 200."""
    env = {**COST_ENGINE, **env}
    with LocalFleet(redis_url=redis_url, env=env) as fleet:
        url = fleet.start_redis()
        fleet.start_worker("--lanes", "interactive,bulk")
        fields = {k[3:].lower(): v for k, v in env.items() if k.startswith("MT_")}
        settings = Settings(**{**fields, "redis_url": url})
        with TestClient(create_app(in_process(settings))) as api:
            deadline = time.monotonic() + 60
            while api.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline, fleet.procs[-1].log_tail()
                time.sleep(0.2)
            yield fleet, api
