"""A registered en->es pair, as a worker's heartbeat leaves it, for API tests that need
requests to get past routing without a worker consuming the jobs."""

from __future__ import annotations

import redis

from mtfleet.core.registry import Registry, WorkerInfo


def register_pair(r: redis.Redis, ttl_s: float = 300) -> None:
    Registry(r).beat(
        WorkerInfo(
            name="w@test",
            engine="apertium",
            model="apertium",
            fingerprint="fp",
            pairs=[("en", "es")],
            lanes=["interactive", "bulk"],
        ),
        ttl_s=ttl_s,
    )
