"""Worker registry: which workers are alive and which language pairs the fleet serves.

Each worker *process* has an ``instance`` id of its own (a restarted worker is a new instance,
with the same Celery ``name``). It refreshes its key every ``MT_HEARTBEAT_S`` (the key expires
after three missed beats) and records its pairs in :data:`mtfleet.core.keys.PAIRS`, which does
not expire: a fleet that scaled to zero overnight still accepts jobs for the pairs it served,
and they wait in the queue.

:data:`mtfleet.core.keys.WORKERS` lists every instance that may still hold broker messages: a
worker joins it before it consumes, and only the reconciler takes it out, once the instance is
dead and every message it held is back on its queue (:mod:`mtfleet.workers.reconciler`).
A worker's first beat happens before it consumes.
"""

from __future__ import annotations

import json
import time

import redis
import redis.asyncio
from pydantic import BaseModel, Field

from mtfleet.core import keys


class WorkerInfo(BaseModel):
    name: str  # Celery's hostname (gpu0@host); shared by the instances a launcher restarts
    instance: str = ""  # this process (the registry key; its own unacked hash on the broker)
    healthy: bool = True  # False while its engine is down or restarting
    unhealthy_reason: str | None = None
    engine: str
    model: str
    fingerprint: str
    pairs: list[tuple[str, str]]
    lanes: list[str]
    gpus: list[int] = Field(default_factory=list)
    cuda_visible_devices: str | None = None  # as the worker process itself sees it
    tensor_parallel_size: int = 1
    host: str = ""
    pid: int = 0
    started_at: float = 0.0
    beat_at: float = 0.0


class PairInfo(BaseModel):
    source: str
    target: str
    engine: str
    model: str
    fingerprint: str
    updated: float


class Registry:
    def __init__(self, client: redis.Redis, aclient: redis.asyncio.Redis | None = None) -> None:
        """``aclient``: the same Redis for an event loop (:meth:`apair`; the API's)."""
        self.r = client
        self.ar = aclient

    def beat(self, info: WorkerInfo, *, ttl_s: float, pairs: bool = True) -> None:
        """Refresh the worker's registration; with ``pairs``, also (re)write the pairs it
        serves (they do not expire, so a worker writes them when it starts, after its engine
        changed, and now and then, not at every beat: an LLM engine serves ~1,400 pairs)."""
        info.beat_at = time.time()
        pipe = self.r.pipeline(transaction=True)
        pipe.set(keys.worker(info.instance), info.model_dump_json(), px=int(ttl_s * 1000))
        pipe.sadd(keys.WORKERS, info.instance)
        for src, tgt in info.pairs if pairs else ():
            pair = PairInfo(
                source=src,
                target=tgt,
                engine=info.engine,
                model=info.model,
                fingerprint=info.fingerprint,
                updated=info.beat_at,
            )
            pipe.hset(keys.PAIRS, f"{src}:{tgt}", pair.model_dump_json())
        pipe.execute()

    def leave(self, instance: str) -> None:
        """Graceful shutdown: the instance is no longer live (its pairs stay known; it stays
        in :data:`~mtfleet.core.keys.WORKERS` until the reconciler has seen its held
        messages back on their queues)."""
        self.r.delete(keys.worker(instance))

    def instances(self) -> tuple[list[WorkerInfo], list[str]]:
        """(live workers, instances that are gone but may still hold messages)."""
        names = sorted(str(n) for n in self.r.smembers(keys.WORKERS))
        if not names:
            return [], []
        raws = self.r.mget([keys.worker(n) for n in names])
        live: list[WorkerInfo] = []
        gone: list[str] = []
        for name, raw in zip(names, raws, strict=True):
            if raw is None:
                gone.append(name)
            else:
                live.append(WorkerInfo.model_validate_json(raw))
        return live, gone

    def live_workers(self) -> list[WorkerInfo]:
        return self.instances()[0]

    def held(self, now: float | None = None) -> dict[str, tuple[int, float]]:
        """Per lane: (chunks fetched by workers and not finished, seconds the longest-held
        has been held). Read from every instance's unacked hash and its fetch-time index
        (kombu's), dead instances' included until the reconciler puts their chunks back."""
        now = time.time() if now is None else now
        names = sorted(str(n) for n in self.r.smembers(keys.WORKERS))
        pipe = self.r.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(keys.unacked(name))
            pipe.zrange(keys.unacked_index(name), 0, -1, withscores=True)
        replies = pipe.execute() if names else []
        out = {lane: (0, 0.0) for lane in keys.LANES}
        lanes = {keys.queue(lane): lane for lane in keys.LANES}
        for messages, index in zip(replies[::2], replies[1::2], strict=True):
            fetched = {str(tag): float(t) for tag, t in index}
            for tag, raw in messages.items():
                try:
                    routing_key = json.loads(raw)[-1]
                except (ValueError, IndexError, TypeError):
                    continue
                lane = lanes.get(str(routing_key))
                if lane is None:
                    continue
                count, oldest = out[lane]
                age = max(0.0, now - fetched.get(str(tag), now))
                out[lane] = (count + 1, max(oldest, age))
        return out

    def forget(self, instance: str) -> None:
        """A dead instance holds nothing any more."""
        self.r.srem(keys.WORKERS, instance)

    def pairs(self) -> dict[tuple[str, str], PairInfo]:
        out = {}
        for raw in self.r.hgetall(keys.PAIRS).values():
            p = PairInfo.model_validate(json.loads(raw))
            out[(p.source, p.target)] = p
        return out

    def pair(self, source: str, target: str) -> PairInfo | None:
        raw = self.r.hget(keys.PAIRS, f"{source}:{target}")
        return PairInfo.model_validate_json(raw) if raw else None

    async def apair(self, source: str, target: str) -> PairInfo | None:
        """:meth:`pair` on the event loop (``aclient``)."""
        assert self.ar is not None, "Registry built without an asyncio client"
        raw = await self.ar.hget(keys.PAIRS, f"{source}:{target}")
        return PairInfo.model_validate_json(raw) if raw else None
